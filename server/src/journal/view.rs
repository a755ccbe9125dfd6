//! What the journal's writer last saw of each pane, shared with the
//! command ledger: the pane's steady row scale (epoch and rows trimmed,
//! [`super::track::Row`]) at its last read, the screen lines not journaled
//! yet with their rows, and how far the journal on disk is complete.
//!
//! Must hold: a view is replaced whole after each read; `synced_ms` only
//! grows, and every history line a read before it took is on disk.

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::Mutex;

use super::track::Row;
use crate::tmux::PaneId;

/// One pane at the writer's last read.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PaneView {
    /// The server, as the journal's origins name it.
    pub server: String,
    /// When it was read (ms).
    pub read_ms: i64,
    /// A capture's row 0 on the steady scale at that read.
    pub base: Row,
    /// tmux's history size then.
    pub history_size: u64,
    /// The lines below history (not journaled yet) and their rows.
    pub screen: Vec<(Row, Vec<u8>)>,
}

/// The views of every pane, and the journal's progress.
#[derive(Debug, Default)]
pub struct Views {
    panes: Mutex<HashMap<PaneId, PaneView>>,
    /// Reads up to this time (ms) are on disk.
    synced_ms: AtomicI64,
    flush_now: AtomicBool,
    /// Panes to read at the writer's next wake, printed or not.
    read_soon: Mutex<BTreeSet<PaneId>>,
}

impl Views {
    /// Replaces `pane`'s view.
    pub fn set(&self, pane: PaneId, view: PaneView) {
        crate::sync::lock(&self.panes).insert(pane, view);
    }

    /// Forgets panes that closed.
    pub fn retain(&self, live: impl Fn(&PaneId) -> bool) {
        crate::sync::lock(&self.panes).retain(|p, _| live(p));
    }

    /// `pane`'s last view.
    pub fn get(&self, pane: PaneId) -> Option<PaneView> {
        crate::sync::lock(&self.panes).get(&pane).cloned()
    }

    /// Every line taken by reads up to `ms` is on disk.
    pub fn synced(&self, ms: i64) {
        self.synced_ms.fetch_max(ms, Ordering::SeqCst);
    }

    /// Until when the journal on disk is complete.
    pub fn synced_ms(&self) -> i64 {
        self.synced_ms.load(Ordering::SeqCst)
    }

    /// Asks the writer to flush after its next read (a reader waits).
    pub fn ask_flush(&self) {
        self.flush_now.store(true, Ordering::SeqCst);
    }

    /// Asks the writer to read `pane` at its next wake even if it printed
    /// nothing since its last read: the ledger's question about where a
    /// prompt stands is answered only by a view read after it.
    pub fn ask_read(&self, pane: PaneId) {
        crate::sync::lock(&self.read_soon).insert(pane);
    }

    /// The panes [`Views::ask_read`] asked for (and clears them).
    pub fn take_reads(&self) -> Vec<PaneId> {
        std::mem::take(&mut *crate::sync::lock(&self.read_soon))
            .into_iter()
            .collect()
    }

    /// Whether a flush was asked for (and clears it).
    pub fn take_flush(&self) -> bool {
        self.flush_now.swap(false, Ordering::SeqCst)
    }
}
