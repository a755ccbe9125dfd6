//! The task side of a search: admission in key order, and the rayon task
//! that prepares, admits and scans.
//!
//! Each capture gets one task. It prepares its capture, puts it in the
//! [`Gate`] and admits, in key order, every capture that can now be admitted;
//! so admission needs no round trip through the driver thread. Every task
//! ends by sending one [`Done`] per capture it admitted (or dropped) to the
//! driver.

use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

use crossbeam_channel::{Receiver, Sender};

use crate::budget::{Admission, Budget};
use crate::pattern::Matcher;
use crate::scan::{self, Capture, PaneScan, Prepared, ScanOptions};

use super::SearchOptions;

/// What a finished task reports for a capture.
pub(super) enum Done {
    /// Scanned (in full or in part).
    Scanned(usize, PaneScan),
    /// Not one of its lines fit in the byte/line budget.
    Skipped(usize),
    /// The search stopped before it was admitted.
    Dropped,
    /// Prepared, and waiting for a predecessor to be admitted first: not
    /// finished, but the driver counts the tasks holding a thread again.
    Waiting,
}

/// A capture that arrived and waits for its turn to be admitted.
pub(super) enum Slot {
    Ready(Prepared),
    Failed,
}

/// What admission decided for one capture.
pub(super) enum Ticket {
    Scan(Prepared, Admission),
    Skip(usize),
    Drop,
}

/// Admission in key order, shared by the driver and the tasks.
#[derive(Default)]
pub(super) struct Gate {
    /// Next key to admit.
    next: usize,
    /// Arrived (prepared, or failed) and not yet admitted.
    pub(super) waiting: BTreeMap<usize, Slot>,
    /// Captures received and still being prepared.
    pub(super) preparing: usize,
    /// No more captures will arrive: gaps in the keys are skipped once
    /// nothing is being prepared.
    pub(super) closed: bool,
    /// The search stopped (deadline, cancel, match budget): admit nothing.
    pub(super) stopped: bool,
    /// First key whose lines did not all fit in the byte/line budget.
    pub(super) clamp_key: Option<usize>,
}

impl Gate {
    /// Admits, in key order, every waiting capture whose predecessors have
    /// all been admitted (or, once closed and nothing is being prepared,
    /// every waiting capture: the missing keys will never come).
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

    /// Captures prepared and waiting for a predecessor: they hold memory
    /// but no thread.
    pub(super) fn ready_waiting(&self) -> usize {
        self.waiting
            .values()
            .filter(|s| matches!(s, Slot::Ready(_)))
            .count()
    }
}

/// Everything a task needs, shared by all of them.
pub(super) struct Tasks<'a> {
    matcher: &'a Matcher,
    pub(super) budget: Budget,
    scan_options: ScanOptions,
    strip_escapes: bool,
    gate: Mutex<Gate>,
    done: Sender<Done>,
}

impl<'a> Tasks<'a> {
    /// The tasks of one search, and the receiving end of their reports.
    pub(super) fn new(
        matcher: &'a Matcher,
        options: &SearchOptions,
    ) -> (Tasks<'a>, Receiver<Done>) {
        let budgets = &options.limits;
        let (done, done_rx) = crossbeam_channel::unbounded();
        let tasks = Tasks {
            matcher,
            budget: Budget::new(budgets, options.cancel.clone()),
            scan_options: ScanOptions {
                context_lines: options.context_lines.min(scan::MAX_CONTEXT_LINES),
                max_text_bytes: options.max_text_bytes,
                max_hits: budgets.max_matches_per_pane.min(budgets.max_matches),
                redact: options.redact,
            },
            strip_escapes: options.strip_escapes,
            gate: Mutex::new(Gate::default()),
            done,
        };
        (tasks, done_rx)
    }

    /// The gate, locked. A poisoned lock is used as it is: the driver must
    /// not panic a second time over a task that already did.
    pub(super) fn gate(&self) -> MutexGuard<'_, Gate> {
        self.gate.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Applies `change` to the gate and admits, in key order, every capture
    /// that can now be admitted.
    pub(super) fn admit_after(&self, change: impl FnOnce(&mut Gate)) -> Vec<Ticket> {
        let mut gate = self.gate();
        change(&mut gate);
        gate.admit(&self.budget)
    }

