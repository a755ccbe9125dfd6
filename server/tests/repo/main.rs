//! Integration tests that need no tmux: the repository's own rules
//! (documents, architecture, schemas, fuzz seed corpora).
//!
//! One test binary per group, since each links the whole crate:
//! `cargo test -p panescan --test repo FILE::TEST`. Where a new test file
//! goes: CONTRIBUTING.md, "Tests".

#[path = "../common/mod.rs"]
mod common;

mod architecture;
mod harden_fuzz_corpus;
mod harden_fuzz_parsers;
mod readme_commands;
mod readme_tools;
mod repo_paths;
mod schema_portability;
mod test_layout;
