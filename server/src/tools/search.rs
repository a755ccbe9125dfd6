//! search_panes: find text in every pane, scrollback included.
//!
//! The whole flow of a search reads top to bottom in [`search_panes`]:
//!
//! 1. **Plan** — validate the arguments against the operator's ceilings and
//!    compile the patterns (`Plan::new`); nothing has touched tmux yet, so
//!    a bad pattern costs nothing.
//! 2. **Scope** — one inventory round trip lists every pane with all its
//!    placements (only the fields a search needs before it captures: tmux
//!    pays for every field of every pane); the session / window / pane
//!    filters pick the candidates ([`resolve_scope`]). A pane linked into
//!    several windows or sessions is one candidate.
//! 3. **Fetch** — every capture is requested at once from the transport,
//!    which pipelines them to tmux and hands replies back in request order
//!    as they arrive (`forward_captures` turns them into engine input).
//! 4. **Scan** — the engine scans each capture on the rayon pool while later
//!    ones are still being fetched, charging the byte and line budgets in
//!    pane order, so a clamped answer is the same on every run.
//! 5. **Shape** — matching panes are paged (`offset`/`limit`), lines are
//!    attributed to their pane and placements, what the page's panes run
//!    (`pane_current_command`, `pane_current_path`: the costliest fields to
//!    list) is asked for in one round trip. A result too large for its
//!    response is cut from the end by the registry (`cut_to_size`, through
//!    [`Tool::shrink`]), with flags that say so.
//!
//! Text is matched in Rust, never in a tmux format: a pattern such as
//! `#(touch /tmp/x)` or `#{pane_id}` is searched for literally and never
//! reaches tmux.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};
use panescan_engine::{
    self as engine, Capture, Incoming, LineMatch, Matcher, PatternOptions, Progress, SearchBudgets,
    SearchOptions, MAX_PATTERNS,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::context::{ServerArgs, ToolContext, ToolError};
use super::{bounded_list, find_session, find_window};
use crate::cache::PaneCache;
use crate::config::SearchCeilings;
use crate::tmux::{
    CaptureOptions, CaptureRange, CaptureReply, CaptureRequest, Inventory, Pane, PaneId,
    PanePlacement, SessionId, TmuxError, WindowId,
};
use crate::tools::registry::{Annotations, Tool};

/// Context lines a caller may ask for around each hit.
pub const MAX_CONTEXT_LINES: u8 = 10;

/// The arguments of `search_panes`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
pub struct SearchPanesArgs {
    /// Text to find (literal unless regex), within one line.
    #[serde(default)]
    pub pattern: Option<String>,
    /// 1-64 patterns, any of which matches (hits carry pattern_index).
    #[serde(default)]
    pub patterns: Option<Vec<String>>,
    /// Patterns are bounded regexes (no lookaround/backreferences).
    #[serde(default)]
    pub regex: bool,
    /// Case-sensitive (default: insensitive).
    #[serde(default)]
    pub match_case: bool,
    /// Session id ($N) or name.
    #[serde(default)]
    pub session: Option<String>,
    /// Window id (@N).
    #[serde(default)]
    pub window: Option<WindowId>,
    /// Pane ids (%N).
    #[serde(default)]
    pub pane_ids: Option<Vec<PaneId>>,
    /// History lines above each screen: 0 (default) = screen only; large = all.
    #[serde(default)]
    pub scrollback_lines: Option<u64>,
    /// Match wrapped lines whole (default true).
    #[serde(default)]
    pub join_wrapped: Option<bool>,
    /// Context lines around hits (0-10).
    #[serde(default)]
    pub context_lines: Option<u8>,
    /// Default 20.
    #[serde(default)]
    pub max_matches_per_pane: Option<u64>,
    /// Default 500.
    #[serde(default)]
    pub max_matches: Option<u64>,
    /// Panes per page (default 100).
    #[serde(default)]
    pub limit: Option<usize>,
    /// Panes to skip.
    #[serde(default)]
    pub offset: Option<usize>,
    /// Scan budget (line bytes + 1).
    #[serde(default)]
    pub max_scan_bytes: Option<u64>,
    /// Scan budget in lines.
    #[serde(default)]
    pub max_scan_lines: Option<u64>,
    /// Time budget (default 60000).
    #[serde(default)]
    pub timeout_ms: Option<u64>,
    #[serde(flatten)]
    pub server: ServerArgs,
}

/// One matching line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct HitLine {
    /// 0 = top of screen, negative = history; pass to capture_pane as start.
    pub line: i64,
    pub text: String,
    // Which of `patterns` matched (only with several patterns).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pattern_index: Option<usize>,
    // Context lines before, oldest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub before: Vec<String>,
    // Context lines after.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub after: Vec<String>,
}

