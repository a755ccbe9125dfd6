//! Reading pane text: capture_pane (a range), capture_since (only what is
//! new since a cursor), snapshot_pane (the screen plus cursor and mode).
//!
//! Every range is bounded before tmux is asked (lines), and every result is
//! bounded again after (bytes, keeping the tail: the newest output is what
//! an agent wants). Results say what was cut.

use std::time::{Duration, Instant};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::context::{ErrorKind, ServerArgs, ToolContext, ToolError};
use super::{find_pane, json_str_len};
use crate::config::Ceilings;
use crate::tmux::{
    CaptureOptions, CaptureRange, CaptureRequest, CapturedText, Inventory, Pane, PaneId, Tmux,
    TmuxCommand,
};
use crate::tools::registry::{Annotations, Tool};

/// Captures one pane and waits for the reply.
pub fn capture_one(
    ctx: &ToolContext,
    tmux: &Tmux,
    pane: PaneId,
    range: CaptureRange,
    options: CaptureOptions,
) -> Result<CapturedText, ToolError> {
    capture_one_by(ctx, tmux, pane, range, options, ctx.tmux_deadline())
}

/// [`capture_one`] answered by `deadline`.
pub fn capture_one_by(
    ctx: &ToolContext,
    tmux: &Tmux,
    pane: PaneId,
    range: CaptureRange,
    options: CaptureOptions,
    deadline: Instant,
) -> Result<CapturedText, ToolError> {
    ctx.check_cancelled()?;
    // One pane: over the open control client when it suits, with no
    // process to start (a process's handshake takes several turns of
    // tmux's loop, each one behind whatever sweep chunk tmux is running).
    let rx = tmux.capture_small(
        vec![CaptureRequest { pane, range }],
        options,
        deadline,
        ctx.cancel.clone(),
    );
    // The capture answers by its deadline itself; this only stops a lost
    // reply from holding the call.
    match rx.recv_deadline(deadline + Duration::from_secs(1)) {
        Ok(reply) => reply.result.map_err(ToolError::from),
        Err(_) => Err(ToolError::timed_out(format!(
            "tmux did not return the capture of {pane} in time: retry, or capture fewer lines"
        ))),
    }
}

/// [`capture_one`] through the pane cache when it is on: the same text, with
/// tmux asked only for what changed since the pane was last read.
/// `inventory` must have been read just before.
pub fn capture_one_cached(
    ctx: &ToolContext,
    tmux: &Tmux,
    inventory: &crate::tmux::Inventory,
    pane: PaneId,
    range: CaptureRange,
    options: CaptureOptions,
) -> Result<CapturedText, ToolError> {
    let Some(cache) = &ctx.pane_cache else {
        return capture_one(ctx, tmux, pane, range, options);
    };
    ctx.check_cancelled()?;
    let rx = cache.capture(
        tmux,
        inventory,
        vec![CaptureRequest { pane, range }],
        options,
        ctx.tmux_deadline(),
        ctx.cancel.clone(),
    );
    let wait = ctx.ceilings().tmux_timeout + Duration::from_secs(1);
    match rx.recv_timeout(wait) {
        Ok(reply) => reply.result.map_err(ToolError::from),
        Err(_) => Err(ToolError::timed_out(format!(
            "tmux did not return the capture of {pane} in time: retry, or capture fewer lines"
        ))),
    }
}

/// Captured lines with their tmux line numbers.
#[derive(Debug, Default)]
struct Lines {
    lines: Vec<String>,
    numbers: Vec<i64>,
}

impl Lines {
    fn from_capture(cap: &CapturedText) -> Lines {
        let text = String::from_utf8_lossy(&cap.bytes);
        let mut lines: Vec<String> = text.split('\n').map(str::to_owned).collect();
        // Every line ends in '\n': the split leaves one empty tail.
        if lines.last().is_some_and(String::is_empty) {
            lines.pop();
        }
        let numbers = match &cap.line_numbers {
            Some(n) if n.len() == lines.len() => n.clone(),
            _ => (0..lines.len() as i64)
                .map(|i| cap.first_line + i)
                .collect(),
        };
        Lines { lines, numbers }
    }
}

