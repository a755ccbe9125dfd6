//! The operator's settings: what `panescan serve` is started with (and
//! what the command line, benches and tests pass in-process). Every layer
//! reads them; none changes them while serving.
//!
//! - [`ServeConfig`] — the default tmux server, the tier, the ceilings,
//!   the pane cache's size, where a call's socket may be, where pipe_pane
//!   may write.
//! - [`Ceilings`] — what one call may ask for, in every tool.
//! - [`SearchCeilings`] — `search_panes`' defaults and ceilings.
//! - [`Tier`] — which tools exist at all.

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::tmux::caller::CallerPane;
use crate::tmux::reach::SocketPolicy;
use crate::tmux::ServerSpec;

/// Safety tiers, each including the ones before it.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Default,
    clap::ValueEnum,
    Serialize,
    Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum Tier {
    /// Looks, never touches.
    #[default]
    Readonly,
    /// Changes tmux state but destroys nothing (send keys, rename).
    Mutating,
    /// Kills panes, windows, sessions.
    Destructive,
}

impl Tier {
    /// The name the command line and `tools/list` errors use.
    pub fn as_str(self) -> &'static str {
        match self {
            Tier::Readonly => "readonly",
            Tier::Mutating => "mutating",
            Tier::Destructive => "destructive",
        }
    }
}

impl fmt::Display for Tier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Ceilings the operator sets for every call. Callers may ask for less,
/// never for more: asking for more is an error naming the ceiling.
/// (Serialized: a daemon's session receives its client's.)
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Ceilings {
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
    /// `wait_for_text`'s timeout when the caller gives none.
    pub wait_default: Duration,
    /// `wait_for_text`'s longest timeout.
    pub wait_max: Duration,
    /// Time any one tmux round trip may take.
    pub tmux_timeout: Duration,
    /// `search_panes`: defaults and ceilings of its budgets.
    pub search: SearchCeilings,
}

impl Default for Ceilings {
    fn default() -> Self {
        Ceilings {
            capture_bytes: 256 * 1024,
            capture_lines: 10_000,
            capture_default_lines: 200,
            list_rows: 500,
            response_bytes: 1_000_000,
            wait_default: Duration::from_secs(8),
            wait_max: Duration::from_secs(120),
            tmux_timeout: Duration::from_secs(10),
            search: SearchCeilings::default(),
        }
    }
}

/// The operator's ceilings and the defaults of `search_panes`. A caller may
/// ask for less than a ceiling, never for more.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SearchCeilings {
    /// Scrollback lines a caller may ask for per pane.
    pub max_scrollback_lines: u64,
    /// Panes searched in one call; more candidates set `pane_limit_clamped`.
    pub max_panes: usize,
    /// Default of `max_scan_bytes`.
    pub default_scan_bytes: u64,
    /// Ceiling of `max_scan_bytes`.
    pub max_scan_bytes: u64,
    /// Default of `max_scan_lines`.
    pub default_scan_lines: u64,
    /// Ceiling of `max_scan_lines`.
    pub max_scan_lines: u64,
    /// Default of `timeout_ms`.
    pub default_timeout: Duration,
    /// Ceiling of `timeout_ms`.
    pub max_timeout: Duration,
    /// Default of `max_matches` (matching lines in all).
    pub default_matches: u64,
    /// Ceiling of `max_matches`.
    pub max_matches: u64,
    /// Default of `max_matches_per_pane`.
    pub default_matches_per_pane: u64,
    /// Ceiling of `max_matches_per_pane`.
    pub max_matches_per_pane: u64,
    /// Default of `limit` (matching panes per page).
    pub default_page: usize,
    /// Ceiling of `limit`.
    pub max_page: usize,
    /// Bytes of one pane's capture kept for scanning; a larger capture
    /// keeps its newest lines and sets `captures_byte_clamped`.
    pub max_capture_bytes: usize,
}

