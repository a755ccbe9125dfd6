//! How many panes and lines a chunk takes.
//!
//! A chunk is a client, whose cost to tmux grows with the server, and its
//! script's parse costs the square of its bytes: `chunk_panes` weighs the
//! two. The first chunk is small (delivered early), later ones larger;
//! a sweep sharing the server gets smaller chunks from the gate.
//!
//! Must hold: tmux finishes a script even when its client is killed, so a
//! chunk never asks for more lines than the time left can hold at the rate
//! the batch has seen: a search out of time leaves tmux no work nobody
//! reads.

use std::time::Instant;

use super::Batch;
use super::{CaptureRange, CaptureRequest, CHUNK_LINES};

/// Rough line budget of the first chunk (small, to deliver early).
pub(super) const FIRST_CHUNK_LINES: u64 = 16_000;
/// Most panes in one chunk on a small server (see [`chunk_panes`]).
const CHUNK_PANES: usize = 400;
/// Panes a chunk may hold: the square root of this times the server's.
const CHUNK_PANES_SCALE: usize = 1_000;
/// Lines a later chunk may hold per pane it may hold (see [`chunk_panes`]).
const CHUNK_LINES_PER_PANE: u64 = 240;
/// Lines a second tmux is assumed to capture before a batch has measured
/// it (here: ~2,000 lines/ms for 200-cell lines; half that, to be safe).
const ASSUMED_LINES_PER_MS: u64 = 1_000;

/// Most panes in one chunk on a server of `server_panes` (0: not known),
/// `left` requests still to be cut: the rest is split evenly.
///
/// Two costs of tmux (3.3a-3.6) pull apart here. Each chunk is a client,
/// and a client costs tmux a few turns of its event loop, each of which
/// polls every pane's terminal and walks every window: a chunk's fixed cost
/// grows with the server (~15-30 ms of tmux on 1,000 panes). Parsing a
/// script, tmux logs its whole command list with `strlcat` in a loop
/// (`cmd_parse_build_commands`): a cost that grows with the square of the
/// chunk (~30% of tmux's time in one 1,000-pane visible chunk). Over a
/// sweep, `panes / n` chunks cost `panes / n * server` and `panes * n`, least
/// near `n = sqrt(K * server)`; K here is what measured best on 1,000 panes
/// (BENCHMARKS.md, "tmux transport"). An even split leaves no small last
/// chunk paying a whole client for a few panes.
pub(super) fn chunk_panes(server_panes: usize, left: usize) -> usize {
    let most = CHUNK_PANES.max((CHUNK_PANES_SCALE * server_panes).isqrt());
    let chunks = left.div_ceil(most).max(1);
    left.div_ceil(chunks).max(1)
}

/// Lines a request is expected to return; `seen` is the mean pane size
/// (history + screen) observed so far in this batch.
pub(super) fn estimate_lines(range: CaptureRange, seen: Option<u64>) -> u64 {
    let pane = seen.unwrap_or(2_000).max(1);
    match range {
        CaptureRange::Visible | CaptureRange::Scrollback(0) => 60,
        CaptureRange::Scrollback(n) => n.min(pane) + 60,
        CaptureRange::AllHistory => pane,
        CaptureRange::Lines { start, end } => start.abs_diff(end).min(100_000) + 1,
    }
}

impl Batch {
    /// The end of the chunk that starts at request `a`, sized by the pane
    /// sizes seen so far (`seen_lines` in `seen_panes`) and the time left.
    pub(super) fn chunk_end(
        &self,
        requests: &[CaptureRequest],
        a: usize,
        started: &Instant,
        seen_lines: u64,
        seen_panes: u64,
    ) -> usize {
        let alone = if a == 0 {
            FIRST_CHUNK_LINES
        } else {
            CHUNK_LINES
        };
        let most = chunk_panes(self.server_panes, requests.len() - a);
        let alone = if a == 0 {
            alone
        } else {
            alone.max(most as u64 * CHUNK_LINES_PER_PANE)
        };
        let budget = self.member.as_ref().map_or(alone, |m| m.chunk_lines(alone));
        // tmux runs a script to its end even if its client is killed, so a
        // chunk sent to tmux is work done whatever happens: ask for no more
        // than the time left can hold, or a search that ran out of time
        // would leave tmux busy for the next call.
        let budget = budget.min(self.lines_in_time_left(started, seen_lines).max(1));
        let seen = (seen_panes > 0).then(|| seen_lines / seen_panes);
        let (mut b, mut lines) = (a, 0);
        while b < requests.len() && (b == a || lines < budget) && b - a < most {
            lines += estimate_lines(requests[b].range, seen);
            b += 1;
        }
        b
    }

