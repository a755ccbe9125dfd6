//! The delta plan and splice: which stored lines a partial capture may
//! extend, and the checks that the stored lines are still the pane's.

use std::ops::Range;
use std::sync::Arc;

use super::freshness::Fingerprint;
use super::text::{range_rows, PaneText};
use super::{ANCHOR_ROWS, RACE_ROWS};
use crate::tmux::rows::trim_step;
use crate::tmux::{CaptureRange, CaptureRequest, CapturedText};

/// Rows the capture of the oldest stored lines reaches above them, for
/// output between the caller's listing and the capture (which moves
/// every row asked for down): fewer than the delta's [`RACE_ROWS`], since
/// every delta of a pane printing pays them again, and a race longer
/// than this only costs a full capture of the pane.
const TOP_RACE_ROWS: i64 = 32;

/// What a pane needs this time.
#[derive(Debug)]
pub(super) enum Decision {
    /// Served from these stored lines (copied out on the worker thread,
    /// while the engine scans the panes before).
    Reuse(Arc<PaneText>),
    Delta(DeltaPlan),
    Full,
}

/// A delta fetch: which stored lines anchor it, what to ask tmux.
#[derive(Debug)]
pub(super) struct DeltaPlan {
    pub(super) old: Arc<PaneText>,
    /// First anchor line (index into `old`).
    pub(super) anchor: usize,
    /// The stored lines `0..top_lines` are captured again (up to row
    /// `top_rows`) and must be unchanged; `None` when the anchor is the
    /// first stored line.
    pub(super) top: Option<(usize, u64)>,
    pub(super) request: CaptureRequest,
    pub(super) top_request: Option<CaptureRequest>,
    /// The pane's history limit (a trim moves rows by a tenth of it).
    pub(super) history_limit: u64,
}

/// The delta fetch for a pane whose entry may still hold, or `None` when
/// only a full fetch can be trusted.
pub(super) fn delta_plan(
    old: &Arc<PaneText>,
    request: &CaptureRequest,
    print: &Fingerprint,
) -> Option<DeltaPlan> {
    let complete = old.history_complete();
    if complete == 0 {
        return None;
    }
    // The anchor: the last history-complete lines, at least ANCHOR_ROWS rows.
    let end_row = old.rows[complete];
    let anchor = (0..complete)
        .rev()
        .find(|&i| end_row - old.rows[i] >= ANCHOR_ROWS)
        .unwrap_or(0);
    let anchor_row = old.rows[anchor];
    let hsize = print.history_size;
    if anchor_row > hsize {
        return None; // History shrank below the anchor: cleared or resized.
    }
    // The request must start at or below where the stored lines start,
    // else only a full fetch has the lines.
    let first = old.first_abs()?;
    let (wanted, _) = range_rows(request.range, hsize, print.height);
    if wanted < first {
        return None;
    }
    // RACE_ROWS more rows above the anchor, so output racing between the
    // inventory and the capture leaves the anchor inside the capture.
    let start = i64::try_from(anchor_row).ok()? - i64::try_from(hsize).ok()? - RACE_ROWS;
    let delta_request = CaptureRequest {
        pane: request.pane,
        range: CaptureRange::Lines {
            start,
            end: i64::from(print.height.max(1)) - 1,
        },
    };
    if trim_step(print.history_limit, hsize).is_some() && first != 0 {
        return None;
    }
    // The oldest stored lines covering ANCHOR_ROWS rows are captured again
    // (none when the anchor is the first stored line: then no stored line
    // is kept).
    let (top, top_request) = if anchor == 0 {
        (None, None)
    } else {
        let top_end = (first + ANCHOR_ROWS).min(end_row);
        let lines = (1..=complete).find(|&j| old.rows[j] >= top_end)?;
        let rows = old.rows[lines];
        let top_request = CaptureRequest {
            pane: request.pane,
            range: CaptureRange::Lines {
                start: i64::try_from(first).ok()? - i64::try_from(hsize).ok()? - TOP_RACE_ROWS,
                end: i64::try_from(rows).ok()? - 1 - i64::try_from(hsize).ok()?,
            },
        };
        (Some((lines, rows)), Some(top_request))
    };
    Some(DeltaPlan {
        old: old.clone(),
        anchor,
        top,
        request: delta_request,
        top_request,
        history_limit: print.history_limit,
    })
}

