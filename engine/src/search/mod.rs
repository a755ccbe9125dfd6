//! The parallel driver: captures in (from a channel), ordered matches out.
//!
//! Captures arrive on a crossbeam channel while earlier ones are still being
//! scanned. For each capture the calling thread spawns one rayon task, which
//!
//! 1. **prepares** it: folds `\r\n`, strips escapes, counts lines;
//! 2. **admits** it, under a small lock and strictly in key order: charges
//!    the byte and line budgets, which decides how many of its lines may be
//!    scanned (a task that finds its capture ahead of a predecessor leaves it
//!    waiting; the task that completes the predecessor admits both);
//! 3. **scans** the admitted lines.
//!
//! The calling thread never scans; it stops taking captures off the channel
//! while [`max_in_flight`] tasks run, so a producer faster than the scanners
//! is held back by the channel instead of filling memory (a capture ahead of
//! a missing predecessor waits, prepared, as admission goes in key order).
//! Results are put back in key order; the total match budget is applied in
//! key order at the end, and once the captures finished in key order hold
//! more matches than allowed, captures still waiting are skipped.
//!
//! The pieces: [`tasks`] (the gate that admits in key order, and the task
//! body), [`driver`] (the calling thread: one method per event, one place
//! where input stops), [`assemble`](mod@assemble) (results in key order, the match budget).

mod assemble;
mod driver;
mod tasks;

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use crossbeam_channel::Receiver;

use crate::budget::{ClampFlags, SearchBudgets};
use crate::pattern::Matcher;
use crate::scan::{Capture, LineMatch};

use assemble::assemble;
use driver::Driver;
use tasks::Tasks;

/// What the capture producer sends: a capture, or the news that one failed.
#[derive(Debug)]
pub enum Incoming {
    /// A capture to search.
    Capture(Capture),
    /// The capture with this key could not be made.
    Failed {
        /// The key the capture would have had.
        key: usize,
        /// Why, for the caller.
        reason: String,
    },
}

/// How to search: the budgets and the shape of the output.
#[derive(Clone, Debug)]
pub struct SearchOptions {
    /// The budgets (default: [`SearchBudgets::default`]).
    pub limits: SearchBudgets,
    /// Lines of context before and after each hit (0 to 10; more is read as 10).
    pub context_lines: usize,
    /// Strip terminal escape sequences before matching (default true).
    pub strip_escapes: bool,
    /// Cap on the bytes of each output text; longer lines are clipped around
    /// the match (default 1,024).
    pub max_text_bytes: usize,
    /// Set to true (by anyone, any time) to stop the search.
    pub cancel: Option<Arc<AtomicBool>>,
    /// Replace secrets in the returned lines and context with
    /// `[REDACTED:KIND]` ([`redact`](fn@crate::redact)); matching always sees
    /// the real text (default false).
    pub redact: bool,
}

impl Default for SearchOptions {
    fn default() -> SearchOptions {
        SearchOptions {
            limits: SearchBudgets::default(),
            context_lines: 0,
            strip_escapes: true,
            max_text_bytes: 1024,
            cancel: None,
            redact: false,
        }
    }
}

/// The matching lines of one pane.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PaneMatches {
    /// The capture's key.
    pub key: usize,
    /// Matching lines in line order.
    pub lines: Vec<LineMatch>,
    /// More lines matched than `max_matches_per_pane` (the first ones are kept).
    pub lines_truncated: bool,
}

/// The result of a search.
#[derive(Clone, Debug, Default)]
pub struct SearchOutcome {
    /// Panes with at least one match, in key order.
    pub panes: Vec<PaneMatches>,
    /// Captures that failed, `(key, reason)`, in key order.
    pub failed: Vec<(usize, String)>,
    /// Captures that were scanned, in full or in part.
    pub panes_searched: usize,
    /// Bytes scanned (line length + 1 per line).
    pub bytes_scanned: u64,
    /// Lines scanned.
    pub lines_scanned: u64,
    /// Which budgets stopped the search.
    pub flags: ClampFlags,
    /// The search was cancelled.
    pub cancelled: bool,
}

