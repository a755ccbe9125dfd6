//! panescan: an MCP server for tmux whose reason to exist is `search_panes`.
//!
//! The flow of a search, from the top: [`tools`] resolves the scope and asks
//! [`tmux`] for captures, hands them to [`panescan_engine`] to scan, and
//! shapes the result; [`mcp`] carries requests and results over JSON-RPC on
//! stdio; [`cli`] is the command line for people. [`resources`] shows tmux
//! as MCP resources (read through the same tools, watched for changes) and
//! [`prompts`] holds the prompts. [`testbed`] is what the demo, the
//! benches, the tests and the fuzz targets build on; `serve` never uses it.
//!
//! The library is the binary's body: its one public item is [`main`], the
//! command line. Every room is private to the crate, so the compiler
//! reports what nothing uses. The integration tests, the benches, the
//! example and the fuzz targets reach inside through `testing`, hidden
//! from these docs: a chosen list of items, kept at the path each lives at
//! (`panescan::testing::tmux::Tmux`), and the testbed's modules.

#![warn(missing_docs)]
// These pages are read with `--document-private-items` (CI, CONTRIBUTING.md):
// the rooms they link to are private on purpose.
#![allow(rustdoc::private_intra_doc_links)]

mod cache;
mod cli;
mod config;
mod daemon;
mod http;
mod journal;
mod mcp;
mod prompts;
mod resources;
mod sync;
mod testbed;
#[doc(hidden)]
pub mod testing;
mod tmux;
mod tools;
mod trust;

pub use cli::main;
