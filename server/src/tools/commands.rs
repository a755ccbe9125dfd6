//! list_commands and get_command_output: the command ledger a journaling
//! daemon keeps (`panescan daemon --journal`: every command its panes'
//! shells marked with OSC 133, its status, directory, times and output,
//! kept past history-limit).
//!
//! The ledger is the daemon's (`daemon/ledger.rs` over `journal/ledger.rs`):
//! tools never name the journal, so the daemon installs it here as a
//! [`Ledger`] while it journals; without one both tools answer an error
//! that says how to turn it on. Both answer for the server the call names
//! (`socket_name` / `socket_path`, else the default one): each journaled
//! server has a ledger of its own, and one not journaled is an error. Must hold: output is redacted as every
//! pane text is ([`ToolContext::redact`]), and cut to `max_lines` and
//! `max_bytes` from the head or the tail, saying so.

use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::context::{ErrorKind, ServerArgs, ToolContext, ToolError};
use crate::tools::registry::{Annotations, Tool};

/// Commands listed at most by one call.
pub const MAX_LIMIT: u32 = 1000;
/// Commands listed unless `limit` says.
const DEFAULT_LIMIT: u32 = 50;
/// Output lines returned unless `max_lines` says; at most.
const DEFAULT_LINES: u32 = 200;
const MAX_LINES: u32 = 100_000;
/// Output bytes returned at most.
const MAX_BYTES: u32 = 1 << 20;

/// The daemon's command ledger, as the tools ask it.
pub trait Ledger: Send + Sync {
    /// The commands of the server at `socket` that `args` selects, newest
    /// first, at most its limit.
    fn list(&self, socket: &Path, args: &ListCommandsArgs) -> Result<Vec<CommandRow>, ToolError>;
    /// A command's whole output as far as it was kept (a command of the
    /// server at `socket`).
    fn output(&self, socket: &Path, command_id: &str) -> Result<KeptOutput, ToolError>;
}

/// A command's output lines (oldest first) and what may be missing.
#[derive(Debug, Default)]
pub struct KeptOutput {
    /// The lines, without their newlines.
    pub lines: Vec<Vec<u8>>,
    /// Still running: more may come.
    pub running: bool,
    /// What the ledger or the journal could not keep or tell.
    pub notes: Vec<String>,
}

static LEDGER: RwLock<Option<Arc<dyn Ledger>>> = RwLock::new(None);

/// The daemon's ledger while it journals (`None` when it stops).
pub fn install(ledger: Option<Arc<dyn Ledger>>) {
    *crate::sync::write(&LEDGER) = ledger;
}

