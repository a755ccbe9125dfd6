//! Scanning one capture: buffer in, matching lines out.
//!
//! Like ripgrep's searcher, the scanner never runs a pattern line by line.
//! It runs the [`Matcher`] over the whole buffer, and only where a match is
//! found does it work out which line that is (counting `\n` since the last
//! hit with a vectorised `memchr` count), build the [`LineMatch`], and resume
//! at the start of the next line. A buffer with no match costs one pass of
//! the matcher and nothing else.
//!
//! Before scanning, a capture is [prepared](Prepared::new): `\r\n` becomes
//! `\n` (the `\r` is not part of the line), escape sequences are stripped
//! when asked, and its lines are counted. The haystack the matcher sees is
//! the prepared text without its final line end, so `$` and `\z` behave at
//! the end of the last line as anywhere else.

use std::borrow::Cow;
use std::cell::RefCell;

use bytes::Bytes;

use crate::budget::{Budget, Interrupt};
use crate::lanes;
use crate::pattern::Matcher;
use crate::redact::LineRedactor;
use crate::text;

/// One pane's text, as captured.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Capture {
    /// Position of this capture in request order (0, 1, 2, ...). Budgets are
    /// charged and results are returned in this order.
    pub key: usize,
    /// tmux line number of the first line (0 = top of the visible screen,
    /// negative = history).
    pub first_line: i64,
    /// The text: lines ended by `\n` (or `\r\n`). A final `\n` ends the last
    /// line; it does not start an empty one. Shared, not owned: a caller
    /// that keeps the text (a cache) hands the search a view of it, and
    /// the search never copies it unless it must clean it (`\r\n`, escapes).
    pub bytes: Bytes,
    /// One tmux line number per line, when they are not consecutive (wrapped
    /// lines were joined). Lines beyond the end of this list are numbered on
    /// from its last entry.
    pub line_numbers: Option<Vec<i64>>,
}

impl Capture {
    /// A capture whose lines are numbered `first_line`, `first_line + 1`, ...
    pub fn new(key: usize, first_line: i64, bytes: impl Into<Vec<u8>>) -> Capture {
        Capture::shared(key, first_line, Bytes::from(bytes.into()))
    }

    /// The same, for text the caller keeps too (the search reads the
    /// shared bytes; it neither copies nor frees them).
    pub fn shared(key: usize, first_line: i64, bytes: Bytes) -> Capture {
        Capture {
            key,
            first_line,
            bytes,
            line_numbers: None,
        }
    }
}

/// A matching line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LineMatch {
    /// tmux line number.
    pub line: i64,
    /// The line (valid UTF-8, escapes stripped, clipped around the match).
    pub text: String,
    /// The lowest index of a pattern that matches this line.
    pub pattern_index: usize,
    /// Up to `context_lines` lines before, oldest first (within the scanned
    /// part of the capture). Context may include other matching lines.
    pub before: Vec<String>,
    /// Up to `context_lines` lines after.
    pub after: Vec<String>,
    /// Secrets replaced in `text`, `before` and `after` (with
    /// [`SearchOptions::redact`](crate::SearchOptions::redact)).
    pub redactions: usize,
}

/// How matching lines are turned into output.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ScanOptions {
    /// Lines of context before and after each hit (at most 10).
    pub(crate) context_lines: usize,
    /// Cap on the bytes of each output text (line or context line).
    pub(crate) max_text_bytes: usize,
    /// Stop after this many matching lines; one more is looked for to know
    /// whether the pane was truncated.
    pub(crate) max_hits: u64,
    /// Replace secrets in the output texts (matching sees the real text).
    pub(crate) redact: bool,
}

/// The most context lines on each side.
pub(crate) const MAX_CONTEXT_LINES: usize = 10;

/// The matching lines of one capture.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct PaneScan {
    /// Matching lines in line order, at most `max_hits`.
    pub(crate) lines: Vec<LineMatch>,
    /// More lines matched than `max_hits`.
    pub(crate) truncated: bool,
    /// The scan stopped early for this reason.
    pub(crate) interrupted: Option<Interrupt>,
    /// Bytes actually scanned (line length + 1 each).
    pub(crate) bytes_scanned: u64,
    /// Lines actually scanned.
    pub(crate) lines_scanned: u64,
}

