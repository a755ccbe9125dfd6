//! The pane cache never changes an answer: random output, history clears,
//! resizes, respawns and history-limit trims between searches on a private
//! tmux server, and after every step the search with the cache on must be
//! identical to the same search with the cache off. Some output repeats
//! with no marker in the text (blank lines, one line over and over, short
//! cycles), trimmed at the limit in the search's second or a later one,
//! cleared and printed again, or rewrapped by a resize and back: rows that
//! match at more than one offset, where a splice on the wrong one changes
//! line numbers. Failing cases found so far are kept in
//! pane_cache.proptest-regressions and replayed first.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use panescan::testing::cache::PaneCache;
use panescan::testing::config::Ceilings;
use panescan::testing::private_server::PrivateServer;
use panescan::testing::tools::capture::{CapturePane, CaptureSince};
use panescan::testing::tools::context::ToolContext;
use panescan::testing::tools::registry::Tool;
use panescan::testing::tools::search::{search_panes, SearchPanesArgs};
use proptest::prelude::*;

fn context(socket_name: &str, cache: Option<Arc<PaneCache>>) -> ToolContext {
    ToolContext::read_only(
        panescan::testing::tmux::ServerSpec::named(socket_name),
        Ceilings::default(),
    )
    .with_pane_cache(cache)
}

/// `ctx` as `serve --no-events` runs it (the same pane cache).
fn without_events(ctx: &ToolContext) -> ToolContext {
    let mut quiet = ctx.clone();
    let mut config = (*ctx.config).clone();
    config.wait_events = false;
    quiet.config = Arc::new(config);
    quiet
}

/// A private server whose panes each print whatever is written to their
/// FIFO (`cat` holding it open), with different history limits.
struct Bench {
    server: PrivateServer,
    panes: Vec<String>,
    fifos: Vec<PathBuf>,
    marks: u64,
    /// Titles set to tell when unmarked output has been read by tmux.
    syncs: u64,
    /// The block of [`BLOCKS`] each pane printed last.
    last_block: Vec<usize>,
}

impl Drop for Bench {
    fn drop(&mut self) {
        self.server.kill();
        for f in &self.fifos {
            let _ = std::fs::remove_file(f);
        }
    }
}

const HISTORY_LIMITS: [u64; 3] = [60, 200, 5_000];

impl Bench {
    fn start() -> Bench {
        Bench::start_with("cache-prop", &HISTORY_LIMITS)
    }

    /// One 40x10 window per history limit, each running `cat` of a FIFO.
    fn start_with(label: &str, limits: &[u64]) -> Bench {
        let server = PrivateServer::start(label, 40, 10).unwrap();
        let mut bench = Bench {
            server,
            panes: Vec::new(),
            fifos: Vec::new(),
            marks: 0,
            syncs: 0,
            last_block: vec![0; limits.len()],
        };
        // Window names must not move under the comparison.
        bench
            .server
            .run_ok(["set-option", "-g", "automatic-rename", "off"])
            .unwrap();
        for (i, limit) in limits.iter().enumerate() {
            let fifo =
                std::env::temp_dir().join(format!("{}-{i}.fifo", bench.server.socket_name()));
            let status = std::process::Command::new("mkfifo")
                .arg(&fifo)
                .status()
                .unwrap();
            assert!(status.success());
            bench.fifos.push(fifo.clone());
            bench
                .server
                .run_ok(["set-option", "-g", "history-limit", &limit.to_string()])
                .unwrap();
            let pane = bench
                .server
                .run_ok([
                    "new-window",
                    "-d",
                    "-n",
                    &format!("p{i}"),
                    "-P",
                    "-F",
                    "#{pane_id}",
                    &format!("exec 3<>'{}'; exec cat <&3", fifo.display()),
                ])
                .unwrap()
                .trim()
                .to_owned();
            bench.panes.push(pane);
        }
        bench
            .server
            .run_ok(["kill-window", "-t", "main:0"])
            .unwrap();
        bench
    }

