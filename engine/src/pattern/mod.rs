//! Patterns: the bounded grammar ([`grammar`]) and the compiled any-of
//! [`Matcher`], whose doc says which engine runs which patterns.

mod grammar;
mod needs;
mod variants;

pub use needs::Needs;

use std::fmt;

use variants::CaseVariants;

use aho_corasick::AhoCorasick;
use memchr::memmem;
use regex_automata::meta;
use regex_automata::util::syntax;
use regex_automata::{Input, MatchKind, PatternSet};

/// The most patterns one [`Matcher`] accepts.
pub const MAX_PATTERNS: usize = 64;
/// The longest pattern accepted, in bytes of UTF-8.
pub const MAX_PATTERN_BYTES: usize = 4096;
/// The largest bound allowed in a counted repetition (`{n}`, `{n,}`, `{n,m}`).
pub const MAX_REPETITION: u32 = 1000;
/// How deeply groups, classes and repetitions may nest.
pub const MAX_NESTING: u32 = 300;
/// Cap on the compiled NFA of all patterns together, in bytes.
pub const MAX_NFA_BYTES: usize = 4 << 20;
/// Cap on a fully compiled DFA; bigger automata use the lazy DFA instead.
pub const MAX_DFA_BYTES: usize = 256 << 10;
/// Cap on each lazy DFA cache (one per thread in use), in bytes.
pub const MAX_CACHE_BYTES: usize = 2 << 20;

/// How a list of pattern strings is read.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PatternOptions {
    /// Read patterns as regular expressions of the bounded grammar
    /// (default: literal text).
    pub regex: bool,
    /// Match case exactly (default: case-insensitive).
    pub match_case: bool,
}

/// One pattern: text, and whether it is a literal or a regular expression.
///
/// Sugar for building a [`Matcher`] from patterns of both kinds:
///
/// ```
/// use panescan_engine::{Matcher, Pattern};
/// let m = Matcher::from_patterns(&[Pattern::literal("error["), Pattern::regex(r"^warning: \w+")], false)?;
/// assert_eq!(m.pattern_count(), 2);
/// # Ok::<(), panescan_engine::PatternError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pattern {
    /// The pattern text.
    pub text: String,
    /// True for a regular expression, false for literal text.
    pub regex: bool,
}

impl Pattern {
    /// Literal text: every character stands for itself.
    pub fn literal(text: impl Into<String>) -> Pattern {
        Pattern {
            text: text.into(),
            regex: false,
        }
    }

    /// A regular expression of the bounded grammar.
    pub fn regex(text: impl Into<String>) -> Pattern {
        Pattern {
            text: text.into(),
            regex: true,
        }
    }

    /// Compiles this one pattern into a [`Matcher`].
    pub fn compile(&self, match_case: bool) -> Result<Matcher, PatternError> {
        Matcher::from_patterns(std::slice::from_ref(self), match_case)
    }
}

/// A pattern was rejected.
///
/// `Display` reads like
/// `pattern 2: invalid regular expression at byte 5: counted repetition {5000} exceeds the limit of 1,000`,
/// without the `pattern N: ` prefix when only one pattern was given.
/// `pattern_index` counts from 0, like [`LineMatch::pattern_index`](crate::LineMatch::pattern_index).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PatternError {
    /// Which pattern (0-based) was rejected.
    pub pattern_index: usize,
    /// Byte offset in that pattern's text where the problem is.
    pub offset: usize,
    /// What is wrong, in words.
    pub reason: String,
    /// How many patterns were given (the prefix is left out for one).
    pub pattern_count: usize,
    /// Whether the rejected pattern was a regular expression.
    pub regex: bool,
}

impl fmt::Display for PatternError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.pattern_count > 1 {
            write!(f, "pattern {}: ", self.pattern_index)?;
        }
        let what = if self.regex {
            "regular expression"
        } else {
            "literal pattern"
        };
        write!(f, "invalid {what} at byte {}: {}", self.offset, self.reason)
    }
}

impl std::error::Error for PatternError {}

