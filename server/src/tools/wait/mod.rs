//! wait_for_text: block until one of some patterns appears in the new
//! output of one of some panes, or a timeout.
//!
//! - [`watch`] — what counts as new text in a pane (only text that appears
//!   after the call started), and the check of a capture against it.
//! - [`wake`] — what wakes the wait: tmux's event stream for the panes it
//!   covers ([`crate::tmux::events`]), a probe on an adaptive interval for
//!   the others.
//!
//! The flow: list the panes, pick those in scope, subscribe to their
//! output, capture each from its cursor row down (the start rows, and
//! anything printed since the listing), then capture a pane again only when
//! it printed, until a line matches or the time is up. The text returned
//! always comes from a capture, never from the event stream.

mod panes;
mod wake;
mod watch;

pub use panes::{WatchPanes, WatchPanesArgs};

use std::time::{Duration, Instant};

use panescan_engine::{Matcher, PatternOptions};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::context::{ErrorKind, ServerArgs, ToolContext, ToolError, WAIT_GRACE};
use super::search::{capped, pattern_list, resolve_scope};
use crate::tmux::events::Interest;
use crate::tmux::{
    CaptureOptions, CaptureRequest, CapturedText, Fields, Inventory, PaneId, Tmux, TmuxError,
    WindowId,
};
use crate::tools::registry::{Annotations, Tool};
use watch::{Hit, PaneWatch};

/// Panes one wait may watch.
const MAX_WAIT_PANES: usize = 256;
/// Progress is reported this often.
const PROGRESS_EVERY: Duration = Duration::from_millis(500);
/// How long after a capture's deadline its reply is waited for at most
/// (the capture machinery answers by the deadline itself; this only stops
/// a lost reply from holding the wait).
const REPLY_BACKSTOP: Duration = Duration::from_secs(1);

#[derive(Debug, Deserialize, JsonSchema)]
// A wire type: its doc comments would be schema descriptions every client
// reads in tools/list; the tool's description and the field names say it.
#[allow(missing_docs)]
pub struct WaitForTextArgs {
    /// Pane id, e.g. %1.
    #[serde(default)]
    pub pane_id: Option<PaneId>,
    /// Pane ids (%N).
    #[serde(default)]
    pub pane_ids: Option<Vec<PaneId>>,
    /// Session id ($N) or name.
    #[serde(default)]
    pub session: Option<String>,
    /// Window id (@N).
    #[serde(default)]
    pub window: Option<WindowId>,
    /// Text to wait for (literal unless regex is true); matched within one line.
    #[serde(default)]
    pub pattern: Option<String>,
    /// 1-64 patterns, any of which matches.
    #[serde(default)]
    pub patterns: Option<Vec<String>>,
    /// Patterns are bounded regexes.
    #[serde(default)]
    pub regex: bool,
    /// Match case exactly (default: case-insensitive).
    #[serde(default)]
    pub match_case: bool,
    /// Give up after this many ms (default 8000, max 120000).
    #[serde(default)]
    pub timeout_ms: Option<u64>,
    #[serde(flatten)]
    pub server: ServerArgs,
}

#[derive(Debug, Serialize, JsonSchema)]
// A wire type: its doc comments would be schema descriptions every client
// reads in tools/list; the tool's description and the field names say it.
#[allow(missing_docs)]
pub struct WaitForTextResult {
    // The pane whose line matched; with one pane watched, that pane.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pane_id: Option<PaneId>,
    pub found: bool,
    pub timed_out: bool,
    /// The first new line that matched.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<String>,
    // The same text (named as in search_panes).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Secrets replaced with `[REDACTED:KIND]` in the line.
    pub redactions: u64,
    /// Its tmux line number when found (0 = top of screen).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line_number: Option<i64>,
    // Which of patterns matched (0 with one pattern).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pattern_index: Option<usize>,
    pub elapsed_ms: u64,
    /// Captures taken.
    pub checks: u32,
    // Panes watched.
    pub panes_watched: usize,
    // Of those, panes tmux's event stream did not cover (probed instead).
    pub panes_polled: usize,
}

#[derive(Debug)]
/// `wait_for_text`: blocks until a pattern appears in the watched panes, or the timeout.
pub struct WaitForText;

