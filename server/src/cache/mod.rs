//! The pane cache: repeated searches fetch only what changed.
//!
//! A wrong answer is never acceptable, a slower one is: every doubt ends in
//! a full fetch of that pane, which is what the cache-off path does. Per
//! pane, against the caller's listing (its fingerprint: process, history
//! size and limit, size, cursor, flags; and its window's last activity):
//!
//! 1. **Reuse** — the fingerprint is the stored one and nothing was printed
//!    since the stored capture was requested: no tmux work at all.
//! 2. **Delta** — same server, process, size and history limit, but output
//!    happened: capture from [`RACE_ROWS`] above the stored anchor (at least
//!    [`ANCHOR_ROWS`]) to the bottom, and the oldest stored lines again; both
//!    must come back byte for byte at the rows they were stored at, and the
//!    match must be the only one (repeated rows and trims at the history
//!    limit prove nothing) ([`delta`]).
//! 3. **Full** — anything else: the caller's own request, passed to tmux
//!    unchanged, and its reply stored.
//!
//! A served capture is the bytes and line numbers a cold capture would have
//! returned; a capture the transport could not number is never stored.
//! Memory is bounded in bytes ([`DEFAULT_MAX_BYTES`]), the panes searched
//! least recently evicted first.
//!
//! Every check in full, and what no check short of a full fetch can see:
//! NOTES.md.

mod delta;
mod freshness;
mod store;
#[cfg(test)]
mod testing;
mod text;
mod worker;

use std::collections::HashMap;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use crossbeam_channel::Receiver;

use crate::tmux::capture::Spare;
use crate::tmux::spans::Span;
use crate::tmux::{
    CaptureOptions, CaptureReply, CaptureRequest, Inventory, PaneId, Tmux, TmuxError,
};

use delta::{delta_plan, Decision};
use freshness::{
    fingerprints, fingerprints_listed, now_secs, read_activity, Fingerprint, ServerStamp,
};
pub use store::CacheStats;
use store::{Entry, EntryKey, State};
use text::PaneText;
use worker::{Job, Worker};

/// Default memory ceiling.
pub const DEFAULT_MAX_BYTES: usize = 256 << 20;

/// Rows of history an anchor covers at least (fewer when the pane has
/// fewer stored history rows). A cursor's anchor may grow longer
/// (`tmux::rows`): it keeps no text, where the cache checks the delta
/// byte for byte and its oldest stored rows again.
pub const ANCHOR_ROWS: u64 = 32;

/// Rows a delta fetches above its anchor, so that a pane printing up to
/// this many rows between the inventory and the capture still validates.
pub const RACE_ROWS: i64 = 64;

/// What a caller asks of the cache: [`Tmux::capture`]'s arguments and a
/// sweep client it may have started ahead.
struct Batch {
    requests: Vec<CaptureRequest>,
    options: CaptureOptions,
    deadline: Instant,
    cancel: Arc<AtomicBool>,
    spare: Option<Spare>,
}

/// Per-pane text kept between searches, bounded in memory.
#[derive(Debug)]
pub struct PaneCache {
    max_bytes: usize,
    state: Mutex<State>,
}

impl PaneCache {
    /// A cache holding at most `max_bytes` of pane text and line tables.
    pub fn new(max_bytes: usize) -> PaneCache {
        PaneCache {
            max_bytes,
            state: Mutex::new(State::default()),
        }
    }

    /// The memory ceiling.
    pub fn max_bytes(&self) -> usize {
        self.max_bytes
    }

    /// Bytes held now.
    pub fn memory_bytes(&self) -> usize {
        self.state.lock().map_or(0, |s| s.bytes)
    }

    /// Panes (per capture option set) held now.
    pub fn len(&self) -> usize {
        self.state.lock().map_or(0, |s| s.entries.len())
    }

