//! Counted chunks: a sweep with one header per group of panes instead of
//! one per pane.
//!
//! A header is a command, and on a big server tmux spends about as much on
//! a bare `display-message` as on a visible `capture-pane`. A chunk's script
//! runs without tmux yielding, so the listing at its top gives every pane's
//! rows as the captures see them, and a group's lines are dealt out to its
//! panes by counting rows:
//!
//! ```text
//! list-panes -a -F "TOKEN L #{pane_id} #{history_size} #{pane_width} #{pane_height}"
//! capture-pane -p [-N [-T] | -J] [-e] -t %P [-S s]      (GROUP panes)
//! display-message -p "TOKEN g"
//! ...
//! display-message -p "TOKEN end"
//! ```
//!
//! What must hold: a group that does not add up is never guessed at (its
//! panes are captured again with headers); a visible chunk ([`Rows::OneEach`])
//! sends a pane that may hold a wrapped row back to a headed `-J` capture; a
//! deep chunk ([`Rows::Joined`]) counts the rows a joined line fills, never
//! too many, and a pane whose lines do not fill its rows is captured again
//! unjoined. Line numbers are exact either way.
//!
//! Why, and how each count is made: NOTES.md.

use super::script::{range_args, span, LISTING, PROBE_FIELDS};
use super::split::{
    build, gone, listing_entry, pane_shape, visible_text, HeaderLine, Output, Split,
};
use super::{CaptureOptions, CaptureRange, CaptureRequest};
use crate::tmux::TmuxError;

/// Panes between two headers: a header costs tmux about a capture, and a
/// group is handed out once its header is read.
pub(crate) const GROUP: usize = 32;

/// How a counted chunk's lines sit on its panes' rows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Rows {
    /// One line a row: unjoined captures (`-N` where joining was asked;
    /// the panes whose rows may have wrapped are then captured again).
    OneEach,
    /// Joined deep captures (`-J`): a line fills the rows its text takes.
    Joined,
}

/// How a chunk of these requests is counted, if it can be: all visible
/// (their rows are the listed heights), or all deep (the listed history
/// and height give their rows, `super::span`); `None` for a mix or an
/// explicit range of lines.
pub(crate) fn rows_for(chunk: &[CaptureRequest], options: CaptureOptions) -> Option<Rows> {
    let visible =
        |r: &CaptureRequest| matches!(r.range, CaptureRange::Visible | CaptureRange::Scrollback(0));
    let deep = |r: &CaptureRequest| {
        matches!(
            r.range,
            CaptureRange::Scrollback(1..) | CaptureRange::AllHistory
        )
    };
    if chunk.iter().all(visible) {
        Some(Rows::OneEach)
    } else if chunk.iter().all(deep) {
        Some(if options.join_wrapped {
            Rows::Joined
        } else {
            Rows::OneEach
        })
    } else {
        None
    }
}

/// The script of a counted chunk; `flags` from
/// [`super::anchor::Anchor::counted_flags`], which give an unjoined row the
/// bytes of a joined capture (a joined deep chunk captures with `-J`
/// itself): without joining, a capture's plain flags already give what a
/// headed one does.
pub(crate) fn script(
    token: &str,
    chunk: &[CaptureRequest],
    options: CaptureOptions,
    flags: &str,
) -> String {
    let joined = rows_for(chunk, options) == Some(Rows::Joined);
    let mut s = String::with_capacity(chunk.len() * 48 + 200);
    s.push_str(&format!(
        "list-panes -a -F \"{token} {LISTING} {}\"\n",
        PROBE_FIELDS
    ));
    for (i, r) in chunk.iter().enumerate() {
        if i > 0 && i % GROUP == 0 {
            s.push_str(&format!("display-message -p \"{token} g\"\n"));
        }
        s.push_str("capture-pane -p");
        if joined {
            s.push_str(" -J");
        } else if options.join_wrapped {
            s.push(' ');
            s.push_str(flags);
        }
        if options.escapes {
            s.push_str(" -e");
        }
        s.push_str(&format!(" -t {}", r.pane));
        let (start, end) = range_args(r.range);
        if let Some(start) = start {
            s.push_str(&format!(" -S {start}"));
        }
        if let Some(end) = end {
            s.push_str(&format!(" -E {end}"));
        }
        s.push('\n');
    }
    s.push_str(&format!("display-message -p \"{token} end\"\n"));
    s
}

