//! The layout tools (mutating tier): create sessions, windows and panes,
//! select, resize, move, swap and rename them.
//!
//! - [`create`] — create_session, create_window, split_window.
//! - [`arrange`] — select_pane, select_window, resize_pane, swap_pane,
//!   move_window, rename_session.
//!
//! Every name is taken literally: tmux expands formats in `-s`, `-n` and
//! `-c` of new-session, new-window and split-window and in the argument of
//! rename-session, so names and directories go through
//! [`TmuxCommand::literal_arg`]. A `command` is one quoted argument, which
//! tmux hands to the shell of the new pane by design (this is the
//! mutating tier). Each tool answers with where things are afterwards
//! ([`Placed`]), read in the same round trip, so a caller needs no second
//! call.

pub(crate) mod arrange;
pub(crate) mod create;

use std::path::Path;
use std::time::Instant;

use schemars::JsonSchema;
use serde::Serialize;

use super::context::ToolError;
use super::mutate::check_name;
use crate::sync::nonce;
use crate::tmux::{PaneId, SessionId, Target, Tmux, TmuxCommand, TmuxError, WindowId};

/// Longest start directory.
const MAX_PATH_BYTES: usize = 4096;
/// Longest command for a new pane.
const MAX_COMMAND_BYTES: usize = 16 * 1024;
/// Largest width or height a session, window or pane may be given: tmux
/// allocates the grid of a window that size, and nothing on a screen is
/// larger.
pub const MAX_CELLS: u32 = 1000;

/// Where a pane is after a layout call: its session, window, size and
/// whether it and its window are the active ones.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
// A wire type: its doc comments would be schema descriptions every client
// reads in tools/list; the field names say it.
#[allow(missing_docs)]
pub struct Placed {
    pub session_id: SessionId,
    pub session_name: String,
    pub window_id: WindowId,
    pub window_index: u32,
    pub window_name: String,
    pub window_active: bool,
    pub window_zoomed: bool,
    pub window_width: u32,
    pub window_height: u32,
    pub pane_id: PaneId,
    pub pane_index: u32,
    pub pane_active: bool,
    pub pane_width: u32,
    pub pane_height: u32,
}

/// The plain fields of [`Placed`], in the order [`placed_format`] writes
/// them: ids, numbers and flags, none of which holds a space.
const PLAIN: [&str; 12] = [
    "session_id",
    "window_id",
    "window_index",
    "window_active",
    "window_zoomed_flag",
    "window_width",
    "window_height",
    "pane_id",
    "pane_index",
    "pane_active",
    "pane_width",
    "pane_height",
];

/// A format printing [`Placed`] for one pane: the plain fields separated by
/// spaces, then the two names, each after `sep` (a fresh random token, so a
/// name holding anything cannot shift a field).
fn placed_format(sep: &str) -> String {
    let mut f = PLAIN
        .iter()
        .map(|n| format!("#{{{n}}}"))
        .collect::<Vec<_>>()
        .join(" ");
    f.push_str(sep);
    f.push_str("#{session_name}");
    f.push_str(sep);
    f.push_str("#{window_name}");
    f
}

/// Parses what [`placed_format`] printed; `None` for anything else.
fn parse_placed(output: &str, sep: &str) -> Option<Placed> {
    let output = output.strip_suffix('\n').unwrap_or(output);
    let mut parts = output.split(sep);
    let plain: Vec<&str> = parts.next()?.split(' ').collect();
    let session_name = parts.next()?.to_owned();
    let window_name = parts.next()?.to_owned();
    if parts.next().is_some() || plain.len() != PLAIN.len() {
        return None;
    }
    let num = |i: usize| plain.get(i).and_then(|v| v.parse::<u32>().ok());
    let flag = |i: usize| plain.get(i).map(|v| *v == "1");
    Some(Placed {
        session_id: SessionId::parse(plain.first()?).ok()?,
        session_name,
        window_id: WindowId::parse(plain.get(1)?).ok()?,
        window_index: num(2)?,
        window_name,
        window_active: flag(3)?,
        window_zoomed: flag(4)?,
        window_width: num(5)?,
        window_height: num(6)?,
        pane_id: PaneId::parse(plain.get(7)?).ok()?,
        pane_index: num(8)?,
        pane_active: flag(9)?,
        pane_width: num(10)?,
        pane_height: num(11)?,
    })
}

