//! What wakes a wait: tmux's event stream for the panes it covers, a cheap
//! probe on an adaptive interval for the rest.
//!
//! A covered pane is captured only after tmux reported output from it (a
//! `Printed` trigger, re-armed before the capture so nothing printed after
//! it goes unreported), so the time from text appearing to the answer is
//! one event plus one capture; panes whose output came while the re-arm
//! went to tmux and back are taken then and join the same capture. A pane
//! the stream does not cover (another session than the one the client
//! shows, a server without sessions, events turned off by the operator) is
//! probed with one `display-message` per pane on the long-lived
//! connection, 25 ms at first and backing off to 250 ms while it is quiet,
//! and captured only when the probe shows it moved (history size or cursor
//! changed), or once a second for in-place redraws: an idle pane costs
//! tmux a format expansion per tick, not a capture.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use crate::tmux::events::{StreamEvent, Subscription};
use crate::tmux::{PaneId, Tmux, TmuxCommand, TmuxError};
use crate::tools::context::{ToolContext, ToolError};

/// First and longest probe interval of a polled pane.
const POLL_FIRST: Duration = Duration::from_millis(25);
const POLL_MAX: Duration = Duration::from_millis(250);
/// A polled pane that did not move is still captured this often.
const RECHECK: Duration = Duration::from_secs(1);
/// A wait looks at its cancel flag at least this often.
const CANCEL_SLICE: Duration = Duration::from_millis(50);
/// Re-arms before a capture at most (each takes what printed during the
/// one before).
const REARM_ROUNDS: usize = 3;

/// The error for a pane that went away during the wait.
pub fn closed(pane: PaneId) -> ToolError {
    ToolError::invalid(format!(
        "pane {pane} closed while waiting: list panes again to get current ids"
    ))
}

/// When one pass of [`Waker::wait`] stops waiting for an event: at the
/// next probe (`poll_at`, when panes are polled), at `until`, and no later
/// than [`CANCEL_SLICE`] from `now`, whichever comes first.
fn slice_end(poll_at: Option<Instant>, until: Instant, now: Instant) -> Instant {
    poll_at.unwrap_or(until).min(until).min(now + CANCEL_SLICE)
}

/// Whether re-arm round `round` (from 0) takes what reported meanwhile:
/// every round but the last, as what the last took would never be re-armed
/// (a pane paused for good: its output never wakes a wait again).
fn takes_more_after(round: usize) -> bool {
    round + 1 < REARM_ROUNDS
}

/// The re-arm rounds of one batch of events: each round re-arms the panes
/// taken since the one before, and every round but the last takes what
/// reported meanwhile (`take_more`). A pane that printed again after its
/// own re-arm was paused again by that output: it is re-armed again, or no
/// output of it would ever wake a wait.
fn rearm_rounds(
    first: &BTreeSet<PaneId>,
    mut rearm: impl FnMut(&[PaneId]),
    mut take_more: impl FnMut() -> BTreeSet<PaneId>,
) {
    let mut fresh: Vec<PaneId> = first.iter().copied().collect();
    for round in 0..REARM_ROUNDS {
        if fresh.is_empty() {
            return;
        }
        rearm(&fresh);
        if !takes_more_after(round) {
            return;
        }
        fresh = take_more().into_iter().collect();
    }
}

/// What a run of events said.
#[derive(Debug, Default)]
struct Batch {
    printed: BTreeSet<PaneId>,
    /// Events were lost: every pane must be looked at.
    resync: bool,
    /// A structure event came.
    structure: bool,
}

impl Batch {
    /// Takes `next` and every event waiting on `sub` after it.
    fn take(&mut self, sub: Option<&Subscription>, mut next: Option<StreamEvent>) {
        while let Some(event) = next {
            match event {
                StreamEvent::Printed(pane) => {
                    self.printed.insert(pane);
                }
                StreamEvent::Resync => self.resync = true,
                StreamEvent::Structure(_) => self.structure = true,
                StreamEvent::Output { .. } => {}
            }
            next = sub.and_then(Subscription::try_recv);
        }
    }
}

