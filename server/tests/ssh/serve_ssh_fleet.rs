//! Many far hosts in one search, on the latency bed (tests/common/latency.rs:
//! each host its own sshd and tmux server, every round trip 40 ms): every
//! host's matches arrive once, named by host, as each host alone answers
//! them; a host that hangs after accepting, runs too old a tmux or is
//! killed mid-search fails alone, with a reason, and costs the others
//! nothing but its own deadline. Needs root (a network namespace) and sshd:
//! fails, saying so, without them.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::time::{Duration, Instant};

use common::latency::{self, Bed};
use common::sshd;
use common::{eventually, Serve};
use panescan::testing::fixture::FixtureShape;
use serde_json::{json, Value};

/// The round trip of every host of the bed.
const RTT: Duration = Duration::from_millis(40);

/// A small server per host: latency, not CPU, is what the bed measures.
fn small() -> FixtureShape {
    FixtureShape {
        panes: 20,
        lines: 500,
        width: 120,
        height: 30,
        needle_every: 0,
    }
}

/// The needle only host `name` shows.
fn needle_of(name: &str) -> String {
    format!("far-needle host-{name} end")
}

/// A bed of `n` filled hosts `h0..`, host `hI` showing its needle in pane
/// number `I % panes` (a different pane on each of the first 20 hosts).
fn filled_bed(label: &str, n: usize) -> Bed {
    let mut bed = Bed::new(label, RTT);
    let shape = small();
    for i in 0..n {
        let name = format!("h{i}");
        bed.add_filled(&name, &shape);
        plant(&bed, &name, i % shape.panes);
    }
    bed
}

/// Shows host `name`'s needle in its pane number `pane` (after what the
/// pane printed, on its screen).
fn plant(bed: &Bed, name: &str, pane: usize) {
    let f = bed.fixture(name);
    let id = &f.pane_ids[pane];
    let needle = needle_of(name);
    let script = format!("printf '%s\\n' '{needle}'; exec sleep 2147483647");
    f.server
        .run_ok(["respawn-pane", "-k", "-t", id, &script])
        .unwrap();
    let shown = eventually(Duration::from_secs(10), || {
        f.server
            .run_ok(["capture-pane", "-p", "-t", id])
            .is_ok_and(|t| t.contains(&needle))
    });
    assert!(shown, "{name}: the needle never showed");
}

fn search(hosts: &[&str], timeout_ms: u64) -> Value {
    json!({"name": "search_panes", "arguments": {
        "pattern": "far-needle", "hosts": hosts, "scrollback_lines": 1_000_000,
        "timeout_ms": timeout_ms}})
}

/// A tool call's structured result. The wait is the searches' own
/// budget (`timeout_ms` 60 s) and room, not the harness's 15 s: 32 cold
/// hosts are 32 ssh handshakes of this machine's CPU, both sides, and on
/// a loaded machine they take longer than that (what these tests check is
/// the answer; the deadlines have tests of their own).
fn call(s: &mut Serve, params: Value) -> Value {
    let id = s.fresh_id();
    s.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params}));
    let r = s.response(&id, Duration::from_secs(75));
    assert_eq!(r["result"]["isError"], false, "{r}");
    r["result"]["structuredContent"].clone()
}

/// (host, pane, text) of every matching line.
fn found(r: &Value) -> Vec<(String, String, String)> {
    let mut out = Vec::new();
    for m in r["matches"].as_array().unwrap() {
        for l in m["lines"].as_array().unwrap() {
            out.push((
                m["host"].as_str().unwrap_or("?").to_owned(),
                m["pane_id"].as_str().unwrap().to_owned(),
                l["text"].as_str().unwrap().to_owned(),
            ));
        }
    }
    out
}

/// A match without what differs between two calls.
fn comparable(mut m: Value) -> Value {
    if let Some(o) = m.as_object_mut() {
        o.remove("elapsed_ms");
    }
    m
}

