//! Injection through the layout tools: every string argument of
//! create_session, create_window, split_window, select_pane,
//! select_window, resize_pane, rename_session, move_window and swap_pane
//! gets every payload. Names and directories come out exactly as written
//! (or are refused for a stated reason), ids and sizes are refused, a
//! `command` reaches the new pane's shell as one argument byte for byte,
//! no marker file appears and the server stays whole.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::path::Path;
use std::time::Duration;

use common::injection::{assert_whole, hostile_server, payloads, Markers};
use common::{eventually, Serve, TempDir};
use panescan::testing::private_server::PrivateServer;
use serde_json::{json, Value};

fn mutating(tmux: &PrivateServer) -> Serve {
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
    s
}

fn show(tmux: &PrivateServer, target: &str, format: &str) -> String {
    tmux.run_ok(["display-message", "-p", "-t", target, format])
        .unwrap()
        .trim_end_matches('\n')
        .to_owned()
}

/// The payloads, and the `#{}` forms that read a hostile option.
fn all_payloads(m: &Markers) -> Vec<String> {
    let mut v = payloads(&m.touch("layout"));
    v.push("#{E:@evil}".into());
    v.push("#{s/#{l:a}/y/;E:@evil}".into());
    v
}

/// A name tmux stores as written: one line of printable text.
fn storable(name: &str) -> bool {
    !name.chars().any(char::is_control)
}

/// A session name panescan accepts: storable, no target syntax, no `\`
/// (tmux would store it doubled), no leading `$` (an id).
fn session_name_ok(name: &str) -> bool {
    storable(name) && !name.contains([':', '.', '\\']) && !name.starts_with('$')
}

/// A call that succeeds exactly when `ok`; its result when it does.
fn call_as(s: &mut Serve, ok: bool, tool: &str, args: Value) -> Option<Value> {
    let r = s.call(tool, args.clone());
    assert_eq!(r["isError"], !ok, "{tool} {args}: {r}");
    ok.then(|| r["structuredContent"].clone())
}

/// `payload` quoted for sh (single quotes).
fn sh_quote(payload: &str) -> String {
    format!("'{}'", payload.replace('\'', "'\\''"))
}

/// A command that writes `payload` into `file` and stays.
fn printing(payload: &str, file: &Path) -> String {
    format!(
        "printf '%s' {} > '{}'; exec sleep 60",
        sh_quote(payload),
        file.display()
    )
}

fn wrote(file: &Path, payload: &str) -> bool {
    eventually(Duration::from_secs(10), || {
        std::fs::read(file).is_ok_and(|got| got == payload.as_bytes())
    })
}

#[test]
fn names_stay_names_in_the_layout_tools() {
    let m = Markers::new("inj-layout-names");
    let (tmux, _) = hostile_server("harden-inj-layout-names", &m);
    let mut s = mutating(&tmux);
    let victim = s.call_ok(
        "create_session",
        json!({"name": "victim", "command": "exec sleep 60"}),
    );
    let victim_id = victim["session_id"].as_str().unwrap().to_owned();
    let mut calls = 0;
    for p in all_payloads(&m) {
        // A session name: stored as written or refused.
        let made = call_as(
            &mut s,
            session_name_ok(&p),
            "create_session",
            json!({"name": p, "window_name": p, "command": "exec sleep 60"}),
        );
        if let Some(v) = made {
            let id = v["session_id"].as_str().unwrap();
            assert_eq!(show(&tmux, id, "#{session_name}"), p);
            let window = show(&tmux, id, "#{window_name}").replace("\\\\", "\\");
            assert_eq!(window, p, "window_name {p:?}");
            tmux.run_ok(["kill-session", "-t", id]).unwrap();
        }
        // Session arguments are looked up (no session has this name now),
        // never sent as targets.
        let e = s.call_err("create_window", json!({"session": p}));
        assert!(
            e.contains("no session") || e.contains("session id"),
            "{p:?}: {e}"
        );
        let e = s.call_err("move_window", json!({"window_id": "@0", "session": p}));
        assert!(
            e.contains("no session") || e.contains("session id"),
            "{p:?}: {e}"
        );
        let r = call_as(
            &mut s,
            session_name_ok(&p),
            "rename_session",
            json!({"session": victim_id, "name": p}),
        );
        if r.is_some() {
            assert_eq!(show(&tmux, &victim_id, "#{session_name}"), p);
        }
        let w = call_as(
            &mut s,
            storable(&p),
            "create_window",
            json!({"session": victim_id, "name": p, "command": "exec sleep 60"}),
        );
        if let Some(w) = w {
            let got = show(&tmux, w["pane_id"].as_str().unwrap(), "#{window_name}");
            assert_eq!(got.replace("\\\\", "\\"), p, "window name {p:?}");
        }
        calls += 5;
    }
    println!("{calls} name calls");
    tmux.run_ok(["kill-session", "-t", &victim_id]).unwrap();
    m.assert_none(&tmux, "layout names");
    assert_whole(&tmux);
}

