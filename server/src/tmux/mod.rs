//! The tmux transport: everything panescan asks a tmux server, and how.

pub mod private_server;
