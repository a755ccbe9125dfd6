//! What is said on a daemon connection before MCP starts: the daemon's
//! [`Hello`] (version, build, pid), the client's [`Request`] (a session
//! with its [`SessionSpec`], the status, a stop) and the daemon's
//! [`Answer`]. One JSON line each; after an accepted session the stream
//! carries MCP's JSON-RPC lines both ways, unchanged.
//!
//! A client uses a daemon only when the hello names its own version and
//! build: two builds never speak MCP through each other.

use std::io::{BufRead, Read, Write};
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::config::{Ceilings, ServeConfig, Tier};
use crate::tmux::reach::SocketPolicy;
use crate::tmux::{ssh, ServerSpec};

/// The longest handshake line either side reads: a spec is small.
const MAX_HANDSHAKE_BYTES: u64 = 64 * 1024;

/// The daemon's first line, written as soon as the peer is known to be
/// this user.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hello {
    /// `panescan --version`'s version.
    pub panescan_daemon: String,
    /// [`super::place::build_id`] of the daemon.
    pub build: String,
    /// The daemon's process id.
    pub pid: u32,
}

/// The client's first line.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Request {
    /// Serve an MCP session on this connection under `spec`.
    Session {
        /// The session's settings.
        spec: Box<SessionSpec>,
    },
    /// Answer [`Status`] and close.
    Status,
    /// Shut down as on SIGTERM.
    Stop,
}

/// The daemon's answer to a [`Request`].
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Answer {
    /// Why the request was refused (`None`: accepted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refused: Option<String>,
    /// The status, for [`Request::Status`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<Status>,
}

/// What `panescan status` shows.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Status {
    /// The daemon's process id.
    pub pid: u32,
    /// Its version.
    pub version: String,
    /// Its build id.
    pub build: String,
    /// Its socket.
    pub socket: PathBuf,
    /// Milliseconds since it started.
    pub uptime_ms: u64,
    /// MCP sessions open now.
    pub sessions: usize,
    /// Sessions served since it started.
    pub sessions_served: u64,
    /// The most sessions at once.
    pub max_sessions: usize,
    /// tmux servers it holds a connection to.
    pub tmux_servers: usize,
    /// Bytes of pane text in the shared cache.
    pub cache_bytes: usize,
    /// Panes in the shared cache.
    pub cache_panes: usize,
    /// Panes the cache served unchanged, without asking tmux for text.
    pub cache_reused: u64,
    /// Panes the cache fetched whole.
    pub cache_full: u64,
    /// Panes the cache brought up to date with their new rows only.
    pub cache_delta: u64,
    /// Resident memory, from /proc (0 where unknown).
    pub rss_bytes: u64,
    /// ssh hosts it holds (each with its master connection, up while
    /// used and for its idle time after).
    #[serde(default)]
    pub ssh_hosts: usize,
}

/// What a session runs under: its client's own flags, resolved by the
/// client (so a relative path or the client's `$TMUX` means what it meant
/// there).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SessionSpec {
    /// The default tmux server (`--socket-name`).
    pub socket_name: Option<String>,
    /// The default tmux server (`--socket-path`, or the client's `$TMUX`).
    pub socket_path: Option<PathBuf>,
    /// `--allow-socket-dir`, absolute.
    pub allow_socket_dirs: Vec<PathBuf>,
    /// `--log-dir`, absolute.
    pub log_dir: Option<PathBuf>,
    /// The variables create_session may copy (defaults included).
    pub pass_env: Vec<String>,
    /// Their values in the client's environment: a new session gets the
    /// serve's, not the daemon's.
    #[serde(default)]
    pub pass_env_values: Vec<(String, String)>,
    /// `--tier`.
    pub tier: Tier,
    /// The ceilings, with the client's flags applied.
    pub ceilings: Ceilings,
    /// Whether the session uses the shared pane cache (`--no-cache`: no).
    pub cache: bool,
    /// `--no-events` turned off.
    pub wait_events: bool,
    /// `--no-redact` turned off.
    pub redact: bool,
    /// What the daemon's own process must match to serve this session.
    pub env: SessionEnv,
    /// The serve flags (clap ids) its client set, on the command line or
    /// in the environment: the daemon's own flags stand for the others.
    #[serde(default)]
    pub explicit: Vec<String>,
    /// `--allow-own-pane`.
    #[serde(default)]
    pub allow_own_pane: bool,
    /// Where the client runs, as serve sees it; the daemon checks it
    /// against the connection's peer (`daemon/caller.rs`).
    #[serde(default)]
    pub caller: CallerSpec,
    /// `--ssh` and its options (`None`: none given; the daemon's own
    /// hosts).
    #[serde(default)]
    pub ssh: Option<SshSpec>,
    /// `--journal-dir`, absolute, when its client gave it (`None`: the
    /// daemon's own).
    #[serde(default)]
    pub journal_dir: Option<PathBuf>,
}

