//! `panescan bench`: how search budgets behave on a server of a given shape.
//!
//! Builds a private tmux server (`--panes` x `--lines` x `--width`), then
//! times a matrix of searches through the real MCP front end beside the
//! cost of fetching the same text raw ([`crate::testbed::baseline`]), all in the same
//! run. Medians of `--runs` runs; ratios against the raw floor are what to
//! read (the absolute numbers move with the machine's load). Each search
//! run is paired with a raw fetch of the same range along the faster
//! single-connection path, timed right beside it, and a row's ratio is the
//! median of its runs' ratios: a machine whose load drifts between the
//! floors' phase and a case's moves both halves of a pair alike.

use std::time::{Duration, Instant};

use clap::Args;
use indicatif::ProgressBar;
use serde::Serialize;
use serde_json::{json, Value};

use crate::cli::client::McpClient;
use crate::cli::progress;
use crate::testbed::baseline::{self, median, FetchRange, Fetched, FloorPath};
use crate::testbed::fixture::{FixtureShape, NEEDLE};

pub mod big;
pub mod cache;
pub mod chart;
pub mod load;
pub mod markdown;
pub mod wait;
pub mod watch;

/// `panescan bench` options.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  panescan bench\n  panescan bench --panes 1000 --lines 200 --matrix-only\n  panescan bench --panes 50 --lines 10000 --runs 3 --json\n  panescan bench --wait-only --runs 15\n  panescan bench --load-only\n  panescan bench --big-only\n  panescan bench --svg bench.svg\n  panescan bench --markdown"
)]
pub struct BenchArgs {
    /// Panes in the private server.
    #[arg(long, default_value_t = 200)]
    pub panes: usize,
    /// Lines printed in each pane (its scrollback).
    #[arg(long, default_value_t = 2_000)]
    pub lines: usize,
    /// Pane width in cells.
    #[arg(long, default_value_t = 200)]
    pub width: u16,
    /// Pane height in rows.
    #[arg(long, default_value_t = 50)]
    pub height: u16,
    /// Runs of each case (the median is reported).
    #[arg(long, default_value_t = 5)]
    pub runs: usize,
    /// Print JSON instead of a table.
    #[arg(long, conflicts_with = "csv")]
    pub json: bool,
    /// Print CSV instead of a table.
    #[arg(long, conflicts_with = "markdown")]
    pub csv: bool,
    /// Print Markdown tables instead (the form BENCHMARKS.md keeps).
    #[arg(long, conflicts_with = "json")]
    pub markdown: bool,
    /// Leave out the one-process-per-pane baseline (slow on many panes).
    #[arg(long)]
    pub no_process_baseline: bool,
    /// Only the pane cache cases (cold vs warm deep search).
    #[arg(long, conflicts_with = "wait_only")]
    pub cache_only: bool,
    /// Only the wait_for_text latency cases (event stream vs polling).
    #[arg(long)]
    pub wait_only: bool,
    /// Only the big-answer cases: search end to first byte of a
    /// ~6,000-line answer and of one cut to the ceiling, and the big search
    /// repeated with the pane cache warm.
    #[arg(long, conflicts_with_all = ["cache_only", "wait_only", "load_only"])]
    pub big_only: bool,
    /// Only the load cases: list_panes and capture_pane while 8 deep
    /// searches run, then 64 deep searches at once.
    #[arg(long, conflicts_with_all = ["cache_only", "wait_only"])]
    pub load_only: bool,
    /// Only the search matrix: each search beside raw fetches of the same
    /// text (the pane-count rows, without the sections after them).
    #[arg(long, conflicts_with_all = ["cache_only", "wait_only", "big_only", "load_only"])]
    pub matrix_only: bool,
    /// Also draw the report as an SVG chart: each search's median beside
    /// the raw fetch floor and the one-process-per-pane fetch.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["cache_only", "wait_only"])]
    pub svg: Option<std::path::PathBuf>,
}

/// One row of the report.
#[derive(Debug, Clone, Serialize)]
pub struct BenchRow {
    pub case: String,
    pub scope: &'static str,
    pub median_ms: f64,
    pub bytes_scanned: u64,
    pub lines_scanned: u64,
    pub matching_lines: u64,
    pub clamps: Vec<String>,
    /// The median, over runs, of the search's time over the raw fetch of
    /// the same range timed right beside it (paired, so the machine's
    /// drift between phases of the bench does not move the ratio).
    pub ratio_to_raw_fetch: f64,
    /// Median of the raw fetches paired with this case's runs.
    pub raw_fetch_ms: f64,
}

