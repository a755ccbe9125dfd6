//! tmux faults: the server killed mid-search, its socket deleted, the
//! session under the control client killed, panes respawned / resized /
//! cleared mid-capture, a tmux that stops answering (SIGSTOP). Every
//! request ends by its deadline with a clear error or a partial result
//! whose flags say what is missing, and the next request works once tmux
//! is back.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::process::Command;
use std::time::{Duration, Instant};

use common::{eventually, Serve};
use panescan::testing::private_server::PrivateServer;
use serde_json::{json, Value};

/// Fills `n` extra windows with `lines` lines of history each.
fn fill(tmux: &PrivateServer, n: usize, lines: usize) -> Vec<String> {
    tmux.run_ok([
        "set-option",
        "-g",
        "history-limit",
        &(lines + 100).to_string(),
    ])
    .unwrap();
    let mut panes = Vec::new();
    for i in 0..n {
        let pane = tmux
            .run_ok([
                "new-window",
                "-d",
                "-P",
                "-F",
                "#{pane_id}",
                &format!("seq -f 'fault-fill {i} %g' {lines}; echo filled-{i}; exec sleep 100000"),
            ])
            .unwrap()
            .trim()
            .to_owned();
        panes.push(pane);
    }
    for (i, p) in panes.iter().enumerate() {
        assert!(eventually(Duration::from_secs(20), || tmux
            .run_ok(["capture-pane", "-p", "-t", p])
            .is_ok_and(|t| t.contains(&format!("filled-{i}")))));
    }
    panes
}

fn signal(pid: u32, sig: &str) {
    let ok = Command::new("kill")
        .args([&format!("-{sig}"), &pid.to_string()])
        .status()
        .unwrap()
        .success();
    assert!(ok, "kill -{sig} {pid}");
}

/// Sends a tools/call and returns its id.
fn start(s: &mut Serve, tool: &str, args: Value) -> Value {
    let id = s.fresh_id();
    s.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": tool, "arguments": args}}));
    id
}

/// A finished call: a result (maybe partial) or a clear tool error.
/// Returns the error text, or None for a result.
fn outcome(r: &Value) -> Option<String> {
    assert!(r.get("error").is_none(), "protocol error: {r}");
    let result = &r["result"];
    if result["isError"] == true {
        let text = result["content"][0]["text"].as_str().unwrap().to_owned();
        assert!(
            text.len() > 10 && text.len() < 2000,
            "unclear error: {text}"
        );
        assert!(
            !text.contains("panicked") && !text.contains("internal error"),
            "{text}"
        );
        Some(text)
    } else {
        None
    }
}

/// The error of a call made just after the server went away: tmux's own
/// words while its socket still accepts a connection, ours once it refuses.
fn assert_no_server(text: &str) {
    assert!(
        text.contains("no tmux server at") || text.contains("server exited unexpectedly"),
        "{text}"
    );
}

/// When a kill of tmux landed, read from the answer of the search it hit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Landed {
    /// Every capture was lost: a clear error.
    BeforeAnyCapture,
    /// Some captures came in, the rest failed.
    AmidCaptures,
    /// Every capture came in; what the panes run could not be asked.
    AfterCaptures,
    /// The search was over: nothing lost.
    AfterTheSearch,
}

fn landed(r: &Value) -> Landed {
    if let Some(text) = outcome(r) {
        // The sweep's client lost tmux mid-reply, or (on a busy machine)
        // had not reached it yet when it died: tmux's own words then.
        assert!(text.contains("every capture failed"), "{text}");
        if !text.contains("lost the connection") {
            assert_no_server(&text);
        }
        return Landed::BeforeAnyCapture;
    }
    let sc = &r["result"]["structuredContent"];
    if sc["panes_failed"].as_u64().unwrap() > 0 {
        return Landed::AmidCaptures;
    }
    // Whole captures: the needle was found, exactly.
    let lines: Vec<&Value> = sc["matches"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|m| m["lines"].as_array().unwrap())
        .collect();
    assert_eq!(lines.len(), 1, "{sc}");
    assert_eq!(lines[0]["text"], "fault-fill 3 19999", "{sc}");
    if sc["matches"][0]["pane_current_command"] == "" {
        Landed::AfterCaptures
    } else {
        Landed::AfterTheSearch
    }
}

