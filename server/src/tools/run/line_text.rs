//! The text of a pane's unfinished last line, rendered from its raw output
//! (pure): printable characters written at a column, CR back to the first
//! column (what follows overwrites), backspace, tab stops, erase to the
//! row's end; invalid UTF-8 shows nothing, as in tmux. With OSC 133, bash draws its next prompt over such a line and
//! zsh's and fish's end-of-line marks overwrite one ended by a bare CR, so
//! the screen no longer shows it; the raw output still says it.
//!
//! What must hold: the text is only given when every byte of the line was
//! followed; anything that moves the cursor another way (cursor keys, a
//! saved position, a line longer than [`MAX_CELLS`]) makes it unknown
//! (`None`) until the next newline. An end-of-line mark (one character,
//! then spaces) is taken back whole with [`LineText::unmark`].

/// Longest line rendered (columns).
const MAX_CELLS: usize = 4096;
/// Tab stops every this many columns, as terminals set them.
const TAB: usize = 8;

/// One row being written, from its last newline.
#[derive(Clone, Debug, Default)]
pub struct LineText {
    /// The row's cells; a wide character's second cell is `'\0'`.
    cells: Vec<char>,
    col: usize,
    /// The line can no longer be told.
    lost: bool,
    /// Cells overwritten since the last character that is not a space,
    /// that character's own first: what [`LineText::unmark`] restores.
    undo: Vec<(usize, char)>,
    /// The column before that character was written.
    undo_col: usize,
    /// A UTF-8 sequence being read.
    utf8: [u8; 4],
    utf8_len: usize,
}

impl LineText {
    /// Takes a byte of printable text (a UTF-8 sequence's bytes one by
    /// one). As in tmux, an invalid sequence shows nothing, and a byte of
    /// ASCII ends an unfinished one (which then shows nothing either).
    pub fn print(&mut self, b: u8) {
        if b < 0x80 {
            self.utf8_len = 0;
            self.put(char::from(b));
            return;
        }
        if self.utf8_len < self.utf8.len() {
            self.utf8[self.utf8_len] = b;
            self.utf8_len += 1;
        }
        match std::str::from_utf8(&self.utf8[..self.utf8_len]) {
            Ok(s) => {
                self.utf8_len = 0;
                if let Some(c) = s.chars().next() {
                    self.put(c);
                }
            }
            Err(e) if e.error_len().is_some() || self.utf8_len == self.utf8.len() => {
                self.utf8_len = 0;
            }
            Err(_) => {}
        }
    }

    /// Takes a control byte: CR, backspace, tab (others move nothing).
    /// It ends an unfinished UTF-8 sequence, as in tmux.
    pub fn control(&mut self, b: u8) {
        self.utf8_len = 0;
        match b {
            b'\r' => self.col = 0,
            0x08 => self.col = self.col.saturating_sub(1),
            b'\t' => {
                let to = (self.col / TAB + 1) * TAB;
                while self.col < to && !self.lost {
                    self.put(' ');
                }
            }
            _ => {}
        }
    }

    /// Erases from the cursor to the row's end (`CSI K`).
    pub fn erase_to_end(&mut self) {
        self.cells.truncate(self.col);
    }

    /// Something moved the cursor in a way not followed here.
    pub fn lose(&mut self) {
        self.lost = true;
    }

    /// A newline: a new row starts.
    pub fn newline(&mut self) {
        *self = LineText::default();
    }

    /// Takes back the last character that is not a space and every space
    /// written after it (an end-of-line mark).
    pub fn unmark(&mut self) {
        if self.undo_col == usize::MAX {
            self.lost = true;
            return;
        }
        for (at, old) in self.undo.drain(..).rev() {
            if let Some(cell) = self.cells.get_mut(at) {
                *cell = old;
            }
        }
        self.col = self.undo_col;
        while self.cells.last() == Some(&'\u{1}') {
            self.cells.pop();
        }
    }

    /// The row's text, trailing blanks trimmed; `None` when it cannot be
    /// told.
    pub fn text(&self) -> Option<String> {
        if self.lost {
            return None;
        }
        let text: String = self
            .cells
            .iter()
            .filter(|c| **c != '\0')
            .map(|c| if *c == '\u{1}' { ' ' } else { *c })
            .collect();
        Some(text.trim_end().to_owned())
    }

