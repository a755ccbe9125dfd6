//! The text and line tables of a stored capture (pure).

use bytes::Bytes;

use crate::tmux::{CaptureRange, CapturedText};

/// A pane's stored text: whole lines as tmux produced them, from
/// `first_abs` to the bottom of the screen at capture time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct PaneText {
    /// History size at capture time (absolute row of the screen's top).
    pub(super) history_size: u64,
    pub(super) width: u32,
    pub(super) height: u32,
    /// Shared with the captures served from it (a view, not a copy).
    pub(super) bytes: Bytes,
    /// Byte offset of each line's start.
    pub(super) starts: Vec<usize>,
    /// Absolute row (0 = oldest history row) of each line's start.
    pub(super) rows: Vec<u64>,
}

impl PaneText {
    pub(super) fn first_abs(&self) -> Option<u64> {
        self.rows.first().copied()
    }

    pub(super) fn memory(&self) -> usize {
        self.bytes.len() + self.starts.len() * 8 + self.rows.len() * 8 + 256
    }

    pub(super) fn line(&self, i: usize) -> &[u8] {
        let end = self.starts.get(i + 1).copied().unwrap_or(self.bytes.len());
        &self.bytes[self.starts[i]..end]
    }

    /// The lines `from..to` alone (`None` past the end), as a capture of
    /// just those rows would hold them.
    pub(super) fn lines(&self, from: usize, to: usize) -> Option<PaneText> {
        let start = *self.starts.get(from)?;
        let end = match self.starts.get(to) {
            Some(&end) => end,
            None if to == self.starts.len() => self.bytes.len(),
            None => return None,
        };
        Some(PaneText {
            history_size: self.history_size,
            width: self.width,
            height: self.height,
            bytes: self.bytes.slice(start..end),
            starts: self
                .starts
                .get(from..to)?
                .iter()
                .map(|s| s - start)
                .collect(),
            rows: self.rows.get(from..to)?.to_vec(),
        })
    }

    /// Lines that end above the screen (their rows will never change while
    /// the history is neither cleared, trimmed nor rewrapped).
    pub(super) fn history_complete(&self) -> usize {
        (0..self.rows.len())
            .take_while(|&i| {
                self.rows
                    .get(i + 1)
                    .is_some_and(|&next| next <= self.history_size)
            })
            .count()
    }

    /// From a capture reply: `None` when the text cannot be placed exactly
    /// (a line count that disagrees).
    pub(super) fn from_capture(text: &CapturedText) -> Option<PaneText> {
        let hsize = i64::try_from(text.history_size).ok()?;
        let starts = line_starts(&text.bytes);
        let rows: Vec<u64> = match &text.line_numbers {
            Some(numbers) => {
                if numbers.len() != starts.len() {
                    return None;
                }
                numbers
                    .iter()
                    .map(|&n| u64::try_from(hsize + n).ok())
                    .collect::<Option<_>>()?
            }
            None => {
                let first = u64::try_from(hsize + text.first_line).ok()?;
                (0..starts.len() as u64).map(|i| first + i).collect()
            }
        };
        Some(PaneText {
            history_size: text.history_size,
            width: text.pane_width,
            height: text.pane_height,
            bytes: text.bytes.clone(),
            starts,
            rows,
        })
    }

    /// The first row of `range` and the indexes of its first and last
    /// lines, or `None` when the stored lines cannot reproduce it exactly.
    pub(super) fn locate(&self, range: CaptureRange) -> Option<(u64, usize, usize)> {
        let (start, end) = range_rows(range, self.history_size, self.height);
        if start < self.first_abs()? {
            return None;
        }
        let index = self.rows.binary_search(&start).ok()?;
        // The last line is the one holding row `end`; it must end there
        // (a joined line running past `end` would come back cut).
        let last = match self.rows.binary_search(&end) {
            Ok(i) => i,
            Err(i) => i.checked_sub(1)?,
        };
        let end_ok = match self.rows.get(last + 1) {
            Some(&next) => next == end + 1,
            None => end + 1 == self.history_size + u64::from(self.height.max(1)),
        };
        (end_ok && last >= index).then_some((start, index, last))
    }