/// The whole report.
#[derive(Debug, Clone, Serialize)]
pub struct BenchReport {
    pub panes: usize,
    pub lines: usize,
    pub width: u16,
    pub runs: usize,
    pub fill_ms: f64,
    pub raw_visible_ms: f64,
    pub raw_visible_bytes: usize,
    pub raw_deep_ms: f64,
    pub raw_deep_bytes: usize,
    pub process_per_pane_visible_ms: Option<f64>,
    pub process_per_pane_deep_ms: Option<f64>,
    pub rows: Vec<BenchRow>,
    /// Cold vs warm deep search (the pane cache).
    pub cache: Option<cache::CacheBench>,
    /// wait_for_text latency, event stream vs polling.
    pub wait: Option<wait::WaitBench>,
    /// Cheap calls while deep searches run.
    pub load: Option<load::LoadBench>,
    /// Big answers: search end to first byte, and repeated.
    pub big: Option<big::BigBench>,
}

fn ms(d: Duration) -> f64 {
    (d.as_secs_f64() * 1e5).round() / 1e2
}

/// The searches of the matrix: (name, deep?, arguments).
fn cases(lines: usize) -> Vec<(&'static str, bool, Value)> {
    let deep = lines as u64;
    vec![
        ("rare literal", false, json!({"pattern": NEEDLE})),
        (
            "regex",
            false,
            json!({"pattern": r"error\[E\d+\]", "regex": true}),
        ),
        (
            "rare literal",
            true,
            json!({"pattern": NEEDLE, "scrollback_lines": deep}),
        ),
        (
            "case-sensitive literal",
            true,
            json!({"pattern": "Traceback", "match_case": true, "scrollback_lines": deep}),
        ),
        (
            "regex",
            true,
            json!({"pattern": r"error\[E\d+\]", "regex": true, "scrollback_lines": deep}),
        ),
        (
            "5 patterns",
            true,
            json!({"patterns": ["panicked", "Traceback", "FAILED", NEEDLE, "segfault"], "scrollback_lines": deep}),
        ),
        (
            "common word (max_matches clamps)",
            true,
            json!({"pattern": "the", "scrollback_lines": deep}),
        ),
        (
            "budget: max_scan_bytes 1 MB",
            true,
            json!({"pattern": NEEDLE, "scrollback_lines": deep, "max_scan_bytes": 1_000_000}),
        ),
        (
            "budget: timeout_ms 20",
            true,
            json!({"pattern": NEEDLE, "scrollback_lines": deep, "timeout_ms": 20}),
        ),
    ]
}

/// Runs the bench and prints the report.
pub fn run(args: &BenchArgs) -> Result<(), String> {
    crate::testbed::private_server::kill_on_interrupt();
    if args.wait_only {
        let wait = wait::run(args.runs)?;
        let markdown = markdown::wait;
        return print_section(args, &wait, wait::print, markdown);
    }
    let shape = FixtureShape {
        panes: args.panes,
        lines: args.lines,
        width: args.width,
        height: args.height,
        needle_every: 40,
    };
    let fill = Instant::now();
    let fixture = progress::fill_fixture("bench", shape, !args.json && !args.csv)?;
    let fill_ms = ms(fill.elapsed());
    let runs = args.runs.max(1);
    if args.cache_only {
        let cache = cache::run(&fixture, runs)?;
        drop(fixture);
        let markdown = markdown::cache;
        return print_section(args, &cache, cache::print, markdown);
    }
    if args.big_only {
        let big = big::run(&fixture, runs)?;
        drop(fixture);
        let markdown = big::markdown;
        return print_section(args, &big, big::print, markdown);
    }
    let socket = fixture.server.socket_name().to_owned();
    let first_pane = fixture.pane_ids.first().cloned().unwrap_or_default();
    if args.load_only {
        let load = load::run(&socket, args.lines, &first_pane, runs, true)?;
        drop(fixture);
        let markdown = load::markdown;
        return print_section(args, &load, load::print, markdown);
    }
    let cases = cases(args.lines);
    let steps = 4 + cases.len() as u64 + u64::from(!args.no_process_baseline) * 2;
    let bar = progress::steps(steps, !args.json && !args.csv);
    let floors = Floors::measure(args, &socket, &fixture.pane_ids, runs, &bar)?;
    let rows = run_cases(&socket, &fixture.pane_ids, cases, runs, &floors, &bar)?;
    bar.finish_and_clear();
    let sections = if args.matrix_only {
        Sections::default()
    } else {
        Sections::measure(&fixture, &socket, args.lines, &first_pane, runs)?
    };
    drop(fixture);
    let Sections {
        load,
        cache,
        big,
        wait,
    } = sections;

    let report = BenchReport {
        panes: args.panes,
        lines: args.lines,
        width: args.width,
        runs,
        fill_ms,
        raw_visible_ms: ms(floors.raw_visible.elapsed),
        raw_visible_bytes: floors.raw_visible.bytes,
        raw_deep_ms: ms(floors.raw_deep.elapsed),
        raw_deep_bytes: floors.raw_deep.bytes,
        process_per_pane_visible_ms: floors.ppp_visible.map(|f| ms(f.elapsed)),
        process_per_pane_deep_ms: floors.ppp_deep.map(|f| ms(f.elapsed)),
        rows,
        cache,
        wait,
        load,
        big,
    };
    if let Some(path) = &args.svg {
        chart::write(&report, path)?;
    }
    print_report(args, &report)
}

