//! Fetch and scan, overlapping: every capture is requested at once from the
//! transport (or the pane cache), which pipelines them to tmux and hands
//! replies back in request order as they arrive; `forward_captures` turns
//! them into engine input, and the engine scans each capture on the rayon
//! pool while later ones are still being fetched, charging the byte and line
//! budgets in pane order, so a clamped answer is the same on every run.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};
use panescan_engine::{
    self as engine, Capture, Incoming, Progress, SearchBudgets, SearchOptions, SearchOutcome,
};

use super::ahead::AheadSweep;
use super::plan::Plan;
use super::scope::Scope;
use super::since::Since;
use crate::tmux::capture::Spare;
use crate::tmux::spans::Span;
use crate::tmux::{CaptureOptions, CaptureReply, CaptureRequest, CapturedText, Tmux, TmuxError};
use crate::tools::context::{ToolContext, ToolError};

/// What the fetch side learnt while forwarding captures.
#[derive(Debug, Default)]
pub(super) struct FetchReport {
    /// Some capture was cut to the per-pane byte ceiling.
    pub(super) byte_clamped: bool,
    /// Captures did not arrive before the deadline.
    pub(super) timed_out: bool,
}

/// What the search read and started before it fetches: the server's
/// `#{pid} #{start_time}` (the pane cache's stamp) and a sweep client
/// started ahead for the few panes a since search usually fetches.
pub(super) struct Listed<'a> {
    pub(super) server: &'a str,
    pub(super) spare: Option<Spare>,
    /// A sweep started before the listing ([`super::ahead`]), kept if it asks
    /// for what the listing does.
    pub(super) ahead: Option<AheadSweep>,
    /// The captures asked for are noted for the next search to start
    /// ahead (a search without the pane cache and without `since`).
    pub(super) noted: bool,
}

/// What fetching and scanning the scope found.
#[derive(Debug)]
pub(super) struct Scanned {
    pub(super) outcome: SearchOutcome,
    pub(super) fetch: FetchReport,
}

/// Fetches and scans every pane of the scope (with `since`, only what each
/// printed after the cursor). A cancelled call, or one where every capture
/// failed, is an error.
pub(super) fn fetch_and_scan(
    ctx: &ToolContext,
    tmux: &Tmux,
    plan: &Plan,
    scope: &Scope,
    since: &Since,
    listed: Listed,
    deadline: Instant,
) -> Result<Scanned, ToolError> {
    let requests: Vec<CaptureRequest> = scope
        .panes
        .iter()
        .enumerate()
        .map(|(i, p)| CaptureRequest {
            pane: p.pane_id,
            range: since.range(i),
        })
        .collect();
    let starting = Span::new("search.start_fetch");
    let (replies, stop_fetch) = start_fetch(ctx, tmux, plan, scope, requests, listed, deadline);
    drop(starting);
    let options = search_options(ctx, plan, deadline);
    let total = scope.panes.len();
    let progress = ProgressThrottle::new(ctx, total);
    let max_capture_bytes = ctx.ceilings().search.max_capture_bytes;
    let (tx, rx) = crossbeam_channel::bounded(engine::max_in_flight());
    let (mut outcome, mut fetch) = std::thread::scope(|threads| {
        let forwarder = threads.spawn(|| {
            let take = |i: usize, text| since.take(i, text);
            forward_captures(
                replies,
                tx,
                &ctx.cancel,
                &stop_fetch,
                max_capture_bytes,
                &take,
            )
        });
        let scanning = Span::new("search.engine");
        let outcome = engine::search(&plan.matcher, &options, rx, &|p| progress.report(p));
        progress.finish();
        drop(scanning);
        // The engine may stop early (a budget ran out): stop asking tmux.
        stop_fetch.store(true, Ordering::Relaxed);
        let fetch = forwarder.join().unwrap_or_default();
        (outcome, fetch)
    });
    ctx.check_cancelled()?;
    let looking = Span::new("search.second_look");
    second_look(
        ctx,
        tmux,
        plan,
        scope,
        since,
        &mut outcome,
        &mut fetch,
        deadline,
    );
    drop(looking);
    settle_cursor(since, &outcome, &fetch, total);

    if total > 0 && outcome.failed.len() == total {
        let (_, reason) = &outcome.failed[0];
        return Err(ToolError::invalid(format!(
            "every capture failed ({total} panes); the first: {reason}"
        )));
    }
    Ok(Scanned { outcome, fetch })
}

