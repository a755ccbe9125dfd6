//! snapshot_pane: a pane's visible screen with its cursor and modes, as a
//! person sees it, bounded by bytes (the newest kept).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::super::context::{ServerArgs, ToolContext, ToolError};
use super::super::find_pane;
use super::super::registry::{Annotations, Tool};
use super::bounds::{bounded_arg, cut_front, join_lines, keep_tail_bytes, Lines};
use super::capture_one;
use crate::tmux::{CaptureOptions, CaptureRange, PaneId, TmuxCommand};

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