    /// Prints `lines` in pane `i` and waits until tmux has all of them.
    fn print(&mut self, i: usize, lines: &[String]) {
        self.marks += 1;
        let mark = format!("MARK-{}-{}", i, self.marks);
        let mut text = lines.join("\n");
        text.push('\n');
        text.push_str(&mark);
        text.push('\n');
        let mut fifo = std::fs::OpenOptions::new()
            .write(true)
            .open(&self.fifos[i])
            .unwrap();
        fifo.write_all(text.as_bytes()).unwrap();
        drop(fifo);
        self.wait_for(i, &mark);
    }

    /// Prints `lines` in pane `i` with no marker in the text: the pane's
    /// title (an OSC 2 sequence after the lines, no text in the grid) tells
    /// when tmux has read all of them, so repeated lines stay ambiguous.
    fn print_unmarked(&mut self, i: usize, lines: &[String]) {
        self.syncs += 1;
        let title = format!("sync-{}", self.syncs);
        let mut text = String::new();
        for line in lines {
            text.push_str(line);
            text.push('\n');
        }
        text.push_str(&format!("\x1b]2;{title}\x1b\\"));
        let mut fifo = std::fs::OpenOptions::new()
            .write(true)
            .open(&self.fifos[i])
            .unwrap();
        fifo.write_all(text.as_bytes()).unwrap();
        drop(fifo);
        let deadline = Instant::now() + Duration::from_secs(10);
        while self.format(i, "#{pane_title}") != title {
            assert!(Instant::now() < deadline, "{title} never showed");
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// A format expanded for pane `i`.
    fn format(&self, i: usize, format: &str) -> String {
        self.server
            .run_ok(["display-message", "-p", "-t", &self.panes[i], format])
            .unwrap()
            .trim_end_matches('\n')
            .to_owned()
    }

    /// History size and cursor of pane `i`, as tmux reports them.
    fn history_and_cursor(&self, i: usize) -> (u64, String) {
        let out = self.format(i, "#{history_size} #{cursor_x},#{cursor_y}");
        let (size, cursor) = out.split_once(' ').unwrap();
        (size.parse().unwrap(), cursor.to_owned())
    }

    fn wait_for(&self, i: usize, mark: &str) {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let screen = self
                .server
                .run_ok(["capture-pane", "-p", "-J", "-t", &self.panes[i]])
                .unwrap();
            if screen.contains(mark) {
                return;
            }
            assert!(Instant::now() < deadline, "{mark} never showed");
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    fn apply(&mut self, op: &Op, cached: &ToolContext) {
        match op {
            Op::Print { pane, lines } => self.print(*pane, lines),
            Op::Clear { pane } => {
                self.server
                    .run_ok(["clear-history", "-t", &self.panes[*pane]])
                    .unwrap();
            }
            Op::Resize {
                pane,
                width,
                height,
            } => self.resize(*pane, *width, *height),
            Op::Respawn { pane } => {
                let before = self.pid(*pane);
                self.server
                    .run_ok(["respawn-pane", "-k", "-t", &self.panes[*pane]])
                    .unwrap();
                let deadline = Instant::now() + Duration::from_secs(10);
                while self.pid(*pane) == before || self.command(*pane) != "cat" {
                    assert!(Instant::now() < deadline, "respawn did not happen");
                    std::thread::sleep(Duration::from_millis(10));
                }
            }
            Op::Idle => wait_past_second(now_secs()),
            Op::Blocks {
                pane,
                block,
                before,
                lines,
                after,
            } => {
                let mut text = self.repeated(*pane, *block, *before);
                text.extend(lines.iter().cloned());
                text.extend(self.repeated(*pane, *block, *after));
                self.print_unmarked(*pane, &text);
            }
            Op::Trim {
                pane,
                block,
                extra,
                how,
            } => self.trim(*pane, *block, *extra, *how, cached),
            Op::ClearRefill { pane, block, extra } => {
                let (history, _) = self.history_and_cursor(*pane);
                self.server
                    .run_ok(["clear-history", "-t", &self.panes[*pane]])
                    .unwrap();
                let rows = usize::try_from(history).unwrap() + extra;
                let text = self.repeated(*pane, *block, rows);
                self.print_unmarked(*pane, &text);
            }
            Op::ResizeBack {
                pane,
                width,
                height,
                block,
                times,
            } => {
                let size = self.format(*pane, "#{pane_width} #{pane_height}");
                let (w, h) = size.split_once(' ').unwrap();
                self.resize(*pane, *width, *height);
                if *times > 0 {
                    let text = self.repeated(*pane, *block, *times);
                    self.print_unmarked(*pane, &text);
                }
                self.resize(*pane, w.parse().unwrap(), h.parse().unwrap());
            }
        }
    }

    fn resize(&self, pane: usize, width: u16, height: u16) {
        self.server
            .run_ok([
                "resize-window",
                "-t",
                &self.panes[pane],
                "-x",
                &width.to_string(),
                "-y",
                &height.to_string(),
            ])
            .unwrap();
    }

    /// `rows` lines of `block`, or of the block pane `i` printed last.
    fn repeated(&mut self, i: usize, block: Option<usize>, rows: usize) -> Vec<String> {
        let block = block.unwrap_or(self.last_block[i]);
        self.last_block[i] = block;
        BLOCKS[block]
            .iter()
            .cycle()
            .take(rows)
            .map(|l| (*l).to_owned())
            .collect()
    }

    /// Prints rows of `block` until pane `i` is past its history limit by
    /// `extra` percent of two trims, and checks that tmux trimmed. With
    /// `same_second`, a cached search runs first and the rows are printed
    /// in the second it ran in (the cache cannot reuse on activity then);
    /// else in a later second. With `stored`, the pane is first filled to
    /// just under its limit, where tmux may trim next, and searched (the
    /// cache then holds it whole); then rows past the limit (`past`: tmux
    /// trims, a delta cannot hold) or a few that stay under it (a delta
    /// must tell that no trim happened). With no block (`None`) the rows
    /// are distinct numbered lines, which a delta can place exactly; a
    /// block's rows repeat, which it may not.
    fn trim(&mut self, i: usize, block: Block, extra: u8, how: TrimHow, cached: &ToolContext) {
        let state = self.format(
            i,
            "#{history_size} #{history_limit} #{cursor_y} #{pane_height}",
        );
        let n: Vec<u64> = state.split(' ').map(|f| f.parse().unwrap()).collect();
        let (history, limit, cursor_y, height) = (n[0], n[1], n[2], n[3]);
        let tenth = (limit / 10).max(1);
        let extra = (u64::from(extra) * 2 * tenth / 100).max(1);
        // Rows until the cursor reaches the bottom, then until the history
        // is full, then past it.
        let to_bottom = height - 1 - cursor_y;
        let to_limit = limit.saturating_sub(history);
        if !how.stored {
            wait_past_second(now_secs());
            if how.same_second {
                search(cached, true, 1_000_000);
            }
            let rows = usize::try_from(to_bottom + to_limit + extra).unwrap();
            let text = self.trim_rows(i, block, rows);
            self.print_unmarked(i, &text);
            let (after, _) = self.history_and_cursor(i);
            assert!(
                after < history.max(limit) + extra,
                "no trim: history {history} -> {after}, limit {limit}, {rows} rows"
            );
            return;
        }
        let fill = to_bottom + to_limit.saturating_sub(tenth / 2 + 1);
        let text = self.trim_rows(i, block, usize::try_from(fill).unwrap());
        self.print_unmarked(i, &text);
        wait_past_second(now_secs());
        search(cached, true, 1_000_000);
        if !how.same_second {
            wait_past_second(now_secs());
        }
        let (full, _) = self.history_and_cursor(i);
        let under = limit.saturating_sub(full + 1);
        let rows = if how.past {
            limit.saturating_sub(full) + extra
        } else {
            extra.min(under)
        };
        let text = self.trim_rows(i, block, usize::try_from(rows).unwrap());
        self.print_unmarked(i, &text);
        let (after, _) = self.history_and_cursor(i);
        if how.past {
            assert!(
                after < full + rows,
                "no trim: history {full} -> {after}, limit {limit}, {rows} rows"
            );
        } else {
            assert_eq!(after, full + rows, "a trim under the limit {limit}");
        }
    }

    /// `rows` rows for [`Bench::trim`]: of `block`, or numbered lines.
    fn trim_rows(&mut self, i: usize, block: Block, rows: usize) -> Vec<String> {
        if block.is_some() {
            return self.repeated(i, block, rows);
        }
        self.marks += 1;
        let marks = self.marks;
        (0..rows).map(|k| format!("T{marks}-{k}")).collect()
    }

    fn pid(&self, pane: usize) -> String {
        self.server
            .run_ok([
                "display-message",
                "-p",
                "-t",
                &self.panes[pane],
                "#{pane_pid}",
            ])
            .unwrap()
    }

    fn command(&self, pane: usize) -> String {
        self.server
            .run_ok([
                "display-message",
                "-p",
                "-t",
                &self.panes[pane],
                "#{pane_current_command}",
            ])
            .unwrap()
            .trim()
            .to_owned()
    }

    fn socket_name(&self) -> &str {
        self.server.socket_name()
    }
}

#[derive(Debug, Clone)]
enum Op {
    Print {
        pane: usize,
        lines: Vec<String>,
    },
    Clear {
        pane: usize,
    },
    Resize {
        pane: usize,
        width: u16,
        height: u16,
    },
    Respawn {
        pane: usize,
    },
    /// Wait past the second boundary, so unchanged panes are reused.
    Idle,
    /// Rows of a block, a few other lines, rows of the block again, with
    /// no marker: rows that repeat (so they match at more than one offset)
    /// around rows that do not.
    Blocks {
        pane: usize,
        block: Block,
        before: usize,
        lines: Vec<String>,
        after: usize,
    },
    /// Rows of a block (or distinct lines) until the history limit is
    /// passed and tmux trims.
    Trim {
        pane: usize,
        block: Block,
        /// How far past the limit, in percent of two trims.
        extra: u8,
        how: TrimHow,
    },
    /// clear-history, then as many rows of a block as the history held
    /// and `extra` more: the old anchor's row is filled again.
    ClearRefill {
        pane: usize,
        block: Block,
        extra: usize,
    },
    /// Resized and back to its size before the next search, with `times`
    /// copies of a block printed while resized (0: none).
    ResizeBack {
        pane: usize,
        width: u16,
        height: u16,
        block: Block,
        times: usize,
    },
}

/// When a Trim's rows are printed, and whether they pass the limit.
#[derive(Debug, Clone, Copy)]
struct TrimHow {
    /// In the second of a cached search (else a later one).
    same_second: bool,
    /// Filled to just under the limit and searched first.
    stored: bool,
    /// With `stored`: past the limit (else still under it).
    past: bool,
}

/// Blocks printed without markers: blank lines, one repeated line, a
/// short cycle (rows no wider than any width the panes take, so one row
/// each). Few of them, so that ops print the same one often.
const BLOCKS: [&[&str]; 3] = [&[""], &["z"], &["== ==", ""]];

/// A block of [`BLOCKS`], or `None`: the one the pane printed last (a
/// program printing the same thing again).
type Block = Option<usize>;

fn block() -> impl Strategy<Value = Block> {
    prop_oneof![2 => Just(None), 1 => (0..BLOCKS.len()).prop_map(Some)]
}

fn line() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => "[a-z ]{0,30}",
        3 => "[a-z0-9]{30,90}",
        1 => "[a-c]{0,3}[一二三四]{1,30}",
        1 => Just("ok".to_owned()),
        1 => Just(String::new()),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    let pane = 0..HISTORY_LIMITS.len();
    prop_oneof![
        5 => (pane.clone(), prop::collection::vec(line(), 1..150))
            .prop_map(|(pane, lines)| Op::Print { pane, lines }),
        1 => pane.clone().prop_map(|pane| Op::Clear { pane }),
        1 => (pane.clone(), 25u16..60, 6u16..14)
            .prop_map(|(pane, width, height)| Op::Resize { pane, width, height }),
        1 => pane.clone().prop_map(|pane| Op::Respawn { pane }),
        1 => Just(Op::Idle),
        6 => (pane.clone(), block(), 0usize..150, prop::collection::vec("[a-z]{1,12}", 0..4), 0usize..150)
            .prop_map(|(pane, block, before, lines, after)| Op::Blocks { pane, block, before, lines, after }),
        3 => (pane.clone(), block(), 1u8..100, any::<(bool, bool, bool)>())
            .prop_map(|(pane, block, extra, (same_second, stored, past))| {
                Op::Trim { pane, block, extra, how: TrimHow { same_second, stored, past } }
            }),
        3 => (pane.clone(), block(), 0usize..80)
            .prop_map(|(pane, block, extra)| Op::ClearRefill { pane, block, extra }),
        2 => (pane, 5u16..60, 2u16..14, block(), prop_oneof![Just(0usize), 1usize..300])
            .prop_map(|(pane, width, height, block, times)| Op::ResizeBack { pane, width, height, block, times }),
    ]
}

/// One search, as JSON without the timing.
fn search(ctx: &ToolContext, join_wrapped: bool, scrollback: u64) -> serde_json::Value {
    let args = SearchPanesArgs {
        pattern: Some(".".to_owned()),
        regex: true,
        join_wrapped: Some(join_wrapped),
        scrollback_lines: Some(scrollback),
        max_matches: Some(10_000),
        max_matches_per_pane: Some(10_000),
        context_lines: Some(1),
        ..SearchPanesArgs::default()
    };
    let result = search_panes(ctx, &args).unwrap_or_else(|e| panic!("search failed: {e}"));
    let mut value = serde_json::to_value(result).unwrap();
    value.as_object_mut().unwrap().remove("elapsed_ms");
    value
}

/// capture_pane of `pane` over a range, as JSON.
fn capture_pane(ctx: &ToolContext, pane: &str, range: serde_json::Value) -> serde_json::Value {
    let mut args = range;
    args["pane_id"] = serde_json::json!(pane);
    let args = serde_json::from_value(args).unwrap();
    let result = CapturePane::run(ctx, args).unwrap_or_else(|e| panic!("capture failed: {e}"));
    serde_json::to_value(result).unwrap()
}

/// capture_since of `pane` from `cursor`, as JSON; the new cursor is kept.
fn capture_since(ctx: &ToolContext, pane: &str, cursor: &mut Option<String>) -> serde_json::Value {
    let args = serde_json::from_value(serde_json::json!({
        "pane_id": pane,
        "cursor": cursor.clone(),
        "max_lines": 10_000,
    }))
    .unwrap();
    let result =
        CaptureSince::run(ctx, args).unwrap_or_else(|e| panic!("capture_since failed: {e}"));
    let value = serde_json::to_value(result).unwrap();
    *cursor = value["cursor"].as_str().map(str::to_owned);
    value
}

/// Cursors of capture_since, per pane, with the cache on and off.
type Cursors = Vec<(Option<String>, Option<String>)>;

fn check_captures(
    bench: &Bench,
    cached: &ToolContext,
    cold: &ToolContext,
    cursors: &mut Cursors,
    step: &str,
) {
    let ranges = [
        serde_json::json!({}),
        serde_json::json!({"start": -40, "join_wrapped": true}),
        serde_json::json!({"start": -1000, "end": -3}),
        serde_json::json!({"start": -25, "end": 2, "join_wrapped": true}),
    ];
    for (i, pane) in bench.panes.iter().enumerate() {
        for range in &ranges {
            let warm = capture_pane(cached, pane, range.clone());
            let fresh = capture_pane(cold, pane, range.clone());
            if warm != fresh {
                panic!(
                    "capture_pane {pane} {range} differs after {step}: {}",
                    first_difference(&warm, &fresh, "")
                );
            }
        }
        let (warm_cursor, cold_cursor) = &mut cursors[i];
        let warm = capture_since(cached, pane, warm_cursor);
        let fresh = capture_since(cold, pane, cold_cursor);
        if warm != fresh {
            panic!(
                "capture_since {pane} differs after {step}: {}",
                first_difference(&warm, &fresh, "")
            );
        }
    }
}

/// Searches with the cache on and off. The whole-history searches come
/// last, so the entries a step leaves hold whole histories: the next
/// step's fetches are deltas spliced onto all of it (an entry holding only
/// the screen cannot serve a deep search, which would be fetched whole).
///
/// Half the cached searches run as `serve --no-events` runs them, on the
/// same cache: with and without the event stream, one cache.
fn check(bench: &Bench, cached: &ToolContext, cold: &ToolContext, step: &str) {
    let quiet = without_events(cached);
    for (n, (join, scrollback)) in [
        (true, 0),
        (false, 25),
        (true, 1_000_000),
        (false, 1_000_000),
    ]
    .into_iter()
    .enumerate()
    {
        let warm = search(if n % 2 == 0 { cached } else { &quiet }, join, scrollback);
        let fresh = search(cold, join, scrollback);
        if warm != fresh {
            panic!(
                "cache on and off differ after {step} (join {join}, scrollback {scrollback}) on {}: {}",
                bench.socket_name(),
                first_difference(&warm, &fresh, "")
            );
        }
    }
}

/// Where two JSON values first differ, and how.
fn first_difference(a: &serde_json::Value, b: &serde_json::Value, path: &str) -> String {
    use serde_json::Value;
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for (k, v) in x {
                match y.get(k) {
                    Some(w) if v == w => {}
                    Some(w) => return first_difference(v, w, &format!("{path}.{k}")),
                    None => return format!("{path}.{k} only with the cache"),
                }
            }
            format!("{path}: keys differ")
        }
        (Value::Array(x), Value::Array(y)) => {
            for (i, (v, w)) in x.iter().zip(y).enumerate() {
                if v != w {
                    return first_difference(v, w, &format!("{path}[{i}]"));
                }
            }
            format!(
                "{path}: {} items with the cache, {} without",
                x.len(),
                y.len()
            )
        }
        _ => format!("{path}: {a} with the cache, {b} without"),
    }
}

