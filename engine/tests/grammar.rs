//! The bounded grammar: hostile patterns, clear errors, and libtmux-ts
//! compatibility.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::{Duration, Instant};

use panescan_engine::{search_captures, Capture, Matcher, PatternError, PatternOptions};
use proptest::prelude::*;

const REGEX: PatternOptions = PatternOptions {
    regex: true,
    match_case: false,
};

fn reject(pattern: &str) -> PatternError {
    Matcher::new(&[pattern], REGEX).expect_err(pattern)
}

/// Runs `pattern` over `text` and returns (matching line count, time taken),
/// or the error.
fn timed(pattern: &str, text: &str) -> Result<(usize, Duration), PatternError> {
    let started = Instant::now();
    let m = Matcher::new(&[pattern], REGEX)?;
    let o = search_captures(&m, &common::open_options(), vec![Capture::new(0, 0, text)]);
    Ok((
        o.panes.iter().map(|p| p.lines.len()).sum(),
        started.elapsed(),
    ))
}

#[test]
fn hostile_patterns_finish_fast_or_are_rejected() {
    let a = "a".repeat(1 << 20);
    let x = "x".repeat(1 << 20);
    // The yardstick: a plain regex scanning a megabyte through the lazy
    // DFA, timed now on this machine (it takes what a scan takes under the
    // machine's load). Bounded patterns stay within a multiple of it (they
    // are linear too; big ones also compile); a backtracker would take
    // hours here.
    let yardstick = || {
        let (n, took) = timed("[ab]+$", &a).unwrap();
        assert_eq!(n, 1);
        took
    };
    let bound = |base: Duration| base * 200 + Duration::from_millis(500);
    for (pattern, text, hits) in [
        ("(a*)*b", &a, 0),
        ("(a|a)*$", &a, 1),
        ("(x+x+)+y", &x, 0),
        ("(a|aa)+$", &a, 1),
        (r"(\w+\s?)+$", &a, 1),
    ] {
        let base = yardstick();
        let (n, took) = timed(pattern, text).unwrap();
        assert_eq!(n, hits, "{pattern}");
        assert!(
            took < bound(base),
            "{pattern} took {took:?}, [ab]+$ {base:?}"
        );
    }
    // Big automata: compile fast or get rejected fast.
    for pattern in [
        r"\p{L}{1000}",
        "(a{1000}){1000}",
        r"(\w{1000}){1000}",
        "[a-z]{1000}[0-9]{1000}",
        r"(?:\p{L}|\d){500}x",
    ] {
        let base = yardstick();
        let started = Instant::now();
        if let Err(err) = timed(pattern, &a[..100_000]) {
            assert!(err.reason.contains("limit"), "{pattern}: {err}");
        }
        let took = started.elapsed();
        assert!(
            took < bound(base),
            "{pattern} took {took:?}, [ab]+$ {base:?}"
        );
    }
}

#[test]
fn nested_thousand_by_thousand_is_rejected_for_size() {
    let err = reject("(a{1000}){1000}");
    assert_eq!(err.to_string(), "invalid regular expression at byte 0: the compiled pattern would need more than the limit of 4 MiB; use smaller counted repetitions or narrower classes");
}

/// `check` finds every error but the automata's size (which only building
/// them finds), and names it as `new` does.
#[test]
fn check_finds_what_new_finds_short_of_the_size_of_the_automata() {
    assert!(Matcher::check(&["(a{1000}){1000}"], REGEX).is_ok());
    for bad in ["abcde{5000}", "(", "a\\", "[z-a]"] {
        let checked = Matcher::check(&[bad], REGEX).expect_err(bad);
        assert_eq!(checked, reject(bad), "{bad}");
    }
    let lines = PatternOptions {
        regex: false,
        match_case: true,
    };
    let two = ["fine", "two\nlines"];
    assert_eq!(
        Matcher::check(&two, lines).unwrap_err(),
        Matcher::new(&two, lines).unwrap_err()
    );
    let none: [&str; 0] = [];
    assert!(Matcher::check(&none, REGEX).is_err());
}