#[test]
fn sixteen_far_hosts_each_find_their_needle_once_as_alone() {
    latency::require();
    let bed = filled_bed("fleet16", 16);
    let names: Vec<String> = (0..16).map(|i| format!("h{i}")).collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let mut s = bed.serve(&[]);
    let all = call(&mut s, search(&names, 60_000));
    assert!(all.get("hosts_failed").is_none(), "{all}");
    let got = found(&all);
    let want: Vec<(String, String, String)> = names
        .iter()
        .enumerate()
        .map(|(i, h)| {
            let pane = bed.fixture(h).pane_ids[i % small().panes].clone();
            ((*h).to_owned(), pane, needle_of(h))
        })
        .collect();
    assert_eq!(got, want, "every needle once, with its host, in host order");
    assert_eq!(all["panes_searched"], 16 * small().panes, "{all}");
    // Cold, each host paid one ssh handshake: its version check, listing
    // and captures were channels of one connection (ssh's
    // `ControlMaster=auto` connects again when a client starts before
    // the master is up).
    let connections: Vec<usize> = names.iter().map(|h| bed.connections(h).len()).collect();
    assert_eq!(connections, [1; 16], "connections per host");

    // Each host searched alone (`host`: one server, no fan-out) answers
    // what the many-host answer holds for it.
    let mut slowest_alone = Duration::ZERO;
    for (i, h) in names.iter().enumerate() {
        let mut one = search(&[h], 60_000);
        let args = one["arguments"].as_object_mut().unwrap();
        args.remove("hosts");
        args.insert("host".into(), json!(h));
        let t = Instant::now();
        let alone = call(&mut s, one);
        slowest_alone = slowest_alone.max(t.elapsed());
        assert_eq!(alone["matches"].as_array().unwrap().len(), 1, "{alone}");
        assert_eq!(
            comparable(alone["matches"][0].clone()),
            comparable(all["matches"][i].clone()),
            "{h}"
        );
    }
    // Warm, all at once: far below sixteen hosts one after another (a
    // generous ratio: the machine is shared).
    let t = Instant::now();
    let again = call(&mut s, search(&names, 60_000));
    let together = t.elapsed();
    assert_eq!(found(&again), want);
    assert!(
        together < slowest_alone * 6,
        "16 hosts took {together:?}, the slowest alone {slowest_alone:?}"
    );
}

#[test]
fn thirty_two_far_hosts_all_answer() {
    latency::require();
    let bed = filled_bed("fleet32", 32);
    let names: Vec<String> = (0..32).map(|i| format!("h{i}")).collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let mut s = bed.serve(&[]);
    for round in ["cold", "warm"] {
        let r = call(&mut s, search(&names, 60_000));
        assert!(r.get("hosts_failed").is_none(), "{round}: {r}");
        let hosts: Vec<String> = found(&r).into_iter().map(|(h, _, _)| h).collect();
        assert_eq!(hosts, names, "{round}: one match per host, none lost");
        assert_eq!(r["panes_searched"], 32 * small().panes, "{round}");
    }
}

#[test]
fn a_hung_host_costs_its_connect_timeout_and_no_answer() {
    latency::require();
    let mut bed = filled_bed("hung", 3);
    bed.add_hung("stuck");
    let mut s = bed.serve(&["--ssh-connect-timeout", "2"]);
    let hosts = ["h0", "stuck", "h1", "h2"];
    // A long budget: the hung host must not hold the answer until it ends.
    let budget = Duration::from_secs(60);
    let t = Instant::now();
    let r = call(&mut s, search(&hosts, budget.as_millis() as u64));
    let took = t.elapsed();
    let got: Vec<String> = found(&r).into_iter().map(|(h, _, _)| h).collect();
    assert_eq!(got, ["h0", "h1", "h2"], "{r}");
    let failed = sshd::hosts_failed(&r);
    assert_eq!(failed.len(), 1, "{r}");
    assert_eq!(failed[0].0, "stuck");
    assert!(failed[0].1.contains("host stuck"), "{}", failed[0].1);
    assert!(
        failed[0].1.contains("timed out"),
        "the reason says what happened: {}",
        failed[0].1
    );
    assert!(took < budget / 4, "the hung host held the search {took:?}");
}

#[test]
fn a_host_with_too_old_a_tmux_fails_alone() {
    latency::require();
    let mut bed = filled_bed("old", 2);
    bed.add_old_tmux("old");
    let mut s = bed.serve(&[]);
    let r = call(&mut s, search(&["h0", "old", "h1"], 60_000));
    let got: Vec<String> = found(&r).into_iter().map(|(h, _, _)| h).collect();
    assert_eq!(got, ["h0", "h1"], "{r}");
    let failed = sshd::hosts_failed(&r);
    assert_eq!(failed.len(), 1, "{r}");
    assert_eq!(failed[0].0, "old");
    assert!(
        failed[0].1.contains("3.1c") && failed[0].1.contains("3.2 or later"),
        "{}",
        failed[0].1
    );
}

