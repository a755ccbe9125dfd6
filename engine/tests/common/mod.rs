//! A naive reference: split into lines, run the `regex` crate on each line.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use panescan_engine::{Capture, SearchBudgets, SearchOptions, SearchOutcome};

/// Lines as tmux gives them: split on `\n`, a final `\n` ends the last
/// line, `\r` before `\n` dropped.
pub fn lines(bytes: &[u8]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut current = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\r' if bytes.get(i + 1) == Some(&b'\n') => {}
            b'\n' => out.push(std::mem::take(&mut current)),
            b => current.push(b),
        }
        i += 1;
    }
    if !bytes.is_empty() && bytes.last() != Some(&b'\n') {
        out.push(current);
    }
    out
}

pub fn oracle_regexes(
    patterns: &[String],
    regex: bool,
    match_case: bool,
) -> Vec<regex::bytes::Regex> {
    patterns
        .iter()
        .map(|p| {
            let text = if regex { p.clone() } else { regex::escape(p) };
            regex::bytes::RegexBuilder::new(&text)
                .case_insensitive(!match_case)
                .build()
                .unwrap()
        })
        .collect()
}

/// Per pane with hits: (key, [(line number, lowest matching pattern, text)]).
pub type View = Vec<(usize, Vec<(i64, usize, String)>)>;

/// (line number, lowest matching pattern, text) for every matching line.
pub fn oracle(patterns: &[String], regex: bool, match_case: bool, captures: &[Capture]) -> View {
    let res = oracle_regexes(patterns, regex, match_case);
    let mut out = Vec::new();
    for c in captures {
        let mut hits = Vec::new();
        for (i, line) in lines(&c.bytes).iter().enumerate() {
            if let Some(p) = res.iter().position(|r| r.is_match(line)) {
                hits.push((
                    c.first_line + i as i64,
                    p,
                    String::from_utf8_lossy(line).into_owned(),
                ));
            }
        }
        if !hits.is_empty() {
            out.push((c.key, hits));
        }
    }
    out
}

pub fn engine_view(outcome: &SearchOutcome) -> View {
    outcome
        .panes
        .iter()
        .map(|p| {
            (
                p.key,
                p.lines
                    .iter()
                    .map(|l| (l.line, l.pattern_index, l.text.clone()))
                    .collect(),
            )
        })
        .collect()
}

pub fn open_options() -> SearchOptions {
    SearchOptions {
        limits: SearchBudgets::unlimited(),
        context_lines: 0,
        strip_escapes: false,
        max_text_bytes: 1 << 20,
        cancel: None,
    }
}
