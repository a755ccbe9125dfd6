//! Checks shared by the grammar fuzz target and its corpus-replay test.
//!
//! Not part of the stable API. The fuzz target (`fuzz/fuzz_targets/grammar.rs`)
//! and `engine/tests/fuzz_corpus.rs` both call [`check`] with an oracle built
//! on the `regex` crate, which the engine itself does not depend on.
//!
//! An input is decoded as: one flag byte (bit 0: regex, bit 1: match case,
//! bits 2-3: number of patterns - 1), then the patterns separated by `0x00`
//! (lossy UTF-8), then after one more `0x00` the haystack (at most 4 KiB).

use crate::budget::SearchBudgets as Limits;
use crate::pattern::{Matcher, PatternError, PatternOptions, MAX_NFA_BYTES};
use crate::scan::Capture;
use crate::search::{search_captures, SearchOptions};

/// A compiled oracle pattern: does it match this line?
pub type OracleLine = Box<dyn Fn(&[u8]) -> bool>;

/// The oracle: builds `pattern` (regex text; case-insensitive unless
/// `match_case`) for line-by-line use, or `None` when it cannot.
pub type Oracle<'a> = &'a dyn Fn(&str, bool) -> Option<OracleLine>;

/// One decoded fuzz input.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Case {
    /// The patterns.
    pub patterns: Vec<String>,
    /// How they are read.
    pub options: PatternOptions,
    /// The text to search.
    pub haystack: Vec<u8>,
}

/// What a checked input did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// The patterns were rejected with this message.
    Rejected(String),
    /// The patterns compiled; the oracle agreed on every line.
    Agreed {
        /// Number of matching lines.
        matched: usize,
        /// Number of lines compared.
        lines: usize,
    },
    /// The patterns compiled, but the oracle could not build one of them
    /// (for example, over its own size limit), so lines were not compared.
    NoOracle,
}

/// Decodes fuzz bytes into a case (never fails).
pub fn decode(data: &[u8]) -> Case {
    let Some((&flags, rest)) = data.split_first() else {
        return Case {
            patterns: vec![String::new()],
            options: PatternOptions::default(),
            haystack: Vec::new(),
        };
    };
    let options = PatternOptions {
        regex: flags & 1 != 0,
        match_case: flags & 2 != 0,
    };
    let want = usize::from((flags >> 2) & 3) + 1;
    let mut parts = rest.splitn(want + 1, |&b| b == 0);
    let mut patterns = Vec::with_capacity(want);
    for _ in 0..want {
        patterns.push(String::from_utf8_lossy(parts.next().unwrap_or_default()).into_owned());
    }
    let mut haystack = parts.next().unwrap_or_default().to_vec();
    haystack.truncate(4096);
    Case {
        patterns,
        options,
        haystack,
    }
}

/// Splits text into lines the plain way: on `\n`; a final `\n` ends the last
/// line; a `\r` before a `\n` is not part of the line.
pub fn naive_lines(haystack: &[u8]) -> Vec<&[u8]> {
    if haystack.is_empty() {
        return Vec::new();
    }
    let body = haystack.strip_suffix(b"\n").unwrap_or(haystack);
    let pieces: Vec<&[u8]> = body.split(|&b| b == b'\n').collect();
    let last = pieces.len() - 1;
    pieces
        .into_iter()
        .enumerate()
        .map(|(i, line)| {
            let ended = i < last || body.len() < haystack.len();
            if ended {
                line.strip_suffix(b"\r").unwrap_or(line)
            } else {
                line
            }
        })
        .collect()
}

/// A matching line as compared: (line, pattern index, text, the line
/// before, the line after).
type Hit = (i64, usize, String, Vec<String>, Vec<String>);

