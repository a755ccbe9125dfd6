//! `panescan bench --fleet-only`: many far hosts in one search beside the
//! slowest host alone, same run (BENCHMARKS.md, "Many far hosts"). The
//! hosts are [`super::fleet_hosts`]: each its own sshd and tmux server of
//! 20 panes x 500 lines, each `--rtt-ms` away through a relay on
//! 127.0.0.1. Each search is `serve --no-daemon --ssh-config ... --ssh hN`
//! of this program:
//!
//! - **cold**: a new serve's first search (ssh connects): all hosts in one
//!   call, beside the slowest of the hosts each searched alone by a new
//!   serve of its own;
//! - **warm**: the median of `--runs` (at least 5) calls of one serve,
//!   all hosts, beside the slowest host's median alone;
//!
//! each with ssh's default key exchange and with `curve25519-sha256`
//! (OpenSSH 9.x's default, sntrup761x25519, costs ~80 ms of CPU on the
//! client per connection: cold, a small machine pays that per host).
//! Goal: <= 1.5x. Without sshd (or ssh, ssh-keygen) the section is one
//! row saying it was skipped.

use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::{json, Value};

use super::daemon::Session;
use super::fleet_hosts::{self, Fleet};
use crate::testbed::fixture::{FixtureShape, NEEDLE};

/// The goal: many hosts in one call within this of the slowest alone.
const GOAL: f64 = 1.5;

/// The key exchanges measured: ssh's default, and the cheap one.
const KEXES: [Option<&str>; 2] = [None, Some("curve25519-sha256")];

/// The fleet section of the bench report.
#[derive(Debug, Clone, Serialize)]
pub struct FleetBench {
    pub hosts: usize,
    pub rtt_ms: u64,
    pub panes_per_host: usize,
    pub lines_per_pane: usize,
    /// Why nothing was measured (`sshd not installed`), if so.
    pub skipped: Option<String>,
    pub rows: Vec<FleetRow>,
}

/// One row: all hosts in one call beside the slowest host alone.
#[derive(Debug, Clone, Serialize)]
pub struct FleetRow {
    /// `cold` or `warm`, and the key exchange.
    pub case: String,
    pub all_ms: f64,
    pub slowest_alone_ms: f64,
    /// `all_ms` over `slowest_alone_ms`.
    pub ratio: f64,
    /// Every host answered, each with its matches, none failed.
    pub all_right: bool,
}

/// Each host's server: small, so latency and not CPU is what is measured.
fn shape() -> FixtureShape {
    FixtureShape {
        panes: 20,
        lines: 500,
        width: 120,
        height: 30,
        needle_every: 100,
    }
}

/// Runs the section: `hosts` hosts each `rtt_ms` away.
pub fn run(hosts: usize, rtt_ms: u64, runs: usize, show: bool) -> Result<FleetBench, String> {
    let shape = shape();
    let mut bench = FleetBench {
        hosts,
        rtt_ms,
        panes_per_host: shape.panes,
        lines_per_pane: shape.lines,
        skipped: fleet_hosts::missing().map(str::to_owned),
        rows: Vec::new(),
    };
    if bench.skipped.is_some() {
        return Ok(bench);
    }
    let bar = crate::cli::progress::steps(hosts as u64, show);
    bar.set_message(format!("starting {hosts} hosts (sshd and tmux each)"));
    let fleet = Fleet::build(
        hosts.max(1),
        &shape,
        Duration::from_millis(rtt_ms),
        &mut |done| bar.set_position(done as u64),
    )?;
    bar.finish_and_clear();
    let names = fleet.names();
    for kex in KEXES {
        let config = fleet.client_config(kex)?;
        let config = config.display().to_string();
        let label = kex.unwrap_or("ssh's default key exchange");
        bench.rows.push(cold(&config, &names, label)?);
        bench.rows.push(warm(&config, &names, label, runs.max(5))?);
    }
    Ok(bench)
}

/// A serve of this program with `hosts` configured, initialized.
fn serve(config: &str, hosts: &[String]) -> Result<Session, String> {
    let mut args: Vec<&str> = vec!["serve", "--no-daemon", "--ssh-config", config];
    for h in hosts {
        args.extend(["--ssh", h.as_str()]);
    }
    Session::spawn(&args)
}

/// The search of `hosts`: the needle in all history.
fn search(hosts: &[String]) -> Value {
    json!({"pattern": NEEDLE, "hosts": hosts, "scrollback_lines": 1_000_000,
           "timeout_ms": 60_000})
}

