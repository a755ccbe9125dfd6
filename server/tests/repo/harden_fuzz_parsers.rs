//! Replays the seed corpora of the `uri`, `cursor`, `detect` and `policy` fuzz
//! targets (fuzz/corpus/<target>) through the checks the targets run
//! (`panescan::testing::fuzz_parsers`), so CI needs no nightly toolchain. Any
//! corpus file a fuzzing run adds (a minimized crash, say) replays too.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use panescan::testing::fuzz_parsers::{cursor, detect, policy, uri};

fn replay(target: &str, at_least: usize, check: fn(&[u8]) -> Result<(), String>) {
    let seeds = common::seed_corpus(target);
    assert!(seeds.len() >= at_least, "{target}: {} seeds", seeds.len());
    for (path, data) in &seeds {
        if let Err(problem) = check(data) {
            panic!("{}: {problem}", path.display());
        }
    }
}

#[test]
fn uri_seed_corpus_replays_clean() {
    replay("uri", 20, uri);
}

#[test]
fn cursor_seed_corpus_replays_clean() {
    replay("cursor", 10, cursor);
}

#[test]
fn detect_seed_corpus_replays_clean() {
    replay("detect", 15, detect);
}

#[test]
fn policy_seed_corpus_replays_clean() {
    replay("policy", 8, policy);
}
