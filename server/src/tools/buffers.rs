//! Paste buffers: paste_text (mutating tier) pastes text into a pane
//! through a buffer of its own; show_buffer (read tier) lists the buffers
//! or reads one, bounded.
//!
//! paste_text never leaves its text behind: the buffer has a name no one
//! else uses ([`crate::tmux::buffers`]), `paste-buffer -d` deletes it and a
//! failed paste deletes it too; the user's buffers are not touched.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::context::{ServerArgs, ToolContext, ToolError};
use super::{bounded_list, cut_to_bytes, json_str_len};
use crate::config::Tier;
use crate::tmux::{PaneId, TmuxError};
use crate::tools::registry::{Annotations, Tool};

/// Longest text paste_text pastes in one call.
const MAX_PASTE_BYTES: usize = 64 * 1024;
/// Longest buffer name show_buffer accepts.
const MAX_NAME_BYTES: usize = 256;

#[derive(Debug, Deserialize, JsonSchema)]
// A wire type: its doc comments would be schema descriptions every client
// reads in tools/list; the tool's description and the field names say it.
#[allow(missing_docs)]
pub struct PasteTextArgs {
    /// Pane id, e.g. %1.
    pub pane_id: PaneId,
    /// Text pasted exactly (newlines arrive as Enter, as a terminal paste).
    pub text: String,
    /// Wrap in bracketed-paste marks when the program asked for them.
    #[serde(default)]
    pub bracketed: bool,
    #[serde(flatten)]
    pub server: ServerArgs,
}

#[derive(Debug, Serialize, JsonSchema)]
// A wire type: its doc comments would be schema descriptions every client
// reads in tools/list; the tool's description and the field names say it.
#[allow(missing_docs)]
pub struct PasteTextResult {
    pub pane_id: PaneId,
    pub text_bytes: usize,
    pub bracketed: bool,
}

#[derive(Debug)]
/// `paste_text` (mutating tier): pastes text into a pane.
pub struct PasteText;

impl Tool for PasteText {
    const NAME: &'static str = "paste_text";
    const TITLE: &'static str = "Paste text into a pane";
    const DESCRIPTION: &'static str = "Paste text into a pane as a terminal paste (one write; bracketed if asked and the program enabled it), through a one-time buffer deleted afterwards. Use for multi-line text an editor or REPL should receive at once; to press keys use send_keys.";
    const TIER: Tier = Tier::Mutating;
    const ANNOTATIONS: Annotations = Annotations::MUTATE;
    type Args = PasteTextArgs;
    type Output = PasteTextResult;

    fn run(ctx: &ToolContext, args: Self::Args) -> Result<Self::Output, ToolError> {
        let text = args.text;
        if text.is_empty() {
            return Err(ToolError::invalid("text is empty: nothing to paste"));
        }
        if text.len() > MAX_PASTE_BYTES {
            return Err(ToolError::invalid(format!(
                "text is {} bytes; paste at most {MAX_PASTE_BYTES} per call",
                text.len()
            )));
        }
        if text.contains('\0') {
            // tmux reads its arguments as C strings: the text would end
            // there, silently.
            return Err(ToolError::invalid(
                "text contains a NUL character, which tmux cannot paste; remove it",
            ));
        }
        let tmux = ctx.tmux(&args.server)?;
        let (pane, bracketed, deadline) = (args.pane_id, args.bracketed, ctx.tmux_deadline());
        let text_bytes = text.len();
        // No listing first: tmux checks the pane, and a paste to a pane
        // that is gone takes the same path as any failed paste (the buffer
        // is deleted).
        super::own_pane::refuse_own_pane(ctx, &tmux, pane, None, deadline)
            .and_then(|()| {
                ctx.cancellable(move || tmux.paste_text(pane, &text, bracketed, deadline))
            })
            .map_err(|e| match e.kind {
                super::context::ErrorKind::NotFound => ToolError::not_found(format!(
                    "no pane {pane}: it may have been closed; list panes again to get current ids"
                )),
                _ => e,
            })?;
        Ok(PasteTextResult {
            pane_id: pane,
            text_bytes,
            bracketed,
        })
    }
}

