//! watch_panes: wait for lines matching some patterns in the new output of
//! every pane in a scope (the whole server by default), panes created
//! during the call included, until `max_hits` lines matched or the time is
//! up.
//!
//! It is wait_for_text's machinery ([`super::Wait`]) with three changes:
//! the subscription asks for every pane's output and for structure events,
//! so a pane created later is seen (listed again on a structure event, on
//! output from a pane not yet known, and once a second for sessions the
//! stream does not cover) and watched from its first line; it collects hits
//! rather than stopping at the first, each sent as a progress notification
//! as it is found; and a pane that closes stops being watched. Quiet panes
//! cost nothing: a pane is captured only after it printed.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::watch::{Hit, PaneWatch};
use super::{listing, wake, Patterns, Plan, Wait};
use crate::tmux::events::{Interest, OutputMode, Watch};
use crate::tmux::{Inventory, PaneId, Tmux, WindowId};
use crate::tools::context::{ServerArgs, ToolContext, ToolError};
use crate::tools::registry::{Annotations, Tool};
use crate::tools::search::{capped, resolve_scope};

/// Default time a watch runs.
const DEFAULT_WATCH_MS: u64 = 30_000;
/// Hits one call may collect.
const MAX_HITS: u64 = 1_000;
/// Panes are listed again at least this often (new panes in sessions the
/// event stream does not cover send no structure event).
const RELIST_EVERY: Duration = Duration::from_secs(1);

#[derive(Debug, Deserialize, JsonSchema)]
// A wire type: its doc comments would be schema descriptions every client
// reads in tools/list; the tool's description and the field names say it.
#[allow(missing_docs)]
pub struct WatchPanesArgs {
    /// Text to wait for (literal unless regex), within one line.
    #[serde(default)]
    pub pattern: Option<String>,
    /// 1-64 patterns, any of which matches.
    #[serde(default)]
    pub patterns: Option<Vec<String>>,
    #[serde(default)]
    pub regex: bool,
    #[serde(default)]
    pub match_case: bool,
    /// Session id ($N) or name.
    #[serde(default)]
    pub session: Option<String>,
    /// Window id (@N).
    #[serde(default)]
    pub window: Option<WindowId>,
    /// Only these panes (no new ones).
    #[serde(default)]
    pub pane_ids: Option<Vec<PaneId>>,
    /// Default 30000.
    #[serde(default)]
    pub timeout_ms: Option<u64>,
    /// Return after this many matching lines (default 1).
    #[serde(default)]
    pub max_hits: Option<u64>,
    #[serde(flatten)]
    pub server: ServerArgs,
}

/// One matching line.
#[derive(Debug, Clone, Serialize, JsonSchema)]
// A wire type: its doc comments would be schema descriptions every client
// reads in tools/list; the tool's description and the field names say it.
#[allow(missing_docs)]
pub struct WatchHit {
    pub pane_id: PaneId,
    // tmux line number (0 = top of screen).
    pub line: i64,
    pub text: String,
    pub pattern_index: usize,
}

#[derive(Debug, Serialize, JsonSchema)]
// A wire type: its doc comments would be schema descriptions every client
// reads in tools/list; the tool's description and the field names say it.
#[allow(missing_docs)]
pub struct WatchPanesResult {
    pub hits: Vec<WatchHit>,
    pub timed_out: bool,
    // Panes watched, those created during the call included.
    pub panes_watched: usize,
    pub elapsed_ms: u64,
    /// Secrets in hit texts replaced with `[REDACTED:KIND]`.
    pub redactions: u64,
}

#[derive(Debug)]
/// `watch_panes`: blocks until matching lines appear in new output of any pane in scope.
pub struct WatchPanes;

impl Tool for WatchPanes {
    const NAME: &'static str = "watch_panes";
    const TITLE: &'static str = "Watch every pane";
    const DESCRIPTION: &'static str = "Block until max_hits (default 1) lines matching any of 1-64 patterns appear in new output of any pane (or a session, window, pane_ids), panes created meanwhile included, or until timeout_ms (default 30 s). Each hit is also a progress notification. Quiet panes cost nothing.";
    const ANNOTATIONS: Annotations = Annotations::READ_VOLATILE;
    const BATCHABLE: bool = false;
    type Args = WatchPanesArgs;
    type Output = WatchPanesResult;

