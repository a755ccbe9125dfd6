//! Injection through resources and prompts: every payload as a URI's id,
//! as a history `?lines=`, in a listen filter, as a list cursor and as a
//! prompt argument. A URI holding one is malformed (ids go through the
//! tools' parsers), a prompt argument is only text in a message; no marker
//! file appears and the server stays whole. (`harden_injection.rs` proves
//! the markers fire when a payload reaches tmux unfiltered.)
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use common::injection::{assert_whole, hostile_server, payloads, Markers};
use common::modern_meta;
use serde_json::{json, Value};

fn error_code(r: &Value) -> i64 {
    r["error"]["code"]
        .as_i64()
        .unwrap_or_else(|| panic!("not an error: {r}"))
}

#[test]
fn no_uri_cursor_or_prompt_argument_runs_a_command() {
    let m = Markers::new("inj-resources");
    let (tmux, mut s) = hostile_server("harden-inj-resources", &m);
    s.initialize();
    let mut calls = 0;
    for p in payloads(&m.touch("resource")) {
        // Without its slashes a payload is one path segment: what the id
        // parsers themselves must refuse.
        let bare = p.replace('/', " ");
        for uri in [
            format!("tmux://pane/{p}/screen"),
            format!("tmux://pane/{bare}/screen"),
            format!("tmux://pane/%0{bare}"),
            format!("tmux://pane/0{bare}"),
            format!("tmux://session/{bare}"),
            format!("tmux://session/$0{bare}"),
            format!("tmux://window/@0{bare}"),
            format!("tmux://pane/0/history?lines={p}"),
            format!("tmux://{p}"),
        ] {
            for method in ["resources/read", "resources/subscribe"] {
                let r = s.request(method, json!({ "uri": uri }));
                assert_eq!(error_code(&r), -32602, "{method} {uri:?}: {r}");
                calls += 1;
            }
            let r = s.request(
                "subscriptions/listen",
                json!({"_meta": modern_meta(), "notifications": {"resourceSubscriptions": [uri]}}),
            );
            assert_eq!(error_code(&r), -32602, "listen {uri:?}: {r}");
            calls += 1;
        }
        let r = s.request("resources/list", json!({ "cursor": p }));
        assert_eq!(error_code(&r), -32602, "cursor {p:?}: {r}");
        // A prompt argument is text in a message, never a command: a
        // valid place gets it as text (one line: a control character is
        // refused, so no value adds lines to the prompt), an id place
        // refuses it.
        let r = s.request(
            "prompts/get",
            json!({"name": "run_and_wait", "arguments": {"pane_id": "%0", "command": p}}),
        );
        let one_line = !p.trim().is_empty() && !p.chars().any(char::is_control);
        if one_line {
            let text = r["result"]["messages"][0]["content"]["text"]
                .as_str()
                .unwrap_or_default();
            assert!(text.contains(p.as_str()), "{p:?}: {r}");
        } else {
            assert_eq!(error_code(&r), -32602, "command {p:?}: {r}");
        }
        let r = s.request(
            "prompts/get",
            json!({"name": "diagnose_failing_pane", "arguments": {"pane_id": p}}),
        );
        assert_eq!(error_code(&r), -32602, "pane_id {p:?}: {r}");
        calls += 3;
    }
    eprintln!("{calls} hostile resource and prompt requests");
    m.assert_none(&tmux, "resources and prompts");
    assert_whole(&tmux);
}
