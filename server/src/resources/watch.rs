//! Which subscribed resources changed, told to the protocol side as
//! [`Change`]s, at most one per [`DEBOUNCE`] per URI.
//!
//! One thread per connection, started by the first subscription and parked
//! (its tmux subscription dropped: output off, the control client free to
//! idle-detach) while nothing is subscribed: subscribing to nothing costs
//! tmux nothing. How a change is seen:
//! - a pane's screen or history: tmux's event stream ("pane printed"
//!   triggers, [`crate::tmux::events`]) for the panes it covers; a pane it
//!   does not cover (the control client shows one session at a time) is
//!   polled every [`POLL`] through the inventory, and changed when its
//!   history size, cursor or dead state moved. An in-place redraw of an
//!   uncovered pane that moves none of those is not seen: the stream covers
//!   what tmux can report, the poll the rest, said plainly.
//! - a session, window or pane (JSON) and `tmux://sessions`: structure
//!   events make the inventory be read again at once, and the poll reads it
//!   anyway (tmux reports layout changes only for the covered session); a
//!   resource whose JSON differs from the last read changed.
//! - the list (`list_changed`): the set of sessions, windows and panes
//!   differs from the last read.
//!
//! A trigger pane stays paused until its update goes out: it is re-armed
//! just before, so whatever it prints after the notification is reported,
//! and a pane printing without end costs one trigger per [`DEBOUNCE`].

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::read::snapshot;
use super::uri::Target;
use crate::tmux::events::{Interest, OutputMode, StreamEvent, Subscription, Watch};
use crate::tmux::{Fields, Inventory, PaneId, Tmux};
use crate::tools::context::{ServerArgs, ToolContext};

/// The shortest time between two updates of one URI (and between two list changes).
const DEBOUNCE: Duration = Duration::from_millis(100);
/// How often the inventory is read while anything is subscribed.
pub const POLL: Duration = Duration::from_millis(500);
/// The longest the thread blocks without looking at what is wanted.
const SLICE: Duration = Duration::from_millis(50);
/// The key list changes are debounced under (no URI is empty).
const LIST_KEY: &str = "";

/// What the protocol side is told.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// The resource at this URI (as the client subscribed it) changed.
    Updated(String),
    /// Sessions, windows or panes appeared or went.
    ListChanged,
}

/// Where changes go (the protocol side turns them into notifications);
/// false when it could not take one now (a client that stopped reading):
/// the change is kept and offered again, never dropped.
pub type Sink = Arc<dyn Fn(Change) -> bool + Send + Sync>;

/// What is watched: URIs (as subscribed) and whether list changes are.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Wanted {
    /// Each subscribed URI and what it names.
    pub uris: BTreeMap<String, Target>,
    /// Tell list changes.
    pub list_changed: bool,
}

impl Wanted {
    fn is_empty(&self) -> bool {
        self.uris.is_empty() && !self.list_changed
    }
}

#[derive(Debug, Default)]
struct Desired {
    wanted: Wanted,
    generation: u64,
    /// The last generation the thread follows in tmux (subscribed, first read taken).
    applied: u64,
    stop: bool,
}

type Shared = Arc<(Mutex<Desired>, Condvar)>;

fn lock(shared: &Shared) -> MutexGuard<'_, Desired> {
    crate::sync::lock(&shared.0)
}

/// One connection's watcher. Dropping it stops the thread and its tmux
/// subscription.
pub struct Watcher {
    shared: Shared,
    ctx: ToolContext,
    sink: Sink,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl std::fmt::Debug for Watcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Watcher").finish_non_exhaustive()
    }
}

impl Watcher {
    /// A watcher reading tmux through `ctx`, telling `sink`. Starts nothing yet.
    pub fn new(ctx: ToolContext, sink: Sink) -> Watcher {
        Watcher {
            shared: Arc::new((Mutex::new(Desired::default()), Condvar::new())),
            ctx,
            sink,
            thread: Mutex::new(None),
        }
    }

