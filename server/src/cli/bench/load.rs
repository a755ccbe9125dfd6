//! `panescan bench` load cases: cheap calls while deep searches run.
//!
//! One `panescan serve` (`--no-cache`) is sent several deep searches at
//! once (pipelined on its stdin: they run side by side in the server).
//! While they run, list_panes and a one-pane capture_pane are called one
//! after the other, each timed from its request to its answer, beside the
//! same calls on the idle server in the same run. `--load-only` adds one
//! round of many more searches at once: how many finish, how many fail.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::{json, Value};

use crate::cli::client::McpClient;
use crate::testbed::baseline::median;
use crate::testbed::fixture::NEEDLE;

/// Searches running while the cheap calls are timed.
pub const SEARCHES: usize = 8;
/// Searches of the `--load-only` round that only counts failures.
const MANY: usize = 64;
/// The longest any answer may take before the bench gives up.
const PATIENCE: Duration = Duration::from_secs(600);

/// The load section of the bench report (milliseconds).
#[derive(Debug, Clone, Serialize)]
pub struct LoadBench {
    /// Deep searches running at once.
    pub searches: usize,
    /// list_panes on the idle server: median.
    pub idle_list_ms: f64,
    /// capture_pane of one pane on the idle server: median.
    pub idle_capture_ms: f64,
    /// list_panes while the searches run: median and worst.
    pub loaded_list_ms: f64,
    /// list_panes while the searches run: worst.
    pub loaded_list_max_ms: f64,
    /// capture_pane while the searches run: median and worst.
    pub loaded_capture_ms: f64,
    /// capture_pane while the searches run: worst.
    pub loaded_capture_max_ms: f64,
    /// One deep search alone, and all of them at once: medians.
    pub one_search_ms: f64,
    /// All the searches sent together -> the last answer: median.
    pub all_searches_ms: f64,
    /// Searches (and cheap calls) that answered with an error.
    pub failed: usize,
    /// `--load-only`: [`MANY`] searches at once.
    pub many: Option<ManyBench>,
}

/// Many deep searches at once, sent together.
#[derive(Debug, Clone, Serialize)]
pub struct ManyBench {
    /// Searches sent.
    pub searches: usize,
    /// Sent -> the last answer.
    pub all_ms: f64,
    /// Searches that answered with an error.
    pub failed: usize,
    /// The first error, if any.
    pub first_error: Option<String>,
}

fn ms(d: Duration) -> f64 {
    (d.as_secs_f64() * 1e5).round() / 1e2
}

/// Times the load cases on the bench's server (`socket`), `lines` deep;
/// `pane` is the one pane capture_pane reads.
pub fn run(
    socket: &str,
    lines: usize,
    pane: &str,
    runs: usize,
    many: bool,
) -> Result<LoadBench, String> {
    let mut client = McpClient::start_with(socket, &["--no-cache"])?;
    let deep = json!({"pattern": NEEDLE, "scrollback_lines": lines});
    let list = ("list_panes", json!({}));
    let capture = ("capture_pane", json!({"pane_id": pane}));
    let (mut idle_list, mut idle_capture, mut one) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..runs {
        idle_list.push(timed(&mut client, &list)?);
        idle_capture.push(timed(&mut client, &capture)?);
        one.push(timed(&mut client, &("search_panes", deep.clone()))?);
    }
    let (mut lists, mut captures, mut all, mut failed) = (vec![], vec![], vec![], 0);
    for _ in 0..runs {
        let round = loaded(&mut client, &deep, [&list, &capture])?;
        lists.extend(round.cheap[0].iter().copied());
        captures.extend(round.cheap[1].iter().copied());
        all.push(round.all);
        failed += round.failed;
    }
    let many = if many {
        Some(many_at_once(&mut client, &deep)?)
    } else {
        None
    };
    let worst = |t: &[Duration]| ms(t.iter().max().copied().unwrap_or_default());
    Ok(LoadBench {
        searches: SEARCHES,
        idle_list_ms: ms(median(&mut idle_list)),
        idle_capture_ms: ms(median(&mut idle_capture)),
        loaded_list_max_ms: worst(&lists),
        loaded_list_ms: ms(median(&mut lists)),
        loaded_capture_max_ms: worst(&captures),
        loaded_capture_ms: ms(median(&mut captures)),
        one_search_ms: ms(median(&mut one)),
        all_searches_ms: ms(median(&mut all)),
        failed,
        many,
    })
}

