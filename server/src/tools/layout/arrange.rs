//! select_pane, select_window, resize_pane, swap_pane, move_window,
//! rename_session: change which pane and window are active, their sizes,
//! places and names. Each answers with where things are afterwards
//! ([`Placed`]), read right after the change in the same round trip.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{check_cells, check_session_name, placed, tmux_refusal, Placed};
use crate::config::Tier;
use crate::tmux::{PaneId, SessionId, Tmux, TmuxCommand, WindowId};
use crate::tools::context::{ServerArgs, ToolContext, ToolError};
use crate::tools::registry::{Annotations, Tool};
use crate::tools::{find_pane, find_session, find_window};

/// Highest window index move_window accepts.
const MAX_INDEX: u32 = 9999;

/// Runs `commands` in order, stopping at the first refusal.
fn run_all(ctx: &ToolContext, tmux: &Tmux, commands: &[TmuxCommand]) -> Result<(), ToolError> {
    ctx.check_cancelled()?;
    for r in tmux.run_many(commands, ctx.tmux_deadline()) {
        r.map_err(tmux_refusal)?;
    }
    Ok(())
}

#[derive(Debug, Deserialize, JsonSchema)]
// A wire type: its doc comments would be schema descriptions every client
// reads in tools/list; the tool's description and the field names say it.
#[allow(missing_docs)]
pub struct SelectPaneArgs {
    /// Pane id, e.g. %1.
    pub pane_id: PaneId,
    #[serde(flatten)]
    pub server: ServerArgs,
}

#[derive(Debug)]
/// `select_pane` (mutating tier): makes a pane the active one of its window.
pub struct SelectPane;

impl Tool for SelectPane {
    const NAME: &'static str = "select_pane";
    const TITLE: &'static str = "Select a pane";
    const DESCRIPTION: &'static str = "Make a pane the active pane of its window.";
    const TIER: Tier = Tier::Mutating;
    const ANNOTATIONS: Annotations = Annotations::MUTATE_IDEMPOTENT;
    type Args = SelectPaneArgs;
    type Output = Placed;

