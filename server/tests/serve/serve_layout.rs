//! The layout tools through `panescan serve --tier mutating` on private
//! tmux servers: each call's effect read back from tmux itself, names and
//! directories stored literally, refusals clear, and the variables of
//! `update-environment` that panescan has given to the sessions it creates.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::time::Duration;

use common::{eventually, Serve, TempDir};
use panescan::testing::private_server::PrivateServer;
use serde_json::{json, Value};

fn mutating(tmux: &PrivateServer, envs: &[(&str, &str)]) -> Serve {
    mutating_with(tmux, envs, &[])
}

/// [`mutating`] with more `serve` arguments.
fn mutating_with(tmux: &PrivateServer, envs: &[(&str, &str)], more: &[&str]) -> Serve {
    let mut args = vec![
        "serve",
        "--socket-name",
        tmux.socket_name(),
        "--tier",
        "mutating",
    ];
    args.extend_from_slice(more);
    let mut s = Serve::spawn_with(&args, envs);
    s.initialize();
    s
}

/// `tmux display-message -p -t TARGET FORMAT`, without its newline.
fn show(tmux: &PrivateServer, target: &str, format: &str) -> String {
    tmux.run_ok(["display-message", "-p", "-t", target, format])
        .unwrap()
        .trim_end_matches('\n')
        .to_owned()
}

fn text<'a>(v: &'a Value, key: &str) -> &'a str {
    v[key].as_str().unwrap_or_else(|| panic!("no {key} in {v}"))
}

#[test]
fn created_sessions_windows_and_panes_are_what_tmux_has() {
    let tmux = PrivateServer::start("layout-create", 80, 24).unwrap();
    let mut s = mutating(&tmux, &[]);
    let dir = TempDir::new("layout-dir");
    let odd = dir.0.join("d #{pane_id} ;'\" -c x");
    std::fs::create_dir_all(&odd).unwrap();
    let odd = odd.to_str().unwrap().to_owned();

    let name = "-t #{session_name};'x\" y";
    let v = s.call_ok(
        "create_session",
        json!({"name": name, "window_name": "-n #(id) ;", "start_directory": odd,
               "width": 100, "height": 30}),
    );
    let session = text(&v, "session_id").to_owned();
    let pane = text(&v, "pane_id").to_owned();
    assert_eq!(show(&tmux, &session, "#{session_name}"), name);
    assert_eq!(v["session_name"], name);
    assert_eq!(show(&tmux, &pane, "#{window_name}"), "-n #(id) ;");
    assert_eq!(show(&tmux, &session, "#{session_path}"), odd);
    assert_eq!(show(&tmux, &pane, "#{window_id}"), text(&v, "window_id"));
    assert_eq!(
        show(&tmux, &pane, "#{window_width}x#{window_height}"),
        "100x30"
    );
    assert_eq!(
        (v["window_width"].clone(), v["window_height"].clone()),
        (json!(100), json!(30))
    );
    let attached = show(&tmux, &session, "#{session_attached}");
    assert_eq!(attached, "0", "the new session is detached");

    // A window running a command, in a session named by id and by name.
    let out = dir.0.join("ran");
    let cmd = format!(
        "printf '%s' \"$((6*7))\" > '{}'; exec sleep 60",
        out.display()
    );
    let w = s.call_ok(
        "create_window",
        json!({"session": name, "name": "w;2", "command": cmd, "start_directory": odd}),
    );
    assert!(eventually(Duration::from_secs(10), || {
        std::fs::read_to_string(&out).is_ok_and(|t| t == "42")
    }));
    let wpane = text(&w, "pane_id");
    assert_eq!(
        show(&tmux, wpane, "#{session_id} #{window_name}"),
        format!("{session} w;2")
    );
    assert_eq!(w["window_active"], false, "a new window is not selected");
    assert_eq!(show(&tmux, wpane, "#{window_active}"), "0");

    // Splits: sizes as asked, the new pane not selected.
    let h = s.call_ok(
        "split_window",
        json!({"pane_id": pane, "direction": "horizontal", "size": "30"}),
    );
    let hp = text(&h, "pane_id");
    assert_eq!(show(&tmux, hp, "#{pane_width}"), "30");
    assert_eq!(h["pane_width"], 30);
    assert_eq!(show(&tmux, hp, "#{pane_active}"), "0");
    assert_eq!(show(&tmux, &pane, "#{pane_active}"), "1");
    let v2 = s.call_ok(
        "split_window",
        json!({"pane_id": hp, "direction": "vertical", "size": "50%"}),
    );
    let vp = text(&v2, "pane_id");
    assert_eq!(
        show(&tmux, vp, "#{pane_height}"),
        v2["pane_height"].to_string()
    );
    assert_eq!(
        show(&tmux, vp, "#{window_id} #{pane_width}"),
        format!("{} 30", text(&h, "window_id"))
    );
}

