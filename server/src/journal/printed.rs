//! What the panes printed, as the journal's writer learns it: which panes
//! printed, how many rows each may have pushed into history
//! ([`Printed`]), which panes are counted at all, and structure events.
//!
//! Two sources, one shape. In the daemon the command ledger's session
//! feeds count every pane's output ([`FeedCounts`]) and the writer's own
//! subscription takes structure events only, so tmux sends each pane's
//! bytes to one control client, not two; the daemon's control client
//! stays `no-output` unless a tool watches a pane. A writer started
//! without feeds (the journal alone) counts from its own subscription's
//! output ([`OutputMode::Counted`]). Must hold: a pane no feed counts is
//! not covered (the pacer polls it), and counts never compare across a
//! feed's start or end, or output tmux dropped.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Instant;

use super::pace::Pacer;
use super::when;
use crate::tmux::events::{Interest, OutputMode, Printed, StreamEvent, Subscription, Watch};
use crate::tmux::feed_counts::FeedCounts;
use crate::tmux::{Inventory, PaneId, Tmux};

/// The writer's view of what printed.
#[derive(Debug)]
pub(super) struct Source {
    events: Subscription,
    /// The feeds' counts; `None`: the subscription's own.
    feeds: Option<Arc<FeedCounts>>,
}

impl Source {
    /// Subscribes to `tmux`'s events: structure alone when `feeds` count,
    /// every pane's output counted too otherwise.
    pub(super) fn start(tmux: &Tmux, feeds: Option<Arc<FeedCounts>>, deadline: Instant) -> Self {
        let interest = match feeds {
            Some(_) => Interest::structure(),
            None => Interest {
                watch: Watch::Every,
                mode: OutputMode::Counted,
                structure: true,
            },
        };
        Source {
            events: tmux.subscribe(interest, deadline),
            feeds,
        }
    }

    /// Waits until something printed or an event came, or `deadline`, then
    /// takes in all that waits: panes that printed (or whose output went
    /// unseen) to `pacer`. Whether the server's shape changed.
    pub(super) fn wait(&self, pacer: &mut Pacer, deadline: Instant) -> bool {
        let mut shape_changed = false;
        let mut next = match &self.feeds {
            Some(feeds) => {
                self.events.ready_or(feeds.wake(), deadline);
                let now = when::now_ms();
                let (printed, feeds_changed) = feeds.take_printed();
                if feeds_changed {
                    // A pane whose feed stopped prints unseen from then on:
                    // every pane is read once and its coverage asked again.
                    pacer.lost(now);
                }
                for pane in printed {
                    pacer.printed(pane, now);
                }
                self.events.try_recv()
            }
            None => self.events.recv_deadline(deadline),
        };
        while let Some(event) = next {
            match event {
                StreamEvent::Printed(p) => pacer.printed(p, when::now_ms()),
                StreamEvent::Resync => pacer.lost(when::now_ms()),
                StreamEvent::Structure(_) => shape_changed = true,
                StreamEvent::Output { .. } => {}
            }
            next = self.events.try_recv();
        }
        shape_changed
    }

    /// What each of `panes` printed so far, counted at one moment.
    pub(super) fn printed_many(&self, panes: &[PaneId]) -> Vec<(PaneId, Printed)> {
        match &self.feeds {
            Some(feeds) => feeds.printed_many(panes),
            None => self.events.printed_many(panes),
        }
    }

    /// The panes of `inventory` whose output is counted; the others are
    /// polled.
    pub(super) fn covered(&self, inventory: &Inventory) -> BTreeSet<PaneId> {
        match &self.feeds {
            Some(feeds) => feeds.covered(inventory),
            None => self.events.coverage().panes,
        }
    }

    /// Forgets the counts of panes not `live` (closed).
    pub(super) fn forget(&self, live: impl Fn(&PaneId) -> bool) {
        match &self.feeds {
            Some(feeds) => feeds.forget(live),
            None => self.events.forget_printed(live),
        }
    }
}
