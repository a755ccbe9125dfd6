//! Private tmux servers filled with realistic terminal text.
//!
//! `panescan demo`, `panescan bench`, the end-to-end benches and the tests
//! all need the same thing: a tmux server of a given shape (panes x lines x
//! width) whose panes hold real terminal output in their scrollback, plus a
//! few planted lines whose positions are known exactly, so a search can be
//! checked and timed. [`Fixture::build`] makes one, on a [`PrivateServer`]
//! that dies with the fixture.
//!
//! Each pane runs `cat FILE` of its own text and then sets its title to
//! `filled` (an OSC 2 sequence) before sleeping; the fixture is ready when
//! every pane carries that title, so nothing is searched half-written.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::testbed::private_server::{PrivateServer, PrivateServerError};

/// The line planted in some panes: rare, so a literal search for
/// [`NEEDLE`] finds exactly the planted lines.
pub const NEEDLE: &str = "panescan-needle";

/// What the fixture should look like.
#[derive(Clone, Debug)]
pub struct FixtureShape {
    /// Number of panes (one window each).
    pub panes: usize,
    /// Lines of text printed in each pane (most end up in its history).
    pub lines: usize,
    /// Pane width in cells.
    pub width: u16,
    /// Pane height in rows.
    pub height: u16,
    /// Plant a [`NEEDLE`] line in every `needle_every`-th pane (0: none).
    pub needle_every: usize,
}

impl Default for FixtureShape {
    fn default() -> Self {
        FixtureShape {
            panes: 200,
            lines: 2_000,
            width: 200,
            height: 50,
            needle_every: 40,
        }
    }
}

/// A planted needle: in which pane (by creation order) and on which printed
/// line (0-based in that pane's text).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlantedNeedle {
    /// Which pane, counted in creation order from 0.
    pub pane_number: usize,
    /// Which printed line of that pane (0-based).
    pub printed_line: usize,
    /// The needle as printed.
    pub text: String,
}

/// A filled private tmux server; dropping it kills the server and removes
/// the pane text files.
#[derive(Debug)]
pub struct Fixture {
    /// The private server; dropped with the fixture, which kills it.
    pub server: PrivateServer,
    /// What was asked for: panes, lines, sizes, needle spacing.
    pub shape: FixtureShape,
    /// Pane ids (`%N`) in creation order.
    pub pane_ids: Vec<String>,
    /// Every needle planted, so a search's answer can be checked exactly.
    pub needles: Vec<PlantedNeedle>,
    dir: PathBuf,
}

