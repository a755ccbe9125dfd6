//! The hub of one server's stream: the subscribers, the notification lines
//! the control client's reader hands over, and the background thread that
//! reconciles the client with what subscribers want.
//!
//! Must hold: the reader never waits on tmux (a notification that may
//! change coverage schedules a reconcile on the hub's own thread), and a
//! reconcile asked for while one runs is never dropped.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use super::super::ids::PaneId;
use super::super::notification::{self, Notification, StructureEvent};
use super::super::{Server, TmuxError};
use super::flows::{Changes, HubState};
use super::subscription::{Sub, SubState, Subscription};
use super::{Interest, Watch, CHANNEL_CAPACITY};
use crate::sync::lock;

/// The event stream of one tmux server (one per [`Server`]).
#[derive(Debug, Default)]
pub(crate) struct Hub {
    pub(super) state: Mutex<HubState>,
    /// Subscribers alive; the control client stays attached while > 0.
    pub(super) listeners: AtomicUsize,
    /// Serializes reconciling (listing, moving, turning output on/off).
    pub(super) reconciling: Mutex<()>,
    /// A reconcile was asked for since the last one started.
    pub(super) dirty: AtomicBool,
    /// A background reconcile thread is running.
    pub(super) worker: AtomicBool,
    pub(super) shared: Mutex<Weak<Server>>,
}

impl Hub {
    /// Whether anyone listens (the client must then stay attached).
    pub(crate) fn listening(&self) -> bool {
        self.listeners.load(Ordering::Acquire) > 0
    }

    /// Notification lines read by client `pid` (from its reader thread,
    /// which holds no other lock).
    pub(crate) fn on_lines(&self, pid: u32, lines: &[Vec<u8>]) {
        let mut reconcile = false;
        {
            let mut st = lock(&self.state);
            if st.pid != Some(pid) {
                return;
            }
            let mut changes = Changes::default();
            for line in lines {
                match notification::parse(line) {
                    Notification::Output { pane, escaped } => {
                        st.output(pane, escaped, &mut changes)
                    }
                    Notification::Pause(pane) => st.paused(pane, &mut changes),
                    Notification::Structure(ev) => {
                        reconcile |= changes_coverage(ev);
                        if let StructureEvent::SessionChanged { session } = ev {
                            if let Some(c) = st.control.upgrade() {
                                c.set_session(&session.to_string());
                            }
                        }
                        st.structure(ev);
                    }
                    Notification::Continue(pane) => st.continued(pane),
                    Notification::Other => {}
                }
            }
            drop(st.send(changes.command(None)));
            reconcile &= st.enabled;
        }
        if reconcile {
            self.schedule();
        }
    }

    /// Client `pid` is gone (its session or server died, or it was shut
    /// down: `on_purpose`).
    pub(crate) fn on_closed(&self, pid: u32, on_purpose: bool) {
        {
            let mut st = lock(&self.state);
            if st.pid != Some(pid) {
                return;
            }
            st.forget_client();
        }
        if !on_purpose && self.listening() {
            self.schedule();
        }
    }

    pub(super) fn subscribe(
        self: &Arc<Self>,
        shared: &Arc<Server>,
        interest: Interest,
        deadline: Instant,
    ) -> Subscription {
        *lock(&self.shared) = Arc::downgrade(shared);
        let (tx, rx) = crossbeam_channel::bounded(CHANNEL_CAPACITY);
        let state = Arc::new(SubState::default());
        let every = interest.watch == Watch::Every;
        let mut panes: Vec<PaneId> = match &interest.watch {
            Watch::Panes(set) => set.iter().copied().collect(),
            _ => Vec::new(),
        };
        let id = {
            let mut st = lock(&self.state);
            st.next_id += 1;
            let id = st.next_id;
            st.subs.insert(
                id,
                Sub {
                    tx,
                    interest,
                    state: state.clone(),
                },
            );
            id
        };
        self.listeners.fetch_add(1, Ordering::AcqRel);
        let sub = Subscription {
            id,
            hub: self.clone(),
            rx,
            state,
        };
        if self.reconcile(shared.connection(), deadline).is_ok() {
            // A pane paused for another subscriber's trigger must report to
            // this one from now on.
            if every {
                panes = lock(&self.state).disarmed();
            }
            let _ = sub.rearm(&panes, deadline);
        } else {
            // tmux did not answer in time: the background reconcile
            // publishes coverage (and re-arms) once it does.
            self.schedule();
        }
        sub
    }

    pub(super) fn unsubscribe(&self, id: u64) {
        lock(&self.state).subs.remove(&id);
        self.listeners.fetch_sub(1, Ordering::AcqRel);
        self.schedule();
    }

    /// Reconciles on a background thread (coalescing requests): from the
    /// reader, which must never wait on tmux, and from `Drop`.
    pub(super) fn schedule(&self) {
        self.dirty.store(true, Ordering::Release);
        if self.worker.swap(true, Ordering::AcqRel) {
            return;
        }
        let Some(shared) = lock(&self.shared).upgrade() else {
            self.worker.store(false, Ordering::Release);
            return;
        };
        let spawned = std::thread::Builder::new()
            .name("tmux-events".into())
            .spawn(move || {
                let hub = shared.hub();
                loop {
                    while hub.dirty.swap(false, Ordering::AcqRel) {
                        let deadline = Instant::now() + Duration::from_secs(5);
                        if let Err(TmuxError::Timeout) =
                            hub.reconcile(shared.connection(), deadline)
                        {
                            // tmux stood still: try again while anyone
                            // listens, or the flows (a pane left paused
                            // for a subscriber gone meanwhile) stay wrong.
                            if hub.listening() {
                                hub.dirty.store(true, Ordering::Release);
                                std::thread::sleep(Duration::from_millis(100));
                            }
                        }
                    }
                    hub.worker.store(false, Ordering::Release);
                    // A request that came after the loop's last look but
                    // before the flag was cleared must not be dropped.
                    if !hub.dirty.load(Ordering::Acquire) || hub.worker.swap(true, Ordering::AcqRel)
                    {
                        return;
                    }
                }
            });
        if spawned.is_err() {
            self.worker.store(false, Ordering::Release);
        }
    }
}

/// Whether `event` may move panes into or out of the client's session.
fn changes_coverage(event: StructureEvent) -> bool {
    matches!(
        event,
        StructureEvent::WindowAdd { linked: true, .. }
            | StructureEvent::WindowClose { linked: true, .. }
            | StructureEvent::LayoutChange { .. }
            | StructureEvent::SessionChanged { .. }
    )
}
