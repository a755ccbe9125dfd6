//! capture_pane: one pane's text, a range of its rows bounded by lines and
//! bytes (the newest kept).
//!
//! The visible screen with no pane cache takes one round trip (the
//! capture's header gives the screen's height); any other range is first
//! bounded by the pane's history and height from a listing.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::super::context::{ErrorKind, ServerArgs, ToolContext, ToolError};
use super::super::find_pane;
use super::super::registry::Tool;
use super::bounds::{cut_front, join_lines, keep_tail_bytes, output_bounds, Lines};
use super::{capture_one, capture_one_cached};
use crate::tmux::{CaptureOptions, CaptureRange, CapturedText, PaneId, Tmux};

#[derive(Debug, Deserialize, JsonSchema)]
// A wire type: its doc comments would be schema descriptions every client
// reads in tools/list; the tool's description and the field names say it.
#[allow(missing_docs)]
pub struct CapturePaneArgs {
    /// Pane id, e.g. %1.
    pub pane_id: PaneId,
    /// First line: 0 = top of the visible screen, negative = history (-100 = 100 lines above). Default: 0, or all history when only end is given.
    #[serde(default)]
    pub start: Option<i64>,
    /// Last line, same scale (-1 = the line just above the screen; not counted from the bottom). Default: bottom of the screen.
    #[serde(default)]
    pub end: Option<i64>,
    /// Rejoin lines tmux wrapped.
    #[serde(default)]
    pub join_wrapped: bool,
    /// Keep colour/attribute escape sequences.
    #[serde(default)]
    pub escapes: bool,
    /// Keep at most this many lines, from the end (default 200, max 10000).
    #[serde(default)]
    pub max_lines: Option<usize>,
    /// Keep at most this many bytes, from the end (max 262144).
    #[serde(default)]
    pub max_bytes: Option<usize>,
    #[serde(flatten)]
    pub server: ServerArgs,
}

#[derive(Debug, Serialize, JsonSchema)]
// A wire type: its doc comments would be schema descriptions every client
// reads in tools/list; the tool's description and the field names say it.
#[allow(missing_docs)]
pub struct CapturePaneResult {
    pub pane_id: PaneId,
    pub text: String,
    /// Lines in the requested range that exist.
    pub total_lines: u64,
    /// Lines cut from the front to fit max_lines.
    pub dropped_lines: u64,
    /// First and last line returned (tmux scale); absent when none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub effective_start: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub effective_end: Option<i64>,
    /// The requested range reached past the pane's history or screen.
    pub range_clamped: bool,
    /// The byte ceiling cut lines from the front.
    pub byte_clamped: bool,
    pub returned_bytes: u64,
    pub omitted_bytes: u64,
    /// Secrets replaced with `[REDACTED:KIND]`.
    pub redactions: u64,
    /// tmux's number of each line of `text` (not sent: joined lines skip
    /// numbers, and cutting the result to fit a response renumbers from it).
    #[serde(skip)]
    numbers: Vec<i64>,
}

#[derive(Debug)]
/// `capture_pane`: one pane's text, bounded by lines and bytes.
pub struct CapturePane;

impl Tool for CapturePane {
    const NAME: &'static str = "capture_pane";
    const TITLE: &'static str = "Capture pane text";
    const DESCRIPTION: &'static str = "The text of one pane: the visible screen by default, or any line range of its scrollback (start/end in tmux's scale: 0 = top of screen, negative = history). Bounded to max_lines/max_bytes keeping the newest lines, with what was cut reported. For repeated reads of a pane use capture_since; to find which pane shows something use search_panes.";
    type Args = CapturePaneArgs;
    type Output = CapturePaneResult;

    fn run(ctx: &ToolContext, args: Self::Args) -> Result<Self::Output, ToolError> {
        let limits = ctx.ceilings();
        let (max_lines, max_bytes) = output_bounds(limits, args.max_lines, args.max_bytes)?;
        let tmux = ctx.tmux(&args.server)?;
        let options = CaptureOptions {
            join_wrapped: args.join_wrapped,
            escapes: args.escapes,
        };
        let (cap, shown) = match screen_in_one_trip(ctx, &tmux, &args, options, max_lines)? {
            Some(cap) => {
                let shown = Shown {
                    total_lines: u64::from(cap.pane_height),
                    dropped_lines: 0,
                    range_clamped: false,
                };
                (cap, shown)
            }
            None => listed_capture(ctx, &tmux, &args, options, max_lines)?,
        };
        Ok(pane_result(
            ctx,
            args.pane_id,
            &cap,
            shown,
            max_lines,
            max_bytes,
        ))
    }

    fn text(out: &Self::Output) -> String {
        let mut head = format!(
            "{} lines {}..{}",
            out.pane_id,
            out.effective_start.map_or("-".into(), |n| n.to_string()),
            out.effective_end.map_or("-".into(), |n| n.to_string())
        );
        if out.dropped_lines > 0 {
            head.push_str(&format!(", {} older lines dropped", out.dropped_lines));
        }
        if out.byte_clamped {
            head.push_str(&format!(", {} bytes omitted", out.omitted_bytes));
        }
        if out.range_clamped {
            head.push_str(", range clamped");
        }
        format!("{head}\n{}", out.text)
    }

    /// Keeps the newest lines, as max_bytes does.
    fn shrink(out: &mut Self::Output, excess: usize) -> bool {
        let Some(cut) = cut_front(&mut out.text, excess, 2) else {
            return false;
        };
        out.numbers.drain(..cut.lines.min(out.numbers.len()));
        out.byte_clamped = true;
        out.omitted_bytes += cut.bytes as u64;
        out.returned_bytes = out.text.len() as u64;
        if out.text.is_empty() {
            out.effective_start = None;
            out.effective_end = None;
        } else {
            out.effective_start = out.numbers.first().copied();
        }
        true
    }
}

