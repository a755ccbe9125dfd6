//! The mutating tier: tools that change tmux state but destroy nothing
//! (typing, names, titles, scrollback).
//! Listed and callable only with `--tier mutating` or `destructive`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::context::{ServerArgs, ToolContext, ToolError};
use super::{find_pane, find_window};
use crate::config::Tier;
use crate::tmux::{PaneId, TmuxCommand, WindowId};
use crate::tools::registry::{Annotations, Tool};

/// Longest text send_keys types in one call.
const MAX_TEXT_BYTES: usize = 16 * 1024;
/// Longest window name or pane title.
const MAX_NAME_BYTES: usize = 256;

/// tmux key names: `Enter`, `C-c`, `M-x`, `F5`, `BSpace`, `Up`, `a`.
fn valid_key(key: &str) -> bool {
    !key.is_empty()
        && key.len() <= 32
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'^')
}

/// Refuses typing into `pane` when its window synchronizes input, unless
/// the caller opted in: tmux types every key sent to a pane with
/// synchronize-panes on into each other pane of its window that has it on
/// too (window_pane_key), so a command meant for one shell would reach a
/// REPL, an editor or an `ssh prod` beside it. (A paste goes to the pane
/// named alone: paste_text needs no such check.)
/// `deadline` bounds the round trip (a wait's own time, for run_command).
pub(crate) fn refuse_synchronized(
    tmux: &crate::tmux::Tmux,
    pane: PaneId,
    allow: bool,
    deadline: std::time::Instant,
) -> Result<(), ToolError> {
    if allow {
        return Ok(());
    }
    let c = TmuxCommand::new("list-panes")
        .target(pane)
        .option("-F", "#{pane_id} #{pane_synchronized}");
    let listed = tmux.run(&c, deadline).map_err(ToolError::from)?;
    let synchronized: Vec<&str> = listed
        .lines()
        .filter_map(|l| l.strip_suffix(" 1"))
        .collect();
    let me = pane.to_string();
    if !synchronized.contains(&me.as_str()) || synchronized.len() < 2 {
        return Ok(());
    }
    let others: Vec<&str> = synchronized.into_iter().filter(|p| *p != me).collect();
    Err(ToolError::refused(format!(
        "refused: {me}'s window has synchronize-panes on, so what is typed into {me} is typed into {} too; turn it off (set_option synchronize-panes off on the window) or pass allow_synchronized: true to type into all of them",
        others.join(", ")
    )))
}

#[derive(Debug, Deserialize, JsonSchema)]
// A wire type: its doc comments would be schema descriptions every client
// reads in tools/list; the tool's description and the field names say it.
#[allow(missing_docs)]
pub struct SendKeysArgs {
    /// Pane id, e.g. %1.
    pub pane_id: PaneId,
    /// Text typed literally (no key names interpreted).
    #[serde(default)]
    pub text: Option<String>,
    /// Key names sent after the text, e.g. ["C-c"], ["Up","Enter"].
    #[serde(default)]
    pub keys: Vec<String>,
    /// Press Enter at the end.
    #[serde(default)]
    pub enter: bool,
    /// Type even if the window synchronizes panes (all get it).
    #[serde(default)]
    pub allow_synchronized: bool,
    #[serde(flatten)]
    pub server: ServerArgs,
}

#[derive(Debug, Serialize, JsonSchema)]
// A wire type: its doc comments would be schema descriptions every client
// reads in tools/list; the tool's description and the field names say it.
#[allow(missing_docs)]
pub struct SendKeysResult {
    pub pane_id: PaneId,
    pub text_bytes: usize,
    pub keys_sent: usize,
}

#[derive(Debug)]
/// `send_keys` (mutating tier): types text or keys into a pane.
pub struct SendKeys;

impl Tool for SendKeys {
    const NAME: &'static str = "send_keys";
    const TITLE: &'static str = "Type into a pane";
    const DESCRIPTION: &'static str = "Type text and/or key names (C-c, Enter, Up...) into a pane, optionally pressing Enter. Use to run a command in a shell pane; follow with wait_for_text or capture_since to read the result.";
    const TIER: Tier = Tier::Mutating;
    const ANNOTATIONS: Annotations = Annotations::MUTATE;
    type Args = SendKeysArgs;
    type Output = SendKeysResult;

