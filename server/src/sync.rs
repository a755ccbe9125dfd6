//! Locks that outlive a panicked holder, and nonces: what every room
//! needs and none should write again. A leaf: it imports nothing of the
//! crate.
//!
//! A lock poisoned by a thread that panicked is taken as it is: every
//! state guarded in panescan stays whole across a panic (each write is
//! one assignment or one map operation), and one call's panic must not
//! stop every later one.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::TryLockError;
use std::sync::{Condvar, Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::Duration;

/// `m` locked, poisoned or not.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// `m` locked if nobody holds it, poisoned or not; `None` while another
/// thread holds it.
pub(crate) fn try_lock<T>(m: &Mutex<T>) -> Option<MutexGuard<'_, T>> {
    match m.try_lock() {
        Ok(g) => Some(g),
        Err(TryLockError::Poisoned(e)) => Some(e.into_inner()),
        Err(TryLockError::WouldBlock) => None,
    }
}

/// `g` given back once `cv` is signalled (or spuriously woken), poisoned
/// or not: the caller looks again at what it waits for.
pub(crate) fn wait<'a, T>(cv: &Condvar, g: MutexGuard<'a, T>) -> MutexGuard<'a, T> {
    cv.wait(g).unwrap_or_else(|e| e.into_inner())
}

/// [`wait`] for at most `timeout`; the caller tells a timeout from a
/// signal by what it waits for and its own clock.
pub(crate) fn wait_timeout<'a, T>(
    cv: &Condvar,
    g: MutexGuard<'a, T>,
    timeout: Duration,
) -> MutexGuard<'a, T> {
    match cv.wait_timeout(g, timeout) {
        Ok((g, _)) => g,
        Err(e) => e.into_inner().0,
    }
}

/// `l` read-locked, poisoned or not.
pub(crate) fn read<T>(l: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    l.read().unwrap_or_else(|e| e.into_inner())
}

/// `l` write-locked, poisoned or not.
pub(crate) fn write<T>(l: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
    l.write().unwrap_or_else(|e| e.into_inner())
}

/// A fresh random nonce (hex, 128 bits).
pub(crate) fn nonce() -> String {
    let mut b = [0u8; 16];
    if getrandom::fill(&mut b).is_err() {
        // Never expected; fall back to time and a counter, still unknown to
        // pane programs in practice.
        static C: AtomicU64 = AtomicU64::new(0);
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        let mixed = t ^ (u128::from(C.fetch_add(1, Ordering::Relaxed)) << 64);
        b = mixed.to_le_bytes();
    }
    b.iter().map(|x| format!("{x:02x}")).collect()
}
