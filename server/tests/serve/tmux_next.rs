//! panescan's typing tools on tmux 3.7 and later (the tmux 3.8 built from
//! third_party/tmux-next): since tmux 3.7 `send-keys` refuses to type
//! ("client is read-only") when the client it resolves to is read-only
//! (cmd-send-keys.c), which is panescan's own control client for the keys
//! it sends, and the best client of a session for a user's `tmux
//! send-keys` without `-c` when panescan's client is the only one
//! attached. So panescan's clients attach read-write (`-f ignore-size`,
//! never `-r`): run_command and send_keys type, and a user's own
//! `send-keys` beside panescan still does. And tmux builds after 3.7
//! (commit 6db5175e4) write the `%pause`/`%continue` a `refresh-client -A`
//! causes after its reply, as notifications (tmux/events/flows.rs
//! `continued`): a wait still wakes each time its pane prints. From tmux
//! 3.7 `paste-buffer` writes control characters in caret form unless
//! given `-S` (cmd-paste-buffer.c): paste_text gives it.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::time::Duration;

use common::counter::Counter;
use common::{eventually, next_tmux, plain_shell, typed_so_far, typing_sink, Serve, TempDir};
use panescan::testing::private_server::PrivateServer;
use serde_json::{json, Value};

#[test]
fn run_command_send_keys_and_a_users_send_keys_type_on_tmux_next() {
    let next = next_tmux();
    let tmux = PrivateServer::start_with("tmux-next-typing", 80, 24, &next).unwrap();
    plain_shell(&tmux, "%0");
    let mut s = serve_mutating(&tmux, &next);

    // panescan's own keys go through its control client.
    let r = s.call_ok(
        "run_command",
        json!({"pane_id": "%0", "command": "echo next-$((6*7))"}),
    );
    assert_eq!(
        (&r["exit_status"], &r["output"]),
        (&json!(0), &json!("next-42\n")),
        "{r}"
    );
    s.call_ok(
        "send_keys",
        json!({"pane_id": "%0", "text": "echo keys-$((7*8))", "keys": ["Enter"]}),
    );
    let shows = |tmux: &PrivateServer, text: &str| {
        eventually(Duration::from_secs(10), || {
            tmux.run_ok(["capture-pane", "-p", "-t", "%0"])
                .map(|screen| screen.lines().any(|l| l == text))
                .unwrap_or(false)
        })
    };
    assert!(shows(&tmux, "keys-56"), "send_keys typed nothing");

    // panescan's client is now the only one attached to the session, so a
    // user's `tmux send-keys` without -c resolves to it.
    let clients = tmux
        .run_ok(["list-clients", "-F", "#{client_flags}"])
        .unwrap();
    assert_eq!(clients.lines().count(), 1, "one client attached: {clients}");
    let typed = std::process::Command::new(&next)
        .args(["-L", tmux.socket_name(), "send-keys", "-t", "%0"])
        .args(["echo user-$((8*9))", "Enter"])
        .output()
        .unwrap();
    assert!(
        typed.status.success(),
        "a user's send-keys failed beside panescan's client ({clients}): {}",
        String::from_utf8_lossy(&typed.stderr)
    );
    assert!(
        shows(&tmux, "user-72"),
        "the user's send-keys typed nothing"
    );
}

/// A search's capture sweep on tmux 3.8 is counted, one `capture-pane` a
/// pane, as on tmux 3.3a (capture/anchor.rs `counted_flags`: tmux 3.7 and
/// 3.8 capture as 3.4-3.6 do). Before, a version past 3.6, and any
/// `next-` build, was swept headed: a header and a capture a pane.
#[test]
fn a_search_on_tmux_next_captures_with_one_command_a_pane() {
    const WINDOWS: usize = 40;
    let next = next_tmux();
    let tmux = PrivateServer::start_with("tmux-next-counted", 80, 24, &next).unwrap();
    let script: String = (0..WINDOWS)
        .map(|i| format!("new-window -d \"echo counted pane {i}; exec sleep 2147483647\"\n"))
        .collect();
    tmux.source(&script).unwrap();
    let settled = eventually(Duration::from_secs(60), || {
        tmux.run_ok(["list-panes", "-a", "-F", "#{pane_current_command}"])
            .is_ok_and(|c| c.lines().filter(|c| *c == "sleep").count() == WINDOWS)
    });
    assert!(settled, "the panes never settled");
    let next_env = next.to_string_lossy().into_owned();
    let mut s = Serve::spawn_with(
        &["serve", "--socket-name", tmux.socket_name()],
        &[("PANESCAN_TMUX", &next_env)],
    );
    s.initialize();
    let mut counter = Counter::attach(&tmux);
    let serve = s.pid();
    let (commands, found) = counter.during(serve, || {
        s.call_ok(
            "search_panes",
            json!({"pattern": "counted pane", "scrollback_lines": 100}),
        )
    });
    assert_eq!(found["total_panes_matched"], WINDOWS, "{found}");
    // The session's own pane as well. Counted: a capture a pane, a header
    // a group, the listing, the attach and the probes (measured: 63 on
    // tmux 3.8, 65 on 3.3a); headed, two a pane and more (103).
    let panes = WINDOWS as u64 + 1;
    eprintln!("a first search of {panes} panes on tmux 3.8: {commands} tmux commands");
    assert!(
        commands < 2 * panes,
        "{commands} tmux commands for {panes} panes: not counted"
    );
}

