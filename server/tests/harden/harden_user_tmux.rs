//! The user's tmux is not harmed: no memory growth in the tmux server
//! across thousands of searches, no paste buffers, options, hooks or
//! environment left changed, at most one client attached while serving
//! and none after exit, and nothing ever typed into a pane in the
//! readonly tier.
//!
//! Memory: 2,000 visible-screen searches over 12 panes (24,000 captures;
//! tmux 3.2-3.5a leak every `capture-pane -p` from a control client, about
//! 4 KB per capture here), asserting the tmux server's RSS grows by less
//! than 0.5 KB per capture. That keeps the test to a few seconds while a
//! leak of that kind would show as ~90 MB.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::time::{Duration, Instant};

use common::{eventually, typing_sink, Serve, TempDir};
use panescan::testing::private_server::PrivateServer;
use serde_json::json;

fn rss_kb(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap()
}

/// Everything a read tool could leave behind, as tmux prints it.
fn state(tmux: &PrivateServer) -> String {
    let mut out = String::new();
    for args in [
        &["list-buffers", "-F", "#{buffer_name}:#{buffer_size}"][..],
        &["show-options", "-s"],
        &["show-options", "-g"],
        &["show-options", "-gw"],
        &["show-options", "-t", "main"],
        &["show-options", "-w", "-t", "main:0"],
        &["show-options", "-p", "-t", "main:0.0"],
        &["show-hooks", "-g"],
        &["show-hooks", "-t", "main"],
        &["show-environment", "-g"],
        &["show-environment", "-t", "main"],
        &[
            "list-sessions",
            "-F",
            "#{session_id} #{session_name} #{session_attached}",
        ],
        &[
            "list-windows",
            "-a",
            "-F",
            "#{window_id} #{window_name} #{window_layout}",
        ],
        &[
            "list-panes",
            "-a",
            "-F",
            "#{pane_id} #{pane_title} #{pane_mode} #{pane_in_mode}",
        ],
    ] {
        out.push_str(&format!("== {}\n", args.join(" ")));
        out.push_str(
            &tmux
                .run(args)
                .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
                .unwrap(),
        );
    }
    // Environment lines that name the client tty change with every
    // attach in tmux itself; nothing of ours.
    out
}

fn clients(tmux: &PrivateServer) -> usize {
    tmux.run_ok(["list-clients", "-F", "#{client_pid}"])
        .unwrap_or_default()
        .lines()
        .filter(|l| !l.is_empty())
        .count()
}

/// Every readonly tool once, on pane `pane`.
fn every_read_tool(s: &mut Serve, pane: &str) {
    let calls = [
        ("list_sessions", json!({})),
        ("list_windows", json!({})),
        ("list_panes", json!({})),
        ("get_server_info", json!({})),
        ("get_pane_info", json!({"pane_id": pane})),
        ("capture_pane", json!({"pane_id": pane, "start": -100})),
        ("capture_since", json!({"pane_id": pane})),
        ("snapshot_pane", json!({"pane_id": pane})),
        (
            "search_panes",
            json!({"pattern": "x", "scrollback_lines": 1000}),
        ),
        (
            "search_panes",
            json!({"pattern": "^.*$", "regex": true, "context_lines": 3}),
        ),
        (
            "wait_for_text",
            json!({"pane_id": pane, "pattern": "never", "timeout_ms": 100}),
        ),
        (
            "watch_panes",
            json!({"pattern": "never", "timeout_ms": 100}),
        ),
        (
            "get_tmux_variables",
            json!({"names": ["pane_id", "client_width"]}),
        ),
        ("show_option", json!({"name": "history-limit"})),
        ("show_environment", json!({})),
        ("show_hooks", json!({})),
        ("display_message", json!({"format": "#{session_name}"})),
        ("show_buffer", json!({})),
        (
            "call_read_tools_batch",
            json!({"operations": [
            {"tool": "capture_pane", "arguments": {"pane_id": pane}},
            {"tool": "search_panes", "arguments": {"pattern": "y"}}]}),
        ),
    ];
    for (tool, args) in calls {
        let r = s.request("tools/call", json!({"name": tool, "arguments": args}));
        assert!(r.get("error").is_none(), "{tool}: {r}");
    }
}

#[test]
fn the_tmux_server_does_not_grow_across_2000_searches() {
    let (tmux, mut s) = Serve::with_tmux_size("harden-user-memory", 200, 50);
    s.initialize();
    for i in 0..11 {
        tmux.run_ok([
            "new-window",
            "-d",
            &format!("seq -f 'screen {i} line %g' 60; exec sleep 100000"),
        ])
        .unwrap();
    }
    let pid = tmux.pid().unwrap();
    // Warm up (the control client, tmux's own first-use allocations).
    for _ in 0..100 {
        s.call_ok("search_panes", json!({"pattern": "line 59"}));
    }
    let before = rss_kb(pid);
    let started = Instant::now();
    const SEARCHES: usize = 2000;
    let mut panes = 0;
    for _ in 0..SEARCHES {
        let r = s.call_ok("search_panes", json!({"pattern": "line 59"}));
        panes = r["panes_searched"].as_u64().unwrap();
    }
    let after = rss_kb(pid);
    let captures = SEARCHES as u64 * panes;
    let growth = after.saturating_sub(before);
    eprintln!(
        "tmux server RSS {before} -> {after} kB over {SEARCHES} searches ({captures} captures) in {:?}",
        started.elapsed()
    );
    assert_eq!(panes, 12);
    assert!(
        growth * 1024 < captures * 512,
        "tmux grew {growth} kB over {captures} captures"
    );
}