/// The tail of `lines` that fits `max_bytes` (each line counts its newline).
/// Returns (kept-from index, omitted bytes); a single line longer than the
/// ceiling keeps its end.
pub(crate) fn keep_tail_bytes(lines: &mut [String], max_bytes: usize) -> (usize, usize) {
    let mut used = 0usize;
    let mut from = lines.len();
    while from > 0 {
        let len = lines[from - 1].len() + 1;
        if used + len > max_bytes {
            break;
        }
        used += len;
        from -= 1;
    }
    let mut omitted: usize = lines[..from].iter().map(|l| l.len() + 1).sum();
    if from == lines.len() && from > 0 {
        // Not even the last line fits: keep the end of it.
        let last = &mut lines[from - 1];
        let room = max_bytes.saturating_sub(1);
        let mut cut = last.len().saturating_sub(room);
        while cut < last.len() && !last.is_char_boundary(cut) {
            cut += 1;
        }
        omitted -= last.len() + 1;
        omitted += cut;
        last.drain(..cut);
        from -= 1;
    }
    (from, omitted)
}

/// What [`cut_front`] took from a text.
#[derive(Debug, PartialEq, Eq)]
struct FrontCut {
    /// Whole lines removed.
    lines: usize,
    /// Bytes removed (newlines included).
    bytes: usize,
}

/// Cuts the oldest lines of `text` until about `excess` encoded bytes are
/// saved in a response that carries `text` in `copies` places (the
/// structured result and its rendering): whole lines first; the last line
/// is cut within, keeping its end, only when it alone is too much. `None`
/// when there is nothing to cut.
fn cut_front(text: &mut String, excess: usize, copies: usize) -> Option<FrontCut> {
    let mut saved = 0usize;
    let mut cut = 0usize;
    let mut lines = 0usize;
    for line in text.split_inclusive('\n') {
        if saved >= excess {
            break;
        }
        if cut + line.len() < text.len() {
            saved += copies * json_str_len(line);
            cut += line.len();
            lines += 1;
            continue;
        }
        let mut within = line.len();
        for (i, c) in line.char_indices() {
            if saved >= excess {
                within = i;
                break;
            }
            saved += copies * json_str_len(c.encode_utf8(&mut [0; 4]));
        }
        cut += within;
        lines += usize::from(within == line.len());
    }
    if cut == 0 {
        return None;
    }
    text.drain(..cut);
    Some(FrontCut { lines, bytes: cut })
}

fn join_lines(lines: &[String]) -> String {
    let mut s = String::with_capacity(lines.iter().map(|l| l.len() + 1).sum());
    for l in lines {
        s.push_str(l);
        s.push('\n');
    }
    s
}

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

/// A capture's `max_lines` and `max_bytes`: the caller's values, or the
/// defaults; a value above the operator's ceiling is an error naming it.
pub(crate) fn output_bounds(
    limits: &Ceilings,
    max_lines: Option<usize>,
    max_bytes: Option<usize>,
) -> Result<(usize, usize), ToolError> {
    Ok((
        bounded_arg(
            max_lines,
            limits.capture_default_lines,
            limits.capture_lines,
            "max_lines",
        )?,
        bounded_arg(
            max_bytes,
            limits.capture_bytes,
            limits.capture_bytes,
            "max_bytes",
        )?,
    ))
}

/// An optional count argument: default when absent, never zero, never
/// above `ceiling` (asking for more is an error, as everywhere: silently
/// returning less would look like a pane with less text).
fn bounded_arg(
    value: Option<usize>,
    default: usize,
    ceiling: usize,
    name: &str,
) -> Result<usize, ToolError> {
    match value {
        None => Ok(default.min(ceiling)),
        Some(0) => Err(ToolError::invalid(format!("{name} must be at least 1"))),
        Some(n) if n > ceiling => Err(ToolError::over_ceiling(format!(
            "{name} may be at most {ceiling} (the operator's ceiling), got {n}"
        ))),
        Some(n) => Ok(n),
    }
}

// ---------------------------------------------------------------- since

