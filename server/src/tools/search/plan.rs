//! Plan: a search's arguments checked against the operator's ceilings and
//! its patterns parsed before anything touches tmux (a bad pattern costs
//! nothing), then its patterns built (while tmux lists the panes).

use std::time::Duration;

use panescan_engine::{Matcher, PatternOptions, SearchBudgets, MAX_PATTERNS};

use super::types::{GroupBy, SearchPanesArgs};
use crate::config::SearchCeilings;
use crate::tmux::CaptureRange;
use crate::tools::context::ToolError;

/// Context lines a caller may ask for around each hit.
pub const MAX_CONTEXT_LINES: u8 = 10;

/// Validated arguments: what will be searched, with which budgets.
#[derive(Debug)]
pub(super) struct Plan {
    pub(super) patterns: Vec<String>,
    pub(super) matcher: Matcher,
    pub(super) requested_scrollback: u64,
    pub(super) scrollback: u64,
    pub(super) join_wrapped: bool,
    pub(super) context_lines: usize,
    pub(super) limit: usize,
    pub(super) offset: usize,
    pub(super) engine_limits: SearchBudgets,
    pub(super) group_by: Option<GroupBy>,
}

/// A search's arguments checked, its patterns parsed but not yet built:
/// building a regex's automata is most of a plan's cost (~1 ms), and a
/// search builds them while tmux lists its panes.
#[derive(Debug)]
pub(super) struct CheckedPlan {
    patterns: Vec<String>,
    options: PatternOptions,
    requested_scrollback: u64,
    scrollback: u64,
    join_wrapped: bool,
    context_lines: usize,
    limit: usize,
    offset: usize,
    pub(super) timeout: Duration,
    engine_limits: SearchBudgets,
    group_by: Option<GroupBy>,
}

impl CheckedPlan {
    /// The plan, its patterns built. Fails only for patterns whose
    /// automata would exceed the engine's size limits.
    pub(super) fn build(self) -> Result<Plan, ToolError> {
        let matcher = Matcher::new(&self.patterns, self.options)
            .map_err(|e| ToolError::invalid(e.to_string()))?;
        Ok(Plan {
            patterns: self.patterns,
            matcher,
            requested_scrollback: self.requested_scrollback,
            scrollback: self.scrollback,
            join_wrapped: self.join_wrapped,
            context_lines: self.context_lines,
            limit: self.limit,
            offset: self.offset,
            engine_limits: self.engine_limits,
            group_by: self.group_by,
        })
    }
}

impl Plan {
    /// [`Plan::check`], then [`CheckedPlan::build`].
    pub(super) fn new(args: &SearchPanesArgs, limits: &SearchCeilings) -> Result<Plan, ToolError> {
        Plan::check(args, limits)?.build()
    }

    /// The arguments checked, the patterns parsed. The first argument a
    /// caller got wrong is the error (in the order below), so the same
    /// call always gets the same answer; nothing here touches tmux, so a
    /// bad pattern costs nothing. (Patterns whose automata would exceed
    /// the engine's size limits are found only when built: that error
    /// comes after these, and before any of the listing's.)
    pub(super) fn check(
        args: &SearchPanesArgs,
        limits: &SearchCeilings,
    ) -> Result<CheckedPlan, ToolError> {
        let patterns = patterns_of(args)?;
        let options = PatternOptions {
            regex: args.regex,
            match_case: args.match_case,
        };
        Matcher::check(&patterns, options).map_err(|e| ToolError::invalid(e.to_string()))?;
        let context = args.context_lines.unwrap_or(0);
        if context > MAX_CONTEXT_LINES {
            return Err(ToolError::invalid(format!(
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
        Ok(CheckedPlan {
            patterns,
            options,
            requested_scrollback,
            scrollback: requested_scrollback.min(limits.max_scrollback_lines),
            join_wrapped: args.join_wrapped.unwrap_or(true),
            context_lines: usize::from(context),
            limit,
            offset: args.offset.unwrap_or(0),
            timeout: Duration::from_millis(timeout_ms),
            engine_limits: budgets(args, limits)?,
            group_by: args.group_by,
        })
    }

    /// What each pane's capture asks tmux for.
    pub(super) fn capture_range(&self) -> CaptureRange {
        if self.scrollback == 0 {
            CaptureRange::Visible
        } else {
            CaptureRange::Scrollback(self.scrollback)
        }
    }
}

/// `pattern` or `patterns`, exactly one of them.
fn patterns_of(args: &SearchPanesArgs) -> Result<Vec<String>, ToolError> {
    pattern_list(&args.pattern, &args.patterns, "the text to find")
}

/// The patterns of a tool that takes `pattern` or `patterns` (1-64, any of
/// them): search_panes and wait_for_text. `what` says what a pattern is, for
/// the error when neither is given.
pub(crate) fn pattern_list(
    pattern: &Option<String>,
    patterns: &Option<Vec<String>>,
    what: &str,
) -> Result<Vec<String>, ToolError> {
    match (pattern, patterns) {
        (Some(_), Some(_)) => Err(ToolError::invalid(
            "give either pattern or patterns, not both",
        )),
        (None, None) => Err(ToolError::invalid(format!(
            "pattern is required: {what} (or patterns, a list of 1-64)"
        ))),
        (Some(p), None) => Ok(vec![p.clone()]),
        (None, Some(list)) => {
            if list.is_empty() || list.len() > MAX_PATTERNS {
                return Err(ToolError::invalid(format!(
                    "patterns must hold 1 to {MAX_PATTERNS} patterns, got {}",
                    list.len()
                )));
            }
            Ok(list.clone())
        }
    }
}

/// The engine's budgets; the deadline is set when the search starts.
fn budgets(args: &SearchPanesArgs, limits: &SearchCeilings) -> Result<SearchBudgets, ToolError> {
    Ok(SearchBudgets {
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
    })
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
        Some(0) => Err(ToolError::invalid(format!("{name} must be at least 1"))),
        Some(v) if v > ceiling => Err(ToolError::over_ceiling(format!(
            "{name} may be at most {ceiling} (the operator's ceiling), got {v}"
        ))),
        Some(v) => Ok(v),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
