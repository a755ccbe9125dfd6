//! panescan-engine: find lines in pane captures, under hard budgets.
//!
//! The engine knows nothing about tmux. It takes captures (bytes, an opaque
//! key, and the tmux line number of the first line) and returns the matching
//! lines and the flags of every budget that stopped the search. A capture's
//! bytes are a shared [`Bytes`]: a caller that keeps its text (a cache)
//! hands the search a view of it ([`Capture::shared`]), which the search
//! reads in place, copying only text it must clean (`\r\n`, escapes).
//!
//! # Pieces
//!
//! The public API is at the crate root; the modules behind it are private.
//!
//! * [`Matcher`] — the bounded grammar compiled into an any-of matcher
//!   (memchr, aho-corasick, or a regex-automata lazy DFA; never a
//!   backtracker), built from pattern strings and [`PatternOptions`] or from
//!   [`Pattern`]s; a rejected pattern is a [`PatternError`] naming the byte
//!   and the limit.
//! * [`search()`] and [`search_captures`] — the parallel driver: [`Capture`]s
//!   arrive on a channel (as [`Incoming`]) or in a list, are scanned on
//!   rayon while later ones arrive, and come back in key order as a
//!   [`SearchOutcome`] of [`PaneMatches`] and [`LineMatch`]es.
//! * [`SearchOptions`] — the budgets ([`SearchBudgets`]: bytes, lines,
//!   deadline, matches) and the output shape; the [`ClampFlags`] of the
//!   outcome say which budget stopped a search.
//! * [`strip_escapes`] — the escape-sequence stripping the scanner applies
//!   before matching, for callers that want the same visible text.
//! * [`redact`] — secrets (tokens, keys, passwords, private key blocks)
//!   replaced with `[REDACTED:KIND]`; [`SearchOptions::redact`] applies it
//!   to the lines a search returns, after matching on the real text.
//!
//! Inside, in the order a search uses them: `pattern/` (grammar and matcher), `budget.rs`
//! (the shared atomic budgets, charged in key order), `scan.rs` (one
//! capture: the whole buffer in one pass, hits mapped to lines afterwards),
//! `search/` (the driver, the tasks and the final assembly), `text.rs`
//! (escape stripping, lossy UTF-8, clipping), `lanes.rs` (whole-buffer
//! byte passes: the survey of a capture, the lowered copy) and `redact.rs`
//! (secrets).
//!
//! ```
//! use panescan_engine::{search_captures, Capture, Matcher, PatternOptions, SearchOptions};
//!
//! let matcher = Matcher::new(&["error"], PatternOptions::default())?;
//! let captures = vec![
//!     Capture::new(0, -2, "compiling\nERROR: disk full\nok\n"),
//!     Capture::new(1, 0, "all good\n"),
//! ];
//! let outcome = search_captures(&matcher, &SearchOptions::default(), captures);
//! assert_eq!(outcome.panes.len(), 1);
//! assert_eq!(outcome.panes[0].lines[0].line, -1);
//! assert_eq!(outcome.panes[0].lines[0].text, "ERROR: disk full");
//! # Ok::<(), panescan_engine::PatternError>(())
//! ```
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
    Matcher, Pattern, PatternError, PatternOptions, MAX_CACHE_BYTES, MAX_DFA_BYTES, MAX_NESTING,
    MAX_NFA_BYTES, MAX_PATTERNS, MAX_PATTERN_BYTES, MAX_REPETITION,
};
pub use redact::{redact, redact_bytes};
pub use scan::{Capture, LineMatch};
pub use search::{
    max_in_flight, search, search_captures, Incoming, PaneMatches, Progress, SearchOptions,
    SearchOutcome,
};
pub use text::strip_escapes;