/// A pane with matching lines.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct PaneHits {
    pub pane_id: PaneId,
    pub pane_index: u32,
    pub window_id: WindowId,
    pub window_index: u32,
    pub window_name: String,
    pub session_id: SessionId,
    pub session_name: String,
    // Every session/window the pane is linked into (primary first).
    pub placements: Vec<PanePlacement>,
    pub pane_current_command: String,
    pub pane_current_path: String,
    // True when panescan itself runs in this pane; absent outside tmux.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub is_caller: Option<bool>,
    pub lines: Vec<HitLine>,
    // More lines matched in this pane than are listed.
    pub lines_truncated: bool,
}

/// A pane whose capture failed.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct PaneFailure {
    pub pane_id: PaneId,
    pub error: String,
}

/// The result of `search_panes`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct SearchPanesResult {
    // Matching panes of this page, ordered by session, window index, pane index.
    pub matches: Vec<PaneHits>,
    pub total_panes_matched: usize,
    pub offset: usize,
    pub limit: usize,
    // More matching panes exist beyond this page.
    pub truncated: bool,
    // Matching panes beyond this page.
    pub truncated_panes: Vec<PaneId>,
    pub panes_searched: usize,
    pub panes_failed: usize,
    // Up to 20 failed panes and why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failures: Vec<PaneFailure>,
    pub bytes_scanned: u64,
    pub lines_scanned: u64,
    pub elapsed_ms: u64,
    pub effective_scrollback_lines: u64,
    // A pane's capture exceeded the per-pane byte ceiling: its oldest lines were not searched.
    pub captures_byte_clamped: bool,
    // max_scan_bytes ran out: later lines/panes were not searched.
    pub matching_byte_clamped: bool,
    // max_scan_lines ran out: later lines/panes were not searched.
    pub matching_line_clamped: bool,
    // timeout_ms ran out: later panes were not searched.
    pub matching_time_clamped: bool,
    // More panes were in scope than the operator allows: later panes were not searched.
    pub pane_limit_clamped: bool,
    // scrollback_lines exceeded the operator's ceiling and some pane had more history.
    pub scrollback_clamped: bool,
    // max_matches or the response ceiling dropped matching lines.
    pub matches_truncated: bool,
}

/// The `search_panes` tool.
#[derive(Debug)]
pub struct SearchPanes;

impl Tool for SearchPanes {
    const NAME: &'static str = "search_panes";
    const TITLE: &'static str = "Search all panes";
    const DESCRIPTION: &'static str = "Find which panes show a text, and on which lines: every pane (or a session, window, pane list), the screen by default, scrollback_lines of history too. Literal or bounded regex, case-insensitive unless match_case. Hit line numbers go straight to capture_pane's start. Budgets (max_scan_bytes, max_scan_lines, timeout_ms, max_matches) bound the work; each *_clamped flag / matches_truncated says what a limit left out. Use instead of capturing panes one by one; to wait for new output use wait_for_text.";
    const ANNOTATIONS: Annotations = Annotations::READ;
    type Args = SearchPanesArgs;
    type Output = SearchPanesResult;

    fn run(ctx: &ToolContext, args: Self::Args) -> Result<Self::Output, ToolError> {
        search_panes(ctx, &args)
    }

    fn text(output: &Self::Output) -> String {
        render_text(output)
    }

    fn shrink(output: &mut Self::Output, excess: usize) -> bool {
        cut_to_size(output, excess)
    }
}

/// Validated arguments: what will be searched, with which budgets.
#[derive(Debug)]
struct Plan {
    patterns: Vec<String>,
    matcher: Matcher,
    requested_scrollback: u64,
    scrollback: u64,
    join_wrapped: bool,
    context_lines: usize,
    limit: usize,
    offset: usize,
    timeout: Duration,
    engine_limits: SearchBudgets,
}

