//! The engine finds exactly the lines a naive line-by-line search finds.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use panescan_engine::{search_captures, Capture, Matcher, PatternOptions};
use proptest::prelude::*;

fn line_strategy() -> impl Strategy<Value = Vec<u8>> {
    // Small alphabet so patterns hit often; includes multibyte text, the
    // Kelvin sign, a lone \r, tabs and an invalid byte.
    let piece = prop::sample::select(vec![
        "a", "b", "A", "B", "ab", "ba", " ", "é", "É", "\u{212A}", "k", "s", "ſ", "S", "\t", "\r",
        "\u{1b}", "x", "中文", "\u{301}",
    ]);
    (prop::collection::vec(piece, 0..8), any::<bool>()).prop_map(|(pieces, bad)| {
        let mut line = pieces.concat().into_bytes();
        if bad {
            line.push(0xff);
        }
        line
    })
}

fn capture_strategy() -> impl Strategy<Value = (Vec<u8>, i64)> {
    (
        prop::collection::vec(line_strategy(), 0..12),
        any::<bool>(),
        any::<bool>(),
        -50i64..50,
    )
        .prop_map(|(lines, crlf, final_newline, first)| {
            let sep: &[u8] = if crlf { b"\r\n" } else { b"\n" };
            let mut bytes = lines.join(sep);
            if final_newline && !lines.is_empty() {
                bytes.extend_from_slice(sep);
            }
            (bytes, first)
        })
}

fn captures_strategy() -> impl Strategy<Value = Vec<Capture>> {
    prop::collection::vec(capture_strategy(), 1..5).prop_map(|cs| {
        cs.into_iter()
            .enumerate()
            .map(|(key, (bytes, first))| Capture::new(key, first, bytes))
            .collect()
    })
}

fn literal_strategy() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop::sample::select(vec!["a", "b", "A", "k", "S", "é", "É", " ", "ab", "x"]),
        1..4,
    )
    .prop_map(|p| p.concat())
}

fn regex_strategy() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop::sample::select(vec![
            "a",
            "b",
            "[ab]",
            "a*",
            "b+",
            "^",
            "$",
            "(a|b)",
            ".",
            r"\w",
            r"\s",
            "é",
            "(?i:A)",
            r"\b",
            "[^a]",
            "A{1,2}",
            "(?-i:B)",
            r"\p{Greek}",
            "x?",
            "[[:alpha:]]",
            r"\d",
            "k",
            "s",
            r"\A",
            r"\z",
            "(?s:.)",
        ]),
        1..5,
    )
    .prop_map(|p| p.concat())
}

fn check(
    patterns: Vec<String>,
    regex: bool,
    match_case: bool,
    captures: Vec<Capture>,
) -> Result<(), TestCaseError> {
    let matcher = Matcher::new(&patterns, PatternOptions { regex, match_case }).unwrap();
    let outcome = search_captures(&matcher, &common::open_options(), captures.clone());
    let want = common::oracle(&patterns, regex, match_case, &captures);
    prop_assert_eq!(
        common::engine_view(&outcome),
        want,
        "engine {}",
        matcher.engine_name()
    );
    let total_lines: usize = captures.iter().map(|c| common::lines(&c.bytes).len()).sum();
    prop_assert_eq!(outcome.lines_scanned, total_lines as u64);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn literal_matches_oracle(p in literal_strategy(), case in any::<bool>(), cs in captures_strategy()) {
        check(vec![p], false, case, cs)?;
    }

    #[test]
    fn several_literals_match_oracle(ps in prop::collection::vec(literal_strategy(), 1..6), case in any::<bool>(), cs in captures_strategy()) {
        check(ps, false, case, cs)?;
    }

    #[test]
    fn regex_matches_oracle(p in regex_strategy(), case in any::<bool>(), cs in captures_strategy()) {
        check(vec![p], true, case, cs)?;
    }

    #[test]
    fn several_regexes_match_oracle(ps in prop::collection::vec(regex_strategy(), 1..5), case in any::<bool>(), cs in captures_strategy()) {
        check(ps, true, case, cs)?;
    }

    /// Context lines are the neighbouring lines of the same capture.
    #[test]
    fn context_lines_are_neighbours(p in literal_strategy(), n in 0usize..4, cs in captures_strategy()) {
        let matcher = Matcher::new(&[p], PatternOptions::default()).unwrap();
        let mut options = common::open_options();
        options.context_lines = n;
        let outcome = search_captures(&matcher, &options, cs.clone());
        for pane in &outcome.panes {
            let lines = common::lines(&cs[pane.key].bytes);
            let text = |i: usize| String::from_utf8_lossy(&lines[i]).into_owned();
            for m in &pane.lines {
                let i = (m.line - cs[pane.key].first_line) as usize;
                let before: Vec<String> = (i.saturating_sub(n)..i).map(text).collect();
                let after: Vec<String> = (i + 1..(i + 1 + n).min(lines.len())).map(text).collect();
                prop_assert_eq!(&m.before, &before);
                prop_assert_eq!(&m.after, &after);
            }
        }
    }
}

