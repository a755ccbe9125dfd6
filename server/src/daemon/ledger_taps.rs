//! The command ledger's pipes (`daemon --journal-taps`): each pane's
//! output through a `pipe-pane` of its own ([`Tap::open_into`]) instead of
//! its session's feed. tmux formats every byte it sends a control client;
//! a pipe costs it a write (BENCHMARKS.md, "What tmux would spend with
//! pipes").
//!
//! A pane moves over in three steps: tapped, only where no pipe is open
//! (a user's pipe is left alone, and the pane stays on its feed); once
//! the pipe connects, a question on its feed (answered after every byte
//! tmux queued for the feed before it, [`SYNC_WITHIN`] at most), then its
//! output paused and turned off on the feeds that show it ([`turn_off`]:
//! paused first, since tmux before 3.7 reads freed memory, and may crash,
//! writing output it queued for a pane turned off with it queued). If the
//! feed answered, the follower's queue gets a [`FeedEvent::TapLive`]
//! behind what it held: the feed's bytes before that mark, the pipe's
//! after ([`Switch::Ordered`]); if not, the pipe is read at once and what
//! the feed still held is lost ([`Switch::Unordered`]). A pipe that ends
//! (the pane closed, a user's `pipe-pane` closed or replaced ours) turns
//! the pane back on on those feeds, and the next listing taps it again
//! where no pipe is open.
//!
//! Must hold: a tapped pane's bytes are counted for the journal from the
//! moment its pipe connects to its end, and the end makes its count
//! unknown, so a count is never small; the follower reads a pane from one
//! source at a time. What the switch may do: bytes printed during it (one
//! round trip) come from the feed, and the pipe's copy of them is dropped
//! as far as it came by then: a byte the pipe brings late is read twice,
//! one printed just after the answer and brought early is dropped. Panes
//! are switched when first listed, usually at a prompt.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::Sender;

use crate::tmux::feed::{FeedEvent, SessionFeed};
use crate::tmux::feed_counts::FeedCounts;
use crate::tmux::{PaneId, SessionId, Tmux, TmuxCommand};
use crate::tools::run::tap::{Chunk, Pipe, Tap};

/// A pipe not connected by then is closed, and tried again later.
const CONNECT_WITHIN: Duration = Duration::from_secs(5);
/// A pane that could not be tapped is tried again after this.
const RETRY: Duration = Duration::from_secs(30);
/// A switch waits this long at most for the feed to bring what it queued
/// before the pipe connected.
const SYNC_WITHIN: Duration = Duration::from_secs(1);
/// A feed that did not answer within [`SYNC_WITHIN`] is not waited for
/// again for this long.
const BEHIND_FOR: Duration = Duration::from_secs(10);

/// How a pane's switch from its feed to its pipe went.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Switch {
    /// The feed answered in time: every byte it queued before is read
    /// from it, the pipe's bytes after the reader's mark.
    Ordered,
    /// The feed was too far behind to wait for: the pipe's bytes are read
    /// from now on, and what the feed still held of the pane is lost.
    Unordered,
    /// Its output could not be turned off on the feed: the pipe is
    /// closed, the pane stays on its feed (tapped again later).
    Failed,
}

/// One tapped pane.
struct Tapped {
    pipe: Pipe,
    /// A session showing it when it was tapped.
    session: SessionId,
    opened: Instant,
    /// Its bytes are read from the pipe (the switch is done).
    live: bool,
    /// The feeds its output is turned off on.
    off_in: Vec<SessionId>,
}

/// Every pane's pipe.
pub(super) struct Taps {
    pipes: HashMap<PaneId, Tapped>,
    /// Panes that could not be tapped, and when to try again.
    refused: HashMap<PaneId, Instant>,
    /// Feeds too far behind to wait for, until when.
    behind: HashMap<SessionId, Instant>,
    tx: Sender<FeedEvent>,
    counts: Option<Arc<FeedCounts>>,
}

impl Taps {
    /// Taps whose bytes go to `tx`, counted into `counts` if given.
    pub(super) fn new(tx: Sender<FeedEvent>, counts: Option<Arc<FeedCounts>>) -> Taps {
        Taps {
            pipes: HashMap::new(),
            refused: HashMap::new(),
            behind: HashMap::new(),
            tx,
            counts,
        }
    }

