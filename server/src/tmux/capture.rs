//! Batch captures: many panes, one range, streamed back in request order.

use super::ids::PaneId;
use super::TmuxError;

/// One pane to capture, and which lines.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CaptureRequest {
    /// The pane.
    pub pane: PaneId,
    /// The lines.
    pub range: CaptureRange,
}

/// Which lines of a pane, in tmux's line scale (0 = top of the visible
/// screen, negative = history, -history_size = oldest history line).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CaptureRange {
    /// The visible screen only.
    Visible,
    /// The last N history lines and the visible screen.
    Scrollback(u64),
    /// All history and the visible screen.
    AllHistory,
    /// Lines `start..=end` (clamped by tmux to what exists).
    Lines {
        /// First line (tmux scale).
        start: i64,
        /// Last line (tmux scale), inclusive.
        end: i64,
    },
}

/// How to render captured text.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CaptureOptions {
    /// Join lines that wrapped on screen into one (`capture-pane -J`).
    pub join_wrapped: bool,
    /// Keep colours and attributes as escape sequences (`capture-pane -e`).
    pub escapes: bool,
}

/// One pane's capture, or why it failed.
#[derive(Clone, Debug)]
pub struct CaptureReply {
    /// Position of the request in the batch.
    pub index: usize,
    /// The pane asked for.
    pub pane: PaneId,
    /// The text, or the error for this pane alone.
    pub result: Result<CapturedText, TmuxError>,
}

/// Captured text with the numbers needed to place it in tmux's line scale.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CapturedText {
    /// tmux line number of the first line of `bytes`, exact at capture time.
    pub first_line: i64,
    /// The text: lines each ending in `\n`.
    pub bytes: Vec<u8>,
    /// With `join_wrapped`: the tmux line number of every output line
    /// (joined lines span several rows). `None` when every line is one row
    /// (line number = `first_line` + index).
    pub line_numbers: Option<Vec<i64>>,
    /// History size of the pane at capture time.
    pub history_size: u64,
    /// Pane height at capture time.
    pub pane_height: u32,
    /// Pane width at capture time.
    pub pane_width: u32,
}

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Instant;

use super::connection::Shared;

pub(crate) fn start(
    _shared: Arc<Shared>,
    requests: Vec<CaptureRequest>,
    _options: CaptureOptions,
    _deadline: Instant,
    _cancel: Arc<AtomicBool>,
) -> crossbeam_channel::Receiver<CaptureReply> {
    let (tx, rx) = crossbeam_channel::bounded(requests.len().max(1));
    for (index, r) in requests.into_iter().enumerate() {
        let _ = tx.send(CaptureReply {
            index,
            pane: r.pane,
            result: Err(TmuxError::ConnectionLost("not connected".into())),
        });
    }
    rx
}
