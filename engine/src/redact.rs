//! Secrets in pane text, found and replaced with `[REDACTED:KIND]`.
//!
//! One aho-corasick automaton holds every kind's literal (`AKIA`, `ghp_`,
//! `password`, `://`, ...), in lower case, and runs over an ASCII-lowered
//! copy of the text (which finds what an ASCII case-insensitive search of
//! the text would, several times faster: a case-insensitive automaton has
//! no useful prefilter): a text without any of them costs one pass and is
//! returned as it is. Only a line holding one is
//! handed to the confirming regexes (regex-automata, one multi-pattern
//! meta regex, leftmost-first), which say whether it is a secret and where
//! it ends. Every kind but one lies within a line; private keys (PEM
//! blocks) span lines and are found first, per text, by their armour
//! lines: every line of a block is replaced, line ends kept, so line
//! numbers stay right.
//!
//! Where a kind names a value (`password=VALUE`, `https://user:VALUE@`,
//! `aws_secret_access_key = VALUE`) only the value is replaced; the key stays
//! readable.

use std::borrow::Cow;
use std::ops::Range;
use std::sync::OnceLock;

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, MatchKind};
use regex_automata::meta::Regex;
use regex_automata::Input;

/// The kinds, in the order their regexes are tried at one position (the
/// first listed wins: `sk-ant-` is Anthropic's before it is OpenAI's).
const KINDS: &[(&str, &str)] = &[
    (
        "AWS_ACCESS_KEY",
        r"(?-u:\b)(?:AKIA|ASIA)[0-9A-Z]{16}(?-u:\b)",
    ),
    (
        "AWS_SECRET_KEY",
        r#"(?i:secret_?access_?key)["']?[ \t]*[:=][ \t]*["']?([A-Za-z0-9/+]{40})"#,
    ),
    ("GITHUB_TOKEN", r"(?-u:\b)gh[pousr]_[A-Za-z0-9]{36,255}"),
    ("GITHUB_TOKEN", r"(?-u:\b)github_pat_[A-Za-z0-9_]{22,255}"),
    ("GITLAB_TOKEN", r"(?-u:\b)glpat-[A-Za-z0-9_\-]{20,}"),
    ("SLACK_TOKEN", r"(?-u:\b)xox[abprs]-[A-Za-z0-9\-]{10,}"),
    ("STRIPE_KEY", r"(?-u:\b)[rs]k_live_[A-Za-z0-9]{16,}"),
    ("ANTHROPIC_KEY", r"(?-u:\b)sk-ant-[A-Za-z0-9_\-]{20,}"),
    (
        "OPENAI_KEY",
        r"(?-u:\b)sk-[A-Za-z0-9_\-]*[0-9][A-Za-z0-9_\-]*",
    ),
    ("GOOGLE_API_KEY", r"(?-u:\b)AIza[0-9A-Za-z_\-]{35}"),
    (
        "JWT",
        r"(?-u:\b)eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]*",
    ),
    (
        "URL_PASSWORD",
        r"(?-u:\b)[A-Za-z][A-Za-z0-9+.\-]*://[^ \t\n/@:]+:([^ \t\n/@]+)@",
    ),
    (
        "SECRET",
        r#"(?i:password|passwd|secret|token|api[_\-]?key)["']?[ \t]*[:=][ \t]*(?:"([^"\n]+)"|'([^'\n]+)'|([^ \t\n"',;=][^ \t\n"',;]*))"#,
    ),
];

/// The literals one of which every single-line kind's match holds (ASCII
/// case ignored: they are lower case and matched on lowered text; the
/// regexes decide).
const LITERALS: &[&str] = &[
    "akia",
    "asia",
    "secret",
    "password",
    "passwd",
    "token",
    "api_key",
    "apikey",
    "api-key",
    "ghp_",
    "gho_",
    "ghu_",
    "ghs_",
    "ghr_",
    "github_pat_",
    "glpat-",
    "xox",
    "sk_live_",
    "rk_live_",
    "sk-",
    "aiza",
    "eyj",
    "://",
];

