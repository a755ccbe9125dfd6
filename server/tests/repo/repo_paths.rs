//! Nothing in the repository may depend on files outside it: a person who
//! clones panescan has only the clone. So no tracked file names a sibling
//! folder or an absolute path of the machine it was written on, and none
//! is what a merge that went wrong leaves behind.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::TempDir;

/// Spellings of paths outside the repository. Built at run time so that
/// this file does not name them itself.
fn outside_paths() -> Vec<String> {
    vec![["..", "/", "shared"].concat(), ["/", "work", "/"].concat()]
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default()
}

/// The tracked files (git), or every file outside build output when the
/// source is not a git checkout (a tarball).
fn files(root: &Path) -> Vec<PathBuf> {
    let listed = Command::new("git")
        .arg("-C")
        .arg(root)
        .args(["ls-files", "-z"])
        .output();
    if let Ok(out) = listed {
        if out.status.success() && !out.stdout.is_empty() {
            return out
                .stdout
                .split(|b| *b == 0)
                .filter(|p| !p.is_empty())
                .map(|p| root.join(String::from_utf8_lossy(p).as_ref()))
                .collect();
        }
    }
    let mut found = Vec::new();
    let mut dirs = vec![root.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let name = entry.file_name();
            if ["target", ".git", "node_modules"]
                .iter()
                .any(|n| name == *n)
            {
                continue;
            }
            if path.is_dir() {
                dirs.push(path);
            } else {
                found.push(path);
            }
        }
    }
    found
}

fn offenders(files: &[PathBuf], needles: &[String]) -> Vec<String> {
    let mut hits = Vec::new();
    for file in files {
        let Ok(bytes) = std::fs::read(file) else {
            continue;
        };
        let text = String::from_utf8_lossy(&bytes);
        for (n, line) in text.lines().enumerate() {
            if let Some(needle) = needles.iter().find(|s| line.contains(s.as_str())) {
                hits.push(format!("{}:{}: names {needle}", file.display(), n + 1));
            }
        }
    }
    hits
}

#[test]
fn no_tracked_file_names_a_path_outside_the_repository() {
    let root = root();
    let files = files(&root);
    assert!(
        files.iter().any(|f| f.ends_with("README.md")) && files.len() > 50,
        "found only {} files under {}",
        files.len(),
        root.display()
    );
    let hits = offenders(&files, &outside_paths());
    assert!(hits.is_empty(), "{}", hits.join("\n"));
}

#[test]
fn the_scan_finds_such_a_path() {
    let dir = TempDir::new("repo-paths");
    let file = dir.0.join("README.md");
    let text = format!("run `{}interop/setup.sh` first\n", outside_paths()[0]);
    std::fs::write(&file, text).unwrap();
    let hits = offenders(std::slice::from_ref(&file), &outside_paths());
    assert_eq!(hits.len(), 1, "{hits:?}");
}

/// What a merge or a patch leaves behind when it goes wrong: `.orig` and
/// `.rej` copies, and conflict markers at a line's start.
fn merge_leftovers(files: &[PathBuf]) -> Vec<String> {
    let mut hits = Vec::new();
    let markers = [["<<<<<<", "< "].concat(), [">>>>>>", "> "].concat()];
    for file in files {
        let name = file.to_string_lossy();
        if name.ends_with(".orig") || name.ends_with(".rej") {
            hits.push(format!("{name}: a merge or patch leftover"));
            continue;
        }
        let Ok(bytes) = std::fs::read(file) else {
            continue;
        };
        for (n, line) in String::from_utf8_lossy(&bytes).lines().enumerate() {
            if markers.iter().any(|m| line.starts_with(m.as_str())) {
                hits.push(format!("{name}:{}: a conflict marker", n + 1));
            }
        }
    }
    hits
}

#[test]
fn no_tracked_file_is_a_merge_leftover() {
    let hits = merge_leftovers(&files(&root()));
    assert!(hits.is_empty(), "{}", hits.join("\n"));
}

#[test]
fn the_scan_finds_merge_leftovers() {
    let dir = TempDir::new("repo-leftovers");
    let copy = dir.0.join("GUIDE.md.orig");
    std::fs::write(&copy, "text\n").unwrap();
    let marked = dir.0.join("lib.rs");
    let text = format!("fn a() {{}}\n{}HEAD\n", ["<<<<<<", "< "].concat());
    std::fs::write(&marked, text).unwrap();
    let hits = merge_leftovers(&[copy, marked]);
    assert_eq!(hits.len(), 2, "{hits:?}");
}
