//! Search across time: `journal: true`, `since_time`, `until_time`.
//!
//! The journal (`panescan daemon --journal`) keeps every line a pane put
//! into its history, stamped with when it was first seen. A search across
//! time reads it beside tmux's own captures:
//!
//! - a line tmux still holds comes from tmux (its `line` number, as
//!   search_panes numbers lines) and gets its `time` from the journal;
//! - a journaled line tmux no longer holds (trimmed by history-limit,
//!   cleared, a pane or server gone) comes from the journal alone, in
//!   `journal_matches`, only with `journal: true`.
//!
//! Where tmux's history meets the journal: the pane's newest journaled
//! lines ([`TAIL_TEXTS`] of them, or all when fewer) are found in the
//! capture's history (the newest such place); journaled lines at or
//! after it are held, one for one, older ones are gone. Must hold: a
//! line is reported once; a held line newer than the journal (the
//! screen, the last second) is "seen now"; a held line older than
//! anything journaled has no time and is left out of a time span; the
//! journal's bytes and lines are charged to the search's budgets after
//! the captures'.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Instant;

use panescan_engine::{ClampFlags, SearchBudgets, SearchOptions, SearchOutcome};

use super::plan::Plan;
use super::scope::Scope;
use super::types::{JournalGap, JournalHit, SearchPanesArgs, SearchPanesResult};
use crate::journal::frame::Origin;
use crate::journal::search::{self as journal_search, PaneKey, Query};
use crate::journal::tail::{Tail, TAIL_TEXTS};
use crate::journal::{dir, servers, when};
use crate::tmux::{CaptureOptions, CaptureRequest, CapturedText, Pane, Tmux};
use crate::tools::context::{ToolContext, ToolError};

/// Journal gaps named in an answer at most.
const MAX_GAPS: usize = 20;

/// A search's span in time and where its journal is.
#[derive(Debug, Clone)]
pub(super) struct Times {
    /// The journal's directory (checked: this user's, private): the root
    /// from [`check`], the searched server's own after [`for_server`].
    pub(super) dir: PathBuf,
    /// Lines first seen at or after (ms; `i64::MIN`: no bound).
    pub(super) since_ms: i64,
    /// Lines first seen at or before (ms; `i64::MAX`: no bound).
    pub(super) until_ms: i64,
    /// When this search runs: the time of lines not journaled yet.
    pub(super) now_ms: i64,
    /// Report journaled lines tmux no longer holds (`journal: true`).
    pub(super) journal: bool,
}

impl Times {
    fn bounded(&self) -> bool {
        self.since_ms != i64::MIN || self.until_ms != i64::MAX
    }

    fn within(&self, time_ms: Option<i64>) -> bool {
        match time_ms {
            Some(t) => t >= self.since_ms && t <= self.until_ms,
            None => !self.bounded(),
        }
    }
}

/// The time arguments checked and the journal found; `None` for a search
/// of tmux alone. Nothing here touches tmux.
pub(super) fn check(ctx: &ToolContext, args: &SearchPanesArgs) -> Result<Option<Times>, ToolError> {
    if !args.journal && args.since_time.is_none() && args.until_time.is_none() {
        return Ok(None);
    }
    let now_ms = when::now_ms();
    let parse = |name: &str, text: &Option<String>| -> Result<Option<i64>, ToolError> {
        text.as_deref()
            .map(|t| {
                if t.len() > 64 {
                    return Err(ToolError::invalid(format!(
                        "{name} is too long: RFC 3339 (2026-12-06T12:00:00Z) or a span back from now (15m, 2h, 7d)"
                    )));
                }
                when::parse(t, now_ms).map_err(|e| ToolError::invalid(format!("{name}: {e}")))
            })
            .transpose()
    };
    let since_ms = parse("since_time", &args.since_time)?.unwrap_or(i64::MIN);
    let until_ms = parse("until_time", &args.until_time)?.unwrap_or(i64::MAX);
    if since_ms > until_ms {
        return Err(ToolError::invalid(format!(
            "since_time ({}) is after until_time ({})",
            when::format(since_ms),
            when::format(until_ms)
        )));
    }
    if args.since.is_some() {
        return Err(ToolError::invalid(
            "since (a cursor) cannot be combined with journal, since_time or until_time: use since_time",
        ));
    }
    if args.group_by.is_some() {
        return Err(ToolError::invalid(
            "group_by cannot be combined with journal, since_time or until_time",
        ));
    }
    Ok(Some(Times {
        dir: journal_dir(ctx)?,
        since_ms,
        until_ms,
        now_ms,
        journal: args.journal,
    }))
}

