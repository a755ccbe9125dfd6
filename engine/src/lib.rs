//! panescan-engine: find lines in pane captures, under hard budgets.
//!
//! The engine knows nothing about tmux. It takes captures (bytes, an opaque
//! key, and the tmux line number of the first line) and returns the matching
//! lines and the flags of every budget that stopped the search.
//!
//! # Pieces
//!
//! * [`pattern`] — the bounded grammar and the compiled [`Matcher`]
//!   (memchr, aho-corasick, or a regex-automata lazy DFA; never a
//!   backtracker).
//! * [`budget`] — shared atomic budgets ([`Limits`]) and the flags that say
//!   which one stopped a search ([`ClampFlags`]).
//! * [`scan`] — one capture in, matching lines ([`LineMatch`]) out: the whole
//!   buffer is scanned in one pass and hits are mapped to lines afterwards.
//! * [`search`](mod@search) — the parallel driver: captures arrive on a channel, are
//!   scanned on rayon, results come out in capture order.
//! * [`text`] — escape-sequence stripping, lossy UTF-8, clipping.
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
//!   identical for any number of threads; see [`budget`].

pub mod budget;
#[doc(hidden)]
pub mod fuzzing;
pub mod pattern;
pub mod scan;
pub mod search;
pub mod text;

pub use budget::{ClampFlags, Limits};
pub use pattern::{
    Matcher, Pattern, PatternError, PatternOptions, MAX_PATTERNS, MAX_PATTERN_BYTES, MAX_REPETITION,
};
pub use scan::{Capture, LineMatch};
pub use search::{
    search, search_captures, Incoming, PaneMatches, Progress, SearchOptions, SearchOutcome,
};
