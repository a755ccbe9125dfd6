//! What counts as new text in one pane, and the check of a capture
//! against it.
//!
//! Only text that appears after the call started counts: rows above the
//! terminal cursor at the start are old, and the cursor's own row counts
//! only once its text changed (so a prompt already on screen does not
//! match). Rows are tracked as absolute positions ([`crate::tmux::rows`]),
//! which stay put while a pane prints and move up when tmux trims a full
//! history: where a trim was possible the lines above the start are found
//! again by their anchor (once, else the start moves up by as many rows
//! as history shrank).

use panescan_engine::Matcher;

use crate::tmux::rows::{rows_of, trim_step, Anchor, Place};
use crate::tmux::{CaptureRange, CapturedText, Pane, PaneId};

/// Rows scanned per check at most (a pane printing faster than this between
/// two checks has its oldest new rows skipped).
const MAX_SCAN_ROWS: i64 = 10_000;
/// Rows above the start row a capture after the first takes too: a pane
/// that printed scrolls between the event and the capture, and the rows it
/// scrolled by would otherwise be missing from the capture, which would
/// have to be taken again.
const SLACK_ROWS: i64 = 64;
/// Matched line text is cut to this.
const MAX_LINE_BYTES: usize = 4096;

/// A line that matched.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hit {
    /// The pane.
    pub pane: PaneId,
    /// Its text (right-trimmed, cut to 4,096 bytes).
    pub text: String,
    /// Its tmux line number (0 = top of screen).
    pub line_number: i64,
    /// Which pattern matched (the lowest index that matches the line).
    pub pattern_index: usize,
}

/// One watched pane.
#[derive(Clone, Debug)]
pub struct PaneWatch {
    /// The pane.
    pub pane: PaneId,
    /// Absolute row of the cursor when the call started.
    start_abs: i64,
    /// That row's text then (right-trimmed); `None` until the first capture.
    start_row: Option<String>,
    /// History size last seen.
    history: i64,
    /// Pane height last seen.
    height: i64,
    /// The pane's history limit (0: unknown, no trim assumed).
    limit: u64,
    /// The lines above `start_abs` when last captured.
    anchor: Option<Anchor>,
    /// Rows more above the start the next capture takes: a trim step, when
    /// the anchor was not in the last capture.
    reach: i64,
}

impl PaneWatch {
    /// The pane as listed when the call started.
    pub fn new(pane: &Pane) -> PaneWatch {
        let mut w = PaneWatch::at(
            pane.pane_id,
            pane.history_size,
            pane.cursor_y,
            pane.pane_height,
        );
        w.limit = pane.history_limit;
        w
    }

    /// A pane with this history size, cursor row and height at the start.
    pub fn at(pane: PaneId, history_size: u64, cursor_y: u32, height: u32) -> PaneWatch {
        let history = i64::try_from(history_size).unwrap_or(i64::MAX / 2);
        PaneWatch {
            pane,
            start_abs: history + i64::from(cursor_y),
            start_row: None,
            history,
            height: i64::from(height.max(1)),
            limit: 0,
            anchor: None,
            reach: 0,
        }
    }

    /// The lines to capture: from the start row (at most
    /// [`MAX_SCAN_ROWS`] back) to the bottom of the screen; after the
    /// first capture, [`SLACK_ROWS`] more above it.
    pub fn range(&self) -> CaptureRange {
        let bottom = self.height - 1;
        let slack = if self.start_row.is_some() {
            SLACK_ROWS
        } else {
            0
        };
        let from = ((self.start_abs - self.history).max(-self.history) - slack - self.reach)
            .max(bottom - MAX_SCAN_ROWS);
        CaptureRange::Lines {
            start: from.min(bottom),
            end: bottom,
        }
    }

