//! `panescan daemon`: one process per user that serves MCP sessions over
//! a unix socket and holds what they share, so it outlives any one of
//! them: the tmux connections (one control client per server for every
//! session), the pane cache (a second session's first search is warm), the
//! listing shares, the ssh hosts and their master connections (keyed by
//! destination and options, closed when the daemon ends).
//!
//! - [`place`] — the runtime directory (0700, this user's), the socket,
//!   the build id.
//! - [`bind`] — which socket a starting daemon takes, under a lock; stale
//!   sockets replaced.
//! - [`wire`] — the handshake before MCP: hello, request, answer.
//! - [`caller`] — the client a session serves, checked against the
//!   connection's peer.
//! - [`conn`] — one connection: the peer's uid checked before a byte is
//!   read, then a session, a status or a stop.
//! - [`client`] — the other end, for `serve`, `status` and `stop`.
//!
//! What must hold: a session owns only its calls, waits and subscriptions
//! ([`crate::mcp::session`]); the daemon ends on SIGTERM, `panescan stop`
//! or after `idle_exit` with no session, answering or closing every
//! session first and removing its socket.

pub(crate) mod bind;
pub(crate) mod caller;
pub(crate) mod client;
pub(crate) mod conn;
pub(crate) mod ledger;
pub(crate) mod ledger_read;
mod ledger_reports;
mod ledger_taps;
pub(crate) mod place;
pub(crate) mod wire;

use std::collections::HashMap;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crossbeam_channel::Sender;

use crate::mcp::session::Shared;
use wire::SessionSpec;

/// The version a daemon and its clients must share (with the build).
pub const VERSION: &str = env!("PANESCAN_VERSION");

/// Sessions at once, unless `--max-sessions` says otherwise.
pub const DEFAULT_MAX_SESSIONS: usize = 64;
/// How long a daemon with no session stays, unless `--idle-exit` says.
pub const DEFAULT_IDLE_EXIT: Duration = Duration::from_secs(10 * 60);
/// How long sessions get to answer and close when the daemon stops.
const STOP_GRACE: Duration = Duration::from_secs(3);

/// How a daemon runs.
#[derive(Debug, Clone)]
pub struct DaemonConfig {
    /// Its runtime directory (checked or made private at start).
    pub runtime_dir: PathBuf,
    /// Sessions at once; one more is refused.
    pub max_sessions: usize,
    /// Exit after this long with no session (`None`: never).
    pub idle_exit: Option<Duration>,
    /// The shared pane cache's size (`None`: none).
    pub cache_bytes: Option<usize>,
    /// The ssh hosts its sessions may name.
    pub hosts: Vec<String>,
    /// The daemon's own flags, for what a session does not carry.
    pub defaults: SessionSpec,
    /// Its policy, scope and audit log, for every session it serves.
    pub trust: Arc<crate::trust::Trust>,
    /// Journal every pane of the followed servers (`--journal`): `None`, no.
    pub journal: Option<crate::journal::JournalConfig>,
    /// The servers journaled (`--journal-socket`); none: the default
    /// server alone.
    pub journal_sockets: Vec<crate::tmux::ServerSpec>,
}

/// One open session: how to stop it and close its stream.
#[derive(Debug)]
struct Open {
    stop: Sender<()>,
    stream: UnixStream,
}

/// A running daemon: what its connection threads share.
#[derive(Debug)]
pub struct Daemon {
    config: DaemonConfig,
    build: String,
    socket: PathBuf,
    started: Instant,
    shared: Shared,
    sessions: Mutex<Sessions>,
    served: AtomicU64,
    stopping: AtomicBool,
    /// The journal's writers (one per journaled server) while it runs:
    /// something to keep the daemon (no idle exit while it journals).
    journal: Mutex<Vec<crate::journal::writer::Handle>>,
    /// The command ledger's followers (one per journaled server).
    ledger: Mutex<Vec<ledger::Handle>>,
    /// The journal's bounds over every server's files.
    bounds: Mutex<Option<crate::journal::servers::Bounds>>,
}

#[derive(Debug, Default)]
struct Sessions {
    open: HashMap<u64, Open>,
    next: u64,
    /// Since when no session is open (`None`: one is).
    idle_since: Option<Instant>,
}

