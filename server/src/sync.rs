//! Locks that outlive a panicked holder, and nonces: what every room
//! needs and none should write again. A leaf: it imports nothing of the
//! crate.
//!
//! A lock poisoned by a thread that panicked is taken as it is: every
//! state guarded in panescan stays whole across a panic (each write is
//! one assignment or one map operation), and one call's panic must not
//! stop every later one.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// `m` locked, poisoned or not.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
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
