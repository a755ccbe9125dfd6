//! Secrets in pane text, found and replaced with `[REDACTED:KIND]`.
//!
//! One aho-corasick automaton holds every kind's literal (`AKIA`, `ghp_`,
//! `password`, `://`, ...), in lower case, and runs over an ASCII-lowered
//! copy of the text (which finds what an ASCII case-insensitive search of
//! the text would, several times faster: a case-insensitive automaton has
//! no useful prefilter): a text without any of them costs one pass and is
//! returned as it is. Every single-line kind's match starts with its
//! literal (a URL's scheme comes before its `://`), so the confirming
//! regexes (regex-automata, one multi-pattern meta regex, leftmost-first)
//! run anchored where a literal was found, forward only, and say whether
//! a secret starts there and where it ends. The kinds that ignore case
//! ignore ASCII case only, as the prefilter does. Every kind but one lies within a line; private keys (PEM
//! blocks) span lines and are found first, per text, by their armour
//! lines: every line of a block is replaced, line ends kept, so line
//! numbers stay right.
//!
//! Where a kind names a value (`password=VALUE`, `https://user:VALUE@`,
//! `aws_secret_access_key = VALUE`) only the value is replaced; the key stays
//! readable.

use std::borrow::Cow;
use std::cell::RefCell;
use std::ops::Range;
use std::sync::OnceLock;

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, MatchKind};
use regex_automata::meta::{Cache, Regex};
use regex_automata::{Anchored, Input, Match};

/// The kinds, in the order their regexes are tried at one position (the
/// first listed wins: `sk-ant-` is Anthropic's before it is OpenAI's).
const KINDS: &[(&str, &str)] = &[
    (
        "AWS_ACCESS_KEY",
        r"(?-u:\b)(?:AKIA|ASIA)[0-9A-Z]{16}(?-u:\b)",
    ),
    (
        "AWS_SECRET_KEY",
        r#"(?i-u:secret_?access_?key)["']?[ \t]*[:=][ \t]*["']?([A-Za-z0-9/+]{40})"#,
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
        r#"(?i-u:password|passwd|secret|token|api[_\-]?key)["']?[ \t]*[:=][ \t]*(?:"([^"\n]+)"|'([^'\n]+)'|([^ \t\n"',;=][^ \t\n"',;]*))"#,
    ),
];

/// The literals one of which every single-line kind's match starts with
/// (ASCII case ignored: they are lower case and matched on lowered text;
/// the regexes decide), but for a URL password, whose scheme comes before
/// its `://` ([`scheme_starts`]); with what a match starting there needs.
const LITERALS: &[(&str, Start)] = &[
    ("akia", Start::Bounded("AKIA")),
    ("asia", Start::Bounded("ASIA")),
    ("secret", Start::Word),
    ("password", Start::Word),
    ("passwd", Start::Word),
    ("token", Start::Word),
    ("api_key", Start::Word),
    ("apikey", Start::Word),
    ("api-key", Start::Word),
    ("ghp_", Start::Bounded("ghp_")),
    ("gho_", Start::Bounded("gho_")),
    ("ghu_", Start::Bounded("ghu_")),
    ("ghs_", Start::Bounded("ghs_")),
    ("ghr_", Start::Bounded("ghr_")),
    ("github_pat_", Start::Bounded("github_pat_")),
    ("glpat-", Start::Bounded("glpat-")),
    ("xox", Start::Bounded("xox")),
    ("sk_live_", Start::Bounded("sk_live_")),
    ("rk_live_", Start::Bounded("rk_live_")),
    ("sk-", Start::Bounded("sk-")),
    ("aiza", Start::Bounded("AIza")),
    ("eyj", Start::Bounded("eyJ")),
    ("://", Start::Scheme),
];