/// A compiled set of patterns, searched all at once (any-of).
///
/// A [`Matcher`] is built once per search from up to [`MAX_PATTERNS`]
/// patterns, all literal or all regular expressions (or a mix, through
/// [`Pattern`]). It picks the cheapest engine that gives exactly the right
/// answer:
///
/// | patterns | engine |
/// |---|---|
/// | one literal, case-sensitive | `memchr::memmem` |
/// | one ASCII literal, case-insensitive | `aho-corasick`'s packed searcher (Teddy) over the ASCII spellings of a 3-byte window of it, each candidate confirmed ignoring case (the regex engine around a Kelvin sign or long s) |
/// | literals, case-sensitive, or ASCII case-insensitive | `aho-corasick` (leftmost-first; the regex engine around a Kelvin sign or long s) |
/// | anything else (regexes, non-ASCII case-insensitive literals) | `regex-automata`'s meta regex with the backtracker disabled: literal prefilters, a lazy DFA, and the PikeVM as a linear-time fallback |
///
/// Case-insensitive matching uses Unicode simple case folding everywhere (one
/// character to one character: `é` finds `É`, but `ß` does not find `SS`).
/// Under simple folding `k` also finds the Kelvin sign `K` and `s` the long s
/// `ſ`, which aho-corasick's ASCII folding misses: case-insensitive ASCII
/// literals containing `k` or `s` run on aho-corasick, and on the regex
/// engine only for the stretch of text around a hit that holds one of those
/// two characters. Literals with any other non-ASCII character go to the
/// regex engine.
///
/// Every automaton is size-capped: the NFA at [`MAX_NFA_BYTES`], the full
/// DFA (used only for small patterns) at [`MAX_DFA_BYTES`], and the lazy DFA
/// cache at [`MAX_CACHE_BYTES`] per thread. When the lazy DFA cache keeps
/// filling up, the meta engine falls back to the PikeVM, which is slower but
/// still linear in the haystack. A pattern whose NFA would exceed the cap is
/// rejected when the matcher is built.
///
/// `Matcher` is `Send + Sync`; one instance serves every scanning thread.
/// The search runs it over whole captures; [`Matcher::find_in_line`] asks
/// it about one line.
#[derive(Debug)]
pub struct Matcher {
    patterns: Vec<Pattern>,
    match_case: bool,
    imp: Imp,
    /// For each pattern, the regex text the `regex` crate would need, line by
    /// line, to match the same lines (used by the fuzz oracle and tests).
    oracle: Vec<String>,
    /// What every matching line contains ([`Matcher::needs`]).
    needs: Needs,
}

#[derive(Debug)]
enum Imp {
    /// One case-sensitive literal.
    Memmem(Box<memmem::Finder<'static>>),
    /// Literals: a leftmost-first automaton. It also classifies a matching
    /// line: at each position where a match starts it reports the lowest
    /// pattern starting there, so stepping through the line's match starts
    /// finds the lowest pattern of the line (usually one or two steps, each
    /// on the SIMD prefilter, where an overlapping search walks every byte).
    Literals { find: AhoCorasick },
    /// Regular expressions: leftmost-first to find hits, match-all to classify.
    Regex {
        find: meta::Regex,
        classify: Option<meta::Regex>,
    },
    /// ASCII literals matched case-insensitively where a letter is `k` or
    /// `s`: under Unicode simple case folding these also match the Kelvin
    /// sign (U+212A) and the long s (U+017F), which aho-corasick's ASCII
    /// folding does not know. Those two characters are rare, so `ascii`
    /// (aho-corasick) answers wherever the text around a hit holds neither,
    /// and `unicode` (the regex engine) only where it does.
    FoldedLiterals { ascii: Box<Imp>, unicode: Box<Imp> },
    /// ASCII literals matched case-insensitively, run case-sensitively on
    /// lowered patterns over text whose ASCII letters were lowered (see
    /// [`Matcher::searched`]): an exact rewrite of ASCII case folding that
    /// lets one literal run on `memmem` and a set on aho-corasick's SIMD
    /// prefilter (Teddy), which case-insensitive automata cannot use.
    Lowered(Box<Imp>),
    /// One ASCII literal matched case-insensitively on the text as it is:
    /// Teddy over the ASCII spellings of a short window of it, each
    /// candidate confirmed ignoring case (no lowered copy of the text).
    CaseVariants(Box<CaseVariants>),
}

impl Matcher {
    /// Compiles `patterns` read as `options` says.
    pub fn new<S: AsRef<str>>(
        patterns: &[S],
        options: PatternOptions,
    ) -> Result<Matcher, PatternError> {
        Matcher::from_patterns(&read_as(patterns, options), options.match_case)
    }

