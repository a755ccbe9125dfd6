//! Injection through run_command and wait_for_command: every payload as a
//! pane id and as a command id is refused before tmux sees it; a command
//! holding `;run-shell`, `#()` or `#{}` is typed to the shell as text (the
//! shell echoes it back whole) and tmux runs nothing of it.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use common::injection::{assert_whole, payloads, Markers};
use common::{window_showing, Serve};
use serde_json::json;

/// A shell-quoted `s` for `printf '%s\n' ...` (single quotes, `'` as `'\''`).
fn quoted(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

#[test]
fn ids_and_commands_reach_no_tmux_command_line() {
    let m = Markers::new("inj-run");
    let (tmux, _) = Serve::with_tmux("harden-inj-run");
    let mut s = Serve::spawn_with(
        &[
            "serve",
            "--socket-name",
            tmux.socket_name(),
            "--tier",
            "mutating",
        ],
        &[],
    );
    s.initialize();
    let pane = window_showing(
        &tmux,
        None,
        "env PS1='$ ' bash --norc --noprofile",
        "$",
        &[],
    );
    let cmd = m.touch("run");
    let all = payloads(&cmd);
    for p in &all {
        let e = s.call("run_command", json!({"pane_id": p, "command": "true"}));
        assert!(
            e.get("error").is_some() || e["isError"] == true,
            "pane_id {p:?}: {e}"
        );
        let e = s.call_err("wait_for_command", json!({"command_id": p}));
        assert!(e.contains("no command"), "command_id {p:?}: {e}");
    }
    // Commands holding tmux syntax: printed back whole by the shell, run by
    // nobody. Payloads with a newline, CR or NUL are refused instead.
    let mut printed = 0;
    for p in all.iter().filter(|p| !p.contains(['\n', '\r', '\0'])) {
        // `$(...)` and backquotes would run in the shell: quoted, they are
        // data like the rest.
        let r = s.call_ok(
            "run_command",
            json!({"pane_id": pane, "command": format!("printf '%s\\n' {}", quoted(p))}),
        );
        assert_eq!(r["exit_status"], 0, "{p:?}: {r}");
        assert_eq!(r["output"], format!("{p}\n"), "{p:?} changed on the way");
        printed += 1;
    }
    for p in all.iter().filter(|p| p.contains(['\n', '\r', '\0'])) {
        let e = s.call_err("run_command", json!({"pane_id": pane, "command": p}));
        assert!(
            e.contains("newline") || e.contains("control character"),
            "{p:?}: {e}"
        );
    }
    assert!(printed >= 15, "only {printed} payloads typed");
    m.assert_none(&tmux, "run_command");
    assert_whole(&tmux);
    tmux.kill();
}
