//! How many rows a pane's output may have pushed into its history, counted
//! from its `%output` bytes without knowing the pane's size (pure).
//!
//! tmux (3.3a, input.c and screen-write.c) moves a row into history when a
//! line feed or a wrap scrolls the whole screen, when a scroll-up (`CSI S`,
//! clamped to the screen's height) runs, and when a clear (`CSI 2 J`, with
//! `scroll-on-clear`) or a reset pushes the screen up. Must hold: with the
//! pane's width and height applied ([`Printed::rows_since`]), the count is
//! never below the rows tmux can have pushed, so a reader sizing its next
//! read by it misses nothing; bytes never seen (a pause, a lost stream)
//! make the count unknown, never small.

/// What a pane printed since the subscriber began counting; every field
/// only grows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Printed {
    /// Line feeds (LF, VT, FF, `ESC D`, `ESC E`): a row each at most.
    pub line_feeds: u64,
    /// Sequences that may push up to a screen each (`CSI … S`, `CSI … J`,
    /// `ESC c`).
    pub screens: u64,
    /// Cells the bytes may have moved the cursor on (a tab up to 8): a
    /// wrap adds a row per width of them at most.
    pub cells: u64,
    /// The cells of runs (printed between two carriage returns) at least
    /// [`RUN_WIDTHS`]`[k]` cells long, by `k`: on a pane that wide or
    /// wider, shorter runs never wrap, so their cells are left out.
    long_runs: [u64; RUN_WIDTHS.len()],
    /// Cells of the run not ended yet (since the last carriage return).
    run: u64,
    /// Times output went unseen (tmux paused the pane, the stream was
    /// lost): between two counts that differ here, rows are unknown.
    pub lost: u64,
    /// Bytes seen, all told (what the pane printed, for pacing).
    pub bytes: u64,
    state: Esc,
}

/// Run lengths kept apart (see `Printed::long_runs`): a pane this wide
/// or wider counts wraps from runs at least this long only.
const RUN_WIDTHS: [u64; 9] = [32, 48, 64, 80, 100, 120, 160, 200, 256];

/// Where the parser stands between two chunks of output.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Esc {
    #[default]
    Ground,
    /// After `ESC`.
    Escape,
    /// Inside `ESC [` up to its final byte.
    Csi,
}

impl Printed {
    /// Counts a chunk of the pane's output (unescaped, as the pane wrote it).
    pub fn add(&mut self, bytes: &[u8]) {
        self.bytes += bytes.len() as u64;
        for &b in bytes {
            // tmux runs C0 controls in every state, inside sequences too.
            if matches!(b, b'\n' | 0x0b | 0x0c) {
                self.line_feeds += 1;
                continue;
            }
            // A line feed keeps the column (a pane in raw mode prints on
            // from it); a carriage return ends the run.
            if b == b'\r' {
                self.end_run();
                continue;
            }
            self.state = match (self.state, b) {
                (_, 0x1b) => Esc::Escape,
                (Esc::Ground, b'\t') => {
                    self.cells += 8;
                    self.run += 8;
                    Esc::Ground
                }
                (Esc::Ground, 0x20..) => {
                    self.cells += 1;
                    self.run += 1;
                    Esc::Ground
                }
                (Esc::Ground, _) => Esc::Ground,
                (Esc::Escape, b'[') => Esc::Csi,
                (Esc::Escape, b'D') => {
                    self.line_feeds += 1;
                    Esc::Ground
                }
                (Esc::Escape, b'E') => {
                    self.line_feeds += 1;
                    self.end_run();
                    Esc::Ground
                }
                (Esc::Escape, b'c') => {
                    self.screens += 1;
                    self.end_run();
                    Esc::Ground
                }
                (Esc::Escape, _) => Esc::Ground,
                (Esc::Csi, 0x40..=0x7e) => {
                    if matches!(b, b'S' | b'J') {
                        self.screens += 1;
                    }
                    Esc::Ground
                }
                (Esc::Csi, _) => Esc::Csi,
            };
        }
    }

    /// Output went unseen: rows since any earlier count are unknown.
    pub fn lose(&mut self) {
        self.lost += 1;
        self.state = Esc::Ground;
        self.end_run();
    }

    /// The run since the last carriage return ended: its cells count
    /// where it was long enough.
    fn end_run(&mut self) {
        for (long, &width) in self.long_runs.iter_mut().zip(&RUN_WIDTHS) {
            if self.run >= width {
                *long += self.run;
            }
        }
        self.run = 0;
    }

    /// Cells that may wrap on a pane `width` wide since `earlier`: those
    /// of runs long enough to (the open run counted whole: cells it had
    /// before `earlier` only make the bound larger).
    fn wrapping_cells(&self, earlier: &Printed, width: u64) -> Option<u64> {
        let Some(k) = RUN_WIDTHS.iter().rposition(|&w| w <= width) else {
            return self.cells.checked_sub(earlier.cells);
        };
        let open = if self.run >= RUN_WIDTHS[k] {
            self.run
        } else {
            0
        };
        (self.long_runs[k] + open).checked_sub(earlier.long_runs[k])
    }

