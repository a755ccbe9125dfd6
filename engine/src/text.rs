//! Text hygiene: terminal escape sequences out, valid UTF-8 out, long lines
//! clipped.
//!
//! Captures made with `capture-pane -e` carry colour and other escape
//! sequences; the engine strips them *before* matching, so a pattern matches
//! the text a person sees. Output text is always valid UTF-8 (invalid bytes
//! become U+FFFD) and never longer than a caller's cap.

use std::borrow::Cow;

const ESC: u8 = 0x1b;
const BEL: u8 = 0x07;

/// True if `bytes` contain an escape character (cheap, vectorised check).
pub(crate) fn has_escapes(bytes: &[u8]) -> bool {
    memchr::memchr(ESC, bytes).is_some()
}

/// Removes terminal escape sequences from `bytes`, keeping every line end.
///
/// Recognised (ECMA-48): CSI (`ESC [` params, intermediates, final byte),
/// OSC (`ESC ]` ... BEL or `ESC \`), DCS/SOS/PM/APC (`ESC P`, `ESC X`,
/// `ESC ^`, `ESC _` ... `ESC \`), and two-byte escapes such as `ESC (B`,
/// `ESC =` or `ESC 7`. A sequence never swallows a `\n`: an unterminated
/// sequence ends at the line end. A lone ESC at the end is dropped.
pub fn strip_escapes(bytes: &[u8]) -> Cow<'_, [u8]> {
    let Some(first) = memchr::memchr(ESC, bytes) else {
        return Cow::Borrowed(bytes);
    };
    let mut out = Vec::with_capacity(bytes.len());
    out.extend_from_slice(&bytes[..first]);
    let mut i = first;
    while i < bytes.len() {
        if bytes[i] != ESC {
            // Copy up to the next escape in one go.
            let next = memchr::memchr(ESC, &bytes[i..]).map_or(bytes.len(), |n| i + n);
            out.extend_from_slice(&bytes[i..next]);
            i = next;
            continue;
        }
        i = skip_sequence(bytes, i);
    }
    Cow::Owned(out)
}

/// Given `bytes[at] == ESC`, returns the offset just after the sequence.
fn skip_sequence(bytes: &[u8], at: usize) -> usize {
    let mut i = at + 1;
    let Some(&kind) = bytes.get(i) else {
        return i;
    };
    match kind {
        b'\n' => i,
        b'[' => {
            // CSI: parameter bytes 0x30-0x3F, intermediates 0x20-0x2F, one
            // final byte 0x40-0x7E.
            i += 1;
            while let Some(&b) = bytes.get(i) {
                match b {
                    0x20..=0x3f => i += 1,
                    0x40..=0x7e => return i + 1,
                    // Malformed: end the sequence here, keep the byte.
                    _ => return i,
                }
            }
            i
        }
        b']' | b'P' | b'X' | b'^' | b'_' => {
            // String sequences, ended by BEL (OSC) or ST (`ESC \`).
            i += 1;
            while let Some(&b) = bytes.get(i) {
                match b {
                    BEL => return i + 1,
                    b'\n' => return i,
                    ESC if bytes.get(i + 1) == Some(&b'\\') => return i + 2,
                    ESC => return i,
                    _ => i += 1,
                }
            }
            i
        }
        _ => {
            // nF escapes: intermediates 0x20-0x2F then a final 0x30-0x7E.
            while let Some(&b) = bytes.get(i) {
                match b {
                    0x20..=0x2f => i += 1,
                    0x30..=0x7e => return i + 1,
                    _ => return i,
                }
            }
            i
        }
    }
}

/// Valid UTF-8 for `bytes`, with U+FFFD for each invalid sequence.
pub(crate) fn lossy(bytes: &[u8]) -> Cow<'_, str> {
    String::from_utf8_lossy(bytes)
}

/// The marker put where text was cut.
pub(crate) const CLIP_MARK: &str = "…";

/// Turns one line into output text of at most `max_bytes` bytes.
///
/// `span` is a match (byte range in `line`); when the line is too long the
/// kept window is centred on the match, and each cut side is marked with
/// [`CLIP_MARK`] (the marks count towards `max_bytes`). Without a span the
/// start of the line is kept.
pub(crate) fn clip_line(line: &[u8], span: Option<(usize, usize)>, max_bytes: usize) -> String {
    let text = lossy(line);
    if text.len() <= max_bytes {
        return text.into_owned();
    }
    // Map the span from raw bytes to the lossy text (they differ only where
    // the line had invalid UTF-8).
    let (mut start, mut end) = match span {
        Some((s, e)) if s <= e && e <= line.len() => {
            let s2 = lossy(&line[..s]).len().min(text.len());
            let e2 = (s2 + lossy(&line[s..e]).len()).min(text.len());
            (s2, e2)
        }
        _ => (0, 0),
    };
    let mark = CLIP_MARK.len();
    if max_bytes < 2 * mark + 1 {
        // Too small for marks: plain prefix.
        return floor_str(&text, max_bytes).to_owned();
    }
    let room = max_bytes - 2 * mark;
    if end - start > room {
        end = start + room;
    }
    // Centre the window on the match.
    let spare = room - (end - start);
    start = start.saturating_sub(spare / 2);
    end = (start + room).min(text.len());
    start = end.saturating_sub(room);
    let start = ceil_boundary(&text, start);
    let end = floor_boundary(&text, end).max(start);
    let mut out = String::with_capacity(max_bytes);
    if start > 0 {
        out.push_str(CLIP_MARK);
    }
    out.push_str(&text[start..end]);
    if end < text.len() {
        out.push_str(CLIP_MARK);
    }
    out
}

fn floor_boundary(s: &str, mut i: usize) -> usize {
    i = i.min(s.len());
    while i > 0 && !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn ceil_boundary(s: &str, mut i: usize) -> usize {
    while i < s.len() && !s.is_char_boundary(i) {
        i += 1;
    }
    i.min(s.len())
}

fn floor_str(s: &str, max: usize) -> &str {
    &s[..floor_boundary(s, max)]
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn strips_sgr_osc_and_charset_escapes() {
        let raw = b"\x1b[1;31merror\x1b[0m: \x1b]8;;http://x\x07link\x1b]8;;\x1b\\ \x1b(Bdone";
        assert_eq!(&*strip_escapes(raw), b"error: link done");
    }

    #[test]
    fn unterminated_sequence_keeps_line_end() {
        assert_eq!(&*strip_escapes(b"a\x1b]title\nb\x1b"), b"a\nb");
        assert_eq!(&*strip_escapes(b"a\x1b[12\nb"), b"a\nb");
    }

    #[test]
    fn no_escape_borrows() {
        assert!(matches!(strip_escapes(b"plain"), Cow::Borrowed(_)));
    }

    #[test]
    fn clip_centres_on_match_and_respects_cap() {
        let line = format!("{}NEEDLE{}", "a".repeat(500), "b".repeat(500));
        let out = clip_line(line.as_bytes(), Some((500, 506)), 40);
        assert!(out.len() <= 40, "{}", out.len());
        assert!(out.contains("NEEDLE"));
        assert!(out.starts_with(CLIP_MARK) && out.ends_with(CLIP_MARK));
    }

    #[test]
    fn clip_handles_multibyte_and_invalid_utf8() {
        let mut line = "é".repeat(100).into_bytes();
        line.push(0xff);
        for max in 0..30 {
            let out = clip_line(&line, Some((10, 12)), max);
            assert!(out.len() <= max, "max {max}: {}", out.len());
        }
        assert_eq!(clip_line(b"ok\xff", None, 100), "ok\u{fffd}");
    }
}