/// A buffer name: 1-256 bytes without control characters (quoting keeps
/// every other character inert).
fn check_buffer_name(name: &str) -> Result<(), ToolError> {
    if name.is_empty() || name.len() > MAX_NAME_BYTES || name.chars().any(char::is_control) {
        return Err(ToolError::invalid(format!(
            "name must be 1-{MAX_NAME_BYTES} bytes without control characters; call show_buffer without name to list the buffers"
        )));
    }
    Ok(())
}

#[derive(Debug, Deserialize, JsonSchema)]
// A wire type: its doc comments would be schema descriptions every client
// reads in tools/list; the tool's description and the field names say it.
#[allow(missing_docs)]
pub struct ShowBufferArgs {
    /// A buffer's name; omit to list the buffers.
    #[serde(default)]
    pub name: Option<String>,
    /// Return at most this many bytes of its text, from the start (max 262144).
    #[serde(default)]
    pub max_bytes: Option<usize>,
    #[serde(flatten)]
    pub server: ServerArgs,
}

#[derive(Debug, Serialize, JsonSchema)]
// A wire type: its doc comments would be schema descriptions every client
// reads in tools/list; the tool's description and the field names say it.
#[allow(missing_docs)]
pub struct BufferRow {
    pub name: String,
    pub size: u64,
    pub created: i64,
}

#[derive(Debug, Serialize, JsonSchema)]
// A wire type: its doc comments would be schema descriptions every client
// reads in tools/list; the tool's description and the field names say it.
#[allow(missing_docs)]
pub struct BufferText {
    pub name: String,
    pub text: String,
    /// Bytes cut from the end to fit max_bytes or the response.
    pub truncated: bool,
    pub returned_bytes: u64,
    /// Secrets replaced with `[REDACTED:KIND]`.
    pub redactions: u64,
}

#[derive(Debug, Serialize, JsonSchema)]
// A wire type: its doc comments would be schema descriptions every client
// reads in tools/list; the tool's description and the field names say it.
#[allow(missing_docs)]
pub struct ShowBufferResult {
    /// Without name: the buffers, most recent first.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub buffers: Option<Vec<BufferRow>>,
    /// Buffers past the list's bound.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub more_buffers: Option<usize>,
    /// With name: its text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub buffer: Option<BufferText>,
}

#[derive(Debug)]
/// `show_buffer`: the paste buffers, or one buffer's text.
pub struct ShowBuffer;

impl Tool for ShowBuffer {
    const NAME: &'static str = "show_buffer";
    const TITLE: &'static str = "Paste buffers";
    const DESCRIPTION: &'static str = "List the paste buffers (name, size, creation time, most recent first) or, with name, read one buffer's text from its start, bounded by max_bytes and flagged when cut. Use to see what was copied in tmux.";
    type Args = ShowBufferArgs;
    type Output = ShowBufferResult;

