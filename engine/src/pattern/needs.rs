//! What every line a matcher matches must contain: the strings a filter
//! that cannot read the text (a per-frame index of its trigrams) may ask
//! for before the text is read at all.
//!
//! Each pattern's parsed form is first folded onto text whose ASCII
//! letters are lowered (a literal's letters lowered, a class's `A-Z`
//! members moved to `a-z`), so case-insensitive patterns need the same
//! lowered strings as case-sensitive ones; then regex-syntax's literal
//! extraction gives the strings every match starts with (prefixes) and the
//! strings every match ends with (suffixes).
//!
//! Must hold (the filter's only promise): if a pattern matches a line, the
//! line with its ASCII letters lowered contains, for each clause of that
//! pattern, at least one of the clause's strings. A clause the extraction
//! cannot bound (an infinite set) is left out, and so is a pattern's whole
//! need when a clause would be unbounded everywhere: [`Needs`] of `None`
//! asks for no filtering.

use regex_syntax::hir::literal::{ExtractKind, Extractor};
use regex_syntax::hir::{
    Class, ClassBytes, ClassBytesRange, ClassUnicode, ClassUnicodeRange, Hir, HirKind,
};

/// What every matching line contains, per pattern: `needs[p]` is pattern
/// `p`'s clauses, each a set of strings (ASCII letters lowered) of which
/// every line `p` matches holds at least one. A line the matcher matches
/// satisfies every clause of at least one pattern. `None`: some pattern
/// needs nothing a filter could check.
pub type Needs = Option<Vec<Vec<Vec<Vec<u8>>>>>;

/// The shortest string a clause may hold to be worth keeping: a trigram
/// index cannot check fewer than three bytes.
const SHORTEST: usize = 3;

/// The needs of patterns parsed as `hirs` (every pattern of a matcher).
pub(super) fn of(hirs: &[Hir]) -> Needs {
    let mut all = Vec::with_capacity(hirs.len());
    for hir in hirs {
        let folded = fold(hir);
        let clauses: Vec<Vec<Vec<u8>>> = [ExtractKind::Prefix, ExtractKind::Suffix]
            .into_iter()
            .filter_map(|kind| clause(&folded, kind))
            .collect();
        if clauses.is_empty() {
            return None;
        }
        all.push(clauses);
    }
    Some(all)
}

/// The strings every match of `hir` starts (or ends) with, when finite and
/// each at least [`SHORTEST`] bytes long.
fn clause(hir: &Hir, kind: ExtractKind) -> Option<Vec<Vec<u8>>> {
    let seq = Extractor::new().kind(kind).extract(hir);
    let literals = seq.literals()?;
    if literals.is_empty() || literals.iter().any(|l| l.len() < SHORTEST) {
        return None;
    }
    let mut strings: Vec<Vec<u8>> = literals.iter().map(|l| l.as_bytes().to_vec()).collect();
    strings.sort();
    strings.dedup();
    Some(strings)
}

/// `hir` over lowered text: it matches a line's lowered text wherever
/// `hir` matches the line.
fn fold(hir: &Hir) -> Hir {
    match hir.kind() {
        HirKind::Empty | HirKind::Look(_) => hir.clone(),
        HirKind::Literal(lit) => Hir::literal(lit.0.to_ascii_lowercase()),
        HirKind::Class(Class::Unicode(c)) => Hir::class(Class::Unicode(fold_unicode(c))),
        HirKind::Class(Class::Bytes(c)) => Hir::class(Class::Bytes(fold_bytes(c))),
        HirKind::Repetition(rep) => {
            let mut rep = rep.clone();
            rep.sub = Box::new(fold(&rep.sub));
            Hir::repetition(rep)
        }
        HirKind::Capture(cap) => {
            let mut cap = cap.clone();
            cap.sub = Box::new(fold(&cap.sub));
            Hir::capture(cap)
        }
        HirKind::Concat(subs) => Hir::concat(subs.iter().map(fold).collect()),
        HirKind::Alternation(subs) => Hir::alternation(subs.iter().map(fold).collect()),
    }
}

/// `c` with its `A-Z` members replaced by `a-z`.
fn fold_unicode(c: &ClassUnicode) -> ClassUnicode {
    let upper = ClassUnicode::new([ClassUnicodeRange::new('A', 'Z')]);
    let mut moved = c.clone();
    moved.intersect(&upper);
    let mut out = c.clone();
    out.difference(&upper);
    let lower = |ch: char| ch.to_ascii_lowercase();
    out.union(&ClassUnicode::new(moved.ranges().iter().map(|r| {
        ClassUnicodeRange::new(lower(r.start()), lower(r.end()))
    })));
    out
}

