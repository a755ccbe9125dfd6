//! What typing does to a shell's input line (pure): text and tmux key
//! names turned into the lines a shell would be handed, and what stays
//! typed but not entered, per pane, between calls.
//!
//! What must hold: every key that submits a line in a shell (`Enter`,
//! `C-m`, `C-j`, `KPEnter`, `^M`, `0xd`..., in any case) submits here; a
//! newline inside literal text submits; keys whose effect on the line
//! cannot be modelled (cursor moves, completion, history) mark the line
//! unknown instead of being guessed. The text kept per pane is bounded
//! ([`MAX_PENDING_BYTES`], [`MAX_PANES`]).

use std::collections::HashMap;

/// Typed-but-not-entered text kept per pane; past it the oldest is cut
/// (what is cut is still on the pane's screen, which the gate reads too).
pub const MAX_PENDING_BYTES: usize = 16 * 1024;
/// Panes whose pending text is kept; past it the least recent is dropped.
const MAX_PANES: usize = 1024;

/// One step of typing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stroke {
    /// Characters inserted at the end of the line.
    Text(String),
    /// The line is handed to the shell.
    Submit,
    /// The last character removed.
    Backspace,
    /// The last word removed (`C-w`).
    KillWord,
    /// The line emptied (`C-u`, `C-c`).
    Clear,
    /// Something the model cannot follow (cursor keys, completion).
    Unknown,
}

/// What a tmux key name does to an input line.
pub fn stroke_of_key(key: &str) -> Stroke {
    let upper = key.to_ascii_uppercase();
    let ctrl = upper
        .strip_prefix("C-")
        .or_else(|| upper.strip_prefix('^'))
        .filter(|rest| rest.chars().count() == 1);
    match (upper.as_str(), ctrl) {
        ("ENTER" | "KPENTER", _) | (_, Some("M" | "J")) => Stroke::Submit,
        (_, Some("U" | "C")) => Stroke::Clear,
        (_, Some("H")) | ("BSPACE", _) => Stroke::Backspace,
        (_, Some("W")) => Stroke::KillWord,
        ("SPACE", _) => Stroke::Text(" ".into()),
        _ if key.chars().count() == 1 => Stroke::Text(key.into()),
        _ => hex_key(&upper).unwrap_or(Stroke::Unknown),
    }
}

/// A key given as a code point (`0x72`, `0xd`).
fn hex_key(upper: &str) -> Option<Stroke> {
    let code = u32::from_str_radix(upper.strip_prefix("0X")?, 16).ok()?;
    Some(match code {
        0x0a | 0x0d => Stroke::Submit,
        0x08 | 0x7f => Stroke::Backspace,
        0x15 | 0x03 => Stroke::Clear,
        0x17 => Stroke::KillWord,
        c if c < 0x20 => Stroke::Unknown,
        c => Stroke::Text(char::from_u32(c)?.into()),
    })
}

/// Literal text as strokes: each `\n` or `\r` submits.
pub fn strokes_of_text(text: &str) -> Vec<Stroke> {
    let mut out = Vec::new();
    let mut run = String::new();
    for c in text.chars() {
        if c == '\n' || c == '\r' {
            if !run.is_empty() {
                out.push(Stroke::Text(std::mem::take(&mut run)));
            }
            out.push(Stroke::Submit);
        } else {
            run.push(c);
        }
    }
    if !run.is_empty() {
        out.push(Stroke::Text(run));
    }
    out
}

/// A line being typed: its text and whether it can be told.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Line {
    /// What the model says the line holds.
    pub text: String,
    /// A key the model cannot follow touched it.
    pub unknown: bool,
}

/// What a run of strokes does, starting from `pending`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Typed {
    /// The lines handed to the shell, in order.
    pub submitted: Vec<Line>,
    /// What stays typed but not entered.
    pub pending: Line,
    /// A key the model cannot follow came before a submit in this call.
    pub unknown_before_submit: bool,
}

