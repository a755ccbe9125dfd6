//! Batch captures: many panes, one range, streamed back in request order.
//!
//! # How
//!
//! A batch is cut into chunks; each chunk is one `tmux source-file -`
//! process whose script holds, per pane, a probe and the capture:
//!
//! ```text
//! display-message -p -t %P "TOKEN i #{pane_id} #{history_size} #{pane_width} #{pane_height}"
//! capture-pane -p [-J] [-e] -t %P [-S s] [-E e]
//! ```
//!
//! and ends with `display-message -p "TOKEN end"`. (A chunk that holds a
//! large share of the server's panes instead opens with one `list-panes -a`
//! of those fields and heads each capture with a bare `TOKEN i` line: see
//! `script`.) TOKEN is 128 random bits per chunk: no pane can print it, so
//! the header lines split the output exactly, whatever the panes contain
//! (no `%end` forgery possible; `split.rs` cuts the output as it arrives).
//! tmux runs a `source-file` script without yielding between its commands,
//! so the `history_size` the script read is the one the capture saw:
//! `first_line` is exact even while the pane prints. A vanished pane shows
//! an empty probe (or is missing from the listing) and fails alone.
//!
//! # Why this path
//!
//! Measured against the other ways of getting the same text out of tmux
//! (BENCHMARKS.md, "tmux transport", with the commands): a control client
//! pipelining `capture-pane -p` leaks in tmux and is slower deep; going
//! through buffers (`capture-pane -b` + `show-buffer` + `delete-buffer`)
//! does not leak but costs three round trips a pane; one process per pane
//! is slowest by far. One `source-file -` process per chunk is the fastest
//! deep path that leaks nothing. A small batch of the pane cache (a since
//! search's few deltas) is the exception: there the process is most of
//! the cost, and the buffer path over the control client already attached
//! (two pipelined lines a request, not three round trips) answers it
//! without one (`control.rs`).
//!
//! 500-line slices were no cheaper for tmux here, and slicing a range needs
//! the history size before the script is written (breaking the atomic probe),
//! so captures are not sliced.
//!
//! The `source-file` sweep is the fastest deep path (tmux writes to a plain
//! client far cheaper than through control-mode blocks), does not leak (the
//! 3.2-3.5a leak is in control-mode `capture-pane -p`), attaches nothing
//! (no hooks, no `session_attached`), leaves no buffer, and works the same on
//! a server with no session. tmux runs a whole script before it writes any
//! of its output, so a batch is split into chunks (small first, then larger)
//! with two processes in flight: tmux produces chunk k+1 while chunk k's
//! output is read, each pane handed out the moment the next header shows it
//! complete (a pane is scanned while tmux still sends the rest); a cancel or
//! deadline stops the batch between panes (in-flight processes are killed
//! through their `Child` handles). Concurrent sweeps on one server share
//! it through `gate.rs`: a few chunks in flight over all of them, smaller
//! chunks while several run, so a cheap call waits behind a few chunks,
//! never behind whole sweeps. Cutting the output as it arrives instead
//! of after the whole chunk brought a deep capture most of the way to a raw
//! single sweep (BENCHMARKS.md). tmux finishes a script
//! even when its client is killed, so a chunk is also sized to what the
//! time left can hold (at the rate the batch has seen): a search that runs
//! out of time does not leave tmux busy with captures nobody reads.
//!
//! # What a command costs tmux, and why a sweep cannot match a raw fetch
//!
//! tmux 3.3a's source: every command from a client without a session (a
//! `source-file` client is one) runs `cmd_find_current_client`, whose
//! `cmd_find_inside_pane` compares the client's tty name with every pane's
//! (cmd-find.c): each command costs O(panes) before it does anything. A
//! `-t %P` target adds a walk over the session's winlinks to place the pane.
//! So a command costs tmux a fixed amount that grows with the server, and a
//! visible `capture-pane` costs not much more than that. The walk stops at
//! the first pane whose tty matches the client's: a sweep's clients show
//! tmux the terminal of its lowest-numbered pane (`anchor.rs`, which says
//! why that is harmless), which takes most of the walk away. Exact framing
//! needs a header per capture, i.e. a second command per pane, which on a
//! big server costs tmux about what a visible capture does; deep captures,
//! where the capture itself dominates, come close to the raw sweep anyway
//! (BENCHMARKS.md, "tmux transport"). A chunk costs more than its
//! commands: it is a client, whose few turns of tmux's event loop each
//! poll every pane, and its script's parse costs the square of its bytes;
//! `chunk_panes` weighs the two.
//!
//! Per-pane headers are dropped where a chunk holds a large share of the
//! server's panes (`counted.rs`): the chunk's own listing gives each
//! pane's rows, and the captures are dealt out by counting, with one header
//! per group of panes to check the count. Visible chunks count unjoined
//! rows (a pane with a row reaching the pane's edge is captured again with
//! a header, and `-J` when joining); deep chunks count joined lines by the
//! rows their text fills, where that is sure (lines of ASCII), and capture
//! a group again with headers where it is not.
//!
//! The control-mode leak: `capture-pane -p` hands a control client its text
//! with `control_write()` and never frees the buffer (cmd-capture-pane.c),
//! so every control-mode capture leaks its whole text inside tmux.
//!
//! # Line numbers of joined captures
//!
//! With `join_wrapped`, a joined line spans the rows tmux wraps it onto:
//! its characters placed cell by cell (display widths, escape sequences
//! skipped), a wide character that does not fit in a row's last cell
//! starting the next row; a line no longer in bytes than the pane is wide
//! is one row, uncounted. The rows are summed and checked against the rows
//! the range covers; if they disagree, or a line holds a character whose
//! width tmux may see otherwise (a zero-width joiner, a variation selector:
//! two such errors of opposite sign would add up and misnumber every line
//! between them), the pane is captured again without joining and that
//! capture is returned (`joined = false`), so numbers are never guessed.