/// The stored lines above the anchor plus the fresh capture, or `None`
/// when anything does not match or the match could be at another offset.
pub(super) fn splice(
    plan: &DeltaPlan,
    top: Option<&CapturedText>,
    fresh: &CapturedText,
    join_wrapped: bool,
) -> Option<PaneText> {
    let old = &plan.old;
    if fresh.joined != join_wrapped
        || fresh.pane_width != old.width
        || fresh.pane_height != old.height
    {
        return None;
    }
    let new = PaneText::from_capture(fresh)?;
    // The anchor came back at the row it was stored at (the capture starts
    // at or above it; the lines before it are dropped)...
    let anchor_row = old.rows[plan.anchor];
    let skip = new.rows.binary_search(&anchor_row).ok()?;
    // ... byte for byte and line for line, and the next line starts where
    // it did.
    let complete = old.history_complete();
    for (k, i) in (plan.anchor..complete).enumerate() {
        if new.rows.get(skip + k) != Some(&old.rows[i]) || new.line(skip + k) != old.line(i) {
            return None;
        }
    }
    if new.rows.get(skip + complete - plan.anchor) != Some(&old.rows[complete]) {
        return None;
    }
    // So did the lines fetched above it. When they reach the first stored
    // line, every stored line kept is the pane's own: nothing to doubt.
    let verified = verified_above(old, plan.anchor, &new, skip)?;
    if verified > 0 {
        // Otherwise stored lines are kept unseen, on the word of rows that
        // match where they were stored: they must match nowhere else.
        let top = checked_top(plan, top, fresh, join_wrapped)?;
        if anchor_ambiguous(old, verified..complete, plan.anchor, &new, skip, &top) {
            return None;
        }
        let history = fresh.history_size.max(top.history_size);
        if let Some(step) = trim_step(plan.history_limit, history) {
            if trim_could_explain(old, complete, &[&top, &new], step) {
                return None;
            }
        }
    }
    let keep_bytes = old.starts[plan.anchor];
    let from = new.starts[skip];
    let mut bytes = Vec::with_capacity(keep_bytes + new.bytes.len() - from);
    bytes.extend_from_slice(&old.bytes[..keep_bytes]);
    bytes.extend_from_slice(&new.bytes[from..]);
    let mut starts = old.starts[..plan.anchor].to_vec();
    starts.extend(new.starts[skip..].iter().map(|s| s - from + keep_bytes));
    let mut rows = old.rows[..plan.anchor].to_vec();
    rows.extend_from_slice(&new.rows[skip..]);
    Some(PaneText {
        history_size: fresh.history_size,
        width: fresh.pane_width,
        height: fresh.pane_height,
        bytes: bytes.into(),
        starts,
        rows,
    })
}

/// Compares the lines a delta fetched above the anchor (`new[..skip]`)
/// with the stored lines at the same rows, upwards from the anchor. The
/// index of the first stored line reached (0: all of them), or `None` when
/// one differs.
pub(super) fn verified_above(
    old: &PaneText,
    anchor: usize,
    new: &PaneText,
    skip: usize,
) -> Option<usize> {
    // A capture's first line may be cut (a joined line entered part way)
    // or coloured differently (escapes carry attributes from the line
    // before): it is compared only with a stored first line, which was
    // captured from the same row.
    let from = usize::from(new.rows.first() != old.rows.first());
    let (mut i, mut j) = (anchor, skip);
    while i > 0 && j > from {
        if new.rows[j - 1] != old.rows[i - 1] || new.line(j - 1) != old.line(i - 1) {
            return None;
        }
        i -= 1;
        j -= 1;
    }
    Some(i)
}

/// The oldest stored lines as captured again, when they are unchanged at
/// the same rows. The capture starts up to [`TOP_RACE_ROWS`] above them (at
/// the top of history when they start there): output between the
/// caller's listing and the capture moves every row the plan asked for
/// down by what it printed, and the oldest stored row is looked for in it.
pub(super) fn checked_top(
    plan: &DeltaPlan,
    top: Option<&CapturedText>,
    fresh: &CapturedText,
    join_wrapped: bool,
) -> Option<PaneText> {
    let (lines, _rows) = plan.top?;
    let top = top?;
    let old = &plan.old;
    if top.history_size != fresh.history_size || top.joined != join_wrapped {
        return None;
    }
    let captured = PaneText::from_capture(top)?;
    let at = captured.rows.binary_search(&old.first_abs()?).ok()?;
    let top_text = captured.lines(at, at.checked_add(lines)?)?;
    (top_text.bytes[..] == old.bytes[..old.starts[lines]]
        && top_text.rows.as_slice() == &old.rows[..lines])
        .then_some(top_text)
}