#[test]
fn non_ascii_case_insensitive_literal() {
    let captures = vec![Capture::new(
        0,
        0,
        "STRASSE\nÉCOLE\nécole\nKELVIN \u{212A}\n",
    )];
    let m = Matcher::new(&["école"], PatternOptions::default()).unwrap();
    assert_eq!(m.engine_name(), "regex-automata");
    let got = search_captures(&m, &common::open_options(), captures.clone());
    assert_eq!(
        got.panes[0]
            .lines
            .iter()
            .map(|l| l.line)
            .collect::<Vec<_>>(),
        vec![1, 2]
    );
    // `k` finds the Kelvin sign under Unicode simple case folding.
    let m = Matcher::new(&["n k"], PatternOptions::default()).unwrap();
    let got = search_captures(
        &m,
        &common::open_options(),
        vec![Capture::new(0, 0, "KELVIN \u{212A}")],
    );
    assert_eq!(got.panes.len(), 1);
}

#[test]
fn lowest_pattern_index_wins_not_first_position() {
    let m = Matcher::new(&["zzz", "aaa"], PatternOptions::default()).unwrap();
    let got = search_captures(
        &m,
        &common::open_options(),
        vec![Capture::new(0, 0, "aaa then zzz\naaa only")],
    );
    let idx: Vec<usize> = got.panes[0].lines.iter().map(|l| l.pattern_index).collect();
    assert_eq!(idx, vec![0, 1]);
}

#[test]
fn long_lines_are_clipped_around_the_match() {
    let line = format!("{}NEEDLE{}\n", "x".repeat(100_000), "y".repeat(100_000));
    let m = Matcher::new(&["needle"], PatternOptions::default()).unwrap();
    let mut options = common::open_options();
    options.max_text_bytes = 64;
    options.context_lines = 1;
    let got = search_captures(
        &m,
        &options,
        vec![Capture::new(0, 0, format!("{line}{line}"))],
    );
    for l in &got.panes[0].lines {
        assert!(l.text.len() <= 64);
        assert!(l.text.contains("NEEDLE"), "{}", l.text);
        assert!(l.text.starts_with('…') && l.text.ends_with('…'));
        assert!(l.before.iter().chain(&l.after).all(|c| c.len() <= 64));
    }
}

/// ASCII literals with `k`/`s`, case-insensitive, run on aho-corasick and
/// still find the Kelvin sign and long s that Unicode folding maps onto
/// them, also where such a match starts before aho-corasick's own hit on
/// the same line, or on an earlier line.
#[test]
fn kelvin_sign_and_long_s_are_found_by_the_folded_literal_path() {
    let patterns = vec!["ask".to_owned(), "s".to_owned(), "kworker".to_owned()];
    let matcher = Matcher::new(&patterns, PatternOptions::default()).unwrap();
    assert_eq!(matcher.engine_name(), "aho-corasick");
    let text =
        "plain line\nas\u{212A} then s\nnothing here\n\u{212A}WORKER\nno match\n\u{17F}\nASK\n";
    let captures = vec![Capture::new(0, -10, text.as_bytes().to_vec())];
    let outcome = search_captures(&matcher, &common::open_options(), captures.clone());
    let want = common::oracle(&patterns, false, false, &captures);
    assert_eq!(common::engine_view(&outcome), want);
    // "as\u{212A} then s": the lowest pattern matching the line is `ask`
    // (through the Kelvin sign), not `s`, which aho-corasick sees first.
    assert_eq!(want[0].1[0].1, 0, "{want:?}");
}
