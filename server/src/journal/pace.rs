//! When the journal's writer reads a pane (pure): when it is due, not as
//! soon as it printed, so a pane printing steadily costs tmux one read a
//! second instead of one per wake.
//!
//! A pane that printed is due [`PACE`] after its last read ([`TAPPED_PACE`]
//! with the journal's taps; what a crash of tmux and the daemon together
//! may lose), or at once when the rows its output may
//! have pushed into history since that read (counted from its `%output`,
//! `tmux::events::Printed`) reach a [`SAFE_SHARE`]th of its history-limit:
//! then tmux cannot have trimmed a line the journal did not read. Unknown
//! rows (output unseen, the stream lost) and panes never read are due at
//! once; panes the stream does not cover are read every [`POLL`]. A read
//! takes the panes due and those due within half a pace, so panes drift
//! into one read a second together.
//!
//! Counts can come late: tmux writes a control client's output pane by
//! pane from the head of a list each time its buffer has room, so with
//! many panes printing the last ones may go unreported for tens of
//! seconds. So a read's listing also tells: a counted pane not reported
//! since its last read, a pace ago or more, whose history size or cursor
//! moved since, printed ([`Pacer::moved_unseen`]); and when no listing
//! came for [`QUIET_CHECK`], one is asked ([`Pacer::check_due`]). Must
//! hold: a pane that printed is never left unread longer than [`PACE`]
//! (plus one read's time) once its output is counted or a listing shows
//! it moved, and a pane whose counted rows reach the share is read on its
//! next wake.

use std::collections::HashMap;

use crate::tmux::events::Printed;
use crate::tmux::PaneId;

/// A pane that printed is read this long after its last read at most (ms).
pub const PACE: i64 = 1_000;
/// The pace with the journal's taps (`daemon --journal-taps`): counts
/// that come exactly and never late make reading less often safe, and
/// tmux's reads are then the larger part of what journaling costs it
/// (BENCHMARKS.md, "What tmux would spend with pipes").
pub const TAPPED_PACE: i64 = 2_000;
/// Panes whose output the stream does not report are read this often (ms).
pub const POLL: i64 = 500;
/// A pane is read at once when the rows it may have printed since its
/// last read reach history-limit / this: the rest of history is the room
/// left for the read's own delay (a quarter at 10,000 lines a second and
/// history-limit 2,000 is 50 ms of output; the writer's wake spacing, 20
/// ms, and a read take less than the 150 ms of room left).
pub const SAFE_SHARE: u64 = 4;
/// With panes counted, a listing is asked this long after the last one at
/// most (ms), so a pane whose count never comes is still seen to move.
pub const QUIET_CHECK: i64 = 5_000;

/// What the pacer keeps of one pane since its last read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Seen {
    read_ms: i64,
    /// When output was first seen since that read.
    printed_ms: Option<i64>,
    /// The count taken just before that read's capture.
    counted: Printed,
    width: u32,
    height: u32,
    history_limit: u64,
    /// On the alternate screen at that read: nothing reaches history
    /// while it stays there, so only the pace makes it due.
    alternate_on: bool,
    /// Where the listing of that read showed it.
    position: Position,
}

/// What a listing shows of a pane that its output moves: the size of its
/// history and its cursor.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Position {
    /// `#{history_size}`.
    pub history_size: u64,
    /// `#{cursor_x}`, `#{cursor_y}`.
    pub cursor: (u32, u32),
}

/// A pane's shape and count at a read.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Shape {
    /// Columns (a wrap needs a row of cells).
    pub width: u32,
    /// Rows (a scroll or clear pushes a screen at most).
    pub height: u32,
    /// tmux's history-limit for the pane.
    pub history_limit: u64,
    /// On the alternate screen.
    pub alternate_on: bool,
    /// Where the read's listing showed it.
    pub position: Position,
}

/// Every pane's pacing state.
#[derive(Debug)]
pub struct Pacer {
    panes: HashMap<PaneId, Seen>,
    /// Panes whose output the stream reports (the others are polled).
    covered: std::collections::BTreeSet<PaneId>,
    /// A pane that printed is read this long after its last read (ms).
    pace: i64,
}