/// Applies `strokes` to `pending`.
pub fn apply(pending: &Line, strokes: &[Stroke]) -> Typed {
    let mut line = pending.clone();
    let mut out = Typed::default();
    let mut unknown_here = false;
    for s in strokes {
        match s {
            Stroke::Text(t) => line.text.push_str(t),
            Stroke::Submit => {
                out.unknown_before_submit |= unknown_here;
                out.submitted.push(std::mem::take(&mut line));
            }
            Stroke::Backspace => {
                line.text.pop();
            }
            Stroke::KillWord => {
                let kept = line.text.trim_end().rfind(' ').map_or(0, |i| i + 1);
                line.text.truncate(kept);
            }
            Stroke::Clear => line = Line::default(),
            Stroke::Unknown => {
                line.unknown = true;
                unknown_here = true;
            }
        }
    }
    if line.text.len() > MAX_PENDING_BYTES {
        let mut cut = line.text.len() - MAX_PENDING_BYTES;
        while !line.text.is_char_boundary(cut) {
            cut += 1;
        }
        line.text.drain(..cut);
        line.unknown = true;
    }
    out.pending = line;
    out
}

/// The pending line of every pane typed into, bounded.
#[derive(Debug, Default)]
pub struct Pending {
    lines: HashMap<String, (u64, Line)>,
    clock: u64,
}

impl Pending {
    /// The pending line of pane `key` (empty when none is known).
    pub fn get(&self, key: &str) -> Line {
        self.lines
            .get(key)
            .map(|(_, l)| l.clone())
            .unwrap_or_default()
    }

    /// Records `line` as pane `key`'s pending line.
    pub fn set(&mut self, key: &str, line: Line) {
        self.clock += 1;
        if line == Line::default() {
            self.lines.remove(key);
            return;
        }
        if self.lines.len() >= MAX_PANES && !self.lines.contains_key(key) {
            let oldest = self
                .lines
                .iter()
                .min_by_key(|(_, (t, _))| *t)
                .map(|(k, _)| k.clone());
            if let Some(k) = oldest {
                self.lines.remove(&k);
            }
        }
        self.lines.insert(key.to_owned(), (self.clock, line));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(list: &[&str]) -> Vec<Stroke> {
        list.iter().map(|k| stroke_of_key(k)).collect()
    }

    #[test]
    fn every_submit_key_submits() {
        for k in [
            "Enter", "enter", "C-m", "C-M", "c-j", "^M", "^j", "KPEnter", "0xd", "0x0A",
        ] {
            assert_eq!(stroke_of_key(k), Stroke::Submit, "{k}");
        }
        assert_eq!(stroke_of_key("Left"), Stroke::Unknown);
        assert_eq!(stroke_of_key("r"), Stroke::Text("r".into()));
        assert_eq!(stroke_of_key("0x72"), Stroke::Text("r".into()));
        assert_eq!(stroke_of_key("Space"), Stroke::Text(" ".into()));
    }

    #[test]
    fn keys_split_over_calls_make_one_line() {
        let first = apply(&Line::default(), &strokes_of_text("rm -r"));
        assert!(first.submitted.is_empty());
        let mut strokes = keys(&["f", "Space", "/"]);
        strokes.push(stroke_of_key("C-j"));
        let second = apply(&first.pending, &strokes);
        assert_eq!(second.submitted[0].text, "rm -rf /");
        assert_eq!(second.pending, Line::default());
    }

    #[test]
    fn editing_keys_edit_or_mark_unknown() {
        let t = apply(
            &Line::default(),
            &[
                Stroke::Text("ls; echo".into()),
                Stroke::KillWord,
                stroke_of_key("BSpace"),
                Stroke::Submit,
            ],
        );
        assert_eq!(t.submitted[0].text, "ls;");
        let t = apply(&Line::default(), &keys(&["a", "Left", "b", "Enter"]));
        assert!(t.submitted[0].unknown && t.unknown_before_submit);
        let t = apply(
            &Line::default(),
            &keys(&["a", "Left", "C-u", "l", "s", "Enter"]),
        );
        assert!(!t.submitted[0].unknown, "C-u starts a clean line");
    }

    #[test]
    fn pending_is_bounded() {
        let mut p = Pending::default();
        for i in 0..MAX_PANES + 10 {
            p.set(
                &format!("%{i}"),
                Line {
                    text: "x".into(),
                    unknown: false,
                },
            );
        }
        assert!(p.lines.len() <= MAX_PANES);
        let t = apply(
            &Line::default(),
            &[Stroke::Text("é".repeat(MAX_PENDING_BYTES))],
        );
        assert!(t.pending.text.len() <= MAX_PENDING_BYTES && t.pending.unknown);
    }
}
