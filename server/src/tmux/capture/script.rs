//! A chunk's `source-file` script, its token, and tmux's range arguments.
//!
//! Per pane, a header and the capture:
//!
//! ```text
//! display-message -p -t %P "TOKEN i #{pane_id} #{history_size} #{pane_width} #{pane_height}"
//! capture-pane -p [-J] [-e] -t %P [-S s] [-E e]
//! ```
//!
//! and `display-message -p "TOKEN end"` last. A chunk that holds a large
//! share of the server's panes instead opens with one `list-panes -a` of
//! those fields and heads each capture with a bare `TOKEN i` line.
//!
//! Must hold: TOKEN is 128 random bits per chunk, so no pane can print a
//! header (no `%end` forgery possible); `span` is tmux's own clamping of
//! `-S`/`-E` (cmd-capture-pane.c), which the cutters rely on.

use super::{CaptureOptions, CaptureRange, CaptureRequest};
use crate::sync::nonce;

/// A chunk's token: 128 random bits written as 22 letters and digits
/// (62^22 > 2^128) instead of 32 hex digits. It heads every header line,
/// and tmux's parse of a script costs the square of its bytes (see
/// [`chunk_panes`](super::sizing::chunk_panes)): the shorter token keeps
/// the same secret in fewer bytes.
pub(super) fn sweep_token() -> String {
    const DIGITS: &[u8; 62] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    let hex = nonce();
    let Ok(mut n) = u128::from_str_radix(&hex, 16) else {
        // Not expected; the hex token is as secret, only longer.
        return hex;
    };
    let mut token = String::with_capacity(22);
    for _ in 0..22 {
        token.push(char::from(DIGITS[(n % 62) as usize]));
        n /= 62;
    }
    token
}

/// The `-S`/`-E` arguments for `range`.
pub(super) fn range_args(range: CaptureRange) -> (Option<String>, Option<String>) {
    const LO: i64 = -2_000_000_000;
    const HI: i64 = 32_767;
    match range {
        CaptureRange::Visible | CaptureRange::Scrollback(0) => (None, None),
        CaptureRange::Scrollback(n) => match i64::try_from(n) {
            Ok(n) if n < -LO => (Some(format!("-{n}")), None),
            _ => (Some("-".into()), None),
        },
        CaptureRange::AllHistory => (Some("-".into()), None),
        CaptureRange::Lines { start, end } => (
            Some(start.clamp(LO, HI).to_string()),
            Some(end.clamp(LO, HI).to_string()),
        ),
    }
}

/// tmux's own clamping of `-S`/`-E` (cmd-capture-pane.c): the first and
/// last line captured, in tmux's scale.
pub(super) fn span(range: CaptureRange, hsize: u64, height: u32) -> (i64, i64) {
    let h = i64::try_from(hsize).unwrap_or(i64::MAX / 4);
    let sy = i64::from(height.max(1));
    let (s, e) = range_args(range);
    let pos = |arg: Option<String>, default: i64, dash: i64| -> i64 {
        match arg.as_deref() {
            None => default,
            Some("-") => dash,
            Some(v) => {
                let n: i64 = v.parse().unwrap_or(0);
                let top = if n < 0 && -n > h { 0 } else { h + n };
                top.min(h + sy - 1)
            }
        }
    };
    let top = pos(s, h, 0);
    let bottom = pos(e, h + sy - 1, h + sy - 1);
    let (a, b) = if bottom < top {
        (bottom, top)
    } else {
        (top, bottom)
    };
    (a - h, b - h)
}

/// The index field of a listing line.
pub(super) const LISTING: &str = "L";

/// What a header (or a listing line) says of a pane.
pub(super) const PROBE_FIELDS: &str = "#{pane_id} #{history_size} #{pane_width} #{pane_height}";

