//! Budgets: how much work a search may do ([`SearchBudgets`], which says
//! why they are deterministic), and their live state shared by every thread
//! ([`Budget`]).
//!
//! The counters are atomics: any thread may read them, check the deadline
//! and raise a flag without locks.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// The budgets of one search: scanned bytes, scanned lines, a wall-clock
/// deadline, total matching lines, and matching lines per pane.
///
/// Each budget that stops a search sets its own flag in [`ClampFlags`], so
/// a caller can say exactly why a result is partial.
///
/// **Determinism.** Bytes and lines are charged in *capture order* (by
/// [`Capture::key`](crate::Capture::key)), before a capture is scanned:
/// capture `k` is admitted only after every capture before it, and may be
/// admitted in part (the lines that fit). The set of scanned lines, and so
/// the result, is therefore the same on every run and for any number of
/// threads. A line costs its bytes plus one (for its line end), after `\r\n`
/// is folded to `\n` and escape sequences are stripped. Once a byte or line
/// budget runs out, nothing after it is admitted, even a shorter line. Only
/// the deadline (and cancellation) depend on the machine.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SearchBudgets {
    /// Bytes that may be scanned; a line costs its length + 1.
    pub max_scan_bytes: u64,
    /// Lines that may be scanned.
    pub max_scan_lines: u64,
    /// Stop scanning at this instant (sets `time_clamped`).
    pub deadline: Option<Instant>,
    /// Matching lines returned in total, counted in capture order.
    pub max_matches: u64,
    /// Matching lines kept per pane: the first N in line order.
    pub max_matches_per_pane: u64,
}

impl Default for SearchBudgets {
    /// Generous budgets: 4 GiB, 64 Mi lines, no deadline, 100,000 matching
    /// lines in all and 10,000 per pane.
    fn default() -> SearchBudgets {
        SearchBudgets {
            max_scan_bytes: 4 << 30,
            max_scan_lines: 64 << 20,
            deadline: None,
            max_matches: 100_000,
            max_matches_per_pane: 10_000,
        }
    }
}

impl SearchBudgets {
    /// No budget at all (for benches and tests).
    pub fn unlimited() -> SearchBudgets {
        SearchBudgets {
            max_scan_bytes: u64::MAX,
            max_scan_lines: u64::MAX,
            deadline: None,
            max_matches: u64::MAX,
            max_matches_per_pane: u64::MAX,
        }
    }
}

/// Which budgets stopped the search (all false: the result is complete).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ClampFlags {
    /// The byte budget ran out: later lines were not scanned.
    pub byte_clamped: bool,
    /// The line budget ran out: later lines were not scanned.
    pub line_clamped: bool,
    /// The deadline passed: the search stopped early.
    pub time_clamped: bool,
    /// More lines matched than `max_matches`; the rest were dropped.
    pub matches_truncated: bool,
}

impl ClampFlags {
    /// True if any flag is set.
    pub fn any(&self) -> bool {
        self.byte_clamped || self.line_clamped || self.time_clamped || self.matches_truncated
    }
}

/// How much of one capture a budget lets through.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Admission {
    /// Lines admitted (a prefix of the capture).
    pub(crate) lines: usize,
    /// End offset (exclusive, without the line end) of the last admitted line
    /// in the haystack; 0 when no line is admitted.
    pub(crate) end: usize,
    /// Bytes charged: sum of (line length + 1).
    pub(crate) bytes: u64,
}

/// Why a running scan must stop early.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Interrupt {
    /// The deadline passed.
    Time,
    /// The caller cancelled.
    Cancelled,
    /// Enough matches were found in earlier captures; this one cannot add any.
    Matches,
}

/// The live, shared state of the budgets of one search.
#[derive(Debug)]
pub(crate) struct Budget {
    budgets: SearchBudgets,
    bytes: AtomicU64,
    lines: AtomicU64,
    exhausted: AtomicBool,
    byte_clamped: AtomicBool,
    line_clamped: AtomicBool,
    time_clamped: AtomicBool,
    matches_truncated: AtomicBool,
    matches_done: AtomicBool,
    cancelled: AtomicBool,
    cancel: Option<Arc<AtomicBool>>,
}