#[test]
fn layout_calls_refuse_clearly() {
    let tmux = PrivateServer::start("layout-refuse", 80, 24).unwrap();
    let mut s = mutating(&tmux, &[]);
    let cases = [
        ("create_session", json!({"name": "main"}), "already exists"),
        ("create_session", json!({"name": "a:b"}), "cannot hold ':'"),
        ("create_session", json!({"name": "a.b"}), "cannot hold '.'"),
        (
            "create_session",
            json!({"start_directory": "tmp"}),
            "absolute",
        ),
        (
            "create_session",
            json!({"start_directory": "/nonexistent/x"}),
            "not an existing directory",
        ),
        ("create_session", json!({"width": 0}), "out of range"),
        ("create_session", json!({"height": 100000}), "out of range"),
        ("create_session", json!({"command": "  "}), "not blank"),
        ("create_window", json!({"session": "nope"}), "no session"),
        ("create_window", json!({"session": "$77"}), "no session"),
        ("split_window", json!({"pane_id": "%99"}), "no pane %99"),
        (
            "split_window",
            json!({"pane_id": "%0", "size": "0%"}),
            "percentage",
        ),
        (
            "split_window",
            json!({"pane_id": "%0", "size": "1000"}),
            "too small",
        ),
        ("select_pane", json!({"pane_id": "%99"}), "no pane %99"),
        (
            "select_window",
            json!({"window_id": "@99"}),
            "no window @99",
        ),
        ("resize_pane", json!({"pane_id": "%0"}), "nothing to do"),
        (
            "resize_pane",
            json!({"pane_id": "%0", "width": 1001}),
            "out of range",
        ),
        (
            "swap_pane",
            json!({"pane_id": "%0", "target_pane_id": "%0"}),
            "same pane",
        ),
        (
            "swap_pane",
            json!({"pane_id": "%0", "target_pane_id": "%9"}),
            "no pane %9",
        ),
        (
            "move_window",
            json!({"window_id": "@0", "session": "main", "index": 10000}),
            "out of range",
        ),
        (
            "move_window",
            json!({"window_id": "@0", "session": "main", "index": 0}),
            "index",
        ),
        (
            "rename_session",
            json!({"session": "nope", "name": "x"}),
            "no session",
        ),
        (
            "rename_session",
            json!({"session": "main", "name": "$1"}),
            "session id",
        ),
    ];
    for (tool, args, want) in cases {
        let e = s.call_err(tool, args.clone());
        assert!(
            e.contains(want),
            "{tool} {args}: {e:?} does not say {want:?}"
        );
    }
    // A pane too small to split: 2 rows cannot hold two panes and a border.
    let v = s.call_ok(
        "create_session",
        json!({"name": "tiny", "width": 20, "height": 2}),
    );
    let e = s.call_err(
        "split_window",
        json!({"pane_id": v["pane_id"], "direction": "vertical"}),
    );
    assert!(e.contains("too small to split"), "{e}");
    // Ids are validated before anything reaches tmux.
    let r = s.request(
        "tools/call",
        json!({"name": "select_pane", "arguments": {"pane_id": "%0;kill-server"}}),
    );
    assert!(
        r.get("error").is_some() || r["result"]["isError"] == true,
        "{r}"
    );
    assert_eq!(show(&tmux, "main", "#{session_name}"), "main");
}

