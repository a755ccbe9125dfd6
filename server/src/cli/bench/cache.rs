//! `panescan bench` cache cases: a repeated deep search beside the cold one,
//! on the same server in the same run.
//!
//! Three medians, each of the same deep search (every history line of every
//! pane):
//!
//! - **cold**: no cache, every pane captured whole — the tmux-bound floor;
//! - **warm, nothing changed**: the cache primed by an earlier search and no
//!   pane printed since;
//! - **warm, 10% changed**: before each run a tenth of the panes (a
//!   different tenth every run) print 50 new lines each;
//! - **since, 1% changed**: the same search with `since` set to the cursor
//!   of the previous warm search, after a hundredth of the panes printed 50
//!   new lines each: only those lines are scanned.
//!
//! The three are interleaved run by run (a second apart, as between an
//! agent's commands), so load drifting on a shared machine moves them alike.
//! The searches run in-process through the same tool code `serve` runs, so
//! the cache's memory can be read. New lines are written to the panes'
//! terminals (`pane_tty`), exactly as if the programs in them printed.

use std::io::Write as _;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::cache::{CacheStats, PaneCache, DEFAULT_MAX_BYTES};
use crate::config::Ceilings;
use crate::testbed::baseline::median;
use crate::testbed::command_counter::CommandCounter;
use crate::testbed::fixture::{Fixture, NEEDLE};
use crate::tmux::spans::mark;
use crate::tools::context::ToolContext;
use crate::tools::search::{search_panes, SearchPanesArgs, SearchPanesResult};

/// Lines each changed pane prints before a "10% changed" run.
const NEW_LINES: usize = 50;

/// The cache section of the bench report.
#[derive(Debug, Clone, Serialize)]
pub struct CacheBench {
    /// Median cold deep search (cache empty), ms.
    pub cold_deep_ms: f64,
    /// Median warm search of unchanged panes, ms.
    pub warm_unchanged_ms: f64,
    /// Median warm search after some panes printed, ms.
    pub warm_changed_ms: f64,
    /// Panes that printed before each warm changed search.
    pub changed_panes: usize,
    /// Lines each of those panes printed.
    pub new_lines_per_changed_pane: usize,
    /// warm_unchanged_ms / cold_deep_ms.
    pub ratio_unchanged: f64,
    /// warm_changed_ms / cold_deep_ms.
    pub ratio_changed: f64,
    /// What the cache held at the end, bytes.
    pub cache_memory_bytes: usize,
    /// Panes the cache held at the end.
    pub cache_panes: usize,
    /// Captures served unchanged from the cache.
    pub reused: u64,
    /// Captures that fetched only new lines.
    pub delta: u64,
    /// Captures fetched in full.
    pub full: u64,
    /// Deltas that did not line up and were fetched in full.
    pub delta_rejected: u64,
    /// Every warm result listed the same matching lines as the cold one.
    pub same_hits: bool,
    /// Median since search (few panes printed), ms.
    pub since_ms: f64,
    /// Panes that printed before each since search.
    pub since_changed_panes: usize,
    /// since_ms / cold_deep_ms.
    pub ratio_since: f64,
    /// Every since search scanned exactly the new lines.
    pub since_exact: bool,
    /// Median cold regex search returning many lines (no cache), ms.
    pub cold_regex_ms: f64,
    /// Median of the same regex search, cache warm, nothing printed, ms.
    pub warm_regex_ms: f64,
    /// warm_regex_ms / cold_regex_ms.
    pub ratio_regex: f64,
    /// Lines the regex search returned (the last run).
    pub regex_lines: usize,
    /// tmux commands a warm search sent with nothing printed (the most of
    /// any run; tmux's command counter, every client's commands).
    pub warm_commands: u64,
}

fn context(socket_name: &str, cache: Option<Arc<PaneCache>>) -> ToolContext {
    ToolContext::read_only(
        crate::tmux::ServerSpec::named(socket_name),
        Ceilings::default(),
    )
    .with_pane_cache(cache)
}

