//! Integration tests that start an sshd of their own and reach tmux through
//! ssh.
//!
//! One test binary per group, since each links the whole crate:
//! `cargo test -p panescan --test ssh FILE::TEST`. Where a new test file
//! goes: CONTRIBUTING.md, "Tests".

#[path = "../common/mod.rs"]
mod common;

mod daemon_ssh;
mod harden_injection_ssh;
mod harden_ssh_faults;
mod serve_ssh;
mod serve_ssh_fleet;