/// Searches the filled panes and SIGKILLs tmux once the capture sweep runs
/// (its `tmux source-file` process exists, so the listing is done);
/// returns the search's answer.
fn search_and_kill(tmux: &PrivateServer, s: &mut Serve) -> Value {
    let pid = tmux.pid().unwrap();
    let serve = s.pid();
    let since = common::last_pid();
    let id = start(
        s,
        "search_panes",
        json!({"pattern": "fault-fill 3 19999", "scrollback_lines": 100_000}),
    );
    let sweeping = || {
        common::new_children(serve, since)
            .iter()
            .any(|c| c.cmdline.contains("source-file"))
    };
    // Polled without pause, new processes only: a sweep may last a few
    // tens of milliseconds.
    let until = Instant::now() + Duration::from_secs(15);
    while !sweeping() {
        assert!(Instant::now() < until, "the search never started capturing");
    }
    signal(pid, "KILL");
    s.response(&id, Duration::from_secs(15))
}

#[test]
fn tmux_killed_mid_search_ends_the_call_clearly_and_a_new_server_is_found() {
    let (tmux, mut s) = Serve::with_tmux_size("harden-fault-kill", 120, 40);
    s.initialize();
    let socket = tmux.socket_path().unwrap();
    // The kill lands at a moment the test cannot pin exactly; each answer
    // says when it landed. Until one lands amid the search (almost always
    // the first), tmux is started again and the search repeated.
    let mut seen = Vec::new();
    for attempt in 0..4 {
        if attempt > 0 {
            let _ = std::fs::remove_file(&socket);
            tmux.run_ok(["new-session", "-d", "-s", &format!("again{attempt}")])
                .unwrap();
        }
        fill(&tmux, 6, 20_000);
        s.call_ok("list_panes", json!({}));
        let r = search_and_kill(&tmux, &mut s);
        seen.push(landed(&r));
        if seen.last() != Some(&Landed::AfterTheSearch) {
            break;
        }
    }
    assert_ne!(seen.last(), Some(&Landed::AfterTheSearch), "{seen:?}");
    // No server: a clear error at once.
    assert_no_server(&s.call_err("list_panes", json!({})));
    // A new server on the same socket: found by the next request.
    let _ = std::fs::remove_file(&socket);
    tmux.run_ok(["new-session", "-d", "-s", "reborn"]).unwrap();
    let panes = s.call_ok("list_sessions", json!({}));
    assert!(panes.to_string().contains("reborn"), "{panes}");
    s.call_ok("search_panes", json!({"pattern": "x"}));
}