/// What a match starting at a literal needs there.
#[derive(Clone, Copy, Debug)]
enum Start {
    /// A key word of an assignment, in any case (`Password:`).
    Word,
    /// A token's prefix, in this case, starting a word (`(?-u:\b)`).
    Bounded(&'static str),
    /// No match starts at `://`; the scheme before it may start one.
    Scheme,
}

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
                .build(LITERALS.iter().map(|(literal, _)| literal))
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
    find_single_line(detector, hay, &range, &mut Scratch::default(), &mut found);
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
/// for secrets once each (a match and its context in one search when
/// [expected](LineRedactor::expect)), the private key blocks found once per
/// text, and a line costs no allocation unless it holds a secret, nor a
/// bisection to find its secrets. Asking out of order stays correct; it
/// only searches again.
pub(crate) struct LineRedactor<'h> {
    hay: &'h [u8],
    /// The private key blocks of `hay`, found as far as lines are asked for.
    blocks: KeyBlocks,
    /// Whole lines of `hay` whose single-line secrets are in `singles`
    /// (sorted by start); `None` before the first line.
    done: Option<Range<usize>>,
    singles: Vec<Found>,
    /// Where the last line asked for starts in `singles` and in `blocks`
    /// (the next line's are at or after them).
    next_single: usize,
    next_block: usize,
    /// One line's replacements (kept to spare an allocation per line).
    scratch: Vec<Found>,
    /// The search's scratch space (kept for the same reason).
    search: Scratch,
}

