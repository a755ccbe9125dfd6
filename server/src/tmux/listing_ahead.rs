//! A sweep whose first script lists the panes first, the memory of what
//! the last sweeps asked for, which tells a caller when to start one, and
//! the sweep client kept started for it.
//!
//! A search lists, then sweeps what it listed. When it is likely to sweep
//! what the last searches swept (an agent searching the same server again
//! and again), it starts that sweep at once with its listing at the top of
//! the first script (capture/preamble.rs), reads the listing from there,
//! and keeps the sweep if the listing asks for the same captures
//! (tools/search/ahead.rs). The memory of the last sweeps says when that
//! is likely: the last two sweeps noted asked for the same captures.
//!
//! tmux sends a script's output once the whole script has run, so that
//! saves the listing's round trip only if the sweep's client is up when
//! the search starts: started then, its start (process, connection,
//! handshake) takes the round trip's place. One is kept started between
//! such searches (`keep_client`). A connected client keeps a tmux server
//! from exiting once its last session is gone (server.c `server_loop`:
//! "don't actually exit until they've gone"), so the kept client is let go
//! as soon as panescan's control client is (tmux detaches it when the
//! last session goes), and after [`KEPT_CLIENT_IDLE`] unused; and
//! panescan holds the write end of the FIFO it waits on
//! (capture/spare.rs `Spare::hold`), so that if panescan is killed the
//! kernel closes it and the client reads an empty script and exits.
//!
//! Both are this module's `ServerState`, held beside the server's
//! connection (`tmux::Server`) and changed only here.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError};

use super::caller::CallerPane;
use super::capture::{ListedAhead, Spare};
use super::inventory::{mark_caller, Inventory, ListingQuery};
use super::{CaptureOptions, CaptureRequest, Server, TmuxError};
use crate::sync::lock;

/// The listing at the top of a sweep, on its way.
#[derive(Debug)]
pub struct ListingAhead {
    query: ListingQuery,
    rx: Receiver<Result<ListedAhead, TmuxError>>,
    shared: Arc<Server>,
    caller: Arc<CallerPane>,
}

impl ListingAhead {
    /// The listing `query` of `shared`, which the sweep's first chunk
    /// sends on `rx`, its panes marked for `caller`.
    pub(crate) fn new(
        query: ListingQuery,
        rx: Receiver<Result<ListedAhead, TmuxError>>,
        shared: Arc<Server>,
        caller: Arc<CallerPane>,
    ) -> ListingAhead {
        ListingAhead {
            query,
            rx,
            shared,
            caller,
        }
    }

    /// The inventory and the server's `#{pid} #{start_time}`, once the
    /// sweep's first chunk has printed them; an error if the chunk ended
    /// without them (tmux or its client gone, the sweep stopped), at
    /// `deadline`, or once `cancel` is set.
    pub fn wait(
        self,
        deadline: Instant,
        cancel: &AtomicBool,
    ) -> Result<(Inventory, String), TmuxError> {
        loop {
            if cancel.load(Ordering::Relaxed) {
                return Err(TmuxError::Cancelled);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(TmuxError::Timeout);
            }
            match self.rx.recv_timeout(left.min(Duration::from_millis(20))) {
                Ok(Ok(listed)) => {
                    let mut inventory = self.query.read(&self.shared, &listed.text);
                    let socket = self.shared.connection().socket_path();
                    mark_caller(&mut inventory, &self.caller, socket);
                    return Ok((inventory, listed.server));
                }
                Ok(Err(e)) => return Err(e),
                Err(RecvTimeoutError::Timeout) => continue,
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(TmuxError::ConnectionLost(
                        "the sweep ended before its listing".into(),
                    ))
                }
            }
        }
    }
}

/// What one server keeps for the searches to come: the captures its last
/// sweeps asked for, and the sweep client kept started.
#[derive(Debug, Default)]
pub(crate) struct ServerState {
    noted: SweepMemory,
    kept: KeptClient,
}

impl ServerState {
    /// Notes the captures a search of this server asked for.
    pub(crate) fn note(&self, requests: &[CaptureRequest], options: CaptureOptions) {
        self.noted.note(requests, options);
    }

    /// How long the search whose sweep was noted last took.
    pub(crate) fn took(&self, time: Duration) {
        self.noted.took(time);
    }

    /// What the last two searches noted both asked for, if they did and
    /// the last took at most half of `room` ([`SweepMemory::steady`]).
    pub(crate) fn steady(&self, room: Duration) -> Option<(Vec<CaptureRequest>, CaptureOptions)> {
        self.noted.steady(room)
    }

    /// The kept sweep client, if there is one.
    pub(crate) fn take_client(&self) -> Option<Spare> {
        lock(&self.kept.slot).take().map(|(_, spare)| spare)
    }

    /// Whether a sweep client is kept.
    pub(crate) fn holds_client(&self) -> bool {
        lock(&self.kept.slot).is_some()
    }
}

/// The captures the last sweeps noted asked for.
#[derive(Debug, Default)]
struct SweepMemory {
    last: Mutex<Option<Noted>>,
}

#[derive(Debug)]
struct Noted {
    requests: Vec<CaptureRequest>,
    options: CaptureOptions,
    /// The sweep noted before asked for the same.
    steady: bool,
    /// How long the search that asked for it took, once it is known.
    took: Option<Duration>,
}