impl Plan {
    fn new(args: &SearchPanesArgs, limits: &SearchCeilings) -> Result<Plan, ToolError> {
        let patterns = match (&args.pattern, &args.patterns) {
            (Some(_), Some(_)) => {
                return Err(ToolError::new("give either pattern or patterns, not both"))
            }
            (None, None) => {
                return Err(ToolError::new(
                    "pattern is required: the text to find (or patterns, a list of 1-64)",
                ))
            }
            (Some(p), None) => vec![p.clone()],
            (None, Some(list)) => {
                if list.is_empty() || list.len() > MAX_PATTERNS {
                    return Err(ToolError::new(format!(
                        "patterns must hold 1 to {MAX_PATTERNS} patterns, got {}",
                        list.len()
                    )));
                }
                list.clone()
            }
        };
        let matcher = Matcher::new(
            &patterns,
            PatternOptions {
                regex: args.regex,
                match_case: args.match_case,
            },
        )
        .map_err(|e| ToolError::new(e.to_string()))?;
        let context = args.context_lines.unwrap_or(0);
        if context > MAX_CONTEXT_LINES {
            return Err(ToolError::new(format!(
                "context_lines must be 0 to {MAX_CONTEXT_LINES}, got {context}"
            )));
        }
        let requested_scrollback = args.scrollback_lines.unwrap_or(0);
        let timeout_ms = capped(
            args.timeout_ms,
            limits.default_timeout.as_millis() as u64,
            limits.max_timeout.as_millis() as u64,
            "timeout_ms",
        )?;
        let limit = capped(
            args.limit.map(|n| n as u64),
            limits.default_page as u64,
            limits.max_page as u64,
            "limit",
        )? as usize;
        Ok(Plan {
            patterns,
            matcher,
            requested_scrollback,
            scrollback: requested_scrollback.min(limits.max_scrollback_lines),
            join_wrapped: args.join_wrapped.unwrap_or(true),
            context_lines: usize::from(context),
            limit,
            offset: args.offset.unwrap_or(0),
            timeout: Duration::from_millis(timeout_ms),
            engine_limits: SearchBudgets {
                max_scan_bytes: capped(
                    args.max_scan_bytes,
                    limits.default_scan_bytes,
                    limits.max_scan_bytes,
                    "max_scan_bytes",
                )?,
                max_scan_lines: capped(
                    args.max_scan_lines,
                    limits.default_scan_lines,
                    limits.max_scan_lines,
                    "max_scan_lines",
                )?,
                deadline: None,
                max_matches: capped(
                    args.max_matches,
                    limits.default_matches,
                    limits.max_matches,
                    "max_matches",
                )?,
                max_matches_per_pane: capped(
                    args.max_matches_per_pane,
                    limits.default_matches_per_pane,
                    limits.max_matches_per_pane,
                    "max_matches_per_pane",
                )?,
            },
        })
    }

    fn capture_range(&self) -> CaptureRange {
        if self.scrollback == 0 {
            CaptureRange::Visible
        } else {
            CaptureRange::Scrollback(self.scrollback)
        }
    }
}

/// A caller's value, or the default; above the operator's ceiling is an
/// error that names the ceiling (silently searching less would look like
/// "not found").
pub(crate) fn capped(
    value: Option<u64>,
    default: u64,
    ceiling: u64,
    name: &str,
) -> Result<u64, ToolError> {
    match value {
        None => Ok(default.min(ceiling)),
        Some(0) => Err(ToolError::new(format!("{name} must be at least 1"))),
        Some(v) if v > ceiling => Err(ToolError::over_ceiling(format!(
            "{name} may be at most {ceiling} (the operator's ceiling), got {v}"
        ))),
        Some(v) => Ok(v),
    }
}

/// The panes the filters select, in inventory order (session, window
/// index, pane index). A filter naming something that does not exist is an
/// error that lists what does.
pub fn resolve_scope<'a>(
    inv: &'a Inventory,
    session: Option<&str>,
    window: Option<WindowId>,
    pane_ids: Option<&[PaneId]>,
) -> Result<Vec<&'a Pane>, ToolError> {
    let session_id = match session {
        Some(key) => Some(find_session(inv, key)?.session_id),
        None => None,
    };
    if let Some(w) = &window {
        find_window(inv, *w)?;
    }
    if let Some(ids) = pane_ids {
        let missing: Vec<String> = ids
            .iter()
            .filter(|id| !inv.panes.iter().any(|p| &p.pane_id == *id))
            .map(ToString::to_string)
            .collect();
        if !missing.is_empty() {
            return Err(ToolError::not_found(format!(
                "no pane {}; panes: {}",
                missing.join(" "),
                bounded_list(inv.panes.iter().map(|p| p.pane_id.to_string()))
            )));
        }
    }
    Ok(inv
        .panes
        .iter()
        .filter(|p| {
            session_id
                .as_ref()
                .is_none_or(|s| p.placements.iter().any(|pl| &pl.session_id == s))
        })
        .filter(|p| {
            window
                .as_ref()
                .is_none_or(|w| p.placements.iter().any(|pl| &pl.window_id == w))
        })
        .filter(|p| pane_ids.is_none_or(|ids| ids.contains(&p.pane_id)))
        .collect())
}