/// The panes a wait watches and what wakes it.
#[derive(Debug)]
pub struct Waker {
    sub: Option<Subscription>,
    panes: Vec<PaneId>,
    /// Per pane: polled (not covered by the stream).
    polled: Vec<bool>,
    interval: Duration,
    next_poll: Instant,
    last_probe: Vec<String>,
    last_capture: Vec<Option<Instant>>,
    /// A structure event came, or an unknown pane printed (a pane created
    /// since the panes were listed): list them again.
    structure: bool,
    /// Panes known and not watched: their output is no news.
    ignored: BTreeSet<PaneId>,
    /// The owner lists panes again on structure events, and a pane that
    /// closes is dropped rather than an error (watch_panes).
    follows_new_panes: bool,
    /// Panes that closed.
    gone: BTreeSet<PaneId>,
    /// The wait's end: no probe or re-arm waits on tmux past it.
    end: Instant,
}

impl Waker {
    /// Watches `panes` through `sub` where it covers them (all polled
    /// without one), for a wait that ends at `end`.
    pub fn new(sub: Option<Subscription>, panes: Vec<PaneId>, end: Instant) -> Waker {
        let n = panes.len();
        let mut waker = Waker {
            sub,
            panes,
            polled: vec![true; n],
            interval: POLL_FIRST,
            next_poll: Instant::now(),
            last_probe: vec![String::new(); n],
            last_capture: vec![None; n],
            structure: false,
            ignored: BTreeSet::new(),
            follows_new_panes: false,
            gone: BTreeSet::new(),
            end,
        };
        waker.refresh_coverage();
        waker
    }

    /// Panes that are polled.
    pub fn polled(&self) -> usize {
        self.polled.iter().filter(|&&p| p).count()
    }

    fn refresh_coverage(&mut self) {
        let covered = match &self.sub {
            Some(sub) => sub.coverage(),
            None => Default::default(),
        };
        for (i, pane) in self.panes.iter().enumerate() {
            let streamed = covered.live && covered.panes.contains(pane);
            self.polled[i] = !(self.gone.contains(pane) || streamed);
        }
    }

    /// Watches one more pane (index: the next one); re-arms it, since a
    /// pane created under a subscription to every pane was paused on its
    /// first output.
    pub fn add(&mut self, ctx: &ToolContext, pane: PaneId) {
        self.panes.push(pane);
        self.polled.push(true);
        self.last_probe.push(String::new());
        self.last_capture.push(None);
        self.ignored.remove(&pane);
        if let Some(sub) = &self.sub {
            // A failed re-arm shows up as a resync later.
            let _ = sub.rearm(&[pane], ctx.tmux_deadline_by(self.end));
        }
        self.refresh_coverage();
    }

    /// Says when panes may have been created ([`Waker::take_structure`]).
    pub fn follow_new_panes(&mut self) {
        self.follows_new_panes = true;
    }

    /// Panes whose output is no news (listed, not in scope).
    pub fn ignore(&mut self, panes: impl IntoIterator<Item = PaneId>) {
        self.ignored.extend(panes);
    }

    /// Whether the panes should be listed again (and clears the flag).
    pub fn take_structure(&mut self) -> bool {
        std::mem::take(&mut self.structure)
    }

    /// Records that pane `i` was just captured.
    pub fn captured(&mut self, i: usize) {
        if let Some(slot) = self.last_capture.get_mut(i) {
            *slot = Some(Instant::now());
        }
    }

    /// Blocks until some panes may hold new text (their indices) or
    /// `until` (none).
    pub fn wait(
        &mut self,
        ctx: &ToolContext,
        tmux: &Tmux,
        until: Instant,
    ) -> Result<Vec<usize>, ToolError> {
        loop {
            ctx.check_cancelled()?;
            let now = Instant::now();
            if now >= until {
                return Ok(Vec::new());
            }
            let poll_at = (self.polled() > 0).then_some(self.next_poll);
            if poll_at.is_some_and(|t| t <= now) {
                let due = self.probe(ctx, tmux)?;
                if !due.is_empty() {
                    return Ok(due);
                }
                continue;
            }
            let slice = slice_end(poll_at, until, now);
            let event = match &self.sub {
                Some(sub) => sub.recv_deadline(slice),
                None => {
                    std::thread::sleep(slice.saturating_duration_since(now));
                    None
                }
            };
            if let Some(first) = event {
                let due = self.take_events(first, ctx);
                if !due.is_empty() || self.structure {
                    return Ok(due);
                }
            }
        }
    }

