//! wait_for_text on tmux's event stream, end to end through `panescan
//! serve` against private tmux servers: it wakes on output in one of
//! several panes and says which, old text does not count, a flooding pane
//! neither grows panescan nor slows other tools, and the stream adds no
//! client, fires no extra hook and ends when nobody listens.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::time::{Duration, Instant};

use common::{eventually, plain_shell, Serve, TempDir};
use panescan::testing::private_server::PrivateServer;
use serde_json::{json, Value};

fn type_line(tmux: &PrivateServer, pane: &str, text: &str) {
    tmux.run_ok(["send-keys", "-t", pane, "-l", text]).unwrap();
    tmux.run_ok(["send-keys", "-t", pane, "Enter"]).unwrap();
}

/// Waits until `pane` shows `needle` as a whole line.
fn wait_screen(tmux: &PrivateServer, pane: &str, needle: &str) {
    let shows = || {
        tmux.run_ok(["capture-pane", "-p", "-t", pane])
            .unwrap_or_default()
            .lines()
            .any(|l| l.trim_end() == needle)
    };
    assert!(
        eventually(Duration::from_secs(10), shows),
        "{pane} never showed {needle:?}"
    );
}

/// `client_flags` of every client of the server, one line each.
fn client_flags(tmux: &PrivateServer) -> Vec<String> {
    tmux.run_ok(["list-clients", "-F", "#{client_flags}"])
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// Whether panescan's client has pane output on (someone listens).
fn output_on(tmux: &PrivateServer) -> bool {
    client_flags(tmux).iter().any(|f| f.contains("pause-after"))
}

/// Sends a wait and returns its id once it waits: its first progress
/// report comes from its waiting loop, after it subscribed and read its
/// panes' start.
fn start_wait(s: &mut Serve, args: Value) -> Value {
    let id = s.fresh_id();
    let token = format!("progress-{id}");
    s.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": "wait_for_text", "arguments": args,
                   "_meta": {"progressToken": token}}}));
    s.message(Duration::from_secs(10), |m| {
        m["method"] == "notifications/progress" && m["params"]["progressToken"] == token.as_str()
    });
    id
}

fn result(s: &mut Serve, id: &Value) -> Value {
    let r = s.response(id, Duration::from_secs(15));
    assert_eq!(r["result"]["isError"], false, "{r}");
    r["result"]["structuredContent"].clone()
}

fn new_pane(tmux: &PrivateServer, args: &[&str]) -> String {
    let mut cmd = args.to_vec();
    cmd.extend(["-P", "-F", "#{pane_id}"]);
    let id = tmux.run_ok(cmd).unwrap().trim().to_owned();
    plain_shell(tmux, &id);
    id
}

#[test]
fn wakes_on_output_in_one_of_several_panes_and_says_which() {
    let (tmux, mut s) = Serve::with_tmux("events-several");
    plain_shell(&tmux, "%0");
    let p1 = new_pane(&tmux, &["split-window", "-t", "main"]);
    let p2 = new_pane(&tmux, &["split-window", "-t", "main"]);
    // Already on screen when the wait starts: does not count.
    type_line(&tmux, &p1, "echo beta-done");
    wait_screen(&tmux, &p1, "beta-done");
    s.initialize();

    let id = start_wait(
        &mut s,
        json!({"pane_ids": ["%0", p1, p2], "patterns": ["alpha-[0-9]+", "beta-done"],
               "regex": true, "timeout_ms": 10000}),
    );
    // The typed line (`beta-don""e`) does not match; its output does.
    type_line(&tmux, &p2, "echo beta-don\"\"e");
    let v = result(&mut s, &id);
    assert_eq!(v["found"], true, "{v}");
    assert_eq!(v["pane_id"], p2.as_str(), "{v}");
    assert_eq!(v["pattern_index"], 1, "{v}");
    assert_eq!(v["text"], "beta-done", "{v}");
    assert_eq!(v["line"], "beta-done", "{v}");
    assert_eq!(v["panes_watched"], 3, "{v}");
    assert_eq!(v["panes_polled"], 0, "{v}");

    // A window scope, the other pattern.
    let id = start_wait(
        &mut s,
        json!({"window": "@0", "patterns": ["alpha-[0-9]+", "beta-done"], "regex": true}),
    );
    type_line(&tmux, "%0", "echo alpha-$((20+22))");
    let v = result(&mut s, &id);
    assert_eq!(
        (&v["pane_id"], &v["pattern_index"], &v["text"]),
        (&json!("%0"), &json!(0), &json!("alpha-42")),
        "{v}"
    );
}

