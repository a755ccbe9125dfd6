//! The fast paths against the slow path of the same engine.
//!
//! A case-insensitive ASCII literal runs on Teddy over the case spellings of
//! a window of it (no lowered copy of the text), and every capture is
//! surveyed (line count, ESC and `\r`) in one pass. The same literal given
//! as an escaped regular expression runs on the regex engine, which folds
//! case itself; both must give the same outcome, field for field: lines,
//! texts, pattern index, context, clamp flags (match and byte budgets) and
//! the counts of what was scanned. The generated text is made of repeated and blank lines, wide
//! characters (among them the Kelvin sign and long s, which Unicode folding
//! maps onto `k` and `s`), `\r\n` and escape sequences, with the literal in
//! any case at line starts, line ends and the edges of the buffer.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use panescan_engine::{search_captures, Capture, Matcher, Pattern, SearchOptions};
use proptest::prelude::*;

/// A literal over letters that fold in interesting ways (`k`, `s`), plus
/// punctuation and a digit.
fn literal() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop::sample::select(vec![
            'a', 'e', 'k', 'o', 'r', 's', 'E', 'R', '[', '0', ' ', '_',
        ]),
        1..7,
    )
    .prop_map(|chars| chars.into_iter().collect())
}

/// The literal in a random case, cut short, or not at all.
fn piece(literal: String) -> impl Strategy<Value = String> {
    let full = literal.clone();
    let cut = literal.clone();
    prop_oneof![
        3 => prop::collection::vec(any::<bool>(), full.len()).prop_map(move |ups| {
            full.chars()
                .zip(ups)
                .map(|(c, up)| if up { c.to_ascii_uppercase() } else { c.to_ascii_lowercase() })
                .collect::<String>()
        }),
        1 => Just(cut[..cut.len() - 1].to_owned()),
        1 => Just(literal.replace('k', "\u{212A}").replace('s', "\u{17F}")),
        4 => prop::sample::select(vec![
            "x", " ", "é", "日本", "\u{212A}", "\u{17F}", "error", "\x1b[31m", "ｗｉｄｅ", "ab",
        ])
        .prop_map(str::to_owned),
    ]
}

/// Captures whose lines are drawn (with repeats) from a small pool of lines
/// built of pieces; blank lines included; `\n` or `\r\n`; with or without a
/// final line end.
fn captures(literal: String) -> impl Strategy<Value = Vec<Capture>> {
    let line = prop::collection::vec(piece(literal), 0..5).prop_map(|p| p.concat());
    let pool = prop::collection::vec(line, 1..6);
    pool.prop_flat_map(|pool| {
        let capture = (
            prop::collection::vec(prop::sample::select(pool.clone()), 0..40),
            any::<bool>(),
            any::<bool>(),
        );
        prop::collection::vec(capture, 1..4)
    })
    .prop_map(|captures| {
        captures
            .into_iter()
            .enumerate()
            .map(|(key, (lines, crlf, final_end))| {
                let end = if crlf { "\r\n" } else { "\n" };
                let mut text = lines.join(end);
                if final_end {
                    text.push_str(end);
                }
                Capture::new(key, -7, text.into_bytes())
            })
            .collect()
    })
}

fn options(context: usize, per_pane: u64, scan_bytes: u64, strip: bool) -> SearchOptions {
    let mut options = common::open_options();
    options.context_lines = context;
    options.limits.max_matches_per_pane = per_pane;
    options.limits.max_scan_bytes = scan_bytes;
    options.strip_escapes = strip;
    options.max_text_bytes = 24;
    options
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn case_insensitive_literal_matches_the_regex_engine(
        (literal, captures) in literal().prop_flat_map(|l| (Just(l.clone()), captures(l))),
        context in 0usize..3,
        per_pane in prop_oneof![Just(u64::MAX), 1u64..4],
        scan_bytes in prop_oneof![Just(u64::MAX), 0u64..400],
        strip in any::<bool>(),
    ) {
        let fast = Matcher::from_patterns(&[Pattern::literal(literal.clone())], false).unwrap();
        let slow = Matcher::from_patterns(&[Pattern::regex(regex::escape(&literal))], false).unwrap();
        prop_assert_eq!(fast.engine_name(), "aho-corasick");
        prop_assert_eq!(slow.engine_name(), "regex-automata");
        let options = options(context, per_pane, scan_bytes, strip);
        let want = search_captures(&slow, &options, captures.clone());
        let got = search_captures(&fast, &options, captures.clone());
        prop_assert_eq!(format!("{got:?}"), format!("{want:?}"));
        for capture in &captures {
            let text = capture.bytes.split(|&b| b == b'\n');
            for line in text {
                prop_assert_eq!(fast.matching_pattern(line), slow.matching_pattern(line));
            }
        }
    }
}

/// Most generated cases find something, or the test above would prove
/// little.
#[test]
fn most_generated_cases_have_hits() {
    let strategy = literal().prop_flat_map(|l| (Just(l.clone()), captures(l)));
    let share = common::share_with_hits(strategy, 200, |(literal, captures)| {
        let m = Matcher::from_patterns(&[Pattern::literal(literal.clone())], false).unwrap();
        !search_captures(&m, &common::open_options(), captures.clone())
            .panes
            .is_empty()
    });
    assert!(share > 0.6, "only {share} of cases have hits");
}