    /// The capture a cold request for `range` would return, or `None` when
    /// the stored lines cannot reproduce it exactly.
    pub(super) fn serve(&self, range: CaptureRange, join_wrapped: bool) -> Option<CapturedText> {
        let (start, index, last) = self.locate(range)?;
        let to = self
            .starts
            .get(last + 1)
            .copied()
            .unwrap_or(self.bytes.len());
        let bytes = self.bytes.slice(self.starts[index]..to);
        let first_line = i64::try_from(start).ok()? - i64::try_from(self.history_size).ok()?;
        // Stored rows are the transport's own joined numbers (cumulative
        // rows per line, checked against the rows captured), and a splice
        // keeps them cumulative across the anchor: the numbers a cold
        // capture from this row would compute, without recomputing display
        // widths.
        // Every line one row: no numbers needed (the transport's contract:
        // line number = first_line + index), the same hits either way.
        let one_row_each = self.rows[last] - self.rows[index] == (last - index) as u64;
        let line_numbers = if join_wrapped && !one_row_each {
            let hsize = i64::try_from(self.history_size).ok()?;
            let numbers: Option<Vec<i64>> = self.rows[index..=last]
                .iter()
                .map(|&r| i64::try_from(r).ok().map(|r| r - hsize))
                .collect();
            Some(numbers?)
        } else {
            None
        };
        Some(CapturedText {
            first_line,
            bytes,
            line_numbers,
            history_size: self.history_size,
            pane_height: self.height,
            pane_width: self.width,
            joined: join_wrapped,
        })
    }
}

/// Byte offsets of the lines of `bytes` (a last line without `\n` counts).
pub(super) fn line_starts(bytes: &[u8]) -> Vec<usize> {
    let mut starts = Vec::with_capacity(bytes.len() / 40 + 1);
    let mut pos = 0;
    while pos < bytes.len() {
        starts.push(pos);
        pos = memchr::memchr(b'\n', &bytes[pos..]).map_or(bytes.len(), |k| pos + k + 1);
    }
    starts
}

/// The absolute first and last row tmux captures for `range`, clamped the
/// way `capture-pane -S/-E` clamps (cmd-capture-pane.c).
pub(super) fn range_rows(range: CaptureRange, history_size: u64, height: u32) -> (u64, u64) {
    let h = history_size;
    let bottom = h + u64::from(height.max(1)) - 1;
    let at = |n: i64| -> u64 {
        let row = if n < 0 {
            h.saturating_sub(n.unsigned_abs())
        } else {
            h.saturating_add(n.unsigned_abs())
        };
        row.min(bottom)
    };
    match range {
        CaptureRange::Visible | CaptureRange::Scrollback(0) => (h, bottom),
        CaptureRange::Scrollback(n) => (h - n.min(h), bottom),
        CaptureRange::AllHistory => (0, bottom),
        CaptureRange::Lines { start, end } => {
            let (a, b) = (at(start), at(end));
            (a.min(b), a.max(b))
        }
    }
}