    /// Takes in a capture of [`PaneWatch::range`]: returns whether it was
    /// aimed right (it reaches back to the start row, or as far back as a
    /// capture goes); if not, capture again with the new range.
    pub fn absorb(&mut self, cap: &CapturedText) -> bool {
        let now = i64::try_from(cap.history_size).unwrap_or(i64::MAX / 2);
        match self.refind(cap) {
            Refound::Moved(abs) => self.start_abs = abs,
            // Not in this capture: one reaching a trim step further up.
            Refound::Farther(step) => {
                self.reach = step;
                return false;
            }
            // tmux dropped the oldest history rows: every absolute row
            // moved up by as many.
            Refound::Unknown if now < self.history => self.start_abs -= self.history - now,
            Refound::Unknown | Refound::Here => {}
        }
        self.reach = 0;
        self.history = now;
        self.height = i64::from(cap.pane_height.max(1));
        // A pane that scrolled since the range was worked out (its history
        // grew) is still covered when it scrolled less than the slack.
        cap.first_line + now <= self.start_abs
            || cap.first_line <= -now
            || cap.first_line <= self.height - 1 - MAX_SCAN_ROWS
    }

    /// Where the lines above the start are in `cap`, when tmux may have
    /// trimmed history since they were seen.
    fn refind(&mut self, cap: &CapturedText) -> Refound {
        let (Some(anchor), Some(step)) = (self.anchor, trim_step(self.limit, cap.history_size))
        else {
            return Refound::Unknown;
        };
        let rows = rows_of(cap);
        match anchor.place(&rows, &cap.bytes, self.start_abs, Some(step)) {
            Place::At(_) => Refound::Here,
            Place::Moved(j) => {
                let past = rows.last().map_or(self.start_abs, |r| r.abs + 1);
                Refound::Moved(rows.get(j).map_or(past, |r| r.abs))
            }
            Place::Lost if self.reach == 0 => {
                Refound::Farther(i64::try_from(step).unwrap_or(0).min(MAX_SCAN_ROWS))
            }
            Place::Lost => Refound::Unknown,
        }
    }

    /// Keeps the lines above the start as its anchor.
    fn keep_anchor(&mut self, cap: &CapturedText) {
        let rows = rows_of(cap);
        if let Some(k) = rows.iter().position(|r| r.abs == self.start_abs) {
            self.anchor = Some(Anchor::above(&rows, &cap.bytes, k, self.start_abs));
        }
    }

    /// A pane created after the call started: all its text is new.
    pub fn fresh(pane: &Pane) -> PaneWatch {
        let mut w = PaneWatch::at(pane.pane_id, pane.history_size, 0, pane.pane_height);
        w.start_abs = 0;
        w.start_row = Some(String::new());
        w
    }

    /// The first new line of `cap` that `matcher` matches. The first
    /// capture also records the start row's text.
    #[cfg(test)]
    pub fn scan(&mut self, cap: &CapturedText, matcher: &Matcher) -> Option<Hit> {
        self.scan_new(cap, matcher, 1).into_iter().next()
    }

    /// Up to `max` new lines of `cap` that `matcher` matches, in order; the
    /// start moves past the last of them, so a later capture does not
    /// report them again. The first capture also records the start row's
    /// text.
    pub fn scan_new(&mut self, cap: &CapturedText, matcher: &Matcher, max: usize) -> Vec<Hit> {
        let text = String::from_utf8_lossy(&cap.bytes);
        let abs0 = cap.first_line + i64::try_from(cap.history_size).unwrap_or(0);
        let row_at = |abs: i64| {
            let at = usize::try_from(abs - abs0).ok();
            at.and_then(|i| text.lines().nth(i))
                .unwrap_or("")
                .trim_end()
                .to_owned()
        };
        if self.start_row.is_none() {
            self.start_row = Some(row_at(self.start_abs));
        }
        let start_row = self.start_row.as_deref().unwrap_or("");
        let mut hits = Vec::new();
        let mut last_abs = None;
        for (i, line) in text.lines().enumerate() {
            if hits.len() >= max {
                break;
            }
            let abs = abs0 + i as i64;
            if abs < self.start_abs || (abs == self.start_abs && line.trim_end() == start_row) {
                continue;
            }
            let Some(pattern_index) = matcher.matching_pattern(line.as_bytes()) else {
                continue;
            };
            let mut text = line.trim_end().to_owned();
            crate::tools::cut_to_bytes(&mut text, MAX_LINE_BYTES);
            hits.push(Hit {
                pane: self.pane,
                text,
                line_number: cap.first_line + i as i64,
                pattern_index,
            });
            last_abs = Some(abs);
        }
        if let Some(abs) = last_abs {
            // Rows below the start are scanned on every capture: those
            // after the last hit count again (an unchanged row that did
            // not match will not match), an empty row never matches.
            self.start_abs = abs + 1;
            self.start_row = Some(String::new());
        }
        self.keep_anchor(cap);
        hits
    }
}