#[test]
fn a_host_killed_mid_search_fails_alone_and_comes_back() {
    latency::require();
    let mut bed = filled_bed("killed", 4);
    let names = ["h0", "h1", "h2", "h3"];
    let mut s = bed.serve(&[]);
    let r = call(&mut s, search(&names, 60_000));
    assert_eq!(found(&r).len(), 4, "{r}");

    // h2 stops answering, a search waits on it, then h2 dies.
    bed.freeze("h2");
    let id = s.fresh_id();
    let params = search(&names, 60_000);
    s.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params}));
    assert!(
        eventually(Duration::from_secs(20), || sshd::ssh_client_for(&s, "h2")),
        "the search never reached h2"
    );
    bed.kill("h2");
    let r = s.response(&id, Duration::from_secs(50));
    let out = &r["result"]["structuredContent"];
    let got: Vec<String> = found(out).into_iter().map(|(h, _, _)| h).collect();
    assert_eq!(got, ["h0", "h1", "h3"], "{r}");
    let failed = sshd::hosts_failed(out);
    assert_eq!(failed.len(), 1, "{r}");
    assert_eq!(failed[0].0, "h2");
    assert!(failed[0].1.contains("host h2"), "{}", failed[0].1);
    // It failed because the connection dropped, not at the deadline.
    assert!(!failed[0].1.contains("deadline"), "{}", failed[0].1);

    bed.restart("h2");
    let r = call(&mut s, search(&names, 60_000));
    let got: Vec<String> = found(&r).into_iter().map(|(h, _, _)| h).collect();
    assert_eq!(got, names, "{r}");
}

/// Median of `runs` timed searches with `params`, in ms.
fn median_ms(s: &mut Serve, params: &Value, runs: usize) -> f64 {
    let mut ms: Vec<f64> = (0..runs)
        .map(|_| {
            let t = Instant::now();
            let r = call(s, params.clone());
            assert!(r.get("hosts_failed").is_none(), "{r}");
            t.elapsed().as_secs_f64() * 1000.0
        })
        .collect();
    ms.sort_by(f64::total_cmp);
    ms[ms.len() / 2]
}

/// The bench rows of BENCHMARKS.md ("Many far hosts"): 16 hosts x 20
/// panes x 500 lines, every round trip 40 ms, searched in one call beside
/// the slowest host searched alone, cold (a new serve: ssh connects) and
/// warm, same run. Run: `cargo test -p panescan --test ssh --
/// --ignored --nocapture bench_sixteen_far_hosts`.
#[test]
#[ignore]
fn bench_sixteen_far_hosts() {
    latency::require();
    let mut bed = filled_bed("bench16", 16);
    for kex in [None, Some("curve25519-sha256")] {
        bed.kex = kex;
        sixteen_rows(&bed);
    }
}

/// [`bench_sixteen_far_hosts`]'s rows with the bed's key exchange.
fn sixteen_rows(bed: &Bed) {
    let names: Vec<String> = (0..16).map(|i| format!("h{i}")).collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let all = search(&names, 60_000);
    // Cold: each a new serve, its first search.
    let cold = |hosts: &[&str]| {
        let mut s = bed.serve_hosts(hosts, &[]);
        let t = Instant::now();
        let r = call(&mut s, search(hosts, 60_000));
        assert!(r.get("hosts_failed").is_none(), "{r}");
        t.elapsed().as_secs_f64() * 1000.0
    };
    let cold_all = cold(&names);
    let cold_one = names.iter().map(|h| cold(&[h])).fold(0.0, f64::max);
    let mut s = bed.serve(&[]);
    let _ = call(&mut s, all.clone());
    let warm_all = median_ms(&mut s, &all, 7);
    let warm_one = names
        .iter()
        .map(|h| median_ms(&mut s, &search(&[h], 60_000), 5))
        .fold(0.0, f64::max);
    eprintln!(
        "16 hosts x 20 panes x 500 lines, RTT {} ms, key exchange {}: cold {cold_all:.0} ms, slowest host alone cold {cold_one:.0} ms, ratio {:.2}; \
         warm {warm_all:.1} ms, slowest host alone warm {warm_one:.1} ms, ratio {:.2}",
        RTT.as_millis(),
        bed.kex.unwrap_or("ssh's default"),
        cold_all / cold_one,
        warm_all / warm_one
    );
}