impl SweepMemory {
    fn note(&self, requests: &[CaptureRequest], options: CaptureOptions) {
        let mut last = lock(&self.last);
        let steady = last
            .as_ref()
            .is_some_and(|n| n.options == options && n.requests == requests);
        *last = Some(Noted {
            requests: requests.to_vec(),
            options,
            steady,
            took: None,
        });
    }

    /// How long the search whose sweep was noted last took.
    fn took(&self, time: Duration) {
        let mut last = lock(&self.last);
        if let Some(n) = last.as_mut() {
            n.took = Some(time);
        }
    }

    /// What the last two sweeps noted both asked for, if they did and the
    /// last search took at most half of `room`. A sweep started ahead
    /// gives its listing only once its first chunk has run: a search with
    /// little time left lists on its own, so that even a sweep cut by its
    /// deadline has its listing.
    fn steady(&self, room: Duration) -> Option<(Vec<CaptureRequest>, CaptureOptions)> {
        let last = lock(&self.last);
        last.as_ref()
            .filter(|n| n.steady && !n.requests.is_empty())
            .filter(|n| n.took.is_some_and(|t| t.saturating_mul(2) <= room))
            .map(|n| (n.requests.clone(), n.options))
    }
}

/// How long a kept sweep client waits for a search before it is let go.
pub const KEPT_CLIENT_IDLE: Duration = Duration::from_secs(10);
/// Between two looks at whether a kept client should be let go.
const KEPT_CLIENT_LOOK: Duration = Duration::from_millis(200);

/// A sweep client kept started for the next search (`None`: none kept).
#[derive(Debug, Default)]
struct KeptClient {
    slot: Mutex<Option<(u64, Spare)>>,
    kept: AtomicU64,
}

/// Keeps `spare` for the next search of `shared` (a client kept before is
/// let go), watched until it is taken or must be let go.
pub(crate) fn keep_client(shared: &Arc<Server>, spare: Spare) {
    let kept = &shared.ahead().kept;
    let id = kept.kept.fetch_add(1, Ordering::Relaxed);
    let old = lock(&kept.slot).replace((id, spare));
    drop(old);
    let weak = Arc::downgrade(shared);
    let watching = std::thread::Builder::new()
        .name("tmux-kept-client".into())
        .spawn(move || watch(&weak, id, Instant::now()));
    if watching.is_err() {
        // Unwatched, it would outlive its use: let it go now.
        drop(shared.ahead().take_client());
    }
}

/// Lets kept client `id` go once it has waited [`KEPT_CLIENT_IDLE`] or
/// panescan's control client is gone; ends when it was taken or replaced.
fn watch(shared: &Weak<Server>, id: u64, kept_at: Instant) {
    loop {
        std::thread::sleep(KEPT_CLIENT_LOOK);
        let Some(shared) = shared.upgrade() else {
            return;
        };
        let mut slot = lock(&shared.ahead().kept.slot);
        if !matches!(&*slot, Some((kept, _)) if *kept == id) {
            return;
        }
        if kept_at.elapsed() >= KEPT_CLIENT_IDLE || shared.connection().own_client_pid().is_none() {
            let spare = slot.take();
            drop(slot);
            drop(spare);
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use crate::tmux::{CaptureRange, PaneId};

    fn asked(panes: &[u32], range: CaptureRange) -> Vec<CaptureRequest> {
        panes
            .iter()
            .map(|&n| CaptureRequest {
                pane: PaneId::parse(&format!("%{n}")).unwrap(),
                range,
            })
            .collect()
    }

    #[test]
    fn a_sweep_is_steady_once_two_in_a_row_asked_for_the_same() {
        let memory = SweepMemory::default();
        let joined = CaptureOptions {
            join_wrapped: true,
            escapes: false,
        };
        let visible = asked(&[1, 2, 3], CaptureRange::Visible);
        let room = Duration::from_secs(10);
        let steady = |memory: &SweepMemory| {
            memory.took(Duration::from_secs(1));
            memory.steady(room)
        };
        assert!(memory.steady(room).is_none());
        memory.note(&visible, joined);
        assert!(steady(&memory).is_none(), "one sweep is no habit");
        memory.note(&visible, joined);
        assert!(memory.steady(room).is_none(), "its search's time unknown");
        assert_eq!(steady(&memory), Some((visible.clone(), joined)));
        // Not when the last search took more than half the time left.
        memory.took(Duration::from_millis(5_001));
        assert!(memory.steady(room).is_none());
        memory.took(Duration::from_millis(5_000));
        assert_eq!(memory.steady(room), Some((visible.clone(), joined)));
        // Another pane, another range, other options: not steady again
        // until repeated.
        for (requests, options) in [
            (asked(&[1, 2, 3, 4], CaptureRange::Visible), joined),
            (asked(&[1, 2, 3], CaptureRange::Scrollback(100)), joined),
            (visible.clone(), CaptureOptions::default()),
            (asked(&[2, 1, 3], CaptureRange::Visible), joined),
        ] {
            memory.note(&visible, joined);
            memory.note(&requests, options);
            assert!(steady(&memory).is_none(), "{requests:?} {options:?}");
            memory.note(&requests, options);
            assert_eq!(steady(&memory), Some((requests, options)));
        }
        // Nothing to sweep is nothing to start.
        memory.note(&[], joined);
        memory.note(&[], joined);
        assert!(steady(&memory).is_none());
    }
}
