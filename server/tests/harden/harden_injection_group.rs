//! Injection through search_panes' group_by and the redaction of pane text:
//! a payload as `group_by` is refused; payloads printed in panes are
//! grouped and redacted as text, byte for byte, and never run.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use common::injection::{assert_whole, hostile_server, payloads, Markers};
use common::{window_showing, TempDir};
use serde_json::json;

#[test]
fn a_payload_as_group_by_is_refused() {
    let m = Markers::new("inj-group-arg");
    let (tmux, mut s) = hostile_server("harden-inj-group-arg", &m);
    s.initialize();
    for p in payloads(&m.touch("group-by")) {
        let err = s.call_err("search_panes", json!({"pattern": "x", "group_by": p}));
        assert!(
            err.contains("text") && err.contains("shape"),
            "{p:?}: {err}"
        );
    }
    m.assert_none(&tmux, "group_by");
    assert_whole(&tmux);
}

#[test]
fn printed_payloads_are_grouped_and_redacted_as_text() {
    let m = Markers::new("inj-group-text");
    let (tmux, mut s) = hostile_server("harden-inj-group-text", &m);
    // One line per payload, each followed by a secret, printed twice in two
    // panes (payloads with a line break or NUL cannot be one printed line).
    let lines: Vec<String> = payloads(&m.touch("printed"))
        .into_iter()
        .filter(|p| !p.contains(['\n', '\r', '\0']))
        .map(|p| format!("HOSTILE {p} password=hunter2x"))
        .collect();
    let dir = TempDir::new("inj-group-lines");
    let file = dir.0.join("lines.txt");
    let mut text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    text.push_str(&text.clone());
    std::fs::write(&file, text).unwrap();
    let script = format!("cat '{}'; echo PRINTED; exec sleep 100000", file.display());
    for _ in 0..2 {
        window_showing(&tmux, None, &script, "PRINTED", &["-S", "-"]);
    }
    s.initialize();
    for by in ["text", "shape"] {
        let r = s.call_ok(
            "search_panes",
            json!({"pattern": "HOSTILE", "group_by": by, "scrollback_lines": 1000, "max_matches_per_pane": 1000}),
        );
        let groups = r["groups"].as_array().unwrap();
        assert_eq!(groups.len(), lines.len(), "{by}: {r}");
        for (group, line) in groups.iter().zip(&lines) {
            let want = line.replace("hunter2x", "[REDACTED:SECRET]");
            assert_eq!(group["text"], want.as_str(), "{by}");
            assert_eq!(group["count"], 4, "{by}: {group}");
            assert_eq!(group["panes"].as_array().unwrap().len(), 2, "{by}: {group}");
        }
        assert_eq!(r["redactions"], 4 * lines.len(), "{by}");
    }
    m.assert_none(&tmux, "grouped payloads");
    assert_whole(&tmux);
}
