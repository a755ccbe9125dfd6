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
        redact: false,
    }
}

/// Share of `n` draws of `strategy` (deterministic seed) for which `hits`
/// holds.
pub fn share_with_hits<S: proptest::strategy::Strategy>(
    strategy: S,
    n: usize,
    hits: impl Fn(&S::Value) -> bool,
) -> f64 {
    use proptest::strategy::ValueTree;
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let mut with = 0usize;
    for _ in 0..n {
        let value = strategy.new_tree(&mut runner).unwrap().current();
        if hits(&value) {
            with += 1;
        }
    }
    with as f64 / n as f64
}

/// A small deterministic generator (xorshift64*), for the choices made
/// inside one generated value (proptest draws its seed).
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed | 1)
    }

    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A number in `0..n` (`n` > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// A string that `pattern` (regex syntax) matches within one line, built by
/// walking its HIR: a random branch of each alternation, a random count of
/// each repetition (at most 3 over its minimum), a random character of each
/// class (never a line end, `\n` or `\r`). Anchors and word boundaries are not arranged
/// for, so a sample may still fail to match where it is put. `None` if the
/// pattern does not parse or a class holds nothing usable.
pub fn sample_matching(pattern: &str, case_insensitive: bool, rng: &mut Rng) -> Option<String> {
    let hir = regex_syntax::ParserBuilder::new()
        .case_insensitive(case_insensitive)
        .build()
        .parse(pattern)
        .ok()?;
    let mut out = String::new();
    walk(&hir, rng, &mut out)?;
    Some(out)
}

fn walk(hir: &regex_syntax::hir::Hir, rng: &mut Rng, out: &mut String) -> Option<()> {
    use regex_syntax::hir::{Class, HirKind};
    match hir.kind() {
        HirKind::Empty | HirKind::Look(_) => {}
        HirKind::Literal(lit) => out.push_str(std::str::from_utf8(&lit.0).ok()?),
        HirKind::Class(Class::Unicode(class)) => {
            let ranges = class.ranges();
            let c = (0..16).find_map(|_| {
                let r = ranges.get(rng.below(ranges.len() as u64) as usize)?;
                let span = u64::from(r.end()) - u64::from(r.start()) + 1;
                let c = char::from_u32(r.start() as u32 + rng.below(span) as u32)?;
                (c != '\n' && c != '\r').then_some(c)
            })?;
            out.push(c);
        }
        HirKind::Class(Class::Bytes(class)) => {
            let ranges = class.ranges();
            let c = (0..16).find_map(|_| {
                let r = ranges.get(rng.below(ranges.len() as u64) as usize)?;
                let b = r.start() + rng.below(u64::from(r.end() - r.start()) + 1) as u8;
                (b.is_ascii() && b != b'\n' && b != b'\r').then_some(b as char)
            })?;
            out.push(c);
        }
        HirKind::Repetition(rep) => {
            let most = rep.max.unwrap_or(u32::MAX).min(rep.min.saturating_add(3));
            let n = rep.min + rng.below(u64::from(most - rep.min) + 1) as u32;
            for _ in 0..n {
                walk(&rep.sub, rng, out)?;
            }
        }
        HirKind::Capture(cap) => walk(&cap.sub, rng, out)?,
        HirKind::Concat(subs) => {
            for sub in subs {
                walk(sub, rng, out)?;
            }
        }
        HirKind::Alternation(subs) => {
            walk(&subs[rng.below(subs.len() as u64) as usize], rng, out)?;
        }
    }
    Some(())
}

/// A matching line with its context: (line number, lowest matching
/// pattern, text, lines before, lines after).
pub type Hit = (i64, usize, String, Vec<String>, Vec<String>);

/// Per pane with hits: (key, hits with `context` lines either side).
pub fn oracle_with_context(
    patterns: &[String],
    regex: bool,
    match_case: bool,
    captures: &[Capture],
    context: usize,
) -> Vec<(usize, Vec<Hit>)> {
    let res = oracle_regexes(patterns, regex, match_case);
    let mut out = Vec::new();
    for c in captures {
        let lines = lines(&c.bytes);
        let text = |i: usize| String::from_utf8_lossy(&lines[i]).into_owned();
        let mut hits = Vec::new();
        for (i, line) in lines.iter().enumerate() {
            if let Some(p) = res.iter().position(|r| r.is_match(line)) {
                let before = (i.saturating_sub(context)..i).map(text).collect();
                let after = (i + 1..(i + 1 + context).min(lines.len()))
                    .map(text)
                    .collect();
                hits.push((c.first_line + i as i64, p, text(i), before, after));
            }
        }
        if !hits.is_empty() {
            out.push((c.key, hits));
        }
    }
    out
}

/// The engine's answer in the shape of [`oracle_with_context`].
pub fn engine_view_with_context(outcome: &SearchOutcome) -> Vec<(usize, Vec<Hit>)> {
    outcome
        .panes
        .iter()
        .map(|p| {
            (
                p.key,
                p.lines
                    .iter()
                    .map(|l| {
                        (
                            l.line,
                            l.pattern_index,
                            l.text.clone(),
                            l.before.clone(),
                            l.after.clone(),
                        )
                    })
                    .collect(),
            )
        })
        .collect()
}

/// The seed corpus of fuzz target `target` (fuzz/corpus/TARGET), in name
/// order: each file's path and bytes. Fails the test when it holds fewer
/// than `at_least` seeds.
pub fn seed_corpus(target: &str, at_least: usize) -> Vec<(std::path::PathBuf, Vec<u8>)> {
    let dir = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../fuzz/corpus")
        .join(target);
    let mut entries: Vec<std::path::PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    assert!(
        entries.len() >= at_least,
        "{target}: seed corpus too small: {}",
        entries.len()
    );
    entries
        .into_iter()
        .map(|p| {
            let data = std::fs::read(&p).unwrap();
            (p, data)
        })
        .collect()
}