/// A capture ready to be scanned.
#[derive(Clone, Debug)]
pub(crate) struct Prepared {
    /// The capture's key.
    pub(crate) key: usize,
    first_line: i64,
    line_numbers: Option<Vec<i64>>,
    /// Prepared text: `\r\n` folded, escapes stripped if asked, final `\n`
    /// removed. The capture's own bytes when nothing needed cleaning.
    haystack: Bytes,
    line_count: usize,
}

impl Prepared {
    /// Prepares a capture for scanning.
    pub(crate) fn new(capture: Capture, strip_escapes: bool) -> Prepared {
        let Capture {
            key,
            first_line,
            bytes,
            line_numbers,
        } = capture;
        // One pass counts the line ends and finds out whether there is
        // anything to clean up at all (rarely: then the text is counted
        // again once cleaned).
        let mut haystack = bytes;
        let survey = lanes::survey(&haystack);
        let mut newlines = survey.newlines;
        if survey.special {
            if let Some(clean) = cleaned(&haystack, strip_escapes) {
                haystack = clean;
                newlines = memchr::memchr_iter(b'\n', &haystack).count();
            }
        }
        // A final `\n` ends the last line; it does not start another.
        let line_count = match haystack.last() {
            None => 0,
            Some(b'\n') => {
                haystack.truncate(haystack.len() - 1);
                newlines
            }
            Some(_) => newlines + 1,
        };
        Prepared {
            key,
            first_line,
            line_numbers,
            haystack,
            line_count,
        }
    }

    /// The text the matcher scans (lines joined by `\n`, no final line end).
    pub(crate) fn haystack(&self) -> &[u8] {
        &self.haystack
    }

    /// Number of lines.
    pub(crate) fn line_count(&self) -> usize {
        self.line_count
    }

    /// tmux line number of line `index` (0-based within the capture).
    pub(crate) fn line_number(&self, index: usize) -> i64 {
        let offset = |n: usize| i64::try_from(n).unwrap_or(i64::MAX);
        match &self.line_numbers {
            Some(numbers) if !numbers.is_empty() => match numbers.get(index) {
                Some(&n) => n,
                None => {
                    let last = numbers.len() - 1;
                    numbers[last].saturating_add(offset(index - last))
                }
            },
            _ => self.first_line.saturating_add(offset(index)),
        }
    }
}

/// The text with escapes stripped (when asked) and `\r\n` folded, in a
/// buffer of its own; `None` when neither changes anything (the text is
/// scanned as it is, its line count still right).
fn cleaned(bytes: &[u8], strip_escapes: bool) -> Option<Bytes> {
    let stripped = (strip_escapes && text::has_escapes(bytes))
        .then(|| text::strip_escapes(bytes).into_owned());
    let text = stripped.as_deref().unwrap_or(bytes);
    if memchr::memmem::find(text, b"\r\n").is_none() {
        return stripped.map(Bytes::from);
    }
    let mut owned = stripped.unwrap_or_else(|| bytes.to_vec());
    fold_crlf(&mut owned);
    Some(Bytes::from(owned))
}

/// Removes each `\r` that comes right before a `\n`, in place (the caller
/// has seen one).
fn fold_crlf(bytes: &mut Vec<u8>) {
    let mut write = 0;
    for read in 0..bytes.len() {
        let b = bytes[read];
        if b == b'\r' && bytes.get(read + 1) == Some(&b'\n') {
            continue;
        }
        bytes[write] = b;
        write += 1;
    }
    bytes.truncate(write);
}

/// Scan the haystack in pieces of about this many bytes (cut at line ends),
/// checking the deadline and cancellation between pieces.
const CHUNK_BYTES: usize = 1 << 20;

/// Scans the admitted lines of a prepared capture: `lines` lines, ending at
/// haystack offset `end` (as [`Budget::admit`] returned).
pub(crate) fn scan(
    matcher: &Matcher,
    prepared: &Prepared,
    lines: usize,
    end: usize,
    options: &ScanOptions,
    budget: &Budget,
) -> PaneScan {
    if lines == 0 {
        return PaneScan::default();
    }
    let end = end.min(prepared.haystack.len());
    LOWERED.with(|scratch| {
        let mut scratch = scratch.borrow_mut();
        let searched = matcher.searched(&prepared.haystack[..end], &mut scratch);
        let out = HITS.with(|hits| {
            let mut hits = hits.borrow_mut();
            let out = scan_text(
                matcher, prepared, searched, lines, options, budget, &mut hits,
            );
            if hits.capacity() > KEEP_HITS {
                *hits = Vec::new();
            }
            out
        });
        if scratch.capacity() > KEEP_SCRATCH_BYTES {
            *scratch = Vec::new();
        }
        out
    })
}

