//! The end of a search: results put back in key order, the total match
//! budget applied, and the flags made independent of timing.

use crate::budget::Budget;

use super::driver::Finished;
use super::{PaneMatches, SearchOutcome};

/// Puts results in key order and applies the total match budget.
/// `clamp_key` is the first capture the byte or line budget cut.
pub(super) fn assemble(
    finished: Finished,
    budget: &Budget,
    clamp_key: Option<usize>,
) -> SearchOutcome {
    let Finished {
        scanned, failed, ..
    } = finished;
    let budgets = budget.budgets();
    let (max_matches, max_per_pane) = (budgets.max_matches, budgets.max_matches_per_pane);
    // Past the capture where the byte or line budget ran out nothing is
    // searched, and whether a later failure was received before the driver
    // stopped taking input depends on timing: report none of them, so the
    // answer is the same on every run.
    let failed = failed
        .into_iter()
        .filter(|(key, _)| clamp_key.is_none_or(|c| *key <= c))
        .collect();
    let mut out = SearchOutcome {
        failed,
        ..SearchOutcome::default()
    };
    let mut total = 0u64;
    let mut truncated = false;
    let mut truncated_at = None;
    for (key, result) in scanned {
        if truncated || clamp_key.is_some_and(|c| key > c) {
            // Past the budget's cut only captures that happened to arrive
            // before the driver stopped are here (empty ones, which need no
            // budget): leave them out, as the ones that did not arrive.
            break;
        }
        if result.interrupted.is_some() && result.lines_scanned == 0 && result.lines.is_empty() {
            // Stopped (time, cancel, match budget) before scanning anything.
            continue;
        }
        out.panes_searched += 1;
        out.bytes_scanned += result.bytes_scanned;
        out.lines_scanned += result.lines_scanned;
        let mut lines = result.lines;
        // The scan stops at min(per-pane, total) hits; it had more when
        // `truncated`. Below the per-pane cap, that means the total cap.
        let mut lines_truncated = result.truncated;
        let room = max_matches.saturating_sub(total);
        if lines.len() as u64 > room || (result.truncated && (lines.len() as u64) < max_per_pane) {
            lines.truncate(usize::try_from(room).unwrap_or(usize::MAX));
            lines_truncated = true;
            truncated = true;
            truncated_at = Some(key);
        }
        total += lines.len() as u64;
        if !lines.is_empty() {
            out.panes.push(PaneMatches {
                key,
                lines,
                lines_truncated,
            });
        }
    }
    if truncated {
        budget.set_matches_truncated();
    }
    out.flags = budget.flags();
    // Captures after the one where the match budget cut the result may or
    // may not have been admitted before the search stopped (that depends on
    // timing); a byte/line clamp there changed nothing in the result.
    if let (Some(cut), Some(clamp)) = (truncated_at, clamp_key) {
        if clamp > cut {
            out.flags.byte_clamped = false;
            out.flags.line_clamped = false;
        }
    }
    out.cancelled = budget.cancelled();
    out
}
