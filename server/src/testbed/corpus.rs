//! Real terminal output, embedded in the binary so `panescan demo` and
//! `panescan bench` need nothing but tmux.
//!
//! The files live in `corpus/` at the top of the repository, recorded from
//! real programs by `corpus/regenerate.sh`. The `.ansi` files keep their
//! escape sequences (colours, cursor movement of TUIs); the fixture keeps
//! their colours and drops cursor movement before printing them in a pane.

/// The corpus files: (file name, text).
const FILES: &[(&str, &str)] = &[
    (
        "cargo-build-errors.ansi",
        include_str!("../../../corpus/cargo-build-errors.ansi"),
    ),
    (
        "cargo-build-errors.txt",
        include_str!("../../../corpus/cargo-build-errors.txt"),
    ),
    (
        "cargo-test-failures.txt",
        include_str!("../../../corpus/cargo-test-failures.txt"),
    ),
    ("git-log.txt", include_str!("../../../corpus/git-log.txt")),
    ("ps.txt", include_str!("../../../corpus/ps.txt")),
    (
        "python-traceback.txt",
        include_str!("../../../corpus/python-traceback.txt"),
    ),
    (
        "tmux-less-escapes.ansi",
        include_str!("../../../corpus/tmux-less-escapes.ansi"),
    ),
    (
        "tmux-top-escapes.ansi",
        include_str!("../../../corpus/tmux-top-escapes.ansi"),
    ),
    (
        "tmux-unicode.ansi",
        include_str!("../../../corpus/tmux-unicode.ansi"),
    ),
    (
        "tmux-unicode.txt",
        include_str!("../../../corpus/tmux-unicode.txt"),
    ),
    (
        "top-batch.txt",
        include_str!("../../../corpus/top-batch.txt"),
    ),
];

/// The corpus texts, in a fixed order.
pub fn sources() -> Vec<&'static str> {
    FILES.iter().map(|(_, text)| *text).collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_corpus_file_is_embedded() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../corpus");
        let mut on_disk: Vec<String> = std::fs::read_dir(dir)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".txt") || n.ends_with(".ansi"))
            .collect();
        on_disk.sort();
        let embedded: Vec<String> = super::FILES.iter().map(|(n, _)| (*n).to_owned()).collect();
        assert_eq!(on_disk, embedded, "corpus/ and the embedded list differ");
    }
}