#[test]
fn the_client_follows_the_watched_session_and_polls_the_rest() {
    let (tmux, mut s) = Serve::with_tmux("events-sessions");
    plain_shell(&tmux, "%0");
    let quiet = new_pane(&tmux, &["split-window", "-t", "main"]);
    let other = new_pane(&tmux, &["new-session", "-d", "-s", "other"]);
    s.initialize();
    let found = |s: &mut Serve, args: Value, pane: &str, needle: &str| {
        let id = start_wait(s, args);
        type_line(&tmux, pane, &format!("echo {needle}-o''k"));
        let v = result(s, &id);
        assert_eq!(v["found"], true, "{v}");
        assert_eq!(v["pane_id"], pane, "{v}");
        v
    };
    // A pane of the first session: the other pane there is turned off.
    let v = found(
        &mut s,
        json!({"pane_id": "%0", "pattern": "alpha-ok"}),
        "%0",
        "alpha",
    );
    assert_eq!(v["panes_polled"], 0, "{v}");
    // Only panes of another session: the client moves there.
    let v = found(
        &mut s,
        json!({"session": "other", "pattern": "gamma-ok"}),
        &other,
        "gamma",
    );
    assert_eq!(v["panes_polled"], 0, "{v}");
    // Back to the pane that was turned off: it is turned on again.
    let v = found(
        &mut s,
        json!({"pane_id": quiet, "pattern": "beta-ok"}),
        &quiet,
        "beta",
    );
    assert_eq!(v["panes_polled"], 0, "{v}");
    // Panes of two sessions: the client stays; the other pane is polled,
    // and still found.
    let v = found(
        &mut s,
        json!({"pane_ids": ["%0", other], "pattern": "delta-ok"}),
        &other,
        "delta",
    );
    assert_eq!(v["panes_polled"], 1, "{v}");
}

/// The session panescan's client shows.
fn client_session(tmux: &PrivateServer) -> String {
    tmux.run_ok(["list-clients", "-F", "#{client_session}"])
        .unwrap_or_default()
        .trim()
        .to_owned()
}

#[test]
fn overlapping_waits_hand_the_client_between_sessions() {
    let (tmux, mut s) = Serve::with_tmux("events-handover");
    plain_shell(&tmux, "%0");
    let quiet = new_pane(&tmux, &["split-window", "-t", "main"]);
    let other = new_pane(&tmux, &["new-session", "-d", "-s", "other"]);
    s.initialize();
    // w1 holds the client in main (its other pane turned off); w2, in the
    // other session, is polled until w1 ends and the client moves to it.
    let w1 = start_wait(&mut s, json!({"pane_id": "%0", "pattern": "one-ok"}));
    let w2 = start_wait(&mut s, json!({"pane_id": other, "pattern": "two-ok"}));
    type_line(&tmux, "%0", "echo one-o''k");
    assert_eq!(result(&mut s, &w1)["found"], true);
    assert!(eventually(Duration::from_secs(5), || client_session(&tmux) == "other"));
    // w3 waits on the pane that was turned off in main; when w2 ends the
    // client moves back, and that pane must report again.
    let w3 = start_wait(&mut s, json!({"pane_id": quiet, "pattern": "three-ok"}));
    type_line(&tmux, &other, "echo two-o''k");
    let v = result(&mut s, &w2);
    assert_eq!(
        (&v["found"], &v["panes_polled"]),
        (&json!(true), &json!(0)),
        "{v}"
    );
    // w3 reports (in its progress) that the stream covers its pane now.
    s.message(Duration::from_secs(5), |m| {
        m["params"]["progressToken"] == format!("progress-{w3}").as_str()
            && m["params"]["message"]
                .as_str()
                .is_some_and(|t| t.ends_with("(0 polled)"))
    });
    assert_eq!(client_session(&tmux), "main");
    type_line(&tmux, &quiet, "echo three-o''k");
    let v = result(&mut s, &w3);
    assert_eq!(
        (&v["found"], &v["panes_polled"]),
        (&json!(true), &json!(0)),
        "{v}"
    );
}