/// Cuts a counted chunk's output into panes, a group at a time.
pub(crate) struct Counted<'a> {
    output: Output,
    chunk: &'a [CaptureRequest],
    options: CaptureOptions,
    rows: Rows,
    /// Where the current group's text starts (after the last header line).
    group_start: usize,
    /// Requests before this one have been handed out.
    next: usize,
    /// Listing fields by pane id.
    listed: std::collections::HashMap<Vec<u8>, Vec<u8>>,
    ended: bool,
}

impl<'a> Counted<'a> {
    pub(crate) fn new(token: &str, chunk: &'a [CaptureRequest], options: CaptureOptions) -> Self {
        Counted {
            output: Output::new(token),
            chunk,
            options,
            rows: rows_for(chunk, options).unwrap_or(Rows::OneEach),
            group_start: 1,
            next: 0,
            listed: Default::default(),
            ended: false,
        }
    }

    /// Whether the end marker has been read: every request was handed out.
    pub(crate) fn ended(&self) -> bool {
        self.ended
    }

    /// Takes the next piece of output; `emit(i, result)` is called for every
    /// request of each group completed, in order, each exactly once.
    pub(crate) fn push(
        &mut self,
        data: &[u8],
        emit: &mut dyn FnMut(usize, Result<Split, TmuxError>),
    ) {
        if self.ended {
            return;
        }
        self.output.push(data);
        while let Some(HeaderLine {
            newline,
            fields,
            text_start,
        }) = self.output.next_header()
        {
            if let Some((pane, rest)) = listing_entry(&fields) {
                self.listed.insert(pane.to_vec(), rest.to_vec());
            } else if fields == b"g" || fields == b"end" {
                let until = if fields == b"end" {
                    self.chunk.len()
                } else {
                    (self.next + GROUP).min(self.chunk.len())
                };
                let text = self.output.text(self.group_start..newline + 1);
                self.group(text, self.next, until, emit);
                self.next = until;
                if fields == b"end" {
                    self.ended = true;
                    self.output.release();
                    return;
                }
            }
            self.group_start = text_start;
        }
        self.compact();
    }

    /// Hands out requests `from..until`, whose captures are `text`.
    fn group(
        &self,
        text: &[u8],
        from: usize,
        until: usize,
        emit: &mut dyn FnMut(usize, Result<Split, TmuxError>),
    ) {
        let group = self.chunk.get(from..until).unwrap_or_default();
        let fields: Vec<Option<&[u8]>> = group
            .iter()
            .map(|r| {
                self.listed
                    .get(r.pane.to_string().as_bytes())
                    .map(Vec::as_slice)
            })
            .collect();
        let shapes: Vec<(usize, u32)> = group
            .iter()
            .zip(&fields)
            .map(|(r, f)| f.map_or((0, 0), |f| listed_rows(f, r.range)))
            .collect();
        let ends = match self.rows {
            Rows::OneEach => one_each_ends(text, &shapes),
            Rows::Joined => joined_ends(text, &shapes),
        };
        let mut at = 0usize;
        for (k, (index, (r, f))) in (from..).zip(group.iter().zip(&fields)).enumerate() {
            let Some(f) = f else {
                emit(index, Err(gone(r.pane)));
                continue;
            };
            let Some(end) = ends.as_ref().and_then(|e| e.get(k).copied()) else {
                emit(index, Ok(again()));
                continue;
            };
            let bytes = text.get(at..end).unwrap_or_default();
            at = end;
            let result = build(r, f, bytes, self.options).map(|mut s| {
                if self.rows == Rows::OneEach
                    && self.options.join_wrapped
                    && may_have_wrapped(bytes, s.text.pane_width)
                {
                    s = again();
                }
                s
            });
            emit(index, result);
        }
    }

    /// Drops the bytes no group needs any more.
    fn compact(&mut self) {
        self.group_start -= self.output.compact(self.group_start);
    }
}

/// A pane to be captured again with a header of its own.
fn again() -> Split {
    Split {
        text: Default::default(),
        rows_match: true,
        again: true,
    }
}

