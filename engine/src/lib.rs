//! panescan-engine: find lines in pane captures, under hard budgets.
//!
//! The engine knows nothing about tmux. It takes captures (bytes, an opaque
//! key, and the tmux line number of the first line) and returns the matching
//! lines and the flags of every budget that stopped the search. The API
//! is at the crate root; the modules behind it are private.
//!
//! * [`Matcher`] — the bounded grammar ([`PatternOptions`], [`Pattern`]) on
//!   memchr, aho-corasick or a lazy DFA, never a backtracker; a rejected
//!   pattern is a [`PatternError`] naming the byte and the limit.
//! * [`search()`] and [`search_captures`] (an example there) — the parallel
//!   driver: [`Capture`]s (a shared [`Bytes`], read in place, copied only
//!   where text must be cleaned) arrive as [`Incoming`] or in a list, are
//!   scanned on rayon while later ones arrive, and come back in key order as
//!   a [`SearchOutcome`] of [`PaneMatches`] and [`LineMatch`]es.
//! * [`SearchOptions`] — the budgets ([`SearchBudgets`]) and the output
//!   shape; the outcome's [`ClampFlags`] say which budget stopped a search.
//! * [`strip_escapes`] — the scanner's escape stripping; [`redact()`] —
//!   secrets as `[REDACTED:KIND]` ([`SearchOptions::redact`]: after matching).
//!
//! Inside, in the order a search uses them: `pattern` (grammar, matcher),
//! `budget` (atomic, charged in key order), `scan` (one capture in one
//! pass), `search` (the driver), `text` (escapes, lossy UTF-8, clipping),
//! `lanes` (whole-buffer byte passes) and `redact`.
//!
#![doc = include_str!("../GRAMMAR.md")]
//!
//! # Semantics worth knowing
//!
//! * A line with several hits is reported once, with the **lowest index** of
//!   the patterns that match it (not the pattern of the first match
//!   position).
//! * Lines: a final `\n` ends the last line; `\r\n` is one line end and the
//!   `\r` is not part of the text; an empty capture has no lines.
//! * Output text is valid UTF-8 (invalid bytes become U+FFFD), escape
//!   sequences are stripped (before matching, when
//!   [`SearchOptions::strip_escapes`] is on), and every text is clipped to
//!   [`SearchOptions::max_text_bytes`] around the match, marked with `…`.
//! * Byte and line budgets are charged in key order, so clamped results are
//!   identical for any number of threads; see [`SearchBudgets`].

#![warn(missing_docs)]

mod budget;
#[doc(hidden)]
pub mod fuzz_redact;
#[doc(hidden)]
pub mod fuzz_structured;
#[doc(hidden)]
pub mod fuzzing;
mod lanes;
mod pattern;
mod redact;
mod scan;
mod search;
mod text;

pub use budget::{ClampFlags, SearchBudgets};
pub use bytes::Bytes;
pub use pattern::{
    Matcher, Needs, Pattern, PatternError, PatternOptions, MAX_CACHE_BYTES, MAX_DFA_BYTES,
    MAX_NESTING, MAX_NFA_BYTES, MAX_PATTERNS, MAX_PATTERN_BYTES, MAX_REPETITION,
};
pub use redact::{redact, redact_bytes};
pub use scan::{Capture, LineMatch};
pub use search::{
    max_in_flight, search, search_captures, Incoming, PaneMatches, Progress, SearchOptions,
    SearchOutcome,
};
pub use text::strip_escapes;
