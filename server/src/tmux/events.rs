//! The event stream: pane output and changes to the server's shape, pushed
//! to whoever inside panescan subscribed.
//!
//! A subscriber ([`super::Tmux::subscribe`]) says what it wants in an
//! [`Interest`] — output of some panes ([`Watch::Panes`]) or of every pane,
//! including panes created later ([`Watch::Every`]), as a coalesced "pane
//! printed" trigger ([`OutputMode::Trigger`]) or as the bytes themselves
//! ([`OutputMode::Bytes`]); and/or structure events ([`StructureEvent`]) —
//! and receives [`StreamEvent`]s on a bounded channel. A subscriber that
//! does not keep up loses events but is told so ([`StreamEvent::Resync`]):
//! it must then re-read what it watches. Output is a trigger, never the
//! truth: the text an answer returns comes from a capture.
//!
//! # One client, not two
//!
//! The events come from panescan's one control client per server
//! ([`super::connection`]), not from a second one. tmux 3.3a runs the
//! `client-attached` hook on every attach of a client that had no session
//! (cmd-attach-session.c), so a second client would fire the user's hooks
//! a second time; measured on a private server with both hooks set: an
//! attach fires `client-session-changed` and `client-attached`, a later
//! `attach-session` of the same client fires only `client-session-changed`.
//! The client does not idle-detach while anyone listens; once nobody does,
//! it pauses every pane it had on and detaches after its usual idle period.
//!
//! # What tmux sends, and how it is kept small (tmux 3.3a, control.c)
//!
//! * With `no-output` (how the client attaches) tmux sends no `%output` at
//!   all. Clearing it (`refresh-client -f '!no-output'`) resets every
//!   pane's state, and a pane tmux has no state for sends its output. So
//!   the command that turns output on also turns off every pane of the
//!   session nobody watches (`-f` is applied before `-A` in one command,
//!   nothing slips between), and a pane created later that prints before
//!   anyone watches it is turned off on its first `%output`. Unwatched
//!   panes send nothing but that one burst. "Off" is a pause, and output
//!   stays on once turned on ([`PANE_OFF`]: `%P:off` and `no-output` with
//!   output queued crash tmux).
//! * A control client gets output only for panes in windows of the session
//!   it is attached to (`control_write_output`). When no watched pane is in
//!   that session, the client moves (`attach-session -E -t $S`: no
//!   `client-attached`, no environment update) to the session holding the
//!   most watched panes. Panes outside it are not [covered](Coverage): their
//!   subscribers poll them.
//! * Flow control: a pane whose output a client does not take fast enough
//!   makes tmux stop reading that pane while every attached client is a
//!   control client behind on it (`server_client_check_pane_buffer`): the
//!   program in the pane stalls. With `pause-after=1` tmux instead pauses a
//!   pane whose output waited over a second (`%pause`) and drops it. On top
//!   of that, a trigger pane is paused by panescan itself (`-A %P:pause`)
//!   on its first `%output`, and continued (`-A %P:continue`, which skips
//!   what it printed meanwhile) when a subscriber has taken the trigger and
//!   [re-armed](Subscription::rearm) it, just before it captures. A pane
//!   printing without end (`yes`) thus costs one burst per capture, not a
//!   stream: it can neither flood panescan nor be stalled by it.
//! * A pane stays paused only while a subscriber holds its trigger (the
//!   `Printed` waiting in its channel) and so will re-arm it. A trigger no
//!   channel took (full) leaves the pane on; a subscriber of every pane
//!   continues the paused panes when it subscribes; and every reconcile
//!   (after a subscriber leaves, retried while tmux does not answer)
//!   continues the watched panes whose trigger nobody holds. Otherwise a
//!   pane paused for a subscriber that left before re-arming it stayed
//!   paused for every later one: deaf.
//! * Structure notifications reach every control client whatever its
//!   flags; `%layout-change` only for windows of its own session.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender, TrySendError};

use super::connection::{Control, ReplyRx, Route, Shared};
use super::ids::{PaneId, SessionId};
use super::notification::{self, Notification};
use super::Server;
use super::{TmuxCommand, TmuxError};
use crate::sync::lock;

pub use super::notification::StructureEvent;

/// Events a subscriber may have waiting; past that it loses events and is
/// sent [`StreamEvent::Resync`].
pub const CHANNEL_CAPACITY: usize = 256;

