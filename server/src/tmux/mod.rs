//! The tmux transport: everything panescan asks a tmux server, and how.
//!
//! (Module overview, choices and measurements: see the end of this file's
//! docs once the implementation lands.)

pub mod caller;
pub mod capture;
pub mod command;
pub mod connection;
pub mod framing;
pub mod ids;
pub mod inventory;
pub mod oneshot;
pub mod private_server;

use std::fmt;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Instant;

pub use capture::{CaptureOptions, CaptureRange, CaptureReply, CaptureRequest, CapturedText};
pub use command::TmuxCommand;
pub use ids::{PaneId, SessionId, Target, WindowId};
pub use inventory::{Inventory, Pane, PanePlacement, Session, Window, WindowPlacement};

/// Which tmux server to talk to.
///
/// Both `None`: the server the `tmux` command itself would use — the socket
/// in `$TMUX` if set, else `$TMUX_TMPDIR` (or `/tmp`) `/tmux-UID/default`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct ServerSpec {
    /// `tmux -L NAME`.
    pub socket_name: Option<String>,
    /// `tmux -S PATH` (wins over `socket_name`).
    pub socket_path: Option<PathBuf>,
}

/// What went wrong, in words a model can act on (see `Display`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TmuxError {
    /// No tmux server listens on this socket.
    NoServer {
        /// The socket path tried.
        socket: String,
    },
    /// The deadline passed before tmux answered.
    Timeout,
    /// The caller cancelled the request.
    Cancelled,
    /// tmux refused the command; its own message (`can't find pane: %99`).
    Command(String),
    /// The connection to tmux went away and could not be restored.
    ConnectionLost(String),
    /// A pane, window or session does not exist.
    NotFound(String),
    /// An argument was rejected before reaching tmux.
    Invalid(String),
    /// The tmux program could not be run.
    Spawn(String),
}

impl fmt::Display for TmuxError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TmuxError::NoServer { socket } => write!(
                f,
                "no tmux server at {socket}: start one with `tmux new-session -d` or pass socket_name / socket_path for the server you mean"
            ),
            TmuxError::Timeout => f.write_str(
                "tmux did not answer before the deadline: retry with a smaller scope or a larger time budget",
            ),
            TmuxError::Cancelled => f.write_str("the request was cancelled"),
            TmuxError::Command(m) => write!(f, "tmux refused the command: {m}"),
            TmuxError::ConnectionLost(m) => write!(
                f,
                "lost the connection to the tmux server ({m}): retry; if it persists, check that the server is still running"
            ),
            TmuxError::NotFound(m) => write!(
                f,
                "{m}: it may have been closed; list panes again to get current ids"
            ),
            TmuxError::Invalid(m) => write!(f, "invalid argument: {m}"),
            TmuxError::Spawn(m) => write!(
                f,
                "cannot run tmux ({m}): is tmux installed and on PATH?"
            ),
        }
    }
}

impl std::error::Error for TmuxError {}

/// Facts about the tmux server.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
pub struct ServerInfo {
    /// The server's process id.
    pub pid: u32,
    /// `tmux -V` of the server (`3.3a`).
    pub version: String,
    /// The server's socket path.
    pub socket_path: String,
    /// Server start time, seconds since the epoch.
    pub start_time: i64,
    /// Number of sessions.
    pub session_count: u32,
    /// Number of clients attached, panescan's own excluded.
    pub client_count: u32,
    /// How panescan talks to it: `control` or `oneshot`.
    pub transport: String,
}

/// A handle on one tmux server. Cheap to clone, safe to share between
/// threads; (re)connects lazily.
#[derive(Clone, Debug)]
pub struct Tmux {
    inner: Arc<connection::Shared>,
}

impl Tmux {
    /// A handle on the server `spec` names. Nothing is started; the first
    /// request connects.
    pub fn connect(spec: &ServerSpec) -> Result<Tmux, TmuxError> {
        Ok(Tmux {
            inner: Arc::new(connection::Shared::new(spec.clone())?),
        })
    }

    /// The process-wide handle for `spec` (one connection per server).
    pub fn shared(spec: &ServerSpec) -> Result<Tmux, TmuxError> {
        connection::shared(spec).map(|inner| Tmux { inner })
    }

    /// One command's output (lossy UTF-8, trailing newline kept).
    pub fn run(&self, command: &TmuxCommand, deadline: Instant) -> Result<String, TmuxError> {
        self.run_many(std::slice::from_ref(command), deadline)
            .into_iter()
            .next()
            .unwrap_or(Err(TmuxError::ConnectionLost("no reply".into())))
    }

    /// Several commands pipelined; results in the same order.
    pub fn run_many(
        &self,
        commands: &[TmuxCommand],
        deadline: Instant,
    ) -> Vec<Result<String, TmuxError>> {
        self.inner.run_many(commands, deadline)
    }

    /// Every session, window and pane, in one round trip.
    pub fn inventory(&self, deadline: Instant) -> Result<Inventory, TmuxError> {
        inventory::fetch(&self.inner, deadline)
    }

    /// The inventory, and the output of `extra` commands that tmux runs
    /// right after it in the same round trip (they see the server no
    /// earlier than the inventory did).
    pub fn inventory_and(
        &self,
        extra: &[TmuxCommand],
        deadline: Instant,
    ) -> Result<(Inventory, Vec<Result<String, TmuxError>>), TmuxError> {
        inventory::fetch_with(&self.inner, extra, deadline)
    }

    /// Captures a batch of panes. Replies arrive on the returned channel in
    /// request order, each as soon as it and all before it are in; every
    /// request gets exactly one reply (an error if cancelled or late).
    pub fn capture(
        &self,
        requests: Vec<CaptureRequest>,
        options: CaptureOptions,
        deadline: Instant,
        cancel: Arc<AtomicBool>,
    ) -> crossbeam_channel::Receiver<CaptureReply> {
        capture::start(self.inner.clone(), requests, options, deadline, cancel)
    }

    /// pid, version, socket path, start time, session count.
    pub fn server_info(&self, deadline: Instant) -> Result<ServerInfo, TmuxError> {
        self.inner.server_info(deadline)
    }

    /// The server this handle talks to.
    pub fn spec(&self) -> &ServerSpec {
        self.inner.spec()
    }

    /// The socket path this handle resolved `spec` to.
    pub fn socket_path(&self) -> &std::path::Path {
        self.inner.socket_path()
    }

    /// Detaches the control client now; the next request reconnects.
    pub fn shutdown(&self) {
        self.inner.shutdown()
    }
}