#[test]
fn ids_sizes_and_directions_are_refused_in_the_layout_tools() {
    let m = Markers::new("inj-layout-ids");
    let (tmux, _) = hostile_server("harden-inj-layout-ids", &m);
    let mut s = mutating(&tmux);
    let mut calls = 0;
    for p in all_payloads(&m) {
        let cases = [
            ("split_window", json!({"pane_id": p})),
            ("split_window", json!({"pane_id": "%0", "direction": p})),
            ("split_window", json!({"pane_id": "%0", "size": p})),
            ("select_pane", json!({"pane_id": p})),
            ("select_window", json!({"window_id": p})),
            ("resize_pane", json!({"pane_id": p, "zoom": true})),
            ("swap_pane", json!({"pane_id": p, "target_pane_id": "%0"})),
            ("swap_pane", json!({"pane_id": "%0", "target_pane_id": p})),
            ("move_window", json!({"window_id": p, "session": "main"})),
            ("rename_session", json!({"session": p, "name": "x"})),
            ("create_session", json!({"width": p})),
        ];
        for (tool, args) in cases {
            let r = s.request("tools/call", json!({"name": tool, "arguments": args}));
            let refused = r.get("error").is_some() || r["result"]["isError"] == true;
            assert!(refused, "{tool} {args}: {r}");
            calls += 1;
        }
    }
    println!("{calls} id calls");
    m.assert_none(&tmux, "layout ids");
    assert_whole(&tmux);
    assert_eq!(
        show(&tmux, "%0", "#{window_panes}"),
        "1",
        "nothing was split"
    );
}

#[test]
fn commands_and_directories_arrive_byte_for_byte() {
    let m = Markers::new("inj-layout-cmds");
    let (tmux, _) = hostile_server("harden-inj-layout-cmds", &m);
    let mut s = mutating(&tmux);
    let out = TempDir::new("inj-layout-out");
    let dirs = TempDir::new("inj-layout-dirs");
    let mut calls = 0;
    for (i, p) in all_payloads(&m).iter().enumerate() {
        let typable = !p.contains('\0');
        let file = out.0.join(format!("s{i}"));
        let v = call_as(
            &mut s,
            typable,
            "create_session",
            json!({"command": printing(p, &file)}),
        );
        if let Some(v) = v {
            assert!(wrote(&file, p), "create_session command with {p:?}");
            let file = out.0.join(format!("w{i}"));
            let session = v["session_id"].as_str().unwrap();
            call_as(
                &mut s,
                true,
                "create_window",
                json!({"session": session, "command": printing(p, &file)}),
            );
            assert!(wrote(&file, p), "create_window command with {p:?}");
            let file = out.0.join(format!("p{i}"));
            call_as(
                &mut s,
                true,
                "split_window",
                json!({"pane_id": v["pane_id"], "command": printing(p, &file)}),
            );
            assert!(wrote(&file, p), "split_window command with {p:?}");
            tmux.run_ok(["kill-session", "-t", session]).unwrap();
        }
        // A directory named by the payload (a `/` in it nests).
        let dir = dirs.0.join(p.trim_start_matches('/'));
        let dir_ok = storable(p) && std::fs::create_dir_all(&dir).is_ok();
        let dir = dir.to_string_lossy().into_owned();
        let v = call_as(
            &mut s,
            dir_ok,
            "create_session",
            json!({"start_directory": dir, "command": "exec sleep 60"}),
        );
        if let Some(v) = v {
            let session = v["session_id"].as_str().unwrap();
            assert_eq!(show(&tmux, session, "#{session_path}"), dir);
            for tool in ["create_window", "split_window"] {
                let args = match tool {
                    "create_window" => json!({"session": session, "start_directory": dir,
                                              "command": "exec sleep 60"}),
                    _ => json!({"pane_id": v["pane_id"], "start_directory": dir,
                                "command": "exec sleep 60"}),
                };
                let w = s.call_ok(tool, args);
                let pane = w["pane_id"].as_str().unwrap();
                // Known once the shell's process is the pane's foreground.
                let at = eventually(Duration::from_secs(10), || {
                    show(&tmux, pane, "#{pane_current_path}") == dir
                });
                assert!(
                    at,
                    "{tool} in {dir:?}: {}",
                    show(&tmux, pane, "#{pane_current_path}")
                );
            }
            tmux.run_ok(["kill-session", "-t", session]).unwrap();
        }
        calls += 6;
    }
    println!("{calls} command and directory calls");
    m.assert_none(&tmux, "layout commands and directories");
    assert_whole(&tmux);
}
