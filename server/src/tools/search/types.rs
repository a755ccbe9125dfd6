//! The wire types of `search_panes`: the arguments a caller sends and the
//! result it gets back, as their JSON schemas show them.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub use super::since::SincePane;
use crate::tmux::{PaneId, PanePlacement, SessionId, WindowId};
use crate::tools::context::ServerArgs;

/// The arguments of `search_panes`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
// A wire type: its doc comments would be schema descriptions every client
// reads in tools/list; the tool's description and the field names say it.
#[allow(missing_docs)]
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
    #[schemars(range(max = 10))]
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
    /// Fold equal hit lines into groups (shape: numbers and hex as #); pages groups.
    #[serde(default)]
    pub group_by: Option<GroupBy>,
    /// A cursor of an earlier result: search only lines printed since (new panes in full).
    #[serde(default)]
    pub since: Option<String>,
    /// "local" and/or configured ssh hosts, searched at once (default: all).
    #[serde(default)]
    pub hosts: Option<Vec<String>>,
    /// Also search the journal (panescan daemon --journal): lines tmux no longer holds, closed panes. Hits get time; all history is searched.
    #[serde(default)]
    pub journal: bool,
    /// Only lines first seen at/after: RFC 3339 or a span ago (15m, 2h, 7d). Needs the journal.
    #[serde(default)]
    pub since_time: Option<String>,
    /// Only lines first seen at/before (as since_time).
    #[serde(default)]
    pub until_time: Option<String>,
    #[serde(flatten)]
    pub server: ServerArgs,
}

/// One matching line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
// A wire type: its doc comments would be schema descriptions every client
// reads in tools/list; the tool's description and the field names say it.
#[allow(missing_docs)]
pub struct HitLine {
    /// 0 = top of screen, negative = history; pass to capture_pane as start.
    pub line: i64,
    /// With journal/since_time: when first seen (RFC 3339; not journaled yet: this search's time; absent: older than the journal).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time: Option<String>,
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
    // Secrets replaced in text, before and after (counted in the result).
    #[serde(skip)]
    pub redactions: usize,
}

/// A journaled line tmux no longer holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
// A wire type: see HitLine.
#[allow(missing_docs)]
pub struct JournalHit {
    pub pane_id: String,
    pub session_name: String,
    // index:name
    pub window: String,
    // The pane no longer exists (closed, or its server restarted).
    pub pane_gone: bool,
    pub time: String,
    pub text: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pattern_index: Option<usize>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub before: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub after: Vec<String>,
    #[serde(skip)]
    pub redactions: usize,
}

/// A span the journal could not keep.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
// A wire type: see HitLine.
#[allow(missing_docs)]
pub struct JournalGap {
    // "*": every pane.
    pub pane_id: String,
    pub from: String,
    pub to: String,
    pub reason: String,
}

/// How `group_by` folds lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum GroupBy {
    /// Equal after trimming trailing spaces.
    Text,
    /// Equal once numbers and hex words are `#`.
    Shape,
}

/// Equal matching lines of every pane.
#[derive(Debug, Clone, Serialize, JsonSchema)]
// A wire type: its doc comments would be schema descriptions every client
// reads in tools/list; the tool's description and the field names say it.
#[allow(missing_docs)]
pub struct HitGroup {
    pub text: String,
    pub count: usize,
    pub panes: Vec<PaneId>,
    pub first: GroupFirst,
}

/// Where a group's line was seen first.
#[derive(Debug, Clone, Serialize, JsonSchema)]
// A wire type: see HitGroup.
#[allow(missing_docs)]
pub struct GroupFirst {
    pub pane_id: PaneId,
    pub line: i64,
}

/// A pane with matching lines.
#[derive(Debug, Clone, Serialize, JsonSchema)]
// A wire type: its doc comments would be schema descriptions every client
// reads in tools/list; the tool's description and the field names say it.
#[allow(missing_docs)]
pub struct PaneHits {
    // Only when ssh hosts are configured: "local" or the host.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
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
    // The pane's process, when the listing has it: what the pane runs is
    // read from /proc through it ([`crate::tmux::procfs`]). Never sent.
    #[serde(skip)]
    pub pane_pid: Option<u32>,
}

/// A pane whose capture failed.
#[derive(Debug, Clone, Serialize, JsonSchema)]
// A wire type: its doc comments would be schema descriptions every client
// reads in tools/list; the tool's description and the field names say it.
#[allow(missing_docs)]
pub struct PaneFailure {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    pub pane_id: PaneId,
    pub error: String,
}

/// A host that did not answer.
#[derive(Debug, Clone, Serialize, JsonSchema)]
// A wire type: see PaneFailure.
#[allow(missing_docs)]
pub struct HostFailure {
    pub host: String,
    pub error: String,
}

/// The result of `search_panes`.
#[derive(Debug, Clone, Serialize, JsonSchema)]
// A wire type: its doc comments would be schema descriptions every client
// reads in tools/list; the tool's description and the field names say it.
#[allow(missing_docs)]
pub struct SearchPanesResult {
    // Matching panes of this page, ordered by session, window index, pane index.
    pub matches: Vec<PaneHits>,
    // With group_by: this page of groups, largest first (matches is empty).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub groups: Option<Vec<HitGroup>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_groups: Option<usize>,
    // Secrets replaced with [REDACTED:KIND] in the lines returned (grouped: in every line folded).
    pub redactions: u64,
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
    // Pass as since to search only what is printed after this search.
    pub cursor: String,
    // The cursor an answer cut to fit its response gives instead: every
    // pane keeps its old place, so no line it could not show is skipped.
    #[serde(skip)]
    pub cursor_if_cut: String,
    // The since cursor predates a server restart: everything was searched in full.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub since_reset: bool,
    // Panes not searched from the since cursor, and why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub since_panes: Vec<SincePane>,
    // Hosts that could not be searched (the others answered).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hosts_failed: Vec<HostFailure>,
    // With journal: matching lines tmux no longer holds, oldest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub journal_matches: Vec<JournalHit>,
    // Spans in the time searched the journal could not keep (up to 20).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub journal_gaps: Vec<JournalGap>,
    // Journal segments that could not be read.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub journal_skipped: Vec<String>,
}

/// A result with nothing in it yet, for a page at `offset` of `limit`
/// (the merge of several hosts fills it).
pub(super) fn empty(offset: usize, limit: usize) -> SearchPanesResult {
    SearchPanesResult {
        matches: Vec::new(),
        groups: None,
        total_groups: None,
        redactions: 0,
        total_panes_matched: 0,
        offset,
        limit,
        truncated: false,
        truncated_panes: Vec::new(),
        panes_searched: 0,
        panes_failed: 0,
        failures: Vec::new(),
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

/// Results built by hand, for the unit tests of the stages that shape and
/// render them.
#[cfg(test)]
pub(super) mod fixtures {
    use super::{HitLine, PaneHits, SearchPanesResult};
    use crate::tmux::{PaneId, SessionId, WindowId};

    pub(crate) fn hit(pane: u32, lines: usize, width: usize) -> PaneHits {
        PaneHits {
            host: None,
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
                    time: None,
                    text: "x".repeat(width),
                    pattern_index: None,
                    before: vec![],
                    after: vec![],
                    redactions: 0,
                })
                .collect(),
            lines_truncated: false,
            pane_pid: None,
        }
    }

    pub(crate) fn empty_result(matches: Vec<PaneHits>) -> SearchPanesResult {
        SearchPanesResult {
            total_panes_matched: matches.len(),
            matches,
            ..super::empty(0, 100)
        }
    }
}
