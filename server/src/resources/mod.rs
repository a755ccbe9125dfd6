//! tmux as MCP resources: what `resources/list`, `resources/templates/list`
//! and `resources/read` answer, and what tells a subscriber that a resource
//! changed. The protocol side (`mcp/`) calls in; nothing here knows
//! JSON-RPC.
//!
//! - [`uri`] — the `tmux://` URIs and templates, parsed strictly.
//! - [`read`] — listing (paginated) and reading, through the same
//!   functions as the inspect and capture tools.
//! - [`watch`] — which subscribed URIs changed: tmux's event stream for the
//!   panes it covers, an inventory poll for the rest and for structure.
//!
//! A read returns what the matching tool returns: `tmux://session/{id}` is
//! get_session_info's result, `tmux://pane/{n}/screen` (pane `%n`) capture_pane's text,
//! with the same id checks, ceilings and pane cache.

pub(crate) mod read;
pub(crate) mod uri;
pub(crate) mod watch;

use crate::tools::context::{ErrorKind, ToolError};

/// What kind of failure a resource request met; the protocol side picks
/// the JSON-RPC code from it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ResourceErrorKind {
    /// The URI or a parameter is not well formed.
    Malformed,
    /// The URI is well formed but names nothing that exists now.
    NotFound,
    /// tmux failed or panescan did (timeouts, no server).
    Failed,
}

/// A resource request that failed, with a sentence naming what exists.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceError {
    /// What kind of failure.
    pub kind: ResourceErrorKind,
    /// What failed and what to ask for instead.
    pub message: String,
}

impl ResourceError {
    /// A malformed URI or parameter.
    pub fn malformed(message: impl Into<String>) -> Self {
        ResourceError {
            kind: ResourceErrorKind::Malformed,
            message: message.into(),
        }
    }
}

impl From<ToolError> for ResourceError {
    fn from(e: ToolError) -> Self {
        let kind = match e.kind {
            ErrorKind::NotFound => ResourceErrorKind::NotFound,
            ErrorKind::InvalidArgument | ErrorKind::OverCeiling => ResourceErrorKind::Malformed,
            _ => ResourceErrorKind::Failed,
        };
        ResourceError {
            kind,
            message: e.message,
        }
    }
}