/// The engine's options for a search.
fn search_options(ctx: &ToolContext, plan: &Plan, deadline: Instant) -> SearchOptions {
    SearchOptions {
        limits: SearchBudgets {
            deadline: Some(deadline),
            ..plan.engine_limits.clone()
        },
        context_lines: plan.context_lines,
        strip_escapes: true,
        max_text_bytes: 1024,
        cancel: Some(ctx.cancel.clone()),
        redact: ctx.config.redact,
    }
}

/// Panes whose since anchor was not where it was stored: their history is
/// captured and scanned from the anchor's new place (or in full), in a
/// second engine pass merged into the first.
// The search's own context, and the two results it amends.
#[allow(clippy::too_many_arguments)]
fn second_look(
    ctx: &ToolContext,
    tmux: &Tmux,
    plan: &Plan,
    scope: &Scope,
    since: &Since,
    outcome: &mut SearchOutcome,
    fetch: &mut FetchReport,
    deadline: Instant,
) {
    let panes = since.fallback();
    if panes.is_empty() || ctx.cancel.load(Ordering::Relaxed) {
        return;
    }
    let stop_fetch = Arc::new(AtomicBool::new(false));
    let requests: Vec<CaptureRequest> = panes
        .iter()
        .map(|&(_, pane, range)| CaptureRequest { pane, range })
        .collect();
    let capture_options = CaptureOptions {
        join_wrapped: plan.join_wrapped,
        escapes: false,
    };
    let replies = match &ctx.pane_cache {
        Some(cache) => cache.capture(
            tmux,
            scope.inventory,
            requests,
            capture_options,
            deadline,
            stop_fetch.clone(),
        ),
        None => tmux.capture(requests, capture_options, deadline, stop_fetch.clone()),
    };
    let options = search_options(ctx, plan, deadline);
    let max_capture_bytes = ctx.ceilings().search.max_capture_bytes;
    let (tx, rx) = crossbeam_channel::bounded(engine::max_in_flight());
    let (second, report) = std::thread::scope(|threads| {
        let forwarder = threads.spawn(|| {
            let take = |key: usize, text| match panes.get(key) {
                Some(&(i, _, _)) => since.refind(key, i, text),
                None => Capture::shared(key, 0, Bytes::new()),
            };
            forward_captures(
                replies,
                tx,
                &ctx.cancel,
                &stop_fetch,
                max_capture_bytes,
                &take,
            )
        });
        let second = engine::search(&plan.matcher, &options, rx, &|_| {});
        stop_fetch.store(true, Ordering::Relaxed);
        (second, forwarder.join().unwrap_or_default())
    });
    let scope_key = |key: usize| panes.get(key).map_or(key, |p| p.0);
    merge(outcome, second, scope_key);
    fetch.byte_clamped |= report.byte_clamped;
    fetch.timed_out |= report.timed_out;
}

/// Adds a second pass's outcome (its keys mapped back to scope indices) to
/// the first's, keeping key order.
fn merge(outcome: &mut SearchOutcome, second: SearchOutcome, scope_key: impl Fn(usize) -> usize) {
    for mut pane in second.panes {
        pane.key = scope_key(pane.key);
        outcome.panes.push(pane);
    }
    outcome.panes.sort_by_key(|p| p.key);
    for (key, reason) in second.failed {
        outcome.failed.push((scope_key(key), reason));
    }
    outcome.failed.sort_by_key(|f| f.0);
    outcome.bytes_scanned += second.bytes_scanned;
    outcome.lines_scanned += second.lines_scanned;
    let (a, b) = (&mut outcome.flags, second.flags);
    a.byte_clamped |= b.byte_clamped;
    a.line_clamped |= b.line_clamped;
    a.time_clamped |= b.time_clamped;
    a.matches_truncated |= b.matches_truncated;
}

