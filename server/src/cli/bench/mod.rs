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
//!
//! Each section is a file of its own: the search matrix (`matrix`), the
//! pane cache (`cache`), waits (`wait`, `watch`), load (`load`), big
//! answers (`big`), the daemon (`daemon`), HTTP beside stdio (`http`),
//! the journal (`journal`: `journal_scan`, `journal_load`; `--journal-only`
//! alone, as it takes minutes), many far hosts (`fleet`, its sshd hosts
//! `fleet_hosts`; `--fleet-only` alone, as it needs sshd); the report
//! they fill is `report`, printed as a table
//! or CSV (`table`), Markdown (`markdown`) or an SVG chart (`chart`).

use std::time::Instant;

use clap::Args;
use serde::Serialize;

use crate::cli::progress;
use crate::testbed::fixture::FixtureShape;
use report::ms;

pub(crate) mod big;
pub(crate) mod cache;
pub(crate) mod chart;
pub(crate) mod daemon;
mod fleet;
mod fleet_hosts;
pub(crate) mod http;
pub(crate) mod journal;
pub(crate) mod journal_index;
pub(crate) mod journal_load;
pub(crate) mod journal_scan;
pub(crate) mod load;
pub(crate) mod markdown;
mod matrix;
mod probe;
pub(crate) mod report;
mod table;
pub(crate) mod wait;
pub(crate) mod watch;

pub use report::BenchReport;

/// `panescan bench` options.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  panescan bench\n  panescan bench --panes 1000 --lines 200 --matrix-only\n  panescan bench --panes 50 --lines 10000 --runs 3 --json\n  panescan bench --wait-only --runs 15\n  panescan bench --load-only\n  panescan bench --big-only\n  panescan bench --journal-only --journal-seconds 10 --journal-mb 256 --runs 3\n  panescan bench --fleet-only --hosts 16 --rtt-ms 40\n  panescan bench --svg bench.svg\n  panescan bench --markdown"
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
    /// Only the daemon rows: a deep search as a session's first call
    /// (in-process, a new daemon, a warm one), serve start to initialize,
    /// 16 sessions at once.
    #[arg(long, conflicts_with_all = ["cache_only", "wait_only", "big_only", "load_only"])]
    pub daemon_only: bool,
    /// Only the HTTP row: search_panes over Streamable HTTP beside stdio,
    /// calls interleaved (goal <= 1.1x).
    #[arg(long, conflicts_with_all = ["cache_only", "wait_only", "big_only", "load_only", "daemon_only"])]
    pub http_only: bool,
    /// Only the search matrix: each search beside raw fetches of the same
    /// text (the pane-count rows, without the sections after them).
    #[arg(long, conflicts_with_all = ["cache_only", "wait_only", "big_only", "load_only"])]
    pub matrix_only: bool,
    /// Only the journal rows: a rare literal over `--journal-mb` of
    /// journaled text beside `rg -z -j2`, the journal's size on disk, and
    /// keeping up with 200 panes printing for `--journal-seconds` (with
    /// and without the journal) and 10 printing flat out. Minutes long.
    #[arg(long, conflicts_with_all = ["cache_only", "wait_only", "big_only", "load_only", "daemon_only", "matrix_only"])]
    pub journal_only: bool,
    /// Text journaled for the search-speed row, in MiB.
    #[arg(long, default_value_t = 1024, value_name = "MIB")]
    pub journal_mb: u64,
    /// Seconds of steady printing in each keeping-up run (60 for the goal;
    /// fewer for a quick check).
    #[arg(long, default_value_t = 60, value_name = "SECONDS")]
    pub journal_seconds: u64,
    /// Only the many-far-hosts rows: `--hosts` hosts, each its own sshd
    /// and tmux server on 127.0.0.1 behind a relay adding `--rtt-ms` to
    /// every round trip, searched in one call beside the slowest host
    /// alone, cold and warm (goal <= 1.5x). Needs sshd; nothing of the
    /// machine's ssh configuration is used.
    #[arg(long, conflicts_with_all = ["cache_only", "wait_only", "big_only", "load_only", "daemon_only", "matrix_only", "journal_only", "http_only"])]
    pub fleet_only: bool,
    /// Hosts of `--fleet-only`.
    #[arg(long, default_value_t = 16, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=256))]
    pub hosts: u64,
    /// Round trip added to every host of `--fleet-only`, in ms.
    #[arg(long, default_value_t = 40, value_name = "MS")]
    pub rtt_ms: u64,
    /// Also draw the report as an SVG chart: each search's median beside
    /// the raw fetch floor and the one-process-per-pane fetch.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["cache_only", "wait_only"])]
    pub svg: Option<std::path::PathBuf>,
}

/// Runs the bench and prints the report.
pub fn run(args: &BenchArgs) -> Result<(), String> {
    crate::testbed::private_server::kill_on_interrupt();
    if args.wait_only {
        let wait = wait::run(args.runs)?;
        let markdown = markdown::wait;
        return print_section(args, &wait, wait::print, markdown);
    }
    if args.fleet_only {
        let show = !args.json && !args.csv;
        let section = fleet::run(args.hosts as usize, args.rtt_ms, args.runs, show)?;
        return print_section(args, &section, fleet::print, fleet::markdown);
    }
    if args.journal_only {
        let section = journal::run(args.journal_mb, args.journal_seconds, args.runs.max(1))?;
        return print_section(args, &section, journal::print, journal::markdown);
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
    if args.daemon_only {
        let daemon = daemon::run(&fixture, runs)?;
        drop(fixture);
        return print_section(args, &daemon, daemon::print, daemon::markdown);
    }
    if args.http_only {
        let h = http::run(&fixture, runs)?;
        drop(fixture);
        return print_section(args, &h, http::print, http::markdown);
    }
    let socket = fixture.server.socket_name().to_owned();
    let first_pane = fixture.pane_ids.first().cloned().unwrap_or_default();
    if args.load_only {
        let load = load::run(&socket, args.lines, &first_pane, runs, true)?;
        drop(fixture);
        let markdown = load::markdown;
        return print_section(args, &load, load::print, markdown);
    }
    let cases = matrix::cases(args.lines);
    let steps = 4 + cases.len() as u64 + u64::from(!args.no_process_baseline) * 2;
    let bar = progress::steps(steps, !args.json && !args.csv);
    let floors = matrix::Floors::measure(
        args.lines,
        !args.no_process_baseline,
        &socket,
        &fixture.pane_ids,
        runs,
        &bar,
    )?;
    let rows = matrix::run_cases(&socket, &fixture.pane_ids, cases, runs, &floors, &bar)?;
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
        daemon,
        http,
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
        daemon,
        http,
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
    daemon: Option<daemon::DaemonBench>,
    http: Option<http::HttpBench>,
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
            daemon: Some(daemon::run(fixture, runs)?),
            http: Some(http::run(fixture, runs)?),
        })
    }
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
        table::print_csv(report);
    } else if args.markdown {
        print!("{}", markdown::report(report));
    } else {
        table::print_table(report);
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
        if let Some(d) = &report.daemon {
            daemon::print(d);
        }
        if let Some(h) = &report.http {
            http::print(h);
        }
    }
    Ok(())
}
