//! The control tools through `panescan serve`, each effect read back with
//! tmux itself: set_option and set_environment (mutating tier),
//! wait_for_channel and signal_channel, respawn_pane and kill_server
//! (destructive tier). Every test runs its own private tmux server.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::time::Duration;

use common::{eventually, last_pid, new_children, Serve, TempDir, REPLY_TIMEOUT};
use panescan::testing::private_server::PrivateServer;
use serde_json::{json, Value};

fn serve(tmux: &PrivateServer, tier: &str, envs: &[(&str, &str)]) -> Serve {
    let mut s = Serve::spawn_with(
        &["serve", "--socket-name", tmux.socket_name(), "--tier", tier],
        envs,
    );
    s.initialize();
    s
}

fn show(tmux: &PrivateServer, args: &[&str]) -> String {
    let mut a = vec!["show-options", "-v"];
    a.extend_from_slice(args);
    let out = tmux.run_ok(a).unwrap();
    out.strip_suffix('\n').unwrap_or(&out).to_owned()
}

/// Sends a tools/call without waiting for its answer; its id.
fn start_call(s: &mut Serve, tool: &str, args: Value) -> Value {
    let id = s.fresh_id();
    s.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": tool, "arguments": args}}));
    id
}

/// panescan's `tmux wait-for` clients alive now.
fn wait_clients(s: &Serve, since: u32) -> Vec<String> {
    new_children(s.pid(), since)
        .into_iter()
        .filter(|p| p.cmdline.contains("wait-for") && p.state != 'Z')
        .map(|p| format!("{} {}", p.pid, p.cmdline))
        .collect()
}

#[test]
fn set_option_stores_values_literally_and_refuses_what_runs() {
    let tmux = PrivateServer::start("ctl-opt", 80, 24).unwrap();
    let mut s = serve(&tmux, "mutating", &[]);
    s.call_ok("set_option", json!({"name": "mouse", "value": "on"}));
    assert_eq!(show(&tmux, &["-g", "mouse"]), "on");
    let left = "#[fg=red]#S #{session_name} $HOME; \"x\"";
    s.call_ok(
        "set_option",
        json!({"name": "status-left", "value": left, "target": "main"}),
    );
    assert_eq!(show(&tmux, &["-t", "main", "status-left"]), left);
    s.call_ok(
        "set_option",
        json!({"name": "mode-keys", "value": "vi", "scope": "window", "target": "@0"}),
    );
    assert_eq!(show(&tmux, &["-w", "-t", "@0", "mode-keys"]), "vi");
    s.call_ok(
        "set_option",
        json!({"name": "@note", "value": "-a ; b", "scope": "pane", "target": "%0"}),
    );
    assert_eq!(show(&tmux, &["-p", "-t", "%0", "@note"]), "-a ; b");
    s.call_ok(
        "set_option",
        json!({"name": "escape-time", "value": "7", "scope": "server"}),
    );
    assert_eq!(show(&tmux, &["-s", "escape-time"]), "7");
    s.call_ok(
        "set_option",
        json!({"name": "@note", "unset": true, "scope": "pane", "target": "%0"}),
    );
    assert_eq!(show(&tmux, &["-q", "-p", "-t", "%0", "@note"]), "");

    for (args, says) in [
        (
            json!({"name": "after-new-window", "value": "display x"}),
            "run commands",
        ),
        (
            json!({"name": "default-command", "value": "sh"}),
            "every new pane runs",
        ),
        (
            json!({"name": "default-c", "value": "sh"}),
            "never prefixes",
        ),
        (
            json!({"name": "command-alias[9]", "value": "x=kill-server"}),
            "defines tmux commands",
        ),
        (json!({"name": "status-right", "value": "#(id)"}), "#("),
        (json!({"name": "@x", "value": "#{E:@y}"}), "E"),
        (json!({"name": "@x", "value": "a\nb"}), "control character"),
        (json!({"name": "@x"}), "give a value"),
        (
            json!({"name": "mode-keys", "value": "vi", "scope": "pane"}),
            "target pane",
        ),
        (
            json!({"name": "escape-time", "value": "1", "scope": "server", "target": "main"}),
            "no target",
        ),
        (
            json!({"name": "@x", "value": "1", "target": "%99"}),
            "no pane %99",
        ),
    ] {
        let e = s.call_err("set_option", args.clone());
        assert!(e.contains(says), "{args}: {e}");
    }
    assert_eq!(show(&tmux, &["-gq", "default-command"]), "");
    assert!(!show(&tmux, &["-g", "status-right"]).contains("#(id)"));
}