/// Lines hashed to re-find the cursor's place after tmux renumbers history:
/// at least this many...
const ANCHOR_LINES: u64 = 3;
/// ...and more while fewer than ANCHOR_TEXT_LINES of them hold text (a run
/// of blank lines or bare prompts matches in too many places), up to this.
const MAX_ANCHOR_LINES: u64 = 16;
const ANCHOR_TEXT_LINES: usize = 2;
const CURSOR_PREFIX: &str = "pc3";

fn fnv(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

fn line_hash(line: &str) -> u64 {
    fnv(line.trim_end().as_bytes())
}

/// Hash of a run of lines (the anchor).
fn anchor_hash<'a>(lines: impl Iterator<Item = &'a String>) -> u64 {
    let mut h = fnv(b"anchor");
    for l in lines {
        h = h.rotate_left(5) ^ line_hash(l);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// How many of the last `lines` make a distinctive anchor.
fn anchor_length(lines: &[String]) -> u64 {
    let mut len = 0usize;
    let mut with_text = 0usize;
    for line in lines.iter().rev() {
        if len as u64 >= MAX_ANCHOR_LINES
            || (len as u64 >= ANCHOR_LINES && with_text >= ANCHOR_TEXT_LINES)
        {
            break;
        }
        len += 1;
        // A bare prompt ("$ ", "> ") says as little as a blank line.
        if line.trim().len() > 2 {
            with_text += 1;
        }
    }
    len as u64
}

/// What a capture_since cursor records.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Cursor {
    pane: u32,
    pid: u32,
    /// Absolute row (0 = oldest history line when the cursor was made) of
    /// the first line not yet returned.
    boundary: u64,
    /// How many lines before `boundary` the anchor covers.
    anchor_len: u64,
    /// Hash of those lines.
    anchor: u64,
    /// Which tmux server (hash of its socket path).
    server: u32,
}

impl Cursor {
    /// The cursor's fields, then a tag under this process's key
    /// ([`crate::tools::cursor_key`]), in hex.
    fn encode(&self) -> String {
        let body = format!(
            "{CURSOR_PREFIX}.{}.{}.{}.{}.{:016x}.{:08x}",
            self.pane, self.pid, self.boundary, self.anchor_len, self.anchor, self.server
        );
        let tag: String = crate::tools::cursor_key::tag(body.as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        format!("{body}.{tag}")
    }

    fn decode(text: &str) -> Result<Cursor, ToolError> {
        let bad = || {
            ToolError::invalid(format!(
                "cursor {:?} is not a capture_since cursor: pass the cursor field of an earlier capture_since result, or omit it to start over",
                text.chars().take(80).collect::<String>()
            ))
        };
        let (body, tag) = text.rsplit_once('.').ok_or_else(bad)?;
        let tag: Option<Vec<u8>> = (tag.len() % 2 == 0 && tag.is_ascii())
            .then(|| {
                (0..tag.len())
                    .step_by(2)
                    .map(|i| u8::from_str_radix(&tag[i..i + 2], 16).ok())
                    .collect()
            })
            .flatten();
        if !body.starts_with(CURSOR_PREFIX) {
            return Err(bad());
        }
        if !tag.is_some_and(|t| crate::tools::cursor_key::verify(body.as_bytes(), &t)) {
            return Err(ToolError::invalid(format!(
                "cursor {:?} is not one this panescan made (cursors hold for one panescan process: after a restart, or if it was edited, omit it to start over)",
                text.chars().take(80).collect::<String>()
            )));
        }
        let parts: Vec<&str> = body.split('.').collect();
        if parts.len() != 7 || parts[0] != CURSOR_PREFIX {
            return Err(bad());
        }
        Ok(Cursor {
            pane: parts[1].parse().map_err(|_| bad())?,
            pid: parts[2].parse().map_err(|_| bad())?,
            boundary: parts[3].parse().map_err(|_| bad())?,
            anchor_len: parts[4]
                .parse()
                .ok()
                .filter(|n| *n <= MAX_ANCHOR_LINES)
                .ok_or_else(bad)?,
            anchor: u64::from_str_radix(parts[5], 16).map_err(|_| bad())?,
            server: u32::from_str_radix(parts[6], 16).map_err(|_| bad())?,
        })
    }
}

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
        let server = (fnv(tmux.socket_path().as_os_str().as_encoded_bytes()) & 0xffff_ffff) as u32;
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

/// One pane's rows, read through the pane cache, placed on the absolute row
/// scale (0 = the oldest history line).
struct PaneRows<'a> {
    ctx: &'a ToolContext,
    tmux: &'a Tmux,
    inv: &'a Inventory,
    pane: &'a Pane,
}

/// Captured rows and the absolute row of the first.
struct Rows {
    got: Lines,
    abs0: i64,
}

/// Where a call's new lines start, and what was lost before them.
struct Start {
    from_abs: i64,
    missed: bool,
    /// 0 when nothing was missed; none when unknown (or no cursor).
    missed_lines: Option<u64>,
}

impl PaneRows<'_> {
    /// The absolute row of the terminal cursor when the pane was listed.
    fn now(&self) -> u64 {
        self.pane.history_size + u64::from(self.pane.cursor_y)
    }

    /// Rows from tmux line `start` to the terminal cursor's row.
    fn capture(&self, start: i64) -> Result<Rows, ToolError> {
        let cap = capture_one_cached(
            self.ctx,
            self.tmux,
            self.inv,
            self.pane.pane_id,
            CaptureRange::Lines {
                start,
                end: i64::from(self.pane.cursor_y),
            },
            CaptureOptions::default(),
        )?;
        // Absolute row of captured line i, from tmux's own numbers at
        // capture time (exact even if output arrived since the inventory).
        Ok(Rows {
            got: Lines::from_capture(&cap),
            abs0: cap.first_line + cap.history_size as i64,
        })
    }

    /// Captures from the earliest row the call may need (the anchor before
    /// the old boundary, or the tail when starting fresh) to the cursor row,
    /// and finds where the new lines start.
    fn since(
        &self,
        previous: Option<&Cursor>,
        respawned: bool,
        max_lines: usize,
    ) -> Result<(Rows, Start), ToolError> {
        let now = self.now();
        let hs = self.pane.history_size;
        let want_from = match previous {
            Some(c) => c
                .boundary
                .saturating_sub(c.anchor_len)
                .min(now.saturating_sub(MAX_ANCHOR_LINES)),
            None if respawned => 0,
            None => now.saturating_sub(max_lines as u64 + MAX_ANCHOR_LINES),
        };
        let rows = self.capture(want_from as i64 - hs as i64)?;
        let Some(c) = previous else {
            let from_abs = if respawned {
                rows.abs0
            } else {
                now as i64 - max_lines as i64
            };
            let start = Start {
                from_abs,
                missed: false,
                missed_lines: None,
            };
            return Ok((rows, start));
        };
        // Nothing is missed until the anchor proves lost.
        let b = c.boundary as i64;
        let kept = |from_abs| Start {
            from_abs,
            missed: false,
            missed_lines: Some(0),
        };
        if rows.anchor_holds(c, b) {
            return Ok((rows, kept(b)));
        }
        // History was trimmed or renumbered: look for the anchor in the
        // whole history, newest first.
        let rows = self.capture(-(hs as i64))?;
        let n = rows.got.lines.len() as i64;
        let found = (rows.abs0..=(rows.abs0 + n).min(b))
            .rev()
            .find(|&cand| rows.anchor_holds(c, cand));
        let start = match found {
            Some(cand) => kept(cand),
            // The rows after the old boundary were dropped from history (or
            // cleared) before this call; tmux keeps no count of dropped
            // rows, so how many is unknown.
            None => Start {
                from_abs: rows.abs0,
                missed: true,
                missed_lines: None,
            },
        };
        Ok((rows, start))
    }
}

