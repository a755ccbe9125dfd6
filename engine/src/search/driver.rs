//! The calling thread's side of a search: it takes captures off the
//! channel, spawns their tasks and collects what the tasks report.
//!
//! [`Driver::run`] waits for one event at a time and hands it to one method:
//! a capture arrives ([`Driver::on_capture`]), a capture failed
//! ([`Driver::on_failed`]), a task is done ([`Driver::on_done`]). After each
//! event [`Driver::check_budgets`] decides whether to stop taking input, and
//! [`Driver::close`] is the one place where input stops.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvError};

use crate::budget::Interrupt;
use crate::scan::{Capture, PaneScan};

use super::tasks::{Done, Gate, Slot, Tasks};
use super::{max_in_flight, Incoming, Progress};

/// How often the waiting driver looks at the clock and the cancel flag.
const POLL: Duration = Duration::from_millis(20);

/// What the tasks reported, by key, and the match count of the finished
/// prefix of keys.
#[derive(Default)]
pub(super) struct Finished {
    pub(super) scanned: BTreeMap<usize, PaneScan>,
    pub(super) failed: BTreeMap<usize, String>,
    skipped: BTreeSet<usize>,
    /// Captures scanned or skipped (for progress).
    count: usize,
    /// Bytes scanned so far (for progress).
    bytes: u64,
    /// Every key below this one is finished.
    prefix_key: usize,
    /// Matches kept in those keys.
    prefix_matches: u64,
}

impl Finished {
    /// Advances the finished prefix of keys and returns the matches it holds.
    fn prefix_matches(&mut self, max_matches_per_pane: u64) -> u64 {
        loop {
            let key = self.prefix_key;
            let kept = if let Some(r) = self.scanned.get(&key) {
                // A pane cut by the per-pane cap adds only its kept lines;
                // one cut below it has more to come.
                let kept = r.lines.len() as u64;
                kept + u64::from(r.truncated && kept < max_matches_per_pane)
            } else if self.failed.contains_key(&key) || self.skipped.contains(&key) {
                0
            } else {
                break;
            };
            self.prefix_matches += kept;
            self.prefix_key += 1;
        }
        self.prefix_matches
    }
}

/// Captures up to this size are scanned on the driver's thread
/// ([`Driver::on_capture`]): a visible screen of 200x50 with its escapes,
/// a few microseconds of work at the engine's speed. Small enough that
/// many captures already in memory (a warm pane cache of a thousand
/// short panes) still spread over rayon's threads.
const SCAN_HERE_BYTES: usize = 16 << 10;

/// Why input stops.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Close {
    /// No more captures: the channel closed, or the byte or line budget is
    /// spent. Captures already waiting are still admitted, in key order.
    Input,
    /// Time, cancellation or the match budget: captures waiting are dropped,
    /// running scans finish.
    Stop,
}

/// The driver of one search, living on the calling thread inside a rayon
/// scope.
pub(super) struct Driver<'d, 's> {
    tasks: &'s Tasks<'s>,
    scope: &'d rayon::Scope<'s>,
    done: Receiver<Done>,
    progress: &'d (dyn Fn(Progress) + Sync),
    /// Captures are still taken off the channel.
    open: bool,
    /// A budget, the deadline or cancellation stopped the search.
    stopped: bool,
    /// Captures received whose `Done` has not come back yet.
    outstanding: usize,
    finished: Finished,
}

impl<'d, 's> Driver<'d, 's> {
    pub(super) fn new(
        tasks: &'s Tasks<'s>,
        scope: &'d rayon::Scope<'s>,
        done: Receiver<Done>,
        progress: &'d (dyn Fn(Progress) + Sync),
    ) -> Self {
        Driver {
            tasks,
            scope,
            done,
            progress,
            open: true,
            stopped: false,
            outstanding: 0,
            finished: Finished::default(),
        }
    }

    /// Runs until the input is closed and every task has reported.
    pub(super) fn run(mut self, captures: &Receiver<Incoming>) -> Finished {
        let limit = max_in_flight();
        let never = crossbeam_channel::never::<Incoming>();
        while self.open || self.outstanding > 0 {
            let running = self.running();
            let take_input = self.open && !self.stopped && running < limit;
            match wait(if take_input { captures } else { &never }, &self.done) {
                Event::Timeout => {}
                Event::Input(Ok(Incoming::Capture(capture))) => self.on_capture(capture),
                Event::Input(Ok(Incoming::Failed { key, reason })) => self.on_failed(key, reason),
                Event::Input(Err(RecvError)) => self.close(Close::Input),
                Event::Done(done) => self.on_done(done),
            }
            self.check_budgets();
        }
        self.finished
    }

    /// The captures received that count against the in-flight limit.
    ///
    /// Prepared captures waiting for a predecessor hold memory but no
    /// thread. While nothing is being prepared, the predecessor they wait
    /// for has not been received: they do not count, or it never could be.
    /// While captures are being prepared, it may be one of them and comes
    /// without more input: they count, or one task slow to prepare (a busy
    /// machine) would let the producer run ahead of the scans. A task whose
    /// capture joins them reports [`Done::Waiting`], so this is counted
    /// again then.
    fn running(&self) -> usize {
        let gate = self.tasks.gate();
        let exempt = if gate.preparing == 0 {
            gate.ready_waiting()
        } else {
            0
        };
        self.outstanding.saturating_sub(exempt)
    }