/// How long past the deadline a search may take to learn what its
/// returned panes run (one round trip).
const DETAILS_GRACE: Duration = Duration::from_millis(100);

/// What the fetch side learnt while forwarding captures.
#[derive(Debug, Default)]
struct FetchReport {
    /// Some capture was cut to the per-pane byte ceiling.
    byte_clamped: bool,
    /// Captures did not arrive before the deadline.
    timed_out: bool,
}

/// Runs a search: plan, scope, fetch, scan, shape.
pub fn search_panes(
    ctx: &ToolContext,
    args: &SearchPanesArgs,
) -> Result<SearchPanesResult, ToolError> {
    let started = Instant::now();
    let limits = &ctx.ceilings().search;
    let plan = Plan::new(args, limits)?;
    let deadline = started + plan.timeout;

    let tmux = ctx.tmux(&args.server)?;
    // The listing uses the search's own deadline (a tmux busy with other
    // calls' captures gets the whole budget, and a stopped one cannot hold
    // the call past it); with the pane cache, its activity read rides in the
    // same round trip.
    let (inv, activity) = if ctx.pane_cache.is_some() {
        let (t, activity_command) = (tmux.clone(), PaneCache::activity_command());
        let (inv, mut extra) =
            ctx.cancellable(move || t.inventory_for_cached_search(&[activity_command], deadline))?;
        let activity = extra
            .pop()
            .unwrap_or(Err(TmuxError::ConnectionLost("no reply".into())));
        (inv, activity)
    } else {
        let t = tmux.clone();
        (
            ctx.cancellable(move || t.inventory_for_search(deadline))?,
            Err(TmuxError::ConnectionLost("no cache".into())),
        )
    };
    let mut panes = resolve_scope(
        &inv,
        args.session.as_deref(),
        args.window,
        args.pane_ids.as_deref(),
    )?;
    let pane_limit_clamped = panes.len() > limits.max_panes;
    panes.truncate(limits.max_panes);
    let scrollback_clamped = plan.requested_scrollback > plan.scrollback
        && panes.iter().any(|p| p.history_size > plan.scrollback);

    // Fetch and scan overlap: the transport streams replies in pane order,
    // the forwarder turns them into engine input, the engine scans them on
    // the rayon pool as they come.
    let stop_fetch = Arc::new(AtomicBool::new(false));
    let requests: Vec<CaptureRequest> = panes
        .iter()
        .map(|p| CaptureRequest {
            pane: p.pane_id,
            range: plan.capture_range(),
        })
        .collect();
    let capture_options = CaptureOptions {
        join_wrapped: plan.join_wrapped,
        escapes: false,
    };
    // The pane cache answers with the same text, fetching only what changed.
    let replies = match &ctx.pane_cache {
        Some(cache) => cache.capture_read(
            &tmux,
            &inv,
            activity,
            requests,
            capture_options,
            deadline,
            stop_fetch.clone(),
        ),
        None => tmux.capture(requests, capture_options, deadline, stop_fetch.clone()),
    };
    let options = SearchOptions {
        limits: SearchBudgets {
            deadline: Some(deadline),
            ..plan.engine_limits.clone()
        },
        context_lines: plan.context_lines,
        strip_escapes: true,
        max_text_bytes: 1024,
        cancel: Some(ctx.cancel.clone()),
    };
    let total = panes.len();
    let progress = ProgressThrottle::new(ctx, total);
    let (tx, rx) = crossbeam_channel::bounded(engine::max_in_flight());
    let (outcome, fetch) = std::thread::scope(|scope| {
        let forwarder = scope.spawn(|| {
            forward_captures(
                replies,
                tx,
                &ctx.cancel,
                &stop_fetch,
                limits.max_capture_bytes,
            )
        });
        let outcome = engine::search(&plan.matcher, &options, rx, &|p| progress.report(p));
        // The engine may stop early (a budget ran out): stop asking tmux.
        stop_fetch.store(true, Ordering::Relaxed);
        let fetch = forwarder.join().unwrap_or_default();
        (outcome, fetch)
    });
    ctx.check_cancelled()?;

    if total > 0 && outcome.failed.len() == total {
        let (_, reason) = &outcome.failed[0];
        return Err(ToolError::new(format!(
            "every capture failed ({total} panes); the first: {reason}"
        )));
    }

    let mut all_hits: Vec<PaneHits> = outcome
        .panes
        .iter()
        .filter_map(|pm| {
            let pane = panes.get(pm.key)?;
            Some(pane_hits(
                pane,
                &pm.lines,
                pm.lines_truncated,
                plan.patterns.len() > 1,
            ))
        })
        .collect();
    let total_panes_matched = all_hits.len();
    let page_end = plan
        .offset
        .saturating_add(plan.limit)
        .min(total_panes_matched);
    let page_start = plan.offset.min(total_panes_matched);
    let truncated_panes: Vec<PaneId> = all_hits[page_end..].iter().map(|h| h.pane_id).collect();
    all_hits.truncate(page_end);
    let mut matches: Vec<PaneHits> = all_hits.drain(page_start..).collect();
    // What the returned panes run was left out of the listing (the costliest
    // fields for tmux): ask for it now, for this page only. A search that
    // ran out of time still gets a moment for it.
    let page: Vec<PaneId> = matches.iter().map(|m| m.pane_id).collect();
    let details_deadline = deadline.max(Instant::now() + DETAILS_GRACE);
    let details = tmux.commands_and_paths(&page, details_deadline);
    for (hit, detail) in matches.iter_mut().zip(details) {
        if let Some((command, path)) = detail {
            hit.pane_current_command = command;
            hit.pane_current_path = path;
        }
    }
    let failures = outcome
        .failed
        .iter()
        .take(20)
        .filter_map(|(key, reason)| {
            Some(PaneFailure {
                pane_id: panes.get(*key)?.pane_id,
                error: reason.clone(),
            })
        })
        .collect();

    let mut result = SearchPanesResult {
        matches,
        total_panes_matched,
        offset: plan.offset,
        limit: plan.limit,
        truncated: total_panes_matched > page_end,
        truncated_panes,
        panes_searched: outcome.panes_searched,
        panes_failed: outcome.failed.len(),
        failures,
        bytes_scanned: outcome.bytes_scanned,
        lines_scanned: outcome.lines_scanned,
        elapsed_ms: 0,
        effective_scrollback_lines: plan.scrollback,
        captures_byte_clamped: fetch.byte_clamped,
        matching_byte_clamped: outcome.flags.byte_clamped,
        matching_line_clamped: outcome.flags.line_clamped,
        matching_time_clamped: outcome.flags.time_clamped || fetch.timed_out,
        pane_limit_clamped,
        scrollback_clamped,
        matches_truncated: outcome.flags.matches_truncated,
    };
    result.elapsed_ms = started.elapsed().as_millis() as u64;
    Ok(result)
}

