//! Shape: matching panes are paged (`offset`/`limit`), lines are attributed
//! to their pane and placements, and what the page's panes run
//! (`pane_current_command`, `pane_current_path`: the costliest fields to
//! list) is asked for in one round trip. A result too large for its response
//! is cut from the end (`cut_to_size`: `Tool::shrink`, which [`super::encode`]
//! replays by counting), with flags that say so.

use std::time::{Duration, Instant};

use panescan_engine::{LineMatch, SearchOutcome};
use serde::Serialize;

use super::group;
use super::pipeline::Scanned;
use super::plan::Plan;
use super::render::{pane_place, push_hit, Style};
use super::scope::Scope;
use super::types::{HitGroup, HitLine, PaneFailure, PaneHits, SearchPanesResult};
use crate::tmux::{Pane, PaneId, Tmux};

/// How long past the deadline a search may take to learn what its
/// returned panes run (one round trip).
const DETAILS_GRACE: Duration = Duration::from_millis(100);

/// Failed panes a result names (the count covers them all).
const MAX_FAILURES_LISTED: usize = 20;

/// The result of a search, all but its `elapsed_ms`.
pub(super) fn shape(
    tmux: &Tmux,
    plan: &Plan,
    scope: &Scope,
    scanned: Scanned,
    deadline: Instant,
) -> SearchPanesResult {
    let Scanned { outcome, fetch } = scanned;
    let several = plan.patterns.len() > 1;
    let all_hits: Vec<PaneHits> = outcome
        .panes
        .iter()
        .filter_map(|pm| {
            let pane = scope.panes.get(pm.key)?;
            Some(pane_hits(pane, &pm.lines, pm.lines_truncated, several))
        })
        .collect();
    // Grouped: over every line folded; else over the page returned.
    let mut redactions = redactions_in(&all_hits);
    let (page, groups) = match plan.group_by {
        Some(by) => {
            let total = all_hits.len();
            let (groups, more) = group_page(group::groups(&all_hits, by), plan);
            let page = Page {
                matches: Vec::new(),
                total,
                truncated: more,
                beyond: Vec::new(),
            };
            (page, Some(groups))
        }
        None => {
            let mut page = Page::of(all_hits, plan.offset, plan.limit);
            redactions = redactions_in(&page.matches);
            // A server on another host listed them (`Fields::SearchFar`).
            if tmux.host().is_none() {
                add_details(tmux, &mut page.matches, deadline);
            }
            (page, None)
        }
    };
    SearchPanesResult {
        matches: page.matches,
        total_groups: groups.as_ref().map(|g| g.1),
        groups: groups.map(|g| g.0),
        redactions,
        total_panes_matched: page.total,
        offset: plan.offset,
        limit: plan.limit,
        truncated: page.truncated,
        truncated_panes: page.beyond,
        panes_searched: outcome.panes_searched,
        panes_failed: outcome.failed.len(),
        failures: failures(&outcome, &scope.panes),
        bytes_scanned: outcome.bytes_scanned,
        lines_scanned: outcome.lines_scanned,
        elapsed_ms: 0,
        effective_scrollback_lines: plan.scrollback,
        captures_byte_clamped: fetch.byte_clamped,
        matching_byte_clamped: outcome.flags.byte_clamped,
        matching_line_clamped: outcome.flags.line_clamped,
        matching_time_clamped: outcome.flags.time_clamped || fetch.timed_out,
        pane_limit_clamped: scope.pane_limit_clamped,
        scrollback_clamped: scope.scrollback_clamped,
        matches_truncated: outcome.flags.matches_truncated,
        cursor: String::new(),
        cursor_if_cut: String::new(),
        since_reset: false,
        since_panes: Vec::new(),
        hosts_failed: Vec::new(),
        journal_matches: Vec::new(),
        journal_gaps: Vec::new(),
        journal_skipped: Vec::new(),
    }
}

/// The page `plan` asks for of `groups`, with the number of groups in all;
/// and whether more groups lie beyond it.
fn group_page(mut groups: Vec<HitGroup>, plan: &Plan) -> ((Vec<HitGroup>, usize), bool) {
    let total = groups.len();
    let end = plan.offset.saturating_add(plan.limit).min(total);
    groups.truncate(end);
    let page = groups.split_off(plan.offset.min(end));
    ((page, total), total > end)
}

/// One page of the matching panes.
struct Page {
    matches: Vec<PaneHits>,
    /// Matching panes in all.
    total: usize,
    /// More matching panes exist beyond this page.
    truncated: bool,
    /// The ids of the matching panes beyond this page.
    beyond: Vec<PaneId>,
}

impl Page {
    fn of(mut all_hits: Vec<PaneHits>, offset: usize, limit: usize) -> Page {
        let total = all_hits.len();
        let end = offset.saturating_add(limit).min(total);
        let start = offset.min(total);
        let beyond: Vec<PaneId> = all_hits[end..].iter().map(|h| h.pane_id).collect();
        all_hits.truncate(end);
        let matches: Vec<PaneHits> = all_hits.drain(start..).collect();
        Page {
            matches,
            total,
            truncated: total > end,
            beyond,
        }
    }
}

