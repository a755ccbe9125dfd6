//! Group: `group_by` folds the matching lines of every pane into groups of
//! equal lines, largest first, so one traceback printed in 40 panes is one
//! answer of 40, not 40 answers.
//!
//! Two lines are equal under `text` when they are equal after their trailing
//! spaces are trimmed. Under `shape` they are equal when their
//! [`shape_key`]s are: every number-like word becomes `#`, so `worker 17
//! failed at 0x3fa0` and `worker 3 failed at 0x1b20` fold.
//!
//! Groups are ordered by count, largest first; groups of one count keep the
//! order of their first line (panes in search order, session, window and
//! pane index, then line), so the same panes give the same page every time.

use std::collections::HashMap;

use super::types::{GroupBy, GroupFirst, HitGroup, PaneHits};

/// The folding key of `text` under `by`.
pub(super) fn key(text: &str, by: GroupBy) -> String {
    let trimmed = text.trim_end_matches(' ');
    match by {
        GroupBy::Text => trimmed.to_owned(),
        GroupBy::Shape => shape_key(trimmed),
    }
}

/// A hex word shorter than this keeps its letters (`e4`, `abc1`: likely
/// words); from here on a hex word with a digit is a number.
const MIN_HEX_WORD: usize = 4;

/// `text` with every number-like word replaced by `#`. A word is a run of
/// ASCII letters and digits; it is a number when it is
/// - `0x` or `0X` followed by hex digits (`0x3fa0`), or
/// - at least four hex digits with at least one decimal digit among them
///   (git hashes `a1b2c3d`, UUID groups `e29b`, `446655440000`);
///
/// in any other word each run of decimal digits becomes `#` (`v1.2.3` is
/// `v#.#.#`, `sha256` is `sha#`). Hex words without a digit (`deadbeef`,
/// `added`) are words. Everything else, non-ASCII included (full-width
/// digits are not ASCII digits), is kept as it is.
pub(super) fn shape_key(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find(|c: char| c.is_ascii_alphanumeric()) {
        out.push_str(&rest[..start]);
        let word_len = rest[start..]
            .find(|c: char| !c.is_ascii_alphanumeric())
            .unwrap_or(rest.len() - start);
        push_word(&mut out, &rest[start..start + word_len]);
        rest = &rest[start + word_len..];
    }
    out.push_str(rest);
    out
}

fn push_word(out: &mut String, word: &str) {
    let is_hex = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_hexdigit());
    let prefixed_hex = word
        .strip_prefix("0x")
        .or_else(|| word.strip_prefix("0X"))
        .is_some_and(is_hex);
    let hex_number =
        word.len() >= MIN_HEX_WORD && is_hex(word) && word.bytes().any(|b| b.is_ascii_digit());
    if prefixed_hex || hex_number {
        out.push('#');
        return;
    }
    let mut in_digits = false;
    for c in word.chars() {
        if c.is_ascii_digit() {
            if !in_digits {
                out.push('#');
            }
            in_digits = true;
        } else {
            out.push(c);
            in_digits = false;
        }
    }
}

/// The groups of every matching line of `hits` (in search order), largest
/// first.
pub(super) fn groups(hits: &[PaneHits], by: GroupBy) -> Vec<HitGroup> {
    let mut groups: Vec<HitGroup> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    for pane in hits {
        for line in &pane.lines {
            let slot = *index.entry(key(&line.text, by)).or_insert_with(|| {
                groups.push(HitGroup {
                    text: line.text.trim_end_matches(' ').to_owned(),
                    count: 0,
                    panes: Vec::new(),
                    first: GroupFirst {
                        pane_id: pane.pane_id,
                        line: line.line,
                    },
                });
                groups.len() - 1
            });
            let group = &mut groups[slot];
            group.count += 1;
            if group.panes.last() != Some(&pane.pane_id) {
                group.panes.push(pane.pane_id);
            }
        }
    }
    // A stable sort keeps first-seen order among equal counts.
    groups.sort_by_key(|g| std::cmp::Reverse(g.count));
    groups
}

#[cfg(test)]
mod tests {
    use super::super::types::fixtures::hit;
    use super::*;

    #[test]
    fn shape_folds_numbers_hex_and_hashes() {
        let k = shape_key;
        assert_eq!(
            k("worker 17 failed at 0x3fa0"),
            k("worker 3 failed at 0x1b20")
        );
        assert_eq!(k("worker 17 failed at 0x3fa0"), "worker # failed at #");
        // Git hashes, short and long, and UUIDs.
        assert_eq!(k("HEAD is now at a1b2c3d fix"), "HEAD is now at # fix");
        assert_eq!(
            k("commit 3f2a9c1d8e7b6a5f4e3d2c1b0a9f8e7d6c5b4a39"),
            "commit #"
        );
        assert_eq!(k("id 550e8400-e29b-41d4-a716-446655440000"), "id #-#-#-#-#");
        // Versions keep their dots; words keep their letters.
        assert_eq!(k("v1.2.3 and v10.0.12"), "v#.#.# and v#.#.#");
        assert_eq!(k("sha256 x86_64"), "sha# x#_#");
        // Hex words without a digit, and short ones, are words.
        assert_eq!(k("deadbeef added cafe e4"), "deadbeef added cafe e#");
        // A bare 0x is not a hex number: its digit folds, its x stays.
        assert_eq!(k("0x"), "#x");
        // Non-ASCII is kept; full-width digits are not folded.
        assert_eq!(k("ошибка 42 — 全角１２ 日本3"), "ошибка # — 全角１２ 日本#");
    }

    #[test]
    fn groups_count_lines_name_panes_once_and_sort_stably() {
        let mut a = hit(1, 3, 1);
        let mut b = hit(2, 2, 1);
        for (l, t) in a.lines.iter_mut().zip(["boom  ", "x", "boom"]) {
            l.text = t.into();
        }
        for (l, t) in b.lines.iter_mut().zip(["y", "x"]) {
            l.text = t.into();
        }
        let g = groups(&[a, b], GroupBy::Text);
        let summary: Vec<(&str, usize, Vec<u32>)> = g
            .iter()
            .map(|g| {
                let panes = g.panes.iter().map(|p| p.number()).collect();
                (g.text.as_str(), g.count, panes)
            })
            .collect();
        assert_eq!(
            summary,
            [
                ("boom", 2, vec![1]),
                ("x", 2, vec![1, 2]),
                ("y", 1, vec![2])
            ]
        );
        assert_eq!((g[1].first.pane_id.number(), g[1].first.line), (1, 1));
    }
}
