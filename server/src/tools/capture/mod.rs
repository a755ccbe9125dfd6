//! Reading pane text: capture_pane (a range, `pane`), capture_since (only
//! what is new since a cursor: the tool in `since`, the cursor's codec in
//! `cursor`, the rows it reads in `rows`), snapshot_pane (the screen plus
//! cursor and mode, `snapshot`); `bounds` holds the cuts they share.
//!
//! Every range is bounded before tmux is asked (lines), and every result is
//! bounded again after (bytes, keeping the tail: the newest output is what
//! an agent wants). Results say what was cut.

use std::time::{Duration, Instant};

use super::context::{ToolContext, ToolError};
use crate::tmux::{CaptureOptions, CaptureRange, CaptureRequest, CapturedText, PaneId, Tmux};

mod bounds;
mod cursor;
mod pane;
mod rows;
mod since;
mod snapshot;

pub(crate) use bounds::{keep_tail_bytes, output_bounds};
pub use pane::{CapturePane, CapturePaneArgs};
pub use since::CaptureSince;
pub use snapshot::SnapshotPane;

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