/// A session's ssh hosts and their options, as its serve was given them:
/// the daemon's host table shares a master connection between sessions
/// only where all of it is the same.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SshSpec {
    /// `--ssh DEST`, as written, in order.
    pub hosts: Vec<String>,
    /// `--ssh-config`, absolute.
    pub config_file: Option<PathBuf>,
    /// `--ssh-compress`.
    pub compression: bool,
    /// `--ssh-connect-timeout`, seconds.
    pub connect_timeout_secs: u64,
    /// The variables ssh keeps, as serve has them (its agent socket).
    pub env: Vec<(String, String)>,
}

impl SshSpec {
    /// The spec of `settings` (serve's, checked).
    pub fn of(settings: &ssh::Settings) -> SshSpec {
        SshSpec {
            hosts: settings.hosts.iter().map(|d| d.text.clone()).collect(),
            config_file: settings.config_file.clone(),
            compression: settings.compression,
            connect_timeout_secs: settings.connect_timeout.as_secs(),
            env: settings
                .env
                .iter()
                .filter_map(|(k, v)| v.to_str().map(|v| (k.clone(), v.to_owned())))
                .collect(),
        }
    }

    /// The settings it asks for, its destinations checked again.
    pub fn settings(&self) -> Result<ssh::Settings, String> {
        let hosts = self
            .hosts
            .iter()
            .map(|t| ssh::dest::parse(t).map_err(|e| e.to_string()))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(ssh::Settings {
            config_file: self.config_file.clone(),
            hosts,
            compression: self.compression,
            connect_timeout: std::time::Duration::from_secs(self.connect_timeout_secs),
            env: self
                .env
                .iter()
                .map(|(k, v)| (k.clone(), v.into()))
                .collect(),
        })
    }
}

/// What identifies the client a session serves: serve's `$TMUX` and
/// `$TMUX_PANE`, its pid and its parents. The daemon believes none of it
/// blindly: the pid must be the connection's peer (SO_PEERCRED), the
/// variables those of that process's environment, and the parents are
/// read again from `/proc`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallerSpec {
    /// `$TMUX` (`None`: unset or empty).
    pub tmux: Option<String>,
    /// `$TMUX_PANE` (`None`: unset or empty).
    pub tmux_pane: Option<String>,
    /// serve's own pid.
    pub pid: u32,
    /// serve's parents, nearest first, as serve read them.
    pub parents: Vec<u32>,
}

impl CallerSpec {
    /// This process's.
    pub fn here() -> Self {
        let var = |name: &str| {
            std::env::var_os(name)
                .filter(|v| !v.is_empty())
                .map(|v| v.to_string_lossy().into_owned())
        };
        let pid = std::process::id();
        let mut parents = crate::tmux::procfs::ancestors(pid);
        parents.retain(|p| *p != pid);
        CallerSpec {
            tmux: var("TMUX"),
            tmux_pane: var("TMUX_PANE"),
            pid,
            parents,
        }
    }
}

/// The parts of a process's surroundings that every session of a daemon
/// shares: a session whose client has others is not served there.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionEnv {
    /// The tmux program (`--tmux`, `PANESCAN_TMUX`, PATH).
    pub tmux: PathBuf,
    /// `$TMUX_TMPDIR` (where `-L NAME` sockets are).
    pub tmux_tmpdir: Option<PathBuf>,
}

impl SessionEnv {
    /// This process's.
    pub fn here() -> Self {
        SessionEnv {
            tmux: crate::tmux::binary::program().to_owned(),
            tmux_tmpdir: std::env::var_os("TMUX_TMPDIR")
                .filter(|v| !v.is_empty())
                .map(PathBuf::from),
        }
    }
}

/// The flags of the search ceilings (any one set: all come from the client).
const CEILING_FLAGS: [&str; 6] = [
    "max_scan_bytes",
    "max_scan_lines",
    "max_timeout_ms",
    "max_scrollback_lines",
    "max_panes",
    "max_matches",
];