/// Resident memory of a process, in kB.
fn rss_kb(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap()
}

/// Median and worst time of `n` list_panes calls, in ms.
fn list_panes_ms(s: &mut Serve, n: usize) -> (f64, f64) {
    let mut times: Vec<f64> = (0..n)
        .map(|_| {
            let t = Instant::now();
            s.call_ok("list_panes", json!({}));
            t.elapsed().as_secs_f64() * 1000.0
        })
        .collect();
    times.sort_by(f64::total_cmp);
    (times[n / 2], times[n - 1])
}

/// The highest line number `cat -n` shows in `pane` (the last row may be
/// cut short).
fn last_number(tmux: &PrivateServer, pane: &str) -> u64 {
    tmux.run_ok(["capture-pane", "-p", "-t", pane])
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.split_whitespace().next()?.parse().ok())
        .max()
        .unwrap_or(0)
}

#[test]
fn a_flooding_pane_neither_grows_panescan_nor_delays_other_tools() {
    let (tmux, mut s) = Serve::with_tmux("events-flood");
    plain_shell(&tmux, "%0");
    let flood = new_pane(&tmux, &["split-window", "-t", "main"]);
    s.initialize();
    list_panes_ms(&mut s, 5); // warm up
    let (quiet_median, quiet_max) = list_panes_ms(&mut s, 21);
    let rss_before = rss_kb(s.pid());

    // `yes`, numbered: the last number on screen shows tmux still reads it.
    type_line(&tmux, &flood, "yes | cat -n");
    // The flood alone (nobody watches it) is the baseline: it loads this
    // machine and tmux as much as it will with a wait on it.
    std::thread::sleep(Duration::from_millis(1500));
    let (alone_median, alone_max) = list_panes_ms(&mut s, 21);
    let id = start_wait(
        &mut s,
        json!({"pane_id": flood, "pattern": "never-printed", "timeout_ms": 20000}),
    );
    std::thread::sleep(Duration::from_millis(1500));
    let (flood_median, flood_max) = list_panes_ms(&mut s, 21);
    // Output of another pane is still reported while one floods.
    let other = start_wait(&mut s, json!({"pane_id": "%0", "pattern": "calm-ok"}));
    type_line(&tmux, "%0", "echo calm-o''k");
    let v = result(&mut s, &other);
    assert_eq!(v["found"], true, "{v}");
    let printed_before = last_number(&tmux, &flood);
    std::thread::sleep(Duration::from_millis(1500));
    let rss_after = rss_kb(s.pid());
    let printed_after = last_number(&tmux, &flood);
    eprintln!(
        "list_panes quiet {quiet_median:.1} ms (max {quiet_max:.1}), flooding unwatched \
         {alone_median:.1} ms (max {alone_max:.1}), flooding with a wait \
         active {flood_median:.1} ms (max {flood_max:.1}); panescan VmRSS {rss_before} -> \
         {rss_after} kB; the flooding pane printed lines {printed_before} -> {printed_after}"
    );
    s.notify(
        "notifications/cancelled",
        json!({"requestId": id, "reason": "done"}),
    );
    tmux.run_ok(["send-keys", "-t", &flood, "C-c"]).unwrap();
    // tmux kept reading the pane (not stalled by panescan).
    assert!(
        printed_after > printed_before,
        "the flooding pane stalled at line {printed_before}"
    );
    assert!(
        rss_after < rss_before * 2,
        "panescan grew from {rss_before} to {rss_after} kB during the flood"
    );
    // Against the same flood unwatched, not against a quiet machine: what
    // is measured is what watching the pane costs other tools.
    assert!(
        flood_median < alone_median * 3.0 + 20.0,
        "list_panes took {flood_median:.1} ms during the watched flood, {alone_median:.1} ms \
         during the flood unwatched"
    );
}