#[test]
fn counted_repetition_over_limit_names_offset_and_limit() {
    let err = reject("abcde{5000}");
    assert_eq!(err.offset, 5);
    assert_eq!(err.to_string(), "invalid regular expression at byte 5: counted repetition {5000} exceeds the limit of 1,000");
    assert_eq!(
        reject("x{2,1001}").reason,
        "counted repetition {2,1001} exceeds the limit of 1,000"
    );
    assert_eq!(
        reject("x{1001,}").reason,
        "counted repetition {1001,} exceeds the limit of 1,000"
    );
    assert!(Matcher::new(&["x{1000}"], REGEX).is_ok());
}

#[test]
fn too_long_pattern_is_rejected() {
    let long = "a".repeat(4097);
    let err = reject(&long);
    assert_eq!(err.offset, 4096);
    assert_eq!(
        err.reason,
        "the pattern is 4,097 bytes long, over the limit of 4,096 bytes"
    );
    assert!(Matcher::new(&["a".repeat(4096)], REGEX).is_ok());
    let err = Matcher::new(&[long], PatternOptions::default()).unwrap_err();
    assert_eq!(err.to_string(), "invalid literal pattern at byte 4096: the pattern is 4,097 bytes long, over the limit of 4,096 bytes");
}

#[test]
fn lookaround_and_backreferences_are_rejected_in_words() {
    for (pattern, offset, word) in [
        ("foo(?=bar)", 3, "look-around"),
        ("(?!x)", 0, "look-around"),
        ("a(?<=b)", 1, "look-around"),
        ("(?<!b)", 0, "look-around"),
        (r"(a)\1", 3, "backreferences"),
    ] {
        let err = reject(pattern);
        assert_eq!(err.offset, offset, "{pattern}: {err}");
        assert!(err.reason.contains(word), "{pattern}: {err}");
        assert!(
            !err.reason.contains('{') || err.reason.contains("{n}"),
            "debug dump? {err}"
        );
    }
}

#[test]
fn other_errors_read_well() {
    assert_eq!(
        reject("").reason,
        "the pattern is empty; give at least one character"
    );
    assert_eq!(reject("(abc").offset, 0);
    assert_eq!(reject("abc)").offset, 3);
    assert_eq!(
        reject(r"a\n").reason,
        "a match lies within one line, so a pattern cannot contain a line break (\\n)"
    );
    assert_eq!(reject(r"[\n]").offset, 1);
    let err = Matcher::new(&["ok", "x{9999}"], REGEX).unwrap_err();
    assert_eq!(err.to_string(), "pattern 1: invalid regular expression at byte 1: counted repetition {9999} exceeds the limit of 1,000");
    let many: Vec<String> = (0..65).map(|i| format!("p{i}")).collect();
    assert!(Matcher::new(&many, PatternOptions::default()).is_err());
    assert!(Matcher::new(&many[..64], PatternOptions::default()).is_ok());
    assert!(Matcher::new(&["a\nb"], PatternOptions::default()).is_err());
    let deep = format!("{}a{}", "(".repeat(400), ")".repeat(400));
    assert!(reject(&deep)
        .reason
        .contains("deeper than the limit of 300"));
}

#[test]
fn classes_never_match_a_line_end() {
    let m = Matcher::new(&[r"a[^x]b", r"c\sd", "(?s)e.f"], REGEX).unwrap();
    let o = search_captures(
        &m,
        &common::open_options(),
        vec![Capture::new(0, 0, "a\nb\nc\nd\ne\nf\na-b\n")],
    );
    assert_eq!(
        o.panes[0].lines.iter().map(|l| l.line).collect::<Vec<_>>(),
        vec![6]
    );
}

#[test]
fn tilde_in_class_is_literal_as_in_javascript() {
    let m = Matcher::new(&["[a~~b]"], REGEX).unwrap();
    let o = search_captures(
        &m,
        &common::open_options(),
        vec![Capture::new(0, 0, "~\nc\n")],
    );
    assert_eq!(o.panes[0].lines.len(), 1);
    assert_eq!(o.panes[0].lines[0].text, "~");
    // Offsets still point into the text the user wrote.
    assert_eq!(reject("[~~]x{2000}").offset, 5);
}

