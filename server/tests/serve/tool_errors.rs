//! Tool errors have kinds: each kind produced by a real call through
//! `panescan serve`, read where a caller reads it, the `error_kind` of a
//! failed `call_read_tools_batch` operation.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::process::Command;

use common::{plain_shell, Serve};
use panescan::testing::private_server::PrivateServer;
use serde_json::{json, Value};

/// Sends `kill -SIG pid`.
fn signal(pid: u32, sig: &str) {
    let ok = Command::new("kill")
        .args([&format!("-{sig}"), &pid.to_string()])
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "kill -{sig} {pid}");
}

/// A tmux server stopped with SIGSTOP until this is dropped, even when
/// the test fails.
struct Stopped(u32);

impl Stopped {
    fn new(pid: u32) -> Stopped {
        signal(pid, "STOP");
        Stopped(pid)
    }
}

impl Drop for Stopped {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-CONT", &self.0.to_string()])
            .status();
    }
}

/// `(error_kind, error)` of each row of a batch run with `on_error:
/// continue`.
fn kinds(s: &mut Serve, operations: Value) -> Vec<(Value, String)> {
    let v = s.call_ok(
        "call_read_tools_batch",
        json!({"on_error": "continue", "operations": operations}),
    );
    v["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["error_kind"].clone(),
                r["error"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect()
}

#[test]
fn each_kind_of_tool_error_comes_from_a_real_call() {
    let tmux = PrivateServer::start("errkind", 80, 24).unwrap();
    let mut s = Serve::spawn_with(
        &[
            "serve",
            "--socket-name",
            tmux.socket_name(),
            "--max-matches",
            "5",
        ],
        &[],
    );
    plain_shell(&tmux, "%0");
    s.initialize();
    let absent = format!("{}-absent", tmux.socket_name());
    let rows = kinds(
        &mut s,
        json!([
            {"tool": "list_sessions"},
            {"tool": "get_pane_info", "arguments": {"pane_id": "pane zero"}},
            {"tool": "get_pane_info", "arguments": {"pane_id": "%99"}},
            {"tool": "search_panes", "arguments": {"pattern": "x", "max_matches": 6}},
            {"tool": "capture_pane", "arguments": {"pane_id": "%0", "max_lines": 10_001}},
            {"tool": "snapshot_pane", "arguments": {"pane_id": "%0", "max_bytes": 262_145}},
            {"tool": "list_sessions", "arguments": {"socket_name": absent}},
            {"tool": "display_message", "arguments": {"format": "#(id)"}},
        ]),
    );
    let want = [
        (Value::Null, ""),
        (json!("invalid_argument"), "pane zero"),
        (json!("not_found"), "no pane %99"),
        (json!("over_ceiling"), "max_matches may be at most 5"),
        (json!("over_ceiling"), "max_lines may be at most 10000"),
        (json!("over_ceiling"), "max_bytes may be at most 262144"),
        (json!("tmux_unavailable"), "no tmux server at"),
        (json!("refused"), "display_message refuses"),
    ];
    assert_eq!(rows.len(), want.len(), "{rows:?}");
    for (i, ((kind, error), (want_kind, want_text))) in rows.iter().zip(want).enumerate() {
        assert_eq!(kind, &want_kind, "operation {i}: {error}");
        assert!(error.contains(want_text), "operation {i}: {error}");
    }

    // A tmux that stops answering: the search's listing runs out of its
    // own time budget.
    let pid = tmux.pid().unwrap();
    let stopped = Stopped::new(pid);
    let rows = kinds(
        &mut s,
        json!([{"tool": "search_panes", "arguments": {"pattern": "x", "timeout_ms": 500}}]),
    );
    drop(stopped);
    assert_eq!(rows[0].0, json!("timed_out"), "{rows:?}");
    // Back: the same call works.
    s.call_ok("search_panes", json!({"pattern": "x", "timeout_ms": 5000}));
}
