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

pub(crate) mod dispatch;
#[cfg(test)]
mod golden;
pub(crate) mod jsonrpc;
pub(crate) mod listing;
pub(crate) mod peer;
pub(crate) mod protocol;
pub(crate) mod resources;
pub(crate) mod response;
pub(crate) mod server;
pub(crate) mod session;
