//! The MCP front end: JSON-RPC 2.0 over stdio, both protocol eras, the tool
//! registry.
//!
//! - [`jsonrpc`] — framing, ids, error codes.
//! - [`protocol`] — eras, `initialize` / `server/discover`, capabilities.
//! - [`dispatch`] — concurrency, cancellation, progress.
//! - [`registry`] — the one table of tools.
//! - [`response`] — answer lines, measured as written, within the ceiling.
//! - [`schema`] — schemas from Rust types, inlined.
//! - [`server`] — the stdio loop and shutdown.

pub mod dispatch;
pub mod jsonrpc;
pub mod protocol;
pub mod registry;
pub mod response;
pub mod schema;
pub mod server;