/// Whether the anchor (`old[anchor..compared.end]`, matched at
/// `new[skip]`) also occurs elsewhere in the delta where it could be the
/// stored anchor moved (by a trim, a clear and refill, a resize's reflow).
/// A copy overlapping the matched one is rows repeating within the anchor
/// (blank lines, a line printed over and over, a short cycle); when all
/// the rows compared (`old[compared]`, the anchor and the lines matched
/// above it) repeat the same way, they are a run that matches at any
/// offset and prove nothing. Otherwise a copy is a doubt when shifting the
/// stored text by its distance also explains every other fetched line
/// (the oldest ones, `top`, and the delta).
pub(super) fn anchor_ambiguous(
    old: &PaneText,
    compared: Range<usize>,
    anchor: usize,
    new: &PaneText,
    skip: usize,
    top: &PaneText,
) -> bool {
    let (Some(&anchor_row), Some(&end)) = (old.rows.get(anchor), old.rows.get(compared.end)) else {
        return true;
    };
    let block = &old.bytes[old.starts[anchor]..old.starts[compared.end]];
    let run = &old.bytes[old.starts[compared.start]..old.starts[compared.end]];
    let at = new.starts[skip];
    // A copy that starts inside a line (an empty first line matches the
    // end of any line) is no row the anchor could have moved to.
    let mut copies = other_copies(&new.bytes, block, at)
        .filter_map(|copy| Some((copy, new.starts.binary_search(&copy).ok()?)));
    copies.any(|(copy, line)| {
        let distance = copy.abs_diff(at);
        if distance < block.len() && run[distance..] == run[..run.len() - distance] {
            return true;
        }
        let shift = i128::from(anchor_row) - i128::from(new.rows[line]);
        consistent_at_shift(old, end, &[top, new], shift)
    })
}

/// The byte offsets at which `block` occurs in `haystack`, overlapping
/// occurrences included, but `at`.
pub(super) fn other_copies<'a>(
    haystack: &'a [u8],
    block: &'a [u8],
    at: usize,
) -> impl Iterator<Item = usize> + 'a {
    let finder = memchr::memmem::Finder::new(block);
    let mut from = 0;
    std::iter::from_fn(move || {
        let k = haystack.get(from..).and_then(|h| finder.find(h))?;
        let found = from + k;
        from = found + 1;
        Some(found)
    })
    .filter(move |&found| found != at)
}

/// Whether the pane having trimmed its oldest `step`, `2 * step`, ... rows
/// would also explain the lines `seen` (the top and delta captures), so
/// that their matching the stored lines at the stored rows proves nothing.
/// `complete`: the stored lines that were history (the ones a trim shifts
/// unchanged).
pub(super) fn trim_could_explain(
    old: &PaneText,
    complete: usize,
    seen: &[&PaneText],
    step: u64,
) -> bool {
    let (Some(first), Some(&end)) = (old.first_abs(), old.rows.get(complete)) else {
        return true;
    };
    let mut shift = step;
    while shift < end - first {
        if consistent_at_shift(old, end, seen, i128::from(shift)) {
            return true;
        }
        shift += step;
    }
    false
}