    /// Whether [`Matcher::new`] would accept `patterns` read as `options`
    /// says, short of building the automata: every error but a pattern
    /// whose compiled form would exceed the engine's size limits. Cheap
    /// beside building a regex (a parse against a build of the automata),
    /// so a caller can check before starting other work and build
    /// meanwhile.
    pub fn check<S: AsRef<str>>(
        patterns: &[S],
        options: PatternOptions,
    ) -> Result<(), PatternError> {
        Checked::of(&read_as(patterns, options), options.match_case).map(|_| ())
    }

    /// Compiles patterns of either kind.
    pub fn from_patterns(patterns: &[Pattern], match_case: bool) -> Result<Matcher, PatternError> {
        let count = patterns.len();
        let error = error_in(patterns);
        let Checked { hirs, oracle } = Checked::of(patterns, match_case)?;
        let needs = needs::of(&hirs);
        let all_literal = patterns.iter().all(|p| !p.regex);
        let imp = if all_literal && match_case && count == 1 {
            Imp::Memmem(Box::new(
                memmem::Finder::new(patterns[0].text.as_bytes()).into_owned(),
            ))
        } else if all_literal && !match_case && patterns.iter().all(|p| p.text.is_ascii()) {
            let lowered: Vec<Pattern> = patterns
                .iter()
                .map(|p| Pattern {
                    text: p.text.to_ascii_lowercase(),
                    regex: false,
                })
                .collect();
            let variants = match patterns {
                [one] => CaseVariants::new(&one.text),
                _ => None,
            };
            let ascii = match variants {
                Some(variants) => Imp::CaseVariants(Box::new(variants)),
                None => Imp::Lowered(Box::new(if count == 1 {
                    Imp::Memmem(Box::new(
                        memmem::Finder::new(lowered[0].text.as_bytes()).into_owned(),
                    ))
                } else {
                    literal_imp(&lowered, true, &error)?
                })),
            };
            if patterns.iter().all(|p| ascii_folding_is_exact(&p.text)) {
                ascii
            } else {
                let unicode = regex_imp(&hirs, count, &error)?;
                Imp::FoldedLiterals {
                    ascii: Box::new(ascii),
                    unicode: Box::new(unicode),
                }
            }
        } else if all_literal && match_case {
            literal_imp(patterns, match_case, &error)?
        } else {
            regex_imp(&hirs, count, &error)?
        };
        Ok(Matcher {
            patterns: patterns.to_vec(),
            match_case,
            imp,
            oracle,
            needs,
        })
    }
}

/// The error at byte `offset` of pattern `index` of `patterns`.
fn error_in(patterns: &[Pattern]) -> impl Fn(usize, usize, String) -> PatternError + '_ {
    move |index, offset, reason| PatternError {
        pattern_index: index,
        offset,
        reason,
        pattern_count: patterns.len(),
        regex: patterns.get(index).is_some_and(|p| p.regex),
    }
}

/// `patterns`, each read as `options` says (all regexes, or all literals).
fn read_as<S: AsRef<str>>(patterns: &[S], options: PatternOptions) -> Vec<Pattern> {
    patterns
        .iter()
        .map(|p| Pattern {
            text: p.as_ref().to_owned(),
            regex: options.regex,
        })
        .collect()
}

/// Every pattern parsed and checked: what a matcher is built from.
struct Checked {
    hirs: Vec<regex_syntax::hir::Hir>,
    /// Each pattern as a regex (literals escaped): the test oracle's input.
    oracle: Vec<String>,
}

