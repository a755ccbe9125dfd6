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
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

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