/// `times` reading the journal of `tmux`'s server (each journaled server
/// has its own directory), or the error saying it is not journaled.
pub(super) fn for_server(mut times: Times, tmux: &Tmux) -> Result<Times, ToolError> {
    times.dir = servers::find(&times.dir, tmux.socket_path()).map_err(ToolError::invalid)?;
    Ok(times)
}

/// The journal this session reads, checked; the error tells how to get
/// one.
pub(super) fn journal_dir(ctx: &ToolContext) -> Result<PathBuf, ToolError> {
    let enable = "times come from the journal: start it with `panescan daemon --journal` (it keeps every pane's lines past history-limit), or point serve at one with --journal-dir";
    let Some(dir) = ctx.config.journal_dir.clone() else {
        return Err(ToolError::invalid(format!(
            "no journal directory is known (no $XDG_STATE_HOME nor $HOME): {enable}"
        )));
    };
    if std::fs::symlink_metadata(&dir).is_err() {
        return Err(ToolError::invalid(format!(
            "no journal at {}: {enable}",
            dir.display()
        )));
    }
    dir::check(&dir).map_err(ToolError::invalid)?;
    Ok(dir)
}

/// What a search across time found besides tmux's own hits.
#[derive(Debug, Default)]
pub(super) struct Across {
    /// The time of each live hit kept: (pane id, line) to ms (`None`: older
    /// than the journal).
    times: HashMap<(String, i64), Option<i64>>,
    journal_hits: Vec<JournalHit>,
    gaps: Vec<JournalGap>,
    skipped: Vec<String>,
    bytes_scanned: u64,
    lines_scanned: u64,
    flags: ClampFlags,
}

/// What the live search was: its server, scope and plan.
pub(super) struct Live<'a> {
    pub(super) tmux: &'a Tmux,
    pub(super) plan: &'a Plan,
    pub(super) scope: &'a Scope<'a>,
    pub(super) args: &'a SearchPanesArgs,
    /// `#{pid} #{start_time}` of the server (empty: unknown).
    pub(super) server: &'a str,
}

impl Across {
    /// Reads the journal for `live`'s scope, drops tmux's hits outside the
    /// span from `outcome` and keeps the journal's own hits.
    pub(super) fn run(
        ctx: &ToolContext,
        times: &Times,
        live: &Live,
        outcome: &mut SearchOutcome,
        deadline: Instant,
    ) -> Result<Across, ToolError> {
        let socket = format!("@{}", live.tmux.socket_path().display());
        let instance = format!("{}{socket}", live.server.trim());
        let scoped: HashMap<PaneKey, &Pane> = live
            .scope
            .panes
            .iter()
            .map(|p| ((instance.clone(), p.pane_id.to_string()), *p))
            .collect();
        let captures = capture_history(ctx, live, deadline);
        let mut query = Query::new(
            journal_options(ctx, live.plan, outcome, deadline),
            times.since_ms,
            times.until_ms,
        );
        query.deadline = Some(deadline);
        query.scan = times.journal;
        let hits = hit_lines(live, outcome);
        query.tails = scoped
            .iter()
            .map(|(k, p)| {
                let id = p.pane_id.to_string();
                let lines = hits.get(&id).map_or(&[][..], Vec::as_slice);
                (k.clone(), times_needed(captures.get(&id), lines))
            })
            .collect();
        query.keep = Some(keeper(live, &instance, &socket, &scoped));
        // The engine stops at the deadline and on a cancel; so does the
        // reading.
        let found =
            journal_search::search(&times.dir, &live.plan.matcher, &query).map_err(|e| {
                ToolError::internal(format!(
                    "cannot read the journal in {}: {e}",
                    times.dir.display()
                ))
            })?;
        ctx.check_cancelled()?;
        let mut across = Across {
            skipped: found.skipped.clone(),
            bytes_scanned: found.bytes_scanned,
            lines_scanned: found.lines_scanned,
            flags: found.flags,
            ..Across::default()
        };
        across.flags.matches_truncated |= found.truncated;
        let anchors: HashMap<String, Anchored> = scoped
            .iter()
            .map(|((_, pane), _)| {
                let capture = captures.get(pane);
                let tail = found.tails.get(&(instance.clone(), pane.clone()));
                (pane.clone(), Anchored::new(capture, tail))
            })
            .collect();
        across.keep_live(times, live, &anchors, outcome);
        across.keep_journal(times, &instance, &anchors, found);
        Ok(across)
    }

