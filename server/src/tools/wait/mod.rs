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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;
    use crate::config::Ceilings;
    use crate::testbed::private_server::PrivateServer;
    use crate::tmux::events::Subscription;
    use crate::tmux::{Pane, ServerSpec};
    use crate::tools::context::ProgressSink;
    use serde_json::json;
    use std::sync::mpsc;

    /// A private server whose panes run `cat` (quiet until sent keys), a
    /// read-only context on it and its handle (the wait module's tests).
    pub(super) struct Bed {
        pub(super) server: PrivateServer,
        pub(super) ctx: ToolContext,
        pub(super) tmux: Tmux,
    }

    impl Bed {
        pub(super) fn new(label: &str) -> Bed {
            Bed::with(label, Ceilings::default())
        }

        pub(super) fn with(label: &str, ceilings: Ceilings) -> Bed {
            let server = PrivateServer::start(label, 80, 10).unwrap();
            server
                .run_ok(["respawn-pane", "-k", "-t", "%0", "cat"])
                .unwrap();
            let spec = ServerSpec::named(server.socket_name());
            let ctx = ToolContext::read_only(spec, ceilings);
            let tmux = ctx.tmux(&ServerArgs::default()).unwrap();
            Bed { server, ctx, tmux }
        }

        /// A pane running `cat`, made by the tmux command `args`.
        pub(super) fn pane(&self, args: &[&str]) -> PaneId {
            let mut cmd = args.to_vec();
            cmd.extend(["-P", "-F", "#{pane_id}", "cat"]);
            PaneId::parse(self.server.run_ok(cmd).unwrap().trim()).unwrap()
        }

        pub(super) fn type_line(&self, pane: PaneId, text: &str) {
            let target = pane.to_string();
            self.server
                .run_ok(["send-keys", "-t", &target, text, "Enter"])
                .unwrap();
        }

        /// Returns once tmux shows `text` as a line of `pane` (on its
        /// screen or in its history).
        pub(super) fn shows(&self, pane: PaneId, text: &str) {
            self.shows_times(pane, text, 1);
        }

        /// Returns once tmux shows `text` as `times` lines of `pane` (on
        /// its screen or in its history). A line typed into `cat` shows
        /// twice, the terminal's echo and then `cat`'s copy, which a
        /// loaded machine may print well after it.
        pub(super) fn shows_times(&self, pane: PaneId, text: &str, times: usize) {
            let target = pane.to_string();
            let until = in_ms(10_000);
            while Instant::now() < until {
                let screen = self
                    .server
                    .run_ok(["capture-pane", "-p", "-S", "-", "-t", &target])
                    .unwrap_or_default();
                if screen.lines().filter(|l| l.trim_end() == text).count() >= times {
                    return;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            panic!("{pane} never showed {text:?} {times} times");
        }

        pub(super) fn subscribe(&self, panes: &[PaneId]) -> Subscription {
            let interest = Interest::printed(panes.iter().copied());
            self.tmux.subscribe(interest, in_ms(10_000))
        }

        /// Takes every event until the panes were quiet for 300 ms.
        pub(super) fn settle(&self, w: &mut wake::Waker) {
            for _ in 0..50 {
                if w.wait(&self.ctx, &self.tmux, in_ms(300))
                    .unwrap()
                    .is_empty()
                {
                    return;
                }
            }
            panic!("the panes never went quiet");
        }

        fn listed(&self, pane: PaneId) -> Pane {
            let inv = listing(&self.ctx, &self.tmux, in_ms(10_000)).unwrap();
            inv.panes.into_iter().find(|p| p.pane_id == pane).unwrap()
        }

        /// A wait of `timeout_ms` on `panes` as listed now, on `ctx`
        /// (polled: no subscription).
        fn wait_on<'a>(&'a self, ctx: &'a ToolContext, panes: &[PaneId], ms: u64) -> Wait<'a> {
            let plan = plan(ctx, ms);
            let watches = panes
                .iter()
                .map(|&p| PaneWatch::new(&self.listed(p)))
                .collect();
            Wait {
                ctx,
                tmux: &self.tmux,
                waker: wake::Waker::new(None, panes.to_vec(), plan.deadline),
                plan,
                watches,
                checks: 0,
                closed_ok: false,
            }
        }
    }

    fn in_ms(ms: u64) -> Instant {
        Instant::now() + Duration::from_millis(ms)
    }

    fn plan(ctx: &ToolContext, ms: u64) -> Plan {
        let p = Patterns {
            pattern: &Some("needle".into()),
            patterns: &None,
            regex: false,
            match_case: false,
        };
        Plan::build(ctx, p, Some(ms), 8000).unwrap()
    }

    fn args(v: serde_json::Value) -> WaitForTextArgs {
        serde_json::from_value(v).unwrap()
    }

    /// Runs wait_for_text on another thread; its progress reports (elapsed
    /// ms) come through the receiver as they are made.
    fn start(
        bed: &Bed,
        v: serde_json::Value,
    ) -> (
        std::thread::JoinHandle<Result<WaitForTextResult, ToolError>>,
        mpsc::Receiver<f64>,
    ) {
        let (tx, rx) = mpsc::channel();
        let tx = std::sync::Mutex::new(tx);
        let mut ctx = bed.ctx.clone();
        ctx.progress = ProgressSink::new(move |elapsed, _, _| {
            let _ = tx.lock().map(|tx| tx.send(elapsed));
        });
        let a = args(v);
        (std::thread::spawn(move || WaitForText::run(&ctx, a)), rx)
    }

    fn result(found: bool, panes: usize, pattern_index: usize) -> WaitForTextResult {
        WaitForTextResult {
            pane_id: (panes == 1).then(|| PaneId::from_number(3)),
            found,
            timed_out: !found,
            line: found.then(|| "ok".into()),
            text: found.then(|| "ok".into()),
            redactions: 0,
            line_number: found.then_some(7),
            pattern_index: found.then_some(pattern_index),
            elapsed_ms: 120,
            checks: 4,
            panes_watched: panes,
            panes_polled: 0,
        }
    }

    #[test]
    fn the_text_names_the_pane_and_a_pattern_past_the_first() {
        let text = |r: &WaitForTextResult| WaitForText::text(r);
        assert_eq!(
            text(&result(true, 1, 0)),
            "found in %3 at line 7 after 120 ms: ok"
        );
        assert_eq!(
            text(&result(true, 1, 2)),
            "found in %3 at line 7 after 120 ms (pattern 2): ok"
        );
        assert_eq!(
            text(&result(false, 5, 0)),
            "not found in 5 panes within 120 ms (4 checks)"
        );
    }

    #[test]
    fn a_plan_ends_at_its_timeout_and_reads_a_grace_later() {
        let ctx = ToolContext::read_only(ServerSpec::named("unused"), Ceilings::default());
        let mut p = plan(&ctx, 1500);
        assert_eq!(p.timeout, Duration::from_millis(1500));
        assert_eq!(p.deadline - p.started, Duration::from_millis(1500));
        assert_eq!(p.reads_end(), p.deadline + WAIT_GRACE);
        assert!(!p.ran_out());
        p.deadline = Instant::now();
        assert!(p.ran_out());
        let default = Duration::from_secs(8);
        assert_eq!(wait_timeout(&ctx, None, default).unwrap(), default);
        assert_eq!(
            wait_timeout(&ctx, Some(1500), default).unwrap(),
            Duration::from_millis(1500)
        );
        assert!(wait_timeout(&ctx, Some(120_001), default).is_err());
    }

    #[test]
    fn the_scope_is_named_by_pane_panes_session_or_window_and_bounded() {
        let bed = Bed::new("wait-scope");
        let p0 = PaneId::from_number(0);
        let p1 = bed.pane(&["split-window", "-d", "-t", "main"]);
        let p2 = bed.pane(&["new-session", "-d", "-s", "other"]);
        let inv = listing(&bed.ctx, &bed.tmux, in_ms(10_000)).unwrap();
        let window = inv.panes[0].window_id;
        let scoped = |v: serde_json::Value| -> Result<Vec<PaneId>, String> {
            scope(&inv, &args(v))
                .map(|w| w.iter().map(|w| w.pane).collect())
                .map_err(|e| e.message)
        };
        assert_eq!(scoped(json!({"pane_id": p1})).unwrap(), [p1]);
        assert_eq!(scoped(json!({"pane_ids": [p0, p2]})).unwrap(), [p0, p2]);
        assert_eq!(scoped(json!({"session": "other"})).unwrap(), [p2]);
        assert_eq!(scoped(json!({"window": window})).unwrap(), [p0, p1]);
        let refused = |v: serde_json::Value, says: &str| {
            let e = scoped(v.clone()).unwrap_err();
            assert!(e.contains(says), "{v}: {e}");
        };
        refused(json!({"pane_id": p0, "pane_ids": [p1]}), "not both");
        refused(json!({"pane_ids": []}), "at least one");
        refused(json!({}), "say where");

        // At most 256 panes.
        let mut big = inv.clone();
        big.panes = (0..256)
            .map(|n| Pane {
                pane_id: PaneId::from_number(1000 + n),
                ..inv.panes[0].clone()
            })
            .collect();
        assert_eq!(
            scope(&big, &args(json!({"window": window}))).unwrap().len(),
            256
        );
        big.panes.push(Pane {
            pane_id: PaneId::from_number(2000),
            ..inv.panes[0].clone()
        });
        let e = scope(&big, &args(json!({"window": window}))).unwrap_err();
        assert!(e.message.contains("at most 256"), "{}", e.message);
    }

    /// Text printed after the wait started is found; the same text on
    /// screen before is not. Progress comes every half second at most.
    #[test]
    fn a_wait_finds_new_text_not_old_and_reports_progress_twice_a_second_at_most() {
        let bed = Bed::new("wait-found");
        let p0 = PaneId::from_number(0);
        bed.type_line(p0, "old needle");
        bed.shows(p0, "old needle");
        let (wait, progress) = start(
            &bed,
            json!({"pane_id": "%0", "patterns": ["nothing", "new needle"], "timeout_ms": 20_000}),
        );
        // Its first report comes from its waiting loop, after its first check.
        let first = progress.recv_timeout(Duration::from_secs(20)).unwrap();
        assert!(first >= 500.0, "first progress at {first} ms");
        bed.type_line(p0, "new needle");
        let r = wait.join().unwrap().unwrap();
        assert!(r.found && !r.timed_out, "{r:?}");
        assert_eq!(r.pane_id, Some(p0));
        assert_eq!(r.text.as_deref(), Some("new needle"));
        assert_eq!(r.line, r.text);
        assert_eq!(r.pattern_index, Some(1));
        assert!(r.line_number.is_some_and(|n| (0..10).contains(&n)), "{r:?}");
        assert!(r.checks >= 2, "{r:?}");
        assert_eq!((r.panes_watched, r.panes_polled), (1, 0));
    }

    /// A quiet pane on the event stream costs one check: nothing wakes
    /// the wait until its end.
    #[test]
    fn a_quiet_wait_times_out_after_one_check() {
        let bed = Bed::new("wait-quiet");
        let p1 = bed.pane(&["split-window", "-d", "-t", "main"]);
        let (wait, progress) = start(
            &bed,
            json!({"pane_id": "%0", "pattern": "x", "timeout_ms": 1600}),
        );
        let r = wait.join().unwrap().unwrap();
        assert!(!r.found && r.timed_out, "{r:?}");
        assert_eq!(r.pane_id, Some(PaneId::from_number(0)));
        assert!(r.elapsed_ms >= 1600, "{r:?}");
        assert_eq!(r.checks, 1, "{r:?}");
        let reports: Vec<f64> = progress.try_iter().collect();
        assert!(!reports.is_empty() && reports[0] >= 500.0, "{reports:?}");
        for pair in reports.windows(2) {
            assert!(pair[1] - pair[0] >= 500.0, "{reports:?}");
        }
        // Several panes: none is named. A wait shorter than a reply's
        // backstop still ends as timed out.
        let (wait, _) = start(
            &bed,
            json!({"pane_ids": ["%0", p1], "pattern": "x", "timeout_ms": 300}),
        );
        let r = wait.join().unwrap().unwrap();
        assert!(!r.found && r.timed_out, "{r:?}");
        assert_eq!((r.pane_id, r.panes_watched), (None, 2));
    }

    /// A pane that scrolled its start row off the screen before the first
    /// capture is captured again from that row: what it printed meanwhile
    /// is not skipped.
    #[test]
    fn a_capture_that_missed_the_start_row_is_taken_again() {
        let bed = Bed::new("wait-reaim");
        let p0 = PaneId::from_number(0);
        let mut wait = bed.wait_on(&bed.ctx, &[p0], 20_000);
        bed.type_line(p0, "needle");
        for i in 0..20 {
            bed.type_line(p0, &format!("filler {i}"));
        }
        // Both copies of the last line: cat's copies come in order, so
        // the pane has printed everything and stands still while checked.
        bed.shows_times(p0, "filler 19", 2);
        let hit = wait.check(&[0]).unwrap().unwrap();
        assert_eq!(hit.text, "needle");
        assert_eq!(wait.checks, 1);
    }

    #[test]
    fn a_closed_pane_ends_a_wait_and_not_a_watch() {
        let bed = Bed::new("wait-closed");
        let p1 = bed.pane(&["split-window", "-d", "-t", "main"]);
        let mut wait = bed.wait_on(&bed.ctx, &[p1], 20_000);
        let mut watch = bed.wait_on(&bed.ctx, &[p1], 20_000);
        watch.closed_ok = true;
        bed.server
            .run_ok(["kill-pane", "-t", &p1.to_string()])
            .unwrap();
        let e = wait.check(&[0]).unwrap_err();
        assert!(e.message.contains("closed"), "{}", e.message);
        assert_eq!(watch.check(&[0]).unwrap(), None);
    }

    /// tmux standing still: before the wait's end that is an error naming
    /// tmux's round trip; after it, the wait ran out (its listing says so
    /// in the caller's terms, its captures end it as timed out).
    #[test]
    fn tmux_standing_still_is_an_error_before_the_end_and_the_end_after() {
        let quick = Ceilings {
            tmux_timeout: Duration::from_millis(300),
            ..Ceilings::default()
        };
        let bed = Bed::with("wait-still", quick);
        let p0 = PaneId::from_number(0);
        let patient = ToolContext::read_only(bed.ctx.config.server.clone(), Ceilings::default());
        let mut early = bed.wait_on(&bed.ctx, &[p0], 60_000);
        let mut late = bed.wait_on(&patient, &[p0], 300);
        let _stopped = bed.server.stop().unwrap();

        // The listing: tmux's own deadline came first, then the wait's.
        let e = plan(&bed.ctx, 60_000)
            .first_listing(&bed.ctx, &bed.tmux)
            .unwrap_err();
        assert_eq!(e.kind, ErrorKind::TimedOut);
        assert!(!e.message.contains("timeout_ms"), "{}", e.message);
        let e = plan(&patient, 300)
            .first_listing(&patient, &bed.tmux)
            .unwrap_err();
        assert_eq!(e.kind, ErrorKind::TimedOut);
        assert!(e.message.contains("timeout_ms (300 ms)"), "{}", e.message);

        // A capture.
        assert!(early.check(&[0]).is_err());
        std::thread::sleep(Duration::from_millis(300));
        assert!(late.plan.ran_out());
        assert_eq!(late.check(&[0]).unwrap(), None);
    }
}