impl Default for Pacer {
    fn default() -> Self {
        Pacer::with_pace(PACE)
    }
}

impl Pacer {
    /// A pacer reading a pane that printed `pace` ms after its last read.
    pub fn with_pace(pace: i64) -> Pacer {
        Pacer {
            panes: HashMap::new(),
            covered: std::collections::BTreeSet::new(),
            pace,
        }
    }

    /// `pane` printed (a trigger) at `now_ms`.
    pub fn printed(&mut self, pane: PaneId, now_ms: i64) {
        if let Some(seen) = self.panes.get_mut(&pane) {
            seen.printed_ms.get_or_insert(now_ms);
        }
    }

    /// Events were lost: every pane may have printed, rows unknown.
    pub fn lost(&mut self, now_ms: i64) {
        for seen in self.panes.values_mut() {
            seen.printed_ms.get_or_insert(now_ms);
            seen.counted.lost = seen.counted.lost.wrapping_add(1);
        }
    }

    /// The panes the stream reports from now on.
    pub fn cover(&mut self, panes: std::collections::BTreeSet<PaneId>) {
        self.covered = panes;
    }

    /// `pane` was read at `now_ms`, `counted` taken just before its capture.
    pub fn read(&mut self, pane: PaneId, now_ms: i64, counted: Printed, shape: Shape) {
        self.panes.insert(
            pane,
            Seen {
                read_ms: now_ms,
                printed_ms: None,
                counted,
                width: shape.width,
                height: shape.height,
                history_limit: shape.history_limit,
                alternate_on: shape.alternate_on,
                position: shape.position,
            },
        );
    }

    /// Whether a listing at `now_ms` showing `pane` at `position` says it
    /// printed unreported: counted, not reported since its last read a
    /// pace ago or more, and moved since (on the alternate screen the
    /// cursor moves without history, which the pace reads).
    pub fn moved_unseen(&self, pane: PaneId, position: Position, now_ms: i64) -> bool {
        self.panes.get(&pane).is_some_and(|seen| {
            self.covered.contains(&pane)
                && seen.printed_ms.is_none()
                && !seen.alternate_on
                && now_ms - seen.read_ms >= self.pace
                && seen.position != position
        })
    }

    /// Whether a listing is due at `now_ms` for counted panes that were
    /// not reported since their last read (the last listing at
    /// `listed_ms`): a count that never comes leaves no other trigger.
    pub fn check_due(&self, listed_ms: i64, now_ms: i64) -> bool {
        now_ms - listed_ms >= QUIET_CHECK
            && self.panes.iter().any(|(p, seen)| {
                self.covered.contains(p) && seen.printed_ms.is_none() && !seen.alternate_on
            })
    }

    /// Forgets panes that closed.
    pub fn retain(&mut self, live: impl Fn(&PaneId) -> bool) {
        self.panes.retain(|p, _| live(p));
    }

    /// Every pane read before.
    pub fn known(&self) -> Vec<PaneId> {
        self.panes.keys().copied().collect()
    }

    /// Whether `pane` was read before.
    pub fn knows(&self, pane: PaneId) -> bool {
        self.panes.contains_key(&pane)
    }

    /// The panes that printed and are not read yet (their count is asked
    /// before [`Pacer::due`]).
    pub fn waiting(&self) -> Vec<PaneId> {
        let mut panes: Vec<PaneId> = self
            .panes
            .iter()
            .filter(|(p, s)| s.printed_ms.is_some() || !self.covered.contains(p))
            .map(|(p, _)| *p)
            .collect();
        panes.sort();
        panes
    }