/// The `source-file` script for a chunk.
///
/// Each capture is preceded by a header line, in one of two forms:
///
/// - a probe of its own pane (`display-message -t %P` with the pane's id,
///   history size and size);
/// - when the chunk holds at least a quarter of the server's panes (as last
///   listed), one `list-panes -a` of the same fields for every pane at the
///   top, and an untargeted literal line before each capture. tmux runs the
///   script without yielding, so the listing holds for every capture in it,
///   and a pane missing from it is gone.
///
/// Why (tmux 3.3a): every command costs tmux a fixed amount that grows
/// with the server, and a probe costs more than the literal line, while a
/// listing row costs a fraction of a probe. The listing therefore pays
/// once a chunk holds more than about a quarter of the server. A visible
/// capture itself costs little more than a command, so there the header
/// is a large share, which the listing form cuts (the figures:
/// BENCHMARKS.md, "tmux transport").
pub(super) fn script(
    token: &str,
    chunk: &[CaptureRequest],
    options: CaptureOptions,
    server_panes: usize,
) -> String {
    let listed = server_panes > 0 && chunk.len() * 4 >= server_panes;
    let mut s = String::with_capacity(chunk.len() * 160);
    if listed {
        s.push_str(&format!(
            "list-panes -a -F \"{token} {} {PROBE_FIELDS}\"\n",
            LISTING
        ));
    }
    for (i, r) in chunk.iter().enumerate() {
        let p = r.pane;
        if listed {
            s.push_str(&format!("display-message -p \"{token} {i}\"\n"));
        } else {
            s.push_str(&format!(
                "display-message -p -t {p} \"{token} {i} {PROBE_FIELDS}\"\n"
            ));
        }
        s.push_str("capture-pane -p");
        if options.join_wrapped {
            s.push_str(" -J");
        }
        if options.escapes {
            s.push_str(" -e");
        }
        s.push_str(&format!(" -t {p}"));
        let (a, b) = range_args(r.range);
        if let Some(a) = a {
            s.push_str(&format!(" -S {a}"));
        }
        if let Some(b) = b {
            s.push_str(&format!(" -E {b}"));
        }
        s.push('\n');
    }
    s.push_str(&format!("display-message -p \"{token} end\"\n"));
    s
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::super::super::ids::PaneId;
    use super::*;

    fn requests(n: u32, range: CaptureRange) -> Vec<CaptureRequest> {
        (0..n)
            .map(|i| CaptureRequest {
                pane: PaneId::from_number(i),
                range,
            })
            .collect()
    }

    #[test]
    fn a_sweep_script_costs_tmux_two_short_commands_a_pane() {
        // tmux's parse of a script costs the square of its bytes: a pane
        // adds two commands and ~75 bytes (85 with a hex token).
        let token = sweep_token();
        assert_eq!(token.len(), 22, "{token}");
        assert!(token.bytes().all(|b| b.is_ascii_alphanumeric()), "{token}");
        let chunk = requests(1000, CaptureRange::Visible);
        let options = CaptureOptions {
            join_wrapped: true,
            escapes: false,
        };
        let listed = script(&token, &chunk[500..], options, 1000);
        let commands = listed.lines().count();
        assert_eq!(commands, 2 * 500 + 2, "{commands}");
        assert!(listed.len() <= 500 * 76 + 200, "{} bytes", listed.len());
        assert_eq!(listed.matches(token.as_str()).count(), 500 + 2);
    }

    #[test]
    fn spans_follow_tmux_clamping() {
        assert_eq!(span(CaptureRange::Visible, 100, 24), (0, 23));
        assert_eq!(span(CaptureRange::Scrollback(10), 100, 24), (-10, 23));
        assert_eq!(span(CaptureRange::Scrollback(1000), 100, 24), (-100, 23));
        assert_eq!(span(CaptureRange::AllHistory, 100, 24), (-100, 23));
        assert_eq!(
            span(CaptureRange::Lines { start: -5, end: 2 }, 100, 24),
            (-5, 2)
        );
        assert_eq!(
            span(CaptureRange::Lines { start: 5, end: -2 }, 100, 24),
            (-2, 5)
        );
        assert_eq!(
            span(
                CaptureRange::Lines {
                    start: -500,
                    end: 50
                },
                100,
                24
            ),
            (-100, 23)
        );
    }
}
