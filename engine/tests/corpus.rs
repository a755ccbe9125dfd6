//! Real terminal output from corpus/ (see corpus/regenerate.sh).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::PathBuf;

use panescan_engine::{search_captures, Capture, Matcher, PatternOptions, SearchOptions};

fn read(name: &str) -> Vec<u8> {
    std::fs::read(
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../corpus")
            .join(name),
    )
    .unwrap()
}

fn texts(pattern: &str, regex: bool, bytes: Vec<u8>, strip: bool) -> Vec<String> {
    let m = Matcher::new(
        &[pattern],
        PatternOptions {
            regex,
            match_case: false,
        },
    )
    .unwrap();
    let options = SearchOptions {
        strip_escapes: strip,
        ..common::open_options()
    };
    let o = search_captures(&m, &options, vec![Capture::new(0, 0, bytes)]);
    o.panes
        .iter()
        .flat_map(|p| p.lines.iter().map(|l| l.text.clone()))
        .collect()
}

#[test]
fn coloured_build_output_matches_like_plain_output() {
    for (pattern, regex) in [
        (r"error\[E\d+\]: mismatched", true),
        ("mismatched types", false),
        (r"^\s*--> src/main\.rs:\d+", true),
        ("help:", false),
    ] {
        let plain = texts(pattern, regex, read("cargo-build-errors.txt"), true);
        let coloured = texts(pattern, regex, read("cargo-build-errors.ansi"), true);
        assert!(!plain.is_empty(), "{pattern}");
        assert_eq!(plain, coloured, "{pattern}");
        assert!(coloured.iter().all(|t| !t.contains('\x1b')));
        // Without stripping, escapes split the words and the regex misses.
        if pattern == r"error\[E\d+\]: mismatched" {
            assert!(
                texts(pattern, regex, read("cargo-build-errors.ansi"), false).len() < plain.len()
            );
        }
    }
}

#[test]
fn tui_screens_match_on_visible_text() {
    let top = texts(
        r"^Tasks: +\d+ total",
        true,
        read("tmux-top-escapes.ansi"),
        true,
    );
    assert_eq!(top.len(), 1, "{top:?}");
    let less = texts(
        "expected `u32`",
        false,
        read("tmux-less-escapes.ansi"),
        true,
    );
    assert!(!less.is_empty());
}

#[test]
fn wide_and_combining_unicode() {
    let u = read("tmux-unicode.txt");
    assert_eq!(texts("失敗しました", false, u.clone(), true).len(), 1);
    assert_eq!(texts("ОШИБКА", false, u.clone(), true).len(), 1); // case-insensitive Cyrillic
    assert_eq!(texts("ｅｒｒｏｒ", false, u.clone(), true).len(), 1);
    assert_eq!(texts(r"\p{Han}+", true, u.clone(), true).len(), 2);
    assert_eq!(texts("e\u{301}", false, u, true).len(), 1);
}

#[test]
fn test_failures_and_tracebacks() {
    assert_eq!(
        texts(
            r"^test .* FAILED$",
            true,
            read("cargo-test-failures.txt"),
            true
        )
        .len(),
        3
    );
    let tb = texts(r"^\w+Error: ", true, read("python-traceback.txt"), true);
    assert_eq!(tb.len(), 2, "{tb:?}");
}