impl Tool for WaitForText {
    const NAME: &'static str = "wait_for_text";
    const TITLE: &'static str = "Wait for text in panes";
    const DESCRIPTION: &'static str = "Block until any of 1-64 literal or regex patterns appears in new output of a pane (pane_id) or of several (pane_ids, session, window), or until timeout_ms (default 8 s, max 120 s); earlier text does not count. Says which pane, pattern and line matched. For existing text use search_panes.";
    const ANNOTATIONS: Annotations = Annotations::READ_VOLATILE;
    const BATCHABLE: bool = false;
    type Args = WaitForTextArgs;
    type Output = WaitForTextResult;

    fn run(ctx: &ToolContext, args: Self::Args) -> Result<Self::Output, ToolError> {
        let plan = Plan::new(ctx, &args)?;
        let tmux = ctx.tmux(&args.server)?;
        let inv = plan.first_listing(ctx, &tmux)?;
        let watches = scope(&inv, &args)?;
        let ids: Vec<PaneId> = watches.iter().map(|w| w.pane).collect();
        let sub = ctx.config.wait_events.then(|| {
            let interest = Interest::printed(ids.iter().copied());
            tmux.subscribe(interest, ctx.tmux_deadline_by(plan.deadline))
        });
        let mut wait = Wait {
            ctx,
            tmux: &tmux,
            waker: wake::Waker::new(sub, ids, plan.deadline),
            plan,
            watches,
            checks: 0,
            closed_ok: false,
        };
        wait.run()
    }

    fn text(out: &Self::Output) -> String {
        let pane = out
            .pane_id
            .map_or_else(|| format!("{} panes", out.panes_watched), |p| p.to_string());
        if out.found {
            let which = match out.pattern_index {
                Some(i) if i > 0 => format!(" (pattern {i})"),
                _ => String::new(),
            };
            format!(
                "found in {pane} at line {} after {} ms{which}: {}",
                out.line_number.unwrap_or(0),
                out.elapsed_ms,
                out.text.as_deref().unwrap_or("")
            )
        } else {
            format!(
                "not found in {pane} within {} ms ({} checks)",
                out.elapsed_ms, out.checks
            )
        }
    }
}

/// Validated arguments.
#[derive(Debug)]
struct Plan {
    matcher: Matcher,
    started: Instant,
    deadline: Instant,
    timeout: Duration,
}

impl Plan {
    fn new(ctx: &ToolContext, args: &WaitForTextArgs) -> Result<Plan, ToolError> {
        let limits = ctx.ceilings();
        Plan::build(
            ctx,
            Patterns {
                pattern: &args.pattern,
                patterns: &args.patterns,
                regex: args.regex,
                match_case: args.match_case,
            },
            args.timeout_ms,
            limits.wait_default.as_millis() as u64,
        )
    }

    /// The patterns compiled and the deadline set (`timeout_ms` or
    /// `default_ms`, within the operator's wait ceiling).
    fn build(
        ctx: &ToolContext,
        p: Patterns,
        timeout_ms: Option<u64>,
        default_ms: u64,
    ) -> Result<Plan, ToolError> {
        let timeout = wait_timeout(ctx, timeout_ms, Duration::from_millis(default_ms))?;
        let patterns = pattern_list(p.pattern, p.patterns, "the text to wait for")?;
        if patterns.iter().any(String::is_empty) {
            return Err(ToolError::invalid("a pattern must not be empty"));
        }
        let options = PatternOptions {
            regex: p.regex,
            match_case: p.match_case,
        };
        let matcher =
            Matcher::new(&patterns, options).map_err(|e| ToolError::invalid(e.to_string()))?;
        let started = Instant::now();
        Ok(Plan {
            matcher,
            started,
            deadline: started + timeout,
            timeout,
        })
    }

    /// When the wait's reads of tmux (listings, captures) must be
    /// answered: its end plus [`WAIT_GRACE`] (or tmux's own deadline, if
    /// sooner).
    fn reads_end(&self) -> Instant {
        self.deadline + WAIT_GRACE
    }

    /// Whether the wait's time is up.
    fn ran_out(&self) -> bool {
        Instant::now() >= self.deadline
    }

    /// The panes listed before the wait begins; tmux not answering within
    /// the wait's time is said as that, not as tmux's round-trip deadline.
    fn first_listing(&self, ctx: &ToolContext, tmux: &Tmux) -> Result<Inventory, ToolError> {
        listing(ctx, tmux, self.reads_end()).map_err(|e| {
            if e.kind == ErrorKind::TimedOut && self.ran_out() {
                ToolError::timed_out(format!(
                    "tmux did not answer within the wait's timeout_ms ({} ms): no pane was watched; retry once tmux answers",
                    self.timeout.as_millis()
                ))
            } else {
                e
            }
        })
    }
}