impl<'h> LineRedactor<'h> {
    /// A redactor of lines of `hay`; nothing is searched until a line is
    /// asked for.
    pub(crate) fn new(hay: &'h [u8]) -> LineRedactor<'h> {
        LineRedactor {
            hay,
            blocks: KeyBlocks::default(),
            done: None,
            singles: Vec::new(),
            next_single: 0,
            next_block: 0,
            scratch: Vec::new(),
            search: Scratch::default(),
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
        let lo = seek(&self.singles, &mut self.next_single, |f| {
            f.span.start < range.start
        });
        let n = self.singles[lo..]
            .iter()
            .take_while(|f| f.span.start < range.end)
            .count();
        let blocks = self.blocks.reach(hay, range.end);
        // Blocks ending at or before the range have nothing in it.
        let first = seek(blocks, &mut self.next_block, |b| b.end <= range.start);
        let in_block = blocks.get(first).is_some_and(|b| b.start < range.end);
        if n == 0 && !in_block {
            return (Cow::Borrowed(&hay[range]), 0);
        }
        self.scratch.clear();
        block_lines(hay, &range, blocks, &mut self.scratch);
        // A span found in a line of the range starts in the range, and no
        // span of another line does.
        self.scratch.extend_from_slice(&self.singles[lo..lo + n]);
        replace(hay, range, &mut self.scratch)
    }

    /// Searches the lines of `range` (whole lines) for secrets before they
    /// are asked for one by one: one search for a match and its context
    /// rather than one per line. Lines asked for outside it stay correct.
    pub(crate) fn expect(&mut self, range: Range<usize>) {
        let range = range.start.min(self.hay.len())..range.end.min(self.hay.len());
        if let Some(detector) = detector() {
            self.cover(detector, &range);
        }
    }

    /// Makes `singles` hold the single-line secrets of every line of
    /// `range`: searched only where not searched yet when `range` starts
    /// inside or a little after the lines already searched (the lines
    /// between are searched too: a search costs as much to start as to
    /// cross a few hundred bytes), else searched afresh.
    fn cover(&mut self, detector: &Detector, range: &Range<usize>) {
        let (start, from) = match &self.done {
            Some(done) if done.start <= range.start && range.end <= done.end => return,
            // `done.end` ends a line: its `\n` (or the text's end) is where
            // the search goes on.
            Some(done) if done.start <= range.start && range.start <= done.end + GAP => {
                (done.start, done.end)
            }
            _ => {
                self.singles.clear();
                self.next_single = 0;
                (range.start, range.start)
            }
        };
        let scan = from..range.end;
        find_single_line(
            detector,
            self.hay,
            &scan,
            &mut self.search,
            &mut self.singles,
        );
        self.done = Some(start..range.end);
    }
}

/// The most bytes between the lines already searched and the next asked
/// for that are searched rather than skipped.
const GAP: usize = 512;

/// The first index of `items` (sorted) whose item is not `before` the
/// line asked for, looked for from `hint` (where the last line's were),
/// which then holds it: a step or two for lines asked for in order, a
/// bisection otherwise.
fn seek<T>(items: &[T], hint: &mut usize, before: impl Fn(&T) -> bool) -> usize {
    let mut i = (*hint).min(items.len());
    if i > 0 && !before(&items[i - 1]) {
        i = items[..i].partition_point(&before);
    } else {
        let mut steps = 0;
        while i < items.len() && before(&items[i]) {
            i += 1;
            steps += 1;
            if steps == 8 {
                i += items[i..].partition_point(&before);
                break;
            }
        }
    }
    *hint = i;
    i
}

/// The prefilter lowers at most about this many bytes at a time (whole
/// lines), so a long text needs no copy of its size.
const LOWER_CHUNK: usize = 64 * 1024;

/// Space a search for single-line secrets reuses: the lowered text the
/// prefilter reads, the places where a line's secrets may start.
#[derive(Default)]
struct Scratch {
    low: Vec<u8>,
    starts: Vec<usize>,
}

/// Single-line secrets in `hay[range]`: lines holding a literal are
/// confirmed by the regexes; matches inside a private key are dropped later.
fn find_single_line(
    detector: &Detector,
    hay: &[u8],
    range: &Range<usize>,
    scratch: &mut Scratch,
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
        let low = &mut scratch.low;
        low.clear();
        // A copy, then lowered in place: both vectorised (lowering byte by
        // byte into the vector is several times slower).
        low.extend_from_slice(&hay[at..end]);
        low.make_ascii_lowercase();
        find_in_chunk(detector, hay, &(at..end), low, &mut scratch.starts, found);
        at = end;
    }
}

/// [`find_single_line`] in `hay[chunk]`, lowered in `low`: each literal
/// the prefilter finds is a place where a secret may start, and a line's
/// places are confirmed together once its last literal is found.
fn find_in_chunk(
    detector: &Detector,
    hay: &[u8],
    chunk: &Range<usize>,
    low: &[u8],
    starts: &mut Vec<usize>,
    found: &mut Vec<Found>,
) {
    let base = chunk.start;
    // The line holding the literals in `starts`.
    let mut line = chunk.start..chunk.start;
    let mut at = chunk.start;
    while at < chunk.end {
        let input = aho_corasick::Input::new(low).span(at - base..chunk.end - base);
        let Some(hit) = detector.prefilter.find(input) else {
            break;
        };
        let (literal, hit) = (hit.pattern().as_usize(), base + hit.start());
        if hit >= line.end {
            confirm_line(detector, hay, &line, starts, found);
            line = line_around(hay, chunk, hit);
        }
        match LITERALS.get(literal).map(|(_, start)| *start) {
            Some(Start::Word) => starts.push(hit),
            // Checked here, where it is cheap: most `sk-` are in words
            // (`task-list`), most `://` are no password.
            Some(Start::Bounded(exact)) => {
                if hay[hit..].starts_with(exact.as_bytes()) && !after_word(hay, hit) {
                    starts.push(hit);
                }
            }
            Some(Start::Scheme) | None => scheme_starts(hay, hit, starts),
        }
        // Literals may overlap (`secretoken=x`, `akiapi_key=x`): the next
        // one may start inside this one.
        at = hit + 1;
    }
    confirm_line(detector, hay, &line, starts, found);
}

/// The line of `hay` holding byte `at`, within `chunk` (whole lines).
fn line_around(hay: &[u8], chunk: &Range<usize>, at: usize) -> Range<usize> {
    let start =
        memchr::memrchr(b'\n', &hay[chunk.start..at]).map_or(chunk.start, |i| chunk.start + i + 1);
    let end = memchr::memchr(b'\n', &hay[at..chunk.end]).map_or(chunk.end, |i| at + i);
    start..end
}

/// Where a URL's scheme may start before the `://` at `colon`: every
/// letter of the run of scheme bytes before it that starts a word (as the
/// pattern's `\b[A-Za-z][A-Za-z0-9+.\-]*://` wants).
fn scheme_starts(hay: &[u8], colon: usize, starts: &mut Vec<usize>) {
    let is_scheme = |b: u8| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'.' | b'-');
    let mut s = colon;
    while s > 0 && is_scheme(hay[s - 1]) {
        s -= 1;
        if hay[s].is_ascii_alphabetic() && !after_word(hay, s) {
            starts.push(s);
        }
    }
}

/// Whether the byte before `at` is a word byte (so `(?-u:\b)` does not
/// hold at `at` before a word byte). The whole text is looked at, as the
/// regexes look behind a line's start.
fn after_word(hay: &[u8], at: usize) -> bool {
    at.checked_sub(1)
        .and_then(|i| hay.get(i))
        .is_some_and(|&b| b.is_ascii_alphanumeric() || b == b'_')
}

