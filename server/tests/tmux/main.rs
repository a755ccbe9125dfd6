//! Integration tests that drive the library against a private tmux server
//! (transport, capture, listing, pane cache, events), most without
//! `panescan serve`.
//!
//! One test binary per group, since each links the whole crate:
//! `cargo test -p panescan --test tmux FILE::TEST`. Where a new test file
//! goes: CONTRIBUTING.md, "Tests".

#[path = "../common/mod.rs"]
mod common;

mod cache_unseen_changes;
mod capture_anchor;
mod capture_counted;
mod events_triggers;
mod fixture;
mod full_listing;
mod pane_cache;
mod private_server;
mod procfs_details;
mod search_ahead;
mod search_panes;
mod tmux_transport;
mod warm_commands;
