//! tmux faults under the tools, resources and prompts added since
//! `harden_tmux_faults.rs`: tmux stopped (SIGSTOP) while 30 calls of every
//! new kind are in flight, and tmux killed (SIGKILL) under waits, a
//! running command and a subscription. Every call ends within its deadline
//! with a clear error (or, for a wait, a timeout it reports), nothing
//! panics, a call that needs no tmux is not held up, and once tmux runs
//! again (continued, or a new server on the same socket) the next calls
//! work.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use common::{eventually, plain_shell, Serve};
use panescan::testing::private_server::PrivateServer;
use serde_json::{json, Value};

/// panescan's deadline for one tmux command (config `tmux_timeout`).
const TMUX_DEADLINE: Duration = Duration::from_secs(10);
/// Room for a loaded machine past a deadline.
const SLACK: Duration = Duration::from_secs(5);

fn serve(label: &str) -> (PrivateServer, Serve) {
    let tmux = PrivateServer::start(label, 100, 30).unwrap();
    let mut s = Serve::spawn_with(
        &[
            "serve",
            "--socket-name",
            tmux.socket_name(),
            "--tier",
            "destructive",
        ],
        &[],
    );
    s.initialize();
    (tmux, s)
}

/// A pane running `cat` (typed text goes nowhere that matters).
fn cat_pane(tmux: &PrivateServer) -> String {
    tmux.run_ok(["new-window", "-d", "-P", "-F", "#{pane_id}", "cat"])
        .unwrap()
        .trim()
        .to_owned()
}

/// How a request ended.
#[derive(Debug)]
enum End {
    /// A result (tool success, or a method's result).
    Ok(Value),
    /// A tool error or a protocol error, with its message.
    Error(String),
}

