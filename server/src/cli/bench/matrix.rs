//! The search matrix: each search of [`cases`] through the real MCP front
//! end, every run paired with a raw fetch of the same range along the
//! faster single-connection path ([`crate::testbed::baseline`]), timed
//! right beside it.
//!
//! Must hold: a row's ratio is the median of its runs' ratios, so load
//! drifting between the floors' phase and a case's moves both halves of a
//! pair alike; a tool error is a result to report, not a reason to stop.

use std::time::{Duration, Instant};

use indicatif::ProgressBar;
use serde_json::{json, Value};

use super::report::{ms, BenchRow};
use crate::cli::client::McpClient;
use crate::testbed::baseline::{self, median, FetchRange, Fetched, FloorPath};
use crate::testbed::fixture::NEEDLE;

/// The searches of the matrix: (name, deep?, arguments).
pub(super) fn cases(lines: usize) -> Vec<(&'static str, bool, Value)> {
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

/// What fetching the bench's text costs without panescan: the floors the
/// searches are read against.
pub(super) struct Floors {
    pub(super) raw_visible: Fetched,
    pub(super) raw_deep: Fetched,
    /// The faster single-connection path, visible and deep: each search
    /// run is paired with a fetch along it.
    pub(super) visible_path: FloorPath,
    pub(super) deep_path: FloorPath,
    pub(super) deep_range: FetchRange,
    /// One tmux process per pane (absent with `--no-process-baseline`).
    pub(super) ppp_visible: Option<Fetched>,
    pub(super) ppp_deep: Option<Fetched>,
}

impl Floors {
    /// `per_pane`: also one tmux process per pane.
    pub(super) fn measure(
        lines: usize,
        per_pane: bool,
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
        let deep_range = FetchRange::Scrollback(lines as u64);
        let (raw_deep, deep_path) = baseline::raw_floor(socket, "main", panes, deep_range, runs)
            .map_err(|e| format!("raw fetch failed: {e}"))?;
        bar.inc(1);
        let (mut ppp_visible, mut ppp_deep) = (None, None);
        if per_pane {
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
pub(super) fn run_cases(
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