mod anchor;
mod control;
mod counted;
mod gate;
mod preamble;
mod spare;
mod split;
mod state;
mod unvis;

use gate::Gate;
pub use preamble::ListedAhead;
pub(crate) use preamble::Preamble;
pub use spare::Spare;
pub(crate) use state::ServerState;

use super::ids::PaneId;
use super::TmuxError;
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

use std::io::Read;
use std::process::Child;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender};

use super::connection::Route;
use super::launch::Endpoint;
use super::oneshot;
use super::spans::Span;
use super::Server;
use crate::sync::nonce;
use gate::{Member, Permit};
use split::{Split, Splitter};

/// Replies buffered ahead of a slow consumer.
const CHANNEL_CAPACITY: usize = 32;
/// Rough line budget of the first chunk (small, to deliver early).
const FIRST_CHUNK_LINES: u64 = 16_000;
/// Rough line budget of later chunks (on a server of up to ~500 panes).
const CHUNK_LINES: u64 = 120_000;
/// Most panes in one chunk on a small server (see [`chunk_panes`]).
const CHUNK_PANES: usize = 400;
/// Panes a chunk may hold: the square root of this times the server's.
const CHUNK_PANES_SCALE: usize = 1_000;
/// Lines a later chunk may hold per pane it may hold (see [`chunk_panes`]).
const CHUNK_LINES_PER_PANE: u64 = 240;
/// Lines a second tmux is assumed to capture before a batch has measured
/// it (here: ~2,000 lines/ms for 200-cell lines; half that, to be safe).
const ASSUMED_LINES_PER_MS: u64 = 1_000;

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

/// A chunk in flight: its process and the thread reading it.
struct Flight {
    start: usize,
    len: usize,
    /// The `source-file` client, shared with its reader (which reaps it);
    /// killed through std so a reaped pid is never signalled.
    child: Option<SharedChild>,
    events: Receiver<ChunkEvent>,
}

/// What a chunk's reader sends, in order.
enum ChunkEvent {
    /// Request `i` of the chunk: every request once, in order, each as soon
    /// as its text is complete.
    Pane(usize, Result<Split, TmuxError>),
    /// The sweep is over: `Ok` once its end marker was read (every request
    /// was handed out), else why not (the requests not handed out yet get
    /// this error).
    End(Result<(), TmuxError>),
}

/// Events a chunk's reader may send ahead of the batch.
const EVENTS_AHEAD: usize = 16;

/// Most panes in one chunk on a server of `server_panes` (0: not known),
/// `left` requests still to be cut: the rest is split evenly.
///
/// Two costs of tmux (3.3a-3.6) pull apart here. Each chunk is a client,
/// and a client costs tmux a few turns of its event loop, each of which
/// polls every pane's terminal and walks every window: a chunk's fixed cost
/// grows with the server (~15-30 ms of tmux on 1,000 panes). Parsing a
/// script, tmux logs its whole command list with `strlcat` in a loop
/// (`cmd_parse_build_commands`): a cost that grows with the square of the
/// chunk (~30% of tmux's time in one 1,000-pane visible chunk). Over a
/// sweep, `panes / n` chunks cost `panes / n * server` and `panes * n`, least
/// near `n = sqrt(K * server)`; K here is what measured best on 1,000 panes
/// (BENCHMARKS.md, "tmux transport"). An even split leaves no small last
/// chunk paying a whole client for a few panes.
fn chunk_panes(server_panes: usize, left: usize) -> usize {
    let most = CHUNK_PANES.max((CHUNK_PANES_SCALE * server_panes).isqrt());
    let chunks = left.div_ceil(most).max(1);
    left.div_ceil(chunks).max(1)
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
    Spare::start_anchored(shared.connection().endpoint(), anchor, &sweep_token())
}

/// A chunk's token: 128 random bits written as 22 letters and digits
/// (62^22 > 2^128) instead of 32 hex digits. It heads every header line,
/// and tmux's parse of a script costs the square of its bytes (see
/// [`chunk_panes`]): the shorter token keeps the same secret in fewer bytes.
fn sweep_token() -> String {
    const DIGITS: &[u8; 62] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    let hex = nonce();
    let Ok(mut n) = u128::from_str_radix(&hex, 16) else {
        // Not expected; the hex token is as secret, only longer.
        return hex;
    };
    let mut token = String::with_capacity(22);
    for _ in 0..22 {
        token.push(char::from(DIGITS[(n % 62) as usize]));
        n /= 62;
    }
    token
}