/// The sections after the search matrix.
#[derive(Default)]
struct Sections {
    load: Option<load::LoadBench>,
    cache: Option<cache::CacheBench>,
    big: Option<big::BigBench>,
    wait: Option<wait::WaitBench>,
}

impl Sections {
    fn measure(
        fixture: &crate::testbed::fixture::Fixture,
        socket: &str,
        lines: usize,
        first_pane: &str,
        runs: usize,
    ) -> Result<Sections, String> {
        Ok(Sections {
            load: Some(load::run(socket, lines, first_pane, runs, false)?),
            cache: Some(cache::run(fixture, runs)?),
            big: Some(big::run(fixture, runs)?),
            wait: Some(wait::run(runs)?),
        })
    }
}

/// What fetching the bench's text costs without panescan: the floors the
/// searches are read against.
struct Floors {
    raw_visible: Fetched,
    raw_deep: Fetched,
    /// The faster single-connection path, visible and deep: each search
    /// run is paired with a fetch along it.
    visible_path: FloorPath,
    deep_path: FloorPath,
    deep_range: FetchRange,
    /// One tmux process per pane (absent with `--no-process-baseline`).
    ppp_visible: Option<Fetched>,
    ppp_deep: Option<Fetched>,
}

impl Floors {
    fn measure(
        args: &BenchArgs,
        socket: &str,
        panes: &[String],
        runs: usize,
        bar: &ProgressBar,
    ) -> Result<Floors, String> {
        bar.set_message("raw fetch, visible");
        let (raw_visible, visible_path) =
            baseline::raw_floor(socket, "main", panes, FetchRange::Visible, runs)
                .map_err(|e| format!("raw fetch failed: {e}"))?;
        bar.inc(1);
        bar.set_message("raw fetch, deep");
        let deep_range = FetchRange::Scrollback(args.lines as u64);
        let (raw_deep, deep_path) = baseline::raw_floor(socket, "main", panes, deep_range, runs)
            .map_err(|e| format!("raw fetch failed: {e}"))?;
        bar.inc(1);
        let (mut ppp_visible, mut ppp_deep) = (None, None);
        if !args.no_process_baseline {
            bar.set_message("one process per pane, visible");
            ppp_visible = Some(process_baseline(socket, panes, FetchRange::Visible)?);
            bar.inc(1);
            bar.set_message("one process per pane, deep");
            ppp_deep = Some(process_baseline(socket, panes, deep_range)?);
            bar.inc(1);
        }
        Ok(Floors {
            raw_visible,
            raw_deep,
            visible_path,
            deep_path,
            deep_range,
            ppp_visible,
            ppp_deep,
        })
    }

    /// One raw fetch of a case's range along the faster path.
    fn fetch(&self, socket: &str, panes: &[String], deep: bool) -> Result<Duration, String> {
        let (path, range) = if deep {
            (self.deep_path, self.deep_range)
        } else {
            (self.visible_path, FetchRange::Visible)
        };
        path.fetch(socket, "main", panes, range)
            .map(|f| f.elapsed)
            .map_err(|e| format!("raw fetch failed: {e}"))
    }
}

