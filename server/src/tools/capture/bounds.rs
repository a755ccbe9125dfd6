//! The cuts every capture tool shares: a capture's lines with their tmux
//! numbers, the newest lines within a byte ceiling, the oldest lines cut
//! to fit a response, and the `max_lines`/`max_bytes` arguments.
//!
//! Must hold: a cut always keeps the newest text (the end of a line that
//! alone is too long), and an argument above the operator's ceiling is an
//! error naming it, never clamped.

use super::super::context::ToolError;
use super::super::json_str_len;
use crate::config::Ceilings;
use crate::tmux::CapturedText;

/// Captured lines with their tmux line numbers.
#[derive(Debug, Default)]
pub(super) struct Lines {
    pub(super) lines: Vec<String>,
    pub(super) numbers: Vec<i64>,
}

impl Lines {
    pub(super) fn from_capture(cap: &CapturedText) -> Lines {
        let text = String::from_utf8_lossy(&cap.bytes);
        let mut lines: Vec<String> = text.split('\n').map(str::to_owned).collect();
        // Every line ends in '\n': the split leaves one empty tail.
        if lines.last().is_some_and(String::is_empty) {
            lines.pop();
        }
        let numbers = match &cap.line_numbers {
            Some(n) if n.len() == lines.len() => n.clone(),
            _ => (0..lines.len() as i64)
                .map(|i| cap.first_line + i)
                .collect(),
        };
        Lines { lines, numbers }
    }
}

/// The tail of `lines` that fits `max_bytes` (each line counts its newline).
/// Returns (kept-from index, omitted bytes); a single line longer than the
/// ceiling keeps its end.
pub(crate) fn keep_tail_bytes(lines: &mut [String], max_bytes: usize) -> (usize, usize) {
    let mut used = 0usize;
    let mut from = lines.len();
    while from > 0 {
        let len = lines[from - 1].len() + 1;
        if used + len > max_bytes {
            break;
        }
        used += len;
        from -= 1;
    }
    let mut omitted: usize = lines[..from].iter().map(|l| l.len() + 1).sum();
    if from == lines.len() && from > 0 {
        // Not even the last line fits: keep the end of it.
        let last = &mut lines[from - 1];
        let room = max_bytes.saturating_sub(1);
        let mut cut = last.len().saturating_sub(room);
        while cut < last.len() && !last.is_char_boundary(cut) {
            cut += 1;
        }
        omitted -= last.len() + 1;
        omitted += cut;
        last.drain(..cut);
        from -= 1;
    }
    (from, omitted)
}

/// What [`cut_front`] took from a text.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct FrontCut {
    /// Whole lines removed.
    pub(super) lines: usize,
    /// Bytes removed (newlines included).
    pub(super) bytes: usize,
}

/// Cuts the oldest lines of `text` until about `excess` encoded bytes are
/// saved in a response that carries `text` in `copies` places (the
/// structured result and its rendering): whole lines first; the last line
/// is cut within, keeping its end, only when it alone is too much. `None`
/// when there is nothing to cut.
pub(super) fn cut_front(text: &mut String, excess: usize, copies: usize) -> Option<FrontCut> {
    let mut saved = 0usize;
    let mut cut = 0usize;
    let mut lines = 0usize;
    for line in text.split_inclusive('\n') {
        if saved >= excess {
            break;
        }
        if cut + line.len() < text.len() {
            saved += copies * json_str_len(line);
            cut += line.len();
            lines += 1;
            continue;
        }
        let mut within = line.len();
        for (i, c) in line.char_indices() {
            if saved >= excess {
                within = i;
                break;
            }
            saved += copies * json_str_len(c.encode_utf8(&mut [0; 4]));
        }
        cut += within;
        lines += usize::from(within == line.len());
    }
    if cut == 0 {
        return None;
    }
    text.drain(..cut);
    Some(FrontCut { lines, bytes: cut })
}

pub(super) fn join_lines(lines: &[String]) -> String {
    let mut s = String::with_capacity(lines.iter().map(|l| l.len() + 1).sum());
    for l in lines {
        s.push_str(l);
        s.push('\n');
    }
    s
}

/// A capture's `max_lines` and `max_bytes`: the caller's values, or the
/// defaults; a value above the operator's ceiling is an error naming it.
pub(crate) fn output_bounds(
    limits: &Ceilings,
    max_lines: Option<usize>,
    max_bytes: Option<usize>,
) -> Result<(usize, usize), ToolError> {
    Ok((
        bounded_arg(
            max_lines,
            limits.capture_default_lines,
            limits.capture_lines,
            "max_lines",
        )?,
        bounded_arg(
            max_bytes,
            limits.capture_bytes,
            limits.capture_bytes,
            "max_bytes",
        )?,
    ))
}

/// An optional count argument: default when absent, never zero, never
/// above `ceiling` (asking for more is an error, as everywhere: silently
/// returning less would look like a pane with less text).
pub(super) fn bounded_arg(
    value: Option<usize>,
    default: usize,
    ceiling: usize,
    name: &str,
) -> Result<usize, ToolError> {
    match value {
        None => Ok(default.min(ceiling)),
        Some(0) => Err(ToolError::invalid(format!("{name} must be at least 1"))),
        Some(n) if n > ceiling => Err(ToolError::over_ceiling(format!(
            "{name} may be at most {ceiling} (the operator's ceiling), got {n}"
        ))),
        Some(n) => Ok(n),
    }
}

// ---------------------------------------------------------------- since
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cutting_the_front_counts_escaped_bytes_and_keeps_the_newest() {
        // Each quote costs 2 bytes per copy: 3 quotes + newline = 8 per
        // copy, 16 in a response carrying the text twice.
        let mut text = "\"\"\"\nabc\n\"\"\"\n".to_owned();
        assert_eq!(
            cut_front(&mut text, 16, 2),
            Some(FrontCut { lines: 1, bytes: 4 })
        );
        assert_eq!(text, "abc\n\"\"\"\n");
        assert_eq!(
            cut_front(&mut text, 10, 2),
            Some(FrontCut { lines: 1, bytes: 4 })
        );
        // The last line alone is too much: its end is kept.
        assert_eq!(text, "\"\"\"\n");
        assert_eq!(
            cut_front(&mut text, 5, 2),
            Some(FrontCut { lines: 0, bytes: 2 })
        );
        assert_eq!(text, "\"\n");
        assert_eq!(
            cut_front(&mut text, 100, 2),
            Some(FrontCut { lines: 1, bytes: 2 })
        );
        assert_eq!(text, "");
        assert_eq!(cut_front(&mut text, 1, 2), None);
        let mut wide = "\u{1}\u{20ac}\u{20ac}".to_owned();
        assert_eq!(
            cut_front(&mut wide, 7, 1),
            Some(FrontCut { lines: 0, bytes: 4 })
        );
        assert_eq!(wide, "\u{20ac}");
    }

    #[test]
    fn tail_bytes_keep_the_newest() {
        let mut lines: Vec<String> = vec!["aaaa".into(), "bb".into(), "c".into()];
        let (from, omitted) = keep_tail_bytes(&mut lines, 5);
        assert_eq!((from, omitted), (1, 5));
        let mut long: Vec<String> = vec!["0123456789".into()];
        let (from, omitted) = keep_tail_bytes(&mut long, 5);
        assert_eq!(from, 0);
        assert_eq!(long[0], "6789");
        assert_eq!(omitted, 6);
        let mut all: Vec<String> = vec!["a".into()];
        assert_eq!(keep_tail_bytes(&mut all, 100), (0, 0));
    }
}
