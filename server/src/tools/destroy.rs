//! The destructive tier: kill panes, windows, sessions. Each refuses to
//! kill the pane panescan itself runs in (or the window or session holding
//! it): an agent must not be able to cut off its own server.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::context::{ServerArgs, ToolContext, ToolError};
use super::{find_pane, find_session, find_window};
use crate::config::Tier;
use crate::tmux::{Inventory, PaneId, SessionId, TmuxCommand, WindowId};
use crate::tools::registry::{Annotations, Tool};

#[derive(Debug, Serialize, JsonSchema)]
// A wire type: its doc comments would be schema descriptions every client
// reads in tools/list; the tool's description and the field names say it.
#[allow(missing_docs)]
pub struct Killed {
    /// The id killed.
    pub killed: String,
    /// Panes that went with it.
    pub panes: Vec<PaneId>,
}

/// Fails when one of `panes` is panescan's own.
fn refuse_own(inv: &Inventory, panes: &[PaneId], what: &str) -> Result<(), ToolError> {
    let own = inv
        .panes
        .iter()
        .find(|p| panes.contains(&p.pane_id) && p.is_caller == Some(true));
    match own {
        Some(p) => Err(ToolError::refused(format!(
            "refused: {what} holds {}, the pane panescan runs in; killing it would end this server",
            p.pane_id
        ))),
        None => Ok(()),
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
// A wire type: its doc comments would be schema descriptions every client
// reads in tools/list; the tool's description and the field names say it.
#[allow(missing_docs)]
pub struct KillPaneArgs {
    /// Pane id, e.g. %1.
    pub pane_id: PaneId,
    #[serde(flatten)]
    pub server: ServerArgs,
}

#[derive(Debug)]
/// `kill_pane` (destructive tier): kills one pane, refusing panescan's own.
pub struct KillPane;

impl Tool for KillPane {
    const NAME: &'static str = "kill_pane";
    const TITLE: &'static str = "Kill a pane";
    const DESCRIPTION: &'static str = "Kill one pane and its processes. Refuses panescan's own pane. Irreversible: check the id with get_pane_info first.";
    const TIER: Tier = Tier::Destructive;
    const ANNOTATIONS: Annotations = Annotations::DESTROY;
    type Args = KillPaneArgs;
    type Output = Killed;

    fn run(ctx: &ToolContext, args: Self::Args) -> Result<Self::Output, ToolError> {
        let tmux = ctx.tmux(&args.server)?;
        let inv = ctx.inventory(&tmux)?;
        find_pane(&inv, args.pane_id)?;
        refuse_own(&inv, &[args.pane_id], &format!("pane {}", args.pane_id))?;
        let c = TmuxCommand::new("kill-pane").target(args.pane_id);
        tmux.run(&c, ctx.tmux_deadline()).map_err(ToolError::from)?;
        Ok(Killed {
            killed: args.pane_id.to_string(),
            panes: vec![args.pane_id],
        })
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
// A wire type: its doc comments would be schema descriptions every client
// reads in tools/list; the tool's description and the field names say it.
#[allow(missing_docs)]
pub struct KillWindowArgs {
    /// Window id, e.g. @1.
    pub window_id: WindowId,
    #[serde(flatten)]
    pub server: ServerArgs,
}

#[derive(Debug)]
/// `kill_window` (destructive tier): kills one window, refusing panescan's own.
pub struct KillWindow;

impl Tool for KillWindow {
    const NAME: &'static str = "kill_window";
    const TITLE: &'static str = "Kill a window";
    const DESCRIPTION: &'static str = "Kill a window and every pane in it. Refuses the window holding panescan's own pane. Irreversible: check with get_window_info first.";
    const TIER: Tier = Tier::Destructive;
    const ANNOTATIONS: Annotations = Annotations::DESTROY;
    type Args = KillWindowArgs;
    type Output = Killed;

    fn run(ctx: &ToolContext, args: Self::Args) -> Result<Self::Output, ToolError> {
        let tmux = ctx.tmux(&args.server)?;
        let inv = ctx.inventory(&tmux)?;
        find_window(&inv, args.window_id)?;
        let panes: Vec<PaneId> = inv
            .panes
            .iter()
            .filter(|p| p.window_id == args.window_id)
            .map(|p| p.pane_id)
            .collect();
        refuse_own(&inv, &panes, &format!("window {}", args.window_id))?;
        let c = TmuxCommand::new("kill-window").target(args.window_id);
        tmux.run(&c, ctx.tmux_deadline()).map_err(ToolError::from)?;
        Ok(Killed {
            killed: args.window_id.to_string(),
            panes,
        })
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
// A wire type: its doc comments would be schema descriptions every client
// reads in tools/list; the tool's description and the field names say it.
#[allow(missing_docs)]
pub struct KillSessionArgs {
    /// Session id, e.g. $1.
    pub session_id: SessionId,
    #[serde(flatten)]
    pub server: ServerArgs,
}

#[derive(Debug)]
/// `kill_session` (destructive tier): kills one session, refusing panescan's own.
pub struct KillSession;

impl Tool for KillSession {
    const NAME: &'static str = "kill_session";
    const TITLE: &'static str = "Kill a session";
    const DESCRIPTION: &'static str = "Kill a session with its windows (windows linked elsewhere survive there). Refuses the session holding panescan's own pane. Irreversible: check with get_session_info first.";
    const TIER: Tier = Tier::Destructive;
    const ANNOTATIONS: Annotations = Annotations::DESTROY;
    type Args = KillSessionArgs;
    type Output = Killed;

    fn run(ctx: &ToolContext, args: Self::Args) -> Result<Self::Output, ToolError> {
        let tmux = ctx.tmux(&args.server)?;
        let inv = ctx.inventory(&tmux)?;
        find_session(&inv, &args.session_id.to_string())?;
        // Every pane placed in the session, also those whose window is
        // linked into another session too.
        let panes: Vec<PaneId> = inv
            .panes
            .iter()
            .filter(|p| {
                p.placements
                    .iter()
                    .any(|pl| pl.session_id == args.session_id)
            })
            .map(|p| p.pane_id)
            .collect();
        refuse_own(&inv, &panes, &format!("session {}", args.session_id))?;
        let c = TmuxCommand::new("kill-session").target(args.session_id);
        tmux.run(&c, ctx.tmux_deadline()).map_err(ToolError::from)?;
        Ok(Killed {
            killed: args.session_id.to_string(),
            panes,
        })
    }
}