/// `c` with its `A-Z` members replaced by `a-z`.
fn fold_bytes(c: &ClassBytes) -> ClassBytes {
    let upper = ClassBytes::new([ClassBytesRange::new(b'A', b'Z')]);
    let mut moved = c.clone();
    moved.intersect(&upper);
    let mut out = c.clone();
    out.difference(&upper);
    out.union(&ClassBytes::new(moved.ranges().iter().map(|r| {
        ClassBytesRange::new(r.start().to_ascii_lowercase(), r.end().to_ascii_lowercase())
    })));
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use crate::{Matcher, PatternOptions};

    fn needs(patterns: &[&str], regex: bool, match_case: bool) -> super::Needs {
        Matcher::new(patterns, PatternOptions { regex, match_case })
            .unwrap()
            .needs()
            .clone()
    }

    fn strings(clause: &[Vec<u8>]) -> Vec<String> {
        clause
            .iter()
            .map(|s| String::from_utf8_lossy(s).into_owned())
            .collect()
    }

    #[test]
    fn a_literal_needs_itself_lowered_whatever_its_case() {
        for match_case in [true, false] {
            let n = needs(&["Journal-Q7Zx"], false, match_case).unwrap();
            assert_eq!(n.len(), 1);
            for clause in &n[0] {
                assert_eq!(strings(clause), ["journal-q7zx"], "case {match_case}");
            }
        }
    }

    #[test]
    fn kelvin_and_long_s_stay_among_a_case_insensitive_literals_spellings() {
        // `k` also matches U+212A and `s` U+017F: both spellings are needed.
        let n = needs(&["ask"], false, false).unwrap();
        let prefixes = strings(&n[0][0]);
        assert!(prefixes.contains(&"ask".to_owned()), "{prefixes:?}");
        assert!(prefixes.contains(&"a\u{17f}k".to_owned()), "{prefixes:?}");
        assert!(prefixes.contains(&"as\u{212a}".to_owned()), "{prefixes:?}");
    }

    #[test]
    fn alternations_need_one_of_their_branches_and_a_dot_star_keeps_the_suffix() {
        let n = needs(&["(Error|panic)d: .*"], true, true).unwrap();
        assert_eq!(strings(&n[0][0]), ["errord: ", "panicd: "]);
        assert_eq!(n[0].len(), 1, "{n:?}");
        let n = needs(&[".*Fatal"], true, false).unwrap();
        assert_eq!(n[0].len(), 1);
        assert_eq!(strings(&n[0][0]), ["fatal"]);
    }

    /// Whether the lowered `line` satisfies every clause of `clauses`.
    fn holds(clauses: &[Vec<Vec<u8>>], line: &[u8]) -> bool {
        let lowered = line.to_ascii_lowercase();
        clauses.iter().all(|clause| {
            clause
                .iter()
                .any(|s| memchr::memmem::find(&lowered, s).is_some())
        })
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(400))]

        /// Every line a pattern matches holds that pattern's needs: over
        /// patterns of literals, classes, alternations and repetitions,
        /// either case, and lines of letters whose case folds cross ASCII.
        #[test]
        fn a_matching_line_always_holds_its_patterns_needs(
            pieces in proptest::collection::vec(proptest::sample::select(vec![
                "abc", "Kas", "s", "(ab|Sc)", ".", r"\w", "[A-C]", "x*", "é", "k{2}",
                "(?i)kS", "b?", "ABC", "[^a]",
            ]), 1..6),
            second in proptest::option::of("[a-cA-CkKsx]{1,5}"),
            regex in proptest::bool::ANY,
            match_case in proptest::bool::ANY,
            lines in proptest::collection::vec(proptest::collection::vec(proptest::sample::select(vec![
                "abc", "ABC", "aBc", "Kas", "kAS", "\u{212a}a\u{17f}", "s", "S", "\u{17f}", "x", "é", "É",
                "kk", "K\u{212a}", "ab", "Sc", "sC", " ", "b", "ks",
            ]), 0..6), 1..30),
        ) {
            let first: String = pieces.concat();
            let first = if regex { first } else { first.replace(['(', ')', '*', '?', '[', ']', '{', '}', '^', '.', '\\'], "") };
            if first.is_empty() { return Ok(()); }
            let mut patterns = vec![first];
            patterns.extend(second);
            let Ok(m) = Matcher::new(&patterns, PatternOptions { regex, match_case }) else {
                return Ok(());
            };
            let Some(needs) = m.needs().clone() else { return Ok(()); };
            for line in lines.iter().map(|l| l.concat()) {
                if let Some(p) = m.matching_pattern(line.as_bytes()) {
                    proptest::prop_assert!(
                        holds(&needs[p], line.as_bytes()),
                        "{patterns:?} (regex {regex}, case {match_case}) matches {line:?}, needs {needs:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn nothing_is_needed_where_a_filter_could_not_tell() {
        assert_eq!(needs(&[".*"], true, false), None);
        assert_eq!(needs(&["ab"], false, true), None);
        assert_eq!(needs(&["a|bcd"], true, true), None);
        assert_eq!(needs(&[r"\w+"], true, true), None);
        // One pattern that needs nothing: the matcher needs nothing.
        assert_eq!(needs(&["needle", "x"], false, true), None);
        let two = needs(&["needle", "other"], false, true).unwrap();
        assert_eq!(two.len(), 2);
    }
}