#[test]
fn the_stream_adds_no_client_fires_no_hook_and_ends_when_nobody_listens() {
    let (tmux, _) = Serve::with_tmux("events-hooks");
    let dir = TempDir::new("events-hooks");
    let log = dir.0.join("hooks.log");
    for hook in ["client-attached", "client-session-changed"] {
        tmux.run_ok([
            "set-hook",
            "-g",
            hook,
            &format!("run-shell 'echo {hook} >> {}'", log.display()),
        ])
        .unwrap();
    }
    plain_shell(&tmux, "%0");
    let other = new_pane(&tmux, &["new-session", "-d", "-s", "other"]);
    let mut s = Serve::spawn(tmux.socket_name());
    s.initialize();
    s.call_ok("list_panes", json!({}));
    assert_eq!(client_flags(&tmux).len(), 1);
    assert!(!output_on(&tmux), "output on before anyone listens");

    for (round, pane) in ["%0", "%0", other.as_str()].into_iter().enumerate() {
        let needle = format!("round-{round}-ok");
        let id = start_wait(&mut s, json!({"pane_id": pane, "pattern": needle}));
        assert!(output_on(&tmux), "{:?}", client_flags(&tmux));
        assert_eq!(client_flags(&tmux).len(), 1, "{:?}", client_flags(&tmux));
        type_line(&tmux, pane, &format!("echo round-{round}-o''k"));
        assert_eq!(result(&mut s, &id)["found"], true);
        // Nobody listens: no client is added, and the one there stays.
        // Output stays on with every pane paused (tmux crashes when
        // `no-output` is set while output is queued: tmux/events/flows.rs,
        // PANE_OFF).
        assert_eq!(client_flags(&tmux).len(), 1, "{:?}", client_flags(&tmux));
    }
    let fired = std::fs::read_to_string(&log).unwrap_or_default();
    let count = |hook: &str| fired.lines().filter(|l| *l == hook).count();
    // One attach for everything, as without events; moving to the other
    // session is not an attach: tmux says the session changed when the
    // client attached and when it moved, no more.
    assert_eq!(count("client-attached"), 1, "{fired}");
    assert_eq!(count("client-session-changed"), 2, "{fired}");
    s.close_stdin();
    assert!(s.wait_exit(Duration::from_secs(5)).unwrap().success());
    assert!(
        eventually(Duration::from_secs(3), || client_flags(&tmux).is_empty()),
        "a client is left after exit"
    );
}

#[test]
fn arguments_are_checked_and_no_events_polls() {
    let tmux = PrivateServer::start("events-args", 80, 24).unwrap();
    let mut s = Serve::spawn_with(
        &["serve", "--socket-name", tmux.socket_name(), "--no-events"],
        &[],
    );
    plain_shell(&tmux, "%0");
    s.initialize();
    for (args, says) in [
        (
            json!({"pane_id": "%0", "pattern": "x", "timeout_ms": 120001}),
            "at most 120000",
        ),
        (
            json!({"pattern": "x"}),
            "pane_id, pane_ids, session or window",
        ),
        (
            json!({"pane_id": "%0", "pane_ids": ["%0"], "pattern": "x"}),
            "not both",
        ),
        (
            json!({"pane_id": "%0", "pattern": "x", "patterns": ["y"]}),
            "not both",
        ),
        (json!({"pane_id": "%0", "patterns": []}), "1 to 64"),
        (json!({"pane_id": "%0", "pattern": ""}), "must not be empty"),
        (
            json!({"pane_ids": ["%0", "%9"], "pattern": "x"}),
            "no pane %9",
        ),
        (json!({"session": "nope", "pattern": "x"}), "no session"),
    ] {
        let e = s.call_err("wait_for_text", args.clone());
        assert!(e.contains(says), "{args}: {e}");
    }
    // Operator's --no-events: every pane polled, still found.
    let id = start_wait(&mut s, json!({"pane_id": "%0", "pattern": "polled-ok"}));
    assert!(!output_on(&tmux), "--no-events turned output on");
    type_line(&tmux, "%0", "echo polled-o''k");
    let v = result(&mut s, &id);
    assert_eq!((&v["found"], &v["panes_polled"]), (&json!(true), &json!(1)));
}