/// The new lines of a call, bounded, and what bounding dropped.
struct NewLines {
    kept: Vec<String>,
    /// tmux line number of the first kept line.
    first_line: Option<i64>,
    dropped: u64,
    omitted: usize,
    /// The line the terminal cursor is on.
    pending_line: String,
    /// Absolute row after the last new line: the next boundary.
    end_abs: i64,
}

impl Rows {
    /// Whether the `anchor_len` rows before absolute row `b` hash to the
    /// cursor's anchor.
    fn anchor_holds(&self, c: &Cursor, b: i64) -> bool {
        let lo = (b - c.anchor_len as i64).max(0);
        if lo < self.abs0 {
            return false;
        }
        let i0 = (lo - self.abs0) as usize;
        let i1 = (b - self.abs0) as usize;
        i1 <= self.got.lines.len() && anchor_hash(self.got.lines[i0..i1].iter()) == c.anchor
    }

    /// The completed rows from `from_abs` up to the terminal cursor's row
    /// (`now`), the newest kept within `max_lines` and `max_bytes`.
    fn new_lines(&self, from_abs: i64, now: u64, max_lines: usize, max_bytes: usize) -> NewLines {
        let (got, abs0) = (&self.got, self.abs0);
        let total = got.lines.len() as i64;
        // The row the terminal cursor is on is still being written.
        let cursor_abs = now as i64;
        let end_abs = (abs0 + total).min(cursor_abs);
        let pending_line = if cursor_abs >= abs0 && cursor_abs < abs0 + total {
            got.lines[(cursor_abs - abs0) as usize]
                .trim_end()
                .to_owned()
        } else {
            String::new()
        };
        let from_abs = from_abs.clamp(abs0, end_abs.max(abs0));
        let i0 = (from_abs - abs0) as usize;
        let i1 = (end_abs - abs0).max(0) as usize;
        let mut kept: Vec<String> = if i0 < i1 {
            got.lines[i0..i1].to_vec()
        } else {
            Vec::new()
        };
        let mut first_line = (!kept.is_empty()).then(|| got.numbers[i0]);
        let mut dropped = 0u64;
        if kept.len() > max_lines {
            let extra = kept.len() - max_lines;
            kept.drain(..extra);
            dropped += extra as u64;
        }
        let (from, omitted) = keep_tail_bytes(&mut kept, max_bytes);
        dropped += from as u64;
        kept.drain(..from);
        if let Some(f) = first_line.as_mut() {
            *f += dropped as i64;
        }
        NewLines {
            first_line: first_line.filter(|_| !kept.is_empty()),
            kept,
            dropped,
            omitted,
            pending_line,
            end_abs,
        }
    }