    /// At most how many rows the pane pushed into history between
    /// `earlier` and this count, for a pane `width` x `height`; `None`
    /// when output went unseen in between.
    pub fn rows_since(&self, earlier: &Printed, width: u32, height: u32) -> Option<u64> {
        if self.lost != earlier.lost {
            return None;
        }
        let feeds = self.line_feeds.checked_sub(earlier.line_feeds)?;
        let screens = self.screens.checked_sub(earlier.screens)?;
        let width = u64::from(width.max(1));
        // A wrap needs a full row of cells of one run; one more for where
        // the cursor stood when counting began.
        let wraps = self.wrapping_cells(earlier, width)? / width + 1;
        Some(feeds + screens * u64::from(height.max(1)) + wraps)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    fn rows(chunks: &[&[u8]], width: u32, height: u32) -> Option<u64> {
        let mut p = Printed::default();
        for c in chunks {
            p.add(c);
        }
        p.rows_since(&Printed::default(), width, height)
    }

    #[test]
    fn lines_count_a_row_each_and_long_ones_their_wraps() {
        assert_eq!(rows(&[b"one\r\ntwo\r\n"], 80, 24), Some(3));
        // 200 cells at width 80 wrap twice at most, plus the start column.
        let long = [b'x'; 200];
        assert_eq!(rows(&[&long, b"\r\n"], 80, 24), Some(1 + 2 + 1));
        // A tab may move the cursor 8 cells.
        assert_eq!(rows(&[&[b'\t'; 20]], 80, 24), Some(3));
    }

    #[test]
    fn scrolls_and_clears_count_a_screen_and_colours_nothing() {
        assert_eq!(rows(&[b"\x1b[31mred\x1b[0m\r\n"], 80, 24), Some(2));
        assert_eq!(rows(&[b"\x1b[5S"], 80, 24), Some(24 + 1));
        assert_eq!(rows(&[b"\x1b[2J"], 80, 24), Some(24 + 1));
        assert_eq!(rows(&[b"\x1bD\x1bE\x1bc"], 80, 24), Some(2 + 24 + 1));
        // A sequence cut between two chunks is still one sequence.
        assert_eq!(rows(&[b"\x1b", b"[1", b"0S"], 80, 24), Some(24 + 1));
        // A line feed inside a sequence still feeds a line.
        assert_eq!(rows(&[b"\x1b[3\n1m"], 80, 24), Some(2));
    }

    #[test]
    fn runs_shorter_than_the_pane_is_wide_wrap_nothing() {
        // 200 lines of 90 cells, each ended by a carriage return: no wrap
        // at width 120, every one wraps at width 80.
        let line = format!("{}\r\n", "x".repeat(90));
        let lines = line.repeat(200);
        assert_eq!(rows(&[lines.as_bytes()], 120, 30), Some(200 + 1));
        assert_eq!(rows(&[lines.as_bytes()], 80, 30), Some(200 + 225 + 1));
        // Without carriage returns (raw mode) the column runs on: 18,000
        // cells in one run wrap 150 times at width 120.
        let raw = format!("{}\n", "x".repeat(90)).repeat(200);
        assert_eq!(rows(&[raw.as_bytes()], 120, 30), Some(200 + 150 + 1));
        // A run still open counts, and one cut between two counts counts
        // whole in the later one.
        let mut p = Printed::default();
        p.add("y".repeat(100).as_bytes());
        let earlier = p;
        p.add("y".repeat(100).as_bytes());
        assert_eq!(p.rows_since(&earlier, 120, 30), Some(200 / 120 + 1));
        p.add(b"\r\n");
        assert_eq!(p.rows_since(&earlier, 120, 30), Some(1 + 200 / 120 + 1));
        // A pane narrower than every run width counts every cell.
        assert_eq!(
            rows(&[lines.as_bytes()], 20, 30),
            Some(200 + 18_000 / 20 + 1)
        );
    }

    #[test]
    fn a_wrapped_run_is_never_counted_short_at_any_width() {
        // For every width, the bound is at least the wraps tmux makes:
        // each run of c cells (ended by a carriage return) wraps
        // (c - 1) / width times.
        let runs = [
            1u64, 31, 32, 33, 79, 80, 81, 119, 120, 121, 250, 257, 600, 2_000,
        ];
        let mut p = Printed::default();
        for &c in &runs {
            p.add("z".repeat(c as usize).as_bytes());
            p.add(b"\r\n");
        }
        for width in 1..=400u32 {
            let wraps: u64 = runs.iter().map(|c| (c - 1) / u64::from(width)).sum();
            let bound = p.rows_since(&Printed::default(), width, 24).unwrap();
            assert!(bound >= runs.len() as u64 + wraps, "width {width}");
        }
    }

    #[test]
    fn output_unseen_makes_the_rows_unknown() {
        let mut p = Printed::default();
        p.add(b"a\n");
        let earlier = p;
        p.lose();
        p.add(b"b\n");
        assert_eq!(p.rows_since(&earlier, 80, 24), None);
        let later = p;
        p.add(b"c\n");
        assert_eq!(p.rows_since(&later, 80, 24), Some(2));
        // Bytes seen, all told (a pause does not reset them).
        assert_eq!(p.bytes, 6);
    }
}
