//! A subscriber's end of the stream, and what it shares with the hub.
//!
//! Must hold: at most one `Printed` per pane waits in a channel (the
//! `queued` set coalesces them), and a full channel never blocks the
//! reader: the subscriber is marked lost and sees [`StreamEvent::Resync`]
//! at its next receive.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use crossbeam_channel::{Receiver, Sender, TrySendError};

use super::super::ids::PaneId;
use super::super::TmuxError;
use super::{Coverage, Hub, Interest, StreamEvent};
use crate::sync::lock;

/// What a subscriber shares with the hub.
#[derive(Debug, Default)]
pub(super) struct SubState {
    /// Panes with a `Printed` waiting in the channel (coalescing).
    pub(super) queued: Mutex<HashSet<PaneId>>,
    /// Events were lost since the subscriber last looked.
    pub(super) resync: AtomicBool,
    /// `None` until first worked out.
    pub(super) coverage: Mutex<Option<Coverage>>,
}

#[derive(Debug)]
pub(super) struct Sub {
    pub(super) tx: Sender<StreamEvent>,
    pub(super) interest: Interest,
    pub(super) state: Arc<SubState>,
}

impl Sub {
    pub(super) fn printed(&self, pane: PaneId) {
        let mut queued = lock(&self.state.queued);
        if queued.contains(&pane) {
            return;
        }
        match self.tx.try_send(StreamEvent::Printed(pane)) {
            Ok(()) => {
                queued.insert(pane);
            }
            Err(TrySendError::Full(_)) => self.lost(),
            Err(TrySendError::Disconnected(_)) => {}
        }
    }

    pub(super) fn send(&self, event: StreamEvent) {
        if let Err(TrySendError::Full(_)) = self.tx.try_send(event) {
            self.lost();
        }
    }

    /// Marks events lost; the subscriber sees `Resync` at its next receive.
    fn lost(&self) {
        self.state.resync.store(true, Ordering::Release);
    }

    /// Asks the subscriber to re-read everything (waking it if it waits).
    pub(super) fn resync(&self) {
        self.lost();
        let _ = self.tx.try_send(StreamEvent::Resync);
    }
}

/// One subscriber's end of the stream; dropping it unsubscribes (and, for
/// the last one, turns output off and lets the client idle-detach).
#[derive(Debug)]
pub struct Subscription {
    pub(super) id: u64,
    pub(super) hub: Arc<Hub>,
    pub(super) rx: Receiver<StreamEvent>,
    pub(super) state: Arc<SubState>,
}

impl Subscription {
    /// The next event, waiting until `deadline`; `None` when none came.
    pub fn recv_deadline(&self, deadline: Instant) -> Option<StreamEvent> {
        if self.state.resync.swap(false, Ordering::AcqRel) {
            return Some(StreamEvent::Resync);
        }
        let event = self.rx.recv_deadline(deadline).ok()?;
        Some(self.took(event))
    }

    /// The next event if one is waiting.
    pub fn try_recv(&self) -> Option<StreamEvent> {
        if self.state.resync.swap(false, Ordering::AcqRel) {
            return Some(StreamEvent::Resync);
        }
        let event = self.rx.try_recv().ok()?;
        Some(self.took(event))
    }

    fn took(&self, event: StreamEvent) -> StreamEvent {
        match &event {
            StreamEvent::Printed(pane) => {
                lock(&self.state.queued).remove(pane);
            }
            StreamEvent::Resync => self.state.resync.store(false, Ordering::Release),
            _ => {}
        }
        event
    }

    /// Resumes triggers for `panes` after their `Printed` was taken: call it
    /// before reading them, so whatever they print after that read is
    /// reported. Waits for tmux (one round trip).
    pub fn rearm(&self, panes: &[PaneId], deadline: Instant) -> Result<(), TmuxError> {
        self.hub.rearm(panes, deadline)
    }

    /// Which watched panes are reported; the others must be polled.
    pub fn coverage(&self) -> Coverage {
        lock(&self.state.coverage).clone().unwrap_or_default()
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        self.hub.unsubscribe(self.id);
    }
}
