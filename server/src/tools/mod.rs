//! One module per tool family. Each tool turns validated arguments into a
//! structured result; [`all`] is the registry's table of every tool.
//!
//! - [`inspect`] — list and get sessions, windows, panes, the server.
//! - [`capture`] — capture_pane, capture_since, snapshot_pane.
//! - [`options`] — options, environment, hooks, format variables, display_message.
//! - [`search`] — search_panes, the reason panescan exists.
//! - [`wait`] — wait_for_text, watch_panes.
//! - [`batch`] — call_read_tools_batch.
//! - [`layout`] — create_session, create_window, split_window, select_pane,
//!   select_window, resize_pane, rename_session, move_window, swap_pane (mutating tier).
//! - [`settings`] — set_option (within [`option_rule`]), set_environment
//!   (mutating tier).
//! - [`channels`] — wait_for_channel, signal_channel (mutating tier).
//! - [`buffers`] — show_buffer; paste_text (mutating tier).
//! - [`servers`] — list_servers.
//! - [`mutate`] — send_keys, rename_window, set_pane_title, clear_history (mutating tier).
//! - [`logging`] — pipe_pane (mutating tier).
//! - [`run`] — run_command, wait_for_command (mutating tier).
//! - [`own_pane`] — the typing tools' refusal of the client's own pane.
//! - [`destroy`] — kill_pane, kill_window, kill_session (destructive tier).
//! - [`lifecycle`] — respawn_pane, kill_server (destructive tier).
//!
//! [`registry`]: the [`registry::Tool`] trait and the rows every listing reads;
//! [`schema`]: the schemas from the Rust types; [`context`]: what a call gets;
//! [`format_guard`]: which caller formats display_message may hand to tmux.

pub(crate) mod batch;
pub(crate) mod buffers;
pub(crate) mod capture;
pub(crate) mod channels;
pub(crate) mod commands;
pub(crate) mod context;
pub(crate) mod cursor_key;
pub(crate) mod destroy;
pub(crate) mod filters;
pub(crate) mod format_guard;
pub(crate) mod inspect;
pub(crate) mod layout;
pub(crate) mod lifecycle;
pub(crate) mod logging;
pub(crate) mod mutate;
pub(crate) mod option_rule;
pub(crate) mod options;
pub(crate) mod own_pane;
pub(crate) mod registry;
pub(crate) mod run;
pub(crate) mod schema;
pub(crate) mod search;
pub(crate) mod servers;
pub(crate) mod settings;
pub(crate) mod wait;

use std::sync::{Arc, Mutex, OnceLock};

use crate::tmux::caller::CallerPane;
use crate::tmux::{
    Fields, Inventory, Pane, PaneId, ServerSpec, SessionId, Tmux, TmuxError, WindowId,
};
use context::{ErrorKind, ServerArgs, ToolContext, ToolError};
use registry::ToolEntry;