impl Checked {
    fn of(patterns: &[Pattern], match_case: bool) -> Result<Checked, PatternError> {
        let count = patterns.len();
        let error = error_in(patterns);
        if patterns.is_empty() {
            return Err(error(0, 0, "no pattern was given".into()));
        }
        if count > MAX_PATTERNS {
            return Err(error(
                MAX_PATTERNS,
                0,
                format!("{count} patterns were given; the limit is {MAX_PATTERNS}"),
            ));
        }

        // Every pattern is checked before any is built, so errors name the
        // right one.
        let mut hirs = Vec::with_capacity(count);
        let mut oracle = Vec::with_capacity(count);
        for (index, pattern) in patterns.iter().enumerate() {
            if pattern.regex {
                let checked = grammar::parse_regex(&pattern.text, match_case)
                    .map_err(|(offset, reason)| error(index, offset, reason))?;
                hirs.push(checked.hir);
                oracle.push(checked.rewritten);
            } else {
                grammar::check_size(&pattern.text)
                    .map_err(|(offset, reason)| error(index, offset, reason))?;
                if let Some(offset) = pattern.text.find(['\n']) {
                    return Err(error(
                        index,
                        offset,
                        "a match lies within one line, so a pattern cannot contain a line break"
                            .into(),
                    ));
                }
                hirs.push(literal_hir(&pattern.text, match_case));
                oracle.push(regex_syntax::escape(&pattern.text));
            }
        }
        Ok(Checked { hirs, oracle })
    }
}

/// The aho-corasick matcher of a literal set.
fn literal_imp(
    patterns: &[Pattern],
    match_case: bool,
    error: &dyn Fn(usize, usize, String) -> PatternError,
) -> Result<Imp, PatternError> {
    let texts: Vec<&str> = patterns.iter().map(|p| p.text.as_str()).collect();
    let find = AhoCorasick::builder()
        .match_kind(aho_corasick::MatchKind::LeftmostFirst)
        .ascii_case_insensitive(!match_case)
        .build(&texts)
        .map_err(|err| {
            error(
                0,
                0,
                format!("the literal set could not be compiled: {err}"),
            )
        })?;
    Ok(Imp::Literals { find })
}

/// The regex-automata matcher of compiled patterns.
fn regex_imp(
    hirs: &[regex_syntax::hir::Hir],
    count: usize,
    error: &dyn Fn(usize, usize, String) -> PatternError,
) -> Result<Imp, PatternError> {
    let find =
        build_regex(hirs, MatchKind::LeftmostFirst).map_err(|e| attribute(hirs, e, error))?;
    let classify = if count > 1 {
        Some(build_regex(hirs, MatchKind::All).map_err(|e| attribute(hirs, e, error))?)
    } else {
        None
    };
    Ok(Imp::Regex { find, classify })
}

impl Matcher {
    /// How many patterns this matcher searches for.
    pub fn pattern_count(&self) -> usize {
        self.patterns.len()
    }

    /// The patterns, as given.
    pub fn patterns(&self) -> &[Pattern] {
        &self.patterns
    }

    /// Whether case must match exactly.
    pub fn match_case(&self) -> bool {
        self.match_case
    }

    /// What every line this matcher matches contains, for a filter that
    /// sees text only as an index of it ([`Needs`]): strings of the text
    /// with its ASCII letters lowered, matched as the text is given (with
    /// [`crate::SearchOptions::strip_escapes`], a filter must not trust an
    /// index of text that held escapes).
    pub fn needs(&self) -> &Needs {
        &self.needs
    }