/// Where [`PaneWatch::refind`] found the lines above the start.
enum Refound {
    /// At their row: nothing moved.
    Here,
    /// Moved: the start's new absolute row.
    Moved(i64),
    /// Not in the capture: capture this many rows more above.
    Farther(i64),
    /// No trim possible, no anchor, or nowhere certain.
    Unknown,
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use panescan_engine::PatternOptions;

    fn watch(history: u64, cursor_y: u32, height: u32) -> PaneWatch {
        PaneWatch::at(PaneId::from_number(4), history, cursor_y, height)
    }

    fn cap(first_line: i64, history: u64, height: u32, lines: &[&str]) -> CapturedText {
        let mut bytes = Vec::new();
        for l in lines {
            bytes.extend_from_slice(l.as_bytes());
            bytes.push(b'\n');
        }
        CapturedText {
            first_line,
            bytes: bytes.into(),
            history_size: history,
            pane_height: height,
            ..CapturedText::default()
        }
    }

    fn matcher(patterns: &[&str]) -> Matcher {
        Matcher::new(patterns, PatternOptions::default()).unwrap()
    }

    #[test]
    fn old_rows_and_the_unchanged_cursor_row_do_not_count() {
        let mut w = watch(10, 2, 5);
        assert_eq!(w.range(), CaptureRange::Lines { start: 2, end: 4 });
        let m = matcher(&["done"]);
        let first = cap(2, 10, 5, &["$ echo done", "", ""]);
        assert!(w.absorb(&first));
        assert_eq!(w.scan(&first, &m), None);
        // The command ran: its output is below the old cursor row.
        let later = cap(2, 10, 5, &["$ echo done", "done", "$"]);
        assert!(w.absorb(&later));
        let hit = w.scan(&later, &m).unwrap();
        assert_eq!((hit.line_number, hit.text.as_str()), (3, "done"));
        // The cursor row itself counts once its text changed.
        let mut w = watch(0, 0, 3);
        let first = cap(0, 0, 3, &["$ ", "", ""]);
        w.absorb(&first);
        assert_eq!(w.scan(&first, &m), None);
        let typed = cap(0, 0, 3, &["$ done", "", ""]);
        w.absorb(&typed);
        assert_eq!(w.scan(&typed, &m).unwrap().line_number, 0);
    }

    #[test]
    fn history_growth_reaims_and_trimming_moves_the_start() {
        let mut w = watch(100, 4, 5);
        // The pane scrolled by 3 rows before the first capture: aimed
        // wrong (no slack yet).
        let c = cap(4, 103, 5, &["x"]);
        assert!(!w.absorb(&c));
        assert_eq!(w.range(), CaptureRange::Lines { start: 1, end: 4 });
        // A full history drops 2 rows: in absolute rows the start moved up
        // by 2, so on screen it stays where it was, and a capture from
        // line 1 down covers it.
        let c = cap(1, 101, 5, &["$ go", "", "", ""]);
        assert!(w.absorb(&c));
        assert_eq!(w.range(), CaptureRange::Lines { start: 1, end: 4 });
        let m = matcher(&["go"]);
        assert_eq!(w.scan(&c, &m), None);
        let c = cap(1, 101, 5, &["$ go", "go", "", ""]);
        assert_eq!(w.scan(&c, &m).unwrap().line_number, 2);
    }

