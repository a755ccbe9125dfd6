//! A pane's rows, and the anchors that find a place in them again: what
//! "printed since" means for capture_since's and search_panes' cursors,
//! wait's watches and the pane cache's deltas (pure).
//!
//! Rows are absolute: 0 is the oldest history row, the screen follows. They
//! stay put while a pane prints; once history reaches history-limit tmux
//! trims its oldest tenth ([`trim_step`]), which moves every row up by as
//! much, and a clear moves them anyhow.
//!
//! An anchor is the complete lines just above a boundary, kept as a hash:
//! at least [`MIN_ANCHOR_LINES`], more while they say too little (fewer than
//! two different lines with text, or lines repeating with a period shorter
//! than the anchor: blank runs, bare prompts, a line printed over and over),
//! at most [`MAX_ANCHOR_LINES`] (longer than the pane cache's 32 rows: a
//! cursor keeps no text to check again).
//!
//! Must hold, the pane cache's rules for a hash: an anchor vouches for its
//! place only when it is found at its own row and at no row a trim could
//! have moved it from, and only if it is not weak while a trim is possible
//! (a repeating run matches at any offset); an anchor not at its row is
//! found again only where it occurs once. Every doubt is [`Place::Lost`],
//! which the caller says, never a guess.

use super::CapturedText;

/// Lines an anchor covers at least (fewer only when fewer were captured).
pub(crate) const MIN_ANCHOR_LINES: usize = 3;
/// Lines an anchor grows to at most while it says too little: enough for
/// a pane that ends in a screen's worth of blank lines (a cleared screen,
/// a full-screen program's blank rows) to be anchored on the text above.
pub(crate) const MAX_ANCHOR_LINES: usize = 64;
/// Different lines with text an anchor needs to say enough.
const TEXT_LINES: usize = 2;

/// The rows tmux trims at once when a pane with this history limit and
/// size may have reached the limit, or `None` when it cannot have: tmux
/// trims the oldest tenth once history reaches the limit (grid.c,
/// `grid_collect_history`), and afterwards history is at least the limit
/// less a tenth until cleared.
pub(crate) fn trim_step(limit: u64, history_size: u64) -> Option<u64> {
    let tenth = (limit / 10).max(1);
    (limit > 0 && history_size + tenth >= limit).then_some(tenth)
}

/// FNV-1a, 64 bits: an anchor's line hash.
pub(crate) fn fnv64(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// FNV-1a, 32 bits: the anchors of search cursors written before 64-bit
/// anchors (`ps2.`, `ps1.` files), and those cursors' checksums.
pub(crate) fn fnv32(bytes: &[u8]) -> u32 {
    let mut h: u32 = 0x811c_9dc5;
    for b in bytes {
        h ^= u32::from(*b);
        h = h.wrapping_mul(0x0100_0193);
    }
    h
}

/// One captured line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Row {
    /// Absolute row it starts at (0 = oldest history row).
    pub(crate) abs: i64,
    /// tmux line number.
    pub(crate) number: i64,
    /// Byte offset of its first byte in the capture.
    pub(crate) start: usize,
    /// Byte offset of its `\n`.
    pub(crate) end: usize,
}

/// The lines of a capture on the absolute row scale (joined lines start at
/// their first row). Only lines ending in `\n` count.
pub(crate) fn rows_of(cap: &CapturedText) -> Vec<Row> {
    let mut rows = Vec::new();
    let mut start = 0usize;
    let history = i64::try_from(cap.history_size).unwrap_or(i64::MAX / 2);
    for (i, end) in memchr::memchr_iter(b'\n', &cap.bytes).enumerate() {
        let number = match &cap.line_numbers {
            Some(n) => n.get(i).copied().unwrap_or(cap.first_line + i as i64),
            None => cap.first_line + i as i64,
        };
        rows.push(Row {
            abs: number + history,
            number,
            start,
            end,
        });
        start = end + 1;
    }
    rows
}

/// A line's text as an anchor sees it: trailing blanks are not text.
fn text<'a>(bytes: &'a [u8], row: &Row) -> &'a [u8] {
    bytes
        .get(row.start..row.end)
        .unwrap_or_default()
        .trim_ascii_end()
}

