//! Many hosts in one search: `hosts` (default: this machine and every
//! `--ssh` host) are searched at once, one thread each, and their results
//! merged in host order, then pane order within a host.
//!
//! * Every match and pane failure names its `host` once hosts are
//!   configured (this machine is `"local"`); with none configured nothing
//!   changes in a result.
//! * A host that cannot be searched (unreachable, no tmux server, too old a
//!   tmux) is listed in `hosts_failed` with its error; the others answer.
//! * Budgets are shared, charged in host order: each host scans within the
//!   whole budget (they run at once), and the merge takes hosts in order
//!   while the bytes and lines scanned so far are within it; a host after
//!   that point contributes no matches and sets the clamp flag. Matching
//!   lines (`max_matches`) and the page (`offset`/`limit`) are counted over
//!   the merged list. The same hosts answering the same way give the same
//!   result on every run.
//! * No host holds the answer past the search's `timeout_ms` (plus
//!   [`HOST_GRACE`]): one that has not answered by then is in
//!   `hosts_failed`, and the others' matches are in the same answer.
//! * `since` and `group_by` take one host at a time (a cursor and a group
//!   describe one server's panes).

use std::time::{Duration, Instant};

use super::plan::Plan;
use super::types::{HostFailure, PaneHits, SearchPanesArgs, SearchPanesResult};
use crate::tmux::ssh::LOCAL;
use crate::tools::context::{ToolContext, ToolError};

/// How long past a search's timeout the merge waits for a host: each
/// host's search ends at that deadline (its clients killed there), this is
/// room for its answer to arrive; a host later than that is a failure.
const HOST_GRACE: Duration = Duration::from_millis(500);

/// The hosts a call searches, in order; `None`: one server, the old way
/// (`host` alone, or no hosts configured).
pub(super) fn targets(
    ctx: &ToolContext,
    args: &SearchPanesArgs,
) -> Result<Option<Vec<String>>, ToolError> {
    let Some(asked) = &args.hosts else {
        if args.server.host.is_none() && !ctx.config.hosts.is_empty() {
            let mut all = vec![LOCAL.to_owned()];
            all.extend(ctx.config.hosts.iter().cloned());
            return Ok(Some(all));
        }
        return Ok(None);
    };
    if args.server.host.is_some() {
        return Err(ToolError::invalid("pass host or hosts, not both"));
    }
    if asked.is_empty() {
        return Err(ToolError::invalid(
            "hosts is empty: name \"local\" and/or configured hosts, or leave it out for all",
        ));
    }
    let mut list: Vec<String> = Vec::new();
    for h in asked {
        ctx.host(Some(h))?;
        if !list.contains(h) {
            list.push(h.clone());
        }
    }
    Ok(Some(list))
}

/// The name a result gives its host.
pub(super) fn label(host: Option<&str>) -> String {
    host.unwrap_or(LOCAL).to_owned()
}

/// Names `host` on every match and failure of `result`.
pub(super) fn name(result: &mut SearchPanesResult, host: &str) {
    for m in &mut result.matches {
        m.host = Some(host.to_owned());
    }
    for f in &mut result.failures {
        f.host = Some(host.to_owned());
    }
}

/// Searches every host of `list` at once with `one` and merges the results.
pub(super) fn search_many(
    ctx: &ToolContext,
    args: &SearchPanesArgs,
    list: &[String],
    one: fn(&ToolContext, &SearchPanesArgs) -> Result<SearchPanesResult, ToolError>,
) -> Result<SearchPanesResult, ToolError> {
    let started = Instant::now();
    let limits = &ctx.ceilings().search;
    let plan = Plan::new(args, limits)?;
    if list.len() > 1 && (args.since.is_some() || args.group_by.is_some()) {
        return Err(ToolError::invalid(
            "since and group_by search one host at a time: pass hosts with one host (or host)",
        ));
    }
    // Each host returns the panes up to the end of the page; the page is
    // cut from the merged list.
    let per_host = SearchPanesArgs {
        hosts: None,
        offset: Some(0),
        limit: Some(plan.offset.saturating_add(plan.limit).min(limits.max_page)),
        ..args.clone()
    };
    let timeout = Plan::check(args, limits)?.timeout;
    let answers = gather(ctx, &per_host, list, one, started + timeout + HOST_GRACE);
    let mut merged = merge(list, answers, &plan);
    merged.elapsed_ms = started.elapsed().as_millis() as u64;
    Ok(merged)
}