/// The kind named for private key blocks.
const PRIVATE_KEY: &str = "PRIVATE_KEY";

/// An OpenAI key shorter than this is a word with a dash (`sk-1`), not a key.
const MIN_OPENAI_KEY: usize = 23;

struct Detector {
    prefilter: AhoCorasick,
    confirm: Regex,
}

/// Built once: the patterns are constants, so this fails only if they are
/// wrong, which `the_detector_builds` catches.
fn detector() -> Option<&'static Detector> {
    static DETECTOR: OnceLock<Option<Detector>> = OnceLock::new();
    DETECTOR
        .get_or_init(|| {
            // Lower-case literals on lowered text: the automaton picks its
            // own prefilter, which skips text without a literal at a
            // fraction of the cost of walking it byte by byte.
            let prefilter = AhoCorasickBuilder::new()
                .match_kind(MatchKind::LeftmostFirst)
                .build(LITERALS)
                .ok()?;
            let patterns: Vec<&str> = KINDS.iter().map(|(_, p)| *p).collect();
            let confirm = Regex::new_many(&patterns).ok()?;
            Some(Detector { prefilter, confirm })
        })
        .as_ref()
}

/// One replacement: the bytes and the kind that replaces them.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Found {
    span: Range<usize>,
    kind: &'static str,
}

/// `text` with every secret replaced by `[REDACTED:KIND]`, and how many
/// were replaced (each line of a private key counts once).
pub fn redact(text: &str) -> (Cow<'_, str>, usize) {
    match redact_bytes(text.as_bytes()) {
        (Cow::Borrowed(_), n) => (Cow::Borrowed(text), n),
        // Replacements cut at ASCII bytes and insert ASCII: still UTF-8.
        (Cow::Owned(bytes), n) => match String::from_utf8(bytes) {
            Ok(s) => (Cow::Owned(s), n),
            Err(e) => (
                Cow::Owned(String::from_utf8_lossy(e.as_bytes()).into_owned()),
                n,
            ),
        },
    }
}

/// [`redact`] for bytes (invalid UTF-8 is left as it is).
pub fn redact_bytes(text: &[u8]) -> (Cow<'_, [u8]>, usize) {
    let blocks = private_key_blocks(text);
    redact_range(text, 0..text.len(), &blocks)
}

/// Redacts `hay[range]` (whole lines), given the private key blocks of the
/// whole `hay` ([`private_key_blocks`]): the part of a block in range is
/// replaced line by line, the rest is searched for single-line kinds.
pub(crate) fn redact_range<'h>(
    hay: &'h [u8],
    range: Range<usize>,
    blocks: &[Range<usize>],
) -> (Cow<'h, [u8]>, usize) {
    let range = range.start.min(hay.len())..range.end.min(hay.len());
    let Some(detector) = detector() else {
        return fail_closed();
    };
    let mut found = Vec::new();
    block_lines(hay, &range, blocks, &mut found);
    find_single_line(detector, hay, &range, &mut Vec::new(), &mut found);
    replace(hay, range, &mut found)
}

/// What a redaction answers when the detector did not build: unreachable
/// with the constant patterns, and nothing of the text is shown.
fn fail_closed<'h>() -> (Cow<'h, [u8]>, usize) {
    (Cow::Owned(redacted(PRIVATE_KEY).into_bytes()), 1)
}

/// `hay[range]` with each of `found` replaced, in order of their starts (a
/// replacement starting inside an earlier one is dropped; on equal starts
/// the one listed first wins), and how many were replaced.
fn replace<'h>(hay: &'h [u8], range: Range<usize>, found: &mut [Found]) -> (Cow<'h, [u8]>, usize) {
    if found.is_empty() {
        return (Cow::Borrowed(&hay[range]), 0);
    }
    // Stable: a private key line listed before a single-line match at the
    // same start keeps winning.
    found.sort_by_key(|f| f.span.start);
    let mut out = Vec::with_capacity(range.len() + 32);
    let mut at = range.start;
    let mut count = 0;
    for f in found.iter() {
        if f.span.start < at {
            continue; // inside an earlier replacement
        }
        out.extend_from_slice(&hay[at..f.span.start]);
        // `[REDACTED:KIND]`, written in place (no string per replacement).
        out.extend_from_slice(b"[REDACTED:");
        out.extend_from_slice(f.kind.as_bytes());
        out.push(b']');
        at = f.span.end;
        count += 1;
    }
    out.extend_from_slice(&hay[at..range.end]);
    (Cow::Owned(out), count)
}