/// How an anchor's lines are hashed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum HashKind {
    /// Each line's FNV-1a 64, folded: every anchor made now.
    Fnv64,
    /// FNV-1a 32 over the lines joined by `\n`: search cursors of the
    /// `ps2.` format (three-line anchors), still read back from files.
    Fnv32,
}

/// The lines above a boundary, as a hash.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Anchor {
    /// Rows from the anchor's first line to the boundary (0: no line).
    pub(crate) rows: u64,
    pub(crate) hash: u64,
    pub(crate) kind: HashKind,
}

/// Where an anchor was found in a capture.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Place {
    /// At its own row: the index of the first line after it.
    At(usize),
    /// Elsewhere, once: the index of the first line after that copy.
    Moved(usize),
    /// Nowhere, or where it proves nothing.
    Lost,
}

impl Anchor {
    /// The anchor of the lines before `rows[end]`, whose row is `boundary`
    /// (`end` may be `rows.len()`).
    pub(crate) fn above(rows: &[Row], bytes: &[u8], end: usize, boundary: i64) -> Anchor {
        let end = end.min(rows.len());
        let most = end.min(MAX_ANCHOR_LINES);
        let len = (MIN_ANCHOR_LINES.min(most)..=most)
            .find(|&n| !weak(&rows[end - n..end], bytes))
            .unwrap_or(most);
        let lines = &rows[end - len..end];
        Anchor {
            rows: lines
                .first()
                .map_or(0, |r| (boundary - r.abs).max(0) as u64),
            hash: hash(HashKind::Fnv64, lines, bytes),
            kind: HashKind::Fnv64,
        }
    }

    /// The index of the first line after the anchor when its lines start
    /// at line `k` (at whatever row): they must cover exactly its rows.
    /// `hashes`: every line's hash, when many places are tried.
    fn ends_after(
        &self,
        rows: &[Row],
        bytes: &[u8],
        k: usize,
        hashes: Option<&[u64]>,
    ) -> Option<usize> {
        let start = rows.get(k)?.abs;
        let end_abs = start + self.rows as i64;
        let j = rows[k..].iter().position(|r| r.abs >= end_abs)? + k;
        let found = match (self.kind, hashes) {
            (HashKind::Fnv64, Some(h)) => fold(h.get(k..j)?.iter().copied()),
            (kind, _) => hash(kind, &rows[k..j], bytes),
        };
        (rows[j].abs == end_abs && j > k && found == self.hash).then_some(j)
    }

    /// The line starting at absolute row `abs`, if one does.
    fn line_at(rows: &[Row], abs: i64) -> Option<usize> {
        rows.binary_search_by_key(&abs, |r| r.abs).ok()
    }

    /// Where the anchor of `boundary` is in `rows` (a capture of the pane
    /// now). `trim`: the pane's [`trim_step`] now, when tmux may have
    /// trimmed since the anchor was made.
    pub(crate) fn place(
        &self,
        rows: &[Row],
        bytes: &[u8],
        boundary: i64,
        trim: Option<u64>,
    ) -> Place {
        if self.rows == 0 {
            // No line above the boundary when it was made: only its row
            // says where it is, and a trim moves that unseen.
            if trim.is_some() {
                return Place::Lost;
            }
            return match Self::line_at(rows, boundary) {
                Some(j) => Place::At(j),
                // Nothing at or after the boundary was captured: no new line.
                None if rows.last().is_none_or(|r| r.abs < boundary) => Place::At(rows.len()),
                None => Place::Lost,
            };
        }
        let first = boundary - self.rows as i64;
        let at = Self::line_at(rows, first)
            .and_then(|k| Some((k, self.ends_after(rows, bytes, k, None)?)));
        if let Some((k, j)) = at {
            let Some(step) = trim else {
                return Place::At(j);
            };
            // A trim of one step or more may have brought other lines to
            // this row: the match vouches only if it could be nothing else.
            if weak(&rows[k..j], bytes) || self.at_a_trim_above(rows, bytes, first, step) {
                return Place::Lost;
            }
            return Place::At(j);
        }
        // Not at its row: found again only where it is the one copy at or
        // above its row (rows never move down).
        let hashes: Vec<u64> = rows.iter().map(|r| fnv64(text(bytes, r))).collect();
        let mut copies = (0..rows.len())
            .take_while(|&k| rows[k].abs <= first)
            .filter_map(|k| Some((k, self.ends_after(rows, bytes, k, Some(&hashes))?)));
        match (copies.next(), copies.next()) {
            (Some((k, j)), None) if !weak(&rows[k..j], bytes) => Place::Moved(j),
            _ => Place::Lost,
        }
    }

