//! Cutting a sweep's output into panes as it arrives.
//!
//! A sweep's script prints, per pane, a header line and then the capture:
//!
//! ```text
//! TOKEN i %P HISTORY_SIZE WIDTH HEIGHT
//! ...the capture of request i...
//! TOKEN end
//! ```
//!
//! or, for a chunk that holds a large share of the server's panes, one
//! listing line per pane of the server first (`TOKEN L %P HISTORY_SIZE
//! WIDTH HEIGHT`) and bare `TOKEN i` headers, each pane's fields then taken
//! from the listing.
//!
//! TOKEN is secret to the sweep, so a header can only come from the script:
//! whatever a pane prints, its text cannot end early or be taken for another
//! pane's. [`Splitter`] is fed the output in pieces as the pipe gives them
//! and hands out each pane the moment the next header shows it complete, so
//! scanning starts while tmux is still sending the rest.

use bytes::Bytes;
use memchr::memmem::Finder;

use super::{span, CaptureOptions, CaptureRequest, CapturedText};
use crate::tmux::ids::PaneId;
use crate::tmux::TmuxError;

/// A pane's text as cut from a sweep, before its joined rows are checked.
#[derive(Debug)]
pub(crate) struct Split {
    pub text: CapturedText,
    /// With `join_wrapped`: whether the joined lines add up to the rows
    /// captured (if not, the pane is captured again without joining).
    pub rows_match: bool,
    /// Cut from a counted chunk ([`super::counted`]) whose rows cannot be told
    /// joined or not (a row reaches the pane's edge), or whose group did
    /// not add up: the pane must be captured again with a header of its
    /// own. `text` is then empty.
    pub again: bool,
}

/// The index field of a listing line.
pub(crate) const LISTING: &str = "L";

/// Bytes before the current pane are dropped from the buffer once this many
/// have piled up (and they are at least half of it).
pub(super) const COMPACT_AT: usize = 1 << 20;

/// A sweep's output as it arrives: the bytes not handed out yet, its
/// header lines (`TOKEN FIELDS`) found in them, and when to drop what no
/// pane needs any more. Shared by the headed cutter here and the counted
/// one ([`super::counted`]).
pub(crate) struct Output {
    /// `\nTOKEN `: a header is a line that starts with the token.
    finder: Finder<'static>,
    /// Output not yet handed out. Starts with a `\n` so that a header on
    /// the very first line is found like any other.
    buf: Vec<u8>,
    /// Where the next header search starts.
    search_from: usize,
}

/// One complete header line found in a buffer.
pub(crate) struct HeaderLine {
    /// Where the newline before the header is: the text before the header
    /// ends just after it.
    pub newline: usize,
    /// What follows `TOKEN ` on the line.
    pub fields: Vec<u8>,
    /// Where the text after the header line starts.
    pub text_start: usize,
}

impl Output {
    pub(crate) fn new(token: &str) -> Self {
        Output {
            finder: Finder::new(format!("\n{token} ").as_bytes()).into_owned(),
            buf: vec![b'\n'],
            search_from: 0,
        }
    }

    /// Adds the next piece of output.
    pub(crate) fn push(&mut self, data: &[u8]) {
        self.buf.extend_from_slice(data);
    }

    /// The next complete header line, taken: the search goes on after it
    /// (from its last newline, which may start the next header). `None`
    /// when there is none yet; the search then resumes where a header may
    /// have begun in the last bytes, once more output came.
    pub(crate) fn next_header(&mut self) -> Option<HeaderLine> {
        let from = self.search_from;
        let pattern = self.finder.needle().len();
        let Some(found) = self.finder.find(&self.buf[from..]) else {
            self.search_from = from.max(self.buf.len().saturating_sub(pattern - 1));
            return None;
        };
        let newline = from + found;
        let line_start = newline + 1;
        let Some(eol) = memchr::memchr(b'\n', &self.buf[line_start..]) else {
            // The header line is not complete yet.
            self.search_from = newline;
            return None;
        };
        let text_start = line_start + eol + 1;
        self.search_from = text_start - 1;
        Some(HeaderLine {
            newline,
            fields: self.buf[line_start + pattern - 1..line_start + eol].to_vec(),
            text_start,
        })
    }

