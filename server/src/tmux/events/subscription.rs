//! A subscriber's end of the stream, and what it shares with the hub.
//!
//! Must hold: at most one `Printed` per pane waits in a channel (the
//! `queued` set coalesces them), and a full channel never blocks the
//! reader: the subscriber is marked lost and sees [`StreamEvent::Resync`]
//! at its next receive.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use crossbeam_channel::{Receiver, Sender, TrySendError};

use super::super::ids::PaneId;
use super::super::TmuxError;
use super::count::Printed;
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
    /// What each pane printed ([`super::OutputMode::Counted`]).
    pub(super) printed: Mutex<HashMap<PaneId, Printed>>,
    /// Times the stream as a whole went unseen (the client went away or
    /// moved): added to every pane's [`Printed::lost`].
    pub(super) lost_all: std::sync::atomic::AtomicU64,
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

    /// Counts a chunk of `pane`'s output (unescaped).
    pub(super) fn count(&self, pane: PaneId, data: &[u8]) {
        lock(&self.state.printed).entry(pane).or_default().add(data);
    }

    /// `pane`'s output went unseen (tmux paused it).
    pub(super) fn count_lost(&self, pane: PaneId) {
        lock(&self.state.printed).entry(pane).or_default().lose();
    }

    /// Marks events lost; the subscriber sees `Resync` at its next receive.
    fn lost(&self) {
        self.state.resync.store(true, Ordering::Release);
    }

    /// Asks the subscriber to re-read everything (waking it if it waits).
    pub(super) fn resync(&self) {
        // Output may have gone unseen too (a counted pane's rows unknown).
        self.state.lost_all.fetch_add(1, Ordering::AcqRel);
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

    /// Waits until an event waits here or a message on `other`, or
    /// `deadline`; takes neither.
    pub fn ready_or<T>(&self, other: &Receiver<T>, deadline: Instant) {
        if self.state.resync.load(Ordering::Acquire) {
            return;
        }
        let mut select = crossbeam_channel::Select::new();
        select.recv(&self.rx);
        select.recv(other);
        let _ = select.ready_deadline(deadline);
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

    /// What `pane` printed so far, as counted ([`super::OutputMode::Counted`]);
    /// compare two counts with [`Printed::rows_since`].
    pub fn printed(&self, pane: PaneId) -> Printed {
        self.printed_many(&[pane])
            .pop()
            .map_or_else(Printed::default, |(_, p)| p)
    }

    /// [`Subscription::printed`] of several panes, counted at one moment.
    pub fn printed_many(&self, panes: &[PaneId]) -> Vec<(PaneId, Printed)> {
        let lost_all = self.state.lost_all.load(Ordering::Acquire);
        let counts = lock(&self.state.printed);
        panes
            .iter()
            .map(|pane| {
                let mut p = counts.get(pane).copied().unwrap_or_default();
                p.lost += lost_all;
                (*pane, p)
            })
            .collect()
    }

    /// Forgets the counts of panes not in `live` (closed).
    pub fn forget_printed(&self, live: impl Fn(&PaneId) -> bool) {
        lock(&self.state.printed).retain(|p, _| live(p));
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::testbed::private_server::PrivateServer;
    use crate::tmux::events::Interest;
    use crate::tmux::{ServerSpec, Tmux};
    use std::time::Duration;

    /// A loss sets the flag and sends a `Resync`; a subscriber already
    /// waiting in the channel takes the channel's. Taking it clears the
    /// flag, so the subscriber is told once, not again at its next
    /// receive.
    #[test]
    fn a_resync_taken_from_the_channel_is_not_told_twice() {
        let server = PrivateServer::start("events-resync", 80, 24).unwrap();
        let tmux = Tmux::connect(&ServerSpec::named(server.socket_name())).unwrap();
        let pane = PaneId::parse("%0").unwrap();
        let sub = tmux.subscribe(
            Interest::printed([pane]),
            Instant::now() + Duration::from_secs(10),
        );
        assert!(matches!(
            sub.try_recv(),
            None | Some(StreamEvent::Printed(_))
        ));
        sub.state.resync.store(true, Ordering::Release);
        assert!(matches!(sub.took(StreamEvent::Resync), StreamEvent::Resync));
        assert!(sub.try_recv().is_none(), "told of the same loss twice");
    }
}