#[test]
fn set_environment_sets_and_unsets_literally() {
    let tmux = PrivateServer::start("ctl-env", 80, 24).unwrap();
    let mut s = serve(&tmux, "mutating", &[]);
    let value = "a b;$HOME \"q\" #{pane_id} -u";
    s.call_ok("set_environment", json!({"name": "PS_X", "value": value}));
    let got = tmux.run_ok(["show-environment", "-g", "PS_X"]).unwrap();
    assert_eq!(got.trim_end_matches('\n'), format!("PS_X={value}"));
    s.call_ok(
        "set_environment",
        json!({"name": "_Y1", "value": "", "session": "main"}),
    );
    let got = tmux
        .run_ok(["show-environment", "-t", "main", "_Y1"])
        .unwrap();
    assert_eq!(got.trim_end(), "_Y1=");
    s.call_ok("set_environment", json!({"name": "PS_X", "unset": true}));
    assert!(tmux.run_ok(["show-environment", "-g", "PS_X"]).is_err());
    for (args, says) in [
        (json!({"name": "1A", "value": "x"}), "not a variable name"),
        (json!({"name": "A=B", "value": "x"}), "not a variable name"),
        (json!({"name": "A", "value": "x\u{0}y"}), "NUL"),
        (
            json!({"name": "A", "value": "x", "session": "nope"}),
            "no session",
        ),
        (
            json!({"name": "A", "value": "x", "unset": true}),
            "not both",
        ),
    ] {
        let e = s.call_err("set_environment", args.clone());
        assert!(e.contains(says), "{args}: {e}");
    }
}

#[test]
fn wait_for_channel_wakes_on_signal_channel_and_on_tmux_while_others_answer() {
    let tmux = PrivateServer::start("ctl-wait", 80, 24).unwrap();
    let mut s = serve(&tmux, "mutating", &[]);
    for (n, from_tmux) in [(0, false), (1, true)] {
        let channel = format!("build.done-{n}");
        let since = last_pid();
        let id = start_call(
            &mut s,
            "wait_for_channel",
            json!({"channel": channel, "timeout_ms": 60_000}),
        );
        assert!(
            eventually(REPLY_TIMEOUT, || !wait_clients(&s, since).is_empty()),
            "no wait-for client started"
        );
        // The wait holds no tool up: a listing answers while it lasts.
        let listed = std::time::Instant::now();
        let sessions = s.call_ok("list_sessions", json!({}));
        eprintln!("list_sessions during the wait: {:?}", listed.elapsed());
        assert_eq!(sessions["sessions"][0]["session_name"], "main");
        assert!(
            s.take_pending().iter().all(|m| m["id"] != id),
            "the wait ended before it was signalled"
        );
        let signalled = std::time::Instant::now();
        if from_tmux {
            tmux.run_ok(["wait-for", "-S", &channel]).unwrap();
        } else {
            s.call_ok("signal_channel", json!({"channel": channel}));
        }
        let r = s.response(&id, REPLY_TIMEOUT);
        eprintln!(
            "signal (from tmux: {from_tmux}) to the wait's answer: {:?}",
            signalled.elapsed()
        );
        let v = &r["result"]["structuredContent"];
        assert_eq!(v["signalled"], true, "{r}");
        assert_eq!(v["timed_out"], false, "{r}");
        assert!(
            eventually(REPLY_TIMEOUT, || wait_clients(&s, since).is_empty()),
            "a wait-for client stayed"
        );
    }
    for bad in ["", "a b", "-S", "x;kill-server", &"c".repeat(129)] {
        let e = s.call_err(
            "wait_for_channel",
            json!({"channel": bad, "timeout_ms": 10}),
        );
        assert!(e.contains("channel"), "{bad:?}: {e}");
        let e = s.call_err("signal_channel", json!({"channel": bad}));
        assert!(e.contains("channel"), "{bad:?}: {e}");
    }
    let e = s.call_err(
        "wait_for_channel",
        json!({"channel": "x", "timeout_ms": 120_001}),
    );
    assert!(e.contains("120000") && e.contains("ceiling"), "{e}");
}

