//! respawn_pane and kill_server (destructive tier): restart a pane's
//! program, end a whole server. Neither touches what panescan runs in: its
//! own pane is not respawned, and a server panescan runs inside is not
//! killed.

use std::path::Path;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::context::{ServerArgs, ToolContext, ToolError};
use super::find_pane;
use crate::config::Tier;
use crate::tmux::{PaneId, TmuxCommand};
use crate::tools::registry::{Annotations, Tool};

/// Longest command respawn_pane runs.
const MAX_COMMAND_BYTES: usize = 16 * 1024;
/// Longest start directory.
const MAX_PATH_BYTES: usize = 4096;

#[derive(Debug, Deserialize, JsonSchema)]
// A wire type: its doc comments would be schema descriptions every client
// reads in tools/list; the tool's description and the field names say it.
#[allow(missing_docs)]
pub struct RespawnPaneArgs {
    /// Pane id, e.g. %1.
    pub pane_id: PaneId,
    /// Shell command to run instead of the pane's first one.
    #[serde(default)]
    pub command: Option<String>,
    /// Absolute path of an existing directory to start in.
    #[serde(default)]
    pub start_directory: Option<String>,
    /// Kill what runs there first (else only a dead pane is respawned).
    #[serde(default)]
    pub kill: bool,
    #[serde(flatten)]
    pub server: ServerArgs,
}

#[derive(Debug, Serialize, JsonSchema)]
// A wire type: its doc comments would be schema descriptions every client
// reads in tools/list; the tool's description and the field names say it.
#[allow(missing_docs)]
pub struct RespawnPaneResult {
    pub pane_id: PaneId,
    pub killed: bool,
}

/// An absolute, existing directory without control characters.
pub(crate) fn check_directory(dir: &str) -> Result<(), ToolError> {
    if dir.len() > MAX_PATH_BYTES || dir.chars().any(char::is_control) {
        return Err(ToolError::invalid(format!(
            "start_directory must be at most {MAX_PATH_BYTES} bytes without control characters"
        )));
    }
    let path = Path::new(dir);
    if !path.is_absolute() {
        return Err(ToolError::invalid(format!(
            "start_directory {dir:?} must be an absolute path"
        )));
    }
    if !path.is_dir() {
        return Err(ToolError::not_found(format!(
            "start_directory {dir:?} is not an existing directory"
        )));
    }
    Ok(())
}

fn check_command(command: &str) -> Result<(), ToolError> {
    if command.len() > MAX_COMMAND_BYTES {
        return Err(ToolError::invalid(format!(
            "command is {} bytes; at most {MAX_COMMAND_BYTES}",
            command.len()
        )));
    }
    if command.contains('\0') {
        return Err(ToolError::invalid(
            "command contains a NUL character, which tmux cannot pass; remove it",
        ));
    }
    Ok(())
}

#[derive(Debug)]
/// `respawn_pane` (destructive tier): restarts a pane's program, refusing panescan's own pane.
pub struct RespawnPane;

impl Tool for RespawnPane {
    const NAME: &'static str = "respawn_pane";
    const TITLE: &'static str = "Respawn a pane";
    const DESCRIPTION: &'static str = "Restart the program of a pane (its first command, or `command`), optionally in start_directory; with kill, whatever runs there is killed first, else only a dead pane is restarted. Refuses panescan's own pane.";
    const TIER: Tier = Tier::Destructive;
    const ANNOTATIONS: Annotations = Annotations::DESTROY;
    type Args = RespawnPaneArgs;
    type Output = RespawnPaneResult;

    fn run(ctx: &ToolContext, args: Self::Args) -> Result<Self::Output, ToolError> {
        if let Some(c) = &args.command {
            check_command(c)?;
        }
        if let Some(d) = &args.start_directory {
            check_directory(d)?;
        }
        let tmux = ctx.tmux(&args.server)?;
        let inv = ctx.inventory(&tmux)?;
        let pane = find_pane(&inv, args.pane_id)?;
        if pane.is_caller == Some(true) {
            return Err(ToolError::refused(format!(
                "refused: {} is the pane panescan runs in; respawning it would end this server",
                args.pane_id
            )));
        }
        let mut c = TmuxCommand::new("respawn-pane").target(args.pane_id);
        if args.kill {
            c = c.flag("-k");
        }
        if let Some(d) = &args.start_directory {
            // tmux expands `-c` as a format: `#` doubled keeps it a path.
            c = c.flag("-c").literal_arg(d);
        }
        if let Some(command) = &args.command {
            // The command is not a format to tmux: passed as written, as one
            // argument, after `--` so a leading `-` is no flag.
            c = c.arg("--").arg(command);
        }
        ctx.check_cancelled()?;
        tmux.run(&c, ctx.tmux_deadline()).map_err(ToolError::from)?;
        Ok(RespawnPaneResult {
            pane_id: args.pane_id,
            killed: args.kill,
        })
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
// A wire type: its doc comments would be schema descriptions every client
// reads in tools/list; the tool's description and the field names say it.
#[allow(missing_docs)]
pub struct KillServerArgs {
    /// Must be true: every session, window and pane of the server ends.
    pub confirm: bool,
    #[serde(flatten)]
    pub server: ServerArgs,
}

#[derive(Debug, Serialize, JsonSchema)]
// A wire type: its doc comments would be schema descriptions every client
// reads in tools/list; the tool's description and the field names say it.
#[allow(missing_docs)]
pub struct KillServerResult {
    /// The socket of the server ended.
    pub socket_path: String,
    pub sessions: usize,
    pub panes: usize,
}

#[derive(Debug)]
/// `kill_server` (destructive tier): ends a tmux server, refusing the one panescan runs inside.
pub struct KillServer;

impl Tool for KillServer {
    const NAME: &'static str = "kill_server";
    const TITLE: &'static str = "Kill a tmux server";
    const DESCRIPTION: &'static str = "End a tmux server with every session, window and pane in it (confirm: true). Refuses the server panescan itself runs inside. Irreversible: check with get_server_info and list_sessions first.";
    const TIER: Tier = Tier::Destructive;
    const ANNOTATIONS: Annotations = Annotations::DESTROY;
    type Args = KillServerArgs;
    type Output = KillServerResult;

    fn run(ctx: &ToolContext, args: Self::Args) -> Result<Self::Output, ToolError> {
        if !args.confirm {
            return Err(ToolError::invalid(
                "confirm must be true: kill_server ends every session, window and pane of the server",
            ));
        }
        let tmux = ctx.tmux(&args.server)?;
        let socket_path = tmux.socket_path().display().to_string();
        if tmux.runs_inside(ctx.tmux_deadline()) {
            return Err(ToolError::refused(format!(
                "refused: panescan runs inside the server at {socket_path}; killing it would end this server"
            )));
        }
        let inv = ctx.inventory(&tmux)?;
        ctx.check_cancelled()?;
        let deadline = ctx.tmux_deadline();
        ctx.cancellable(move || tmux.kill_server(deadline))?;
        Ok(KillServerResult {
            socket_path,
            sessions: inv.sessions.len(),
            panes: inv.panes.len(),
        })
    }
}
