//! The tmux transport: everything panescan asks a tmux server, and how.
//!
//! [`Tmux`] is a cheap, shareable handle on one server ([`ServerSpec`]);
//! [`Tmux::shared`] keeps one per server per process. Everything it does
//! has a deadline, and every failure is a [`TmuxError`] whose `Display` says
//! what to do next.
//!
//! # Two paths, chosen by measurement
//!
//! * **Commands** ([`Tmux::run`], [`Tmux::run_many`], [`Tmux::inventory`],
//!   [`Tmux::server_info`]) go through one long-lived control-mode client
//!   ([`connection`]): a round trip on it costs a small fraction of
//!   starting a tmux process, and many commands are pipelined on it.
//! * **Captures** ([`Tmux::capture`]) run as `tmux source-file -` sweeps
//!   ([`capture`], [`oneshot`]): faster deep than `capture-pane -p`
//!   pipelined on a control client and far faster than a process per pane.
//!   A sweep also avoids the control-mode leak (below) without the extra
//!   `show-buffer`/`delete-buffer` round trips, attaches to nothing and
//!   works on a server with no session. The figures: BENCHMARKS.md, "tmux
//!   transport".
//!
//! # What we must not do to the user's tmux
//!
//! * **The leak.** tmux 3.2-3.5a leak the whole output of every
//!   `capture-pane -p` issued by a control client inside the server (a test
//!   here shows it growing). Captures therefore never use control mode;
//!   deep captures through [`Tmux::capture`] leave the server's resident
//!   memory where it was (test `two_thousand_deep_captures_do_not_grow_tmux`
//!   holds the bound) and no buffer behind.
//! * **Attaching.** An attached control client fires `client-attached` /
//!   `client-detached` hooks, counts in `session_attached` and `list-clients`
//!   and keeps a `destroy-unattached` session alive. Ours is read-only
//!   (`-r`), sized out (`ignore-size`), silent (`no-output`) unless someone
//!   inside panescan watches pane output ([`events`]: then only the
//!   watched panes send, and tmux pauses a pane rather than stall it),
//!   excluded from the `session_attached` and `client_count` we report, and
//!   detaches after [`connection::IDLE_DETACH`] without requests and
//!   without listeners. The event stream reuses it rather than attach a
//!   second client (which would fire `client-attached` again). Captures,
//!   the bulk of the work, attach nothing.
//! * **Dying with replies queued.** If panescan's process dies while tmux
//!   still has control-mode output for it, tmux 3.3 keeps that client
//!   attached for ever (and `kill-server` never completes). A small `sh`
//!   guard per connection kills the orphaned client a second later (test
//!   `dead_owner_leaves_no_client_attached`).
//!
//! # Other hosts
//!
//! A [`ServerSpec`] with a `host` names a tmux server on a machine the
//! operator configured (`--ssh`): every client above (commands, the control
//! client, capture sweeps, waits on channels) is then started through ssh
//! ([`launch`] builds every tmux process, [`ssh`] the ssh command line and
//! the remote version check), with the same answers; sweeps read from a
//! pipe there (no terminal anchor), and a handle is per host, so `%3` on
//! two hosts are two panes.
//!
//! # Events
//!
//! [`Tmux::subscribe`] delivers pane output (as "pane printed" triggers or
//! bytes) and structure changes to subscribers inside panescan, from the
//! same control client ([`events`]; notification lines are parsed by
//! [`notification`]). Output is a trigger: answers come from captures.
//!
//! # Framing nobody can forge
//!
//! Command output in control mode is not escaped, so a pane can print
//! `%end T N F`. Each request is followed by `display-message -p NONCE`
//! (128 random bits) and a reply closes only on that nonce ([`framing`]);
//! capture sweeps split their output on per-chunk random tokens. Nothing a
//! pane prints can end a reply early or shift another.
//!
//! # Faults
//!
//! The attached session killed: in-flight requests fail with
//! `ConnectionLost`, are retried once on a new client attached to another
//! session, then fail clearly. The server killed: the next request finds
//! `NoServer` (or reconnects if it was restarted). A pane gone between
//! listing and capture fails alone (`NotFound`). A server with no session
//! answers through one-shot processes, with the same results.
//!
//! # Safety
//!
//! Ids are parsed (`%N`, `@N`, `$N`) before use ([`ids`]); every argument
//! is quoted so `;`, newlines, quotes, `{`, `$` and `~` are inert, and text
//! for format-expanding arguments is `#`-escaped ([`command`]); formats are
//! ours, but for the one a caller gives display_message, which is parsed
//! with tmux's grammar ([`mod@format`]) and judged before it is sent.
//! [`caller`] says whether a pane is panescan's own; paste buffers are
//! read and pasted through [`buffers`], and [`servers`] finds this user's
//! servers. A socket a caller names is checked before any client starts
//! ([`reach`]), and every client runs in a minimal environment
//! ([`client_env`]): a tmux client hands its environment to whatever
//! listens on its socket.

