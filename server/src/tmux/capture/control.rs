//! Small batches fetched over the control client already open, with no
//! process started.
//!
//! A since search's few deltas cost tmux a handful of commands, but a sweep
//! costs the machine a `tmux` process; the control client the listing went
//! through is already attached. `capture-pane -p` over a control client
//! leaks its text inside tmux 3.2-3.5a, so the text goes through a paste
//! buffer, two pipelined lines per request:
//!
//! ```text
//! display-message -p -t %P "#{pane_id} #{history_size} #{pane_width} #{pane_height} #{version}" ; capture-pane -b NAME [-J] [-e] -t %P [-S s] [-E e]
//! show-buffer -b NAME ; delete-buffer -b NAME
//! ```
//!
//! What must hold: the probe and the capture are one command list, so the
//! history size is the one the capture saw; the buffer's name is a fresh
//! 128-bit nonce (no one else's buffer is touched, and a named buffer is
//! never what `paste-buffer` pastes by default); the two lines are written
//! together, so the buffer is deleted even when the caller stops waiting;
//! each reply is framed by nonces ([`crate::tmux::framing`]) and decoded by
//! [`super::unvis`]. A reply that cannot be decoded (tmux 3.4 and later)
//! sends the batch, and the server's later ones, to sweeps.
//!
//! Why, in full: NOTES.md.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::script::range_args;
use super::sizing::estimate_lines;
use super::split::{build, gone, Split};
use super::unvis::unvis;
use super::{CaptureOptions, CaptureRequest};
use crate::tmux::command::TmuxCommand;
use crate::tmux::connection::{Control, ReplyRx};
use crate::tmux::framing::RawReply;
use crate::tmux::TmuxError;

/// Most requests fetched over the control client: it is shared with every
/// other call on the server, so a batch must not hold it long. Measured
/// (BENCHMARKS.md, "Search since a cursor"): 4 delta requests answer in
/// a few ms this way against ~30 ms for a sweep, but 44 (~4,000 lines)
/// took 60-110 ms against 30-45 ms for a sweep (where that time goes was
/// not found), so larger batches sweep.
pub(super) const MAX_REQUESTS: usize = 12;
/// Most lines (as estimated before the capture) a batch may ask for over
/// the control client.
pub(super) const MAX_LINES: u64 = 1_000;

/// Whether a batch is small enough for the control client.
pub(super) fn suits(requests: &[CaptureRequest]) -> bool {
    let lines: u64 = requests.iter().map(|r| estimate_lines(r.range, None)).sum();
    !requests.is_empty() && requests.len() <= MAX_REQUESTS && lines <= MAX_LINES
}

/// What the control client gave.
pub(super) enum Fetched {
    /// One result per request, in order.
    Done(Vec<Result<Split, TmuxError>>),
    /// This tmux's replies cannot be decoded here: use sweeps.
    Unsuited,
}

/// The probe at the head of every request.
const PROBE: &str = "#{pane_id} #{history_size} #{pane_width} #{pane_height} #{version}";

/// Fetches `requests` over `control`, waiting until `deadline` or until
/// `cancel` is set (the requests not answered by then get why).
pub(super) fn fetch(
    control: &Control,
    requests: &[CaptureRequest],
    options: CaptureOptions,
    deadline: Instant,
    cancel: &AtomicBool,
) -> Fetched {
    let prefix = format!("panescan-{}", crate::sync::nonce());
    // Both lines of every request in one write: tmux reads them in one go,
    // and a capture whose buffer nobody deletes is never sent alone.
    let commands: Vec<TmuxCommand> = requests
        .iter()
        .enumerate()
        .flat_map(|(i, r)| {
            let (capture, show) = lines(r, options, &format!("{prefix}-{i}"));
            [capture, show]
        })
        .collect();
    let Some(replies) = control.send_all(&commands) else {
        return Fetched::Unsuited;
    };
    let mut replies = replies.into_iter();
    let sent: Vec<Option<(ReplyRx, ReplyRx)>> = requests
        .iter()
        .map(|_| Some((replies.next()?, replies.next()?)))
        .collect();
    let mut results = Vec::with_capacity(requests.len());
    for (r, rxs) in requests.iter().zip(sent) {
        let Some((probe, text)) = rxs else {
            results.push(Err(TmuxError::ConnectionLost(
                "the control client took no request".into(),
            )));
            continue;
        };
        let replies =
            wait(&probe, deadline, cancel).and_then(|p| Ok((p, wait(&text, deadline, cancel)?)));
        match replies {
            Ok((probe, text)) => match answer(r, options, probe, text) {
                Some(result) => results.push(result),
                None => return Fetched::Unsuited,
            },
            Err(e) => results.push(Err(e)),
        }
    }
    Fetched::Done(results)
}