/// The `-S`/`-E` arguments for `range`.
fn range_args(range: CaptureRange) -> (Option<String>, Option<String>) {
    const LO: i64 = -2_000_000_000;
    const HI: i64 = 32_767;
    match range {
        CaptureRange::Visible | CaptureRange::Scrollback(0) => (None, None),
        CaptureRange::Scrollback(n) => match i64::try_from(n) {
            Ok(n) if n < -LO => (Some(format!("-{n}")), None),
            _ => (Some("-".into()), None),
        },
        CaptureRange::AllHistory => (Some("-".into()), None),
        CaptureRange::Lines { start, end } => (
            Some(start.clamp(LO, HI).to_string()),
            Some(end.clamp(LO, HI).to_string()),
        ),
    }
}

/// tmux's own clamping of `-S`/`-E` (cmd-capture-pane.c): the first and
/// last line captured, in tmux's scale.
fn span(range: CaptureRange, hsize: u64, height: u32) -> (i64, i64) {
    let h = i64::try_from(hsize).unwrap_or(i64::MAX / 4);
    let sy = i64::from(height.max(1));
    let (s, e) = range_args(range);
    let pos = |arg: Option<String>, default: i64, dash: i64| -> i64 {
        match arg.as_deref() {
            None => default,
            Some("-") => dash,
            Some(v) => {
                let n: i64 = v.parse().unwrap_or(0);
                let top = if n < 0 && -n > h { 0 } else { h + n };
                top.min(h + sy - 1)
            }
        }
    };
    let top = pos(s, h, 0);
    let bottom = pos(e, h + sy - 1, h + sy - 1);
    let (a, b) = if bottom < top {
        (bottom, top)
    } else {
        (top, bottom)
    };
    (a - h, b - h)
}

/// Lines a request is expected to return; `seen` is the mean pane size
/// (history + screen) observed so far in this batch.
fn estimate_lines(range: CaptureRange, seen: Option<u64>) -> u64 {
    let pane = seen.unwrap_or(2_000).max(1);
    match range {
        CaptureRange::Visible | CaptureRange::Scrollback(0) => 60,
        CaptureRange::Scrollback(n) => n.min(pane) + 60,
        CaptureRange::AllHistory => pane,
        CaptureRange::Lines { start, end } => start.abs_diff(end).min(100_000) + 1,
    }
}

impl Batch {
    fn reply(&self, index: usize, pane: PaneId, result: Result<CapturedText, TmuxError>) -> bool {
        self.tx
            .send(CaptureReply {
                index,
                pane,
                result,
            })
            .is_ok()
    }

    /// Answers a small batch over the live control client (`control.rs`);
    /// `false` when sweeps must answer it instead (nothing was answered).
    fn run_over_control(&self, shared: &Server, requests: &[CaptureRequest]) -> bool {
        if !shared.capture().over_control()
            || !control::suits(requests)
            || shared.connection().own_client_pid().is_none()
        {
            return false;
        }
        let Ok(Route::Control(client)) = shared.connection().route(self.deadline) else {
            return false;
        };
        let _fetching = Span::new("capture.control");
        let results =
            match control::fetch(&client, requests, self.options, self.deadline, &self.cancel) {
                control::Fetched::Done(results) => results,
                control::Fetched::Unsuited => {
                    shared.capture().refuse_over_control();
                    return false;
                }
            };
        for (index, (r, result)) in requests.iter().zip(results).enumerate() {
            let result = result.and_then(|s| self.verify(r, s));
            if !self.reply(index, r.pane, result) {
                break;
            }
        }
        true
    }