    /// Tmux's hits get their times; those outside the span go.
    fn keep_live(
        &mut self,
        times: &Times,
        live: &Live,
        anchors: &HashMap<String, Anchored>,
        outcome: &mut SearchOutcome,
    ) {
        for pane in &mut outcome.panes {
            let Some(p) = live.scope.panes.get(pane.key) else {
                continue;
            };
            let id = p.pane_id.to_string();
            let anchored = anchors.get(&id);
            pane.lines.retain(|hit| {
                let time =
                    anchored.map_or(Some(times.now_ms), |a| a.time_of(hit.line, times.now_ms));
                let keep = times.within(time);
                if keep {
                    self.times.insert((id.clone(), hit.line), time);
                }
                keep
            });
        }
        outcome.panes.retain(|p| !p.lines.is_empty());
    }

    /// The journal's hits tmux no longer holds, and its gaps.
    fn keep_journal(
        &mut self,
        times: &Times,
        instance: &str,
        anchors: &HashMap<String, Anchored>,
        found: journal_search::Outcome,
    ) {
        for (origin, gap) in found.gaps.into_iter().take(MAX_GAPS) {
            self.gaps.push(JournalGap {
                pane_id: origin.pane,
                from: when::format(gap.from_ms),
                to: when::format(gap.to_ms),
                reason: gap.reason,
            });
        }
        if !times.journal {
            return;
        }
        for hit in found.hits {
            let live = hit.origin.server == instance;
            let anchored = live.then(|| anchors.get(&hit.origin.pane)).flatten();
            if anchored.is_some_and(|a| a.holds(hit.ordinal)) {
                continue; // tmux's copy is reported, with this time.
            }
            self.journal_hits.push(journal_hit(hit, anchored.is_none()));
        }
    }

    /// Puts the times on tmux's hits and the journal's own in `result`,
    /// with its bytes, lines and flags.
    pub(super) fn finish(self, result: &mut SearchPanesResult) {
        for pane in &mut result.matches {
            let id = pane.pane_id.to_string();
            for line in &mut pane.lines {
                line.time = self
                    .times
                    .get(&(id.clone(), line.line))
                    .copied()
                    .flatten()
                    .map(when::format);
            }
        }
        result.bytes_scanned += self.bytes_scanned;
        result.lines_scanned += self.lines_scanned;
        result.matching_byte_clamped |= self.flags.byte_clamped;
        result.matching_line_clamped |= self.flags.line_clamped;
        result.matching_time_clamped |= self.flags.time_clamped;
        result.matches_truncated |= self.flags.matches_truncated;
        result.redactions += self
            .journal_hits
            .iter()
            .map(|h| h.redactions as u64)
            .sum::<u64>();
        result.journal_matches = self.journal_hits;
        result.journal_gaps = self.gaps;
        result.journal_skipped = self.skipped;
    }
}

/// A search of a server that is not running: every pane of its journal is
/// gone, and the journal is all there is (`journal: true`).
pub(super) fn gone_only(
    ctx: &ToolContext,
    times: &Times,
    tmux: &Tmux,
    plan: &Plan,
    args: &SearchPanesArgs,
    deadline: Instant,
) -> Result<SearchPanesResult, ToolError> {
    let socket = format!("@{}", tmux.socket_path().display());
    let filter = GoneFilter::new(args, &[]);
    let mut query = Query::new(
        journal_options(ctx, plan, &SearchOutcome::default(), deadline),
        times.since_ms,
        times.until_ms,
    );
    query.deadline = Some(deadline);
    query.keep = Some(Arc::new(move |o: &Origin| {
        o.server.ends_with(&socket) && (o.pane == "*" || filter.picks(o))
    }));
    let found = journal_search::search(&times.dir, &plan.matcher, &query).map_err(|e| {
        ToolError::internal(format!(
            "cannot read the journal in {}: {e}",
            times.dir.display()
        ))
    })?;
    let mut across = Across {
        skipped: found.skipped.clone(),
        bytes_scanned: found.bytes_scanned,
        lines_scanned: found.lines_scanned,
        flags: found.flags,
        ..Across::default()
    };
    across.flags.matches_truncated |= found.truncated;
    across.keep_journal(times, "", &HashMap::new(), found);
    let mut result = super::types::empty(plan.offset, plan.limit);
    across.finish(&mut result);
    Ok(result)
}