/// Turns transport replies into engine input, in order, until the batch
/// ends, the engine stops listening, or the call is cancelled.
fn forward_captures(
    replies: Receiver<CaptureReply>,
    tx: Sender<Incoming>,
    cancel: &AtomicBool,
    stop_fetch: &AtomicBool,
    max_capture_bytes: usize,
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
                let mut capture = Capture {
                    key: reply.index,
                    first_line: text.first_line,
                    bytes: text.bytes,
                    line_numbers: text.line_numbers,
                };
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
    capture.bytes.drain(..from);
    match &mut capture.line_numbers {
        Some(numbers) => {
            numbers.drain(..dropped_lines.min(numbers.len()));
        }
        None => capture.first_line += dropped_lines as i64,
    }
}

fn pane_hits(pane: &Pane, lines: &[LineMatch], truncated: bool, several: bool) -> PaneHits {
    PaneHits {
        pane_id: pane.pane_id,
        pane_index: pane.pane_index,
        window_id: pane.window_id,
        window_index: pane.window_index,
        window_name: pane.window_name.clone(),
        session_id: pane.session_id,
        session_name: pane.session_name.clone(),
        placements: pane.placements.clone(),
        pane_current_command: pane.pane_current_command.clone(),
        pane_current_path: pane.pane_current_path.clone(),
        is_caller: pane.is_caller,
        lines: lines
            .iter()
            .map(|m| HitLine {
                line: m.line,
                text: m.text.clone(),
                pattern_index: several.then_some(m.pattern_index),
                before: m.before.clone(),
                after: m.after.clone(),
            })
            .collect(),
        lines_truncated: truncated,
    }
}