/// Runs `one` for every host of `list` at once, each on a thread of its
/// own, and collects their answers in host order until `deadline`: a
/// host that has not answered by then is a failure, and its thread is
/// left to end at its own deadline (its clients are killed there) without
/// holding the others' answer.
fn gather(
    ctx: &ToolContext,
    per_host: &SearchPanesArgs,
    list: &[String],
    one: fn(&ToolContext, &SearchPanesArgs) -> Result<SearchPanesResult, ToolError>,
    deadline: Instant,
) -> Vec<Result<SearchPanesResult, ToolError>> {
    let (tx, rx) = crossbeam_channel::unbounded();
    for (i, host) in list.iter().enumerate() {
        let mut a = per_host.clone();
        a.server.host = Some(host.clone());
        let child = ctx.child();
        let tx = tx.clone();
        // A thread that cannot start never answers: said below, as a
        // stopped search.
        let _ = std::thread::Builder::new()
            .name("search-host".into())
            .spawn(move || {
                let _ = tx.send((i, one(&child, &a)));
            });
    }
    drop(tx);
    let mut answers: Vec<Option<Result<SearchPanesResult, ToolError>>> =
        list.iter().map(|_| None).collect();
    let mut late = false;
    for _ in 0..list.len() {
        match rx.recv_deadline(deadline) {
            Ok((i, answer)) => answers[i] = Some(answer),
            Err(crossbeam_channel::RecvTimeoutError::Timeout) => {
                late = true;
                break;
            }
            // Every thread has ended: a missing answer is one that panicked.
            Err(crossbeam_channel::RecvTimeoutError::Disconnected) => break,
        }
    }
    answers
        .into_iter()
        .map(|a| {
            a.unwrap_or_else(|| {
                Err(if late {
                    ToolError::timed_out("no answer within the search's timeout_ms")
                } else {
                    ToolError::internal("a host's search stopped; retry")
                })
            })
        })
        .collect()
}

/// The hosts' results, in host order, within the shared budgets and page.
fn merge(
    list: &[String],
    answers: Vec<Result<SearchPanesResult, ToolError>>,
    plan: &Plan,
) -> SearchPanesResult {
    let budget = &plan.engine_limits;
    let mut out = super::types::empty(plan.offset, plan.limit);
    let mut all: Vec<PaneHits> = Vec::new();
    for (host, answer) in list.iter().zip(answers) {
        let mut r = match answer {
            Ok(r) => r,
            Err(e) => {
                out.hosts_failed.push(HostFailure {
                    host: host.clone(),
                    error: e.message,
                });
                continue;
            }
        };
        if out.bytes_scanned >= budget.max_scan_bytes || out.lines_scanned >= budget.max_scan_lines
        {
            out.matching_byte_clamped |= out.bytes_scanned >= budget.max_scan_bytes;
            out.matching_line_clamped |= out.lines_scanned >= budget.max_scan_lines;
            continue;
        }
        name(&mut r, host);
        if list.len() == 1 {
            (out.cursor, out.since_panes, out.since_reset) =
                (r.cursor.clone(), r.since_panes.clone(), r.since_reset);
            out.cursor_if_cut = r.cursor_if_cut.clone();
            (out.groups, out.total_groups) = (r.groups.take(), r.total_groups);
        }
        out.bytes_scanned += r.bytes_scanned;
        out.lines_scanned += r.lines_scanned;
        out.panes_searched += r.panes_searched;
        out.panes_failed += r.panes_failed;
        out.failures.extend(r.failures);
        out.total_panes_matched += r.total_panes_matched;
        out.effective_scrollback_lines = out
            .effective_scrollback_lines
            .max(r.effective_scrollback_lines);
        out.captures_byte_clamped |= r.captures_byte_clamped;
        out.matching_byte_clamped |= r.matching_byte_clamped;
        out.matching_line_clamped |= r.matching_line_clamped;
        out.matching_time_clamped |= r.matching_time_clamped;
        out.pane_limit_clamped |= r.pane_limit_clamped;
        out.scrollback_clamped |= r.scrollback_clamped;
        out.matches_truncated |= r.matches_truncated;
        out.truncated_panes.extend(r.truncated_panes);
        all.extend(r.matches);
    }
    out.failures.truncate(20);
    cap_lines(&mut all, budget.max_matches, &mut out.matches_truncated);
    let page_end = plan.offset.saturating_add(plan.limit);
    out.truncated = out.total_panes_matched > page_end;
    let mut page: Vec<PaneHits> = all.into_iter().skip(plan.offset).collect();
    if page.len() > plan.limit {
        out.truncated_panes
            .splice(0..0, page[plan.limit..].iter().map(|p| p.pane_id));
        page.truncate(plan.limit);
    }
    out.redactions = page
        .iter()
        .flat_map(|p| &p.lines)
        .map(|l| l.redactions as u64)
        .sum();
    out.matches = page;
    out
}