/// The rows a capture of `range` prints of a pane listed with `fields`
/// (`%P HISTORY WIDTH HEIGHT`), and the pane's width.
fn listed_rows(fields: &[u8], range: CaptureRange) -> (usize, u32) {
    let text = String::from_utf8_lossy(fields);
    let (hsize, width, height) = pane_shape(text.split(' ').skip(1));
    let (first, last) = span(range, hsize, height);
    (usize::try_from(last - first + 1).unwrap_or(0), width)
}

/// Where each pane's text ends in a group's `text` of one line a row, the
/// panes' `(rows, width)` given; `None` when the lines do not add up.
fn one_each_ends(text: &[u8], shapes: &[(usize, u32)]) -> Option<Vec<usize>> {
    let lines = memchr::memchr_iter(b'\n', text).count();
    let rows: usize = shapes.iter().map(|s| s.0).sum();
    if lines != rows || text.last().is_some_and(|&b| b != b'\n') {
        return None;
    }
    let mut at = 0;
    Some(
        shapes
            .iter()
            .map(|&(n, _)| {
                at = nth_line_end(text, at, n);
                at
            })
            .collect(),
    )
}

/// Where each pane's text ends in a group's `text` of joined lines: each
/// pane takes lines until they fill its rows. `None` when a line's rows
/// are not sure or the lines do not fill the rows exactly.
///
/// Why a wrong guess cannot go unseen: a line is counted as sure only
/// where its rows can be too few, never too many (`joined_line_rows`), so
/// any error leaves the group's lines filling fewer rows than its panes
/// were listed with, and the group does not add up; it is then captured
/// again with headers.
fn joined_ends(text: &[u8], shapes: &[(usize, u32)]) -> Option<Vec<usize>> {
    let mut ends = Vec::with_capacity(shapes.len());
    let mut at = 0usize;
    for &(rows, width) in shapes {
        let mut filled = 0usize;
        while filled < rows {
            let rest = text.get(at..)?;
            let eol = memchr::memchr(b'\n', rest)?;
            filled += joined_line_rows(&rest[..eol], width)?;
            at += eol + 1;
        }
        if filled != rows {
            return None;
        }
        ends.push(at);
    }
    (at == text.len()).then_some(ends)
}

/// The rows a joined line fills on a pane `width` cells wide, where sure.
///
/// tmux prints at most the pane's width in cells of each row, and a row
/// that wrapped is full to the edge (cmd-capture-pane.c, grid.c). A cell
/// takes at least a byte: a line no longer in bytes than the pane is wide
/// fills one row. A longer line whose shown text is ASCII (one byte, one
/// cell) fills `ceil(bytes / width)` rows, or more if a wrapped row was
/// cleared short of the edge, never fewer. A longer line with any other
/// character (a wide one pushed to the next row leaves a cell empty,
/// widths tmux may see otherwise): `None`.
fn joined_line_rows(line: &[u8], width: u32) -> Option<usize> {
    let width = usize::try_from(width.max(1)).ok()?;
    if line.len() <= width {
        return Some(1);
    }
    let shown = if line.contains(&0x1b) {
        std::borrow::Cow::Owned(visible_text(line).into_bytes())
    } else {
        std::borrow::Cow::Borrowed(line)
    };
    shown.is_ascii().then(|| shown.len().div_ceil(width).max(1))
}

/// Where the `n`th line of `text` counted from `start` ends (after its
/// newline).
fn nth_line_end(text: &[u8], start: usize, n: usize) -> usize {
    if n == 0 {
        return start;
    }
    memchr::memchr_iter(b'\n', text.get(start..).unwrap_or_default())
        .nth(n - 1)
        .map_or(text.len(), |i| start + i + 1)
}