#[test]
fn a_deleted_socket_and_a_killed_session_are_survived() {
    let (tmux, mut s) = Serve::with_tmux("harden-fault-socket");
    s.initialize();
    tmux.run_ok(["new-session", "-d", "-s", "second"]).unwrap();
    s.call_ok("search_panes", json!({"pattern": "x"}));
    // Socket file removed: the live connection may still answer; either
    // way every call answers, and SIGUSR1 (tmux recreates it) restores it.
    let path = tmux.socket_path().unwrap();
    let pid = tmux.pid().unwrap();
    std::fs::remove_file(&path).unwrap();
    // The control client still lists; captures start new tmux processes,
    // which find no server (or, should they ever reach it, succeed).
    s.call_ok("list_panes", json!({}));
    for (tool, args) in [
        ("search_panes", json!({"pattern": "x"})),
        ("capture_pane", json!({"pane_id": "%0"})),
    ] {
        let r = s.request("tools/call", json!({"name": tool, "arguments": args}));
        if let Some(text) = outcome(&r) {
            assert!(text.contains("no tmux server at"), "{tool}: {text}");
        }
    }
    signal(pid, "USR1");
    assert!(eventually(Duration::from_secs(5), || path.exists()));
    s.call_ok("list_panes", json!({}));

    // Kill the session the control client is attached to, mid-search.
    let info = s.call_ok("get_server_info", json!({}));
    assert_eq!(info["transport"], "control", "{info}");
    let id = start(
        &mut s,
        "search_panes",
        json!({"pattern": "x", "scrollback_lines": 1000}),
    );
    tmux.run_ok(["kill-session", "-t", "main"]).unwrap();
    let r = s.response(&id, Duration::from_secs(15));
    // A result: main's pane failed alone if it was listed before the kill
    // (or was not listed at all); the other session's pane was searched.
    assert_eq!(outcome(&r), None, "{r}");
    let sc = &r["result"]["structuredContent"];
    // (`failures` is left out when there are none.)
    for f in sc["failures"].as_array().into_iter().flatten() {
        assert_eq!(f["pane_id"], "%0", "{sc}");
        assert!(f["error"].as_str().unwrap().contains("not found"), "{sc}");
    }
    // The kill lands during the search (main's pane searched by neither
    // or failed: one pane searched) or, on a loaded machine, after it
    // finished (both searched, none failed); never anything else.
    let failed = sc["failures"].as_array().map_or(0, Vec::len);
    match sc["panes_searched"].as_u64() {
        Some(1) => {}
        Some(2) => assert_eq!(failed, 0, "{sc}"),
        _ => panic!("unexpected search result after the kill: {sc}"),
    }
    // Reconnected to the other session.
    let sessions = s.call_ok("list_sessions", json!({}));
    let text = sessions.to_string();
    assert!(
        text.contains("second") && !text.contains("\"main\""),
        "{text}"
    );
    s.call_ok("search_panes", json!({"pattern": "x"}));
    // Kill every session: the server exits; a clear error.
    tmux.run_ok(["kill-session", "-t", "second"]).unwrap();
    let text = s.call_err("list_panes", json!({}));
    assert_no_server(&text);
}

#[test]
fn panes_respawned_resized_and_cleared_mid_capture_never_break_a_call() {
    let (tmux, mut s) = Serve::with_tmux_size("harden-fault-churn", 100, 30);
    s.initialize();
    let panes = fill(&tmux, 4, 3000);
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let churn = {
        let stop = stop.clone();
        let panes = panes.clone();
        let name = tmux.socket_name().to_owned();
        let conf = tmux.config_path().to_owned();
        std::thread::spawn(move || {
            let mut faults = 0u32;
            let mut k = 0usize;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let p = &panes[k % panes.len()];
                let args: Vec<String> = match k % 4 {
                    0 => vec![
                        "respawn-pane".into(),
                        "-k".into(),
                        "-t".into(),
                        p.clone(),
                        format!("seq -f 'respawned %g' 2000; exec sleep 100000"),
                    ],
                    1 => vec![
                        "resize-window".into(),
                        "-t".into(),
                        p.clone(),
                        "-x".into(),
                        (40 + (k * 7) % 120).to_string(),
                        "-y".into(),
                        (10 + k % 30).to_string(),
                    ],
                    2 => vec!["clear-history".into(), "-t".into(), p.clone()],
                    _ => vec!["send-keys".into(), "-t".into(), p.clone(), "-R".into()],
                };
                let _ = Command::new("tmux")
                    .arg("-L")
                    .arg(&name)
                    .arg("-f")
                    .arg(&conf)
                    .args(&args)
                    .env_remove("TMUX")
                    .output();
                faults += 1;
                k += 1;
                std::thread::sleep(Duration::from_millis(5));
            }
            faults
        })
    };
    let mut answered = 0;
    let until = Instant::now() + Duration::from_secs(6);
    let mut k = 0;
    while Instant::now() < until {
        let p = &panes[k % panes.len()];
        let (tool, args) = match k % 3 {
            0 => (
                "search_panes",
                json!({"pattern": "respawned 1999", "scrollback_lines": 5000}),
            ),
            1 => ("capture_pane", json!({"pane_id": p, "start": -3000})),
            _ => ("capture_since", json!({"pane_id": p})),
        };
        let started = Instant::now();
        let r = s.request("tools/call", json!({"name": tool, "arguments": args}));
        assert!(
            started.elapsed() < Duration::from_secs(12),
            "{tool} took {:?}",
            started.elapsed()
        );
        if outcome(&r).is_none() && tool == "search_panes" {
            let sc = &r["result"]["structuredContent"];
            for m in sc["matches"].as_array().unwrap() {
                assert!(panes.contains(&m["pane_id"].as_str().unwrap().to_owned()));
                for l in m["lines"].as_array().unwrap() {
                    assert_eq!(l["text"], "respawned 1999", "{m}");
                }
            }
        }
        answered += 1;
        k += 1;
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let faults = churn.join().unwrap();
    eprintln!("churn: {faults} respawn/resize/clear faults, {answered} calls answered");
    assert!(
        faults > 50 && answered > 20,
        "{faults} faults, {answered} calls"
    );
    s.call_ok("list_panes", json!({}));
}