/// Client flags while someone watches output: output on, and tmux pauses a
/// pane (instead of stalling it) once its output waited a second.
const OUTPUT_ON: &str = "!no-output,pause-after=1";
/// How a pane nobody watches is kept quiet: paused, never `off`. tmux
/// (3.3a to 3.6b, control.c) keeps the output blocks already queued for a
/// pane it turns `off` while their offset no longer holds the pane's
/// buffer; once the buffer is drained past them the next flush reads
/// before it and the server segfaults (tmux PR #5054). A pause discards
/// those blocks first, and a later `continue` starts from what the pane
/// prints then. For the same reason the client never goes back to
/// `no-output` (that frees the panes' state under their queued blocks):
/// once output is on, nobody watching means every pane paused.
const PANE_OFF: &str = "pause";

/// Which panes' output a subscriber wants.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Watch {
    /// None: structure events only.
    #[default]
    Nothing,
    /// These panes.
    Panes(BTreeSet<PaneId>),
    /// Every pane of the covered session, panes created later included.
    Every,
}

impl Watch {
    fn contains(&self, pane: PaneId) -> bool {
        match self {
            Watch::Nothing => false,
            Watch::Panes(set) => set.contains(&pane),
            Watch::Every => true,
        }
    }
}

/// How a subscriber wants output.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum OutputMode {
    /// [`StreamEvent::Printed`], at most one waiting per pane; the pane is
    /// paused until the subscriber [re-arms](Subscription::rearm) it.
    #[default]
    Trigger,
    /// [`StreamEvent::Output`] with the bytes, as they come (for markers
    /// that a capture does not show, such as OSC 133). The pane is never
    /// paused by panescan; if tmux pauses it (the client fell a second
    /// behind) the subscriber gets [`StreamEvent::Resync`].
    Bytes,
}

/// What a subscriber wants.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Interest {
    /// Whose output.
    pub watch: Watch,
    /// In which form.
    pub mode: OutputMode,
    /// Also [`StreamEvent::Structure`].
    pub structure: bool,
}

impl Interest {
    /// "Pane printed" triggers for `panes`.
    pub fn printed(panes: impl IntoIterator<Item = PaneId>) -> Interest {
        Interest {
            watch: Watch::Panes(panes.into_iter().collect()),
            mode: OutputMode::Trigger,
            structure: false,
        }
    }

    /// Structure events only.
    pub fn structure() -> Interest {
        Interest {
            structure: true,
            ..Interest::default()
        }
    }

    fn wants_output(&self) -> bool {
        self.watch != Watch::Nothing
    }
}

/// One event for a subscriber.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StreamEvent {
    /// The pane printed (trigger mode). Re-arm it before reading it.
    Printed(PaneId),
    /// Bytes the pane printed (bytes mode), unescaped.
    Output {
        /// The pane.
        pane: PaneId,
        /// What it printed: raw terminal output, escape sequences included.
        data: Vec<u8>,
    },
    /// The server's shape changed.
    Structure(StructureEvent),
    /// Events may have been lost (the channel was full, the client
    /// reconnected or moved, tmux dropped output): re-read everything
    /// watched, and check [`Subscription::coverage`] again.
    Resync,
}

/// Which watched panes the stream reports output for.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Coverage {
    /// The stream is up (false: no control client, e.g. a server without
    /// sessions; poll everything).
    pub live: bool,
    /// The session the client is attached to.
    pub session: Option<SessionId>,
    /// The watched panes (with [`Watch::Every`]: the session's panes) whose
    /// output is reported; others must be polled.
    pub panes: BTreeSet<PaneId>,
}

/// Where a pane's output stands on the client.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Flow {
    /// Output on: the next `%output` is a trigger.
    Armed,
    /// Paused after a trigger, until re-armed.
    Disarmed,
    /// Nobody watches it: off.
    Off,
}

/// What a subscriber shares with the hub.
#[derive(Debug, Default)]
struct SubState {
    /// Panes with a `Printed` waiting in the channel (coalescing).
    queued: Mutex<HashSet<PaneId>>,
    /// Events were lost since the subscriber last looked.
    resync: AtomicBool,
    /// `None` until first worked out.
    coverage: Mutex<Option<Coverage>>,
}

