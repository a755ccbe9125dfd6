//! Injection: no argument of any tool (names, ids, targets, patterns,
//! formats, option names, socket paths, filters) can run a tmux command or
//! a shell command it was not meant to. Every payload tries to `touch` a
//! marker file in a temp dir unique to the test; the tests wait for tmux's
//! background jobs and then require the dir to be empty, and that the
//! private server is still whole. One test first proves the markers work:
//! the same payload sent to tmux without panescan in between does leave
//! its marker.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::io::Write;
use std::process::Stdio;
use std::time::Duration;

use common::injection::{assert_whole, hostile_server, payloads, Markers};
use common::{eventually, typing_sink, Serve, TempDir};
use serde_json::{json, Value};

#[test]
fn markers_do_appear_when_the_payload_reaches_tmux_unfiltered() {
    let m = Markers::new("inj-proof");
    let (tmux, _s) = hostile_server("harden-inj-proof", &m);
    // A control client, as panescan's, sending what display_message must
    // refuse: tmux runs it.
    let mut child = tmux
        .command()
        .args(["-C", "attach-session", "-r", "-t", "main"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin
        .write_all(b"display-message -p \"#{s/#{l:a}/y/;E:@evil}\"\n")
        .unwrap();
    stdin
        .write_all(format!("display-message -p \"#({})\"\n", m.touch("direct")).as_bytes())
        .unwrap();
    stdin.flush().unwrap();
    let seen = eventually(Duration::from_secs(5), || m.found().len() == 2);
    drop(stdin);
    let _ = child.kill();
    let _ = child.wait();
    assert!(seen, "markers: {:?}", m.found());
    assert_eq!(m.found(), vec!["direct", "via-option"]);
}

#[test]
fn display_message_runs_no_command_whatever_the_format() {
    let m = Markers::new("inj-format");
    let (tmux, mut s) = hostile_server("harden-inj-format", &m);
    s.initialize();
    let cmd = m.touch("format");
    let mut formats = vec![
        format!("#({cmd})"),
        "#{E:@evil}".into(),
        "#{T:@evil}".into(),
        "#{E:pane_title}".into(),
        "#{=5;E:@evil}".into(),
        "#{T;=10:@evil}".into(),
        "#{s/x/y/;E:@evil}".into(),
        "#{s/#{l:a}/y/;E:@evil}".into(),
        "#{s/#{l:a}/y/;E:pane_title}".into(),
        "#{s/a/#{l:y}/;T:@evil}".into(),
        "#{=#{l:5};E:@evil}".into(),
        "#{?1,#{E:@evil},}".into(),
        "#{S:#{E:@evil}}".into(),
        "#{W:#{E:@evil}}".into(),
        "#{P:#{E:pane_title}}".into(),
        "#{l:#{E:@evil}}".into(),
        "#{q:#{E:@evil}}".into(),
        "#{b:#{E:@evil}}".into(),
        "#{||:#{E:@evil},1}".into(),
        "#{e|+|:#{E:@evil},1}".into(),
        "#{;E:@evil}".into(),
        "#{E;l:@evil}".into(),
        "#{@evil}".into(),
        "#{pane_title}".into(),
        format!("#{{l:#({cmd})}}"),
        format!("##({cmd})"),
        format!("\\#({cmd})"),
        format!("#{{s/x/#({cmd})/:@evil}}"),
        format!("#{{session_name}}\n#({cmd})"),
        format!("x\";run-shell \"{cmd}"),
        format!("x\\\";run-shell \\\"{cmd}"),
        // tmux expands s/// arguments twice: the #() in the title or option
        // would run on the second pass.
        "#{s/#{pane_title}/x/:session_name}".into(),
        "#{s/m/#{@evil}/:session_name}".into(),
        "-v plain text".into(),
    ];
    // Every format above but the two plain references is refused: each
    // one runs a command or expands a value that may.
    let plain = ["#{@evil}", "#{pane_title}"];
    formats.extend(payloads(&cmd));
    let mut refused = 0;
    for f in &formats {
        let r = s.call("display_message", json!({"format": f}));
        // A payload without `#` is plain text to a format: answered as
        // written, unless it is not one line of text (a line break or NUL).
        let harmless = plain.contains(&f.as_str()) || !f.contains(['#', '\n', '\r', '\0']);
        assert_eq!(r["isError"], !harmless, "{f:?}: {r}");
        if harmless && !f.contains(['#', '\0']) {
            assert_eq!(r["structuredContent"]["value"], json!(f), "{f:?}: {r}");
        }
        if r["isError"] == true {
            let text = r["content"][0]["text"].as_str().unwrap();
            assert!(
                text.contains("refuses") || text.contains("one line"),
                "{f:?}: {text}"
            );
            refused += 1;
        }
    }
    m.assert_none(&tmux, "display_message");
    assert_whole(&tmux);
    // Raw values are still readable: the plain reference is not refused.
    let r = s.call_ok("display_message", json!({"format": "#{@evil}"}));
    assert!(r["value"].as_str().unwrap().starts_with("#(touch"), "{r}");
    eprintln!(
        "display_message: {} formats, {refused} refused",
        formats.len()
    );
}

#[test]
fn no_argument_of_a_read_tool_reaches_a_command_line() {
    let m = Markers::new("inj-args");
    let (tmux, mut s) = hostile_server("harden-inj-args", &m);
    s.initialize();
    let cmd = m.touch("arg");
    let payloads = payloads(&cmd);
    let mut calls: Vec<(&str, Value)> = Vec::new();
    for p in &payloads {
        calls.extend([
            ("list_windows", json!({"session": p})),
            ("list_panes", json!({"session_id": p})),
            (
                "list_panes",
                json!({"filters": {"pane_title__contains": p}}),
            ),
            ("list_panes", json!({"filters": {"pane_title__regex": p}})),
            (
                "list_sessions",
                json!({"filters": format!("{{\"session_name\": {}}}", json!(p))}),
            ),
            ("get_session_info", json!({"session_id": p})),
            ("get_window_info", json!({"window_id": p})),
            ("get_pane_info", json!({"pane_id": p})),
            ("capture_pane", json!({"pane_id": p})),
            ("capture_since", json!({"pane_id": "%0", "cursor": p})),
            ("snapshot_pane", json!({"pane_id": p})),
            ("search_panes", json!({"pattern": p})),
            ("search_panes", json!({"pattern": p, "regex": true})),
            ("search_panes", json!({"patterns": [p, "x"]})),
            ("search_panes", json!({"pattern": "x", "session": p})),
            ("search_panes", json!({"pattern": "x", "pane_ids": [p]})),
            (
                "wait_for_text",
                json!({"pane_id": "%0", "pattern": p, "timeout_ms": 1}),
            ),
            ("get_tmux_variables", json!({"names": [p]})),
            (
                "get_tmux_variables",
                json!({"names": ["pane_id"], "target": p}),
            ),
            ("show_option", json!({"name": p})),
            ("show_option", json!({"name": "@evil", "target": p})),
            ("show_environment", json!({"name": p})),
            ("show_environment", json!({"session": p})),
            ("show_hooks", json!({"name": p})),
            ("show_hooks", json!({"target": p})),
            (
                "display_message",
                json!({"format": "#{pane_id}", "target": p}),
            ),
            ("list_sessions", json!({"socket_path": format!("/tmp/{p}")})),
            ("list_sessions", json!({"socket_name": p})),
            (
                "call_read_tools_batch",
                json!({"operations": [{"tool": "show_option", "arguments": {"name": p}},
                                      {"tool": "capture_pane", "arguments": {"pane_id": p}}]}),
            ),
        ]);
    }
    let mut errors = 0;
    for (tool, args) in &calls {
        let r = s.request("tools/call", json!({"name": tool, "arguments": args}));
        assert!(r.get("error").is_none(), "{tool} {args}: {r}");
        let result = &r["result"];
        match expected_outcome(tool, args) {
            Outcome::Refused => assert_eq!(result["isError"], true, "{tool} {args}: {r}"),
            Outcome::NothingFound => {
                assert_eq!(result["isError"], false, "{tool} {args}: {r}");
                assert_found_nothing(tool, &result["structuredContent"]);
            }
            Outcome::Either => {}
        }
        if result["isError"] == true {
            errors += 1;
        }
    }
    m.assert_none(&tmux, "read tools");
    assert_whole(&tmux);
    // The option and the title are as the test set them.
    let v = tmux.run_ok(["show-option", "-gv", "@evil"]).unwrap();
    assert!(v.starts_with("#(touch"), "{v}");
    s.call_ok("list_panes", json!({}));
    eprintln!(
        "read tools: {} injection calls, {errors} refused",
        calls.len()
    );
}

/// What a read tool must do with a payload in its arguments.
#[derive(Debug)]
enum Outcome {
    /// A tool error: ids, names, targets and sockets are validated.
    Refused,
    /// Taken as text to look for, which no pane, title or session holds.
    NothingFound,
    /// A regex payload: valid or not depending on its characters.
    Either,
}

fn expected_outcome(tool: &str, args: &Value) -> Outcome {
    let text = |v: &Value| v.as_str().map(str::to_owned);
    let patterns: Vec<String> = args["patterns"]
        .as_array()
        .map(|ps| ps.iter().filter_map(text).collect())
        .unwrap_or_default();
    let pattern = text(&args["pattern"]);
    let scoped = args.get("session").is_some() || args.get("pane_ids").is_some();
    match tool {
        "search_panes" | "wait_for_text" if !scoped => {
            let all: Vec<String> = pattern.into_iter().chain(patterns).collect();
            if all.iter().any(|p| p.contains('\n')) {
                // A match lies within one line.
                Outcome::Refused
            } else if args["regex"] == true {
                Outcome::Either
            } else {
                Outcome::NothingFound
            }
        }
        "list_panes" if args["filters"]["pane_title__regex"].is_string() => Outcome::Either,
        "list_panes" | "list_sessions" if args.get("filters").is_some() => Outcome::NothingFound,
        // The batch reports its failed operations inside a result.
        "call_read_tools_batch" => Outcome::NothingFound,
        _ => Outcome::Refused,
    }
}

/// A result that was accepted found nothing matching the payload.
fn assert_found_nothing(tool: &str, v: &Value) {
    match tool {
        "search_panes" => assert_eq!(v["total_panes_matched"], 0, "{v}"),
        "wait_for_text" => assert_eq!(v["found"], false, "{v}"),
        "list_panes" => assert_eq!(v["panes"], json!([]), "{v}"),
        "list_sessions" => assert_eq!(v["sessions"], json!([]), "{v}"),
        "call_read_tools_batch" => {
            assert_eq!(v["succeeded"], 0, "{v}");
            assert_eq!(v["results"][0]["success"], false, "{v}");
        }
        _ => panic!("{tool} accepted a payload: {v}"),
    }
}

/// Waits until `file` holds exactly `want`.
fn holds(file: &std::path::Path, want: &[u8]) -> bool {
    eventually(Duration::from_secs(5), || {
        std::fs::read(file).is_ok_and(|got| got == want)
    })
}

#[test]
fn text_given_to_mutating_tools_stays_text() {
    let m = Markers::new("inj-mutate");
    let (tmux, _) = Serve::with_tmux("harden-inj-mutate");
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
    tmux.run_ok([
        "set-option",
        "-g",
        "@evil",
        &format!("#({})", m.touch("via-option")),
    ])
    .unwrap();
    // The pane runs cat into a file: typed text is data, never a command.
    let out = TempDir::new("inj-typed");
    let typed = out.0.join("typed.out");
    let pane = typing_sink(&tmux, &typed);
    let window = tmux
        .run_ok(["display-message", "-p", "-t", "main:0", "#{window_id}"])
        .unwrap()
        .trim()
        .to_owned();
    let cmd = m.touch("mutate");
    let mut names = payloads(&cmd);
    names.push("#{E:@evil}".into());
    names.push("#{s/#{l:a}/y/;E:@evil}".into());
    let mut typed_so_far: Vec<u8> = Vec::new();
    for name in &names {
        // Names and titles are one line of printable text: control
        // characters are refused, anything else is stored as written.
        let storable = !name.chars().any(char::is_control);
        let r = s.call("rename_window", json!({"window_id": window, "name": name}));
        assert_eq!(r["isError"], !storable, "rename_window {name:?}: {r}");
        if storable {
            let got = tmux
                .run_ok(["display-message", "-p", "-t", &window, "#{window_name}"])
                .unwrap();
            // tmux itself stores a `\` in a window name as `\\`.
            let got = got.trim_end_matches('\n').replace("\\\\", "\\");
            assert_eq!(&got, name, "window name {name:?} changed on the way");
        }
        let r = s.call("set_pane_title", json!({"pane_id": pane, "title": name}));
        assert_eq!(r["isError"], !storable, "set_pane_title {name:?}: {r}");
        if storable {
            let got = tmux
                .run_ok(["display-message", "-p", "-t", &pane, "#{pane_title}"])
                .unwrap();
            let got = got.trim_end_matches('\n').replace("\\\\", "\\");
            assert_eq!(&got, name, "pane title {name:?} changed on the way");
        }
        // Text is typed byte for byte (the sink is raw, so `\r` and `\n`
        // arrive as they are); a NUL cannot be, and is refused.
        let r = s.call("send_keys", json!({"pane_id": pane, "text": name}));
        let typable = !name.contains('\u{0}');
        assert_eq!(r["isError"], !typable, "send_keys text {name:?}: {r}");
        if typable {
            typed_so_far.extend_from_slice(name.as_bytes());
            assert!(
                holds(&typed, &typed_so_far),
                "typed {name:?}, the pane got {:?}",
                String::from_utf8_lossy(&std::fs::read(&typed).unwrap_or_default())
            );
        }
        // No payload is a key name.
        let e = s.call_err("send_keys", json!({"pane_id": pane, "keys": [name]}));
        assert!(e.contains("is not a tmux key name"), "{name:?}: {e}");
    }
    m.assert_none(&tmux, "mutating tools");
    assert_whole(&tmux);
    // Text typed with `;` arrived as text.
    let _ = s.call(
        "send_keys",
        json!({"pane_id": pane, "text": "plain;text #(x)\n"}),
    );
    assert!(
        eventually(Duration::from_secs(5), || std::fs::read_to_string(&typed)
            .is_ok_and(|t| t.contains("plain;text #(x)"))),
        "typed text: {:?}",
        std::fs::read_to_string(&typed)
    );
    assert!(m.found().is_empty(), "{:?}", m.found());
}
