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
//! Rows (medians of 15 runs, each pair run alternately, all threads; the
//! wall time, and the CPU time of all the process's threads, which a busy
//! machine disturbs less):
//! - `issue-case` / `issue-case-redacted`: the same captures cut to 2,000
//!   lines each (200 x 2,000, the deep search the goal speaks of), a
//!   common word with search_panes' defaults: no context, 20 lines per
//!   pane, 500 in all;
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

/// A search of `captures` (copied, as the search takes them) returning
/// how many lines it found.
fn searcher<'a>(
    matcher: &'a Matcher,
    captures: &'a [Capture],
    context_lines: usize,
    limits: SearchBudgets,
    redact: bool,
) -> impl FnMut() -> usize + 'a {
    let options = SearchOptions {
        limits,
        context_lines,
        redact,
        ..SearchOptions::default()
    };
    move || {
        let out = search_captures(matcher, &options, captures.to_vec());
        out.panes.iter().map(|p| p.lines.len()).sum::<usize>()
    }
}

/// The CPU time every thread of this process has run so far (Linux:
/// `/proc/self/task/*/schedstat`, in ns; zero elsewhere).
fn cpu_time() -> Duration {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return Duration::ZERO;
    };
    let ns: u64 = tasks
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("schedstat")).ok())
        .filter_map(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .sum();
    Duration::from_nanos(ns)
}

/// The wall and CPU time of one call.
fn time(f: &mut impl FnMut() -> usize) -> [Duration; 2] {
    let (t, cpu) = (Instant::now(), cpu_time());
    std::hint::black_box(f());
    [t.elapsed(), cpu_time().saturating_sub(cpu)]
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

/// Medians of `a` and `b` run alternately, so a load that comes and goes
/// on the machine weighs on both alike: `[[a, b] wall, [a, b] CPU]`.
fn pair(
    names: [&str; 2],
    runs: usize,
    mut a: impl FnMut() -> usize,
    mut b: impl FnMut() -> usize,
) -> [[Duration; 2]; 2] {
    let (mut ta, mut tb) = (Vec::new(), Vec::new());
    for _ in 0..runs {
        ta.push(time(&mut a));
        tb.push(time(&mut b));
    }
    let col = |t: &[[Duration; 2]], i: usize| median(t.iter().map(|x| x[i]).collect());
    let out = [[col(&ta, 0), col(&tb, 0)], [col(&ta, 1), col(&tb, 1)]];
    for (k, name) in names.iter().enumerate() {
        eprintln!(
            "{name:<28} {:>8.2} ms wall {:>8.2} ms CPU",
            out[0][k].as_secs_f64() * 1e3,
            out[1][k].as_secs_f64() * 1e3
        );
    }
    out
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
    // The first 2,000 lines: a pane with 2,000 lines of history.
    let cut = memchr::memchr_iter(b'\n', &base)
        .nth(1_999)
        .map_or(base.len(), |i| i + 1);
    let issue: Vec<Capture> = (0..panes)
        .map(|k| Capture::new(k, -2000, base[..cut].to_vec()))
        .collect();
    eprintln!("{panes} captures, {} MB", total >> 20);
    let matcher = Matcher::new(&["error"], PatternOptions::default()).unwrap();
    let (matcher, all, issue) = (&matcher, &captures, &issue);
    let search = |budgets: SearchBudgets, redact: bool| searcher(matcher, all, 1, budgets, redact);
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
        let mut run = search(budgets, redact);
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
    let issue_case = pair(
        ["issue-case", "issue-case-redacted"],
        runs,
        searcher(matcher, issue, 0, default.clone(), false),
        searcher(matcher, issue, 0, default.clone(), true),
    );
    let budgets = pair(
        ["search-default", "search-default-redacted"],
        runs,
        search(default.clone(), false),
        search(default, true),
    );
    let every = pair(
        ["search-all-lines", "search-all-lines-redacted"],
        runs,
        search(SearchBudgets::unlimited(), false),
        search(SearchBudgets::unlimited(), true),
    );
    let whole = pair(
        ["search-all-lines", "redact-whole-text"],
        runs,
        search(SearchBudgets::unlimited(), false),
        || captures.par_iter().map(|c| redact_bytes(&c.bytes).1).sum(),
    );
    let rows = [
        (
            "deep search, 2,000 lines a pane, search_panes' defaults",
            issue_case,
        ),
        ("deep search, default budgets, 1 line of context", budgets),
        ("deep search, every matching line", every),
    ];
    report(total, rows, whole);
}

/// A pair's medians: `[[without, with] wall, [without, with] CPU]`.
type Pair = [[Duration; 2]; 2];

/// The table: each search row's times and redaction's share, then the
/// whole-text row against the scan.
fn report(total: usize, rows: [(&str, Pair); 3], whole: Pair) {
    let share =
        |t: [Duration; 2]| (t[1].as_secs_f64() - t[0].as_secs_f64()) / t[1].as_secs_f64() * 100.0;
    let ms = |d: Duration| format!("{:.1} ms", d.as_secs_f64() * 1e3);
    println!("| case | without (wall, CPU) | with redaction (wall, CPU) | redaction's share (wall, CPU) |");
    println!("|---|---|---|---|");
    for (name, [wall, cpu]) in rows {
        println!(
            "| {name} | {}, {} | {}, {} | {:.1}%, {:.1}% |",
            ms(wall[0]),
            ms(cpu[0]),
            ms(wall[1]),
            ms(cpu[1]),
            share(wall),
            share(cpu)
        );
    }
    let [wall, cpu] = whole;
    println!(
        "| whole text ({} MB) redacted vs. scanned | {}, {} | {}, {} | {:.2}x, {:.2}x the scan |",
        total >> 20,
        ms(wall[0]),
        ms(cpu[0]),
        ms(wall[1]),
        ms(cpu[1]),
        wall[1].as_secs_f64() / wall[0].as_secs_f64(),
        cpu[1].as_secs_f64() / cpu[0].as_secs_f64()
    );
}
