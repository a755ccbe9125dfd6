//! Which captured lines a command printed (pure).
//!
//! The capture runs, in tmux's line scale, from where the command was
//! typed (or a bounded window above the cursor) down to the cursor's row,
//! wrapped rows joined. In it:
//!
//! - the **start** is the echoed command line. With a marker it is the
//!   first line holding the call's random key (nothing printed before the
//!   call can hold it); with OSC 133 it is the first line, from where the
//!   prompt was, that holds the typed command (the last such line when
//!   that place is unknown: the history was trimmed). If tmux no longer holds
//!   it (`clear` erased it, the history limit dropped it, or the window was
//!   too short) the output starts at the first captured line and is
//!   flagged incomplete;
//! - the **end** is the marker line (text before the marker on that line
//!   is the command's last line, printed without a newline); with OSC 133,
//!   or before the command ended, the cursor's row, which is left out once
//!   the command ended (the next prompt) and kept while it runs (a line not
//!   yet finished).
//!
//! Lines between that hold the key are the shell's echo of a marker typed
//! again to read an interrupted command's status: they are not output.

/// How the start and end are recognised.
#[derive(Clone, Copy, Debug)]
pub struct Marks<'a> {
    /// The marker as printed (`TOKEN`), when the call appended one.
    pub token: Option<&'a str>,
    /// Text only the echo of the call's typed line holds (the second
    /// marker piece), when the call appended one.
    pub key: Option<&'a str>,
    /// The typed line.
    pub typed: &'a str,
    /// The command ended (the last line is then a prompt, not output).
    pub ended: bool,
    /// `earliest` is where the command was typed (false: unknown, and
    /// without a key the echo is the last line holding the typed text).
    pub placed: bool,
    /// Rows the pane's prompt takes (learned from an earlier marker: the
    /// rows from it to the cursor); 1 when not known.
    pub prompt_rows: usize,
    /// What the pane's line editor does after an echo that filled its
    /// last row exactly, with the pane's width; `None` when nothing.
    pub full_row: Option<FullRow>,
}

/// What follows an echo that filled its last row exactly.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FullRow {
    /// The line editor moves to a row of its own, leaving that row empty
    /// (zsh): the row is not output.
    Gap(usize),
    /// The line editor writes into the next row's first column to make the
    /// terminal wrap (readline: bash), so tmux joins that row to the echo:
    /// what follows the echo there is the command's first row even when
    /// empty (a leading empty line, or the empty row left by no output).
    Joined(usize),
}

/// A command's lines as the pane holds them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Extracted {
    /// Its lines, right-trimmed, oldest first.
    pub lines: Vec<String>,
    /// Its first line is in the capture (false: earlier lines are gone).
    pub start_found: bool,
    /// The rows from the marker to the cursor (the next prompt's), when a
    /// marker ended the command.
    pub prompt_rows: Option<usize>,
    /// The marker found the last line unfinished (printed without a final
    /// newline, or ended by a bare CR): that line is the last of `lines`.
    pub partial_last_line: bool,
}

/// The command's lines in `lines` (the capture, wrapped rows joined, the
/// cursor's row last); lines before `earliest` predate the call.
pub fn extract(lines: &[String], earliest: usize, marks: &Marks) -> Extracted {
    let (end, tail, mut open) = end_of(lines, marks);
    let start = start_of(lines, earliest.min(end), end, marks).or_else(|| {
        // With OSC 133, bash's next prompt may be drawn on the row tmux
        // joined to an echo that filled its row: the echo is then the end's.
        let on_end_row = marks.token.is_none()
            && marks.ended
            && matches!(marks.full_row, Some(FullRow::Joined(_)))
            && end < lines.len();
        on_end_row
            .then(|| start_of(lines, earliest.min(end), end + 1, marks))
            .flatten()
    });
    let from = start.as_ref().map_or(earliest.min(end), |s| s.0);
    let mut joined = start.as_ref().and_then(|s| s.1.clone());
    if from > end {
        // The echo's row is the end's: what tmux joined to it is the next
        // prompt, drawn on the row the command left empty.
        joined = None;
    } else if from == end && tail.is_none() && joined.as_deref() == Some("") {
        // The joined row is the one the marker's newline left: empty, so
        // the command printed nothing.
        joined = None;
        open = false;
    }
    let from = from.min(end);
    let mut out: Vec<String> = joined.into_iter().collect();
    // The prompt's rows above its last (a prompt of several lines), as
    // they stood above the echo: not output where they show again.
    let upper = match earliest.checked_sub(marks.prompt_rows.saturating_sub(1)) {
        Some(top) if marks.placed && marks.prompt_rows > 1 => &lines[top..earliest],
        _ => &[],
    };
    for line in &lines[from..end] {
        if marks.key.is_some_and(|k| line.contains(k)) {
            // A marker typed again at the prompt after an interrupt.
            drop_prompt(&mut out, upper);
            continue;
        }
        out.push(line.trim_end().to_owned());
    }
    if marks.token.is_none() && marks.ended {
        // Ended at the next prompt's last row: its rows above are not output.
        drop_prompt(&mut out, upper);
    }
    if let Some(tail) = tail {
        out.push(tail);
    }
    let prompt_rows = marks
        .token
        .filter(|_| marks.ended)
        .and_then(|t| lines.iter().rposition(|l| l.contains(t)))
        .map(|at| lines.len() - 1 - at);
    Extracted {
        partial_last_line: open && !out.is_empty(),
        lines: out,
        start_found: start.is_some(),
        prompt_rows,
    }
}