#[test]
fn wait_for_channel_timeout_and_cancel_leave_no_client_behind() {
    let tmux = PrivateServer::start("ctl-wait-end", 80, 24).unwrap();
    let mut s = serve(&tmux, "mutating", &[]);
    let clients_before = tmux.run_ok(["list-clients"]).unwrap();
    let since = last_pid();
    let v = s.call_ok(
        "wait_for_channel",
        json!({"channel": "never", "timeout_ms": 200}),
    );
    assert_eq!(v["timed_out"], true, "{v}");
    assert_eq!(v["signalled"], false, "{v}");
    assert!(v["elapsed_ms"].as_u64().unwrap() >= 200, "{v}");
    assert_eq!(wait_clients(&s, since), Vec::<String>::new());
    assert_eq!(tmux.run_ok(["list-clients"]).unwrap(), clients_before);

    // Cancelled: the client goes too, and no answer comes.
    let since = last_pid();
    let id = start_call(
        &mut s,
        "wait_for_channel",
        json!({"channel": "never", "timeout_ms": 60_000}),
    );
    assert!(eventually(REPLY_TIMEOUT, || !wait_clients(&s, since).is_empty()));
    s.notify("notifications/cancelled", json!({"requestId": id}));
    assert!(
        eventually(REPLY_TIMEOUT, || wait_clients(&s, since).is_empty()),
        "the cancelled wait's client stayed: {:?}",
        wait_clients(&s, since)
    );
    // The channel the dead waiters were on still works, and tmux with it.
    tmux.run_ok(["wait-for", "-S", "never"]).unwrap();
    let v = s.call_ok(
        "wait_for_channel",
        json!({"channel": "never", "timeout_ms": 200}),
    );
    assert_eq!(v["timed_out"], true, "{v}");
    s.call_ok("signal_channel", json!({"channel": "early"}));
    let v = s.call_ok(
        "wait_for_channel",
        json!({"channel": "early", "timeout_ms": 30_000}),
    );
    assert_eq!(
        v["signalled"], true,
        "a signal before the wait is kept: {v}"
    );
    let ids: Vec<Value> = s.take_pending().iter().map(|m| m["id"].clone()).collect();
    assert!(!ids.contains(&id), "the cancelled call was answered");
}

#[test]
fn respawn_pane_runs_the_command_in_the_directory_as_written() {
    let tmux = PrivateServer::start("ctl-respawn", 80, 24).unwrap();
    tmux.run_ok(["split-window", "-t", "main"]).unwrap();
    let socket = tmux.socket_path().unwrap();
    let tmux_env = format!("{},1,0", socket.display());
    let mut s = serve(
        &tmux,
        "destructive",
        &[("TMUX", &tmux_env), ("TMUX_PANE", "%0")],
    );
    let dir = TempDir::new("ctl-respawn");
    let odd = dir.0.join("a#{pane_id}b ;$x");
    std::fs::create_dir(&odd).unwrap();
    let odd = odd.display().to_string();
    let v = s.call_ok(
        "respawn_pane",
        json!({"pane_id": "%1", "kill": true, "start_directory": odd,
               "command": "pwd; echo 'R#{pane_id}'; exec sleep 100"}),
    );
    assert_eq!(v["killed"], true);
    let screen = || tmux.run_ok(["capture-pane", "-p", "-t", "%1"]).unwrap();
    assert!(
        eventually(REPLY_TIMEOUT, || screen().contains("R#{pane_id}")),
        "{}",
        screen()
    );
    let lines: Vec<String> = screen().lines().map(str::to_owned).collect();
    assert_eq!(lines[0], odd, "{lines:?}");
    assert_eq!(lines[1], "R#{pane_id}", "{lines:?}");

    let e = s.call_err("respawn_pane", json!({"pane_id": "%1"}));
    assert!(
        e.contains("still active"),
        "without kill, a live pane stays: {e}"
    );
    let e = s.call_err("respawn_pane", json!({"pane_id": "%0", "kill": true}));
    assert!(e.contains("refused") && e.contains("%0"), "{e}");
    for (dir, says) in [
        ("relative/dir", "absolute"),
        ("/nonexistent-panescan-dir", "not an existing directory"),
    ] {
        let e = s.call_err(
            "respawn_pane",
            json!({"pane_id": "%1", "kill": true, "start_directory": dir}),
        );
        assert!(e.contains(says), "{dir}: {e}");
    }
    let e = s.call_err("respawn_pane", json!({"pane_id": "%9", "kill": true}));
    assert!(e.contains("no pane %9"), "{e}");
    assert!(
        screen().contains("R#{pane_id}"),
        "a refusal respawned the pane"
    );
}