/// Trim steps run, and how the trimmed pane's first fetch after each was
/// served (a delta accepted, a delta rejected), over every case: what the
/// Trim generator reaches, printed.
static TRIMS: AtomicU64 = AtomicU64::new(0);
static TRIM_DELTAS: AtomicU64 = AtomicU64::new(0);
static TRIM_REJECTED: AtomicU64 = AtomicU64::new(0);

/// The trimmed pane's whole history, captured with the cache on and off
/// (the same), and how the cache fetched it, counted.
fn trimmed_fetch(
    bench: &Bench,
    cache: &PaneCache,
    cached: &ToolContext,
    cold: &ToolContext,
    i: usize,
    step: &str,
) {
    let range = serde_json::json!({"start": -5000, "join_wrapped": true});
    let before = stats_of(cache);
    let warm = capture_pane(cached, &bench.panes[i], range.clone());
    let after = stats_of(cache);
    let fresh = capture_pane(cold, &bench.panes[i], range);
    assert!(
        warm == fresh,
        "the trimmed pane differs after {step}: {}",
        first_difference(&warm, &fresh, "")
    );
    TRIMS.fetch_add(1, Ordering::Relaxed);
    TRIM_DELTAS.fetch_add(after.delta - before.delta, Ordering::Relaxed);
    TRIM_REJECTED.fetch_add(
        after.delta_rejected - before.delta_rejected,
        Ordering::Relaxed,
    );
}

