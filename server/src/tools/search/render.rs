//! Render: the grep-like text of a result (`%3 dev:1.0 -12: text`), shared
//! by the tool's text content, `panescan search`, the demo and the bench,
//! and the names of the clamp flags that fired.

use std::fmt::Write as _;

use super::types::{HitGroup, HitLine, PaneHits, SearchPanesResult};

/// What follows a pane's place when it has more matching lines than shown.
pub(super) const MORE_LINES: &str = " (more matching lines not shown)\n";

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
            out.push_str(&place);
            out.push_str(MORE_LINES);
        }
    }
    for group in result.groups.iter().flatten() {
        push_group(&mut out, group);
    }
    for failed in &result.hosts_failed {
        out.push_str(&format!("host {} failed: {}\n", failed.host, failed.error));
    }
    out.push_str(&summary_line(result));
    out
}

/// One group as a line: `40x text (40 panes, first %3 -12)`.
pub fn push_group(out: &mut String, group: &HitGroup) {
    out.push_str(&format!(
        "{}x {} ({} panes, first {} {})\n",
        group.count,
        group.text,
        group.panes.len(),
        group.first.pane_id,
        group.first.line
    ));
}

/// Terminal colours of the grep-like rendering (all empty: plain text).
#[derive(Debug, Clone, Copy)]
pub struct Style {
    /// Before a pane's heading.
    pub pane: &'static str,
    /// Before a matching line's number.
    pub line: &'static str,
    /// Before a context line's number.
    pub context: &'static str,
    /// After each coloured part.
    pub reset: &'static str,
}

impl Style {
    /// No colour: for pipes, files and `--color never`.
    pub const PLAIN: Style = Style {
        pane: "",
        line: "",
        context: "",
        reset: "",
    };
    /// ANSI colours, as grep uses them, for a terminal.
    pub const COLOUR: Style = Style {
        pane: "\x1b[35m",
        line: "\x1b[32m",
        context: "\x1b[2m",
        reset: "\x1b[0m",
    };
}

/// `%3 dev:1.0` (`build1 %3 dev:1.0` with hosts): the pane and where it
/// sits.
pub fn pane_place(pane: &PaneHits, style: &Style) -> String {
    let host = pane
        .host
        .as_deref()
        .map(|h| format!("{h} "))
        .unwrap_or_default();
    format!(
        "{host}{}{}{} {}:{}.{}",
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
    // Written in place (a String never fails to take a write): a big
    // answer renders thousands of these.
    for (i, text) in hit.before.iter().enumerate() {
        let _ = writeln!(out, "{place} {g}{}{r}- {d}{text}{r}", first + i as i64);
    }
    match &hit.time {
        Some(t) => {
            let _ = writeln!(out, "{place} {g}{}{r}: [{t}] {}", hit.line, hit.text);
        }
        None => {
            let _ = writeln!(out, "{place} {g}{}{r}: {}", hit.line, hit.text);
        }
    }
    for (i, text) in hit.after.iter().enumerate() {
        let _ = writeln!(
            out,
            "{place} {g}{}{r}- {d}{text}{r}",
            hit.line + 1 + i as i64
        );
    }
}

/// `-- 12 lines in 3 panes (page 1-3 of 3); searched 200 panes, ...`.
pub fn summary_line(result: &SearchPanesResult) -> String {
    let lines: usize = result.matches.iter().map(|p| p.lines.len()).sum();
    summary_of(result, lines, result.matches.len())
}

/// The summary line of `result` showing `lines` lines from `panes` panes
/// (the result's own matches are not read: an encoder that holds them
/// apart counts them itself).
pub(super) fn summary_of(result: &SearchPanesResult, lines: usize, panes: usize) -> String {
    // With group_by the answer holds groups, not lines: say what they hold.
    let shown = match (&result.groups, result.total_groups) {
        (Some(groups), total) => format!(
            "{} of {} groups shown, holding {} matching lines, from {} matching panes",
            groups.len(),
            total.unwrap_or(groups.len()),
            groups.iter().map(|g| g.count).sum::<usize>(),
            result.total_panes_matched,
        ),
        (None, _) => format!(
            "{lines} matching lines shown from {panes} of {} matching panes",
            result.total_panes_matched
        ),
    };
    let mut s = format!(
        "-- {shown}; searched {} panes ({} failed), {} bytes, {} lines in {} ms",
        result.panes_searched,
        result.panes_failed,
        result.bytes_scanned,
        result.lines_scanned,
        result.elapsed_ms,
    );
    if result.redactions > 0 {
        s.push_str(&format!("; {} secrets redacted", result.redactions));
    }
    if result.truncated && result.groups.is_some() {
        s.push_str(&format!(
            "; more groups: use offset {}",
            result.offset + result.groups.as_ref().map_or(0, Vec::len)
        ));
    } else if result.truncated {
        s.push_str(&format!(
            "; {} more matching panes: use offset {}",
            result.truncated_panes.len(),
            result.offset + panes
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
const CLAMP_FLAGS: [&str; 7] = [
    "captures_byte_clamped",
    "matching_byte_clamped",
    "matching_line_clamped",
    "matching_time_clamped",
    "pane_limit_clamped",
    "scrollback_clamped",
    "matches_truncated",
];

/// The names of the clamp flags that fired.
fn clamp_names(result: &SearchPanesResult) -> Vec<&'static str> {
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
    use super::super::types::fixtures::{empty_result, hit};
    use super::*;

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

    #[test]
    fn a_grouped_summary_says_what_the_groups_hold() {
        use super::super::types::{GroupFirst, HitGroup};
        let pane = crate::tmux::PaneId::from_number(1);
        let group = |count| HitGroup {
            text: "x".into(),
            count,
            panes: vec![pane],
            first: GroupFirst {
                pane_id: pane,
                line: 0,
            },
        };
        let mut r = empty_result(vec![]);
        r.total_panes_matched = 2;
        r.groups = Some(vec![group(3), group(4)]);
        r.total_groups = Some(5);
        let line = summary_line(&r);
        assert!(
            line.starts_with(
                "-- 2 of 5 groups shown, holding 7 matching lines, from 2 matching panes;"
            ),
            "{line}"
        );
        assert!(!line.contains("0 matching lines shown"), "{line}");
    }
}
