//! wait_for_text: block until a pattern appears in a pane, or a timeout.
//!
//! Only text that appears after the call started counts: rows above the
//! terminal cursor at the start are old, and the cursor's own row counts
//! only once its text changed (so a prompt already on screen does not
//! match). The transport's control client runs with output notifications
//! off (they would flood it with every pane's bytes), so there is no output
//! event to wait on: the pane is probed on a short adaptive interval (25 ms
//! at first, backing off to 250 ms) with one `display-message` on the
//! long-lived connection, and captured only when the probe shows it moved
//! (history size or cursor changed), or once a second for in-place redraws.
//! An idle pane costs tmux a format expansion per tick, not a capture.

use std::time::{Duration, Instant};

use panescan_engine::{Matcher, PatternOptions};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::capture::capture_one;
use super::context::{ServerArgs, ToolContext, ToolError};
use super::find_pane;
use crate::tmux::{CaptureOptions, CaptureRange, PaneId, TmuxCommand};
use crate::tools::registry::{Annotations, Tool};

/// Rows scanned per check at most (a pane printing faster than this between
/// two checks has its oldest new rows skipped).
const MAX_SCAN_ROWS: i64 = 10_000;
/// A pane that did not move is still captured this often.
const RECHECK: Duration = Duration::from_secs(1);
/// Matched line text is cut to this.
const MAX_LINE_BYTES: usize = 4096;

#[derive(Debug, Deserialize, JsonSchema)]
pub struct WaitForTextArgs {
    /// Pane id, e.g. %1.
    pub pane_id: PaneId,
    /// Text to wait for (literal unless regex is true); matched within one line.
    pub pattern: String,
    /// Read pattern as a bounded regular expression.
    #[serde(default)]
    pub regex: bool,
    /// Match case exactly (default: case-insensitive).
    #[serde(default)]
    pub match_case: bool,
    /// Give up after this many ms (default 8000, max 120000).
    #[serde(default)]
    pub timeout_ms: Option<u64>,
    #[serde(flatten)]
    pub server: ServerArgs,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct WaitForTextResult {
    pub pane_id: PaneId,
    pub found: bool,
    pub timed_out: bool,
    /// The first new line that matched.
    pub line: Option<String>,
    /// Its tmux line number when found (0 = top of screen).
    pub line_number: Option<i64>,
    pub elapsed_ms: u64,
    /// How many times the pane's text was captured and scanned.
    pub checks: u32,
}

#[derive(Debug)]
pub struct WaitForText;

impl Tool for WaitForText {
    const NAME: &'static str = "wait_for_text";
    const TITLE: &'static str = "Wait for text in a pane";
    const DESCRIPTION: &'static str = "Block until a literal or regex pattern appears in a pane's new output (text already there when the call starts does not count), or until timeout_ms (default 8 s, max 120 s). Use after sending a command to wait for its prompt or result; cancellable. Not for searching existing text: use search_panes or capture_pane.";
    const ANNOTATIONS: Annotations = Annotations::READ_VOLATILE;
    const BATCHABLE: bool = false;
    type Args = WaitForTextArgs;
    type Output = WaitForTextResult;

