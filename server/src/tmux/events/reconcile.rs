//! Bringing the control client in line with what subscribers want.
//!
//! A control client gets output only for panes in windows of the session
//! it is attached to (tmux 3.3a, `control_write_output`). When no watched
//! pane is in that session, the client moves (`attach-session -E -t $S`:
//! no `client-attached`, no environment update) to the session holding the
//! most watched panes, every pane paused first. Panes outside it are not
//! [covered](super::Coverage): their subscribers poll them. Structure
//! notifications reach every control client whatever its flags;
//! `%layout-change` only for windows of its own session.
//!
//! With `no-output` (how the client attaches) tmux sends no `%output` at
//! all. Clearing it (`refresh-client -f '!no-output'`) resets every pane's
//! state, and a pane tmux has no state for sends its output. So the command
//! that turns output on also turns off every pane of the session nobody
//! watches (`-f` is applied before `-A` in one command, nothing slips
//! between); a pane created later is turned off on its first `%output`.
//!
//! Must hold: after a reconcile every watched pane of the session is on
//! (or paused for a trigger someone holds), every other pane paused, and
//! each subscriber's coverage published (a changed one re-reads).

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use super::super::connection::{self, Control, Route, Shared};
use super::super::ids::{PaneId, SessionId};
use super::super::{TmuxCommand, TmuxError};
use super::flows::{Changes, Flow, Wants, OUTPUT_ON, PANE_OFF};
use super::{Coverage, Hub, Watch};
use crate::sync::lock;

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

impl Hub {
    /// Brings the client in line with what subscribers want: output on for
    /// watched panes of its session and off for the rest, moved to the
    /// session holding the most watched panes when it holds none; output
    /// off (as attached) when nobody watches; coverage published.
    pub(super) fn reconcile(&self, shared: &Shared, deadline: Instant) -> Result<(), TmuxError> {
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
            connection::wait_text(&rx, deadline)?;
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
            Some(rx) => connection::wait_text(&rx, deadline).map(drop),
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
            Some(rx) => connection::wait_text(&rx, deadline).map(drop),
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
    pub(super) fn rearm(&self, panes: &[PaneId], deadline: Instant) -> Result<(), TmuxError> {
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
            Some(rx) => connection::wait_text(&rx, deadline).map(drop),
            None => Ok(()),
        }
    }
}