impl Budget {
    /// Fresh budgets; `cancel`, when set to true by anyone, stops the search.
    pub(crate) fn new(budgets: &SearchBudgets, cancel: Option<Arc<AtomicBool>>) -> Budget {
        Budget {
            budgets: budgets.clone(),
            bytes: AtomicU64::new(0),
            lines: AtomicU64::new(0),
            exhausted: AtomicBool::new(false),
            byte_clamped: AtomicBool::new(false),
            line_clamped: AtomicBool::new(false),
            time_clamped: AtomicBool::new(false),
            matches_truncated: AtomicBool::new(false),
            matches_done: AtomicBool::new(false),
            cancelled: AtomicBool::new(false),
            cancel,
        }
    }

    /// The budgets this state enforces.
    pub(crate) fn budgets(&self) -> &SearchBudgets {
        &self.budgets
    }

    /// Charges the next capture in key order and says how many of its lines
    /// may be scanned. `haystack` is the capture's text without its final line
    /// end; `line_count` its number of lines.
    ///
    /// Callers must charge captures one at a time in key order; that is what
    /// makes clamped results deterministic.
    pub(crate) fn admit(&self, haystack: &[u8], line_count: usize) -> Admission {
        let none = Admission {
            lines: 0,
            end: 0,
            bytes: 0,
        };
        if line_count == 0 || self.exhausted.load(Ordering::Acquire) {
            return none;
        }
        let used_bytes = self.bytes.load(Ordering::Acquire);
        let used_lines = self.lines.load(Ordering::Acquire);
        let bytes_left = self.budgets.max_scan_bytes.saturating_sub(used_bytes);
        let lines_left = self.budgets.max_scan_lines.saturating_sub(used_lines);
        let whole_cost = haystack.len() as u64 + 1;
        let admission = if whole_cost <= bytes_left && line_count as u64 <= lines_left {
            Admission {
                lines: line_count,
                end: haystack.len(),
                bytes: whole_cost,
            }
        } else {
            // Admit line by line until a budget would be exceeded.
            let mut admitted = none;
            let mut start = 0usize;
            loop {
                if admitted.lines as u64 >= lines_left {
                    self.line_clamped.store(true, Ordering::Release);
                    break;
                }
                let end =
                    memchr::memchr(b'\n', &haystack[start..]).map_or(haystack.len(), |i| start + i);
                let cost = (end - start) as u64 + 1;
                if admitted.bytes + cost > bytes_left {
                    self.byte_clamped.store(true, Ordering::Release);
                    break;
                }
                admitted = Admission {
                    lines: admitted.lines + 1,
                    end,
                    bytes: admitted.bytes + cost,
                };
                if end >= haystack.len() {
                    break;
                }
                start = end + 1;
            }
            if admitted.lines < line_count {
                self.exhausted.store(true, Ordering::Release);
            }
            admitted
        };
        self.bytes.fetch_add(admission.bytes, Ordering::AcqRel);
        self.lines
            .fetch_add(admission.lines as u64, Ordering::AcqRel);
        admission
    }

    /// Checks the deadline and the cancel flag (and the early match stop);
    /// raises the matching flag and says why to stop, if so.
    pub(crate) fn interrupt(&self) -> Option<Interrupt> {
        if self.cancelled.load(Ordering::Acquire) {
            return Some(Interrupt::Cancelled);
        }
        if self
            .cancel
            .as_ref()
            .is_some_and(|c| c.load(Ordering::Acquire))
        {
            self.cancelled.store(true, Ordering::Release);
            return Some(Interrupt::Cancelled);
        }
        if self.time_clamped.load(Ordering::Acquire) {
            return Some(Interrupt::Time);
        }
        if self.budgets.deadline.is_some_and(|d| Instant::now() >= d) {
            self.time_clamped.store(true, Ordering::Release);
            return Some(Interrupt::Time);
        }
        if self.matches_done.load(Ordering::Acquire) {
            return Some(Interrupt::Matches);
        }
        None
    }