/// One case's runs: each search timed beside a raw fetch of the same range,
/// the two in turn (which goes first alternates, so neither always meets
/// the state the other left).
struct PairedRuns {
    searches: Vec<Duration>,
    fetches: Vec<Duration>,
    ratios: Vec<f64>,
    last: Value,
    errors: Vec<String>,
}

/// A pause before each timed search or fetch: what the one before left
/// running in the background (a sweep client started for the next search,
/// tmux letting a finished client go) is done before the next is timed,
/// as it is before a caller's next call.
const SETTLE: Duration = Duration::from_millis(50);

impl PairedRuns {
    fn measure(
        client: &mut McpClient,
        arguments: &Value,
        pair: impl Fn() -> Result<Duration, String>,
        runs: usize,
    ) -> Result<PairedRuns, String> {
        let mut r = PairedRuns {
            searches: Vec::with_capacity(runs),
            fetches: Vec::with_capacity(runs),
            ratios: Vec::with_capacity(runs),
            last: Value::Null,
            errors: Vec::new(),
        };
        for run in 0..runs {
            let fetch_first = run % 2 == 0;
            let before = if fetch_first {
                std::thread::sleep(SETTLE);
                Some(pair()?)
            } else {
                None
            };
            std::thread::sleep(SETTLE);
            let start = Instant::now();
            // A tool error (a budget too small to even list the panes) is a
            // result worth reporting, not a reason to stop the bench.
            match client.call_tool("search_panes", arguments.clone(), Duration::from_secs(600)) {
                Ok(result) => r.last = result,
                Err(e) => r.errors.push(e),
            }
            let search = start.elapsed();
            let fetch = match before {
                Some(fetch) => fetch,
                None => {
                    std::thread::sleep(SETTLE);
                    pair()?
                }
            };
            if !fetch.is_zero() {
                r.ratios.push(search.as_secs_f64() / fetch.as_secs_f64());
            }
            r.searches.push(search);
            r.fetches.push(fetch);
        }
        Ok(r)
    }

    fn median_ratio(&mut self) -> f64 {
        self.ratios.sort_by(f64::total_cmp);
        let ratio = self.ratios.get(self.ratios.len() / 2).copied();
        ratio.map_or(0.0, |r| (r * 100.0).round() / 100.0)
    }
}

