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
//! and ends with `display-message -p "TOKEN end"`. TOKEN is 128 random bits
//! per chunk: no pane can print it, so the header lines split the output
//! exactly, whatever the panes contain (no `%end` forgery possible). tmux
//! runs a `source-file` script without yielding between its commands, so the
//! probe's `history_size` is the one the capture saw: `first_line` is exact
//! even while the pane prints. A vanished pane shows an empty probe and fails
//! alone.
//!
//! # Why this path (measured here, tmux 3.3a, 200 panes x ~2,000 lines)
//!
//! Short lines (80x50 panes, 9.8 MB deep), one-off script, quiet machine:
//!
//! | path | visible | deep | leaks in tmux |
//! |---|---|---|---|
//! | control client, `capture-pane -p` pipelined (raw) | 8 ms | 158 ms | yes: +41 MiB after 600 deep and 600 visible captures |
//! | control client, `capture-pane -b` + `show-buffer` + `delete-buffer` | 14 ms | 235 ms | no |
//! | one `source-file -` process | 13 ms | 105 ms | no |
//!
//! Bench `fetch` (200x50 panes, 32 MB deep, medians, busy machine):
//!
//! | path | visible | deep |
//! |---|---|---|
//! | `Tmux::capture` (this: chunked sweeps) | 33 ms | 338 ms |
//! | one raw `source-file -` sweep | 34 ms | 280 ms |
//! | same, in 500-line slices | - | 316 ms |
//! | raw control client, `capture-pane -p` | 15 ms | 507 ms |
//! | one process per pane | 635 ms | 1,352 ms |
//!
//! 500-line slices were no cheaper for tmux here, and slicing a range needs
//! the history size before the script is written (breaking the atomic probe),
//! so captures are not sliced.
//!
//! The `source-file` sweep is the fastest deep path (tmux writes to a plain
//! client far cheaper than through control-mode blocks), does not leak (the
//! 3.2-3.5a leak is in control-mode `capture-pane -p`), attaches nothing
//! (no hooks, no `session_attached`), leaves no buffer, and works the same on
//! a server with no session. Its output arrives when the script ends, so a
//! batch is split into chunks (small first, then larger) with two processes
//! in flight: tmux produces chunk k+1 while we deliver chunk k, and a cancel
//! or deadline stops the batch between chunks (in-flight processes are
//! killed through their `Child` handles).
//!
//! # Line numbers of joined captures
//!
//! With `join_wrapped`, a joined line spans `ceil(width / pane_width)` rows
//! (display width, escape sequences skipped). The rows are summed and checked
//! against the rows the range covers; if they disagree (a wide character
//! pushed to the next row, ...), the pane is captured again without joining
//! and that capture is returned (`joined = false`), so numbers are never
//! guessed.

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
    /// Whether wrapped lines were joined (false when `join_wrapped` was not
    /// asked for, or when row numbers could not be verified and the pane was
    /// captured again unjoined).
    pub joined: bool,
}

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Child;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender};

use super::connection::{nonce, Shared};
use super::oneshot;

/// Replies buffered ahead of a slow consumer.
const CHANNEL_CAPACITY: usize = 32;
/// Rough line budget of the first chunk (small, to deliver early).
const FIRST_CHUNK_LINES: u64 = 16_000;
/// Rough line budget of later chunks.
const CHUNK_LINES: u64 = 120_000;
/// Most panes in one chunk.
const CHUNK_PANES: usize = 400;

pub(crate) fn start(
    shared: Arc<Shared>,
    requests: Vec<CaptureRequest>,
    options: CaptureOptions,
    deadline: Instant,
    cancel: Arc<AtomicBool>,
) -> Receiver<CaptureReply> {
    let (tx, rx) = crossbeam_channel::bounded(CHANNEL_CAPACITY);
    let socket = shared.socket_path().to_path_buf();
    let spawned = std::thread::Builder::new()
        .name("tmux-capture".into())
        .spawn({
            let requests = requests.clone();
            let tx = tx.clone();
            move || {
                Batch {
                    socket,
                    options,
                    deadline,
                    cancel,
                    tx,
                }
                .run(requests)
            }
        });
    if let Err(e) = spawned {
        for (index, r) in requests.into_iter().enumerate() {
            let _ = tx.send(CaptureReply {
                index,
                pane: r.pane,
                result: Err(TmuxError::Spawn(e.to_string())),
            });
        }
    }
    rx
}

struct Batch {
    socket: PathBuf,
    options: CaptureOptions,
    deadline: Instant,
    cancel: Arc<AtomicBool>,
    tx: Sender<CaptureReply>,
}