    #[test]
    fn a_pane_that_scrolled_less_than_the_slack_needs_no_second_capture() {
        let mut w = watch(100, 4, 5);
        let m = matcher(&["done"]);
        let first = cap(4, 100, 5, &["$ make"]);
        assert!(w.absorb(&first));
        assert_eq!(w.scan(&first, &m), None);
        // Later captures reach SLACK_ROWS above the start row.
        assert_eq!(
            w.range(),
            CaptureRange::Lines {
                start: 4 - SLACK_ROWS,
                end: 4
            }
        );
        // The pane printed 3 lines and scrolled by 3 before the capture:
        // the start row (absolute 104) is now line 1, still covered.
        let mut rows = vec!["old"; 60];
        rows.extend(["$ make", "a", "b", "done"]);
        let later = cap(1 - 60, 103, 5, &rows);
        assert!(w.absorb(&later));
        let hit = w.scan(&later, &m).unwrap();
        assert_eq!((hit.line_number, hit.text.as_str()), (4, "done"));
    }

    #[test]
    fn lines_reported_once_are_not_reported_again() {
        let mut w = watch(0, 0, 4);
        let m = matcher(&["fail"]);
        let first = cap(0, 0, 4, &["$ ", "", "", ""]);
        assert!(w.scan_new(&first, &m, 5).is_empty());
        let c = cap(0, 0, 4, &["$ ", "fail 1", "fail 2", ""]);
        let lines = |h: Vec<Hit>| h.iter().map(|h| h.line_number).collect::<Vec<_>>();
        assert_eq!(lines(w.scan_new(&c, &m, 1)), [1]);
        assert_eq!(lines(w.scan_new(&c, &m, 5)), [2]);
        assert!(w.scan_new(&c, &m, 5).is_empty());
        // The row after the last hit counts once it holds new text.
        let c = cap(0, 0, 4, &["$ ", "fail 1", "fail 2", "fail 3"]);
        assert_eq!(lines(w.scan_new(&c, &m, 5)), [3]);
    }

    /// A pane at its history limit (100: trims of 10 rows) prints 20 lines
    /// between two captures, DONE among the first: tmux trimmed 20 rows and
    /// history is 95 again, as at the start. Counting by history size the
    /// start stays put and DONE, now above it, is old; the anchor above the
    /// start, found 20 rows up, says where the new lines begin.
    #[test]
    fn a_trim_that_leaves_history_as_it_was_moves_the_start() {
        let mut w = watch(95, 4, 5);
        w.limit = 100;
        let m = matcher(&["DONE"]);
        let mut before: Vec<String> = (0..95).map(|i| format!("line {i}")).collect();
        before.extend(["$ make".into(), "".into(), "".into(), "".into(), "".into()]);
        let text: Vec<&str> = before.iter().map(String::as_str).collect();
        // First capture: the start row (99, "" under "$ make") and above.
        let first = cap(-95, 95, 5, &text);
        assert!(w.absorb(&first));
        assert!(w.scan(&first, &m).is_none());
        // 20 rows later, trimmed by 20: every old row 20 up.
        let mut after: Vec<String> = before[20..99].to_vec();
        after.push("building".into());
        after.push("DONE".into());
        after.extend((0..18).map(|i| format!("out {i}")));
        after.push("$ ".into());
        assert_eq!(after.len(), 100);
        let text: Vec<&str> = after.iter().map(String::as_str).collect();
        let later = cap(-95, 95, 5, &text);
        assert!(w.absorb(&later));
        let hit = w.scan(&later, &m).unwrap();
        assert_eq!(hit.text, "DONE");
    }