    /// The output between two offsets (empty if they are not in it).
    pub(crate) fn text(&self, range: std::ops::Range<usize>) -> &[u8] {
        self.buf.get(range).unwrap_or_default()
    }

    /// Drops the bytes before `needed` (and before the header search) once
    /// they are many and most of the buffer; returns how far every offset
    /// into the output moved back (0 when nothing was dropped).
    pub(crate) fn compact(&mut self, needed: usize) -> usize {
        let keep_from = needed.min(self.search_from);
        if keep_from >= COMPACT_AT && keep_from * 2 >= self.buf.len() {
            self.buf.drain(..keep_from);
            self.search_from -= keep_from;
            return keep_from;
        }
        0
    }

    /// Bytes held now.
    #[cfg(test)]
    pub(crate) fn held(&self) -> usize {
        self.buf.len()
    }

    /// Frees the buffer: the output has ended.
    pub(crate) fn release(&mut self) {
        self.buf = Vec::new();
        self.search_from = 0;
    }
}

/// The pane id and fields of a listing line's fields (`L %P ...`).
pub(crate) fn listing_entry(fields: &[u8]) -> Option<(&[u8], &[u8])> {
    let rest = fields
        .strip_prefix(LISTING.as_bytes())
        .and_then(|r| r.strip_prefix(b" "))?;
    let pane = rest.split(|&b| b == b' ').next().unwrap_or_default();
    Some((pane, rest))
}

/// Cuts one sweep's output into panes, in request order.
pub(crate) struct Splitter<'a> {
    output: Output,
    chunk: &'a [CaptureRequest],
    options: CaptureOptions,
    /// The pane being read: its request index, header fields, text start.
    current: Option<(usize, Vec<u8>, usize)>,
    /// Requests before this one have been handed out.
    next: usize,
    /// Header fields by pane id, from a listing at the top of the output.
    listed: std::collections::HashMap<Vec<u8>, Vec<u8>>,
    ended: bool,
}

impl<'a> Splitter<'a> {
    pub(crate) fn new(token: &str, chunk: &'a [CaptureRequest], options: CaptureOptions) -> Self {
        Splitter {
            output: Output::new(token),
            chunk,
            options,
            current: None,
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
    /// request it completes, in order, each exactly once. A request whose
    /// header never came (its pane vanished) is handed out as not found.
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
            // The text of the pane before ends with the header's newline.
            self.close(newline + 1, emit);
            if fields == b"end" {
                self.ended = true;
                self.skip_to(self.chunk.len(), emit);
                self.output.release();
                return;
            }
            if let Some((pane, rest)) = listing_entry(&fields) {
                self.listed.insert(pane.to_vec(), rest.to_vec());
                continue;
            }
            let mut parts = fields.splitn(2, |&b| b == b' ');
            let index = parts
                .next()
                .and_then(|i| std::str::from_utf8(i).ok()?.parse::<usize>().ok())
                .filter(|&i| i >= self.next && i < self.chunk.len());
            if let Some(i) = index {
                // Requests between have no header: their pane vanished.
                self.skip_to(i, emit);
                let mut header = parts.next().unwrap_or_default().to_vec();
                if header.is_empty() {
                    // A bare header: the pane's fields come from the
                    // listing; a pane not listed is gone (empty header).
                    let pane = self.chunk[i].pane.to_string();
                    header = self
                        .listed
                        .get(pane.as_bytes())
                        .cloned()
                        .unwrap_or_default();
                }
                self.current = Some((i, header, text_start));
            }
        }
        self.compact();
    }

    /// Hands out the current pane, whose text ends at `end`.
    fn close(&mut self, end: usize, emit: &mut dyn FnMut(usize, Result<Split, TmuxError>)) {
        let Some((i, header, start)) = self.current.take() else {
            return;
        };
        let text = self.output.text(start..end);
        if let Some(req) = self.chunk.get(i) {
            emit(i, build(req, &header, text, self.options));
            self.next = i + 1;
        }
    }

    /// Drops the bytes no pane needs any more.
    fn compact(&mut self) {
        let needed = self.current.as_ref().map_or(usize::MAX, |c| c.2);
        let moved = self.output.compact(needed);
        if let Some((_, _, start)) = &mut self.current {
            *start -= moved;
        }
    }