/// Drops the last lines of `out` while they are the prompt's `upper` rows,
/// from the bottom.
fn drop_prompt(out: &mut Vec<String>, upper: &[String]) {
    for row in upper.iter().rev() {
        if out.last().map(String::as_str) != Some(row.trim_end()) {
            break;
        }
        out.pop();
    }
}

/// The index one past the command's last full line, the text before the
/// marker on the marker's line (when not empty), and whether the marker
/// found its row unfinished (the last line had no final newline).
fn end_of(lines: &[String], marks: &Marks) -> (usize, Option<String>, bool) {
    if let Some(token) = marks.token {
        let found = lines
            .iter()
            .enumerate()
            .rev()
            .find_map(|(i, l)| l.find(token).map(|at| (i, at)));
        if let Some((i, at)) = found {
            let before = lines[i][..at].trim_end();
            if !before.is_empty() {
                return (i, Some(before.to_owned()), true);
            }
            // The marker's printf starts with a newline: the row it left
            // is the command's cursor row, empty after a final newline
            // (not output), or its last line printed without one.
            let left = i.checked_sub(1).filter(|&j| lines[j].trim_end().is_empty());
            return (left.unwrap_or(i), None, left.is_none());
        }
    }
    let Some(last) = lines.len().checked_sub(1) else {
        return (0, None, false);
    };
    if marks.ended || lines[last].trim_end().is_empty() {
        (last, None, false)
    } else {
        (lines.len(), None, false)
    }
}

/// The index of the first output line after the echo (and any rows of it
/// tmux did not join), if the echo is found; and the first output line
/// itself when tmux joined it to the echo (a line editor that filled the
/// last column forces the wrap, so the next row counts as a continuation).
fn start_of(
    lines: &[String],
    earliest: usize,
    end: usize,
    marks: &Marks,
) -> Option<(usize, Option<String>)> {
    let typed = marks.typed.trim_end();
    // What the echo holds, and the typed text that follows it there.
    let (anchor, rest) = match marks.key {
        Some(key) => (
            key,
            typed.find(key).map_or("", |at| &typed[at + key.len()..]),
        ),
        None => (typed, ""),
    };
    let found = |i: usize| echo_from(lines, i, end, anchor);
    let (echo, after_at) = if marks.key.is_some() || marks.placed {
        (earliest..end).find_map(found)?
    } else {
        (earliest..end).rev().find_map(found)?
    };
    let line = &lines[echo];
    let after = line.get(after_at..).unwrap_or("");
    // An echo filling its row exactly where readline makes tmux join the
    // next row: that row is the command's first, even empty.
    let row_joined = matches!(marks.full_row, Some(FullRow::Joined(w))
    if w > 0 && after.starts_with(rest) && {
        let echo_width = width(&line[..after_at]) + width(rest);
        echo_width > 0 && echo_width % w == 0
    });
    let joined = after
        .strip_prefix(rest)
        .map(str::trim_end)
        .filter(|r| row_joined || !r.is_empty())
        .map(str::to_owned);
    let mut from = echo + 1;
    // Rows of the echo tmux did not join (the line editor broke the line
    // itself): the rest of the typed text, row by row.
    let left = rest
        .strip_prefix(after)
        .or_else(|| rest.strip_prefix(after.trim_end()));
    if let Some(mut left) = left.filter(|_| marks.key.is_some()) {
        while !left.is_empty() && from < end {
            let row = lines[from].as_str();
            let piece = if left.starts_with(row) {
                row
            } else {
                row.trim_end()
            };
            if piece.is_empty() || !left.starts_with(piece) {
                break;
            }
            left = &left[piece.len()..];
            from += 1;
        }
    }
    let last = lines[from - 1].trim_end().chars().count();
    let filled =
        matches!(marks.full_row, Some(FullRow::Gap(w)) if w > 0 && last > 0 && last % w == 0);
    if filled && joined.is_none() && from < end && lines[from].is_empty() {
        from += 1;
    }
    Some((from, joined))
}

