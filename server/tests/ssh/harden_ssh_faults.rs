//! ssh dropped mid-call: the sshd of one host is frozen while a search
//! and then a capture wait on it, and killed under the call. The call
//! answers (the search with that host in hosts_failed, the capture with an
//! error naming the host), before its own time budget and without a
//! panic; the other host's answer is whole; once sshd is back the next
//! call reconnects. Skipped, with the reason printed, when sshd is not
//! installed.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::path::Path;
use std::time::Duration;

use common::sshd::{self, Alias, SshWorld};
use common::{eventually, Serve, TempDir};
use panescan::testing::private_server::PrivateServer;
use serde_json::json;

/// A server reached as host `label`'s default server, showing `text`.
fn server_under(label: &str, dir: &Path, text: &str) -> PrivateServer {
    let tmux = sshd::server_under(label, dir);
    sshd::show(&tmux, text);
    tmux
}

/// Waits until `serve` runs an ssh client for host `host` (a call is on
/// its way to it).
fn waits_on(serve: &Serve, host: &str) -> bool {
    eventually(Duration::from_secs(10), || {
        sshd::ssh_client_for(serve, host)
    })
}

#[test]
fn ssh_dropped_mid_call_fails_that_host_alone_and_reconnects() {
    sshd::require();
    let mut world = SshWorld::new("dropped");
    let (n0, n1) = (world.start_sshd(), world.start_sshd());
    let (dir_a, dir_b) = (TempDir::new("ssh-drop-a"), TempDir::new("ssh-drop-b"));
    let _a = server_under("ssh-drop-a", &dir_a.0, "needle a");
    let b = server_under("ssh-drop-b", &dir_b.0, "needle b");
    let config = world.client_config(&[
        Alias {
            name: "a",
            sshd: n0,
            tmux_tmpdir: Some(&dir_a.0),
            identity: None,
        },
        Alias {
            name: "b",
            sshd: n1,
            tmux_tmpdir: Some(&dir_b.0),
            identity: None,
        },
    ]);
    let config = config.display().to_string();
    let mut s = Serve::spawn_with(
        &["serve", "--ssh-config", &config, "--ssh", "a", "--ssh", "b"],
        &[],
    );
    s.initialize();
    let search = json!({"name": "search_panes", "arguments":
        {"pattern": "needle", "hosts": ["a", "b"], "timeout_ms": 60000}});
    let r = s.request("tools/call", search.clone());
    assert_eq!(
        r["result"]["structuredContent"]["total_panes_matched"], 2,
        "{r}"
    );

    // Mid-search: b's sshd frozen, the call waiting on it, then killed.
    world.sshd(n1).freeze();
    let id = s.fresh_id();
    s.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": search}));
    assert!(waits_on(&s, "b"), "the search never reached b");
    world.sshd(n1).kill();
    let r = s.response(&id, Duration::from_secs(50));
    let out = &r["result"]["structuredContent"];
    assert_eq!(out["matches"][0]["host"], "a", "{r}");
    assert_eq!(out["total_panes_matched"], 1, "{r}");
    let failed = sshd::hosts_failed(out);
    assert_eq!(failed.len(), 1, "{r}");
    assert_eq!(failed[0].0, "b");
    // Answered because the connection dropped, not because time ran out.
    assert!(!failed[0].1.contains("deadline"), "{}", failed[0].1);

    // sshd back: the next call reconnects.
    world.sshd(n1).start();
    let r = s.request("tools/call", search.clone());
    assert_eq!(
        r["result"]["structuredContent"]["total_panes_matched"], 2,
        "{r}"
    );

    // Mid-capture: the same, for a call on b alone.
    let pane = b
        .run_ok(["display-message", "-p", "-t", "main:0.0", "#{pane_id}"])
        .unwrap();
    let capture =
        json!({"name": "capture_pane", "arguments": {"host": "b", "pane_id": pane.trim()}});
    world.sshd(n1).freeze();
    let id = s.fresh_id();
    s.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": capture}));
    assert!(waits_on(&s, "b"), "the capture never reached b");
    world.sshd(n1).kill();
    let r = s.response(&id, Duration::from_secs(50));
    assert_eq!(r["result"]["isError"], true, "{r}");
    let text = r["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("host b"), "{text}");
    world.sshd(n1).start();
    let r = s.request("tools/call", capture);
    let text = r["result"]["structuredContent"]["text"]
        .as_str()
        .unwrap_or("");
    assert!(text.contains("needle b"), "{r}");
    // The server is still the same process.
    assert!(s.wait_exit(Duration::ZERO).is_none());
}