    fn run(self, requests: Vec<CaptureRequest>) {
        // Chunks are cut as they are launched, sized by the pane sizes seen
        // so far, so one sweep keeps tmux busy for a bounded time.
        let started = Instant::now();
        let mut next_start = 0usize;
        let (mut seen_lines, mut seen_panes) = (0u64, 0u64);
        let mut flights: std::collections::VecDeque<Flight> = Default::default();
        let mut sent = 0usize;
        let mut failure: Option<TmuxError> = None;
        while sent < requests.len() {
            // Keep two chunks in flight, as the server's gate allows.
            let most = if self.alone_first && sent == 0 { 1 } else { 2 };
            while failure.is_none() && flights.len() < most && next_start < requests.len() {
                failure = self.stopped();
                if failure.is_some() {
                    break;
                }
                let permit = match self.permit(flights.len()) {
                    Ok(permit) => permit,
                    Err(Some(why)) => {
                        failure = Some(why);
                        break;
                    }
                    Err(None) => break,
                };
                let a = next_start;
                let b = self.chunk_end(&requests, a, &started, seen_lines, seen_panes);
                next_start = b;
                let counted = self.counted_flags(&requests[a..b]);
                flights.push_back(self.launch(&requests[a..b], a, self.options, permit, counted));
            }
            let Some(flight) = flights.pop_front() else {
                break;
            };
            let end = flight.start + flight.len;
            let finished = loop {
                if failure.is_none() {
                    failure = self.stopped();
                }
                if failure.is_some() {
                    break false;
                }
                let step = self
                    .deadline
                    .saturating_duration_since(Instant::now())
                    .min(Duration::from_millis(20));
                let event = match flight.events.recv_timeout(step) {
                    Ok(event) => event,
                    Err(crossbeam_channel::RecvTimeoutError::Timeout) => continue,
                    Err(crossbeam_channel::RecvTimeoutError::Disconnected) => ChunkEvent::End(Err(
                        TmuxError::ConnectionLost("capture reader stopped".into()),
                    )),
                };
                match event {
                    ChunkEvent::Pane(k, result) => {
                        let index = flight.start + k;
                        let Some(request) = requests.get(index) else {
                            continue;
                        };
                        let result = result.and_then(|s| self.verify(request, s));
                        if let Ok(t) = &result {
                            seen_lines += t.history_size + u64::from(t.pane_height);
                            seen_panes += 1;
                        }
                        if !self.reply(index, request.pane, result) {
                            self.abort(flights);
                            return;
                        }
                        sent = index + 1;
                    }
                    ChunkEvent::End(outcome) => {
                        let e = outcome.err().unwrap_or_else(|| {
                            TmuxError::ConnectionLost("capture ended early".into())
                        });
                        for (index, r) in requests.iter().enumerate().take(end).skip(sent) {
                            if !self.reply(index, r.pane, Err(e.clone())) {
                                self.abort(flights);
                                return;
                            }
                        }
                        sent = sent.max(end);
                        break true;
                    }
                }
            };
            if !finished {
                flights.push_front(flight);
                break;
            }
        }
        let why = failure.unwrap_or(TmuxError::ConnectionLost("capture stopped".into()));
        self.abort(flights);
        for (index, r) in requests.iter().enumerate().skip(sent) {
            if !self.reply(index, r.pane, Err(why.clone())) {
                return;
            }
        }
    }

    /// The end of the chunk that starts at request `a`, sized by the pane
    /// sizes seen so far (`seen_lines` in `seen_panes`) and the time left.
    fn chunk_end(
        &self,
        requests: &[CaptureRequest],
        a: usize,
        started: &Instant,
        seen_lines: u64,
        seen_panes: u64,
    ) -> usize {
        let alone = if a == 0 {
            FIRST_CHUNK_LINES
        } else {
            CHUNK_LINES
        };
        let most = chunk_panes(self.server_panes, requests.len() - a);
        let alone = if a == 0 {
            alone
        } else {
            alone.max(most as u64 * CHUNK_LINES_PER_PANE)
        };
        let budget = self.member.as_ref().map_or(alone, |m| m.chunk_lines(alone));
        // tmux runs a script to its end even if its client is killed, so a
        // chunk sent to tmux is work done whatever happens: ask for no more
        // than the time left can hold, or a search that ran out of time
        // would leave tmux busy for the next call.
        let budget = budget.min(self.lines_in_time_left(started, seen_lines).max(1));
        let seen = (seen_panes > 0).then(|| seen_lines / seen_panes);
        let (mut b, mut lines) = (a, 0);
        while b < requests.len() && (b == a || lines < budget) && b - a < most {
            lines += estimate_lines(requests[b].range, seen);
            b += 1;
        }
        b
    }

    /// The gate's leave for one more chunk, the batch holding `held`:
    /// `Ok(None)` for an ungated batch; `Err(None)` when a further chunk
    /// must wait (read the ones in flight first); `Err(Some(why))` when the
    /// batch stopped while waiting for its first.
    fn permit(&self, held: usize) -> Result<Option<Permit>, Option<TmuxError>> {
        let Some(member) = &self.member else {
            return Ok(None);
        };
        if held > 0 {
            return member.try_acquire(held).map(Some).ok_or(None);
        }
        let cancel = &self.cancel;
        match member.acquire(self.deadline, || cancel.load(Ordering::Relaxed)) {
            Some(permit) => Ok(Some(permit)),
            None => Err(Some(self.stopped().unwrap_or(TmuxError::Timeout))),
        }
    }

    /// Why the batch must stop now (cancelled, or out of time), if it must.
    fn stopped(&self) -> Option<TmuxError> {
        if self.cancel.load(Ordering::Relaxed) {
            Some(TmuxError::Cancelled)
        } else if Instant::now() >= self.deadline {
            Some(TmuxError::Timeout)
        } else {
            None
        }
    }

    /// About how many lines tmux can capture before the deadline, at the
    /// rate this batch has seen so far (`seen_lines` since `started`), or
    /// at [`ASSUMED_LINES_PER_MS`] until it has seen enough.
    fn lines_in_time_left(&self, started: &Instant, seen_lines: u64) -> u64 {
        let left_ms = self
            .deadline
            .saturating_duration_since(Instant::now())
            .as_millis();
        let elapsed_ms = started.elapsed().as_millis().max(1);
        let seen_rate = u128::from(seen_lines) / elapsed_ms;
        let rate = seen_rate.max(u128::from(ASSUMED_LINES_PER_MS));
        u64::try_from(left_ms.saturating_mul(rate)).unwrap_or(u64::MAX)
    }

    fn abort(&self, flights: std::collections::VecDeque<Flight>) {
        for f in flights {
            if let Some(c) = &f.child {
                kill_child(c);
            }
        }
    }