    fn run(ctx: &ToolContext, args: Self::Args) -> Result<Self::Output, ToolError> {
        let plan = Plan::build(
            ctx,
            Patterns {
                pattern: &args.pattern,
                patterns: &args.patterns,
                regex: args.regex,
                match_case: args.match_case,
            },
            args.timeout_ms,
            DEFAULT_WATCH_MS,
        )?;
        let max_hits = capped(args.max_hits, 1, MAX_HITS, "max_hits")? as usize;
        if matches!(&args.pane_ids, Some(ids) if ids.is_empty()) {
            return Err(ToolError::invalid("pane_ids must name at least one pane"));
        }
        let tmux = ctx.tmux(&args.server)?;
        let inv = plan.first_listing(ctx, &tmux)?;
        let mut scope = Scope::new(ctx, &args, &inv)?;
        let ids: Vec<PaneId> = scope.watches.iter().map(|w| w.pane).collect();
        let interest = Interest {
            watch: Watch::Every,
            mode: OutputMode::Trigger,
            structure: true,
        };
        let sub = ctx
            .config
            .wait_events
            .then(|| tmux.subscribe(interest, ctx.tmux_deadline_by(plan.deadline)));
        let mut waker = wake::Waker::new(sub, ids, plan.deadline);
        waker.follow_new_panes();
        waker.ignore(scope.known.iter().copied());
        let mut wait = Wait {
            ctx,
            tmux: &tmux,
            plan,
            watches: std::mem::take(&mut scope.watches),
            waker,
            checks: 0,
            closed_ok: true,
        };
        let mut redactions = 0;
        let hits = watch(&mut wait, &mut scope, &args, max_hits, &mut redactions)?;
        Ok(WatchPanesResult {
            timed_out: hits.len() < max_hits,
            redactions,
            hits: hits.into_iter().map(wire).collect(),
            panes_watched: wait.watches.len(),
            elapsed_ms: wait.plan.started.elapsed().as_millis() as u64,
        })
    }

    fn text(out: &Self::Output) -> String {
        let mut text = String::new();
        for h in &out.hits {
            text.push_str(&format!("{} {}: {}\n", h.pane_id, h.line, h.text));
        }
        text.push_str(&format!(
            "-- {} hits in {} panes watched, {} ms{}",
            out.hits.len(),
            out.panes_watched,
            out.elapsed_ms,
            if out.timed_out { ", timed out" } else { "" }
        ));
        text
    }
}

fn wire(h: Hit) -> WatchHit {
    WatchHit {
        pane_id: h.pane,
        line: h.line_number,
        text: h.text,
        pattern_index: h.pattern_index,
    }
}

/// The panes in scope, and every pane listed so far.
struct Scope {
    /// Watches not yet handed to the wait.
    watches: Vec<PaneWatch>,
    /// Every pane listed so far, in scope or not.
    known: HashSet<PaneId>,
    /// New panes may join (no explicit pane list).
    follows: bool,
    max_panes: usize,
}

impl Scope {
    fn new(ctx: &ToolContext, args: &WatchPanesArgs, inv: &Inventory) -> Result<Scope, ToolError> {
        let panes = resolve_scope(
            inv,
            args.session.as_deref(),
            args.window,
            args.pane_ids.as_deref(),
        )?;
        let max_panes = ctx.ceilings().search.max_panes;
        if panes.len() > max_panes {
            return Err(ToolError::over_ceiling(format!(
                "watch_panes may watch at most {max_panes} panes (the operator's ceiling), the scope holds {}: narrow it",
                panes.len()
            )));
        }
        Ok(Scope {
            watches: panes.into_iter().map(PaneWatch::new).collect(),
            known: inv.panes.iter().map(|p| p.pane_id).collect(),
            follows: args.pane_ids.is_none(),
            max_panes,
        })
    }

