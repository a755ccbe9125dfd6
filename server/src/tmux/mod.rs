//! The tmux transport: everything panescan asks a tmux server, and how.
//!
//! [`Tmux`] is a cheap, shareable handle on one server ([`ServerSpec`], on
//! this machine or on a host through [`ssh`]); [`Tmux::shared`] keeps one
//! per server per process. Everything it does has a deadline, and every
//! failure is a [`TmuxError`] whose `Display` says what to do next.
//! Commands ([`Tmux::run`], [`Tmux::run_many`], [`Tmux::inventory`]) go
//! through one long-lived control-mode client ([`connection`]), which also
//! carries the event stream ([`Tmux::subscribe`], [`events`]); captures
//! ([`Tmux::capture`]) run as `tmux source-file` sweeps ([`capture`]).
//!
//! What must hold:
//! - no capture goes through control mode (`capture-pane -p` there leaks
//!   inside tmux 3.2-3.5a), and no buffer is left behind;
//! - panescan's control client is never read-only (tmux 3.7's
//!   `send-keys` refuses to type through such a client), silent unless a
//!   wait watches a pane, left out of the counts we report, and detaches when idle; a
//!   panescan that dies leaves no client attached (a session's feed,
//!   [`feed`], is read-only, counted out and guarded alike, but sends
//!   every pane's output and stays until its reader drops it);
//! - a reply closes only on a 128-bit nonce ([`framing`]): nothing a pane
//!   prints ends it early or shifts another;
//! - ids are parsed ([`ids`]) and arguments quoted ([`command`]) before they
//!   reach tmux; a socket a caller names is checked first ([`reach`]); every
//!   client runs in a minimal environment ([`client_env`]).
//!
//! Why, the faults and other hosts, in full: NOTES.md.

pub(crate) mod binary;
pub(crate) mod buffers;
pub(crate) mod caller;
pub(crate) mod capture;
pub(crate) mod channel;
pub(crate) mod client_env;
pub(crate) mod command;
pub(crate) mod command_reports;
pub(crate) mod connection;
pub(crate) mod events;
pub(crate) mod feed;
pub(crate) mod feed_counts;
pub(crate) mod format;
pub(crate) mod framing;
pub(crate) mod identity;
pub(crate) mod ids;
pub(crate) mod inventory;
pub(crate) mod launch;
pub(crate) mod listing_ahead;
mod listing_share;
pub(crate) mod notification;
pub(crate) mod oneshot;
pub(crate) mod paths;
pub(crate) mod process;
pub(crate) mod procfs;
pub(crate) mod reach;
pub(crate) mod rows;
pub(crate) mod servers;
pub(crate) mod spans;
pub(crate) mod ssh;

use std::collections::HashMap;
use std::fmt;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Instant;

pub use capture::{CaptureOptions, CaptureRange, CaptureReply, CaptureRequest, CapturedText};
pub use command::TmuxCommand;
pub use ids::{PaneId, SessionId, Target, WindowId};
pub use inventory::{Fields, Inventory, Pane, PanePlacement, Session, Window};
pub use listing_ahead::ListingAhead;

/// Which tmux server to talk to.
///
/// Both `None`: the server the `tmux` command itself would use — the socket
/// in `$TMUX` if set, else `$TMUX_TMPDIR` (or `/tmp`) `/tmux-UID/default`.
/// With a `host`, the server is on that host ([`launch`], [`ssh`]): its
/// default one, or `-L socket_name` there.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct ServerSpec {
    /// A host the operator configured (`--ssh DEST`, as written); `None`:
    /// this machine.
    pub host: Option<String>,
    /// `tmux -L NAME`.
    pub socket_name: Option<String>,
    /// `tmux -S PATH` (wins over `socket_name`).
    pub socket_path: Option<PathBuf>,
}

impl ServerSpec {
    /// The server `tmux -L socket_name` talks to.
    pub fn named(socket_name: &str) -> ServerSpec {
        ServerSpec {
            socket_name: Some(socket_name.to_owned()),
            ..ServerSpec::default()
        }
    }
}

/// What went wrong, in words a model can act on (see `Display`).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
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
    /// A socket a caller named is not one this user's tmux listens on, or
    /// not in a place the operator allowed ([`reach`]); the message says
    /// how to allow it.
    Refused(String),
    /// The tmux program (or ssh) could not be run, or its pipes not used:
    /// what was being done, and the system's error as the source.
    Spawn(SpawnError),
    /// A remote host could not be reached over ssh, or has no usable tmux
    /// ([`ssh`]).
    Unreachable {
        /// The host, as the operator named it.
        host: String,
        /// What ssh or the host said.
        message: String,
    },
}