    fn run(ctx: &ToolContext, args: Self::Args) -> Result<Self::Output, ToolError> {
        let text = args.text.unwrap_or_default();
        if text.len() > MAX_TEXT_BYTES {
            return Err(ToolError::invalid(format!(
                "text is {} bytes; send at most {MAX_TEXT_BYTES} per call",
                text.len()
            )));
        }
        if text.contains('\0') {
            // tmux reads its arguments as C strings: the text would end
            // there, silently.
            return Err(ToolError::invalid(
                "text contains a NUL character, which tmux cannot type; remove it",
            ));
        }
        if let Some(bad) = args.keys.iter().find(|k| !valid_key(k)) {
            return Err(ToolError::invalid(format!(
                "{bad:?} is not a tmux key name (e.g. Enter, C-c, M-x, Up, F5); put literal text in text"
            )));
        }
        if text.is_empty() && args.keys.is_empty() && !args.enter {
            return Err(ToolError::invalid(
                "nothing to send: give text, keys or enter",
            ));
        }
        let tmux = ctx.tmux(&args.server)?;
        let inv = ctx.inventory(&tmux)?;
        let pane = find_pane(&inv, args.pane_id)?;
        super::own_pane::refuse_own_pane(
            ctx,
            &tmux,
            pane.pane_id,
            pane.pane_pid,
            ctx.tmux_deadline(),
        )?;
        refuse_synchronized(
            &tmux,
            args.pane_id,
            args.allow_synchronized,
            ctx.tmux_deadline(),
        )?;
        let mut commands = Vec::new();
        if !text.is_empty() {
            // `--`: text (or a key) starting with `-` is not a flag.
            commands.push(
                TmuxCommand::new("send-keys")
                    .flag("-l")
                    .target(args.pane_id)
                    .arg("--")
                    .arg(&text),
            );
        }
        let mut keys = args.keys.clone();
        if args.enter {
            keys.push("Enter".into());
        }
        if !keys.is_empty() {
            let mut c = TmuxCommand::new("send-keys").target(args.pane_id).arg("--");
            for k in &keys {
                c = c.arg(k);
            }
            commands.push(c);
        }
        ctx.check_cancelled()?;
        for r in tmux.run_many(&commands, ctx.tmux_deadline()) {
            r.map_err(ToolError::from)?;
        }
        Ok(SendKeysResult {
            pane_id: args.pane_id,
            text_bytes: text.len(),
            keys_sent: keys.len(),
        })
    }
}

/// A name or title tmux stores as written: 1-256 bytes, no control
/// characters.
pub(super) fn check_name(what: &str, name: &str) -> Result<(), ToolError> {
    if name.is_empty() || name.len() > MAX_NAME_BYTES || name.chars().any(char::is_control) {
        return Err(ToolError::invalid(format!(
            "{what} must be 1-{MAX_NAME_BYTES} bytes without control characters"
        )));
    }
    Ok(())
}

#[derive(Debug, Deserialize, JsonSchema)]
// A wire type: its doc comments would be schema descriptions every client
// reads in tools/list; the tool's description and the field names say it.
#[allow(missing_docs)]
pub struct RenameWindowArgs {
    /// Window id, e.g. @1.
    pub window_id: WindowId,
    /// The new name, taken literally (#{...} is not expanded).
    pub name: String,
    #[serde(flatten)]
    pub server: ServerArgs,
}

#[derive(Debug, Serialize, JsonSchema)]
// A wire type: its doc comments would be schema descriptions every client
// reads in tools/list; the tool's description and the field names say it.
#[allow(missing_docs)]
pub struct RenameWindowResult {
    pub window_id: WindowId,
    pub window_name: String,
}

#[derive(Debug)]
/// `rename_window` (mutating tier).
pub struct RenameWindow;

impl Tool for RenameWindow {
    const NAME: &'static str = "rename_window";
    const TITLE: &'static str = "Rename a window";
    const DESCRIPTION: &'static str = "Give a window a new name (taken literally). Use to label windows so they are easy to find with list_windows.";
    const TIER: Tier = Tier::Mutating;
    const ANNOTATIONS: Annotations = Annotations::MUTATE_IDEMPOTENT;
    type Args = RenameWindowArgs;
    type Output = RenameWindowResult;

