//! Every read tool of `panescan serve`, end to end, against private tmux
//! servers: results, bounds, and the errors a model must be able to act on.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::collections::HashMap;
use std::time::{Duration, Instant};

use common::{eventually, plain_shell, validate, Serve};
use panescan::testing::private_server::PrivateServer;
use serde_json::{json, Value};

/// The output schemas of every listed tool.
fn output_schemas(s: &mut Serve) -> HashMap<String, Value> {
    let r = s.request_bare("tools/list");
    r["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["name"].as_str().unwrap().to_owned(),
                t["outputSchema"].clone(),
            )
        })
        .collect()
}

/// Calls a tool, checks success and that the result fits its schema.
fn ok(s: &mut Serve, schemas: &HashMap<String, Value>, tool: &str, args: Value) -> Value {
    let v = s.call_ok(tool, args.clone());
    let errors = validate(&schemas[tool], &v);
    assert!(errors.is_empty(), "{tool} {args}: {errors:?}\n{v}");
    v
}

fn type_line(tmux: &PrivateServer, pane: &str, text: &str) {
    tmux.run_ok(["send-keys", "-t", pane, "-l", text]).unwrap();
    tmux.run_ok(["send-keys", "-t", pane, "Enter"]).unwrap();
}

fn screen(tmux: &PrivateServer, pane: &str) -> String {
    tmux.run_ok(["capture-pane", "-p", "-t", pane, "-S", "-"])
        .unwrap()
}

/// Waits until the pane shows `needle` (a printed line, not the command).
fn wait_screen(tmux: &PrivateServer, pane: &str, needle: &str) {
    assert!(
        eventually(Duration::from_secs(10), || screen(tmux, pane)
            .lines()
            .any(|l| l.trim_end() == needle)),
        "{pane} never showed {needle:?}:\n{}",
        screen(tmux, pane)
    );
}

/// Waits until the pane shows a bare prompt on a line after `needle`: the
/// command that printed it has finished.
fn wait_prompt_after(tmux: &PrivateServer, pane: &str, needle: &str) {
    let done = || {
        let text = screen(tmux, pane);
        let mut lines = text.lines().skip_while(|l| l.trim_end() != needle);
        lines.next().is_some() && lines.any(|l| l.trim_end() == "$")
    };
    assert!(
        eventually(Duration::from_secs(10), done),
        "{pane}: no prompt after {needle:?}:\n{}",
        screen(tmux, pane)
    );
}

/// Reads messages until the first progress notification for `token` (the
/// call is running). Notifications read meanwhile are dropped; an answer
/// fails the test.
fn until_progress(s: &mut Serve, token: &str) {
    let until = Instant::now() + common::REPLY_TIMEOUT;
    loop {
        let left = until.saturating_duration_since(Instant::now());
        let m = s
            .recv(left)
            .unwrap_or_else(|| panic!("no progress for {token}"));
        if m["method"] == "notifications/progress" && m["params"]["progressToken"] == token {
            return;
        }
        assert!(
            m.get("method").is_some(),
            "answer while waiting for {token}: {m}"
        );
    }
}

/// A capture of `%0` asked from -100000 to 5 reached past the history:
/// clamped to it, and the text is what tmux itself has in that range, byte
/// for byte.
fn assert_clamped_to_history(tmux: &PrivateServer, v: &Value) {
    assert_eq!(v["range_clamped"], true);
    let hs = tmux
        .run_ok(["display-message", "-p", "-t", "%0", "#{history_size}"])
        .unwrap();
    let hs: i64 = hs.trim().parse().unwrap();
    assert!(hs > 0, "no history: the range could not reach past it");
    assert_eq!(v["effective_start"], -hs);
    assert_eq!(v["effective_end"], 5);
    let want = tmux
        .run_ok(["capture-pane", "-p", "-t", "%0", "-S", "-100000", "-E", "5"])
        .unwrap();
    assert_eq!(v["text"], want);
}

/// Cancels a wait on `%0` once it runs (its first progress came): no
/// response at all, also past its timeout.
fn cancel_a_running_wait(s: &mut Serve) {
    let started = Instant::now();
    s.send(
        &json!({"jsonrpc": "2.0", "id": "w-cancel", "method": "tools/call", "params": {
        "name": "wait_for_text",
        "arguments": {"pane_id": "%0", "pattern": "never", "timeout_ms": 1500},
        "_meta": {"progressToken": "tok-c"}}}),
    );
    until_progress(s, "tok-c");
    s.notify(
        "notifications/cancelled",
        json!({"requestId": "w-cancel", "reason": "test"}),
    );
    let past_its_timeout = started + Duration::from_millis(2500);
    let after = s.drain(past_its_timeout.saturating_duration_since(Instant::now()));
    assert!(
        !after.iter().any(|m| m["id"] == json!("w-cancel")),
        "a cancelled request was answered: {after:?}"
    );
}

