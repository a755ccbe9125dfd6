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
    /// Output events taken.
    pub wakeups: u32,
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
            wakeups: 0,
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
            let slice = poll_at.unwrap_or(until).min(until).min(now + CANCEL_SLICE);
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
        let mut printed = BTreeSet::new();
        let mut resync = false;
        self.drain(Some(first), &mut printed, &mut resync);
        self.rearm_printed(ctx, &mut printed, &mut resync);
        if printed
            .iter()
            .any(|p| !self.panes.contains(p) && !self.ignored.contains(p))
        {
            self.structure |= self.follows_new_panes;
        }
        if resync {
            self.structure |= self.follows_new_panes;
            self.refresh_coverage();
            return (0..self.panes.len()).collect();
        }
        (0..self.panes.len())
            .filter(|&i| printed.contains(&self.panes[i]))
            .collect()
    }

    /// Takes `next` and every event waiting after it.
    fn drain(
        &mut self,
        mut next: Option<StreamEvent>,
        printed: &mut BTreeSet<PaneId>,
        resync: &mut bool,
    ) {
        while let Some(event) = next {
            match event {
                StreamEvent::Printed(pane) => {
                    self.wakeups += 1;
                    printed.insert(pane);
                }
                StreamEvent::Resync => *resync = true,
                StreamEvent::Structure(_) => self.structure |= self.follows_new_panes,
                StreamEvent::Output { .. } => {}
            }
            next = self.sub.as_ref().and_then(Subscription::try_recv);
        }
    }

    /// Re-arms the `printed` panes, and takes what reported meanwhile: the
    /// stream delivers every event tmux sent ahead of a reply before the
    /// reply, so output that came while the re-arm went to tmux and back
    /// is taken now and captured in the same batch (panes that print
    /// together cost one capture, not one each). A few rounds at most;
    /// every pane taken is re-armed.
    fn rearm_printed(
        &mut self,
        ctx: &ToolContext,
        printed: &mut BTreeSet<PaneId>,
        resync: &mut bool,
    ) {
        let mut armed: BTreeSet<PaneId> = BTreeSet::new();
        for round in 0..REARM_ROUNDS {
            let Some(sub) = &self.sub else { return };
            let panes: Vec<PaneId> = printed.difference(&armed).copied().collect();
            if panes.is_empty() {
                return;
            }
            // A failed re-arm shows up as a resync later.
            let _ = sub.rearm(&panes, ctx.tmux_deadline_by(self.end));
            armed.extend(panes);
            if round + 1 < REARM_ROUNDS {
                let next = sub.try_recv();
                self.drain(next, printed, resync);
            }
        }
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