thread_local! {
    /// Per-thread buffer for the lowered copy of a haystack
    /// ([`Matcher::searched`]), reused from capture to capture.
    static LOWERED: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
    /// Per-thread buffer the matching lines of a capture are gathered in,
    /// reused from capture to capture: each capture's lines then cost one
    /// allocation of the right size, where a growing vector was reallocated
    /// and copied every time it doubled.
    static HITS: RefCell<Vec<LineMatch>> = const { RefCell::new(Vec::new()) };
}

/// A scratch buffer larger than this is given back after the scan.
const KEEP_SCRATCH_BYTES: usize = 8 << 20;
/// A hit buffer holding room for more lines than this is given back after
/// the scan (a line takes about 100 bytes).
const KEEP_HITS: usize = 1 << 12;

/// The scan proper over the admitted start of `prepared`'s haystack, which
/// `searched` holds as the matcher wants it (same length, same offsets):
/// matches are found in `searched`, lines are taken from the haystack.
fn scan_text(
    matcher: &Matcher,
    prepared: &Prepared,
    searched: &[u8],
    lines: usize,
    options: &ScanOptions,
    budget: &Budget,
    hits: &mut Vec<LineMatch>,
) -> PaneScan {
    let mut out = PaneScan::default();
    hits.clear();
    let hay = &prepared.haystack[..searched.len()];
    let context = options.context_lines.min(MAX_CONTEXT_LINES);
    let texts = Texts::new(matcher, hay, options);

    // `line_start`/`line_index` track the start of the line where the next
    // search begins.
    let mut line_start = 0usize;
    let mut line_index = 0usize;
    'chunks: while line_start <= hay.len() {
        if let Some(why) = budget.interrupt() {
            out.interrupted = Some(why);
            break;
        }
        let chunk_end = if hay.len() - line_start <= CHUNK_BYTES {
            hay.len()
        } else {
            memchr::memchr(b'\n', &hay[line_start + CHUNK_BYTES..])
                .map_or(hay.len(), |i| line_start + CHUNK_BYTES + i)
        };
        let chunk = &searched[..chunk_end];
        while let Some((hit, found)) = matcher.find_hit_with_pattern(chunk, line_start) {
            // Which line: count line ends between here and the hit.
            let hit = hit.min(chunk.len());
            line_index += memchr::memchr_iter(b'\n', &chunk[line_start..hit]).count();
            let start = memchr::memrchr(b'\n', &chunk[..hit]).map_or(0, |i| i + 1);
            let stop = memchr::memchr(b'\n', &hay[hit..]).map_or(hay.len(), |i| hit + i);
            if hits.len() as u64 >= options.max_hits {
                out.truncated = true;
                // Count as scanned only up to the end of the previous line.
                line_start = start;
                break 'chunks;
            }
            let mut redactions = 0;
            // Lines in ascending order: the context before, the line, the
            // context after (the redactor searches each line once, all the
            // lines of a match at once).
            let before = lines_before(hay, start, context);
            texts.expect(before.first().map_or(start, |r| r.start), stop, context);
            let before = before
                .into_iter()
                .map(|range| texts.line(range, false, &mut redactions))
                .collect();
            hits.push(LineMatch {
                line: prepared.line_number(line_index),
                text: texts.line(start..stop, true, &mut redactions),
                pattern_index: matcher.lowest_pattern_from(&searched[start..stop], found),
                before,
                after: context_after(&texts, stop, context, &mut redactions),
                redactions,
            });
            if stop >= hay.len() {
                line_start = hay.len() + 1;
                line_index += 1;
                break 'chunks;
            }
            line_start = stop + 1;
            line_index += 1;
            if line_start > chunk.len() {
                continue 'chunks;
            }
        }
        // No more hits in this chunk: move to the line after it.
        if chunk_end >= hay.len() {
            line_start = hay.len() + 1;
            line_index = lines;
            break;
        }
        line_index += memchr::memchr_iter(b'\n', &hay[line_start..=chunk_end]).count();
        line_start = chunk_end + 1;
    }
    // Moved out, so `hits` keeps its room for the next capture.
    out.lines = Vec::with_capacity(hits.len());
    out.lines.append(hits);
    // Everything before `line_start` was scanned (line bytes + 1 per line).
    if line_start > hay.len() {
        out.bytes_scanned = hay.len() as u64 + 1;
        out.lines_scanned = lines as u64;
    } else {
        out.bytes_scanned = line_start as u64;
        out.lines_scanned = line_index as u64;
    }
    out
}