    /// The flags of a counted chunk (`counted.rs`) for `chunk`, if it may
    /// be one: a chunk of visible or of deep captures (`counted::rows_for`)
    /// holding a large share of the server's panes (so its listing is
    /// worth it), on a server whose version the anchor read, while
    /// counting pays in this batch.
    fn counted_flags(&self, chunk: &[CaptureRequest]) -> Option<&'static str> {
        let listed = self.server_panes > 0 && chunk.len() * 4 >= self.server_panes;
        if !listed || !self.counting.load(Ordering::Relaxed) {
            return None;
        }
        counted::rows_for(chunk, self.options)?;
        self.anchor.as_ref()?.counted_flags()
    }

    /// Starts a chunk; `permit` (the gate's leave) is held until its
    /// process has ended. `counted`: the flags of a counted chunk.
    fn launch(
        &self,
        chunk: &[CaptureRequest],
        start: usize,
        options: CaptureOptions,
        permit: Option<Permit>,
        counted: Option<&'static str>,
    ) -> Flight {
        let (tx, rx) = crossbeam_channel::bounded(EVENTS_AHEAD);
        let token = sweep_token();
        let own = match counted {
            Some(flags) => counted::script(&token, chunk, options, flags),
            None => script(&token, chunk, options, self.server_panes),
        };
        let preamble = crate::sync::lock(&self.preamble)
            .take()
            .and_then(|p| p.head(&token).ok());
        let (script, mut preamble) = match preamble {
            Some((head, reader)) => (head + &own, Some(reader)),
            None => (own, None),
        };
        let meta: Vec<CaptureRequest> = chunk.to_vec();
        let (child, script_file) = self.spawn(&token, script);
        let child: Result<SharedChild, TmuxError> =
            child.map(|c| Arc::new(std::sync::Mutex::new(c)));
        let shared_child = child.as_ref().ok().cloned();
        let socket = self.socket.clone();
        let counting = Arc::clone(&self.counting);
        let spawned = std::thread::Builder::new()
            .name("tmux-capture-chunk".into())
            .spawn(move || {
                let chunk = Chunk {
                    socket: &socket,
                    token: &token,
                    requests: &meta,
                    options,
                    counted: counted.is_some(),
                };
                let outcome = child.and_then(|c| chunk.read(&c, preamble.as_mut(), &counting, &tx));
                drop((permit, script_file));
                let _ = tx.send(ChunkEvent::End(outcome));
            });
        if let Err(e) = spawned {
            if let Some(c) = &shared_child {
                kill_child(c);
            }
            let (tx, rx2) = crossbeam_channel::bounded(1);
            let _ = tx.send(ChunkEvent::End(Err(TmuxError::spawn("", e))));
            return Flight {
                start,
                len: chunk.len(),
                child: None,
                events: rx2,
            };
        }
        Flight {
            start,
            len: chunk.len(),
            child: shared_child,
            events: rx,
        }
    }

    /// Starts a chunk's client: the spare started ahead for this kind of
    /// chunk when there is one (`spare.rs`); else on the anchor's terminal
    /// with the script in a file when the batch has one (the file lives
    /// until the chunk ends), else with the script on a pipe.
    fn spawn(
        &self,
        token: &str,
        script: String,
    ) -> (Result<Child, TmuxError>, Option<anchor::ScriptFile>) {
        if let Some((child, fifo)) = self
            .take_spare()
            .and_then(|spare| spare.feed(script.clone(), self.deadline))
        {
            return (Ok(child), fifo);
        }
        if let Some(anchor) = &self.anchor {
            if let (Some(file), Some(stdin)) = (anchor.script_file(token, &script), anchor.stdin())
            {
                if let Ok(child) = oneshot::spawn_source_path(&self.socket, file.path(), stdin) {
                    return (Ok(child), Some(file));
                }
            }
        }
        (oneshot::spawn_source(&self.socket, script), None)
    }

    /// The spare started ahead, if it can run this batch's chunks: an
    /// anchored one on the batch's own anchor, a pipe-fed one when the
    /// batch has none.
    fn take_spare(&self) -> Option<Spare> {
        let mut spare = self.spare.lock().ok()?;
        if spare.as_ref()?.serves(self.anchor.as_ref()) {
            spare.take()
        } else {
            None
        }
    }

    /// Checks joined row numbers; captures again unjoined when they do not
    /// add up (within the batch deadline).
    fn verify(&self, req: &CaptureRequest, split: Split) -> Result<CapturedText, TmuxError> {
        if split.rows_match {
            return Ok(split.text);
        }
        let options = CaptureOptions {
            join_wrapped: false,
            ..self.options
        };
        let flight = self.launch(std::slice::from_ref(req), 0, options, None, None);
        let result = match flight.events.recv_deadline(self.deadline) {
            Ok(ChunkEvent::Pane(_, result)) => result.map(|s| s.text),
            Ok(ChunkEvent::End(Err(e))) => Err(e),
            Ok(ChunkEvent::End(Ok(()))) => Err(TmuxError::ConnectionLost("no reply".into())),
            Err(crossbeam_channel::RecvTimeoutError::Timeout) => Err(TmuxError::Timeout),
            Err(crossbeam_channel::RecvTimeoutError::Disconnected) => {
                Err(TmuxError::ConnectionLost("capture reader stopped".into()))
            }
        };
        if result.is_err() {
            if let Some(c) = &flight.child {
                kill_child(c);
            }
        }
        result
    }
}

