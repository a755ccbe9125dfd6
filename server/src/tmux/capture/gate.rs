//! Fair sharing of one tmux server between concurrent sweeps.
//!
//! tmux runs every command of a `source-file` script before it reads the
//! next message from any client, so a cheap call (a listing, one pane's
//! capture) waits for every chunk tmux already holds. Without a limit, eight
//! deep searches put sixteen chunks of up to [`super::CHUNK_LINES`] lines
//! (more on a server of over ~500 panes: `super::chunk_panes`) in front of
//! it. The gate keeps the server's sweeps to [`SERVER_CHUNKS`]
//! chunks in flight (two keep tmux busy: it produces one while the other
//! is read; behind 8 deep searches a one-pane capture waited ~105 ms
//! median, ~315 ms worst with four, ~50 and under ~200 ms with two:
//! BENCHMARKS.md), and while several sweeps share it each one cuts
//! smaller chunks ([`Member::chunk_lines`]), so the work queued ahead of a
//! cheap call stays about what one sweep alone would queue.
//!
//! A sweep holding no chunk in flight is "hungry": no sweep takes a second
//! chunk while one is hungry, so every sweep keeps moving. A sweep only
//! blocks for a permit when it holds none, so permits are always released
//! by chunks that make progress (no cycle). A batch of one pane does not
//! pass the gate at all: it is the cheap call the gate protects.

use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Chunks in flight on one server, over all its sweeps.
pub(crate) const SERVER_CHUNKS: usize = 2;
/// The smallest chunk a shared sweep cuts: below it a chunk's own cost
/// (a process, a script) would dominate.
const MIN_SHARED_LINES: u64 = 8_000;

/// One server's sweeps: how many run and how many chunks they hold.
#[derive(Debug, Default)]
pub(crate) struct Gate {
    state: Mutex<State>,
    freed: Condvar,
}

#[derive(Debug, Default)]
struct State {
    /// Sweeps registered ([`Gate::join`]).
    members: usize,
    /// Chunks holding a permit.
    in_flight: usize,
    /// Sweeps waiting for their first permit.
    hungry: usize,
}

impl Gate {
    fn lock(&self) -> MutexGuard<'_, State> {
        crate::sync::lock(&self.state)
    }

    /// Registers a sweep until the returned member is dropped.
    pub(crate) fn join(gate: &Arc<Gate>) -> Member {
        gate.lock().members += 1;
        Member { gate: gate.clone() }
    }
}

/// A sweep's place at the gate.
#[derive(Debug)]
pub(crate) struct Member {
    gate: Arc<Gate>,
}

/// Leave to have one chunk in flight; released when dropped (when the
/// chunk's process has ended).
#[derive(Debug)]
pub(crate) struct Permit {
    gate: Arc<Gate>,
}

impl Member {
    /// The line budget of this sweep's next chunk: `alone` divided among
    /// the sweeps sharing the server, never under a floor.
    pub(crate) fn chunk_lines(&self, alone: u64) -> u64 {
        let members = self.gate.lock().members.max(1) as u64;
        (alone / members).max(MIN_SHARED_LINES.min(alone))
    }

    /// A permit without waiting, for a sweep already holding `held`
    /// chunks: none while the server is full, and no second chunk while
    /// another sweep has none.
    pub(crate) fn try_acquire(&self, held: usize) -> Option<Permit> {
        let mut s = self.gate.lock();
        let fair = held == 0 || s.hungry == 0;
        (fair && s.in_flight < SERVER_CHUNKS).then(|| {
            s.in_flight += 1;
            Permit {
                gate: self.gate.clone(),
            }
        })
    }