#[derive(Debug)]
struct Sub {
    tx: Sender<StreamEvent>,
    interest: Interest,
    state: Arc<SubState>,
}

impl Sub {
    fn printed(&self, pane: PaneId) {
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

    fn send(&self, event: StreamEvent) {
        if let Err(TrySendError::Full(_)) = self.tx.try_send(event) {
            self.lost();
        }
    }

    /// Marks events lost; the subscriber sees `Resync` at its next receive.
    fn lost(&self) {
        self.state.resync.store(true, Ordering::Release);
    }

    /// Asks the subscriber to re-read everything (waking it if it waits).
    fn resync(&self) {
        self.lost();
        let _ = self.tx.try_send(StreamEvent::Resync);
    }
}

/// The hub's state: subscribers and the flow of each pane on the client.
#[derive(Debug, Default)]
struct HubState {
    subs: BTreeMap<u64, Sub>,
    next_id: u64,
    /// The control client the flows describe.
    control: Weak<Control>,
    pid: Option<u32>,
    /// Output is on for that client.
    enabled: bool,
    flows: HashMap<PaneId, Flow>,
}

/// The panes a reconcile found.
#[derive(Debug)]
struct Panes<'a> {
    /// In the session the client shows.
    in_session: &'a BTreeSet<PaneId>,
    /// Anywhere on the server.
    on_server: &'a HashSet<PaneId>,
    /// The client just moved to that session.
    moved: bool,
}

/// Every subscriber's wishes, merged.
#[derive(Debug, Default)]
struct Wants {
    panes: BTreeSet<PaneId>,
    every: bool,
    output: bool,
    structure: bool,
}

impl Wants {
    fn pane(&self, pane: PaneId) -> bool {
        self.every || self.panes.contains(&pane)
    }
}

/// `-A` changes queued for one `refresh-client`.
#[derive(Debug, Default)]
struct Changes(Vec<String>);

impl Changes {
    fn push(&mut self, pane: PaneId, what: &str) {
        self.0.push(format!("{pane}:{what}"));
    }

    /// The command, with `flags` first when given (tmux applies `-f`
    /// before `-A`).
    fn command(&self, flags: Option<&str>) -> Option<TmuxCommand> {
        if self.0.is_empty() && flags.is_none() {
            return None;
        }
        let mut cmd = TmuxCommand::new("refresh-client");
        if let Some(f) = flags {
            cmd = cmd.option("-f", f);
        }
        for change in &self.0 {
            cmd = cmd.option("-A", change);
        }
        Some(cmd)
    }
}

/// The event stream of one tmux server (one per [`Shared`]).
#[derive(Debug, Default)]
pub(crate) struct Hub {
    state: Mutex<HubState>,
    /// Subscribers alive; the control client stays attached while > 0.
    listeners: AtomicUsize,
    /// Serializes reconciling (listing, moving, turning output on/off).
    reconciling: Mutex<()>,
    /// A reconcile was asked for since the last one started.
    dirty: AtomicBool,
    /// A background reconcile thread is running.
    worker: AtomicBool,
    shared: Mutex<Weak<Server>>,
}

impl HubState {
    fn wants(&self) -> Wants {
        let mut w = Wants::default();
        for sub in self.subs.values() {
            w.structure |= sub.interest.structure;
            w.output |= sub.interest.wants_output();
            match &sub.interest.watch {
                Watch::Nothing => {}
                Watch::Panes(set) => w.panes.extend(set.iter().copied()),
                Watch::Every => w.every = true,
            }
        }
        w
    }

