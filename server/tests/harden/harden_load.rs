//! Load: 64 concurrent `search_panes` calls over 200 panes, mixed with
//! captures and batches, all complete with the same, correct results;
//! panescan's memory stays under a ceiling; cancelling a load of searches
//! frees the work (threads, call slots) at once.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::{Duration, Instant};

use common::Serve;
use panescan::testing::fixture::{Fixture, FixtureShape, NEEDLE};
use serde_json::{json, Value};

/// panescan's peak memory under this load may not pass this.
const CEILING_KB: u64 = 512 * 1024;

fn status_field(pid: u32, name: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix(name))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap()
}

fn fixture(label: &str, panes: usize) -> Fixture {
    Fixture::build(
        label,
        FixtureShape {
            panes,
            // Needles at line 60, in the history; small enough that 64
            // concurrent searches stay well inside tmux's round-trip
            // timeout on 2 busy cores.
            lines: 120,
            width: 120,
            height: 30,
            needle_every: 10,
        },
        &panescan::testing::corpus::sources(),
        Duration::from_secs(120),
        &mut |_, _| {},
    )
    .unwrap()
}

/// What a search found: pane -> matching line texts.
fn hits(result: &Value) -> BTreeMap<String, Vec<String>> {
    result["matches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["pane_id"].as_str().unwrap().to_owned(),
                m["lines"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|l| l["text"].as_str().unwrap().to_owned())
                    .collect(),
            )
        })
        .collect()
}

#[test]
fn sixty_four_concurrent_searches_mixed_with_captures_and_batches() {
    let fx = fixture("harden-load", 200);
    let mut s = Serve::spawn(fx.server.socket_name());
    s.initialize();
    let pid = s.pid();
    let search = json!({"pattern": NEEDLE, "scrollback_lines": 200});
    let expected = hits(&s.call_ok("search_panes", search.clone()));
    // The planted needles, exactly: 20 of 200 panes.
    let planted: BTreeSet<String> = fx
        .needles
        .iter()
        .map(|n| fx.pane_ids[n.pane_number].clone())
        .collect();
    assert_eq!(expected.keys().cloned().collect::<BTreeSet<_>>(), planted);
    assert_eq!(planted.len(), 20);

    // The work: 128 searches (the first 64 at once), 64 captures, 32
    // batches; at most 64 outstanding, as the server allows.
    #[derive(Clone, Debug)]
    enum Job {
        Search,
        Capture(String),
        Batch(String),
    }
    let mut jobs: Vec<Job> = (0..64).map(|_| Job::Search).collect();
    for k in 0..96 {
        let pane = fx.pane_ids[(k * 37) % fx.pane_ids.len()].clone();
        jobs.push(match k % 3 {
            0 => Job::Search,
            1 => Job::Capture(pane),
            _ => Job::Batch(pane),
        });
    }
    for k in 0..64 {
        jobs.push(if k % 2 == 0 {
            Job::Capture(fx.pane_ids[(k * 11) % 200].clone())
        } else {
            Job::Search
        });
    }
    let total = jobs.len();
    let mut outstanding: HashMap<String, Job> = HashMap::new();
    let mut next = 0;
    let mut done = 0;
    let mut peak_outstanding = 0;
    let mut peak_threads = 0;
    let started = Instant::now();
    while done < total {
        while outstanding.len() < 64 && next < total {
            let id = s.fresh_id();
            let (name, args) = match &jobs[next] {
                Job::Search => ("search_panes", search.clone()),
                Job::Capture(p) => ("capture_pane", json!({"pane_id": p, "start": -200})),
                Job::Batch(p) => (
                    "call_read_tools_batch",
                    json!({"operations": [
                        {"tool": "search_panes", "arguments": search.clone()},
                        {"tool": "capture_pane", "arguments": {"pane_id": p, "start": -200}}]}),
                ),
            };
            s.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                "params": {"name": name, "arguments": args}}));
            outstanding.insert(id.to_string(), jobs[next].clone());
            next += 1;
        }
        peak_outstanding = peak_outstanding.max(outstanding.len());
        peak_threads = peak_threads.max(status_field(pid, "Threads:"));
        let r = s
            .recv(Duration::from_secs(60))
            .expect("an answer within 60 s");
        if r.get("method").is_some() {
            continue;
        }
        let job = outstanding
            .remove(&r["id"].to_string())
            .unwrap_or_else(|| panic!("answer to nothing: {r}"));
        assert_eq!(r["result"]["isError"], false, "{job:?}: {r}");
        let sc = &r["result"]["structuredContent"];
        match job {
            Job::Search => {
                assert_eq!(hits(sc), expected, "a search under load differs");
                assert_eq!(sc["panes_searched"], 200);
                assert_eq!(sc["matching_time_clamped"], false);
            }
            Job::Capture(p) => {
                let text = sc["text"].as_str().unwrap();
                assert_eq!(
                    text.contains(NEEDLE),
                    planted.contains(&p),
                    "capture of {p}"
                );
            }
            Job::Batch(p) => {
                let text = sc.to_string();
                assert!(
                    text.contains(&p),
                    "batch lost its capture: {}",
                    &text[..300.min(text.len())]
                );
                assert!(text.contains(NEEDLE));
            }
        }
        done += 1;
    }
    let elapsed = started.elapsed();
    let hwm = status_field(pid, "VmHWM:");
    eprintln!(
        "load: {total} calls ({} searches over 200 panes) in {elapsed:?}, {peak_outstanding} outstanding at peak, {peak_threads} threads at peak, VmHWM {hwm} kB",
        jobs.iter().filter(|j| matches!(j, Job::Search)).count() + 32,
    );
    assert_eq!(peak_outstanding, 64);
    assert!(hwm < CEILING_KB, "VmHWM {hwm} kB");
    // One client for all of it.
    let clients = fx
        .server
        .run_ok(["list-clients", "-F", "#{client_pid}"])
        .unwrap();
    assert_eq!(clients.lines().count(), 1, "{clients}");
}