    /// Records that the matches of the captures already finished, in key
    /// order, exceed `max_matches`: later captures need not be scanned.
    pub(crate) fn stop_for_matches(&self) {
        self.matches_done.store(true, Ordering::Release);
    }

    /// Records that the total match budget truncated the result.
    pub(crate) fn set_matches_truncated(&self) {
        self.matches_truncated.store(true, Ordering::Release);
    }

    /// Whether the search was cancelled.
    pub(crate) fn cancelled(&self) -> bool {
        self.cancelled.load(Ordering::Acquire)
    }

    /// Bytes charged so far (for tests).
    #[cfg(test)]
    pub(crate) fn bytes_charged(&self) -> u64 {
        self.bytes.load(Ordering::Acquire)
    }

    /// Lines charged so far (for tests).
    #[cfg(test)]
    pub(crate) fn lines_charged(&self) -> u64 {
        self.lines.load(Ordering::Acquire)
    }

    /// The flags raised so far.
    pub(crate) fn flags(&self) -> ClampFlags {
        ClampFlags {
            byte_clamped: self.byte_clamped.load(Ordering::Acquire),
            line_clamped: self.line_clamped.load(Ordering::Acquire),
            time_clamped: self.time_clamped.load(Ordering::Acquire),
            matches_truncated: self.matches_truncated.load(Ordering::Acquire),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    fn budgets(bytes: u64, lines: u64) -> SearchBudgets {
        SearchBudgets {
            max_scan_bytes: bytes,
            max_scan_lines: lines,
            ..SearchBudgets::unlimited()
        }
    }

    #[test]
    fn admits_whole_capture_when_it_fits() {
        let b = Budget::new(&budgets(100, 100), None);
        let a = b.admit(b"ab\ncd", 2);
        assert_eq!(
            a,
            Admission {
                lines: 2,
                end: 5,
                bytes: 6
            }
        );
        assert_eq!(b.flags(), ClampFlags::default());
    }

    #[test]
    fn byte_budget_admits_prefix_of_lines_and_stops() {
        // "ab" costs 3, "cd" costs 3: 5 bytes admit one line.
        let b = Budget::new(&budgets(5, 100), None);
        assert_eq!(
            b.admit(b"ab\ncd", 2),
            Admission {
                lines: 1,
                end: 2,
                bytes: 3
            }
        );
        assert!(b.flags().byte_clamped);
        // A later tiny capture is not admitted: the budget stopped the search.
        assert_eq!(b.admit(b"x", 1).lines, 0);
        assert_eq!(b.bytes_charged(), 3);
    }

    #[test]
    fn line_budget_counts_across_captures() {
        let b = Budget::new(&budgets(1000, 3), None);
        assert_eq!(b.admit(b"a\nb", 2).lines, 2);
        assert_eq!(
            b.admit(b"c\nd", 2),
            Admission {
                lines: 1,
                end: 1,
                bytes: 2
            }
        );
        assert!(b.flags().line_clamped);
        assert!(!b.flags().byte_clamped);
    }

    #[test]
    fn deadline_in_the_past_interrupts() {
        let l = SearchBudgets {
            deadline: Some(Instant::now()),
            ..SearchBudgets::unlimited()
        };
        let b = Budget::new(&l, None);
        assert_eq!(b.interrupt(), Some(Interrupt::Time));
        assert!(b.flags().time_clamped);
    }

    #[test]
    fn cancel_flag_interrupts() {
        let flag = Arc::new(AtomicBool::new(false));
        let b = Budget::new(&SearchBudgets::unlimited(), Some(flag.clone()));
        assert_eq!(b.interrupt(), None);
        flag.store(true, Ordering::SeqCst);
        assert_eq!(b.interrupt(), Some(Interrupt::Cancelled));
        assert!(b.cancelled());
    }
}