/// Reports progress at most every 100 ms and on the last pane, so a
/// 1,000-pane search sends tens of notifications, not thousands.
struct ProgressThrottle<'a> {
    ctx: &'a ToolContext,
    total: usize,
    last: std::sync::Mutex<(Instant, usize)>,
}

impl<'a> ProgressThrottle<'a> {
    fn new(ctx: &'a ToolContext, total: usize) -> Self {
        ProgressThrottle {
            ctx,
            total,
            last: std::sync::Mutex::new((Instant::now(), 0)),
        }
    }

    fn report(&self, p: Progress) {
        if !self.ctx.progress.is_active() {
            return;
        }
        let Ok(mut last) = self.last.lock() else {
            return;
        };
        let due = p.panes_done == self.total || last.0.elapsed() >= Duration::from_millis(100);
        if due && p.panes_done > last.1 {
            *last = (Instant::now(), p.panes_done);
            let message = format!("{} of {} panes searched", p.panes_done, self.total);
            self.ctx
                .progress
                .report(p.panes_done as f64, Some(self.total as f64), Some(&message));
        }
    }
}

/// Drops matching lines from the end of the page (then whole panes, then
/// the ids of the panes beyond it) until about `excess` encoded bytes are
/// saved; marks the panes that lost lines and `matches_truncated`. False
/// when nothing is left to drop.
fn cut_to_size(result: &mut SearchPanesResult, excess: usize) -> bool {
    let mut saved = 0usize;
    while saved < excess {
        let Some(pane) = result
            .matches
            .iter_mut()
            .rev()
            .find(|p| !p.lines.is_empty())
        else {
            // No lines left: drop whole panes into truncated_panes.
            if let Some(pane) = result.matches.pop() {
                saved += encoded_len(&pane);
                result.truncated = true;
                result.truncated_panes.insert(0, pane.pane_id);
                continue;
            }
            // Only the page of truncated ids is left; cut it.
            let keep = result.truncated_panes.len() / 2;
            if keep == result.truncated_panes.len() {
                return saved > 0;
            }
            result.truncated_panes.truncate(keep);
            continue;
        };
        let place = pane_place(pane, &Style::PLAIN);
        if let Some(line) = pane.lines.pop() {
            pane.lines_truncated = true;
            result.matches_truncated = true;
            saved += line_cost(&place, &line);
        }
    }
    true
}

/// The bytes a line takes in the response: its JSON in the structured
/// result and its escaped rendering in the text.
fn line_cost(place: &str, line: &HitLine) -> usize {
    let mut rendered = String::new();
    push_hit(&mut rendered, place, line, &Style::PLAIN);
    encoded_len(line) + 1 + super::json_str_len(&rendered)
}

fn encoded_len<T: Serialize>(value: &T) -> usize {
    serde_json::to_string(value).map_or(0, |s| s.len())
}

/// The grep-like rendering: one line per hit, `%3 dev:1.0 -12: text`,
/// context lines with `-` instead of `:`, and a closing line that names
/// every clamp that fired.
pub fn render_text(result: &SearchPanesResult) -> String {
    let mut out = String::new();
    for pane in &result.matches {
        let place = pane_place(pane, &Style::PLAIN);
        for hit in &pane.lines {
            push_hit(&mut out, &place, hit, &Style::PLAIN);
        }
        if pane.lines_truncated {
            out.push_str(&format!("{place} (more matching lines not shown)\n"));
        }
    }
    out.push_str(&summary_line(result));
    out
}

/// Terminal colours of the grep-like rendering (all empty: plain text).
#[derive(Debug, Clone, Copy)]
pub struct Style {
    pub pane: &'static str,
    pub line: &'static str,
    pub context: &'static str,
    pub reset: &'static str,
}

impl Style {
    pub const PLAIN: Style = Style {
        pane: "",
        line: "",
        context: "",
        reset: "",
    };
    pub const COLOUR: Style = Style {
        pane: "\x1b[35m",
        line: "\x1b[32m",
        context: "\x1b[2m",
        reset: "\x1b[0m",
    };
}