/// One search of `hosts` by `s`, timed; whether every host answered with
/// matches.
fn timed(s: &mut Session, hosts: &[String]) -> Result<(f64, bool), String> {
    let t = Instant::now();
    let r = s.call(&search(hosts))?;
    let ms = t.elapsed().as_secs_f64() * 1000.0;
    Ok((ms, answered(&r, hosts)))
}

/// No host failed and each has a match.
fn answered(r: &Value, hosts: &[String]) -> bool {
    let matched: Vec<&str> = r["matches"]
        .as_array()
        .map(|m| m.iter().filter_map(|m| m["host"].as_str()).collect())
        .unwrap_or_default();
    r.get("hosts_failed").is_none() && hosts.iter().all(|h| matched.contains(&h.as_str()))
}

/// A new serve's first search of `hosts` (ssh connects), timed.
fn first(config: &str, hosts: &[String]) -> Result<(f64, bool), String> {
    let mut s = serve(config, hosts)?;
    let out = timed(&mut s, hosts);
    s.end();
    out
}

/// The cold row: a new serve's first search, all hosts and each alone.
fn cold(config: &str, names: &[String], kex: &str) -> Result<FleetRow, String> {
    // Not timed: the run's first ssh and serve load their programs.
    if let Some(h) = names.first() {
        first(config, std::slice::from_ref(h))?;
    }
    let (all_ms, mut right) = first(config, names)?;
    let mut slowest = 0.0f64;
    for h in names {
        let (ms, ok) = first(config, std::slice::from_ref(h))?;
        slowest = slowest.max(ms);
        right &= ok;
    }
    Ok(row(format!("cold, {kex}"), all_ms, slowest, right))
}

/// The warm row: medians of `runs` calls of one serve.
fn warm(config: &str, names: &[String], kex: &str, runs: usize) -> Result<FleetRow, String> {
    let mut s = serve(config, names)?;
    let mut right = timed(&mut s, names)?.1;
    let mut median = |hosts: &[String]| -> Result<f64, String> {
        let mut ms = Vec::with_capacity(runs);
        for _ in 0..runs {
            let (t, ok) = timed(&mut s, hosts)?;
            right &= ok;
            ms.push(t);
        }
        ms.sort_by(f64::total_cmp);
        Ok(ms[ms.len() / 2])
    };
    let all_ms = median(names)?;
    let mut slowest = 0.0f64;
    for h in names {
        slowest = slowest.max(median(std::slice::from_ref(h))?);
    }
    s.end();
    Ok(row(format!("warm, {kex}"), all_ms, slowest, right))
}

fn row(case: String, all_ms: f64, slowest_alone_ms: f64, all_right: bool) -> FleetRow {
    FleetRow {
        case,
        all_ms,
        slowest_alone_ms,
        ratio: all_ms / slowest_alone_ms.max(f64::MIN_POSITIVE),
        all_right,
    }
}

/// The section as a table.
pub fn print(f: &FleetBench) {
    println!();
    println!(
        "many far hosts ({} hosts x {} panes x {} lines, every round trip {} ms):",
        f.hosts, f.panes_per_host, f.lines_per_pane, f.rtt_ms
    );
    if let Some(why) = &f.skipped {
        println!("  skipped: {why}");
        return;
    }
    for r in &f.rows {
        println!(
            "  {:<48} all {:>8.1} ms  slowest alone {:>8.1} ms  {:.2}x (goal <= {GOAL}x){}",
            r.case,
            r.all_ms,
            r.slowest_alone_ms,
            r.ratio,
            if r.all_right { "" } else { "  ANSWERS WRONG" }
        );
    }
}

/// The section as Markdown.
pub fn markdown(f: &FleetBench) -> String {
    let mut out = format!(
        "| {} hosts at {} ms RTT | {} in one call | slowest host alone | ratio | goal | answers right |\n|---|---|---|---|---|---|\n",
        f.hosts, f.rtt_ms, f.hosts
    );
    if let Some(why) = &f.skipped {
        out.push_str(&format!("| skipped: {why} | | | | | |\n"));
        return out;
    }
    for r in &f.rows {
        out.push_str(&format!(
            "| {} | {:.1} ms | {:.1} ms | {:.2} | <= {GOAL} | {} |\n",
            r.case, r.all_ms, r.slowest_alone_ms, r.ratio, r.all_right
        ));
    }
    out
}