    /// Whether `pane`'s bytes come from its pipe (else from its feed).
    pub(super) fn live(&self, pane: PaneId) -> bool {
        self.pipes.get(&pane).is_some_and(|t| t.live)
    }

    /// A session that showed `pane` when it was tapped.
    pub(super) fn session(&self, pane: PaneId) -> Option<SessionId> {
        self.pipes.get(&pane).map(|t| t.session)
    }

    /// The listed panes (each with a session showing it, and whether it
    /// pipes): taps those not tapped, where no pipe is open and a feed
    /// shows them; turns a live pane off on a feed newly showing it
    /// (moved or linked); closes pipes that never connected.
    pub(super) fn follow(
        &mut self,
        tmux: &Tmux,
        listed: &[(PaneId, SessionId, bool)],
        feeds: &HashMap<SessionId, SessionFeed>,
        deadline: Instant,
    ) {
        self.expire(tmux, deadline);
        let now = Instant::now();
        self.refused.retain(|_, at| *at > now);
        for &(pane, session, piping) in listed {
            let Some(feed) = feeds.get(&session) else {
                continue;
            };
            match self.pipes.get_mut(&pane) {
                Some(t) if t.live && !t.off_in.contains(&session) => {
                    if turn_off(tmux, feed, pane, deadline) {
                        t.off_in.push(session);
                    }
                }
                Some(_) => {}
                None if piping || self.refused.contains_key(&pane) => {}
                None => self.open(tmux, pane, session, deadline),
            }
        }
    }

    fn open(&mut self, tmux: &Tmux, pane: PaneId, session: SessionId, deadline: Instant) {
        let sink = sink(pane, self.tx.clone(), self.counts.clone());
        match Tap::open_into(tmux, pane, deadline, sink) {
            Some(pipe) => {
                self.pipes.insert(
                    pane,
                    Tapped {
                        pipe,
                        session,
                        opened: Instant::now(),
                        live: false,
                        off_in: Vec::new(),
                    },
                );
            }
            None => {
                self.refused.insert(pane, Instant::now() + RETRY);
            }
        }
    }

    /// `pane`'s pipe connected: its output is turned off on `session`'s
    /// feed, after the feed answered a question (then every byte it
    /// queued before is read) if it can within [`SYNC_WITHIN`].
    pub(super) fn connected(
        &mut self,
        tmux: &Tmux,
        pane: PaneId,
        session: SessionId,
        feeds: &HashMap<SessionId, SessionFeed>,
        deadline: Instant,
    ) -> Switch {
        let (Some(t), Some(feed)) = (self.pipes.get_mut(&pane), feeds.get(&session)) else {
            return Switch::Failed;
        };
        // A feed that was too far behind a moment ago is not waited for
        // again: every pane of a busy session would cost the wait.
        let behind = self
            .behind
            .get(&session)
            .is_some_and(|until| *until > Instant::now());
        let sync = TmuxCommand::new("display-message").flag("-p").arg("sync");
        let ordered = !behind && feed.run(&sync, Instant::now() + SYNC_WITHIN).is_ok();
        if !ordered && !behind {
            self.behind.insert(session, Instant::now() + BEHIND_FOR);
        }
        if turn_off(tmux, feed, pane, deadline) {
            t.off_in.push(session);
            if ordered {
                return Switch::Ordered;
            }
            t.live = true;
            return Switch::Unordered;
        }
        if let Some(t) = self.pipes.remove(&pane) {
            t.pipe.close(tmux, deadline);
        }
        self.refused.insert(pane, Instant::now() + RETRY);
        Switch::Failed
    }

    /// The switch is done: `pane`'s bytes come from its pipe.
    pub(super) fn set_live(&mut self, pane: PaneId) {
        if let Some(t) = self.pipes.get_mut(&pane) {
            t.live = true;
        }
    }

