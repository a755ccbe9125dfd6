//! What every tool call gets: the operator's configuration, the pane
//! cache, a cancel flag, a progress sink, and the way to reach a tmux
//! server.

use std::fmt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::cache::PaneCache;
use crate::config::{Ceilings, ServeConfig, Tier};
use crate::tmux::ServerSpec;
use crate::tools::registry::Registry;

/// How far past a wait's end (its `timeout_ms`) the wait's reads of tmux
/// may run: the capture that reads what woke it just before its end, and
/// the listing (and typing) a short wait needs before it can begin. An
/// idle tmux answers those in milliseconds; a stopped one costs the wait
/// this much more, not the whole round-trip deadline.
pub const WAIT_GRACE: Duration = Duration::from_millis(500);

/// The arguments every tool takes to pick a tmux server.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
pub struct ServerArgs {
    // Short: these three are in every tool's schema, and tools/list must
    // stay small.
    /// tmux -L name
    #[serde(default)]
    pub socket_name: Option<String>,
    /// tmux -S path
    #[serde(default)]
    pub socket_path: Option<PathBuf>,
    // Listed only when the operator configured ssh hosts
    // (`Registry::for_config`).
    /// ssh host (serve --ssh) or local
    #[serde(default)]
    pub host: Option<String>,
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
    /// A sink that reports each step to `f` (progress, total, message).
    pub fn new(f: impl Fn(f64, Option<f64>, Option<&str>) + Send + Sync + 'static) -> Self {
        ProgressSink {
            inner: Some(Arc::new(f)),
        }
    }

    /// A sink that drops everything.
    pub fn none() -> Self {
        ProgressSink { inner: None }
    }

    /// A sink that reports nothing (the client asked for no progress).
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

/// What kind of failure a [`ToolError`] is: what a caller (the batch tool,
/// a client) can branch on without reading the sentence.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ErrorKind {
    /// An argument is malformed, out of its range, or contradicts another.
    InvalidArgument,
    /// A pane, window, session or target the call names does not exist.
    NotFound,
    /// The call asked for more than an operator ceiling allows.
    OverCeiling,
    /// tmux, or the call's own time budget, ran out of time.
    TimedOut,
    /// No tmux server answers, or the connection to it was lost.
    TmuxUnavailable,
    /// panescan will not do it (a socket outside the allowed places, a
    /// format whose cost is not bounded, killing its own pane).
    Refused,
    /// The call was cancelled.
    Cancelled,
    /// panescan failed on its own side (a thread that could not start, a
    /// result it could not encode).
    Internal,
}

/// A tool failure the model can act on: becomes a result with
/// `isError: true` and this sentence; [`ErrorKind`] says what kind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolError {
    /// What kind of failure.
    pub kind: ErrorKind,
    /// The sentence the caller reads: what failed and what to do instead.
    pub message: String,
}

impl ToolError {
    /// A failure of `kind`.
    pub fn of(kind: ErrorKind, message: impl Into<String>) -> Self {
        ToolError {
            kind,
            message: message.into(),
        }
    }

    /// An argument the caller got wrong (kind `invalid_argument`): the
    /// usual tool error.
    pub fn invalid(message: impl Into<String>) -> Self {
        ToolError::of(ErrorKind::InvalidArgument, message)
    }

    /// Something the call names does not exist.
    pub fn not_found(message: impl Into<String>) -> Self {
        ToolError::of(ErrorKind::NotFound, message)
    }

    /// The call asked for more than an operator ceiling allows.
    pub fn over_ceiling(message: impl Into<String>) -> Self {
        ToolError::of(ErrorKind::OverCeiling, message)
    }

    /// Time ran out.
    pub fn timed_out(message: impl Into<String>) -> Self {
        ToolError::of(ErrorKind::TimedOut, message)
    }

    /// panescan will not do what was asked.
    pub fn refused(message: impl Into<String>) -> Self {
        ToolError::of(ErrorKind::Refused, message)
    }