impl fmt::Display for TmuxError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TmuxError::NoServer { socket } => write!(
                f,
                "no tmux server at {socket}: start one with `tmux new-session -d`, or name the server you mean: socket_name / socket_path in this call, or `panescan serve --socket-name NAME` (or --socket-path) in the client's configuration for every call (a client started without TMUX_TMPDIR looks in the default directory)"
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
            TmuxError::Refused(m) => f.write_str(m),
            TmuxError::Unreachable { host, message } => write!(
                f,
                "host {host} cannot be used: {message} (check that `ssh {host} tmux -V` works without a prompt and shows tmux 3.2 or later)"
            ),
            TmuxError::Spawn(m) => match binary::not_found() {
                // `m` says what was done and the system's words.
                Some(where_looked) => write!(f, "cannot run tmux ({m}): {where_looked}"),
                None => write!(f, "cannot run {} ({m})", binary::program().display()),
            },
        }
    }
}

impl std::error::Error for TmuxError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            TmuxError::Spawn(s) => s.cause.as_deref().map(|e| e as _),
            _ => None,
        }
    }
}

impl TmuxError {
    /// A process could not be started or its pipes used while doing
    /// `what`; `cause` is kept as the error's source.
    pub(crate) fn spawn(what: &str, cause: std::io::Error) -> TmuxError {
        TmuxError::Spawn(SpawnError {
            what: what.to_owned(),
            cause: Some(Arc::new(cause)),
        })
    }

    /// The same without a system error (a pipe that was not there).
    pub(crate) fn spawn_without(what: &str) -> TmuxError {
        TmuxError::Spawn(SpawnError {
            what: what.to_owned(),
            cause: None,
        })
    }
}

/// What [`TmuxError::Spawn`] holds: what was being done, and the system's
/// error (compared by its kind and words, so errors stay comparable).
#[derive(Debug, Clone)]
pub struct SpawnError {
    what: String,
    cause: Option<Arc<std::io::Error>>,
}

impl PartialEq for SpawnError {
    fn eq(&self, other: &Self) -> bool {
        let words = |c: &Option<Arc<std::io::Error>>| c.as_ref().map(|e| (e.kind(), e.to_string()));
        self.what == other.what && words(&self.cause) == words(&other.cause)
    }
}

impl Eq for SpawnError {}

impl fmt::Display for SpawnError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.cause {
            Some(e) if self.what.is_empty() => write!(f, "{e}"),
            Some(e) => write!(f, "{}: {e}", self.what),
            None => f.write_str(&self.what),
        }
    }
}

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

/// One tmux server as panescan keeps it: the connection, and beside it
/// each feature's state between calls, which only that feature's module
/// reads or changes (the fields of its `ServerState` are private there).
/// One per [`ServerSpec`] in the process ([`Tmux::shared`]); every clone of
/// a [`Tmux`] shares it. A new per-server state goes in its module, as a
/// field here reached through a method: the connection stays a leaf that
/// names no feature.
#[derive(Debug)]
pub(crate) struct Server {
    connection: Arc<connection::Shared>,
    /// The event stream, which the connection tells what its control
    /// client reads.
    hub: Arc<events::Hub>,
    /// How sweeps share the server, the terminal kept for them.
    capture: capture::ServerState,
    /// Listings under way, and how many panes the last one found.
    listings: inventory::ServerState,
    /// What the last searches swept, and the sweep client kept for the
    /// next.
    ahead: listing_ahead::ServerState,
    /// The server's process, for reading what its panes run from `/proc`.
    processes: procfs::ServerCache,
    /// Whether its `paste-buffer` takes `-S` ([`buffers::ServerState`]).
    pastes: buffers::ServerState,
}

impl Server {
    /// The server `spec` names; nothing is started.
    pub(crate) fn new(spec: ServerSpec) -> Result<Server, TmuxError> {
        let hub = Arc::new(events::Hub::default());
        let listener: Arc<dyn connection::Listener> = hub.clone();
        Ok(Server {
            connection: Arc::new(connection::Shared::new(spec, listener)?),
            hub,
            capture: capture::ServerState::default(),
            listings: inventory::ServerState::default(),
            ahead: listing_ahead::ServerState::default(),
            processes: procfs::ServerCache::default(),
            pastes: buffers::ServerState::default(),
        })
    }