/// How many columns `text` takes on a terminal.
fn width(text: &str) -> usize {
    unicode_width::UnicodeWidthStr::width(text)
}

/// Where `anchor`, starting on row `first`, ends: its last row and the
/// byte just after it there. A line editor may break a long line itself
/// (zsh does), so tmux does not join its rows: the anchor is looked for
/// across rows as they are (not trimmed, so a space at a row's end stays).
fn echo_from(lines: &[String], first: usize, end: usize, anchor: &str) -> Option<(usize, usize)> {
    let head = lines.get(first)?;
    if let Some(at) = head.find(anchor) {
        return Some((first, at + anchor.len()));
    }
    let mut joined = head.clone();
    for (row, line) in lines.iter().enumerate().take(end).skip(first + 1) {
        if joined.len() >= head.len() + anchor.len() {
            break;
        }
        let before = joined.len();
        joined.push_str(line);
        let Some(at) = joined.find(anchor) else {
            continue;
        };
        let stop = at + anchor.len();
        return (at < head.len() && stop > before).then_some((row, stop - before));
    }
    None
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    const TYPED: &str = "make; printf '%s%s:%s\\n' __ps1a2b 3c4d5e6f \"$?\"";

    fn lines(text: &[&str]) -> Vec<String> {
        text.iter().map(|s| (*s).to_owned()).collect()
    }

    fn marker(ended: bool) -> Marks<'static> {
        Marks {
            token: Some("__ps1a2b3c4d5e6f:"),
            key: Some("3c4d5e6f"),
            typed: TYPED,
            ended,
            placed: true,
            prompt_rows: 1,
            full_row: None,
        }
    }

    fn run(text: &[&str], earliest: usize, marks: &Marks) -> (Vec<String>, bool) {
        let e = extract(&lines(text), earliest, marks);
        (e.lines, e.start_found)
    }

    #[test]
    fn output_between_echo_and_marker() {
        let echo = format!("$ {TYPED}");
        let text = [
            "old",
            "$ make",
            "old output",
            &echo,
            "a",
            "",
            "b  ",
            "__ps1a2b3c4d5e6f:0",
            "$ ",
        ];
        assert_eq!(run(&text, 1, &marker(true)), (lines(&["a", "", "b"]), true));
        // Nothing printed.
        let text = [echo.as_str(), "__ps1a2b3c4d5e6f:0", "$"];
        assert_eq!(run(&text, 0, &marker(true)), (vec![], true));
        // No newline at the end: the marker follows on the same line.
        let text = [echo.as_str(), "x", "last__ps1a2b3c4d5e6f:0", "$"];
        assert_eq!(run(&text, 0, &marker(true)), (lines(&["x", "last"]), true));
    }

    #[test]
    fn the_row_the_markers_newline_left_is_output_only_when_not_empty() {
        let echo = format!("$ {TYPED}");
        let m = "__ps1a2b3c4d5e6f:0";
        // `echo a`: the empty cursor row it left is not output.
        let text = [echo.as_str(), "a", "", m, "$"];
        assert_eq!(run(&text, 0, &marker(true)).0, lines(&["a"]));
        // `printf 'a\n\n'`: one empty line is.
        let text = [echo.as_str(), "a", "", "", m, "$"];
        assert_eq!(run(&text, 0, &marker(true)).0, lines(&["a", ""]));
        // `printf abc` or `printf 'abc\r'`: the unfinished row is, and is
        // said to be.
        let text = [echo.as_str(), "abc", m, "$"];
        let e = extract(&lines(&text), 0, &marker(true));
        assert_eq!((e.lines, e.partial_last_line), (lines(&["abc"]), true));
        let text = [echo.as_str(), "abc", "", m, "$"];
        let e = extract(&lines(&text), 0, &marker(true));
        assert_eq!((e.lines, e.partial_last_line), (lines(&["abc"]), false));
        // Nothing printed.
        let text = [echo.as_str(), "", m, "$"];
        assert_eq!(run(&text, 0, &marker(true)), (vec![], true));
    }

    #[test]
    fn lookalikes_of_the_marker_are_output() {
        let echo = format!("$ {TYPED}");
        let text = [
            echo.as_str(),
            "__ps1a2b3c4d5e6e:0",
            "__ps:1",
            "__ps1a2b3c4d5e6f:0",
            "$",
        ];
        assert_eq!(
            run(&text, 0, &marker(true)).0,
            lines(&["__ps1a2b3c4d5e6e:0", "__ps:1"])
        );
    }

    #[test]
    fn output_joined_to_an_echo_that_filled_the_row_is_output() {
        let echo = format!("$ {TYPED}first");
        let text = [echo.as_str(), "second", "__ps1a2b3c4d5e6f:0", "$"];
        assert_eq!(run(&text, 0, &marker(true)).0, lines(&["first", "second"]));
        let marks = Marks {
            token: None,
            key: None,
            typed: "ls -1",
            ended: true,
            placed: true,
            prompt_rows: 1,
            full_row: None,
        };
        let text = ["$ ls -1a", "b", "$ "];
        assert_eq!(run(&text, 0, &marks).0, lines(&["a", "b"]));
    }

    #[test]
    fn an_echo_the_line_editor_broke_into_rows_is_found_across_them() {
        // zsh breaks a long line itself: the key spans two rows, and
        // the typed text after it a third.
        let text = [
            "$ make; printf '%s%s:%s\\n' __ps1a2b 3c4d",
            "5e6f \"$",
            "?\"",
            "out",
            "__ps1a2b3c4d5e6f:0",
            "$",
        ];
        assert_eq!(run(&text, 0, &marker(true)), (lines(&["out"]), true));
        let marks = Marks {
            token: None,
            key: None,
            typed: "eval 'echo aaaa bbbb'",
            ended: true,
            placed: false,
            prompt_rows: 1,
            full_row: None,
        };
        let text = ["$ eval 'echo aaaa ", "bbbb'", "aaaa bbbb", "$ "];
        assert_eq!(run(&text, 0, &marks), (lines(&["aaaa bbbb"]), true));
    }

    #[test]
    fn an_echo_the_line_editor_broke_into_many_rows_is_skipped_whole() {
        let typed = format!("{TYPED}; print -rs -- 'echo {}'", "w".repeat(30));
        let marks = Marks {
            typed: &typed,
            ..marker(true)
        };
        let echo = format!("$ {typed}");
        let rows: Vec<&str> = [&echo[..20], &echo[20..40], &echo[40..60], &echo[60..]]
            .into_iter()
            .collect();
        let mut text = rows.clone();
        text.extend(["wwww", "__ps1a2b3c4d5e6f:0", "$"]);
        assert_eq!(run(&text, 0, &marks), (lines(&["wwww"]), true));
    }

    #[test]
    fn a_prompt_of_two_lines_is_not_output() {
        // Learned from the marker: the next prompt takes two rows.
        let echo = format!("$ {TYPED}");
        let text = [
            "~/src main",
            echo.as_str(),
            "a",
            "",
            "__ps1a2b3c4d5e6f:0",
            "~/src main",
            "$",
        ];
        assert_eq!(
            extract(&lines(&text), 1, &marker(true)).prompt_rows,
            Some(2)
        );
        // After an interrupt, the prompt's first line above the marker
        // typed again is not output.
        let again = "$ printf '%s%s:%s\\n' __ps1a2b 3c4d5e6f \"$?\"";
        let two = Marks {
            prompt_rows: 2,
            ..marker(true)
        };
        let text = [
            "~/src main",
            echo.as_str(),
            "1",
            "^C",
            "~/src main",
            again,
            "",
            "__ps1a2b3c4d5e6f:130",
            "~/src main",
            "$",
        ];
        assert_eq!(run(&text, 1, &two).0, lines(&["1", "^C"]));
        // With OSC 133, at the next prompt.
        let osc = Marks {
            token: None,
            key: None,
            typed: "ls -1",
            ended: true,
            placed: true,
            prompt_rows: 2,
            full_row: None,
        };
        let text = ["~/src main", "$ ls -1", "a", "~/src main", "$ "];
        assert_eq!(run(&text, 1, &osc).0, lines(&["a"]));
        // Output that differs from the prompt's line stays; a one-line
        // prompt drops nothing.
        let text = ["x", "$ ls -1", "x", "$ "];
        let one = Marks {
            prompt_rows: 1,
            ..osc
        };
        assert_eq!(run(&text, 1, &one).0, lines(&["x"]));
    }

    #[test]
    fn the_empty_row_zsh_leaves_after_an_echo_that_filled_its_row_is_not_output() {
        let echo = format!("$ {TYPED}");
        let width = echo.len();
        let zsh = Marks {
            full_row: Some(FullRow::Gap(width)),
            ..marker(true)
        };
        let m = "__ps1a2b3c4d5e6f:0";
        let text = [echo.as_str(), "", "its q", "", m, "$"];
        assert_eq!(run(&text, 0, &zsh).0, lines(&["its q"]));
        // An empty first line of the command's own stays.
        let text = [echo.as_str(), "", "", "abc", m, "$"];
        assert_eq!(run(&text, 0, &zsh).0, lines(&["", "abc"]));
        // A shorter echo, or another shell: the empty row is output.
        let wider = Marks {
            full_row: Some(FullRow::Gap(width + 1)),
            ..zsh
        };
        let text = [echo.as_str(), "", "abc", m, "$"];
        assert_eq!(run(&text, 0, &wider).0, lines(&["", "abc"]));
        assert_eq!(run(&text, 0, &marker(true)).0, lines(&["", "abc"]));
    }

    #[test]
    fn the_row_bash_joins_to_an_echo_that_filled_its_row_is_the_first_output_row() {
        let echo = format!("$ {TYPED}");
        let bash = Marks {
            full_row: Some(FullRow::Joined(echo.len())),
            ..marker(true)
        };
        let m = "__ps1a2b3c4d5e6f:0";
        // A leading empty line: the joined row holds readline's space.
        let joined = format!("{echo} ");
        let text = [joined.as_str(), "x", "", m, "$"];
        assert_eq!(run(&text, 0, &bash).0, lines(&["", "x"]));
        // No output: the joined row is the one the marker's newline left.
        let e = extract(&lines(&[joined.as_str(), m, "$"]), 0, &bash);
        assert_eq!((e.lines.len(), e.partial_last_line), (0, false));
        // A first line of text, and one without a newline.
        let first = format!("{echo}x");
        assert_eq!(
            run(&[first.as_str(), "", m, "$"], 0, &bash).0,
            lines(&["x"])
        );
        let e = extract(&lines(&[first.as_str(), m, "$"]), 0, &bash);
        assert_eq!((e.lines, e.partial_last_line), (lines(&["x"]), true));
        // An echo one column short fills no row: nothing was joined.
        let short = Marks {
            full_row: Some(FullRow::Joined(echo.len() + 1)),
            ..bash
        };
        assert_eq!(
            run(&[echo.as_str(), "", "x", "", m], 0, &short).0,
            lines(&["", "x"])
        );
        assert_eq!(
            run(&[joined.as_str(), "x", "", m], 0, &short).0,
            lines(&["x"])
        );
    }

    #[test]
    fn a_lost_start_takes_what_is_left_and_says_so() {
        // `clear`: the echo is gone; what the command printed after it is
        // at the top.
        let text = ["hi", "__ps1a2b3c4d5e6f:0", "$"];
        assert_eq!(run(&text, 0, &marker(true)), (lines(&["hi"]), false));
    }

    #[test]
    fn a_running_command_keeps_its_unfinished_line() {
        let echo = format!("$ {TYPED}");
        let text = [echo.as_str(), "1", "2", "partial"];
        assert_eq!(
            run(&text, 0, &marker(false)),
            (lines(&["1", "2", "partial"]), true)
        );
        let text = [echo.as_str(), "1", ""];
        assert_eq!(run(&text, 0, &marker(false)).0, lines(&["1"]));
    }

    #[test]
    fn a_retyped_status_marker_is_not_output() {
        let echo = format!("$ {TYPED}");
        let again = "$ printf '%s%s:%s\\n' __ps1a2b 3c4d5e6f \"$?\"";
        let text = [echo.as_str(), "1", "^C", again, "__ps1a2b3c4d5e6f:130", "$"];
        assert_eq!(run(&text, 0, &marker(true)).0, lines(&["1", "^C"]));
    }

    #[test]
    fn osc_133_ends_at_the_prompt_row() {
        let marks = Marks {
            token: None,
            key: None,
            typed: "ls -1",
            ended: true,
            placed: true,
            prompt_rows: 1,
            full_row: None,
        };
        let text = ["$ ls -1", "old", "$ ls -1", "a", "b", "$ "];
        assert_eq!(run(&text, 2, &marks), (lines(&["a", "b"]), true));
        let text = ["$ ls -1", "$ "];
        assert_eq!(run(&text, 0, &marks), (vec![], true));
        // Its place unknown: the last echo of that command is this one.
        let unplaced = Marks {
            placed: false,
            ..marks
        };
        let text = ["$ ls -1", "old", "$ ls -1", "a", "$ "];
        assert_eq!(run(&text, 0, &unplaced).0, lines(&["a"]));
    }

    /// The prompt's upper rows are dropped only where they are known to be
    /// the prompt's: a marker's output, and a command whose place is
    /// unknown, keep a last line that reads as the row above.
    #[test]
    fn output_like_the_prompts_upper_row_stays_where_that_row_is_not_known() {
        let echo = format!("$ {TYPED}");
        let two = Marks {
            prompt_rows: 2,
            ..marker(true)
        };
        // The marker ends the output: its last line is output, even when
        // it reads as the row above the echo.
        let text = [
            "~/src main",
            echo.as_str(),
            "~/src main",
            "__ps1a2b3c4d5e6f:0",
            "~/src main",
            "$",
        ];
        assert_eq!(run(&text, 1, &two).0, lines(&["~/src main"]));
        // With OSC 133 and the place unknown, the row above the window is
        // not the prompt's.
        let unplaced = Marks {
            token: None,
            key: None,
            typed: "ls -1",
            ended: true,
            placed: false,
            prompt_rows: 2,
            full_row: None,
        };
        let text = ["x", "$ ls -1", "x", "$ "];
        assert_eq!(run(&text, 1, &unplaced).0, lines(&["x"]));
        // Still running (no prompt yet): nothing is dropped.
        let running = Marks {
            ended: false,
            placed: true,
            ..unplaced
        };
        let text = ["x", "$ ls -1", "x", ""];
        assert_eq!(run(&text, 1, &running).0, lines(&["x"]));
    }

    /// Where the echo is looked for: from the call's place forwards with a
    /// key (the first line holding it; a marker typed again holds it too)
    /// or a known place; backwards only without either.
    #[test]
    fn the_echo_is_the_first_from_the_place_when_the_place_or_a_key_is_known() {
        // A key, the place unknown: the first line holding it.
        let echo = format!("$ {TYPED}");
        let again = "$ printf '%s%s:%s\\n' __ps1a2b 3c4d5e6f \"$?\"";
        let unplaced = Marks {
            placed: false,
            ..marker(true)
        };
        let text = [echo.as_str(), "1", "^C", again, "__ps1a2b3c4d5e6f:130", "$"];
        assert_eq!(run(&text, 0, &unplaced), (lines(&["1", "^C"]), true));
        // No key, the place known: the first echo after it, though the
        // output holds the typed text again.
        let placed = Marks {
            token: None,
            key: None,
            typed: "cat notes",
            ended: true,
            placed: true,
            prompt_rows: 1,
            full_row: None,
        };
        let text = ["$ cat notes", "run cat notes", "done", "$ "];
        assert_eq!(
            run(&text, 0, &placed),
            (lines(&["run cat notes", "done"]), true)
        );
    }

    /// A running command whose echo is the last line captured: nothing
    /// printed yet, and no row past the capture is read.
    #[test]
    fn a_running_command_with_only_its_echo_has_no_output() {
        let echo = format!("$ {TYPED}");
        assert_eq!(run(&[echo.as_str()], 0, &marker(false)), (vec![], true));
    }

    /// An echo the line editor broke into rows, whose last row filled and
    /// took the first output line: that line is output, from just after
    /// the typed text.
    #[test]
    fn output_joined_to_the_last_row_of_a_broken_echo_is_output() {
        let text = [
            "$ make; printf '%s%s:%s\\n' __ps1a2b 3c4d",
            "5e6f \"$?\"first",
            "second",
            "__ps1a2b3c4d5e6f:0",
            "$",
        ];
        assert_eq!(
            run(&text, 0, &marker(true)),
            (lines(&["first", "second"]), true)
        );
    }
}
