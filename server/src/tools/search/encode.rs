//! Encode: a result as the JSON of its answer (structured content and
//! text), each hit line encoded and rendered once. A result too large for
//! its room is cut by counting what each line costs, not by encoding it
//! again: the cut is the one [`cut_to_size`] makes through the registry's
//! rounds (the same lines go, the same flags are set), so the answer is
//! byte for byte the one the registry's own encoder would write.

use super::render::{pane_place, push_hit, summary_of, Style, MORE_LINES};
use super::shape::{cut_to_size, keep_places};
use super::types::{PaneHits, SearchPanesResult};
use super::{text_notes, SearchPanes};
use crate::tools::json_str_len;
use crate::tools::registry::{self, ToolOutput, MAX_FIT_ROUNDS};

/// What a result's structured JSON starts with when its page is empty:
/// the rest of the result follows.
const EMPTY_MATCHES: &str = r#"{"matches":[]"#;

/// What ends a pane's JSON after its lines, less the flag's value.
const LINES_END: &str = r#"],"lines_truncated":"#;

/// Encodes `result` in at most `room` bytes (see [`registry::Tool::encode`]).
pub(super) fn encode(result: SearchPanesResult, room: usize) -> Result<ToolOutput, usize> {
    // A search across time (times on lines, the journal's own lines) is
    // encoded whole and cut in rounds.
    let across = !result.journal_matches.is_empty()
        || !result.journal_gaps.is_empty()
        || !result.journal_skipped.is_empty()
        || result
            .matches
            .iter()
            .any(|p| p.lines.iter().any(|l| l.time.is_some()));
    if result.groups.is_some() || across {
        // A page of groups is small: encoded whole, cut group by group.
        return registry::encode_within::<SearchPanes>(result, room);
    }
    match Encoded::new(result) {
        Some(encoded) => encoded.fit(room),
        None => Err(0),
    }
}

/// The page's JSON and text, written once in page order; what a pane
/// holds in them.
#[derive(Default)]
struct Buffers {
    /// `{"matches":[` and each pane's JSON with its own flag, commas
    /// between: the structured result up to the end of its page.
    json: Vec<u8>,
    /// `"` and each pane's lines rendered and escaped, then its note when
    /// it came marked truncated: the text up to its notes and summary.
    text: Vec<u8>,
    /// Reused for escaping each line.
    scratch: Vec<u8>,
    rendered: String,
}

/// One pane of the page: where its pieces lie in the [`Buffers`].
struct Pane {
    /// The pane, its lines taken out.
    hits: PaneHits,
    /// Its JSON starts here; its lines start at `lines_start` (after
    /// `"lines":[`) and line i ends at `json_ends[i]`.
    json_start: usize,
    lines_start: usize,
    json_ends: Vec<usize>,
    /// Its text starts here; line i ends at `text_ends[i]`.
    text_start: usize,
    text_ends: Vec<usize>,
    /// Secrets replaced in line i.
    redactions: Vec<u64>,
    /// `PLACE (more matching lines not shown)`, escaped.
    note: Vec<u8>,
}

impl Pane {
    /// Writes `hits` at the end of `out`.
    fn write(mut hits: PaneHits, out: &mut Buffers) -> Option<Pane> {
        let lines = std::mem::take(&mut hits.lines);
        let whole = serde_json::to_string(&hits).ok()?;
        let end = format!("[{LINES_END}{}}}", hits.lines_truncated);
        let head = whole.strip_suffix(&end)?;
        let place = pane_place(&hits, &Style::PLAIN);
        let mut note = Vec::new();
        escape_into(&mut note, &format!("{place}{MORE_LINES}"), &mut out.scratch)?;
        let json_start = out.json.len();
        out.json.extend_from_slice(head.as_bytes());
        out.json.push(b'[');
        let mut pane = Pane {
            json_start,
            lines_start: out.json.len(),
            json_ends: Vec::with_capacity(lines.len()),
            text_start: out.text.len(),
            text_ends: Vec::with_capacity(lines.len()),
            redactions: Vec::with_capacity(lines.len()),
            note,
            hits,
        };
        for line in &lines {
            if !pane.json_ends.is_empty() {
                out.json.push(b',');
            }
            serde_json::to_writer(&mut out.json, line).ok()?;
            pane.json_ends.push(out.json.len());
            out.rendered.clear();
            push_hit(&mut out.rendered, &place, line, &Style::PLAIN);
            escape_into(&mut out.text, &out.rendered, &mut out.scratch)?;
            pane.text_ends.push(out.text.len());
            pane.redactions.push(line.redactions as u64);
        }
        out.json.extend_from_slice(LINES_END.as_bytes());
        out.json.extend_from_slice(flag(pane.hits.lines_truncated));
        if pane.hits.lines_truncated {
            out.text.extend_from_slice(&pane.note);
        }
        pane.hits.lines = lines;
        Some(pane)
    }