fn redacted(kind: &str) -> String {
    format!("[REDACTED:{kind}]")
}

/// The parts of `blocks` (sorted, disjoint) inside `range`, one per line
/// (line ends kept), pushed onto `found`.
fn block_lines(hay: &[u8], range: &Range<usize>, blocks: &[Range<usize>], found: &mut Vec<Found>) {
    // Blocks ending at or before the range have nothing in it.
    let first = blocks.partition_point(|b| b.end <= range.start);
    for block in blocks[first..].iter().take_while(|b| b.start < range.end) {
        let start = block.start.max(range.start);
        let end = block.end.min(range.end);
        let mut at = start;
        while at < end {
            let stop = memchr::memchr(b'\n', &hay[at..end]).map_or(end, |i| at + i);
            if stop > at {
                found.push(Found {
                    span: at..stop,
                    kind: PRIVATE_KEY,
                });
            }
            at = stop + 1;
        }
    }
}

/// Redacts the lines of one text that a search returns, one at a time,
/// with what [`redact_range`] would return for each, at a fraction of its
/// cost when many are asked for.
///
/// A search returning every matching line with its context asks for most
/// lines of a busy text, many of them twice (the context of one match is
/// the context or the match of the next). Asked in ascending order (each
/// line at or after the start of the one before), the lines are searched
/// for secrets once each, next lines in one prefilter call, the private
/// key blocks found once per text, and a line costs no allocation unless
/// it holds a secret. Asking out of order stays correct; it only searches
/// again.
pub(crate) struct LineRedactor<'h> {
    hay: &'h [u8],
    /// The private key blocks of `hay`, found at the first line asked for.
    blocks: Option<Vec<Range<usize>>>,
    /// Whole lines of `hay` whose single-line secrets are in `singles`
    /// (sorted by start); `None` before the first line.
    done: Option<Range<usize>>,
    singles: Vec<Found>,
    /// One line's replacements (kept to spare an allocation per line).
    scratch: Vec<Found>,
    /// The lowered text the prefilter reads (kept for the same reason).
    low: Vec<u8>,
}