#[test]
fn inventory_tools_list_get_filter_and_name_what_exists() {
    let (tmux, mut s) = Serve::with_tmux("inventory");
    tmux.run_ok(["split-window", "-h", "-t", "main"]).unwrap();
    tmux.run_ok(["new-session", "-d", "-s", "second", "-x", "80", "-y", "24"])
        .unwrap();
    s.initialize();
    let schemas = output_schemas(&mut s);

    let v = ok(&mut s, &schemas, "list_sessions", json!({}));
    assert_eq!(v["total"], 2);
    assert_eq!(v["truncated"], false);
    let v = ok(
        &mut s,
        &schemas,
        "list_sessions",
        json!({"filters": {"session_name__exact": "second"}}),
    );
    assert_eq!(v["sessions"].as_array().unwrap().len(), 1);
    assert_eq!(v["sessions"][0]["session_name"], "second");
    let v = ok(
        &mut s,
        &schemas,
        "list_sessions",
        json!({"filters": "{\"session_name__iregex\": \"^MA\"}"}),
    );
    assert_eq!(v["sessions"][0]["session_name"], "main");
    let e = s.call_err("list_sessions", json!({"filters": {"sesion_name": "x"}}));
    assert!(
        e.contains("session_name") && e.contains("session_windows"),
        "{e}"
    );
    let e = s.call_err(
        "list_sessions",
        json!({"filters": {"session_name__like": "x"}}),
    );
    assert!(e.contains("icontains"), "{e}");

    let v = ok(
        &mut s,
        &schemas,
        "list_windows",
        json!({"session": "second"}),
    );
    assert_eq!(v["windows"].as_array().unwrap().len(), 1);
    let e = s.call_err("list_windows", json!({"session": "nope"}));
    assert!(e.contains("main") && e.contains("second"), "{e}");

    let v = ok(&mut s, &schemas, "list_panes", json!({}));
    assert_eq!(v["total"], 3);
    let v = ok(&mut s, &schemas, "list_panes", json!({"window_id": "@0"}));
    assert_eq!(v["panes"].as_array().unwrap().len(), 2);
    let v = ok(
        &mut s,
        &schemas,
        "list_panes",
        json!({"session_id": "$0", "filters": {"pane_index__in": [1]}}),
    );
    assert_eq!(v["panes"].as_array().unwrap().len(), 1);
    let right = v["panes"][0]["pane_id"].as_str().unwrap().to_owned();
    let v = ok(
        &mut s,
        &schemas,
        "list_panes",
        json!({"filters": {"pane_width__gt": 1000}}),
    );
    assert_eq!(v["total"], 0);

    let v = ok(
        &mut s,
        &schemas,
        "get_session_info",
        json!({"session_id": "$0"}),
    );
    assert_eq!(v["session_name"], "main");
    assert_eq!(v["windows"][0]["window_id"], "@0");
    let e = s.call_err("get_session_info", json!({"session_id": "$99"}));
    assert!(e.contains("no session") && e.contains("$1"), "{e}");
    let v = ok(
        &mut s,
        &schemas,
        "get_window_info",
        json!({"window_id": "@0"}),
    );
    assert_eq!(v["panes"].as_array().unwrap().len(), 2);
    let e = s.call_err("get_window_info", json!({"window_id": "@99"}));
    assert!(e.starts_with("no window @99; windows: @0 @1"), "{e}");
    let v = ok(&mut s, &schemas, "get_pane_info", json!({"pane_id": "%0"}));
    assert_eq!(v["pane_id"], "%0");
    assert_eq!(v["session_name"], "main");
    let e = s.call_err("get_pane_info", json!({"pane_id": "%99"}));
    assert!(e.starts_with("no pane %99; panes: %0 %1 %2"), "{e}");

    let v = ok(
        &mut s,
        &schemas,
        "find_pane_by_position",
        json!({"window_id": "@0", "position": "top-left"}),
    );
    assert_eq!(v["pane_id"], "%0");
    let v = ok(
        &mut s,
        &schemas,
        "find_pane_by_position",
        json!({"window_id": "@0", "position": "bottom-right"}),
    );
    assert_eq!(v["pane_id"], right.as_str());
    let e = s.call_err(
        "find_pane_by_position",
        json!({"window_id": "@0", "position": "middle"}),
    );
    assert!(e.contains("top-left"), "{e}");

    let v = ok(&mut s, &schemas, "get_server_info", json!({}));
    assert_eq!(v["pid"], tmux.pid().unwrap());
    assert_eq!(v["session_count"], 2);

    // Another server by socket_name or socket_path, per call; and a serve
    // whose default server is given by path.
    let other = PrivateServer::start("inventory-other", 80, 24).unwrap();
    let v = ok(
        &mut s,
        &schemas,
        "get_server_info",
        json!({"socket_name": other.socket_name()}),
    );
    assert_eq!(v["pid"], other.pid().unwrap());
    let path = other.socket_path().unwrap();
    let v = ok(
        &mut s,
        &schemas,
        "get_server_info",
        json!({"socket_path": path}),
    );
    assert_eq!(v["pid"], other.pid().unwrap());
    let mut by_path = Serve::spawn_with(&["serve", "--socket-path", path.to_str().unwrap()], &[]);
    let v = by_path.call_ok("get_server_info", json!({}));
    assert_eq!(v["pid"], other.pid().unwrap());
    let e = s.call_err("list_panes", json!({"socket_name": "panescan-nobody-here"}));
    assert!(e.contains("no tmux server"), "{e}");
}

