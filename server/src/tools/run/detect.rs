//! The completion detector: a pure parser of a pane's raw output (escape
//! sequences included, in the chunks tmux's `%output` cuts it into) for
//! the two signs that a command ended:
//!
//! - an OSC 133 "command finished" mark, `ESC ] 133 ; D [; status] (BEL |
//!   ESC \)`, which shells with shell integration print before each
//!   prompt (further `;key=value` parameters after the status are skipped);
//! - the call's marker, `TOKEN:status` then CR or LF, which the shell
//!   prints from pieces after the command (so the echoed command line never
//!   holds TOKEN itself).
//!
//! A sign split across chunks is found once whole; bytes that only look
//! like a sign (a marker with another token, `133;A`, a status that is not
//! a number) are not one. Memory is bounded: only the last few bytes of a
//! chunk are kept for the next.

use super::line_text::LineText;

/// Whether a pane's raw output left its last line unfinished (text after
/// the last newline), read through escape sequences: CSI sequences,
/// strings (OSC, DCS, APC...) to BEL or ST, two-byte escapes, CAN and SUB
/// (pure; fed chunk by chunk, any cut). zsh's and fish's end-of-line mark
/// (one character, a row of spaces, CR: PROMPT_SP) is the shell's, not
/// the command's: the line is as it was before that character. Spaces
/// alone do not open a line.
#[derive(Clone, Debug, Default)]
pub struct LineEnd {
    open: bool,
    /// `open` before the last character (not a space) came.
    before_char: bool,
    /// Spaces since that character.
    spaces: usize,
    /// An end-of-line mark was seen: what follows on the row (fish draws
    /// its mark again) is the shell's too.
    frozen: bool,
    state: EscState,
    /// The unfinished line's text, as far as it can be followed.
    text: LineText,
    /// The escape sequence under way has an intermediate byte (a character
    /// set's designation: it moves nothing).
    esc_intermediate: bool,
    /// The CSI sequence under way has parameters other than `0`.
    csi_params: bool,
}

/// Spaces, then CR, after one character: an end-of-line mark.
const MARK_SPACES: usize = 16;
/// The final bytes of two-byte escapes that move the cursor: save and
/// restore (7, 8), index, next line, reverse index, reset.
const MOVING_ESCAPES: [u8; 6] = [b'7', b'8', b'D', b'E', b'M', b'c'];

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum EscState {
    #[default]
    Ground,
    Escape,
    Csi,
    Str,
    StrEscape,
}

impl LineEnd {
    /// Takes `bytes`, the next of the output.
    pub fn feed(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.state = self.next(b);
        }
    }

    /// Whether text was printed after the last newline.
    pub fn open(&self) -> bool {
        self.open
    }

    /// The unfinished last line's text, when there is one and every byte
    /// of it could be followed.
    pub fn open_text(&self) -> Option<String> {
        self.open.then(|| self.text.text()).flatten()
    }

    fn next(&mut self, b: u8) -> EscState {
        use EscState::*;
        match (self.state, b) {
            (_, 0x18 | 0x1a) => Ground,
            (Ground, 0x1b) => {
                self.esc_intermediate = false;
                Escape
            }
            (Ground, b'\n') => {
                self.open = false;
                self.spaces = 0;
                self.frozen = false;
                self.text.newline();
                Ground
            }
            (Ground, b'\r') => {
                if self.spaces >= MARK_SPACES && !self.frozen {
                    self.open = self.before_char;
                    self.frozen = true;
                    self.text.unmark();
                }
                self.spaces = 0;
                self.write(|t| t.control(b'\r'));
                Ground
            }
            (Ground, b' ') => {
                self.spaces += 1;
                self.write(|t| t.print(b' '));
                Ground
            }
            // A character's first byte (UTF-8 continuations are not).
            (Ground, b) if b > b' ' && b != 0x7f && !(0x80..0xc0).contains(&b) => {
                if !self.frozen {
                    self.before_char = self.open;
                    self.open = true;
                }
                self.spaces = 0;
                self.write(|t| t.print(b));
                Ground
            }
            (Ground, 0x80..=0xbf) => {
                self.write(|t| t.print(b));
                Ground
            }
            (Ground, 0x08 | b'\t') => {
                self.write(|t| t.control(b));
                Ground
            }
            (Ground, _) => Ground,
            (Escape, b'[') => {
                self.csi_params = false;
                Csi
            }
            (Escape, b']' | b'P' | b'_' | b'^' | b'X') => Str,
            (Escape, 0x20..=0x2f) => {
                self.esc_intermediate = true;
                Escape
            }
            (Escape, b) => {
                // ESC 7, ESC 8, ESC M...: the cursor moves as not followed
                // (a designation or a keypad mode moves nothing).
                if !self.esc_intermediate && MOVING_ESCAPES.contains(&b) {
                    self.write(LineText::lose);
                }
                Ground
            }
            (Csi, 0x40..=0x7e) => {
                self.csi_end(b);
                Ground
            }
            (Csi, _) => {
                self.csi_params |= b != b'0';
                Csi
            }
            (Str, 0x07) => Ground,
            (Str, 0x1b) => StrEscape,
            (Str, _) => Str,
            (StrEscape, _) => Ground,
        }
    }

    /// A CSI sequence ended by `last`: colours, modes (bracketed paste,
    /// cursor keys), reports and the cursor's style move nothing, `K` and
    /// `J` erase to the row's end, anything else is not followed.
    fn csi_end(&mut self, last: u8) {
        match (last, self.csi_params) {
            (b'm' | b'h' | b'l' | b'n' | b'c' | b'q' | b't', _) => {}
            (b'K' | b'J', false) => self.write(LineText::erase_to_end),
            _ => self.write(LineText::lose),
        }
    }

    /// Changes the line's text, unless a mark froze the row.
    fn write(&mut self, change: impl FnOnce(&mut LineText)) {
        if !self.frozen {
            change(&mut self.text);
        }
    }
}