fn stats_of(cache: &PaneCache) -> panescan::testing::cache::CacheStats {
    cache.stats()
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 24,
        // Beside this file, whatever binary it is built into (proptest's
        // default would be a proptest-regressions/ folder beside the
        // group's main.rs).
        failure_persistence: Some(Box::new(
            prop::test_runner::FileFailurePersistence::WithSource("proptest-regressions"),
        )),
        .. ProptestConfig::default()
    })]

    #[test]
    fn searches_are_identical_with_the_cache_on_and_off(ops in prop::collection::vec(op(), 4..16)) {
        let mut bench = Bench::start();
        let cache = Arc::new(PaneCache::new(64 << 20));
        let cached = context(bench.socket_name(), Some(cache.clone()));
        let cold = context(bench.socket_name(), None);
        let mut cursors: Cursors = vec![(None, None); bench.panes.len()];
        check_captures(&bench, &cached, &cold, &mut cursors, "start");
        check(&bench, &cached, &cold, "start");
        for (n, op) in ops.iter().enumerate() {
            bench.apply(op, &cached);
            let step = format!("step {n}: {op:?}");
            if let Op::Trim { pane, .. } = op {
                trimmed_fetch(&bench, &cache, &cached, &cold, *pane, &step);
            }
            check_captures(&bench, &cached, &cold, &mut cursors, &step);
            check(&bench, &cached, &cold, &step);
        }
        // After an idle second nothing changed: the searches serve panes
        // from stored text without asking tmux (the captures above, which
        // hit the cache on their own, do not count; a pane whose last
        // output shared the second of its last search may still be
        // fetched again, a delta or whole).
        wait_past_second(now_secs());
        let idle = stats_of(&cache);
        check(&bench, &cached, &cold, "idle");
        let after = stats_of(&cache);
        prop_assert!(
            after.reused > idle.reused,
            "the searches after an idle second were not served from the cache: {idle:?} -> {after:?}"
        );
        eprintln!(
            "cache: {:?}; so far {} Trim steps: the trimmed pane's next fetch a delta accepted {} times, rejected {}",
            stats_of(&cache),
            TRIMS.load(Ordering::Relaxed),
            TRIM_DELTAS.load(Ordering::Relaxed),
            TRIM_REJECTED.load(Ordering::Relaxed)
        );
    }
}