/// Every tool panescan has, in the order `tools/list` shows them. The
/// registry keeps those of the configured tier.
pub fn all() -> Vec<ToolEntry> {
    vec![
        ToolEntry::of::<search::SearchPanes>(),
        ToolEntry::of::<inspect::ListSessions>(),
        ToolEntry::of::<inspect::ListWindows>(),
        ToolEntry::of::<inspect::ListPanes>(),
        ToolEntry::of::<inspect::GetServerInfo>(),
        ToolEntry::of::<inspect::GetSessionInfo>(),
        ToolEntry::of::<inspect::GetWindowInfo>(),
        ToolEntry::of::<inspect::GetPaneInfo>(),
        ToolEntry::of::<inspect::FindPaneByPosition>(),
        ToolEntry::of::<capture::CapturePane>(),
        ToolEntry::of::<capture::CaptureSince>(),
        ToolEntry::of::<capture::SnapshotPane>(),
        ToolEntry::of::<options::GetTmuxVariables>(),
        ToolEntry::of::<options::ShowOption>(),
        ToolEntry::of::<options::ShowEnvironment>(),
        ToolEntry::of::<options::ShowHooks>(),
        ToolEntry::of::<options::DisplayMessage>(),
        ToolEntry::of::<wait::WaitForText>(),
        ToolEntry::of::<buffers::ShowBuffer>(),
        ToolEntry::of::<servers::ListServers>(),
        ToolEntry::of::<commands::ListCommands>(),
        ToolEntry::of::<commands::GetCommandOutput>(),
        ToolEntry::of::<wait::WatchPanes>(),
        ToolEntry::of::<batch::CallReadToolsBatch>(),
        ToolEntry::of::<mutate::SendKeys>(),
        ToolEntry::of::<mutate::RenameWindow>(),
        ToolEntry::of::<mutate::SetPaneTitle>(),
        ToolEntry::of::<layout::create::CreateSession>(),
        ToolEntry::of::<layout::create::CreateWindow>(),
        ToolEntry::of::<layout::create::SplitWindow>(),
        ToolEntry::of::<layout::arrange::SelectPane>(),
        ToolEntry::of::<layout::arrange::SelectWindow>(),
        ToolEntry::of::<layout::arrange::ResizePane>(),
        ToolEntry::of::<layout::arrange::RenameSession>(),
        ToolEntry::of::<layout::arrange::MoveWindow>(),
        ToolEntry::of::<layout::arrange::SwapPane>(),
        ToolEntry::of::<settings::SetOption>(),
        ToolEntry::of::<settings::SetEnvironment>(),
        ToolEntry::of::<channels::WaitForChannel>(),
        ToolEntry::of::<channels::SignalChannel>(),
        ToolEntry::of::<mutate::ClearHistory>(),
        ToolEntry::of::<buffers::PasteText>(),
        ToolEntry::of::<logging::PipePane>(),
        ToolEntry::of::<run::RunCommand>(),
        ToolEntry::of::<run::WaitForCommand>(),
        ToolEntry::of::<destroy::KillPane>(),
        ToolEntry::of::<destroy::KillWindow>(),
        ToolEntry::of::<destroy::KillSession>(),
        ToolEntry::of::<lifecycle::RespawnPane>(),
        ToolEntry::of::<lifecycle::KillServer>(),
    ]
}

/// Handles opened by tools, closed at shutdown.
fn opened() -> &'static Mutex<Vec<Tmux>> {
    static OPENED: OnceLock<Mutex<Vec<Tmux>>> = OnceLock::new();
    OPENED.get_or_init(|| Mutex::new(Vec::new()))
}

/// tmux servers the tools hold a connection to (what a daemon follows).
pub fn connections_open() -> usize {
    crate::sync::lock(opened()).len()
}

/// Closes every tmux connection the tools opened (at shutdown), so no
/// control client stays attached.
pub fn shutdown_connections() {
    let handles = std::mem::take(&mut *crate::sync::lock(opened()));
    for t in handles {
        t.shutdown();
    }
    crate::tmux::ssh::shutdown();
}

impl ToolContext {
    /// The tmux server a call names, else the one panescan serves. A
    /// server a call names is checked first ([`crate::tmux::reach`]): a
    /// socket outside the allowed places is refused before any tmux client
    /// starts, and tmux is given the resolved path.
    ///
    /// On another host ([`Self::host`]) panescan cannot look at a socket:
    /// only `socket_name` is taken there (a plain name, as tmux's `-L`;
    /// none: that host's default server); a `socket_path` is refused. The
    /// operator's `--socket-name` / `--socket-path` are this machine's.
    pub fn server_spec(&self, server: &ServerArgs) -> Result<ServerSpec, ToolError> {
        if let Some(host) = self.host(server.host.as_deref())? {
            if server.socket_path.is_some() {
                return Err(ToolError::refused(format!(
                    "socket_path cannot be used with host {host}: panescan cannot check a socket on another machine; pass socket_name (a plain name, as tmux -L)"
                )));
            }
            let socket_name = server.socket_name.clone();
            if let Some(name) = &socket_name {
                crate::tmux::reach::check_name(name).map_err(ToolError::from)?;
            }
            return Ok(ServerSpec {
                host: Some(host),
                socket_name,
                socket_path: None,
            });
        }
        let asked = ServerSpec {
            socket_name: server.socket_name.clone(),
            socket_path: server.socket_path.clone(),
            host: None,
        };
        self.config
            .sockets
            .confine(&asked, &self.config.server)
            .map_err(ToolError::from)
    }