fn end_of(r: &Value) -> End {
    if let Some(e) = r.get("error") {
        return End::Error(e["message"].as_str().unwrap_or_default().to_owned());
    }
    let result = &r["result"];
    if result["isError"] == true {
        return End::Error(
            result["content"][0]["text"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
        );
    }
    End::Ok(result.clone())
}

/// An error a caller can act on: says something, briefly, and no panic.
fn assert_clear(what: &str, text: &str) {
    assert!(
        text.len() > 10 && text.len() < 2000,
        "{what}: unclear error {text:?}"
    );
    for bad in ["panicked", "internal error", "RUST_BACKTRACE"] {
        assert!(!text.contains(bad), "{what}: {text}");
    }
}

fn signal(pid: u32, sig: &str) {
    let ok = std::process::Command::new("kill")
        .args([&format!("-{sig}"), &pid.to_string()])
        .status()
        .unwrap()
        .success();
    assert!(ok, "kill -{sig} {pid}");
}

/// Sends a request; returns its id.
fn send(s: &mut Serve, method: &str, params: Value) -> Value {
    let id = s.fresh_id();
    s.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
    id
}

fn tool(name: &str, args: Value) -> (String, Value) {
    (
        "tools/call".into(),
        json!({"name": name, "arguments": args}),
    )
}

/// Every new kind of request, aimed at panes that exist.
fn surface(
    shell: &str,
    cat: &str,
    other: &str,
    command_id: &str,
) -> Vec<(String, (String, Value))> {
    let calls = vec![
        tool(
            "run_command",
            json!({"pane_id": shell, "command": "echo x", "timeout_ms": 3000}),
        ),
        tool(
            "wait_for_command",
            json!({"command_id": command_id, "timeout_ms": 3000}),
        ),
        tool(
            "wait_for_text",
            json!({"pane_id": shell, "pattern": "never", "timeout_ms": 3000}),
        ),
        tool(
            "watch_panes",
            json!({"pattern": "never", "timeout_ms": 3000}),
        ),
        tool("create_session", json!({"name": "stopped-new"})),
        tool("create_window", json!({"session": "main", "name": "w-new"})),
        tool("split_window", json!({"pane_id": other})),
        tool("select_pane", json!({"pane_id": other})),
        tool("select_window", json!({"window_id": "@0"})),
        tool("resize_pane", json!({"pane_id": other, "height": 10})),
        tool("rename_session", json!({"session": "main", "name": "main"})),
        tool(
            "swap_pane",
            json!({"pane_id": other, "target_pane_id": cat}),
        ),
        tool(
            "move_window",
            json!({"window_id": "@0", "session": "main", "index": 40}),
        ),
        tool(
            "set_option",
            json!({"name": "@soak", "value": "x", "global": true}),
        ),
        tool("set_environment", json!({"name": "SOAK_X", "value": "y"})),
        tool(
            "wait_for_channel",
            json!({"channel": "stopped-ch", "timeout_ms": 3000}),
        ),
        tool("signal_channel", json!({"channel": "other-ch"})),
        tool("paste_text", json!({"pane_id": cat, "text": "pasted"})),
        tool("pipe_pane", json!({"pane_id": cat})),
        tool("show_buffer", json!({})),
        tool("list_servers", json!({})),
        tool("clear_history", json!({"pane_id": cat})),
        tool(
            "respawn_pane",
            json!({"pane_id": cat, "command": "cat", "kill": true}),
        ),
        tool("send_keys", json!({"pane_id": cat, "text": "typed"})),
        ("resources/read".into(), json!({"uri": "tmux://sessions"})),
        (
            "resources/read".into(),
            json!({"uri": format!("tmux://pane/{}/screen", &shell[1..])}),
        ),
        (
            "resources/read".into(),
            json!({"uri": format!("tmux://pane/{}/history?lines=5", &shell[1..])}),
        ),
        (
            "resources/subscribe".into(),
            json!({"uri": format!("tmux://pane/{}/screen", &other[1..])}),
        ),
        ("resources/list".into(), json!({})),
        (
            "prompts/get".into(),
            json!({"name": "triage_panes", "arguments": {}}),
        ),
    ];
    calls
        .into_iter()
        .map(|(m, p)| {
            let label = p["name"]
                .as_str()
                .or(p["uri"].as_str())
                .unwrap_or("")
                .to_owned();
            (format!("{m} {label}"), (m, p))
        })
        .collect()
}

/// Sends every request at once; returns each one's end and how long after
/// the first was sent its answer arrived.
fn all_at_once(
    s: &mut Serve,
    calls: Vec<(String, (String, Value))>,
) -> Vec<(String, End, Duration)> {
    let started = Instant::now();
    let mut waiting: Vec<(String, Value)> = calls
        .into_iter()
        .map(|(label, (method, params))| (label, send(s, &method, params)))
        .collect();
    let mut ends = Vec::new();
    while !waiting.is_empty() {
        let m = s.message(TMUX_DEADLINE * 3, |m| {
            m.get("method").is_none() && waiting.iter().any(|(_, id)| m["id"] == *id)
        });
        let took = started.elapsed();
        let at = waiting.iter().position(|(_, id)| m["id"] == *id).unwrap();
        let (label, _) = waiting.remove(at);
        ends.push((label, end_of(&m), took));
    }
    ends
}

#[test]
fn a_stopped_tmux_ends_every_new_call_by_its_deadline_and_the_next_calls_work() {
    let (tmux, mut s) = serve("harden-surface-stop");
    plain_shell(&tmux, "%0");
    let (cat, other) = (cat_pane(&tmux), cat_pane(&tmux));
    // A command still running, for wait_for_command.
    let r = s.call_ok(
        "run_command",
        json!({"pane_id": "%0", "command": "sleep 6", "timeout_ms": 100}),
    );
    let command_id = r["command_id"].as_str().unwrap().to_owned();
    s.call_ok("list_panes", json!({}));

    let frozen = tmux.stop().unwrap();
    let calls = surface("%0", &cat, &other, &command_id);
    let n = calls.len();
    // A wait ends by its own time (timeout_ms), tmux answering or not;
    // any other call by tmux's deadline.
    let allowed: BTreeMap<String, Duration> = calls
        .iter()
        .map(|(label, (_, p))| {
            let limit = match p["arguments"]["timeout_ms"].as_u64() {
                Some(own) => Duration::from_millis(own),
                None => TMUX_DEADLINE,
            };
            (label.clone(), limit + SLACK)
        })
        .collect();
    let ends = all_at_once(&mut s, calls);
    drop(frozen);
    let mut table = BTreeMap::new();
    for (label, end, took) in &ends {
        let kind = match end {
            End::Error(text) => {
                assert_clear(label, text);
                format!("error: {}", text.chars().take(90).collect::<String>())
            }
            End::Ok(v) => ok_while_stopped(label, v),
        };
        table.insert(label.clone(), (kind, *took));
    }
    for (label, (kind, took)) in &table {
        eprintln!("stopped: {label:<40} {took:>8.2?}  {kind}");
    }
    let late: Vec<&String> = table
        .iter()
        .filter(|(label, (_, took))| *took > allowed[*label])
        .map(|(label, _)| label)
        .collect();
    assert!(late.is_empty(), "ended past their deadline: {late:?}");
    assert_eq!(table.len(), n);
    recovers(&mut s, &tmux);
}

/// A success while tmux is stopped: only what needs no tmux, or a wait
/// that says it timed out.
fn ok_while_stopped(label: &str, v: &Value) -> String {
    let sc = &v["structuredContent"];
    if label.contains("prompts/get") {
        assert!(v["messages"].is_array(), "{label}: {v}");
        return "answered (needs no tmux)".into();
    }
    if sc["timed_out"] == true {
        return "timed out, said so".into();
    }
    if label.contains("list_servers") {
        return format!("servers: {}", sc["servers"]);
    }
    panic!("{label} succeeded while tmux was stopped: {v}");
}

/// After a fault: the common calls work again.
fn recovers(s: &mut Serve, tmux: &PrivateServer) {
    s.call_ok("list_panes", json!({}));
    let r = s.request("resources/read", json!({"uri": "tmux://sessions"}));
    assert!(r.get("error").is_none(), "{r}");
    let w = s.call_ok(
        "wait_for_text",
        json!({"pane_id": "%0", "pattern": "never", "timeout_ms": 200}),
    );
    assert_eq!(w["timed_out"], true, "{w}");
    // The shell may still be running what was typed while tmux stood still.
    let mut last = Value::Null;
    let ran = eventually(Duration::from_secs(20), || {
        let r = s.call(
            "run_command",
            json!({"pane_id": "%0", "command": "echo back-$((6*7))"}),
        );
        last = r.clone();
        r["isError"] == false && r["structuredContent"]["output"] == "back-42\n"
    });
    assert!(ran, "run_command after the fault: {last}");
    // The paste that timed out left no buffer once tmux ran again.
    let buffers = || tmux.run_ok(["list-buffers"]).unwrap_or_default();
    assert!(
        eventually(Duration::from_secs(10), || buffers().trim().is_empty()),
        "buffers left: {}",
        buffers()
    );
}

#[test]
fn a_killed_tmux_ends_waits_and_commands_clearly_and_a_new_server_is_served() {
    let (tmux, mut s) = serve("harden-surface-kill");
    plain_shell(&tmux, "%0");
    let other = cat_pane(&tmux);
    let socket = tmux.socket_path().unwrap();
    s.call_ok("list_panes", json!({}));
    let sub = s.request(
        "resources/subscribe",
        json!({"uri": format!("tmux://pane/{}/screen", &other[1..])}),
    );
    assert!(sub.get("error").is_none(), "{sub}");
    let long = 30_000;
    let calls = vec![
        tool(
            "run_command",
            json!({"pane_id": "%0", "command": "sleep 60", "timeout_ms": long}),
        ),
        tool(
            "wait_for_text",
            json!({"pane_id": other, "pattern": "never", "timeout_ms": long}),
        ),
        tool(
            "watch_panes",
            json!({"pattern": "never", "timeout_ms": long}),
        ),
        tool(
            "wait_for_channel",
            json!({"channel": "killed-ch", "timeout_ms": long}),
        ),
    ];
    let started = Instant::now();
    let ids: Vec<(String, Value)> = calls
        .into_iter()
        .map(|(m, p)| (p["name"].as_str().unwrap().to_owned(), send(&mut s, &m, p)))
        .collect();
    // Every call is under way once tmux shows the command running.
    assert!(eventually(Duration::from_secs(10), || tmux
        .run_ok([
            "display-message",
            "-p",
            "-t",
            "%0",
            "#{pane_current_command}"
        ])
        .is_ok_and(|c| c.trim() == "sleep")));
    signal(tmux.pid().unwrap(), "KILL");
    for (label, id) in ids {
        let r = s.response(&id, Duration::from_secs(60));
        let took = started.elapsed();
        let end = end_of(&r);
        eprintln!("killed: {label:<20} {took:>8.2?}  {end:?}");
        assert!(
            took < Duration::from_millis(long),
            "{label} waited out its timeout: {end:?}"
        );
        match end {
            End::Error(text) => assert_clear(&label, &text),
            End::Ok(v) => panic!("{label} succeeded on a dead server: {v}"),
        }
    }
    // A new server on the same socket: served by the next calls.
    let _ = std::fs::remove_file(&socket);
    tmux.run_ok(["new-session", "-d", "-s", "reborn"]).unwrap();
    let r = s.request("resources/read", json!({"uri": "tmux://sessions"}));
    assert!(r.to_string().contains("reborn"), "{r}");
    let w = s.call_ok(
        "watch_panes",
        json!({"pattern": "never", "timeout_ms": 200}),
    );
    assert_eq!(w["timed_out"], true, "{w}");
    let e = s.call_err("kill_server", json!({}));
    assert_clear("kill_server without confirm", &e);
}

/// Starts watch_panes over every pane, stops tmux past a probe's 10 s
/// deadline, then prints the needle in `pane(far)`: the watch's answer.
fn watch_across_a_stop(print_in: impl Fn(&str) -> String, label: &str) -> (String, Value) {
    let (tmux, mut s) = serve(label);
    // A pane in another session than the client's: probed, not covered.
    // The client attaches to the first session by name: `main`.
    let far = tmux
        .run_ok([
            "new-session",
            "-d",
            "-s",
            "other",
            "-P",
            "-F",
            "#{pane_id}",
            "cat",
        ])
        .unwrap()
        .trim()
        .to_owned();
    s.call_ok("list_panes", json!({}));
    let shown = tmux
        .run_ok([
            "list-clients",
            "-F",
            "#{client_control_mode} #{session_name}",
        ])
        .unwrap();
    assert_eq!(shown.trim(), "1 main", "the control client shows main");
    let id = s.fresh_id();
    let token = format!("watch-{id}");
    s.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": "watch_panes",
                   "arguments": {"pattern": "after-the-stop", "timeout_ms": 45_000},
                   "_meta": {"progressToken": token}}}));
    let set = s.message(Duration::from_secs(30), |m| {
        m["params"]["progressToken"] == token.as_str()
            && m["params"]["message"]
                .as_str()
                .is_some_and(|t| t.starts_with("watching"))
    });
    let polled = set["params"]["message"].as_str().unwrap().to_owned();
    assert!(polled.contains("(1 polled)"), "{polled}");
    let frozen = tmux.stop().unwrap();
    std::thread::sleep(TMUX_DEADLINE + Duration::from_secs(1));
    drop(frozen);
    let pane = print_in(&far);
    tmux.run_ok(["send-keys", "-t", &pane, "-l", "after-the-stop"])
        .unwrap();
    tmux.run_ok(["send-keys", "-t", &pane, "Enter"]).unwrap();
    let r = s.response(&id, Duration::from_secs(60));
    if r["result"]["isError"] == true {
        // The other outcome allowed: a capture sent while tmux stood still
        // ran past its deadline, and the watch ended with that, clearly.
        let text = r["result"]["content"][0]["text"].as_str().unwrap_or("");
        assert!(
            text.contains("while waiting") && text.contains("did not answer before the deadline"),
            "{r}"
        );
        return (pane, Value::Null);
    }
    (pane, r["result"]["structuredContent"].clone())
}

#[test]
fn a_watch_outlives_a_stopped_tmux_and_still_sees_its_polled_panes() {
    let (pane, sc) = watch_across_a_stop(|far| far.to_owned(), "harden-surface-watch");
    if sc.is_null() {
        return; // ended clearly by a capture's deadline (checked above)
    }
    assert_eq!(
        sc["timed_out"], false,
        "the watch lost its polled pane: {sc}"
    );
    assert_eq!(sc["hits"][0]["pane_id"], pane.as_str(), "{sc}");
    assert_eq!(sc["hits"][0]["text"], "after-the-stop", "{sc}");
}

#[test]
fn a_watch_outlives_a_stopped_tmux_and_still_hears_its_covered_panes() {
    let (pane, sc) = watch_across_a_stop(|_| "%0".to_owned(), "harden-surface-heard");
    if sc.is_null() {
        return; // ended clearly by a capture's deadline (checked above)
    }
    assert_eq!(
        sc["timed_out"], false,
        "the watch went deaf to {pane}: {sc}"
    );
    assert_eq!(sc["hits"][0]["pane_id"], pane.as_str(), "{sc}");
}
