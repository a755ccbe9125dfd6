//! The engine against ripgrep in CPU time, for a machine too busy for wall
//! time to mean much.
//!
//! Run: `cargo run --profile bench -p panescan-benches --example engine_cpu -- CASE`
//! where CASE is one of the engine bench's cases (`rare-literal`,
//! `case-insensitive-literal`, `common-word`, `10-literals`, `simple-regex`,
//! `complex-regex`); `PANESCAN_BENCH_MB` (default 100) and
//! `PANESCAN_BENCH_RUNS` (default 20) as for the bench.
//!
//! Same text as the engine bench: the corpus repeated in ~80 KB captures;
//! ripgrep reads the same bytes from one file on tmpfs. Timed:
//! - the engine: CPU time of the thread that runs `search_captures` on a
//!   one-thread pool (`/proc/thread-self/schedstat`), over views of
//!   captures the caller keeps (as the pane cache hands them to a search,
//!   and as in the bench: the search neither copies nor frees them);
//! - `rg --no-config -j1 -c` and `rg ... -n` (matching lines printed with
//!   their numbers into a pipe), each the CPU time of its whole process,
//!   start-up and exit included (the children's user and system time in
//!   `/proc/self/stat`, in ticks of 10 ms, summed over every run).
//!
//! Prints the engine's median and best, ripgrep's mean, and the ratios.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::{Command, Stdio};

use panescan_engine::{
    search_captures, Capture, Matcher, PatternOptions, SearchBudgets, SearchOptions,
};

fn env_number(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// CPU time of the calling thread, in seconds.
fn thread_cpu() -> f64 {
    let stat = std::fs::read_to_string("/proc/thread-self/schedstat").unwrap();
    let ns: u64 = stat.split_whitespace().next().unwrap().parse().unwrap();
    ns as f64 / 1e9
}

/// User and system CPU time of the waited-for children, in seconds.
fn children_cpu() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
    // Fields after the command name (which is in parentheses): cutime and
    // cstime are the 14th and 15th of them.
    let after = &stat[stat.rfind(')').unwrap() + 2..];
    let fields: Vec<u64> = after
        .split_whitespace()
        .skip(13)
        .take(2)
        .map(|f| f.parse().unwrap())
        .collect();
    (fields[0] + fields[1]) as f64 / 100.0
}

fn rg(path: &Path, patterns: &[&str], regex: bool, match_case: bool, output: &str) -> Command {
    let mut rg = Command::new("rg");
    rg.args(["--no-config", "-j1", output]);
    rg.arg(if match_case { "-s" } else { "-i" });
    if !regex {
        rg.arg("-F");
    }
    for p in patterns {
        rg.arg("-e").arg(p);
    }
    rg.arg(path).stdout(Stdio::piped());
    rg
}

fn main() {
    let name = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "common-word".into());
    let case = panescan_benches::ENGINE_CASES
        .iter()
        .find(|c| c.name == name)
        .expect("a case name of the engine bench");
    let (patterns, regex, match_case) = (case.patterns, case.regex, case.match_case);
    let runs = env_number("PANESCAN_BENCH_RUNS", 20);
    let base = panescan_benches::corpus_text(b"");
    let count = (env_number("PANESCAN_BENCH_MB", 100) << 20) / base.len() + 1;
    let captures: Vec<Capture> = (0..count)
        .map(|k| Capture::new(k, -1500, base.clone()))
        .collect();
    let total = (base.len() * count) as f64;

    let matcher = Matcher::new(patterns, PatternOptions { regex, match_case }).unwrap();
    let options = SearchOptions {
        limits: SearchBudgets::unlimited(),
        ..SearchOptions::default()
    };
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    let mut times = Vec::new();
    let mut lines = 0;
    for _ in 0..runs {
        let copy = captures.clone();
        let (outcome, seconds) = pool.install(|| {
            let start = thread_cpu();
            let outcome = search_captures(&matcher, &options, copy);
            (outcome, thread_cpu() - start)
        });
        times.push(seconds);
        lines = outcome.panes.iter().map(|p| p.lines.len()).sum::<usize>();
    }
    times.sort_by(f64::total_cmp);
    let engine = times[times.len() / 2];

    let dir = Path::new("/dev/shm");
    let dir = if dir.is_dir() {
        dir.to_path_buf()
    } else {
        std::env::temp_dir()
    };
    let path = dir.join(format!("panescan-engine-cpu-{}.txt", std::process::id()));
    let text: Vec<u8> = captures
        .iter()
        .flat_map(|c| c.bytes.iter().copied())
        .collect();
    std::fs::write(&path, text).unwrap();
    let rg_mean = |output: &str| {
        let start = children_cpu();
        for _ in 0..runs {
            rg(&path, patterns, regex, match_case, output)
                .output()
                .unwrap();
        }
        (children_cpu() - start) / runs as f64
    };
    let (count_only, numbered) = (rg_mean("-c"), rg_mean("-n"));
    let _ = std::fs::remove_file(&path);

    let gbs = |s: f64| total / s / 1e9;
    println!(
        "{name}: {lines} lines; engine median {:.1} ms ({:.2} GB/s), best {:.1} ms; \
         rg -c {:.1} ms ({:.2} GB/s); rg -n {:.1} ms ({:.2} GB/s); \
         engine / rg -c {:.2}x, engine / rg -n {:.2}x",
        engine * 1e3,
        gbs(engine),
        times[0] * 1e3,
        count_only * 1e3,
        gbs(count_only),
        numbered * 1e3,
        gbs(numbered),
        count_only / engine,
        numbered / engine,
    );
}
