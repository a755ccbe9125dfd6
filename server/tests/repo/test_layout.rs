//! The integration tests' layout (CONTRIBUTING.md, "Tests"): each folder
//! of `server/tests/` is one test binary, and every file in it is declared
//! in its `main.rs` (a file no `mod` names is never built, so its tests
//! would pass unrun); a loose `server/tests/*.rs` is a binary of its own
//! that links the whole crate again, so only the tests that need a process
//! to themselves are one.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};

/// The groups, as CONTRIBUTING.md lists them.
const GROUPS: [&str; 6] = ["daemon", "harden", "repo", "serve", "ssh", "tmux"];

/// Loose files that stay test binaries of their own: the soak measures
/// memory under a minute of churn and runs alone; capture_control sets
/// the process's tmux program (a wrapper that logs every tmux run) and
/// counts the sweeps every test in its process starts.
const LOOSE: [&str; 2] = ["capture_control.rs", "soak.rs"];

fn tests_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests")
}

/// The names of the `.rs` files directly in `dir`, sorted.
fn rs_files(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|entry| {
            let entry = entry.ok()?;
            let name = entry.file_name().into_string().ok()?;
            (entry.file_type().ok()?.is_file() && name.ends_with(".rs")).then_some(name)
        })
        .collect();
    names.sort();
    names
}

#[test]
fn every_file_of_a_group_is_built() {
    for group in GROUPS {
        let dir = tests_dir().join(group);
        let main = std::fs::read_to_string(dir.join("main.rs")).unwrap();
        let files = rs_files(&dir);
        assert!(files.len() > 2, "server/tests/{group}/ holds {files:?}");
        for file in files.iter().filter(|f| *f != "main.rs") {
            let module = file.trim_end_matches(".rs");
            assert!(
                main.lines().any(|l| l.trim() == format!("mod {module};")),
                "server/tests/{group}/{file} is never built: add `mod {module};` to server/tests/{group}/main.rs"
            );
        }
    }
}

#[test]
fn the_test_binaries_are_the_groups_and_the_loose_few() {
    let mut groups: Vec<String> = std::fs::read_dir(tests_dir())
        .unwrap()
        .filter_map(|entry| {
            let entry = entry.ok()?;
            entry
                .path()
                .join("main.rs")
                .is_file()
                .then(|| entry.file_name().into_string().ok())?
        })
        .collect();
    groups.sort();
    assert_eq!(
        groups, GROUPS,
        "a new group is listed here and in CONTRIBUTING.md"
    );
    for file in rs_files(&tests_dir()) {
        assert!(
            LOOSE.contains(&file.as_str()),
            "server/tests/{file} is a test binary of its own: move it into the group of what it needs \
             (CONTRIBUTING.md, \"Tests\"): `git mv server/tests/{file} server/tests/GROUP/`, \
             `mod common;` becomes `use crate::common;`, and `mod NAME;` goes into server/tests/GROUP/main.rs"
        );
    }
}