/// The pattern arguments a waiting tool takes.
struct Patterns<'a> {
    pattern: &'a Option<String>,
    patterns: &'a Option<Vec<String>>,
    regex: bool,
    match_case: bool,
}

/// Every pane with what a wait needs (history size, cursor, height), if
/// tmux answers by `end` (and its round-trip deadline).
fn listing(ctx: &ToolContext, tmux: &Tmux, end: Instant) -> Result<Inventory, ToolError> {
    let tmux = tmux.clone();
    let deadline = ctx.tmux_deadline_by(end);
    ctx.cancellable(move || {
        tmux.inventory(Fields::SearchWithFingerprint, &[], deadline)
            .map(|(inv, _)| inv)
    })
}

/// The watched panes, in listing order: `pane_id`, `pane_ids`, `session`
/// and `window` select together (at least one is required).
fn scope(inv: &Inventory, args: &WaitForTextArgs) -> Result<Vec<PaneWatch>, ToolError> {
    let ids: Option<Vec<PaneId>> = match (&args.pane_id, &args.pane_ids) {
        (Some(_), Some(_)) => {
            return Err(ToolError::invalid(
                "give either pane_id or pane_ids, not both",
            ))
        }
        (Some(p), None) => Some(vec![*p]),
        (None, Some(list)) if list.is_empty() => {
            return Err(ToolError::invalid("pane_ids must name at least one pane"))
        }
        (None, list) => list.clone(),
    };
    if ids.is_none() && args.session.is_none() && args.window.is_none() {
        return Err(ToolError::invalid(
            "say where to wait: pane_id, pane_ids, session or window",
        ));
    }
    let panes = resolve_scope(inv, args.session.as_deref(), args.window, ids.as_deref())?;
    if panes.is_empty() {
        return Err(ToolError::invalid("no pane is in that scope"));
    }
    if panes.len() > MAX_WAIT_PANES {
        return Err(ToolError::invalid(format!(
            "a wait may watch at most {MAX_WAIT_PANES} panes, the scope holds {}: narrow it",
            panes.len()
        )));
    }
    Ok(panes.into_iter().map(PaneWatch::new).collect())
}

/// One wait in progress.
struct Wait<'a> {
    ctx: &'a ToolContext,
    tmux: &'a Tmux,
    plan: Plan,
    watches: Vec<PaneWatch>,
    waker: wake::Waker,
    checks: u32,
    /// A pane that closes stops being watched (watch_panes); otherwise
    /// it ends the wait with an error (wait_for_text).
    closed_ok: bool,
}

