//! Support code for panescan's criterion benches (see `benches/`).

use std::path::PathBuf;

/// The visible text of the repository's corpus (`corpus/*.txt`, `*.ansi`,
/// in name order), escapes stripped as the engine strips them so a
/// baseline sees the same lines; each file ends with a newline and is
/// followed by `after_each`.
///
/// # Panics
/// When the corpus cannot be read (a bench without its input).
#[allow(clippy::unwrap_used)]
pub fn corpus_text(after_each: &[u8]) -> Vec<u8> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../corpus");
    let mut names: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "txt" || e == "ansi"))
        .collect();
    names.sort();
    let mut text = Vec::new();
    for name in names {
        let bytes = std::fs::read(name).unwrap();
        text.extend_from_slice(&panescan_engine::strip_escapes(&bytes));
        if text.last() != Some(&b'\n') {
            text.push(b'\n');
        }
        text.extend_from_slice(after_each);
    }
    text
}

/// One engine bench case: what is searched for, and how.
#[derive(Debug)]
pub struct Case {
    /// The row name.
    pub name: &'static str,
    /// The patterns, searched for at once.
    pub patterns: &'static [&'static str],
    /// Patterns are regexes (else literals).
    pub regex: bool,
    /// Case-sensitive matching.
    pub match_case: bool,
}

/// The cases the engine bench (`benches/engine.rs`, beside ripgrep) and
/// `examples/engine_cpu.rs` time, in their order.
pub const ENGINE_CASES: &[Case] = &[
    Case {
        name: "rare-literal",
        patterns: &["ParseIntError"],
        regex: false,
        match_case: true,
    },
    Case {
        name: "case-insensitive-literal",
        patterns: &["filenotfounderror"],
        regex: false,
        match_case: false,
    },
    Case {
        name: "common-word",
        patterns: &["error"],
        regex: false,
        match_case: false,
    },
    Case {
        name: "10-literals",
        patterns: &[
            "panicked",
            "FAILED",
            "Traceback",
            "RuntimeError",
            "mismatched",
            "warning",
            "kworker",
            "Compiling",
            "ParseIntError",
            "zombie",
        ],
        regex: false,
        match_case: false,
    },
    Case {
        name: "simple-regex",
        patterns: &[r"error\[E\d+\]"],
        regex: true,
        match_case: true,
    },
    Case {
        name: "complex-regex",
        patterns: &[r"(?:warn|error|fail)\w*:\s+\w+"],
        regex: true,
        match_case: false,
    },
];
