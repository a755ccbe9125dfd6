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
//! The calling thread never scans; it receives captures, spawns tasks and
//! collects results. It stops taking captures off the channel while
//! [`max_in_flight`] tasks are running, so a producer faster than the
//! scanners is held back by the channel instead of filling memory. (A capture
//! that arrives ahead of a missing predecessor waits, prepared, until the
//! predecessor arrives, as admission must go in key order.)
//!
//! Results are put back in key order. The total match budget is applied in
//! key order at the end, and once the captures finished in key order already
//! hold more matches than allowed, captures still waiting are skipped.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvError, Sender};

use crate::budget::{Admission, Budget, ClampFlags, Interrupt, Limits};
use crate::pattern::Matcher;
use crate::scan::{self, Capture, LineMatch, PaneScan, Prepared, ScanOptions};

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

/// How to search.
#[derive(Clone, Debug)]
pub struct SearchOptions {
    /// The budgets.
    pub limits: Limits,
    /// Lines of context before and after each hit (0 to 10; more is read as 10).
    pub context_lines: usize,
    /// Strip terminal escape sequences before matching (default true).
    pub strip_escapes: bool,
    /// Cap on the bytes of each output text; longer lines are clipped around
    /// the match (default 1,024).
    pub max_text_bytes: usize,
    /// Set to true (by anyone, any time) to stop the search.
    pub cancel: Option<Arc<AtomicBool>>,
}

impl Default for SearchOptions {
    fn default() -> SearchOptions {
        SearchOptions {
            limits: Limits::default(),
            context_lines: 0,
            strip_escapes: true,
            max_text_bytes: 1024,
            cancel: None,
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
    /// Captures finished (scanned or failed).
    pub panes_done: usize,
    /// Bytes scanned so far.
    pub bytes_scanned: u64,
}

/// How many captures may be preparing or scanning at once.
pub fn max_in_flight() -> usize {
    rayon::current_num_threads() * 2 + 2
}

/// How often the waiting driver looks at the clock and the cancel flag.
const POLL: Duration = Duration::from_millis(20);

/// What a finished task reports for a capture.
enum Done {
    /// Scanned (in full or in part).
    Scanned(usize, PaneScan),
    /// Not one of its lines fit in the byte/line budget.
    Skipped(usize),
    /// The search stopped before it was admitted.
    Dropped,
}

enum Slot {
    Ready(Prepared),
    Failed,
}

/// What admission decided for one capture.
enum Ticket {
    Scan(Prepared, Admission),
    Skip(usize),
    Drop,
}

/// Admission in key order, shared by the driver and the tasks.
///
/// A task that has prepared a capture puts it here and admits, in key order,
/// every capture that can now be admitted; so admission needs no round trip
/// through the driver thread.
struct Gate {
    /// Next key to admit.
    next: usize,
    /// Arrived (prepared, or failed) and not yet admitted.
    waiting: BTreeMap<usize, Slot>,
    /// Captures received and still being prepared.
    preparing: usize,
    /// No more captures will arrive: gaps in the keys are skipped once
    /// nothing is being prepared.
    closed: bool,
    /// The search stopped (deadline, cancel, match budget): admit nothing.
    stopped: bool,
    /// First key whose lines did not all fit in the byte/line budget.
    clamp_key: Option<usize>,
}

impl Gate {
    fn admit(&mut self, budget: &Budget) -> Vec<Ticket> {
        let mut tickets = Vec::new();
        loop {
            let key = match self.waiting.keys().next() {
                Some(&k) if k <= self.next || (self.closed && self.preparing == 0) => k,
                _ => break,
            };
            let Some(slot) = self.waiting.remove(&key) else {
                break;
            };
            self.next = key + 1;
            let Slot::Ready(prepared) = slot else {
                continue;
            };
            if self.stopped || budget.interrupt().is_some() {
                self.stopped = true;
                tickets.push(Ticket::Drop);
                continue;
            }
            let admission = budget.admit(prepared.haystack(), prepared.line_count());
            if admission.lines < prepared.line_count() {
                self.clamp_key.get_or_insert(key);
                if admission.lines == 0 {
                    tickets.push(Ticket::Skip(key));
                    continue;
                }
            }
            tickets.push(Ticket::Scan(prepared, admission));
        }
        tickets
    }

    fn ready_waiting(&self) -> usize {
        self.waiting
            .values()
            .filter(|s| matches!(s, Slot::Ready(_)))
            .count()
    }
}

fn lock(gate: &Mutex<Gate>) -> MutexGuard<'_, Gate> {
    gate.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Everything a task needs.
struct Shared<'a> {
    matcher: &'a Matcher,
    budget: Budget,
    scan_options: ScanOptions,
    strip_escapes: bool,
    gate: Mutex<Gate>,
    done: Sender<Done>,
}

impl<'a> Shared<'a> {
    /// Prepares one capture, then admits and scans whatever became ready.
    fn prepare_and_scan<'s>(&'s self, scope: &rayon::Scope<'s>, capture: Capture) {
        let prepared = Prepared::new(capture, self.strip_escapes);
        let tickets = {
            let mut gate = lock(&self.gate);
            gate.preparing = gate.preparing.saturating_sub(1);
            gate.waiting.insert(prepared.key, Slot::Ready(prepared));
            gate.admit(&self.budget)
        };
        self.run(scope, tickets);
    }