/// Turns lines of the haystack into output text: redacted (when asked)
/// on the whole line, then clipped, so a clip never leaves half a secret.
struct Texts<'a> {
    matcher: &'a Matcher,
    hay: &'a [u8],
    max: usize,
    /// The redactor of the haystack's lines; `None` when not redacting.
    /// Lines are asked for in ascending order, which it makes cheap.
    redactor: Option<RefCell<LineRedactor<'a>>>,
}

impl<'a> Texts<'a> {
    fn new(matcher: &'a Matcher, hay: &'a [u8], options: &ScanOptions) -> Texts<'a> {
        Texts {
            matcher,
            hay,
            max: options.max_text_bytes,
            redactor: options.redact.then(|| RefCell::new(LineRedactor::new(hay))),
        }
    }

    /// Tells the redactor the lines about to be asked for: from `start` to
    /// the end of the `context`-th line after the one ending at `stop`.
    fn expect(&self, start: usize, stop: usize, context: usize) {
        if let Some(redactor) = &self.redactor {
            let mut end = stop;
            for _ in 0..context {
                if end >= self.hay.len() {
                    break;
                }
                end = memchr::memchr(b'\n', &self.hay[end + 1..])
                    .map_or(self.hay.len(), |i| end + 1 + i);
            }
            redactor.borrow_mut().expect(start..end);
        }
    }

    /// The output text of `hay[range]` (one line); `locate` centres a clip
    /// on the match.
    fn line(&self, range: std::ops::Range<usize>, locate: bool, redactions: &mut usize) -> String {
        let line = match &self.redactor {
            Some(redactor) => {
                let (line, n) = redactor.borrow_mut().line(range);
                *redactions += n;
                line
            }
            None => Cow::Borrowed(&self.hay[range]),
        };
        if line.len() <= self.max / 3 {
            // Even if every byte became U+FFFD it would fit. A redacted
            // line is already owned: it becomes the text without a copy.
            return match line {
                Cow::Owned(bytes) => String::from_utf8(bytes)
                    .unwrap_or_else(|e| text::lossy(e.as_bytes()).into_owned()),
                // Checking first and copying once valid is faster than the
                // lossy conversion's chunk walk, and nearly every line is
                // valid.
                Cow::Borrowed(bytes) => match std::str::from_utf8(bytes) {
                    Ok(valid) => valid.to_owned(),
                    Err(_) => text::lossy(bytes).into_owned(),
                },
            };
        }
        let span = if locate {
            self.matcher.find_in_line(&line)
        } else {
            None
        };
        text::clip_line(&line, span, self.max)
    }
}

/// Up to `n` lines before the line starting at `start`, in ascending order
/// (as [`Texts`] wants them asked for).
fn lines_before(hay: &[u8], start: usize, n: usize) -> Vec<std::ops::Range<usize>> {
    let mut ranges = Vec::new();
    let mut end = start; // one past the `\n` ending the previous line
    while ranges.len() < n && end > 0 {
        let prev_end = end - 1; // the `\n`
        let prev_start = memchr::memrchr(b'\n', &hay[..prev_end]).map_or(0, |i| i + 1);
        ranges.push(prev_start..prev_end);
        end = prev_start;
    }
    ranges.reverse();
    ranges
}

