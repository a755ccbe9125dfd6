//! Injection through the buffer, history, logging and server tools: every
//! payload of `common::injection::payloads` in every string argument of
//! paste_text, show_buffer, clear_history, pipe_pane. Each payload would
//! `touch` a marker if it reached a tmux command line, a format or a shell;
//! the tests wait for tmux's jobs, require no marker, and the server whole.
//! Text arrives byte for byte, buffer names are taken literally, file
//! names that are not plain are refused, ids that are not ids are refused.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use common::injection::{assert_whole, hostile_server, payloads, Markers};
use common::{typed_so_far, typing_sink, Serve, TempDir};
use panescan::testing::private_server::PrivateServer;
use serde_json::json;

/// A hostile server and `panescan serve --tier mutating` on it, plus `extra`.
fn mutating(label: &str, m: &Markers, extra: &[&str]) -> (PrivateServer, Serve) {
    let (tmux, _read_only) = hostile_server(label, m);
    let mut args = vec![
        "serve",
        "--socket-name",
        tmux.socket_name(),
        "--tier",
        "mutating",
    ];
    args.extend_from_slice(extra);
    let mut s = Serve::spawn_with(&args, &[]);
    s.initialize();
    (tmux, s)
}

#[test]
fn pasted_payloads_arrive_as_text_and_run_nothing() {
    let m = Markers::new("inj-paste");
    let (tmux, mut s) = mutating("harden-inj-paste", &m, &[]);
    let dir = TempDir::new("inj-paste-sink");
    let file = dir.0.join("typed");
    let pane = typing_sink(&tmux, &file);
    let all = payloads(&m.touch("paste"));
    let (mut pasted, mut seen) = (0, 0);
    for p in &all {
        for bracketed in [false, true] {
            let r = s.call(
                "paste_text",
                json!({"pane_id": pane, "text": p, "bracketed": bracketed}),
            );
            if p.contains('\0') {
                assert_eq!(r["isError"], true, "{p:?}: {r}");
                continue;
            }
            assert_eq!(r["isError"], false, "{p:?}: {r}");
            // The sink's file holds every paste so far, each followed by
            // the sentinel that proved it arrived: compare what is new.
            let got = typed_so_far(&tmux, &pane, &file);
            let new = &got[seen..];
            seen = std::fs::metadata(&file).unwrap().len() as usize;
            assert_eq!(
                String::from_utf8_lossy(new),
                p.replace('\n', "\r"),
                "{p:?} arrived changed"
            );
            pasted += 1;
        }
    }
    assert_eq!(pasted, 2 * (all.len() - 1));
    let left = tmux
        .run_ok(["list-buffers", "-F", "#{buffer_name}"])
        .unwrap();
    assert_eq!(left, "", "buffers left behind");
    m.assert_none(&tmux, "paste_text");
    assert_whole(&tmux);
}

#[test]
fn buffer_names_are_taken_literally() {
    let m = Markers::new("inj-show");
    let (tmux, mut s) = mutating("harden-inj-show", &m, &[]);
    let all = payloads(&m.touch("show"));
    // tmux 3.7 and later store a buffer's name escaped (paste.c `paste_set`
    // through `clean_name`: a backslash doubled) and find it by that name
    // only, which is the one listed; tmux 3.3a stores it as given.
    let escapes = common::tmux_version(&tmux).is_none_or(|v| v >= (3, 7));
    let stored = |p: &str| {
        if escapes {
            p.replace('\\', "\\\\")
        } else {
            p.to_owned()
        }
    };
    let mut read = 0;
    for (i, p) in all.iter().enumerate() {
        if p.chars().any(char::is_control) {
            let e = s.call_err("show_buffer", json!({"name": p}));
            assert!(e.contains("control characters"), "{p:?}: {e}");
            continue;
        }
        // Not there yet: "no buffer", naming it as given.
        let e = s.call_err("show_buffer", json!({"name": p}));
        assert!(e.contains("no buffer"), "{p:?}: {e}");
        tmux.run_ok(["set-buffer", "-b", p, "--", &format!("content {i}")])
            .unwrap();
        let r = s.call_ok("show_buffer", json!({"name": stored(p)}));
        assert_eq!(r["buffer"]["text"], format!("content {i}"), "{p:?}");
        read += 1;
    }
    assert!(read >= 14, "only {read} payloads were names");
    let listed = s.call_ok("show_buffer", json!({}));
    let names: Vec<&str> = listed["buffers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["name"].as_str().unwrap())
        .collect();
    for p in all.iter().filter(|p| !p.chars().any(char::is_control)) {
        let p = stored(p);
        assert!(names.contains(&p.as_str()), "{p:?} not listed: {names:?}");
    }
    m.assert_none(&tmux, "show_buffer");
    assert_whole(&tmux);
}

#[test]
fn log_file_names_and_pane_ids_that_are_not_plain_are_refused() {
    let m = Markers::new("inj-pipe");
    let logs = TempDir::new("inj-pipe-logs");
    let (tmux, mut s) = mutating(
        "harden-inj-pipe",
        &m,
        &["--log-dir", logs.0.to_str().unwrap()],
    );
    let pane = tmux
        .run_ok(["display-message", "-p", "-t", "main:0.0", "#{pane_id}"])
        .unwrap()
        .trim()
        .to_owned();
    for p in payloads(&m.touch("pipe")) {
        let e = s.call_err("pipe_pane", json!({"pane_id": pane, "file": p}));
        assert!(e.contains("plain file name"), "{p:?}: {e}");
        for (tool, args) in [
            ("pipe_pane", json!({"pane_id": p, "file": "ok.log"})),
            ("clear_history", json!({"pane_id": p})),
            ("paste_text", json!({"pane_id": p, "text": "x"})),
        ] {
            let r = s.request("tools/call", json!({"name": tool, "arguments": args}));
            let refused = r.get("error").is_some() || r["result"]["isError"] == true;
            assert!(refused, "{tool} took pane_id {p:?}: {r}");
        }
    }
    let written: Vec<_> = std::fs::read_dir(&logs.0).unwrap().collect();
    assert!(written.is_empty(), "files in the log dir: {written:?}");
    let piping = tmux
        .run_ok(["display-message", "-p", "-t", &pane, "#{pane_pipe}"])
        .unwrap();
    assert_eq!(piping.trim(), "0");
    m.assert_none(&tmux, "pipe_pane, clear_history");
    assert_whole(&tmux);
}
