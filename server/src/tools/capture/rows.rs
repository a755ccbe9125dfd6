//! The rows capture_since reads: one pane's rows on the absolute row scale
//! (0 = the oldest history line), where a cursor's new lines start (its
//! anchor where [`crate::tmux::rows`] says it vouches for its place, else
//! looked for in the whole history), and the new lines bounded.
//!
//! Must hold: the row the terminal cursor is on is never returned as a
//! completed line (it is `pending_line`), and the next cursor's anchor is
//! hashed over the same rows the next call checks.

use super::super::context::{ToolContext, ToolError};
use super::bounds::{keep_tail_bytes, Lines};
use super::capture_one_cached;
use super::cursor::Cursor;
use crate::tmux::rows::{rows_of, trim_step, Anchor, Place, Row, MAX_ANCHOR_LINES};
use crate::tmux::{CaptureOptions, CaptureRange, Inventory, Pane, Tmux};

/// One pane's rows, read through the pane cache, placed on the absolute row
/// scale (0 = the oldest history line).
pub(super) struct PaneRows<'a> {
    pub(super) ctx: &'a ToolContext,
    pub(super) tmux: &'a Tmux,
    pub(super) inv: &'a Inventory,
    pub(super) pane: &'a Pane,
}

/// Captured rows and the absolute row of the first.
pub(super) struct Rows {
    got: Lines,
    abs0: i64,
    /// The same lines as rows of `bytes`, for anchors.
    table: Vec<Row>,
    bytes: bytes::Bytes,
}

/// Where a call's new lines start, and what was lost before them.
pub(super) struct Start {
    pub(super) from_abs: i64,
    pub(super) missed: bool,
    /// 0 when nothing was missed; none when unknown (or no cursor).
    pub(super) missed_lines: Option<u64>,
}

impl PaneRows<'_> {
    /// The absolute row of the terminal cursor when the pane was listed.
    pub(super) fn now(&self) -> u64 {
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
            table: rows_of(&cap),
            bytes: cap.bytes,
        })
    }

    /// Captures from the earliest row the call may need (the anchor before
    /// the old boundary, or the tail when starting fresh) to the cursor row,
    /// and finds where the new lines start.
    pub(super) fn since(
        &self,
        previous: Option<&Cursor>,
        respawned: bool,
        max_lines: usize,
    ) -> Result<(Rows, Start), ToolError> {
        let now = self.now();
        let hs = self.pane.history_size;
        let most = MAX_ANCHOR_LINES as u64;
        let want_from = match previous {
            Some(c) => c
                .boundary
                .saturating_sub(c.anchor_len)
                .min(now.saturating_sub(most)),
            None if respawned => 0,
            None => now.saturating_sub(max_lines as u64 + most),
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
        let trim = trim_step(self.pane.history_limit, hs);
        if let Place::At(_) = rows.place(c, trim) {
            return Ok((rows, kept(b)));
        }
        // History was trimmed or cleared: look for the anchor in the whole
        // history.
        let rows = self.capture(-(hs as i64))?;
        let start = match rows.place(c, trim) {
            Place::At(j) | Place::Moved(j) => kept(rows.abs_of(j)),
            // The rows after the old boundary were dropped from history (or
            // cleared) before this call; tmux keeps no count of dropped
            // rows, so how many is unknown.
            Place::Lost => Start {
                from_abs: rows.abs0,
                missed: true,
                missed_lines: None,
            },
        };
        Ok((rows, start))
    }
}

/// The new lines of a call, bounded, and what bounding dropped.
pub(super) struct NewLines {
    pub(super) kept: Vec<String>,
    /// tmux line number of the first kept line.
    pub(super) first_line: Option<i64>,
    pub(super) dropped: u64,
    pub(super) omitted: usize,
    /// The line the terminal cursor is on.
    pub(super) pending_line: String,
    /// Absolute row after the last new line: the next boundary.
    pub(super) end_abs: i64,
}

impl Rows {
    /// Where the cursor's anchor is in these rows.
    fn place(&self, c: &Cursor, trim: Option<u64>) -> Place {
        c.anchor()
            .place(&self.table, &self.bytes, c.boundary as i64, trim)
    }

    /// The absolute row of line `j` (one past the last line for
    /// `lines.len()`).
    fn abs_of(&self, j: usize) -> i64 {
        self.abs0 + j as i64
    }

    /// The completed rows from `from_abs` up to the terminal cursor's row
    /// (`now`), the newest kept within `max_lines` and `max_bytes`.
    pub(super) fn new_lines(
        &self,
        from_abs: i64,
        now: u64,
        max_lines: usize,
        max_bytes: usize,
    ) -> NewLines {
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
    pub(super) fn anchor_at(&self, end_abs: i64) -> (u64, u64) {
        let i1 = (end_abs - self.abs0).max(0) as usize;
        let a1 = i1.min(self.table.len());
        let anchor = Anchor::above(&self.table, &self.bytes, a1, end_abs);
        (anchor.rows, anchor.hash)
    }
}

// ---------------------------------------------------------------- snapshot