impl Wait<'_> {
    fn run(&mut self) -> Result<WaitForTextResult, ToolError> {
        // The first check captures every pane: it records the start rows
        // and finds anything printed between the listing and the
        // subscription.
        let mut due: Vec<usize> = (0..self.watches.len()).collect();
        let mut next_progress = self.plan.started + PROGRESS_EVERY;
        loop {
            if let Some(hit) = self.check(&due)? {
                return Ok(self.result(Some(hit)));
            }
            let now = Instant::now();
            if now >= self.plan.deadline {
                return Ok(self.result(None));
            }
            if now >= next_progress {
                next_progress = now + PROGRESS_EVERY;
                // Says how the panes are watched: callers (and tests) can
                // see when the event stream took over from polling.
                let how = format!(
                    "waiting for text in {} panes ({} polled)",
                    self.watches.len(),
                    self.waker.polled()
                );
                self.ctx.progress.report(
                    self.plan.started.elapsed().as_millis() as f64,
                    Some(self.plan.timeout.as_millis() as f64),
                    Some(&how),
                );
            }
            let until = self.plan.deadline.min(next_progress);
            due = self.waker.wait(self.ctx, self.tmux, until)?;
        }
    }

    /// Captures panes `due` (one batch, re-aimed up to twice for panes
    /// whose history moved meanwhile) and returns the first hit, in scope
    /// order.
    fn check(&mut self, due: &[usize]) -> Result<Option<Hit>, ToolError> {
        Ok(self.check_all(due, 1)?.into_iter().next())
    }

    /// [`Wait::check`] keeping up to `max` hits, in scope order then line
    /// order. A capture tmux did not answer before the wait's time ran out
    /// ends the check with the hits found so far: the wait then ends as
    /// timed out.
    fn check_all(&mut self, due: &[usize], max: usize) -> Result<Vec<Hit>, ToolError> {
        if due.is_empty() || max == 0 {
            return Ok(Vec::new());
        }
        self.checks += 1;
        let mut hits: Vec<(usize, Vec<Hit>)> = Vec::new();
        let mut todo = due.to_vec();
        for attempt in 0..3 {
            let Some(caps) = self.capture(&todo)? else {
                break;
            };
            let mut again = Vec::new();
            for (i, cap) in todo.iter().copied().zip(caps) {
                self.waker.captured(i);
                // A pane that closed (watch_panes only) has nothing to say.
                let Some(cap) = cap else { continue };
                let aimed = self.watches[i].absorb(&cap);
                if !aimed && attempt < 2 {
                    again.push(i);
                } else {
                    let found = self.watches[i].scan_new(&cap, &self.plan.matcher, max);
                    if !found.is_empty() {
                        hits.push((i, found));
                    }
                }
            }
            if again.is_empty() {
                break;
            }
            todo = again;
        }
        hits.sort_by_key(|(i, _)| *i);
        Ok(hits.into_iter().flat_map(|(_, h)| h).take(max).collect())
    }

    /// One capture batch of the watches `which`, in that order (`None` for
    /// a pane that closed, when that is allowed); `None` for the batch when
    /// the wait's time ran out before tmux answered it.
    fn capture(&self, which: &[usize]) -> Result<Option<Vec<Option<CapturedText>>>, ToolError> {
        self.ctx.check_cancelled()?;
        let requests: Vec<CaptureRequest> = which
            .iter()
            .map(|&i| CaptureRequest {
                pane: self.watches[i].pane,
                range: self.watches[i].range(),
            })
            .collect();
        let deadline = self.ctx.tmux_deadline_by(self.plan.reads_end());
        let rx = self.tmux.capture_small(
            requests,
            CaptureOptions::default(),
            deadline,
            self.ctx.cancel.clone(),
        );
        let mut out = Vec::with_capacity(which.len());
        for &i in which {
            let pane = self.watches[i].pane;
            match rx.recv_deadline(deadline + REPLY_BACKSTOP) {
                Ok(reply) => match reply.result {
                    Ok(cap) => out.push(Some(cap)),
                    Err(TmuxError::NotFound(_)) if self.closed_ok => out.push(None),
                    Err(TmuxError::NotFound(_)) => return Err(wake::closed(pane)),
                    Err(TmuxError::Timeout) if self.plan.ran_out() => return Ok(None),
                    Err(e) => return Err(ToolError::invalid(format!("{pane} while waiting: {e}"))),
                },
                Err(_) => {
                    self.ctx.check_cancelled()?;
                    if self.plan.ran_out() {
                        return Ok(None);
                    }
                    return Err(ToolError::invalid(format!(
                        "tmux did not return the capture of {pane} in time: retry"
                    )));
                }
            }
        }
        Ok(Some(out))
    }

    fn result(&self, hit: Option<Hit>) -> WaitForTextResult {
        let single = (self.watches.len() == 1).then(|| self.watches[0].pane);
        let found = hit.is_some();
        let mut text = hit.as_ref().map(|h| h.text.clone());
        let redactions = text.as_mut().map_or(0, |t| self.ctx.redact(t));
        WaitForTextResult {
            pane_id: hit.as_ref().map(|h| h.pane).or(single),
            found,
            timed_out: !found,
            line: text.clone(),
            text,
            redactions,
            line_number: hit.as_ref().map(|h| h.line_number),
            pattern_index: hit.as_ref().map(|h| h.pattern_index),
            elapsed_ms: self.plan.started.elapsed().as_millis() as u64,
            checks: self.checks,
            panes_watched: self.watches.len(),
            panes_polled: self.waker.polled(),
        }
    }
}

/// How long a call that waits may wait: `asked` (`timeout_ms`) or
/// `default`, within the operator's wait ceiling (`Ceilings::wait_max`): every
/// tool that waits on a pane reads its time this way.
pub(crate) fn wait_timeout(
    ctx: &ToolContext,
    asked: Option<u64>,
    default: Duration,
) -> Result<Duration, ToolError> {
    let max = ctx.ceilings().wait_max.as_millis() as u64;
    let ms = capped(asked, default.as_millis() as u64, max, "timeout_ms")?;
    Ok(Duration::from_millis(ms))
}
