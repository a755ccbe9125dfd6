//! What every tool call gets: the operator's configuration, a cancel flag,
//! a progress sink, and the way to reach a tmux server.

use std::fmt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use schemars::JsonSchema;
use serde::Deserialize;

use crate::tmux::reach::SocketPolicy;
use crate::tmux::ServerSpec;
use crate::tools::registry::{Registry, Tier};

/// Ceilings the operator sets for every call. Callers may ask for less,
/// never for more.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Bytes of pane text one capture may return.
    pub capture_bytes: usize,
    /// Lines one capture may return.
    pub capture_lines: usize,
    /// Lines a capture returns when the caller does not say.
    pub capture_default_lines: usize,
    /// Rows a list tool returns.
    pub list_rows: usize,
    /// One line `serve` writes (a whole JSON-RPC response, as encoded).
    pub response_bytes: usize,
    /// `wait_for_text`: default and ceiling.
    pub wait_default: Duration,
    pub wait_max: Duration,
    /// Time any one tmux round trip may take.
    pub tmux_timeout: Duration,
    /// `search_panes`: defaults and ceilings of its budgets.
    pub search: super::search::SearchLimits,
    /// Pane text kept between calls (`None`: `--no-cache`, every call
    /// captures everything it reads).
    pub pane_cache: Option<Arc<crate::cache::PaneCache>>,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            capture_bytes: 256 * 1024,
            capture_lines: 10_000,
            capture_default_lines: 200,
            list_rows: 500,
            response_bytes: 1_000_000,
            wait_default: Duration::from_secs(8),
            wait_max: Duration::from_secs(120),
            tmux_timeout: Duration::from_secs(10),
            search: super::search::SearchLimits::default(),
            pane_cache: Some(Arc::new(crate::cache::PaneCache::new(
                crate::cache::DEFAULT_MAX_BYTES,
            ))),
        }
    }
}

/// `panescan serve`'s configuration.
#[derive(Debug, Clone, Default)]
pub struct ServeConfig {
    /// The tmux server used when a call names none (`--socket-name` /
    /// `--socket-path`; both unset: the one `tmux` itself would use).
    pub server: ServerSpec,
    pub tier: Tier,
    pub limits: Limits,
    /// Where a socket named by a tool argument may be (`--allow-socket-dir`).
    pub sockets: SocketPolicy,
}

/// The arguments every tool takes to pick a tmux server.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
pub struct ServerArgs {
    /// tmux -L socket name (default: panescan's server).
    #[serde(default)]
    pub socket_name: Option<String>,
    /// tmux -S socket path.
    #[serde(default)]
    pub socket_path: Option<PathBuf>,
}

/// `(progress, total, message)`.
type ProgressFn = dyn Fn(f64, Option<f64>, Option<&str>) + Send + Sync;

/// Reports progress of a long call; a no-op when the client asked for none.
#[derive(Clone, Default)]
pub struct ProgressSink {
    inner: Option<Arc<ProgressFn>>,
}

impl fmt::Debug for ProgressSink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProgressSink")
            .field("active", &self.inner.is_some())
            .finish()
    }
}

impl ProgressSink {
    pub fn new(f: impl Fn(f64, Option<f64>, Option<&str>) + Send + Sync + 'static) -> Self {
        ProgressSink {
            inner: Some(Arc::new(f)),
        }
    }

    /// A sink that drops everything.
    pub fn none() -> Self {
        ProgressSink { inner: None }
    }

    pub fn is_active(&self) -> bool {
        self.inner.is_some()
    }

    /// `progress` must grow from one report to the next; the sink drops
    /// reports that do not (the protocol requires strictly increasing).
    pub fn report(&self, progress: f64, total: Option<f64>, message: Option<&str>) {
        if let Some(f) = &self.inner {
            f(progress, total, message);
        }
    }
}

/// A tool failure the model can act on: becomes a result with
/// `isError: true` and this sentence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolError {
    pub message: String,
}

impl ToolError {
    pub fn new(message: impl Into<String>) -> Self {
        ToolError {
            message: message.into(),
        }
    }
}

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ToolError {}

/// Everything a tool call may use.
#[derive(Debug, Clone)]
pub struct ToolContext {
    pub config: Arc<ServeConfig>,
    /// The registry of this server's tier (the batch tool calls through it).
    pub registry: Arc<Registry>,
    /// Set by `notifications/cancelled` (and at shutdown): stop soon.
    pub cancel: Arc<AtomicBool>,
    pub progress: ProgressSink,
    /// When the call started.
    pub started: Instant,
    /// Bytes the result may take in its response (structured content plus
    /// text, as encoded JSON): the response ceiling less the rest of the
    /// line, which the front end measures per request (the echoed id
    /// counts). In-process callers have no line around the result.
    pub response_room: usize,
}

impl ToolContext {
    pub fn new(config: Arc<ServeConfig>, registry: Arc<Registry>) -> Self {
        ToolContext {
            registry,
            cancel: Arc::new(AtomicBool::new(false)),
            progress: ProgressSink::none(),
            started: Instant::now(),
            response_room: config.limits.response_bytes,
            config,
        }
    }

    /// A context for calling read-tier tools in-process on `server`, with
    /// `limits`: what the command line, the benches and tests use where
    /// `serve` builds one per request.
    pub fn read_only(server: ServerSpec, limits: Limits) -> Self {
        let config = ServeConfig {
            server,
            tier: Tier::Readonly,
            limits,
            sockets: SocketPolicy::default(),
        };
        ToolContext::new(
            Arc::new(config),
            Arc::new(Registry::for_tier(Tier::Readonly)),
        )
    }

    pub fn limits(&self) -> &Limits {
        &self.config.limits
    }

    pub fn is_cancelled(&self) -> bool {
        self.cancel.load(Ordering::Relaxed)
    }

    /// An error when the call was cancelled (its result will not be sent).
    pub fn check_cancelled(&self) -> Result<(), ToolError> {
        if self.is_cancelled() {
            Err(ToolError::new("cancelled"))
        } else {
            Ok(())
        }
    }

    /// The deadline for one tmux round trip started now.
    pub fn tmux_deadline(&self) -> Instant {
        Instant::now() + self.config.limits.tmux_timeout
    }

    /// A context for one operation of a batch: same cancel flag, no
    /// progress of its own.
    pub fn child(&self) -> ToolContext {
        ToolContext {
            config: self.config.clone(),
            registry: self.registry.clone(),
            cancel: self.cancel.clone(),
            progress: ProgressSink::none(),
            started: Instant::now(),
            response_room: self.response_room,
        }
    }
}