type SharedChild = Arc<std::sync::Mutex<Child>>;

/// Kills a `tmux source-file` client this module started. std's `kill` does
/// nothing once the child has been reaped, so no other process is hit.
fn kill_child(child: &SharedChild) {
    let mut c = crate::sync::lock(child);
    let _ = c.kill();
}

/// The `source-file` script for a chunk.
///
/// Each capture is preceded by a header line, in one of two forms:
///
/// - a probe of its own pane (`display-message -t %P` with the pane's id,
///   history size and size);
/// - when the chunk holds at least a quarter of the server's panes (as last
///   listed), one `list-panes -a` of the same fields for every pane at the
///   top, and an untargeted literal line before each capture. tmux runs the
///   script without yielding, so the listing holds for every capture in it,
///   and a pane missing from it is gone.
///
/// Why (tmux 3.3a): every command costs tmux a fixed amount that grows
/// with the server, and a probe costs more than the literal line, while a
/// listing row costs a fraction of a probe. The listing therefore pays
/// once a chunk holds more than about a quarter of the server. A visible
/// capture itself costs little more than a command, so there the header
/// is a large share, which the listing form cuts (the figures:
/// BENCHMARKS.md, "tmux transport").
/// What a header (or a listing line) says of a pane.
const PROBE_FIELDS: &str = "#{pane_id} #{history_size} #{pane_width} #{pane_height}";

fn script(
    token: &str,
    chunk: &[CaptureRequest],
    options: CaptureOptions,
    server_panes: usize,
) -> String {
    let listed = server_panes > 0 && chunk.len() * 4 >= server_panes;
    let mut s = String::with_capacity(chunk.len() * 160);
    if listed {
        s.push_str(&format!(
            "list-panes -a -F \"{token} {} {PROBE_FIELDS}\"\n",
            split::LISTING
        ));
    }
    for (i, r) in chunk.iter().enumerate() {
        let p = r.pane;
        if listed {
            s.push_str(&format!("display-message -p \"{token} {i}\"\n"));
        } else {
            s.push_str(&format!(
                "display-message -p -t {p} \"{token} {i} {PROBE_FIELDS}\"\n"
            ));
        }
        s.push_str("capture-pane -p");
        if options.join_wrapped {
            s.push_str(" -J");
        }
        if options.escapes {
            s.push_str(" -e");
        }
        s.push_str(&format!(" -t {p}"));
        let (a, b) = range_args(r.range);
        if let Some(a) = a {
            s.push_str(&format!(" -S {a}"));
        }
        if let Some(b) = b {
            s.push_str(&format!(" -E {b}"));
        }
        s.push('\n');
    }
    s.push_str(&format!("display-message -p \"{token} end\"\n"));
    s
}

/// How a chunk's output is cut: a header per pane, or counted.
enum Cutter<'a> {
    Headed(Splitter<'a>),
    Counted(counted::Counted<'a>),
}

impl Cutter<'_> {
    fn push(&mut self, data: &[u8], emit: &mut dyn FnMut(usize, Result<Split, TmuxError>)) {
        match self {
            Cutter::Headed(s) => s.push(data, emit),
            Cutter::Counted(c) => c.push(data, emit),
        }
    }

    fn ended(&self) -> bool {
        match self {
            Cutter::Headed(s) => s.ended(),
            Cutter::Counted(c) => c.ended(),
        }
    }
}

/// Whether a cut pane must be captured again with a header (`counted.rs`).
fn is_again(result: &Result<Split, TmuxError>) -> bool {
    matches!(result, Ok(s) if s.again)
}

/// A chunk as its reader sees it.
struct Chunk<'a> {
    socket: &'a Endpoint,
    token: &'a str,
    requests: &'a [CaptureRequest],
    options: CaptureOptions,
    /// Cut by counting (`counted.rs`), not by a header per pane.
    counted: bool,
}