    /// Hands out the requests before `until` that are still due as not
    /// found: no header came for them.
    fn skip_to(&mut self, until: usize, emit: &mut dyn FnMut(usize, Result<Split, TmuxError>)) {
        while self.next < until {
            if let Some(req) = self.chunk.get(self.next) {
                emit(self.next, Err(gone(req.pane)));
            }
            self.next += 1;
        }
    }
}

/// The error of a pane that was listed but is not there any more.
pub(super) fn gone(pane: PaneId) -> TmuxError {
    TmuxError::NotFound(format!(
        "pane {pane} not found (closed since it was listed?)"
    ))
}

/// One request's result from its header fields and captured bytes.
pub(super) fn build(
    req: &CaptureRequest,
    header: &[u8],
    bytes: &[u8],
    options: CaptureOptions,
) -> Result<Split, TmuxError> {
    let header = String::from_utf8_lossy(header);
    let mut f = header.split(' ');
    let pane = f.next().unwrap_or("");
    if pane != req.pane.to_string() {
        return Err(gone(req.pane));
    }
    let (hsize, width, height) = pane_shape(f);
    let (first, last) = span(req.range, hsize, height);
    let (line_numbers, rows_match) = if options.join_wrapped {
        match joined_rows(bytes, first, last, width) {
            JoinedRows::OneEach => (None, true),
            JoinedRows::Numbers(n) => (Some(n), true),
            JoinedRows::Mismatch => (None, false),
        }
    } else {
        (None, true)
    };
    Ok(Split {
        text: CapturedText {
            first_line: first,
            bytes: Bytes::copy_from_slice(bytes),
            line_numbers,
            history_size: hsize,
            pane_height: height,
            pane_width: width,
            joined: options.join_wrapped,
        },
        rows_match,
        again: false,
    })
}

/// History size, width and height from the fields that follow the pane
/// id in a header or listing line (`%P HISTORY WIDTH HEIGHT`); 0 where one
/// is missing or unreadable.
pub(super) fn pane_shape<'a>(mut fields: impl Iterator<Item = &'a str>) -> (u64, u32, u32) {
    let hsize = fields.next().and_then(|v| v.parse().ok()).unwrap_or(0);
    let width = fields.next().and_then(|v| v.parse().ok()).unwrap_or(0);
    let height = fields.next().and_then(|v| v.parse().ok()).unwrap_or(0);
    (hsize, width, height)
}

/// How the lines of a joined capture sit on the pane's rows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum JoinedRows {
    /// Every line is one row: line number = first line + index.
    OneEach,
    /// Some line spans several rows: the tmux line number of every line.
    Numbers(Vec<i64>),
    /// The rows do not add up to the rows captured (a wide character pushed
    /// to the next row, ...): numbers would be guesses.
    Mismatch,
}

/// Places the lines of a joined capture of rows `first..=last` of a pane
/// `width` cells wide: a joined line spans the rows tmux wraps it onto
/// ([`rows_spanned`]).
pub(crate) fn joined_rows(bytes: &[u8], first: i64, last: i64, width: u32) -> JoinedRows {
    if bytes.is_empty() {
        return JoinedRows::OneEach;
    }
    let width = u64::from(width.max(1));
    let body = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    // Numbers are only written down once some line spans several rows.
    let mut numbers: Option<Vec<i64>> = None;
    let mut row = first;
    let mut start = 0;
    for end in memchr::memchr_iter(b'\n', body).chain(std::iter::once(body.len())) {
        let line = &body[start..end];
        start = end + 1;
        if let Some(n) = numbers.as_mut() {
            n.push(row);
        }
        // A cell takes at least one byte, so a line no longer in bytes than
        // the pane is wide fills one row: most lines never need their width.
        let rows = if line.len() as u64 <= width {
            1
        } else {
            match rows_spanned(line, width) {
                Some(rows) => rows,
                // Widths tmux may see otherwise: numbers would be guesses,
                // even where the rows happen to add up.
                None => return JoinedRows::Mismatch,
            }
        };
        if rows > 1 && numbers.is_none() {
            // Every line so far was one row: they are first..=row.
            numbers = Some((first..=row).collect());
        }
        let Ok(rows) = i64::try_from(rows) else {
            return JoinedRows::Mismatch;
        };
        row += rows;
    }
    if row != last + 1 {
        return JoinedRows::Mismatch;
    }
    numbers.map_or(JoinedRows::OneEach, JoinedRows::Numbers)
}