    /// The anchor of the boundary `end_abs`: its length and hash, over the
    /// same rows `anchor_holds` will hash next time.
    fn anchor_at(&self, end_abs: i64) -> (u64, u64) {
        let i1 = (end_abs - self.abs0).max(0) as usize;
        let a1 = i1.min(self.got.lines.len());
        let anchor_len = anchor_length(&self.got.lines[..a1]);
        let anchor = anchor_hash(self.got.lines[a1 - anchor_len as usize..a1].iter());
        (anchor_len, anchor)
    }
}

// ---------------------------------------------------------------- snapshot

#[derive(Debug, Deserialize, JsonSchema)]
// A wire type: its doc comments would be schema descriptions every client
// reads in tools/list; the tool's description and the field names say it.
#[allow(missing_docs)]
pub struct SnapshotPaneArgs {
    /// Pane id, e.g. %1.
    pub pane_id: PaneId,
    /// Keep at most this many bytes of text (max 262144).
    #[serde(default)]
    pub max_bytes: Option<usize>,
    #[serde(flatten)]
    pub server: ServerArgs,
}

#[derive(Debug, Serialize, JsonSchema)]
// A wire type: its doc comments would be schema descriptions every client
// reads in tools/list; the tool's description and the field names say it.
#[allow(missing_docs)]
pub struct SnapshotPaneResult {
    pub pane_id: PaneId,
    /// What the pane shows now (in copy mode: the scrolled-to view).
    pub text: String,
    /// Secrets replaced with `[REDACTED:KIND]`.
    pub redactions: u64,
    pub cursor_x: u32,
    pub cursor_y: u32,
    pub pane_width: u32,
    pub pane_height: u32,
    pub pane_in_mode: bool,
    /// e.g. copy-mode; empty when none.
    pub pane_mode: String,
    /// A full-screen app (vim, less, top) is on the alternate screen.
    pub alternate_on: bool,
    /// Lines scrolled back in copy mode; absent outside copy mode.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scroll_position: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub copy_cursor_x: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub copy_cursor_y: Option<u32>,
    pub history_size: u64,
    pub history_limit: u64,
    pub pane_dead: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pane_dead_status: Option<i32>,
    pub pane_current_command: String,
    pub pane_title: String,
    /// First line of text (tmux scale).
    pub first_line: i64,
    pub byte_clamped: bool,
    pub omitted_bytes: u64,
}