#[test]
fn capture_pane_ranges_lines_and_bytes_are_bounded_and_reported() {
    let (tmux, mut s) = Serve::with_tmux("capture");
    plain_shell(&tmux, "%0");
    type_line(&tmux, "%0", "clear; seq 1 300");
    wait_screen(&tmux, "%0", "300");
    s.initialize();
    let schemas = output_schemas(&mut s);

    let v = ok(&mut s, &schemas, "capture_pane", json!({"pane_id": "%0"}));
    assert_eq!(v["effective_start"], 0);
    assert_eq!(v["effective_end"], 23);
    assert_eq!(v["total_lines"], 24);
    assert!(v["text"].as_str().unwrap().contains("300\n"));

    let v = ok(
        &mut s,
        &schemas,
        "capture_pane",
        json!({"pane_id": "%0", "start": -50, "end": -1}),
    );
    assert_eq!(v["total_lines"], 50);
    assert_eq!(v["dropped_lines"], 0);
    assert_eq!(v["text"].as_str().unwrap().lines().count(), 50);
    let nums: Vec<i64> = v["text"]
        .as_str()
        .unwrap()
        .lines()
        .filter_map(|l| l.parse().ok())
        .collect();
    assert!(nums.windows(2).all(|w| w[1] == w[0] + 1), "{nums:?}");

    let v = ok(
        &mut s,
        &schemas,
        "capture_pane",
        json!({"pane_id": "%0", "start": -100, "max_lines": 10}),
    );
    assert_eq!(v["total_lines"], 124);
    assert_eq!(v["dropped_lines"], 114);
    assert_eq!(v["effective_start"], 14);
    assert_eq!(v["effective_end"], 23);
    assert_eq!(v["text"].as_str().unwrap().lines().count(), 10);

    let v = ok(
        &mut s,
        &schemas,
        "capture_pane",
        json!({"pane_id": "%0", "start": -100000, "end": 5, "max_lines": 10000}),
    );
    assert_clamped_to_history(&tmux, &v);

    let v = ok(
        &mut s,
        &schemas,
        "capture_pane",
        json!({"pane_id": "%0", "start": -100, "max_bytes": 20}),
    );
    assert_eq!(v["byte_clamped"], true);
    assert!(v["returned_bytes"].as_u64().unwrap() <= 20);
    assert_eq!(
        v["returned_bytes"].as_u64().unwrap() as usize,
        v["text"].as_str().unwrap().len()
    );
    assert!(v["omitted_bytes"].as_u64().unwrap() > 100);

    // A line wider than the pane wraps onto two rows; join_wrapped gives it
    // back whole. Escapes only when asked for.
    let long = "W".repeat(120);
    type_line(
        &tmux,
        "%0",
        &format!("clear; printf '\\033[31mred\\033[0m\\n'; echo {long}; echo wrapped-done"),
    );
    wait_screen(&tmux, "%0", "wrapped-done");
    let v = ok(&mut s, &schemas, "capture_pane", json!({"pane_id": "%0"}));
    let text = v["text"].as_str().unwrap();
    assert!(
        !text.contains(&long) && text.contains(&"W".repeat(80)),
        "{text}"
    );
    assert!(!text.contains('\u{1b}'));
    let v = ok(
        &mut s,
        &schemas,
        "capture_pane",
        json!({"pane_id": "%0", "join_wrapped": true}),
    );
    assert!(
        v["text"].as_str().unwrap().lines().any(|l| l == long),
        "{v}"
    );
    let v = ok(
        &mut s,
        &schemas,
        "capture_pane",
        json!({"pane_id": "%0", "escapes": true}),
    );
    assert!(v["text"].as_str().unwrap().contains("\u{1b}[31mred"), "{v}");

    let e = s.call_err(
        "capture_pane",
        json!({"pane_id": "%0", "start": 5, "end": 2}),
    );
    assert!(e.contains("after end"), "{e}");
    let e = s.call_err("capture_pane", json!({"pane_id": "%0", "max_lines": 0}));
    assert!(e.contains("at least 1"), "{e}");
    let e = s.call_err("capture_pane", json!({"pane_id": "%42"}));
    assert!(e.contains("no pane %42; panes: %0"), "{e}");
}