/// A fresh separator for one [`placed_format`].
pub(super) fn separator() -> String {
    format!("<{}>", nonce())
}

/// Runs a creating `command` built by [`creating`] with `sep`, and parses
/// what it printed.
fn run_printing_placed(
    tmux: &Tmux,
    command: &TmuxCommand,
    sep: &str,
    deadline: Instant,
) -> Result<Placed, ToolError> {
    let out = tmux.run(command, deadline).map_err(tmux_refusal)?;
    parse_placed(&out, sep).ok_or_else(|| unreadable(&out))
}

/// Where `target` (a pane, or a window's active pane) is now.
fn placed(tmux: &Tmux, target: impl Into<Target>, deadline: Instant) -> Result<Placed, ToolError> {
    let sep = separator();
    let c = TmuxCommand::new("display-message")
        .flag("-p")
        .target(target)
        .format_arg(&placed_format(&sep));
    let out = tmux.run(&c, deadline).map_err(tmux_refusal)?;
    parse_placed(&out, &sep).ok_or_else(|| unreadable(&out))
}

fn unreadable(out: &str) -> ToolError {
    let mut shown = out.to_owned();
    super::cut_to_bytes(&mut shown, 200);
    ToolError::internal(format!(
        "tmux answered {shown:?}, not the placement asked for; list_panes shows the current state"
    ))
}

/// A tmux refusal as a tool error; the refusals a layout call can meet
/// named in words a caller can act on.
fn tmux_refusal(e: TmuxError) -> ToolError {
    if let TmuxError::Command(m) = &e {
        if m.contains("no space for new pane") {
            return ToolError::invalid(format!(
                "tmux refused: {m}: the pane is too small to split that way; split another pane, a smaller size, or resize the window first"
            ));
        }
        if let Some(name) = m.strip_prefix("duplicate session: ") {
            return ToolError::invalid(format!(
                "a session named {name:?} already exists; choose another name"
            ));
        }
        if m.starts_with("index in use") {
            return ToolError::invalid(format!("tmux refused: {m}; choose a free index or none"));
        }
        if m.starts_with("can't find") {
            return ToolError::not_found(format!(
                "tmux: {m}: it may have been closed; list again for current ids"
            ));
        }
    }
    ToolError::from(e)
}

/// A session name: as [`check_name`], and without `:` or `.` (tmux
/// target syntax: tmux would store them as `_`), `\` (tmux stores it
/// as `\\`) nor a leading `$` (it would read as a session id).
fn check_session_name(name: &str) -> Result<(), ToolError> {
    check_name("a session name", name)?;
    if let Some(c) = name.chars().find(|c| *c == ':' || *c == '.') {
        return Err(ToolError::invalid(format!(
            "a session name cannot hold {c:?} (tmux reads it as target syntax); choose another name"
        )));
    }
    if name.contains('\\') {
        return Err(ToolError::invalid(
            "a session name cannot hold '\\' (tmux would store it as '\\\\', another name)",
        ));
    }
    if name.starts_with('$') {
        return Err(ToolError::invalid(
            "a session name cannot start with '$' (it would read as a session id like $3)",
        ));
    }
    Ok(())
}

/// A start directory: an existing absolute directory, checked here (the
/// tmux server runs on this machine), returned as the text for `-c`.
fn check_directory(path: &Path) -> Result<String, ToolError> {
    let text = path.to_str().unwrap_or_default();
    if text.is_empty() || text.len() > MAX_PATH_BYTES || text.chars().any(char::is_control) {
        return Err(ToolError::invalid(format!(
            "start_directory must be 1-{MAX_PATH_BYTES} bytes of UTF-8 without control characters"
        )));
    }
    if !path.is_absolute() {
        return Err(ToolError::invalid(format!(
            "start_directory {text:?} must be an absolute path"
        )));
    }
    if !path.is_dir() {
        return Err(ToolError::not_found(format!(
            "start_directory {text:?} is not an existing directory"
        )));
    }
    Ok(text.to_owned())
}