/// A deep search for the needle, since `since` if given.
fn deep(
    ctx: &ToolContext,
    lines: usize,
    since: Option<String>,
) -> Result<SearchPanesResult, String> {
    let args = SearchPanesArgs {
        pattern: Some(NEEDLE.to_owned()),
        scrollback_lines: Some(lines as u64 + 1_000),
        max_matches: Some(10_000),
        since,
        ..SearchPanesArgs::default()
    };
    search_panes(ctx, &args).map_err(|e| format!("search failed: {e}"))
}

/// Matching lines per pane of the regex search: with 200 panes, ~6,000
/// lines (as the big-answer bench's).
const REGEX_PER_PANE: u64 = 30;

/// A deep regex search returning [`REGEX_PER_PANE`] lines of every pane
/// (paths in compiler messages, tracebacks, logs).
fn deep_regex(ctx: &ToolContext, panes: usize, lines: usize) -> Result<SearchPanesResult, String> {
    let args = SearchPanesArgs {
        pattern: Some("s[r]c".to_owned()),
        regex: true,
        limit: Some(panes),
        scrollback_lines: Some(lines as u64 + 1_000),
        max_matches: Some(10_000),
        max_matches_per_pane: Some(REGEX_PER_PANE),
        ..SearchPanesArgs::default()
    };
    search_panes(ctx, &args).map_err(|e| format!("search failed: {e}"))
}

/// The hits of a deep search for the needle: (pane, line, text).
fn deep_search(ctx: &ToolContext, lines: usize) -> Result<Vec<(String, i64, String)>, String> {
    Ok(hits(&deep(ctx, lines, None)?))
}

fn hits(result: &SearchPanesResult) -> Vec<(String, i64, String)> {
    result
        .matches
        .iter()
        .flat_map(|p| {
            p.lines
                .iter()
                .map(move |l| (p.pane_id.to_string(), l.line, l.text.clone()))
        })
        .collect()
}

fn ms(d: Duration) -> f64 {
    (d.as_secs_f64() * 1e5).round() / 1e2
}

fn ratio(a: Duration, b: Duration) -> f64 {
    if b.is_zero() {
        0.0
    } else {
        (a.as_secs_f64() / b.as_secs_f64() * 1e3).round() / 1e3
    }
}

/// Prints `count` new lines (ending in `mark`) on the terminal of `tty`.
fn print_on_tty(tty: &str, run: usize, pane: &str, mark: &str) -> Result<(), String> {
    let mut text = String::new();
    for i in 0..NEW_LINES {
        text.push_str(&format!(
            "run {run} line {i} of {pane}: cargo build finished, 3 warnings, the output goes on\n"
        ));
    }
    text.push_str(mark);
    text.push('\n');
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .open(tty)
        .map_err(|e| format!("cannot open {tty}: {e}"))?;
    f.write_all(text.as_bytes())
        .map_err(|e| format!("cannot write to {tty}: {e}"))
}