    fn run(ctx: &ToolContext, args: Self::Args) -> Result<Self::Output, ToolError> {
        let limits = ctx.ceilings();
        let timeout = match args.timeout_ms {
            None => limits.wait_default,
            Some(ms) => Duration::from_millis(ms).min(limits.wait_max),
        };
        if args.pattern.is_empty() {
            return Err(ToolError::new("pattern must not be empty"));
        }
        let matcher = Matcher::new(
            &[&args.pattern],
            PatternOptions {
                regex: args.regex,
                match_case: args.match_case,
            },
        )
        .map_err(|e| ToolError::new(e.to_string()))?;
        let started = Instant::now();
        let deadline = started + timeout;
        let tmux = ctx.tmux(&args.server)?;
        let inv = ctx.inventory(&tmux)?;
        let pane = find_pane(&inv, args.pane_id)?;
        let height = i64::from(pane.pane_height);
        let mut hs = pane.history_size as i64;
        // Absolute row (history rows count from 0) of the cursor at start.
        let mut start_abs = hs + i64::from(pane.cursor_y);
        let opts = CaptureOptions::default();
        let first = capture_one(
            ctx,
            &tmux,
            args.pane_id,
            CaptureRange::Lines {
                start: i64::from(pane.cursor_y),
                end: i64::from(pane.cursor_y),
            },
            opts,
        )?;
        let start_row = String::from_utf8_lossy(&first.bytes).trim_end().to_owned();

        let mut checks = 0u32;
        let mut interval = Duration::from_millis(25);
        let mut last_progress = started;
        // A cheap probe on the long-lived connection tells whether the pane
        // moved (new output moves the cursor or grows the history); only
        // then is it captured, which costs a tmux process. A capture every
        // second regardless catches redraws that keep the cursor still.
        let probe_cmd = TmuxCommand::new("display-message")
            .flag("-p")
            .target(args.pane_id)
            .format_arg("#{pane_id} #{history_size} #{cursor_x} #{cursor_y} #{pane_dead}");
        let mut last_probe = String::new();
        let mut last_capture: Option<Instant> = None;
        loop {
            ctx.check_cancelled()?;
            let probe = tmux
                .run(&probe_cmd, ctx.tmux_deadline())
                .map_err(|e| ToolError::new(format!("{} while waiting: {e}", args.pane_id)))?;
            if probe.trim().is_empty() {
                // tmux answers an empty line for a target that is gone.
                return Err(ToolError::new(format!(
                    "pane {} closed while waiting for {:?}",
                    args.pane_id, args.pattern
                )));
            }
            let moved = probe != last_probe;
            let stale = last_capture.is_none_or(|t| t.elapsed() >= RECHECK);
            last_probe = probe;
            let mut cap = None;
            if moved || stale {
                last_capture = Some(Instant::now());
            }
            // Capture from the start row to the bottom; re-aim once if the
            // history grew (or was trimmed) since we last knew its size.
            for _ in 0..3 {
                if !(moved || stale) {
                    break;
                }
                let from = (start_abs - hs).max(-hs).max(height - 1 - MAX_SCAN_ROWS);
                let c = capture_one(
                    ctx,
                    &tmux,
                    args.pane_id,
                    CaptureRange::Lines {
                        start: from.min(height - 1),
                        end: height - 1,
                    },
                    opts,
                )
                .map_err(|e| ToolError::new(format!("{} while waiting: {e}", args.pane_id)))?;
                let now_hs = c.history_size as i64;
                if now_hs < hs {
                    // tmux dropped the oldest history rows: every absolute
                    // row moved up by as many.
                    start_abs -= hs - now_hs;
                }
                let stable = now_hs == hs;
                hs = now_hs;
                cap = Some(c);
                if stable {
                    break;
                }
            }
            if let Some(c) = cap {
                checks += 1;
                let text = String::from_utf8_lossy(&c.bytes);
                let abs0 = c.first_line + c.history_size as i64;
                for (i, line) in text.lines().enumerate() {
                    let abs = abs0 + i as i64;
                    if abs < start_abs {
                        continue;
                    }
                    if abs == start_abs && line.trim_end() == start_row {
                        continue;
                    }
                    if matcher.find_in_line(line.as_bytes()).is_some() {
                        let mut line = line.trim_end().to_owned();
                        super::cut_to_bytes(&mut line, MAX_LINE_BYTES);
                        return Ok(WaitForTextResult {
                            pane_id: args.pane_id,
                            found: true,
                            timed_out: false,
                            line: Some(line),
                            line_number: Some(c.first_line + i as i64),
                            elapsed_ms: started.elapsed().as_millis() as u64,
                            checks,
                        });
                    }
                }
            }
            let now = Instant::now();
            if now >= deadline {
                return Ok(WaitForTextResult {
                    pane_id: args.pane_id,
                    found: false,
                    timed_out: true,
                    line: None,
                    line_number: None,
                    elapsed_ms: started.elapsed().as_millis() as u64,
                    checks,
                });
            }
            if now.duration_since(last_progress) >= Duration::from_millis(500) {
                last_progress = now;
                ctx.progress.report(
                    started.elapsed().as_millis() as f64,
                    Some(timeout.as_millis() as f64),
                    Some("waiting for text"),
                );
            }
            // Sleep in short slices so a cancel is seen promptly.
            let wake = (now + interval).min(deadline);
            while Instant::now() < wake {
                if ctx.is_cancelled() {
                    return Err(ToolError::new("cancelled"));
                }
                std::thread::sleep(
                    Duration::from_millis(5).min(wake.saturating_duration_since(Instant::now())),
                );
            }
            // Back off while the pane is quiet; look again soon once it moves.
            interval = if moved {
                Duration::from_millis(25)
            } else {
                (interval * 3 / 2).min(Duration::from_millis(250))
            };
        }
    }

    fn text(out: &Self::Output) -> String {
        if out.found {
            format!(
                "found in {} at line {} after {} ms: {}",
                out.pane_id,
                out.line_number.unwrap_or(0),
                out.elapsed_ms,
                out.line.as_deref().unwrap_or("")
            )
        } else {
            format!(
                "not found in {} within {} ms ({} checks)",
                out.pane_id, out.elapsed_ms, out.checks
            )
        }
    }
}