    /// Which engine runs the search: `"memchr"`, `"aho-corasick"` or
    /// `"regex-automata"` (for logs and tests).
    pub fn engine_name(&self) -> &'static str {
        self.imp.engine_name()
    }

    /// Whether the matcher runs on text with its ASCII letters lowered.
    pub(crate) fn lowers_text(&self) -> bool {
        self.imp.lowers_text()
    }

    /// The bytes [`Matcher::find_hit_with_pattern`] and
    /// [`Matcher::lowest_pattern`] must be given for `text`: `text`
    /// itself, or — when the matcher [lowers text](Matcher::lowers_text), for
    /// case-insensitive ASCII literals — a copy in `scratch` with every ASCII
    /// letter lowered. Offsets, line ends and non-ASCII bytes are unchanged,
    /// so positions found in one are positions in the other.
    pub(crate) fn searched<'a>(&self, text: &'a [u8], scratch: &'a mut Vec<u8>) -> &'a [u8] {
        if !self.lowers_text() {
            return text;
        }
        crate::lanes::lower_into(text, scratch);
        scratch
    }

    /// Searches `haystack[start..]` for the first match of any pattern and
    /// returns the offset where that match ends (the line containing byte
    /// `end - 1`, or for an empty match the line containing `end`), and the
    /// index of the pattern that matched there (not necessarily the lowest
    /// that matches the line; see [`Matcher::lowest_pattern_from`]).
    ///
    /// `haystack` must be whole lines separated by `\n`, without the final
    /// line end, as [`Matcher::searched`] gives it; `^`, `$` and word
    /// boundaries look at the bytes around `start`. Matches never span a
    /// `\n`, so the line holding the returned offset is a matching line, and
    /// no earlier line at or after `start` matches.
    pub(crate) fn find_hit_with_pattern(
        &self,
        haystack: &[u8],
        start: usize,
    ) -> Option<(usize, usize)> {
        self.imp.find_hit_with_pattern(haystack, start)
    }

    /// The lowest index of a pattern matching `line`, given that pattern
    /// `found` matches it: only patterns below `found` need checking.
    pub(crate) fn lowest_pattern_from(&self, line: &[u8], found: usize) -> usize {
        if found == 0 {
            0
        } else {
            self.lowest_pattern(line).min(found)
        }
    }

    /// The lowest index of a pattern that matches somewhere in `line` (one
    /// line, without its line end, as [`Matcher::searched`] gives it). Only
    /// meaningful for a line that matches; returns 0 for a line that does
    /// not.
    pub(crate) fn lowest_pattern(&self, line: &[u8]) -> usize {
        self.imp.lowest_pattern(line)
    }

    /// The lowest index of a pattern that matches `line` (one line, without
    /// its line end, the text as it is), or `None` when none does: the
    /// pattern a search would report for that line.
    pub fn matching_pattern(&self, line: &[u8]) -> Option<usize> {
        let mut scratch = Vec::new();
        let searched = self.searched(line, &mut scratch);
        let (_, found) = self.find_hit_with_pattern(searched, 0)?;
        Some(self.lowest_pattern_from(searched, found))
    }

    /// The first match (start, end) in one line (the text as it is, not
    /// lowered), if any; used to clip long lines around the match.
    pub fn find_in_line(&self, line: &[u8]) -> Option<(usize, usize)> {
        self.imp.find_in_line(line)
    }

    /// For each pattern, regex text that the `regex` crate, applied to each
    /// line on its own with the same case setting, matches the same lines
    /// with. Used by tests and the fuzz oracle.
    pub(crate) fn oracle_patterns(&self) -> &[String] {
        &self.oracle
    }

    /// Heap memory used by the compiled automata, not counting per-thread
    /// lazy DFA caches (each capped at [`MAX_CACHE_BYTES`]).
    pub(crate) fn memory_usage(&self) -> usize {
        self.imp.memory_usage()
    }
}