/// One call alone, request to answer.
fn timed(client: &mut McpClient, (name, args): &(&str, Value)) -> Result<Duration, String> {
    let start = Instant::now();
    client.call_tool(name, args.clone(), PATIENCE)?;
    Ok(start.elapsed())
}

struct Round {
    /// Latencies of each cheap call, by kind.
    cheap: [Vec<Duration>; 2],
    /// All searches sent -> the last one answered.
    all: Duration,
    failed: usize,
}

/// Sends [`SEARCHES`] deep searches, then the cheap calls in turn (each
/// once the previous answered) until every search has answered.
fn loaded(
    client: &mut McpClient,
    deep: &Value,
    cheap: [&(&str, Value); 2],
) -> Result<Round, String> {
    let start = Instant::now();
    let mut searches = HashSet::new();
    for _ in 0..SEARCHES {
        searches.insert(client.send_call("search_panes", deep.clone())?);
    }
    let mut round = Round {
        cheap: [Vec::new(), Vec::new()],
        all: Duration::ZERO,
        failed: 0,
    };
    let mut kind = 0;
    while !searches.is_empty() {
        let (name, args) = cheap[kind];
        let sent = Instant::now();
        let id = client.send_call(name, args.clone())?;
        loop {
            let (got, outcome) = client.next_answer(PATIENCE)?;
            round.failed += usize::from(outcome.is_err());
            if got == id {
                round.cheap[kind].push(sent.elapsed());
                break;
            }
            if searches.remove(&got) && searches.is_empty() {
                round.all = start.elapsed();
            }
        }
        kind = 1 - kind;
    }
    Ok(round)
}

/// [`MANY`] deep searches sent together; waits for every answer.
fn many_at_once(client: &mut McpClient, deep: &Value) -> Result<ManyBench, String> {
    let start = Instant::now();
    let mut ids = HashSet::new();
    for _ in 0..MANY {
        ids.insert(client.send_call("search_panes", deep.clone())?);
    }
    let (mut failed, mut first_error) = (0, None);
    while !ids.is_empty() {
        let (got, outcome) = client.next_answer(PATIENCE)?;
        if ids.remove(&got) {
            if let Err(e) = outcome {
                failed += 1;
                first_error.get_or_insert(e);
            }
        }
    }
    Ok(ManyBench {
        searches: MANY,
        all_ms: ms(start.elapsed()),
        failed,
        first_error,
    })
}

/// Prints the section as a table.
pub fn print(l: &LoadBench) {
    println!();
    print!("{}", markdown(l));
}

/// The section as Markdown (BENCHMARKS.md's form).
pub fn markdown(l: &LoadBench) -> String {
    let mut out = format!(
        "| {} deep searches at once (one serve) | idle | while they run (median / worst) |\n\
         |---|---|---|\n\
         | list_panes | {:.1} ms | {:.1} / {:.1} ms |\n\
         | capture_pane, one pane | {:.1} ms | {:.1} / {:.1} ms |\n\
         | the searches: one alone / all {} | {:.1} ms | {:.1} ms |\n",
        l.searches,
        l.idle_list_ms,
        l.loaded_list_ms,
        l.loaded_list_max_ms,
        l.idle_capture_ms,
        l.loaded_capture_ms,
        l.loaded_capture_max_ms,
        l.searches,
        l.one_search_ms,
        l.all_searches_ms,
    );
    out.push_str(&format!("\nCalls that failed under load: {}.\n", l.failed));
    if let Some(m) = &l.many {
        out.push_str(&format!(
            "{} deep searches at once: all answered in {:.0} ms, {} failed{}.\n",
            m.searches,
            m.all_ms,
            m.failed,
            m.first_error
                .as_ref()
                .map(|e| format!(" (first: {e})"))
                .unwrap_or_default()
        ));
    }
    out
}