#[derive(Debug)]
/// `snapshot_pane`: a pane's visible screen with its cursor and modes, as a person sees it.
pub struct SnapshotPane;

impl Tool for SnapshotPane {
    const NAME: &'static str = "snapshot_pane";
    const TITLE: &'static str = "Pane snapshot";
    const DESCRIPTION: &'static str = "What a pane shows now plus its state: cursor position, copy mode and scroll position, alternate screen (full-screen app), dead/exit status, size. Use to understand an interactive program's screen; for scrollback use capture_pane.";
    const ANNOTATIONS: Annotations = Annotations::READ_VOLATILE;
    type Args = SnapshotPaneArgs;
    type Output = SnapshotPaneResult;

    fn run(ctx: &ToolContext, args: Self::Args) -> Result<Self::Output, ToolError> {
        let limits = ctx.ceilings();
        let max_bytes = bounded_arg(
            args.max_bytes,
            limits.capture_bytes,
            limits.capture_bytes,
            "max_bytes",
        )?;
        let tmux = ctx.tmux(&args.server)?;
        let inv = ctx.inventory(&tmux)?;
        let pane = find_pane(&inv, args.pane_id)?.clone();
        let (mut scroll, mut ccx, mut ccy) = (None, None, None);
        if pane.pane_in_mode {
            let cmd = TmuxCommand::new("display-message")
                .flag("-p")
                .target(args.pane_id)
                .format_arg("#{scroll_position},#{copy_cursor_x},#{copy_cursor_y}");
            if let Ok(out) = tmux.run(&cmd, ctx.tmux_deadline()) {
                let mut it = out.trim_end().split(',');
                scroll = it.next().and_then(|v| v.parse::<u64>().ok());
                ccx = it.next().and_then(|v| v.parse::<u32>().ok());
                ccy = it.next().and_then(|v| v.parse::<u32>().ok());
            }
        }
        let h = i64::from(pane.pane_height);
        let range = match scroll {
            Some(s) if s > 0 => CaptureRange::Lines {
                start: -(s as i64),
                end: -(s as i64) + h - 1,
            },
            _ => CaptureRange::Visible,
        };
        let cap = capture_one(ctx, &tmux, args.pane_id, range, CaptureOptions::default())?;
        let mut lines = Lines::from_capture(&cap);
        let (from, omitted) = keep_tail_bytes(&mut lines.lines, max_bytes);
        let mut text = join_lines(&lines.lines[from..]);
        let redactions = ctx.redact(&mut text);
        Ok(SnapshotPaneResult {
            pane_id: args.pane_id,
            text,
            redactions,
            cursor_x: pane.cursor_x,
            cursor_y: pane.cursor_y,
            pane_width: pane.pane_width,
            pane_height: pane.pane_height,
            pane_in_mode: pane.pane_in_mode,
            pane_mode: pane.pane_mode,
            alternate_on: pane.alternate_on,
            scroll_position: scroll,
            copy_cursor_x: ccx,
            copy_cursor_y: ccy,
            history_size: pane.history_size,
            history_limit: pane.history_limit,
            pane_dead: pane.pane_dead,
            pane_dead_status: pane.pane_dead_status,
            pane_current_command: pane.pane_current_command,
            pane_title: pane.pane_title,
            first_line: lines.numbers.get(from).copied().unwrap_or(cap.first_line),
            byte_clamped: omitted > 0,
            omitted_bytes: omitted as u64,
        })
    }

    fn text(out: &Self::Output) -> String {
        let mut head = format!(
            "{} {}x{} cursor {},{} cmd {}",
            out.pane_id,
            out.pane_width,
            out.pane_height,
            out.cursor_x,
            out.cursor_y,
            out.pane_current_command
        );
        if out.pane_in_mode {
            head.push_str(&format!(
                " mode {} scroll {}",
                out.pane_mode,
                out.scroll_position.unwrap_or(0)
            ));
        }
        if out.alternate_on {
            head.push_str(" alternate-screen");
        }
        if out.pane_dead {
            head.push_str(&format!(
                " dead status {}",
                out.pane_dead_status.map_or("?".into(), |s| s.to_string())
            ));
        }
        format!("{head}\n{}", out.text)
    }