#[test]
fn read_tools_leave_buffers_options_hooks_and_environment_as_they_were() {
    let (tmux, _) = Serve::with_tmux("harden-user-state");
    // A user config with hooks and options of its own.
    let dir = TempDir::new("user-state");
    let hook_log = dir.0.join("attached.log");
    tmux.run_ok(["set-option", "-g", "@user", "mine"]).unwrap();
    tmux.run_ok(["set-buffer", "-b", "user-buffer", "user text"])
        .unwrap();
    tmux.run_ok([
        "set-hook",
        "-g",
        "client-attached",
        &format!("run-shell 'echo attached >> {}'", hook_log.display()),
    ])
    .unwrap();
    let pane = tmux
        .run_ok(["display-message", "-p", "-t", "main:0.0", "#{pane_id}"])
        .unwrap()
        .trim()
        .to_owned();
    let before = state(&tmux);
    let mut s = Serve::spawn(tmux.socket_name());
    s.initialize();
    for _ in 0..3 {
        every_read_tool(&mut s, &pane);
        assert!(clients(&tmux) <= 1, "more than one client attached");
    }
    // Concurrent calls still share one client.
    let ids: Vec<_> = (0..16)
        .map(|i| {
            let id = s.fresh_id();
            s.send(
                &json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
                "name": if i % 2 == 0 { "search_panes" } else { "capture_pane" },
                "arguments": if i % 2 == 0 { json!({"pattern": "z", "scrollback_lines": 500}) }
                             else { json!({"pane_id": pane}) }}}),
            );
            id
        })
        .collect();
    let mut max_clients = 0;
    for id in ids {
        max_clients = max_clients.max(clients(&tmux));
        s.response(&id, Duration::from_secs(15));
    }
    assert!(max_clients <= 1, "{max_clients} clients while serving");
    let during = state(&tmux);
    s.close_stdin();
    assert!(s.wait_exit(Duration::from_secs(5)).unwrap().success());
    assert!(
        eventually(Duration::from_secs(3), || clients(&tmux) == 0),
        "a client is left after exit"
    );
    let after = state(&tmux);
    assert_eq!(after, before, "tmux state changed after serving");
    // While serving only session_attached may differ (our one client).
    assert_eq!(during.replace(" main 1\n", " main 0\n"), before);
    // One attach for all those calls (the user's hook fired at most once).
    let attached = std::fs::read_to_string(&hook_log).unwrap_or_default();
    assert!(
        attached.lines().count() <= 1,
        "hook fired {} times",
        attached.lines().count()
    );
}

#[test]
fn nothing_is_ever_typed_into_a_pane_in_the_readonly_tier() {
    let (tmux, mut s) = Serve::with_tmux("harden-user-typing");
    s.initialize();
    let dir = TempDir::new("user-typing");
    let typed = dir.0.join("typed.out");
    let pane = typing_sink(&tmux, &typed);
    // Mutating tools are neither listed nor callable, directly or in a batch.
    let list = s.request_bare("tools/list");
    let names = list["result"]["tools"].to_string();
    for t in [
        "send_keys",
        "rename_window",
        "set_pane_title",
        "kill_pane",
        "set_option",
        "set_environment",
        "wait_for_channel",
        "signal_channel",
        "respawn_pane",
        "kill_server",
    ] {
        assert!(!names.contains(&format!("\"{t}\"")), "{t} listed");
        let r = s.request(
            "tools/call",
            json!({"name": t, "arguments": {"pane_id": pane, "text": "typed!"}}),
        );
        assert_eq!(r["error"]["code"], -32602, "{t}: {r}");
    }
    let r = s.call(
        "call_read_tools_batch",
        json!({"operations": [{"tool": "send_keys", "arguments": {"pane_id": pane, "text": "typed!"}}]}),
    );
    assert!(r.to_string().contains("send_keys"), "{r}");
    for _ in 0..2 {
        every_read_tool(&mut s, &pane);
    }
    // Copy mode, scroll and search state untouched too.
    let mode = tmux
        .run_ok(["display-message", "-p", "-t", &pane, "#{pane_in_mode}"])
        .unwrap();
    assert_eq!(mode.trim(), "0");
    let got = common::typed_so_far(&tmux, &pane, &typed);
    assert!(
        got.is_empty(),
        "typed into the pane: {:?}",
        String::from_utf8_lossy(&got)
    );
}