    /// The process-wide state of the server `spec` names: one connection
    /// and one state per server, whatever name it is reached by.
    fn shared(spec: &ServerSpec) -> Result<Arc<Server>, TmuxError> {
        static MAP: std::sync::OnceLock<std::sync::Mutex<HashMap<ServerSpec, Arc<Server>>>> =
            std::sync::OnceLock::new();
        let map = MAP.get_or_init(Default::default);
        let mut map = crate::sync::lock(map);
        if let Some(s) = map.get(spec) {
            return Ok(s.clone());
        }
        // Another name of a socket already served (a hard link) is that
        // server: one connection and one cache, whatever it is called.
        if let (None, Some(path)) = (&spec.host, &spec.socket_path) {
            if let Some(id) = identity::SocketId::of(path) {
                let known = map.iter().find(|(k, _)| {
                    k.host.is_none()
                        && k.socket_path.as_deref().and_then(identity::SocketId::of) == Some(id)
                });
                if let Some((_, s)) = known {
                    return Ok(s.clone());
                }
            }
        }
        let s = Arc::new(Server::new(spec.clone())?);
        map.insert(spec.clone(), s.clone());
        Ok(s)
    }

    /// The connection: commands, the control client, the endpoint.
    pub(crate) fn connection(&self) -> &Arc<connection::Shared> {
        &self.connection
    }

    /// The server's event stream ([`events`]).
    pub(crate) fn hub(&self) -> &Arc<events::Hub> {
        &self.hub
    }

    /// The capture sweeps' state ([`capture::ServerState`]).
    pub(crate) fn capture(&self) -> &capture::ServerState {
        &self.capture
    }

    /// The listings' state ([`inventory::ServerState`]).
    pub(crate) fn listings(&self) -> &inventory::ServerState {
        &self.listings
    }

    /// The sweeps started ahead of a search's listing
    /// ([`listing_ahead::ServerState`]).
    pub(crate) fn ahead(&self) -> &listing_ahead::ServerState {
        &self.ahead
    }

    /// The server's process as tmux last reported it ([`procfs`]).
    pub(crate) fn processes(&self) -> &procfs::ServerCache {
        &self.processes
    }

    /// What pastes learned of the server ([`buffers::ServerState`]).
    pub(crate) fn pastes(&self) -> &buffers::ServerState {
        &self.pastes
    }
}

/// The event stream is what the connection tells of its control client's
/// notifications (connection.rs names only [`connection::Listener`]).
impl connection::Listener for events::Hub {
    fn listening(&self) -> bool {
        events::Hub::listening(self)
    }

    fn on_lines(&self, pid: u32, lines: &[Vec<u8>]) {
        events::Hub::on_lines(self, pid, lines);
    }

    fn on_closed(&self, pid: u32, on_purpose: bool) {
        events::Hub::on_closed(self, pid, on_purpose);
    }
}

/// A handle on one tmux server, for one caller. Cheap to clone, safe to
/// share between threads; (re)connects lazily. Handles of two callers (two
/// sessions of a daemon) share the server and its listings; each marks
/// `is_caller` for its own caller.
#[derive(Clone, Debug)]
pub struct Tmux {
    inner: Arc<Server>,
    caller: Arc<caller::CallerPane>,
}

impl Tmux {
    /// A handle on the server `spec` names. Nothing is started; the first
    /// request connects.
    pub fn connect(spec: &ServerSpec) -> Result<Tmux, TmuxError> {
        Ok(Tmux {
            inner: Arc::new(Server::new(spec.clone())?),
            caller: caller::CallerPane::of_process(),
        })
    }

    /// The process-wide handle for `spec` (one connection per server),
    /// for this process's caller ([`Self::for_caller`] for another).
    pub fn shared(spec: &ServerSpec) -> Result<Tmux, TmuxError> {
        Server::shared(spec).map(|inner| Tmux {
            inner,
            caller: caller::CallerPane::of_process(),
        })
    }

    /// This handle for `caller` (a daemon session's client).
    pub fn for_caller(mut self, caller: Arc<caller::CallerPane>) -> Tmux {
        self.caller = caller;
        self
    }

    /// The caller this handle marks `is_caller` for.
    pub fn caller(&self) -> &caller::CallerPane {
        &self.caller
    }

    /// The connection to the server.
    fn connection(&self) -> &connection::Shared {
        self.inner.connection()
    }

