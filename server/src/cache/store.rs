//! The entries kept and their eviction (pure).

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::freshness::Fingerprint;
use super::text::PaneText;
use crate::tmux::PaneId;

/// Counters of what the cache did, for the bench and tests.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// Panes served without asking tmux for text.
    pub reused: u64,
    /// Panes served from a partial capture spliced onto stored lines.
    pub delta: u64,
    /// Panes captured whole (no entry, or validation failed).
    pub full: u64,
    /// Delta captures whose validation failed (then captured whole).
    pub delta_rejected: u64,
    /// Entries evicted to stay under the ceiling.
    pub evicted: u64,
}

#[derive(Debug, Default)]
pub(super) struct State {
    pub(super) entries: HashMap<EntryKey, Entry>,
    pub(super) bytes: usize,
    pub(super) tick: u64,
    pub(super) stats: CacheStats,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) struct EntryKey {
    pub(super) socket: PathBuf,
    pub(super) pane: PaneId,
    pub(super) join_wrapped: bool,
    pub(super) escapes: bool,
}

#[derive(Debug, Clone)]
pub(super) struct Entry {
    pub(super) print: Fingerprint,
    /// Wall-clock second in which the stored capture was requested.
    pub(super) captured_at: i64,
    pub(super) text: Arc<PaneText>,
    pub(super) last_used: u64,
}

impl State {
    /// Drops the entries of `socket`'s panes that are not in `live` (the
    /// server's panes, just listed): tmux never hands a pane id out twice
    /// while it runs, so a closed pane's text would only sit here until the
    /// byte ceiling pushed it out, and a server whose panes come and go
    /// would grow panescan to that ceiling.
    pub(super) fn forget_gone(&mut self, socket: &Path, live: &HashSet<PaneId>) {
        self.drop_where(|key| key.socket == socket && !live.contains(&key.pane));
    }

    /// Drops every entry (of any capture options) of `panes` of `socket`.
    pub(super) fn forget(&mut self, socket: &Path, panes: &[PaneId]) {
        self.drop_where(|key| key.socket == socket && panes.contains(&key.pane));
    }

    /// Drops the entries whose key `gone` names, and their bytes.
    fn drop_where(&mut self, gone: impl Fn(&EntryKey) -> bool) {
        let mut freed = 0;
        self.entries.retain(|key, entry| {
            let keep = !gone(key);
            if !keep {
                freed += entry.text.memory();
            }
            keep
        });
        self.bytes -= freed;
    }

    /// Stores `entry` under `key` (replacing any entry there), then evicts
    /// the least recently used entries until at most `max_bytes` are held.
    /// An entry larger than the ceiling alone is not stored.
    pub(super) fn insert(&mut self, key: EntryKey, mut entry: Entry, max_bytes: usize) {
        let memory = entry.text.memory();
        if let Some(old) = self.entries.remove(&key) {
            self.bytes -= old.text.memory();
        }
        if memory > max_bytes {
            return;
        }
        self.tick += 1;
        entry.last_used = self.tick;
        self.bytes += memory;
        self.entries.insert(key, entry);
        while self.bytes > max_bytes {
            let Some(oldest) = self
                .entries
                .iter()
                .min_by_key(|(_, e)| e.last_used)
                .map(|(k, _)| k.clone())
            else {
                break;
            };
            if let Some(e) = self.entries.remove(&oldest) {
                self.bytes -= e.text.memory();
                self.stats.evicted += 1;
            }
        }
    }
}