/// What the returned panes run was left out of the listing (the costliest
/// fields for tmux): learn it now, for this page only, from `/proc` where
/// the listing gave the pane's process, else from tmux. A search that ran
/// out of time still gets a moment for it.
fn add_details(tmux: &Tmux, matches: &mut [PaneHits], deadline: Instant) {
    let page: Vec<(PaneId, Option<u32>)> =
        matches.iter().map(|m| (m.pane_id, m.pane_pid)).collect();
    let details_deadline = deadline.max(Instant::now() + DETAILS_GRACE);
    let details = tmux.commands_and_paths(&page, details_deadline);
    for (hit, detail) in matches.iter_mut().zip(details) {
        if let Some((command, path)) = detail {
            hit.pane_current_command = command;
            hit.pane_current_path = path;
        }
    }
}

/// The first failed panes and why.
fn failures(outcome: &SearchOutcome, panes: &[&Pane]) -> Vec<PaneFailure> {
    outcome
        .failed
        .iter()
        .take(MAX_FAILURES_LISTED)
        .filter_map(|(key, reason)| {
            Some(PaneFailure {
                host: None,
                pane_id: panes.get(*key)?.pane_id,
                error: reason.clone(),
            })
        })
        .collect()
}

fn pane_hits(pane: &Pane, lines: &[LineMatch], truncated: bool, several: bool) -> PaneHits {
    PaneHits {
        host: None,
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
                time: None,
                text: m.text.clone(),
                pattern_index: several.then_some(m.pattern_index),
                before: m.before.clone(),
                after: m.after.clone(),
                redactions: m.redactions,
            })
            .collect(),
        lines_truncated: truncated,
        pane_pid: pane.pane_pid,
    }
}

/// Drops matching lines from the end of the page (then whole panes, then
/// the ids of the panes beyond it) until about `excess` encoded bytes are
/// saved; marks the panes that lost lines and `matches_truncated`. False
/// when nothing is left to drop.
/// Secrets replaced in the lines (and their context) of `panes`.
fn redactions_in(panes: &[PaneHits]) -> u64 {
    panes
        .iter()
        .flat_map(|p| &p.lines)
        .map(|l| l.redactions as u64)
        .sum()
}

pub(super) fn cut_to_size(result: &mut SearchPanesResult, excess: usize) -> bool {
    let mut saved = 0usize;
    // The journal's lines next (the newest go first; tmux's own lines
    // carry line numbers and are kept longest).
    while let Some(hit) = result.journal_matches.pop() {
        saved += 2 * encoded_len(&hit);
        result.matches_truncated = true;
        result.redactions = result.redactions.saturating_sub(hit.redactions as u64);
        if saved >= excess {
            return true;
        }
    }
    // Groups first (a grouped result has no panes): the smallest go.
    while let Some(group) = result.groups.as_mut().and_then(|g| g.pop()) {
        saved += 2 * encoded_len(&group);
        result.truncated = true;
        result.matches_truncated = true;
        keep_places(result);
        if saved >= excess {
            return true;
        }
    }
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
                keep_places(result);
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
            result.redactions = result.redactions.saturating_sub(line.redactions as u64);
            saved += line_cost(&place, &line);
            keep_places(result);
        }
    }
    true
}

/// An answer that lost lines it found gives the cursor that keeps every
/// pane's old place ([`SearchPanesResult::cursor_if_cut`]): the next since
/// search finds what this one had no room to show.
pub(super) fn keep_places(result: &mut SearchPanesResult) {
    if !result.cursor_if_cut.is_empty() {
        result.cursor.clone_from(&result.cursor_if_cut);
    }
}

/// The bytes a line takes in the response: its JSON in the structured
/// result and its escaped rendering in the text.
fn line_cost(place: &str, line: &HitLine) -> usize {
    let mut rendered = String::new();
    push_hit(&mut rendered, place, line, &Style::PLAIN);
    encoded_len(line) + 1 + crate::tools::json_str_len(&rendered)
}

fn encoded_len<T: Serialize>(value: &T) -> usize {
    serde_json::to_string(value).map_or(0, |s| s.len())
}

#[cfg(test)]
mod tests {
    use super::super::types::fixtures::{empty_result, hit};
    use super::super::SearchPanes;
    use super::{Page, PaneHits};
    use crate::tools::registry::encode_within;

    #[test]
    fn a_page_is_cut_from_the_matching_panes_and_names_those_beyond_it() {
        let ids = |hits: &[PaneHits]| hits.iter().map(|h| h.pane_id.number()).collect::<Vec<_>>();
        let all = || (1..=5).map(|p| hit(p, 1, 1)).collect::<Vec<_>>();

        let page = Page::of(all(), 1, 2);
        assert_eq!(ids(&page.matches), [2, 3]);
        assert_eq!(page.total, 5);
        assert!(page.truncated);
        assert_eq!(
            page.beyond.iter().map(|p| p.number()).collect::<Vec<_>>(),
            [4, 5]
        );

        let last = Page::of(all(), 3, 100);
        assert_eq!(ids(&last.matches), [4, 5]);
        assert!(!last.truncated && last.beyond.is_empty());

        // An offset past the end is an empty page, not an error.
        let past = Page::of(all(), 9, 2);
        assert!(past.matches.is_empty() && !past.truncated && past.total == 5);
    }

    #[test]
    fn small_results_are_not_cut() {
        let r = empty_result(vec![hit(1, 3, 10)]);
        let out = encode_within::<SearchPanes>(r, 1_000_000).unwrap();
        let v: serde_json::Value = serde_json::from_str(out.structured.as_str()).unwrap();
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
        let v: serde_json::Value = serde_json::from_str(out.structured.as_str()).unwrap();
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
}