    fn len(&self) -> usize {
        self.json_ends.len()
    }

    /// Where the JSON of the pane's first `kept` lines ends.
    fn json_end(&self, kept: usize) -> usize {
        kept.checked_sub(1)
            .map_or(self.lines_start, |last| self.json_ends[last])
    }

    /// Where the text of the pane's first `kept` lines ends.
    fn text_end(&self, kept: usize) -> usize {
        kept.checked_sub(1)
            .map_or(self.text_start, |last| self.text_ends[last])
    }

    /// What dropping line `i` saves, as [`cut_to_size`] counts it: its
    /// JSON, a comma, its rendering escaped.
    fn cost(&self, i: usize) -> usize {
        let json_start = i
            .checked_sub(1)
            .map_or(self.lines_start, |b| self.json_ends[b] + 1);
        let text_start = self.text_end(i);
        (self.json_ends[i] - json_start) + 1 + (self.text_ends[i] - text_start)
    }

    /// Is the pane marked as showing fewer lines than matched, with
    /// `kept` of its lines?
    fn truncated(&self, kept: usize) -> bool {
        self.hits.lines_truncated || kept < self.len()
    }

    /// Its JSON's length with `kept` lines.
    fn json_len(&self, kept: usize) -> usize {
        self.json_end(kept) - self.json_start + flag(self.truncated(kept)).len() + LINES_END.len()
    }

    /// Its text's length, escaped, with `kept` lines.
    fn text_len(&self, kept: usize) -> usize {
        let note = if self.truncated(kept) {
            self.note.len()
        } else {
            0
        };
        self.text_end(kept) - self.text_start + note
    }
}

/// A pane's `lines_truncated` value and the brace that closes it.
fn flag(truncated: bool) -> &'static [u8] {
    if truncated {
        b"true}"
    } else {
        b"false}"
    }
}

/// A result with its lines encoded once; `kept` lines of the page (in
/// page order) are what an answer shows.
struct Encoded {
    /// The result, its page taken out.
    rest: SearchPanesResult,
    panes: Vec<Pane>,
    buffers: Buffers,
    /// Lines in the page.
    total: usize,
    /// The lines just above the summary (since notes, the cursor), for
    /// the whole page and for a cut one (which gives another cursor:
    /// [`keep_places`]).
    notes: String,
    notes_if_cut: String,
}

/// How much of the page an answer shows, and what the cut changed.
#[derive(Clone, Copy)]
struct Cut {
    kept: usize,
    redactions: u64,
    matches_truncated: bool,
}

impl Encoded {
    fn new(mut result: SearchPanesResult) -> Option<Encoded> {
        let matches = std::mem::take(&mut result.matches);
        let lines: usize = matches.iter().map(|p| p.lines.len()).sum();
        let mut buffers = Buffers {
            json: Vec::with_capacity(1024 + 160 * lines),
            text: Vec::with_capacity(1024 + 160 * lines),
            ..Buffers::default()
        };
        buffers
            .json
            .extend_from_slice(&EMPTY_MATCHES.as_bytes()[..EMPTY_MATCHES.len() - 1]);
        buffers.text.push(b'"');
        let mut panes = Vec::with_capacity(matches.len());
        for (i, hits) in matches.into_iter().enumerate() {
            if i > 0 {
                buffers.json.push(b',');
            }
            panes.push(Pane::write(hits, &mut buffers)?);
        }
        let mut cut = result.clone();
        keep_places(&mut cut);
        Some(Encoded {
            total: lines,
            notes: text_notes(&result),
            notes_if_cut: text_notes(&cut),
            rest: result,
            panes,
            buffers,
        })
    }