/// A journal hit as the answer shows it.
fn journal_hit(hit: journal_search::Hit, gone: bool) -> JournalHit {
    let line = hit.line;
    JournalHit {
        pane_id: hit.origin.pane,
        session_name: hit.origin.session,
        window: hit.origin.window,
        pane_gone: gone,
        time: when::format(hit.time_ms),
        text: line.text,
        pattern_index: None,
        before: line.before,
        after: line.after,
        redactions: line.redactions,
    }
}

/// The engine's options for the journal: the budgets the captures left.
fn journal_options(
    ctx: &ToolContext,
    plan: &Plan,
    outcome: &SearchOutcome,
    deadline: Instant,
) -> SearchOptions {
    let limits = &plan.engine_limits;
    let found: u64 = outcome.panes.iter().map(|p| p.lines.len() as u64).sum();
    SearchOptions {
        limits: SearchBudgets {
            max_scan_bytes: limits.max_scan_bytes.saturating_sub(outcome.bytes_scanned),
            max_scan_lines: limits.max_scan_lines.saturating_sub(outcome.lines_scanned),
            deadline: Some(deadline),
            max_matches: limits.max_matches.saturating_sub(found),
            max_matches_per_pane: limits.max_matches_per_pane,
        },
        context_lines: plan.context_lines,
        strip_escapes: true,
        max_text_bytes: 1024,
        cancel: Some(ctx.cancel.clone()),
        redact: ctx.config.redact,
    }
}

/// Which journaled panes the search reads: the scope's, and panes that
/// are gone (another instance of this server, or no longer listed) when
/// the filters would have picked them.
fn keeper(
    live: &Live,
    instance: &str,
    socket: &str,
    scoped: &HashMap<PaneKey, &Pane>,
) -> journal_search::Keep {
    let listed: HashSet<String> = live
        .scope
        .inventory
        .panes
        .iter()
        .map(|p| p.pane_id.to_string())
        .collect();
    let scoped: HashSet<PaneKey> = scoped.keys().cloned().collect();
    let filter = GoneFilter::new(live.args, &live.scope.inventory.panes);
    let (instance, socket) = (instance.to_owned(), socket.to_owned());
    Arc::new(move |o: &Origin| {
        if !o.server.ends_with(&socket) {
            return false;
        }
        if o.server == instance && listed.contains(&o.pane) {
            return scoped.contains(&(o.server.clone(), o.pane.clone()));
        }
        o.pane == "*" || filter.picks(o)
    })
}

/// The session, window and pane filters as a gone pane's journal names
/// them (session by name, window as `index:name`).
struct GoneFilter {
    panes: Option<Vec<String>>,
    session: Option<String>,
    window: Option<(String, String)>,
}

impl GoneFilter {
    /// The filters of `args`, ids resolved through the listing's `panes`.
    fn new(args: &SearchPanesArgs, panes: &[Pane]) -> GoneFilter {
        let session = args.session.as_ref().map(|s| {
            panes
                .iter()
                .find(|p| p.session_id.to_string() == *s)
                .map_or_else(|| s.clone(), |p| p.session_name.clone())
        });
        let window = args.window.as_ref().map(|w| {
            panes.iter().find(|p| p.window_id == *w).map_or_else(
                || (String::new(), format!("{w}")),
                |p| {
                    (
                        p.session_name.clone(),
                        format!("{}:{}", p.window_index, p.window_name),
                    )
                },
            )
        });
        GoneFilter {
            panes: args
                .pane_ids
                .as_ref()
                .map(|ids| ids.iter().map(ToString::to_string).collect()),
            session,
            window,
        }
    }

    fn picks(&self, o: &Origin) -> bool {
        self.panes.as_ref().is_none_or(|p| p.contains(&o.pane))
            && self.session.as_ref().is_none_or(|s| *s == o.session)
            && self
                .window
                .as_ref()
                .is_none_or(|(s, w)| *w == o.window && (s.is_empty() || *s == o.session))
    }
}

