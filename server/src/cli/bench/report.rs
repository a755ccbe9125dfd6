//! The report `panescan bench` fills: the search matrix's rows and the
//! floors they are read against, with each later section's own results.
//! Data only: the sections fill it, `table`, `markdown` and `chart` print
//! it.

use std::time::Duration;

use serde::Serialize;

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
    pub cache: Option<super::cache::CacheBench>,
    /// wait_for_text latency, event stream vs polling.
    pub wait: Option<super::wait::WaitBench>,
    /// Cheap calls while deep searches run.
    pub load: Option<super::load::LoadBench>,
    /// Big answers: search end to first byte, and repeated.
    pub big: Option<super::big::BigBench>,
    /// A new session through the daemon: warm first search, start, 16 at once.
    pub daemon: Option<super::daemon::DaemonBench>,
    /// search_panes over HTTP beside stdio.
    pub http: Option<super::http::HttpBench>,
}

/// Milliseconds, rounded to two decimals.
pub(super) fn ms(d: Duration) -> f64 {
    (d.as_secs_f64() * 1e5).round() / 1e2
}
