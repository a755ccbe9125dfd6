//! capture_since: what a pane printed after the cursor an earlier call
//! returned, its newest lines bounded, and the cursor for the next call.
//!
//! Must hold: a cursor from another pane or server is an error, one from a
//! respawned pane starts over (said as `respawned`), and rows lost to the
//! history limit are said as `missed`, never passed off as new text.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::super::context::{ServerArgs, ToolContext, ToolError};
use super::super::find_pane;
use super::super::registry::{Annotations, Tool};
use super::bounds::{cut_front, join_lines, output_bounds};
use super::cursor::Cursor;
use super::rows::PaneRows;
use crate::tmux::rows::fnv64;
use crate::tmux::PaneId;

#[derive(Debug, Deserialize, JsonSchema)]
// A wire type: its doc comments would be schema descriptions every client
// reads in tools/list; the tool's description and the field names say it.
#[allow(missing_docs)]
pub struct CaptureSinceArgs {
    /// Pane id, e.g. %1.
    pub pane_id: PaneId,
    /// The cursor of the previous capture_since on this pane; omit the first time (returns the recent tail and a cursor).
    #[serde(default)]
    pub cursor: Option<String>,
    /// Keep at most this many new lines, the newest (default 200, max 10000).
    #[serde(default)]
    pub max_lines: Option<usize>,
    /// Keep at most this many bytes, the newest (max 262144).
    #[serde(default)]
    pub max_bytes: Option<usize>,
    #[serde(flatten)]
    pub server: ServerArgs,
}

#[derive(Debug, Serialize, JsonSchema)]
// A wire type: its doc comments would be schema descriptions every client
// reads in tools/list; the tool's description and the field names say it.
#[allow(missing_docs)]
pub struct CaptureSinceResult {
    pub pane_id: PaneId,
    /// Completed lines written since the cursor (the cursor's line excluded).
    pub text: String,
    /// Secrets replaced with `[REDACTED:KIND]` (text and pending_line).
    pub redactions: u64,
    /// Pass this to the next call.
    pub cursor: String,
    /// Lines in text.
    pub lines: u64,
    /// The line the terminal cursor is on, not yet complete (a prompt...).
    pub pending_line: String,
    /// New lines cut from the front to fit max_lines / max_bytes.
    pub dropped_lines: u64,
    pub omitted_bytes: u64,
    /// Lines written since the cursor fell out of the history limit before this call: text starts at the oldest line still kept.
    pub missed: bool,
    /// 0 when nothing was missed; absent when lines were missed (or there was no cursor) and tmux cannot tell how many.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub missed_lines: Option<u64>,
    /// The pane's process changed (respawned): text restarts from its history.
    pub respawned: bool,
    /// tmux line number of the first line of text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_line: Option<i64>,
}

#[derive(Debug)]
/// `capture_since`: what a pane printed after a cursor an earlier call returned.
pub struct CaptureSince;

impl Tool for CaptureSince {
    const NAME: &'static str = "capture_since";
    const TITLE: &'static str = "New pane output since a cursor";
    const DESCRIPTION: &'static str = "Only the lines a pane printed since the previous call: pass back the returned cursor each time. Survives history trimming and renumbering (says how much was missed) and pane respawns (says so). Use to follow a build or a log; for a fixed range use capture_pane; to block until text appears use wait_for_text.";
    const ANNOTATIONS: Annotations = Annotations::READ_VOLATILE;
    type Args = CaptureSinceArgs;
    type Output = CaptureSinceResult;

    fn run(ctx: &ToolContext, args: Self::Args) -> Result<Self::Output, ToolError> {
        let (max_lines, max_bytes) = output_bounds(ctx.ceilings(), args.max_lines, args.max_bytes)?;
        let tmux = ctx.tmux(&args.server)?;
        let server =
            (fnv64(tmux.socket_path().as_os_str().as_encoded_bytes()) & 0xffff_ffff) as u32;
        let previous = previous_cursor(&args, server)?;
        let inv = ctx.inventory(&tmux)?;
        let pane = find_pane(&inv, args.pane_id)?;
        let pid = pane.pane_pid.unwrap_or(0);
        let respawned = previous.as_ref().is_some_and(|c| c.pid != pid);
        let previous = previous.filter(|_| !respawned);

        let source = PaneRows {
            ctx,
            tmux: &tmux,
            inv: &inv,
            pane,
        };
        let (rows, start) = source.since(previous.as_ref(), respawned, max_lines)?;
        let new = rows.new_lines(start.from_abs, source.now(), max_lines, max_bytes);
        let (anchor_len, anchor) = rows.anchor_at(new.end_abs);
        let cursor = Cursor {
            pane: args.pane_id.number(),
            pid,
            boundary: new.end_abs.max(0) as u64,
            anchor_len,
            anchor,
            server,
        };
        let mut text = join_lines(&new.kept);
        let mut pending_line = new.pending_line;
        let redactions = ctx.redact(&mut text) + ctx.redact(&mut pending_line);
        Ok(CaptureSinceResult {
            pane_id: args.pane_id,
            lines: new.kept.len() as u64,
            text,
            redactions,
            cursor: cursor.encode(),
            pending_line,
            dropped_lines: new.dropped,
            omitted_bytes: new.omitted as u64,
            missed: start.missed,
            missed_lines: start.missed_lines,
            respawned,
            first_line: new.first_line,
        })
    }

    fn text(out: &Self::Output) -> String {
        let mut head = format!("{} {} new lines", out.pane_id, out.lines);
        if out.respawned {
            head.push_str(", pane respawned: starting over");
        }
        if out.missed {
            head.push_str(", some output was missed (trimmed from history before it was read)");
        }
        if out.dropped_lines > 0 {
            head.push_str(&format!(", {} older new lines dropped", out.dropped_lines));
        }
        format!(
            "{head}\ncursor: {}\n{}{}",
            out.cursor,
            out.text,
            if out.pending_line.is_empty() {
                String::new()
            } else {
                format!("[pending] {}\n", out.pending_line)
            }
        )
    }

    /// Keeps the newest lines, as max_bytes does (the cursor stays at the
    /// end of what was printed).
    fn shrink(out: &mut Self::Output, excess: usize) -> bool {
        let Some(cut) = cut_front(&mut out.text, excess, 2) else {
            return false;
        };
        out.lines = out.lines.saturating_sub(cut.lines as u64);
        out.dropped_lines += cut.lines as u64;
        out.omitted_bytes += cut.bytes as u64;
        out.first_line = out
            .first_line
            .map(|f| f + cut.lines as i64)
            .filter(|_| !out.text.is_empty());
        true
    }
}

/// The cursor a call passed, checked against the pane and the server it
/// names; none (or an empty one) starts over.
fn previous_cursor(args: &CaptureSinceArgs, server: u32) -> Result<Option<Cursor>, ToolError> {
    let Some(text) = args.cursor.as_deref().filter(|c| !c.is_empty()) else {
        return Ok(None);
    };
    let c = Cursor::decode(text)?;
    if c.pane != args.pane_id.number() {
        return Err(ToolError::invalid(format!(
            "this cursor belongs to pane %{}, not {}: use the cursor of {}'s own last capture_since, or omit it",
            c.pane, args.pane_id, args.pane_id
        )));
    }
    if c.server != server {
        return Err(ToolError::invalid(
            "this cursor comes from another tmux server: omit it to start over on this one",
        ));
    }
    Ok(Some(c))
}