#[test]
fn capture_since_follows_output_through_trimming_respawn_and_bad_cursors() {
    let (tmux, mut s) = Serve::with_tmux("since");
    s.initialize();
    let schemas = output_schemas(&mut s);
    // A pane with a small history limit, so trimming happens quickly.
    tmux.run_ok(["set-option", "-g", "history-limit", "100"])
        .unwrap();
    tmux.run_ok(["new-window", "-t", "main"]).unwrap();
    let pane = "%1";
    plain_shell(&tmux, pane);
    type_line(&tmux, pane, "clear; echo start-marker");
    wait_screen(&tmux, pane, "start-marker");

    let v0 = ok(&mut s, &schemas, "capture_since", json!({"pane_id": pane}));
    let c0 = v0["cursor"].as_str().unwrap().to_owned();

    type_line(&tmux, pane, "seq 1 5; echo done-5");
    wait_screen(&tmux, pane, "done-5");
    let v1 = ok(
        &mut s,
        &schemas,
        "capture_since",
        json!({"pane_id": pane, "cursor": c0}),
    );
    let text = v1["text"].as_str().unwrap();
    assert!(text.contains("1\n2\n3\n4\n5\ndone-5\n"), "{v1}");
    assert!(
        !text.contains("start-marker"),
        "old output repeated: {text}"
    );
    assert_eq!(v1["missed"], false);
    let c1 = v1["cursor"].as_str().unwrap().to_owned();

    let v2 = ok(
        &mut s,
        &schemas,
        "capture_since",
        json!({"pane_id": pane, "cursor": c1}),
    );
    assert_eq!(v2["lines"], 0, "{v2}");
    let c2 = v2["cursor"].as_str().unwrap().to_owned();

    // Fill the history past its limit: tmux drops the oldest rows and
    // renumbers; the anchor is still there, nothing is missed.
    type_line(&tmux, pane, "seq 1001 1090; echo fill-1");
    wait_screen(&tmux, pane, "fill-1");
    let v = ok(
        &mut s,
        &schemas,
        "capture_since",
        json!({"pane_id": pane, "cursor": c2}),
    );
    let c3 = v["cursor"].as_str().unwrap().to_owned();
    type_line(&tmux, pane, "seq 2001 2030; echo fill-2");
    wait_screen(&tmux, pane, "fill-2");
    let hs: u64 = tmux
        .run_ok(["display-message", "-p", "-t", pane, "#{history_size}"])
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(hs <= 100);
    let v = ok(
        &mut s,
        &schemas,
        "capture_since",
        json!({"pane_id": pane, "cursor": c3}),
    );
    assert_eq!(v["missed"], false, "{v}");
    assert_eq!(v["missed_lines"], 0, "{v}");
    let nums: Vec<u64> = v["text"]
        .as_str()
        .unwrap()
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect();
    assert_eq!(nums, (2001..=2030).collect::<Vec<u64>>(), "{v}");
    let c4 = v["cursor"].as_str().unwrap().to_owned();

    // Far more than the history holds: the anchor scrolls out; say so.
    type_line(&tmux, pane, "seq 1 500; echo fill-3");
    wait_screen(&tmux, pane, "fill-3");
    let v = ok(
        &mut s,
        &schemas,
        "capture_since",
        json!({"pane_id": pane, "cursor": c4}),
    );
    assert_eq!(v["missed"], true, "{v}");
    assert_eq!(v["missed_lines"], Value::Null, "{v}");
    assert!(v["text"].as_str().unwrap().contains("500\nfill-3\n"));
    let c5 = v["cursor"].as_str().unwrap().to_owned();

    // Foreign and malformed cursors.
    let e = s.call_err("capture_since", json!({"pane_id": "%0", "cursor": c5}));
    assert!(e.contains("belongs to pane %1"), "{e}");
    let e = s.call_err(
        "capture_since",
        json!({"pane_id": pane, "cursor": "ltxc1.3.100"}),
    );
    assert!(e.contains("not a capture_since cursor"), "{e}");
    let tampered = c5.replacen(".", ".9", 2);
    let e = s.call_err(
        "capture_since",
        json!({"pane_id": pane, "cursor": tampered}),
    );
    assert!(e.contains("not one this panescan made"), "{e}");
    let other = PrivateServer::start("since-other", 80, 24).unwrap();
    let e = s.call_err(
        "capture_since",
        json!({"pane_id": "%1", "cursor": c5, "socket_name": other.socket_name()}),
    );
    assert!(e.contains("another tmux server"), "{e}");

    // A respawned pane starts over, and says so.
    tmux.run_ok(["respawn-pane", "-k", "-t", pane]).unwrap();
    let v = ok(
        &mut s,
        &schemas,
        "capture_since",
        json!({"pane_id": pane, "cursor": c5}),
    );
    assert_eq!(v["respawned"], true, "{v}");
}

#[test]
fn snapshot_pane_reports_copy_mode_scroll_and_dead_panes() {
    let (tmux, mut s) = Serve::with_tmux("snapshot");
    plain_shell(&tmux, "%0");
    type_line(&tmux, "%0", "clear; seq 1 100");
    wait_screen(&tmux, "%0", "100");
    s.initialize();
    let schemas = output_schemas(&mut s);
    let v = ok(&mut s, &schemas, "snapshot_pane", json!({"pane_id": "%0"}));
    assert_eq!(v["pane_in_mode"], false);
    assert_eq!(v["scroll_position"], Value::Null);
    assert_eq!(v["pane_height"], 24);
    assert!(v["text"].as_str().unwrap().contains("100\n"));

    tmux.run_ok(["copy-mode", "-t", "%0"]).unwrap();
    tmux.run_ok(["send-keys", "-t", "%0", "-X", "-N", "30", "scroll-up"])
        .unwrap();
    let v = ok(&mut s, &schemas, "snapshot_pane", json!({"pane_id": "%0"}));
    assert_eq!(v["pane_in_mode"], true);
    assert_eq!(v["pane_mode"], "copy-mode");
    assert_eq!(v["scroll_position"], 30);
    assert_eq!(v["first_line"], -30);
    assert!(!v["text"].as_str().unwrap().contains("\n100\n"));

    tmux.run_ok(["set-option", "-g", "remain-on-exit", "on"])
        .unwrap();
    tmux.run_ok(["new-window", "-t", "main", "sh -c 'echo bye; exit 3'"])
        .unwrap();
    // tmux marks the pane dead when its terminal closes and learns the
    // exit status from SIGCHLD, usually a moment later; under load tmux
    // 3.3a sometimes never records it. Wait for the status a while, then
    // compare with whatever tmux itself reports.
    let state = || {
        tmux.run_ok([
            "display-message",
            "-p",
            "-t",
            "%1",
            "#{pane_dead}:#{pane_dead_status}",
        ])
        .map(|o| o.trim().to_owned())
        .unwrap_or_default()
    };
    let _ = eventually(Duration::from_secs(3), || state() == "1:3");
    let tmux_state = state();
    assert!(tmux_state.starts_with("1:"), "{tmux_state}");
    let v = ok(&mut s, &schemas, "snapshot_pane", json!({"pane_id": "%1"}));
    assert_eq!(v["pane_dead"], true);
    let status = tmux_state.trim_start_matches("1:");
    if status.is_empty() {
        assert_eq!(v["pane_dead_status"], Value::Null);
    } else {
        assert_eq!(v["pane_dead_status"], 3);
        // tmux writes its notice once it knows the status.
        assert!(v["text"].as_str().unwrap().contains("Pane is dead"), "{v}");
    }
}

