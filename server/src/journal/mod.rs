//! The journal: every line a pane printed, kept on disk past tmux's
//! history-limit, searchable across time.
//!
//! - [`dir`] — where it lives: `--journal-dir`, 0700, this user's only.
//! - [`frame`] — one flush's records as a compressed, checked frame (pure).
//! - [`index`] — a frame's trigrams and panes' line counts, so a search
//!   skips frames that cannot match (pure).
//! - [`segment`] — frames appended to hourly segment files, read back,
//!   torn tails cut, corrupt segments skipped and named, the oldest
//!   removed past `--journal-max-bytes` / `--journal-max-age`.
//! - [`track`] — one pane between reads: which lines are new, where a gap
//!   must be recorded (pure).
//! - [`pace`] — when the writer reads a pane: a pace after its last read,
//!   or at once when its counted output nears its history-limit (pure).
//! - [`printed`] — what the panes printed, as the writer learns it: the
//!   session feeds' counts in the daemon, its own event stream otherwise.
//! - [`writer`] — the daemon's thread that reads the panes' new lines
//!   through the pane cache's delta captures, redacts and writes them.
//! - [`servers`] — which directory holds which server's journal (the
//!   default one's the root), and the bounds over all of them.
//! - [`search`] — a pattern over the journaled text, with times; [`tail`]
//!   the tails of live panes. [`when`] — RFC 3339 times and `15m` spans.
//! - [`view`] — what the writer last saw of each pane, for the ledger.
//! - [`ledger`] — the command ledger's records on disk, and where a
//!   command's output lies in the journal.
//!
//! What must hold: a line reaches the disk redacted unless the operator
//! said `--journal-keep-secrets`; a line the journal could not keep is a
//! gap record with its span, never silence; a crash loses at most the
//! last second and never an earlier frame.

pub(crate) mod dir;
pub(crate) mod frame;
pub(crate) mod index;
pub(crate) mod ledger;
pub(crate) mod pace;
pub(crate) mod printed;
pub(crate) mod search;
pub(crate) mod segment;
pub(crate) mod servers;
pub(crate) mod tail;
pub(crate) mod track;
pub(crate) mod view;
pub(crate) mod when;
pub(crate) mod writer;

use std::path::PathBuf;

/// `--journal-max-bytes` unless given: 1 GiB.
pub const DEFAULT_MAX_BYTES: u64 = 1 << 30;

/// How the journal is kept.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JournalConfig {
    /// Where the segments are (`--journal-dir`).
    pub dir: PathBuf,
    /// The segments' bytes at most, the oldest removed first.
    pub max_bytes: u64,
    /// Segments unchanged for longer are removed.
    pub max_age_ms: i64,
    /// Write lines as they are, secrets included.
    pub keep_secrets: bool,
    /// Each pane's output through a pipe of its own (`pipe-pane`) rather
    /// than the session feeds (`--journal-taps`): tmux spends less, and
    /// the writer reads at [`pace::TAPPED_PACE`].
    pub taps: bool,
}