    fn put(&mut self, c: char) {
        if self.lost {
            return;
        }
        let width = unicode_width::UnicodeWidthChar::width(c).unwrap_or(0);
        if width == 0 || self.col + width > MAX_CELLS {
            // A combining mark or a zero-width character (which joins the
            // cell before), or a line too long: not followed.
            self.lost = true;
            return;
        }
        if c != ' ' {
            self.undo.clear();
            self.undo_col = self.col;
        }
        for i in 0..width {
            let at = self.col + i;
            // A cell never written reads back as `\u{1}` (no text).
            while self.cells.len() <= at {
                self.cells.push('\u{1}');
            }
            if self.cells[at] == '\0' || self.cells.get(at + 1) == Some(&'\0') {
                // Part of a wide character overwritten: not followed.
                self.lost = true;
                return;
            }
            if self.undo.len() == MAX_CELLS {
                // More spaces than a row holds since the last character:
                // no mark is taken back past this.
                self.undo.clear();
                self.undo_col = usize::MAX;
            }
            self.undo.push((at, self.cells[at]));
            self.cells[at] = if i == 0 { c } else { '\0' };
        }
        self.col += width;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn render(bytes: &[u8]) -> Option<String> {
        let mut t = LineText::default();
        for &b in bytes {
            match b {
                b'\n' => t.newline(),
                b'\r' | 0x08 | b'\t' => t.control(b),
                _ => t.print(b),
            }
        }
        t.text()
    }

    #[test]
    fn a_line_renders_as_a_terminal_shows_it() {
        assert_eq!(render(b"abc").as_deref(), Some("abc"));
        assert_eq!(render(b"one\nabc").as_deref(), Some("abc"));
        assert_eq!(render(b"abc\r").as_deref(), Some("abc"));
        assert_eq!(render(b"abc\rX").as_deref(), Some("Xbc"));
        assert_eq!(render(b"abc\x08\x08Y").as_deref(), Some("aYc"));
        assert_eq!(render(b"a\tb").as_deref(), Some("a       b"));
        assert_eq!(render("日本x".as_bytes()).as_deref(), Some("日本x"));
        assert_eq!(render("é\r".as_bytes()).as_deref(), Some("é"));
        assert_eq!(render(b"\n").as_deref(), Some(""));
    }

    #[test]
    fn what_cannot_be_followed_is_unknown() {
        // Half of a wide character overwritten.
        assert_eq!(render("日本\rx".as_bytes()), None);
        let mut t = LineText::default();
        "abc".bytes().for_each(|b| t.print(b));
        t.lose();
        assert_eq!(t.text(), None);
        t.newline();
        t.print(b'z');
        assert_eq!(t.text().as_deref(), Some("z"));
        assert_eq!(render(&vec![b'y'; MAX_CELLS + 1]), None);
    }

    #[test]
    fn an_end_of_line_mark_is_taken_back_whole() {
        // zsh after `printf 'abc\r'`: its `%` and spaces overwrite the line.
        let mut t = LineText::default();
        "abc\r%".bytes().for_each(|b| t.print_or_control(b));
        " ".repeat(40).bytes().for_each(|b| t.print(b));
        t.unmark();
        assert_eq!(t.text().as_deref(), Some("abc"));
        // After a line: the mark and its spaces go, the line stays.
        let mut t = LineText::default();
        "abc⏎".bytes().for_each(|b| t.print_or_control(b));
        " ".repeat(40).bytes().for_each(|b| t.print(b));
        t.unmark();
        assert_eq!(t.text().as_deref(), Some("abc"));
    }

    #[test]
    fn erase_to_end_cuts_the_row() {
        let mut t = LineText::default();
        "abcdef\r".bytes().for_each(|b| t.print_or_control(b));
        t.print(b'x');
        t.erase_to_end();
        assert_eq!(t.text().as_deref(), Some("x"));
    }

    #[test]
    fn invalid_utf8_shows_nothing_as_in_tmux() {
        // What tmux 3.3a shows for each (`capture-pane`): the broken bytes
        // drop out, the ASCII byte or control that broke a sequence counts.
        assert_eq!(render(b"A\x80abc").as_deref(), Some("Aabc"));
        assert_eq!(render(b"B\xe6a").as_deref(), Some("Ba"));
        assert_eq!(render(b"C\xe6\x97x").as_deref(), Some("Cx"));
        assert_eq!(render(b"E\xffz").as_deref(), Some("Ez"));
        assert_eq!(render(b"G\xe6\x97\r\xa5").as_deref(), Some("G"));
        assert_eq!(render(b"Hx\xe6\x97\x08\xa5").as_deref(), Some("Hx"));
        // A stray byte before a character does not swallow it.
        let mut bytes = vec![0x80];
        bytes.extend_from_slice("日".as_bytes());
        assert_eq!(render(&bytes).as_deref(), Some("日"));
    }

    #[test]
    fn a_mark_with_no_spaces_after_it_is_taken_back() {
        let mut t = LineText::default();
        "abc\r%".bytes().for_each(|b| t.print_or_control(b));
        t.unmark();
        assert_eq!(t.text().as_deref(), Some("abc"));
        // And the cursor is back where the mark was written.
        t.print(b'X');
        assert_eq!(t.text().as_deref(), Some("Xbc"));
    }

    #[test]
    fn a_row_of_max_cells_is_followed() {
        let row = "y".repeat(MAX_CELLS);
        assert_eq!(render(row.as_bytes()).as_deref(), Some(row.as_str()));
        let wide = "日".repeat(MAX_CELLS / 2);
        assert_eq!(render(wide.as_bytes()).as_deref(), Some(wide.as_str()));
    }

    #[test]
    fn a_wide_characters_second_cell_overwritten_is_unknown() {
        assert_eq!(render("日\x08x".as_bytes()), None);
        assert_eq!(render("a日\x08\x08x".as_bytes()).as_deref(), None);
        // A combining mark joins the cell before: not followed.
        assert_eq!(render("e\u{301}".as_bytes()), None);
    }

    impl LineText {
        fn print_or_control(&mut self, b: u8) {
            match b {
                b'\r' | 0x08 | b'\t' => self.control(b),
                _ => self.print(b),
            }
        }
    }
}