/// Whether `range` runs to the bottom of the screen (only such captures
/// are stored: a delta always fetches to the bottom).
pub(super) fn reaches_bottom(range: CaptureRange, height: u32) -> bool {
    match range {
        CaptureRange::Visible | CaptureRange::Scrollback(_) | CaptureRange::AllHistory => true,
        CaptureRange::Lines { start, end } => start.max(end) >= i64::from(height.max(1)) - 1,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use crate::cache::testing::text;

    #[test]
    fn serves_ranges_from_line_starts_only() {
        let stored = PaneText::from_capture(&text(3, -3, b"a\nb\nc\nd\ne\n")).unwrap();
        assert_eq!(stored.rows, vec![0, 1, 2, 3, 4]);
        assert_eq!(stored.history_complete(), 3);
        let all = stored.serve(CaptureRange::AllHistory, false).unwrap();
        assert_eq!(all.bytes, &b"a\nb\nc\nd\ne\n"[..]);
        assert_eq!(all.first_line, -3);
        let one = stored.serve(CaptureRange::Scrollback(1), false).unwrap();
        assert_eq!(one.bytes, &b"c\nd\ne\n"[..]);
        assert_eq!(one.first_line, -1);
        let screen = stored.serve(CaptureRange::Visible, false).unwrap();
        assert_eq!(screen.bytes, &b"d\ne\n"[..]);
        // A stored capture from row 1 cannot serve row 0.
        let partial = PaneText::from_capture(&text(3, -2, b"b\nc\nd\ne\n")).unwrap();
        assert!(partial.serve(CaptureRange::AllHistory, false).is_none());
    }

    /// A search reads the stored text itself: storing a reply and serving
    /// from it copy nothing (each copy was a pass over every cached byte,
    /// and a free of it when the search ended).
    #[test]
    fn storing_and_serving_share_the_text() {
        let reply = text(3, -3, b"a\nb\nc\nd\ne\n");
        let stored = PaneText::from_capture(&reply).unwrap();
        assert_eq!(stored.bytes.as_ptr(), reply.bytes.as_ptr());
        let screen = stored.serve(CaptureRange::Visible, false).unwrap();
        assert_eq!(screen.bytes, &b"d\ne\n"[..]);
        assert_eq!(screen.bytes.as_ptr(), stored.bytes[6..].as_ptr());
    }

    #[test]
    fn line_ranges_are_clamped_like_tmux_and_cut_on_line_ends() {
        let stored = PaneText::from_capture(&text(3, -3, b"a\nb\nc\nd\ne\n")).unwrap();
        let lines = |start, end| CaptureRange::Lines { start, end };
        let got = stored.serve(lines(-2, -1), false).unwrap();
        assert_eq!(got.bytes, &b"b\nc\n"[..]);
        assert_eq!(got.first_line, -2);
        assert_eq!(
            stored.serve(lines(-50, 0), false).unwrap().bytes,
            &b"a\nb\nc\nd\n"[..]
        );
        assert_eq!(
            stored.serve(lines(1, -1), false).unwrap().bytes,
            &b"c\nd\ne\n"[..]
        );
        assert_eq!(
            stored.serve(lines(0, 99), false).unwrap().bytes,
            &b"d\ne\n"[..]
        );
        assert!(reaches_bottom(lines(-5, 1), 2));
        assert!(!reaches_bottom(lines(-5, 0), 2));
        // A joined line spanning rows 0-1 cannot end a range at row 0.
        let mut t = text(3, -3, b"aaaaaaaaaaaaaaa\nb\nc\nd\n");
        t.joined = true;
        t.line_numbers = Some(vec![-3, -1, 0, 1]);
        let joined = PaneText::from_capture(&t).unwrap();
        assert!(joined.serve(lines(-3, -3), true).is_none());
        assert_eq!(
            joined.serve(lines(-3, -2), true).unwrap().bytes,
            &b"aaaaaaaaaaaaaaa\n"[..]
        );
        assert_eq!(
            joined.serve(lines(-3, -1), true).unwrap().bytes,
            &b"aaaaaaaaaaaaaaa\nb\n"[..]
        );
    }

    #[test]
    fn joined_lines_are_served_only_from_their_first_row() {
        let mut t = text(3, -3, b"aaaaaaaaaaaaaaa\nb\nc\nd\n");
        t.joined = true;
        t.line_numbers = Some(vec![-3, -1, 0, 1]);
        let stored = PaneText::from_capture(&t).unwrap();
        assert_eq!(stored.rows, vec![0, 2, 3, 4]);
        assert!(stored.serve(CaptureRange::Scrollback(2), true).is_none());
        let one = stored.serve(CaptureRange::Scrollback(1), true).unwrap();
        // Rows 2, 3, 4: one row each, numbered by first_line.
        assert_eq!(one.line_numbers, None);
        assert_eq!(one.first_line, -1);
        let all = stored.serve(CaptureRange::AllHistory, true).unwrap();
        assert_eq!(all.line_numbers, Some(vec![-3, -1, 0, 1]));
    }
}