/// A sign that the command ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sign {
    /// An OSC 133 D mark, with its status when it carried one.
    Osc133(Option<i32>),
    /// The call's marker, with the status the shell printed.
    Marker(i32),
}

/// Longest OSC 133 mark considered (parameters included).
const MAX_OSC: usize = 96;
/// Digits a status may have.
const MAX_STATUS_DIGITS: usize = 10;

/// Finds [`Sign`]s in a byte stream fed chunk by chunk.
#[derive(Clone, Debug)]
pub struct Detector {
    token: Vec<u8>,
    /// The unfinished end of the previous chunks.
    carry: Vec<u8>,
    /// Bytes at the start of `carry` that a reported sign covered.
    reported: usize,
}

impl Detector {
    /// A detector for the marker `token` (ASCII letters, digits, `_`).
    pub fn new(token: &str) -> Detector {
        Detector {
            token: token.as_bytes().to_vec(),
            carry: Vec::new(),
            reported: 0,
        }
    }

    /// The signs completed by `chunk`, in stream order.
    pub fn feed(&mut self, chunk: &[u8]) -> Vec<Sign> {
        let mut buf = std::mem::take(&mut self.carry);
        buf.extend_from_slice(chunk);
        let mut signs = Vec::new();
        let mut at = 0;
        let mut reported = std::mem::take(&mut self.reported);
        // The earliest position a sign may still be completing from.
        let mut pending = buf.len();
        while at < buf.len() {
            match self.sign_at(&buf[at..]) {
                Found::Sign(sign, len) => {
                    // A sign seen before (its start was kept because an
                    // earlier one was still incomplete) is not reported twice.
                    if at >= reported {
                        signs.push(sign);
                        reported = at + len;
                    }
                    at += len;
                }
                Found::Partial => {
                    pending = pending.min(at);
                    at += 1;
                }
                Found::No => at += 1,
            }
        }
        let keep_from = pending
            .max(buf.len().saturating_sub(self.max_len()))
            .min(buf.len());
        self.reported = reported.saturating_sub(keep_from);
        self.carry = buf[keep_from..].to_vec();
        signs
    }

    /// Bytes kept for the next chunk (never more than [`Self::max_len`]).
    pub(crate) fn carried(&self) -> usize {
        self.carry.len()
    }

    /// The longest sign this detector can be waiting to complete.
    pub(crate) fn max_len(&self) -> usize {
        MAX_OSC.max(self.token.len() + MAX_STATUS_DIGITS + 3)
    }

    fn sign_at(&self, s: &[u8]) -> Found {
        match s.first() {
            Some(0x1b) => osc133(s),
            Some(&b) if Some(&b) == self.token.first() => self.marker(s),
            _ => Found::No,
        }
    }

    /// `TOKEN:digits` then CR or LF (a `-` first for a negative status).
    fn marker(&self, s: &[u8]) -> Found {
        let t = self.token.len();
        if s.len() < t {
            return if self.token.starts_with(s) {
                Found::Partial
            } else {
                Found::No
            };
        }
        if s[..t] != self.token[..] {
            return Found::No;
        }
        match s.get(t) {
            None => return Found::Partial,
            Some(b':') => {}
            Some(_) => return Found::No,
        }
        match number(&s[t + 1..], b"\r\n") {
            Num::Done(n, len) => match n {
                Some(n) => Found::Sign(Sign::Marker(n), t + 1 + len + 1),
                None => Found::No,
            },
            Num::Partial => Found::Partial,
            Num::Bad => Found::No,
        }
    }
}

enum Found {
    Sign(Sign, usize),
    Partial,
    No,
}

/// `ESC ] 133 ; D`, then `;status`, more `;parameters`, and BEL or ST.
fn osc133(s: &[u8]) -> Found {
    match mark_at(s, MAX_OSC) {
        MarkAt::Mark(mark, len) if mark.kind == b'D' => {
            Found::Sign(Sign::Osc133(mark.status()), len)
        }
        MarkAt::Mark(..) | MarkAt::No => Found::No,
        MarkAt::Partial => Found::Partial,
    }
}