#[test]
fn kill_server_is_refused_inside_and_done_otherwise() {
    let tmux = PrivateServer::start("ctl-kill", 80, 24).unwrap();
    let socket = tmux.socket_path().unwrap();
    let tmux_env = format!("{},1,0", socket.display());
    let mut inside = serve(
        &tmux,
        "destructive",
        &[("TMUX", &tmux_env), ("TMUX_PANE", "%0")],
    );
    let e = inside.call_err("kill_server", json!({"confirm": true}));
    assert!(e.contains("refused") && e.contains("runs inside"), "{e}");
    tmux.run_ok(["has-session", "-t", "main"]).unwrap();

    let since = last_pid();
    let mut outside = serve(&tmux, "destructive", &[]);
    let e = outside.call_err("kill_server", json!({"confirm": false}));
    assert!(e.contains("confirm must be true"), "{e}");
    // A control client attached first: it must go without holding tmux up.
    outside.call_ok("list_sessions", json!({}));
    // panescan's own tmux processes (the control client, its guard): there
    // before, gone and reaped after.
    let pid = outside.pid();
    let left = || -> Vec<String> {
        new_children(pid, since)
            .into_iter()
            .map(|p| format!("{} {} {}", p.pid, p.state, p.cmdline))
            .collect()
    };
    assert!(!left().is_empty(), "no control client to begin with");
    let v = outside.call_ok("kill_server", json!({"confirm": true}));
    assert_eq!(v["sessions"], 1, "{v}");
    assert!(tmux.run_ok(["list-sessions"]).is_err(), "the server lives");
    assert!(
        eventually(REPLY_TIMEOUT, || left().is_empty()),
        "left behind: {:?}",
        left()
    );
    let e = outside.call_err("list_sessions", json!({}));
    assert!(e.contains("no tmux server"), "{e}");
    assert!(outside.wait_exit(Duration::from_millis(1)).is_none());
}

#[test]
fn a_wait_in_flight_ends_with_panescan() {
    let tmux = PrivateServer::start("ctl-wait-exit", 80, 24).unwrap();
    let mut s = serve(&tmux, "mutating", &[]);
    let since = last_pid();
    start_call(
        &mut s,
        "wait_for_channel",
        json!({"channel": "never", "timeout_ms": 120_000}),
    );
    assert!(eventually(REPLY_TIMEOUT, || !wait_clients(&s, since).is_empty()));
    let pid = s.pid();
    let waits = || {
        new_children(pid, since)
            .into_iter()
            .filter(|p| p.cmdline.contains("wait-for"))
            .count()
    };
    s.close_stdin();
    assert!(
        s.wait_exit(REPLY_TIMEOUT).is_some(),
        "panescan stayed for its wait"
    );
    // Its wait-for client was killed, not orphaned to tmux's lifetime.
    let orphans = || {
        std::fs::read_dir("/proc")
            .unwrap()
            .filter_map(|e| e.ok())
            .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
            .filter(|c| {
                let c = String::from_utf8_lossy(c);
                c.contains("wait-for") && c.contains(tmux.socket_name())
            })
            .count()
    };
    assert!(
        eventually(REPLY_TIMEOUT, || orphans() == 0),
        "{} wait-for clients outlived panescan ({} as its children)",
        orphans(),
        waits()
    );
}