    /// Prepares one capture, then admits and scans whatever became ready.
    pub(super) fn prepare_and_scan<'s>(&'s self, scope: &rayon::Scope<'s>, capture: Capture) {
        let prepared = Prepared::new(capture, self.strip_escapes);
        let tickets = self.admit_after(|gate| {
            gate.preparing = gate.preparing.saturating_sub(1);
            gate.waiting.insert(prepared.key, Slot::Ready(prepared));
        });
        if tickets.is_empty() {
            // The driver holds the receiver until every task is done.
            let _ = self.done.send(Done::Waiting);
        }
        self.run(scope, tickets);
    }

    /// Scans the first ticket here and hands the rest to other threads.
    pub(super) fn run<'s>(&'s self, scope: &rayon::Scope<'s>, tickets: Vec<Ticket>) {
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
        // The driver holds the receiver until every task is done.
        let _ = self.done.send(done);
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use crate::budget::SearchBudgets;

    /// What each ticket says, by key (`Drop` carries none).
    fn decisions(tickets: Vec<Ticket>) -> Vec<(&'static str, Option<usize>)> {
        tickets
            .into_iter()
            .map(|t| match t {
                Ticket::Scan(p, _) => ("scan", Some(p.key)),
                Ticket::Skip(key) => ("skip", Some(key)),
                Ticket::Drop => ("drop", None),
            })
            .collect()
    }

    fn arrive(gate: &mut Gate, key: usize, text: &str) {
        let prepared = Prepared::new(Capture::new(key, 0, text), false);
        gate.waiting.insert(key, Slot::Ready(prepared));
    }

    #[test]
    fn a_capture_waits_for_its_predecessor_then_both_are_admitted_in_order() {
        let budget = Budget::new(&SearchBudgets::unlimited(), None);
        let mut gate = Gate::default();
        arrive(&mut gate, 1, "b\n");
        assert!(gate.admit(&budget).is_empty());
        assert_eq!(gate.ready_waiting(), 1);
        arrive(&mut gate, 0, "a\n");
        let got = decisions(gate.admit(&budget));
        assert_eq!(got, [("scan", Some(0)), ("scan", Some(1))]);
        assert_eq!(budget.lines_charged(), 2);
    }

    #[test]
    fn a_closed_gate_skips_missing_keys_once_nothing_is_being_prepared() {
        let budget = Budget::new(&SearchBudgets::unlimited(), None);
        let mut gate = Gate::default();
        arrive(&mut gate, 2, "c\n");
        gate.closed = true;
        gate.preparing = 1;
        assert!(gate.admit(&budget).is_empty(), "key 0 or 1 may still come");
        gate.preparing = 0;
        assert_eq!(decisions(gate.admit(&budget)), [("scan", Some(2))]);
    }

    #[test]
    fn the_byte_budget_cuts_one_capture_and_skips_the_next() {
        // "ab" and "cd" cost 3 bytes each: 4 bytes admit one line of key 0.
        let budgets = SearchBudgets {
            max_scan_bytes: 4,
            ..SearchBudgets::unlimited()
        };
        let budget = Budget::new(&budgets, None);
        let mut gate = Gate::default();
        arrive(&mut gate, 0, "ab\ncd\n");
        arrive(&mut gate, 1, "e\n");
        gate.waiting.insert(2, Slot::Failed);
        let got = decisions(gate.admit(&budget));
        assert_eq!(got, [("scan", Some(0)), ("skip", Some(1))]);
        assert_eq!(gate.clamp_key, Some(0));
    }

    #[test]
    fn a_stopped_gate_drops_what_it_admits() {
        let budget = Budget::new(&SearchBudgets::unlimited(), None);
        let mut gate = Gate {
            stopped: true,
            ..Gate::default()
        };
        arrive(&mut gate, 0, "a\n");
        assert_eq!(decisions(gate.admit(&budget)), [("drop", None)]);
        assert_eq!(budget.lines_charged(), 0);
    }
}
