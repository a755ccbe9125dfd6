//! A listing taken at the top of a sweep's first script.
//!
//! A search lists the panes, then sweeps them: two round trips, with tmux
//! waiting between them. A search expecting the panes of its last one
//! (`ahead` in [`crate::tools::search`]) sends its listing at the top of the
//! sweep's first script instead, so tmux lists and captures in one go:
//!
//! ```text
//! list-panes -a -F "..."                          (the caller's listing)
//! display-message -p "TOKEN P #{pid} #{start_time}"
//! ...                                             (the chunk's script)
//! ```
//!
//! What must hold: the listing is still taken before every capture (tmux
//! runs a script to its end without yielding, and the batch starts no other
//! chunk before this one is read). The reader keeps the output up to the
//! marker line (it starts with the chunk's secret token, which no pane can
//! print at a line's start), hands the listing and the server's `pid
//! start_time` to the caller and the rest to the chunk's reader; a chunk
//! that ends before its marker drops the sender, so the caller's receiver
//! disconnects. Why, in full: NOTES.md.

use crossbeam_channel::Sender;

use super::super::TmuxCommand;
use super::TmuxError;

/// What a preamble's listing printed.
#[derive(Debug)]
pub struct ListedAhead {
    /// The listing command's output.
    pub text: String,
    /// `#{pid} #{start_time}` of the server.
    pub server: String,
}

/// A listing to run at the top of a batch's first chunk, and where its
/// output goes.
#[derive(Debug)]
pub(crate) struct Preamble {
    pub(crate) listing: TmuxCommand,
    pub(crate) tx: Sender<Result<ListedAhead, TmuxError>>,
}

impl Preamble {
    /// The lines that go before the chunk's own script, and the reader of
    /// their output; `Err` (the listing could not be written: not
    /// expected) sends the error to the caller.
    pub(crate) fn head(self, token: &str) -> Result<(String, Reader), TmuxError> {
        let line = match self.listing.to_line() {
            Ok(line) => line.to_owned(),
            Err(e) => {
                let _ = self.tx.send(Err(e.clone()));
                return Err(e);
            }
        };
        let head = format!("{line}\ndisplay-message -p \"{token} P #{{pid}} #{{start_time}}\"\n");
        let reader = Reader {
            marker: format!("{token} P ").into_bytes(),
            held: Vec::new(),
            looked: 0,
            tx: Some(self.tx),
        };
        Ok((head, reader))
    }
}

/// Reads a chunk's output up to its preamble's marker line.
#[derive(Debug)]
pub(crate) struct Reader {
    marker: Vec<u8>,
    /// Output before the marker line is complete.
    held: Vec<u8>,
    /// `held` before this holds no marker line start.
    looked: usize,
    /// `None` once the listing was handed over.
    tx: Option<Sender<Result<ListedAhead, TmuxError>>>,
}

impl Reader {
    /// Whether the listing was handed over.
    pub(crate) fn done(&self) -> bool {
        self.tx.is_none()
    }

    /// Takes a piece of output; once the marker line is complete, hands
    /// the listing over and returns the output after it (the chunk's own).
    pub(crate) fn push(&mut self, data: &[u8]) -> Option<Vec<u8>> {
        self.held.extend_from_slice(data);
        let (at, line_end) = self.marker_line()?;
        let server = String::from_utf8_lossy(&self.held[at + self.marker.len()..line_end]);
        let listed = ListedAhead {
            text: String::from_utf8_lossy(&self.held[..at]).into_owned(),
            server: server.trim_end().to_owned(),
        };
        if let Some(tx) = self.tx.take() {
            let _ = tx.send(Ok(listed));
        }
        let rest = self.held.split_off(line_end + 1);
        self.held = Vec::new();
        Some(rest)
    }

    /// Where the marker line starts and its newline, once it is whole.
    fn marker_line(&mut self) -> Option<(usize, usize)> {
        let from = self.looked;
        let found = memchr::memmem::find_iter(&self.held[from..], &self.marker)
            .map(|i| from + i)
            .find(|&i| i == 0 || self.held[i - 1] == b'\n');
        let Some(at) = found else {
            // A marker may be cut at the end of this piece: look again
            // from just before it.
            self.looked = self.held.len().saturating_sub(self.marker.len());
            return None;
        };
        self.looked = at;
        let line_end = memchr::memchr(b'\n', &self.held[at..]).map(|i| at + i)?;
        Some((at, line_end))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    const TOKEN: &str = "Tok3n";

    fn reader() -> (
        Reader,
        crossbeam_channel::Receiver<Result<ListedAhead, TmuxError>>,
    ) {
        let (tx, rx) = crossbeam_channel::bounded(1);
        let preamble = Preamble {
            listing: TmuxCommand::new("list-panes").flag("-a"),
            tx,
        };
        let (head, reader) = preamble.head(TOKEN).unwrap();
        assert_eq!(
            head,
            "list-panes -a\ndisplay-message -p \"Tok3n P #{pid} #{start_time}\"\n"
        );
        (reader, rx)
    }

    /// A listing whose names hold the marker's text off a line start, and
    /// blank and repeated lines; then the chunk's own output.
    const OUTPUT: &str = "%1 x Tok3n P 9 9<r>\n\n%1 x Tok3n P 9 9<r>\nname\nTok3n Q<r>\n\
                          Tok3n P 123 1700000000\nTok3n g\nrow\nTok3n P 1 1\n";

    #[test]
    fn the_listing_and_the_rest_come_apart_at_the_marker_in_any_pieces() {
        let bytes = OUTPUT.as_bytes();
        let at = OUTPUT.find("\nTok3n P 123").unwrap() + 1;
        for cut_a in 0..bytes.len() {
            for cut_b in [cut_a, (cut_a + 7).min(bytes.len()), bytes.len()] {
                let (mut r, rx) = reader();
                let mut rest = Vec::new();
                for piece in [&bytes[..cut_a], &bytes[cut_a..cut_b], &bytes[cut_b..]] {
                    if r.done() {
                        rest.extend_from_slice(piece);
                    } else if let Some(after) = r.push(piece) {
                        rest.extend(after);
                    }
                }
                assert!(r.done(), "cut at {cut_a}/{cut_b}");
                let listed = rx.try_recv().unwrap().unwrap();
                assert_eq!(listed.text, OUTPUT[..at], "cut at {cut_a}/{cut_b}");
                assert_eq!(listed.server, "123 1700000000");
                assert_eq!(
                    rest, b"Tok3n g\nrow\nTok3n P 1 1\n",
                    "cut at {cut_a}/{cut_b}"
                );
            }
        }
    }

    #[test]
    fn an_output_without_its_marker_line_hands_nothing_over() {
        let (mut r, rx) = reader();
        // The marker without its line end, then the output stops.
        assert!(r.push(b"%1 x<r>\nTok3n P 123").is_none());
        assert!(!r.done());
        drop(r);
        assert!(rx.try_recv().is_err());
    }
}