/// Keeps the first `max` matching lines of `panes`, in order; a pane left
/// with none is dropped.
fn cap_lines(panes: &mut Vec<PaneHits>, max: u64, truncated: &mut bool) {
    let mut left = usize::try_from(max).unwrap_or(usize::MAX);
    panes.retain_mut(|p| {
        if p.lines.len() > left {
            p.lines.truncate(left);
            p.lines_truncated = true;
            *truncated = true;
        }
        left -= p.lines.len();
        !p.lines.is_empty()
    });
}

#[cfg(test)]
mod tests {
    use super::super::types::fixtures::{empty_result, hit};
    use super::*;

    fn plan(max_scan_bytes: u64) -> Plan {
        let args = SearchPanesArgs {
            pattern: Some("x".into()),
            max_scan_bytes: Some(max_scan_bytes),
            ..SearchPanesArgs::default()
        };
        Plan::new(&args, &crate::config::SearchCeilings::default()).unwrap()
    }

    fn answered(panes: &[u32], bytes: u64) -> Result<SearchPanesResult, ToolError> {
        let mut r = empty_result(panes.iter().map(|&p| hit(p, 1, 4)).collect());
        r.bytes_scanned = bytes;
        Ok(r)
    }

    #[test]
    fn hosts_merge_in_order_and_failures_are_named() {
        let list = ["local".to_owned(), "a".to_owned(), "b".to_owned()];
        let answers = vec![
            answered(&[1, 2], 10),
            Err(ToolError::invalid("ssh: connect refused")),
            answered(&[1], 10),
        ];
        let r = merge(&list, answers, &plan(1000));
        let got: Vec<(String, String)> = r
            .matches
            .iter()
            .map(|m| (m.host.clone().unwrap(), m.pane_id.to_string()))
            .collect();
        assert_eq!(
            got,
            [("local", "%1"), ("local", "%2"), ("b", "%1")]
                .map(|(h, p)| (h.to_owned(), p.to_owned()))
        );
        assert_eq!(r.hosts_failed.len(), 1);
        assert_eq!(r.hosts_failed[0].host, "a");
        assert_eq!(r.bytes_scanned, 20);
    }

    /// A host's search: "slow" answers long after the others.
    fn far_one(_: &ToolContext, args: &SearchPanesArgs) -> Result<SearchPanesResult, ToolError> {
        if args.server.host.as_deref() == Some("slow") {
            std::thread::sleep(std::time::Duration::from_secs(3));
        }
        answered(&[1], 1)
    }

    #[test]
    fn a_host_late_past_the_deadline_does_not_hold_the_others() {
        let ctx = ToolContext::read_only(
            crate::tmux::ServerSpec::default(),
            crate::config::Ceilings::default(),
        );
        let list = ["a".to_owned(), "slow".to_owned(), "b".to_owned()];
        let t = Instant::now();
        let deadline = t + Duration::from_millis(300);
        let answers = gather(&ctx, &SearchPanesArgs::default(), &list, far_one, deadline);
        assert!(t.elapsed() < Duration::from_secs(2), "{:?}", t.elapsed());
        assert!(answers[0].is_ok() && answers[2].is_ok());
        let e = answers[1].as_ref().unwrap_err();
        assert!(e.message.contains("timeout_ms"), "{}", e.message);
    }

    #[test]
    fn the_byte_budget_is_charged_in_host_order() {
        let list = ["local".to_owned(), "a".to_owned(), "b".to_owned()];
        let answers = vec![answered(&[1], 60), answered(&[2], 60), answered(&[3], 60)];
        let r = merge(&list, answers, &plan(100));
        let hosts: Vec<String> = r.matches.iter().filter_map(|m| m.host.clone()).collect();
        assert_eq!(hosts, ["local", "a"]);
        assert!(r.matching_byte_clamped);
    }
}