impl SessionSpec {
    /// This spec with `defaults` (the daemon's flags) for every flag its
    /// client did not set.
    pub fn over(&self, defaults: &SessionSpec) -> SessionSpec {
        let set = |id: &str| self.explicit.iter().any(|e| e == id);
        let mut spec = self.clone();
        if !set("socket_name") && !set("socket_path") {
            spec.socket_name = defaults.socket_name.clone();
            spec.socket_path = defaults.socket_path.clone();
        }
        if !set("allow_socket_dirs") {
            spec.allow_socket_dirs = defaults.allow_socket_dirs.clone();
        }
        if !set("log_dir") {
            spec.log_dir = defaults.log_dir.clone();
        }
        if !set("pass_env") {
            spec.pass_env = defaults.pass_env.clone();
        }
        if !set("tier") {
            spec.tier = defaults.tier;
        }
        if !CEILING_FLAGS.iter().any(|f| set(f)) {
            spec.ceilings = defaults.ceilings.clone();
        }
        if !set("no_cache") {
            spec.cache = defaults.cache;
        }
        if !set("no_events") {
            spec.wait_events = defaults.wait_events;
        }
        if !set("no_redact") {
            spec.redact = defaults.redact;
        }
        if !set("allow_own_pane") {
            spec.allow_own_pane = defaults.allow_own_pane;
        }
        if spec.journal_dir.is_none() {
            spec.journal_dir = defaults.journal_dir.clone();
        }
        spec
    }

    /// The session's configuration: `hosts` are the ssh hosts it may name,
    /// `cache_bytes` the pane cache's size (which the daemon, not the
    /// session, decides when it shares one).
    pub fn config(&self, hosts: Vec<String>, cache_bytes: Option<usize>) -> ServeConfig {
        ServeConfig {
            pass_env: self.pass_env.clone(),
            pass_env_values: Some(self.pass_env_values.clone()),
            server: ServerSpec {
                socket_name: self.socket_name.clone(),
                socket_path: self.socket_path.clone(),
                host: None,
            },
            hosts,
            tier: self.tier,
            ceilings: self.ceilings.clone(),
            cache_bytes: cache_bytes.filter(|_| self.cache),
            wait_events: self.wait_events,
            redact: self.redact,
            sockets: SocketPolicy::new(self.allow_socket_dirs.clone()),
            log_dir: self.log_dir.clone(),
            caller: None,
            allow_own_pane: self.allow_own_pane,
            host_ids: None,
            journal_dir: self.journal_dir.clone(),
        }
    }
}

/// Writes `value` as one line and flushes.
pub fn send<T: Serialize>(out: &mut impl Write, value: &T) -> std::io::Result<()> {
    let mut line = serde_json::to_vec(value).map_err(std::io::Error::other)?;
    line.push(b'\n');
    out.write_all(&line)?;
    out.flush()
}

/// Reads one handshake line (at most [`MAX_HANDSHAKE_BYTES`]) as `T`.
/// Reads byte by byte through `input`'s own buffer: nothing after the
/// line is consumed, so the MCP lines that follow stay in the stream.
pub fn receive<T: for<'de> Deserialize<'de>>(input: &mut impl BufRead) -> Result<T, String> {
    let mut line = Vec::new();
    let read = input
        .by_ref()
        .take(MAX_HANDSHAKE_BYTES)
        .read_until(b'\n', &mut line)
        .map_err(|e| format!("handshake: {e}"))?;
    if read == 0 {
        return Err("the other side closed the connection".into());
    }
    if line.last() != Some(&b'\n') {
        return Err("handshake line too long or cut short".into());
    }
    serde_json::from_slice(&line).map_err(|e| format!("handshake: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_round_trips_and_leaves_what_follows() {
        let hello = Hello {
            panescan_daemon: "1".into(),
            build: "b".into(),
            pid: 7,
        };
        let mut bytes = Vec::new();
        assert!(send(&mut bytes, &hello).is_ok());
        bytes.extend_from_slice(b"{\"jsonrpc\":\"2.0\"}\n");
        let mut input = std::io::BufReader::new(&bytes[..]);
        assert_eq!(receive::<Hello>(&mut input), Ok(hello));
        let mut rest = String::new();
        let _ = input.read_to_string(&mut rest);
        assert_eq!(rest, "{\"jsonrpc\":\"2.0\"}\n");
    }

    #[test]
    fn a_line_without_end_is_refused() {
        let long = vec![b'x'; MAX_HANDSHAKE_BYTES as usize + 10];
        let mut input = std::io::BufReader::new(&long[..]);
        assert!(receive::<Hello>(&mut input).is_err());
        let mut input = std::io::BufReader::new(&b"{}"[..]);
        assert!(receive::<Hello>(&mut input).is_err());
    }
}