/// An OSC 133 mark: `ESC ] 133 ; KIND [; parameters] (BEL | ESC \)`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mark {
    /// `A` (prompt start), `B` (prompt end), `C` (output start), `D`
    /// (command end), or another letter.
    pub kind: u8,
    /// What follows the letter's `;`, up to the terminator (empty when
    /// none).
    pub params: Vec<u8>,
}

impl Mark {
    /// The status a D mark carries: its first parameter, when it is an
    /// optionally negative decimal of at most ten digits that fits.
    pub fn status(&self) -> Option<i32> {
        let first = self.params.split(|&b| b == b';').next().unwrap_or_default();
        let digits = first.strip_prefix(b"-").unwrap_or(first);
        if digits.is_empty()
            || digits.len() > MAX_STATUS_DIGITS
            || !digits.iter().all(u8::is_ascii_digit)
        {
            return None;
        }
        std::str::from_utf8(first).ok()?.parse().ok()
    }

    /// The value of parameter `key` (`key=value`), when present.
    pub fn param(&self, key: &str) -> Option<&[u8]> {
        self.params.split(|&b| b == b';').find_map(|p| {
            p.strip_prefix(key.as_bytes())
                .and_then(|rest| rest.strip_prefix(b"="))
        })
    }
}

enum MarkAt {
    /// The mark and its length in bytes.
    Mark(Mark, usize),
    Partial,
    No,
}

/// The OSC 133 mark at the start of `s`, at most `max` bytes long.
fn mark_at(s: &[u8], max: usize) -> MarkAt {
    const HEAD: &[u8] = b"\x1b]133;";
    if s.len() < HEAD.len() {
        return if HEAD.starts_with(s) {
            MarkAt::Partial
        } else {
            MarkAt::No
        };
    }
    if &s[..HEAD.len()] != HEAD {
        return MarkAt::No;
    }
    let Some(&kind) = s.get(HEAD.len()) else {
        return MarkAt::Partial;
    };
    if !kind.is_ascii_uppercase() {
        return MarkAt::No;
    }
    let rest = &s[HEAD.len() + 1..];
    let mut i = 0;
    while HEAD.len() + 1 + i < max {
        let Some(&b) = rest.get(i) else {
            return MarkAt::Partial;
        };
        if i == 0 && b != b';' && b != 0x07 && b != 0x1b {
            return MarkAt::No;
        }
        match terminator(&rest[i..]) {
            Some(Some(len)) => {
                let params = rest.get(1..i).unwrap_or_default().to_vec();
                return MarkAt::Mark(Mark { kind, params }, HEAD.len() + 1 + i + len);
            }
            Some(None) => return MarkAt::Partial,
            None => i += 1,
        }
    }
    MarkAt::No
}

/// OSC 7's head: the shell's directory as a `file://host/path` URL.
const CWD_HEAD: &[u8] = b"\x1b]7;";

/// The OSC 7 report at the start of `s` (at most `max` bytes long), as a
/// mark of kind `7` whose parameters are the URL.
fn cwd_at(s: &[u8], max: usize) -> MarkAt {
    if s.len() < CWD_HEAD.len() {
        return if CWD_HEAD.starts_with(s) {
            MarkAt::Partial
        } else {
            MarkAt::No
        };
    }
    if !s.starts_with(CWD_HEAD) {
        return MarkAt::No;
    }
    let url = &s[CWD_HEAD.len()..];
    let mut i = 0;
    while CWD_HEAD.len() + i < max {
        let Some(rest) = url.get(i..).filter(|r| !r.is_empty()) else {
            return MarkAt::Partial;
        };
        match terminator(rest) {
            Some(Some(len)) => {
                let params = url[..i].to_vec();
                return MarkAt::Mark(Mark { kind: b'7', params }, CWD_HEAD.len() + i + len);
            }
            Some(None) => return MarkAt::Partial,
            None => i += 1,
        }
    }
    MarkAt::No
}

/// Finds every OSC 133 mark in a byte stream fed chunk by chunk (the
/// ledger's reader; [`Detector`] is run_command's), and with
/// [`MarkScanner::with_cwd`] every OSC 7 directory report too (a mark of
/// kind `7`). A mark split across chunks is found once whole; memory is
/// bounded by the longest mark.
#[derive(Clone, Debug)]
pub struct MarkScanner {
    carry: Vec<u8>,
    max: usize,
    cwd: bool,
}

impl MarkScanner {
    /// A scanner of marks up to `max` bytes long (a C mark may carry its
    /// command line).
    pub fn new(max: usize) -> MarkScanner {
        MarkScanner {
            carry: Vec::new(),
            max: max.max(MAX_OSC),
            cwd: false,
        }
    }

    /// Also finds OSC 7 reports (`ESC ] 7 ; URL` ended by BEL or ST), as
    /// marks of kind `7` with the URL for parameters.
    pub fn with_cwd(mut self) -> MarkScanner {
        self.cwd = true;
        self
    }

