//! create_session, create_window, split_window: new sessions, windows and
//! panes, each answered with where the new pane is ([`Placed`]), printed
//! by the creating command itself (`-P -F`), so even a pane whose command
//! has already ended is reported.

use std::path::PathBuf;

use schemars::JsonSchema;
use serde::Deserialize;

use super::{
    check_cells, check_name, check_session_name, creating, run_printing_placed, separator, Placed,
};
use crate::config::Tier;
use crate::tmux::{client_env, PaneId, TmuxCommand};
use crate::tools::context::{ServerArgs, ToolContext, ToolError};
use crate::tools::registry::{Annotations, Tool};
use crate::tools::{find_pane, find_session};

#[derive(Debug, Deserialize, JsonSchema)]
// A wire type: its doc comments would be schema descriptions every client
// reads in tools/list; the tool's description and the field names say it.
#[allow(missing_docs)]
pub struct CreateSessionArgs {
    /// Session name, taken literally; no ':' or '.'. Default: tmux's.
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub window_name: Option<String>,
    /// Runs in the first pane instead of the shell.
    #[serde(default)]
    pub command: Option<String>,
    /// An existing absolute directory.
    #[serde(default)]
    pub start_directory: Option<PathBuf>,
    /// Columns, 1-1000.
    #[serde(default)]
    pub width: Option<u32>,
    /// Rows, 1-1000.
    #[serde(default)]
    pub height: Option<u32>,
    #[serde(flatten)]
    pub server: ServerArgs,
}

#[derive(Debug)]
/// `create_session` (mutating tier): a new detached session.
pub struct CreateSession;

impl Tool for CreateSession {
    const NAME: &'static str = "create_session";
    const TITLE: &'static str = "Create a session";
    const DESCRIPTION: &'static str = "Create a detached session (names taken literally), optionally running a command in its first pane. Returns the new session, window and pane ids and sizes.";
    const TIER: Tier = Tier::Mutating;
    const ANNOTATIONS: Annotations = Annotations::MUTATE;
    type Args = CreateSessionArgs;
    type Output = Placed;

    fn run(ctx: &ToolContext, args: Self::Args) -> Result<Self::Output, ToolError> {
        let mut c = TmuxCommand::new("new-session").flag("-d");
        if let Some(name) = &args.name {
            check_session_name(name)?;
            c = c.flag("-s").literal_arg(name);
        }
        if let Some(name) = &args.window_name {
            check_name("window_name", name)?;
            c = c.flag("-n").literal_arg(name);
        }
        if let Some(w) = args.width {
            check_cells("width", w)?;
            c = c.flag("-x").int(i64::from(w));
        }
        if let Some(h) = args.height {
            check_cells("height", h)?;
            c = c.flag("-y").int(i64::from(h));
        }
        let tmux = ctx.tmux(&args.server)?;
        if let Some(name) = &args.name {
            let inv = ctx.inventory(&tmux)?;
            if let Some(s) = inv.sessions.iter().find(|s| &s.session_name == name) {
                return Err(ToolError::invalid(format!(
                    "a session named {name:?} already exists ({}); choose another name",
                    s.session_id
                )));
            }
        }
        // Another host gets nothing of this machine's environment.
        let env = match &tmux.spec().host {
            Some(_) => client_env::NewSessionEnv::default(),
            None => session_environment(ctx, &tmux)?,
        };
        for pair in &env.set {
            c = c.flag("-e").arg(pair);
        }
        let sep = separator();
        let c = creating(
            c,
            &sep,
            args.start_directory.as_deref(),
            args.command.as_deref(),
        )?;
        ctx.check_cancelled()?;
        let placed = run_printing_placed(&tmux, &c, &sep, ctx.tmux_deadline())?;
        if env.remove_lc_all {
            let c = TmuxCommand::new("set-environment")
                .target(placed.session_id)
                .flag("-r")
                .arg("LC_ALL");
            tmux.run(&c, ctx.tmux_deadline()).map_err(ToolError::from)?;
        }
        Ok(placed)
    }
}

