//! What a pane's `%output` or `%pause` does: which subscribers hear of it,
//! and whether the pane is paused, continued or turned off (tmux 3.3a,
//! control.c).
//!
//! * Flow control: a pane whose output a client does not take fast enough
//!   makes tmux stop reading that pane while every attached client is a
//!   control client behind on it (`server_client_check_pane_buffer`): the
//!   program in the pane stalls. With `pause-after=1` tmux instead pauses a
//!   pane whose output waited over a second (`%pause`) and drops it. On top
//!   of that, a trigger pane is paused by panescan itself (`-A %P:pause`)
//!   on its first `%output`, and continued (`-A %P:continue`, which skips
//!   what it printed meanwhile) when a subscriber has taken the trigger and
//!   [re-armed](super::Subscription::rearm) it, just before it captures. A
//!   pane printing without end (`yes`) thus costs one burst per capture,
//!   not a stream: it can neither flood panescan nor be stalled by it.
//! * A pane stays paused only while a subscriber holds its trigger (the
//!   `Printed` waiting in its channel) and so will re-arm it. A trigger no
//!   channel took (full) leaves the pane on; a subscriber of every pane
//!   continues the paused panes when it subscribes; and every reconcile
//!   continues the watched panes whose trigger nobody holds. Otherwise a
//!   pane paused for a subscriber that left before re-arming it stayed
//!   paused for every later one: deaf.
//! * Unwatched panes send nothing but one burst. "Off" is a pause
//!   ([`PANE_OFF`]: `%P:off` and `no-output` with output queued crash
//!   tmux), and output stays on once turned on.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Weak;

use super::super::connection::{Control, ReplyRx};
use super::super::ids::PaneId;
use super::super::notification::{self, StructureEvent};
use super::super::TmuxCommand;
use super::subscription::Sub;
use super::{Coverage, OutputMode, StreamEvent, Watch};
use crate::sync::lock;

/// Client flags while someone watches output: output on, and tmux pauses a
/// pane (instead of stalling it) once its output waited a second.
pub(super) const OUTPUT_ON: &str = "!no-output,pause-after=1";
/// How a pane nobody watches is kept quiet: paused, never `off`. tmux
/// (3.3a to 3.6b, control.c) keeps the output blocks already queued for a
/// pane it turns `off` while their offset no longer holds the pane's
/// buffer; once the buffer is drained past them the next flush reads
/// before it and the server segfaults (tmux PR #5054). A pause discards
/// those blocks first, and a later `continue` starts from what the pane
/// prints then. For the same reason the client never goes back to
/// `no-output` (that frees the panes' state under their queued blocks):
/// once output is on, nobody watching means every pane paused.
pub(super) const PANE_OFF: &str = "pause";

/// Where a pane's output stands on the client.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Flow {
    /// Output on: the next `%output` is a trigger.
    Armed,
    /// Paused after a trigger, until re-armed.
    Disarmed,
    /// Nobody watches it: off.
    Off,
}

/// The hub's state: subscribers and the flow of each pane on the client.
#[derive(Debug, Default)]
pub(super) struct HubState {
    pub(super) subs: BTreeMap<u64, Sub>,
    pub(super) next_id: u64,
    /// The control client the flows describe.
    pub(super) control: Weak<Control>,
    pub(super) pid: Option<u32>,
    /// Output is on for that client.
    pub(super) enabled: bool,
    pub(super) flows: HashMap<PaneId, Flow>,
}

/// Every subscriber's wishes, merged.
#[derive(Debug, Default)]
pub(super) struct Wants {
    pub(super) panes: BTreeSet<PaneId>,
    pub(super) every: bool,
    pub(super) output: bool,
    pub(super) structure: bool,
}

impl Wants {
    pub(super) fn pane(&self, pane: PaneId) -> bool {
        self.every || self.panes.contains(&pane)
    }
}

/// `-A` changes queued for one `refresh-client`.
#[derive(Debug, Default)]
pub(super) struct Changes(Vec<String>);

impl Changes {
    pub(super) fn push(&mut self, pane: PaneId, what: &str) {
        self.0.push(format!("{pane}:{what}"));
    }