impl Chunk<'_> {
    /// Reads the chunk's output, handing out each pane on `tx` as soon as
    /// it is complete. `Ok` once the end marker was read.
    ///
    /// Panes a counted chunk could not place (`Split::again`) are captured
    /// again in one headed script once the chunk is read; the panes after
    /// the first of them wait for it, so `tx` still gets every request in
    /// order. A chunk that needed that for more than a quarter of its panes
    /// turns counting off (`counting`) for the rest of the batch.
    fn read(
        &self,
        child: &SharedChild,
        preamble: Option<&mut preamble::Reader>,
        counting: &AtomicBool,
        tx: &Sender<ChunkEvent>,
    ) -> Result<(), TmuxError> {
        let mut cutter = if self.counted {
            Cutter::Counted(counted::Counted::new(
                self.token,
                self.requests,
                self.options,
            ))
        } else {
            Cutter::Headed(Splitter::new(self.token, self.requests, self.options))
        };
        let mut held: Vec<(usize, Result<Split, TmuxError>)> = Vec::new();
        let outcome = read_output(
            child,
            self.socket,
            preamble,
            &mut cutter,
            &mut |i, result| {
                if held.is_empty() && !is_again(&result) {
                    tx.send(ChunkEvent::Pane(i, result)).is_ok()
                } else {
                    held.push((i, result));
                    true
                }
            },
        );
        if held.is_empty() {
            return outcome;
        }
        let agains = held.iter().filter(|(_, r)| is_again(r)).count();
        if agains * 4 > self.requests.len() {
            counting.store(false, Ordering::Relaxed);
        }
        // A chunk that did not end (killed: cancelled or out of time; tmux
        // gone) starts nothing more: its panes to be seen again fail with it.
        let mut fresh = match &outcome {
            Ok(()) => self.capture_again(child, &held),
            Err(e) => held
                .iter()
                .filter(|(_, r)| is_again(r))
                .map(|(i, _)| (*i, Err(e.clone())))
                .collect(),
        };
        for (i, result) in held {
            let result = if is_again(&result) {
                fresh
                    .remove(&i)
                    .unwrap_or_else(|| Err(TmuxError::ConnectionLost("no reply".into())))
            } else {
                result
            };
            if tx.send(ChunkEvent::Pane(i, result)).is_err() {
                break;
            }
        }
        outcome
    }

    /// Captures the panes of `held` marked `again`, each with a header, on
    /// a client of its own that takes the chunk's place in `child` (so the
    /// batch's cancel reaches it). Results by request index.
    fn capture_again(
        &self,
        child: &SharedChild,
        held: &[(usize, Result<Split, TmuxError>)],
    ) -> std::collections::HashMap<usize, Result<Split, TmuxError>> {
        let indexes: Vec<usize> = held
            .iter()
            .filter(|(_, r)| is_again(r))
            .map(|(i, _)| *i)
            .collect();
        let requests: Vec<CaptureRequest> = indexes
            .iter()
            .filter_map(|&i| self.requests.get(i).cloned())
            .collect();
        let token = sweep_token();
        let mut fresh = std::collections::HashMap::new();
        let outcome =
            oneshot::spawn_source(self.socket, script(&token, &requests, self.options, 0))
                .and_then(|c| {
                    *crate::sync::lock(child) = c;
                    let mut cutter = Cutter::Headed(Splitter::new(&token, &requests, self.options));
                    read_output(child, self.socket, None, &mut cutter, &mut |k, result| {
                        if let Some(&i) = indexes.get(k) {
                            fresh.insert(i, result);
                        }
                        true
                    })
                });
        if let Err(e) = outcome {
            for &i in &indexes {
                fresh.entry(i).or_insert_with(|| Err(e.clone()));
            }
        }
        fresh
    }
}

/// Reads a client's output through `cutter`, which calls `emit` for each
/// request it completes; `emit` returns whether anyone still listens (if
/// not, the client is killed). `Ok` once the end marker was read.
fn read_output(
    child: &SharedChild,
    socket: &Endpoint,
    mut preamble: Option<&mut preamble::Reader>,
    cutter: &mut Cutter<'_>,
    emit: &mut dyn FnMut(usize, Result<Split, TmuxError>) -> bool,
) -> Result<(), TmuxError> {
    let (stdout, stderr) = {
        let mut c = crate::sync::lock(child);
        (c.stdout.take(), c.stderr.take())
    };
    let err_reader = std::thread::spawn(move || {
        let mut err = String::new();
        if let Some(mut e) = stderr {
            let _ = e.read_to_string(&mut err);
        }
        err
    });
    let mut listening = true;
    if let Some(mut stdout) = stdout {
        let mut piece = vec![0u8; READ_SIZE];
        while listening {
            let n = match stdout.read(&mut piece) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(_) => break,
            };
            let after;
            let mut data = &piece[..n];
            if let Some(reader) = preamble.as_deref_mut().filter(|r| !r.done()) {
                match reader.push(data) {
                    Some(rest) => after = rest,
                    None => continue,
                }
                data = &after;
            }
            cutter.push(data, &mut |i, result| {
                listening = listening && emit(i, result);
            });
        }
    }
    if !listening {
        // Nobody wants the rest: do not let tmux go on writing it.
        kill_child(child);
    }
    let status = crate::sync::lock(child).wait();
    let err = err_reader.join().unwrap_or_default();
    if cutter.ended() {
        return Ok(());
    }
    let code = status.ok().and_then(|s| s.code());
    Err(match socket.client_error(&err, code) {
        TmuxError::Command(m) if m.is_empty() => {
            TmuxError::ConnectionLost("tmux stopped before the capture finished".into())
        }
        TmuxError::Command(m) => TmuxError::ConnectionLost(m),
        e => e,
    })
}