/// What of a pane's range a capture_pane answer covers, before its lines
/// are cut to `max_lines` and the byte ceiling.
struct Shown {
    total_lines: u64,
    dropped_lines: u64,
    range_clamped: bool,
}

/// The visible screen asked for with no pane cache, in one round trip:
/// the capture's own header gives the screen's height, where the general
/// path lists the server first to learn it (a second wait behind whatever
/// tmux is doing: under many deep searches the waits are most of a cheap
/// call's time). `None` when the answer needs the listing: a pane cache
/// to consult, a range asked for, a screen taller than `max_lines` (whose
/// lines are then chosen by row, as before), or a pane not found (whose
/// error lists the panes there are).
fn screen_in_one_trip(
    ctx: &ToolContext,
    tmux: &Tmux,
    args: &CapturePaneArgs,
    options: CaptureOptions,
    max_lines: usize,
) -> Result<Option<CapturedText>, ToolError> {
    if ctx.pane_cache.is_some() || args.start.is_some() || args.end.is_some() {
        return Ok(None);
    }
    match capture_one(ctx, tmux, args.pane_id, CaptureRange::Visible, options) {
        Ok(cap) if u64::from(cap.pane_height) <= max_lines as u64 => Ok(Some(cap)),
        Ok(_) => Ok(None),
        Err(e) if e.kind == ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// capture_pane through the listing: the pane's history and height
/// bound the range asked for, and `max_lines` is taken from its newest
/// rows.
fn listed_capture(
    ctx: &ToolContext,
    tmux: &Tmux,
    args: &CapturePaneArgs,
    options: CaptureOptions,
    max_lines: usize,
) -> Result<(CapturedText, Shown), ToolError> {
    // The pane's history and height, and what the pane cache checks:
    // not the full listing, whose fields cost tmux several times more.
    let inv = ctx.inventory_of(
        tmux,
        crate::tmux::Fields::SearchWithFingerprint,
        ctx.tmux_deadline(),
    )?;
    let pane = find_pane(&inv, args.pane_id)?;
    let top = -(pane.history_size as i64);
    let bottom = i64::from(pane.pane_height) - 1;
    let (req_start, req_end) = match (args.start, args.end) {
        (None, None) => (0, bottom),
        (Some(s), None) => (s, bottom),
        (None, Some(e)) => (top, e),
        (Some(s), Some(e)) => (s, e),
    };
    if req_start > req_end {
        return Err(ToolError::invalid(format!(
            "start {req_start} is after end {req_end}; {} has lines {top}..{bottom}",
            args.pane_id
        )));
    }
    let range_clamped = req_start < top || req_end > bottom;
    let start = req_start.clamp(top, bottom);
    let end = req_end.clamp(top, bottom);
    let total_lines = (end - start + 1).max(0) as u64;
    let mut dropped_lines = 0u64;
    let mut start = start;
    if total_lines > max_lines as u64 {
        dropped_lines = total_lines - max_lines as u64;
        start = end - max_lines as i64 + 1;
    }
    let cap = capture_one_cached(
        ctx,
        tmux,
        &inv,
        args.pane_id,
        CaptureRange::Lines { start, end },
        options,
    )?;
    let shown = Shown {
        total_lines,
        dropped_lines,
        range_clamped,
    };
    Ok((cap, shown))
}

/// The capture_pane answer of `cap`: cut to `max_lines` (joined lines can
/// exceed it when tmux's numbers moved between the listing and the
/// capture: cut again, from the front) and to `max_bytes`, redacted.
fn pane_result(
    ctx: &ToolContext,
    pane_id: PaneId,
    cap: &CapturedText,
    shown: Shown,
    max_lines: usize,
    max_bytes: usize,
) -> CapturePaneResult {
    let mut dropped_lines = shown.dropped_lines;
    let mut lines = Lines::from_capture(cap);
    if lines.lines.len() > max_lines {
        let extra = lines.lines.len() - max_lines;
        dropped_lines += extra as u64;
        lines.lines.drain(..extra);
        lines.numbers.drain(..extra);
    }
    let (from, omitted) = keep_tail_bytes(&mut lines.lines, max_bytes);
    let kept = &lines.lines[from..];
    let mut text = join_lines(kept);
    let redactions = ctx.redact(&mut text);
    CapturePaneResult {
        numbers: lines.numbers[from..].to_vec(),
        pane_id,
        total_lines: shown.total_lines,
        dropped_lines,
        effective_start: lines.numbers.get(from).copied(),
        effective_end: lines.numbers.last().copied().filter(|_| !kept.is_empty()),
        range_clamped: shown.range_clamped,
        byte_clamped: omitted > 0,
        returned_bytes: text.len() as u64,
        omitted_bytes: omitted as u64,
        text,
        redactions,
    }
}