    /// A capture arrived: a task prepares it, admits and scans. A small
    /// one (a visible screen) is prepared and scanned right here: handing
    /// it to rayon woke a worker for a scan of microseconds, and the
    /// workers' spinning before they sleep again cost more CPU than the
    /// scans, CPU that tmux, sweeping on the same machine, wants. Bigger
    /// captures go to rayon, in parallel, as do the captures a small one
    /// releases from waiting (its successors).
    fn on_capture(&mut self, capture: Capture) {
        self.outstanding += 1;
        self.tasks.gate().preparing += 1;
        let tasks = self.tasks;
        if capture.bytes.len() <= SCAN_HERE_BYTES {
            tasks.prepare_and_scan(self.scope, capture);
        } else {
            self.scope
                .spawn(move |s| tasks.prepare_and_scan(s, capture));
        }
    }

    /// A capture could not be made: its key is admitted as empty.
    fn on_failed(&mut self, key: usize, reason: String) {
        self.finished.failed.insert(key, reason);
        self.admit_after(|gate| {
            gate.waiting.insert(key, Slot::Failed);
        });
    }

    /// A task reported on one capture.
    fn on_done(&mut self, done: Done) {
        if let Done::Waiting = done {
            return; // not finished: `run` counts again
        }
        self.outstanding -= 1;
        let finished = &mut self.finished;
        match done {
            Done::Dropped | Done::Waiting => {}
            Done::Skipped(key) => {
                finished.count += 1;
                finished.skipped.insert(key);
            }
            Done::Scanned(key, result) => {
                finished.count += 1;
                finished.bytes += result.bytes_scanned;
                if result
                    .interrupted
                    .is_some_and(|why| why != Interrupt::Matches)
                {
                    self.stopped = true;
                }
                finished.scanned.insert(key, result);
                (self.progress)(Progress {
                    panes_done: finished.count,
                    bytes_scanned: finished.bytes,
                });
            }
        }
    }

    /// After each event: stops early once the finished prefix of keys holds
    /// more matches than the total budget, and closes the input when a
    /// budget says no later capture can be searched.
    fn check_budgets(&mut self) {
        let budget = &self.tasks.budget;
        let budgets = budget.budgets();
        if self.finished.prefix_matches(budgets.max_matches_per_pane) > budgets.max_matches {
            budget.stop_for_matches();
        }
        if !self.stopped && budget.interrupt().is_some() {
            self.stopped = true;
        }
        if !self.open {
            return;
        }
        if self.stopped {
            self.close(Close::Stop);
        } else if self.tasks.gate().clamp_key.is_some() {
            // The byte or line budget cut a capture: every later one would
            // be admitted with no line, so stop taking them (the caller
            // stops fetching when it sees the channel close). Waiting
            // captures are still admitted, in key order, and skipped.
            self.close(Close::Input);
        }
    }

    /// Stops taking input; whatever that lets the gate admit (or drop) is
    /// handed to a task.
    fn close(&mut self, why: Close) {
        self.open = false;
        self.admit_after(|gate| {
            gate.closed = true;
            gate.stopped |= why == Close::Stop;
        });
    }

    /// Changes the gate and hands what it admits to a task.
    fn admit_after(&self, change: impl FnOnce(&mut Gate)) {
        let tickets = self.tasks.admit_after(change);
        let tasks = self.tasks;
        self.scope.spawn(move |s| tasks.run(s, tickets));
    }
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use crate::scan::LineMatch;

    fn scanned(hits: usize, truncated: bool) -> PaneScan {
        let hit = LineMatch {
            line: 0,
            text: "hit".into(),
            pattern_index: 0,
            before: Vec::new(),
            after: Vec::new(),
            redactions: 0,
        };
        PaneScan {
            lines: vec![hit; hits],
            truncated,
            ..PaneScan::default()
        }
    }

    #[test]
    fn the_prefix_stops_at_the_first_key_not_finished() {
        let mut finished = Finished::default();
        finished.scanned.insert(0, scanned(2, false));
        finished.failed.insert(1, "gone".into());
        finished.scanned.insert(3, scanned(5, false));
        assert_eq!(finished.prefix_matches(10), 2, "key 2 is not finished");
        finished.skipped.insert(2);
        assert_eq!(finished.prefix_matches(10), 7);
    }

    #[test]
    fn a_pane_cut_below_the_per_pane_cap_counts_one_more_match() {
        let mut finished = Finished::default();
        // Cut at the per-pane cap (3): its other matches are dropped.
        finished.scanned.insert(0, scanned(3, true));
        // Cut below it (by the total cap): it had at least one more.
        finished.scanned.insert(1, scanned(2, true));
        assert_eq!(finished.prefix_matches(3), 6);
    }
}