/// A chunk in flight: its process and the thread reading it.
struct Flight {
    start: usize,
    len: usize,
    /// The `source-file` client, shared with its reader (which reaps it);
    /// killed through std so a reaped pid is never signalled.
    child: Option<SharedChild>,
    done: Receiver<Result<Vec<Result<CapturedText, TmuxError>>, TmuxError>>,
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

    fn run(self, requests: Vec<CaptureRequest>) {
        // Chunks are cut as they are launched, sized by the pane sizes seen
        // so far, so one sweep keeps tmux busy for a bounded time.
        let mut next_start = 0usize;
        let (mut seen_lines, mut seen_panes) = (0u64, 0u64);
        let mut flights: std::collections::VecDeque<Flight> = Default::default();
        let mut sent = 0usize;
        let mut failure: Option<TmuxError> = None;
        while sent < requests.len() {
            // Keep two chunks in flight.
            while failure.is_none() && flights.len() < 2 && next_start < requests.len() {
                if self.cancel.load(Ordering::Relaxed) {
                    failure = Some(TmuxError::Cancelled);
                    break;
                }
                let budget = if next_start == 0 {
                    FIRST_CHUNK_LINES
                } else {
                    CHUNK_LINES
                };
                let seen = (seen_panes > 0).then(|| seen_lines / seen_panes);
                let (a, mut b, mut lines) = (next_start, next_start, 0);
                while b < requests.len() && (b == a || lines < budget) && b - a < CHUNK_PANES {
                    lines += estimate_lines(requests[b].range, seen);
                    b += 1;
                }
                next_start = b;
                flights.push_back(self.launch(&requests[a..b], a, self.options));
            }
            let Some(flight) = flights.pop_front() else {
                break;
            };
            let got = loop {
                if failure.is_some() {
                    break None;
                }
                if self.cancel.load(Ordering::Relaxed) {
                    failure = Some(TmuxError::Cancelled);
                    break None;
                }
                let now = Instant::now();
                if now >= self.deadline {
                    failure = Some(TmuxError::Timeout);
                    break None;
                }
                let step = (self.deadline - now).min(Duration::from_millis(20));
                match flight.done.recv_timeout(step) {
                    Ok(r) => break Some(r),
                    Err(crossbeam_channel::RecvTimeoutError::Timeout) => continue,
                    Err(crossbeam_channel::RecvTimeoutError::Disconnected) => {
                        break Some(Err(TmuxError::ConnectionLost(
                            "capture reader stopped".into(),
                        )))
                    }
                }
            };
            match got {
                Some(Ok(results)) => {
                    for (k, result) in results.into_iter().enumerate() {
                        let index = flight.start + k;
                        let result = result.and_then(|t| self.verify(&requests[index], t));
                        if let Ok(t) = &result {
                            seen_lines += t.history_size + u64::from(t.pane_height);
                            seen_panes += 1;
                        }
                        if !self.reply(index, requests[index].pane, result) {
                            self.abort(flights);
                            return;
                        }
                        sent = index + 1;
                    }
                }
                Some(Err(e)) => {
                    let span = flight.start..flight.start + flight.len;
                    for (index, r) in requests.iter().enumerate().take(span.end).skip(span.start) {
                        if !self.reply(index, r.pane, Err(e.clone())) {
                            self.abort(flights);
                            return;
                        }
                    }
                    sent = flight.start + flight.len;
                }
                None => {
                    flights.push_front(flight);
                    break;
                }
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

    fn abort(&self, flights: std::collections::VecDeque<Flight>) {
        for f in flights {
            if let Some(c) = &f.child {
                kill_child(c);
            }
        }
    }

    fn launch(&self, chunk: &[CaptureRequest], start: usize, options: CaptureOptions) -> Flight {
        let (tx, rx) = crossbeam_channel::bounded(1);
        let token = nonce();
        let script = script(&token, chunk, options);
        let meta: Vec<CaptureRequest> = chunk.to_vec();
        let child: Result<SharedChild, TmuxError> =
            oneshot::spawn_source(&self.socket, script).map(|c| Arc::new(std::sync::Mutex::new(c)));
        let shared_child = child.as_ref().ok().cloned();
        let socket = self.socket.clone();
        let spawned = std::thread::Builder::new()
            .name("tmux-capture-chunk".into())
            .spawn(move || {
                let result = child.and_then(|c| read_chunk(&c, &socket, &token, &meta, options));
                let _ = tx.send(result);
            });
        if let Err(e) = spawned {
            if let Some(c) = &shared_child {
                kill_child(c);
            }
            let (tx, rx2) = crossbeam_channel::bounded(1);
            let _ = tx.send(Err(TmuxError::Spawn(e.to_string())));
            return Flight {
                start,
                len: chunk.len(),
                child: None,
                done: rx2,
            };
        }
        Flight {
            start,
            len: chunk.len(),
            child: shared_child,
            done: rx,
        }
    }

    /// Checks joined row numbers; captures again unjoined when they do not
    /// add up (within the batch deadline).
    fn verify(&self, req: &CaptureRequest, text: CapturedText) -> Result<CapturedText, TmuxError> {
        if !text.joined || text.line_numbers.is_some() {
            return Ok(text);
        }
        let options = CaptureOptions {
            join_wrapped: false,
            ..self.options
        };
        let flight = self.launch(std::slice::from_ref(req), 0, options);
        match flight.done.recv_deadline(self.deadline) {
            Ok(Ok(mut results)) => results
                .pop()
                .unwrap_or(Err(TmuxError::ConnectionLost("no reply".into()))),
            Ok(Err(e)) => Err(e),
            Err(_) => {
                if let Some(c) = &flight.child {
                    kill_child(c);
                }
                Err(TmuxError::Timeout)
            }
        }
    }
}

type SharedChild = Arc<std::sync::Mutex<Child>>;

/// Kills a `tmux source-file` client this module started. std's `kill` does
/// nothing once the child has been reaped, so no other process is hit.
fn kill_child(child: &SharedChild) {
    let mut c = child.lock().unwrap_or_else(|e| e.into_inner());
    let _ = c.kill();
}

/// The `source-file` script for a chunk.
fn script(token: &str, chunk: &[CaptureRequest], options: CaptureOptions) -> String {
    let mut s = String::with_capacity(chunk.len() * 160);
    for (i, r) in chunk.iter().enumerate() {
        let p = r.pane;
        s.push_str(&format!(
            "display-message -p -t {p} \"{token} {i} #{{pane_id}} #{{history_size}} #{{pane_width}} #{{pane_height}}\"\ncapture-pane -p"
        ));
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

/// Reads a chunk's output and splits it per request.
fn read_chunk(
    child: &SharedChild,
    socket: &Path,
    token: &str,
    chunk: &[CaptureRequest],
    options: CaptureOptions,
) -> Result<Vec<Result<CapturedText, TmuxError>>, TmuxError> {
    let mut out = Vec::new();
    let (stdout, stderr) = {
        let mut c = child.lock().unwrap_or_else(|e| e.into_inner());
        (c.stdout.take(), c.stderr.take())
    };
    let err_reader = std::thread::spawn(move || {
        let mut err = String::new();
        if let Some(mut e) = stderr {
            let _ = e.read_to_string(&mut err);
        }
        err
    });
    if let Some(mut o) = stdout {
        let _ = o.read_to_end(&mut out);
    }
    let _ = child.lock().unwrap_or_else(|e| e.into_inner()).wait();
    let err = err_reader.join().unwrap_or_default();
    split_output(&out, token, chunk, options).ok_or_else(|| {
        match oneshot::client_error(socket, &err) {
            TmuxError::Command(m) if m.is_empty() => {
                TmuxError::ConnectionLost("tmux stopped before the capture finished".into())
            }
            TmuxError::Command(m) => TmuxError::ConnectionLost(m),
            e => e,
        }
    })
}

/// Splits a chunk's stdout at its header lines. `None` when the end marker
/// is missing (the client failed or was killed).
pub(crate) fn split_output(
    out: &[u8],
    token: &str,
    chunk: &[CaptureRequest],
    options: CaptureOptions,
) -> Option<Vec<Result<CapturedText, TmuxError>>> {
    let tok = token.as_bytes();
    let mut results: Vec<Result<CapturedText, TmuxError>> = chunk
        .iter()
        .map(|r| Err(TmuxError::NotFound(format!("pane {} not found", r.pane))))
        .collect();
    // (index, header fields, content start)
    let mut current: Option<(usize, Vec<u8>, usize)> = None;
    let mut pos = 0;
    let mut ended = false;
    let close = |cur: Option<(usize, Vec<u8>, usize)>, end: usize, results: &mut Vec<_>| {
        if let Some((i, header, start)) = cur {
            if let (Some(slot), Some(req)) = (results.get_mut(i), chunk.get(i)) {
                *slot = build(req, &header, &out[start..end], options);
            }
        }
    };
    while pos < out.len() {
        let eol = memchr::memchr(b'\n', &out[pos..]).map_or(out.len(), |k| pos + k);
        let line = &out[pos..eol];
        let next = (eol + 1).min(out.len());
        if line.len() > tok.len() && line.starts_with(tok) && line[tok.len()] == b' ' {
            close(current.take(), pos, &mut results);
            let rest = &line[tok.len() + 1..];
            if rest == b"end" {
                ended = true;
                break;
            }
            let mut it = rest.splitn(2, |&b| b == b' ');
            let idx = it
                .next()
                .and_then(|i| std::str::from_utf8(i).ok()?.parse::<usize>().ok());
            if let Some(idx) = idx {
                current = Some((idx, it.next().unwrap_or_default().to_vec(), next));
            }
        }
        pos = next;
    }
    if !ended {
        return None;
    }
    Some(results)
}

/// One request's result from its probe header and captured bytes.
fn build(
    req: &CaptureRequest,
    header: &[u8],
    bytes: &[u8],
    options: CaptureOptions,
) -> Result<CapturedText, TmuxError> {
    let header = String::from_utf8_lossy(header);
    let mut f = header.split(' ');
    let pane = f.next().unwrap_or("");
    if pane != req.pane.to_string() {
        return Err(TmuxError::NotFound(format!(
            "pane {} not found (closed since it was listed?)",
            req.pane
        )));
    }
    let hsize: u64 = f.next().and_then(|v| v.parse().ok()).unwrap_or(0);
    let width: u32 = f.next().and_then(|v| v.parse().ok()).unwrap_or(0);
    let height: u32 = f.next().and_then(|v| v.parse().ok()).unwrap_or(0);
    let (first, last) = span(req.range, hsize, height);
    let mut text = CapturedText {
        first_line: first,
        bytes: bytes.to_vec(),
        line_numbers: None,
        history_size: hsize,
        pane_height: height,
        pane_width: width,
        joined: options.join_wrapped,
    };
    if options.join_wrapped {
        text.line_numbers = joined_numbers(bytes, first, last, width);
    }
    Ok(text)
}

/// Line numbers of joined lines, or `None` if their rows do not add up to
/// the rows captured.
pub(crate) fn joined_numbers(bytes: &[u8], first: i64, last: i64, width: u32) -> Option<Vec<i64>> {
    let width = u64::from(width.max(1));
    let mut numbers = Vec::new();
    let mut row = first;
    for line in bytes.split(|&b| b == b'\n') {
        numbers.push(row);
        let w = display_width(line);
        let rows = w.div_ceil(width).max(1);
        row += i64::try_from(rows).ok()?;
    }
    // split() yields one empty piece after the final newline.
    if bytes.last() == Some(&b'\n') {
        numbers.pop();
        row -= 1;
    }
    (row == last + 1 || bytes.is_empty()).then_some(numbers)
}

/// Display width in cells, escape sequences skipped.
fn display_width(line: &[u8]) -> u64 {
    use unicode_width::UnicodeWidthChar;
    let text = String::from_utf8_lossy(line);
    let mut w = 0u64;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\x1b' {
            match chars.next() {
                Some('[') => {
                    for c in chars.by_ref() {
                        if ('\x40'..='\x7e').contains(&c) {
                            break;
                        }
                    }
                }
                Some(']') => {
                    while let Some(c) = chars.next() {
                        if c == '\x07' {
                            break;
                        }
                        if c == '\x1b' && chars.peek() == Some(&'\\') {
                            chars.next();
                            break;
                        }
                    }
                }
                _ => {}
            }
            continue;
        }
        w += c.width().unwrap_or(0) as u64;
    }
    w
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

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

    #[test]
    fn joined_rows_add_up() {
        let bytes = b"aaaaaaaaaaaaaaa\nb\n\xe4\xb8\x80\xe4\xb8\x80\xe4\xb8\x80\xe4\xb8\x80\xe4\xb8\x80\xe4\xb8\x80\n";
        // width 10: 15 cells -> 2 rows, 1 -> 1 row, 12 cells -> 2 rows.
        assert_eq!(joined_numbers(bytes, -3, 1, 10), Some(vec![-3, -1, 0]));
        assert_eq!(joined_numbers(bytes, -3, 2, 10), None);
        assert_eq!(display_width(b"\x1b[1;31mab\x1b[0m"), 2);
    }

    #[test]
    fn output_splits_at_headers_only() {
        let reqs: Vec<CaptureRequest> = (1..=3)
            .map(|n| CaptureRequest {
                pane: PaneId::from_number(n),
                range: CaptureRange::Visible,
            })
            .collect();
        let out = b"T 0 %1 5 80 2\n%end 1 2 1\nT0 x\nT 1  \nT 2 %3 0 80 2\nx\ny\nT end\n";
        let r = split_output(out, "T", &reqs, CaptureOptions::default()).unwrap();
        assert_eq!(r[0].as_ref().unwrap().bytes, b"%end 1 2 1\nT0 x\n");
        assert!(matches!(r[1], Err(TmuxError::NotFound(_))));
        assert_eq!(r[2].as_ref().unwrap().bytes, b"x\ny\n");
        assert!(split_output(b"T 0 %1 5 80 2\n", "T", &reqs, CaptureOptions::default()).is_none());
    }
}