/// Captures the history of every pane of the scope (through the pane
/// cache: what the search just captured), wrapped lines joined as the
/// journal keeps them. A pane whose capture fails has none.
fn capture_history(
    ctx: &ToolContext,
    live: &Live,
    deadline: Instant,
) -> HashMap<String, CapturedText> {
    let requests: Vec<CaptureRequest> = live
        .scope
        .panes
        .iter()
        .map(|p| CaptureRequest {
            pane: p.pane_id,
            range: live.plan.capture_range(),
        })
        .collect();
    let options = CaptureOptions {
        join_wrapped: true,
        escapes: false,
    };
    let stop = Arc::new(AtomicBool::new(false));
    let replies = match &ctx.pane_cache {
        Some(cache) => cache.capture(
            live.tmux,
            live.scope.inventory,
            requests,
            options,
            deadline,
            stop,
        ),
        None => live.tmux.capture(requests, options, deadline, stop),
    };
    let mut out = HashMap::new();
    for reply in replies {
        if let (Some(p), Ok(text)) = (live.scope.panes.get(reply.index), reply.result) {
            out.insert(p.pane_id.to_string(), text);
        }
    }
    out
}

/// The line numbers of tmux's hits, by pane id.
fn hit_lines(live: &Live, outcome: &SearchOutcome) -> HashMap<String, Vec<i64>> {
    let mut out: HashMap<String, Vec<i64>> = HashMap::new();
    for pane in &outcome.panes {
        if let Some(p) = live.scope.panes.get(pane.key) {
            let lines = out.entry(p.pane_id.to_string()).or_default();
            lines.extend(pane.lines.iter().map(|h| h.line));
        }
    }
    out
}

/// How many of a pane's last journaled lines' times the search needs:
/// those from its oldest hit in tmux's history on, none without one.
/// [`Anchored::time_of`] looks back from the anchor (at most the
/// history's last line) to the hit, so no further than this; the journal
/// then decompresses only the frames holding the tail's last lines
/// (`journal/tail.rs`), and every answer is as with all the history's
/// times.
fn times_needed(capture: Option<&CapturedText>, hits: &[i64]) -> usize {
    let numbers: Vec<i64> = history_of(capture).iter().map(|(n, _)| *n).collect();
    hits.iter()
        .filter_map(|line| numbers.binary_search(line).ok())
        .min()
        .map_or(0, |at| numbers.len() - at)
}

/// A capture's history lines (its screen left out, as the journal keeps
/// only history), each with its tmux line number.
fn history_of(capture: Option<&CapturedText>) -> Vec<(i64, &[u8])> {
    let Some(text) = capture else {
        return Vec::new();
    };
    let lines: Vec<&[u8]> = text
        .bytes
        .split_inclusive(|&b| b == b'\n')
        .map(|l| l.strip_suffix(b"\n").unwrap_or(l))
        .collect();
    let number = |i: usize| match &text.line_numbers {
        Some(n) => n.get(i).copied().unwrap_or(i64::MAX),
        None => text.first_line.saturating_add(i as i64),
    };
    // A line is history's when the next starts at the screen's top or
    // above it (a joined line reaching onto the screen is the screen's).
    (0..lines.len().saturating_sub(1))
        .take_while(|&i| number(i) < 0 && number(i + 1) <= 0)
        .filter_map(|i| lines.get(i).map(|l| (number(i), *l)))
        .collect()
}

/// One live pane: its history's line numbers, where its journal's newest
/// line sits in it, and the journal's times.
#[derive(Debug, Default)]
struct Anchored {
    /// The tmux line number of each history line, oldest first.
    numbers: Vec<i64>,
    /// The history index of the pane's newest journaled line.
    anchor: Option<usize>,
    /// The pane's journaled lines read (from the span's start).
    read: u64,
    /// The times of the last of them, oldest first.
    times: Vec<i64>,
}

impl Anchored {
    fn new(capture: Option<&CapturedText>, tail: Option<&Tail>) -> Anchored {
        let history = history_of(capture);
        let anchor = tail.and_then(|t| {
            anchor(
                &history,
                &t.texts.iter().map(Vec::as_slice).collect::<Vec<_>>(),
            )
        });
        Anchored {
            numbers: history.iter().map(|(n, _)| *n).collect(),
            anchor,
            read: tail.map_or(0, |t| t.read),
            times: tail
                .map(|t| t.times.iter().copied().collect())
                .unwrap_or_default(),
        }
    }

    /// Whether tmux still holds the journaled line `ordinal` (counted from
    /// the span's start among the pane's lines).
    fn holds(&self, ordinal: u64) -> bool {
        let Some(anchor) = self.anchor else {
            return false;
        };
        let back = self.read.saturating_sub(ordinal + 1);
        back <= anchor as u64
    }