    #[test]
    fn the_lowest_matching_pattern_is_reported() {
        let mut w = watch(0, 0, 4);
        let first = cap(0, 0, 4, &["", "", "", ""]);
        w.absorb(&first);
        let m = matcher(&["zeta", "alpha", "beta"]);
        assert_eq!(w.scan(&first, &m), None);
        let c = cap(0, 0, 4, &["", "beta then alpha", "zeta", ""]);
        let hit = w.scan(&c, &m).unwrap();
        assert_eq!(hit.pattern_index, 1);
        assert_eq!(hit.line_number, 1);
    }

    /// A pane at its history limit (100: trims of 10 rows) whose lines
    /// above the start are in no capture (it printed more than a capture
    /// took): a capture one trim step further up is taken once, then the
    /// start stays where it was counted.
    #[test]
    fn lines_above_the_start_not_captured_are_looked_for_once_a_trim_step_further_up() {
        let mut w = watch(95, 4, 5);
        w.limit = 100;
        let m = matcher(&["DONE"]);
        let mut before: Vec<String> = (0..95).map(|i| format!("line {i}")).collect();
        before.extend(["$ make".into(), "".into(), "".into(), "".into(), "".into()]);
        let text: Vec<&str> = before.iter().map(String::as_str).collect();
        let first = cap(-95, 95, 5, &text);
        assert!(w.absorb(&first));
        assert!(w.scan(&first, &m).is_none());
        assert_eq!(
            w.range(),
            CaptureRange::Lines {
                start: 4 - SLACK_ROWS,
                end: 4
            }
        );
        // Every captured row is new: the anchor is not there.
        let new: Vec<String> = (0..65).map(|i| format!("new {i}")).collect();
        let text: Vec<&str> = new.iter().map(String::as_str).collect();
        let lost = cap(4 - SLACK_ROWS, 95, 5, &text);
        assert!(
            !w.absorb(&lost),
            "taken as aimed though the anchor was not found"
        );
        let farther = 4 - SLACK_ROWS - 10;
        assert_eq!(
            w.range(),
            CaptureRange::Lines {
                start: farther,
                end: 4
            }
        );
        // Not there either: the start is taken as counted, and the next
        // capture is aimed as before.
        let new: Vec<String> = (0..75).map(|i| format!("newer {i}")).collect();
        let text: Vec<&str> = new.iter().map(String::as_str).collect();
        assert!(w.absorb(&cap(farther, 95, 5, &text)));
        assert_eq!(
            w.range(),
            CaptureRange::Lines {
                start: 4 - SLACK_ROWS,
                end: 4
            }
        );
    }

    /// A pane that printed more than [`MAX_SCAN_ROWS`] since the start: a
    /// capture that reaches that far back is aimed, one a row short is not.
    #[test]
    fn a_capture_as_far_back_as_captures_go_is_aimed_and_one_a_row_short_is_not() {
        let mut w = watch(0, 0, 5);
        let first = cap(0, 0, 5, &["$", "", "", "", ""]);
        assert!(w.absorb(&first));
        assert!(w.scan(&first, &matcher(&["x"])).is_none());
        let edge = 4 - MAX_SCAN_ROWS;
        assert!(w.clone().absorb(&cap(edge, 20_000, 5, &[])));
        assert!(!w.clone().absorb(&cap(edge + 1, 20_000, 5, &[])));
        // Scrolled past the slack, the capture still in history: not aimed.
        assert!(!w.clone().absorb(&cap(-SLACK_ROWS, 200, 5, &[])));
    }

    /// tmux's history size is an int; a larger number (never seen) is
    /// taken as half of what an i64 holds, not wrapped.
    #[test]
    fn a_history_size_past_i64_is_taken_as_half_of_its_range() {
        let mut w = PaneWatch::at(PaneId::from_number(4), u64::MAX, 2, 5);
        assert_eq!((w.history, w.start_abs), (i64::MAX / 2, i64::MAX / 2 + 2));
        assert!(w.absorb(&cap(2, u64::MAX, 5, &["", "", ""])));
        assert_eq!((w.history, w.start_abs), (i64::MAX / 2, i64::MAX / 2 + 2));
    }
}
