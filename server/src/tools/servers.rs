//! list_servers: the tmux servers of this user, from the sockets in the
//! user's tmux socket directory ([`crate::tmux::servers`]).
//!
//! A socket the reach rules ([`crate::tmux::reach`]) would refuse to a
//! call is listed as not reachable and never probed: listing must not
//! connect where a call may not.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::context::{ToolContext, ToolError};
use crate::tmux::servers::{probe_all, sockets_in, Probe};
use crate::tmux::{paths::resolve_socket, paths::user_socket_dir, ServerSpec};
use crate::tools::registry::{Annotations, Tool};

/// Sockets listed at most.
const MAX_SERVERS: usize = 64;
/// Longest a probe of one socket may take.
const PROBE_TIMEOUT: Duration = Duration::from_secs(2);

#[derive(Debug, Default, Deserialize, JsonSchema)]
// A wire type: the tool takes no arguments.
#[allow(missing_docs)]
pub struct ListServersArgs {}

/// What a socket was found to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ServerState {
    /// A tmux server answered.
    Alive,
    /// Nothing listens: a server died without removing its socket.
    Stale,
    /// Something listens but gave no tmux answer in time.
    Unknown,
    /// Outside the reach rules: listed, never probed.
    NotReachable,
}

#[derive(Debug, Serialize, JsonSchema)]
// A wire type: its doc comments would be schema descriptions every client
// reads in tools/list; the tool's description and the field names say it.
#[allow(missing_docs)]
pub struct ServerRow {
    /// The socket name (tmux -L NAME).
    pub socket_name: String,
    pub socket_path: String,
    pub state: ServerState,
    /// Sessions of an alive server.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sessions: Option<u32>,
    /// The server panescan serves by default.
    pub served: bool,
    /// Why a socket is unknown or not reachable.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
// A wire type: its doc comments would be schema descriptions every client
// reads in tools/list; the tool's description and the field names say it.
#[allow(missing_docs)]
pub struct ListServersResult {
    pub socket_dir: String,
    pub servers: Vec<ServerRow>,
    /// Sockets past the list's bound of 64.
    pub more_servers: usize,
}

#[derive(Debug)]
/// `list_servers`: this user's tmux servers.
pub struct ListServers;

impl Tool for ListServers {
    const NAME: &'static str = "list_servers";
    const TITLE: &'static str = "List tmux servers";
    const DESCRIPTION: &'static str = "This user's tmux servers: the sockets in the tmux socket directory, each alive (with its session count) or stale. Pass a socket_name from here to other tools to reach that server.";
    const ANNOTATIONS: Annotations = Annotations::READ_VOLATILE;
    // It names no server (a batch's socket would not fit it) and may take
    // a whole probe timeout.
    const BATCHABLE: bool = false;
    type Args = ListServersArgs;
    type Output = ListServersResult;

    fn run(ctx: &ToolContext, _args: Self::Args) -> Result<Self::Output, ToolError> {
        let dir = socket_dir();
        let (paths, more_servers) = sockets_in(&dir, MAX_SERVERS).map_err(ToolError::refused)?;
        let served = resolve_socket(&ctx.config.server)
            .ok()
            .and_then(|p| std::fs::canonicalize(p).ok());
        // The reach rules first: only what a call could reach is probed.
        let checked: Vec<Result<PathBuf, String>> = paths
            .iter()
            .map(|p| {
                let asked = ServerSpec {
                    socket_path: Some(p.clone()),
                    ..ServerSpec::default()
                };
                match ctx.config.sockets.confine(&asked, &ctx.config.server) {
                    Ok(spec) => Ok(spec.socket_path.unwrap_or_else(|| p.clone())),
                    Err(e) => Err(e.to_string()),
                }
            })
            .collect();
        let reachable: Vec<PathBuf> = checked.iter().filter_map(|c| c.clone().ok()).collect();
        let deadline = Instant::now() + PROBE_TIMEOUT.min(ctx.ceilings().tmux_timeout);
        let mut probes = ctx
            .cancellable(move || Ok(probe_all(&reachable, deadline)))?
            .into_iter();
        let servers = paths
            .iter()
            .zip(checked)
            .map(|(path, check)| {
                let probe = match check {
                    Ok(_) => probes.next(),
                    Err(_) => None,
                };
                row(path, check.err(), probe, served.as_deref())
            })
            .collect();
        Ok(ListServersResult {
            socket_dir: dir.display().to_string(),
            servers,
            more_servers,
        })
    }
}

/// The user's tmux socket directory as tmux itself finds it: the base
/// (`$TMUX_TMPDIR` or /tmp) resolved, then `tmux-UID`.
fn socket_dir() -> PathBuf {
    let dir = user_socket_dir();
    match (dir.parent(), dir.file_name()) {
        (Some(base), Some(name)) => std::fs::canonicalize(base)
            .map(|b| b.join(name))
            .unwrap_or(dir.clone()),
        _ => dir,
    }
}

fn row(
    path: &Path,
    refused: Option<String>,
    probe: Option<Probe>,
    served: Option<&Path>,
) -> ServerRow {
    let (state, sessions, reason) = match (refused, probe) {
        (Some(why), _) => (ServerState::NotReachable, None, Some(why)),
        (None, Some(Probe::Alive { sessions })) => (ServerState::Alive, Some(sessions), None),
        (None, Some(Probe::Stale)) => (ServerState::Stale, None, None),
        (None, Some(Probe::Unknown(why))) => (ServerState::Unknown, None, Some(why)),
        (None, None) => (ServerState::Unknown, None, Some("not probed".into())),
    };
    ServerRow {
        socket_name: path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
        socket_path: path.display().to_string(),
        state,
        sessions,
        served: served.is_some_and(|s| std::fs::canonicalize(path).is_ok_and(|p| p == s)),
        reason,
    }
}