    /// Whether nothing is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// What the cache did so far.
    pub fn stats(&self) -> CacheStats {
        self.state
            .lock()
            .map_or_else(|_| CacheStats::default(), |s| s.stats)
    }

    /// Forgets everything.
    pub fn clear(&self) {
        if let Ok(mut s) = self.state.lock() {
            s.entries.clear();
            s.bytes = 0;
        }
    }

    /// Forgets what is kept of `panes` of the server at `socket`: a caller
    /// that knows their history was trimmed since (every stored row
    /// moved) spares the delta that would be refused after its captures,
    /// and the pane's capture again by a client of its own.
    pub fn forget(&self, socket: &std::path::Path, panes: &[PaneId]) {
        if panes.is_empty() {
            return;
        }
        if let Ok(mut state) = self.state.lock() {
            state.forget(socket, panes);
        }
    }

    /// [`Tmux::capture`] through the cache: the same replies, in the same
    /// order, with the same text a cold capture would return; panes that
    /// did not change cost no capture, panes that printed cost only their
    /// new lines.
    pub fn capture(
        self: &Arc<Self>,
        tmux: &Tmux,
        inventory: &Inventory,
        requests: Vec<CaptureRequest>,
        options: CaptureOptions,
        deadline: Instant,
        cancel: Arc<AtomicBool>,
    ) -> Receiver<CaptureReply> {
        let panes: Vec<PaneId> = requests.iter().map(|r| r.pane).collect();
        let prints = read_activity(tmux, &panes, deadline).map(|a| fingerprints(inventory, &a));
        self.forget_closed(tmux, inventory);
        let batch = Batch {
            requests,
            options,
            deadline,
            cancel,
            spare: None,
        };
        self.capture_after(tmux, prints, batch)
    }

    /// [`PaneCache::capture`] for a caller that listed the panes with
    /// [`Fields::SearchWithFingerprint`](crate::tmux::Fields::SearchWithFingerprint)
    /// (every pane's fingerprint and window activity, in one listing) and
    /// read the server's `#{pid} #{start_time}` in the same round trip:
    /// no further read before the decisions. A stamp that does not parse
    /// fetches every pane. The panes it fetches go to `spare` when it is
    /// given and they are few ([`Tmux::capture_with_spare`]).
    // Tmux::capture's arguments plus what was read and started before it.
    #[allow(clippy::too_many_arguments)]
    pub fn capture_listed(
        self: &Arc<Self>,
        tmux: &Tmux,
        inventory: &Inventory,
        server: &str,
        requests: Vec<CaptureRequest>,
        options: CaptureOptions,
        deadline: Instant,
        cancel: Arc<AtomicBool>,
        spare: Option<Spare>,
    ) -> Receiver<CaptureReply> {
        let prints = ServerStamp::parse(server)
            .map(|stamp| fingerprints_listed(inventory, stamp))
            .ok_or_else(|| TmuxError::ConnectionLost("no server stamp".into()));
        self.forget_closed(tmux, inventory);
        let batch = Batch {
            requests,
            options,
            deadline,
            cancel,
            spare,
        };
        self.capture_after(tmux, prints, batch)
    }

    /// Drops what is kept of the server's panes that the inventory no
    /// longer lists (closed panes), so churn cannot grow the cache.
    fn forget_closed(&self, tmux: &Tmux, inventory: &Inventory) {
        if inventory.panes.is_empty() {
            return;
        }
        let live = inventory.panes.iter().map(|p| p.pane_id).collect();
        if let Ok(mut state) = self.state.lock() {
            state.forget_gone(tmux.socket_path(), &live);
        }
    }

