//! The MCP front end: JSON-RPC 2.0 over stdio, both protocol eras, and the
//! tools of [`crate::tools::registry`] as the protocol shows them.
//!
//! - [`jsonrpc`] — framing, ids, error codes.
//! - [`protocol`] — eras, `initialize` / `server/discover`, capabilities.
//! - [`dispatch`] — concurrency, cancellation, progress.
//! - [`listing`] — a registry row as a `tools/list` entry.
//! - [`peer`] — the client: name, capabilities, our requests to it.
//! - [`resources`] — resources, subscriptions (both eras) and prompts.
//! - [`response`] — answer lines, measured as written, within the ceiling.
//! - [`session`] — one session over any reader and writer, and its end.
//! - [`server`] — `serve --no-daemon`: one session on stdio, signals.

pub mod dispatch;
#[cfg(test)]
mod golden;
pub mod jsonrpc;
pub mod listing;
pub mod peer;
pub mod protocol;
pub mod resources;
pub mod response;
pub mod server;
pub mod session;