/// A cold search (a new serve, its first search) of `hosts`: its wall
/// time, the CPU it cost and how each host was connected to.
struct Cold {
    wall_ms: f64,
    /// panescan, its ssh clients and masters, every sshd and the tmux
    /// servers: all the CPU of the search, both sides.
    cpu_ms: f64,
    /// panescan's own threads.
    panescan_ms: f64,
    /// sshd and tmux (what far hosts would spend on their own CPUs).
    remote_ms: f64,
    /// Per host: connections opened, and when the first was (ms after
    /// the search was sent).
    hosts: Vec<(usize, f64)>,
}

/// CPU (user + system) in ms of process `pid`'s own threads, from /proc.
fn own_cpu_ms(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let f: Vec<&str> = stat
        .rsplit_once(')')
        .unwrap()
        .1
        .split_whitespace()
        .collect();
    (f[11].parse::<f64>().unwrap() + f[12].parse::<f64>().unwrap()) * 10.0
}

/// [`Cold`] of a new serve's first search of `hosts`.
fn cold_measured(bed: &mut Bed, hosts: &[&str]) -> Cold {
    let mut s = bed.serve_hosts(hosts, &[]);
    let marker = bed.client_config().display().to_string();
    let remote = bed.remote_pids();
    let before: Vec<usize> = hosts.iter().map(|h| bed.connections(h).len()).collect();
    let (l0, r0, p0) = (
        sshd::cpu_ms(&[s.pid()], Some(&marker)),
        sshd::cpu_ms(&remote, None),
        own_cpu_ms(s.pid()),
    );
    let t = Instant::now();
    let r = call(&mut s, search(hosts, 60_000));
    let wall_ms = t.elapsed().as_secs_f64() * 1000.0;
    assert!(r.get("hosts_failed").is_none(), "{r}");
    // The sessions sshd forked end with the channels that ran them: let
    // the last ones be reaped (their CPU lands in their parents').
    std::thread::sleep(Duration::from_millis(300));
    let (l1, r1, p1) = (
        sshd::cpu_ms(&[s.pid()], Some(&marker)),
        sshd::cpu_ms(&remote, None),
        own_cpu_ms(s.pid()),
    );
    let hosts = hosts
        .iter()
        .zip(before)
        .map(|(h, n)| {
            let new = bed.connections(h).split_off(n);
            let first = new
                .first()
                .map_or(f64::NAN, |a| a.duration_since(t).as_secs_f64() * 1000.0);
            (new.len(), first)
        })
        .collect();
    Cold {
        wall_ms,
        cpu_ms: (l1 - l0) + (r1 - r0),
        panescan_ms: p1 - p0,
        remote_ms: r1 - r0,
        hosts,
    }
}