    /// Decides every request (reuse, delta or full), starts the captures
    /// the decisions need and the worker that answers in request order.
    fn capture_after(
        self: &Arc<Self>,
        tmux: &Tmux,
        prints: Result<HashMap<PaneId, (i64, Fingerprint)>, TmuxError>,
        batch: Batch,
    ) -> Receiver<CaptureReply> {
        let Batch {
            requests,
            options,
            deadline,
            cancel,
            spare,
        } = batch;
        let deciding = Span::new("cache.decide");
        let socket = tmux.socket_path().to_path_buf();
        let decisions = match &prints {
            Ok(prints) => self.decide_all(&socket, &requests, options, prints),
            Err(_) => requests.iter().map(|_| Decision::Full).collect(),
        };
        let mut jobs = Vec::with_capacity(requests.len());
        let mut fetch = Vec::new();
        for (request, decision) in requests.iter().zip(decisions) {
            match decision {
                Decision::Reuse(text) => jobs.push(Job::Serve(text)),
                Decision::Full => {
                    fetch.push(request.clone());
                    jobs.push(Job::Fetch {
                        fetches: 1,
                        delta: None,
                    });
                }
                Decision::Delta(plan) => {
                    let mut fetches = 1;
                    if let Some(top) = &plan.top_request {
                        fetch.push(top.clone());
                        fetches += 1;
                    }
                    fetch.push(plan.request.clone());
                    jobs.push(Job::Fetch {
                        fetches,
                        delta: Some(plan),
                    });
                }
            }
        }
        drop(deciding);
        let prints = prints.unwrap_or_default();
        let (tx, rx) = crossbeam_channel::bounded(32);
        let captured_at = now_secs();
        let replies = tmux.capture_with_spare(fetch, options, deadline, cancel.clone(), spare);
        let worker = Worker {
            cache: self.clone(),
            tmux: tmux.clone(),
            socket,
            options,
            deadline,
            cancel,
            prints,
            captured_at,
            tx,
        };
        let spawned = std::thread::Builder::new()
            .name("pane-cache".into())
            .spawn(move || {
                let _serving = Span::new("cache.worker");
                worker.run(requests, jobs, replies)
            });
        if let Err(e) = spawned {
            // The receiver sees a closed channel; the caller reports no
            // captures. Say why on stderr.
            eprintln!("panescan: cannot start the cache worker: {e}");
        }
        rx
    }

    /// Every request's decision, the cache locked once for the batch.
    fn decide_all(
        &self,
        socket: &std::path::Path,
        requests: &[CaptureRequest],
        options: CaptureOptions,
        prints: &HashMap<PaneId, (i64, Fingerprint)>,
    ) -> Vec<Decision> {
        let Ok(mut state) = self.state.lock() else {
            return requests.iter().map(|_| Decision::Full).collect();
        };
        let mut key = EntryKey {
            socket: socket.to_path_buf(),
            pane: PaneId::from_number(0),
            join_wrapped: options.join_wrapped,
            escapes: options.escapes,
        };
        requests
            .iter()
            .map(|request| match prints.get(&request.pane) {
                Some((activity, print)) => {
                    key.pane = request.pane;
                    decide(&mut state, &key, request, *activity, print)
                }
                None => Decision::Full,
            })
            .collect()
    }

    fn store(&self, key: EntryKey, print: Fingerprint, captured_at: i64, text: PaneText) {
        let Ok(mut state) = self.state.lock() else {
            return;
        };
        let entry = Entry {
            print,
            captured_at,
            text: Arc::new(text),
            last_used: 0,
        };
        state.insert(key, entry, self.max_bytes);
    }

    fn count(&self, f: impl FnOnce(&mut CacheStats)) {
        if let Ok(mut s) = self.state.lock() {
            f(&mut s.stats);
        }
    }
}