    /// `%output` of `pane`: deliver, and pause or turn the pane off.
    fn output(&mut self, pane: PaneId, escaped: &[u8], changes: &mut Changes) {
        let flow = self.flows.get(&pane).copied().unwrap_or(Flow::Armed);
        if flow == Flow::Off {
            return; // sent before tmux turned it off
        }
        let (mut triggers, mut bytes) = (false, false);
        let mut data: Option<Vec<u8>> = None;
        for sub in self.subs.values() {
            if !sub.interest.watch.contains(pane) {
                continue;
            }
            match sub.interest.mode {
                OutputMode::Trigger => {
                    triggers = true;
                    if flow == Flow::Armed {
                        sub.printed(pane);
                    }
                }
                OutputMode::Bytes => {
                    bytes = true;
                    let data = data.get_or_insert_with(|| {
                        let mut out = Vec::with_capacity(escaped.len());
                        notification::unescape(escaped, &mut out);
                        out
                    });
                    sub.send(StreamEvent::Output {
                        pane,
                        data: data.clone(),
                    });
                }
            }
        }
        if !triggers && !bytes {
            self.flows.insert(pane, Flow::Off);
            changes.push(pane, PANE_OFF);
        } else if flow == Flow::Armed && !bytes && self.held(pane) {
            // Paused only while a subscriber holds the trigger and will
            // re-arm it; a trigger no channel took (full) leaves the pane
            // on, so its next output tries again.
            self.flows.insert(pane, Flow::Disarmed);
            changes.push(pane, "pause");
        }
    }

    /// `%pause`: tmux paused `pane`, its output dropped (the client fell a
    /// second behind), or echoed panescan's own pause. The pane stays
    /// paused only while a subscriber holds a trigger for it: one nobody
    /// holds is continued at once, one nobody watches counts as off.
    fn paused(&mut self, pane: PaneId, changes: &mut Changes) {
        if self.flows.get(&pane) == Some(&Flow::Off) {
            return; // panescan paused it as off (or tmux did too)
        }
        let (mut triggers, mut bytes) = (false, false);
        for sub in self.subs.values() {
            if !sub.interest.watch.contains(pane) {
                continue;
            }
            match sub.interest.mode {
                OutputMode::Trigger => {
                    triggers = true;
                    sub.printed(pane);
                }
                OutputMode::Bytes => {
                    bytes = true;
                    sub.resync();
                }
            }
        }
        if !triggers && !bytes {
            self.flows.insert(pane, Flow::Off);
        } else if bytes || !self.held(pane) {
            self.flows.insert(pane, Flow::Armed);
            changes.push(pane, "continue");
        } else {
            self.flows.insert(pane, Flow::Disarmed);
        }
    }

    /// Panes paused after a trigger, until re-armed.
    fn disarmed(&self) -> Vec<PaneId> {
        let flows = self.flows.iter();
        flows
            .filter(|(_, f)| **f == Flow::Disarmed)
            .map(|(p, _)| *p)
            .collect()
    }

    /// Whether a trigger subscriber watching `pane` has its `Printed`
    /// waiting: that subscriber re-arms the pane once it takes it.
    fn held(&self, pane: PaneId) -> bool {
        self.subs.values().any(|sub| {
            sub.interest.mode == OutputMode::Trigger
                && sub.interest.watch.contains(pane)
                && lock(&sub.state.queued).contains(&pane)
        })
    }

    /// Panes paused for a trigger that no subscriber holds any more (its
    /// subscriber went away before re-arming, or took it and will not),
    /// among `panes`: nobody would ever re-arm them, so they would stay
    /// deaf. Continued in `changes`.
    fn continue_orphans(&mut self, panes: &BTreeSet<PaneId>, changes: &mut Changes) {
        for &pane in panes {
            if self.flows.get(&pane) == Some(&Flow::Disarmed) && !self.held(pane) {
                self.flows.insert(pane, Flow::Armed);
                changes.push(pane, "continue");
            }
        }
    }

    fn structure(&self, event: StructureEvent) {
        for sub in self.subs.values().filter(|s| s.interest.structure) {
            sub.send(StreamEvent::Structure(event));
        }
    }

    /// Forgets the client: every subscriber re-reads and polls until a new
    /// one is set up.
    fn forget_client(&mut self) {
        self.control = Weak::new();
        self.pid = None;
        self.enabled = false;
        self.flows.clear();
        for sub in self.subs.values() {
            // A subscriber that never had coverage polls already.
            let mut slot = lock(&sub.state.coverage);
            if let Some(c) = slot.as_mut() {
                *c = Coverage::default();
                drop(slot);
                sub.resync();
            }
        }
    }

    /// Sends `cmd` to the client without waiting (the order of commands is
    /// the order of calls, which all hold the hub's lock).
    fn send(&self, cmd: Option<TmuxCommand>) -> Option<ReplyRx> {
        let cmd = cmd?;
        let control = self.control.upgrade()?;
        control.send(&cmd)
    }
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
                    Notification::Continue(_) | Notification::Other => {}
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

