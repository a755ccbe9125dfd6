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

/// Counts what 1,000 random inputs give: most compile, most of those find
/// a line (the point of the generator: random bytes are mostly refused).
#[test]
fn most_generated_patterns_compile_and_find_lines() {
    let mut rng = 0x9e37_79b9_7f4a_7c15u64;
    let (mut agreed, mut hits, mut rejected, mut no_oracle) = (0, 0, 0, 0);
    for _ in 0..1000 {
        let data: Vec<u8> = (0..300)
            .map(|_| {
                rng ^= rng << 13;
                rng ^= rng >> 7;
                rng ^= rng << 17;
                rng as u8
            })
            .collect();
        match check(&data, &oracle) {
            Ok(Verdict::Agreed { matched }) => {
                agreed += 1;
                hits += usize::from(matched > 0);
            }
            Ok(Verdict::Rejected(_)) => rejected += 1,
            Ok(Verdict::NoOracle) => no_oracle += 1,
            Err(problem) => panic!("{problem}\ninput: {:?}", generate(&data)),
        }
    }
    eprintln!("1,000 generated: {agreed} compiled and agreed ({hits} with hits), {rejected} refused, {no_oracle} without an oracle");
    assert!(agreed >= 750, "{agreed} of 1,000 compiled");
    assert!(hits * 10 >= agreed * 7, "{hits} of {agreed} found a line");
    assert!(
        rejected >= 5,
        "{rejected} refused: the limits are not reached"
    );
}
