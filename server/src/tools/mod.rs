//! One module per tool family. Each tool turns validated arguments into a
//! structured result; [`all`] is the registry's table of every tool.

pub mod context;

use crate::mcp::registry::ToolEntry;

/// Every tool panescan has, in the order `tools/list` shows them. The
/// registry keeps those of the configured tier.
pub fn all() -> Vec<ToolEntry> {
    vec![]
}

/// Closes every tmux connection the tools opened (at shutdown), so no
/// control client stays attached.
pub fn shutdown_connections() {}