/// A command for a new pane: non-empty, bounded, no NUL (tmux reads its
/// arguments as C strings: the command would end there, silently).
fn check_command(command: &str) -> Result<(), ToolError> {
    if command.trim().is_empty() || command.len() > MAX_COMMAND_BYTES {
        return Err(ToolError::invalid(format!(
            "command must be 1-{MAX_COMMAND_BYTES} bytes and not blank; omit it for the default shell"
        )));
    }
    if command.contains('\0') {
        return Err(ToolError::invalid(
            "command contains a NUL character; remove it",
        ));
    }
    Ok(())
}

/// A width or height within 1..=[`MAX_CELLS`].
fn check_cells(what: &str, n: u32) -> Result<(), ToolError> {
    if n == 0 || n > MAX_CELLS {
        return Err(ToolError::invalid(format!(
            "{what} {n} is out of range: 1-{MAX_CELLS} cells"
        )));
    }
    Ok(())
}

/// The end of a new-session, new-window or split-window command line:
/// `-P -F` printing [`Placed`] of the new pane (separated by `sep`), then
/// `-c DIR` and `-- COMMAND`, checked: the directory `#`-escaped (tmux
/// expands formats in `-c`), the command one argument after `--` (so a
/// leading `-` is not a flag; nothing may follow it).
fn creating(
    c: TmuxCommand,
    sep: &str,
    start_directory: Option<&Path>,
    command: Option<&str>,
) -> Result<TmuxCommand, ToolError> {
    let mut c = c.flag("-P").option("-F", &placed_format(sep));
    if let Some(dir) = start_directory {
        let dir = check_directory(dir)?;
        c = c.flag("-c").literal_arg(&dir);
    }
    c = c.arg("--");
    if let Some(command) = command {
        check_command(command)?;
        c = c.arg(command);
    }
    Ok(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placed_parses_what_its_format_prints_and_nothing_else() {
        let sep = "<s>";
        let f = placed_format(sep);
        assert!(f.starts_with("#{session_id} #{window_id} "), "{f}");
        let out = "$1 @2 3 1 0 80 24 %4 0 1 40 24<s>a <s>b c\n";
        let p = parse_placed(out, sep);
        let Some(p) = p else {
            panic!("{out:?} did not parse")
        };
        assert_eq!(p.session_name, "a ");
        assert_eq!(p.window_name, "b c");
        assert_eq!(p.pane_id, PaneId::from_number(4));
        assert!(p.window_active && !p.window_zoomed && p.pane_active);
        assert_eq!((p.pane_width, p.window_width), (40, 80));
        for bad in [
            "",
            "$1 @2 3 1 0 80 24 %4 0 1 40 24<s>a",
            "$1 @2 3 1 0 80 24 %4 0 1 40<s>a<s>b",
            "$1 @2 x 1 0 80 24 %4 0 1 40 24<s>a<s>b",
            "$1 @2 3 1 0 80 24 %4 0 1 40 24<s>a<s>b<s>c",
        ] {
            assert!(parse_placed(bad, sep).is_none(), "{bad:?}");
        }
    }

    #[test]
    fn session_names_with_target_syntax_are_refused() {
        for bad in ["a:b", "a.b", "$3", "", "a\nb", "a\\b"] {
            assert!(check_session_name(bad).is_err(), "{bad:?}");
        }
        for good in ["-x", "#{session_name}", "a b;c", "'\""] {
            assert!(check_session_name(good).is_ok(), "{good:?}");
        }
    }

    #[test]
    fn start_directories_must_be_absolute_existing_directories() {
        assert!(check_directory(Path::new("relative")).is_err());
        assert!(check_directory(Path::new("/nonexistent/panescan-dir")).is_err());
        assert!(check_directory(Path::new("/")).is_ok());
    }
}