    /// panescan failed on its own side.
    pub fn internal(message: impl Into<String>) -> Self {
        ToolError::of(ErrorKind::Internal, message)
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
    /// The operator's settings: tier, ceilings, cache size, default server.
    pub config: Arc<ServeConfig>,
    /// Pane text kept between calls, shared by every call of a server
    /// (`None`: every call captures everything it reads).
    pub pane_cache: Option<Arc<PaneCache>>,
    /// The registry of this server's tier (the batch tool calls through it).
    pub registry: Arc<Registry>,
    /// Set by `notifications/cancelled` (and at shutdown): stop soon.
    pub cancel: Arc<AtomicBool>,
    /// Reports progress when the client gave a progress token.
    pub progress: ProgressSink,
    /// When the call started.
    pub started: Instant,
    /// Bytes the result may take in its response (structured content plus
    /// text, as encoded JSON): the response ceiling less the rest of the
    /// line, which the front end measures per request (the echoed id
    /// counts). In-process callers have no line around the result.
    pub response_room: usize,
    /// The MCP session the call belongs to (0: a process's only one): what
    /// a session started (run_command's commands) is its own, and ends
    /// with it.
    pub session: u64,
}

impl ToolContext {
    /// The context of a server: its pane cache is made here, of the size
    /// `config` says, and shared by every context made from this one
    /// ([`Self::child`]).
    pub fn new(config: Arc<ServeConfig>, registry: Arc<Registry>) -> Self {
        let pane_cache = config
            .cache_bytes
            .map(|bytes| Arc::new(PaneCache::new(bytes)));
        ToolContext::new_shared(config, registry, pane_cache)
    }

    /// The context of one session of several: `pane_cache` is the one
    /// every session shares (a daemon's), whatever size `config` names.
    pub fn new_shared(
        config: Arc<ServeConfig>,
        registry: Arc<Registry>,
        pane_cache: Option<Arc<PaneCache>>,
    ) -> Self {
        ToolContext {
            pane_cache,
            registry,
            cancel: Arc::new(AtomicBool::new(false)),
            progress: ProgressSink::none(),
            started: Instant::now(),
            response_room: config.ceilings.response_bytes,
            session: 0,
            config,
        }
    }

    /// A context for calling read-tier tools in-process on `server`, with
    /// `ceilings` and a pane cache of the default size: what the command
    /// line, the benches and tests use where `serve` makes one per request.
    pub fn read_only(server: ServerSpec, ceilings: Ceilings) -> Self {
        let config = ServeConfig {
            server,
            tier: Tier::Readonly,
            ceilings,
            ..ServeConfig::default()
        };
        ToolContext::new(
            Arc::new(config),
            Arc::new(Registry::for_tier(Tier::Readonly)),
        )
    }

    /// This context with another pane cache (`None`: none at all).
    pub fn with_pane_cache(mut self, pane_cache: Option<Arc<PaneCache>>) -> Self {
        self.pane_cache = pane_cache;
        self
    }

    /// Replaces the secrets in `text` with `[REDACTED:KIND]` unless the
    /// operator turned redaction off (`--no-redact`); returns how many were
    /// replaced. Every tool that returns pane text passes it through here
    /// once, after matching, and reports the count as `redactions`.
    pub fn redact(&self, text: &mut String) -> u64 {
        if !self.config.redact {
            return 0;
        }
        let (redacted, count) = panescan_engine::redact(text);
        if let std::borrow::Cow::Owned(redacted) = redacted {
            *text = redacted;
        }
        count as u64
    }

    /// What one call may ask for.
    pub fn ceilings(&self) -> &Ceilings {
        &self.config.ceilings
    }

    /// Whether the call was cancelled: long loops check this between steps.
    pub fn is_cancelled(&self) -> bool {
        self.cancel.load(Ordering::Relaxed)
    }

    /// An error when the call was cancelled (its result will not be sent).
    pub fn check_cancelled(&self) -> Result<(), ToolError> {
        if self.is_cancelled() {
            Err(ToolError::of(ErrorKind::Cancelled, "cancelled"))
        } else {
            Ok(())
        }
    }

    /// The deadline for one tmux round trip started now.
    pub fn tmux_deadline(&self) -> Instant {
        Instant::now() + self.config.ceilings.tmux_timeout
    }

    /// The deadline for one tmux round trip, started now, of a wait that
    /// ends at `end`: the earlier of the two, so tmux standing still holds
    /// the wait no longer than its own time.
    pub fn tmux_deadline_by(&self, end: Instant) -> Instant {
        self.tmux_deadline().min(end)
    }

    /// A context for one operation of a batch, or for one call of a
    /// server: same configuration, cache and cancel flag (a server's call
    /// gets its own), no progress of its own, started now.
    pub fn child(&self) -> ToolContext {
        ToolContext {
            config: self.config.clone(),
            pane_cache: self.pane_cache.clone(),
            registry: self.registry.clone(),
            cancel: self.cancel.clone(),
            progress: ProgressSink::none(),
            started: Instant::now(),
            response_room: self.response_room,
            session: self.session,
        }
    }
}