/// `%3 dev:1.0`: the pane and where it sits.
pub fn pane_place(pane: &PaneHits, style: &Style) -> String {
    format!(
        "{}{}{} {}:{}.{}",
        style.pane,
        pane.pane_id,
        style.reset,
        pane.session_name,
        pane.window_index,
        pane.pane_index
    )
}

/// One hit with its context: `PLACE -13- before`, `PLACE -12: text`,
/// `PLACE -11- after`, one per line.
pub fn push_hit(out: &mut String, place: &str, hit: &HitLine, style: &Style) {
    let Style {
        line: g,
        context: d,
        reset: r,
        ..
    } = *style;
    let first = hit.line - hit.before.len() as i64;
    for (i, text) in hit.before.iter().enumerate() {
        out.push_str(&format!(
            "{place} {g}{}{r}- {d}{text}{r}\n",
            first + i as i64
        ));
    }
    out.push_str(&format!("{place} {g}{}{r}: {}\n", hit.line, hit.text));
    for (i, text) in hit.after.iter().enumerate() {
        out.push_str(&format!(
            "{place} {g}{}{r}- {d}{text}{r}\n",
            hit.line + 1 + i as i64
        ));
    }
}

/// `-- 12 lines in 3 panes (page 1-3 of 3); searched 200 panes, ...`.
pub fn summary_line(result: &SearchPanesResult) -> String {
    let lines: usize = result.matches.iter().map(|p| p.lines.len()).sum();
    let mut s = format!(
        "-- {lines} matching lines shown from {} of {} matching panes; searched {} panes ({} failed), {} bytes, {} lines in {} ms",
        result.matches.len(),
        result.total_panes_matched,
        result.panes_searched,
        result.panes_failed,
        result.bytes_scanned,
        result.lines_scanned,
        result.elapsed_ms,
    );
    if result.truncated {
        s.push_str(&format!(
            "; {} more matching panes: use offset {}",
            result.truncated_panes.len(),
            result.offset + result.matches.len()
        ));
    }
    let clamps = clamp_names(result);
    if clamps.is_empty() {
        s.push_str("; complete");
    } else {
        s.push_str("; clamped: ");
        s.push_str(&clamps.join(", "));
    }
    s
}

/// Every clamp flag of a result, in the order they are reported.
pub const CLAMP_FLAGS: [&str; 7] = [
    "captures_byte_clamped",
    "matching_byte_clamped",
    "matching_line_clamped",
    "matching_time_clamped",
    "pane_limit_clamped",
    "scrollback_clamped",
    "matches_truncated",
];

/// The names of the clamp flags that fired.
pub fn clamp_names(result: &SearchPanesResult) -> Vec<&'static str> {
    let fired = [
        result.captures_byte_clamped,
        result.matching_byte_clamped,
        result.matching_line_clamped,
        result.matching_time_clamped,
        result.pane_limit_clamped,
        result.scrollback_clamped,
        result.matches_truncated,
    ];
    CLAMP_FLAGS
        .into_iter()
        .zip(fired)
        .filter_map(|(name, on)| on.then_some(name))
        .collect()
}

