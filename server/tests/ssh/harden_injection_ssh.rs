//! Injection through the ssh surface: hostile text in every argument that
//! could reach ssh's command line or the remote shell (`host`, `hosts`,
//! `socket_name`, and the search's own arguments on a remote host), and in
//! `--ssh DEST` itself. A payload that got through would run `touch` in
//! the marker directory on the "remote" side (its `TMUX_TMPDIR`, where the
//! remote shell is sent by the payload itself); none may. Skipped, with
//! the reason printed, when sshd is not installed.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::time::Duration;

use common::injection::payloads;
use common::sshd::{self, Alias, SshWorld};
use common::{Serve, TempDir};
use serde_json::json;

/// Files a payload left in `dir` (tmux's own `tmux-UID` directory aside).
fn hits(dir: &std::path::Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| !n.starts_with("tmux-"))
        .collect()
}

/// Payloads that run `touch hit` in the marker directory, written without
/// `/` (a `/` would be refused as a socket name before anything runs).
fn shell_payloads() -> Vec<String> {
    let cmd = "cd \"$TMUX_TMPDIR\" && touch hit";
    let mut all = payloads(cmd);
    all.extend([
        format!("x';{cmd};'"),
        format!("x\";{cmd};\""),
        format!("x\\';{cmd};#"),
        format!("x\n{cmd}"),
        format!("x|{cmd}"),
        format!("x&{cmd}&"),
        "-oProxyCommand=touch hit".to_owned(),
        "-F".to_owned(),
        "--".to_owned(),
    ]);
    all
}

#[test]
fn nothing_a_call_sends_reaches_ssh_or_the_remote_shell() {
    sshd::require();
    let mut world = SshWorld::new("inject");
    let n = world.start_sshd();
    let markers = TempDir::new("ssh-inject-markers");
    let config = world.client_config(&[Alias {
        name: "box",
        sshd: n,
        tmux_tmpdir: Some(&markers.0),
        identity: None,
    }]);
    let config = config.display().to_string();
    let mut s = Serve::spawn_with(&["serve", "--ssh-config", &config, "--ssh", "box"], &[]);
    s.initialize();
    let mut calls = 0;
    for p in shell_payloads() {
        let attempts = [
            ("list_panes", json!({"host": "box", "socket_name": p})),
            ("list_panes", json!({"host": p})),
            (
                "capture_pane",
                json!({"host": "box", "socket_name": p, "pane_id": "%0"}),
            ),
            ("capture_pane", json!({"host": "box", "pane_id": p})),
            ("get_server_info", json!({"host": "box", "socket_name": p})),
            ("search_panes", json!({"hosts": [p], "pattern": "x"})),
            (
                "search_panes",
                json!({"hosts": ["box"], "pattern": p, "socket_name": p}),
            ),
            (
                "search_panes",
                json!({"host": "box", "pattern": "x", "session": p}),
            ),
            ("show_buffer", json!({"host": "box", "name": p})),
            ("display_message", json!({"host": "box", "format": p})),
        ];
        for (tool, args) in attempts {
            // Any answer will do (most are refusals or "no server"): a
            // protocol error or a dead server fails the test.
            let _ = s.call(tool, args);
            calls += 1;
        }
    }
    assert!(s.wait_exit(Duration::ZERO).is_none(), "panescan died");
    let found = hits(&markers.0);
    assert!(found.is_empty(), "payloads ran remotely: {found:?}");
    eprintln!("{calls} calls with hostile arguments, no marker");
}

#[test]
fn a_hostile_destination_never_reaches_ssh() {
    let markers = TempDir::new("ssh-inject-dest");
    let dir = markers.0.display().to_string();
    for dest in [
        format!("-oProxyCommand=touch {dir}/hit"),
        format!("-oLocalCommand=touch {dir}/hit"),
        format!("box -oProxyCommand=touch {dir}/hit"),
        format!("$(touch {dir}/hit)"),
        format!("box;touch {dir}/hit"),
        format!("ssh://box:22/$(touch {dir}/hit)"),
        format!("box\ntouch {dir}/hit"),
    ] {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_panescan"))
            .args(["search", &format!("--ssh={dest}"), "--host", "local", "x"])
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{dest:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("refused"), "{dest:?}: {err}");
    }
    assert!(hits(&markers.0).is_empty());
}