/// A pane not searched to its end (its capture failed, a budget or the
/// clock stopped the search, or its matches passed `max_matches` or
/// `max_matches_per_pane`, where the scan stops) keeps its old place in
/// the next cursor, so nothing it printed is skipped next time.
fn settle_cursor(since: &Since, outcome: &SearchOutcome, fetch: &FetchReport, total: usize) {
    let f = &outcome.flags;
    let cut = f.byte_clamped || f.line_clamped || f.time_clamped || f.matches_truncated;
    if cut || fetch.timed_out || outcome.cancelled {
        (0..total).for_each(|i| since.keep_old(i));
        return;
    }
    for (key, _) in &outcome.failed {
        since.keep_old(*key);
    }
    for pane in outcome.panes.iter().filter(|p| p.lines_truncated) {
        since.keep_old(pane.key);
    }
}

/// Asks for every pane's capture at once (or keeps the sweep started
/// ahead if it asks for the same: [`super::ahead`]); replies come back in pane
/// order. The pane cache answers with the same text, fetching only what
/// changed. The stop flag ends the sweep.
// The search's context and what it asks for.
#[allow(clippy::too_many_arguments)]
fn start_fetch(
    ctx: &ToolContext,
    tmux: &Tmux,
    plan: &Plan,
    scope: &Scope,
    requests: Vec<CaptureRequest>,
    listed: Listed,
    deadline: Instant,
) -> (Receiver<CaptureReply>, Arc<AtomicBool>) {
    let capture_options = CaptureOptions {
        join_wrapped: plan.join_wrapped,
        escapes: false,
    };
    if listed.noted {
        tmux.note_sweep(&requests, capture_options);
    }
    if let Some(started) = listed
        .ahead
        .and_then(|a| a.take_if(&requests, capture_options))
    {
        let _kept = Span::new("search.ahead_kept");
        return started;
    }
    let stop_fetch = Arc::new(AtomicBool::new(false));
    let replies = match &ctx.pane_cache {
        Some(cache) => cache.capture_listed(
            tmux,
            scope.inventory,
            listed.server,
            requests,
            capture_options,
            deadline,
            stop_fetch.clone(),
            listed.spare,
        ),
        None => tmux.sweep_with_spare(
            requests,
            capture_options,
            deadline,
            stop_fetch.clone(),
            listed.spare,
        ),
    };
    (replies, stop_fetch)
}

/// Turns transport replies into engine input, in order, until the batch
/// ends, the engine stops listening, or the call is cancelled.
fn forward_captures(
    replies: Receiver<CaptureReply>,
    tx: Sender<Incoming>,
    cancel: &AtomicBool,
    stop_fetch: &AtomicBool,
    max_capture_bytes: usize,
    take: &dyn Fn(usize, CapturedText) -> Capture,
) -> FetchReport {
    let mut report = FetchReport::default();
    loop {
        // `stop_fetch` is also set when the engine has finished (a budget
        // ran out): the rest of the batch is not wanted, so do not wait for
        // the chunk tmux is still producing.
        if cancel.load(Ordering::Relaxed) || stop_fetch.load(Ordering::Relaxed) {
            stop_fetch.store(true, Ordering::Relaxed);
            return report;
        }
        // Short waits: the search joins this thread as soon as the engine
        // is done (a budget or the deadline), and should not wait long for
        // it to notice.
        let reply = match replies.recv_timeout(Duration::from_millis(5)) {
            Ok(reply) => reply,
            Err(RecvTimeoutError::Timeout) => continue,
            Err(RecvTimeoutError::Disconnected) => return report,
        };
        let incoming = match reply.result {
            Ok(text) => {
                let mut capture = take(reply.index, text);
                if capture.bytes.len() > max_capture_bytes {
                    keep_newest(&mut capture, max_capture_bytes);
                    report.byte_clamped = true;
                }
                Incoming::Capture(capture)
            }
            // Out of time or stopped: not a failure of the pane. The engine
            // sees the deadline too and sets its own flag.
            Err(TmuxError::Timeout) => {
                report.timed_out = true;
                stop_fetch.store(true, Ordering::Relaxed);
                return report;
            }
            Err(TmuxError::Cancelled) => return report,
            Err(e) => Incoming::Failed {
                key: reply.index,
                reason: e.to_string(),
            },
        };
        if tx.send(incoming).is_err() {
            // The engine finished (a budget ran out): nothing more to fetch.
            stop_fetch.store(true, Ordering::Relaxed);
            return report;
        }
    }
}

