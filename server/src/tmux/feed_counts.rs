//! What each pane printed, counted from the session feeds' output
//! ([`super::feed`]), for a reader that paces itself by it (the journal's
//! writer) without a byte stream of its own.
//!
//! Why: every `%output` tmux sends a control client costs it about as much
//! as the printing itself (BENCHMARKS.md, "The journal"); a daemon whose
//! command ledger already has a feed per session counts from those bytes
//! instead of asking its own control client for every pane's output too.
//!
//! The feeds count on their reader threads, before their bytes go on to
//! their own reader, so a pane's count is never behind the bytes the
//! ledger saw. Must hold: between two counts of a pane taken while its
//! session's feed counted throughout, the count is never below what the
//! pane printed ([`Printed::rows_since`]); a feed that starts or stops
//! counting, or output tmux dropped (`%pause`), makes counts taken across
//! it unknown (`lost` differs), never small. A pane in a window linked
//! into two followed sessions is counted by both feeds: more rows than it
//! printed, which only makes it read sooner.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};

use crossbeam_channel::{Receiver, Sender};

use super::events::Printed;
use super::{Inventory, PaneId, SessionId};
use crate::sync::lock;

/// The counts the feeds of one server share with their reader.
#[derive(Debug)]
pub struct FeedCounts {
    state: std::sync::Mutex<State>,
    /// A message waits here once a pane printed since the reader last
    /// took the panes that printed ([`FeedCounts::take_printed`]).
    wake_tx: Sender<()>,
    wake_rx: Receiver<()>,
    /// Times the reader took what printed ([`FeedCounts::takes`]).
    takes: AtomicU64,
}

#[derive(Debug, Default)]
struct State {
    panes: HashMap<PaneId, Printed>,
    /// Panes that printed since the reader last took them.
    printed: HashSet<PaneId>,
    /// Feeds counting, by session (two while one replaces another).
    counting: HashMap<SessionId, u32>,
    /// Times a feed started or stopped counting: added to every count's
    /// `lost`, so no count taken before is compared with one after.
    changes: u64,
    /// `changes` when the reader last took what printed.
    changes_taken: u64,
}

impl Default for FeedCounts {
    fn default() -> Self {
        let (wake_tx, wake_rx) = crossbeam_channel::bounded(1);
        FeedCounts {
            state: std::sync::Mutex::default(),
            wake_tx,
            wake_rx,
            takes: AtomicU64::new(0),
        }
    }
}

impl FeedCounts {
    /// A chunk of `pane`'s output (unescaped), from a feed's reader.
    pub(crate) fn output(&self, pane: PaneId, data: &[u8]) {
        let mut st = lock(&self.state);
        st.panes.entry(pane).or_default().add(data);
        if st.printed.insert(pane) {
            drop(st);
            // Full: the reader is woken already.
            let _ = self.wake_tx.try_send(());
        }
    }

    /// tmux dropped `pane`'s output for a feed (`%pause`): its rows since
    /// any earlier count are unknown.
    pub(crate) fn lost(&self, pane: PaneId) {
        let mut st = lock(&self.state);
        st.panes.entry(pane).or_default().lose();
        st.printed.insert(pane);
        drop(st);
        let _ = self.wake_tx.try_send(());
    }

    /// A feed of `session` counts from now on: tmux answered a command on
    /// it, so every byte a pane of the session prints after this is sent
    /// to it.
    pub fn started(&self, session: SessionId) {
        let mut st = lock(&self.state);
        *st.counting.entry(session).or_default() += 1;
        st.changes += 1;
        drop(st);
        let _ = self.wake_tx.try_send(());
    }