/// Sends a `list_sessions` call with `id` and a ping after it: whether the
/// call was refused for want of a slot. Both are read in order and a
/// refusal is written as the call is read, so it comes before the ping's
/// answer; an accepted call answers later (here: once tmux is back).
fn refused(s: &mut Serve, id: &Value) -> bool {
    s.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": "list_sessions", "arguments": {}}}));
    let ping = s.fresh_id();
    s.send(&json!({"jsonrpc": "2.0", "id": ping, "method": "ping"}));
    let mut refused = false;
    loop {
        let m = s.recv(common::REPLY_TIMEOUT).expect("the ping is answered");
        if m["id"] == *id {
            let message = m["error"]["message"].as_str().unwrap_or("");
            assert!(message.contains("already running"), "{m}");
            refused = true;
        }
        if m["id"] == ping {
            return refused;
        }
    }
}

#[test]
fn cancelling_a_load_of_searches_frees_the_work() {
    // Fewer panes: this test needs 64 calls stuck, not 200 panes of work,
    // and runs beside the test above.
    let fx = fixture("harden-load-cancel", 50);
    let mut s = Serve::spawn(fx.server.socket_name());
    s.initialize();
    let pid = s.pid();
    s.call_ok("search_panes", json!({"pattern": NEEDLE}));
    let idle_threads = status_field(pid, "Threads:");
    // Freeze tmux so nothing can finish, fill every call slot, cancel all.
    let frozen = fx.server.stop().unwrap();
    let ids: Vec<Value> = (0..64)
        .map(|_| {
            let id = s.fresh_id();
            s.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                "params": {"name": "search_panes", "arguments": {"pattern": NEEDLE, "scrollback_lines": 1000}}}));
            id
        })
        .collect();
    // Every slot is taken: one more is refused at once, clearly. (Lines are
    // read in order, so the 64 are in flight when this one is read.)
    let r = s.request("tools/call", json!({"name": "list_panes", "arguments": {}}));
    assert!(
        r["error"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("already running"),
        "{r}"
    );
    let busy_threads = status_field(pid, "Threads:");
    let started = Instant::now();
    for id in &ids {
        s.notify("notifications/cancelled", json!({"requestId": id}));
    }
    // The call slots come back while tmux is still frozen: a new call is
    // accepted (it answers once tmux is back).
    let mut freed = None;
    let mut id = Value::Null;
    let mut probes = 0;
    while started.elapsed() < common::REPLY_TIMEOUT {
        id = s.fresh_id();
        probes += 1;
        if !refused(&mut s, &id) {
            freed = Some(started.elapsed());
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    // Freed while tmux was still frozen: the cancels, not tmux, let go.
    assert!(freed.is_some(), "cancelled calls still hold every slot");
    drop(frozen);
    let r = s.response(&id, Duration::from_secs(15));
    assert_eq!(r["result"]["isError"], false, "{r}");
    // Once tmux is back, every thread of the cancelled work ends.
    let thawed = Instant::now();
    let ended = common::eventually(Duration::from_secs(12), || {
        status_field(pid, "Threads:") <= idle_threads + 2
    });
    eprintln!(
        "cancel under load: threads idle {idle_threads}, busy {busy_threads}; slots free {freed:?} after the cancels (tmux frozen, {probes} probes); threads back to idle {:?} after thaw",
        thawed.elapsed()
    );
    assert!(busy_threads >= idle_threads + 64, "calls were not running");
    assert!(ended, "threads: {}", status_field(pid, "Threads:"));
    // No answer for any cancelled call, and the server serves again.
    let late = s.drain(Duration::from_millis(500));
    let late_ids: Vec<&Value> = late.iter().map(|m| &m["id"]).collect();
    assert!(ids.iter().all(|id| !late_ids.contains(&id)), "{late:?}");
    let r = s.call_ok(
        "search_panes",
        json!({"pattern": NEEDLE, "scrollback_lines": 1000}),
    );
    assert_eq!(r["total_panes_matched"], 5);
}