impl<'h> LineRedactor<'h> {
    /// A redactor of lines of `hay`; nothing is searched until a line is
    /// asked for.
    pub(crate) fn new(hay: &'h [u8]) -> LineRedactor<'h> {
        LineRedactor {
            hay,
            blocks: None,
            done: None,
            singles: Vec::new(),
            scratch: Vec::new(),
            low: Vec::new(),
        }
    }

    /// `hay[range]` (whole lines) redacted, and how many secrets were
    /// replaced: the same as [`redact_range`] with the blocks of `hay`.
    pub(crate) fn line(&mut self, range: Range<usize>) -> (Cow<'h, [u8]>, usize) {
        let hay = self.hay;
        let range = range.start.min(hay.len())..range.end.min(hay.len());
        let Some(detector) = detector() else {
            return fail_closed();
        };
        self.cover(detector, &range);
        let lo = self.singles.partition_point(|f| f.span.start < range.start);
        let n = self.singles[lo..].partition_point(|f| f.span.start < range.end);
        let blocks = self.blocks.get_or_insert_with(|| private_key_blocks(hay));
        self.scratch.clear();
        block_lines(hay, &range, blocks, &mut self.scratch);
        // A span found in a line of the range starts in the range, and no
        // span of another line does.
        self.scratch.extend_from_slice(&self.singles[lo..lo + n]);
        replace(hay, range, &mut self.scratch)
    }

    /// Makes `singles` hold the single-line secrets of every line of
    /// `range`: searched only where not searched yet when `range` starts
    /// inside or right after the lines already searched, else searched
    /// afresh.
    fn cover(&mut self, detector: &Detector, range: &Range<usize>) {
        let (start, from) = match &self.done {
            Some(done) if done.start <= range.start && range.end <= done.end => return,
            // `done.end` ends a line: its `\n` (or the text's end) is where
            // the search goes on.
            Some(done) if done.start <= range.start && range.start <= done.end + 1 => {
                (done.start, done.end)
            }
            _ => {
                self.singles.clear();
                (range.start, range.start)
            }
        };
        let scan = from..range.end;
        find_single_line(detector, self.hay, &scan, &mut self.low, &mut self.singles);
        self.done = Some(start..range.end);
    }
}

/// The prefilter lowers at most about this many bytes at a time (whole
/// lines), so a long text needs no copy of its size.
const LOWER_CHUNK: usize = 64 * 1024;

/// Single-line secrets in `hay[range]`: lines holding a literal are
/// confirmed by the regexes; matches inside a private key are dropped later.
/// `low` is scratch space for the lowered text.
fn find_single_line(
    detector: &Detector,
    hay: &[u8],
    range: &Range<usize>,
    low: &mut Vec<u8>,
    found: &mut Vec<Found>,
) {
    let mut at = range.start;
    while at < range.end {
        // Whole lines: the chunk ends at a `\n` (where the next one starts)
        // or at the end of the range.
        let end = if range.end - at <= LOWER_CHUNK {
            range.end
        } else {
            memchr::memchr(b'\n', &hay[at + LOWER_CHUNK..range.end])
                .map_or(range.end, |i| at + LOWER_CHUNK + i)
        };
        low.clear();
        low.extend(hay[at..end].iter().map(u8::to_ascii_lowercase));
        find_in_chunk(detector, hay, &(at..end), low, found);
        at = end;
    }
}

/// [`find_single_line`] in `hay[chunk]`, lowered in `low`.
fn find_in_chunk(
    detector: &Detector,
    hay: &[u8],
    chunk: &Range<usize>,
    low: &[u8],
    found: &mut Vec<Found>,
) {
    let base = chunk.start;
    let mut at = chunk.start;
    while at < chunk.end {
        let input = aho_corasick::Input::new(low).span(at - base..chunk.end - base);
        let Some(hit) = detector.prefilter.find(input) else {
            return;
        };
        let hit = base + hit.start();
        // The line of the literal: confirm there, then go on after it.
        let line_start = memchr::memrchr(b'\n', &hay[chunk.start..hit])
            .map_or(chunk.start, |i| chunk.start + i + 1)
            .max(at);
        let line_end = memchr::memchr(b'\n', &hay[hit..chunk.end]).map_or(chunk.end, |i| hit + i);
        confirm_line(detector, hay, line_start..line_end, found);
        at = line_end + 1;
    }
}

fn confirm_line(detector: &Detector, hay: &[u8], line: Range<usize>, found: &mut Vec<Found>) {
    let input = Input::new(hay).span(line);
    // Matches are found by the lazy DFA alone; the value a kind names is
    // read off the match (`value_of`), which costs a fraction of asking
    // the regex for its capture groups.
    for m in detector.confirm.find_iter(input) {
        let Some((kind, _)) = KINDS.get(m.pattern().as_usize()) else {
            continue;
        };
        let span = value_of(kind, hay, m.range());
        if *kind == "OPENAI_KEY" && span.len() < MIN_OPENAI_KEY {
            continue;
        }
        found.push(Found { span, kind });
    }
}

/// The part of a match of `kind` to replace: the value, for the kinds
/// whose pattern names one (its capture group); the whole match otherwise
/// or when the match is not shaped as its pattern says.
fn value_of(kind: &str, hay: &[u8], m: Range<usize>) -> Range<usize> {
    let text = &hay[m.clone()];
    let at = |i: usize| m.start + i;
    let value = match kind {
        // `...key = VALUE`: the value is the match's last 40 bytes.
        "AWS_SECRET_KEY" => text.len().checked_sub(40).map(|i| at(i)..m.end),
        // `scheme://user:VALUE@`: the user holds no `:`, the value no `@`.
        "URL_PASSWORD" => memchr::memmem::find(text, b"://").and_then(|i| {
            let colon = memchr::memchr(b':', &text[i + 3..])?;
            Some(at(i + 3 + colon + 1)..m.end.checked_sub(1)?)
        }),
        // `key = VALUE`, `key: "VALUE"`: the key holds no `:` or `=`.
        "SECRET" => memchr::memchr2(b':', b'=', text).map(|i| {
            let mut from = i + 1;
            while matches!(text.get(from), Some(b' ' | b'\t')) {
                from += 1;
            }
            match text.get(from) {
                Some(b'"' | b'\'') => at(from + 1)..m.end - 1,
                _ => at(from)..m.end,
            }
        }),
        _ => None,
    };
    value
        .filter(|v| v.start < v.end && m.start <= v.start && v.end <= m.end)
        .unwrap_or(m)
}

/// The armour lines of a private key.
const BEGIN: &[u8] = b"-----BEGIN ";
const END: &[u8] = b"-----END ";
const KEY_ARMOUR_TAIL: &[u8] = b"PRIVATE KEY-----";

/// The byte ranges of private key blocks in `hay`: from `-----BEGIN ...
/// PRIVATE KEY-----` to the end of its `-----END ... PRIVATE KEY-----` line.
/// A block cut by the edge of the text (its end not printed yet, or its
/// start scrolled away) runs over the base64 lines next to the armour line
/// that is there.
pub(crate) fn private_key_blocks(hay: &[u8]) -> Vec<Range<usize>> {
    let mut blocks: Vec<Range<usize>> = Vec::new();
    let finder = memchr::memmem::Finder::new(KEY_ARMOUR_TAIL);
    let mut open: Option<usize> = None;
    for tail in finder.find_iter(hay) {
        let (start, end) = line_at(hay, tail);
        let line = &hay[start..end];
        if let Some(b) = memchr::memmem::find(line, BEGIN) {
            match open {
                // A second BEGIN before any END: the first block was cut
                // short (say by `head`); it runs over its base64 lines, and
                // the new one opens. (Kept open, the second key's body was
                // never redacted.)
                Some(from) if from < start => {
                    push_block(&mut blocks, from..body_below(hay, from));
                    open = Some(start + b);
                }
                Some(_) => {}
                None => open = Some(start + b),
            }
        } else if memchr::memmem::find(line, END).is_some() {
            let from = match open.take() {
                Some(from) => from,
                None => body_above(hay, start),
            };
            push_block(&mut blocks, from..end);
        }
    }
    if let Some(from) = open {
        push_block(&mut blocks, from..body_below(hay, from));
    }
    blocks
}

/// Adds a block unless it overlaps the last one.
fn push_block(blocks: &mut Vec<Range<usize>>, block: Range<usize>) {
    if blocks.last().is_none_or(|last| last.end <= block.start) {
        blocks.push(block);
    }
}

/// The line holding byte `at`: its start and end (the `\n` or the text end).
fn line_at(hay: &[u8], at: usize) -> (usize, usize) {
    let start = memchr::memrchr(b'\n', &hay[..at]).map_or(0, |i| i + 1);
    let end = memchr::memchr(b'\n', &hay[at..]).map_or(hay.len(), |i| at + i);
    (start, end)
}

/// A line of a key's body: base64, or a header such as `Proc-Type: 4,ENCRYPTED`.
fn is_body_line(line: &[u8]) -> bool {
    let line = line.trim_ascii();
    !line.is_empty()
        && (line
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'='))
            || line.contains(&b':'))
}