/// Whether every line in `seen` that was stored history `shift` rows
/// further down (up when negative; rows before `end`) equals that stored
/// line, and at least one was compared.
pub(super) fn consistent_at_shift(
    old: &PaneText,
    end: u64,
    seen: &[&PaneText],
    shift: i128,
) -> bool {
    let Some(first) = old.first_abs() else {
        return false;
    };
    let mut compared = 0;
    for text in seen {
        // A capture's first line may be cut or coloured differently (see
        // verified_above): not compared.
        for j in 1..text.rows.len() {
            let Ok(row) = u64::try_from(i128::from(text.rows[j]) + shift) else {
                continue; // Above row 0: no stored line to compare.
            };
            if row >= end {
                break;
            }
            match old.rows.binary_search(&row) {
                Ok(i) if old.line(i) == text.line(j) => compared += 1,
                Err(_) if row < first => {}
                // Another line, or a line start where the stored text has
                // none.
                _ => return false,
            }
        }
    }
    compared > 0
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use crate::cache::testing::{print, text};
    use crate::tmux::PaneId;

    fn numbered(from: usize, to: usize) -> Vec<u8> {
        (from..to)
            .flat_map(|i| format!("{i}\n").into_bytes())
            .collect()
    }

    #[test]
    fn a_delta_splices_new_lines_after_a_matching_anchor() {
        // 40 history rows + 2 screen rows stored.
        let old = Arc::new(PaneText::from_capture(&text(40, -40, &numbered(0, 42))).unwrap());
        let request = CaptureRequest {
            pane: PaneId::from_number(1),
            range: CaptureRange::AllHistory,
        };
        // 5 more lines printed: history 45.
        let plan = delta_plan(&old, &request, &print(45, 10_000)).unwrap();
        assert_eq!(old.rows[plan.anchor], 8);
        assert_eq!(
            plan.request.range,
            CaptureRange::Lines {
                start: -37 - RACE_ROWS,
                end: 1
            }
        );
        // The oldest stored lines are captured again.
        assert_eq!(
            plan.top_request.clone().unwrap().range,
            CaptureRange::Lines {
                start: -45 - TOP_RACE_ROWS,
                end: -14
            }
        );
        let top = text(45, -45, &numbered(0, 32));
        let fresh = text(45, -37, &numbered(8, 47));
        let spliced = splice(&plan, Some(&top), &fresh, false).unwrap();
        assert_eq!(spliced.bytes, numbered(0, 47)[..]);
        assert_eq!(
            spliced
                .serve(CaptureRange::AllHistory, false)
                .unwrap()
                .bytes,
            numbered(0, 47)[..]
        );
        // A changed anchor row, or one found at another row, is refused.
        let mut bad = numbered(8, 47);
        bad[0] = b'x';
        assert!(splice(&plan, Some(&top), &text(45, -37, &bad), false).is_none());
        let moved = text(46, -37, &numbered(8, 47));
        assert!(splice(&plan, Some(&text(46, -46, &numbered(0, 32))), &moved, false).is_none());
        // The oldest lines captured at another moment (history 46, the
        // same rows read the same) than the delta (history 45): refused.
        let other_moment = text(46, -46, &numbered(0, 32));
        assert!(splice(&plan, Some(&other_moment), &fresh, false).is_none());
        // Captured from above the anchor (as with RACE_ROWS), with 3 more
        // lines printed since the inventory: still spliced exactly.
        let top = text(48, -48, &numbered(0, 32));
        let raced = splice(&plan, Some(&top), &text(48, -45, &numbered(3, 50)), false).unwrap();
        assert_eq!(raced.bytes, numbered(0, 50)[..]);
        assert_eq!(raced.rows, (0..50).collect::<Vec<u64>>());
        let whole = PaneText::from_capture(&text(48, -48, &numbered(0, 50))).unwrap();
        assert_eq!(raced.starts, whole.starts);
        assert_eq!(raced.history_size, 48);
        // A line above the anchor that changed is refused.
        let mut bad = numbered(3, 50);
        bad[2] = b'x';
        assert!(splice(&plan, Some(&top), &text(48, -45, &bad), false).is_none());
    }

    #[test]
    fn the_oldest_lines_are_checked_unless_the_delta_reaches_them() {
        let old = Arc::new(PaneText::from_capture(&text(40, -40, &numbered(0, 42))).unwrap());
        let request = CaptureRequest {
            pane: PaneId::from_number(1),
            range: CaptureRange::AllHistory,
        };
        let plan = delta_plan(&old, &request, &print(45, 50)).unwrap();
        let fresh = text(45, -37, &numbered(8, 47));
        let top = text(45, -45, &numbered(0, 32));
        assert!(splice(&plan, Some(&top), &fresh, false).is_some());
        let shifted = text(45, -45, &numbered(5, 37));
        assert!(splice(&plan, Some(&shifted), &fresh, false).is_none());
        assert!(splice(&plan, None, &fresh, false).is_none());
        // A delta that fetched every stored row needs no other check.
        let whole = text(45, -45, &numbered(0, 47));
        assert_eq!(
            splice(&plan, None, &whole, false).unwrap().bytes,
            numbered(0, 47)[..]
        );
    }

    /// A delta only extends stored lines: a request that starts above
    /// them, or a history that shrank below the anchor (cleared), has no
    /// plan; a request starting at or below the first stored row has one.
    #[test]
    fn no_delta_for_rows_above_the_stored_lines_or_a_history_shrunk_below_the_anchor() {
        // Stored from row 4 (history 40, 2 screen rows); the anchor is row 8.
        let old = Arc::new(PaneText::from_capture(&text(40, -36, &numbered(4, 42))).unwrap());
        let pane = PaneId::from_number(1);
        let all = CaptureRequest {
            pane,
            range: CaptureRange::AllHistory,
        };
        let lines_from = |row: i64| CaptureRequest {
            pane,
            range: CaptureRange::Lines {
                start: row - 45,
                end: 1,
            },
        };
        assert!(delta_plan(&old, &all, &print(45, 10_000)).is_none());
        assert!(delta_plan(&old, &lines_from(3), &print(45, 10_000)).is_none());
        let plan = delta_plan(&old, &lines_from(4), &print(45, 10_000)).unwrap();
        assert_eq!(old.rows[plan.anchor], 8);
        assert!(delta_plan(&old, &lines_from(20), &print(45, 10_000)).is_some());
        // History cleared and 5 rows printed since: below the anchor's row.
        let cleared = Arc::new(PaneText::from_capture(&text(40, -40, &numbered(0, 42))).unwrap());
        assert!(delta_plan(&cleared, &all, &print(45, 10_000)).is_some());
        assert!(delta_plan(&cleared, &all, &print(5, 10_000)).is_none());
    }

    /// A capture of another width, height or wrapping than the stored
    /// lines is refused, each alone (the rows would not be the same rows).
    #[test]
    fn a_capture_of_another_shape_is_not_spliced() {
        let old = Arc::new(PaneText::from_capture(&text(40, -40, &numbered(0, 42))).unwrap());
        let request = CaptureRequest {
            pane: PaneId::from_number(1),
            range: CaptureRange::AllHistory,
        };
        let plan = delta_plan(&old, &request, &print(45, 10_000)).unwrap();
        let top = text(45, -45, &numbered(0, 32));
        let fresh = text(45, -37, &numbered(8, 47));
        assert!(splice(&plan, Some(&top), &fresh, false).is_some());
        let wider = CapturedText {
            pane_width: 11,
            ..fresh.clone()
        };
        let taller = CapturedText {
            pane_height: 3,
            ..fresh.clone()
        };
        let joined = CapturedText {
            joined: true,
            ..fresh.clone()
        };
        assert!(splice(&plan, Some(&top), &wider, false).is_none());
        assert!(splice(&plan, Some(&top), &taller, false).is_none());
        assert!(splice(&plan, Some(&top), &joined, false).is_none());
        assert!(splice(&plan, Some(&top), &fresh, true).is_none());
    }

    /// Stored text of one row per line, `hsize` history rows.
    fn rows_of(hsize: u64, lines: &[String]) -> PaneText {
        let bytes: Vec<u8> = lines
            .iter()
            .flat_map(|l| format!("{l}\n").into_bytes())
            .collect();
        let mut t = text(hsize, -i64::try_from(hsize).unwrap(), &bytes);
        t.pane_height = u32::try_from(lines.len() as u64 - hsize).unwrap();
        PaneText::from_capture(&t).unwrap()
    }

    /// The capture of `text` from absolute row `from`.
    fn captured(text: &PaneText, from: usize, to: usize) -> CapturedText {
        let end = text.starts.get(to).copied().unwrap_or(text.bytes.len());
        CapturedText {
            first_line: from as i64 - text.history_size as i64,
            bytes: text.bytes.slice(text.starts[from]..end),
            line_numbers: None,
            history_size: text.history_size,
            pane_height: text.height,
            pane_width: text.width,
            joined: false,
        }
    }

    /// Plans a delta of `old` for a pane now holding `now` (limit `limit`)
    /// and answers it from `now`, as tmux would.
    fn delta_against(old: PaneText, now: &PaneText, limit: u64) -> Option<PaneText> {
        let old = Arc::new(old);
        let request = CaptureRequest {
            pane: PaneId::from_number(1),
            range: CaptureRange::AllHistory,
        };
        let mut print = print(now.history_size, limit);
        print.height = now.height;
        let plan = delta_plan(&old, &request, &print)?;
        let at = |range| match range {
            CaptureRange::Lines { start, end } => {
                let row = |n: i64| (n + now.history_size as i64).max(0) as usize;
                (row(start), row(end) + 1)
            }
            other => panic!("{other:?}"),
        };
        let (from, to) = at(plan.request.range);
        let fresh = captured(now, from, to);
        let top = plan.top_request.as_ref().map(|r| {
            let (from, to) = at(r.range);
            captured(now, from, to)
        });
        splice(&plan, top.as_ref(), &fresh, false)
    }

    #[test]
    fn oldest_lines_moved_down_by_output_after_the_listing_are_found_lower() {
        // Stored: rows 100..300 of a pane (a partial capture), history 298:
        // more than a delta reaches above its anchor, so the oldest stored
        // lines are checked by the top capture alone.
        let pane = |n: usize, shift: usize| {
            rows_of(n as u64 - 2, &lines(|r| format!("line {}", r + shift), n))
        };
        let old = Arc::new(pane(300, 0).lines(100, 300).unwrap());
        let request = CaptureRequest {
            pane: PaneId::from_number(1),
            range: CaptureRange::Scrollback(30),
        };
        // The listing says history 303; 6 more lines came before the
        // capture (history 309): every row asked lands 6 rows lower.
        let plan = delta_plan(&old, &request, &print(303, 10_000)).unwrap();
        let answer = |now: &PaneText, range| match range {
            CaptureRange::Lines { start, end } => {
                let row = |n: i64| usize::try_from(n + 309).unwrap();
                captured(now, row(start), row(end) + 1)
            }
            other => panic!("{other:?}"),
        };
        let now = pane(311, 0);
        let top = answer(&now, plan.top_request.clone().unwrap().range);
        let fresh = answer(&now, plan.request.range);
        assert!(
            fresh.first_line + 309 > 100,
            "the delta alone reaches row 100"
        );
        let spliced = splice(&plan, Some(&top), &fresh, false).unwrap();
        assert_eq!(spliced.bytes, now.lines(100, 311).unwrap().bytes);
        assert_eq!(spliced.rows, (100..311).collect::<Vec<u64>>());
        // The oldest rows holding other text are refused still.
        let top = answer(&pane(311, 1), plan.top_request.clone().unwrap().range);
        assert!(splice(&plan, Some(&top), &fresh, false).is_none());
    }

    fn lines(f: impl Fn(usize) -> String, n: usize) -> Vec<String> {
        (0..n).map(f).collect()
    }

    #[test]
    fn repeated_rows_trimmed_within_reach_of_the_delta_are_refused() {
        // The recipe of a wrong answer once given: 40x10, limit 100;
        // 42 `z`, U01..U21, 41 `z`; then 10 `z` more, and tmux trimmed the
        // 10 oldest rows: history 95 again, every row 10 rows up.
        let z_u_z = |shift: usize| {
            lines(
                |r| match r + shift {
                    42..=62 => format!("U{:02}", r + shift - 41),
                    _ => "z".into(),
                },
                105,
            )
        };
        let old = rows_of(95, &z_u_z(0));
        let now = rows_of(95, &z_u_z(10));
        assert!(delta_against(old.clone(), &now, 100).is_none());
        // Nothing trimmed, nothing changed: the delta holds.
        assert_eq!(
            delta_against(old.clone(), &old, 100).unwrap().bytes,
            old.bytes
        );
    }

    #[test]
    fn a_trim_further_than_the_delta_reaches_is_refused() {
        // Limit 1,000 (trims of 100 rows): rows repeating every 100 rows
        // around the anchor and at the top, unique rows in between. A trim
        // of 100 moves everything up 100 rows; the anchor and the oldest
        // rows still match where they were stored, the delta cannot see the
        // unique rows, and the anchor's other copies are out of its reach.
        let pane = |shift: usize| {
            lines(
                |r| match r + shift {
                    300..=320 => format!("U{}", r + shift),
                    n => format!("p{}", n % 100),
                },
                1_000,
            )
        };
        let old = rows_of(990, &pane(0));
        let now = rows_of(990, &pane(100));
        assert!(delta_against(old.clone(), &now, 1_000).is_none());
        // Far from the limit no trim is assumed (and the repeated anchor
        // alone does not show).
        assert!(delta_against(old.clone(), &now, 100_000).is_some());
        // Unique rows trimmed by 100 are refused by the anchor itself;
        // printed without a trim they are spliced.
        let unique = |n| lines(|r| format!("u{r}"), n);
        let old = rows_of(990, &unique(1_000));
        let trimmed = rows_of(990, &lines(|r| format!("u{}", r + 100), 1_000));
        assert!(delta_against(old.clone(), &trimmed, 1_000).is_none());
        let more = rows_of(995, &unique(1_005));
        assert_eq!(delta_against(old, &more, 1_000).unwrap().bytes, more.bytes);
    }

    #[test]
    fn an_anchor_repeated_in_the_delta_is_refused() {
        // History cleared and refilled with `z` (no trim: limit 100,000).
        // The oldest rows and the anchor match where they were stored; the
        // U rows between were never fetched. The anchor's rows occur again
        // in the delta, so they cannot vouch for the rows kept.
        let old = rows_of(
            611,
            &lines(
                |r| match r {
                    300..=320 => format!("U{r}"),
                    _ => "z".into(),
                },
                621,
            ),
        );
        let now = rows_of(700, &lines(|_| "z".into(), 710));
        assert!(delta_against(old, &now, 100_000).is_none());
        // Cleared and the same program run again: the same first rows, other
        // rows in the middle, then `z` over the anchor's rows. Only the
        // anchor's repeating within itself gives it away.
        let run = |middle: &'static str| {
            move |r: usize| match r {
                0..=39 => format!("t{r}"),
                300..=320 => format!("{middle}{r}"),
                _ => "z".into(),
            }
        };
        let old = rows_of(611, &lines(run("U"), 621));
        let now = rows_of(620, &lines(run("V"), 630));
        assert!(delta_against(old, &now, 100_000).is_none());
        // The same with a cycle of three lines over the anchor's rows: its
        // copies lie 3, 6, ... rows away, never a whole anchor (32 rows)
        // away, and no shift by a cycle explains the oldest rows. The
        // copies overlapping the anchor are what refuses it.
        let cycle = |middle: &'static str| {
            move |r: usize| match r {
                0..=39 => format!("t{r}"),
                300..=320 => format!("{middle}{r}"),
                _ => ["a", "b", "c"][r % 3].into(),
            }
        };
        let old = rows_of(611, &lines(cycle("U"), 621));
        let now = rows_of(620, &lines(cycle("V"), 630));
        assert!(delta_against(old.clone(), &now, 100_000).is_none());
        // Printed on without a clear is refused too (a full capture, the
        // same answer): the rows fetched cannot tell the two apart.
        let more = rows_of(620, &lines(cycle("U"), 630));
        assert!(delta_against(old, &more, 100_000).is_none());
    }

    #[test]
    fn a_repeating_anchor_under_other_compared_rows_is_spliced() {
        // 40 blank rows end the history, unique rows above them: the blank
        // anchor matches at any offset within the blank rows, but the rows
        // compared above it pin it down. Printing 5 lines is a delta.
        let text = |r: usize| match r {
            950..=989 => String::new(),
            _ => format!("u{r}"),
        };
        let old = rows_of(990, &lines(text, 1_000));
        let more = rows_of(995, &lines(text, 1_005));
        assert_eq!(
            delta_against(old.clone(), &more, 100_000).unwrap().bytes,
            more.bytes
        );
        // Blank rows all through the delta pin nothing down.
        let blank = |r: usize| {
            if r < 600 {
                format!("u{r}")
            } else {
                String::new()
            }
        };
        let old = rows_of(990, &lines(blank, 1_000));
        let more = rows_of(995, &lines(blank, 1_005));
        assert!(delta_against(old, &more, 100_000).is_none());
    }

    #[test]
    fn copies_are_found_anywhere_but_where_they_are_expected() {
        let copies =
            |hay: &[u8], block: &[u8], at| other_copies(hay, block, at).collect::<Vec<_>>();
        assert_eq!(copies(b"a\nb\nc\n", b"b\n", 2), Vec::<usize>::new());
        assert_eq!(copies(b"a\nb\nb\n", b"b\n", 2), vec![4]);
        assert_eq!(copies(b"b\na\nb\n", b"b\n", 4), vec![0]);
        // Overlapping the expected one, after it.
        assert_eq!(copies(b"z\nz\nz\n", b"z\nz\n", 0), vec![2]);
        // Inside a longer line.
        assert_eq!(copies(b"zz\nz\nx\nz\nz\n", b"z\nz\n", 7), vec![1]);
        assert_eq!(copies(b"x\nz\nz\n", b"z\nz\n", 2), Vec::<usize>::new());
    }

    #[test]
    fn an_anchor_printed_twice_is_refused_only_if_the_shift_explains_the_rest() {
        // A 40-line block printed over and over, the last copy holding
        // the anchor: the delta holds whole copies 40 and 80 rows up, and
        // the rows it fetched repeat every 40 rows. Shifting the stored
        // text by 40 rows is no explanation when the oldest rows differ
        // from the rows 40 further down: the delta holds.
        let text = |r: usize| match r {
            850..=979 => format!("e{}", (r - 850) % 40),
            _ => format!("u{r}"),
        };
        let old = rows_of(980, &lines(text, 990));
        let more = rows_of(
            985,
            &lines(|r| if r < 990 { text(r) } else { format!("n{r}") }, 995),
        );
        assert_eq!(
            delta_against(old, &more, 100_000).unwrap().bytes,
            more.bytes
        );
        // When the oldest rows repeat every 40 rows too, it could be one.
        let periodic = |r: usize| match r {
            0..=99 => format!("p{}", r % 40),
            _ => text(r),
        };
        let old = rows_of(980, &lines(periodic, 990));
        let more = rows_of(
            985,
            &lines(
                |r| {
                    if r < 990 {
                        periodic(r)
                    } else {
                        format!("n{r}")
                    }
                },
                995,
            ),
        );
        assert!(delta_against(old, &more, 100_000).is_none());
    }

    #[test]
    fn rows_above_the_anchor_are_compared_up_to_the_first_stored_line() {
        let old = rows_of(8, &lines(|r| format!("r{r}"), 10));
        // Fetched from row 2: lines 3..6 compared (the first fetched line
        // may be cut), line 2 and above kept unseen.
        let new = PaneText::from_capture(&captured(&old, 2, 10)).unwrap();
        assert_eq!(verified_above(&old, 6, &new, 4), Some(3));
        // Fetched from the first stored row: every line compared.
        let new = PaneText::from_capture(&captured(&old, 0, 10)).unwrap();
        assert_eq!(verified_above(&old, 6, &new, 6), Some(0));
        // Fetched from above the first stored row (stored from row 4):
        // every stored line compared, none above it asked for.
        let from_4 = PaneText::from_capture(&captured(&old, 4, 10)).unwrap();
        assert_eq!(verified_above(&from_4, 2, &new, 6), Some(0));
        let changed = rows_of(8, &lines(|r| format!("r{}", r.min(4)), 10));
        let new = PaneText::from_capture(&captured(&changed, 0, 10)).unwrap();
        assert_eq!(verified_above(&old, 6, &new, 6), None);
    }

    /// Lines shifted above the first stored row (text stored from row 4)
    /// have nothing to be compared with: they neither prove nor disprove
    /// a shift; the others decide.
    #[test]
    fn lines_shifted_above_the_first_stored_row_are_not_compared() {
        let periodic = rows_of(8, &lines(|r| format!("p{}", r % 2), 10));
        let stored = PaneText::from_capture(&captured(&periodic, 4, 10)).unwrap();
        let seen = PaneText::from_capture(&captured(&periodic, 4, 10)).unwrap();
        let end = stored.rows[stored.history_complete()];
        assert!(consistent_at_shift(&stored, end, &[&seen], -2));
        assert!(!consistent_at_shift(&stored, end, &[&seen], -1));
    }

    #[test]
    fn trims_are_told_apart_only_by_rows_that_differ() {
        // Rows repeating every 3: a trim of 3 or 6 looks like none.
        let periodic = rows_of(40, &lines(|r| format!("p{}", r % 3), 45));
        let top = PaneText::from_capture(&captured(&periodic, 0, 8)).unwrap();
        let end = periodic.rows[periodic.history_complete()];
        assert!(consistent_at_shift(&periodic, end, &[&top], 3));
        assert!(!consistent_at_shift(&periodic, end, &[&top], 2));
        assert!(!consistent_at_shift(&periodic, end, &[&top], 4));
        assert!(trim_could_explain(
            &periodic,
            periodic.history_complete(),
            &[&top],
            3
        ));
        // Several trims of 4 make 12.
        assert!(trim_could_explain(
            &periodic,
            periodic.history_complete(),
            &[&top],
            4
        ));
        // A shift past every stored row compares nothing: no evidence.
        assert!(!consistent_at_shift(&periodic, end, &[&top], 60));
        let unique = rows_of(40, &lines(|r| format!("u{r}"), 45));
        let top = PaneText::from_capture(&captured(&unique, 0, 8)).unwrap();
        assert!(!trim_could_explain(
            &unique,
            unique.history_complete(),
            &[&top],
            1
        ));
    }
}