    /// Lists the panes again: panes not seen before join the wait when in
    /// scope (their indices returned), else their output is ignored. A
    /// listing that fails, or a scope that no longer resolves (its session
    /// went away), adds nothing.
    fn add_new(&mut self, wait: &mut Wait, tmux: &Tmux, args: &WatchPanesArgs) -> Vec<usize> {
        let Ok(inv) = listing(wait.ctx, tmux, wait.plan.deadline) else {
            return Vec::new();
        };
        let in_scope: HashSet<PaneId> =
            resolve_scope(&inv, args.session.as_deref(), args.window, None)
                .map(|panes| panes.iter().map(|p| p.pane_id).collect())
                .unwrap_or_default();
        let mut added = Vec::new();
        for pane in &inv.panes {
            if !self.known.insert(pane.pane_id) {
                continue;
            }
            if in_scope.contains(&pane.pane_id) && wait.watches.len() < self.max_panes {
                wait.watches.push(PaneWatch::fresh(pane));
                wait.waker.add(wait.ctx, pane.pane_id);
                added.push(wait.watches.len() - 1);
            } else {
                wait.waker.ignore([pane.pane_id]);
            }
        }
        added
    }
}

/// Checks every pane once, then each pane that printed, until `max_hits`
/// lines matched or the deadline.
fn watch(
    wait: &mut Wait,
    scope: &mut Scope,
    args: &WatchPanesArgs,
    max_hits: usize,
    redactions: &mut u64,
) -> Result<Vec<Hit>, ToolError> {
    let tmux = wait.tmux;
    let mut due: Vec<usize> = (0..wait.watches.len()).collect();
    let mut hits: Vec<Hit> = Vec::new();
    let mut listed = Instant::now();
    let mut first = true;
    loop {
        for mut hit in wait.check_all(&due, max_hits - hits.len())? {
            // Redacted before it is reported, the progress message included.
            *redactions += wait.ctx.redact(&mut hit.text);
            let message = format!("{} {}: {}", hit.pane, hit.line_number, hit.text);
            hits.push(hit);
            wait.ctx
                .progress
                .report(hits.len() as f64, Some(max_hits as f64), Some(&message));
        }
        if hits.len() >= max_hits || Instant::now() >= wait.plan.deadline {
            return Ok(hits);
        }
        if std::mem::take(&mut first) {
            // Says the watch is set: output from now on counts.
            let message = format!(
                "watching {} panes ({} polled)",
                wait.watches.len(),
                wait.waker.polled()
            );
            let total = Some(max_hits as f64);
            wait.ctx.progress.report(0.0, total, Some(&message));
        }
        let until = if scope.follows {
            wait.plan.deadline.min(listed + RELIST_EVERY)
        } else {
            wait.plan.deadline
        };
        due = wait.waker.wait(wait.ctx, tmux, until)?;
        let structure = wait.waker.take_structure();
        if scope.follows && (structure || listed.elapsed() >= RELIST_EVERY) {
            listed = Instant::now();
            due.extend(scope.add_new(wait, tmux, args));
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::super::tests::Bed;
    use super::*;
    use crate::config::{Ceilings, SearchCeilings};
    use crate::tools::context::ProgressSink;
    use serde_json::json;
    use std::sync::mpsc;

    /// Runs watch_panes on another thread; its progress messages come
    /// through the receiver as they are sent.
    fn start(
        ctx: &ToolContext,
        v: serde_json::Value,
    ) -> (
        std::thread::JoinHandle<Result<WatchPanesResult, ToolError>>,
        mpsc::Receiver<String>,
    ) {
        let (tx, rx) = mpsc::channel();
        let tx = std::sync::Mutex::new(tx);
        let mut ctx = ctx.clone();
        ctx.progress = ProgressSink::new(move |_, _, message| {
            let _ = tx
                .lock()
                .map(|tx| tx.send(message.unwrap_or("").to_owned()));
        });
        let args: WatchPanesArgs = serde_json::from_value(v).unwrap();
        (std::thread::spawn(move || WatchPanes::run(&ctx, args)), rx)
    }

    /// Waits for the watch's "watching" message: output from now on counts.
    fn set(progress: &mpsc::Receiver<String>) {
        loop {
            let m = progress.recv_timeout(Duration::from_secs(20)).unwrap();
            if m.starts_with("watching") {
                return;
            }
        }
    }

    #[test]
    fn the_text_lists_each_hit_and_says_a_timeout() {
        let hit = WatchHit {
            pane_id: PaneId::from_number(2),
            line: 5,
            text: "error: x".into(),
            pattern_index: 0,
        };
        let out = WatchPanesResult {
            hits: vec![hit],
            timed_out: true,
            panes_watched: 3,
            elapsed_ms: 40,
            redactions: 0,
        };
        assert_eq!(
            WatchPanes::text(&out),
            "%2 5: error: x\n-- 1 hits in 3 panes watched, 40 ms, timed out"
        );
    }

    /// A pane created in the watched session is watched from its first
    /// line; one created in another session is not; the watch returns at
    /// max_hits, not more, and redacts what it returns.
    #[test]
    fn a_watch_takes_in_new_panes_of_its_scope_and_stops_at_max_hits() {
        let bed = Bed::new("watch-new");
        let (watch, progress) = start(
            &bed.ctx,
            json!({"session": "main", "pattern": "hit", "max_hits": 3, "timeout_ms": 20_000}),
        );
        set(&progress);
        let outside = bed.pane(&["new-session", "-d", "-s", "other"]);
        bed.type_line(outside, "hit outside");
        bed.shows(outside, "hit outside");
        let inside = bed.pane(&["new-window", "-d", "-t", "main"]);
        bed.type_line(inside, "hit inside");
        bed.shows(inside, "hit inside");
        // Typed into cat: the echo and cat's copy, two lines each.
        let secret = "ghp_16C7e42F292c6912E7710c838347Ae178B4a";
        bed.type_line(PaneId::from_number(0), &format!("hit {secret}"));
        let r = watch.join().unwrap().unwrap();
        assert_eq!(r.hits.len(), 3, "{r:?}");
        assert!(!r.timed_out && r.elapsed_ms < 20_000, "{r:?}");
        assert_eq!(r.panes_watched, 2, "{r:?}");
        assert!(r.hits.iter().any(|h| h.pane_id == inside), "{r:?}");
        assert!(r.hits.iter().all(|h| h.pane_id != outside), "{r:?}");
        let zero: Vec<&WatchHit> = r.hits.iter().filter(|h| h.pane_id.number() == 0).collect();
        assert!(zero.iter().all(|h| !h.text.contains(secret)), "{r:?}");
        assert_eq!(r.redactions, zero.len() as u64, "{r:?}");
    }

    /// No pane joins a watch at its pane ceiling, nor one of named panes.
    #[test]
    fn a_watch_at_its_pane_ceiling_or_of_named_panes_takes_in_no_new_pane() {
        let one = Ceilings {
            search: SearchCeilings {
                max_panes: 1,
                ..SearchCeilings::default()
            },
            ..Ceilings::default()
        };
        let bed = Bed::with("watch-bounded", one);
        let many = ToolContext::read_only(bed.ctx.config.server.clone(), Ceilings::default());
        for (ctx, args) in [
            (&bed.ctx, json!({"pattern": "hit", "timeout_ms": 2500})),
            (
                &many,
                json!({"pane_ids": ["%0"], "pattern": "hit", "timeout_ms": 2500}),
            ),
        ] {
            let (watch, progress) = start(ctx, args.clone());
            set(&progress);
            let new = bed.pane(&["new-window", "-d", "-t", "main"]);
            bed.type_line(new, "hit");
            bed.shows(new, "hit");
            let r = watch.join().unwrap().unwrap();
            assert!(r.hits.is_empty() && r.timed_out, "{args}: {r:?}");
            assert_eq!(r.panes_watched, 1, "{args}: {r:?}");
            bed.server
                .run_ok(["kill-pane", "-t", &new.to_string()])
                .unwrap();
        }
    }

    /// A pane no event announces (a window of a session the stream does
    /// not show, split) joins at the next listing, a second apart, also
    /// after the watch was idle for longer than that.
    #[test]
    fn a_pane_no_event_announces_joins_at_the_next_listing() {
        let bed = Bed::new("watch-relist");
        let other = bed.pane(&["new-session", "-d", "-s", "other"]);
        let (watch, progress) = start(&bed.ctx, json!({"pattern": "hit", "timeout_ms": 20_000}));
        set(&progress);
        std::thread::sleep(RELIST_EVERY * 2);
        let new = bed.pane(&["split-window", "-d", "-t", &other.to_string()]);
        bed.type_line(new, "hit");
        let r = watch.join().unwrap().unwrap();
        assert_eq!(r.hits.first().map(|h| h.pane_id), Some(new), "{r:?}");
    }
}