/// As a user's own new-session: the variables of update-environment this
/// process has, among those the operator lets pass (`--pass-env`), go into
/// the session (tmux would take them from the client, and panescan's
/// clients carry none of them but `LC_ALL`).
fn session_environment(
    ctx: &ToolContext,
    tmux: &crate::tmux::Tmux,
) -> Result<client_env::NewSessionEnv, ToolError> {
    let listed = TmuxCommand::new("show-options")
        .flag("-gv")
        .arg("update-environment");
    let listed = tmux
        .run(&listed, ctx.tmux_deadline())
        .map_err(ToolError::from)?;
    let values = (ctx.config.pass_env_values.clone())
        .unwrap_or_else(|| client_env::values_of(&ctx.config.pass_env));
    Ok(client_env::for_new_session(&listed, &values))
}

#[derive(Debug, Deserialize, JsonSchema)]
// A wire type: its doc comments would be schema descriptions every client
// reads in tools/list; the tool's description and the field names say it.
#[allow(missing_docs)]
pub struct CreateWindowArgs {
    /// Session id ($N) or exact name.
    pub session: String,
    /// Window name, taken literally.
    #[serde(default)]
    pub name: Option<String>,
    /// Runs in the pane instead of the shell.
    #[serde(default)]
    pub command: Option<String>,
    /// An existing absolute directory.
    #[serde(default)]
    pub start_directory: Option<PathBuf>,
    #[serde(flatten)]
    pub server: ServerArgs,
}

#[derive(Debug)]
/// `create_window` (mutating tier): a new window at the session's next
/// free index, not selected.
pub struct CreateWindow;

impl Tool for CreateWindow {
    const NAME: &'static str = "create_window";
    const TITLE: &'static str = "Create a window";
    const DESCRIPTION: &'static str = "Create a window in a session (not selected; name taken literally), optionally running a command. Returns the new window and pane ids and sizes.";
    const TIER: Tier = Tier::Mutating;
    const ANNOTATIONS: Annotations = Annotations::MUTATE;
    type Args = CreateWindowArgs;
    type Output = Placed;

    fn run(ctx: &ToolContext, args: Self::Args) -> Result<Self::Output, ToolError> {
        if let Some(name) = &args.name {
            check_name("name", name)?;
        }
        let tmux = ctx.tmux(&args.server)?;
        let inv = ctx.inventory(&tmux)?;
        let session = find_session(&inv, &args.session)?.session_id;
        // `$N:` names the session's next free index.
        let mut c = TmuxCommand::new("new-window")
            .flag("-d")
            .option("-t", &format!("{session}:"));
        if let Some(name) = &args.name {
            c = c.flag("-n").literal_arg(name);
        }
        let sep = separator();
        let c = creating(
            c,
            &sep,
            args.start_directory.as_deref(),
            args.command.as_deref(),
        )?;
        ctx.check_cancelled()?;
        run_printing_placed(&tmux, &c, &sep, ctx.tmux_deadline())
    }
}

/// Which way split_window divides a pane.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// Side by side (`split-window -h`).
    Horizontal,
    /// One above the other (`split-window -v`).
    Vertical,
}

#[derive(Debug, Deserialize, JsonSchema)]
// A wire type: its doc comments would be schema descriptions every client
// reads in tools/list; the tool's description and the field names say it.
#[allow(missing_docs)]
pub struct SplitWindowArgs {
    /// The pane to split, e.g. %1.
    pub pane_id: PaneId,
    /// horizontal: side by side; vertical (default): above/below.
    #[serde(default)]
    pub direction: Option<Direction>,
    /// New pane size: cells ("20") or percent ("30%"). Default: half.
    #[serde(default)]
    pub size: Option<String>,
    /// Runs in the new pane instead of the shell.
    #[serde(default)]
    pub command: Option<String>,
    /// An existing absolute directory.
    #[serde(default)]
    pub start_directory: Option<PathBuf>,
    #[serde(flatten)]
    pub server: ServerArgs,
}

