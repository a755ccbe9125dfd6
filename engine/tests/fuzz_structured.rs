//! The structure-aware grammar generator (`panescan_engine::fuzz_structured`)
//! run by `cargo test`: random choices as a property test, the
//! `grammar_structured` fuzz target's seed corpus replayed, and the share
//! of generated cases that compile and find lines.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use panescan_engine::fuzz_structured::{check, generate};
use panescan_engine::fuzzing::{OracleLine, Verdict};
use panescan_engine::MAX_NESTING;
use proptest::prelude::*;

mod common;

/// The `regex` crate as the fuzz target builds it: its nesting and size
/// limits raised so that every pattern the engine accepts builds.
fn oracle(pattern: &str, match_case: bool) -> Option<OracleLine> {
    let re = regex::bytes::RegexBuilder::new(pattern)
        .case_insensitive(!match_case)
        .nest_limit(MAX_NESTING * 2)
        .size_limit(256 << 20)
        .build()
        .ok()?;
    Some(Box::new(move |line: &[u8]| re.is_match(line)))
}

/// Cases the property test runs: 256, or `PANESCAN_STRUCTURED_CASES` for a
/// longer run without the fuzzer's instrumentation.
fn cases() -> u32 {
    std::env::var("PANESCAN_STRUCTURED_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(256)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases()))]

    /// Any choices: the engine and the oracle agree (or the pattern is
    /// refused with a well-formed error).
    #[test]
    fn generated_cases_check_clean(data in proptest::collection::vec(any::<u8>(), 0..400)) {
        if let Err(problem) = check(&data, &oracle) {
            return Err(TestCaseError::fail(problem));
        }
    }
}

#[test]
fn structured_seed_corpus_replays_clean() {
    let seeds = common::seed_corpus("grammar_structured", 10);
    for (path, data) in seeds {
        if let Err(problem) = check(&data, &oracle) {
            panic!("{}: {problem}", path.display());
        }
    }
}

/// Counts what 2,000 random inputs give: most compile, and most of those
/// tell matchers apart: some lines match and some do not (a pattern that
/// matches every line, or none, checks little; the point of the generator:
/// random bytes are mostly refused).
#[test]
fn most_generated_patterns_compile_and_tell_lines_apart() {
    let mut rng = 0x9e37_79b9_7f4a_7c15u64;
    let (mut agreed, mut apart, mut every, mut rejected, mut no_oracle) = (0, 0, 0, 0, 0);
    for _ in 0..2000 {
        let data: Vec<u8> = (0..300)
            .map(|_| {
                rng ^= rng << 13;
                rng ^= rng >> 7;
                rng ^= rng << 17;
                rng as u8
            })
            .collect();
        match check(&data, &oracle) {
            Ok(Verdict::Agreed { matched, lines }) => {
                agreed += 1;
                apart += usize::from(matched > 0 && matched < lines);
                every += usize::from(lines > 0 && matched == lines);
            }
            Ok(Verdict::Rejected(_)) => rejected += 1,
            Ok(Verdict::NoOracle) => no_oracle += 1,
            Err(problem) => panic!("{problem}\ninput: {:?}", generate(&data)),
        }
    }
    let share = |n: usize| 100.0 * n as f64 / agreed.max(1) as f64;
    eprintln!(
        "2,000 generated: {agreed} compiled and agreed ({:.1}% tell lines apart, {:.1}% match every line), {rejected} refused, {no_oracle} without an oracle",
        share(apart),
        share(every)
    );
    assert!(agreed >= 1500, "{agreed} of 2,000 compiled");
    assert!(apart * 2 >= agreed, "{apart} of {agreed} tell lines apart");
    assert!(
        rejected >= 10,
        "{rejected} refused: the limits are not reached"
    );
}