    /// The marks `chunk` completes, each with where it ends in `chunk`.
    pub fn feed(&mut self, chunk: &[u8]) -> Vec<(usize, Mark)> {
        let carried = self.carry.len();
        let mut buf = std::mem::take(&mut self.carry);
        buf.extend_from_slice(chunk);
        let mut marks = Vec::new();
        let mut pending = buf.len();
        let mut at = 0;
        while at < buf.len() {
            let Some(esc) = memchr::memchr(0x1b, &buf[at..]) else {
                break;
            };
            at += esc;
            let found = match mark_at(&buf[at..], self.max) {
                MarkAt::No if self.cwd => cwd_at(&buf[at..], self.max),
                found => found,
            };
            match found {
                MarkAt::Mark(mark, len) => {
                    at += len;
                    marks.push((at.saturating_sub(carried), mark));
                }
                MarkAt::Partial => {
                    pending = pending.min(at);
                    at += 1;
                }
                MarkAt::No => at += 1,
            }
        }
        // Only an unfinished mark is kept, and no more than a mark's length.
        let keep_from = pending.max(buf.len().saturating_sub(self.max));
        self.carry = buf.get(keep_from..).unwrap_or_default().to_vec();
        marks
    }
}

/// At `s`: BEL or ESC \ (`Some(Some(len))`), an ESC that may start ST
/// (`Some(None)`), or neither.
fn terminator(s: &[u8]) -> Option<Option<usize>> {
    match s {
        [0x07, ..] => Some(Some(1)),
        [0x1b, b'\\', ..] => Some(Some(2)),
        [0x1b] => Some(None),
        _ => None,
    }
}

enum Num {
    /// The number (`None` when it does not fit) and its length.
    Done(Option<i32>, usize),
    Partial,
    Bad,
}

