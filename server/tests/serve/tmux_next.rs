//! panescan's typing tools on tmux 3.7 and later (the tmux 3.8 built from
//! third_party/tmux-next): since tmux 3.7 `send-keys` refuses to type
//! ("client is read-only") when the client it resolves to is read-only
//! (cmd-send-keys.c), which is panescan's own control client for the keys
//! it sends, and the best client of a session for a user's `tmux
//! send-keys` without `-c` when panescan's client is the only one
//! attached. So panescan's clients attach read-write (`-f ignore-size`,
//! never `-r`): run_command and send_keys type, and a user's own
//! `send-keys` beside panescan still does.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::time::Duration;

use common::{eventually, next_tmux, plain_shell, Serve};
use panescan::testing::private_server::PrivateServer;
use serde_json::json;

#[test]
fn run_command_send_keys_and_a_users_send_keys_type_on_tmux_next() {
    let next = next_tmux();
    let tmux = PrivateServer::start_with("tmux-next-typing", 80, 24, &next).unwrap();
    plain_shell(&tmux, "%0");
    let next_env = next.to_string_lossy().into_owned();
    let mut s = Serve::spawn_with(
        &[
            "serve",
            "--socket-name",
            tmux.socket_name(),
            "--tier",
            "mutating",
        ],
        &[("PANESCAN_TMUX", &next_env)],
    );
    s.initialize();

    // panescan's own keys go through its control client.
    let r = s.call_ok(
        "run_command",
        json!({"pane_id": "%0", "command": "echo next-$((6*7))"}),
    );
    assert_eq!(
        (&r["exit_status"], &r["output"]),
        (&json!(0), &json!("next-42\n")),
        "{r}"
    );
    s.call_ok(
        "send_keys",
        json!({"pane_id": "%0", "text": "echo keys-$((7*8))", "keys": ["Enter"]}),
    );
    let shows = |tmux: &PrivateServer, text: &str| {
        eventually(Duration::from_secs(10), || {
            tmux.run_ok(["capture-pane", "-p", "-t", "%0"])
                .map(|screen| screen.lines().any(|l| l == text))
                .unwrap_or(false)
        })
    };
    assert!(shows(&tmux, "keys-56"), "send_keys typed nothing");

    // panescan's client is now the only one attached to the session, so a
    // user's `tmux send-keys` without -c resolves to it.
    let clients = tmux
        .run_ok(["list-clients", "-F", "#{client_flags}"])
        .unwrap();
    assert_eq!(clients.lines().count(), 1, "one client attached: {clients}");
    let typed = std::process::Command::new(&next)
        .args(["-L", tmux.socket_name(), "send-keys", "-t", "%0"])
        .args(["echo user-$((8*9))", "Enter"])
        .output()
        .unwrap();
    assert!(
        typed.status.success(),
        "a user's send-keys failed beside panescan's client ({clients}): {}",
        String::from_utf8_lossy(&typed.stderr)
    );
    assert!(
        shows(&tmux, "user-72"),
        "the user's send-keys typed nothing"
    );
}