impl Imp {
    fn engine_name(&self) -> &'static str {
        match self {
            Imp::Memmem(_) => "memchr",
            Imp::Literals { .. } | Imp::FoldedLiterals { .. } | Imp::CaseVariants(_) => {
                "aho-corasick"
            }
            Imp::Regex { .. } => "regex-automata",
            Imp::Lowered(inner) => inner.engine_name(),
        }
    }

    fn lowers_text(&self) -> bool {
        match self {
            Imp::Lowered(_) => true,
            Imp::FoldedLiterals { ascii, .. } => ascii.lowers_text(),
            _ => false,
        }
    }

    fn find_hit_with_pattern(&self, haystack: &[u8], start: usize) -> Option<(usize, usize)> {
        if start > haystack.len() {
            return None;
        }
        match self {
            Imp::Memmem(finder) => {
                let needle = finder.needle().len();
                finder
                    .find(&haystack[start..])
                    .map(|at| (start + at + needle, 0))
            }
            Imp::Literals { find, .. } => {
                let input = aho_corasick::Input::new(haystack).range(start..);
                find.find(input).map(|m| (m.end(), m.pattern().as_usize()))
            }
            Imp::Regex { find, .. } => {
                let input = Input::new(haystack).range(start..).earliest(true);
                find.search_half(&input)
                    .map(|m| (m.offset(), m.pattern().as_usize()))
            }
            Imp::Lowered(inner) => inner.find_hit_with_pattern(haystack, start),
            Imp::CaseVariants(variants) => variants.find(haystack, start).map(|(_, end)| (end, 0)),
            // The regex engine folds case itself, so lowered text (which
            // keeps every non-ASCII byte) gives it the same matches.
            Imp::FoldedLiterals { ascii, unicode } => {
                // A match under Unicode folding that aho-corasick misses
                // holds a Kelvin sign or long s. If none stands between
                // `start` and the end of the line of aho-corasick's hit (or
                // the end, without a hit), no match starts earlier than that
                // hit, and matches never cross a line end.
                let hit = ascii.find_hit_with_pattern(haystack, start);
                let region_end = match hit {
                    Some((end, _)) => {
                        memchr::memchr(b'\n', &haystack[end..]).map_or(haystack.len(), |i| end + i)
                    }
                    None => haystack.len(),
                };
                if has_unicode_fold_of_ascii(&haystack[start..region_end]) {
                    unicode.find_hit_with_pattern(haystack, start)
                } else {
                    hit
                }
            }
        }
    }

    fn lowest_pattern(&self, line: &[u8]) -> usize {
        match self {
            Imp::Memmem(_) | Imp::CaseVariants(_) | Imp::Regex { classify: None, .. } => 0,
            Imp::Literals { find } => {
                let mut lowest = usize::MAX;
                let mut at = 0;
                while at <= line.len() {
                    let input = aho_corasick::Input::new(line).range(at..);
                    let Some(m) = find.find(input) else {
                        break;
                    };
                    lowest = lowest.min(m.pattern().as_usize());
                    if lowest == 0 {
                        break;
                    }
                    at = m.start() + 1;
                }
                if lowest == usize::MAX {
                    0
                } else {
                    lowest
                }
            }
            Imp::Regex {
                classify: Some(re), ..
            } => {
                let mut set = PatternSet::new(re.pattern_len());
                re.which_overlapping_matches(&Input::new(line), &mut set);
                set.iter().next().map_or(0, |p| p.as_usize())
            }
            Imp::FoldedLiterals { ascii, unicode } => {
                if has_unicode_fold_of_ascii(line) {
                    unicode.lowest_pattern(line)
                } else {
                    ascii.lowest_pattern(line)
                }
            }
            Imp::Lowered(inner) => inner.lowest_pattern(line),
        }
    }

    fn find_in_line(&self, line: &[u8]) -> Option<(usize, usize)> {
        match self {
            Imp::Memmem(finder) => finder.find(line).map(|at| (at, at + finder.needle().len())),
            Imp::Literals { find, .. } => find.find(line).map(|m| (m.start(), m.end())),
            Imp::Regex { find, .. } => find.find(line).map(|m| (m.start(), m.end())),
            Imp::FoldedLiterals { ascii, unicode } => {
                if has_unicode_fold_of_ascii(line) {
                    unicode.find_in_line(line)
                } else {
                    ascii.find_in_line(line)
                }
            }
            Imp::Lowered(inner) => inner.find_in_line(&line.to_ascii_lowercase()),
            Imp::CaseVariants(variants) => variants.find(line, 0),
        }
    }

    fn memory_usage(&self) -> usize {
        match self {
            Imp::Memmem(f) => f.needle().len(),
            Imp::Literals { find } => find.memory_usage(),
            Imp::Regex { find, classify } => {
                find.memory_usage() + classify.as_ref().map_or(0, meta::Regex::memory_usage)
            }
            Imp::FoldedLiterals { ascii, unicode } => ascii.memory_usage() + unicode.memory_usage(),
            Imp::Lowered(inner) => inner.memory_usage(),
            Imp::CaseVariants(variants) => variants.memory_usage(),
        }
    }
}