#[test]
fn options_environment_hooks_variables_and_formats() {
    let (tmux, mut s) = Serve::with_tmux("options");
    s.initialize();
    let schemas = output_schemas(&mut s);

    let v = ok(
        &mut s,
        &schemas,
        "get_tmux_variables",
        json!({"names": ["pane_id", "session_name", "no_such_var"], "target": "%0"}),
    );
    assert_eq!(v["values"]["pane_id"], "%0");
    assert_eq!(v["values"]["session_name"], "main");
    assert_eq!(v["values"]["no_such_var"], "");
    let e = s.call_err("get_tmux_variables", json!({"names": []}));
    assert!(e.contains("1 to 32"), "{e}");
    let many: Vec<String> = (0..33).map(|i| format!("v{i}")).collect();
    let e = s.call_err("get_tmux_variables", json!({"names": many}));
    assert!(e.contains("1 to 32"), "{e}");
    let e = s.call_err("get_tmux_variables", json!({"names": ["pane_id}#(id)"]}));
    assert!(e.contains("not a variable name"), "{e}");
    let e = s.call_err(
        "get_tmux_variables",
        json!({"names": ["pane_id"], "target": "%77"}),
    );
    assert!(e.contains("no pane %77; panes: %0"), "{e}");

    let v = ok(
        &mut s,
        &schemas,
        "show_option",
        json!({"name": "history-limit"}),
    );
    assert_eq!(v["value"], "2000");
    let v = ok(
        &mut s,
        &schemas,
        "show_option",
        json!({"name": "mode-keys", "scope": "window", "target": "@0"}),
    );
    assert_eq!(v["inherited"], true);
    tmux.run_ok(["set-option", "-w", "-t", "@0", "mode-keys", "vi"])
        .unwrap();
    let v = ok(
        &mut s,
        &schemas,
        "show_option",
        json!({"name": "mode-keys", "scope": "window", "target": "@0"}),
    );
    assert_eq!(v["value"], "vi");
    assert_eq!(v["inherited"], false);
    let v = ok(
        &mut s,
        &schemas,
        "show_option",
        json!({"name": "escape-time", "scope": "server"}),
    );
    assert!(v["value"].as_str().unwrap().parse::<u64>().is_ok(), "{v}");
    let v = ok(
        &mut s,
        &schemas,
        "show_option",
        json!({"name": "@panescan_unset"}),
    );
    assert_eq!(v["value"], Value::Null);
    tmux.run_ok(["set-option", "-g", "@panescan_set", "yes"])
        .unwrap();
    let v = ok(
        &mut s,
        &schemas,
        "show_option",
        json!({"name": "@panescan_set"}),
    );
    assert_eq!(v["value"], "yes");
    let e = s.call_err("show_option", json!({"name": "no-such-option"}));
    assert!(e.contains("no-such-option"), "{e}");
    let e = s.call_err("show_option", json!({"name": "x; kill-server"}));
    assert!(e.contains("not an option name"), "{e}");
    let e = s.call_err(
        "show_option",
        json!({"name": "mode-keys", "scope": "window", "target": "@9"}),
    );
    assert!(e.contains("no window @9; windows: @0"), "{e}");
    let e = s.call_err(
        "display_message",
        json!({"format": "#{pane_id}", "target": "%9"}),
    );
    assert!(e.contains("no pane %9"), "{e}");
    let e = s.call_err(
        "show_option",
        json!({"name": "remain-on-exit", "scope": "pane"}),
    );
    assert!(e.contains("needs a target"), "{e}");

    tmux.run_ok(["set-environment", "-g", "PANESCAN_SECRET", "s3cret-value"])
        .unwrap();
    let r = s.call("show_environment", json!({}));
    assert!(
        !r.to_string().contains("s3cret-value"),
        "values must be withheld"
    );
    let names = r["structuredContent"]["names"].as_array().unwrap();
    assert!(names.contains(&json!("PANESCAN_SECRET")));
    let v = ok(
        &mut s,
        &schemas,
        "show_environment",
        json!({"name": "PANESCAN_SECRET"}),
    );
    assert_eq!(v["value"], "s3cret-value");
    let v = ok(
        &mut s,
        &schemas,
        "show_environment",
        json!({"name": "PANESCAN_UNSET", "session": "main"}),
    );
    assert_eq!(v["value"], Value::Null);
    let e = s.call_err("show_environment", json!({"session": "nope"}));
    assert!(e.contains("no session"), "{e}");

    tmux.run_ok(["set-hook", "-g", "after-new-window", "display-message hi"])
        .unwrap();
    let v = ok(&mut s, &schemas, "show_hooks", json!({}));
    let hooks = v["hooks"].as_array().unwrap();
    assert!(hooks.iter().any(|h| h["name"] == "after-new-window"
        && h["command"].as_str().unwrap().contains("display-message")));
    let v = ok(&mut s, &schemas, "show_hooks", json!({"name": "pane-died"}));
    assert!(v["hooks"].as_array().unwrap().is_empty());

    let v = ok(
        &mut s,
        &schemas,
        "display_message",
        json!({"format": "#{session_name}:#{window_index}.#{pane_index}", "target": "%0"}),
    );
    assert_eq!(v["value"], "main:0.0");
    let v = ok(
        &mut s,
        &schemas,
        "display_message",
        json!({"format": "#{?pane_active,yes,no}", "target": "%0"}),
    );
    assert_eq!(v["value"], "yes");
    for bad in [
        "#(touch /tmp/panescan-pwned)",
        "#{E:status-right}",
        "#{T;=5:status-left}",
    ] {
        let e = s.call_err("display_message", json!({"format": bad}));
        assert!(e.contains("display_message refuses"), "{bad}: {e}");
    }
    assert!(!std::path::Path::new("/tmp/panescan-pwned").exists());
}

