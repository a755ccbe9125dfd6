//! Fetch and scan, overlapping: every capture is requested at once from the
//! transport (or the pane cache), which pipelines them to tmux and hands
//! replies back in request order as they arrive; `forward_captures` turns
//! them into engine input, and the engine scans each capture on the rayon
//! pool while later ones are still being fetched, charging the byte and line
//! budgets in pane order, so a clamped answer is the same on every run.
//! Panes a since search must look at again (their anchor moved) are
//! scanned in a second pass after the first, with what the first left of
//! the byte, line and match budgets: the two passes together never do more
//! than the caller allowed.

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
    let (outcome, fetch) = std::thread::scope(|threads| {
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
    let mut scanned = Scanned { outcome, fetch };
    let looking = Span::new("search.second_look");
    second_look(ctx, tmux, plan, scope, since, &mut scanned, deadline);
    drop(looking);
    settle_cursor(since, &scanned.outcome, &scanned.fetch, total);
    every_capture_failed(&scanned.outcome, total)?;
    Ok(scanned)
}

/// A search of some panes whose every capture failed is an error (the
/// first failure said); one of no pane is not.
fn every_capture_failed(outcome: &SearchOutcome, total: usize) -> Result<(), ToolError> {
    if total > 0 && outcome.failed.len() == total {
        let (_, reason) = &outcome.failed[0];
        return Err(ToolError::invalid(format!(
            "every capture failed ({total} panes); the first: {reason}"
        )));
    }
    Ok(())
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

/// The budgets a second pass may use: what the first left of the scanned
/// bytes and lines and of the matching lines (the deadline and the
/// per-pane match budget are the search's own). A search does no more
/// work in two passes than in one: a budget the first used up stops the
/// second at its first line, and sets its flag.
fn budgets_left(limits: &SearchBudgets, first: &SearchOutcome) -> SearchBudgets {
    let matched: u64 = first.panes.iter().map(|p| p.lines.len() as u64).sum();
    SearchBudgets {
        max_scan_bytes: limits.max_scan_bytes.saturating_sub(first.bytes_scanned),
        max_scan_lines: limits.max_scan_lines.saturating_sub(first.lines_scanned),
        max_matches: limits.max_matches.saturating_sub(matched),
        ..limits.clone()
    }
}

/// Panes whose since anchor was not where it was stored: their history is
/// captured and scanned from the anchor's new place (or in full), in a
/// second engine pass merged into the first, with what the first left of
/// the budgets ([`budgets_left`]).
fn second_look(
    ctx: &ToolContext,
    tmux: &Tmux,
    plan: &Plan,
    scope: &Scope,
    since: &Since,
    first: &mut Scanned,
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
    let mut options = search_options(ctx, plan, deadline);
    options.limits = budgets_left(&options.limits, &first.outcome);
    let max_capture_bytes = ctx.ceilings().search.max_capture_bytes;
    let (tx, rx) = crossbeam_channel::bounded(engine::max_in_flight());
    let (outcome, fetch) = std::thread::scope(|threads| {
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
    merge(first, Scanned { outcome, fetch }, scope_key);
}

/// Adds a second pass (its keys mapped back to scope indices) to the
/// first, keeping key order: its counts are added, its flags and the
/// fetch's ORed in.
fn merge(first: &mut Scanned, second: Scanned, scope_key: impl Fn(usize) -> usize) {
    let (outcome, fetch) = (&mut first.outcome, &mut first.fetch);
    let (report, second) = (second.fetch, second.outcome);
    fetch.byte_clamped |= report.byte_clamped;
    fetch.timed_out |= report.timed_out;
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
    use crate::config::Ceilings;
    use crate::tmux::{PaneId, ServerSpec};
    use crate::tools::context::ProgressSink;
    use crate::tools::search::types::SearchPanesArgs;
    use engine::{ClampFlags, LineMatch, PaneMatches};
    use std::sync::Mutex;

    fn hit(line: i64) -> LineMatch {
        LineMatch {
            line,
            text: "x".into(),
            pattern_index: 0,
            before: Vec::new(),
            after: Vec::new(),
            redactions: 0,
        }
    }

    fn pane(key: usize, hits: usize) -> PaneMatches {
        PaneMatches {
            key,
            lines: (0..hits as i64).map(hit).collect(),
            lines_truncated: false,
        }
    }

    fn scanned(panes: Vec<PaneMatches>, flags: ClampFlags, fetch: FetchReport) -> Scanned {
        Scanned {
            outcome: SearchOutcome {
                panes,
                bytes_scanned: 100,
                lines_scanned: 10,
                flags,
                ..SearchOutcome::default()
            },
            fetch,
        }
    }

    #[test]
    fn a_second_pass_gets_only_what_the_first_left_of_the_budgets() {
        let limits = SearchBudgets {
            max_scan_bytes: 150,
            max_scan_lines: 12,
            deadline: None,
            max_matches: 5,
            max_matches_per_pane: 4,
        };
        let first = scanned(
            vec![pane(0, 3), pane(2, 1)],
            ClampFlags::default(),
            FetchReport::default(),
        );
        let left = budgets_left(&limits, &first.outcome);
        assert_eq!(
            (left.max_scan_bytes, left.max_scan_lines, left.max_matches),
            (50, 2, 1)
        );
        assert_eq!(left.max_matches_per_pane, 4);
        // Used up (or over): nothing left, not an overflow.
        let tight = SearchBudgets {
            max_scan_bytes: 90,
            max_scan_lines: 10,
            max_matches: 2,
            ..limits
        };
        let left = budgets_left(&tight, &first.outcome);
        assert_eq!(
            (left.max_scan_bytes, left.max_scan_lines, left.max_matches),
            (0, 0, 0)
        );
    }

    /// Each flag of either pass, the outcome's and the fetch's, holds in
    /// the merged result; the counts add up; keys map back and stay in
    /// order.
    #[test]
    fn merge_adds_the_second_pass_and_keeps_either_passs_flags() {
        let flag = |i: usize| {
            let mut f = ClampFlags::default();
            match i {
                0 => f.byte_clamped = true,
                1 => f.line_clamped = true,
                2 => f.time_clamped = true,
                _ => f.matches_truncated = true,
            }
            f
        };
        let fetch = |i: usize| FetchReport {
            byte_clamped: i == 0,
            timed_out: i == 1,
        };
        for i in 0..4 {
            for second_has_it in [false, true] {
                let (a, b) = if second_has_it {
                    (ClampFlags::default(), flag(i))
                } else {
                    (flag(i), ClampFlags::default())
                };
                let (fa, fb) = if second_has_it {
                    (FetchReport::default(), fetch(i))
                } else {
                    (fetch(i), FetchReport::default())
                };
                let mut first = scanned(vec![pane(0, 1), pane(3, 1)], a, fa);
                let mut second = scanned(vec![pane(0, 2)], b, fb);
                second.outcome.lines_scanned = 7;
                second.outcome.bytes_scanned = 60;
                merge(&mut first, second, |k| [2, 5][k]);
                let m = &first.outcome;
                assert_eq!(m.flags, flag(i), "flag {i}, second {second_has_it}");
                let f = &first.fetch;
                assert_eq!(
                    (f.byte_clamped, f.timed_out),
                    (i == 0, i == 1),
                    "fetch {i}, second {second_has_it}"
                );
                assert_eq!((m.bytes_scanned, m.lines_scanned), (160, 17));
                let keys: Vec<usize> = m.panes.iter().map(|p| p.key).collect();
                assert_eq!(keys, [0, 2, 3]);
            }
        }
    }

    #[test]
    fn every_capture_failing_is_an_error_and_no_pane_is_not() {
        let failed = |n: usize| SearchOutcome {
            failed: (0..n).map(|k| (k, format!("gone {k}"))).collect(),
            ..SearchOutcome::default()
        };
        let e = every_capture_failed(&failed(2), 2).unwrap_err();
        assert!(
            e.message.contains("every capture failed (2 panes)"),
            "{e:?}"
        );
        assert!(e.message.contains("gone 0"), "{e:?}");
        assert!(every_capture_failed(&failed(1), 2).is_ok());
        assert!(every_capture_failed(&failed(0), 0).is_ok());
    }

    /// The engine is given the search's deadline (a scan slower than
    /// timeout_ms stops there, not at its end), its budgets and its
    /// cancel flag.
    #[test]
    fn the_engine_gets_the_searchs_deadline_budgets_and_cancel() {
        let ctx = ToolContext::read_only(ServerSpec::named("unused"), Ceilings::default());
        let args = SearchPanesArgs {
            pattern: Some("x".into()),
            max_scan_lines: Some(7),
            ..SearchPanesArgs::default()
        };
        let plan = Plan::new(&args, &ctx.ceilings().search).unwrap();
        let deadline = Instant::now() + Duration::from_secs(5);
        let options = search_options(&ctx, &plan, deadline);
        assert_eq!(options.limits.deadline, Some(deadline));
        assert_eq!(options.limits.max_scan_lines, 7);
        let cancel = options.cancel.unwrap();
        assert!(Arc::ptr_eq(&cancel, &ctx.cancel));
    }

    /// A capture longer than the ceiling keeps its newest lines and says
    /// so; one exactly as long is kept whole.
    #[test]
    fn captures_over_the_byte_ceiling_are_cut_and_reported() {
        let forward = |texts: &[&'static str]| {
            let (reply_tx, replies) = crossbeam_channel::unbounded();
            for (index, text) in texts.iter().enumerate() {
                let text = CapturedText {
                    bytes: Bytes::from_static(text.as_bytes()),
                    ..CapturedText::default()
                };
                reply_tx
                    .send(CaptureReply {
                        index,
                        pane: PaneId::parse(&format!("%{index}")).unwrap(),
                        result: Ok(text),
                    })
                    .unwrap();
            }
            drop(reply_tx);
            let (tx, rx) = crossbeam_channel::unbounded();
            let take = |i: usize, t: CapturedText| Capture::shared(i, t.first_line, t.bytes);
            let no = AtomicBool::new(false);
            let report = forward_captures(replies, tx, &no, &AtomicBool::new(false), 10, &take);
            let got: Vec<Bytes> = rx
                .try_iter()
                .map(|i| match i {
                    Incoming::Capture(c) => c.bytes,
                    Incoming::Failed { reason, .. } => panic!("{reason}"),
                })
                .collect();
            (report.byte_clamped, got)
        };
        let (clamped, got) = forward(&["aaaa\nbbbb\n", "abc\n"]);
        assert!(!clamped);
        assert_eq!(got, [&b"aaaa\nbbbb\n"[..], &b"abc\n"[..]]);
        let (clamped, got) = forward(&["abc\n", "aaaa\nbbbbb\n"]);
        assert!(clamped);
        assert_eq!(got, [&b"abc\n"[..], &b"bbbbb\n"[..]]);
    }

    /// Progress goes out on the last pane, or once 100 ms passed since the
    /// last report; `finish` sends what was done unless that was sent;
    /// nothing is sent twice or going back.
    #[test]
    fn progress_is_sent_when_due_and_once_more_at_the_end() {
        type Sent = Vec<(f64, Option<f64>, Option<String>)>;
        let log: Arc<Mutex<Sent>> = Arc::default();
        let mut ctx = ToolContext::read_only(ServerSpec::named("unused"), Ceilings::default());
        let sink = log.clone();
        ctx.progress = ProgressSink::new(move |done, total, message| {
            if let Ok(mut sent) = sink.lock() {
                sent.push((done, total, message.map(str::to_owned)));
            }
        });
        let sent = || -> Vec<f64> { log.lock().unwrap().iter().map(|s| s.0).collect() };
        let at = |panes_done| Progress {
            panes_done,
            bytes_scanned: 0,
        };
        let p = ProgressThrottle::new(&ctx, 4);
        std::thread::sleep(Duration::from_millis(120));
        p.report(at(1));
        assert_eq!(sent(), [1.0], "100 ms passed: due");
        let first = log.lock().unwrap()[0].clone();
        assert_eq!(
            first,
            (1.0, Some(4.0), Some("1 of 4 panes searched".into()))
        );
        // The last pane is due at once.
        p.report(at(4));
        assert_eq!(sent(), [1.0, 4.0]);
        // Done, and reported: not again, nor lower.
        p.finish();
        p.report(at(3));
        assert_eq!(sent(), [1.0, 4.0]);

        // Neither report due (the last pane never came): `finish` sends
        // the most the engine said it finished.
        let q = ProgressThrottle::new(&ctx, 4);
        q.report(at(2));
        q.report(at(1));
        q.finish();
        assert_eq!(sent().last(), Some(&2.0), "{:?}", sent());
    }

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