fn closed() -> TmuxError {
    TmuxError::ConnectionLost("the control client is closed".into())
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
    let text = connection::wait_text(&rx, deadline)?;
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use std::sync::Mutex;
    use std::time::Duration;

    use super::super::subscription::{Sub, SubState, Subscription};
    use super::super::{Interest, OutputMode, StreamEvent, CHANNEL_CAPACITY};
    use super::*;
    use crate::testbed::private_server::PrivateServer;
    use crate::tmux::connection::Listener;
    use crate::tmux::notification::StructureEvent;
    use crate::tmux::ServerSpec;

    fn in_secs(n: u64) -> Instant {
        Instant::now() + Duration::from_secs(n)
    }

    /// A private server with one session of three panes running `cat`
    /// (quiet until typed into), and a hub on it whose subscribers are
    /// added by hand and reconciled when the test says (no background
    /// thread: the hub knows no `Server` to start one for).
    struct Bed {
        shared: Shared,
        hub: Arc<Hub>,
        probing: Arc<Probing>,
        panes: [PaneId; 3],
        server: PrivateServer,
    }

    /// The hub's listener here: every line goes to the hub but the
    /// `%pause` or `%continue` a probe of the test's own caused ([`Bed::refresh`]),
    /// kept for the probe. tmux 3.3a to 3.7 write it inside the reply,
    /// later builds after it (tmux commit 6db5175e4); either way the hub
    /// does not see it.
    #[derive(Debug)]
    struct Probing {
        hub: Arc<Hub>,
        /// The line a probe waits for, and whether it came.
        echo: Mutex<Option<(Vec<u8>, bool)>>,
    }

    impl Listener for Probing {
        fn listening(&self) -> bool {
            self.hub.listening()
        }

        fn on_lines(&self, pid: u32, lines: &[Vec<u8>]) {
            let mut echo = lock(&self.echo);
            let rest: Vec<Vec<u8>> = lines
                .iter()
                .filter(|line| match echo.as_mut() {
                    Some((want, seen)) if !*seen && *line == want => {
                        *seen = true;
                        false
                    }
                    _ => true,
                })
                .cloned()
                .collect();
            drop(echo);
            self.hub.on_lines(pid, &rest);
        }

        fn on_closed(&self, pid: u32, on_purpose: bool) {
            self.hub.on_closed(pid, on_purpose);
        }
    }

    impl Bed {
        fn new(label: &str) -> Bed {
            let server = PrivateServer::start(label, 80, 24).unwrap();
            server
                .run_ok(["respawn-pane", "-k", "-t", "%0", "cat"])
                .unwrap();
            let split = || {
                let id = server
                    .run_ok(["split-window", "-t", "%0", "-P", "-F", "#{pane_id}", "cat"])
                    .unwrap();
                PaneId::parse(id.trim()).unwrap()
            };
            let panes = [p(0), split(), split()];
            let hub = Arc::new(Hub::default());
            let probing = Arc::new(Probing {
                hub: hub.clone(),
                echo: Mutex::new(None),
            });
            let listener: Arc<dyn Listener> = probing.clone();
            let shared = Shared::new(ServerSpec::named(server.socket_name()), listener).unwrap();
            Bed {
                shared,
                hub,
                probing,
                panes,
                server,
            }
        }

        fn hub(&self) -> &Arc<Hub> {
            &self.hub
        }

        /// A subscriber, as `Hub::subscribe` adds one, without its
        /// reconcile.
        fn watch(&self, interest: Interest) -> Subscription {
            let (tx, rx) = crossbeam_channel::bounded(CHANNEL_CAPACITY);
            let state = Arc::new(SubState::default());
            let mut st = lock(&self.hub().state);
            st.next_id += 1;
            let id = st.next_id;
            let sub = Sub {
                tx,
                interest,
                state: state.clone(),
            };
            st.subs.insert(id, sub);
            self.hub().listeners.fetch_add(1, Ordering::AcqRel);
            let hub = self.hub().clone();
            Subscription { id, hub, rx, state }
        }

        fn reconcile(&self) {
            self.hub().reconcile(&self.shared, in_secs(10)).unwrap();
        }

        fn flow(&self, pane: PaneId) -> Option<Flow> {
            lock(&self.hub().state).flows.get(&pane).copied()
        }

        /// Whether tmux has `pane` paused for the client: asked through
        /// the client itself (the state is the client's), as tmux answers a
        /// `continue` (`%continue %P` only when it was paused), then put
        /// back as it was.
        fn paused(&self, pane: PaneId) -> bool {
            let was = self.refresh(pane, "continue");
            if was {
                assert!(self.refresh(pane, "pause"));
            }
            was
        }

        /// Sends `-A %P:what` and tells whether tmux said it changed the
        /// pane (`%what %P`, in the reply or ahead of it: [`Probing`]).
        fn refresh(&self, pane: PaneId, what: &str) -> bool {
            let control = lock(&self.hub().state).control.upgrade().unwrap();
            let change = format!("{pane}:{what}");
            let echo = format!("%{what} {pane}");
            *lock(&self.probing.echo) = Some((echo.clone().into_bytes(), false));
            let cmd = TmuxCommand::new("refresh-client").option("-A", &change);
            let reply = connection::wait_text(&control.send(&cmd).unwrap(), in_secs(10));
            let ahead = lock(&self.probing.echo)
                .take()
                .is_some_and(|(_, seen)| seen);
            ahead || reply.unwrap().lines().any(|l| l == echo)
        }

        fn type_line(&self, pane: PaneId, text: &str) {
            let target = pane.to_string();
            self.server
                .run_ok(["send-keys", "-t", &target, text, "Enter"])
                .unwrap();
        }

        /// Whether `sub` hears `pane`: its trigger comes for a line typed
        /// (the reconcile waited for tmux, so output is on by now).
        fn hears(&self, sub: &Subscription, pane: PaneId) -> bool {
            self.type_line(pane, "ping");
            let until = in_secs(5);
            while let Some(event) = sub.recv_deadline(until) {
                if event == StreamEvent::Printed(pane) {
                    return true;
                }
            }
            false
        }
    }

    impl Bed {
        /// A new session whose one pane runs `cat`: that pane.
        fn session(&self, name: &str) -> PaneId {
            let args = [
                "new-session",
                "-d",
                "-s",
                name,
                "-P",
                "-F",
                "#{pane_id}",
                "cat",
            ];
            PaneId::parse(self.server.run_ok(args).unwrap().trim()).unwrap()
        }

        /// Whether `sub` (bytes mode) hears a line typed into `pane`.
        fn hears_bytes(&self, sub: &Subscription, pane: PaneId) -> bool {
            self.type_line(pane, "ping");
            std::iter::from_fn(|| sub.recv_deadline(in_secs(5)))
                .any(|e| matches!(e, StreamEvent::Output { pane: p, .. } if p == pane))
        }
    }

    fn covers(session: u32, panes: &[PaneId]) -> Coverage {
        Coverage {
            live: true,
            session: Some(s(session)),
            panes: panes.iter().copied().collect(),
        }
    }

    #[test]
    fn a_reconcile_turns_the_watched_pane_on_and_pauses_the_others() {
        let bed = Bed::new("reconcile-on");
        let [p0, p1, p2] = bed.panes;
        let sub = bed.watch(Interest::printed([p0]));
        bed.reconcile();
        assert_eq!(sub.coverage(), covers(0, &[p0]));
        assert_eq!(
            (bed.flow(p1), bed.flow(p2)),
            (Some(Flow::Off), Some(Flow::Off))
        );
        assert!(bed.paused(p1) && bed.paused(p2) && !bed.paused(p0));
        // Nothing changed: the subscriber need not re-read.
        bed.reconcile();
        assert_eq!(sub.try_recv(), None);
        assert!(bed.hears(&sub, p0));
    }

    /// Each step watches another pane: a pane paused as unwatched is
    /// continued once watched, one watched before is paused once not,
    /// and one never watched stays paused.
    #[test]
    fn panes_follow_what_is_watched_from_one_reconcile_to_the_next() {
        let bed = Bed::new("reconcile-swap");
        let [p0, p1, p2] = bed.panes;
        let first = bed.watch(Interest::printed([p0]));
        bed.reconcile();
        assert!(bed.paused(p1));
        drop(first);

        let second = bed.watch(Interest::printed([p1]));
        bed.reconcile();
        assert_eq!(second.coverage(), covers(0, &[p1]));
        assert!(!bed.paused(p1) && bed.paused(p0) && bed.paused(p2));
        assert_eq!(bed.flow(p2), Some(Flow::Off));
        assert!(bed.hears(&second, p1));
        // Its trigger paused it; re-armed, it is on again.
        assert!(bed.paused(p1));
        second.rearm(&[p1], in_secs(10)).unwrap();
        assert!(!bed.paused(p1));
        assert_eq!(bed.flow(p1), Some(Flow::Armed));
        drop(second);

        let third = bed.watch(Interest::printed([p0]));
        bed.reconcile();
        assert_eq!(
            (bed.flow(p1), bed.flow(p2)),
            (Some(Flow::Off), Some(Flow::Off))
        );
        assert!(bed.paused(p1) && bed.paused(p2) && !bed.paused(p0));
        assert!(bed.hears(&third, p0));
    }

    /// Once nobody watches output, a pane that was on is paused (and
    /// counts as off: watched again, it is turned on and continued).
    #[test]
    fn nobody_watching_pauses_the_panes_that_are_on() {
        let bed = Bed::new("reconcile-off");
        let [p0, p1, _] = bed.panes;
        let sub = bed.watch(Interest::printed([p0]));
        bed.reconcile();
        assert!(bed.hears(&sub, p0));
        sub.rearm(&[p0], in_secs(10)).unwrap();
        assert!(!bed.paused(p0));
        drop(sub);
        bed.reconcile();
        assert!(bed.paused(p0));
        assert_eq!(
            (bed.flow(p0), bed.flow(p1)),
            (Some(Flow::Off), Some(Flow::Off))
        );

        let again = bed.watch(Interest::printed([p0]));
        bed.reconcile();
        assert!(!bed.paused(p0));
        assert!(bed.hears(&again, p0));
    }

    /// A pane read as bytes was never paused by panescan, yet is on in
    /// tmux: once nobody watches it, and before the client moves to
    /// another session, it is paused like a pane re-armed after a
    /// trigger (it was left on: its output held in tmux for a session
    /// the client no longer shows).
    #[test]
    fn a_pane_read_as_bytes_is_paused_when_nobody_watches_and_before_a_move() {
        let bed = Bed::new("reconcile-bytes");
        let p0 = bed.panes[0];
        let other = bed.session("other");
        let bytes = |pane| Interest {
            watch: Watch::Panes(BTreeSet::from([pane])),
            mode: OutputMode::Bytes,
            structure: false,
        };
        let sub = bed.watch(bytes(p0));
        bed.reconcile();
        assert!(bed.hears_bytes(&sub, p0));
        drop(sub);
        bed.reconcile();
        assert!(bed.paused(p0), "left on once nobody watched it");

        let sub = bed.watch(bytes(p0));
        bed.reconcile();
        assert!(!bed.paused(p0));
        assert!(bed.hears_bytes(&sub, p0));
        drop(sub);
        let far = bed.watch(Interest::printed([other]));
        bed.reconcile();
        assert_eq!(far.coverage(), covers(1, &[other]));
        assert!(bed.paused(p0), "left on in the session the client left");
    }

    /// A subscriber of structure events alone gets a client (they come
    /// from it), but no output is turned on for it.
    #[test]
    fn a_subscriber_of_structure_alone_hears_a_window_added() {
        let bed = Bed::new("reconcile-structure");
        let sub = bed.watch(Interest::structure());
        bed.reconcile();
        assert!(!lock(&bed.hub().state).enabled);
        bed.server
            .run_ok(["new-window", "-d", "-t", "main"])
            .unwrap();
        let added = std::iter::from_fn(|| sub.recv_deadline(in_secs(5)))
            .any(|e| matches!(e, StreamEvent::Structure(StructureEvent::WindowAdd { .. })));
        assert!(added);
    }

    /// The client moves to the session holding the watched pane, and
    /// covers it there.
    #[test]
    fn the_client_moves_to_the_session_of_the_watched_pane() {
        let bed = Bed::new("reconcile-move");
        let other = bed
            .server
            .run_ok([
                "new-session",
                "-d",
                "-s",
                "other",
                "-P",
                "-F",
                "#{pane_id}",
                "cat",
            ])
            .unwrap();
        let other = PaneId::parse(other.trim()).unwrap();
        let sub = bed.watch(Interest::printed([other]));
        bed.reconcile();
        assert_eq!(sub.coverage(), covers(1, &[other]));
        let pid = lock(&bed.hub().state).pid.unwrap();
        let clients = bed
            .server
            .run_ok(["list-clients", "-F", "#{client_pid} #{session_id}"])
            .unwrap();
        assert!(
            clients.lines().any(|l| l == format!("{pid} $1")),
            "{clients}"
        );
        assert!(bed.hears(&sub, other));
    }

    fn p(n: u32) -> PaneId {
        PaneId::from_number(n)
    }

    fn s(n: u32) -> SessionId {
        SessionId::from_number(n)
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
}