/// An optionally negative decimal ended by one of `ends`.
fn number(s: &[u8], ends: &[u8]) -> Num {
    let neg = s.first() == Some(&b'-');
    let digits_from = usize::from(neg);
    let mut i = digits_from;
    while i < s.len() && s[i].is_ascii_digit() {
        i += 1;
        if i - digits_from > MAX_STATUS_DIGITS {
            return Num::Bad;
        }
    }
    let Some(&next) = s.get(i) else {
        return Num::Partial;
    };
    if i == digits_from || !ends.contains(&next) {
        return Num::Bad;
    }
    let text = std::str::from_utf8(&s[..i]).unwrap_or("");
    Num::Done(text.parse::<i32>().ok(), i)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use proptest::prelude::*;

    const TOKEN: &str = "__psAB12cd34ef56";

    fn all(chunks: &[&[u8]]) -> Vec<Sign> {
        let mut d = Detector::new(TOKEN);
        chunks.iter().flat_map(|c| d.feed(c)).collect()
    }

    #[test]
    fn osc_133_d_with_and_without_status_both_terminators() {
        assert_eq!(all(&[b"x\x1b]133;D;0\x07$ "]), vec![Sign::Osc133(Some(0))]);
        assert_eq!(
            all(&[b"\x1b]133;D;130\x1b\\"]),
            vec![Sign::Osc133(Some(130))]
        );
        assert_eq!(all(&[b"\x1b]133;D\x07"]), vec![Sign::Osc133(None)]);
        assert_eq!(
            all(&[b"\x1b]133;D;2;aid=77\x07"]),
            vec![Sign::Osc133(Some(2))]
        );
        assert_eq!(all(&[b"\x1b]133;D;x\x07"]), vec![Sign::Osc133(None)]);
        // ST cut between its ESC and its `\`, with and without a status.
        assert_eq!(all(&[b"\x1b]133;D\x1b", b"\\"]), vec![Sign::Osc133(None)]);
        assert_eq!(
            all(&[b"\x1b]133;D;4\x1b", b"\\"]),
            vec![Sign::Osc133(Some(4))]
        );
    }

    #[test]
    fn other_marks_and_lookalikes_are_not_signs() {
        assert!(all(&[b"\x1b]133;A\x07\x1b]133;B\x07\x1b]133;C\x07"]).is_empty());
        assert!(all(&[b"\x1b]1337;D;0\x07"]).is_empty());
        assert!(all(&[b"__psAB12cd34ef57:0\n"]).is_empty());
        assert!(all(&[b"__psAB12cd34ef5:0\n", b"__ps AB12cd34ef56:0\n"]).is_empty());
        // The echoed command line holds the pieces, never the token.
        assert!(all(&[b"true; printf '%s%s:%s\\n' __psAB12 cd34ef56 \"$?\"\r\n"]).is_empty());
        assert!(all(&[b"__psAB12cd34ef56:zero\n", b"__psAB12cd34ef56:\n"]).is_empty());
    }

    #[test]
    fn the_marker_with_its_status() {
        assert_eq!(
            all(&[b"out\r\n__psAB12cd34ef56:1\r\n$ "]),
            vec![Sign::Marker(1)]
        );
        assert_eq!(
            all(&[b"no newline__psAB12cd34ef56:0\n"]),
            vec![Sign::Marker(0)]
        );
    }

    #[test]
    fn an_unfinished_last_line_is_told_through_escapes() {
        let open = |chunks: &[&[u8]]| {
            let mut l = LineEnd::default();
            chunks.iter().for_each(|c| l.feed(c));
            l.open()
        };
        assert!(!open(&[b"$ eval 'x'\r\n", b"a\r\n"]));
        assert!(open(&[b"a\nabc"]));
        assert!(open(&[b"abc\r"]));
        // Colours, a title, a mark: not text.
        assert!(!open(&[
            b"a\n\x1b[1;3",
            b"1m\x1b]0;ti",
            b"tle\x07\x1b]133;C\x1b\\"
        ]));
        assert!(!open(&[b"a\n\x1b(B\x1bP+q\x1b\\"]));
        assert!(open(&[b"\n\x1b[0mz"]));
        // zsh's and fish's end-of-line mark after a line, or none.
        let sp = " ".repeat(40);
        let zsh = format!("\x1b[1m\x1b[7m%\x1b[27m\x1b[1m\x1b[0m{sp}\r \r");
        assert!(!open(&[b"a\n", zsh.as_bytes()]));
        assert!(open(&[b"a\nabc", zsh.as_bytes()]));
        let fish = format!("\x1b[2m\u{23ce}\x1b[m\x0f{sp}\r\u{23ce} \r\x1b[K");
        assert!(!open(&[b"a\n", fish.as_bytes()]));
        assert!(open(&[b"abc", fish.as_bytes(), b"\x1b]133;A\x07"]));
    }

    #[test]
    fn an_unfinished_last_lines_text_is_rendered_through_escapes_and_marks() {
        let text = |chunks: &[&[u8]]| {
            let mut l = LineEnd::default();
            chunks.iter().for_each(|c| l.feed(c));
            l.open_text()
        };
        assert_eq!(text(&[b"a\r\nabc"]).as_deref(), Some("abc"));
        assert_eq!(text(&[b"a\r\n"]), None);
        assert_eq!(text(&[b"abc\r"]).as_deref(), Some("abc"));
        assert_eq!(
            text(&[b"\x1b[1;31mab", b"\x1b[0mc\x1b(B"]).as_deref(),
            Some("abc")
        );
        assert_eq!(text(&[b"abcdef\r\x1b[Kxy"]).as_deref(), Some("xy"));
        // Cursor moves, saved positions, erase with a parameter: unknown.
        assert_eq!(text(&[b"abc\x1b[2Dx"]), None);
        assert_eq!(text(&[b"abc\x1b7x\x1b8"]), None);
        assert_eq!(text(&[b"abc\x1b[2K"]), None);
        assert_eq!(text(&[b"abc\x1b[2D\n", b"ok"]).as_deref(), Some("ok"));
        assert_eq!(text(&[b"ab\x1bMc"]), None);
        // bash turns bracketed paste off after the command's line; modes
        // and keypad settings move nothing.
        assert_eq!(text(&[b"\r\n\x1b[?2004l\rabc\r"]).as_deref(), Some("abc"));
        assert_eq!(text(&[b"\x1b[?1l\x1b>ab\x1b=c"]).as_deref(), Some("abc"));
        // zsh's and fish's end-of-line marks are taken back.
        let sp = " ".repeat(40);
        let zsh = format!("\x1b[1m\x1b[7m%\x1b[27m\x1b[1m\x1b[0m{sp}\r \r");
        assert_eq!(text(&[b"a\nabc", zsh.as_bytes()]).as_deref(), Some("abc"));
        assert_eq!(text(&[b"a\nabc\r", zsh.as_bytes()]).as_deref(), Some("abc"));
        let fish = format!("\x1b[2m\u{23ce}\x1b[m\x0f{sp}\r\u{23ce} \r\x1b[K");
        assert_eq!(text(&[b"abc", fish.as_bytes()]).as_deref(), Some("abc"));
        assert_eq!(text(&[b"abc\r", fish.as_bytes()]).as_deref(), Some("abc"));
    }

    #[test]
    fn every_mark_is_found_with_its_end_across_chunks() {
        let mut m = MarkScanner::new(256);
        let got = m.feed(b"x\x1b]133;A\x07$ \x1b]133;B\x1b\\ls\r\n\x1b]133;C;cmdline_url=ls");
        assert_eq!(
            got.iter().map(|(at, k)| (*at, k.kind)).collect::<Vec<_>>(),
            vec![(9, b'A'), (20, b'B')]
        );
        let got = m.feed(b"\x07out\n\x1b]133;D;130\x07");
        assert_eq!(got.len(), 2);
        assert_eq!((got[0].0, got[0].1.kind), (1, b'C'));
        assert_eq!(got[0].1.param("cmdline_url"), Some(&b"ls"[..]));
        assert_eq!((got[1].0, got[1].1.status()), (got[1].0, Some(130)));
        assert!(m.feed(b"\x1b]1337;D;0\x07\x1b]133;d\x07").is_empty());
        assert!(m.carry.is_empty());
        // OSC 7 only when asked, split anywhere, ended by BEL or ST.
        assert!(m.feed(b"\x1b]7;file://h/a\x07").is_empty());
        let mut c = MarkScanner::new(256).with_cwd();
        assert!(c.feed(b"$ \x1b]7;fi").is_empty());
        let got = c.feed(b"le://h/a%20b\x1b\\\x1b]133;A\x07\x1b]7;x\x07");
        let kinds: Vec<(usize, u8, &[u8])> = got
            .iter()
            .map(|(at, k)| (*at, k.kind, k.params.as_slice()))
            .collect();
        assert_eq!(
            kinds,
            vec![
                (14, b'7', &b"file://h/a%20b"[..]),
                (22, b'A', &b""[..]),
                (28, b'7', &b"x"[..])
            ]
        );
        assert!(c.carry.is_empty());
        // Nothing reported twice, the carry bounded.
        for _ in 0..100 {
            assert!(m.feed(&[b'y'; 1000]).is_empty());
            m.feed(b"\x1b]133;");
            assert!(m.carry.len() <= 256);
        }
    }

    /// Marks and where each ends in the whole stream, fed in `chunks`.
    fn scanned(max: usize, chunks: &[&[u8]]) -> (Vec<(usize, Mark)>, MarkScanner) {
        let mut m = MarkScanner::new(max);
        let mut fed = 0;
        let mut marks = Vec::new();
        for chunk in chunks {
            marks.extend(m.feed(chunk).into_iter().map(|(at, k)| (fed + at, k)));
            fed += chunk.len();
        }
        (marks, m)
    }

    /// A stream cut at every byte, or fed a byte at a time, gives the same
    /// marks ending at the same places: a C mark longer than an OSC the
    /// detector takes (the scanner's bound is its own), marks right after
    /// one another, each terminator, a lookalike, an ESC that starts none.
    #[test]
    fn the_scanner_finds_every_mark_once_wherever_the_stream_is_cut() {
        let cmdline = "x".repeat(200);
        let mut stream = b"out\x1b[1m\x1b]133;A\x07\x1b]133;B\x1b\\".to_vec();
        stream.extend_from_slice(format!("\x1b]133;C;cmdline_url={cmdline}\x07").as_bytes());
        stream.extend_from_slice(b"\x1b]1337;D;0\x07\x1b\x1b]133;D;-2;aid=9\x1b\\$ ");
        let at = |needle: &[u8], from: usize| {
            from + stream[from..]
                .windows(needle.len())
                .position(|w| w == needle)
                .unwrap()
                + needle.len()
        };
        let a = at(b"A\x07", 0);
        let b = at(b"\x1b\\", a);
        let c = at(b"x\x07", b);
        let d = at(b"\x1b\\", c);
        let (whole, m) = scanned(256, &[&stream]);
        let ends: Vec<(usize, u8)> = whole.iter().map(|(e, k)| (*e, k.kind)).collect();
        assert_eq!(ends, vec![(a, b'A'), (b, b'B'), (c, b'C'), (d, b'D')]);
        assert_eq!(whole[2].1.param("cmdline_url"), Some(cmdline.as_bytes()));
        assert_eq!(whole[3].1.status(), Some(-2));
        assert_eq!(whole[3].1.param("aid"), Some(&b"9"[..]));
        assert!(m.carry.is_empty(), "{:?}", m.carry);
        for cut in 0..=stream.len() {
            let (x, y) = stream.split_at(cut);
            assert_eq!(scanned(256, &[x, y]).0, whole, "cut at {cut}");
        }
        let bytes: Vec<&[u8]> = stream.chunks(1).collect();
        assert_eq!(scanned(256, &bytes).0, whole);
        // A scanner bounded below the C mark's length does not find it.
        let (short, _) = scanned(200, &[&stream]);
        assert_eq!(
            short.iter().map(|(_, k)| k.kind).collect::<Vec<_>>(),
            b"ABD"
        );
    }

    /// What the scanner carries: an unfinished mark from its ESC, nothing
    /// once the mark ends or when no mark can start, and never more than
    /// its bound.
    #[test]
    fn the_scanner_carries_only_an_unfinished_mark() {
        let mut m = MarkScanner::new(0);
        assert_eq!(m.max, MAX_OSC);
        assert!(m.feed(b"text \x1b]133;D;1").is_empty());
        assert_eq!(m.carry, b"\x1b]133;D;1");
        assert_eq!(m.feed(b"\x07 after").len(), 1);
        assert!(m.carry.is_empty());
        assert!(m.feed(b"\x1b]13").is_empty());
        assert_eq!(m.carry, b"\x1b]13");
        assert!(m.feed(b"7 no mark").is_empty());
        assert!(m.carry.is_empty());
        let mut long = b"\x1b]133;C;".to_vec();
        long.resize(MAX_OSC - 1, b'y');
        assert!(m.feed(&long).is_empty());
        assert_eq!(m.carry, long);
        assert_eq!(m.feed(b"\x07").len(), 1);
        long.push(b'y');
        assert!(m.feed(&long).is_empty());
        assert!(m.carry.is_empty(), "{:?}", m.carry.len());
    }

    #[test]
    fn the_carry_stays_bounded() {
        let mut d = Detector::new(TOKEN);
        for _ in 0..1000 {
            d.feed(&[b'y'; 4096]);
            d.feed(b"\x1b]133;");
        }
        assert!(d.carry.len() <= d.max_len());
    }

    /// Where a sign ends decides where the next one is looked for: a sign
    /// right after another (not a byte between) is found, after every
    /// form and terminator of the mark.
    #[test]
    fn a_sign_right_after_another_is_found() {
        let firsts: [(&[u8], Option<i32>); 5] = [
            (b"\x1b]133;D\x1b\\", None),
            (b"\x1b]133;D\x07", None),
            (b"\x1b]133;D;1\x1b\\", Some(1)),
            (b"\x1b]133;D;0;aid=12345;k=v\x07", Some(0)),
            (b"\x1b]133;D;0;aid=12345\x1b\\", Some(0)),
        ];
        for (first, status) in firsts {
            let mut stream = first.to_vec();
            stream.extend_from_slice(format!("{TOKEN}:3\n").as_bytes());
            stream.extend_from_slice(b"\x1b]133;D;7\x07");
            assert_eq!(
                all(&[&stream]),
                vec![Sign::Osc133(status), Sign::Marker(3), Sign::Osc133(Some(7))],
                "{:?}",
                String::from_utf8_lossy(&stream)
            );
        }
    }

    /// A status has at most ten digits after its sign (i32's extremes
    /// fit), and is a number only when the mark's or the marker's end
    /// follows it.
    #[test]
    fn statuses_of_ten_digits_and_no_more() {
        for status in [i32::MAX, i32::MIN, -999_999_999] {
            let marker = format!("{TOKEN}:{status}\n");
            assert_eq!(all(&[marker.as_bytes()]), vec![Sign::Marker(status)]);
            let mark = format!("\x1b]133;D;{status}\x07");
            assert_eq!(all(&[mark.as_bytes()]), vec![Sign::Osc133(Some(status))]);
        }
        // Eleven digits: no status, so the marker is no sign and the mark
        // has none.
        assert_eq!(all(&[format!("{TOKEN}:12345678901\n").as_bytes()]), vec![]);
        assert_eq!(
            all(&[b"\x1b]133;D;12345678901\x07"]),
            vec![Sign::Osc133(None)]
        );
        // Digits then another byte: not a status.
        assert_eq!(all(&[format!("{TOKEN}:12x\n").as_bytes()]), vec![]);
        assert_eq!(all(&[b"\x1b]133;D;12x\x07"]), vec![Sign::Osc133(None)]);
    }

    /// A mark's status is ten digits at most even when the number would
    /// fit (zeros in front), and `-` is the only sign: what `parse`
    /// alone would take is not a status.
    #[test]
    fn a_marks_status_is_ten_digits_with_no_sign_but_minus() {
        let status = |params: &[u8]| {
            Mark {
                kind: b'D',
                params: params.to_vec(),
            }
            .status()
        };
        assert_eq!(status(b"0000000001;aid=1"), Some(1));
        assert_eq!(status(b"-0000000001"), Some(-1));
        assert_eq!(status(b"00000000001;aid=1"), None);
        assert_eq!(status(b"-00000000001"), None);
        assert_eq!(status(b"+5"), None);
        assert_eq!(status(b""), None);
        assert_eq!(status(b"-"), None);
    }

    /// A mark `len` bytes long, BEL included: status 0 and parameters.
    fn mark_of(len: usize) -> Vec<u8> {
        let mut m = b"\x1b]133;D;0;".to_vec();
        m.resize(len - 1, b'x');
        m.push(0x07);
        m
    }

    /// A mark of [`MAX_OSC`] bytes, parameters included, is a sign; a byte
    /// longer it is not. A mark cut anywhere inside its parameters is found
    /// once whole.
    #[test]
    fn a_mark_is_bounded_and_found_when_cut_inside_its_parameters() {
        assert_eq!(all(&[&mark_of(MAX_OSC)]), vec![Sign::Osc133(Some(0))]);
        assert_eq!(all(&[&mark_of(MAX_OSC + 1)]), vec![]);
        let mark = mark_of(MAX_OSC);
        for cut in 11..mark.len() {
            let (a, b) = mark.split_at(cut);
            assert_eq!(all(&[a, b]), vec![Sign::Osc133(Some(0))], "cut at {cut}");
        }
    }

    /// The bound is on where the terminator starts: a mark ended by ST
    /// whose ESC is its [`MAX_OSC`]th byte is a sign, whole or cut between
    /// the ESC and the `\` (the ESC, last in the chunk, may start ST, so
    /// the mark is carried); an ESC a byte later is past the bound.
    #[test]
    fn a_mark_whose_st_starts_at_the_bound_is_found_when_cut_inside_st() {
        let st_mark = |len: usize| {
            let mut m = mark_of(len - 1);
            m.pop();
            m.extend_from_slice(b"\x1b\\");
            m
        };
        let mark = st_mark(MAX_OSC + 1);
        assert_eq!(mark[MAX_OSC - 1], 0x1b);
        assert_eq!(all(&[&mark]), vec![Sign::Osc133(Some(0))]);
        for cut in 11..mark.len() {
            let (a, b) = mark.split_at(cut);
            assert_eq!(all(&[a, b]), vec![Sign::Osc133(Some(0))], "cut at {cut}");
        }
        let over = st_mark(MAX_OSC + 2);
        assert_eq!(all(&[&over]), vec![]);
        let (a, b) = over.split_at(over.len() - 1);
        assert_eq!(all(&[a, b]), vec![]);
    }

    /// What is carried to the next chunk is the unfinished sign, and
    /// nothing once it completes; the bound is the longest sign: the
    /// longest mark, or the marker (token, `:`, `-`, the digits, CR or LF)
    /// when the token is long.
    #[test]
    fn only_an_unfinished_sign_is_carried() {
        let mut d = Detector::new(TOKEN);
        assert_eq!(d.feed(b"some output \x1b]133;D;"), vec![]);
        assert_eq!(d.carried(), b"\x1b]133;D;".len());
        assert_eq!(d.feed(b"0\x07"), vec![Sign::Osc133(Some(0))]);
        assert_eq!(d.carried(), 0);
        assert_eq!(d.max_len(), MAX_OSC);
        let long = "_".repeat(90);
        assert_eq!(
            Detector::new(&long).max_len(),
            90 + 1 + 1 + MAX_STATUS_DIGITS + 1
        );
    }

    /// A piece of a sign, or a byte other than `f` and `D` (which
    /// [`TOKEN`] and the OSC 133 D mark need).
    fn near_sign() -> impl Strategy<Value = Vec<u8>> {
        const PIECES: &[&[u8]] = &[
            b"__psAB12cd34e",
            b"__ps",
            b"\x1b]133;",
            b"\x1b]133;A",
            b"\x1b]1337;",
            b":0\r\n",
            b":-12\n",
            b";130",
            b"\x07",
            b"\x1b\\",
            b"\x1b",
        ];
        prop_oneof![
            3 => proptest::sample::select(PIECES).prop_map(<[u8]>::to_vec),
            1 => any::<u8>()
                .prop_filter("a byte a sign needs", |b| *b != b'f' && *b != b'D')
                .prop_map(|b| vec![b]),
        ]
    }

    proptest! {
        /// Any cut of a stream into chunks finds the same signs.
        #[test]
        fn chunking_does_not_change_what_is_found(
            noise in proptest::collection::vec(any::<u8>(), 0..64),
            cuts in proptest::collection::vec(0usize..200, 0..8),
            status in -5i32..300,
        ) {
            let mut stream = noise.clone();
            stream.extend_from_slice(format!("{TOKEN}:{status}\r\n").as_bytes());
            stream.extend_from_slice(&noise);
            stream.extend_from_slice(format!("\x1b]133;D;{status}\x1b\\").as_bytes());
            let whole = all(&[&stream]);
            let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c.min(stream.len())).collect();
            cuts.sort_unstable();
            let mut chunks: Vec<&[u8]> = Vec::new();
            let mut from = 0;
            for c in cuts {
                chunks.push(&stream[from..c]);
                from = c;
            }
            chunks.push(&stream[from..]);
            prop_assert_eq!(all(&chunks), whole.clone());
            prop_assert!(whole.contains(&Sign::Marker(status)));
            prop_assert_eq!(whole.last(), Some(&Sign::Osc133(Some(status))));
        }

        /// Text made of the signs' own pieces, cut anywhere into chunks,
        /// holds no sign when it lacks one byte of each: the token's `f`
        /// and the mark's `D`. Every `_` and ESC enters the parser, the
        /// pieces take it deep (the token up to its `f`, `ESC ] 133 ;`,
        /// statuses and both terminators), and nothing can complete.
        #[test]
        fn random_text_is_never_a_sign(
            pieces in proptest::collection::vec(near_sign(), 0..40),
            cuts in proptest::collection::vec(0usize..400, 0..6),
        ) {
            let text: Vec<u8> = pieces.concat();
            prop_assert!(!text.contains(&b'f') && !text.contains(&b'D'));
            let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c.min(text.len())).collect();
            cuts.sort_unstable();
            let mut chunks: Vec<&[u8]> = Vec::new();
            let mut from = 0;
            for c in cuts {
                chunks.push(&text[from..c]);
                from = c;
            }
            chunks.push(&text[from..]);
            prop_assert_eq!(all(&chunks), Vec::new(), "{:?}", String::from_utf8_lossy(&text));
        }
    }
}