/// The two lines of one request.
fn lines(r: &CaptureRequest, options: CaptureOptions, name: &str) -> (TmuxCommand, TmuxCommand) {
    let mut capture = TmuxCommand::new("capture-pane").option("-b", name);
    if options.join_wrapped {
        capture = capture.flag("-J");
    }
    if options.escapes {
        capture = capture.flag("-e");
    }
    capture = capture.target(r.pane);
    let (start, end) = range_args(r.range);
    if let Some(s) = start {
        capture = capture.option("-S", &s);
    }
    if let Some(e) = end {
        capture = capture.option("-E", &e);
    }
    let probe = TmuxCommand::new("display-message")
        .flag("-p")
        .target(r.pane)
        .format_arg(PROBE)
        .then(capture);
    let show = TmuxCommand::new("show-buffer")
        .option("-b", name)
        .then(TmuxCommand::new("delete-buffer").option("-b", name));
    (probe, show)
}

/// Waits for one reply, giving up at `deadline` or once `cancel` is set.
fn wait(rx: &ReplyRx, deadline: Instant, cancel: &AtomicBool) -> Result<RawReply, TmuxError> {
    loop {
        if cancel.load(Ordering::Relaxed) {
            return Err(TmuxError::Cancelled);
        }
        let now = Instant::now();
        if now >= deadline {
            return Err(TmuxError::Timeout);
        }
        // The step bounds how late a cancel is seen.
        let step = (deadline - now).min(Duration::from_millis(20));
        match rx.recv_timeout(step) {
            Ok(reply) => return reply,
            Err(crossbeam_channel::RecvTimeoutError::Timeout) => continue,
            Err(crossbeam_channel::RecvTimeoutError::Disconnected) => {
                return Err(TmuxError::ConnectionLost("reply channel closed".into()))
            }
        }
    }
}

/// One request's result from its two replies; `None` when this tmux's
/// replies are not the ones this module decodes.
fn answer(
    r: &CaptureRequest,
    options: CaptureOptions,
    probe: RawReply,
    text: RawReply,
) -> Option<Result<Split, TmuxError>> {
    if !probe.ok {
        // The probe failed: the pane is gone (nothing was captured).
        return Some(Err(gone(r.pane)));
    }
    let header = probe.output.strip_suffix(b"\n").unwrap_or(&probe.output);
    let (fields, version) = match header.iter().rposition(|&b| b == b' ') {
        Some(at) => (&header[..at], &header[at + 1..]),
        None => return Some(Err(gone(r.pane))),
    };
    if !(version.starts_with(b"3.2") || version.starts_with(b"3.3")) {
        return None;
    }
    let bytes = if text.ok {
        // The reply is the escaped text and the newline tmux ends it with.
        let escaped = text.output.strip_suffix(b"\n")?;
        unvis(escaped)?
    } else if text.output.starts_with(b"no buffer ") {
        // A capture of no bytes makes no buffer.
        Vec::new()
    } else {
        let why = String::from_utf8_lossy(&text.output).trim_end().to_string();
        return Some(Err(TmuxError::Command(why)));
    };
    Some(build(r, fields, &bytes, options))
}
