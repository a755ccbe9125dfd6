//! Concurrent listings of the same fields share one round trip.
//!
//! Searches sent together each list the server before they capture, and
//! tmux runs every listing in full on its single thread: eight searches
//! at once put eight identical listings in front of a list_panes or a
//! one-pane capture sent with them. Here a caller that asks while a
//! listing of the same fields is already under way does not send its own:
//! it joins the next one, which is sent once the one under way has
//! answered, for every caller that joined it. So at most two listings of
//! one kind are ever queued on a server, whatever the number of callers.
//!
//! A caller only ever gets a listing sent after it asked: the server it
//! reports is never older than the call (a pane made just before the call
//! is in it), as when each caller listed alone.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Instant;

/// Callers of one key: whether a listing is under way, and the group
/// waiting for the next one.
struct Slot<V> {
    running: bool,
    next: Option<Arc<Answer<V>>>,
}

impl<V> Default for Slot<V> {
    fn default() -> Self {
        Slot {
            running: false,
            next: None,
        }
    }
}

/// What one listing answered, for every caller of its group.
struct Answer<V> {
    value: Mutex<Option<V>>,
    ready: Condvar,
}

/// Listings by key (the fields they ask for), one under way at a time.
pub(crate) struct ListingShare<K, V> {
    slots: Mutex<HashMap<K, Slot<V>>>,
    /// Signalled when a listing under way ends.
    ended: Condvar,
}

impl<K, V> Default for ListingShare<K, V> {
    fn default() -> Self {
        ListingShare {
            slots: Mutex::new(HashMap::new()),
            ended: Condvar::new(),
        }
    }
}

impl<K, V> std::fmt::Debug for ListingShare<K, V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ListingShare")
    }
}

/// Ends a listing under way even if its caller unwinds: the next group
/// must not wait forever.
struct Running<'a, K: Eq + Hash + Clone, V> {
    share: &'a ListingShare<K, V>,
    key: K,
}

impl<K: Eq + Hash + Clone, V> Drop for Running<'_, K, V> {
    fn drop(&mut self) {
        let mut slots = self.share.lock();
        if let Some(slot) = slots.get_mut(&self.key) {
            slot.running = false;
        }
        drop(slots);
        self.share.ended.notify_all();
    }
}

impl<K, V> ListingShare<K, V> {
    fn lock(&self) -> MutexGuard<'_, HashMap<K, Slot<V>>> {
        crate::sync::lock(&self.slots)
    }
}

impl<K: Eq + Hash + Clone, V: Clone> ListingShare<K, V> {
    /// `list()`'s answer, from a listing sent after this call began: this
    /// caller's own, or one it shares with callers that asked for `key`
    /// while another listing of it was under way. `late` is the answer
    /// for a caller still waiting at `deadline`.
    pub(crate) fn list(
        &self,
        key: K,
        deadline: Instant,
        list: impl FnOnce() -> V,
        late: impl FnOnce() -> V,
    ) -> V {
        let mut slots = self.lock();
        let slot = slots.entry(key.clone()).or_default();
        if !slot.running && slot.next.is_none() {
            slot.running = true;
            drop(slots);
            let _running = Running { share: self, key };
            return list();
        }
        if let Some(answer) = slot.next.clone() {
            drop(slots);
            return wait(&answer, deadline).unwrap_or_else(late);
        }
        // The first to ask while one is under way: it sends the next.
        let answer = Arc::new(Answer {
            value: Mutex::new(None),
            ready: Condvar::new(),
        });
        slot.next = Some(answer.clone());
        loop {
            // Slots are never removed: this is the one the group is in.
            let slot = slots.entry(key.clone()).or_default();
            if !slot.running {
                slot.running = true;
                slot.next = None;
                break;
            }
            let now = Instant::now();
            if now >= deadline {
                // Out of time before the listing under way ended: the
                // group gets the late answer with this caller (rather than
                // wait for one never sent), and later callers form a new
                // group.
                slot.next = None;
                drop(slots);
                let value = late();
                publish(&answer, value.clone());
                return value;
            }
            slots = crate::sync::wait_timeout(&self.ended, slots, deadline - now);
        }
        drop(slots);
        let _running = Running { share: self, key };
        let value = list();
        publish(&answer, value.clone());
        value
    }
}

fn publish<V>(answer: &Answer<V>, value: V) {
    *crate::sync::lock(&answer.value) = Some(value);
    answer.ready.notify_all();
}