/// Cuts a capture to its newest lines that fit `max_bytes`, keeping line
/// numbers right.
fn keep_newest(capture: &mut Capture, max_bytes: usize) {
    let len = capture.bytes.len();
    let mut from = len - max_bytes;
    // Start at the next line start so no line is cut in half.
    match memchr::memchr(b'\n', &capture.bytes[from.saturating_sub(1)..]) {
        Some(i) => from = from.saturating_sub(1) + i + 1,
        None => from = len,
    }
    let dropped_lines = memchr::memchr_iter(b'\n', &capture.bytes[..from]).count();
    capture.bytes = capture.bytes.slice(from..);
    match &mut capture.line_numbers {
        Some(numbers) => {
            numbers.drain(..dropped_lines.min(numbers.len()));
        }
        None => capture.first_line += dropped_lines as i64,
    }
}

/// Reports progress at most every 100 ms and on the last pane, so a
/// 1,000-pane search sends tens of notifications, not thousands; and once
/// more when the engine is done, so a client that asked for progress gets
/// some even from a search quicker than 100 ms whose last pane was not
/// scanned (it failed, or a since search had nothing new in it).
struct ProgressThrottle<'a> {
    ctx: &'a ToolContext,
    total: usize,
    /// When and at how many panes progress was last reported (`None`:
    /// never).
    last: std::sync::Mutex<(Instant, Option<usize>)>,
    /// The most panes the engine has said it finished.
    done: std::sync::atomic::AtomicUsize,
}

impl<'a> ProgressThrottle<'a> {
    fn new(ctx: &'a ToolContext, total: usize) -> Self {
        ProgressThrottle {
            ctx,
            total,
            last: std::sync::Mutex::new((Instant::now(), None)),
            done: std::sync::atomic::AtomicUsize::new(0),
        }
    }

    fn report(&self, p: Progress) {
        self.done.fetch_max(p.panes_done, Ordering::Relaxed);
        let Ok(last) = self.last.lock() else {
            return;
        };
        let due = p.panes_done == self.total || last.0.elapsed() >= Duration::from_millis(100);
        if due {
            self.send(last, p.panes_done);
        }
    }

    /// The engine is done: what it finished, unless that was reported.
    fn finish(&self) {
        if let Ok(last) = self.last.lock() {
            self.send(last, self.done.load(Ordering::Relaxed));
        }
    }

    /// Reports `done` panes if that is more than was reported before.
    fn send(&self, mut last: std::sync::MutexGuard<'_, (Instant, Option<usize>)>, done: usize) {
        if !self.ctx.progress.is_active() || last.1.is_some_and(|reported| done <= reported) {
            return;
        }
        *last = (Instant::now(), Some(done));
        let message = format!("{done} of {} panes searched", self.total);
        self.ctx
            .progress
            .report(done as f64, Some(self.total as f64), Some(&message));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keep_newest_cuts_on_a_line_boundary_and_renumbers() {
        let mut c = Capture {
            key: 0,
            first_line: -4,
            bytes: b"aaaa\nbbbb\ncccc\ndddd\n".to_vec().into(),
            line_numbers: None,
        };
        keep_newest(&mut c, 11);
        assert_eq!(c.bytes, &b"cccc\ndddd\n"[..]);
        assert_eq!(c.first_line, -2);

        let mut c = Capture {
            key: 0,
            first_line: -10,
            bytes: b"aaaa\nbbbb\ncccc\n".to_vec().into(),
            line_numbers: Some(vec![-10, -7, -3]),
        };
        keep_newest(&mut c, 5);
        assert_eq!(c.bytes, &b"cccc\n"[..]);
        assert_eq!(c.line_numbers, Some(vec![-3]));
    }
}