/// The rows a line takes on a pane `width` cells wide, wrapped as tmux
/// wraps it: a character that does not fit in what is left of a row starts
/// the next one, so a wide character never straddles the edge (it leaves
/// the last cell empty, which a count of cells divided by the width would
/// miss). Some widths tmux may see otherwise than the table: a zero-width
/// joiner sequence (tmux 3.3a draws it in the cells of its first part, the
/// table counts every part) and variation selectors (tmux versions differ
/// on the width they give). The line is wrapped with the narrowest and the
/// widest reading of those; `None` when the two give different rows, as two
/// such errors of opposite sign would add up to the right total and number
/// every line between them wrongly.
fn rows_spanned(line: &[u8], width: u64) -> Option<u64> {
    let chars: Vec<char> = visible_text(line).chars().collect();
    let narrowest = wrap(&cell_widths(&chars, Reading::Narrowest), width);
    let widest = wrap(&cell_widths(&chars, Reading::Widest), width);
    (narrowest == widest).then_some(widest)
}

/// How to read the characters whose width tmux and the table may differ
/// on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Reading {
    /// A part after a joiner takes no cell; U+FE0E narrows what it follows.
    Narrowest,
    /// Every part counts; U+FE0F widens what it follows to two cells.
    Widest,
}

/// The cells each character takes, in `reading`.
fn cell_widths(chars: &[char], reading: Reading) -> Vec<u64> {
    use unicode_width::UnicodeWidthChar;
    let mut widths: Vec<u64> = Vec::with_capacity(chars.len());
    let mut joined = false;
    for &c in chars {
        let selected = match (c, reading) {
            ('\u{FE0F}', Reading::Widest) => Some(2),
            ('\u{FE0E}', Reading::Narrowest) => Some(1),
            _ => None,
        };
        if let Some(w) = selected {
            if let Some(last) = widths.iter_mut().rev().find(|w| **w > 0) {
                *last = w;
            }
        }
        let w = if joined && reading == Reading::Narrowest {
            0
        } else {
            c.width().unwrap_or(0) as u64
        };
        joined = c == '\u{200D}';
        widths.push(w);
    }
    widths
}

/// Rows taken by cells of these widths on a pane `width` cells wide.
fn wrap(widths: &[u64], width: u64) -> u64 {
    let (mut rows, mut col) = (1u64, 0u64);
    for &w in widths.iter().filter(|w| **w > 0) {
        if col > 0 && col + w > width {
            rows += 1;
            col = 0;
        }
        col += w;
    }
    rows
}

