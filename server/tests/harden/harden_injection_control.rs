//! Injection through the control tools: every argument of set_option,
//! set_environment, wait_for_channel, signal_channel and respawn_pane gets
//! the payloads of `common::injection`. What an option holds runs later
//! (hooks on an event, `#()` in a status line or title when it is drawn),
//! so each test then triggers them: a new window (hooks), a real client
//! attached to the session (status line, titles, pane borders drawn), a
//! status line that expands a user option again (`#{E:@inj}`, as a user's
//! config may), and only then waits for tmux's jobs and requires no
//! marker. The first test proves those triggers fire a payload that
//! reaches tmux without panescan in between.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use common::injection::{assert_whole, hostile_server, payloads, Markers};
use common::{eventually, Serve, TempDir, REPLY_TIMEOUT};
use panescan::testing::private_server::PrivateServer;
use serde_json::json;

/// The options whose values tmux draws as formats, and a user option.
const FORMAT_OPTIONS: [&str; 7] = [
    "status-left",
    "status-right",
    "set-titles-string",
    "window-status-format",
    "pane-border-format",
    "automatic-rename-format",
    "@inj",
];

/// A user's config that draws every format option and expands `@inj`
/// again, then a `panescan serve` of `tier` on it.
fn drawn_server(label: &str, m: &Markers, tier: &str) -> (PrivateServer, Serve) {
    let (tmux, _read_only) = hostile_server(label, m);
    for (name, value) in [
        ("set-titles", "on"),
        ("pane-border-status", "top"),
        ("status-right", "#{E:@inj}"),
    ] {
        tmux.run_ok(["set-option", "-g", name, value]).unwrap();
    }
    let mut s = Serve::spawn_with(
        &["serve", "--socket-name", tmux.socket_name(), "--tier", tier],
        &[],
    );
    s.initialize();
    (tmux, s)
}

/// Fires what options hold: a new window (hooks), a client attached to
/// `main` (status line, titles and borders drawn, `#()` jobs started);
/// then requires no marker, the viewer gone and the server whole.
fn trigger_and_check(tmux: &PrivateServer, m: &Markers, what: &str) {
    tmux.run_ok(["new-window", "-d", "-t", "main:"]).unwrap();
    let socket = tmux.socket_path().unwrap();
    let attach = format!("env -u TMUX tmux -S '{}' attach -t main", socket.display());
    tmux.run_ok([
        "new-session",
        "-d",
        "-s",
        "viewer",
        "-x",
        "100",
        "-y",
        "30",
        &attach,
    ])
    .unwrap();
    let attached = eventually(REPLY_TIMEOUT, || {
        tmux.run_ok([
            "list-clients",
            "-F",
            "#{client_session} #{client_control_mode}",
        ])
        .is_ok_and(|c| c.lines().any(|l| l == "main 0"))
    });
    assert!(attached, "the viewer never attached");
    m.assert_none(tmux, what);
    tmux.run_ok(["kill-session", "-t", "viewer"]).unwrap();
    assert_whole(tmux);
}

#[test]
fn triggers_fire_payloads_that_reach_tmux_unfiltered() {
    let m = Markers::new("inj-ctl-proof");
    let (tmux, _s) = drawn_server("harden-inj-ctl-proof", &m, "readonly");
    let hook = format!("run-shell \"{}\"", m.touch("hook"));
    tmux.run_ok(["set-option", "-g", "after-new-window", &hook])
        .unwrap();
    tmux.run_ok([
        "set-option",
        "-g",
        "status-left",
        &format!("#({})", m.touch("status")),
    ])
    .unwrap();
    tmux.run_ok([
        "set-option",
        "-g",
        "@inj",
        &format!("#({})", m.touch("again")),
    ])
    .unwrap();
    tmux.run_ok(["new-window", "-d", "-t", "main:"]).unwrap();
    let socket = tmux.socket_path().unwrap();
    let attach = format!("env -u TMUX tmux -S '{}' attach -t main", socket.display());
    tmux.run_ok(["new-session", "-d", "-s", "viewer", &attach])
        .unwrap();
    let fired = eventually(REPLY_TIMEOUT, || m.found().len() == 3);
    assert!(fired, "markers: {:?}", m.found());
    assert_eq!(m.found(), vec!["again", "hook", "status"]);
}

