//! capture_since's cursor: where the last call stopped (an absolute row),
//! the pane's process, the server, and the anchor above that row
//! ([`crate::tmux::rows::Anchor`]) that finds the place again after tmux
//! trims history.
//!
//! Must hold: a cursor is signed with this process's key
//! ([`crate::tools::cursor_key`]) and refused when the tag does not hold;
//! its anchor covers no more rows than an anchor can
//! ([`MAX_ANCHOR_LINES`]).

use super::super::context::ToolError;
use crate::tmux::rows::{Anchor, HashKind, MAX_ANCHOR_LINES};

const CURSOR_PREFIX: &str = "pc3";

/// What a capture_since cursor records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Cursor {
    pub(super) pane: u32,
    pub(super) pid: u32,
    /// Absolute row (0 = oldest history line when the cursor was made) of
    /// the first line not yet returned.
    pub(super) boundary: u64,
    /// How many lines before `boundary` the anchor covers.
    pub(super) anchor_len: u64,
    /// Their 64-bit hash.
    pub(super) anchor: u64,
    /// Which tmux server (hash of its socket path).
    pub(super) server: u32,
}

impl Cursor {
    /// The anchor above `boundary`.
    pub(super) fn anchor(&self) -> Anchor {
        Anchor {
            rows: self.anchor_len,
            hash: self.anchor,
            kind: HashKind::Fnv64,
        }
    }

    /// The cursor's fields, then a tag under this process's key
    /// ([`crate::tools::cursor_key`]), in hex.
    pub(super) fn encode(&self) -> String {
        let body = format!(
            "{CURSOR_PREFIX}.{}.{}.{}.{}.{:016x}.{:08x}",
            self.pane, self.pid, self.boundary, self.anchor_len, self.anchor, self.server
        );
        let tag: String = crate::tools::cursor_key::tag(body.as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        format!("{body}.{tag}")
    }

    pub(super) fn decode(text: &str) -> Result<Cursor, ToolError> {
        let bad = || {
            ToolError::invalid(format!(
                "cursor {:?} is not a capture_since cursor: pass the cursor field of an earlier capture_since result, or omit it to start over",
                text.chars().take(80).collect::<String>()
            ))
        };
        let (body, tag) = text.rsplit_once('.').ok_or_else(bad)?;
        let tag: Option<Vec<u8>> = (tag.len() % 2 == 0 && tag.is_ascii())
            .then(|| {
                (0..tag.len())
                    .step_by(2)
                    .map(|i| u8::from_str_radix(&tag[i..i + 2], 16).ok())
                    .collect()
            })
            .flatten();
        if !body.starts_with(CURSOR_PREFIX) {
            return Err(bad());
        }
        if !tag.is_some_and(|t| crate::tools::cursor_key::verify(body.as_bytes(), &t)) {
            return Err(ToolError::invalid(format!(
                "cursor {:?} is not one this panescan made (cursors hold for one panescan process: after a restart, or if it was edited, omit it to start over)",
                text.chars().take(80).collect::<String>()
            )));
        }
        let parts: Vec<&str> = body.split('.').collect();
        if parts.len() != 7 || parts[0] != CURSOR_PREFIX {
            return Err(bad());
        }
        Ok(Cursor {
            pane: parts[1].parse().map_err(|_| bad())?,
            pid: parts[2].parse().map_err(|_| bad())?,
            boundary: parts[3].parse().map_err(|_| bad())?,
            anchor_len: parts[4]
                .parse()
                .ok()
                .filter(|n| *n <= MAX_ANCHOR_LINES as u64)
                .ok_or_else(bad)?,
            anchor: u64::from_str_radix(parts[5], 16).map_err(|_| bad())?,
            server: u32::from_str_radix(parts[6], 16).map_err(|_| bad())?,
        })
    }
}
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursor_round_trips_and_rejects_tampering() {
        let c = Cursor {
            pane: 3,
            pid: 1234,
            boundary: 77,
            anchor_len: 3,
            anchor: 0xdead_beef,
            server: 9,
        };
        let text = c.encode();
        assert_eq!(Cursor::decode(&text).unwrap(), c);
        let tampered = text.replacen(".77.", ".78.", 1);
        assert!(Cursor::decode(&tampered).is_err());
        assert!(Cursor::decode("").is_err());
        assert!(Cursor::decode("garbage").is_err());
        assert!(Cursor::decode("ltxc1.1.20").is_err());
        let long = Cursor {
            anchor_len: 99,
            ..c.clone()
        };
        assert!(Cursor::decode(&long.encode()).is_err());
    }
}