/// One request's decision against the entry stored for `key`.
fn decide(
    state: &mut State,
    key: &EntryKey,
    request: &CaptureRequest,
    activity: i64,
    print: &Fingerprint,
) -> Decision {
    state.tick += 1;
    let tick = state.tick;
    let Some(entry) = state.entries.get_mut(key) else {
        return Decision::Full;
    };
    entry.last_used = tick;
    let same_pane = entry.print.server == print.server
        && entry.print.pane_pid == print.pane_pid
        && entry.print.history_limit == print.history_limit
        && entry.print.width == print.width
        && entry.print.height == print.height
        && entry.text.width == print.width
        && entry.text.height == print.height;
    if !same_pane {
        return Decision::Full;
    }
    if entry.print == *print && activity < entry.captured_at {
        if entry.text.locate(request.range).is_some() {
            let text = entry.text.clone();
            state.stats.reused += 1;
            return Decision::Reuse(text);
        }
        return Decision::Full;
    }
    match delta_plan(&entry.text, request, print) {
        Some(plan) => Decision::Delta(plan),
        None => Decision::Full,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use std::path::{Path, PathBuf};

    use super::testing::{print, text};
    use super::*;

    #[test]
    fn eviction_drops_the_least_recently_used() {
        let cache = PaneCache::new(1_000);
        let stored = PaneText::from_capture(&text(3, -3, &[b'x'; 300])).unwrap();
        let key = |n| EntryKey {
            socket: PathBuf::from("/s"),
            pane: PaneId::from_number(n),
            join_wrapped: false,
            escapes: false,
        };
        cache.store(key(1), print(3, 10), 0, stored.clone());
        cache.store(key(2), print(3, 10), 0, stored.clone());
        assert_eq!(cache.len(), 1);
        assert!(cache.memory_bytes() <= 1_000);
        assert_eq!(cache.stats().evicted, 1);
        let state = crate::sync::lock(&cache.state);
        assert!(state.entries.contains_key(&key(2)));
    }

    #[test]
    fn closed_panes_are_forgotten_and_other_servers_kept() {
        let cache = PaneCache::new(1 << 20);
        let stored = PaneText::from_capture(&text(3, -3, &[b'x'; 300])).unwrap();
        let key = |socket: &str, n| EntryKey {
            socket: PathBuf::from(socket),
            pane: PaneId::from_number(n),
            join_wrapped: false,
            escapes: false,
        };
        for k in [
            key("/s", 1),
            key("/s", 2),
            key("/other", 1),
            key("/other", 2),
        ] {
            cache.store(k, print(3, 10), 0, stored.clone());
        }
        let one = cache.memory_bytes() / 4;
        let live = [PaneId::from_number(2)].into_iter().collect();
        cache
            .state
            .lock()
            .unwrap()
            .forget_gone(Path::new("/s"), &live);
        let state = crate::sync::lock(&cache.state);
        let mut kept: Vec<&EntryKey> = state.entries.keys().collect();
        kept.sort_by_key(|k| (k.socket.clone(), k.pane));
        assert_eq!(kept, [&key("/other", 1), &key("/other", 2), &key("/s", 2)]);
        assert_eq!(state.bytes, 3 * one);
    }

    #[test]
    fn panes_told_trimmed_are_forgotten_with_every_option_and_no_other() {
        let cache = PaneCache::new(1 << 20);
        let stored = PaneText::from_capture(&text(3, -3, &[b'x'; 300])).unwrap();
        let key = |socket: &str, n, join_wrapped| EntryKey {
            socket: PathBuf::from(socket),
            pane: PaneId::from_number(n),
            join_wrapped,
            escapes: false,
        };
        let all = [
            key("/s", 1, false),
            key("/s", 1, true),
            key("/s", 2, false),
            key("/other", 1, false),
        ];
        for k in all.clone() {
            cache.store(k, print(3, 10), 0, stored.clone());
        }
        let one = cache.memory_bytes() / 4;
        cache.forget(Path::new("/s"), &[PaneId::from_number(1)]);
        let state = crate::sync::lock(&cache.state);
        let mut kept: Vec<&EntryKey> = state.entries.keys().collect();
        kept.sort_by_key(|k| (k.socket.clone(), k.pane));
        assert_eq!(kept, [&all[3], &all[2]]);
        assert_eq!(state.bytes, 2 * one);
    }
}