    /// Whether a copy of the anchor starts a whole number of trim steps
    /// above `first`, within the captured rows.
    fn at_a_trim_above(&self, rows: &[Row], bytes: &[u8], first: i64, step: u64) -> bool {
        let Some(top) = rows.first().map(|r| r.abs) else {
            return false;
        };
        let step = i64::try_from(step).unwrap_or(i64::MAX);
        let mut at = first.saturating_sub(step);
        while at >= top {
            let copy = Self::line_at(rows, at).and_then(|k| self.ends_after(rows, bytes, k, None));
            if copy.is_some() {
                return true;
            }
            at = at.saturating_sub(step);
        }
        false
    }
}

/// The hash of some lines.
fn hash(kind: HashKind, lines: &[Row], bytes: &[u8]) -> u64 {
    match kind {
        HashKind::Fnv64 => fold(lines.iter().map(|r| fnv64(text(bytes, r)))),
        HashKind::Fnv32 => {
            let mut joined = Vec::new();
            for r in lines {
                joined.extend_from_slice(text(bytes, r));
                joined.push(b'\n');
            }
            u64::from(fnv32(&joined))
        }
    }
}

/// The 64-bit anchor hash of lines, from each line's hash.
fn fold(line_hashes: impl Iterator<Item = u64>) -> u64 {
    let mut h = fnv64(b"anchor");
    for l in line_hashes {
        h = h.rotate_left(5) ^ l;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// Whether a line holds text: a letter or a digit (a bare prompt, `$ `,
/// `> `, or a rule of dashes says no more than a blank line).
fn says_something(line: &[u8]) -> bool {
    line.iter().any(|b| b.is_ascii_alphanumeric() || *b >= 0x80)
}

/// Whether lines say too little to be found in one place only: fewer than
/// [`TEXT_LINES`] different lines with text ([`says_something`]), or lines
/// repeating with a period shorter than their count (`a b a b`), which
/// match at any offset of such a run.
fn weak(lines: &[Row], bytes: &[u8]) -> bool {
    let texts: Vec<&[u8]> = lines.iter().map(|r| text(bytes, r)).collect();
    let mut different: Vec<&[u8]> = Vec::new();
    for t in &texts {
        if says_something(t) && !different.contains(t) {
            different.push(t);
            if different.len() >= TEXT_LINES {
                break;
            }
        }
    }
    different.len() < TEXT_LINES
        || (1..texts.len()).any(|p| (p..texts.len()).all(|i| texts[i] == texts[i - p]))
}

#[cfg(test)]
pub(crate) mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// A capture of `lines` starting at tmux line `first_line` (also the
    /// since search's tests' fixture).
    pub(crate) fn cap(first_line: i64, history: u64, lines: &[&str]) -> CapturedText {
        let mut bytes = Vec::new();
        for l in lines {
            bytes.extend_from_slice(l.as_bytes());
            bytes.push(b'\n');
        }
        CapturedText {
            first_line,
            bytes: bytes.into(),
            history_size: history,
            ..CapturedText::default()
        }
    }

    /// The anchor above line `end` of `c`.
    fn anchor(c: &CapturedText, end: usize) -> (Anchor, i64) {
        let rows = rows_of(c);
        let past = rows.last().map_or(0, |r| r.abs + 1);
        let boundary = rows.get(end).map_or(past, |r| r.abs);
        (Anchor::above(&rows, &c.bytes, end, boundary), boundary)
    }

    fn place(a: &Anchor, c: &CapturedText, boundary: i64, trim: Option<u64>) -> Place {
        a.place(&rows_of(c), &c.bytes, boundary, trim)
    }

    #[test]
    fn an_anchor_grows_past_lines_that_say_too_little() {
        let c = cap(0, 0, &["aa1", "bb2", "cc3", "dd4", "$ "]);
        assert_eq!(anchor(&c, 4).0.rows, 3);
        // Blank lines and bare prompts are no text.
        let c = cap(0, 0, &["xx1", "yy2", "", "$ ", "", "$ "]);
        assert_eq!(anchor(&c, 5).0.rows, 5);
        // Short lines are text when they hold a letter or a digit.
        let c = cap(0, 0, &["89", "90", "", "---", "", "$ "]);
        assert_eq!(anchor(&c, 5).0.rows, 5);
        // A line repeated is one line...
        let c = cap(0, 0, &["first", "tick", "tick", "tick", "tick", "$ "]);
        assert_eq!(anchor(&c, 5).0.rows, 5);
        // ... and two lines alternating say as little.
        let c = cap(
            0,
            0,
            &["head", "abc", "cde", "abc", "cde", "abc", "cde", "$ "],
        );
        assert_eq!(anchor(&c, 7).0.rows, 7);
        // At most MAX_ANCHOR_LINES, and no more than were captured.
        let blank = vec![""; 70];
        assert_eq!(
            anchor(&cap(0, 0, &blank), 70).0.rows,
            MAX_ANCHOR_LINES as u64
        );
        assert_eq!(anchor(&cap(0, 0, &["", ""]), 2).0.rows, 2);
        assert_eq!(anchor(&cap(0, 0, &["$ "]), 0).0.rows, 0);
    }

    #[test]
    fn an_anchor_at_its_row_is_kept_and_one_moved_is_found_once() {
        let before = cap(-2, 2, &["old1", "old2", "aa1", "bb2", "cc3", "$ "]);
        let (a, b) = anchor(&before, 5);
        assert_eq!((a.rows, b), (3, 5));
        let later = cap(-2, 2, &["old1", "old2", "aa1", "bb2", "cc3", "$ run", "$ "]);
        assert_eq!(place(&a, &later, b, None), Place::At(5));
        // Trimmed by 2 rows: found by looking for it.
        let moved = cap(-3, 3, &["aa1", "bb2", "cc3", "$ run", "out", "$ "]);
        assert_eq!(place(&a, &moved, b, Some(2)), Place::Moved(3));
        // Printed twice above its row: which copy is the anchor is a guess.
        let before = cap(
            -7,
            7,
            &["o1", "o2", "o3", "o4", "o5", "aa1", "bb2", "cc3", "$ "],
        );
        let (a8, b8) = anchor(&before, 8);
        let twice = cap(
            -8,
            8,
            &["aa1", "bb2", "cc3", "xx", "aa1", "bb2", "cc3", "yy", "$ "],
        );
        assert_eq!(place(&a8, &twice, b8, Some(2)), Place::Lost);
        let once = cap(
            -8,
            8,
            &["aa1", "bb2", "cc3", "xx", "ww", "bb2", "cc3", "yy", "$ "],
        );
        assert_eq!(place(&a8, &once, b8, Some(2)), Place::Moved(3));
        // Replaced: lost.
        let cleared = cap(0, 0, &["xxx", "yyy", "zzz", "$ "]);
        assert_eq!(place(&a, &cleared, b, None), Place::Lost);
    }

    #[test]
    fn a_weak_anchor_at_its_row_proves_nothing_once_a_trim_is_possible() {
        // More blank rows above the boundary than an anchor grows to: no
        // two lines of text.
        let mut lines = vec!["xyz"; 5];
        lines.extend(vec![""; 70]);
        lines.push("$ ");
        let c = cap(0, 0, &lines);
        let (a, b) = anchor(&c, 75);
        assert_eq!(a.rows, MAX_ANCHOR_LINES as u64);
        assert_eq!(place(&a, &c, b, None), Place::At(75));
        assert_eq!(place(&a, &c, b, Some(10)), Place::Lost);
    }

    #[test]
    fn an_anchor_that_a_trim_could_have_brought_to_its_row_is_lost() {
        // "uu1 uu2 uu3" before the boundary; 4 rows up the same lines
        // again: a trim of 4 would bring that copy's successors here.
        let c = cap(
            0,
            0,
            &["uu1", "uu2", "uu3", "vvv", "uu1", "uu2", "uu3", "$ "],
        );
        let (a, b) = anchor(&c, 7);
        assert_eq!(place(&a, &c, b, None), Place::At(7));
        assert_eq!(place(&a, &c, b, Some(4)), Place::Lost);
        assert_eq!(place(&a, &c, b, Some(3)), Place::At(7));
    }

    /// Two anchors FNV-1a 32 cannot tell apart ("costarring" and
    /// "liquid" collide) are told apart by the 64-bit hash.
    #[test]
    fn lines_that_collide_under_fnv32_are_different_anchors() {
        assert_eq!(fnv32(b"costarring\n"), fnv32(b"liquid\n"));
        let before = cap(0, 0, &["costarring", "$ "]);
        let (a, b) = anchor(&before, 1);
        let other = cap(0, 0, &["liquid", "$ "]);
        assert_eq!(place(&a, &other, b, None), Place::Lost);
        let legacy = Anchor {
            rows: 1,
            hash: u64::from(fnv32(b"costarring\n")),
            kind: HashKind::Fnv32,
        };
        assert_eq!(place(&legacy, &other, b, None), Place::At(1));
    }

    /// An anchor made with no line above its boundary is placed by its
    /// row alone: at a line starting there, or at the capture's end when
    /// nothing at or after the row was captured (no new line); a line that
    /// began above the row and wraps past it, with a line after it, leaves
    /// the place unknown, as any possible trim does.
    #[test]
    fn an_anchor_of_no_line_is_placed_by_its_row_alone() {
        let none = Anchor {
            rows: 0,
            hash: 0,
            kind: HashKind::Fnv64,
        };
        let c = cap(0, 0, &["aa1", "bb2"]);
        assert_eq!(place(&none, &c, 1, None), Place::At(1));
        assert_eq!(place(&none, &c, 5, None), Place::At(2));
        assert_eq!(place(&none, &c, 1, Some(10)), Place::Lost);
        let mut wrapped = cap(0, 0, &["a line that wraps on to a second row", "next"]);
        wrapped.line_numbers = Some(vec![0, 2]);
        assert_eq!(rows_of(&wrapped).last().map(|r| r.abs), Some(2));
        assert_eq!(place(&none, &wrapped, 1, None), Place::Lost);
    }

    /// An anchor of lines that say too little (blank lines), not at its
    /// row after a trim and found once above it, is still not found: its
    /// one copy proves nothing.
    #[test]
    fn a_weak_anchor_found_once_above_its_row_is_lost() {
        let mut lines = vec![""; 66];
        lines.push("$ ");
        let before = cap(-66, 66, &lines);
        let (a, b) = anchor(&before, 66);
        assert_eq!((a.rows, b), (64, 66));
        // Trimmed by two rows: the blank run at rows 0-63, then a line.
        let mut lines = vec![""; 64];
        lines.extend(["out", "$ "]);
        let later = cap(-65, 65, &lines);
        assert_eq!(place(&a, &later, b, Some(2)), Place::Lost);
    }

    /// Folding is one to one in each line's hash: anchors whose lines
    /// differ in one bit of one line's hash never fold alike.
    #[test]
    fn anchors_differing_in_one_bit_of_a_line_fold_apart() {
        let (x, y) = (fnv64(b"a line"), fnv64(b"another"));
        for bit in 0..64 {
            let flipped = x ^ (1 << bit);
            assert_ne!(
                fold([x].into_iter()),
                fold([flipped].into_iter()),
                "bit {bit}"
            );
            assert_ne!(
                fold([y, x].into_iter()),
                fold([y, flipped].into_iter()),
                "bit {bit}"
            );
        }
    }

    /// Lines a capture's line numbers do not reach (a list cut short)
    /// count on from its first line, at their index.
    #[test]
    fn lines_past_the_line_numbers_count_from_the_first_line() {
        let mut c = cap(-3, 3, &["a", "b", "c", "d"]);
        c.line_numbers = Some(vec![-3, -1]);
        let numbers: Vec<i64> = rows_of(&c).iter().map(|r| r.number).collect();
        assert_eq!(numbers, [-3, -1, -1, 0]);
    }

    #[test]
    fn trims_are_possible_only_near_the_limit() {
        assert_eq!(trim_step(100, 89), None);
        assert_eq!(trim_step(100, 90), Some(10));
        assert_eq!(trim_step(5, 4), Some(1));
        assert_eq!(trim_step(0, 4), None);
    }

    #[test]
    fn fnv_is_fnv_1a() {
        assert_eq!(fnv32(b"a"), 0xe40c_292c);
        assert_eq!(fnv64(b"a"), 0xaf63_dc4c_8601_ec8c);
    }
}
