//! One ASCII literal matched case-insensitively on the text as it is.
//!
//! Case-insensitive automata cannot use a SIMD prefilter, and lowering the
//! text first costs a copy of every capture. Instead a short window of the
//! literal (at most [`WINDOW`] bytes, so at most 8 spellings) is spelt in
//! every ASCII case and handed to aho-corasick's packed searcher (Teddy),
//! which looks for all the spellings at once over the raw text; each
//! candidate is confirmed by comparing the whole literal, ignoring ASCII
//! case. This is how ripgrep runs such a literal (regex's literal prefilter
//! over case variants), and it reads each byte once.

use aho_corasick::packed;
use aho_corasick::Span;

/// The longest window spelt in every case: 3 letters give 8 spellings,
/// which Teddy's smallest (fastest) form holds.
const WINDOW: usize = 3;

/// A literal and the Teddy searcher of its window's spellings.
#[derive(Clone, Debug)]
pub(super) struct CaseVariants {
    /// The literal, ASCII letters lowered.
    needle: Vec<u8>,
    /// Where the window starts in the literal.
    offset: usize,
    teddy: packed::Searcher,
}

impl CaseVariants {
    /// The searcher for `literal` (ASCII), or `None` where Teddy is not
    /// available (no SIMD on this machine) or the literal is empty.
    pub(super) fn new(literal: &str) -> Option<CaseVariants> {
        if literal.is_empty() || !literal.is_ascii() {
            return None;
        }
        let needle = literal.as_bytes().to_ascii_lowercase();
        let len = WINDOW.min(needle.len());
        let offset = (0..=needle.len() - len)
            .min_by_key(|&at| window_cost(&needle[at..at + len]))
            .unwrap_or(0);
        let teddy = packed::Config::new()
            .match_kind(packed::MatchKind::LeftmostFirst)
            .builder()
            .extend(spellings(&needle[offset..offset + len]))
            .build()?;
        Some(CaseVariants {
            needle,
            offset,
            teddy,
        })
    }

    /// The first match starting at or after `start`: its (start, end).
    pub(super) fn find(&self, haystack: &[u8], start: usize) -> Option<(usize, usize)> {
        let mut at = start;
        while at <= haystack.len() {
            let candidate = self
                .teddy
                .find_in(haystack, Span::from(at..haystack.len()))?
                .start();
            if let Some(begin) = candidate.checked_sub(self.offset) {
                let end = begin + self.needle.len();
                if begin >= start
                    && haystack
                        .get(begin..end)
                        .is_some_and(|text| text.eq_ignore_ascii_case(&self.needle))
                {
                    return Some((begin, end));
                }
            }
            at = candidate + 1;
        }
        None
    }

    /// Heap memory used.
    pub(super) fn memory_usage(&self) -> usize {
        self.needle.len() + self.teddy.memory_usage()
    }
}

/// Every ASCII-case spelling of `window` (lowered): 2 per letter.
fn spellings(window: &[u8]) -> Vec<Vec<u8>> {
    let mut all = vec![Vec::with_capacity(window.len())];
    for &b in window {
        let upper = b.to_ascii_uppercase();
        let mut next = Vec::with_capacity(all.len() * 2);
        for spelling in &all {
            let mut lower = spelling.clone();
            lower.push(b);
            next.push(lower);
            if upper != b {
                let mut up = spelling.clone();
                up.push(upper);
                next.push(up);
            }
        }
        all = next;
    }
    all
}

/// How often a window is expected to turn up in terminal text, roughly: the
/// window with the lowest cost gives Teddy the fewest false candidates.
/// Letters count by their frequency in English (and cost twice, for their
/// two spellings); a space, a vowel or a common letter cost most.
fn window_cost(window: &[u8]) -> u32 {
    const BY_FREQUENCY: &[u8] = b"etaoinsrhldcumfpgwybvkxjqz";
    window
        .iter()
        .map(|&b| match BY_FREQUENCY.iter().position(|&l| l == b) {
            Some(rank) => 2 * (40 - rank as u32),
            None if b == b' ' => 100,
            None if b.is_ascii_digit() => 30,
            None => 10,
        })
        .sum()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn spellings_cover_every_case_once() {
        let mut got = spellings(b"a1b");
        got.sort();
        assert_eq!(
            got,
            vec![
                b"A1B".to_vec(),
                b"A1b".to_vec(),
                b"a1B".to_vec(),
                b"a1b".to_vec()
            ]
        );
    }

    #[test]
    fn finds_each_match_in_any_case_from_start() {
        let Some(v) = CaseVariants::new("Error") else {
            return; // no SIMD here: the matcher lowers the text instead
        };
        let hay = b"error ERROR eRrOr erro";
        assert_eq!(v.find(hay, 0), Some((0, 5)));
        assert_eq!(v.find(hay, 1), Some((6, 11)));
        assert_eq!(v.find(hay, 7), Some((12, 17)));
        assert_eq!(v.find(hay, 13), None);
        assert_eq!(v.find(hay, hay.len()), None);
    }

    #[test]
    fn a_window_inside_the_literal_does_not_find_a_match_before_start() {
        // The rarest window of "ooxyz" is at its end; a match that begins
        // before `start` while its window lies after must not be returned.
        let Some(v) = CaseVariants::new("ooxyz") else {
            return;
        };
        assert!(v.offset > 0);
        let hay = b"ooxyz ooXYZ";
        assert_eq!(v.find(hay, 1), Some((6, 11)));
    }
}