    /// A feed of `session` that counted stopped (once per feed).
    pub(crate) fn stopped(&self, session: SessionId) {
        let mut st = lock(&self.state);
        if let Some(n) = st.counting.get_mut(&session) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                st.counting.remove(&session);
            }
        }
        st.changes += 1;
        drop(st);
        let _ = self.wake_tx.try_send(());
    }

    /// Has a message once a pane printed (or a feed started or stopped)
    /// since the last [`FeedCounts::take_printed`]: wait on it beside
    /// other channels.
    pub fn wake(&self) -> &Receiver<()> {
        &self.wake_rx
    }

    /// The panes that printed since the last call, and whether a feed
    /// started or stopped meanwhile (then any pane may have printed
    /// unseen: a pane whose feed stopped is no longer counted).
    pub fn take_printed(&self) -> (Vec<PaneId>, bool) {
        self.takes.fetch_add(1, Ordering::Relaxed);
        while self.wake_rx.try_recv().is_ok() {}
        let mut st = lock(&self.state);
        let changed = st.changes != st.changes_taken;
        st.changes_taken = st.changes;
        (st.printed.drain().collect(), changed)
    }

    /// How many times the reader took what printed: how often output woke
    /// it (a reader woken by every byte shows here).
    pub fn takes(&self) -> u64 {
        self.takes.load(Ordering::Relaxed)
    }

    /// What each of `panes` printed so far, counted at one moment; compare
    /// two counts with [`Printed::rows_since`].
    pub fn printed_many(&self, panes: &[PaneId]) -> Vec<(PaneId, Printed)> {
        let st = lock(&self.state);
        panes
            .iter()
            .map(|pane| {
                let mut p = st.panes.get(pane).copied().unwrap_or_default();
                p.lost = p.lost.wrapping_add(st.changes);
                (*pane, p)
            })
            .collect()
    }

    /// The panes of `inventory` a feed counts (one of their sessions has a
    /// feed counting); the others must be polled.
    pub fn covered(&self, inventory: &Inventory) -> BTreeSet<PaneId> {
        let st = lock(&self.state);
        inventory
            .panes
            .iter()
            .filter(|p| {
                st.counting.contains_key(&p.session_id)
                    || p.placements
                        .iter()
                        .any(|at| st.counting.contains_key(&at.session_id))
            })
            .map(|p| p.pane_id)
            .collect()
    }

    /// Forgets the counts of panes not `live` (closed).
    pub fn forget(&self, live: impl Fn(&PaneId) -> bool) {
        let mut st = lock(&self.state);
        st.panes.retain(|p, _| live(p));
        st.printed.retain(|p| live(p));
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    fn p(n: u32) -> PaneId {
        PaneId::from_number(n)
    }

    #[test]
    fn counts_compare_only_while_the_same_feeds_count() {
        let counts = FeedCounts::default();
        let s = SessionId::from_number(1);
        counts.output(p(1), b"before the feed counted\r\n");
        let before = counts.printed_many(&[p(1)])[0].1;
        counts.started(s);
        let start = counts.printed_many(&[p(1)])[0].1;
        assert_eq!(start.rows_since(&before, 80, 24), None);
        counts.output(p(1), b"a\r\nb\r\n");
        let now = counts.printed_many(&[p(1)])[0].1;
        assert_eq!(now.rows_since(&start, 80, 24), Some(3));
        // Another session's feed stops: unknown again (which panes it
        // counted is not known here).
        counts.started(SessionId::from_number(2));
        counts.stopped(SessionId::from_number(2));
        let later = counts.printed_many(&[p(1)])[0].1;
        assert_eq!(later.rows_since(&now, 80, 24), None);
        // Output dropped by tmux: unknown.
        counts.lost(p(1));
        let after = counts.printed_many(&[p(1)])[0].1;
        assert_eq!(after.rows_since(&later, 80, 24), None);
    }

    #[test]
    fn the_reader_is_woken_once_and_takes_each_pane_that_printed_once() {
        let counts = FeedCounts::default();
        assert_eq!(counts.take_printed(), (vec![], false));
        counts.output(p(1), b"x");
        counts.output(p(1), b"y");
        counts.output(p(2), b"z");
        assert!(counts.wake().try_recv().is_ok());
        assert!(counts.wake().try_recv().is_err());
        let (mut printed, changed) = counts.take_printed();
        printed.sort();
        assert_eq!((printed, changed), (vec![p(1), p(2)], false));
        assert_eq!(counts.take_printed(), (vec![], false));
        counts.output(p(2), b"again");
        assert!(counts.wake().try_recv().is_ok());
        assert_eq!(counts.take_printed(), (vec![p(2)], false));
        // A feed that stops wakes the reader: its panes are not counted.
        counts.stopped(SessionId::from_number(1));
        assert!(counts.wake().try_recv().is_ok());
        assert_eq!(counts.take_printed(), (vec![], true));
        assert_eq!(counts.take_printed(), (vec![], false));
    }

    #[test]
    fn a_session_is_covered_while_one_of_its_feeds_counts() {
        let counts = FeedCounts::default();
        let s = SessionId::from_number(4);
        counts.started(s);
        counts.started(s);
        counts.stopped(s);
        assert!(lock(&counts.state).counting.contains_key(&s));
        counts.stopped(s);
        assert!(lock(&counts.state).counting.is_empty());
        // A stop of a feed that never counted changes nothing below zero.
        counts.stopped(s);
        assert!(lock(&counts.state).counting.is_empty());
    }
}