    /// The time of tmux's line `line`: the journal's when it is journaled,
    /// `now` when it is newer than the journal (or on the screen), `None`
    /// when older than every journaled line read.
    fn time_of(&self, line: i64, now: i64) -> Option<i64> {
        let Ok(at) = self.numbers.binary_search(&line) else {
            return Some(now); // The screen: never journaled while shown.
        };
        let Some(anchor) = self.anchor else {
            // Nothing journaled in the span meets tmux's history: the
            // line is newer than the journal only if the span saw none of
            // the pane (then it is older, or the journal never had it).
            return None;
        };
        if at > anchor {
            return Some(now);
        }
        let back = anchor - at;
        let from_end = self.times.len().checked_sub(back + 1)?;
        self.times.get(from_end).copied()
    }
}

/// The index in `history` of the line equal to `tail`'s last, with the
/// tail's lines before it equal to the history's before it (as far as
/// both go): the newest such place. A journaled line may have been
/// redacted: a history line equals it as it is or redacted.
fn anchor(history: &[(i64, &[u8])], tail: &[&[u8]]) -> Option<usize> {
    let last = tail.len().checked_sub(1)?;
    let same = |h: &[u8], j: &[u8]| h == j || panescan_engine::redact_bytes(h).0.as_ref() == j;
    (0..history.len()).rev().find(|&at| {
        let n = (at + 1).min(tail.len()).min(TAIL_TEXTS);
        (0..n).all(|k| match (history.get(at - k), tail.get(last - k)) {
            (Some((_, h)), Some(j)) => same(h, j),
            _ => false,
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hist(lines: &[&'static str]) -> Vec<(i64, &'static [u8])> {
        let n = lines.len() as i64;
        lines
            .iter()
            .enumerate()
            .map(|(i, l)| (i as i64 - n, l.as_bytes()))
            .collect()
    }

    #[test]
    fn the_anchor_is_the_newest_place_the_tail_ends() {
        let h = hist(&["a", "b", "c", "a", "b", "d"]);
        assert_eq!(anchor(&h, &[b"a", b"b"]), Some(4));
        assert_eq!(anchor(&h, &[b"c", b"a", b"b"]), Some(4));
        // "x" was trimmed before the history's first "a b".
        assert_eq!(anchor(&h, &[b"x", b"a", b"b"]), Some(1));
        assert_eq!(anchor(&h, &[b"x", b"y", b"d"]), None);
        // The tail reaches past history's start (trimmed): what is left
        // must match.
        assert_eq!(anchor(&h, &[b"zz", b"a", b"b", b"c"]), Some(2));
        assert_eq!(anchor(&h, &[]), None);
    }

    #[test]
    fn times_are_needed_from_the_oldest_hit_in_history_on() {
        let capture = CapturedText {
            bytes: b"h0\nh1\nh2\nh3\nscreen\n".to_vec().into(),
            first_line: -4,
            line_numbers: None,
            history_size: 4,
            pane_height: 1,
            pane_width: 80,
            joined: true,
        };
        assert_eq!(times_needed(Some(&capture), &[]), 0);
        // Screen lines need no time; a hit on h1 needs h1..h3's.
        assert_eq!(times_needed(Some(&capture), &[0]), 0);
        assert_eq!(times_needed(Some(&capture), &[-1, -3, 0]), 3);
        assert_eq!(times_needed(Some(&capture), &[-4]), 4);
        assert_eq!(times_needed(None, &[-4]), 0);
    }

    #[test]
    fn held_lines_and_times_follow_the_anchor() {
        // History: journaled "j1" (t=10), "j2" (t=20); then "new" not yet.
        let a = Anchored {
            numbers: vec![-3, -2, -1],
            anchor: Some(1),
            read: 4, // two older lines, trimmed, read before them
            times: vec![5, 6, 10, 20],
        };
        assert!(!a.holds(0) && !a.holds(1));
        assert!(a.holds(2) && a.holds(3));
        assert_eq!(a.time_of(-3, 99), Some(10));
        assert_eq!(a.time_of(-2, 99), Some(20));
        assert_eq!(a.time_of(-1, 99), Some(99));
        assert_eq!(a.time_of(0, 99), Some(99));
        let none = Anchored {
            numbers: vec![-1],
            ..Anchored::default()
        };
        assert_eq!(none.time_of(-1, 99), None);
        assert!(!none.holds(0));
    }
}