/// The group's answer, or `None` once `deadline` passed without it.
fn wait<V: Clone>(answer: &Answer<V>, deadline: Instant) -> Option<V> {
    let mut value = crate::sync::lock(&answer.value);
    loop {
        if let Some(v) = value.as_ref() {
            return Some(v.clone());
        }
        let now = Instant::now();
        if now >= deadline {
            return None;
        }
        value = crate::sync::wait_timeout(&answer.ready, value, deadline - now);
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    fn soon() -> Instant {
        Instant::now() + Duration::from_secs(10)
    }

    #[test]
    fn callers_one_after_another_each_list() {
        let share: ListingShare<u8, usize> = ListingShare::default();
        let sent = AtomicUsize::new(0);
        for want in 1..=3 {
            let got = share.list(0, soon(), || sent.fetch_add(1, Ordering::SeqCst) + 1, || 0);
            assert_eq!(got, want);
        }
    }

    /// While one listing is held under way, callers pile up; they all get
    /// the one listing sent after it, which began after each of them asked.
    #[test]
    fn callers_during_a_listing_share_the_next_one_sent_after_they_asked() {
        let share: Arc<ListingShare<u8, usize>> = Arc::default();
        let started = Arc::new(AtomicUsize::new(0));
        let (release_tx, release_rx) = crossbeam_channel::bounded::<()>(0);
        let first = {
            let (share, started) = (share.clone(), started.clone());
            std::thread::spawn(move || {
                share.list(
                    0,
                    soon(),
                    || {
                        let n = started.fetch_add(1, Ordering::SeqCst) + 1;
                        release_rx.recv().unwrap();
                        n
                    },
                    || 0,
                )
            })
        };
        while started.load(Ordering::SeqCst) == 0 {
            std::thread::yield_now();
        }
        let callers: Vec<_> = (0..6)
            .map(|_| {
                let (share, started) = (share.clone(), started.clone());
                std::thread::spawn(move || {
                    let asked_after = started.load(Ordering::SeqCst);
                    let got = share.list(
                        0,
                        soon(),
                        || started.fetch_add(1, Ordering::SeqCst) + 1,
                        || 0,
                    );
                    (asked_after, got)
                })
            })
            .collect();
        // Another key is not held up by this one.
        assert_eq!(share.list(1, soon(), || 77, || 0), 77);
        // All six wait on the next listing: the slot's, its sender's and
        // five more handles on it.
        let joined = || share.lock()[&0].next.as_ref().map_or(0, Arc::strong_count);
        let until = Instant::now() + Duration::from_secs(10);
        while joined() < 7 {
            assert!(Instant::now() < until, "the callers did not wait together");
            std::thread::yield_now();
        }
        release_tx.send(()).unwrap();
        assert_eq!(first.join().unwrap(), 1);
        for c in callers {
            let (asked_after, got) = c.join().unwrap();
            assert!(
                got > asked_after,
                "listing {got} began before the caller asked"
            );
            assert_eq!(got, 2, "one listing for the whole group");
        }
        assert_eq!(started.load(Ordering::SeqCst), 2);
    }

    #[test]
    fn a_caller_out_of_time_gets_its_late_answer_and_the_next_lists() {
        let share: Arc<ListingShare<u8, usize>> = Arc::default();
        let (release_tx, release_rx) = crossbeam_channel::bounded::<()>(0);
        let (began_tx, began_rx) = crossbeam_channel::bounded::<()>(1);
        let held = {
            let share = share.clone();
            std::thread::spawn(move || {
                share.list(
                    0,
                    soon(),
                    || {
                        began_tx.send(()).unwrap();
                        release_rx.recv().unwrap();
                        1
                    },
                    || 0,
                )
            })
        };
        began_rx.recv().unwrap();
        let short = Instant::now() + Duration::from_millis(30);
        assert_eq!(share.list(0, short, || 2, || 99), 99, "late");
        release_tx.send(()).unwrap();
        assert_eq!(held.join().unwrap(), 1);
        assert_eq!(share.list(0, soon(), || 3, || 0), 3);
    }

    #[test]
    fn a_listing_that_panics_does_not_hold_the_next() {
        let share: Arc<ListingShare<u8, usize>> = Arc::default();
        let s = share.clone();
        let unwound = std::thread::spawn(move || s.list(0, soon(), || panic!("boom"), || 0)).join();
        assert!(unwound.is_err());
        assert_eq!(share.list(0, soon(), || 5, || 0), 5);
    }
}