    /// `pane`'s pipe ended: forgotten, its output turned on again on the
    /// feeds it was off on. Whether its bytes came from the pipe (then
    /// some may have been missed).
    pub(super) fn ended(
        &mut self,
        tmux: &Tmux,
        pane: PaneId,
        feeds: &HashMap<SessionId, SessionFeed>,
        deadline: Instant,
    ) -> bool {
        let Some(t) = self.pipes.remove(&pane) else {
            return false;
        };
        for session in &t.off_in {
            if let Some(feed) = feeds.get(session) {
                turn_on(tmux, feed, pane, deadline);
            }
        }
        t.pipe.let_go();
        t.live
    }

    /// Pipes not connected within [`CONNECT_WITHIN`]: closed, tried again
    /// after [`RETRY`].
    fn expire(&mut self, tmux: &Tmux, deadline: Instant) {
        let stale: Vec<PaneId> = self
            .pipes
            .iter()
            .filter(|(_, t)| !t.live && t.off_in.is_empty() && t.opened.elapsed() > CONNECT_WITHIN)
            .map(|(p, _)| *p)
            .collect();
        for pane in stale {
            if let Some(t) = self.pipes.remove(&pane) {
                t.pipe.close(tmux, deadline);
            }
            self.refused.insert(pane, Instant::now() + RETRY);
        }
    }

    /// Closes every pipe still ours, in one round trip (stopping).
    pub(super) fn close_all(&mut self, tmux: &Tmux, deadline: Instant) {
        let pipes: Vec<Pipe> = self.pipes.drain().map(|(_, t)| t.pipe).collect();
        let closing: Vec<TmuxCommand> = pipes.iter().filter_map(Pipe::closing).collect();
        if !closing.is_empty() {
            let _ = tmux.run_many(&closing, deadline);
        }
        for pipe in pipes {
            pipe.let_go();
        }
    }
}

/// Turns `pane`'s output off on `feed`: paused first, which drops what
/// tmux queued of it for the feed, then off. Off alone keeps that queue
/// while tmux stops keeping the bytes it points into: tmux 3.3a to 3.6
/// then reads freed memory when it writes the queue, and crashed here
/// under load (a segfault in `control_append_data`; fixed in tmux 3.7,
/// GitHub issue 5054). Asked on the server's connection, naming the
/// feed's client, so that a feed far behind does not hold the answer.
/// The pause's `%pause` makes the pane's count unknown (`tmux/feed.rs`):
/// the journal reads it at once.
fn turn_off(tmux: &Tmux, feed: &SessionFeed, pane: PaneId, deadline: Instant) -> bool {
    let ask = |state| tmux.run(&pane_output(feed, pane, state), deadline).is_ok();
    ask("pause") && ask("off")
}

/// Turns `pane`'s output on again on `feed`, and lets the pause go.
fn turn_on(tmux: &Tmux, feed: &SessionFeed, pane: PaneId, deadline: Instant) {
    for state in ["on", "continue"] {
        let _ = tmux.run(&pane_output(feed, pane, state), deadline);
    }
}

/// `refresh-client -t FEED -A '%N:STATE'`.
fn pane_output(feed: &SessionFeed, pane: PaneId, state: &str) -> TmuxCommand {
    TmuxCommand::new("refresh-client")
        .option("-t", &feed.client_name())
        .option("-A", &format!("{pane}:{state}"))
}

/// Where a pipe's reader puts what it reads: each chunk counted (for the
/// journal's pacing) before it goes to the follower; the end makes the
/// pane's count unknown.
fn sink(
    pane: PaneId,
    tx: Sender<FeedEvent>,
    counts: Option<Arc<FeedCounts>>,
) -> impl FnMut(Chunk) -> bool + Send + 'static {
    move |chunk| match chunk {
        Chunk::Connected => tx.send(FeedEvent::TapConnected { pane }).is_ok(),
        Chunk::Data(data) => {
            if let Some(counts) = &counts {
                counts.output(pane, &data);
            }
            tx.send(FeedEvent::Tapped { pane, data }).is_ok()
        }
        Chunk::Ended => {
            if let Some(counts) = &counts {
                counts.lost(pane);
            }
            let _ = tx.send(FeedEvent::TapEnded { pane });
            false
        }
    }
}