pub mod binary;
pub mod buffers;
pub mod caller;
pub mod capture;
pub mod channel;
pub mod client_env;
pub mod command;
pub mod connection;
pub mod events;
pub mod format;
pub mod framing;
pub mod identity;
pub mod ids;
pub mod inventory;
pub mod launch;
pub mod listing_ahead;
mod listing_share;
pub mod notification;
pub mod oneshot;
pub mod paths;
pub(crate) mod process;
pub mod procfs;
pub mod reach;
pub mod servers;
pub mod spans;
pub mod ssh;

use std::fmt;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Instant;

pub use capture::{CaptureOptions, CaptureRange, CaptureReply, CaptureRequest, CapturedText};
pub use command::TmuxCommand;
pub use ids::{PaneId, SessionId, Target, WindowId};
pub use inventory::{Fields, Inventory, Pane, PanePlacement, Session, Window, WindowPlacement};
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
        self.inner.run_many(commands, deadline)
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
        inventory::fetch(&self.inner, fields, then, deadline)
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
    /// process (capture/control.rs); larger ones sweep.
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
    /// live control client, with no process (capture/control.rs); else a
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
    /// (capture/spare.rs); `None` if it cannot be started.
    pub fn spare_sweep(&self) -> Option<capture::Spare> {
        // With a live control client a small batch needs no process at all
        // (capture/control.rs), and a larger one starts its own.
        let over_control = self
            .inner
            .captures_over_control
            .load(std::sync::atomic::Ordering::Relaxed);
        if over_control && self.inner.own_client_pid().is_some() {
            return None;
        }
        capture::Spare::start(self.inner.endpoint())
    }

    /// Starts a sweep client for a batch about to capture many panes, on
    /// the terminal the last sweep showed tmux, before the batch's script
    /// is known (capture/spare.rs); `None` if there is none to start.
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
    /// its first script (capture/preamble.rs): tmux lists the panes and
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
        let listing = ListingAhead {
            query,
            rx,
            shared: self.inner.clone(),
        };
        (listing, replies)
    }

    /// Starts a sweep client for the next search and keeps it, unless one
    /// is kept (tmux/listing_ahead.rs: let go once panescan's control
    /// client is gone or after [`listing_ahead::KEPT_CLIENT_IDLE`]). The
    /// control client is kept attached meanwhile, as the listings it
    /// answered kept it: its going is the sign the last session went.
    /// Done on a thread of its own: the caller does not wait.
    pub fn keep_sweep_client(&self) {
        if self.inner.kept_client.holds() {
            return;
        }
        let shared = self.inner.clone();
        let _ = std::thread::Builder::new()
            .name("tmux-keep-client".into())
            .spawn(move || {
                let deadline = Instant::now() + std::time::Duration::from_secs(2);
                if !shared.keep_control(deadline) || shared.kept_client.holds() {
                    return;
                }
                // Kept only with its FIFO's write end held: then it ends
                // with panescan, however panescan ends.
                if let Some(mut spare) = capture::anchored_spare(&shared) {
                    if spare.hold(deadline) {
                        listing_ahead::KeptClient::keep(&shared, spare);
                    }
                }
            });
    }

    /// The sweep client kept by [`Tmux::keep_sweep_client`], else one
    /// started now ([`Tmux::anchored_spare`]).
    pub fn kept_or_anchored_spare(&self) -> Option<capture::Spare> {
        self.inner
            .kept_client
            .take()
            .or_else(|| self.anchored_spare())
    }

    /// Notes the captures a search of this server asked for.
    pub fn note_sweep(&self, requests: &[CaptureRequest], options: CaptureOptions) {
        self.inner.sweeps_noted.note(requests, options);
    }

    /// How long the search whose captures were noted last took.
    pub fn note_search_took(&self, time: std::time::Duration) {
        self.inner.sweeps_noted.took(time);
    }

    /// The captures the last two searches noted both asked for, if they
    /// did and the last took at most half of `room`: what the next is
    /// likely to ask for, in time to list at the top of its sweep.
    pub fn steady_sweep(
        &self,
        room: std::time::Duration,
    ) -> Option<(Vec<CaptureRequest>, CaptureOptions)> {
        self.inner.sweeps_noted.steady(room)
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
        buffers::list(&self.inner, deadline)
    }

    /// The first `max_bytes` of buffer `name`, read raw by a one-shot
    /// client that is stopped at the bound ([`buffers`]).
    pub fn read_buffer(
        &self,
        name: &str,
        max_bytes: usize,
        deadline: Instant,
    ) -> Result<buffers::BufferHead, TmuxError> {
        buffers::read(&self.inner, name, max_bytes, deadline)
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
        self.inner.server_info(deadline)
    }

    /// The server this handle talks to.
    pub fn spec(&self) -> &ServerSpec {
        self.inner.spec()
    }

    /// The host this handle's server is on (`None`: this machine).
    pub fn host(&self) -> Option<&str> {
        self.inner.spec().host.as_deref()
    }

    /// The socket path this handle resolved `spec` to (for a server on
    /// another host, a name no local socket has: `ssh://HOST/NAME`).
    pub fn socket_path(&self) -> &std::path::Path {
        self.inner.socket_path()
    }

    /// Never attach a control client: every command runs as a one-shot
    /// `source-file -` process (slower per command, attaches nothing).
    /// Answers are the same either way; tests use this to prove it.
    pub fn set_oneshot_only(&self, oneshot_only: bool) {
        self.inner
            .oneshot_only
            .store(oneshot_only, std::sync::atomic::Ordering::Relaxed);
        if oneshot_only {
            self.inner.shutdown();
        }
    }

    /// Detaches the control client now; the next request reconnects.
    pub fn shutdown(&self) {
        self.inner.shutdown()
    }

    /// Whether panescan itself runs inside this server, so that ending the
    /// server (or its session) would end panescan: the socket in `TMUX` is
    /// this one (device and inode, a hard link too), or, when panescan runs
    /// in tmux at all, this server's pid is the one in `TMUX` (its socket
    /// file made again). The pid is asked of tmux, answered by `deadline`.
    pub fn runs_inside(&self, deadline: Instant) -> bool {
        let caller = &self.inner.caller;
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
        channel::wait(self.inner.endpoint(), channel, deadline, cancel)
    }

    /// Ends the server. The control client detaches first, so tmux holds
    /// no reply for it while it exits; the command goes in a one-shot
    /// client. Done when the server no longer answers on its socket.
    pub fn kill_server(&self, deadline: Instant) -> Result<(), TmuxError> {
        self.inner.shutdown();
        let socket = self.inner.endpoint();
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