/// Whether some row of `bytes` (one row a line) may have wrapped on a pane
/// `width` cells wide: its shown text reaches `width - 1` bytes.
fn may_have_wrapped(bytes: &[u8], width: u32) -> bool {
    let edge = usize::try_from(width.saturating_sub(1)).unwrap_or(usize::MAX);
    // Rows found with memchr: splitting with a byte closure was most of
    // what cutting a counted chunk cost.
    let ends = memchr::memchr_iter(b'\n', bytes).chain(std::iter::once(bytes.len()));
    let mut start = 0;
    ends.map(|end| {
        let row = bytes.get(start..end).unwrap_or_default();
        start = end + 1;
        row
    })
    .any(|row| row.len() >= edge && (!row.contains(&0x1b) || visible_text(row).len() >= edge))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use crate::tmux::ids::PaneId;

    const TOKEN: &str = "Tok3nTok3nTok3nTok3nTk";

    fn requests(ids: &[u32]) -> Vec<CaptureRequest> {
        ids.iter()
            .map(|&i| CaptureRequest {
                pane: PaneId::from_number(i),
                range: CaptureRange::Visible,
            })
            .collect()
    }

    fn listing(panes: &[(u32, u32, u32)]) -> String {
        panes
            .iter()
            .map(|(id, w, h)| format!("{TOKEN} L %{id} 100 {w} {h}\n"))
            .collect()
    }

    /// Feeds `out` in pieces of `step` bytes; every emitted result, in order.
    fn cut(
        chunk: &[CaptureRequest],
        options: CaptureOptions,
        out: &str,
        step: usize,
    ) -> Vec<(usize, Result<Split, TmuxError>)> {
        let mut c = Counted::new(TOKEN, chunk, options);
        let mut got = Vec::new();
        for piece in out.as_bytes().chunks(step.max(1)) {
            c.push(piece, &mut |i, r| got.push((i, r)));
        }
        assert!(c.ended(), "the end marker was read");
        got
    }

    fn text(r: &Result<Split, TmuxError>) -> String {
        let s = r.as_ref().unwrap();
        assert!(!s.again);
        String::from_utf8(s.text.bytes.to_vec()).unwrap()
    }

    #[test]
    fn rows_are_dealt_out_by_the_listed_heights_in_any_pieces() {
        let chunk = requests(&[1, 2, 3]);
        let options = CaptureOptions {
            join_wrapped: true,
            escapes: false,
        };
        // Blank rows, repeated rows, a row that looks like a header but
        // lacks the token, trailing spaces.
        let out = format!(
            "{}a\n\n\nx\nx\n{TOKEN}x\nend\n  \n{TOKEN} end\n",
            listing(&[(1, 40, 3), (2, 40, 2), (3, 40, 3)])
        );
        for step in [1, 2, 7, 1000] {
            let got = cut(&chunk, options, &out, step);
            let idx: Vec<usize> = got.iter().map(|(i, _)| *i).collect();
            assert_eq!(idx, [0, 1, 2]);
            assert_eq!(text(&got[0].1), "a\n\n\n");
            assert_eq!(text(&got[1].1), "x\nx\n");
            assert_eq!(text(&got[2].1), format!("{TOKEN}x\nend\n  \n"));
            let t = &got[2].1.as_ref().unwrap().text;
            assert_eq!((t.first_line, t.pane_height, t.pane_width), (0, 3, 40));
            assert_eq!(t.line_numbers, None);
            assert!(t.joined);
        }
    }

    /// A first group of megabytes is dropped from the buffer once cut; the
    /// next group is still dealt out exactly.
    #[test]
    fn a_long_output_is_compacted_and_cut_exactly() {
        let count = GROUP as u32 + 8;
        let ids: Vec<u32> = (0..count).collect();
        let chunk = requests(&ids);
        let panes: Vec<(u32, u32, u32)> = ids.iter().map(|&i| (i, 30, 5_000)).collect();
        let rows = |pane: u32| -> String {
            (0..5_000)
                .map(|k| format!("pane {pane} row {k}\n"))
                .collect()
        };
        let mut first = listing(&panes);
        for pane in 0..GROUP as u32 {
            first.push_str(&rows(pane));
        }
        assert!(first.len() > super::super::split::COMPACT_AT);
        let mut rest = format!("{TOKEN} g\n");
        for pane in GROUP as u32..count {
            rest.push_str(&rows(pane));
        }
        let mut c = Counted::new(TOKEN, &chunk, CaptureOptions::default());
        let mut got = Vec::new();
        for piece in first.as_bytes().chunks(65_536) {
            c.push(piece, &mut |i, r| got.push((i, r)));
        }
        for piece in rest.as_bytes().chunks(65_536) {
            c.push(piece, &mut |i, r| got.push((i, r)));
        }
        assert!(c.output.held() < rest.len(), "the first group was dropped");
        c.push(format!("{TOKEN} end\n").as_bytes(), &mut |i, r| {
            got.push((i, r))
        });
        assert!(c.ended());
        assert_eq!(got.len(), count as usize);
        for (index, result) in &got {
            assert!(text(result) == rows(*index as u32), "pane {index}");
        }
    }

    #[test]
    fn groups_are_checked_one_by_one() {
        let ids: Vec<u32> = (0..(GROUP as u32 + 2)).collect();
        let chunk = requests(&ids);
        let options = CaptureOptions::default();
        let panes: Vec<(u32, u32, u32)> = ids.iter().map(|&i| (i, 30, 1)).collect();
        let mut out = listing(&panes);
        for i in 0..GROUP {
            out.push_str(&format!("row of {i}\n"));
        }
        // The second group is one row short: it is not guessed at.
        out.push_str(&format!("{TOKEN} g\nonly one row\n{TOKEN} end\n"));
        let got = cut(&chunk, options, &out, 5);
        assert_eq!(got.len(), GROUP + 2);
        for (i, (index, r)) in got.iter().enumerate().take(GROUP) {
            assert_eq!(*index, i);
            assert_eq!(text(r), format!("row of {i}\n"));
        }
        for (_, r) in &got[GROUP..] {
            assert!(r.as_ref().unwrap().again, "captured again");
        }
    }

    #[test]
    fn a_pane_missing_from_the_listing_is_gone_and_prints_nothing() {
        let chunk = requests(&[1, 2, 3]);
        let out = format!(
            "{}one\ntwo\nthree\n{TOKEN} end\n",
            listing(&[(1, 20, 1), (3, 20, 2)])
        );
        let got = cut(&chunk, CaptureOptions::default(), &out, 3);
        assert_eq!(text(&got[0].1), "one\n");
        assert!(matches!(got[1].1, Err(TmuxError::NotFound(_))));
        assert_eq!(text(&got[2].1), "two\nthree\n");
    }

    #[test]
    fn a_row_reaching_the_edge_is_captured_again_only_when_joining() {
        let chunk = requests(&[1, 2, 3]);
        // Width 10: 9 bytes may be a wrapped row followed by a wide
        // character; 8 cannot; colours do not count.
        let out = format!(
            "{}123456789\nshort\n12345678\n\x1b[31mred\x1b[0m\x1b[1mbold\x1b[0m\n{TOKEN} end\n",
            listing(&[(1, 10, 2), (2, 10, 1), (3, 10, 1)])
        );
        let join = CaptureOptions {
            join_wrapped: true,
            escapes: true,
        };
        let got = cut(&chunk, join, &out, 4);
        assert!(got[0].1.as_ref().unwrap().again);
        assert_eq!(text(&got[1].1), "12345678\n");
        assert_eq!(text(&got[2].1), "\x1b[31mred\x1b[0m\x1b[1mbold\x1b[0m\n");
        let plain = CaptureOptions {
            join_wrapped: false,
            escapes: true,
        };
        let got = cut(&chunk, plain, &out, 4);
        assert_eq!(text(&got[0].1), "123456789\nshort\n");
    }

    #[test]
    fn a_script_has_a_header_a_group_and_every_capture_unjoined() {
        let ids: Vec<u32> = (0..(2 * GROUP as u32 + 1)).collect();
        let chunk = requests(&ids);
        let options = CaptureOptions {
            join_wrapped: true,
            escapes: false,
        };
        let s = script(TOKEN, &chunk, options, "-N -T");
        assert_eq!(s.lines().count(), 1 + chunk.len() + 2 + 1);
        assert_eq!(s.matches(&format!("{TOKEN} g\"")).count(), 2);
        assert!(s.lines().nth(1).unwrap() == "capture-pane -p -N -T -t %0");
        assert!(!s.contains(" -J"));
        let plain = CaptureOptions {
            join_wrapped: false,
            escapes: true,
        };
        let s = script(TOKEN, &chunk, plain, "-N -T");
        assert!(s.lines().nth(1).unwrap() == "capture-pane -p -e -t %0");
        assert!(s.ends_with(&format!("display-message -p \"{TOKEN} end\"\n")));
    }

    fn deep(ids: &[u32], lines: u64) -> Vec<CaptureRequest> {
        ids.iter()
            .map(|&i| CaptureRequest {
                pane: PaneId::from_number(i),
                range: CaptureRange::Scrollback(lines),
            })
            .collect()
    }

    /// Listing lines of panes `(id, history, width, height)`.
    fn deep_listing(panes: &[(u32, u32, u32, u32)]) -> String {
        panes
            .iter()
            .map(|(id, h, w, rows)| format!("{TOKEN} L %{id} {h} {w} {rows}\n"))
            .collect()
    }

    const JOINED: CaptureOptions = CaptureOptions {
        join_wrapped: true,
        escapes: true,
    };

    #[test]
    fn joined_deep_lines_are_dealt_out_by_the_rows_they_fill() {
        let chunk = deep(&[1, 2, 3], 4);
        // Width 10. Pane 1: 4 history rows asked for of 9, and 2 visible:
        // 6 rows, a 25-byte line (3 rows), a blank line, a line of exactly
        // 10 (1 row), a coloured line of 10 shown cells (1 row). Pane 2:
        // history 1 (fewer than asked), height 2: 3 rows, a line of 20 (2
        // rows) and a repeated line. Pane 3 (40 wide): one row, a line
        // that looks like a header.
        let long = "x".repeat(25);
        let ten = "y".repeat(10);
        let twenty = "z".repeat(20);
        let out = format!(
            "{}{long}\n\n{ten}\n\x1b[31m{ten}\x1b[0m\n{twenty}\nsame\n{TOKEN}same\n{TOKEN} end\n",
            deep_listing(&[(1, 9, 10, 2), (2, 1, 10, 2), (3, 0, 40, 1)])
        );
        for step in [1, 3, 11, 1000] {
            let got = cut(&chunk, JOINED, &out, step);
            let idx: Vec<usize> = got.iter().map(|(i, _)| *i).collect();
            assert_eq!(idx, [0, 1, 2]);
            assert_eq!(
                text(&got[0].1),
                format!("{long}\n\n{ten}\n\x1b[31m{ten}\x1b[0m\n")
            );
            assert_eq!(text(&got[1].1), format!("{twenty}\nsame\n"));
            assert_eq!(text(&got[2].1), format!("{TOKEN}same\n"));
            let t = &got[0].1.as_ref().unwrap().text;
            assert_eq!((t.first_line, t.history_size, t.pane_width), (-4, 9, 10));
            assert_eq!(t.line_numbers, Some(vec![-4, -1, 0, 1]));
            let t = &got[1].1.as_ref().unwrap().text;
            assert_eq!(
                (t.first_line, t.line_numbers.clone()),
                (-1, Some(vec![-1, 1]))
            );
        }
    }

    #[test]
    fn a_joined_group_is_captured_again_when_its_rows_are_not_sure() {
        let chunk = deep(&[1, 2], 10);
        let listed = deep_listing(&[(1, 0, 10, 2), (2, 0, 10, 1)]);
        let all_again = |out: String| {
            let got = cut(&chunk, JOINED, &out, 4);
            assert_eq!(got.len(), 2);
            assert!(
                got.iter().all(|(_, r)| r.as_ref().unwrap().again),
                "{out:?}"
            );
        };
        // A long line of wide characters: its rows are not counted.
        all_again(format!(
            "{listed}{}\nb\n{TOKEN} end\n",
            "\u{4e2d}".repeat(6)
        ));
        // A wrapped row cleared short of the edge: its line fills two
        // rows where its bytes say one, and the group falls a row short.
        all_again(format!("{listed}{}\nb\n{TOKEN} end\n", "x".repeat(8)));
        // A line across two panes' rows.
        all_again(format!("{listed}a\n{}\n{TOKEN} end\n", "x".repeat(15)));
        // Lines left over after the last pane's rows.
        all_again(format!("{listed}a\nb\nc\nd\n{TOKEN} end\n"));
        // The same text with each line where it belongs is dealt out.
        let got = cut(
            &chunk,
            JOINED,
            &format!("{listed}{}\nc\n{TOKEN} end\n", "x".repeat(15)),
            4,
        );
        assert_eq!(text(&got[0].1), format!("{}\n", "x".repeat(15)));
        assert_eq!(text(&got[1].1), "c\n");
    }

    #[test]
    fn a_deep_script_captures_joined_with_its_range() {
        let chunk = deep(&[0, 1], 200);
        let s = script(TOKEN, &chunk, JOINED, "-N -T");
        assert_eq!(
            s.lines().nth(1).unwrap(),
            "capture-pane -p -J -e -t %0 -S -200"
        );
        let plain = CaptureOptions::default();
        let s = script(TOKEN, &chunk, plain, "-N -T");
        assert_eq!(s.lines().nth(1).unwrap(), "capture-pane -p -t %0 -S -200");
        let all: Vec<CaptureRequest> = chunk
            .iter()
            .map(|r| CaptureRequest {
                range: CaptureRange::AllHistory,
                ..r.clone()
            })
            .collect();
        let s = script(TOKEN, &all, plain, "-N");
        assert_eq!(s.lines().nth(1).unwrap(), "capture-pane -p -t %0 -S -");
        // A mix of visible and deep, or explicit lines, is not counted.
        let mixed = [requests(&[0])[0].clone(), chunk[1].clone()];
        assert_eq!(rows_for(&mixed, plain), None);
        let lines = [CaptureRequest {
            pane: PaneId::from_number(0),
            range: CaptureRange::Lines { start: 0, end: 3 },
        }];
        assert_eq!(rows_for(&lines, plain), None);
        assert_eq!(rows_for(&chunk, plain), Some(Rows::OneEach));
        assert_eq!(rows_for(&chunk, JOINED), Some(Rows::Joined));
        assert_eq!(rows_for(&requests(&[0]), JOINED), Some(Rows::OneEach));
    }

    proptest::proptest! {
        /// Rows found by newline search are the rows a split on every
        /// byte finds: blank rows, a last row with no newline, escapes,
        /// wide characters, rows one byte either side of the edge.
        #[test]
        fn rows_reaching_the_edge_are_found_as_a_split_finds_them(
            rows in proptest::collection::vec(
                proptest::prop_oneof![
                    proptest::strategy::Just(String::new()),
                    "[a-z ]{0,12}",
                    proptest::strategy::Just("\u{1b}[31mred\u{1b}[0m".to_owned()),
                    proptest::strategy::Just("\u{4e2d}\u{6587}x".to_owned()),
                ],
                0..8,
            ),
            width in 1u32..14,
            last_newline in proptest::bool::ANY,
        ) {
            let mut text = rows.join("\n");
            if last_newline {
                text.push('\n');
            }
            let bytes = text.as_bytes();
            let edge = usize::try_from(width.saturating_sub(1)).unwrap_or(usize::MAX);
            let split = bytes.split(|&b| b == b'\n').any(|row| {
                row.len() >= edge && (!row.contains(&0x1b) || visible_text(row).len() >= edge)
            });
            proptest::prop_assert_eq!(may_have_wrapped(bytes, width), split);
        }

        /// Panes of ASCII lines wrapped as tmux wraps them (a line of n
        /// bytes on rows of `width`: blank, repeated, exactly one or two
        /// rows wide, one byte either side): the joined lines are dealt
        /// out to exactly the panes whose rows they fill.
        #[test]
        fn joined_ascii_lines_go_to_the_panes_whose_rows_they_fill(
            panes in proptest::collection::vec(
                proptest::collection::vec(
                    proptest::prop_oneof![
                        proptest::strategy::Just(0usize),
                        0usize..30,
                        proptest::strategy::Just(7usize),
                        proptest::strategy::Just(14usize),
                        proptest::strategy::Just(15usize),
                    ],
                    1..6,
                ),
                1..5,
            ),
            width in proptest::prop_oneof![proptest::strategy::Just(7u32), 1u32..12],
        ) {
            let w = width as usize;
            let mut text = String::new();
            let mut shapes = Vec::new();
            let mut want = Vec::new();
            for (p, lines) in panes.iter().enumerate() {
                let mut rows = 0;
                for (k, &n) in lines.iter().enumerate() {
                    // Repeated letters, so lines of different panes look
                    // alike.
                    let c = char::from(b'a' + u8::try_from((p + k) % 2).unwrap());
                    text.push_str(&c.to_string().repeat(n));
                    text.push('\n');
                    rows += n.div_ceil(w).max(1);
                }
                shapes.push((rows, width));
                want.push(text.len());
            }
            proptest::prop_assert_eq!(joined_ends(text.as_bytes(), &shapes), Some(want));
            // One row fewer listed for any pane: the group does not add up.
            for p in 0..shapes.len() {
                let mut short = shapes.clone();
                short[p].0 -= 1;
                proptest::prop_assert_eq!(joined_ends(text.as_bytes(), &short), None);
            }
        }
    }
}