    fn run(ctx: &ToolContext, args: Self::Args) -> Result<Self::Output, ToolError> {
        let limit = ctx.ceilings().capture_bytes;
        let max_bytes = match args.max_bytes {
            None => limit,
            Some(0) => return Err(ToolError::invalid("max_bytes must be at least 1")),
            Some(n) if n > limit => {
                return Err(ToolError::over_ceiling(format!(
                    "max_bytes may be at most {limit} (the operator's ceiling), got {n}"
                )))
            }
            Some(n) => n,
        };
        if let Some(name) = &args.name {
            check_buffer_name(name)?;
        }
        let tmux = ctx.tmux(&args.server)?;
        let deadline = ctx.tmux_deadline();
        let Some(name) = args.name else {
            let rows = ctx.ceilings().list_rows;
            let listed = ctx.cancellable(move || tmux.list_buffers(deadline))?;
            let more = listed.len().saturating_sub(rows);
            let buffers = listed.into_iter().take(rows).map(row).collect();
            return Ok(ShowBufferResult {
                buffers: Some(buffers),
                more_buffers: (more > 0).then_some(more),
                buffer: None,
            });
        };
        let (t, n) = (tmux.clone(), name.clone());
        let head = ctx
            .cancellable(move || t.read_buffer(&n, max_bytes, deadline))
            .map_err(|e| missing_buffer(ctx, &tmux, &name, e))?;
        let mut text = String::from_utf8_lossy(&head.bytes).into_owned();
        // Lossy decoding may grow the text (U+FFFD is 3 bytes).
        let cut = cut_to_bytes(&mut text, max_bytes);
        // A buffer holds what was copied from panes or pasted into them.
        let redactions = ctx.redact(&mut text);
        Ok(ShowBufferResult {
            buffers: None,
            more_buffers: None,
            buffer: Some(BufferText {
                name,
                returned_bytes: text.len() as u64,
                text,
                truncated: head.truncated || cut,
                redactions,
            }),
        })
    }

    fn text(out: &Self::Output) -> String {
        match (&out.buffer, &out.buffers) {
            (Some(b), _) => {
                let cut = if b.truncated { ", cut" } else { "" };
                format!("{} ({} bytes{cut})\n{}", b.name, b.returned_bytes, b.text)
            }
            (None, Some(rows)) => rows
                .iter()
                .map(|r| format!("{}\t{} bytes\n", r.name, r.size))
                .collect(),
            (None, None) => String::new(),
        }
    }

    /// Cuts the text from the end, or drops the oldest buffers listed.
    fn shrink(out: &mut Self::Output, excess: usize) -> bool {
        if let Some(b) = &mut out.buffer {
            if !cut_end_escaped(&mut b.text, excess) {
                return false;
            }
            b.truncated = true;
            b.returned_bytes = b.text.len() as u64;
            return true;
        }
        if let Some(rows) = &mut out.buffers {
            // Each row is in the result twice; 48 bytes covers its keys,
            // numbers and punctuation.
            let (mut freed, mut dropped) = (0, 0);
            while freed < excess {
                let Some(r) = rows.pop() else { break };
                freed += 2 * (json_str_len(&r.name) + 48);
                dropped += 1;
            }
            if dropped == 0 {
                return false;
            }
            out.more_buffers = Some(out.more_buffers.unwrap_or(0) + dropped);
            return true;
        }
        false
    }
}

/// Cuts characters from the end of `text` until what they cost in the
/// result (escaped, and twice: structured and rendered) reaches `excess`.
fn cut_end_escaped(text: &mut String, excess: usize) -> bool {
    let (mut freed, mut end) = (0, text.len());
    for (i, c) in text.char_indices().rev() {
        if freed >= excess {
            break;
        }
        freed += 2 * json_str_len(c.encode_utf8(&mut [0; 4]));
        end = i;
    }
    if end == text.len() {
        return false;
    }
    text.truncate(end);
    true
}

fn row(b: crate::tmux::buffers::BufferInfo) -> BufferRow {
    BufferRow {
        name: b.name,
        size: b.size,
        created: b.created,
    }
}

/// A buffer that does not exist: an error that lists those that do.
fn missing_buffer(
    ctx: &ToolContext,
    tmux: &crate::tmux::Tmux,
    name: &str,
    e: ToolError,
) -> ToolError {
    let no_buffer = e.message.contains("no buffer") || e.message.contains("unknown buffer");
    if !no_buffer {
        return e;
    }
    let names = tmux
        .list_buffers(ctx.tmux_deadline())
        .map(|l| bounded_list(l.into_iter().map(|b| format!("{:?}", b.name))))
        .unwrap_or_else(|e: TmuxError| format!("(cannot list: {e})"));
    ToolError::not_found(format!("no buffer {name:?}; buffers: {names}"))
}
