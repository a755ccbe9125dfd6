//! Replays the grammar fuzz target's seed corpus (fuzz/corpus/grammar) as an
//! ordinary test, so CI needs no nightly toolchain.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use panescan_engine::fuzzing::{check, OracleLine, Verdict};
use proptest::prelude::*;

mod common;

fn oracle(pattern: &str, match_case: bool) -> Option<OracleLine> {
    let re = regex::bytes::RegexBuilder::new(pattern)
        .case_insensitive(!match_case)
        .build()
        .ok()?;
    Some(Box::new(move |line: &[u8]| re.is_match(line)))
}

#[test]
fn grammar_seed_corpus_replays_clean() {
    let seeds = common::seed_corpus("grammar", 20);
    let (mut rejected, mut agreed) = (0, 0);
    for (path, data) in seeds {
        match check(&data, &oracle) {
            Ok(Verdict::Rejected(_)) => rejected += 1,
            Ok(Verdict::Agreed { .. }) => agreed += 1,
            Ok(Verdict::NoOracle) => {}
            Err(problem) => panic!("{}: {problem}", path.display()),
        }
    }
    // The seeds exercise both sides of the grammar.
    assert!(
        rejected >= 5 && agreed >= 10,
        "rejected {rejected}, agreed {agreed}"
    );
}

#[test]
fn check_reports_disagreement() {
    // An oracle that never matches must be caught disagreeing.
    let never = |_: &str, _: bool| -> Option<OracleLine> { Some(Box::new(|_: &[u8]| false)) };
    assert!(check(b"\x00abc\x00xx abc\n", &never).is_err());
}

/// Haystack bytes.
const HAY: [u8; 10] = [b'a', b'b', b'\n', b'\r', b'1', b' ', b'-', 0xff, b'k', b'~'];

/// A random string of regex syntax (read as a regex or a literal), and a
/// haystack of random bytes with samples of the pattern spliced in (strings
/// generated from its HIR, or the literal itself).
fn random_case() -> impl Strategy<Value = Vec<u8>> {
    (
        0u8..16,
        r"[ab\^$.*+?()\[\]{}|\\dwsbpLk0-9,~&:=<!-]{1,14}",
        proptest::collection::vec(
            proptest::collection::vec(proptest::sample::select(HAY.to_vec()), 0..12),
            1..5,
        ),
        any::<u64>(),
    )
        .prop_map(|(flags, pattern, noise, seed)| {
            let regex = flags & 1 != 0;
            let mut rng = common::Rng::new(seed);
            let text = if regex {
                pattern.clone()
            } else {
                regex::escape(&pattern)
            };
            let mut data = vec![flags & 3];
            data.extend_from_slice(pattern.as_bytes());
            data.push(0);
            for piece in noise {
                data.extend_from_slice(&piece);
                if let Some(sample) = common::sample_matching(&text, flags & 2 == 0, &mut rng) {
                    data.extend_from_slice(sample.as_bytes());
                    data.push(b'\n');
                }
            }
            data
        })
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(512))]

    /// A structured stand-in for the fuzzer that runs in CI: random strings
    /// of regex syntax against lines that hold samples of them.
    #[test]
    fn random_syntax_checks_clean(data in random_case()) {
        if let Err(problem) = check(&data, &oracle) {
            return Err(proptest::test_runner::TestCaseError::fail(problem));
        }
    }
}

/// Of the random patterns that compile, most find a line (3% did when the
/// haystack was random bytes alone, over 2,000 draws).
#[test]
fn most_random_syntax_cases_that_compile_have_hits() {
    let compiled = std::cell::Cell::new(0usize);
    // Some lines matching and some not: a case that tells matchers apart.
    let apart = std::cell::Cell::new(0usize);
    let share = common::share_with_hits(random_case(), 2000, |data| match check(data, &oracle) {
        Ok(Verdict::Agreed { matched, lines }) => {
            compiled.set(compiled.get() + 1);
            apart.set(apart.get() + usize::from(matched > 0 && matched < lines));
            matched > 0
        }
        _ => false,
    });
    let of_compiled = share * 2000.0 / compiled.get().max(1) as f64;
    eprintln!(
        "random syntax: {share:.3} of 2,000 draws have hits; {} compiled, {of_compiled:.3} of those have hits, {:.3} tell lines apart",
        compiled.get(),
        apart.get() as f64 / compiled.get().max(1) as f64
    );
    assert!(
        of_compiled >= 0.8,
        "only {of_compiled:.2} of compiled cases have a hit"
    );
}

#[test]
fn redact_seed_corpus_replays_clean() {
    // Every kind is seeded.
    let seeds = common::seed_corpus("redact", 14);
    for (path, data) in seeds {
        if let Err(problem) = panescan_engine::fuzz_redact::check(&data) {
            panic!("{}: {problem}", path.display());
        }
    }
}
