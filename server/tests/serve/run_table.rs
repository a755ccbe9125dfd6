//! The bounds of run_command's table of commands, end to end through
//! `panescan serve --tier mutating` on a private tmux server: at most 32
//! commands run at once (the 33rd is refused, and accepted once one ends),
//! and at most 128 are remembered (the oldest finished one is forgotten).
//! The 15-minute expiry is checked by the table's unit tests.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use common::{window_showing, Serve};
use panescan::testing::private_server::PrivateServer;
use serde_json::{json, Value};

/// A bash without rc files, prompt `$ `.
const BASH: &str = "env PS1='$ ' bash --norc --noprofile";
/// Commands run_command watches at once (table.rs `MAX_RUNNING`).
const RUNNING: usize = 32;
/// Commands it remembers (table.rs `MAX_ENTRIES`).
const REMEMBERED: usize = 128;
// Every call's timeout_ms is well under the harness's 15 s for an answer:
// a slow call fails on what it answered, not on a missing answer.

fn command_id(r: &Value) -> String {
    r["command_id"].as_str().unwrap().to_owned()
}

#[test]
fn the_33rd_running_command_is_refused_and_the_129th_forgets_the_oldest() {
    let tmux = PrivateServer::start("run-table", 80, 24).unwrap();
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
    let panes: Vec<String> = (0..=RUNNING)
        .map(|_| window_showing(&tmux, None, BASH, "$", &[]))
        .collect();
    // The first finished command: the oldest once the table is full.
    let first = s.call_ok(
        "run_command",
        json!({"pane_id": panes[0], "command": "true", "timeout_ms": 5000}),
    );
    assert_eq!(first["exit_status"], 0, "{first}");
    let first = command_id(&first);

    let mut running = Vec::new();
    for pane in &panes[..RUNNING] {
        let r = s.call_ok(
            "run_command",
            json!({"pane_id": pane, "command": "sleep 600", "timeout_ms": 100}),
        );
        assert_eq!(r["timed_out"], true, "{r}");
        running.push(command_id(&r));
    }
    let last = &panes[RUNNING];
    let e = s.call_err(
        "run_command",
        json!({"pane_id": last, "command": "true", "timeout_ms": 5000}),
    );
    assert!(
        e.contains(&format!("{RUNNING} commands are already running")),
        "the command past {RUNNING} running was not refused: {e}"
    );
    // One ends: a new one is accepted.
    s.call_ok("send_keys", json!({"pane_id": panes[0], "keys": ["C-c"]}));
    let w = s.call_ok(
        "wait_for_command",
        json!({"command_id": running[0], "timeout_ms": 5000}),
    );
    assert_eq!(w["exit_status"], 130, "{w}");
    let r = s.call_ok(
        "run_command",
        json!({"pane_id": last, "command": "true", "timeout_ms": 5000}),
    );
    assert_eq!(r["exit_status"], 0, "{r}");
    for pane in &panes[1..RUNNING] {
        s.call_ok("send_keys", json!({"pane_id": pane, "keys": ["C-c"]}));
    }
    for id in &running[1..] {
        let w = s.call_ok(
            "wait_for_command",
            json!({"command_id": id, "timeout_ms": 5000}),
        );
        assert_eq!(w["exit_status"], 130, "{w}");
    }

    // 1 + 32 + 1 remembered so far: fill the table to exactly 128, then
    // one more forgets the oldest.
    let mut ids = vec![first.clone()];
    ids.extend(running.iter().cloned());
    ids.push(command_id(&r));
    while ids.len() < REMEMBERED {
        let r = s.call_ok(
            "run_command",
            json!({"pane_id": last, "command": "true", "timeout_ms": 5000}),
        );
        assert_eq!(r["exit_status"], 0, "{r}");
        ids.push(command_id(&r));
    }
    let w = s.call_ok("wait_for_command", json!({"command_id": first}));
    assert_eq!(w["exit_status"], 0, "{REMEMBERED} remembered: {w}");
    let r = s.call_ok(
        "run_command",
        json!({"pane_id": last, "command": "true", "timeout_ms": 5000}),
    );
    let e = s.call_err("wait_for_command", json!({"command_id": first}));
    assert!(
        e.contains("no command"),
        "the oldest of {} commands is still remembered: {e}",
        REMEMBERED + 1
    );
    for id in ids[1..].iter().chain([&command_id(&r)]) {
        s.call_ok("wait_for_command", json!({"command_id": id}));
    }
    tmux.kill();
}
