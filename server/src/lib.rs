//! panescan: an MCP server for tmux whose reason to exist is `search_panes`.
//!
//! The flow of a search, from the top: [`tools`] resolves the scope and asks
//! [`tmux`] for captures, hands them to [`panescan_engine`] to scan, and
//! shapes the result; [`mcp`] carries requests and results over JSON-RPC on
//! stdio; [`cli`] is the command line for people. [`resources`] shows tmux
//! as MCP resources (read through the same tools, watched for changes) and
//! [`prompts`] holds the prompts. [`testbed`] is what the demo, the
//! benches, the tests and the fuzz targets build on; `serve` never uses it.

#![warn(missing_docs)]

pub mod cache;
pub mod cli;
pub mod config;
pub mod daemon;
pub mod http;
pub mod journal;
pub mod mcp;
pub mod prompts;
pub mod resources;
pub(crate) mod sync;
pub mod testbed;
#[doc(hidden)]
pub mod testing;
pub mod tmux;
pub mod tools;
pub mod trust;