/// Runs the daemon in the foreground until it stops; the exit code.
pub fn run(config: DaemonConfig) -> i32 {
    if let Err(e) = place::ensure_private_dir(&config.runtime_dir) {
        eprintln!("panescan daemon: {e}");
        return 2;
    }
    let build = place::build_id();
    // The lock is held while the socket is chosen and bound, then let go.
    let bound =
        bind::lock(&config.runtime_dir).map(|_lock| bind::bind(&config.runtime_dir, &build));
    let (listener, socket) = match bound {
        Ok(Ok(bound)) => bound,
        Ok(Err(bind::NotBound::Running(socket, hello))) => {
            eprintln!(
                "panescan daemon: a daemon of this build already runs at {} (pid {})",
                socket.display(),
                hello.pid
            );
            return 3;
        }
        Ok(Err(bind::NotBound::Failed(e))) | Err(e) => {
            eprintln!("panescan daemon: {e}");
            return 2;
        }
    };
    eprintln!(
        "panescan daemon {VERSION} (build {build}) pid {} on {}",
        std::process::id(),
        socket.display()
    );
    let mut shared = Shared::new(config.cache_bytes);
    shared.trust = config.trust.clone();
    let daemon = Arc::new(Daemon {
        shared,
        config,
        build,
        socket,
        started: Instant::now(),
        sessions: Mutex::new(Sessions {
            idle_since: Some(Instant::now()),
            ..Sessions::default()
        }),
        served: AtomicU64::new(0),
        stopping: AtomicBool::new(false),
        journal: Mutex::new(Vec::new()),
        ledger: Mutex::new(Vec::new()),
        bounds: Mutex::new(None),
    });
    if let Err(e) = daemon.start_journal() {
        eprintln!("panescan daemon: {e}");
        let _ = std::fs::remove_file(&daemon.socket);
        return 2;
    }
    daemon.watch_signals();
    daemon.watch_idle();
    daemon.accept(&listener);
    daemon.finish();
    0
}

impl Daemon {
    /// Starts journaling when `--journal` asked for it: a writer and a
    /// ledger follower per server (the servers `--journal-socket` named,
    /// else the default one), each into its own directory
    /// ([`crate::journal::servers`]), and one thread bounding them all.
    /// A server not running is followed all the same: its writer reads it
    /// once it answers.
    fn start_journal(&self) -> Result<(), String> {
        use crate::journal::{servers, writer, JournalConfig};
        let Some(journal) = self.config.journal.clone() else {
            return Ok(());
        };
        crate::journal::dir::ensure(&journal.dir)?;
        let default = crate::tmux::ServerSpec {
            host: None,
            socket_name: self.config.defaults.socket_name.clone(),
            socket_path: self.config.defaults.socket_path.clone(),
        };
        let socket_of = |spec: &crate::tmux::ServerSpec| {
            crate::tmux::paths::resolve_socket(spec).map_err(|e| e.to_string())
        };
        let default_socket = socket_of(&default)?;
        let specs = if self.config.journal_sockets.is_empty() {
            vec![default]
        } else {
            self.config.journal_sockets.clone()
        };
        let mut journaled: Vec<ledger_read::Journaled> = Vec::new();
        for spec in specs {
            let socket = socket_of(&spec)?;
            if journaled.iter().any(|j| j.socket == socket) {
                continue; // Named twice.
            }
            let dir = servers::dir_of(&journal.dir, &socket, socket == default_socket);
            servers::claim(&dir, &socket)?;
            // The bounds are the whole directory's (the thread below), not
            // one server's.
            let config = JournalConfig {
                dir: dir.clone(),
                max_bytes: u64::MAX,
                max_age_ms: i64::MAX,
                ..journal.clone()
            };
            eprintln!(
                "panescan daemon: journaling the tmux server at {} into {}",
                socket.display(),
                dir.display()
            );
            // One %output stream per session for both: the ledger's feeds
            // count each pane's output for the writer's pacing.
            let counts = Arc::new(crate::tmux::feed_counts::FeedCounts::default());
            let handle = writer::start_counted(
                config.clone(),
                &spec,
                self.shared.pane_cache.clone(),
                Some(counts.clone()),
            )?;
            let views = handle.views();
            crate::sync::lock(&self.journal).push(handle);
            let follower = ledger::start(&config, &spec, views.clone(), Some(counts))?;
            crate::sync::lock(&self.ledger).push(follower);
            journaled.push(ledger_read::Journaled { socket, dir, views });
        }
        let bounds =
            servers::Bounds::start(journal.dir.clone(), journal.max_bytes, journal.max_age_ms)?;
        *crate::sync::lock(&self.bounds) = Some(bounds);
        crate::tools::commands::install(Some(Arc::new(ledger_read::Reader { journaled })));
        Ok(())
    }

    /// Accepts connections, each on a thread of its own, until stopping.
    fn accept(self: &Arc<Self>, listener: &UnixListener) {
        for stream in listener.incoming() {
            if self.stopping.load(Ordering::SeqCst) {
                break;
            }
            let Ok(stream) = stream else { continue };
            let this = self.clone();
            let spawned = std::thread::Builder::new()
                .name("daemon-conn".into())
                .spawn(move || conn::serve(&this, stream));
            if let Err(e) = spawned {
                eprintln!("panescan daemon: cannot start a connection thread: {e}");
            }
        }
    }

    /// Starts stopping: no new session, the accept loop woken (by a
    /// connection of our own, which it drops).
    pub fn begin_stop(&self) {
        if !self.stopping.swap(true, Ordering::SeqCst) {
            let _ = UnixStream::connect(&self.socket);
        }
    }