/// The start of the body lines right above the line starting at `start`.
fn body_above(hay: &[u8], mut start: usize) -> usize {
    while start > 0 {
        let (prev, _) = line_at(hay, start - 1);
        if !is_body_line(&hay[prev..start - 1]) {
            break;
        }
        start = prev;
    }
    start
}

/// The end of the body lines below the armour line holding `from`.
fn body_below(hay: &[u8], from: usize) -> usize {
    let (_, mut end) = line_at(hay, from);
    while end < hay.len() {
        let (next, next_end) = line_at(hay, end + 1);
        if !is_body_line(&hay[next..next_end]) {
            break;
        }
        end = next_end;
    }
    end
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use proptest::prelude::*;

    fn r(text: &str) -> String {
        redact(text).0.into_owned()
    }

    #[test]
    fn the_detector_builds() {
        assert!(detector().is_some());
    }

    #[test]
    fn a_text_without_literals_is_borrowed() {
        let (out, n) = redact("cargo build\nok 3f2a9c1d\n");
        assert!(matches!(out, Cow::Borrowed(_)));
        assert_eq!(n, 0);
    }

    #[test]
    fn only_the_value_of_an_assignment_is_replaced() {
        assert_eq!(
            r("DB_PASSWORD=hunter2 next"),
            "DB_PASSWORD=[REDACTED:SECRET] next"
        );
        assert_eq!(
            r(r#"{"api_key": "abc def"}"#),
            r#"{"api_key": "[REDACTED:SECRET]"}"#
        );
        assert_eq!(
            r("https://bob:s3cr3t@example.com/x"),
            "https://bob:[REDACTED:URL_PASSWORD]@example.com/x"
        );
    }

    #[test]
    fn a_private_key_is_replaced_line_by_line() {
        let text = "before\n-----BEGIN RSA PRIVATE KEY-----\nMIIEabc+/=\nxyz\n-----END RSA PRIVATE KEY-----\nafter\n";
        let (out, n) = redact(text);
        assert_eq!(
            out,
            "before\n[REDACTED:PRIVATE_KEY]\n[REDACTED:PRIVATE_KEY]\n[REDACTED:PRIVATE_KEY]\n[REDACTED:PRIVATE_KEY]\nafter\n"
        );
        assert_eq!(n, 4);
    }

    #[test]
    fn a_cut_private_key_is_replaced_up_to_the_edge() {
        let top_cut = "MIIEabc\nQUJD\n-----END PRIVATE KEY-----\n$ ls\n";
        assert_eq!(r(top_cut).matches("[REDACTED:PRIVATE_KEY]").count(), 3);
        assert!(r(top_cut).ends_with("\n$ ls\n"));
        let bottom_cut = "$ cat k\n-----BEGIN PRIVATE KEY-----\nMIIEabc\nQUJD";
        assert_eq!(
            r(bottom_cut),
            "$ cat k\n[REDACTED:PRIVATE_KEY]\n[REDACTED:PRIVATE_KEY]\n[REDACTED:PRIVATE_KEY]"
        );
    }

    /// The byte range of every line of `hay` (without its `\n`).
    fn line_ranges(hay: &[u8]) -> Vec<Range<usize>> {
        let mut out = Vec::new();
        let mut at = 0;
        loop {
            let end = memchr::memchr(b'\n', &hay[at..]).map_or(hay.len(), |i| at + i);
            out.push(at..end);
            if end == hay.len() {
                return out;
            }
            at = end + 1;
        }
    }

    /// Lines that make secrets, private key blocks (whole, cut, nested,
    /// unclosed), their bodies and ordinary text.
    fn piece() -> impl Strategy<Value = String> {
        prop_oneof![
            (
                0..crate::fuzz_redact::SAMPLE_KINDS,
                proptest::collection::vec(any::<u8>(), 1..24)
            )
                .prop_map(|(k, body)| crate::fuzz_redact::sample(k, &body).0),
            Just("-----BEGIN RSA PRIVATE KEY-----".to_owned()),
            Just("x -----BEGIN PRIVATE KEY----- y".to_owned()),
            Just("-----END RSA PRIVATE KEY-----".to_owned()),
            Just("MIIEpAIBAAKCAQEA75bodyline0123456789+/=".to_owned()),
            Just("Proc-Type: 4,ENCRYPTED".to_owned()),
            Just("token=abc password: 'x y' sk-1 task-manager".to_owned()),
            "[a-zA-Z0-9 :=/@._-]{0,30}",
            Just(String::new()),
        ]
    }

    proptest::proptest! {
        /// The prefilter on lowered text finds what an ASCII
        /// case-insensitive automaton finds in the text itself.
        #[test]
        fn the_lowered_prefilter_finds_what_ignoring_case_finds(
            pieces in proptest::collection::vec(
                prop_oneof![
                    proptest::sample::select(LITERALS.to_vec()).prop_map(str::to_owned),
                    "[a-zA-Z:/_-]{0,6}",
                    "[^\n]{0,4}",
                ],
                0..30,
            ),
            upper in proptest::collection::vec(any::<bool>(), 0..200),
        ) {
            let mut text: Vec<u8> = pieces.concat().into_bytes();
            for (b, up) in text.iter_mut().zip(upper) {
                if up {
                    b.make_ascii_uppercase();
                }
            }
            let ignoring = AhoCorasickBuilder::new()
                .ascii_case_insensitive(true)
                .match_kind(MatchKind::LeftmostFirst)
                .build(LITERALS)
                .unwrap();
            let want: Vec<(usize, usize)> =
                ignoring.find_iter(&text).map(|m| (m.start(), m.end())).collect();
            let low = text.to_ascii_lowercase();
            let got: Vec<(usize, usize)> = detector()
                .unwrap()
                .prefilter
                .find_iter(&low)
                .map(|m| (m.start(), m.end()))
                .collect();
            proptest::prop_assert_eq!(got, want);
        }
    }

    proptest::proptest! {
        /// The line redactor answers each line as `redact_range` does,
        /// whatever order the lines are asked in: a search's order (each
        /// match with its context, ascending, overlapping) or any other.
        #[test]
        fn the_line_redactor_agrees_with_redact_range(
            pieces in proptest::collection::vec(piece(), 0..40),
            picks in proptest::collection::vec((any::<proptest::sample::Index>(), 0..3usize), 0..30),
            shuffled in proptest::collection::vec(any::<proptest::sample::Index>(), 0..10),
        ) {
            let text = pieces.join("\n");
            let hay = text.as_bytes();
            let lines = line_ranges(hay);
            let blocks = private_key_blocks(hay);
            // A search's order: matches ascending, each with up to 2 lines
            // of context on either side.
            let mut matches: Vec<(usize, usize)> =
                picks.iter().map(|(i, c)| (i.index(lines.len()), *c)).collect();
            matches.sort_unstable();
            let mut asked: Vec<Range<usize>> = Vec::new();
            for (m, c) in matches {
                let first = m.saturating_sub(c);
                let last = (m + c).min(lines.len() - 1);
                asked.extend(lines[first..=last].iter().cloned());
            }
            // Then lines in any order, and a range of several lines.
            asked.extend(shuffled.iter().map(|i| lines[i.index(lines.len())].clone()));
            if let (Some(a), Some(b)) = (lines.first(), lines.last()) {
                asked.push(a.start..b.end);
            }
            let mut redactor = LineRedactor::new(hay);
            for range in asked {
                let want = redact_range(hay, range.clone(), &blocks);
                let got = redactor.line(range.clone());
                proptest::prop_assert_eq!(got, want, "{:?} of {:?}", range, text);
            }
        }
    }

    #[test]
    fn a_range_sees_the_blocks_of_the_whole_text() {
        let hay = b"-----BEGIN EC PRIVATE KEY-----\nMHcCAQEE\n-----END EC PRIVATE KEY-----";
        let blocks = private_key_blocks(hay);
        let (line, n) = redact_range(hay, 31..39, &blocks);
        assert_eq!(&*line, b"[REDACTED:PRIVATE_KEY]");
        assert_eq!(n, 1);
    }
}