/// Waits until every pane in `panes` shows `mark`.
fn wait_for_mark(fixture: &Fixture, panes: &[(String, String)], mark: &str) -> Result<(), String> {
    let deadline = Instant::now() + Duration::from_secs(30);
    for (pane, _) in panes {
        loop {
            let screen = fixture
                .server
                .run_ok(["capture-pane", "-p", "-t", pane])
                .map_err(|e| e.to_string())?;
            if screen.contains(mark) {
                break;
            }
            if Instant::now() > deadline {
                return Err(format!("{pane} never printed {mark}"));
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }
    Ok(())
}

/// The panes' terminals, to print on: `(pane id, tty path)`.
fn pane_ttys(fixture: &Fixture) -> Result<Vec<(String, String)>, String> {
    let listing = fixture
        .server
        .run_ok([
            "list-panes",
            "-s",
            "-t",
            "main",
            "-F",
            "#{pane_id} #{pane_tty}",
        ])
        .map_err(|e| e.to_string())?;
    Ok(listing
        .lines()
        .filter_map(|l| {
            let (pane, tty) = l.split_once(' ')?;
            Some((pane.to_owned(), tty.to_owned()))
        })
        .collect())
}

/// `count` panes from `skip` on (cycling) print NEW_LINES and a mark
/// unique to `run`; returns once every one shows its mark.
fn print_in(
    fixture: &Fixture,
    ttys: &[(String, String)],
    (skip, count): (usize, usize),
    run: usize,
    mark: &str,
) -> Result<(), String> {
    let chosen: Vec<(String, String)> = ttys
        .iter()
        .cycle()
        .skip(skip)
        .take(count)
        .cloned()
        .collect();
    let mark = format!("{mark}-{run}");
    for (pane, tty) in &chosen {
        print_on_tty(tty, run, pane, &mark)?;
    }
    wait_for_mark(fixture, &chosen, &mark)
}

/// Runs the three cases, `runs` times each.
pub fn run(fixture: &Fixture, runs: usize) -> Result<CacheBench, String> {
    let socket = fixture.server.socket_name().to_owned();
    let lines = fixture.shape.lines;
    let runs = runs.max(1);
    let cold_ctx = context(&socket, None);
    let cache = Arc::new(PaneCache::new(DEFAULT_MAX_BYTES));
    let warm_ctx = context(&socket, Some(cache.clone()));

    let ttys = pane_ttys(fixture)?;
    let tenth = (ttys.len() / 10).max(1);

    // Prime the cache a second after the fill.
    let reference = deep_search(&cold_ctx, lines)?;
    std::thread::sleep(Duration::from_millis(1_100));
    let mut same_hits = deep_search(&warm_ctx, lines)? == reference;

    // The cases interleaved, so load drifting on a shared machine moves
    // them alike. A run starts a second after the last output, as between
    // an agent's commands.
    let (mut cold, mut unchanged, mut changed) = (Vec::new(), Vec::new(), Vec::new());
    let (mut since, mut since_exact) = (Vec::new(), true);
    let (mut regex_cold, mut regex_warm, mut regex_lines) = (Vec::new(), Vec::new(), 0);
    let mut counter = CommandCounter::attach(&fixture.server)?;
    let mut warm_commands = 0;
    // The regex search primes its own captures (joined lines, all history).
    deep_regex(&warm_ctx, ttys.len(), lines)?;
    let hundredth = (ttys.len() / 100).max(1);
    for run in 0..runs {
        std::thread::sleep(Duration::from_millis(1_050));
        mark("cold");
        let start = Instant::now();
        let cold_hits = deep_search(&cold_ctx, lines)?;
        cold.push(start.elapsed());

        // Nothing changed since the last warm search.
        mark("warm, nothing changed");
        let start = Instant::now();
        let warm_hits = deep_search(&warm_ctx, lines)?;
        unchanged.push(start.elapsed());
        same_hits &= warm_hits == cold_hits;

        // The same again, counted in tmux commands (untimed: the
        // counter's own round trips would be in the time).
        let (commands, again) = counter.during(|| deep_search(&warm_ctx, lines))?;
        same_hits &= again? == cold_hits;
        warm_commands = warm_commands.max(commands);

        // A regex returning many lines, cold and warm.
        mark("cold regex");
        let start = Instant::now();
        let cold_regex = deep_regex(&cold_ctx, ttys.len(), lines)?;
        regex_cold.push(start.elapsed());
        mark("warm regex, nothing changed");
        let start = Instant::now();
        let warm_regex = deep_regex(&warm_ctx, ttys.len(), lines)?;
        regex_warm.push(start.elapsed());
        same_hits &= hits(&warm_regex) == hits(&cold_regex);
        regex_lines = hits(&warm_regex).len();

        // A tenth of the panes (another tenth each run) print NEW_LINES.
        print_in(
            fixture,
            &ttys,
            (run * tenth, tenth),
            run,
            "bench-cache-mark",
        )?;
        mark("warm, changed");
        let start = Instant::now();
        let result = deep(&warm_ctx, lines, None)?;
        changed.push(start.elapsed());
        // The new lines hold no needle, but the hits' line numbers move up
        // in the changed panes: compare with a cold search of this state.
        mark("cold, to compare");
        same_hits &= hits(&result) == deep_search(&cold_ctx, lines)?;

        // The cursor comes from a search a second after the last output
        // (unmeasured): the panes the row above captured in the second
        // they printed are doubtful to the cache (tmux dates activity to
        // the second) and would be fetched again by the next search
        // whatever it is; this row measures a since search with only a
        // hundredth of the panes changed since its cursor.
        std::thread::sleep(Duration::from_millis(1_050));
        mark("settle");
        let settled = deep(&warm_ctx, lines, None)?;
        let some = (run * hundredth + ttys.len() / 2, hundredth);
        print_in(fixture, &ttys, some, run, "bench-since-mark")?;
        mark("since");
        let start = Instant::now();
        let result = deep(&warm_ctx, lines, Some(settled.cursor))?;
        since.push(start.elapsed());
        since_exact &= result.total_panes_matched == 0
            && result.since_panes.is_empty()
            && result.lines_scanned == (hundredth * (NEW_LINES + 1)) as u64;
    }

    let (cold, unchanged, changed, since) = (
        median(&mut cold),
        median(&mut unchanged),
        median(&mut changed),
        median(&mut since),
    );
    let (regex_cold, regex_warm) = (median(&mut regex_cold), median(&mut regex_warm));
    let stats: CacheStats = cache.stats();
    Ok(CacheBench {
        cold_deep_ms: ms(cold),
        warm_unchanged_ms: ms(unchanged),
        warm_changed_ms: ms(changed),
        changed_panes: tenth,
        new_lines_per_changed_pane: NEW_LINES,
        ratio_unchanged: ratio(unchanged, cold),
        ratio_changed: ratio(changed, cold),
        cache_memory_bytes: cache.memory_bytes(),
        cache_panes: cache.len(),
        reused: stats.reused,
        delta: stats.delta,
        full: stats.full,
        delta_rejected: stats.delta_rejected,
        same_hits,
        since_ms: ms(since),
        since_changed_panes: hundredth,
        ratio_since: ratio(since, cold),
        since_exact,
        cold_regex_ms: ms(regex_cold),
        warm_regex_ms: ms(regex_warm),
        ratio_regex: ratio(regex_warm, regex_cold),
        regex_lines,
        warm_commands,
    })
}

/// The table lines of the cache section.
pub fn print(c: &CacheBench) {
    println!();
    println!("pane cache (same deep search, in-process, median):");
    println!(
        "  cold (no cache)                 {:>9.1} ms",
        c.cold_deep_ms
    );
    println!(
        "  warm, nothing changed           {:>9.1} ms  {:.3}x cold",
        c.warm_unchanged_ms, c.ratio_unchanged
    );
    println!(
        "  warm, {} panes printed {} lines {:>9.1} ms  {:.3}x cold",
        c.changed_panes, c.new_lines_per_changed_pane, c.warm_changed_ms, c.ratio_changed
    );
    println!(
        "  since the last, {} panes printed {} {:>9.1} ms  {:.3}x cold (only the new lines scanned: {})",
        c.since_changed_panes, c.new_lines_per_changed_pane, c.since_ms, c.ratio_since, c.since_exact
    );
    println!(
        "  regex, {} lines: cold {:.1} ms, warm {:.1} ms  {:.3}x cold",
        c.regex_lines, c.cold_regex_ms, c.warm_regex_ms, c.ratio_regex
    );
    println!(
        "  tmux commands a warm search sent, nothing printed: {}",
        c.warm_commands
    );
    println!(
        "  cache memory {:.1} MiB for {} panes; reused {}, delta {}, full {}, delta rejected {}; hits identical to cold: {}",
        c.cache_memory_bytes as f64 / (1u64 << 20) as f64,
        c.cache_panes,
        c.reused,
        c.delta,
        c.full,
        c.delta_rejected,
        c.same_hits
    );
}