// ---------------------------------------------------------------------------
// libtmux-ts's bounded grammar: a generator of patterns it accepts (at most
// 512 code units; only `^$\.*+?()[]{}|/-` escaped; classes of printable ASCII,
// not negated, not nested, no `&&`/`--`; groups `(` and `(?:`; at most one
// quantifier, never on a group, never lazy/possessive; at most one `|`; a
// pattern with a quantifier starts with `^` and has no `|`; no control
// characters). JavaScript reads these the same way as the `regex` crate,
// except `~` inside a class, which the test escapes for the oracle.

fn ts_atom() -> impl Strategy<Value = String> {
    let escaped = prop::sample::select(r"^$\.*+?()[]{}|/-".chars().collect::<Vec<_>>())
        .prop_map(|c| format!("\\{c}"));
    let plain = prop::sample::select(vec![
        'a', 'b', 'E', 'r', ' ', ':', '~', 'é', '#', '%', '&', '=', ',', '<',
    ])
    .prop_map(|c| c.to_string());
    let class_char = prop_oneof![
        prop::sample::select(vec![
            'a', 'b', 'z', 'A', '0', '9', ' ', '~', '&', '-', '.', '*', '(', '{', '|', '^', '$',
            '?'
        ])
        .prop_map(|c| c.to_string()),
        prop::sample::select(vec![r"\]", r"\[", r"\\", r"\-", r"\^"]).prop_map(str::to_string),
    ];
    let class = (prop::collection::vec(class_char, 1..4), any::<bool>()).prop_filter_map(
        "class",
        |(items, range)| {
            let mut body = if range {
                format!("a-z{}", items.concat())
            } else {
                items.concat()
            };
            // Not negated, no set operators.
            if body.starts_with('^') {
                body.insert(0, 'x');
            }
            if body.contains("&&")
                || body.contains("--")
                || body.starts_with('-') && body.len() > 1 && body.as_bytes()[1] == b'-'
            {
                return None;
            }
            Some(format!("[{body}]"))
        },
    );
    prop_oneof![4 => plain, 2 => escaped, 2 => class, 1 => Just(".".to_string())]
}

fn ts_pattern() -> impl Strategy<Value = String> {
    let quant = prop::sample::select(vec!["*", "+", "?", "{2}", "{1,}", "{0,3}", "{1000}"]);
    (
        prop::collection::vec(ts_atom(), 1..5),
        prop::option::of((0usize..5, quant)),
        prop::option::of(prop::collection::vec(ts_atom(), 1..3)),
        prop::option::of(0usize..5),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(|(atoms, quant, alt, group, caret, dollar)| {
            let mut atoms = atoms;
            let mut pattern = String::new();
            let has_quant = quant.is_some();
            if let Some((at, q)) = quant {
                let at = at % atoms.len();
                atoms[at].push_str(q);
            }
            if let Some(g) = group.filter(|_| !has_quant) {
                let g = g % atoms.len();
                atoms[g] = format!("(?:{})", atoms[g]);
            }
            if caret || has_quant {
                pattern.push('^');
            }
            pattern.push_str(&atoms.concat());
            if let Some(alt) = alt.filter(|_| !has_quant) {
                pattern.push('|');
                pattern.push_str(&alt.concat());
            }
            if dollar {
                pattern.push('$');
            }
            pattern
        })
}

/// The JavaScript reading of a libtmux-ts pattern, for the regex crate.
fn js_to_rust(pattern: &str) -> String {
    let mut out = String::new();
    let mut in_class = false;
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                out.push(c);
                out.extend(chars.next());
            }
            '[' if !in_class => {
                in_class = true;
                out.push(c);
            }
            ']' if in_class => {
                in_class = false;
                out.push(c);
            }
            '~' if in_class => out.push_str("\\~"),
            _ => out.push(c),
        }
    }
    out
}

