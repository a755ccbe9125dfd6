//! Search results built by hand, deterministic, for the tests that hold
//! answers to their bytes: small ones, ones to cut to a ceiling, a page of
//! ids, grouped ones, with cursor and since notes, text that JSON escapes.

use super::types::{
    GroupFirst, HitGroup, HitLine, PaneFailure, PaneHits, SearchPanesResult, SincePane,
};
use crate::tmux::{PaneId, PanePlacement, SessionId, WindowId};

/// A deterministic stream of numbers (no randomness in test data).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self, below: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        ((self.0 >> 33) as usize) % below.max(1)
    }
}

/// Words of terminal text, with what JSON escapes or counts differently:
/// quotes, backslashes, controls, multi-byte characters.
const WORDS: [&str; 16] = [
    "error[E0308]:",
    "mismatched",
    "\"quoted\"",
    "C:\\path\\to",
    "tab\there",
    "\u{1b}[31mred\u{1b}[0m",
    "bell\u{7}",
    "caf\u{e9}",
    "\u{6f22}\u{5b57}",
    "\u{1f980}",
    "line\u{2028}sep",
    "del\u{7f}",
    "FAILED",
    "ok",
    "panicked at",
    "[REDACTED:aws_key]",
];

fn text(rng: &mut Lcg, words: usize) -> String {
    let n = 1 + rng.next(words);
    (0..n)
        .map(|_| WORDS[rng.next(WORDS.len())])
        .collect::<Vec<_>>()
        .join(" ")
}

fn id<T>(parse: fn(&str) -> Result<T, crate::tmux::TmuxError>, text: &str) -> T {
    parse(text).unwrap()
}

/// Pane `n` with `lines` hits of up to `words` words; `context` lines of
/// context around each, pattern indexes when `several`.
fn pane(
    rng: &mut Lcg,
    n: u32,
    lines: usize,
    words: usize,
    context: usize,
    several: bool,
) -> PaneHits {
    let session = format!("s\"{}", n % 3);
    PaneHits {
        host: None,
        pane_id: id(PaneId::parse, &format!("%{n}")),
        pane_index: n % 4,
        window_id: id(WindowId::parse, &format!("@{}", n / 4)),
        window_index: n / 4,
        window_name: format!("win {n}"),
        session_id: id(SessionId::parse, &format!("${}", n % 3)),
        session_name: session.clone(),
        placements: vec![PanePlacement {
            session_id: id(SessionId::parse, &format!("${}", n % 3)),
            session_name: session,
            window_id: id(WindowId::parse, &format!("@{}", n / 4)),
            window_index: n / 4,
            window_name: format!("win {n}"),
        }],
        pane_current_command: "cargo".into(),
        pane_current_path: "/home/u/src".into(),
        is_caller: (n == 2).then_some(true),
        lines: (0..lines)
            .map(|i| HitLine {
                line: i as i64 * 7 - 2_000,
                time: None,
                text: text(rng, words),
                pattern_index: several.then(|| rng.next(3)),
                before: (0..context).map(|_| text(rng, words)).collect(),
                after: (0..context.saturating_sub(1))
                    .map(|_| text(rng, words))
                    .collect(),
                redactions: rng.next(4) / 3,
            })
            .collect(),
        lines_truncated: n % 5 == 4,
        pane_pid: None,
    }
}

fn result(panes: Vec<PaneHits>) -> SearchPanesResult {
    let redactions = panes
        .iter()
        .flat_map(|p| &p.lines)
        .map(|l| l.redactions as u64)
        .sum();
    SearchPanesResult {
        total_panes_matched: panes.len(),
        matches: panes,
        redactions,
        panes_searched: 200,
        bytes_scanned: 21_000_000,
        lines_scanned: 400_000,
        elapsed_ms: 31,
        effective_scrollback_lines: 2_000,
        cursor: "c1.AbC-dEf_123".into(),
        // Longer than the cursor: a cut answer grows by the difference.
        cursor_if_cut: "c1.kept-every-pane_0123456789".into(),
        ..super::types::empty(0, 100)
    }
}

fn panes(seed: u64, count: u32, lines: usize, words: usize, context: usize) -> Vec<PaneHits> {
    let mut rng = Lcg(seed);
    (1..=count)
        .map(|n| pane(&mut rng, n, lines, words, context, context > 0))
        .collect()
}

fn small() -> SearchPanesResult {
    let mut r = result(panes(1, 3, 4, 6, 2));
    r.offset = 2;
    r.limit = 3;
    r.truncated = true;
    r.total_panes_matched = 9;
    r.truncated_panes = (20..24)
        .map(|n| id(PaneId::parse, &format!("%{n}")))
        .collect();
    r.panes_failed = 2;
    r.failures = vec![PaneFailure {
        host: None,
        pane_id: id(PaneId::parse, "%40"),
        error: "pane is gone \"%40\"".into(),
    }];
    r.matching_time_clamped = true;
    r.since_reset = true;
    r.since_panes = vec![SincePane {
        pane_id: id(PaneId::parse, "%3"),
        reason: "cleared",
        missed_lines: Some(12),
    }];
    r
}

fn grouped(count: usize) -> SearchPanesResult {
    let mut rng = Lcg(5);
    let mut r = result(vec![]);
    r.total_panes_matched = 40;
    r.groups = Some(
        (0..count)
            .map(|i| HitGroup {
                text: text(&mut rng, 8),
                count: 100 - i,
                panes: (0..1 + i % 4)
                    .map(|p| id(PaneId::parse, &format!("%{p}")))
                    .collect(),
                first: GroupFirst {
                    pane_id: id(PaneId::parse, &format!("%{}", i % 4)),
                    line: -(i as i64),
                },
            })
            .collect(),
    );
    r.total_groups = Some(count + 10);
    r.truncated = true;
    r
}

/// Every case: its name, the result and the ceilings it is answered under.
pub(crate) fn cases() -> Vec<(&'static str, SearchPanesResult, Vec<usize>)> {
    let mut quotes = result(panes(3, 10, 20, 4, 0));
    for line in quotes.matches.iter_mut().flat_map(|p| p.lines.iter_mut()) {
        line.text = format!("\"\"\u{1}\\{}", line.text);
    }
    let mut paged = result(panes(4, 12, 25, 9, 0));
    paged.truncated = true;
    paged.truncated_panes = (100..400)
        .map(|n| id(PaneId::parse, &format!("%{n}")))
        .collect();
    vec![
        ("small", small(), vec![1_000_000]),
        ("no_matches", result(vec![]), vec![1_000_000]),
        (
            "cut",
            result(panes(2, 12, 25, 12, 0)),
            vec![60_000, 25_000, 12_000, 7_500, 4_000],
        ),
        ("cut_quotes", quotes, vec![20_000, 9_000, 5_000, 3_100]),
        (
            "cut_context",
            result(panes(6, 8, 15, 6, 3)),
            vec![50_000, 21_000, 8_000],
        ),
        (
            "cut_page",
            paged,
            vec![30_000, 9_000, 4_000, 2_500, 1_200, 700],
        ),
        ("grouped", grouped(30), vec![1_000_000, 3_000, 1_000, 400]),
    ]
}