    /// After the accept loop: every session stopped (its calls answered,
    /// then closed), the socket removed, tmux connections closed.
    fn finish(&self) {
        let stops: Vec<Sender<()>> = crate::sync::lock(&self.sessions)
            .open
            .values()
            .map(|o| o.stop.clone())
            .collect();
        for stop in &stops {
            let _ = stop.try_send(());
        }
        let until = Instant::now() + STOP_GRACE;
        while !crate::sync::lock(&self.sessions).open.is_empty() && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(10));
        }
        for open in crate::sync::lock(&self.sessions).open.values() {
            let _ = open.stream.shutdown(std::net::Shutdown::Both);
        }
        // Another daemon may have replaced a socket we lost: remove only
        // the file we bound, not whatever is at its path now.
        let _ = std::fs::remove_file(&self.socket);
        // The journal's last records are written before its tmux
        // connection closes.
        crate::tools::commands::install(None);
        for follower in std::mem::take(&mut *crate::sync::lock(&self.ledger)) {
            follower.stop();
        }
        for journal in std::mem::take(&mut *crate::sync::lock(&self.journal)) {
            journal.stop();
        }
        if let Some(bounds) = crate::sync::lock(&self.bounds).take() {
            bounds.stop();
        }
        crate::tools::shutdown_connections();
        eprintln!("panescan daemon: stopped");
    }

    /// SIGTERM and SIGINT stop the daemon; SIGHUP reloads its policy file
    /// and never stops it (a detached daemon outlives the terminal that
    /// started its first client).
    fn watch_signals(self: &Arc<Self>) {
        use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
        match signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP]) {
            Ok(mut signals) => {
                let this = self.clone();
                let _ = std::thread::Builder::new()
                    .name("signals".into())
                    .spawn(move || {
                        for sig in signals.forever() {
                            if sig == SIGHUP {
                                this.shared.trust.reload();
                            } else {
                                eprintln!("panescan daemon: signal {sig}, stopping");
                                this.begin_stop();
                                break;
                            }
                        }
                    });
            }
            Err(e) => eprintln!("panescan daemon: cannot watch SIGTERM: {e}"),
        }
    }

    /// Stops the daemon once it has had no session for `idle_exit`.
    fn watch_idle(self: &Arc<Self>) {
        let Some(idle_exit) = self.config.idle_exit else {
            return;
        };
        if self.config.journal.is_some() {
            return; // A journaling daemon stays until stopped.
        }
        let this = self.clone();
        let tick = (idle_exit / 10).clamp(Duration::from_millis(20), Duration::from_secs(5));
        let _ = std::thread::Builder::new()
            .name("idle".into())
            .spawn(move || loop {
                std::thread::sleep(tick);
                if this.stopping.load(Ordering::SeqCst) {
                    return;
                }
                let idle = crate::sync::lock(&this.sessions)
                    .idle_since
                    .is_some_and(|since| since.elapsed() >= idle_exit);
                if idle {
                    eprintln!(
                        "panescan daemon: no session for {} s, exiting",
                        idle_exit.as_secs()
                    );
                    this.begin_stop();
                    return;
                }
            });
    }

    /// Registers a session (refused when stopping or full): its id.
    fn open_session(&self, stop: Sender<()>, stream: UnixStream) -> Result<u64, String> {
        let mut sessions = crate::sync::lock(&self.sessions);
        if self.stopping.load(Ordering::SeqCst) {
            return Err("the daemon is stopping; retry".into());
        }
        if sessions.open.len() >= self.config.max_sessions {
            return Err(format!(
                "the daemon serves {} sessions, its --max-sessions",
                sessions.open.len()
            ));
        }
        let id = sessions.next;
        sessions.next += 1;
        sessions.open.insert(id, Open { stop, stream });
        sessions.idle_since = None;
        self.served.fetch_add(1, Ordering::Relaxed);
        Ok(id)
    }

    /// Forgets session `id`; the idle clock starts when it was the last.
    fn close_session(&self, id: u64) {
        let mut sessions = crate::sync::lock(&self.sessions);
        sessions.open.remove(&id);
        if sessions.open.is_empty() {
            sessions.idle_since = Some(Instant::now());
        }
    }

    /// What `panescan status` shows.
    pub fn status(&self) -> wire::Status {
        let (cache_bytes, cache_panes, stats) = match &self.shared.pane_cache {
            Some(cache) => (cache.memory_bytes(), cache.len(), cache.stats()),
            None => (0, 0, Default::default()),
        };
        wire::Status {
            pid: std::process::id(),
            version: VERSION.to_owned(),
            build: self.build.clone(),
            socket: self.socket.clone(),
            uptime_ms: u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX),
            sessions: crate::sync::lock(&self.sessions).open.len(),
            sessions_served: self.served.load(Ordering::Relaxed),
            max_sessions: self.config.max_sessions,
            tmux_servers: crate::tools::connections_open(),
            cache_bytes,
            cache_panes,
            cache_reused: stats.reused,
            cache_full: stats.full,
            cache_delta: stats.delta,
            rss_bytes: rss_bytes(),
            ssh_hosts: crate::tmux::ssh::hosts_held(),
        }
    }
}

/// Resident memory from /proc/self/status (0 where unreadable).
fn rss_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|rest| rest.split_whitespace().next())
                .and_then(|kb| kb.parse::<u64>().ok())
        })
        .map_or(0, |kb| kb * 1024)
}