    /// Watches exactly `wanted` from now on (the thread starts on first
    /// use), and returns once tmux watches it (or `deadline` passed): what
    /// a pane prints after a subscription is answered is never missed.
    pub fn set(&self, wanted: Wanted, deadline: Instant) {
        let generation = {
            let mut d = lock(&self.shared);
            if d.wanted == wanted {
                return;
            }
            d.wanted = wanted;
            d.generation += 1;
            d.generation
        };
        self.shared.1.notify_all();
        self.start();
        let mut d = lock(&self.shared);
        while d.applied < generation && !d.stop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return;
            }
            d = crate::sync::wait_timeout(&self.shared.1, d, left.min(SLICE));
        }
    }

    fn start(&self) {
        let mut thread = crate::sync::lock(&self.thread);
        if thread.is_none() {
            let (shared, ctx, sink) = (self.shared.clone(), self.ctx.child(), self.sink.clone());
            *thread = std::thread::Builder::new()
                .name("resource-watch".into())
                .spawn(move || Loop::new(ctx, sink).run(&shared))
                .ok();
        }
    }

    /// Stops the thread and drops its tmux subscription; waits for it.
    pub fn stop(&self) {
        lock(&self.shared).stop = true;
        self.shared.1.notify_all();
        let handle = crate::sync::lock(&self.thread).take();
        if let Some(handle) = handle {
            let _ = handle.join();
        }
    }
}

impl Drop for Watcher {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A pane's place in the text poll: history size, cursor, dead.
type Probe = (u64, u32, u32, bool);

/// The watcher thread's state.
struct Loop {
    ctx: ToolContext,
    sink: Sink,
    wanted: Wanted,
    generation: u64,
    tmux: Option<Tmux>,
    sub: Option<Subscription>,
    /// The panes the tmux subscription watches for output.
    sub_panes: BTreeSet<PaneId>,
    /// Of those, the ones the stream reports (the rest are polled).
    covered: BTreeSet<PaneId>,
    /// Last read of each JSON resource (None: it did not exist).
    snapshots: HashMap<String, Option<String>>,
    probes: HashMap<PaneId, Option<Probe>>,
    shape: Option<BTreeSet<String>>,
    dirty: BTreeSet<String>,
    rearm: BTreeSet<PaneId>,
    last_sent: HashMap<String, Instant>,
    next_poll: Instant,
    last_check: Option<Instant>,
}

impl Loop {
    fn new(ctx: ToolContext, sink: Sink) -> Loop {
        Loop {
            ctx,
            sink,
            wanted: Wanted::default(),
            generation: 0,
            tmux: None,
            sub: None,
            sub_panes: BTreeSet::new(),
            covered: BTreeSet::new(),
            snapshots: HashMap::new(),
            probes: HashMap::new(),
            shape: None,
            dirty: BTreeSet::new(),
            rearm: BTreeSet::new(),
            last_sent: HashMap::new(),
            next_poll: Instant::now(),
            last_check: None,
        }
    }

    fn run(mut self, shared: &Shared) {
        while self.take_wanted(shared) {
            let now = Instant::now();
            if now >= self.next_poll {
                self.poll();
            }
            let until = self.next_wake().min(now + SLICE);
            let first = match &self.sub {
                Some(sub) => sub.recv_deadline(until),
                None => {
                    std::thread::sleep(until.saturating_duration_since(now));
                    None
                }
            };
            if let Some(first) = first {
                self.take_events(first);
            }
            self.flush();
        }
        // Dropping the subscription turns output off in tmux.
        self.sub = None;
    }

    /// Picks up what is wanted now; parks (with no tmux subscription) while
    /// nothing is. False when the watcher stops.
    fn take_wanted(&mut self, shared: &Shared) -> bool {
        let mut d = lock(shared);
        loop {
            if d.stop {
                return false;
            }
            if !d.wanted.is_empty() {
                break;
            }
            if self.sub.is_some() || !self.snapshots.is_empty() || self.shape.is_some() {
                drop(d);
                self.forget_all();
                d = lock(shared);
                continue;
            }
            if d.applied < d.generation {
                self.generation = d.generation;
                d.applied = d.generation;
                shared.1.notify_all();
            }
            d = crate::sync::wait(&shared.1, d);
        }
        if d.generation != self.generation {
            let generation = d.generation;
            self.generation = generation;
            self.wanted = d.wanted.clone();
            drop(d);
            self.reconcile();
            // The first read is the baseline later reads are compared to.
            self.poll();
            let mut d = lock(shared);
            d.applied = d.applied.max(generation);
            drop(d);
            shared.1.notify_all();
        }
        true
    }

