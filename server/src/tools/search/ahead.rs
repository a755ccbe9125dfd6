//! A sweep started before the listing is back.
//!
//! A search lists the panes, then sweeps them: tmux waits between the two
//! while the listing comes back and the sweep is started. When the last
//! two searches of a server swept the same captures (an agent searching
//! again and again), a search without the pane cache and without `since`
//! starts that sweep at once, with its listing at the top of the sweep's
//! first script ([`crate::tmux::capture::ListedAhead`]): tmux lists and captures in one
//! go, and the listing is still taken before every capture.
//!
//! The listing decides, as it always does, which panes the search sweeps.
//! If they are the captures the sweep started with (same panes, order,
//! ranges and options), the search goes on with that sweep; if not (a
//! pane came or went, other filters), the sweep is stopped and the search
//! sweeps what its listing says, as without this (the listing is not
//! taken again). A sweep that does not give its listing (the chunk
//! failed) leaves the search to list over the control client.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::Receiver;

use super::scope::{self, Listing};
use super::types::SearchPanesArgs;
use crate::tmux::capture::Spare;
use crate::tmux::spans::Span;
use crate::tmux::{CaptureOptions, CaptureReply, CaptureRequest, ListingAhead, Tmux, TmuxError};
use crate::tools::context::{ToolContext, ToolError};

/// A sweep started ahead of its listing.
pub(super) struct Started {
    pub(super) listing: ListingAhead,
    pub(super) sweep: AheadSweep,
}

/// The sweep of a [`Started`]: stopped when dropped unless taken.
pub(super) struct AheadSweep {
    requests: Vec<CaptureRequest>,
    options: CaptureOptions,
    replies: Option<Receiver<CaptureReply>>,
    stop: Arc<AtomicBool>,
}

/// Whether the search is one that may start ahead, and whose captures
/// are noted for the next: one without the pane cache and without
/// `since`.
pub(super) fn applies(ctx: &ToolContext, args: &SearchPanesArgs) -> bool {
    ctx.pane_cache.is_none() && args.since.is_none()
}

/// Starts the sweep the last searches of this server made, when the
/// search is one that may reuse it; `spare` is given back when nothing
/// was started.
pub(super) fn start(
    ctx: &ToolContext,
    tmux: &Tmux,
    args: &SearchPanesArgs,
    spare: Option<Spare>,
    deadline: Instant,
) -> (Option<Started>, Option<Spare>) {
    if !applies(ctx, args) {
        return (None, spare);
    }
    let room = deadline.saturating_duration_since(Instant::now());
    let Some((requests, options)) = tmux.steady_sweep(room) else {
        return (None, spare);
    };
    let stop = Arc::new(AtomicBool::new(false));
    let (listing, replies) = tmux.sweep_after_listing(
        scope::listing_fields(ctx, tmux),
        requests.clone(),
        options,
        deadline,
        stop.clone(),
        spare,
    );
    let sweep = AheadSweep {
        requests,
        options,
        replies: Some(replies),
        stop,
    };
    (Some(Started { listing, sweep }), None)
}

/// The listing: from the top of the sweep started ahead if there is one
/// and it gave it, else over the control client (and then the sweep,
/// which failed, is let go).
pub(super) fn list(
    ctx: &ToolContext,
    tmux: &Tmux,
    listing: Option<ListingAhead>,
    sweep: &mut Option<AheadSweep>,
    deadline: Instant,
) -> Result<Listing, ToolError> {
    if let Some(listing) = listing {
        if let Some(listed) = listed(ctx, listing, deadline)? {
            return Ok(listed);
        }
    }
    *sweep = None;
    scope::list(ctx, tmux, deadline)
}

/// After a search that may be the next one's model: notes how long it
/// took and, if the next like it will start ahead, keeps a sweep client
/// started for it ([`crate::tmux::listing_ahead`]).
pub(super) fn prepare_next(
    ctx: &ToolContext,
    tmux: &Tmux,
    args: &SearchPanesArgs,
    took: Duration,
    timeout: Duration,
) {
    if !applies(ctx, args) {
        return;
    }
    tmux.note_search_took(took);
    if tmux.steady_sweep(timeout).is_some() {
        tmux.keep_sweep_client();
    }
}

/// The listing from the top of the sweep. A sweep that ended without it
/// is an error only when the call was cancelled: the caller lists over
/// the control client (`Ok(None)`).
fn listed(
    ctx: &ToolContext,
    listing: ListingAhead,
    deadline: Instant,
) -> Result<Option<Listing>, ToolError> {
    let _waiting = Span::new("search.ahead_listing");
    match listing.wait(deadline, &ctx.cancel) {
        Ok((inventory, server)) => Ok(Some(Listing { inventory, server })),
        Err(TmuxError::Cancelled) => Err(ToolError::from(TmuxError::Cancelled)),
        Err(_) => Ok(None),
    }
}

impl AheadSweep {
    /// The sweep's replies and stop flag if it asks for exactly
    /// `requests` with `options`; else `None`, the sweep stopped.
    pub(super) fn take_if(
        mut self,
        requests: &[CaptureRequest],
        options: CaptureOptions,
    ) -> Option<(Receiver<CaptureReply>, Arc<AtomicBool>)> {
        if self.requests != requests || self.options != options {
            return None;
        }
        let replies = self.replies.take()?;
        Some((replies, self.stop.clone()))
    }
}

impl Drop for AheadSweep {
    fn drop(&mut self) {
        if self.replies.is_some() {
            self.stop.store(true, Ordering::Relaxed);
        }
    }
}