    /// `first` and every event already waiting, as pane indices; printed
    /// panes are re-armed before they are returned (and so captured).
    fn take_events(&mut self, first: StreamEvent, ctx: &ToolContext) -> Vec<usize> {
        let mut batch = Batch::default();
        batch.take(self.sub.as_ref(), Some(first));
        self.rearm_printed(ctx, &mut batch);
        let unknown = batch
            .printed
            .iter()
            .any(|p| !self.panes.contains(p) && !self.ignored.contains(p));
        if unknown || batch.structure || batch.resync {
            self.structure |= self.follows_new_panes;
        }
        if batch.resync {
            self.refresh_coverage();
            return (0..self.panes.len()).collect();
        }
        (0..self.panes.len())
            .filter(|&i| batch.printed.contains(&self.panes[i]))
            .collect()
    }

    /// Re-arms the `batch`'s printed panes, and takes what reported
    /// meanwhile: the stream delivers every event tmux sent ahead of a
    /// reply before the reply, so output that came while the re-arm went
    /// to tmux and back is taken now and captured in the same batch (panes
    /// that print together cost one capture, not one each). A few rounds at
    /// most ([`rearm_rounds`]).
    fn rearm_printed(&self, ctx: &ToolContext, batch: &mut Batch) {
        let Some(sub) = &self.sub else { return };
        let first = batch.printed.clone();
        let rearm = |panes: &[PaneId]| {
            // A failed re-arm shows up as a resync later.
            let _ = sub.rearm(panes, ctx.tmux_deadline_by(self.end));
        };
        let take_more = || {
            let mut more = Batch::default();
            more.take(Some(sub), sub.try_recv());
            batch.resync |= more.resync;
            batch.structure |= more.structure;
            batch.printed.extend(more.printed.iter().copied());
            more.printed
        };
        rearm_rounds(&first, rearm, take_more);
    }