/// The secrets of `line` starting at `starts` (every place in the line
/// where one may start, in any order; emptied): from the first, each place
/// not inside the last secret found is tried with the regexes anchored
/// there, which is what a leftmost-first search of the line finds, for the
/// cost of one forward pass from each place (an unanchored search walks
/// the whole line, then back from each match to find its start).
fn confirm_line(
    detector: &Detector,
    hay: &[u8],
    line: &Range<usize>,
    starts: &mut Vec<usize>,
    found: &mut Vec<Found>,
) {
    if starts.is_empty() {
        return;
    }
    starts.sort_unstable();
    starts.dedup();
    let regex = &detector.confirm;
    let kept = CONFIRM_CACHE.try_with(|cell| match cell.try_borrow_mut() {
        Ok(mut slot) => {
            let cache = slot.get_or_insert_with(|| regex.create_cache());
            confirm_starts(hay, line, starts, found, |input| {
                regex.search_with(cache, input)
            });
        }
        Err(_) => confirm_starts(hay, line, starts, found, |input| regex.search(input)),
    });
    // Only while the thread ends: the regex's own pool then.
    if kept.is_err() {
        confirm_starts(hay, line, starts, found, |input| regex.search(input));
    }
    starts.clear();
}

thread_local! {
    /// The confirming regex's scratch space, one per thread, kept warm from
    /// text to text (the regex's own pool takes a lock for every thread
    /// but the one that built it, at every search).
    static CONFIRM_CACHE: RefCell<Option<Cache>> = const { RefCell::new(None) };
}