/// `size` as tmux's `-l` value: `N` cells (1-1000) or `N%` (1-99).
fn split_size(size: &str) -> Result<String, ToolError> {
    let (digits, percent) = match size.strip_suffix('%') {
        Some(d) => (d, true),
        None => (size, false),
    };
    let n = (!digits.is_empty() && digits.len() <= 4 && digits.bytes().all(|b| b.is_ascii_digit()))
        .then(|| digits.parse::<u32>().ok())
        .flatten();
    match n {
        Some(n) if percent && (1..=99).contains(&n) => Ok(format!("{n}%")),
        Some(n) if !percent && (1..=super::MAX_CELLS).contains(&n) => Ok(n.to_string()),
        _ => Err(ToolError::invalid(format!(
            "size {size:?} must be cells (1-{}) like \"20\" or a percentage (1-99) like \"30%\"",
            super::MAX_CELLS
        ))),
    }
}

#[derive(Debug)]
/// `split_window` (mutating tier): a new pane beside or below one, not
/// selected.
pub struct SplitWindow;

impl Tool for SplitWindow {
    const NAME: &'static str = "split_window";
    const TITLE: &'static str = "Split a pane";
    const DESCRIPTION: &'static str = "Split a pane in two (horizontal: side by side; vertical: above/below), optionally running a command in the new pane (not selected). Returns the new pane id and size.";
    const TIER: Tier = Tier::Mutating;
    const ANNOTATIONS: Annotations = Annotations::MUTATE;
    type Args = SplitWindowArgs;
    type Output = Placed;

    fn run(ctx: &ToolContext, args: Self::Args) -> Result<Self::Output, ToolError> {
        let size = args.size.as_deref().map(split_size).transpose()?;
        let tmux = ctx.tmux(&args.server)?;
        let inv = ctx.inventory(&tmux)?;
        let pane = find_pane(&inv, args.pane_id)?;
        let (flag, along, cells) = match args.direction.unwrap_or(Direction::Vertical) {
            Direction::Horizontal => ("-h", "wide", pane.pane_width),
            Direction::Vertical => ("-v", "high", pane.pane_height),
        };
        // A pane of fewer than 3 cells that way cannot hold two panes and
        // the border between them; say so before tmux's terse refusal.
        if cells < 3 {
            return Err(ToolError::invalid(format!(
                "pane {} is {cells} cells {along}: too small to split that way; split another pane or the other way",
                args.pane_id
            )));
        }
        // tmux shrinks a size the pane cannot hold to what fits: refuse
        // it instead, so the pane made is the size asked for.
        let asked = size.as_deref().and_then(|s| s.parse::<u32>().ok());
        if let Some(n) = asked.filter(|n| n.saturating_add(2) > cells) {
            return Err(ToolError::invalid(format!(
                "pane {} is {cells} cells {along}: too small to split off {n} cells (that, a border and 1 cell of the old pane); ask for less or a percentage",
                args.pane_id
            )));
        }
        let mut c = TmuxCommand::new("split-window")
            .flag("-d")
            .flag(flag)
            .target(args.pane_id);
        if let Some(size) = &size {
            c = c.option("-l", size);
        }
        let sep = separator();
        let c = creating(
            c,
            &sep,
            args.start_directory.as_deref(),
            args.command.as_deref(),
        )?;
        ctx.check_cancelled()?;
        run_printing_placed(&tmux, &c, &sep, ctx.tmux_deadline())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_sizes_are_cells_or_percentages_in_range() {
        assert_eq!(split_size("20").ok().as_deref(), Some("20"));
        assert_eq!(split_size("30%").ok().as_deref(), Some("30%"));
        for bad in [
            "", "%", "0", "0%", "100%", "1001", "-1", "2 ", "1e3", "5%%", "99999",
        ] {
            assert!(split_size(bad).is_err(), "{bad:?}");
        }
    }
}