    /// The host a call's `host` names: `None` for this machine (no host,
    /// or `"local"`), else the id of one the operator configured
    /// (`--ssh`; [`crate::config::ServeConfig::host_ids`]); any other name
    /// is refused, so nothing a caller writes reaches ssh.
    pub fn host(&self, asked: Option<&str>) -> Result<Option<String>, ToolError> {
        match asked {
            None | Some(crate::tmux::ssh::LOCAL) => Ok(None),
            Some(h) if self.config.hosts.iter().any(|c| c == h) => {
                let at = self.config.hosts.iter().position(|c| c == h);
                let id = (self.config.host_ids.as_ref())
                    .zip(at)
                    .and_then(|(ids, at)| ids.get(at));
                Ok(Some(id.map_or(h, String::as_str).to_owned()))
            }
            Some(h) => Err(ToolError::refused(format!(
                "host {h:?} is not configured: hosts are \"local\"{}{}",
                if self.config.hosts.is_empty() {
                    ""
                } else {
                    ", "
                },
                self.config
                    .hosts
                    .iter()
                    .map(|h| format!("{h:?}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ))),
        }
    }

    /// A handle on the server [`Self::server_spec`] picks (nothing connects
    /// until the first request).
    pub fn tmux(&self, server: &ServerArgs) -> Result<Tmux, ToolError> {
        let spec = self.server_spec(server)?;
        let tmux = Tmux::shared(&spec)
            .map_err(ToolError::from)?
            .for_caller(self.caller());
        if let Ok(mut v) = opened().lock() {
            if !v.iter().any(|t| t.spec() == &spec) {
                v.push(tmux.clone());
            }
        }
        Ok(tmux)
    }

    /// Where the client of this call's session runs: its serve's (a
    /// daemon's session), else this process's.
    pub fn caller(&self) -> Arc<CallerPane> {
        self.config
            .caller
            .clone()
            .unwrap_or_else(CallerPane::of_process)
    }

    /// Every session, window and pane of the server with every field
    /// ([`Fields::Full`]), within the per-round-trip timeout and
    /// abandoned if the call is cancelled.
    pub fn inventory(&self, tmux: &Tmux) -> Result<Inventory, ToolError> {
        self.inventory_by(tmux, self.tmux_deadline())
    }

    /// [`Self::inventory`] answered by `deadline`.
    pub fn inventory_by(
        &self,
        tmux: &Tmux,
        deadline: std::time::Instant,
    ) -> Result<Inventory, ToolError> {
        self.inventory_of(tmux, Fields::Full, deadline)
    }

    /// [`Self::inventory`] with only `fields` (the others left at their
    /// defaults): tmux expands every field of every pane on its one
    /// thread, so a call that reads a few asks for those (on 200 panes the
    /// full listing costs tmux ~30 ms, the search's fields ~5 ms).
    pub fn inventory_of(
        &self,
        tmux: &Tmux,
        fields: Fields,
        deadline: std::time::Instant,
    ) -> Result<Inventory, ToolError> {
        let tmux = tmux.clone();
        self.cancellable(move || tmux.inventory(fields, &[], deadline).map(|(inv, _)| inv))
    }

    /// Runs one tmux round trip (which ends by its own deadline) on a
    /// helper thread, so a cancel ends the call at once even while tmux is
    /// not answering.
    pub fn cancellable<T: Send + 'static>(
        &self,
        round_trip: impl FnOnce() -> Result<T, TmuxError> + Send + 'static,
    ) -> Result<T, ToolError> {
        self.check_cancelled()?;
        let (tx, rx) = crossbeam_channel::bounded(1);
        std::thread::Builder::new()
            .name("tmux-round-trip".into())
            .spawn(move || {
                let _ = tx.send(round_trip());
            })
            .map_err(|e| {
                ToolError::internal(format!("cannot start a thread for tmux: {e}; retry"))
            })?;
        loop {
            match rx.recv_timeout(std::time::Duration::from_millis(20)) {
                Ok(result) => return result.map_err(ToolError::from),
                Err(crossbeam_channel::RecvTimeoutError::Timeout) => self.check_cancelled()?,
                Err(crossbeam_channel::RecvTimeoutError::Disconnected) => {
                    return Err(ToolError::internal(
                        "the tmux request ended without an answer; retry",
                    ))
                }
            }
        }
    }
}

impl From<TmuxError> for ToolError {
    fn from(e: TmuxError) -> Self {
        let kind = match &e {
            TmuxError::NoServer { .. }
            | TmuxError::ConnectionLost(_)
            | TmuxError::Spawn(_)
            | TmuxError::Unreachable { .. } => ErrorKind::TmuxUnavailable,
            TmuxError::Timeout => ErrorKind::TimedOut,
            TmuxError::Cancelled => ErrorKind::Cancelled,
            TmuxError::NotFound(_) => ErrorKind::NotFound,
            TmuxError::Refused(_) => ErrorKind::Refused,
            // tmux rejected what was asked (a target, an option name).
            TmuxError::Command(_) | TmuxError::Invalid(_) => ErrorKind::InvalidArgument,
        };
        ToolError::of(kind, e.to_string())
    }
}

/// At most this many ids are named in a "what exists" error.
const LIST_IN_ERRORS: usize = 20;

/// `"%0 %1 %2 ... (12 more)"`.
pub fn bounded_list<I: IntoIterator<Item = String>>(items: I) -> String {
    let items: Vec<String> = items.into_iter().collect();
    if items.is_empty() {
        return "none".into();
    }
    let shown = items.len().min(LIST_IN_ERRORS);
    let mut s = items[..shown].join(" ");
    if items.len() > shown {
        s.push_str(&format!(" ... ({} more)", items.len() - shown));
    }
    s
}

/// The pane, or an error that lists the panes that exist.
pub fn find_pane(inv: &Inventory, id: PaneId) -> Result<&Pane, ToolError> {
    inv.panes.iter().find(|p| p.pane_id == id).ok_or_else(|| {
        ToolError::not_found(format!(
            "no pane {id}; panes: {}",
            bounded_list(inv.panes.iter().map(|p| p.pane_id.to_string()))
        ))
    })
}

/// The window, or an error that lists the windows that exist.
pub fn find_window(inv: &Inventory, id: WindowId) -> Result<&crate::tmux::Window, ToolError> {
    inv.windows
        .iter()
        .find(|w| w.window_id == id)
        .ok_or_else(|| {
            ToolError::not_found(format!(
                "no window {id}; windows: {}",
                bounded_list(inv.windows.iter().map(|w| w.window_id.to_string()))
            ))
        })
}

/// A session by id (`$N`) or exact name, or an error listing sessions.
pub fn find_session<'a>(
    inv: &'a Inventory,
    key: &str,
) -> Result<&'a crate::tmux::Session, ToolError> {
    let found = if key.starts_with('$') {
        let id = SessionId::parse(key).map_err(ToolError::from)?;
        inv.sessions.iter().find(|s| s.session_id == id)
    } else {
        inv.sessions.iter().find(|s| s.session_name == key)
    };
    found.ok_or_else(|| {
        ToolError::not_found(format!(
            "no session {key:?}; sessions: {}",
            bounded_list(
                inv.sessions
                    .iter()
                    .map(|s| format!("{} ({})", s.session_id, s.session_name))
            )
        ))
    })
}

/// Cuts `text` to at most `max` bytes on a char boundary; says whether it cut.
pub fn cut_to_bytes(text: &mut String, max: usize) -> bool {
    if text.len() <= max {
        return false;
    }
    let mut end = max;
    while end > 0 && !text.is_char_boundary(end) {
        end -= 1;
    }
    text.truncate(end);
    true
}

/// The bytes `text` takes inside a JSON string as serde_json writes it
/// (its quotes aside): `"`, `\` and the short escapes 2, other C0 controls
/// 6 (`\u0001`), every other byte 1. What a result costs in a response,
/// for tools that cut their result to fit one.
pub fn json_str_len(text: &str) -> usize {
    text.bytes()
        .map(|b| match b {
            b'"' | b'\\' | b'\n' | b'\r' | b'\t' | 0x08 | 0x0c => 2,
            0x00..=0x1f => 6,
            _ => 1,
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        #[test]
        fn json_str_len_is_what_serde_json_writes(text in "(?s).{0,64}") {
            let encoded = serde_json::to_string(&text).unwrap_or_default();
            proptest::prop_assert_eq!(json_str_len(&text) + 2, encoded.len());
        }
    }

    #[test]
    fn json_str_len_counts_every_ascii_byte_as_serde_json_does() {
        for b in 0u8..0x80 {
            let text = char::from(b).to_string();
            let encoded = serde_json::to_string(&text).unwrap_or_default();
            assert_eq!(json_str_len(&text) + 2, encoded.len(), "byte {b:#04x}");
        }
    }
}