    /// Scans the first ticket here and hands the rest to other threads.
    fn run<'s>(&'s self, scope: &rayon::Scope<'s>, tickets: Vec<Ticket>) {
        let mut tickets = tickets.into_iter();
        let Some(first) = tickets.next() else { return };
        for ticket in tickets {
            scope.spawn(move |_| self.run_one(ticket));
        }
        self.run_one(first);
    }

    fn run_one(&self, ticket: Ticket) {
        let done = match ticket {
            Ticket::Scan(prepared, admission) => Done::Scanned(
                prepared.key,
                scan::scan(
                    self.matcher,
                    &prepared,
                    admission.lines,
                    admission.end,
                    &self.scan_options,
                    &self.budget,
                ),
            ),
            Ticket::Skip(key) => Done::Skipped(key),
            Ticket::Drop => Done::Dropped,
        };
        let _ = self.done.send(done);
    }
}

/// Searches every capture received on `captures` until the channel closes
/// (or a budget, the deadline or cancellation stops the search).
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
    let limits = &options.limits;
    let (done_tx, done_rx) = crossbeam_channel::unbounded::<Done>();
    let shared = Shared {
        matcher,
        budget: Budget::new(limits, options.cancel.clone()),
        scan_options: ScanOptions {
            context_lines: options.context_lines.min(scan::MAX_CONTEXT_LINES),
            max_text_bytes: options.max_text_bytes,
            max_hits: limits.max_matches_per_pane.min(limits.max_matches),
        },
        strip_escapes: options.strip_escapes,
        gate: Mutex::new(Gate {
            next: 0,
            waiting: BTreeMap::new(),
            preparing: 0,
            closed: false,
            stopped: false,
            clamp_key: None,
        }),
        done: done_tx,
    };
    let limit = max_in_flight();
    let never = crossbeam_channel::never::<Incoming>();

    let mut scanned: BTreeMap<usize, PaneScan> = BTreeMap::new();
    let mut failed: BTreeMap<usize, String> = BTreeMap::new();
    let mut skipped: BTreeSet<usize> = BTreeSet::new();
    // Captures received whose `Done` has not come back yet.
    let mut outstanding = 0usize;
    let mut input_open = true;
    let mut stopped = false;
    let mut done_count = 0usize;
    let mut bytes_done = 0u64;
    // Match budget bookkeeping over the finished prefix of keys.
    let mut prefix_key = 0usize;
    let mut prefix_matches = 0u64;

    let shared = &shared;
    rayon::in_place_scope(|scope| {
        loop {
            if !input_open && outstanding == 0 {
                break;
            }
            // Prepared captures waiting for a predecessor hold memory but no
            // thread; only running tasks count against the limit, or a
            // missing predecessor could never be received.
            let running = outstanding.saturating_sub(lock(&shared.gate).ready_waiting());
            let take_input = input_open && !stopped && running < limit;
            match wait(if take_input { &captures } else { &never }, &done_rx) {
                Event::Timeout => {}
                Event::Input(Ok(Incoming::Capture(capture))) => {
                    outstanding += 1;
                    lock(&shared.gate).preparing += 1;
                    scope.spawn(move |s| shared.prepare_and_scan(s, capture));
                }
                Event::Input(Ok(Incoming::Failed { key, reason })) => {
                    failed.insert(key, reason);
                    let tickets = {
                        let mut gate = lock(&shared.gate);
                        gate.waiting.insert(key, Slot::Failed);
                        gate.admit(&shared.budget)
                    };
                    scope.spawn(move |s| shared.run(s, tickets));
                }
                Event::Input(Err(_)) => {
                    input_open = false;
                    let tickets = {
                        let mut gate = lock(&shared.gate);
                        gate.closed = true;
                        gate.admit(&shared.budget)
                    };
                    scope.spawn(move |s| shared.run(s, tickets));
                }
                Event::Done(Done::Dropped) => outstanding -= 1,
                Event::Done(Done::Skipped(key)) => {
                    outstanding -= 1;
                    done_count += 1;
                    skipped.insert(key);
                }
                Event::Done(Done::Scanned(key, result)) => {
                    outstanding -= 1;
                    done_count += 1;
                    bytes_done += result.bytes_scanned;
                    if result
                        .interrupted
                        .is_some_and(|why| why != Interrupt::Matches)
                    {
                        stopped = true;
                    }
                    scanned.insert(key, result);
                    progress(Progress {
                        panes_done: done_count,
                        bytes_scanned: bytes_done,
                    });
                }
            }
            // Advance the finished prefix of keys; stop early once it holds
            // more matches than the total budget.
            loop {
                let kept = if let Some(r) = scanned.get(&prefix_key) {
                    // A pane cut by the per-pane cap adds only its kept
                    // lines; one cut below it has more to come.
                    let kept = r.lines.len() as u64;
                    kept + u64::from(r.truncated && kept < limits.max_matches_per_pane)
                } else if failed.contains_key(&prefix_key) || skipped.contains(&prefix_key) {
                    0
                } else {
                    break;
                };
                prefix_matches += kept;
                prefix_key += 1;
            }
            if prefix_matches > limits.max_matches {
                shared.budget.stop_for_matches();
            }
            if !stopped && shared.budget.interrupt().is_some() {
                stopped = true;
            }
            if input_open && !stopped && lock(&shared.gate).clamp_key.is_some() {
                // The byte or line budget cut a capture: every later one
                // would be admitted with no line, so stop taking them (the
                // caller stops fetching when it sees the channel close).
                // Waiting captures are still admitted, in key order, and
                // skipped.
                input_open = false;
                let tickets = {
                    let mut gate = lock(&shared.gate);
                    gate.closed = true;
                    gate.admit(&shared.budget)
                };
                scope.spawn(move |s| shared.run(s, tickets));
            }
            if stopped && input_open {
                // Time, cancellation or the match budget: take no more
                // captures; waiting ones are dropped, running scans finish.
                input_open = false;
                let tickets = {
                    let mut gate = lock(&shared.gate);
                    gate.stopped = true;
                    gate.closed = true;
                    gate.admit(&shared.budget)
                };
                scope.spawn(move |s| shared.run(s, tickets));
            }
        }
    });

    let clamp_key = lock(&shared.gate).clamp_key;
    assemble(scanned, failed, &shared.budget, limits, clamp_key)
}