/// [`confirm_line`] with `search` (the regex, anchored at a start).
fn confirm_starts(
    hay: &[u8],
    line: &Range<usize>,
    starts: &[usize],
    found: &mut Vec<Found>,
    mut search: impl FnMut(&Input<'_>) -> Option<Match>,
) {
    let mut at = line.start;
    for &start in starts {
        if start < at {
            continue;
        }
        let input = Input::new(hay)
            .span(start..line.end)
            .anchored(Anchored::Yes);
        let Some(m) = search(&input) else {
            continue;
        };
        at = m.end().max(start + 1);
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
    let mut blocks = KeyBlocks::default();
    blocks.reach(hay, hay.len());
    blocks.blocks
}

/// [`private_key_blocks`] found step by step, only as far down the text as
/// lines are asked for: a search that stops early (its budgets spent) does
/// not read the whole text for them.
#[derive(Debug, Default)]
pub(crate) struct KeyBlocks {
    blocks: Vec<Range<usize>>,
    /// A BEGIN line seen without its END yet.
    open: Option<usize>,
    /// Armour tails starting before this were handled.
    scanned: usize,
    /// The whole text was handled.
    done: bool,
}

impl KeyBlocks {
    /// The blocks, every one holding a byte before `at` among them.
    ///
    /// What lies below can still make a block above: a block's END line
    /// without its BEGIN takes the body lines right above it, and an open
    /// BEGIN runs to its END. So the search goes on to the end of the
    /// first line from `at` on that no body can cross, and to the end of
    /// the text while a BEGIN above is open.
    pub(crate) fn reach(&mut self, hay: &[u8], at: usize) -> &[Range<usize>] {
        if self.done {
            return &self.blocks;
        }
        let mut limit = hay.len();
        let mut next = at.saturating_add(1);
        while next < hay.len() {
            let end = memchr::memchr(b'\n', &hay[next..]).map_or(hay.len(), |i| next + i);
            if !is_body_line(&hay[next..end]) {
                limit = end;
                break;
            }
            next = end + 1;
        }
        self.advance(hay, limit);
        if self.open.is_some_and(|from| from < limit) {
            self.advance(hay, hay.len());
        }
        if self.scanned >= hay.len() {
            if let Some(from) = self.open.take() {
                push_block(&mut self.blocks, from..body_below(hay, from));
            }
            self.done = true;
        }
        &self.blocks
    }

    /// Handles the armour tails lying wholly before `to`.
    fn advance(&mut self, hay: &[u8], to: usize) {
        let to = to.min(hay.len());
        if to <= self.scanned {
            return;
        }
        let finder = memchr::memmem::Finder::new(KEY_ARMOUR_TAIL);
        let from = self.scanned;
        for tail in finder.find_iter(&hay[from..to]) {
            self.tail(hay, from + tail);
        }
        // A tail cut by `to` is found by the next step.
        self.scanned = if to == hay.len() {
            to
        } else {
            to.saturating_sub(KEY_ARMOUR_TAIL.len() - 1).max(from)
        };
    }

    /// One `PRIVATE KEY-----` at `tail`: a BEGIN opens a block, an END
    /// closes one.
    fn tail(&mut self, hay: &[u8], tail: usize) {
        let (start, end) = line_at(hay, tail);
        let line = &hay[start..end];
        if let Some(b) = memchr::memmem::find(line, BEGIN) {
            match self.open {
                // A second BEGIN before any END: the first block was cut
                // short (say by `head`); it runs over its base64 lines, and
                // the new one opens. (Kept open, the second key's body was
                // never redacted.)
                Some(from) if from < start => {
                    push_block(&mut self.blocks, from..body_below(hay, from));
                    self.open = Some(start + b);
                }
                Some(_) => {}
                None => self.open = Some(start + b),
            }
        } else if memchr::memmem::find(line, END).is_some() {
            let from = match self.open.take() {
                Some(from) => from,
                None => body_above(hay, start),
            };
            push_block(&mut self.blocks, from..end);
        }
    }
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

    /// Unreachable while the patterns build, but what it answers must show
    /// nothing of the text and count as a redaction.
    #[test]
    fn failing_closed_shows_nothing_and_counts_one() {
        let (out, n) = fail_closed();
        assert_eq!((out.as_ref(), n), (b"[REDACTED:PRIVATE_KEY]".as_slice(), 1));
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
                    proptest::sample::select(LITERALS.iter().map(|(l, _)| *l).collect::<Vec<_>>())
                        .prop_map(str::to_owned),
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
                .build(LITERALS.iter().map(|(l, _)| l))
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
        /// match with its context, ascending, overlapping, announced or
        /// not) or any other.
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
            // (Whether the lines are announced first, and the lines.)
            let mut asked: Vec<(bool, Range<usize>)> = Vec::new();
            for (k, (m, c)) in matches.into_iter().enumerate() {
                let first = m.saturating_sub(c);
                let last = (m + c).min(lines.len() - 1);
                // Every other match is announced, as a search does.
                if k % 2 == 0 {
                    asked.push((true, lines[first].start..lines[last].end));
                }
                asked.extend(lines[first..=last].iter().map(|r| (false, r.clone())));
            }
            // Then lines in any order, some announced, and a range of
            // several lines.
            for (k, i) in shuffled.iter().enumerate() {
                asked.push((k % 3 == 0, lines[i.index(lines.len())].clone()));
                asked.push((false, lines[i.index(lines.len())].clone()));
            }
            if let (Some(a), Some(b)) = (lines.first(), lines.last()) {
                asked.push((false, a.start..b.end));
            }
            let mut redactor = LineRedactor::new(hay);
            for (announce, range) in asked {
                if announce {
                    redactor.expect(range);
                    continue;
                }
                let want = redact_range(hay, range.clone(), &blocks);
                let got = redactor.line(range.clone());
                proptest::prop_assert_eq!(got, want, "{:?} of {:?}", range, text);
            }
        }
    }

    /// What the confirming regexes find searching every whole line, with
    /// no prefilter and nothing anchored: what the prefilter and the
    /// anchored confirmation must find.
    fn redact_by_searching_every_line(hay: &[u8]) -> (Vec<u8>, usize) {
        let detector = detector().unwrap();
        let blocks = private_key_blocks(hay);
        let mut found = Vec::new();
        block_lines(hay, &(0..hay.len()), &blocks, &mut found);
        for line in line_ranges(hay) {
            for m in detector.confirm.find_iter(Input::new(hay).span(line)) {
                let (kind, _) = KINDS[m.pattern().as_usize()];
                let span = value_of(kind, hay, m.range());
                if kind == "OPENAI_KEY" && span.len() < MIN_OPENAI_KEY {
                    continue;
                }
                found.push(Found { span, kind });
            }
        }
        let (out, n) = replace(hay, 0..hay.len(), &mut found);
        (out.into_owned(), n)
    }

    /// Secrets, secrets cut short or glued to what comes before, literals
    /// that overlap (`secretoken=`), URL schemes after other tokens, key
    /// words in any case, wide characters (some that fold to ASCII letters
    /// under Unicode case rules: `ſ`, the Kelvin sign), repeated.
    fn near_piece() -> impl Strategy<Value = String> {
        let secret = (
            0..crate::fuzz_redact::SAMPLE_KINDS,
            proptest::collection::vec(any::<u8>(), 1..24),
        )
            .prop_map(|(k, body)| crate::fuzz_redact::sample(k, &body).0);
        let piece = prop_oneof![
            secret.clone(),
            (secret.clone(), any::<proptest::sample::Index>())
                .prop_map(|(s, i)| s.chars().take(i.index(s.chars().count() + 1)).collect()),
            (secret, "[a-zA-Z0-9_.+-]{1,3}").prop_map(|(s, pre)| format!("{pre}{s}")),
            proptest::sample::select(LITERALS.iter().map(|(l, _)| *l).collect::<Vec<_>>())
                .prop_map(str::to_owned),
            proptest::sample::select(vec![
                "secretoken=abc",
                "akiapi_key=xyz",
                "AKIAIzaSyDaGmWKa4JsXZ-HjGw7ISLn_3namBGewQe",
                "x.sk-proj-7abcdefghijklmnopqrstuv://u:p@h",
                "a+b.c-d://user:pw@host",
                "ſecret=abc",
                "toKen=abc",
                "PassWord : 'x y'",
                "api-KEY\"=\"v\"",
                "https://例え:パス@host",
                "sk-ant-🦀",
                "task-list eyJhbGciOi.eyJzdWIiOiIx.x",
                "://:@",
            ])
            .prop_map(str::to_owned),
            "[a-zA-Z0-9 :=/@._\"'-]{0,12}",
            "[é日本🦀\t ]{0,3}",
        ];
        (piece, 1..3usize).prop_map(|(p, n)| p.repeat(n))
    }

    proptest::proptest! {
        /// The prefilter and the confirmation anchored at its literals
        /// redact what searching every line with the regexes redacts, for
        /// a whole text and for its lines asked one by one.
        #[test]
        fn anchored_confirmation_agrees_with_searching_every_line(
            pieces in proptest::collection::vec(near_piece(), 0..24),
            seps in proptest::collection::vec(
                proptest::sample::select(vec!["", " ", "\n", "=", ":", ".", "-", "/", "@", "\t"]),
                24,
            ),
            upper in proptest::collection::vec(any::<bool>(), 0..64),
        ) {
            let mut text = String::new();
            for (piece, sep) in pieces.iter().zip(&seps) {
                text.push_str(piece);
                text.push_str(sep);
            }
            // Some ASCII letters flipped to upper case.
            let mut bytes = text.into_bytes();
            for (b, up) in bytes.iter_mut().step_by(3).zip(upper) {
                if up {
                    b.make_ascii_uppercase();
                }
            }
            let hay = &bytes[..];
            let (want, want_n) = redact_by_searching_every_line(hay);
            let (got, got_n) = redact_bytes(hay);
            proptest::prop_assert_eq!(
                (String::from_utf8_lossy(&got), got_n),
                (String::from_utf8_lossy(&want), want_n)
            );
            let mut redactor = LineRedactor::new(hay);
            let mut lines = Vec::new();
            let mut n = 0;
            for range in line_ranges(hay) {
                let (line, k) = redactor.line(range);
                lines.push(line.into_owned());
                n += k;
            }
            let joined = lines.join(&b'\n');
            proptest::prop_assert_eq!(
                (String::from_utf8_lossy(&joined), n),
                (String::from_utf8_lossy(&want), want_n)
            );
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

    /// Lines asked near the top of a long text read only as far as the
    /// first line no key body can cross: a search that stops early does
    /// not read the whole text for its key blocks.
    #[test]
    fn blocks_asked_near_the_top_do_not_read_the_whole_text() {
        let mut text = String::from(
            "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEE\n-----END EC PRIVATE KEY-----\n",
        );
        for i in 0..2_000 {
            text.push_str(&format!("plain line {i} of output\n"));
        }
        let hay = text.as_bytes();
        let mut blocks = KeyBlocks::default();
        assert_eq!(blocks.reach(hay, 35), std::slice::from_ref(&(0..68)));
        assert!(
            !blocks.done && blocks.scanned < 200,
            "read to {}",
            blocks.scanned
        );
        assert_eq!(blocks.reach(hay, hay.len()), std::slice::from_ref(&(0..68)));
        assert!(blocks.done);
    }
}