impl Drop for Fixture {
    fn drop(&mut self) {
        self.server.kill();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Why a fixture could not be built.
type FixtureError = PrivateServerError;

impl Fixture {
    /// Builds a server of the given shape from `sources` (terminal text
    /// whose lines are dealt out to the panes) and waits until every pane
    /// has printed all of its text, or `timeout` passes.
    ///
    /// `on_pane_filled(done, total)` is called as panes finish, for a
    /// progress bar.
    pub fn build(
        label: &str,
        shape: FixtureShape,
        sources: &[&str],
        timeout: Duration,
        on_pane_filled: &mut dyn FnMut(usize, usize),
    ) -> Result<Fixture, FixtureError> {
        let server = PrivateServer::start(label, shape.width, shape.height)?;
        let dir = std::env::temp_dir().join(format!("{}.panes", server.socket_name()));
        std::fs::create_dir_all(&dir)
            .map_err(|e| PrivateServerError(format!("cannot create {}: {e}", dir.display())))?;
        let mut fixture = Fixture {
            server,
            shape,
            pane_ids: Vec::new(),
            needles: Vec::new(),
            dir,
        };
        let lines = source_lines(sources);
        fixture.write_pane_texts(&lines)?;
        fixture.start_panes()?;
        fixture.wait_until_filled(timeout, on_pane_filled)?;
        Ok(fixture)
    }

    fn pane_file(&self, pane_number: usize) -> PathBuf {
        self.dir.join(format!("pane-{pane_number}.txt"))
    }

    /// Deals the source lines out to the panes, each pane starting at a
    /// different place so no two panes hold the same text.
    fn write_pane_texts(&mut self, lines: &[String]) -> Result<(), FixtureError> {
        let shape = self.shape.clone();
        for pane in 0..shape.panes {
            let mut text = String::with_capacity(shape.lines * 64);
            let start = if lines.is_empty() {
                0
            } else {
                (pane * 7_919) % lines.len()
            };
            let needle_at = (shape.needle_every > 0 && pane % shape.needle_every == 0)
                .then_some(shape.lines / 2);
            for i in 0..shape.lines {
                if Some(i) == needle_at {
                    let needle = format!("error: {NEEDLE} in pane {pane}");
                    text.push_str(&needle);
                    self.needles.push(PlantedNeedle {
                        pane_number: pane,
                        printed_line: i,
                        text: needle,
                    });
                } else if lines.is_empty() {
                    let _ = write!(text, "line {i} of pane {pane}");
                } else {
                    text.push_str(&lines[(start + i) % lines.len()]);
                }
                text.push('\n');
            }
            std::fs::write(self.pane_file(pane), text)
                .map_err(|e| PrivateServerError(format!("cannot write pane text: {e}")))?;
        }
        Ok(())
    }

    /// Creates one window per pane with a single `tmux source-file -`: one
    /// process however many panes.
    fn start_panes(&mut self) -> Result<(), FixtureError> {
        let history = (self.shape.lines + usize::from(self.shape.height) + 100).to_string();
        self.server
            .run_ok(["set-option", "-g", "history-limit", &history])?;
        let mut script = String::new();
        for pane in 0..self.shape.panes {
            let file = self.pane_file(pane);
            // The command goes through tmux's parser (single quotes) and then
            // sh (double quotes); the file path is ours and holds no quotes.
            let _ = writeln!(
                script,
                "new-window -d -t main: \"sh -c 'cat {}; printf \\\"\\\\033]2;filled\\\\033\\\\\\\\\\\\\\\\\\\"; exec sleep 2147483647'\"",
                file.display()
            );
        }
        self.server.source(&script)?;
        // The session's first window (a shell) is not part of the fixture.
        self.server.run_ok(["kill-window", "-t", "main:0"])?;
        let listing = self
            .server
            .run_ok(["list-panes", "-s", "-t", "main", "-F", "#{pane_id}"])?;
        self.pane_ids = listing.lines().map(str::to_owned).collect();
        if self.pane_ids.len() != self.shape.panes {
            return Err(PrivateServerError(format!(
                "asked tmux for {} panes, got {}",
                self.shape.panes,
                self.pane_ids.len()
            )));
        }
        Ok(())
    }

    fn wait_until_filled(
        &self,
        timeout: Duration,
        on_pane_filled: &mut dyn FnMut(usize, usize),
    ) -> Result<(), FixtureError> {
        let deadline = Instant::now() + timeout;
        let total = self.shape.panes;
        loop {
            let titles =
                self.server
                    .run_ok(["list-panes", "-s", "-t", "main", "-F", "#{pane_title}"])?;
            let done = titles.lines().filter(|t| *t == "filled").count();
            on_pane_filled(done, total);
            if done >= total {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(PrivateServerError(format!(
                    "only {done} of {total} panes finished printing within {timeout:?}"
                )));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// The printable lines of the sources: escape sequences other than colours
/// are removed (a cursor movement or screen clear replayed by `cat` would
/// scramble the pane), control characters dropped, empty sources skipped.
fn source_lines(sources: &[&str]) -> Vec<String> {
    let mut out = Vec::new();
    for source in sources {
        for line in source.lines() {
            out.push(printable(line));
        }
    }
    out
}

/// Keeps text and SGR colour sequences (`ESC [ ... m`); drops every other
/// escape sequence and control character.
fn printable(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\x1b' {
            if chars.peek() == Some(&'[') {
                chars.next();
                let mut seq = String::from("\x1b[");
                for n in chars.by_ref() {
                    seq.push(n);
                    if ('\x40'..='\x7e').contains(&n) {
                        if n == 'm' {
                            out.push_str(&seq);
                        }
                        break;
                    }
                }
            } else if chars.peek() == Some(&']') {
                // OSC: up to BEL or ST (ESC \).
                while let Some(n) = chars.next() {
                    if n == '\x07' || (n == '\x1b' && chars.next_if_eq(&'\\').is_some()) {
                        break;
                    }
                }
            } else if matches!(chars.next(), Some('(' | ')' | '*' | '+' | '#')) {
                // Character set designation: one more byte.
                chars.next();
            }
        } else if c == '\t' || !c.is_control() {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::printable;

    #[test]
    fn printable_keeps_colours_and_drops_cursor_movement() {
        assert_eq!(printable("\x1b[31mred\x1b[0m"), "\x1b[31mred\x1b[0m");
        assert_eq!(printable("a\x1b[2Jb\x1b[10;5Hc"), "abc");
        assert_eq!(printable("x\x07y\rz"), "xyz");
        assert_eq!(printable("\x1b(Bq"), "q");
        assert_eq!(printable("t\x1b]2;title\x07u\x1b]0;x\x1b\\v"), "tuv");
        assert_eq!(printable("\x1b=k"), "k");
    }
}