/// The clamp flags set in a result received as JSON (through MCP).
pub fn clamp_names_in_json(result: &serde_json::Value) -> Vec<&'static str> {
    CLAMP_FLAGS
        .into_iter()
        .filter(|k| result.get(*k) == Some(&serde_json::Value::Bool(true)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::registry::encode_within;

    #[test]
    fn keep_newest_cuts_on_a_line_boundary_and_renumbers() {
        let mut c = Capture {
            key: 0,
            first_line: -4,
            bytes: b"aaaa\nbbbb\ncccc\ndddd\n".to_vec(),
            line_numbers: None,
        };
        keep_newest(&mut c, 11);
        assert_eq!(c.bytes, b"cccc\ndddd\n");
        assert_eq!(c.first_line, -2);

        let mut c = Capture {
            key: 0,
            first_line: -10,
            bytes: b"aaaa\nbbbb\ncccc\n".to_vec(),
            line_numbers: Some(vec![-10, -7, -3]),
        };
        keep_newest(&mut c, 5);
        assert_eq!(c.bytes, b"cccc\n");
        assert_eq!(c.line_numbers, Some(vec![-3]));
    }

    #[test]
    fn capped_rejects_zero_and_values_over_the_ceiling() {
        assert_eq!(capped(None, 5, 10, "x").unwrap(), 5);
        assert_eq!(capped(Some(10), 5, 10, "x").unwrap(), 10);
        assert!(capped(Some(11), 5, 10, "x")
            .unwrap_err()
            .message
            .contains("at most 10"));
        assert!(capped(Some(0), 5, 10, "x").is_err());
    }

    fn hit(pane: u32, lines: usize, width: usize) -> PaneHits {
        PaneHits {
            pane_id: PaneId::parse(&format!("%{pane}")).unwrap(),
            pane_index: 0,
            window_id: WindowId::parse("@1").unwrap(),
            window_index: 1,
            window_name: "w".into(),
            session_id: SessionId::parse("$0").unwrap(),
            session_name: "s".into(),
            placements: vec![],
            pane_current_command: "sh".into(),
            pane_current_path: "/".into(),
            is_caller: None,
            lines: (0..lines)
                .map(|i| HitLine {
                    line: i as i64,
                    text: "x".repeat(width),
                    pattern_index: None,
                    before: vec![],
                    after: vec![],
                })
                .collect(),
            lines_truncated: false,
        }
    }

    fn empty_result(matches: Vec<PaneHits>) -> SearchPanesResult {
        SearchPanesResult {
            total_panes_matched: matches.len(),
            matches,
            offset: 0,
            limit: 100,
            truncated: false,
            truncated_panes: vec![],
            panes_searched: 0,
            panes_failed: 0,
            failures: vec![],
            bytes_scanned: 0,
            lines_scanned: 0,
            elapsed_ms: 0,
            effective_scrollback_lines: 0,
            captures_byte_clamped: false,
            matching_byte_clamped: false,
            matching_line_clamped: false,
            matching_time_clamped: false,
            pane_limit_clamped: false,
            scrollback_clamped: false,
            matches_truncated: false,
        }
    }

    #[test]
    fn small_results_are_not_cut() {
        let r = empty_result(vec![hit(1, 3, 10)]);
        let out = encode_within::<SearchPanes>(r, 1_000_000).unwrap();
        let v: serde_json::Value = serde_json::from_str(out.structured.get()).unwrap();
        assert_eq!(v["matches_truncated"], false);
        assert_eq!(v["matches"][0]["lines"].as_array().unwrap().len(), 3);
    }

    #[test]
    fn large_results_are_cut_from_the_end_to_the_encoded_size() {
        // Quotes double under JSON escaping, in the result and its text.
        let mut r = empty_result((0..100).map(|p| hit(p, 20, 1000)).collect());
        for line in r.matches.iter_mut().flat_map(|p| p.lines.iter_mut()) {
            line.text = "\"".repeat(1000);
        }
        let room = 1_000_000;
        let out = encode_within::<SearchPanes>(r, room).unwrap();
        assert!(out.encoded_len() <= room, "{}", out.encoded_len());
        // Lines are dropped one by one: not much room is left over.
        assert!(out.encoded_len() > room - 10_000, "{}", out.encoded_len());
        let v: serde_json::Value = serde_json::from_str(out.structured.get()).unwrap();
        assert_eq!(v["matches_truncated"], true);
        let panes = v["matches"].as_array().unwrap();
        // The first panes keep all their lines; the cut is at the end.
        assert_eq!(panes[0]["lines"].as_array().unwrap().len(), 20);
        assert_eq!(panes[0]["lines_truncated"], false);
        let with_lines = |p: &serde_json::Value| !p["lines"].as_array().unwrap().is_empty();
        let last_with_lines = panes.iter().rposition(with_lines).unwrap();
        assert!(panes[last_with_lines + 1..]
            .iter()
            .all(|p| p["lines_truncated"] == true));
    }

    #[test]
    fn text_rendering_is_grep_like_and_names_clamps() {
        let mut r = empty_result(vec![hit(3, 1, 4)]);
        r.matches[0].lines[0].line = -12;
        r.matches[0].lines[0].before = vec!["b".into()];
        r.matching_byte_clamped = true;
        let text = render_text(&r);
        assert!(text.contains("%3 s:1.0 -13- b\n"), "{text}");
        assert!(text.contains("%3 s:1.0 -12: xxxx\n"), "{text}");
        assert!(text.ends_with("clamped: matching_byte_clamped"), "{text}");
    }
}
