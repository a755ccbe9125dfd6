//! Replays the grammar fuzz target's seed corpus (fuzz/corpus/grammar) as an
//! ordinary test, so CI needs no nightly toolchain.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;

use panescan_engine::fuzzing::{check, OracleLine, Verdict};

fn oracle(pattern: &str, match_case: bool) -> Option<OracleLine> {
    let re = regex::bytes::RegexBuilder::new(pattern)
        .case_insensitive(!match_case)
        .build()
        .ok()?;
    Some(Box::new(move |line: &[u8]| re.is_match(line)))
}

#[test]
fn grammar_seed_corpus_replays_clean() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../fuzz/corpus/grammar");
    let mut entries: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    assert!(
        entries.len() >= 20,
        "seed corpus too small: {}",
        entries.len()
    );
    let (mut rejected, mut agreed) = (0, 0);
    for path in &entries {
        let data = std::fs::read(path).unwrap();
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

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(512))]

    /// A structured stand-in for the fuzzer that runs in CI: random strings
    /// of regex syntax against random lines.
    #[test]
    fn random_syntax_checks_clean(
        flags in 0u8..16,
        pattern in r"[ab\^$.*+?()\[\]{}|\\dwsbpLk0-9,~&:=<!-]{1,14}",
        hay in proptest::collection::vec(proptest::sample::select(vec![b'a', b'b', b'\n', b'\r', b'1', b' ', b'-', 0xff, b'k', b'~']), 0..40),
    ) {
        let mut data = vec![flags & 3];
        data.extend_from_slice(pattern.as_bytes());
        data.push(0);
        data.extend_from_slice(&hay);
        if let Err(problem) = check(&data, &oracle) {
            return Err(proptest::test_runner::TestCaseError::fail(problem));
        }
    }
}
