//! Timing spans for finding where a call's time goes, off unless the
//! environment asks for them.
//!
//! `PANESCAN_SPANS=1` makes every [`Span`] print one line to stderr when it
//! ends: `panescan span NAME 1.234 ms at 5.678 s on THREAD`, the second
//! figure the time since the first span (so steps of concurrent calls can
//! be put in order), the thread the one that ran it. Nothing is printed
//! otherwise, and a span then costs one relaxed load: they stay in the
//! code on the paths whose fixed cost matters (a warm search's listing,
//! the cache's checks, a sweep's probe and processes). Answers never carry
//! them, and stdout is never written.

use std::sync::OnceLock;
use std::time::Instant;

/// The environment variable that turns spans on.
pub const ENV: &str = "PANESCAN_SPANS";

/// Whether spans print (read once).
pub fn enabled() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| std::env::var_os(ENV).is_some_and(|v| !v.is_empty() && v != "0"))
}

/// A timed step; prints its duration when dropped, if spans are on.
#[derive(Debug)]
pub struct Span {
    name: &'static str,
    started: Option<Instant>,
}

impl Span {
    /// Starts timing `name`.
    pub fn new(name: &'static str) -> Span {
        Span {
            name,
            started: enabled().then(|| {
                origin();
                Instant::now()
            }),
        }
    }
}

/// When spans started being measured: the origin of their `at` times.
fn origin() -> Instant {
    static ORIGIN: OnceLock<Instant> = OnceLock::new();
    *ORIGIN.get_or_init(Instant::now)
}

impl Drop for Span {
    fn drop(&mut self) {
        if let Some(started) = self.started {
            let ms = started.elapsed().as_secs_f64() * 1e3;
            let at = origin().elapsed().as_secs_f64();
            let thread = std::thread::current();
            let on = thread.name().map_or_else(
                || format!("{:?}", thread.id()),
                std::borrow::ToOwned::to_owned,
            );
            eprintln!(
                "panescan span {} {ms:.3} ms at {at:.4} s on {on}",
                self.name
            );
        }
    }
}

/// Prints a label between spans (which case a run of spans belongs to),
/// if spans are on.
pub fn mark(label: &str) {
    if enabled() {
        eprintln!("panescan span -- {label}");
    }
}