/// A line of noise: the characters patterns are made of (every plain atom
/// `ts_atom` emits among them), so lines can match without a sample.
fn ts_line() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop::sample::select(vec![
            "a", "b", "E", "e", "r", " ", ":", "~", "é", "É", "-", "/", "[", "]", "{", "}", "(",
            ")", "|", ".", "*", "+", "?", "^", "$", "\\", "&", "z", "0", "9", "aa", "x", "#", "%",
            "=", ",", "<", "A",
        ]),
        0..10,
    )
    .prop_map(|p| p.concat())
}

/// A pattern and lines to search: noise lines, and samples of the pattern
/// (generated from its HIR), alone or between noise.
fn ts_case() -> impl Strategy<Value = (String, bool, Vec<String>)> {
    (ts_pattern(), any::<bool>(), any::<u64>()).prop_flat_map(|(pattern, match_case, seed)| {
        let mut rng = common::Rng::new(seed);
        let samples: Vec<String> = (0..3)
            .filter_map(|_| common::sample_matching(&js_to_rust(&pattern), !match_case, &mut rng))
            .collect();
        let line = if samples.is_empty() {
            ts_line().boxed()
        } else {
            let alone = prop::sample::select(samples.clone());
            let between = (ts_line(), prop::sample::select(samples), ts_line())
                .prop_map(|(a, s, b)| format!("{a}{s}{b}"));
            prop_oneof![2 => ts_line(), 2 => alone, 2 => between].boxed()
        };
        (
            Just(pattern),
            Just(match_case),
            prop::collection::vec(line, 1..10),
        )
    })
}

/// The JavaScript reading of a libtmux-ts pattern, case as asked.
fn ts_oracle(pattern: &str, match_case: bool) -> Result<regex::Regex, regex::Error> {
    regex::RegexBuilder::new(&js_to_rust(pattern))
        .case_insensitive(!match_case)
        .build()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn every_libtmux_ts_pattern_is_accepted_and_matches_the_same_lines(
        (pattern, match_case, lines) in ts_case(),
    ) {
        // A class range out of order (`[{-a]`) is a SyntaxError in
        // JavaScript too, so libtmux-ts rejects it.
        let oracle = ts_oracle(&pattern, match_case);
        prop_assume!(!matches!(&oracle, Err(e) if e.to_string().contains("class range")));
        let oracle = oracle.unwrap();
        let m = Matcher::new(&[&pattern], PatternOptions { regex: true, match_case });
        prop_assert!(m.is_ok(), "{} rejected: {}", pattern, m.unwrap_err());
        let m = m.unwrap();
        let text = lines.join("\n") + "\n";
        let mut options = common::open_options();
        options.context_lines = 1;
        let o = search_captures(&m, &options, vec![Capture::new(0, 0, text.clone())]);
        // Line, text and one line of context either side, as the oracle sees them.
        let want: Vec<(i64, String, Vec<String>, Vec<String>)> = lines
            .iter()
            .enumerate()
            .filter(|(_, l)| oracle.is_match(l))
            .map(|(i, l)| {
                let before = lines[i.saturating_sub(1)..i].to_vec();
                let after = lines[i + 1..(i + 2).min(lines.len())].to_vec();
                (i as i64, l.clone(), before, after)
            })
            .collect();
        let got: Vec<(i64, String, Vec<String>, Vec<String>)> = o
            .panes
            .iter()
            .flat_map(|p| p.lines.iter().map(|l| (l.line, l.text.clone(), l.before.clone(), l.after.clone())))
            .collect();
        prop_assert_eq!(got, want, "pattern {}", pattern);
    }
}

/// Most generated cases have a line to find (18% did when lines were noise
/// alone, over 2,000 draws).
#[test]
fn most_libtmux_ts_cases_have_hits() {
    let share = common::share_with_hits(ts_case(), 2000, |(pattern, match_case, lines)| {
        ts_oracle(pattern, *match_case).is_ok_and(|o| lines.iter().any(|l| o.is_match(l)))
    });
    eprintln!("libtmux-ts cases with hits over 2,000 draws: {share:.3}");
    assert!(share >= 0.8, "only {share:.2} of cases have a hit");
}