    /// The notes above the summary when `cut` is shown.
    fn notes(&self, cut: Cut) -> &str {
        if cut.kept < self.total {
            &self.notes_if_cut
        } else {
            &self.notes
        }
    }

    fn whole(&self) -> Cut {
        Cut {
            kept: self.total,
            redactions: self.rest.redactions,
            matches_truncated: self.rest.matches_truncated,
        }
    }

    /// The lines each pane keeps when `kept` lines of the page are shown.
    fn kept_per_pane(&self, kept: usize) -> impl Iterator<Item = (&Pane, usize)> + '_ {
        let mut left = kept;
        self.panes.iter().map(move |pane| {
            let n = pane.len().min(left);
            left -= n;
            (pane, n)
        })
    }

    /// The result less its page, as `cut` leaves it: its JSON (from just
    /// after the empty page on) and its summary line.
    fn rest(&self, cut: Cut) -> Option<(String, String)> {
        let mut rest = self.rest.clone();
        rest.redactions = cut.redactions;
        rest.matches_truncated = cut.matches_truncated;
        if cut.kept < self.total {
            keep_places(&mut rest);
        }
        let json = serde_json::to_string(&rest).ok()?;
        let tail = json.strip_prefix(EMPTY_MATCHES)?.to_owned();
        Some((tail, summary_of(&rest, cut.kept, self.panes.len())))
    }

    /// The bytes the answer takes with `cut`.
    fn size(&self, cut: Cut) -> Option<usize> {
        let (tail, summary) = self.rest(cut)?;
        // `{"matches":[`, the panes and their commas, `]`, the rest.
        let mut size = EMPTY_MATCHES.len() + tail.len() + self.panes.len().saturating_sub(1);
        for (pane, kept) in self.kept_per_pane(cut.kept) {
            size += pane.json_len(kept) + pane.text_len(kept);
        }
        // The text's quotes, the notes and the summary, escaped.
        Some(size + 2 + json_str_len(self.notes(cut)) + json_str_len(&summary))
    }

    /// Drops the last shown line: what its cut saves, or `None` when no
    /// line is shown.
    fn drop_line(&self, cut: &mut Cut) -> Option<usize> {
        let last = cut.kept.checked_sub(1)?;
        let (mut pane, mut i) = (0, last);
        while i >= self.panes[pane].len() {
            i -= self.panes[pane].len();
            pane += 1;
        }
        cut.kept = last;
        cut.matches_truncated = true;
        cut.redactions = cut
            .redactions
            .saturating_sub(self.panes[pane].redactions[i]);
        Some(self.panes[pane].cost(i))
    }

    /// The registry's rounds, counted instead of encoded: each round
    /// drops lines from the end until what they cost covers the excess.
    fn fit(self, room: usize) -> Result<ToolOutput, usize> {
        let mut cut = self.whole();
        for round in 0..MAX_FIT_ROUNDS {
            let size = self.size(cut).ok_or(0usize)?;
            if size <= room {
                return self.write(cut).ok_or(0);
            }
            let excess = size - room;
            let mut saved = 0;
            while saved < excess {
                match self.drop_line(&mut cut) {
                    Some(cost) => saved += cost,
                    // No line left: whole panes go, as the registry's
                    // own cut drops them, for the rounds that remain.
                    None => return self.fit_without_lines(cut, room, excess - saved, round, size),
                }
            }
        }
        Err(self.size(cut).unwrap_or(0))
    }

    /// Goes on from `cut` (no line shown) with [`cut_to_size`] and the
    /// registry's rounds: what is left of round `round` after the lines
    /// saved all but `excess` bytes of a `size`-byte answer.
    fn fit_without_lines(
        self,
        cut: Cut,
        room: usize,
        excess: usize,
        round: usize,
        size: usize,
    ) -> Result<ToolOutput, usize> {
        let lines_dropped = cut.kept < self.total;
        let mut result = self.into_result(cut);
        if lines_dropped {
            keep_places(&mut result);
        }
        if !(cut_to_size(&mut result, excess) || lines_dropped) {
            return Err(size);
        }
        registry::fit_in_rounds::<SearchPanes>(result, room, MAX_FIT_ROUNDS - round - 1)
    }

    /// The result as `cut` leaves it.
    fn into_result(self, cut: Cut) -> SearchPanesResult {
        let mut result = self.rest;
        result.redactions = cut.redactions;
        result.matches_truncated = cut.matches_truncated;
        let mut left = cut.kept;
        result.matches = self
            .panes
            .into_iter()
            .map(|pane| {
                let kept = pane.len().min(left);
                left -= kept;
                let mut hits = pane.hits;
                hits.lines_truncated |= kept < hits.lines.len();
                hits.lines.truncate(kept);
                hits
            })
            .collect();
        result
    }

    /// The answer with `cut`. Uncut, the buffers are the answer as they
    /// stand; cut, each piece kept is copied once into its place.
    fn write(self, cut: Cut) -> Option<ToolOutput> {
        let (tail, summary) = self.rest(cut)?;
        let notes = self.notes(cut).to_owned();
        let Buffers {
            mut json,
            mut text,
            mut scratch,
            ..
        } = if cut.kept == self.total {
            self.buffers
        } else {
            self.write_cut(cut)
        };
        json.push(b']');
        json.extend_from_slice(tail.as_bytes());
        escape_into(&mut text, &notes, &mut scratch)?;
        escape_into(&mut text, &summary, &mut scratch)?;
        text.push(b'"');
        Some(ToolOutput {
            structured: String::from_utf8(json).ok()?,
            text: String::from_utf8(text).ok()?,
        })
    }

    /// The page with `cut`, from the pieces of the whole one.
    fn write_cut(&self, cut: Cut) -> Buffers {
        let (json, text) = (&self.buffers.json, &self.buffers.text);
        let mut out = Buffers {
            json: Vec::with_capacity(json.len()),
            text: Vec::with_capacity(text.len()),
            ..Buffers::default()
        };
        out.json
            .extend_from_slice(&json[..self.panes.first().map_or(json.len(), |p| p.json_start)]);
        out.text.push(b'"');
        for (i, (pane, kept)) in self.kept_per_pane(cut.kept).enumerate() {
            if i > 0 {
                out.json.push(b',');
            }
            out.json
                .extend_from_slice(&json[pane.json_start..pane.json_end(kept)]);
            out.json.extend_from_slice(LINES_END.as_bytes());
            out.json.extend_from_slice(flag(pane.truncated(kept)));
            out.text
                .extend_from_slice(&text[pane.text_start..pane.text_end(kept)]);
            if pane.truncated(kept) {
                out.text.extend_from_slice(&pane.note);
            }
        }
        out
    }
}