/// Times each case through `panescan serve`, `runs` times, each run paired
/// with a raw fetch; a row per case.
fn run_cases(
    socket: &str,
    panes: &[String],
    cases: Vec<(&'static str, bool, Value)>,
    runs: usize,
    floors: &Floors,
    bar: &ProgressBar,
) -> Result<Vec<BenchRow>, String> {
    // The matrix measures cold searches: nothing kept between runs.
    let mut client = McpClient::start_with(socket, &["--no-cache"])?;
    bar.set_message("warming up");
    client.call_tool(
        "search_panes",
        json!({"pattern": NEEDLE}),
        Duration::from_secs(120),
    )?;
    bar.inc(2);

    let mut rows = Vec::new();
    for (name, deep, arguments) in cases {
        bar.set_message(format!("{} {name}", if deep { "deep" } else { "visible" }));
        let pair = || floors.fetch(socket, panes, deep);
        let paired = PairedRuns::measure(&mut client, &arguments, pair, runs)?;
        rows.push(row(name, deep, paired));
        bar.inc(1);
    }
    Ok(rows)
}

/// One section alone (`--cache-only`, `--wait-only`): JSON for `--json` and
/// `--csv`, Markdown for `--markdown`, else its table.
fn print_section<T: Serialize>(
    args: &BenchArgs,
    section: &T,
    table: fn(&T),
    markdown: fn(&T) -> String,
) -> Result<(), String> {
    if args.markdown {
        print!("{}", markdown(section));
    } else if args.json || args.csv {
        let text = serde_json::to_string_pretty(section).map_err(|e| e.to_string())?;
        println!("{text}");
    } else {
        table(section);
    }
    Ok(())
}

/// Prints the report as JSON, CSV or a table, with its cache and wait
/// sections.
fn print_report(args: &BenchArgs, report: &BenchReport) -> Result<(), String> {
    if args.json {
        let text = serde_json::to_string_pretty(report).map_err(|e| e.to_string())?;
        println!("{text}");
    } else if args.csv {
        print_csv(report);
    } else if args.markdown {
        print!("{}", markdown::report(report));
    } else {
        print_table(report);
        if let Some(cache) = &report.cache {
            cache::print(cache);
        }
        if let Some(wait) = &report.wait {
            wait::print(wait);
        }
        if let Some(load) = &report.load {
            load::print(load);
        }
        if let Some(big) = &report.big {
            big::print(big);
        }
    }
    Ok(())
}

fn process_baseline(socket: &str, panes: &[String], range: FetchRange) -> Result<Fetched, String> {
    baseline::process_per_pane(socket, panes, range).map_err(|e| format!("tmux failed: {e}"))
}

/// A case's row from its paired runs.
fn row(name: &str, deep: bool, mut paired: PairedRuns) -> BenchRow {
    let result = &paired.last;
    let number = |key: &str| result.get(key).and_then(Value::as_u64).unwrap_or(0);
    let matching_lines = result
        .get("matches")
        .and_then(Value::as_array)
        .map(|panes| {
            panes
                .iter()
                .filter_map(|p| p.get("lines").and_then(Value::as_array))
                .map(|l| l.len() as u64)
                .sum()
        })
        .unwrap_or(0);
    let mut clamps: Vec<String> = crate::tools::search::clamp_names_in_json(result)
        .into_iter()
        .map(str::to_owned)
        .collect();
    let (bytes_scanned, lines_scanned) = (number("bytes_scanned"), number("lines_scanned"));
    if let Some(first) = paired.errors.first() {
        let runs = paired.searches.len();
        clamps.push(format!(
            "{} of {runs} runs failed: {first}",
            paired.errors.len()
        ));
    }
    BenchRow {
        case: name.to_owned(),
        scope: if deep { "deep" } else { "visible" },
        median_ms: ms(median(&mut paired.searches)),
        bytes_scanned,
        lines_scanned,
        matching_lines,
        clamps,
        ratio_to_raw_fetch: paired.median_ratio(),
        raw_fetch_ms: ms(median(&mut paired.fetches)),
    }
}

fn print_table(r: &BenchReport) {
    println!(
        "panescan bench: {} panes x {} lines, width {}, median of {} runs (fill took {:.0} ms)\n",
        r.panes, r.lines, r.width, r.runs, r.fill_ms
    );
    println!(
        "raw fetch floor (one connection): visible {:.1} ms ({} bytes), deep {:.1} ms ({} bytes)",
        r.raw_visible_ms, r.raw_visible_bytes, r.raw_deep_ms, r.raw_deep_bytes
    );
    if let (Some(v), Some(d)) = (r.process_per_pane_visible_ms, r.process_per_pane_deep_ms) {
        println!("one tmux process per pane:         visible {v:.1} ms, deep {d:.1} ms");
    }
    println!();
    println!(
        "{:<8} {:<34} {:>10} {:>8} {:>7} {:>12} {:>10} {:>6}  clamps",
        "scope", "search", "median ms", "raw ms", "x raw", "bytes", "lines", "hits"
    );
    for row in &r.rows {
        println!(
            "{:<8} {:<34} {:>10.1} {:>8.1} {:>7.2} {:>12} {:>10} {:>6}  {}",
            row.scope,
            row.case,
            row.median_ms,
            row.raw_fetch_ms,
            row.ratio_to_raw_fetch,
            row.bytes_scanned,
            row.lines_scanned,
            row.matching_lines,
            if row.clamps.is_empty() {
                "-".to_owned()
            } else {
                row.clamps.join(",")
            }
        );
    }
}

fn print_csv(r: &BenchReport) {
    println!("scope,case,median_ms,ratio_to_raw_fetch,bytes_scanned,lines_scanned,matching_lines,clamps,raw_fetch_ms,panes,lines");
    for row in &r.rows {
        println!(
            "{},\"{}\",{},{},{},{},{},\"{}\",{},{},{}",
            row.scope,
            row.case,
            row.median_ms,
            row.ratio_to_raw_fetch,
            row.bytes_scanned,
            row.lines_scanned,
            row.matching_lines,
            row.clamps.join(" "),
            row.raw_fetch_ms,
            r.panes,
            r.lines
        );
    }
}