/// Whether `text` holds one of the two non-ASCII characters that Unicode
/// simple case folding maps onto ASCII letters: the Kelvin sign U+212A
/// (`E2 84 AA`, folds to `k`) and the long s U+017F (`C5 BF`, folds to `s`).
fn has_unicode_fold_of_ascii(text: &[u8]) -> bool {
    memchr::memchr2_iter(0xE2, 0xC5, text).any(|i| match text[i] {
        0xE2 => text.get(i + 1..i + 3) == Some(&[0x84, 0xAA][..]),
        _ => text.get(i + 1) == Some(&0xBF),
    })
}

/// True when aho-corasick's ASCII case folding gives exactly the answer of
/// Unicode simple case folding for this literal: it is ASCII and has no
/// letter that folds to a non-ASCII character (`k` <-> Kelvin sign,
/// `s` <-> long s).
fn ascii_folding_is_exact(text: &str) -> bool {
    text.is_ascii()
        && !text
            .bytes()
            .any(|b| matches!(b.to_ascii_lowercase(), b'k' | b's'))
}

/// The HIR of a literal, case-folded when case does not matter.
fn literal_hir(text: &str, match_case: bool) -> regex_syntax::hir::Hir {
    if match_case {
        return regex_syntax::hir::Hir::literal(text.as_bytes());
    }
    let mut parser = regex_syntax::ParserBuilder::new()
        .case_insensitive(true)
        .unicode(true)
        .utf8(true)
        .build();
    // An escaped literal always parses: nothing in it is syntax.
    parser
        .parse(&regex_syntax::escape(text))
        .unwrap_or_else(|_| regex_syntax::hir::Hir::literal(text.as_bytes()))
}

fn build_regex(
    hirs: &[regex_syntax::hir::Hir],
    kind: MatchKind,
) -> Result<meta::Regex, Box<meta::BuildError>> {
    let config = meta::Config::new()
        .match_kind(kind)
        // A line matches if the pattern matches anywhere in it, empty
        // matches included: with utf8_empty on, `^` or `^.*` never matched
        // a line starting with a stray UTF-8 continuation byte (the empty
        // match before it "splits a codepoint"). Offsets of empty matches
        // inside a character are harmless: clipping maps them onto the
        // lossy text's boundaries.
        .utf8_empty(false)
        .which_captures(regex_automata::nfa::thompson::WhichCaptures::Implicit)
        .nfa_size_limit(Some(MAX_NFA_BYTES))
        .onepass(false)
        .backtrack(false)
        .dfa_size_limit(Some(MAX_DFA_BYTES))
        .dfa_state_limit(Some(1_000))
        .hybrid_cache_capacity(MAX_CACHE_BYTES)
        .line_terminator(b'\n');
    meta::Builder::new()
        .configure(config)
        .syntax(
            syntax::Config::new()
                .multi_line(true)
                .line_terminator(b'\n'),
        )
        .build_many_from_hir(hirs)
        .map_err(Box::new)
}

/// Turns a build failure of the whole set into an error naming a pattern: the
/// first that fails on its own, or the last one if only the set is too big.
fn attribute(
    hirs: &[regex_syntax::hir::Hir],
    err: Box<meta::BuildError>,
    error: &dyn Fn(usize, usize, String) -> PatternError,
) -> PatternError {
    let reason = |err: &meta::BuildError, alone: bool| {
        match err.size_limit() {
        Some(limit) if alone => format!(
            "the compiled pattern would need more than the limit of {} MiB; use smaller counted repetitions or narrower classes",
            limit >> 20
        ),
        Some(limit) => format!(
            "together, the patterns would compile to more than the limit of {} MiB; use fewer or simpler patterns",
            limit >> 20
        ),
        None => format!("the pattern could not be compiled: {err}"),
    }
    };
    if hirs.len() > 1 {
        for (index, hir) in hirs.iter().enumerate() {
            if let Err(alone) = build_regex(std::slice::from_ref(hir), MatchKind::LeftmostFirst) {
                return error(index, 0, reason(&alone, true));
            }
        }
        return error(hirs.len() - 1, 0, reason(&err, false));
    }
    error(0, 0, reason(&err, true))
}