    /// About how many lines tmux can capture before the deadline, at the
    /// rate this batch has seen so far (`seen_lines` since `started`), or
    /// at [`ASSUMED_LINES_PER_MS`] until it has seen enough.
    pub(super) fn lines_in_time_left(&self, started: &Instant, seen_lines: u64) -> u64 {
        let left_ms = self
            .deadline
            .saturating_duration_since(Instant::now())
            .as_millis();
        let elapsed_ms = started.elapsed().as_millis().max(1);
        let seen_rate = u128::from(seen_lines) / elapsed_ms;
        let rate = seen_rate.max(u128::from(ASSUMED_LINES_PER_MS));
        u64::try_from(left_ms.saturating_mul(rate)).unwrap_or(u64::MAX)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;
    use std::time::Duration;

    use super::super::super::ids::PaneId;
    use super::super::super::launch::Endpoint;
    use super::super::CaptureOptions;
    use super::*;

    #[test]
    fn chunks_ask_for_no_more_than_the_time_left_holds() {
        let (tx, _rx) = crossbeam_channel::bounded(1);
        let batch = |left: Duration| Batch {
            socket: Endpoint::local(std::path::PathBuf::new()),
            server_panes: 0,
            options: CaptureOptions::default(),
            deadline: Instant::now() + left,
            cancel: Arc::new(AtomicBool::new(false)),
            tx: tx.clone(),
            member: None,
            anchor: None,
            spare: std::sync::Mutex::new(None),
            counting: Arc::new(AtomicBool::new(true)),
            preamble: std::sync::Mutex::new(None),
            alone_first: false,
        };
        let started = Instant::now();
        // Nothing seen yet: the assumed rate.
        let fresh = batch(Duration::from_millis(20)).lines_in_time_left(&started, 0);
        assert!((10_000..=20_000).contains(&fresh), "{fresh}");
        // A faster rate seen in this batch raises it; a past deadline is 0.
        let fast = batch(Duration::from_millis(20)).lines_in_time_left(&started, 10_000_000);
        assert!(fast > 100_000, "{fast}");
        assert_eq!(batch(Duration::ZERO).lines_in_time_left(&started, 0), 0);
        // A generous budget leaves the chunk sizes alone.
        let long = batch(Duration::from_secs(30)).lines_in_time_left(&started, 0);
        assert!(long > CHUNK_LINES);
    }

    fn requests(n: u32, range: CaptureRange) -> Vec<CaptureRequest> {
        (0..n)
            .map(|i| CaptureRequest {
                pane: PaneId::from_number(i),
                range,
            })
            .collect()
    }

    /// The chunk sizes a sweep of `requests` on a server of `server_panes`
    /// is cut into, every pane seen holding `pane_lines` lines.
    fn cuts(requests: &[CaptureRequest], server_panes: usize, pane_lines: u64) -> Vec<usize> {
        let (tx, _rx) = crossbeam_channel::bounded(1);
        let batch = Batch {
            socket: Endpoint::local(std::path::PathBuf::new()),
            server_panes,
            options: CaptureOptions::default(),
            deadline: Instant::now() + Duration::from_secs(60),
            cancel: Arc::new(AtomicBool::new(false)),
            tx,
            member: None,
            anchor: None,
            spare: std::sync::Mutex::new(None),
            counting: Arc::new(AtomicBool::new(true)),
            preamble: std::sync::Mutex::new(None),
            alone_first: false,
        };
        let started = Instant::now();
        let (mut a, mut sizes) = (0, Vec::new());
        while a < requests.len() {
            let seen = a as u64;
            let b = batch.chunk_end(requests, a, &started, seen * pane_lines, seen);
            sizes.push(b - a);
            a = b;
        }
        sizes
    }

    #[test]
    fn a_big_server_is_swept_in_few_chunks() {
        // Each chunk is a client, whose cost to tmux grows with the server:
        // 1,000 panes go in two chunks visible, three deep.
        let visible = cuts(&requests(1000, CaptureRange::Visible), 1000, 50);
        assert_eq!(visible.len(), 2, "{visible:?}");
        let deep = cuts(&requests(1000, CaptureRange::AllHistory), 1000, 200);
        assert!(deep.len() <= 3, "{deep:?}");
        // No small last chunk paying a whole client for a few panes.
        let rest = cuts(&requests(1300, CaptureRange::Visible), 1000, 50);
        assert!(rest.iter().skip(1).all(|&n| n >= 300), "{rest:?}");
        // A small server's deep chunks keep their line budget.
        let small = cuts(&requests(200, CaptureRange::AllHistory), 200, 2000);
        assert!(small.iter().all(|&n| n <= 61), "{small:?}");
    }
}