enum Event {
    Input(Result<Incoming, RecvError>),
    Done(Done),
    Timeout,
}

/// Waits for a new capture or a finished task, at most [`POLL`].
///
/// Called from a rayon worker (say, inside `ThreadPool::install`), blocking
/// would keep that worker from running the very tasks we wait for; so there
/// we run pending rayon jobs while waiting.
fn wait(input: &Receiver<Incoming>, done: &Receiver<Done>) -> Event {
    if rayon::current_thread_index().is_none() {
        return crossbeam_channel::select! {
            recv(input) -> msg => Event::Input(msg),
            recv(done) -> msg => msg.map_or(Event::Timeout, Event::Done),
            default(POLL) => Event::Timeout,
        };
    }
    let until = Instant::now() + POLL;
    loop {
        crossbeam_channel::select! {
            recv(input) -> msg => return Event::Input(msg),
            recv(done) -> msg => return msg.map_or(Event::Timeout, Event::Done),
            default => {}
        }
        if Instant::now() >= until {
            return Event::Timeout;
        }
        if rayon::yield_now() != Some(rayon::Yield::Executed) {
            crossbeam_channel::select! {
                recv(input) -> msg => return Event::Input(msg),
                recv(done) -> msg => return msg.map_or(Event::Timeout, Event::Done),
                default(Duration::from_millis(1)) => {}
            }
        }
    }
}