#[test]
fn wait_for_text_sees_only_new_text_and_is_cancellable_with_progress() {
    let (tmux, mut s) = Serve::with_tmux("wait");
    plain_shell(&tmux, "%0");
    type_line(&tmux, "%0", "clear; echo already-here");
    wait_screen(&tmux, "%0", "already-here");
    s.initialize();
    let schemas = output_schemas(&mut s);

    let v = ok(
        &mut s,
        &schemas,
        "wait_for_text",
        json!({"pane_id": "%0", "pattern": "already-here", "timeout_ms": 400}),
    );
    assert_eq!(v["found"], false);
    assert_eq!(v["timed_out"], true);
    assert!(v["elapsed_ms"].as_u64().unwrap() >= 400);

    // A wait in flight does not block other requests.
    s.send(&json!({"jsonrpc": "2.0", "id": "w1", "method": "tools/call", "params": {
        "name": "wait_for_text",
        "arguments": {"pane_id": "%0", "pattern": "ready-[0-9]+", "regex": true, "timeout_ms": 10000},
        "_meta": {"progressToken": "tok-w1"}}}));
    // (The ping is answered while w1 waits: w1 can only find its text,
    // below, because it is typed after this answer came.)
    let r = s.request_bare("ping");
    assert_eq!(r["result"], json!({}));
    // An id still in flight cannot be reused.
    s.send(
        &json!({"jsonrpc": "2.0", "id": "w1", "method": "tools/call", "params": {
        "name": "list_panes", "arguments": {}}}),
    );
    let dup = s.recv(Duration::from_secs(5)).unwrap();
    assert_eq!(dup["id"], "w1");
    assert_eq!(dup["error"]["code"], -32600, "{dup}");
    // The typed command line holds `ready-$((6*7))`, which does not match.
    type_line(&tmux, "%0", "echo ready-$((6*7))");
    let r = s.response(&json!("w1"), Duration::from_secs(10));
    let v = &r["result"]["structuredContent"];
    assert_eq!(v["found"], true, "{r}");
    assert_eq!(v["line"], "ready-42");
    assert!(validate(&schemas["wait_for_text"], v).is_empty());

    // Progress: token echoed, strictly increasing.
    s.send(
        &json!({"jsonrpc": "2.0", "id": 71, "method": "tools/call", "params": {
        "name": "wait_for_text",
        "arguments": {"pane_id": "%0", "pattern": "never", "timeout_ms": 1800},
        "_meta": {"progressToken": 9}}}),
    );
    let r = s.response(&json!(71), Duration::from_secs(10));
    assert_eq!(r["result"]["structuredContent"]["timed_out"], true);
    let progress: Vec<Value> = s
        .take_pending()
        .into_iter()
        .filter(|m| m["method"] == "notifications/progress")
        .collect();
    assert!(progress.len() >= 2, "{progress:?}");
    assert!(progress
        .iter()
        .all(|p| p["params"]["progressToken"] == json!(9)));
    let values: Vec<f64> = progress
        .iter()
        .map(|p| p["params"]["progress"].as_f64().unwrap())
        .collect();
    assert!(values.windows(2).all(|w| w[1] > w[0]), "{values:?}");

    cancel_a_running_wait(&mut s);
    let r = s.request_bare("ping");
    assert_eq!(r["result"], json!({}));

    let e = s.call_err(
        "wait_for_text",
        json!({"pane_id": "%0", "pattern": "a{5000}", "regex": true}),
    );
    assert!(e.contains("invalid regular expression"), "{e}");
    let e = s.call_err(
        "wait_for_text",
        json!({"pane_id": "%5", "pattern": "x", "timeout_ms": 100}),
    );
    assert!(e.contains("no pane %5"), "{e}");

    // The pane goes away during the wait: a clear error, not a timeout.
    tmux.run_ok(["split-window", "-t", "%0"]).unwrap();
    s.send(&json!({"jsonrpc": "2.0", "id": "gone", "method": "tools/call", "params": {
        "name": "wait_for_text", "arguments": {"pane_id": "%1", "pattern": "never", "timeout_ms": 20000},
        "_meta": {"progressToken": "tok-gone"}}}));
    until_progress(&mut s, "tok-gone");
    tmux.run_ok(["kill-pane", "-t", "%1"]).unwrap();
    let r = s.response(&json!("gone"), Duration::from_secs(5));
    assert_eq!(r["result"]["isError"], true, "{r}");
    let text = r["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("%1 closed while waiting"), "{text}");
}

#[test]
fn batch_runs_in_order_stops_or_continues_and_fits_the_ceiling() {
    let (tmux, mut s) = Serve::with_tmux_size("batch", 200, 40);
    plain_shell(&tmux, "%0");
    s.initialize();
    let schemas = output_schemas(&mut s);
    let v = ok(
        &mut s,
        &schemas,
        "call_read_tools_batch",
        json!({"on_error": "continue", "operations": [
        {"tool": "list_sessions"},
        {"tool": "get_pane_info", "arguments": {"pane_id": "%99"}},
        {"tool": "capture_pane", "arguments": {"pane_id": "%0"}}]}),
    );
    assert_eq!(v["succeeded"], 2);
    assert_eq!(v["failed"], 1);
    assert_eq!(v["stopped_at"], Value::Null);
    let rows = v["results"].as_array().unwrap();
    assert_eq!(
        rows.iter()
            .map(|r| r["index"].as_u64().unwrap())
            .collect::<Vec<_>>(),
        vec![0, 1, 2]
    );
    assert!(rows[1]["error"].as_str().unwrap().contains("no pane %99"));
    assert_eq!(rows[2]["result"]["pane_id"], "%0");

    let r = s.request(
        "tools/call",
        json!({"name": "call_read_tools_batch",
        "_meta": {"progressToken": "b-1"},
        "arguments": {"operations": [
            {"tool": "list_sessions"},
            {"tool": "get_pane_info", "arguments": {"pane_id": "%99"}},
            {"tool": "capture_pane", "arguments": {"pane_id": "%0"}}]}}),
    );
    let v = r["result"]["structuredContent"].clone();
    assert_eq!(v["stopped_at"], 1);
    let progress: Vec<f64> = s
        .take_pending()
        .iter()
        .filter(|m| {
            m["method"] == "notifications/progress" && m["params"]["progressToken"] == "b-1"
        })
        .map(|m| m["params"]["progress"].as_f64().unwrap())
        .collect();
    assert_eq!(progress, vec![1.0, 2.0]);
    assert_eq!(v["results"].as_array().unwrap().len(), 2);

    let e = s.call_err("call_read_tools_batch", json!({"operations": [
        {"tool": "list_sessions"}, {"tool": "wait_for_text", "arguments": {"pane_id": "%0", "pattern": "x"}}]}));
    assert!(e.contains("cannot be batched; nothing was run"), "{e}");
    let ops: Vec<Value> = (0..17).map(|_| json!({"tool": "list_sessions"})).collect();
    let e = s.call_err("call_read_tools_batch", json!({"operations": ops}));
    assert!(e.contains("1 to 16"), "{e}");

    // 16 captures of ~256 KiB would pass 1,000,000 bytes: the largest
    // results are dropped and marked until the response fits.
    type_line(
        &tmux,
        "%0",
        &format!(
            "clear; yes '{}' | head -n 1900; echo filled",
            "A".repeat(190)
        ),
    );
    wait_screen(&tmux, "%0", "filled");
    let ops: Vec<Value> = (0..16)
        .map(|_| json!({"tool": "capture_pane", "arguments": {"pane_id": "%0", "start": -2000, "max_lines": 10000}}))
        .collect();
    let r = s.request_line("tools/call", json!({"name": "call_read_tools_batch", "arguments": {"operations": ops, "on_error": "continue"}}));
    let size = r.line.len();
    assert!(size <= 1_000_000, "response is {size} bytes");
    let v = &r.value["result"]["structuredContent"];
    assert_eq!(v["truncated"], true);
    assert!(v["truncated_bytes"].as_u64().unwrap() > 200_000);
    assert_eq!(v["succeeded"], 16);
    let rows = v["results"].as_array().unwrap();
    assert!(rows.iter().any(|r| r["result_truncated"] == true));
    assert!(rows
        .iter()
        .any(|r| r["result_truncated"] == false && r["result"].is_object()));
}

#[test]
fn shutdown_leaves_no_tmux_client_attached() {
    for how in ["eof", "TERM"] {
        let (tmux, mut s) = Serve::with_tmux("shutdown");
        s.initialize();
        s.call_ok("list_panes", json!({}));
        // A long wait is in flight when the end comes: it is cancelled, and
        // the server still exits promptly.
        s.send(&json!({"jsonrpc": "2.0", "id": "long", "method": "tools/call", "params": {
            "name": "wait_for_text", "arguments": {"pane_id": "%0", "pattern": "never", "timeout_ms": 60000},
            "_meta": {"progressToken": "tok-long"}}}));
        until_progress(&mut s, "tok-long");
        let started = Instant::now();
        let clients = || {
            tmux.run_ok(["list-clients", "-F", "#{client_name}"])
                .unwrap_or_default()
        };
        if how == "eof" {
            s.close_stdin();
        } else {
            s.signal(how);
        }
        // Long before the wait's 60 s were up (a quarter of them: the exit
        // did not wait for it, however loaded the machine).
        let status = s.wait_exit(Duration::from_secs(15)).expect("exits");
        assert!(status.success(), "{how}: {status}");
        assert!(
            started.elapsed() < Duration::from_secs(15),
            "{how}: slow exit"
        );
        assert!(
            eventually(Duration::from_secs(3), || clients().trim().is_empty()),
            "{how}: clients still attached: {}",
            clients()
        );
    }
}

#[test]
fn capture_since_refinds_its_place_after_blank_lines_and_trimming() {
    let (tmux, mut s) = Serve::with_tmux("since-blank");
    tmux.run_ok(["set-option", "-g", "history-limit", "100"])
        .unwrap();
    tmux.run_ok(["new-window", "-t", "main"]).unwrap();
    let pane = "%1";
    plain_shell(&tmux, pane);
    s.initialize();
    // History nearly full, and the cursor's last lines blank: three blank
    // lines alone would be a weak anchor.
    type_line(
        &tmux,
        pane,
        "clear; seq 1 90; echo head; printf '\\n\\n\\n'",
    );
    wait_screen(&tmux, pane, "head");
    // The three blank lines are printed once the prompt is back after them.
    wait_prompt_after(&tmux, pane, "head");
    let v = s.call_ok("capture_since", json!({"pane_id": pane}));
    let cursor = v["cursor"].as_str().unwrap().to_owned();
    // New output starting with its own blank run; tmux then drops the
    // oldest history rows, moving that run to where the old anchor was.
    type_line(
        &tmux,
        pane,
        "printf '\\n\\n\\n'; seq 101 130; echo tail-done",
    );
    wait_screen(&tmux, pane, "tail-done");
    let v = s.call_ok("capture_since", json!({"pane_id": pane, "cursor": cursor}));
    assert_eq!(v["missed"], false, "{v}");
    let text = v["text"].as_str().unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].contains("printf"), "{text}");
    assert_eq!(&lines[1..4], &["", "", ""], "{text}");
    let nums: Vec<u64> = lines.iter().filter_map(|l| l.trim().parse().ok()).collect();
    assert_eq!(nums, (101..=130).collect::<Vec<u64>>(), "{text}");
    assert_eq!(lines.last(), Some(&"tail-done"), "{text}");
}

