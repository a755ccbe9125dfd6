//! Integration tests that run `panescan serve` (stdio) or the command line
//! against a private tmux server: the tools, protocol, resources, policy.
//!
//! One test binary per group, since each links the whole crate:
//! `cargo test -p panescan --test serve FILE::TEST`. Where a new test file
//! goes: CONTRIBUTING.md, "Tests".

#[path = "../common/mod.rs"]
mod common;

mod cli;
mod cli_setup;
mod run_command;
mod run_command_shells;
mod run_table;
mod serve_arenas;
mod serve_buffers;
mod serve_control;
mod serve_layout;
mod serve_policy;
mod serve_protocol;
mod serve_redact;
mod serve_resources;
mod serve_search;
mod serve_since;
mod serve_strict;
mod serve_tiers;
mod serve_tools;
mod serve_watch;
mod tmux_next;
mod tool_errors;
mod wait_events;