#[test]
fn select_resize_swap_move_and_rename_change_what_tmux_shows() {
    let tmux = PrivateServer::start("layout-arrange", 80, 24).unwrap();
    let mut s = mutating(&tmux, &[]);
    let right = s.call_ok(
        "split_window",
        json!({"pane_id": "%0", "direction": "horizontal"}),
    );
    let right = text(&right, "pane_id").to_owned();
    let v = s.call_ok("select_pane", json!({"pane_id": right}));
    assert_eq!(v["pane_active"], true);
    assert_eq!(show(&tmux, &right, "#{pane_active}"), "1");
    assert_eq!(show(&tmux, "%0", "#{pane_active}"), "0");

    let w = s.call_ok("create_window", json!({"session": "main"}));
    let window = text(&w, "window_id").to_owned();
    assert_eq!(show(&tmux, &window, "#{window_active}"), "0");
    let v = s.call_ok("select_window", json!({"window_id": window}));
    assert_eq!(v["window_active"], true);
    assert_eq!(show(&tmux, &window, "#{window_active}"), "1");

    let v = s.call_ok("resize_pane", json!({"pane_id": "%0", "width": 30}));
    assert_eq!(v["pane_width"], 30);
    assert_eq!(show(&tmux, "%0", "#{pane_width}"), "30");
    let v = s.call_ok("resize_pane", json!({"pane_id": "%0", "zoom": true}));
    assert_eq!(v["window_zoomed"], true);
    assert_eq!(
        show(&tmux, "%0", "#{window_zoomed_flag} #{pane_width}"),
        "1 80"
    );
    // Asking again keeps it zoomed (not a toggle).
    s.call_ok("resize_pane", json!({"pane_id": "%0", "zoom": true}));
    assert_eq!(show(&tmux, "%0", "#{window_zoomed_flag}"), "1");
    let v = s.call_ok("resize_pane", json!({"pane_id": "%0", "zoom": false}));
    assert_eq!(v["window_zoomed"], false);
    assert_eq!(
        show(&tmux, "%0", "#{window_zoomed_flag} #{pane_width}"),
        "0 30"
    );

    let before = (
        show(&tmux, "%0", "#{pane_index}"),
        show(&tmux, &right, "#{pane_index}"),
    );
    let v = s.call_ok(
        "swap_pane",
        json!({"pane_id": "%0", "target_pane_id": right}),
    );
    let after = (
        show(&tmux, "%0", "#{pane_index}"),
        show(&tmux, &right, "#{pane_index}"),
    );
    assert_eq!((after.0.clone(), after.1.clone()), (before.1, before.0));
    assert_eq!(v["pane"]["pane_index"].to_string(), after.0);
    assert_eq!(v["target_pane"]["pane_index"].to_string(), after.1);

    let other = s.call_ok("create_session", json!({"name": "other"}));
    let v = s.call_ok(
        "move_window",
        json!({"window_id": window, "session": "other", "index": 5}),
    );
    assert_eq!(
        show(&tmux, &window, "#{session_name}:#{window_index}"),
        "other:5"
    );
    assert_eq!(
        (v["session_id"].clone(), v["window_index"].clone()),
        (other["session_id"].clone(), json!(5))
    );
    let e = s.call_err(
        "move_window",
        json!({"window_id": "@0", "session": "other", "index": 5}),
    );
    assert!(e.contains("index"), "{e}");
    let e = s.call_err(
        "rename_session",
        json!({"session": "other", "name": "main"}),
    );
    assert!(e.contains("already exists"), "{e}");
    // main's last window moves out: main ends, as tmux does it.
    let v = s.call_ok(
        "move_window",
        json!({"window_id": "@0", "session": text(&other, "session_id")}),
    );
    assert_eq!(show(&tmux, "@0", "#{session_name}"), "other");
    assert_eq!(v["session_name"], "other");
    let sessions = tmux
        .run_ok(["list-sessions", "-F", "#{session_name}"])
        .unwrap();
    assert_eq!(sessions.trim(), "other");

    let new = "-r #{session_name} ;'\"#(id)";
    let v = s.call_ok("rename_session", json!({"session": "other", "name": new}));
    assert_eq!(v["session_name"], new);
    assert_eq!(
        show(&tmux, text(&other, "session_id"), "#{session_name}"),
        new
    );
}