    fn forget_all(&mut self) {
        self.sub = None;
        self.sub_panes.clear();
        self.covered.clear();
        self.snapshots.clear();
        self.probes.clear();
        self.shape = None;
        self.dirty.clear();
        self.rearm.clear();
        self.last_sent.clear();
        self.wanted = Wanted::default();
    }

    /// Follows a new set of URIs: drops what is no longer wanted, and
    /// subscribes again when the panes whose output matters changed.
    fn reconcile(&mut self) {
        let uris = &self.wanted.uris;
        self.snapshots.retain(|u, _| uris.contains_key(u));
        self.dirty.retain(|u| uris.contains_key(u) || u == LIST_KEY);
        self.last_sent
            .retain(|u, _| uris.contains_key(u) || u == LIST_KEY);
        if !self.wanted.list_changed {
            self.shape = None;
        }
        let panes: BTreeSet<PaneId> = uris.values().filter_map(Target::text_pane).collect();
        self.probes.retain(|p, _| panes.contains(p));
        if self.sub.is_none() || panes != self.sub_panes {
            self.subscribe(panes);
        }
        // New URIs get their first read now (a baseline, not an update).
        self.next_poll = Instant::now();
    }

    fn subscribe(&mut self, panes: BTreeSet<PaneId>) {
        self.sub = None;
        self.sub_panes = panes.clone();
        if self.tmux.is_none() {
            self.tmux = self.ctx.tmux(&ServerArgs::default()).ok();
        }
        let Some(tmux) = &self.tmux else { return };
        let watch = if panes.is_empty() {
            Watch::Nothing
        } else {
            Watch::Panes(panes)
        };
        let interest = Interest {
            watch,
            mode: OutputMode::Trigger,
            structure: true,
        };
        self.sub = Some(tmux.subscribe(interest, self.ctx.tmux_deadline()));
        self.refresh_coverage();
    }

    fn refresh_coverage(&mut self) {
        let cov = self
            .sub
            .as_ref()
            .map(Subscription::coverage)
            .unwrap_or_default();
        self.covered = if cov.live { cov.panes } else { BTreeSet::new() };
    }

    /// When the thread must look again without an event: the next poll or
    /// the first debounced update that falls due.
    fn next_wake(&self) -> Instant {
        let due = self
            .dirty
            .iter()
            .filter_map(|u| self.last_sent.get(u).map(|t| *t + DEBOUNCE))
            .min();
        let soonest = if self.dirty.iter().any(|u| !self.last_sent.contains_key(u)) {
            Some(Instant::now())
        } else {
            due
        };
        soonest.map_or(self.next_poll, |t| t.min(self.next_poll))
    }

    /// `first` and every event already waiting.
    fn take_events(&mut self, first: StreamEvent) {
        let mut next = Some(first);
        while let Some(event) = next {
            match event {
                StreamEvent::Printed(pane) => {
                    self.rearm.insert(pane);
                    self.mark_text(pane);
                }
                StreamEvent::Structure(_) => self.check_soon(),
                StreamEvent::Resync => {
                    self.refresh_coverage();
                    let panes: Vec<PaneId> = self.sub_panes.iter().copied().collect();
                    for pane in panes {
                        self.rearm.insert(pane);
                        self.mark_text(pane);
                    }
                    self.check_soon();
                }
                StreamEvent::Output { .. } => {}
            }
            next = self.sub.as_ref().and_then(Subscription::try_recv);
        }
    }

    /// A structure event: read the inventory again soon, at most once per
    /// [`DEBOUNCE`] (a burst of splits is one read).
    fn check_soon(&mut self) {
        let at = self
            .last_check
            .map_or_else(Instant::now, |t| t + DEBOUNCE)
            .max(Instant::now());
        self.next_poll = self.next_poll.min(at);
    }