    /// Keeps the bottom of the screen, as max_bytes does.
    fn shrink(out: &mut Self::Output, excess: usize) -> bool {
        let Some(cut) = cut_front(&mut out.text, excess, 2) else {
            return false;
        };
        out.byte_clamped = true;
        out.omitted_bytes += cut.bytes as u64;
        out.first_line += cut.lines as i64;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursor_round_trips_and_rejects_tampering() {
        let c = Cursor {
            pane: 3,
            pid: 1234,
            boundary: 77,
            anchor_len: 3,
            anchor: 0xdead_beef,
            server: 9,
        };
        let text = c.encode();
        assert_eq!(Cursor::decode(&text).unwrap(), c);
        let tampered = text.replacen(".77.", ".78.", 1);
        assert!(Cursor::decode(&tampered).is_err());
        assert!(Cursor::decode("").is_err());
        assert!(Cursor::decode("garbage").is_err());
        assert!(Cursor::decode("ltxc1.1.20").is_err());
        let long = Cursor {
            anchor_len: 99,
            ..c.clone()
        };
        assert!(Cursor::decode(&long.encode()).is_err());
    }

    #[test]
    fn anchors_grow_past_blank_lines() {
        let l = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(anchor_length(&l(&["aa1", "bb2", "cc3", "dd4"])), 3);
        assert_eq!(anchor_length(&l(&["xx1", "yy2", "", "$ ", ""])), 5);
        assert_eq!(anchor_length(&l(&["", ""])), 2);
        assert_eq!(anchor_length(&vec![String::new(); 40]), MAX_ANCHOR_LINES);
    }

    #[test]
    fn cutting_the_front_counts_escaped_bytes_and_keeps_the_newest() {
        // Each quote costs 2 bytes per copy: 3 quotes + newline = 8 per
        // copy, 16 in a response carrying the text twice.
        let mut text = "\"\"\"\nabc\n\"\"\"\n".to_owned();
        assert_eq!(
            cut_front(&mut text, 16, 2),
            Some(FrontCut { lines: 1, bytes: 4 })
        );
        assert_eq!(text, "abc\n\"\"\"\n");
        assert_eq!(
            cut_front(&mut text, 10, 2),
            Some(FrontCut { lines: 1, bytes: 4 })
        );
        // The last line alone is too much: its end is kept.
        assert_eq!(text, "\"\"\"\n");
        assert_eq!(
            cut_front(&mut text, 5, 2),
            Some(FrontCut { lines: 0, bytes: 2 })
        );
        assert_eq!(text, "\"\n");
        assert_eq!(
            cut_front(&mut text, 100, 2),
            Some(FrontCut { lines: 1, bytes: 2 })
        );
        assert_eq!(text, "");
        assert_eq!(cut_front(&mut text, 1, 2), None);
        let mut wide = "\u{1}\u{20ac}\u{20ac}".to_owned();
        assert_eq!(
            cut_front(&mut wide, 7, 1),
            Some(FrontCut { lines: 0, bytes: 4 })
        );
        assert_eq!(wide, "\u{20ac}");
    }

    #[test]
    fn tail_bytes_keep_the_newest() {
        let mut lines: Vec<String> = vec!["aaaa".into(), "bb".into(), "c".into()];
        let (from, omitted) = keep_tail_bytes(&mut lines, 5);
        assert_eq!((from, omitted), (1, 5));
        let mut long: Vec<String> = vec!["0123456789".into()];
        let (from, omitted) = keep_tail_bytes(&mut long, 5);
        assert_eq!(from, 0);
        assert_eq!(long[0], "6789");
        assert_eq!(omitted, 6);
        let mut all: Vec<String> = vec!["a".into()];
        assert_eq!(keep_tail_bytes(&mut all, 100), (0, 0));
    }
}