#[test]
fn set_option_stores_nothing_that_runs() {
    let m = Markers::new("inj-ctl-opt");
    let (tmux, mut s) = drawn_server("harden-inj-ctl-opt", &m, "mutating");
    let mut calls = 0;
    for p in payloads(&m.touch("opt")) {
        // As the name: never an option.
        s.call_err("set_option", json!({"name": p, "value": "x"}));
        // As the target: never a pane, window or session.
        s.call_err(
            "set_option",
            json!({"name": "@inj", "value": "x", "target": p}),
        );
        // As the value of every option drawn as a format: stored exactly
        // as written, or refused.
        for name in FORMAT_OPTIONS {
            let r = s.call("set_option", json!({"name": name, "value": p}));
            if r["isError"] == false {
                let stored = tmux.run_ok(["show-options", "-gv", name]).unwrap();
                assert_eq!(stored.strip_suffix('\n').unwrap(), p, "{name}");
                assert!(!p.contains("#("), "{name} stored {p:?}");
            }
            calls += 1;
        }
        calls += 2;
    }
    // Hooks and command options, with a value that would run the marker.
    let run = format!("run-shell \"{}\"", m.touch("hook"));
    for name in [
        "after-new-window",
        "after-new-window[0]",
        "client-attached",
        "session-created",
        "pane-focus-in",
        "alert-bell",
        "command-alias",
        "command-alias[100]",
        "default-command",
        "default-shell",
        "default-c",
        "copy-command",
        "lock-command",
    ] {
        for scope in ["server", "session", "window", "pane"] {
            let e = s.call_err(
                "set_option",
                json!({"name": name, "value": run, "scope": scope, "target": "%0"}),
            );
            assert!(e.contains("refuses"), "{name}: {e}");
            calls += 1;
        }
    }
    eprintln!("set_option: {calls} hostile calls");
    trigger_and_check(&tmux, &m, "set_option");
    let hooks = tmux.run_ok(["show-hooks", "-g"]).unwrap();
    assert!(!hooks.contains("touch"), "{hooks}");
}

#[test]
fn set_environment_and_channels_take_payloads_as_data_or_refuse_them() {
    let m = Markers::new("inj-ctl-env");
    let (tmux, mut s) = drawn_server("harden-inj-ctl-env", &m, "mutating");
    for p in payloads(&m.touch("env")) {
        s.call_err("set_environment", json!({"name": p, "value": "x"}));
        s.call_err(
            "set_environment",
            json!({"name": "INJ", "value": "x", "session": p}),
        );
        let r = s.call("set_environment", json!({"name": "INJ", "value": p}));
        if r["isError"] == false {
            let got = tmux.run_ok(["show-environment", "-g", "INJ"]).unwrap();
            assert_eq!(got.strip_suffix('\n').unwrap(), format!("INJ={p}"));
        } else {
            assert!(p.contains('\0'), "refused {p:?}: {r}");
        }
        for tool in ["wait_for_channel", "signal_channel"] {
            let e = s.call_err(tool, json!({"channel": p, "timeout_ms": 10}));
            assert!(e.contains("channel"), "{tool} {p:?}: {e}");
        }
    }
    trigger_and_check(&tmux, &m, "set_environment and channels");
}

#[test]
fn respawn_pane_passes_commands_and_directories_whole() {
    let m = Markers::new("inj-ctl-respawn");
    let (tmux, mut s) = drawn_server("harden-inj-ctl-respawn", &m, "destructive");
    tmux.run_ok(["split-window", "-d", "-t", "main:0"]).unwrap();
    // A pane whose program ends stays, dead, to be respawned again.
    tmux.run_ok(["set-option", "-g", "remain-on-exit", "on"])
        .unwrap();
    // Where the respawned pane writes its directory: outside the markers.
    let pwd_dir = TempDir::new("inj-ctl-pwd");
    let out = pwd_dir.0.join("pwd");
    for p in payloads(&m.touch("respawn")) {
        s.call_err("respawn_pane", json!({"pane_id": p, "kill": true}));
        // As a directory: refused before tmux (relative), or one that
        // exists, entered as written.
        s.call_err(
            "respawn_pane",
            json!({"pane_id": "%1", "kill": true, "start_directory": p}),
        );
        if !p.chars().any(char::is_control) {
            let dir = m.dir.0.join("dirs").join(p.trim_start_matches('/'));
            std::fs::create_dir_all(&dir).unwrap();
            let dir = dir.display().to_string();
            let command = format!("pwd > '{}'", out.display());
            s.call_ok(
                "respawn_pane",
                json!({"pane_id": "%1", "kill": true, "start_directory": dir,
                       "command": command}),
            );
            let entered = eventually(REPLY_TIMEOUT, || {
                std::fs::read_to_string(&out).is_ok_and(|t| t.trim_end_matches('\n') == dir)
            });
            assert!(entered, "{dir:?}: {:?}", std::fs::read_to_string(&out));
            let _ = std::fs::remove_file(&out);
        }
        // As the command: one argument, handed to the pane's shell. Shell
        // substitutions are what a command is for, so only what tmux alone
        // would read as commands is tried.
        if !p.contains("$(") && !p.contains('`') && !p.contains('\0') {
            s.call_ok(
                "respawn_pane",
                json!({"pane_id": "%1", "kill": true, "command": p}),
            );
        }
    }
    std::fs::remove_dir_all(m.dir.0.join("dirs")).unwrap();
    trigger_and_check(&tmux, &m, "respawn_pane");
}
