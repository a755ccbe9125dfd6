//! Integration tests that attack panescan (server/tests/HARDENING.md):
//! hostile panes, clients, sockets, tmux faults; two also start an sshd.
//!
//! One test binary per group, since each links the whole crate:
//! `cargo test -p panescan --test harden FILE::TEST`. Where a new test file
//! goes: CONTRIBUTING.md, "Tests".

#[path = "../common/mod.rs"]
mod common;

mod harden_client_input;
mod harden_formats;
mod harden_injection;
mod harden_injection_buffers;
mod harden_injection_control;
mod harden_injection_group;
mod harden_injection_layout;
mod harden_injection_policy;
mod harden_injection_resources;
mod harden_injection_run;
mod harden_injection_since_watch;
mod harden_load;
mod harden_pane_content;
mod harden_response_ceiling;
mod harden_sockets;
mod harden_subscriber;
mod harden_surface_faults;
mod harden_tiers;
mod harden_tmux_faults;
mod harden_user_tmux;
mod harden_wait_deadlines;