/// The text of a line as shown, escape sequences left out.
pub(super) fn visible_text(line: &[u8]) -> String {
    let text = String::from_utf8_lossy(line);
    let mut shown = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\x1b' {
            match chars.next() {
                Some('[') => {
                    for c in chars.by_ref() {
                        if ('\x40'..='\x7e').contains(&c) {
                            break;
                        }
                    }
                }
                Some(']') => {
                    while let Some(c) = chars.next() {
                        if c == '\x07' {
                            break;
                        }
                        if c == '\x1b' && chars.peek() == Some(&'\\') {
                            chars.next();
                            break;
                        }
                    }
                }
                _ => {}
            }
            continue;
        }
        shown.push(c);
    }
    shown
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use crate::tmux::ids::PaneId;
    use crate::tmux::CaptureRange;

    #[test]
    fn joined_rows_add_up() {
        let bytes = b"aaaaaaaaaaaaaaa\nb\n\xe4\xb8\x80\xe4\xb8\x80\xe4\xb8\x80\xe4\xb8\x80\xe4\xb8\x80\xe4\xb8\x80\n";
        // width 10: 15 cells -> 2 rows, 1 -> 1 row, 12 cells -> 2 rows.
        assert_eq!(
            joined_rows(bytes, -3, 1, 10),
            JoinedRows::Numbers(vec![-3, -1, 0])
        );
        assert_eq!(joined_rows(bytes, -3, 2, 10), JoinedRows::Mismatch);
        assert_eq!(joined_rows(b"a\nb\n\n", 4, 6, 10), JoinedRows::OneEach);
        assert_eq!(joined_rows(b"a\nb", 4, 5, 10), JoinedRows::OneEach);
        assert_eq!(
            joined_rows(b"a\nbbbbb", 4, 6, 3),
            JoinedRows::Numbers(vec![4, 5])
        );
        assert_eq!(joined_rows(b"a\nb\n", 4, 6, 10), JoinedRows::Mismatch);
        assert_eq!(visible_text(b"\x1b[1;31mab\x1b[0m"), "ab");
    }

    #[test]
    fn rows_are_counted_as_tmux_wraps() {
        let cjk = "\u{4e00}".repeat(21);
        // 42 cells at width 21: 10 per row, the 21st cell of each empty.
        assert_eq!(rows_spanned(cjk.as_bytes(), 21), Some(3));
        assert_eq!(rows_spanned(cjk.as_bytes(), 42), Some(1));
        assert_eq!(rows_spanned("a\u{4e00}".repeat(7).as_bytes(), 3), Some(7));
        assert_eq!(rows_spanned(b"\x1b[31mabcd\x1b[0m", 2), Some(2));
        // e + combining acute: one cell each.
        assert_eq!(rows_spanned("e\u{301}".repeat(4).as_bytes(), 2), Some(2));
        // A ZWJ family: 2 cells to tmux 3.3a, 4 to the table.
        let family = "\u{1F468}\u{200D}\u{1F469}";
        assert_eq!(rows_spanned(family.repeat(3).as_bytes(), 8), None);
        assert_eq!(rows_spanned(family.repeat(3).as_bytes(), 12), Some(1));
        let smiley = "\u{263A}\u{FE0F}".repeat(3);
        assert_eq!(rows_spanned(smiley.as_bytes(), 4), None);
        assert_eq!(rows_spanned(smiley.as_bytes(), 6), Some(1));
        // After 21 CJK characters (3 rows at width 21), four two-part
        // families take one row whatever tmux makes of them ...
        let bytes = format!("{cjk}\nbetween\n{}\n", family.repeat(4));
        assert_eq!(
            joined_rows(bytes.as_bytes(), 0, 4, 21),
            JoinedRows::Numbers(vec![0, 3, 4])
        );
        // ... four three-part ones one (tmux 3.3a) or two (the table): no
        // number is made, whatever the total.
        let three = "\u{1F468}\u{200D}\u{1F469}\u{200D}\u{1F467}".repeat(4);
        let bytes = format!("{}\nbetween\n{three}\n", "\u{4e00}".repeat(20));
        assert_eq!(
            joined_rows(bytes.as_bytes(), 0, 4, 21),
            JoinedRows::Mismatch
        );
    }

    fn requests(n: u32) -> Vec<CaptureRequest> {
        (1..=n)
            .map(|n| CaptureRequest {
                pane: PaneId::from_number(n),
                range: CaptureRange::Visible,
            })
            .collect()
    }

    /// Feeds `out` in pieces of `step` bytes; returns what was handed out.
    fn split(
        out: &[u8],
        reqs: &[CaptureRequest],
        step: usize,
    ) -> (Vec<Result<Vec<u8>, String>>, bool) {
        let mut s = Splitter::new("T", reqs, CaptureOptions::default());
        let mut got = Vec::new();
        for piece in out.chunks(step.max(1)) {
            s.push(piece, &mut |i, r| {
                assert_eq!(i, got.len(), "handed out in order, once each");
                got.push(r.map(|s| s.text.bytes.to_vec()).map_err(|e| e.to_string()));
            });
        }
        (got, s.ended())
    }

    #[test]
    fn output_splits_at_headers_only_whatever_the_pieces() {
        let reqs = requests(4);
        // Pane 2 has an empty header (vanished after listing), pane 3 no
        // header at all; lines that only look like headers stay text.
        let out = b"list output\nT 0 %1 5 80 2\n%end 1 2 1\nT0 x\n T 0 y\nT 1  \nT 3 %4 0 80 2\nx\n\ny\nT end\ntrailing";
        for step in [1, 2, 3, 7, 64, out.len()] {
            let (got, ended) = split(out, &reqs, step);
            assert!(ended, "step {step}");
            assert_eq!(got.len(), 4, "step {step}");
            assert_eq!(got[0].as_deref().unwrap(), b"%end 1 2 1\nT0 x\n T 0 y\n");
            assert!(got[1].as_ref().unwrap_err().contains("%2 not found"));
            assert!(got[2].as_ref().unwrap_err().contains("%3 not found"));
            assert_eq!(got[3].as_deref().unwrap(), b"x\n\ny\n");
        }
    }

    /// Megabytes of output: what no pane needs any more is dropped from
    /// the buffer on the way, and every pane's text is still cut exactly.
    #[test]
    fn a_long_output_is_compacted_and_cut_exactly() {
        let reqs = requests(4);
        let text = |pane: usize| -> Vec<u8> {
            (0..30_000)
                .flat_map(|k| format!("pane {pane} line {k}\n").into_bytes())
                .collect()
        };
        let mut out = Vec::new();
        for pane in 0..4 {
            out.extend_from_slice(format!("T {pane} %{} 5 80 2\n", pane + 1).as_bytes());
            out.extend_from_slice(&text(pane));
        }
        let mut s = Splitter::new("T", &reqs, CaptureOptions::default());
        let mut got = Vec::new();
        for piece in out.chunks(65_536) {
            s.push(piece, &mut |_, r| got.push(r.unwrap().text.bytes.to_vec()));
        }
        assert!(s.output.held() * 2 < out.len(), "the output was compacted");
        s.push(b"T end\n", &mut |_, r| {
            got.push(r.unwrap().text.bytes.to_vec())
        });
        assert!(s.ended());
        assert_eq!(got.len(), 4);
        for (pane, bytes) in got.iter().enumerate() {
            assert!(*bytes == text(pane), "pane {pane}");
        }
    }

    #[test]
    fn bare_headers_take_their_fields_from_the_listing() {
        let reqs = requests(3);
        // %2 is not listed (gone before the script ran): not found, though
        // its bare header came.
        let out = b"T L %1 5 80 2\nT L %3 0 80 2\nT L %9 0 80 2\nT 0\na\nb\nT 1\nT 2\nc\nT end\n";
        for step in [1, 4, out.len()] {
            let mut s = Splitter::new("T", &reqs, CaptureOptions::default());
            let mut got = Vec::new();
            for piece in out.chunks(step) {
                s.push(piece, &mut |i, r| got.push((i, r)));
            }
            assert!(s.ended());
            assert_eq!(got.iter().map(|(i, _)| *i).collect::<Vec<_>>(), [0, 1, 2]);
            let texts: Vec<_> = got
                .iter()
                .map(|(_, r)| {
                    r.as_ref()
                        .map(|s| {
                            (
                                s.text.bytes.clone(),
                                s.text.history_size,
                                s.text.pane_height,
                            )
                        })
                        .map_err(|e| e.to_string())
                })
                .collect();
            assert_eq!(texts[0], Ok((b"a\nb\n".to_vec().into(), 5, 2)));
            assert!(texts[1].as_ref().unwrap_err().contains("%2 not found"));
            assert_eq!(texts[2], Ok((b"c\n".to_vec().into(), 0, 2)));
        }
    }

    #[test]
    fn a_missing_end_marker_leaves_the_rest_unanswered() {
        let reqs = requests(3);
        let (got, ended) = split(b"T 0 %1 5 80 2\nx\nT 1 %2 5 80 2\ny\n", &reqs, 5);
        assert!(!ended);
        // Pane 1 is complete (pane 2's header came); pane 2 may not be.
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].as_deref().unwrap(), b"x\n");
    }

    #[test]
    fn empty_captures_and_large_texts_split_exactly() {
        let reqs = requests(3);
        let big: Vec<u8> = (0..300_000)
            .flat_map(|i| format!("line {i}\n").into_bytes())
            .collect();
        let mut out = b"T 0 %1 0 80 2\nT 1 %2 0 80 2\n".to_vec();
        out.extend_from_slice(&big);
        out.extend_from_slice(b"T 2 %3 0 80 2\n");
        // The pane after the big one arrives once the buffer was compacted.
        let cut = big[..100_000].iter().rposition(|&b| b == b'\n').unwrap() + 1;
        out.extend_from_slice(&big[..cut]);
        out.extend_from_slice(b"T end\n");
        for step in [4096, 65_536, 1 << 20] {
            let (got, ended) = split(&out, &reqs, step);
            assert!(ended);
            assert_eq!(got[0].as_deref().unwrap(), b"");
            assert_eq!(got[1].as_deref().unwrap(), &big[..]);
            assert_eq!(got[2].as_deref().unwrap(), &big[..cut]);
        }
    }
}