    /// Which of `waiting` (with their counts now) are due at `now_ms`:
    /// empty unless one is due at once, then also those due within half a
    /// pace. `all`: every pane that printed is due (a reader waits for the
    /// journal to be complete).
    pub fn due(&self, waiting: &[(PaneId, Printed)], now_ms: i64, all: bool) -> Vec<PaneId> {
        let urgency: Vec<(PaneId, i64)> = waiting
            .iter()
            .filter_map(|(p, count)| Some((*p, self.due_at(*p, count)?)))
            .collect();
        if !all && !urgency.iter().any(|(_, at)| *at <= now_ms) {
            return Vec::new();
        }
        let soon = if all {
            i64::MAX
        } else {
            now_ms + self.pace / 2
        };
        urgency
            .into_iter()
            .filter(|(_, at)| *at <= soon)
            .map(|(p, _)| p)
            .collect()
    }

    /// When the next pane falls due if nothing else prints (ms), if any.
    pub fn next_due(&self) -> Option<i64> {
        self.panes
            .iter()
            .filter_map(|(p, s)| match s.printed_ms {
                Some(_) => Some(s.read_ms + self.pace),
                None if !self.covered.contains(p) => Some(s.read_ms + POLL),
                None => None,
            })
            .min()
    }

    /// Until when every pane's lines were read (ms): a pane that printed
    /// since its last read, or one the stream does not cover, only up to
    /// that read; `now_ms` if none.
    pub fn complete_until(&self, now_ms: i64) -> i64 {
        self.panes
            .iter()
            .filter(|(p, s)| s.printed_ms.is_some() || !self.covered.contains(p))
            .map(|(_, s)| s.read_ms)
            .fold(now_ms, i64::min)
    }

    /// At most how many rows `pane` pushed into history since its last
    /// read, given its count now; `None`: unknown (never read, output
    /// unseen, not covered, or on the alternate screen then).
    pub fn rows_since_read(&self, pane: PaneId, count: &Printed) -> Option<u64> {
        let seen = self.panes.get(&pane)?;
        if !self.covered.contains(&pane) || seen.alternate_on {
            return None;
        }
        count.rows_since(&seen.counted, seen.width, seen.height)
    }

    /// Whether `pane`'s count says tmux may have trimmed its history since
    /// its last read: the history its last listing showed plus the rows
    /// printed since reach its limit. Unknown rows say nothing (false).
    pub fn may_have_trimmed(&self, pane: PaneId, count: &Printed) -> bool {
        let Some(seen) = self.panes.get(&pane) else {
            return false;
        };
        self.rows_since_read(pane, count)
            .is_some_and(|rows| seen.position.history_size + rows >= seen.history_limit)
    }

