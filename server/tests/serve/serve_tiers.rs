//! The mutating and destructive tiers: gated by `--tier`, and the kill
//! tools refuse panescan's own pane.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::time::Duration;

use common::{eventually, plain_shell, Serve};
use panescan::testing::private_server::PrivateServer;
use serde_json::json;

fn names(s: &mut Serve) -> Vec<String> {
    let r = s.request_bare("tools/list");
    r["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn tiers_hide_and_refuse_off_tier_tools() {
    let tmux = PrivateServer::start("tiers", 80, 24).unwrap();
    let name = tmux.socket_name();
    let mut read = Serve::spawn(name);
    let mut mutating =
        Serve::spawn_with(&["serve", "--socket-name", name, "--tier", "mutating"], &[]);
    let mut all = Serve::spawn_with(
        &["serve", "--socket-name", name],
        &[("PANESCAN_TIER", "destructive")],
    );
    let (r, m, a) = (names(&mut read), names(&mut mutating), names(&mut all));
    assert!(!r.contains(&"send_keys".to_owned()) && !r.contains(&"kill_pane".to_owned()));
    assert!(m.contains(&"send_keys".to_owned()) && !m.contains(&"kill_pane".to_owned()));
    assert!(a.contains(&"send_keys".to_owned()) && a.contains(&"kill_session".to_owned()));
    assert!(r.len() < m.len() && m.len() < a.len());

    let e = read.request(
        "tools/call",
        json!({"name": "send_keys", "arguments": {"pane_id": "%0", "text": "x"}}),
    );
    assert_eq!(e["error"]["code"], -32602, "{e}");
    let e = mutating.request(
        "tools/call",
        json!({"name": "kill_pane", "arguments": {"pane_id": "%0"}}),
    );
    assert_eq!(e["error"]["code"], -32602, "{e}");
    // Not through the batch either.
    let e = all.call_err(
        "call_read_tools_batch",
        json!({"operations": [{"tool": "send_keys", "arguments": {"pane_id": "%0", "text": "x"}}]}),
    );
    assert!(e.contains("cannot be batched"), "{e}");

    // The listing of each tool says what it does to the world: read tools
    // read, the mutating tier's change without destroying, the rest destroy.
    assert!(
        m.contains(&"wait_for_command".to_owned()) && !r.contains(&"wait_for_command".to_owned())
    );
    let listed = all.request_bare("tools/list");
    for t in listed["result"]["tools"].as_array().unwrap() {
        let (a, n) = (&t["annotations"], t["name"].as_str().unwrap().to_owned());
        // wait_for_command only waits on a command run_command started: it
        // changes nothing, though only the tier that runs commands has it.
        if r.contains(&n) || n == "wait_for_command" {
            assert_eq!(a["readOnlyHint"], true, "{n}");
        } else {
            assert_eq!(a["readOnlyHint"], false, "{n}");
            assert_eq!(a["destructiveHint"], !m.contains(&n), "{n}");
        }
    }
}

#[test]
fn mutating_tools_type_rename_and_title_literally() {
    let tmux = PrivateServer::start("mutate", 80, 24).unwrap();
    plain_shell(&tmux, "%0");
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
    let v = s.call_ok(
        "send_keys",
        json!({"pane_id": "%0", "text": "echo typed-$((40+2))", "enter": true}),
    );
    assert_eq!(v["keys_sent"], 1);
    assert!(eventually(Duration::from_secs(10), || {
        tmux.run_ok(["capture-pane", "-p", "-t", "%0"])
            .unwrap()
            .lines()
            .any(|l| l.trim() == "typed-42")
    }));
    let e = s.call_err(
        "send_keys",
        json!({"pane_id": "%0", "keys": ["C-c; kill-server"]}),
    );
    assert!(e.contains("not a tmux key name"), "{e}");
    let e = s.call_err("send_keys", json!({"pane_id": "%7", "text": "x"}));
    assert!(e.contains("no pane %7"), "{e}");

    s.call_ok(
        "rename_window",
        json!({"window_id": "@0", "name": "#{pane_id} ; kill-server"}),
    );
    let name = tmux
        .run_ok(["display-message", "-p", "-t", "@0", "#{window_name}"])
        .unwrap();
    assert_eq!(name.trim_end(), "#{pane_id} ; kill-server");
    s.call_ok(
        "set_pane_title",
        json!({"pane_id": "%0", "title": "build #(id)"}),
    );
    let title = tmux
        .run_ok(["display-message", "-p", "-t", "%0", "#{pane_title}"])
        .unwrap();
    assert_eq!(title.trim_end(), "build #(id)");
}

#[test]
fn destructive_tools_kill_but_never_panescans_own_pane() {
    let tmux = PrivateServer::start("destroy", 80, 24).unwrap();
    tmux.run_ok(["split-window", "-t", "main"]).unwrap();
    tmux.run_ok(["new-window", "-t", "main"]).unwrap();
    tmux.run_ok(["new-session", "-d", "-s", "other"]).unwrap();
    let socket = tmux.socket_path().unwrap();
    // panescan "runs in" %0 of this server.
    let tmux_env = format!("{},1,0", socket.display());
    let mut s = Serve::spawn_with(
        &[
            "serve",
            "--socket-name",
            tmux.socket_name(),
            "--tier",
            "destructive",
        ],
        &[("TMUX", &tmux_env), ("TMUX_PANE", "%0")],
    );
    s.initialize();
    let v = s.call_ok("get_pane_info", json!({"pane_id": "%0"}));
    assert_eq!(v["is_caller"], true, "{v}");

    let e = s.call_err("kill_pane", json!({"pane_id": "%0"}));
    assert!(e.contains("refused") && e.contains("%0"), "{e}");
    let e = s.call_err("kill_window", json!({"window_id": "@0"}));
    assert!(e.contains("refused"), "{e}");
    let e = s.call_err("kill_session", json!({"session_id": "$0"}));
    assert!(e.contains("refused"), "{e}");

    let v = s.call_ok("kill_pane", json!({"pane_id": "%1"}));
    assert_eq!(v["killed"], "%1");
    let v = s.call_ok("kill_window", json!({"window_id": "@1"}));
    assert_eq!(v["panes"], json!(["%2"]));
    let v = s.call_ok("kill_session", json!({"session_id": "$1"}));
    assert_eq!(v["killed"], "$1");
    let panes = s.call_ok("list_panes", json!({}));
    assert_eq!(panes["total"], 1);
    let e = s.call_err("kill_pane", json!({"pane_id": "%1"}));
    assert!(e.contains("no pane %1; panes: %0"), "{e}");
}