    /// The command, with `flags` first when given (tmux applies `-f`
    /// before `-A`).
    pub(super) fn command(&self, flags: Option<&str>) -> Option<TmuxCommand> {
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

impl HubState {
    pub(super) fn wants(&self) -> Wants {
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
    pub(super) fn output(&mut self, pane: PaneId, escaped: &[u8], changes: &mut Changes) {
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
                    let data = data.get_or_insert_with(|| unescaped(escaped));
                    sub.send(StreamEvent::Output {
                        pane,
                        data: data.clone(),
                    });
                }
                OutputMode::Counted => {
                    // Kept on like bytes: every byte must be counted.
                    bytes = true;
                    sub.count(pane, data.get_or_insert_with(|| unescaped(escaped)));
                    sub.printed(pane);
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
        } else {
            // On, and tmux now keeps an offset for it: recorded, so that
            // the pause before a move or once nobody watches finds it
            // (left on in a session the client no longer shows, its
            // output stays held in tmux).
            self.flows.entry(pane).or_insert(Flow::Armed);
        }
    }

    /// `%pause`: tmux paused `pane`, its output dropped (the client fell a
    /// second behind), or echoed panescan's own pause. The pane stays
    /// paused only while a subscriber holds a trigger for it: one nobody
    /// holds is continued at once, one nobody watches counts as off.
    pub(super) fn paused(&mut self, pane: PaneId, changes: &mut Changes) {
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
                OutputMode::Counted => {
                    bytes = true;
                    sub.count_lost(pane);
                    sub.printed(pane);
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

    /// `%continue`: tmux turned `pane` on again at a `continue` of
    /// panescan's. Marked paused after it was sent, the pane was marked by
    /// the `%pause` tmux echoed for an earlier `pause` of panescan's: on
    /// now, or no output of it would ever be a trigger again. (tmux 3.3a to
    /// 3.7 write both echoes inside the `refresh-client` reply, where the
    /// stream never sees them; later builds write them after it, tmux
    /// commit 6db5175e4.)
    pub(super) fn continued(&mut self, pane: PaneId) {
        if self.flows.get(&pane) == Some(&Flow::Disarmed) {
            self.flows.insert(pane, Flow::Armed);
        }
    }

    /// Panes paused after a trigger, until re-armed.
    pub(super) fn disarmed(&self) -> Vec<PaneId> {
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
    pub(super) fn continue_orphans(&mut self, panes: &BTreeSet<PaneId>, changes: &mut Changes) {
        for &pane in panes {
            if self.flows.get(&pane) == Some(&Flow::Disarmed) && !self.held(pane) {
                self.flows.insert(pane, Flow::Armed);
                changes.push(pane, "continue");
            }
        }
    }

    pub(super) fn structure(&self, event: StructureEvent) {
        for sub in self.subs.values().filter(|s| s.interest.structure) {
            sub.send(StreamEvent::Structure(event));
        }
    }

    /// Forgets the client: every subscriber re-reads and polls until a new
    /// one is set up.
    pub(super) fn forget_client(&mut self) {
        let had_client = self.pid.is_some();
        self.control = Weak::new();
        self.pid = None;
        self.enabled = false;
        self.flows.clear();
        for sub in self.subs.values() {
            // A subscriber that never had coverage polls already; one of
            // structure events must hear that the client it heard from is
            // gone (what happens until the next one is lost).
            let mut slot = lock(&sub.state.coverage);
            if let Some(c) = slot.as_mut() {
                *c = Coverage::default();
                drop(slot);
                sub.resync();
            } else if sub.interest.structure && had_client {
                drop(slot);
                sub.resync();
            }
        }
    }

    /// Sends `cmd` to the client without waiting (the order of commands is
    /// the order of calls, which all hold the hub's lock).
    pub(super) fn send(&self, cmd: Option<TmuxCommand>) -> Option<ReplyRx> {
        let cmd = cmd?;
        let control = self.control.upgrade()?;
        control.send(&cmd)
    }
}

/// A `%output` payload as the pane wrote it.
fn unescaped(escaped: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(escaped.len());
    notification::unescape(escaped, &mut out);
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use std::sync::atomic::Ordering;
    use std::sync::Arc;

    use crossbeam_channel::Receiver;

    use super::super::Interest;
    use super::*;

    fn p(n: u32) -> PaneId {
        PaneId::from_number(n)
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

    /// tmux 3.8 echoes panescan's `pause` and `continue` after their
    /// replies: a `%pause` read once the trigger was re-armed marks the pane
    /// paused, and the `%continue` after it says it is on again.
    #[test]
    fn a_pause_echoed_after_the_rearm_is_undone_by_the_continue_echoed_after_it() {
        let (mut st, rxs) = state_with(vec![Interest::printed([p(1)])]);
        let mut ch = Changes::default();
        st.output(p(1), b"a", &mut ch);
        assert_eq!(rxs[0].try_recv(), Ok(StreamEvent::Printed(p(1))));
        // Taken and re-armed (`continue` sent) before the echo is read.
        lock(&st.subs[&0].state.queued).remove(&p(1));
        st.flows.insert(p(1), Flow::Armed);
        st.paused(p(1), &mut ch);
        st.continued(p(1));
        assert_eq!(st.flows.get(&p(1)), Some(&Flow::Armed));
        // Its next output is a trigger (the echo's own was taken).
        assert_eq!(rxs[0].try_recv(), Ok(StreamEvent::Printed(p(1))));
        lock(&st.subs[&0].state.queued).remove(&p(1));
        let mut ch = Changes::default();
        st.output(p(1), b"b", &mut ch);
        assert_eq!(ch.0, vec!["%1:pause"]);
        assert_eq!(rxs[0].try_recv(), Ok(StreamEvent::Printed(p(1))));
        // A pane off, or on, stays so.
        st.flows.insert(p(2), Flow::Off);
        st.continued(p(2));
        st.continued(p(3));
        assert_eq!(
            (st.flows.get(&p(2)), st.flows.get(&p(3))),
            (Some(&Flow::Off), None)
        );
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
    fn counted_output_is_counted_triggered_once_and_never_paused() {
        let (mut st, rxs) = state_with(vec![Interest {
            watch: Watch::Every,
            mode: OutputMode::Counted,
            structure: false,
        }]);
        let mut ch = Changes::default();
        // Escaped as tmux sends it: `\012` is a line feed.
        st.output(p(1), b"a\\015\\012b\\015\\012", &mut ch);
        st.output(p(1), b"c\\015\\012", &mut ch);
        assert!(ch.0.is_empty(), "{:?}", ch.0);
        assert_eq!(rxs[0].try_recv(), Ok(StreamEvent::Printed(p(1))));
        assert!(rxs[0].try_recv().is_err());
        let counted = *lock(&st.subs[&0].state.printed).get(&p(1)).unwrap();
        assert_eq!(counted.line_feeds, 3);
        // tmux pausing it: continued, the count unknown from then on.
        st.paused(p(1), &mut ch);
        assert_eq!(ch.0, vec!["%1:continue"]);
        let after = *lock(&st.subs[&0].state.printed).get(&p(1)).unwrap();
        assert_eq!(after.rows_since(&counted, 80, 24), None);
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

    /// A subscriber of structure events alone has no coverage, but the
    /// events of the gap before a new client are lost all the same: it is
    /// told to re-read (it was not, and kept trusting a stale picture).
    #[test]
    fn losing_the_client_resyncs_structure_subscribers() {
        let (mut st, rxs) = state_with(vec![Interest::structure(), Interest::printed([p(1)])]);
        // No client yet (the first one adopted): nothing was lost.
        st.forget_client();
        assert!(rxs[0].try_recv().is_err());
        st.pid = Some(42);
        st.forget_client();
        assert_eq!(rxs[0].try_recv(), Ok(StreamEvent::Resync));
        assert!(st.subs[&0].state.resync.load(Ordering::Acquire));
        // A trigger subscriber that never had coverage polls already.
        assert!(rxs[1].try_recv().is_err());
    }

    /// What a subscriber of every pane re-arms when it subscribes: the
    /// panes paused for a trigger, not those off or on.
    #[test]
    fn the_disarmed_panes_are_those_paused_for_a_trigger() {
        let (mut st, _rxs) = state_with(vec![Interest::printed([p(1), p(2)])]);
        let mut ch = Changes::default();
        st.output(p(2), b"a", &mut ch);
        st.output(p(3), b"b", &mut ch);
        st.flows.insert(p(1), Flow::Armed);
        assert_eq!(st.disarmed(), vec![p(2)]);
    }

    /// A pane stays paused only for a trigger subscriber of that pane
    /// whose trigger still waits: not for another pane's trigger
    /// subscriber, nor for a counted subscriber's `Printed`.
    #[test]
    fn only_a_trigger_waiting_for_its_pane_keeps_the_pane_paused() {
        let (mut st, _rxs) = state_with(vec![
            Interest::printed([p(1)]),
            Interest::printed([p(2)]),
            Interest {
                watch: Watch::Every,
                mode: OutputMode::Counted,
                structure: false,
            },
        ]);
        let counted = st.subs.remove(&2).unwrap();
        let mut ch = Changes::default();
        st.output(p(2), b"a", &mut ch);
        assert_eq!(st.flows.get(&p(2)), Some(&Flow::Disarmed));
        st.subs.insert(2, counted);
        st.output(p(2), b"b", &mut ch);
        assert!(lock(&st.subs[&2].state.queued).contains(&p(2)));
        // The trigger is taken, and the pane is not re-armed.
        lock(&st.subs[&1].state.queued).remove(&p(2));
        let mut ch = Changes::default();
        st.continue_orphans(&BTreeSet::from([p(2)]), &mut ch);
        assert_eq!(ch.0, vec!["%2:continue"]);
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
