//! Engine throughput over the real-terminal corpus (corpus/), repeated to
//! about 100 MB of pane captures, beside a baseline measured in the same run:
//! the `regex` crate applied line by line.
//!
//! Run: `cargo bench -p panescan-benches --bench engine`
//! (set PANESCAN_BENCH_MB to change the size; default 100).
//!
//! Each iteration hands the engine views of the captures (`Capture` holds
//! shared `Bytes`, as the pane cache hands a search its text): nothing is
//! copied before the search or freed in it; ripgrep likewise maps a file
//! that stays in the page cache.
//!
//! Cases: a rare literal (case-sensitive), a case-insensitive literal, a
//! common word (case-insensitive), a set of 10 literals (case-insensitive),
//! a simple regex (case-sensitive) and a complex one (case-insensitive, with
//! Unicode classes). Each case is measured in these rows:
//! - `engine-1t`: the engine on a one-thread rayon pool (throughput per core);
//! - `engine-all`: the engine on the global pool (all cores);
//! - `regex-lines`: one thread, `regex::bytes::Regex::is_match` on every line;
//! - `ripgrep-1t` (when `rg` is on `PATH`): `rg --no-config -j1 -c` over the
//!   same bytes written to one file on tmpfs (`/dev/shm`, else the temporary
//!   directory), counting matching lines with the same patterns and case
//!   setting (`-F` for literals, `-i`/`-s`): the anchor the engine is held to.
//!   Each iteration is one `rg` process, so its start-up is in the figure.
//! - `ripgrep-n-1t` (when `rg` is on `PATH`): the same with `-n` instead of
//!   `-c`: every matching line written out with its line number, which is
//!   what the engine produces (`rg -c` neither counts lines nor builds any
//!   line's text).
//!
//! and once, `ceiling/one-memmem-pass`: a `memmem` search for a needle that
//! never occurs, one thread — about the cost of reading the bytes once, the
//! bound no case can beat.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use panescan_benches::{Case, ENGINE_CASES};

use criterion::{criterion_group, criterion_main, BatchSize, BenchmarkId, Criterion, Throughput};
use panescan_engine::{
    search_captures, Capture, Matcher, PatternOptions, SearchBudgets, SearchOptions,
};

fn corpus() -> Vec<u8> {
    panescan_benches::corpus_text(b"")
}

/// One capture per copy of the corpus (~80 KB, ~1,500 lines: a pane with
/// its scrollback), enough copies for `megabytes`.
fn captures(megabytes: usize) -> Vec<Capture> {
    let base = corpus();
    let count = (megabytes << 20) / base.len() + 1;
    (0..count)
        .map(|k| Capture::new(k, -1500, base.clone()))
        .collect()
}

/// The captures written one after another to a file on tmpfs, removed when
/// dropped; `None` when ripgrep is not installed.
struct RgFile(PathBuf);

impl RgFile {
    fn new(captures: &[Capture]) -> Option<RgFile> {
        let installed = Command::new("rg")
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success());
        if !installed {
            eprintln!("rg not found: no ripgrep rows");
            return None;
        }
        let shm = Path::new("/dev/shm");
        let dir = if shm.is_dir() {
            shm.to_path_buf()
        } else {
            std::env::temp_dir()
        };
        let path = dir.join(format!("panescan-engine-bench-{}.txt", std::process::id()));
        let mut text = Vec::with_capacity(captures.iter().map(|c| c.bytes.len()).sum());
        for c in captures {
            text.extend_from_slice(&c.bytes);
        }
        std::fs::write(&path, text).unwrap();
        Some(RgFile(path))
    }

    /// `rg -j1 <output>` for `case` over the file (`-c`: count matching
    /// lines; `-n`: print them with their line numbers).
    fn command(&self, case: &Case, output: &str) -> Command {
        let mut rg = Command::new("rg");
        rg.args(["--no-config", "-j1", output]);
        rg.arg(if case.match_case { "-s" } else { "-i" });
        if !case.regex {
            rg.arg("-F");
        }
        for p in case.patterns {
            rg.arg("-e").arg(p);
        }
        rg.arg(&self.0);
        rg
    }

    /// The number of matching lines `rg -c` prints.
    fn count(&self, case: &Case) -> usize {
        let out = self.command(case, "-c").output().unwrap();
        String::from_utf8_lossy(&out.stdout)
            .trim()
            .parse()
            .unwrap_or(0)
    }
}