/// Without the pane cache, capture_pane of the visible screen is one round
/// trip (the capture's own header gives the screen's height, no listing
/// first); with the cache it lists the server first. Both must answer
/// alike, field for field: wrapped lines joined or not, escapes, blank and
/// repeated rows, wide characters, a screen cut by max_lines or max_bytes,
/// a pane that does not exist.
#[test]
fn capture_pane_in_one_round_trip_answers_as_the_listed_path() {
    let (tmux, mut cached) = Serve::with_tmux_size("capture-one-trip", 40, 12);
    plain_shell(&tmux, "%0");
    let long = "L".repeat(70);
    type_line(
        &tmux,
        "%0",
        &format!(
            "clear; printf '\\033[32mgreen\\033[0m\\n\\nsame\\nsame\\n\\344\\270\\255\\346\\226\\207 wide\\n'; echo {long}; echo one-trip-done"
        ),
    );
    wait_screen(&tmux, "%0", "one-trip-done");
    let mut direct = Serve::spawn_with(
        &["serve", "--no-cache", "--socket-name", tmux.socket_name()],
        &[],
    );
    cached.initialize();
    direct.initialize();
    let cases = [
        json!({"pane_id": "%0"}),
        json!({"pane_id": "%0", "join_wrapped": true}),
        json!({"pane_id": "%0", "escapes": true, "join_wrapped": true}),
        json!({"pane_id": "%0", "max_lines": 12}),
        json!({"pane_id": "%0", "max_lines": 5}),
        json!({"pane_id": "%0", "max_lines": 5, "join_wrapped": true}),
        json!({"pane_id": "%0", "max_bytes": 30}),
    ];
    for args in cases {
        let a = cached.call_ok("capture_pane", args.clone());
        let b = direct.call_ok("capture_pane", args.clone());
        assert_eq!(a, b, "{args}");
    }
    assert!(
        cached.call_ok(
            "capture_pane",
            json!({"pane_id": "%0", "join_wrapped": true})
        )["text"]
            .as_str()
            .unwrap()
            .contains(&long),
        "the screen holds a wrapped line"
    );
    let missing = json!({"pane_id": "%42"});
    assert_eq!(
        cached.call_err("capture_pane", missing.clone()),
        direct.call_err("capture_pane", missing)
    );
}
