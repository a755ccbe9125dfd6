//! Redaction's share of a deep search, beside the same search without it,
//! in the same run: 200 captures of the real-terminal corpus (corpus/), each
//! ~2,260 lines (three copies) with a few secrets added (a token, a URL password, a
//! private key), the shape of a deep search of 200 panes.
//!
//! Run: `cargo bench -p panescan-benches --bench redact`
//! (PANESCAN_BENCH_PANES changes the number of captures; default 200;
//! PANESCAN_BENCH_PROFILE=ROW runs only that search row, 50 times, for a
//! profiler: `search-default`, `search-all-lines`, their `-redacted`).
//!
//! Rows (medians of 15 runs, each pair run alternately, all threads):
//! - `search-default` / `search-default-redacted`: a common word
//!   (`error`, case-insensitive) with search_panes' default budgets (20
//!   lines per pane, 500 in all), without and with redaction of the
//!   returned lines and context;
//! - `search-all-lines` / `search-all-lines-redacted`: the same with no
//!   budgets, every matching line returned (the worst case for redaction
//!   inside a search);
//! - `redact-whole-text`: every capture redacted whole, one thread per
//!   capture as the search uses them (what capture_pane pays when it
//!   returns everything).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use panescan_engine::{
    redact_bytes, search_captures, Capture, Matcher, PatternOptions, SearchBudgets, SearchOptions,
};
use rayon::prelude::*;

const SECRETS: &str = "export GITHUB_TOKEN=ghp_16C7e42F292c6912E7710c838347Ae178B4a\n\
git clone https://alice:hunter2@git.example.com/r.git\n\
error: bad key AKIAIOSFODNN7EXAMPLE\n\
-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA75bodyline0123456789\n-----END RSA PRIVATE KEY-----\n";

fn corpus() -> Vec<u8> {
    panescan_benches::corpus_text(SECRETS.as_bytes())
}

fn time(f: &mut impl FnMut() -> usize) -> Duration {
    let t = Instant::now();
    std::hint::black_box(f());
    t.elapsed()
}

fn median_of(name: &str, mut times: Vec<Duration>) -> Duration {
    times.sort();
    let m = times[times.len() / 2];
    eprintln!("{name:<28} {:>8.2} ms", m.as_secs_f64() * 1e3);
    m
}

/// Medians of `a` and `b` run alternately, so a load that comes and goes
/// on the machine weighs on both alike.
fn pair(
    names: [&str; 2],
    runs: usize,
    mut a: impl FnMut() -> usize,
    mut b: impl FnMut() -> usize,
) -> (Duration, Duration) {
    let (mut ta, mut tb) = (Vec::new(), Vec::new());
    for _ in 0..runs {
        ta.push(time(&mut a));
        tb.push(time(&mut b));
    }
    (median_of(names[0], ta), median_of(names[1], tb))
}

fn main() {
    let panes = std::env::var("PANESCAN_BENCH_PANES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200);
    // Three copies of the corpus: ~2,260 lines, a pane with 2,000 lines of
    // history.
    let base = corpus().repeat(3);
    let captures: Vec<Capture> = (0..panes)
        .map(|k| Capture::new(k, -2000, base.clone()))
        .collect();
    let total: usize = captures.iter().map(|c| c.bytes.len()).sum();
    eprintln!("{panes} captures, {} MB", total >> 20);
    let matcher = Matcher::new(&["error"], PatternOptions::default()).unwrap();
    let (matcher, all) = (&matcher, &captures);
    let search = |budgets: SearchBudgets, redact: bool| {
        let options = SearchOptions {
            limits: budgets,
            context_lines: 1,
            redact,
            ..SearchOptions::default()
        };
        move || {
            let out = search_captures(matcher, &options, all.clone());
            out.panes.iter().map(|p| p.lines.len()).sum::<usize>()
        }
    };
    let runs = 15;
    let default = SearchBudgets {
        max_matches: 500,
        max_matches_per_pane: 20,
        ..SearchBudgets::unlimited()
    };
    // One case alone, many times, for a profiler.
    if let Ok(case) = std::env::var("PANESCAN_BENCH_PROFILE") {
        let (budgets, redact) = match case.as_str() {
            "search-default" => (default, false),
            "search-default-redacted" => (default, true),
            "search-all-lines" => (SearchBudgets::unlimited(), false),
            _ => (SearchBudgets::unlimited(), true),
        };
        let run = search(budgets, redact);
        let t = Instant::now();
        for _ in 0..50 {
            std::hint::black_box(run());
        }
        eprintln!(
            "{case}: 50 runs in {:.0} ms",
            t.elapsed().as_secs_f64() * 1e3
        );
        return;
    }
    // Warm up: page in the captures and build the automata once.
    search(default.clone(), true)();
    let (plain, red) = pair(
        ["search-default", "search-default-redacted"],
        runs,
        search(default.clone(), false),
        search(default, true),
    );
    let (all, all_red) = pair(
        ["search-all-lines", "search-all-lines-redacted"],
        runs,
        search(SearchBudgets::unlimited(), false),
        search(SearchBudgets::unlimited(), true),
    );
    let (scan, whole) = pair(
        ["search-all-lines", "redact-whole-text"],
        runs,
        search(SearchBudgets::unlimited(), false),
        || captures.par_iter().map(|c| redact_bytes(&c.bytes).1).sum(),
    );
    let share = |with: Duration, without: Duration| {
        (with.as_secs_f64() - without.as_secs_f64()) / with.as_secs_f64() * 100.0
    };
    println!("| case | without | with redaction | redaction's share |");
    println!("|---|---|---|---|");
    let ms = |d: Duration| format!("{:.1} ms", d.as_secs_f64() * 1e3);
    println!(
        "| deep search, default budgets | {} | {} | {:.1}% |",
        ms(plain),
        ms(red),
        share(red, plain)
    );
    println!(
        "| deep search, every matching line | {} | {} | {:.1}% |",
        ms(all),
        ms(all_red),
        share(all_red, all)
    );
    println!(
        "| whole text ({} MB) redacted vs. scanned | {} | {} | {:.2}x the scan |",
        total >> 20,
        ms(scan),
        ms(whole),
        whole.as_secs_f64() / scan.as_secs_f64()
    );
}