impl Drop for RgFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn bench(c: &mut Criterion) {
    let megabytes = std::env::var("PANESCAN_BENCH_MB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100);
    let captures = captures(megabytes);
    let total: usize = captures.iter().map(|c| c.bytes.len()).sum();
    let options = SearchOptions {
        limits: SearchBudgets::unlimited(),
        ..SearchOptions::default()
    };
    let one_thread = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    let rg = RgFile::new(&captures);

    let mut group = c.benchmark_group("engine");
    group.throughput(Throughput::BytesDecimal(total as u64));
    group.sample_size(10);
    group.warm_up_time(Duration::from_millis(500));
    group.measurement_time(Duration::from_secs(3));

    for case in ENGINE_CASES {
        let matcher = Matcher::new(
            case.patterns,
            PatternOptions {
                regex: case.regex,
                match_case: case.match_case,
            },
        )
        .unwrap();
        // The baseline: same semantics, one regex, line by line.
        let alternation = case
            .patterns
            .iter()
            .map(|p| {
                if case.regex {
                    (*p).to_string()
                } else {
                    regex::escape(p)
                }
            })
            .collect::<Vec<_>>()
            .join("|");
        let baseline = regex::bytes::RegexBuilder::new(&alternation)
            .case_insensitive(!case.match_case)
            .build()
            .unwrap();

        // Same answer from both before timing anything.
        let engine_lines: usize = search_captures(&matcher, &options, captures.clone())
            .panes
            .iter()
            .map(|p| p.lines.len())
            .sum();
        let baseline_lines: usize = captures
            .iter()
            .map(|c| {
                c.bytes
                    .split(|&b| b == b'\n')
                    .filter(|l| baseline.is_match(l))
                    .count()
            })
            .sum();
        let rg_lines = rg.as_ref().map(|rg| rg.count(case));
        eprintln!(
            "{}: {} ({}) matching lines: engine {engine_lines}, baseline {baseline_lines}, ripgrep {rg_lines:?}",
            case.name,
            matcher.engine_name(),
            total
        );

        group.bench_function(BenchmarkId::new("engine-1t", case.name), |b| {
            b.iter_batched(
                || captures.clone(),
                |cs| one_thread.install(|| search_captures(&matcher, &options, cs)),
                BatchSize::PerIteration,
            )
        });
        group.bench_function(BenchmarkId::new("engine-all", case.name), |b| {
            b.iter_batched(
                || captures.clone(),
                |cs| search_captures(&matcher, &options, cs),
                BatchSize::PerIteration,
            )
        });
        group.bench_function(BenchmarkId::new("regex-lines", case.name), |b| {
            b.iter(|| {
                let mut n = 0usize;
                for c in &captures {
                    for line in c.bytes.split(|&b| b == b'\n') {
                        n += usize::from(baseline.is_match(line));
                    }
                }
                n
            })
        });
        if let Some(rg) = &rg {
            group.bench_function(BenchmarkId::new("ripgrep-1t", case.name), |b| {
                b.iter(|| rg.command(case, "-c").output().unwrap().stdout.len())
            });
            group.bench_function(BenchmarkId::new("ripgrep-n-1t", case.name), |b| {
                b.iter(|| rg.command(case, "-n").output().unwrap().stdout.len())
            });
        }
    }
    // The ceiling: one `memmem` pass over the same bytes for a needle that
    // never occurs, i.e. about what reading the text once costs on one core.
    // No search can beat it; ratios to the baseline above it are out of
    // reach.
    let absent = memchr::memmem::Finder::new(b"\x01panescan\x02");
    group.bench_function(BenchmarkId::new("ceiling", "one-memmem-pass"), |b| {
        b.iter(|| {
            captures
                .iter()
                .filter(|c| absent.find(&c.bytes).is_some())
                .count()
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