/// Bytes read from a sweep's pipe at a time.
const READ_SIZE: usize = 256 * 1024;

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn chunks_ask_for_no_more_than_the_time_left_holds() {
        let (tx, _rx) = crossbeam_channel::bounded(1);
        let batch = |left: Duration| Batch {
            socket: Endpoint::local(std::path::PathBuf::new()),
            server_panes: 0,
            options: CaptureOptions::default(),
            deadline: Instant::now() + left,
            cancel: Arc::new(AtomicBool::new(false)),
            tx: tx.clone(),
            member: None,
            anchor: None,
            spare: std::sync::Mutex::new(None),
            counting: Arc::new(AtomicBool::new(true)),
            preamble: std::sync::Mutex::new(None),
            alone_first: false,
        };
        let started = Instant::now();
        // Nothing seen yet: the assumed rate.
        let fresh = batch(Duration::from_millis(20)).lines_in_time_left(&started, 0);
        assert!((10_000..=20_000).contains(&fresh), "{fresh}");
        // A faster rate seen in this batch raises it; a past deadline is 0.
        let fast = batch(Duration::from_millis(20)).lines_in_time_left(&started, 10_000_000);
        assert!(fast > 100_000, "{fast}");
        assert_eq!(batch(Duration::ZERO).lines_in_time_left(&started, 0), 0);
        // A generous budget leaves the chunk sizes alone.
        let long = batch(Duration::from_secs(30)).lines_in_time_left(&started, 0);
        assert!(long > CHUNK_LINES);
    }

    fn requests(n: u32, range: CaptureRange) -> Vec<CaptureRequest> {
        (0..n)
            .map(|i| CaptureRequest {
                pane: PaneId::from_number(i),
                range,
            })
            .collect()
    }

    /// The chunk sizes a sweep of `requests` on a server of `server_panes`
    /// is cut into, every pane seen holding `pane_lines` lines.
    fn cuts(requests: &[CaptureRequest], server_panes: usize, pane_lines: u64) -> Vec<usize> {
        let (tx, _rx) = crossbeam_channel::bounded(1);
        let batch = Batch {
            socket: Endpoint::local(std::path::PathBuf::new()),
            server_panes,
            options: CaptureOptions::default(),
            deadline: Instant::now() + Duration::from_secs(60),
            cancel: Arc::new(AtomicBool::new(false)),
            tx,
            member: None,
            anchor: None,
            spare: std::sync::Mutex::new(None),
            counting: Arc::new(AtomicBool::new(true)),
            preamble: std::sync::Mutex::new(None),
            alone_first: false,
        };
        let started = Instant::now();
        let (mut a, mut sizes) = (0, Vec::new());
        while a < requests.len() {
            let seen = a as u64;
            let b = batch.chunk_end(requests, a, &started, seen * pane_lines, seen);
            sizes.push(b - a);
            a = b;
        }
        sizes
    }

    #[test]
    fn a_big_server_is_swept_in_few_chunks() {
        // Each chunk is a client, whose cost to tmux grows with the server:
        // 1,000 panes go in two chunks visible, three deep.
        let visible = cuts(&requests(1000, CaptureRange::Visible), 1000, 50);
        assert_eq!(visible.len(), 2, "{visible:?}");
        let deep = cuts(&requests(1000, CaptureRange::AllHistory), 1000, 200);
        assert!(deep.len() <= 3, "{deep:?}");
        // No small last chunk paying a whole client for a few panes.
        let rest = cuts(&requests(1300, CaptureRange::Visible), 1000, 50);
        assert!(rest.iter().skip(1).all(|&n| n >= 300), "{rest:?}");
        // A small server's deep chunks keep their line budget.
        let small = cuts(&requests(200, CaptureRange::AllHistory), 200, 2000);
        assert!(small.iter().all(|&n| n <= 61), "{small:?}");
    }

    #[test]
    fn a_sweep_script_costs_tmux_two_short_commands_a_pane() {
        // tmux's parse of a script costs the square of its bytes: a pane
        // adds two commands and ~75 bytes (85 with a hex token).
        let token = sweep_token();
        assert_eq!(token.len(), 22, "{token}");
        assert!(token.bytes().all(|b| b.is_ascii_alphanumeric()), "{token}");
        let chunk = requests(1000, CaptureRange::Visible);
        let options = CaptureOptions {
            join_wrapped: true,
            escapes: false,
        };
        let listed = script(&token, &chunk[500..], options, 1000);
        let commands = listed.lines().count();
        assert_eq!(commands, 2 * 500 + 2, "{commands}");
        assert!(listed.len() <= 500 * 76 + 200, "{} bytes", listed.len());
        assert_eq!(listed.matches(token.as_str()).count(), 500 + 2);
    }

    #[test]
    fn spans_follow_tmux_clamping() {
        assert_eq!(span(CaptureRange::Visible, 100, 24), (0, 23));
        assert_eq!(span(CaptureRange::Scrollback(10), 100, 24), (-10, 23));
        assert_eq!(span(CaptureRange::Scrollback(1000), 100, 24), (-100, 23));
        assert_eq!(span(CaptureRange::AllHistory, 100, 24), (-100, 23));
        assert_eq!(
            span(CaptureRange::Lines { start: -5, end: 2 }, 100, 24),
            (-5, 2)
        );
        assert_eq!(
            span(CaptureRange::Lines { start: 5, end: -2 }, 100, 24),
            (-2, 5)
        );
        assert_eq!(
            span(
                CaptureRange::Lines {
                    start: -500,
                    end: 50
                },
                100,
                24
            ),
            (-100, 23)
        );
    }
}