/// Progress of a running search, reported after each capture is scanned.
#[derive(Clone, Copy, Debug)]
pub struct Progress {
    /// Captures finished: scanned, or skipped because the byte or line
    /// budget had no room for any of their lines.
    pub panes_done: usize,
    /// Bytes scanned so far.
    pub bytes_scanned: u64,
}

/// How many captures a search prepares or scans at once (twice the rayon
/// threads, plus two). The driver stops taking captures off the channel at
/// that number, so a bounded channel about this size keeps a faster
/// producer's lead small.
pub fn max_in_flight() -> usize {
    rayon::current_num_threads() * 2 + 2
}

/// Searches every capture received on `captures` until the channel closes
/// (or a budget, the deadline or cancellation stops the search).
///
/// Captures are scanned on rayon while later ones arrive, charged to the
/// byte and line budgets in key order ([`SearchBudgets`]), and returned in
/// key order. Once no later capture could be searched (a budget ran out,
/// the deadline passed, the search was cancelled), the search stops taking
/// captures and returns without waiting for the channel to close: a
/// producer should stop when a send fails. `progress` is called on the
/// calling thread after each capture is scanned.
pub fn search(
    matcher: &Matcher,
    options: &SearchOptions,
    captures: Receiver<Incoming>,
    progress: &(dyn Fn(Progress) + Sync),
) -> SearchOutcome {
    // A live search waits on its producer (tmux) most of the time, so it is
    // driven from the caller's thread and leaves every rayon thread to the
    // scans.
    drive(matcher, options, captures, progress)
}

fn drive(
    matcher: &Matcher,
    options: &SearchOptions,
    captures: Receiver<Incoming>,
    progress: &(dyn Fn(Progress) + Sync),
) -> SearchOutcome {
    let (tasks, done) = Tasks::new(matcher, options);
    let finished =
        rayon::in_place_scope(|scope| Driver::new(&tasks, scope, done, progress).run(&captures));
    let clamp_key = tasks.gate().clamp_key;
    assemble(finished, &tasks.budget, clamp_key)
}

/// Searches a list of captures (tests, benches, and searches over cached
/// text). The captures are already in memory, so they are queued all at
/// once; the driver still scans at most [`max_in_flight`] at a time.
///
/// ```
/// use panescan_engine::{search_captures, Capture, Matcher, PatternOptions, SearchOptions};
///
/// let matcher = Matcher::new(&["error"], PatternOptions::default())?;
/// let captures = vec![
///     Capture::new(0, -2, "compiling\nERROR: disk full\nok\n"),
///     Capture::new(1, 0, "all good\n"),
/// ];
/// let outcome = search_captures(&matcher, &SearchOptions::default(), captures);
/// assert_eq!(outcome.panes.len(), 1);
/// assert_eq!(outcome.panes[0].lines[0].line, -1);
/// assert_eq!(outcome.panes[0].lines[0].text, "ERROR: disk full");
/// # Ok::<(), panescan_engine::PatternError>(())
/// ```
pub fn search_captures(
    matcher: &Matcher,
    options: &SearchOptions,
    captures: Vec<Capture>,
) -> SearchOutcome {
    let (tx, rx) = crossbeam_channel::unbounded();
    for capture in captures {
        // Cannot fail: the receiver is alive until `search` returns.
        let _ = tx.send(Incoming::Capture(capture));
    }
    drop(tx);
    if rayon::current_thread_index().is_some() {
        return drive(matcher, options, rx, &|_| {});
    }
    // Everything is already queued: drive from a pool thread, which runs
    // scan tasks itself while it waits. That costs far fewer thread wake-ups
    // than feeding sleeping workers from outside the pool one task at a time.
    let mut outcome = None;
    rayon::scope(|_| outcome = Some(drive(matcher, options, rx, &|_| {})));
    outcome.unwrap_or_default()
}