/// `panescan serve --tier mutating` on `tmux`'s server, running tmux as
/// `next`, initialized.
fn serve_mutating(tmux: &PrivateServer, next: &std::path::Path) -> Serve {
    let next_env = next.to_string_lossy().into_owned();
    let args = [
        "serve",
        "--socket-name",
        tmux.socket_name(),
        "--tier",
        "mutating",
    ];
    let mut s = Serve::spawn_with(&args, &[("PANESCAN_TMUX", &next_env)]);
    s.initialize();
    s
}

fn type_line(tmux: &PrivateServer, pane: &str, text: &str) {
    tmux.run_ok(["send-keys", "-t", pane, "-l", text]).unwrap();
    tmux.run_ok(["send-keys", "-t", pane, "Enter"]).unwrap();
}

/// A wait woken by its pane's first output (no match) wakes again at the
/// next. tmux 3.8 echoes panescan's own `pause` after the reply, and that
/// echo, read once the wait had re-armed the pane, marked the pane paused
/// while tmux had it on: nothing it printed woke the wait again (on tmux
/// 3.3a the echo is inside the reply, unseen).
#[test]
fn a_wait_on_tmux_next_wakes_again_after_its_first_wake() {
    let next = next_tmux();
    let tmux = PrivateServer::start_with("tmux-next-wait", 80, 24, &next).unwrap();
    plain_shell(&tmux, "%0");
    let next_env = next.to_string_lossy().into_owned();
    let mut s = Serve::spawn_with(
        &["serve", "--socket-name", tmux.socket_name()],
        &[("PANESCAN_TMUX", &next_env)],
    );
    s.initialize();
    // Sent with a progress token: its first progress report comes from its
    // waiting loop, once it subscribed and read the pane's start.
    let id = s.fresh_id();
    let token = format!("progress-{id}");
    s.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": "wait_for_text",
                   "arguments": {"pane_id": "%0", "pattern": "second-42", "timeout_ms": 15000},
                   "_meta": {"progressToken": token}}}));
    s.message(Duration::from_secs(10), |m: &Value| {
        m["method"] == "notifications/progress" && m["params"]["progressToken"] == token.as_str()
    });
    // The first wake: output that does not match.
    type_line(&tmux, "%0", "echo first-$((1+1))");
    let shown = eventually(Duration::from_secs(10), || {
        tmux.run_ok(["capture-pane", "-p", "-t", "%0"])
            .is_ok_and(|screen| screen.lines().any(|l| l == "first-2"))
    });
    assert!(shown, "the first line never showed");
    // Its echoes and captures are over (a round trip or two) well before.
    std::thread::sleep(Duration::from_secs(1));
    type_line(&tmux, "%0", "echo second-$((6*7))");
    let r = s.response(&id, Duration::from_secs(30));
    let v = &r["result"]["structuredContent"];
    assert_eq!(
        (&v["found"], &v["text"]),
        (&json!(true), &json!("second-42")),
        "the pane's second output woke no wait: {r}"
    );
}

/// paste_text delivers control characters as they are on tmux 3.8, where
/// `paste-buffer` without `-S` writes `^A` and `^[` for them (tab, line
/// feed, CR, backspace and bell it leaves alone).
#[test]
fn paste_text_on_tmux_next_pastes_control_characters_as_they_are() {
    let next = next_tmux();
    let tmux = PrivateServer::start_with("tmux-next-paste", 80, 24, &next).unwrap();
    let dir = TempDir::new("tmux-next-paste");
    let file = dir.0.join("typed");
    let pane = typing_sink(&tmux, &file);
    let mut s = serve_mutating(&tmux, &next);
    let text = "a\u{1}b\u{3}c\u{1b}[1md\u{7f}e\u{8}\u{7}\tf é\n";
    for bracketed in [false, true] {
        s.call_ok(
            "paste_text",
            json!({"pane_id": pane, "text": text, "bracketed": bracketed}),
        );
    }
    let got = typed_so_far(&tmux, &pane, &file);
    // The program never asked for bracketed paste: no marks either time.
    assert_eq!(
        String::from_utf8_lossy(&got),
        text.replace('\n', "\r").repeat(2),
        "pasted text differs"
    );
}