/// Runs one input: compile (must not panic; errors must be well formed),
/// check the automata stay within their caps, search, and compare each
/// line's verdict, pattern index, text and context with the oracle's.
pub fn check(data: &[u8], oracle: Oracle<'_>) -> Result<Verdict, String> {
    let case = decode(data);
    let matcher = match Matcher::new(&case.patterns, case.options) {
        Ok(m) => m,
        Err(err) => return rejected(&case, &err),
    };
    check_memory(&matcher)?;
    let (got, lines_scanned) = engine_hits(&matcher, &case.haystack);
    let Some(oracles) = build_oracles(&matcher, oracle, case.options.match_case) else {
        return Ok(Verdict::NoOracle);
    };
    let lines = naive_lines(&case.haystack);
    let want = oracle_hits(&oracles, &lines);
    if got != want {
        return Err(format!(
            "engine and oracle disagree for {:?} ({:?}) on {:?}:\n engine: {got:?}\n oracle: {want:?}",
            case.patterns,
            case.options,
            String::from_utf8_lossy(&case.haystack)
        ));
    }
    if lines_scanned != lines.len() as u64 {
        return Err(format!("scanned {lines_scanned} lines of {}", lines.len()));
    }
    Ok(Verdict::Agreed {
        matched: want.len(),
        lines: lines.len(),
    })
}

/// A compile error must name one of the patterns, an offset within it and
/// a reason; then the input is [`Verdict::Rejected`].
fn rejected(case: &Case, err: &PatternError) -> Result<Verdict, String> {
    let text = case
        .patterns
        .get(err.pattern_index)
        .map_or("", String::as_str);
    if err.pattern_index >= case.patterns.len().max(1) {
        return Err(format!(
            "error names pattern {} of {}",
            err.pattern_index,
            case.patterns.len()
        ));
    }
    if err.offset > text.len() {
        return Err(format!(
            "error offset {} beyond pattern length {}",
            err.offset,
            text.len()
        ));
    }
    if err.reason.is_empty() {
        return Err("error without a reason".into());
    }
    Ok(Verdict::Rejected(err.to_string()))
}

/// The automata stay within their caps: forward and reverse NFA, lazy/full
/// DFA and prefilters for two regexes.
fn check_memory(matcher: &Matcher) -> Result<(), String> {
    let cap = 8 * MAX_NFA_BYTES;
    if matcher.memory_usage() > cap {
        return Err(format!(
            "automata use {} bytes, over {cap}",
            matcher.memory_usage()
        ));
    }
    Ok(())
}

/// The engine's matching lines in `haystack` (one line of context either
/// side, no budgets) and how many lines it scanned.
fn engine_hits(matcher: &Matcher, haystack: &[u8]) -> (Vec<Hit>, u64) {
    let options = SearchOptions {
        limits: Limits::unlimited(),
        context_lines: 1,
        strip_escapes: false,
        max_text_bytes: 1 << 20,
        cancel: None,
        redact: false,
    };
    let outcome = search_captures(
        matcher,
        &options,
        vec![Capture::new(0, 0, haystack.to_vec())],
    );
    let hits = outcome
        .panes
        .iter()
        .flat_map(|p| {
            p.lines.iter().map(|l| {
                (
                    l.line,
                    l.pattern_index,
                    l.text.clone(),
                    l.before.clone(),
                    l.after.clone(),
                )
            })
        })
        .collect();
    (hits, outcome.lines_scanned)
}

/// The oracle's reading of each of the matcher's patterns; `None` when it
/// cannot build one of them.
fn build_oracles(
    matcher: &Matcher,
    oracle: Oracle<'_>,
    match_case: bool,
) -> Option<Vec<OracleLine>> {
    matcher
        .oracle_patterns()
        .iter()
        .map(|pattern| oracle(pattern, match_case))
        .collect()
}

/// The lines the oracle matches, with the first pattern that matches each
/// and one line of context either side, as the engine reports them.
fn oracle_hits(oracles: &[OracleLine], lines: &[&[u8]]) -> Vec<Hit> {
    let text = |i: usize| String::from_utf8_lossy(lines[i]).into_owned();
    let mut want = Vec::new();
    for (index, line) in lines.iter().enumerate() {
        if let Some(p) = oracles.iter().position(|o| o(line)) {
            let before = (index.saturating_sub(1)..index).map(text).collect();
            let after = (index + 1..(index + 2).min(lines.len()))
                .map(text)
                .collect();
            want.push((index as i64, p, text(index), before, after));
        }
    }
    want
}