#[test]
fn created_sessions_get_the_update_environment_variables_panescan_has() {
    let tmux = PrivateServer::start("layout-env", 80, 24).unwrap();
    for name in ["LAYOUT_PASSED", "LAYOUT_ABSENT"] {
        tmux.run_ok(["set-option", "-ga", "update-environment", name])
            .unwrap();
    }
    tmux.run_ok(["set-environment", "-g", "LAYOUT_ABSENT", "global"])
        .unwrap();
    let passed = "v #{session_name};$(id) 'q\"";
    // The operator lets LAYOUT_PASSED through; a list that names
    // LAYOUT_SECRET (set by any mutating call) passes nothing of it.
    tmux.run_ok(["set-option", "-ga", "update-environment", "LAYOUT_SEC*"])
        .unwrap();
    let mut s = mutating_with(
        &tmux,
        &[
            ("LAYOUT_PASSED", passed),
            ("LAYOUT_SECRET", "operator-only"),
        ],
        &["--pass-env", "LAYOUT_PASSED"],
    );
    let dir = TempDir::new("layout-env");
    let out = dir.0.join("env");
    let cmd = format!(
        "printf '%s|%s|%s' \"$LAYOUT_PASSED\" \"${{LAYOUT_SECRET-unset}}\" \"${{LAYOUT_ABSENT-unset}}\" > '{}'; exec sleep 60",
        out.display()
    );
    let v = s.call_ok("create_session", json!({"name": "env", "command": cmd}));
    let session = text(&v, "session_id");
    let env = tmux.run_ok(["show-environment", "-t", session]).unwrap();
    let lines: Vec<&str> = env.lines().collect();
    assert!(
        lines.contains(&format!("LAYOUT_PASSED={passed}").as_str()),
        "{env}"
    );
    // Listed but not in panescan's environment: removed, as tmux does for
    // a client without it; never listed: absent.
    assert!(lines.contains(&"-LAYOUT_ABSENT"), "{env}");
    assert!(!env.contains("LAYOUT_SECRET"), "{env}");
    assert!(
        eventually(Duration::from_secs(10), || {
            std::fs::read_to_string(&out).is_ok_and(|t| t == format!("{passed}|unset|unset"))
        }),
        "the pane saw {:?}",
        std::fs::read_to_string(&out)
    );
    // The user's global environment is unchanged.
    let global = tmux.run_ok(["show-environment", "-g"]).unwrap();
    assert!(
        !global.contains("LAYOUT_PASSED") && !global.contains("LAYOUT_SECRET"),
        "{global}"
    );
}

#[test]
fn a_session_is_created_on_a_server_with_none() {
    // No session to attach a control client to: commands go through
    // one-shot clients, which must print the placement and pass the
    // environment just the same.
    let tmux = PrivateServer::start("layout-empty", 80, 24).unwrap();
    tmux.run_ok(["set-option", "-s", "exit-empty", "off"])
        .unwrap();
    tmux.run_ok(["set-option", "-ga", "update-environment", "LAYOUT_PASSED"])
        .unwrap();
    tmux.run_ok(["kill-session", "-t", "main"]).unwrap();
    let mut s = mutating_with(
        &tmux,
        &[("LAYOUT_PASSED", "one-shot")],
        &["--pass-env", "LAYOUT_PASSED"],
    );
    let v = s.call_ok(
        "create_session",
        json!({"name": "fresh #{host}", "width": 90, "height": 20}),
    );
    let session = text(&v, "session_id");
    assert_eq!(show(&tmux, session, "#{session_name}"), "fresh #{host}");
    assert_eq!(show(&tmux, text(&v, "pane_id"), "#{pane_width}"), "90");
    let env = tmux.run_ok(["show-environment", "-t", session]).unwrap();
    assert!(env.lines().any(|l| l == "LAYOUT_PASSED=one-shot"), "{env}");
    let clients = tmux
        .run_ok(["list-clients", "-F", "#{client_pid}"])
        .unwrap();
    assert!(clients.lines().count() <= 1, "clients: {clients}");
}

#[test]
fn lc_all_of_panescans_clients_stays_out_of_created_sessions() {
    // Every tmux client panescan runs carries LC_ALL (a UTF-8 locale);
    // panescan itself has none here. With LC_ALL in update-environment,
    // tmux would copy the client's into the session.
    let tmux = PrivateServer::start("layout-lc-all", 80, 24).unwrap();
    tmux.run_ok(["set-option", "-ga", "update-environment", "LC_ALL"])
        .unwrap();
    let args = [
        "serve",
        "--socket-name",
        tmux.socket_name(),
        "--tier",
        "mutating",
    ];
    let mut s = Serve::spawn_env(&args, &[], &["LC_ALL"]);
    s.initialize();
    let dir = TempDir::new("layout-lc-all");
    let print = |name: &str| {
        format!(
            "printf '[%s]' \"${{LC_ALL-unset}}\" > '{}'; exec sleep 60",
            dir.0.join(name).display()
        )
    };
    let v = s.call_ok(
        "create_session",
        json!({"name": "lc", "command": print("first")}),
    );
    let session = text(&v, "session_id");
    let env = tmux.run_ok(["show-environment", "-t", session]).unwrap();
    assert!(env.lines().any(|l| l == "-LC_ALL"), "{env}");
    s.call_ok(
        "create_window",
        json!({"session": session, "command": print("later")}),
    );
    for (file, want) in [("first", "[]"), ("later", "[unset]")] {
        let path = dir.0.join(file);
        let seen = eventually(Duration::from_secs(10), || {
            std::fs::read_to_string(&path).is_ok_and(|t| t == want)
        });
        assert!(seen, "{file}: {:?}", std::fs::read_to_string(&path));
    }
}