impl Default for SearchCeilings {
    /// Generous: 500 panes x 10,000 lines of 100 bytes complete within
    /// the defaults.
    fn default() -> Self {
        SearchCeilings {
            max_scrollback_lines: 1_000_000,
            max_panes: 10_000,
            default_scan_bytes: 1 << 30,
            max_scan_bytes: 16 << 30,
            default_scan_lines: 10_000_000,
            max_scan_lines: 200_000_000,
            default_timeout: Duration::from_secs(60),
            max_timeout: Duration::from_secs(600),
            default_matches: 500,
            max_matches: 10_000,
            default_matches_per_pane: 20,
            max_matches_per_pane: 10_000,
            default_page: 100,
            max_page: 10_000,
            max_capture_bytes: 256 << 20,
        }
    }
}

/// `panescan serve`'s configuration.
#[derive(Debug, Clone)]
pub struct ServeConfig {
    /// The tmux server used when a call names none (`--socket-name` /
    /// `--socket-path`; both unset: the one `tmux` itself would use).
    pub server: ServerSpec,
    /// The tools that exist (`--tier`).
    pub tier: Tier,
    /// What one call may ask for.
    pub ceilings: Ceilings,
    /// Bytes of pane text kept between calls (`None`: `--no-cache`, every
    /// call captures everything it reads).
    pub cache_bytes: Option<usize>,
    /// Where a socket named by a tool argument may be (`--allow-socket-dir`).
    pub sockets: SocketPolicy,
    /// `wait_for_text` wakes on tmux's output events (`false`:
    /// `--no-events`, every watched pane is polled).
    pub wait_events: bool,
    /// The directory `pipe_pane` may append pane output to (`--log-dir`,
    /// absolute; `None`: pipe_pane is refused).
    pub log_dir: Option<PathBuf>,
    /// Secrets in returned pane text are replaced with `[REDACTED:KIND]`
    /// (`false`: `--no-redact`, the text is returned as the pane shows it).
    pub redact: bool,
    /// The hosts a call may name in `host` (`--ssh DEST`, as written, in
    /// order); their ssh settings live in [`crate::tmux::ssh`].
    pub hosts: Vec<String>,
    /// What [`ServerSpec::host`] names each of `hosts` by in the ssh host
    /// table, in the same order (`None`: the names themselves). A daemon
    /// registers a session's hosts with their options: the same name
    /// with other options is another host.
    pub host_ids: Option<Vec<String>>,
    /// The variables of panescan's environment `create_session` may copy
    /// into a new session when tmux's `update-environment` lists them
    /// (tmux's default list and `--pass-env NAME`).
    pub pass_env: Vec<String>,
    /// The values of those variables in the environment of the client this
    /// session serves, where that is not this process (a daemon's session:
    /// its serve's, sent at the start); `None`: this process's own.
    pub pass_env_values: Option<Vec<(String, String)>>,
    /// Where the client this session serves runs (its pane, its
    /// processes), where that is not this process (a daemon's session: its
    /// serve's, checked by the daemon); `None`: this process's own.
    pub caller: Option<Arc<CallerPane>>,
    /// send_keys, paste_text and run_command may type into the pane the
    /// client runs in (`--allow-own-pane`; off: refused, typing into one's
    /// own input is a loop).
    pub allow_own_pane: bool,
    /// Where search_panes `journal: true` and `since_time` read the journal
    /// (`--journal-dir` or its default; `None`: no place is known). Read
    /// only when it exists: `panescan daemon --journal` writes it.
    pub journal_dir: Option<PathBuf>,
}

impl Default for ServeConfig {
    fn default() -> Self {
        ServeConfig {
            server: ServerSpec::default(),
            tier: Tier::default(),
            ceilings: Ceilings::default(),
            cache_bytes: Some(crate::cache::DEFAULT_MAX_BYTES),
            sockets: SocketPolicy::default(),
            wait_events: true,
            log_dir: None,
            redact: true,
            hosts: Vec::new(),
            pass_env: crate::tmux::client_env::DEFAULT_PASSED_TO_SESSIONS
                .iter()
                .map(|s| (*s).to_owned())
                .collect(),
            pass_env_values: None,
            caller: None,
            allow_own_pane: false,
            host_ids: None,
            journal_dir: None,
        }
    }
}