    /// When `pane` is due given its count now; `None`: not at all.
    fn due_at(&self, pane: PaneId, count: &Printed) -> Option<i64> {
        let Some(seen) = self.panes.get(&pane) else {
            return Some(i64::MIN); // never read
        };
        if !self.covered.contains(&pane) {
            return Some(seen.read_ms + POLL);
        }
        seen.printed_ms?;
        if seen.alternate_on {
            return Some(seen.read_ms + self.pace);
        }
        let room = (seen.history_limit / SAFE_SHARE).max(1);
        match count.rows_since(&seen.counted, seen.width, seen.height) {
            Some(rows) if rows < room => Some(seen.read_ms + self.pace),
            _ => Some(i64::MIN),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    fn p(n: u32) -> PaneId {
        PaneId::from_number(n)
    }

    const SHAPE: Shape = Shape {
        width: 80,
        height: 24,
        history_limit: 2_000,
        alternate_on: false,
        position: Position {
            history_size: 0,
            cursor: (0, 0),
        },
    };

    fn lines(n: usize) -> Vec<u8> {
        "x\r\n".repeat(n).into_bytes()
    }

    fn pacer(panes: &[PaneId]) -> Pacer {
        let mut pacer = Pacer::default();
        pacer.cover(panes.iter().copied().collect());
        for &pane in panes {
            pacer.read(pane, 0, Printed::default(), SHAPE);
        }
        pacer
    }

    #[test]
    fn with_taps_a_pane_that_printed_is_read_the_tapped_pace_after_its_read() {
        let mut pacer = Pacer::with_pace(TAPPED_PACE);
        pacer.cover([p(1), p(2)].into_iter().collect());
        pacer.read(p(1), 0, Printed::default(), SHAPE);
        pacer.read(p(2), 0, Printed::default(), SHAPE);
        let mut count = Printed::default();
        count.add(&lines(1));
        pacer.printed(p(1), 100);
        assert_eq!(pacer.next_due(), Some(TAPPED_PACE));
        assert!(pacer.due(&[(p(1), count)], PACE, false).is_empty());
        assert_eq!(pacer.due(&[(p(1), count)], TAPPED_PACE, false), [p(1)]);
        // Within half the tapped pace, a pane is taken along.
        pacer.printed(p(2), 200);
        let both = [(p(1), count), (p(2), count)];
        assert_eq!(pacer.due(&both, TAPPED_PACE, false), [p(1), p(2)]);
        // Unreported, it moved: printed, once a tapped pace passed.
        let moved = Position {
            history_size: 1,
            cursor: (0, 0),
        };
        pacer.read(p(2), 0, Printed::default(), SHAPE);
        assert!(!pacer.moved_unseen(p(2), moved, PACE));
        assert!(pacer.moved_unseen(p(2), moved, TAPPED_PACE));
        // Near the history-limit, at once as ever.
        let mut many = Printed::default();
        many.add(&lines(600));
        assert_eq!(pacer.due(&[(p(1), many)], 300, false), [p(1)]);
    }

    #[test]
    fn a_quiet_pane_that_printed_a_line_is_read_a_pace_after_its_last_read() {
        let mut pacer = pacer(&[p(1)]);
        let mut count = Printed::default();
        assert!(pacer.waiting().is_empty());
        count.add(&lines(1));
        pacer.printed(p(1), 100);
        assert_eq!(pacer.waiting(), [p(1)]);
        assert!(pacer.due(&[(p(1), count)], 500, false).is_empty());
        assert_eq!(pacer.next_due(), Some(PACE));
        assert_eq!(pacer.due(&[(p(1), count)], PACE, false), [p(1)]);
        // Journaled up to its last read only, until it is read again.
        assert_eq!(pacer.complete_until(900), 0);
        pacer.read(p(1), PACE, count, SHAPE);
        assert_eq!(pacer.complete_until(1_200), 1_200);
    }

    #[test]
    fn a_pane_whose_count_reaches_its_history_limit_may_have_been_trimmed() {
        let mut pacer = pacer(&[p(1)]);
        let near = Shape {
            position: Position {
                history_size: 1_900,
                cursor: (0, 0),
            },
            ..SHAPE
        };
        pacer.read(p(1), 0, Printed::default(), near);
        let mut count = Printed::default();
        // 98 one-cell lines count 99 rows at most: 1,999 of 2,000.
        count.add(&lines(98));
        assert!(!pacer.may_have_trimmed(p(1), &count));
        count.add(&lines(1));
        assert!(pacer.may_have_trimmed(p(1), &count));
        // Rows unknown, or a pane never read: nothing said.
        count.lose();
        assert!(!pacer.may_have_trimmed(p(1), &count));
        assert!(!pacer.may_have_trimmed(p(2), &Printed::default()));
    }

    #[test]
    fn a_pane_printing_a_quarter_of_its_history_limit_is_due_at_once() {
        let mut pacer = pacer(&[p(1), p(2)]);
        let mut count = Printed::default();
        // 10,000 lines a second: 50 ms after its read it may have pushed
        // 500 rows (a quarter of 2,000), far less than a pace. 498 lines
        // of a cell each count 498 + 1 = 499 rows at most (runs of a cell
        // never wrap).
        count.add(&lines(498));
        pacer.printed(p(1), 10);
        assert!(pacer.due(&[(p(1), count)], 50, false).is_empty());
        count.add(&lines(1));
        assert_eq!(pacer.due(&[(p(1), count)], 50, false), [p(1)]);
        // Unknown rows (output unseen) are due at once too.
        count.lose();
        assert_eq!(pacer.due(&[(p(1), count)], 60, false), [p(1)]);
    }

    #[test]
    fn a_read_takes_the_panes_due_within_half_a_pace_and_no_others() {
        let mut pacer = Pacer::default();
        pacer.cover([p(1), p(2), p(3)].into_iter().collect());
        pacer.read(p(1), 0, Printed::default(), SHAPE);
        pacer.read(p(2), 400, Printed::default(), SHAPE);
        pacer.read(p(3), 700, Printed::default(), SHAPE);
        let c = Printed::default();
        for n in 1..=3 {
            pacer.printed(p(n), 800);
        }
        let waiting = [(p(1), c), (p(2), c), (p(3), c)];
        assert_eq!(pacer.due(&waiting, PACE, false), [p(1), p(2)]);
        // A flush asked for takes every pane that printed.
        assert_eq!(pacer.due(&waiting, 800, true), [p(1), p(2), p(3)]);
    }

    #[test]
    fn panes_never_read_or_not_covered_are_read_without_triggers() {
        let mut pacer = pacer(&[p(1)]);
        pacer.read(p(2), 0, Printed::default(), SHAPE);
        assert_eq!(pacer.waiting(), [p(2)]);
        let c = Printed::default();
        assert!(pacer.due(&[(p(2), c)], POLL - 1, false).is_empty());
        assert_eq!(pacer.due(&[(p(2), c)], POLL, false), [p(2)]);
        assert_eq!(pacer.due(&[(p(9), c)], 0, false), [p(9)]);
        assert_eq!(pacer.complete_until(300), 0);
    }

    #[test]
    fn a_counted_pane_whose_count_never_came_is_read_once_its_listing_moved() {
        let mut pacer = pacer(&[p(1), p(2)]);
        let at = |history_size, y| Position {
            history_size,
            cursor: (0, y),
        };
        let read_at = |position| Shape { position, ..SHAPE };
        pacer.read(p(1), 0, Printed::default(), read_at(at(10, 5)));
        pacer.read(p(2), 0, Printed::default(), read_at(at(10, 5)));
        // Not due by the counts: none came.
        assert!(pacer.waiting().is_empty());
        // Moved, a pace after its read: printed unreported.
        assert!(pacer.moved_unseen(p(1), at(11, 5), PACE));
        assert!(pacer.moved_unseen(p(1), at(10, 6), PACE));
        // Not moved; or too soon; or a count came (the counts decide).
        assert!(!pacer.moved_unseen(p(1), at(10, 5), PACE));
        assert!(!pacer.moved_unseen(p(1), at(11, 5), PACE - 1));
        pacer.printed(p(2), 10);
        assert!(!pacer.moved_unseen(p(2), at(11, 5), PACE));
        // Not counted (polled), or never read (read anyway): not this rule.
        pacer.cover([p(2)].into_iter().collect());
        assert!(!pacer.moved_unseen(p(1), at(11, 5), PACE));
        assert!(!pacer.moved_unseen(p(3), at(11, 5), PACE));
        // On the alternate screen the cursor moves without history.
        pacer.cover([p(1)].into_iter().collect());
        let alternate = Shape {
            alternate_on: true,
            ..read_at(at(10, 5))
        };
        pacer.read(p(1), 0, Printed::default(), alternate);
        assert!(!pacer.moved_unseen(p(1), at(10, 6), PACE));
    }

    #[test]
    fn a_listing_is_asked_when_counted_panes_were_quiet_that_long() {
        let mut pacer = Pacer::default();
        pacer.cover([p(1)].into_iter().collect());
        // Nothing read yet: nothing to check.
        assert!(!pacer.check_due(0, QUIET_CHECK));
        pacer.read(p(1), 0, Printed::default(), SHAPE);
        assert!(!pacer.check_due(0, QUIET_CHECK - 1));
        assert!(pacer.check_due(0, QUIET_CHECK));
        // A pane reported printing is read by its count, not this check.
        pacer.printed(p(1), 10);
        assert!(!pacer.check_due(0, QUIET_CHECK));
        // Nor is a pane not counted (it is polled).
        pacer.read(p(1), 0, Printed::default(), SHAPE);
        pacer.cover(std::collections::BTreeSet::new());
        assert!(!pacer.check_due(0, QUIET_CHECK));
    }
}