/// The cache does its job: after an idle second an unchanged server is
/// served without captures, and a pane that printed is served from a delta.
#[test]
fn unchanged_panes_are_reused_and_printing_panes_fetch_a_delta() {
    let mut bench = Bench::start();
    let cache = Arc::new(PaneCache::new(64 << 20));
    let cached = context(bench.socket_name(), Some(cache.clone()));
    let cold = context(bench.socket_name(), None);
    let lines: Vec<String> = (0..100).map(|i| format!("line {i}")).collect();
    for pane in 0..HISTORY_LIMITS.len() {
        bench.print(pane, &lines);
    }
    search(&cached, true, 1_000_000);
    std::thread::sleep(Duration::from_millis(1_100));
    let before = cache.stats();
    check(&bench, &cached, &cold, "idle");
    let after = cache.stats();
    assert!(after.reused > before.reused, "{after:?}");
    let more: Vec<String> = (0..5).map(|i| format!("more {i}")).collect();
    bench.print(2, &more);
    let before = cache.stats();
    check(&bench, &cached, &cold, "print");
    let after = cache.stats();
    assert!(after.delta > before.delta, "{after:?}");
    assert_eq!(after.delta_rejected, before.delta_rejected, "{after:?}");
    // Clearing the history is noticed.
    bench.apply(&Op::Clear { pane: 2 }, &cached);
    check(&bench, &cached, &cold, "clear");
    assert!(cache.memory_bytes() > 0);
    assert!(cache.memory_bytes() <= cache.max_bytes());
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// Waits until the wall clock shows a later second than `second` (the
/// cache compares window activity by the second).
fn wait_past_second(second: u64) {
    while now_secs() <= second {
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Lines matching the literal `pattern` in any pane, with their line
/// numbers, through search_panes (all history).
fn literal_hits(ctx: &ToolContext, pattern: &str) -> Vec<(String, i64)> {
    let args = SearchPanesArgs {
        pattern: Some(pattern.to_owned()),
        scrollback_lines: Some(1_000_000),
        max_matches: Some(10_000),
        max_matches_per_pane: Some(10_000),
        ..SearchPanesArgs::default()
    };
    let result = search_panes(ctx, &args).unwrap_or_else(|e| panic!("search failed: {e}"));
    result
        .matches
        .iter()
        .flat_map(|p| p.lines.iter().map(|l| (l.text.clone(), l.line)))
        .collect()
}

/// The same lines as tmux's own `capture-pane` of the whole pane numbers
/// them (0 = top of the screen).
fn captured_hits(bench: &Bench, i: usize, pattern: &str) -> Vec<(String, i64)> {
    let (history, _) = bench.history_and_cursor(i);
    let text = bench
        .server
        .run_ok(["capture-pane", "-p", "-S", "-", "-t", &bench.panes[i]])
        .unwrap();
    assert_eq!(bench.history_and_cursor(i).0, history, "the pane moved");
    text.lines()
        .enumerate()
        .filter(|(_, l)| l.contains(pattern))
        .map(|(n, l)| (l.to_owned(), n as i64 - history as i64))
        .collect()
}

/// A pane 40x10 with history-limit 100 prints 42 lines `z`, U01..U21 and
/// 41 lines `z`, is searched, then prints 10 more `z`: tmux trims the 10
/// oldest rows, and the history size and cursor come back exactly as they
/// were. The rows around the stored anchor are all `z`, so they match the
/// new text at the old offset as well as at the true one; the cache must
/// not splice its stored lines on that match (it once reported U10 at -44,
/// not -54). `same_second`: the 10 lines follow the search within its
/// second (else in a later second); returns whether they did.
fn trim_after_a_search(same_second: bool) -> bool {
    let mut bench = Bench::start_with("cache-trim", &[100]);
    let cache = Arc::new(PaneCache::new(64 << 20));
    let cached = context(bench.socket_name(), Some(cache.clone()));
    let cold = context(bench.socket_name(), None);
    assert_eq!(
        bench.format(0, "#{pane_width}x#{pane_height} #{history_limit}"),
        "40x10 100"
    );
    let z = |n: usize| vec!["z".to_owned(); n];
    let mut lines = z(42);
    lines.extend((1..=21).map(|i| format!("U{i:02}")));
    lines.extend(z(41));
    bench.print_unmarked(0, &lines);
    assert_eq!(bench.history_and_cursor(0), (95, "0,9".to_owned()));
    let before = captured_hits(&bench, 0, "U1");
    assert!(before.contains(&("U10".to_owned(), -44)), "{before:?}");

    // Early in a second, so that the search and the output can share it.
    wait_past_second(now_secs());
    let searched = now_secs();
    assert_eq!(literal_hits(&cached, "U1"), before);
    if !same_second {
        wait_past_second(searched);
    }
    bench.print_unmarked(0, &z(10));
    let printed = now_secs();
    assert_eq!(bench.history_and_cursor(0), (95, "0,9".to_owned()));
    let truth = captured_hits(&bench, 0, "U1");
    assert!(truth.contains(&("U10".to_owned(), -54)), "{truth:?}");
    assert_eq!(literal_hits(&cold, "U1"), truth);
    assert_eq!(
        literal_hits(&cached, "U1"),
        truth,
        "with the cache ({:?})",
        cache.stats()
    );
    printed == searched
}

#[test]
fn repeated_lines_trimmed_in_a_later_second_keep_their_line_numbers() {
    assert!(!trim_after_a_search(false));
}

#[test]
fn repeated_lines_trimmed_in_the_same_second_keep_their_line_numbers() {
    // A loaded machine can push the output into the next second: try
    // again (each try is checked whole either way; only landing in the
    // search's second is left to the clock, so give it many chances).
    let tries = (1..=10).find(|_| trim_after_a_search(true));
    eprintln!("landed in the search's second on try {tries:?}");
    assert!(
        tries.is_some(),
        "the output never landed in the search's second in 10 tries"
    );
}