fn ledger() -> Result<Arc<dyn Ledger>, ToolError> {
    crate::sync::read(&LEDGER).clone().ok_or_else(|| {
        ToolError::of(
            ErrorKind::Refused,
            "no command ledger here: commands are recorded by a journaling daemon. Start it with `panescan daemon --journal` (shells print OSC 133 marks: GUIDE.md, \"Shell setup\"), then connect with `panescan serve`",
        )
    })
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
// A wire type: its doc comments would be schema descriptions every client
// reads in tools/list; the tool's description and the field names say it.
#[allow(missing_docs)]
pub struct ListCommandsArgs {
    pub pane_id: Option<String>,
    pub session: Option<String>,
    /// RFC 3339, or an age like 15m, 2h, 7d.
    pub since_time: Option<String>,
    /// Only commands that ended with a status other than 0.
    pub failed: Option<bool>,
    /// Default 50, max 1000.
    pub limit: Option<u32>,
    /// tmux -L name
    pub socket_name: Option<String>,
    /// tmux -S path
    pub socket_path: Option<PathBuf>,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
#[allow(missing_docs)]
pub struct CommandRow {
    pub command_id: String,
    pub pane_id: String,
    pub session: String,
    pub command: Option<String>,
    pub cwd: Option<String>,
    pub started_at: String,
    pub ended_at: Option<String>,
    pub duration_ms: Option<u64>,
    pub exit_status: Option<i32>,
    pub output_lines: Option<u64>,
}

#[derive(Debug, Serialize, JsonSchema)]
#[allow(missing_docs)]
pub struct ListCommandsResult {
    pub commands: Vec<CommandRow>,
}

/// `list_commands`: the commands the ledger kept.
#[derive(Debug)]
pub struct ListCommands;

impl Tool for ListCommands {
    const NAME: &'static str = "list_commands";
    const TITLE: &'static str = "List past commands";
    const DESCRIPTION: &'static str = "Commands the panes' shells ran (OSC 133 marks; needs `panescan daemon --journal`), newest first: command, cwd, times, exit_status, output_lines. Read one's output with get_command_output.";
    const ANNOTATIONS: Annotations = Annotations::READ_VOLATILE;
    type Args = ListCommandsArgs;
    type Output = ListCommandsResult;

    fn run(ctx: &ToolContext, args: Self::Args) -> Result<Self::Output, ToolError> {
        if args.limit.is_some_and(|l| l == 0 || l > MAX_LIMIT) {
            return Err(ToolError::invalid(format!(
                "limit must be 1 to {MAX_LIMIT}"
            )));
        }
        let socket = socket_of(ctx, &args.socket_name, &args.socket_path)?;
        let commands = ledger()?.list(&socket, &args)?;
        Ok(ListCommandsResult { commands })
    }

    fn shrink(output: &mut Self::Output, excess: usize) -> bool {
        let n = output.commands.len();
        if n == 0 {
            return false;
        }
        let each = 1 + excess / 300;
        output.commands.truncate(n.saturating_sub(each));
        true
    }
}

impl ListCommandsArgs {
    /// The number of commands to list.
    pub fn limit(&self) -> usize {
        self.limit.unwrap_or(DEFAULT_LIMIT).min(MAX_LIMIT) as usize
    }
}

/// Which end of the output to keep when it is cut.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[allow(missing_docs)]
pub enum FromEnd {
    Head,
    #[default]
    Tail,
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[allow(missing_docs)]
pub struct GetCommandOutputArgs {
    pub command_id: String,
    /// Default 200, max 100000.
    pub max_lines: Option<u32>,
    /// Max 1048576.
    pub max_bytes: Option<u32>,
    /// Which end to keep when cut (default tail).
    pub from: Option<FromEnd>,
    /// tmux -L name
    pub socket_name: Option<String>,
    /// tmux -S path
    pub socket_path: Option<PathBuf>,
}

#[derive(Debug, Serialize, JsonSchema)]
#[allow(missing_docs)]
pub struct GetCommandOutputResult {
    pub command_id: String,
    /// Lines each ending in a newline.
    pub output: String,
    pub lines: u64,
    pub total_lines: u64,
    /// Cut by max_lines, max_bytes or the response's room.
    pub truncated: bool,
    pub running: bool,
    pub redactions: u64,
    /// What may be missing, and why.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// `get_command_output`: one command's output, whole as far as kept.
#[derive(Debug)]
pub struct GetCommandOutput;

impl Tool for GetCommandOutput {
    const NAME: &'static str = "get_command_output";
    const TITLE: &'static str = "Get a past command's output";
    const DESCRIPTION: &'static str = "A command's whole output by command_id (from list_commands), also lines tmux's history-limit dropped.";
    const ANNOTATIONS: Annotations = Annotations::READ_VOLATILE;
    type Args = GetCommandOutputArgs;
    type Output = GetCommandOutputResult;

    fn run(ctx: &ToolContext, args: Self::Args) -> Result<Self::Output, ToolError> {
        let max_lines = args.max_lines.unwrap_or(DEFAULT_LINES);
        if max_lines == 0 || max_lines > MAX_LINES {
            return Err(ToolError::invalid(format!(
                "max_lines must be 1 to {MAX_LINES}"
            )));
        }
        let max_bytes = args.max_bytes.unwrap_or(MAX_BYTES);
        if max_bytes == 0 || max_bytes > MAX_BYTES {
            return Err(ToolError::invalid(format!(
                "max_bytes must be 1 to {MAX_BYTES}"
            )));
        }
        let socket = socket_of(ctx, &args.socket_name, &args.socket_path)?;
        let kept = ledger()?.output(&socket, &args.command_id)?;
        let total = kept.lines.len();
        let from = args.from.unwrap_or_default();
        let chosen = cut(&kept.lines, max_lines as usize, max_bytes as usize, from);
        let mut output = String::new();
        for line in &kept.lines[chosen.clone()] {
            output.push_str(&String::from_utf8_lossy(line));
            output.push('\n');
        }
        let redactions = ctx.redact(&mut output);
        Ok(GetCommandOutputResult {
            command_id: args.command_id,
            output,
            lines: chosen.len() as u64,
            total_lines: total as u64,
            truncated: chosen.len() < total,
            running: kept.running,
            redactions,
            notes: kept.notes,
        })
    }

    fn shrink(output: &mut Self::Output, excess: usize) -> bool {
        if output.output.is_empty() {
            return false;
        }
        // Lines go from the end the caller kept least of: the head's
        // last lines, else the first ones.
        let keep = output.output.len().saturating_sub(excess + 64);
        let text = std::mem::take(&mut output.output);
        let kept = match text.get(text.len() - keep..) {
            Some(tail) => tail.find('\n').map_or("", |i| &tail[i + 1..]),
            None => "",
        };
        output.lines = kept.lines().count() as u64;
        output.output = kept.to_owned();
        output.truncated = true;
        true
    }
}

/// The socket path of the server a call names (this machine's: the
/// journal follows local servers only), as every tool picks it.
fn socket_of(
    ctx: &ToolContext,
    socket_name: &Option<String>,
    socket_path: &Option<PathBuf>,
) -> Result<PathBuf, ToolError> {
    let spec = ctx.server_spec(&ServerArgs {
        socket_name: socket_name.clone(),
        socket_path: socket_path.clone(),
        host: None,
    })?;
    crate::tmux::paths::resolve_socket(&spec).map_err(ToolError::from)
}

/// The lines to return: `from` the head or the tail, at most `max_lines`
/// and `max_bytes` (each line with its newline).
fn cut(
    lines: &[Vec<u8>],
    max_lines: usize,
    max_bytes: usize,
    from: FromEnd,
) -> std::ops::Range<usize> {
    let mut bytes = 0;
    let mut n = 0;
    let order: Box<dyn Iterator<Item = &Vec<u8>>> = match from {
        FromEnd::Head => Box::new(lines.iter()),
        FromEnd::Tail => Box::new(lines.iter().rev()),
    };
    for line in order {
        if n == max_lines || bytes + line.len() + 1 > max_bytes {
            break;
        }
        bytes += line.len() + 1;
        n += 1;
    }
    match from {
        FromEnd::Head => 0..n,
        FromEnd::Tail => lines.len() - n..lines.len(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuts_keep_the_end_asked_for_within_both_bounds() {
        let lines: Vec<Vec<u8>> = (0..10).map(|i| format!("l{i}").into_bytes()).collect();
        assert_eq!(cut(&lines, 3, 1000, FromEnd::Head), 0..3);
        assert_eq!(cut(&lines, 3, 1000, FromEnd::Tail), 7..10);
        assert_eq!(cut(&lines, 100, 7, FromEnd::Tail), 8..10);
        assert_eq!(cut(&[], 5, 5, FromEnd::Head), 0..0);
    }
}