/// Appends `text` as it reads inside a JSON string, as serde_json
/// escapes it (through `scratch`, which it reuses).
fn escape_into(out: &mut Vec<u8>, text: &str, scratch: &mut Vec<u8>) -> Option<()> {
    scratch.clear();
    serde_json::to_writer(&mut *scratch, text).ok()?;
    out.extend_from_slice(scratch.get(1..scratch.len() - 1)?);
    Some(())
}

#[cfg(test)]
mod tests {
    use super::super::golden::cases;
    use super::*;

    /// The registry's encoder and this one, on the same result and room.
    fn both(result: &SearchPanesResult, room: usize) -> [Result<(String, String), usize>; 2] {
        let pair = |out: ToolOutput| (out.structured, out.text);
        [
            registry::encode_within::<SearchPanes>(result.clone(), room).map(pair),
            encode(result.clone(), room).map(pair),
        ]
    }

    #[test]
    fn every_room_gets_the_answer_the_registry_would_write() {
        for (name, result, _) in cases() {
            let whole = match both(&result, usize::MAX) {
                [Ok(a), Ok(b)] => {
                    assert_eq!(a, b, "{name}: whole");
                    a.0.len() + a.1.len()
                }
                other => panic!("{name}: {other:?}"),
            };
            let step = (whole / 400).max(1);
            for room in (0..=whole + 1).rev().step_by(step) {
                let [want, got] = both(&result, room);
                assert_eq!(want, got, "{name}, room {room}");
            }
        }
    }
}