    /// Probes the polled panes (one pipelined round trip); returns those
    /// that moved or were not captured for a while.
    fn probe(&mut self, ctx: &ToolContext, tmux: &Tmux) -> Result<Vec<usize>, ToolError> {
        let which: Vec<usize> = (0..self.panes.len()).filter(|&i| self.polled[i]).collect();
        let cmds: Vec<TmuxCommand> = which
            .iter()
            .map(|&i| {
                TmuxCommand::new("display-message")
                    .flag("-p")
                    .target(self.panes[i])
                    .format_arg("#{pane_id} #{history_size} #{cursor_x} #{cursor_y} #{pane_dead}")
            })
            .collect();
        let replies = tmux.run_many(&cmds, ctx.tmux_deadline_by(self.end));
        let mut due = Vec::new();
        let mut moved_any = false;
        for (&i, reply) in which.iter().zip(replies) {
            let pane = self.panes[i];
            let probe = match reply {
                Ok(probe) if !probe.trim().is_empty() => probe,
                // tmux stood still past the round trip's deadline: no news
                // of this pane this time; the wait's own timeout decides.
                // (Before the arm below: a pane that did not answer is not
                // gone, and a watch that took it for gone never polled it
                // again.)
                Err(TmuxError::Timeout) => continue,
                // tmux answers an empty line (or an error) for a target
                // that is gone.
                _ if self.follows_new_panes => {
                    self.gone.insert(pane);
                    self.polled[i] = false;
                    continue;
                }
                Ok(_) => return Err(closed(pane)),
                Err(e) => return Err(ToolError::invalid(format!("{pane} while waiting: {e}"))),
            };
            let moved = probe != self.last_probe[i];
            let stale = self.last_capture[i].is_none_or(|t| t.elapsed() >= RECHECK);
            self.last_probe[i] = probe;
            moved_any |= moved;
            if moved || stale {
                due.push(i);
            }
        }
        // Back off while the panes are quiet; look again soon once one moves.
        self.interval = if moved_any {
            POLL_FIRST
        } else {
            (self.interval * 3 / 2).min(POLL_MAX)
        };
        self.next_poll = Instant::now() + self.interval;
        Ok(due)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::super::tests::Bed;
    use super::*;
    use crate::config::Ceilings;
    use crate::tmux::events::StructureEvent;
    use crate::tmux::{ServerSpec, WindowId};

    fn p(n: u32) -> PaneId {
        PaneId::from_number(n)
    }

    fn in_ms(ms: u64) -> Instant {
        Instant::now() + Duration::from_millis(ms)
    }

    const NONE: [usize; 0] = [];

    #[test]
    fn a_slice_ends_at_the_next_probe_the_end_or_the_next_look_at_cancel() {
        let now = Instant::now();
        let at = |ms: u64| now + Duration::from_millis(ms);
        assert_eq!(slice_end(None, at(10_000), now), now + CANCEL_SLICE);
        assert_eq!(slice_end(Some(at(10)), at(10_000), now), at(10));
        assert_eq!(slice_end(Some(at(10_000)), at(20), now), at(20));
        assert_eq!(slice_end(None, at(20), now), at(20));
    }

    #[test]
    fn every_rearm_round_but_the_last_takes_what_reported_meanwhile() {
        let takes: Vec<bool> = (0..REARM_ROUNDS).map(takes_more_after).collect();
        let (last, before) = takes.split_last().unwrap();
        assert!(!before.is_empty() && before.iter().all(|&t| t), "{takes:?}");
        assert!(!last, "{takes:?}");
    }

    /// Each round re-arms what was taken since the round before, a pane
    /// that printed again after its own re-arm too (paused again by that
    /// output); the last round takes nothing more.
    #[test]
    fn a_pane_that_prints_again_after_its_rearm_is_rearmed_again() {
        let rounds = |first: &[u32], then: Vec<Vec<u32>>| {
            let first: BTreeSet<PaneId> = first.iter().map(|&n| p(n)).collect();
            let mut then = then.into_iter();
            let mut rearmed: Vec<Vec<PaneId>> = Vec::new();
            let mut takes = 0;
            rearm_rounds(
                &first,
                |panes| rearmed.push(panes.to_vec()),
                || {
                    takes += 1;
                    then.next().unwrap_or_default().into_iter().map(p).collect()
                },
            );
            (rearmed, takes)
        };
        // The echo, then `cat`'s copy of the same line after the re-arm.
        assert_eq!(
            rounds(&[1], vec![vec![1]]),
            (vec![vec![p(1)], vec![p(1)]], 2)
        );
        assert_eq!(
            rounds(&[0, 1], vec![vec![2], vec![0, 2], vec![1]]),
            (vec![vec![p(0), p(1)], vec![p(2)], vec![p(0), p(2)]], 2)
        );
        // Nothing more after a round: no more rounds.
        assert_eq!(rounds(&[3], vec![]), (vec![vec![p(3)]], 1));
        assert_eq!(rounds(&[], vec![vec![1]]), (vec![], 0));
    }

    /// The stream's events as a wait takes them (without a subscription,
    /// one event a call, and nothing to re-arm).
    #[test]
    fn events_wake_the_panes_they_name_and_say_new_panes_only_to_a_watch() {
        let ctx = ToolContext::read_only(ServerSpec::named("unused"), Ceilings::default());
        let window = StreamEvent::Structure(StructureEvent::WindowAdd {
            window: WindowId::from_number(1),
            linked: true,
        });
        // wait_for_text: its own panes, nothing else.
        let mut w = Waker::new(None, vec![p(0), p(1)], in_ms(60_000));
        assert_eq!(w.polled(), 2);
        assert_eq!(w.take_events(StreamEvent::Printed(p(1)), &ctx), [1]);
        assert_eq!(w.take_events(StreamEvent::Printed(p(0)), &ctx), [0]);
        assert_eq!(w.take_events(StreamEvent::Printed(p(7)), &ctx), NONE);
        assert_eq!(w.take_events(window.clone(), &ctx), NONE);
        assert!(!w.take_structure());
        assert_eq!(w.take_events(StreamEvent::Resync, &ctx), [0, 1]);
        assert!(!w.take_structure());

        // watch_panes: a pane it does not know printed, or the server's
        // shape changed, or events were lost: list the panes again.
        let mut w = Waker::new(None, vec![p(0), p(1)], in_ms(60_000));
        w.follow_new_panes();
        w.ignore([p(8)]);
        assert_eq!(w.take_events(StreamEvent::Printed(p(1)), &ctx), [1]);
        assert!(!w.take_structure(), "a watched pane printed");
        assert_eq!(w.take_events(StreamEvent::Printed(p(8)), &ctx), NONE);
        assert!(!w.take_structure(), "an ignored pane printed");
        assert_eq!(w.take_events(StreamEvent::Printed(p(7)), &ctx), NONE);
        assert!(w.take_structure(), "an unknown pane printed");
        assert!(!w.take_structure(), "taking the flag clears it");
        assert_eq!(w.take_events(window, &ctx), NONE);
        assert!(w.take_structure(), "a window was added");
        assert_eq!(w.take_events(StreamEvent::Resync, &ctx), [0, 1]);
        assert!(w.take_structure(), "events were lost");

        // A pane added is watched: its output wakes it, and is no news.
        w.ignore([p(9)]);
        w.add(&ctx, p(9));
        assert_eq!(w.polled(), 3);
        assert_eq!(w.take_events(StreamEvent::Printed(p(9)), &ctx), [2]);
        assert!(!w.take_structure(), "an added pane printed");
    }

    #[test]
    fn panes_the_stream_covers_are_not_polled_and_the_others_are() {
        let bed = Bed::new("wake-cover");
        let p1 = bed.pane(&["split-window", "-d", "-t", "main"]);
        let p2 = bed.pane(&["new-session", "-d", "-s", "other"]);
        let panes = vec![p(0), p1, p2];
        assert_eq!(Waker::new(None, panes.clone(), in_ms(60_000)).polled(), 3);
        let sub = bed.subscribe(&panes);
        let cover = sub.coverage();
        assert!(cover.live, "{cover:?}");
        // The stream shows one session: its panes, not the other's.
        let polled: Vec<bool> = panes.iter().map(|p| !cover.panes.contains(p)).collect();
        assert!(
            polled.contains(&true) && polled.contains(&false),
            "{cover:?}"
        );
        let w = Waker::new(Some(sub), panes, in_ms(60_000));
        assert_eq!(w.polled, polled);
        assert_eq!(w.polled(), polled.iter().filter(|&&p| p).count());
    }

    #[test]
    fn a_streamed_pane_wakes_the_wait_each_time_it_prints() {
        let bed = Bed::new("wake-events");
        let p1 = bed.pane(&["split-window", "-d", "-t", "main"]);
        let mut w = Waker::new(
            Some(bed.subscribe(&[p(0), p1])),
            vec![p(0), p1],
            in_ms(60_000),
        );
        assert_eq!(w.polled(), 0);
        bed.settle(&mut w);
        // Nothing printed: no pane, at `until` and not before.
        let until = in_ms(300);
        assert_eq!(w.wait(&bed.ctx, &bed.tmux, until).unwrap(), NONE);
        assert!(Instant::now() >= until);
        // The same pane twice in a row: it was re-armed after its first.
        // `copies`: the lines `x` the pane shows by then (each typed line
        // twice: echo and `cat`'s copy, which may come late).
        for (pane, i, copies) in [(p1, 1, 2), (p(0), 0, 2), (p1, 1, 4), (p1, 1, 6)] {
            bed.type_line(pane, "x");
            // Woken with it, and maybe with another pane whose late copy
            // (or a re-read of all) came in the same batch: that is no
            // second chance, the pane must be in it.
            let until = in_ms(10_000);
            let mut wakes = Vec::new();
            while Instant::now() < until {
                let woken = w.wait(&bed.ctx, &bed.tmux, until).unwrap();
                let done = woken.contains(&i);
                wakes.push(woken);
                if done {
                    break;
                }
            }
            assert!(
                wakes.last().is_some_and(|w| w.contains(&i)),
                "{pane} printed, woken: {wakes:?}"
            );
            // Its last line printed before the next pane's: otherwise a
            // late copy wakes the wait with the next pane.
            bed.shows_times(pane, "x", copies);
            bed.settle(&mut w);
        }
    }

    /// Output that reached tmux before a re-arm did is ahead of its reply:
    /// taken in the same batch (and re-armed too), not left for later.
    #[test]
    fn output_ahead_of_a_rearm_is_taken_in_the_same_batch() {
        let bed = Bed::new("wake-rearm");
        let p1 = bed.pane(&["split-window", "-d", "-t", "main"]);
        let mut w = Waker::new(
            Some(bed.subscribe(&[p(0), p1])),
            vec![p(0), p1],
            in_ms(60_000),
        );
        bed.settle(&mut w);
        bed.type_line(p(0), "x");
        let first = w.sub.as_ref().unwrap().recv_deadline(in_ms(10_000));
        assert_eq!(first, Some(StreamEvent::Printed(p(0))));
        bed.type_line(p1, "y");
        bed.shows(p1, "y");
        let mut batch = Batch {
            printed: BTreeSet::from([p(0)]),
            ..Batch::default()
        };
        w.rearm_printed(&bed.ctx, &mut batch);
        assert_eq!(batch.printed, BTreeSet::from([p(0), p1]));
        assert!(!batch.resync);
        // Both were re-armed: each wakes the wait when it prints again.
        bed.settle(&mut w);
        for (pane, i) in [(p(0), 0), (p1, 1)] {
            bed.type_line(pane, "z");
            assert_eq!(w.wait(&bed.ctx, &bed.tmux, in_ms(10_000)).unwrap(), [i]);
            bed.settle(&mut w);
        }
    }

    #[test]
    fn a_polled_wait_answers_a_due_pane_at_once_and_a_quiet_one_at_until() {
        let bed = Bed::new("wake-poll");
        let mut w = Waker::new(None, vec![p(0)], in_ms(60_000));
        // Never captured: due at the first probe.
        assert_eq!(w.wait(&bed.ctx, &bed.tmux, in_ms(10_000)).unwrap(), [0]);
        w.captured(0);
        let until = in_ms(200);
        assert_eq!(w.wait(&bed.ctx, &bed.tmux, until).unwrap(), NONE);
        assert!(Instant::now() >= until);
    }

    #[test]
    fn a_polled_pane_is_due_when_it_moved_or_went_a_second_uncaptured() {
        let bed = Bed::new("wake-probe");
        let mut w = Waker::new(None, vec![p(0)], in_ms(60_000));
        assert_eq!(w.polled(), 1);
        // Never captured (and moved from nothing): due, probed again soon.
        let before = Instant::now();
        assert_eq!(w.probe(&bed.ctx, &bed.tmux).unwrap(), [0]);
        assert_eq!(w.interval, POLL_FIRST);
        assert!(w.next_poll >= before + POLL_FIRST);
        // Captured and quiet: not due, and probed half as late again each
        // time, up to POLL_MAX.
        let mut intervals = Vec::new();
        for _ in 0..8 {
            w.captured(0);
            let before = Instant::now();
            assert_eq!(w.probe(&bed.ctx, &bed.tmux).unwrap(), NONE);
            assert!(w.next_poll >= before + w.interval);
            intervals.push(w.interval.as_micros());
        }
        let grown = [
            37_500, 56_250, 84_375, 126_562, 189_843, 250_000, 250_000, 250_000,
        ];
        assert_eq!(intervals, grown);
        // It moved: due though just captured, and probed soon again.
        bed.type_line(p(0), "x");
        let until = in_ms(10_000);
        let mut due = Vec::new();
        while due.is_empty() && Instant::now() < until {
            w.captured(0);
            due = w.probe(&bed.ctx, &bed.tmux).unwrap();
        }
        assert_eq!(due, [0]);
        assert_eq!(w.interval, POLL_FIRST);
        bed.shows(p(0), "x");
        // Quiet again, and not captured for over a second: due.
        while !due.is_empty() && Instant::now() < until {
            w.captured(0);
            due = w.probe(&bed.ctx, &bed.tmux).unwrap();
        }
        assert_eq!(due, NONE, "the pane never went quiet");
        w.last_capture[0] = Instant::now().checked_sub(RECHECK * 2);
        assert_eq!(w.probe(&bed.ctx, &bed.tmux).unwrap(), [0]);
    }

    #[test]
    fn a_pane_that_closed_ends_a_wait_and_only_leaves_a_watch() {
        let bed = Bed::new("wake-closed");
        let p1 = bed.pane(&["split-window", "-d", "-t", "main"]);
        let mut wait = Waker::new(None, vec![p(0), p1], in_ms(60_000));
        let mut watch = Waker::new(None, vec![p(0), p1], in_ms(60_000));
        watch.follow_new_panes();
        bed.server
            .run_ok(["kill-pane", "-t", &p1.to_string()])
            .unwrap();
        let err = wait.probe(&bed.ctx, &bed.tmux).unwrap_err();
        assert!(err.message.contains(&p1.to_string()), "{err:?}");
        assert_eq!(watch.probe(&bed.ctx, &bed.tmux).unwrap(), [0]);
        assert_eq!(watch.polled(), 1);
        // Coverage looked at again (panes listed again): still not polled.
        watch.refresh_coverage();
        assert_eq!(watch.polled(), 1);
        watch.captured(0);
        assert_eq!(watch.probe(&bed.ctx, &bed.tmux).unwrap(), NONE);
    }

    /// tmux not answering by the wait's end is no news of the pane: not
    /// an error, and not a pane gone.
    #[test]
    fn a_probe_tmux_does_not_answer_in_time_is_no_news() {
        let bed = Bed::new("wake-late");
        let mut wait = Waker::new(None, vec![p(0)], Instant::now());
        let mut watch = Waker::new(None, vec![p(0)], Instant::now());
        watch.follow_new_panes();
        for w in [&mut wait, &mut watch] {
            assert_eq!(w.probe(&bed.ctx, &bed.tmux).unwrap(), NONE);
            assert_eq!(w.polled(), 1);
        }
    }
}