/// The CPU floor of a cold search of 16 far hosts (BENCHMARKS.md, "Many
/// far hosts"): the CPU one cold host costs, both sides, and what 16 cost,
/// beside the 16 hosts' wall time and the slowest host alone; how many
/// connections each host got and when its first one started. Run:
/// `cargo test -p panescan --test ssh -- --ignored --nocapture
/// bench_cold_cpu_floor`; `PANESCAN_BED_KEX=curve25519-sha256` for that
/// key exchange.
#[test]
#[ignore]
fn bench_cold_cpu_floor() {
    latency::require();
    let mut bed = filled_bed("floor16", 16);
    bed.kex = match std::env::var("PANESCAN_BED_KEX").as_deref() {
        Ok("curve25519-sha256") => Some("curve25519-sha256"),
        Ok(other) => panic!("PANESCAN_BED_KEX={other}: only curve25519-sha256 is known"),
        Err(_) => None,
    };
    let names: Vec<String> = (0..16).map(|i| format!("h{i}")).collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let mut alone: Vec<Cold> = names
        .iter()
        .map(|h| cold_measured(&mut bed, &[h]))
        .collect();
    let all = cold_measured(&mut bed, &names);
    alone.sort_by(|a, b| a.wall_ms.total_cmp(&b.wall_ms));
    let slowest = alone.last().unwrap().wall_ms;
    let mut cpu: Vec<f64> = alone.iter().map(|c| c.cpu_ms).collect();
    cpu.sort_by(f64::total_cmp);
    let one_cpu = cpu[cpu.len() / 2];
    let one = &alone[alone.len() / 2];
    eprintln!(
        "key exchange {}: one host alone, cold: wall median {:.0} ms, slowest {slowest:.0} ms; CPU median {one_cpu:.0} ms (of the median-wall run: panescan {:.0}, remote {:.0}), connections {}",
        bed.kex.unwrap_or("ssh's default"),
        one.wall_ms,
        one.panescan_ms,
        one.remote_ms,
        one.hosts[0].0,
    );
    let mut starts: Vec<f64> = all.hosts.iter().map(|h| h.1).collect();
    starts.sort_by(f64::total_cmp);
    eprintln!(
        "16 hosts, cold: wall {:.0} ms, ratio {:.2}; CPU {:.0} ms (panescan {:.0}, remote {:.0}); connections per host {:?}; first connection of each host at {:?} ms",
        all.wall_ms,
        all.wall_ms / slowest,
        all.cpu_ms,
        all.panescan_ms,
        all.remote_ms,
        all.hosts.iter().map(|h| h.0).collect::<Vec<_>>(),
        starts.iter().map(|s| s.round() as i64).collect::<Vec<_>>(),
    );
    eprintln!(
        "floor: 16-host CPU {:.0} ms / 2 cores = {:.0} ms; goal 1.5 x slowest alone = {:.0} ms; floor / goal = {:.2}",
        all.cpu_ms,
        all.cpu_ms / 2.0,
        1.5 * slowest,
        all.cpu_ms / 2.0 / (1.5 * slowest),
    );
}

/// The local side of one host (BENCHMARKS.md, "Many far hosts"): CPU that
/// panescan and its ssh clients spend per warm search of one host of 200
/// panes x 500 lines, beside what the remote side (sshd, tmux) spends.
/// Run: `cargo test -p panescan --test ssh -- --ignored
/// --nocapture bench_local_cpu_per_host`.
#[test]
#[ignore]
fn bench_local_cpu_per_host() {
    latency::require();
    let mut bed = Bed::new("cpu", Duration::ZERO);
    bed.add_filled(
        "big",
        &FixtureShape {
            panes: 200,
            lines: 500,
            width: 120,
            height: 30,
            needle_every: 40,
        },
    );
    let mut s = bed.serve(&[]);
    let marker = bed.client_config().display().to_string();
    let params = json!({"name": "search_panes", "arguments": {
        "pattern": panescan::testing::fixture::NEEDLE, "hosts": ["big"],
        "scrollback_lines": 1_000_000}});
    let _ = call(&mut s, params.clone());
    let remote = bed.remote_pids();
    let local = [s.pid()];
    let runs = 20;
    // panescan's own CPU (its threads, not its children), from /proc.
    let own = own_cpu_ms;
    let (r0, l0, p0) = (
        sshd::cpu_ms(&remote, None),
        sshd::cpu_ms(&local, Some(&marker)),
        own(s.pid()),
    );
    let ms = median_ms(&mut s, &params, runs);
    let (r1, l1, p1) = (
        sshd::cpu_ms(&remote, None),
        sshd::cpu_ms(&local, Some(&marker)),
        own(s.pid()),
    );
    let per = |a: f64, b: f64| (b - a) / runs as f64;
    // The same server searched from this machine, for comparison.
    let here = json!({"name": "search_panes", "arguments": {
        "pattern": panescan::testing::fixture::NEEDLE, "host": "local",
        "socket_name": bed.fixture("big").server.socket_name(),
        "scrollback_lines": 1_000_000}});
    let _ = call(&mut s, here.clone());
    let h0 = own(s.pid());
    let here_ms = median_ms(&mut s, &here, runs);
    let h1 = own(s.pid());
    eprintln!(
        "one host x 200 panes x 500 lines, warm: median {ms:.1} ms; CPU per search: local {:.1} ms (panescan {:.1}, ssh {:.1}), remote (sshd, tmux) {:.1} ms; \
         the same server searched here: median {here_ms:.1} ms, panescan {:.1} ms",
        per(l0, l1),
        per(p0, p1),
        per(l0, l1) - per(p0, p1),
        per(r0, r1),
        per(h0, h1),
    );
}
