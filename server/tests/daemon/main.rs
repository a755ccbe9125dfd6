//! Integration tests that run `panescan daemon`: sessions shared through
//! its socket, serve --http, the journal.
//!
//! One test binary per group, since each links the whole crate:
//! `cargo test -p panescan --test daemon FILE::TEST`. Where a new test file
//! goes: CONTRIBUTING.md, "Tests".

#[path = "../common/mod.rs"]
mod common;

mod daemon;
mod journal;
mod journal_faults;
mod journal_property;
mod journal_search;
mod journal_servers;
mod ledger;
mod ledger_tmux_next;
mod serve_http;
mod serve_own_pane;