/// Puts results in key order and applies the total match budget.
fn assemble(
    scanned: BTreeMap<usize, PaneScan>,
    failed: BTreeMap<usize, String>,
    budget: &Budget,
    limits: &Limits,
    clamp_key: Option<usize>,
) -> SearchOutcome {
    let (max_matches, max_per_pane) = (limits.max_matches, limits.max_matches_per_pane);
    // Past the capture where the byte or line budget ran out nothing is
    // searched, and whether a later failure was received before the driver
    // stopped taking input depends on timing: report none of them, so the
    // answer is the same on every run.
    let failed = failed
        .into_iter()
        .filter(|(key, _)| clamp_key.is_none_or(|c| *key <= c))
        .collect();
    let mut out = SearchOutcome {
        failed,
        ..SearchOutcome::default()
    };
    let mut total = 0u64;
    let mut truncated = false;
    let mut truncated_at = None;
    for (key, result) in scanned {
        if truncated || clamp_key.is_some_and(|c| key > c) {
            // Past the budget's cut only captures that happened to arrive
            // before the driver stopped are here (empty ones, which need no
            // budget): leave them out, as the ones that did not arrive.
            break;
        }
        if result.interrupted.is_some() && result.lines_scanned == 0 && result.lines.is_empty() {
            // Stopped (time, cancel, match budget) before scanning anything.
            continue;
        }
        out.panes_searched += 1;
        out.bytes_scanned += result.bytes_scanned;
        out.lines_scanned += result.lines_scanned;
        let mut lines = result.lines;
        // The scan stops at min(per-pane, total) hits; it had more when
        // `truncated`. Below the per-pane cap, that means the total cap.
        let mut lines_truncated = result.truncated;
        let room = max_matches.saturating_sub(total);
        if lines.len() as u64 > room || (result.truncated && (lines.len() as u64) < max_per_pane) {
            lines.truncate(usize::try_from(room).unwrap_or(usize::MAX));
            lines_truncated = true;
            truncated = true;
            truncated_at = Some(key);
        }
        total += lines.len() as u64;
        if !lines.is_empty() {
            out.panes.push(PaneMatches {
                key,
                lines,
                lines_truncated,
            });
        }
    }
    if truncated {
        budget.set_matches_truncated();
    }
    out.flags = budget.flags();
    // Captures after the one where the match budget cut the result may or
    // may not have been admitted before the search stopped (that depends on
    // timing); a byte/line clamp there changed nothing in the result.
    if let (Some(cut), Some(clamp)) = (truncated_at, clamp_key) {
        if clamp > cut {
            out.flags.byte_clamped = false;
            out.flags.line_clamped = false;
        }
    }
    out.cancelled = budget.cancelled();
    out
}

/// Searches a list of captures (tests, benches, and searches over cached
/// text). The captures are already in memory, so they are queued all at
/// once; the driver still scans at most [`max_in_flight`] at a time.
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
