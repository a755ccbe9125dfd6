//! Replays the seed corpora of the `uri`, `cursor` and `detect` fuzz
//! targets (fuzz/corpus/<target>) through the checks the targets run
//! (`panescan::fuzz_parsers`), so CI needs no nightly toolchain. Any
//! corpus file a fuzzing run adds (a minimized crash, say) replays too.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;

use panescan::fuzz_parsers::{cursor, detect, uri};

fn replay(target: &str, at_least: usize, check: fn(&[u8]) -> Result<(), String>) {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../fuzz/corpus")
        .join(target);
    let mut entries: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    assert!(
        entries.len() >= at_least,
        "{target}: {} seeds",
        entries.len()
    );
    for path in &entries {
        let data = std::fs::read(path).unwrap();
        if let Err(problem) = check(&data) {
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