#[test]
fn a_stopped_tmux_makes_calls_end_by_their_deadline_and_the_next_works() {
    let (tmux, mut s) = Serve::with_tmux("harden-fault-stop");
    s.initialize();
    fill(&tmux, 2, 500);
    // How long the search below takes with tmux running, on this machine
    // now: the yardstick for "near its deadline".
    let baseline = Instant::now();
    s.call_ok("search_panes", json!({"pattern": "x"}));
    let baseline = baseline.elapsed();
    // Stopped for 1 s: a call waits it out and succeeds.
    let frozen = tmux.stop().unwrap();
    let started = Instant::now();
    let id = start(
        &mut s,
        "search_panes",
        json!({"pattern": "fault-fill 1 500", "scrollback_lines": 1000}),
    );
    std::thread::sleep(Duration::from_secs(1));
    drop(frozen);
    let r = s.response(&id, Duration::from_secs(15));
    assert!(outcome(&r).is_none(), "{r}");
    let sc = &r["result"]["structuredContent"];
    assert_eq!(sc["total_panes_matched"], 1, "{sc}");
    // It waited tmux out rather than failing fast.
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "{:?}",
        started.elapsed()
    );

    // Stopped past a search's own timeout: it ends near its deadline with
    // a clear error or a result flagged as cut by time.
    let frozen = tmux.stop().unwrap();
    let started = Instant::now();
    let id = start(
        &mut s,
        "search_panes",
        json!({"pattern": "x", "timeout_ms": 800}),
    );
    let r = s.response(&id, Duration::from_secs(15));
    let waited = started.elapsed();
    drop(frozen);
    match outcome(&r) {
        Some(text) => assert!(text.contains("before the deadline"), "{text}"),
        None => {
            let sc = &r["result"]["structuredContent"];
            assert_eq!(sc["matching_time_clamped"], true, "{sc}");
        }
    }
    // Not before its deadline (it waited for tmux), and within it plus a few
    // of the searches this machine just did (not the 10 s transport timeout).
    let deadline = Duration::from_millis(800);
    let slack = (baseline * 5).max(Duration::from_millis(500));
    assert!(
        waited >= deadline && waited < deadline + slack,
        "timeout_ms 800 took {waited:?} (a search took {baseline:?})"
    );
    // Back: the next request works.
    let r = s.call_ok(
        "search_panes",
        json!({"pattern": "fault-fill 0 500", "scrollback_lines": 1000}),
    );
    assert_eq!(r["total_panes_matched"], 1, "{r}");
}