    /// Waits for a permit (for a sweep holding none) until one is free,
    /// `deadline` passes or `stopped` says so; `None` then.
    pub(crate) fn acquire(&self, deadline: Instant, stopped: impl Fn() -> bool) -> Option<Permit> {
        let mut s = self.gate.lock();
        s.hungry += 1;
        let granted = loop {
            if s.in_flight < SERVER_CHUNKS {
                s.in_flight += 1;
                break true;
            }
            let now = Instant::now();
            if now >= deadline || stopped() {
                break false;
            }
            // Woken by a released permit; the step bounds how late a
            // cancel is seen.
            let step = (deadline - now).min(Duration::from_millis(20));
            s = crate::sync::wait_timeout(&self.gate.freed, s, step);
        };
        s.hungry -= 1;
        granted.then(|| Permit {
            gate: self.gate.clone(),
        })
    }
}

impl Drop for Member {
    fn drop(&mut self) {
        let mut s = self.gate.lock();
        s.members = s.members.saturating_sub(1);
    }
}

impl Drop for Permit {
    fn drop(&mut self) {
        let mut s = self.gate.lock();
        s.in_flight = s.in_flight.saturating_sub(1);
        drop(s);
        self.gate.freed.notify_all();
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    fn soon() -> Instant {
        Instant::now() + Duration::from_secs(5)
    }

    #[test]
    fn the_server_holds_at_most_its_chunks() {
        let gate = Arc::new(Gate::default());
        let members: Vec<Member> = (0..=SERVER_CHUNKS).map(|_| Gate::join(&gate)).collect();
        let mut permits: Vec<Permit> = members[..SERVER_CHUNKS]
            .iter()
            .map(|m| m.try_acquire(0).unwrap())
            .collect();
        assert!(
            members[SERVER_CHUNKS].try_acquire(0).is_none(),
            "server full"
        );
        assert!(members[0].try_acquire(1).is_none(), "server full");
        permits.pop();
        assert!(members[SERVER_CHUNKS].try_acquire(0).is_some());
    }

    #[test]
    fn no_second_chunk_while_a_sweep_has_none() {
        let gate = Arc::new(Gate::default());
        let first = Gate::join(&gate);
        let _one = first.try_acquire(0).unwrap();
        gate.lock().hungry = 1;
        assert!(first.try_acquire(1).is_none(), "another sweep waits");
        assert!(first.try_acquire(0).is_some(), "a first chunk is fair");
        gate.lock().hungry = 0;
        assert!(first.try_acquire(1).is_some());
    }

    #[test]
    fn a_released_permit_wakes_a_waiting_sweep() {
        let gate = Arc::new(Gate::default());
        let first = Gate::join(&gate);
        let mut held: Vec<Permit> = (0..SERVER_CHUNKS)
            .map(|_| first.try_acquire(0).unwrap())
            .collect();
        let second = Gate::join(&gate);
        let waiter = std::thread::spawn(move || second.acquire(soon(), || false));
        while gate.lock().hungry == 0 {
            std::thread::yield_now();
        }
        held.pop();
        let got = waiter.join().unwrap();
        assert!(got.is_some(), "the waiting sweep got the permit");
        assert_eq!(gate.lock().in_flight, SERVER_CHUNKS);
    }

    #[test]
    fn shared_sweeps_cut_smaller_chunks() {
        let gate = Arc::new(Gate::default());
        let one = Gate::join(&gate);
        assert_eq!(one.chunk_lines(120_000), 120_000);
        let others: Vec<Member> = (0..7).map(|_| Gate::join(&gate)).collect();
        assert_eq!(one.chunk_lines(120_000), 15_000);
        let many: Vec<Member> = (0..56).map(|_| Gate::join(&gate)).collect();
        assert_eq!(one.chunk_lines(120_000), MIN_SHARED_LINES);
        assert_eq!(one.chunk_lines(100), 100);
        drop((others, many));
        assert_eq!(one.chunk_lines(120_000), 120_000);
    }

    #[test]
    fn a_stopped_wait_gives_up() {
        let gate = Arc::new(Gate::default());
        let m = Gate::join(&gate);
        let _held: Vec<Permit> = (0..SERVER_CHUNKS)
            .map(|_| m.try_acquire(0).unwrap())
            .collect();
        assert!(m.acquire(soon(), || true).is_none());
        assert!(m.acquire(Instant::now(), || false).is_none());
        assert_eq!(gate.lock().hungry, 0);
    }
}
