//! Injection through search_panes' `since` and every string argument of
//! watch_panes: a cursor is decoded in Rust and never reaches tmux, a
//! pattern is matched in Rust, a session name is looked up in a listing.
//! No payload runs a command; the server stays whole.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use common::injection::{assert_whole, hostile_server, payloads, Markers};
use serde_json::json;

#[test]
fn no_cursor_pattern_or_scope_of_since_or_watch_panes_runs_a_command() {
    let m = Markers::new("inj-since-watch");
    let (tmux, mut s) = hostile_server("harden-inj-since-watch", &m);
    s.initialize();
    let cmd = m.touch("since-watch");
    for p in payloads(&cmd) {
        let e = s.call_err("search_panes", json!({"pattern": "x", "since": p}));
        assert!(e.contains("not a search_panes cursor"), "{p:?}: {e}");
        // Searched for and not found, or refused as a pattern (a line
        // break or a NUL cannot lie within one line).
        let r = s.call(
            "watch_panes",
            json!({"pattern": p, "timeout_ms": 50, "max_hits": 1}),
        );
        if r["isError"] == false {
            let v = &r["structuredContent"];
            assert_eq!(v["timed_out"], true, "{p:?}: {v}");
            assert_eq!(v["hits"], json!([]), "{p:?}: {v}");
        } else {
            let e = r["content"][0]["text"].as_str().unwrap();
            assert!(e.contains("pattern"), "{p:?}: {e}");
        }
        s.call_err(
            "watch_panes",
            json!({"pattern": "x", "session": p, "timeout_ms": 50}),
        );
    }
    m.assert_none(&tmux, "since and watch_panes arguments");
    assert_whole(&tmux);
}