    fn mark_text(&mut self, pane: PaneId) {
        for (uri, target) in &self.wanted.uris {
            if target.text_pane() == Some(pane) {
                self.dirty.insert(uri.clone());
            }
        }
    }

    /// Reads the inventory and marks what changed since the last read.
    fn poll(&mut self) {
        self.next_poll = Instant::now() + POLL;
        self.last_check = Some(Instant::now());
        if self.tmux.is_none() {
            self.subscribe(self.sub_panes.clone());
        }
        self.refresh_coverage();
        let Some(tmux) = &self.tmux else { return };
        let Ok((inv, _)) = tmux.inventory(Fields::Full, &[], self.ctx.tmux_deadline()) else {
            return;
        };
        self.compare_shape(&inv);
        self.compare_snapshots(&inv);
        self.compare_probes(&inv);
    }

    fn compare_shape(&mut self, inv: &Inventory) {
        if !self.wanted.list_changed {
            return;
        }
        let shape: BTreeSet<String> = inv
            .sessions
            .iter()
            .map(|s| s.session_id.to_string())
            .chain(inv.windows.iter().map(|w| w.window_id.to_string()))
            .chain(inv.panes.iter().map(|p| p.pane_id.to_string()))
            .collect();
        if self.shape.as_ref().is_some_and(|old| *old != shape) {
            self.dirty.insert(LIST_KEY.to_owned());
        }
        self.shape = Some(shape);
    }

    fn compare_snapshots(&mut self, inv: &Inventory) {
        for (uri, target) in &self.wanted.uris {
            let now = match target {
                Target::Screen(_) | Target::History(..) | Target::Journal(..) => continue,
                Target::Sessions => serde_json::to_string(&inv.sessions).ok(),
                _ => snapshot(inv, *target).ok(),
            };
            match self.snapshots.insert(uri.clone(), now.clone()) {
                Some(before) if before != now => {
                    self.dirty.insert(uri.clone());
                }
                _ => {}
            }
        }
    }

    fn compare_probes(&mut self, inv: &Inventory) {
        let panes: Vec<PaneId> = self.sub_panes.iter().copied().collect();
        for pane in panes {
            let probe = inv
                .panes
                .iter()
                .find(|p| p.pane_id == pane)
                .map(|p| (p.history_size, p.cursor_x, p.cursor_y, p.pane_dead));
            let before = self.probes.insert(pane, probe);
            // Covered panes are told by the stream; one that went is told
            // here either way (the stream says nothing of a pane's end).
            let moved = before.is_some_and(|b| b != probe);
            if moved && (!self.covered.contains(&pane) || probe.is_none()) {
                self.mark_text(pane);
            }
        }
    }

    /// Sends every update whose debounce allows it now; re-arms the
    /// trigger panes among them first.
    fn flush(&mut self) {
        let now = Instant::now();
        let due: Vec<String> = self
            .dirty
            .iter()
            .filter(|u| self.last_sent.get(*u).is_none_or(|t| *t + DEBOUNCE <= now))
            .cloned()
            .collect();
        if due.is_empty() {
            return;
        }
        let panes: Vec<PaneId> = due
            .iter()
            .filter_map(|u| self.wanted.uris.get(u).and_then(Target::text_pane))
            .filter(|p| self.rearm.remove(p))
            .collect();
        if let (Some(sub), false) = (&self.sub, panes.is_empty()) {
            // A failed re-arm comes back as a resync.
            let _ = sub.rearm(&panes, self.ctx.tmux_deadline());
        }
        for uri in due {
            let change = if uri == LIST_KEY {
                Change::ListChanged
            } else {
                Change::Updated(uri.clone())
            };
            if !(self.sink)(change) {
                // Not taken: this one and the rest stay due, for the next
                // round (a dirty set: a client that reads again gets each
                // once, however long it stopped).
                break;
            }
            self.dirty.remove(&uri);
            self.last_sent.insert(uri, now);
        }
    }
}