    fn run(ctx: &ToolContext, args: Self::Args) -> Result<Self::Output, ToolError> {
        let tmux = ctx.tmux(&args.server)?;
        let inv = ctx.inventory(&tmux)?;
        find_pane(&inv, args.pane_id)?;
        let c = TmuxCommand::new("select-pane").target(args.pane_id);
        run_all(ctx, &tmux, &[c])?;
        placed(&tmux, args.pane_id, ctx.tmux_deadline())
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
// A wire type: its doc comments would be schema descriptions every client
// reads in tools/list; the tool's description and the field names say it.
#[allow(missing_docs)]
pub struct SelectWindowArgs {
    /// Window id, e.g. @1.
    pub window_id: WindowId,
    #[serde(flatten)]
    pub server: ServerArgs,
}

#[derive(Debug)]
/// `select_window` (mutating tier): makes a window the current one of its
/// session.
pub struct SelectWindow;

impl Tool for SelectWindow {
    const NAME: &'static str = "select_window";
    const TITLE: &'static str = "Select a window";
    const DESCRIPTION: &'static str =
        "Make a window the current window of its session. Returns its active pane.";
    const TIER: Tier = Tier::Mutating;
    const ANNOTATIONS: Annotations = Annotations::MUTATE_IDEMPOTENT;
    type Args = SelectWindowArgs;
    type Output = Placed;

    fn run(ctx: &ToolContext, args: Self::Args) -> Result<Self::Output, ToolError> {
        let tmux = ctx.tmux(&args.server)?;
        let inv = ctx.inventory(&tmux)?;
        find_window(&inv, args.window_id)?;
        let c = TmuxCommand::new("select-window").target(args.window_id);
        run_all(ctx, &tmux, &[c])?;
        placed(&tmux, args.window_id, ctx.tmux_deadline())
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
// A wire type: its doc comments would be schema descriptions every client
// reads in tools/list; the tool's description and the field names say it.
#[allow(missing_docs)]
pub struct ResizePaneArgs {
    /// Pane id, e.g. %1.
    pub pane_id: PaneId,
    /// Columns, 1-1000.
    #[serde(default)]
    pub width: Option<u32>,
    /// Rows, 1-1000.
    #[serde(default)]
    pub height: Option<u32>,
    /// true: zoom the pane to fill its window; false: unzoom.
    #[serde(default)]
    pub zoom: Option<bool>,
    #[serde(flatten)]
    pub server: ServerArgs,
}

#[derive(Debug)]
/// `resize_pane` (mutating tier): a pane's size and zoom.
pub struct ResizePane;

impl Tool for ResizePane {
    const NAME: &'static str = "resize_pane";
    const TITLE: &'static str = "Resize or zoom a pane";
    const DESCRIPTION: &'static str = "Resize a pane (within its window's size) and/or zoom or unzoom it. Returns the size it got.";
    const TIER: Tier = Tier::Mutating;
    const ANNOTATIONS: Annotations = Annotations::MUTATE_IDEMPOTENT;
    type Args = ResizePaneArgs;
    type Output = Placed;

    fn run(ctx: &ToolContext, args: Self::Args) -> Result<Self::Output, ToolError> {
        if args.width.is_none() && args.height.is_none() && args.zoom.is_none() {
            return Err(ToolError::invalid(
                "nothing to do: give width, height or zoom",
            ));
        }
        let mut resize = TmuxCommand::new("resize-pane").target(args.pane_id);
        if let Some(w) = args.width {
            check_cells("width", w)?;
            resize = resize.flag("-x").int(i64::from(w));
        }
        if let Some(h) = args.height {
            check_cells("height", h)?;
            resize = resize.flag("-y").int(i64::from(h));
        }
        let tmux = ctx.tmux(&args.server)?;
        let inv = ctx.inventory(&tmux)?;
        find_pane(&inv, args.pane_id)?;
        let zoomed = placed(&tmux, args.pane_id, ctx.tmux_deadline())?.window_zoomed;
        // `resize-pane -Z` toggles: sent only when the state must change.
        // A size is applied unzoomed (tmux unzooms to resize), then the
        // zoom asked for.
        let toggle = TmuxCommand::new("resize-pane")
            .target(args.pane_id)
            .flag("-Z");
        let mut commands = Vec::new();
        let sized = args.width.is_some() || args.height.is_some();
        if zoomed && (sized || args.zoom == Some(false)) {
            commands.push(toggle.clone());
        }
        if sized {
            commands.push(resize);
        }
        let zoom_after = args.zoom.unwrap_or(zoomed && !sized);
        if zoom_after && (sized || !zoomed) {
            commands.push(toggle);
        }
        if !commands.is_empty() {
            run_all(ctx, &tmux, &commands)?;
        }
        placed(&tmux, args.pane_id, ctx.tmux_deadline())
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
// A wire type: its doc comments would be schema descriptions every client
// reads in tools/list; the tool's description and the field names say it.
#[allow(missing_docs)]
pub struct SwapPaneArgs {
    /// Pane id, e.g. %1.
    pub pane_id: PaneId,
    /// The pane it trades places with.
    pub target_pane_id: PaneId,
    #[serde(flatten)]
    pub server: ServerArgs,
}

#[derive(Debug, Serialize, JsonSchema)]
// A wire type: its doc comments would be schema descriptions every client
// reads in tools/list; the tool's description and the field names say it.
#[allow(missing_docs)]
pub struct Swapped {
    pub pane: Placed,
    pub target_pane: Placed,
}

#[derive(Debug)]
/// `swap_pane` (mutating tier): two panes trade places.
pub struct SwapPane;

impl Tool for SwapPane {
    const NAME: &'static str = "swap_pane";
    const TITLE: &'static str = "Swap two panes";
    const DESCRIPTION: &'static str = "Two panes trade places (also across windows); the active pane stays as it was. Returns where each is now.";
    const TIER: Tier = Tier::Mutating;
    const ANNOTATIONS: Annotations = Annotations::MUTATE;
    type Args = SwapPaneArgs;
    type Output = Swapped;

    fn run(ctx: &ToolContext, args: Self::Args) -> Result<Self::Output, ToolError> {
        if args.pane_id == args.target_pane_id {
            return Err(ToolError::invalid(
                "pane_id and target_pane_id are the same pane",
            ));
        }
        let tmux = ctx.tmux(&args.server)?;
        let inv = ctx.inventory(&tmux)?;
        find_pane(&inv, args.pane_id)?;
        find_pane(&inv, args.target_pane_id)?;
        let c = TmuxCommand::new("swap-pane")
            .flag("-d")
            .option("-s", &args.pane_id.to_string())
            .target(args.target_pane_id);
        run_all(ctx, &tmux, &[c])?;
        Ok(Swapped {
            pane: placed(&tmux, args.pane_id, ctx.tmux_deadline())?,
            target_pane: placed(&tmux, args.target_pane_id, ctx.tmux_deadline())?,
        })
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
// A wire type: its doc comments would be schema descriptions every client
// reads in tools/list; the tool's description and the field names say it.
#[allow(missing_docs)]
pub struct MoveWindowArgs {
    /// Window id, e.g. @1.
    pub window_id: WindowId,
    /// Destination session id ($N) or exact name.
    pub session: String,
    /// Destination index, 0-9999; default: the next free one.
    #[serde(default)]
    pub index: Option<u32>,
    #[serde(flatten)]
    pub server: ServerArgs,
}

#[derive(Debug)]
/// `move_window` (mutating tier): a window to another index or session.
pub struct MoveWindow;

impl Tool for MoveWindow {
    const NAME: &'static str = "move_window";
    const TITLE: &'static str = "Move a window";
    const DESCRIPTION: &'static str = "Move a window to a session (the same or another) at an index or the next free one. A session left without windows ends. Returns where the window is now.";
    const TIER: Tier = Tier::Mutating;
    const ANNOTATIONS: Annotations = Annotations::MUTATE;
    type Args = MoveWindowArgs;
    type Output = Placed;

    fn run(ctx: &ToolContext, args: Self::Args) -> Result<Self::Output, ToolError> {
        if let Some(i) = args.index.filter(|i| *i > MAX_INDEX) {
            return Err(ToolError::invalid(format!(
                "index {i} is out of range: 0-{MAX_INDEX}"
            )));
        }
        let tmux = ctx.tmux(&args.server)?;
        let inv = ctx.inventory(&tmux)?;
        find_window(&inv, args.window_id)?;
        let session: SessionId = find_session(&inv, &args.session)?.session_id;
        // `$N:I`, or `$N:` for the next free index; both built from a
        // validated id and a number.
        let target = match args.index {
            Some(i) => format!("{session}:{i}"),
            None => format!("{session}:"),
        };
        let c = TmuxCommand::new("move-window")
            .flag("-d")
            .option("-s", &args.window_id.to_string())
            .option("-t", &target);
        run_all(ctx, &tmux, &[c])?;
        placed(&tmux, args.window_id, ctx.tmux_deadline())
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
// A wire type: its doc comments would be schema descriptions every client
// reads in tools/list; the tool's description and the field names say it.
#[allow(missing_docs)]
pub struct RenameSessionArgs {
    /// Session id ($N) or exact name.
    pub session: String,
    /// The new name, taken literally; no ':' or '.'.
    pub name: String,
    #[serde(flatten)]
    pub server: ServerArgs,
}

#[derive(Debug, Serialize, JsonSchema)]
// A wire type: its doc comments would be schema descriptions every client
// reads in tools/list; the tool's description and the field names say it.
#[allow(missing_docs)]
pub struct RenamedSession {
    pub session_id: SessionId,
    pub session_name: String,
}

#[derive(Debug)]
/// `rename_session` (mutating tier).
pub struct RenameSession;

impl Tool for RenameSession {
    const NAME: &'static str = "rename_session";
    const TITLE: &'static str = "Rename a session";
    const DESCRIPTION: &'static str =
        "Give a session a new name (taken literally; no ':' or '.'; must be unused).";
    const TIER: Tier = Tier::Mutating;
    const ANNOTATIONS: Annotations = Annotations::MUTATE_IDEMPOTENT;
    type Args = RenameSessionArgs;
    type Output = RenamedSession;

    fn run(ctx: &ToolContext, args: Self::Args) -> Result<Self::Output, ToolError> {
        check_session_name(&args.name)?;
        let tmux = ctx.tmux(&args.server)?;
        let inv = ctx.inventory(&tmux)?;
        let session = find_session(&inv, &args.session)?.session_id;
        let taken = inv
            .sessions
            .iter()
            .find(|s| s.session_name == args.name && s.session_id != session);
        if let Some(s) = taken {
            return Err(ToolError::invalid(format!(
                "a session named {:?} already exists ({}); choose another name",
                args.name, s.session_id
            )));
        }
        // `--`: a name starting with `-` is not a flag.
        let c = TmuxCommand::new("rename-session")
            .target(session)
            .arg("--")
            .literal_arg(&args.name);
        run_all(ctx, &tmux, &[c])?;
        Ok(RenamedSession {
            session_id: session,
            session_name: args.name,
        })
    }
}