    fn run(ctx: &ToolContext, args: Self::Args) -> Result<Self::Output, ToolError> {
        check_name("name", &args.name)?;
        let tmux = ctx.tmux(&args.server)?;
        let inv = ctx.inventory(&tmux)?;
        find_window(&inv, args.window_id)?;
        // `--`: a name starting with `-` is not a flag.
        let c = TmuxCommand::new("rename-window")
            .target(args.window_id)
            .arg("--")
            .literal_arg(&args.name);
        tmux.run(&c, ctx.tmux_deadline()).map_err(ToolError::from)?;
        Ok(RenameWindowResult {
            window_id: args.window_id,
            window_name: args.name,
        })
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
// A wire type: its doc comments would be schema descriptions every client
// reads in tools/list; the tool's description and the field names say it.
#[allow(missing_docs)]
pub struct SetPaneTitleArgs {
    /// Pane id, e.g. %1.
    pub pane_id: PaneId,
    /// The new title, taken literally.
    pub title: String,
    #[serde(flatten)]
    pub server: ServerArgs,
}

#[derive(Debug, Serialize, JsonSchema)]
// A wire type: its doc comments would be schema descriptions every client
// reads in tools/list; the tool's description and the field names say it.
#[allow(missing_docs)]
pub struct SetPaneTitleResult {
    pub pane_id: PaneId,
    pub pane_title: String,
}

#[derive(Debug)]
/// `set_pane_title` (mutating tier).
pub struct SetPaneTitle;

impl Tool for SetPaneTitle {
    const NAME: &'static str = "set_pane_title";
    const TITLE: &'static str = "Set a pane title";
    const DESCRIPTION: &'static str =
        "Set a pane's title (taken literally). Use to label panes; the title shows in list_panes.";
    const TIER: Tier = Tier::Mutating;
    const ANNOTATIONS: Annotations = Annotations::MUTATE_IDEMPOTENT;
    type Args = SetPaneTitleArgs;
    type Output = SetPaneTitleResult;

    fn run(ctx: &ToolContext, args: Self::Args) -> Result<Self::Output, ToolError> {
        check_name("title", &args.title)?;
        let tmux = ctx.tmux(&args.server)?;
        let inv = ctx.inventory(&tmux)?;
        find_pane(&inv, args.pane_id)?;
        let c = TmuxCommand::new("select-pane")
            .target(args.pane_id)
            .flag("-T")
            .literal_arg(&args.title);
        tmux.run(&c, ctx.tmux_deadline()).map_err(ToolError::from)?;
        Ok(SetPaneTitleResult {
            pane_id: args.pane_id,
            pane_title: args.title,
        })
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
// A wire type: its doc comments would be schema descriptions every client
// reads in tools/list; the tool's description and the field names say it.
#[allow(missing_docs)]
pub struct ClearHistoryArgs {
    /// Pane id, e.g. %1.
    pub pane_id: PaneId,
    #[serde(flatten)]
    pub server: ServerArgs,
}

#[derive(Debug, Serialize, JsonSchema)]
// A wire type: its doc comments would be schema descriptions every client
// reads in tools/list; the tool's description and the field names say it.
#[allow(missing_docs)]
pub struct ClearHistoryResult {
    pub pane_id: PaneId,
    /// History lines the pane held and no longer has.
    pub lines_cleared: u64,
}

#[derive(Debug)]
/// `clear_history` (mutating tier): drops a pane's scrollback.
pub struct ClearHistory;

impl Tool for ClearHistory {
    const NAME: &'static str = "clear_history";
    const TITLE: &'static str = "Clear a pane's scrollback";
    const DESCRIPTION: &'static str = "Drop a pane's scrollback history (the visible screen stays). Use before a run so later captures and searches see only new output.";
    const TIER: Tier = Tier::Mutating;
    const ANNOTATIONS: Annotations = Annotations::MUTATE_IDEMPOTENT;
    type Args = ClearHistoryArgs;
    type Output = ClearHistoryResult;

    fn run(ctx: &ToolContext, args: Self::Args) -> Result<Self::Output, ToolError> {
        let tmux = ctx.tmux(&args.server)?;
        // The size and the clear in one round trip: tmux runs them back to
        // back, so no output lands between them.
        let commands = [
            TmuxCommand::new("display-message")
                .flag("-p")
                .target(args.pane_id)
                .format_arg("#{history_size}"),
            TmuxCommand::new("clear-history").target(args.pane_id),
        ];
        let deadline = ctx.tmux_deadline();
        let replies = ctx.cancellable(move || Ok(tmux.run_many(&commands, deadline)))?;
        let mut lines_cleared = 0;
        for (i, reply) in replies.into_iter().enumerate() {
            let out = reply.map_err(ToolError::from)?;
            if i == 0 {
                lines_cleared = out.trim().parse().unwrap_or(0);
            }
        }
        Ok(ClearHistoryResult {
            pane_id: args.pane_id,
            lines_cleared,
        })
    }
}
