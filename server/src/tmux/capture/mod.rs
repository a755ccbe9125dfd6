//! Batch captures: many panes, one range, streamed back in request order.
//!
//! A batch is cut into chunks, each one `tmux source-file` client whose
//! script heads every capture with a line holding a per-chunk 128-bit token
//! (`script`), so its output is cut exactly whatever the panes print
//! (`split`; `counted` for a chunk holding a large share of the server).
//! Two chunks are in flight (`batch`), sized by what tmux and the time left
//! hold (`sizing`), each read as it arrives and every pane handed out once
//! complete (`chunk`); concurrent sweeps share a server through `gate`, and
//! a small batch goes over the open control client instead (`control`).
//!
//! Must hold:
//! - `first_line` is exact even while a pane prints: tmux runs a script
//!   without yielding, so the history size the probe read is the one the
//!   capture saw; a vanished pane fails alone.
//! - Line numbers of joined captures are never guessed: a pane whose joined
//!   rows do not add up is captured again unjoined (`joined = false`).
//! - A cancel or deadline stops a batch between panes and kills its
//!   clients; no chunk asks tmux for more than the time left can hold.
//!
//! Why this path, what a command costs tmux, and how joined lines are
//! counted: NOTES.md, `tmux/capture/`.

mod anchor;
mod batch;
mod chunk;
mod control;
mod counted;
mod gate;
mod preamble;
mod script;
mod sizing;
mod spare;
mod split;
mod state;
mod unvis;

// The sweep's terminal, named by other modules' docs (oneshot, run/seat).
#[cfg(doc)]
pub(crate) use anchor::Anchor;
use gate::{Gate, Member};
pub use preamble::ListedAhead;
pub(crate) use preamble::Preamble;
pub use spare::Spare;
pub(crate) use state::ServerState;

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Instant;

use crossbeam_channel::{Receiver, Sender};

use super::ids::PaneId;
use super::launch::Endpoint;
use super::spans::Span;
use super::{Server, TmuxError};
use bytes::Bytes;

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
    /// The text: lines each ending in `\n`. Shared: the pane cache keeps it
    /// and hands searches views of it without copying.
    pub bytes: Bytes,
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
    /// Whether wrapped lines were joined (false when `join_wrapped` was not
    /// asked for, or when row numbers could not be verified and the pane was
    /// captured again unjoined).
    pub joined: bool,
}

/// Replies buffered ahead of a slow consumer.
const CHANNEL_CAPACITY: usize = 32;
/// Rough line budget of later chunks (on a server of up to ~500 panes; see
/// `sizing`).
const CHUNK_LINES: u64 = 120_000;

pub(crate) fn start(
    shared: Arc<Server>,
    requests: Vec<CaptureRequest>,
    options: CaptureOptions,
    deadline: Instant,
    cancel: Arc<AtomicBool>,
    ahead: Ahead,
) -> Receiver<CaptureReply> {
    let Ahead {
        spare,
        over_control,
        preamble,
    } = ahead;
    let alone_first = preamble.is_some();
    let (tx, rx) = crossbeam_channel::bounded(CHANNEL_CAPACITY);
    let socket = shared.connection().endpoint().clone();
    let server_panes = shared.listings().panes();
    // A one-pane capture is the cheap call the gate keeps moving.
    let member = (requests.len() > 1).then(|| Gate::join(&shared.capture().gate));
    let spawned = std::thread::Builder::new()
        .name("tmux-capture".into())
        .spawn({
            let requests = requests.clone();
            let tx = tx.clone();
            move || {
                let mut batch = Batch {
                    socket,
                    anchor: None,
                    spare: std::sync::Mutex::new(spare),
                    server_panes,
                    options,
                    deadline,
                    cancel,
                    tx,
                    member,
                    counting: Arc::new(AtomicBool::new(true)),
                    preamble: std::sync::Mutex::new(preamble),
                    alone_first,
                };
                if over_control && !alone_first && batch.run_over_control(&shared, &requests) {
                    return;
                }
                // The terminal query is a round trip: made here, not in the
                // caller's thread. Small batches walk little: no anchor.
                let finding = Span::new("capture.anchor");
                batch.anchor = (requests.len() >= anchor::MIN_REQUESTS)
                    .then(|| anchor::find(&shared, &requests, deadline))
                    .flatten();
                drop(finding);
                let _sweeping = Span::new("capture.batch");
                batch.run(requests)
            }
        });
    if let Err(e) = spawned {
        let error = TmuxError::spawn("", e);
        for (index, r) in requests.into_iter().enumerate() {
            let _ = tx.send(CaptureReply {
                index,
                pane: r.pane,
                result: Err(error.clone()),
            });
        }
    }
    rx
}

/// One batch on its thread: what it captures, how, until when, and where
/// the replies go.
struct Batch {
    socket: Endpoint,
    /// Panes on the server at its last listing (0: not known).
    server_panes: usize,
    options: CaptureOptions,
    deadline: Instant,
    cancel: Arc<AtomicBool>,
    tx: Sender<CaptureReply>,
    /// The sweep's place at the server's gate (`None`: one pane, ungated).
    member: Option<Member>,
    /// The terminal its clients show tmux (`None`: they read a pipe).
    anchor: Option<Arc<anchor::Anchor>>,
    /// A client started ahead for the first pipe-fed chunk (`spare.rs`).
    spare: std::sync::Mutex<Option<Spare>>,
    /// Whether visible chunks may still be counted (`counted.rs`): a chunk
    /// that had to capture many panes again turns it off for the batch.
    counting: Arc<AtomicBool>,
    /// A listing for the top of the first chunk, until it is launched.
    preamble: std::sync::Mutex<Option<Preamble>>,
    /// The first chunk runs alone: no other chunk of the batch may reach
    /// tmux before its preamble's listing (`preamble.rs`).
    alone_first: bool,
}

/// What a batch may use besides sweeps of its own.
#[derive(Debug, Default)]
pub(crate) struct Ahead {
    /// A client started ahead for the first pipe-fed chunk (`spare.rs`).
    pub(crate) spare: Option<Spare>,
    /// A small batch may go over the open control client (`control.rs`).
    pub(crate) over_control: bool,
    /// A listing for the top of the first chunk (`preamble.rs`).
    pub(crate) preamble: Option<Preamble>,
}

/// A sweep client started on the kept anchor's terminal before the
/// batch's script is known (`spare.rs`), for a caller about to sweep a
/// server of many panes; `None` when there is no live anchor kept (the
/// first sweep, another host) or too few panes for an anchor to pay.
pub(crate) fn anchored_spare(shared: &Server) -> Option<Spare> {
    if shared.listings().panes() < anchor::MIN_REQUESTS {
        return None;
    }
    let anchor = anchor::kept(shared)?;
    Spare::start_anchored(
        shared.connection().endpoint(),
        anchor,
        &script::sweep_token(),
    )
}