    fn subscribe(
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

    fn unsubscribe(&self, id: u64) {
        lock(&self.state).subs.remove(&id);
        self.listeners.fetch_sub(1, Ordering::AcqRel);
        self.schedule();
    }

    /// Reconciles on a background thread (coalescing requests): from the
    /// reader, which must never wait on tmux, and from `Drop`.
    fn schedule(&self) {
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

    /// Brings the client in line with what subscribers want: output on for
    /// watched panes of its session and off for the rest, moved to the
    /// session holding the most watched panes when it holds none; output
    /// off (as attached) when nobody watches; coverage published.
    fn reconcile(&self, shared: &Shared, deadline: Instant) -> Result<(), TmuxError> {
        let _one = lock(&self.reconciling);
        self.dirty.store(false, Ordering::Release);
        let wants = lock(&self.state).wants();
        if !wants.output {
            self.output_off(deadline)?;
            if !wants.structure {
                return Ok(());
            }
        }
        let control = match shared.route(deadline)? {
            Route::Control(c) => c,
            Route::OneShot => {
                lock(&self.state).forget_client();
                return Ok(());
            }
        };
        self.adopt(&control);
        if !wants.output {
            return Ok(());
        }
        let listing = session_panes(&control, deadline)?;
        let moved = better_session(&listing, &control.session_id(), &wants);
        if let Some(target) = moved {
            self.pause_all(deadline)?;
            let cmd = TmuxCommand::new("attach-session")
                .flag("-E")
                .option("-t", &target.to_string());
            let rx = control.send(&cmd).ok_or_else(closed)?;
            super::connection::wait_text(&rx, deadline)?;
            control.set_session(&target.to_string());
        }
        let session = control.session_id();
        let in_session: BTreeSet<PaneId> = listing
            .iter()
            .filter(|(s, _)| s.to_string() == session)
            .map(|(_, p)| *p)
            .collect();
        let on_server: HashSet<PaneId> = listing.iter().map(|(_, p)| *p).collect();
        let panes = Panes {
            in_session: &in_session,
            on_server: &on_server,
            moved: moved.is_some(),
        };
        self.apply_flows(&panes, &wants, deadline)?;
        self.publish(SessionId::parse(&session).ok(), &in_session);
        Ok(())
    }

    /// Nobody watches output: every pane whose output is on is paused
    /// (see [`PANE_OFF`]), every known pane counts as off.
    fn output_off(&self, deadline: Instant) -> Result<(), TmuxError> {
        self.pause_all(deadline)
    }

    /// Pauses the panes whose output is on and marks every known pane off,
    /// so that a pane watched again is continued from what it prints then.
    /// Also before the client moves: a pane left on in a session the client
    /// no longer shows keeps its offset, which holds the pane's buffer in
    /// tmux for good and crashes tmux when the pane is respawned (tmux
    /// issue #5499).
    fn pause_all(&self, deadline: Instant) -> Result<(), TmuxError> {
        let reply = {
            let mut st = lock(&self.state);
            if !st.enabled {
                return Ok(());
            }
            let mut changes = Changes::default();
            for (pane, flow) in st.flows.iter_mut() {
                if *flow == Flow::Armed {
                    changes.push(*pane, PANE_OFF);
                }
                *flow = Flow::Off;
            }
            st.send(changes.command(None))
        };
        match reply {
            Some(rx) => super::connection::wait_text(&rx, deadline).map(drop),
            None => Ok(()),
        }
    }

    /// Makes `control` the client the flows describe (a new one starts with
    /// output off and every subscriber must re-read).
    fn adopt(&self, control: &Arc<Control>) {
        let mut st = lock(&self.state);
        if st.pid == Some(control.client_pid) {
            return;
        }
        st.forget_client();
        st.control = Arc::downgrade(control);
        st.pid = Some(control.client_pid);
    }

    /// Turns output on (if it is not) and each pane of the session on or
    /// off as it is watched or not, in one command. After a move every
    /// pane of the new session is set explicitly: tmux kept whatever state
    /// they had when the client was last there. Flows of panes gone from
    /// the server are forgotten.
    fn apply_flows(
        &self,
        panes: &Panes,
        wants: &Wants,
        deadline: Instant,
    ) -> Result<(), TmuxError> {
        let reply = {
            let mut st = lock(&self.state);
            let flags = (!st.enabled).then_some(OUTPUT_ON);
            if flags.is_some() {
                // Turning output on resets every pane on the client.
                st.flows.clear();
                st.enabled = true;
            }
            let mut changes = Changes::default();
            for &pane in panes.in_session {
                let known = st.flows.get(&pane).copied().filter(|_| !panes.moved);
                // Unknown to tmux (never printed since output went on): on.
                let flow = known.unwrap_or(if panes.moved { Flow::Off } else { Flow::Armed });
                if wants.pane(pane) && flow == Flow::Off {
                    changes.push(pane, "on");
                    changes.push(pane, "continue");
                    st.flows.insert(pane, Flow::Armed);
                } else if !wants.pane(pane) && (flow != Flow::Off || known.is_none()) {
                    changes.push(pane, PANE_OFF);
                    st.flows.insert(pane, Flow::Off);
                }
            }
            let watched: BTreeSet<PaneId> = panes
                .in_session
                .iter()
                .copied()
                .filter(|&p| wants.pane(p))
                .collect();
            st.continue_orphans(&watched, &mut changes);
            st.flows.retain(|p, _| panes.on_server.contains(p));
            st.send(changes.command(flags))
        };
        match reply {
            Some(rx) => super::connection::wait_text(&rx, deadline).map(drop),
            None => Ok(()),
        }
    }

    /// Tells each subscriber which of its panes are covered; one whose
    /// coverage changed re-reads.
    fn publish(&self, session: Option<SessionId>, in_session: &BTreeSet<PaneId>) {
        let st = lock(&self.state);
        for sub in st.subs.values() {
            let panes = match &sub.interest.watch {
                Watch::Nothing => BTreeSet::new(),
                Watch::Panes(set) => set.intersection(in_session).copied().collect(),
                Watch::Every => in_session.clone(),
            };
            let new = Coverage {
                live: true,
                session,
                panes,
            };
            let mut slot = lock(&sub.state.coverage);
            let changed = slot.as_ref().is_some_and(|old| *old != new);
            *slot = Some(new);
            drop(slot);
            if changed {
                sub.resync();
            }
        }
    }

    /// Re-arms `panes` that a trigger paused: one `refresh-client`, waited
    /// for, so output from now on is reported.
    fn rearm(&self, panes: &[PaneId], deadline: Instant) -> Result<(), TmuxError> {
        let reply = {
            let mut st = lock(&self.state);
            let mut changes = Changes::default();
            for &pane in panes {
                if st.flows.get(&pane) == Some(&Flow::Disarmed) {
                    st.flows.insert(pane, Flow::Armed);
                    changes.push(pane, "continue");
                }
            }
            st.send(changes.command(None))
        };
        match reply {
            Some(rx) => super::connection::wait_text(&rx, deadline).map(drop),
            None => Ok(()),
        }
    }
}

fn closed() -> TmuxError {
    TmuxError::ConnectionLost("the control client is closed".into())
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

/// Every (session, pane) placement on the server, in one round trip.
fn session_panes(
    control: &Control,
    deadline: Instant,
) -> Result<Vec<(SessionId, PaneId)>, TmuxError> {
    let cmd = TmuxCommand::new("list-panes")
        .flag("-a")
        .option("-F", "#{session_id} #{pane_id}");
    let rx = control.send(&cmd).ok_or_else(closed)?;
    let text = super::connection::wait_text(&rx, deadline)?;
    Ok(parse_placements(&text))
}

/// `$S %P` lines; anything malformed is skipped.
fn parse_placements(text: &str) -> Vec<(SessionId, PaneId)> {
    text.lines()
        .filter_map(|l| {
            let (s, p) = l.split_once(' ')?;
            Some((SessionId::parse(s).ok()?, PaneId::parse(p).ok()?))
        })
        .collect()
}

/// The session to move to: none while the current one holds a watched pane
/// (or every pane is wanted), else the one holding the most (lowest id on a
/// tie), if any holds one.
fn better_session(
    listing: &[(SessionId, PaneId)],
    current: &str,
    wants: &Wants,
) -> Option<SessionId> {
    if wants.every {
        return None;
    }
    let mut counts: BTreeMap<SessionId, usize> = BTreeMap::new();
    for (s, p) in listing {
        if wants.panes.contains(p) {
            *counts.entry(*s).or_default() += 1;
        }
    }
    if counts.keys().any(|s| s.to_string() == current) {
        return None;
    }
    let best = counts
        .iter()
        .max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(a.0)))?;
    Some(*best.0)
}

/// One subscriber's end of the stream; dropping it unsubscribes (and, for
/// the last one, turns output off and lets the client idle-detach).
#[derive(Debug)]
pub struct Subscription {
    id: u64,
    hub: Arc<Hub>,
    rx: Receiver<StreamEvent>,
    state: Arc<SubState>,
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

/// Subscribes to `shared`'s stream (see [`super::Tmux::subscribe`]).
pub(crate) fn subscribe(
    shared: &Arc<Server>,
    interest: Interest,
    deadline: Instant,
) -> Subscription {
    shared.hub().subscribe(shared, interest, deadline)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    fn p(n: u32) -> PaneId {
        PaneId::from_number(n)
    }

    fn s(n: u32) -> SessionId {
        SessionId::from_number(n)
    }

    fn state_with(subs: Vec<Interest>) -> (HubState, Vec<Receiver<StreamEvent>>) {
        let mut st = HubState::default();
        let mut rxs = Vec::new();
        for (i, interest) in subs.into_iter().enumerate() {
            let (tx, rx) = crossbeam_channel::bounded(4);
            st.subs.insert(
                i as u64,
                Sub {
                    tx,
                    interest,
                    state: Arc::default(),
                },
            );
            rxs.push(rx);
        }
        (st, rxs)
    }

    #[test]
    fn a_trigger_pauses_the_pane_and_comes_once() {
        let (mut st, rxs) = state_with(vec![Interest::printed([p(1)])]);
        let mut ch = Changes::default();
        st.output(p(1), b"a", &mut ch);
        st.output(p(1), b"b", &mut ch);
        assert_eq!(ch.0, vec!["%1:pause"]);
        assert_eq!(st.flows.get(&p(1)), Some(&Flow::Disarmed));
        assert_eq!(rxs[0].try_recv(), Ok(StreamEvent::Printed(p(1))));
        assert!(rxs[0].try_recv().is_err());
        // Re-armed but not yet taken from the queue: still one event.
        st.flows.insert(p(1), Flow::Armed);
        lock(&st.subs[&0].state.queued).insert(p(1));
        st.output(p(1), b"c", &mut ch);
        assert!(rxs[0].try_recv().is_err());
    }

    #[test]
    fn unwatched_output_turns_the_pane_off_once() {
        let (mut st, rxs) = state_with(vec![Interest::printed([p(1)])]);
        let mut ch = Changes::default();
        st.output(p(2), b"x", &mut ch);
        st.output(p(2), b"y", &mut ch);
        assert_eq!(ch.0, vec!["%2:pause"]);
        assert!(rxs[0].try_recv().is_err());
        // tmux's `%pause` for it: still off, nothing sent, nobody woken.
        st.paused(p(2), &mut ch);
        assert_eq!(ch.0, vec!["%2:pause"]);
        assert_eq!(st.flows.get(&p(2)), Some(&Flow::Off));
        assert!(rxs[0].try_recv().is_err());
    }

    #[test]
    fn a_trigger_nobody_holds_leaves_the_pane_on() {
        let (mut st, rxs) = state_with(vec![Interest::printed([p(1)])]);
        let mut ch = Changes::default();
        st.output(p(1), b"a", &mut ch);
        assert_eq!(st.flows.get(&p(1)), Some(&Flow::Disarmed));
        // The subscriber goes away before re-arming: the pane would stay
        // paused for good. A reconcile continues it for whoever watches.
        let gone = st.subs.remove(&0).unwrap();
        drop(rxs);
        let (tx, _rx) = crossbeam_channel::bounded(4);
        st.subs.insert(
            1,
            Sub {
                tx,
                interest: Interest::printed([p(1)]),
                state: Arc::default(),
            },
        );
        let mut ch = Changes::default();
        st.continue_orphans(&BTreeSet::from([p(1)]), &mut ch);
        assert_eq!(ch.0, vec!["%1:continue"]);
        assert_eq!(st.flows.get(&p(1)), Some(&Flow::Armed));
        drop(gone);
        // A held trigger keeps its pane paused.
        st.output(p(1), b"b", &mut ch);
        assert_eq!(st.flows.get(&p(1)), Some(&Flow::Disarmed));
        let mut ch = Changes::default();
        st.continue_orphans(&BTreeSet::from([p(1)]), &mut ch);
        assert!(ch.0.is_empty());
    }

    #[test]
    fn a_trigger_a_full_channel_refused_does_not_pause_the_pane() {
        let (mut st, rxs) = state_with(vec![Interest {
            watch: Watch::Every,
            mode: OutputMode::Trigger,
            structure: true,
        }]);
        for _ in 0..4 {
            st.structure(StructureEvent::SessionsChanged);
        }
        let mut ch = Changes::default();
        st.output(p(1), b"a", &mut ch);
        assert!(ch.0.is_empty(), "{:?}", ch.0);
        assert_ne!(st.flows.get(&p(1)), Some(&Flow::Disarmed));
        // tmux pausing it (a second behind) continues it likewise.
        st.paused(p(1), &mut ch);
        assert_eq!(ch.0, vec!["%1:continue"]);
        assert!(st.subs[&0].state.resync.load(Ordering::Acquire));
        // Once the subscriber made room, the next output is its trigger.
        while rxs[0].try_recv().is_ok() {}
        let mut ch = Changes::default();
        st.output(p(1), b"b", &mut ch);
        assert_eq!(ch.0, vec!["%1:pause"]);
        assert_eq!(rxs[0].try_recv(), Ok(StreamEvent::Printed(p(1))));
    }

    #[test]
    fn bytes_are_unescaped_and_never_paused() {
        let interest = Interest {
            watch: Watch::Every,
            mode: OutputMode::Bytes,
            structure: false,
        };
        let (mut st, rxs) = state_with(vec![interest]);
        let mut ch = Changes::default();
        st.output(p(9), br"ok\015\012", &mut ch);
        assert!(ch.0.is_empty());
        assert_eq!(
            rxs[0].try_recv(),
            Ok(StreamEvent::Output {
                pane: p(9),
                data: b"ok\r\n".to_vec()
            })
        );
        // tmux dropped output: resync, and the pane continues at once.
        st.paused(p(9), &mut ch);
        assert_eq!(ch.0, vec!["%9:continue"]);
        assert_eq!(rxs[0].try_recv(), Ok(StreamEvent::Resync));
    }

    #[test]
    fn a_full_channel_is_reported_as_lost() {
        let (mut st, rxs) = state_with(vec![Interest {
            watch: Watch::Every,
            mode: OutputMode::Bytes,
            structure: true,
        }]);
        let mut ch = Changes::default();
        for _ in 0..10 {
            st.output(p(1), b"x", &mut ch);
        }
        assert_eq!(rxs[0].len(), 4);
        assert!(st.subs[&0].state.resync.load(Ordering::Acquire));
    }

    #[test]
    fn the_client_moves_only_when_its_session_holds_no_watched_pane() {
        let listing = parse_placements("$0 %0\n$0 %1\n$1 %2\n$2 %3\n$2 %4\nnoise\n$1 %9");
        let wants = |panes: &[u32]| Wants {
            panes: panes.iter().map(|&n| p(n)).collect(),
            output: true,
            ..Wants::default()
        };
        assert_eq!(better_session(&listing, "$0", &wants(&[1, 3])), None);
        assert_eq!(
            better_session(&listing, "$0", &wants(&[2, 3, 4])),
            Some(s(2))
        );
        assert_eq!(better_session(&listing, "$0", &wants(&[2, 3])), Some(s(1)));
        assert_eq!(better_session(&listing, "$0", &wants(&[77])), None);
        let every = Wants {
            every: true,
            output: true,
            ..Wants::default()
        };
        assert_eq!(better_session(&listing, "$5", &every), None);
    }

    #[test]
    fn the_refresh_command_puts_flags_first() {
        let mut ch = Changes::default();
        ch.push(p(3), PANE_OFF);
        let cmd = ch.command(Some(OUTPUT_ON)).unwrap();
        assert_eq!(
            cmd.to_line().unwrap(),
            r#"refresh-client -f "!no-output,pause-after=1" -A "%3:pause""#
        );
        assert!(Changes::default().command(None).is_none());
    }
}