fn context_after(texts: &Texts, stop: usize, n: usize, redactions: &mut usize) -> Vec<String> {
    let hay = texts.hay;
    let mut lines = Vec::new();
    let mut at = stop; // the `\n` ending the matching line, or hay.len()
    while lines.len() < n && at < hay.len() {
        let next_start = at + 1;
        let next_end =
            memchr::memchr(b'\n', &hay[next_start..]).map_or(hay.len(), |i| next_start + i);
        lines.push(texts.line(next_start..next_end, false, redactions));
        at = next_end;
    }
    lines
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use crate::budget::SearchBudgets;
    use crate::pattern::PatternOptions;

    /// Clean text is scanned where it lies (the caller keeps it, the scan
    /// neither copies nor frees it); text to clean gets a buffer of its own
    /// and the caller's bytes stay as they were.
    #[test]
    fn prepares_clean_text_in_place_and_copies_only_to_clean() {
        let clean = Bytes::from_static(b"one\ntwo\n");
        let p = Prepared::new(Capture::shared(0, 0, clean.clone()), true);
        assert_eq!(p.haystack(), b"one\ntwo");
        assert_eq!(p.haystack().as_ptr(), clean.as_ptr());
        assert_eq!(p.line_count(), 2);
        for (dirty, strip, want, lines) in [
            (&b"one\r\ntwo\r\n"[..], false, &b"one\ntwo"[..], 2),
            (b"\x1b[1mone\x1b[0m\ntwo\n", true, b"one\ntwo", 2),
            (b"\x1b[1mone\r\n\r\n", true, b"one\n", 2),
            (b"lone\rcr\n", false, b"lone\rcr", 1),
            (b"\x1b[1mkept\n", false, b"\x1b[1mkept", 1),
        ] {
            let shared = Bytes::copy_from_slice(dirty);
            let p = Prepared::new(Capture::shared(0, 0, shared.clone()), strip);
            assert_eq!(p.haystack(), want, "{dirty:?}");
            assert_eq!(p.line_count(), lines, "{dirty:?}");
            assert_eq!(shared, dirty, "the caller's text is unchanged");
        }
    }

    fn run(pattern: &str, regex: bool, bytes: &[u8], context: usize) -> PaneScan {
        let m = Matcher::new(
            &[pattern],
            PatternOptions {
                regex,
                match_case: false,
            },
        )
        .unwrap();
        let p = Prepared::new(Capture::new(0, -3, bytes.to_vec()), true);
        let budget = Budget::new(&SearchBudgets::unlimited(), None);
        let a = budget.admit(p.haystack(), p.line_count());
        scan(
            &m,
            &p,
            a.lines,
            a.end,
            &ScanOptions {
                context_lines: context,
                max_text_bytes: 1000,
                max_hits: 100,
                redact: false,
            },
            &budget,
        )
    }

    #[test]
    fn line_numbers_start_at_first_line() {
        let s = run("x", false, b"a\nx\nb\nx", 0);
        let lines: Vec<i64> = s.lines.iter().map(|l| l.line).collect();
        assert_eq!(lines, vec![-2, 0]);
        assert_eq!(s.lines_scanned, 4);
        assert_eq!(s.bytes_scanned, 8);
    }

    #[test]
    fn final_newline_does_not_add_a_line() {
        let p = Prepared::new(Capture::new(0, 0, b"a\nb\n".to_vec()), false);
        assert_eq!(p.line_count(), 2);
        let p = Prepared::new(Capture::new(0, 0, b"\n".to_vec()), false);
        assert_eq!(p.line_count(), 1);
        let p = Prepared::new(Capture::new(0, 0, Vec::new()), false);
        assert_eq!(p.line_count(), 0);
    }

    #[test]
    fn dollar_anchors_before_crlf() {
        let s = run("b$", true, b"ab\r\ncb\r\n", 0);
        assert_eq!(s.lines.len(), 2);
        assert_eq!(s.lines[0].text, "ab");
    }

    #[test]
    fn context_is_clipped_at_buffer_edges() {
        let s = run("first|last", true, b"first\nm1\nm2\nlast", 2);
        assert_eq!(s.lines[0].before, Vec::<String>::new());
        assert_eq!(s.lines[0].after, vec!["m1", "m2"]);
        assert_eq!(s.lines[1].before, vec!["m1", "m2"]);
        assert_eq!(s.lines[1].after, Vec::<String>::new());
    }

    #[test]
    fn escapes_are_stripped_before_matching() {
        let s = run("error: boom", false, b"\x1b[31merror\x1b[0m: boom\n", 0);
        assert_eq!(s.lines.len(), 1);
        assert_eq!(s.lines[0].text, "error: boom");
    }

    #[test]
    fn empty_lines_match_empty_anchored_pattern() {
        let s = run("^$", true, b"\n\na\n\n", 0);
        let lines: Vec<i64> = s.lines.iter().map(|l| l.line).collect();
        assert_eq!(lines, vec![-3, -2, 0]);
    }

    #[test]
    fn explicit_line_numbers_are_used() {
        let mut c = Capture::new(0, 0, b"a\nb\nc\nd".to_vec());
        c.line_numbers = Some(vec![10, 12, 13]);
        let p = Prepared::new(c, false);
        assert_eq!(
            (0..4).map(|i| p.line_number(i)).collect::<Vec<_>>(),
            vec![10, 12, 13, 14]
        );
    }
}