    /// One command's output (lossy UTF-8, trailing newline kept).
    ///
    /// Give commands explicit targets: through the control client a
    /// target-less command acts on the session panescan attached to, through
    /// one-shot processes (server without sessions) on none. Pass user text
    /// only as arguments ([`TmuxCommand::arg`] / [`TmuxCommand::literal_arg`]),
    /// never inside a `-F` format.
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
        self.connection().run_many(commands, deadline)
    }

    /// Every session, window and pane with the `fields` asked for, and the
    /// output of `then` commands that tmux runs right after the listing in
    /// the same round trip (they see the server no earlier than the
    /// listing did: the pane cache reads activity this way).
    ///
    /// A server with no session lists nothing rather than fail.
    pub fn inventory(
        &self,
        fields: Fields,
        then: &[TmuxCommand],
        deadline: Instant,
    ) -> Result<(Inventory, Vec<Result<String, TmuxError>>), TmuxError> {
        let (mut inv, then) = inventory::fetch(&self.inner, fields, then, deadline)?;
        inventory::mark_caller(&mut inv, &self.caller, self.socket_path());
        Ok((inv, then))
    }

    /// `pane_current_command` and `pane_current_path` of some panes (each
    /// with its `pane_pid` if listed); `None` for a pane that is gone or did
    /// not answer. Read from `/proc` where the server is on this machine
    /// and that gives tmux's answer with certainty ([`procfs`]), asked of
    /// tmux in one round trip for the rest. A search lists with
    /// [`Fields::SearchWithCursor`] or [`Fields::SearchWithFingerprint`]
    /// (both carry `pane_pid`) and asks this only for the panes it returns.
    pub fn commands_and_paths(
        &self,
        panes: &[(PaneId, Option<u32>)],
        deadline: Instant,
    ) -> Vec<Option<(String, String)>> {
        inventory::commands_and_paths(&self.inner, panes, deadline)
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
        capture::start(
            self.inner.clone(),
            requests,
            options,
            deadline,
            cancel,
            capture::Ahead::default(),
        )
    }

    /// [`Tmux::capture`] for a caller of a few panes (a one-pane capture):
    /// a batch small enough goes over the live control client, with no
    /// process (`control` in [`capture`]); larger ones sweep.
    pub fn capture_small(
        &self,
        requests: Vec<CaptureRequest>,
        options: CaptureOptions,
        deadline: Instant,
        cancel: Arc<AtomicBool>,
    ) -> crossbeam_channel::Receiver<CaptureReply> {
        self.capture_with_spare(requests, options, deadline, cancel, None)
    }

    /// [`Tmux::capture`] for the pane cache: a small batch goes over the
    /// live control client, with no process (`control` in [`capture`]); else a
    /// sweep client started ahead ([`Tmux::spare_sweep`]) serves the
    /// batch's first chunk if it is small enough to go through a pipe
    /// (else it is let go unused).
    pub fn capture_with_spare(
        &self,
        requests: Vec<CaptureRequest>,
        options: CaptureOptions,
        deadline: Instant,
        cancel: Arc<AtomicBool>,
        spare: Option<capture::Spare>,
    ) -> crossbeam_channel::Receiver<CaptureReply> {
        let ahead = capture::Ahead {
            spare,
            over_control: true,
            preamble: None,
        };
        capture::start(
            self.inner.clone(),
            requests,
            options,
            deadline,
            cancel,
            ahead,
        )
    }

    /// Starts a sweep client before its script is known, for a caller
    /// that will likely capture a few panes once its listing is back
    /// ([`capture::Spare`]); `None` if it cannot be started.
    pub fn spare_sweep(&self) -> Option<capture::Spare> {
        // With a live control client a small batch needs no process at all
        // (`control` in [`capture`]), and a larger one starts its own.
        let over_control = self.inner.capture().over_control();
        if over_control && self.connection().own_client_pid().is_some() {
            return None;
        }
        capture::Spare::start(self.connection().endpoint())
    }

    /// Starts a sweep client for a batch about to capture many panes, on
    /// the terminal the last sweep showed tmux, before the batch's script
    /// is known ([`capture::Spare`]); `None` if there is none to start.
    /// Pass it to [`Tmux::sweep_with_spare`].
    pub fn anchored_spare(&self) -> Option<capture::Spare> {
        capture::anchored_spare(&self.inner)
    }

    /// [`Tmux::capture`], whose first chunk may run on `spare` (a client
    /// started ahead by [`Tmux::anchored_spare`] or [`Tmux::spare_sweep`]).
    pub fn sweep_with_spare(
        &self,
        requests: Vec<CaptureRequest>,
        options: CaptureOptions,
        deadline: Instant,
        cancel: Arc<AtomicBool>,
        spare: Option<capture::Spare>,
    ) -> crossbeam_channel::Receiver<CaptureReply> {
        let ahead = capture::Ahead {
            spare,
            over_control: false,
            preamble: None,
        };
        capture::start(
            self.inner.clone(),
            requests,
            options,
            deadline,
            cancel,
            ahead,
        )
    }

    /// [`Tmux::sweep_with_spare`] with a listing of `fields` at the top of
    /// its first script ([`capture::ListedAhead`]): tmux lists the panes and
    /// captures them in one go, the listing still before every capture.
    /// For a caller expecting to sweep what it swept last
    /// ([`Tmux::steady_sweep`]); [`ListingAhead::wait`] gives the listing.
    pub fn sweep_after_listing(
        &self,
        fields: Fields,
        requests: Vec<CaptureRequest>,
        options: CaptureOptions,
        deadline: Instant,
        cancel: Arc<AtomicBool>,
        spare: Option<capture::Spare>,
    ) -> (ListingAhead, crossbeam_channel::Receiver<CaptureReply>) {
        let query = inventory::ListingQuery::new(fields);
        let (tx, rx) = crossbeam_channel::bounded(1);
        let ahead = capture::Ahead {
            spare,
            over_control: false,
            preamble: Some(capture::Preamble {
                listing: query.command(),
                tx,
            }),
        };
        let replies = capture::start(
            self.inner.clone(),
            requests,
            options,
            deadline,
            cancel,
            ahead,
        );
        let listing = ListingAhead::new(query, rx, self.inner.clone(), self.caller.clone());
        (listing, replies)
    }

    /// Starts a sweep client for the next search and keeps it, unless one
    /// is kept ([`listing_ahead`]: let go once panescan's control
    /// client is gone or after [`listing_ahead::KEPT_CLIENT_IDLE`]). The
    /// control client is kept attached meanwhile, as the listings it
    /// answered kept it: its going is the sign the last session went.
    /// Done on a thread of its own: the caller does not wait.
    pub fn keep_sweep_client(&self) {
        if self.inner.ahead().holds_client() {
            return;
        }
        let shared = self.inner.clone();
        let _ = std::thread::Builder::new()
            .name("tmux-keep-client".into())
            .spawn(move || {
                let deadline = Instant::now() + std::time::Duration::from_secs(2);
                if !shared.connection().keep_control(deadline) || shared.ahead().holds_client() {
                    return;
                }
                // Kept only with its FIFO's write end held: then it ends
                // with panescan, however panescan ends.
                if let Some(mut spare) = capture::anchored_spare(&shared) {
                    if spare.hold(deadline) {
                        listing_ahead::keep_client(&shared, spare);
                    }
                }
            });
    }

    /// The sweep client kept by [`Tmux::keep_sweep_client`], else one
    /// started now ([`Tmux::anchored_spare`]).
    pub fn kept_or_anchored_spare(&self) -> Option<capture::Spare> {
        self.inner
            .ahead()
            .take_client()
            .or_else(|| self.anchored_spare())
    }

    /// Notes the captures a search of this server asked for.
    pub fn note_sweep(&self, requests: &[CaptureRequest], options: CaptureOptions) {
        self.inner.ahead().note(requests, options);
    }

    /// How long the search whose captures were noted last took.
    pub fn note_search_took(&self, time: std::time::Duration) {
        self.inner.ahead().took(time);
    }

    /// The captures the last two searches noted both asked for, if they
    /// did and the last took at most half of `room`: what the next is
    /// likely to ask for, in time to list at the top of its sweep.
    pub fn steady_sweep(
        &self,
        room: std::time::Duration,
    ) -> Option<(Vec<CaptureRequest>, CaptureOptions)> {
        self.inner.ahead().steady(room)
    }

    /// Subscribes to the server's event stream: pane output (as "pane
    /// printed" triggers or bytes) and/or structure events, as `interest`
    /// says. Sets the stream up before it returns (a listing and one
    /// command, waited for until `deadline`); when it cannot (no session to
    /// attach to, tmux not answering), [`events::Subscription::coverage`]
    /// says so and the caller polls. See [`events`].
    pub fn subscribe(&self, interest: events::Interest, deadline: Instant) -> events::Subscription {
        events::subscribe(&self.inner, interest, deadline)
    }

    /// Every paste buffer, most recent first ([`buffers`]).
    pub fn list_buffers(&self, deadline: Instant) -> Result<Vec<buffers::BufferInfo>, TmuxError> {
        buffers::list(self.inner.connection(), deadline)
    }

    /// The first `max_bytes` of buffer `name`, read raw by a one-shot
    /// client that is stopped at the bound ([`buffers`]).
    pub fn read_buffer(
        &self,
        name: &str,
        max_bytes: usize,
        deadline: Instant,
    ) -> Result<buffers::BufferHead, TmuxError> {
        buffers::read(self.inner.connection(), name, max_bytes, deadline)
    }

    /// Pastes `text` into `pane` through a buffer of its own that is gone
    /// afterwards, also when the paste fails ([`buffers`]).
    pub fn paste_text(
        &self,
        pane: PaneId,
        text: &str,
        bracketed: bool,
        deadline: Instant,
    ) -> Result<(), TmuxError> {
        buffers::paste(&self.inner, pane, text, bracketed, deadline)
    }

    /// pid, version, socket path, start time, session count.
    pub fn server_info(&self, deadline: Instant) -> Result<ServerInfo, TmuxError> {
        self.connection().server_info(deadline)
    }

    /// The server this handle talks to.
    pub fn spec(&self) -> &ServerSpec {
        self.connection().spec()
    }

    /// The host this handle's server is on (`None`: this machine).
    pub fn host(&self) -> Option<&str> {
        self.connection().spec().host.as_deref()
    }

    /// The socket path this handle resolved `spec` to (for a server on
    /// another host, a name no local socket has: `ssh://HOST/NAME`).
    pub fn socket_path(&self) -> &std::path::Path {
        self.connection().socket_path()
    }

    /// Never attach a control client: every command runs as a one-shot
    /// `source-file -` process (slower per command, attaches nothing).
    /// Answers are the same either way; tests use this to prove it.
    pub fn set_oneshot_only(&self, oneshot_only: bool) {
        self.connection().set_oneshot_only(oneshot_only);
    }

    /// Detaches the control client now; the next request reconnects.
    pub fn shutdown(&self) {
        self.connection().shutdown()
    }

    /// Whether panescan itself runs inside this server, so that ending the
    /// server (or its session) would end panescan: the socket in `TMUX` is
    /// this one (device and inode, a hard link too), or, when panescan runs
    /// in tmux at all, this server's pid is the one in `TMUX` (its socket
    /// file made again). The pid is asked of tmux, answered by `deadline`.
    pub fn runs_inside(&self, deadline: Instant) -> bool {
        let caller = &self.caller;
        caller.same_server(self.socket_path())
            || caller
                .server_pid
                .is_some_and(|pid| self.server_pid(deadline).ok() == Some(pid))
    }

    /// The server's process id, asked of tmux.
    fn server_pid(&self, deadline: Instant) -> Result<u32, TmuxError> {
        let out = self.run(
            &TmuxCommand::new("display-message")
                .flag("-p")
                .format_arg("#{pid}"),
            deadline,
        )?;
        out.trim()
            .parse()
            .map_err(|_| TmuxError::Command(format!("unreadable server pid {:?}", out.trim())))
    }

    /// Blocks on wait channel `channel` in a client of its own (never on
    /// the control client, which it would stall) until it is signalled,
    /// `deadline` passes or `cancel` is set. See [`channel`].
    pub fn wait_channel(
        &self,
        channel: &str,
        deadline: Instant,
        cancel: &AtomicBool,
    ) -> Result<channel::WaitEnd, TmuxError> {
        channel::wait(self.connection().endpoint(), channel, deadline, cancel)
    }

    /// Ends the server. The control client detaches first, so tmux holds
    /// no reply for it while it exits; the command goes in a one-shot
    /// client. Done when the server no longer answers on its socket.
    pub fn kill_server(&self, deadline: Instant) -> Result<(), TmuxError> {
        self.connection().shutdown();
        let socket = self.connection().endpoint();
        let killed = oneshot::run_line(socket, "kill-server", deadline);
        // tmux exits once its clients have gone: until then it may still
        // accept a connection.
        loop {
            match oneshot::run_line(socket, "display-message -p x", deadline) {
                Err(TmuxError::NoServer { .. }) => return Ok(()),
                Err(TmuxError::Timeout) => return Err(TmuxError::Timeout),
                _ if Instant::now() >= deadline => {
                    return Err(killed.err().unwrap_or(TmuxError::Timeout))
                }
                _ => std::thread::sleep(std::time::Duration::from_millis(10)),
            }
        }
    }
}
