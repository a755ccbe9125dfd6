//! The search cursor: where each pane stood when a search ran, as an opaque
//! string a later `search_panes {since}` passes back.
//!
//! It names the server (a hash of its socket path, its pid and start time:
//! a cursor from another server or from before a restart is told apart)
//! and, per pane, what tells "the same pane, the same rows": its process
//! id, width (a resize rewraps rows), history size, the absolute row the
//! line holding its terminal cursor starts at (the first row not yet
//! complete: where new lines start) and the anchor above that row ([`crate::tmux::rows::Anchor`]: the rows it
//! covers and their 64-bit hash). Entries are varints, pane ids
//! delta-coded, about 19 bytes a pane before base64: a cursor over 1,000
//! panes is about 26 KB. `ps2.` cursors (32-bit hashes of three lines)
//! are still read back from `--since-file` files.
//! A tag under this process's key ([`crate::tools::cursor_key`]) makes a
//! truncated, edited or forged cursor an error, not a guess.

pub(crate) use crate::tmux::rows::fnv32;
use crate::tmux::rows::HashKind;
use crate::tools::context::ToolError;

/// The version prefix of every cursor.
pub(crate) const PREFIX: &str = "ps3.";
/// The prefix of signed cursors with 32-bit anchors (`--since-file` files
/// written by an older panescan).
const FNV32_PREFIX: &str = "ps2.";
/// The prefix of the cursors before they were signed (`--since-file`
/// files written by an older panescan: read back, never from a client).
const UNSIGNED_PREFIX: &str = "ps1.";
/// Entries a cursor may hold (a bound on what decoding allocates).
const MAX_ENTRIES: usize = 100_000;
/// Rows no pane reaches: a cursor saying more was not made by a search
/// (and would overflow row arithmetic).
pub(crate) const MAX_ROWS: u64 = 1 << 40;

/// Which tmux server a cursor belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ServerId {
    /// Hash of the socket path.
    pub(crate) socket: u32,
    /// The server's process id.
    pub(crate) pid: u32,
    /// Its start time (seconds since the epoch).
    pub(crate) start: u64,
}

/// Where one pane stood.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Entry {
    pub(crate) pane: u32,
    pub(crate) pid: u32,
    pub(crate) width: u32,
    pub(crate) history: u64,
    /// Absolute row (0 = oldest history row) the line holding the terminal
    /// cursor starts at: the first row a later search scans (in history
    /// when that line wrapped from there onto the screen).
    pub(crate) boundary: u64,
    /// Rows above `boundary` the anchor lines cover (0: no anchor).
    pub(crate) anchor_rows: u64,
    /// Their hash ([`Cursor::anchors`] says which).
    pub(crate) anchor: u64,
}

/// A decoded cursor.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Cursor {
    pub(crate) server: ServerId,
    /// Wrapped lines were joined (the anchor hashes joined lines).
    pub(crate) joined: bool,
    /// How the entries' anchors were hashed: 32 bits in cursors read back
    /// from an older panescan's file.
    pub(crate) anchors: HashKind,
    /// Sorted by pane id, one per pane.
    pub(crate) entries: Vec<Entry>,
}

impl Cursor {
    /// The opaque string.
    pub(crate) fn encode(&self) -> String {
        let mut entries = self.entries.clone();
        entries.sort_by_key(|e| e.pane);
        entries.dedup_by_key(|e| e.pane);
        let mut body = Vec::with_capacity(16 + entries.len() * 16);
        put(&mut body, u64::from(self.server.socket));
        put(&mut body, u64::from(self.server.pid));
        put(&mut body, self.server.start);
        let legacy = self.anchors == HashKind::Fnv32;
        body.push(u8::from(self.joined) | u8::from(legacy) << 1 | SIGNED_BOUNDARIES);
        put(&mut body, entries.len() as u64);
        let mut previous = 0u32;
        for e in &entries {
            put(&mut body, u64::from(e.pane - previous));
            previous = e.pane;
            put(&mut body, u64::from(e.pid));
            put(&mut body, u64::from(e.width));
            put(&mut body, e.history);
            let offset = i128::from(e.boundary) - i128::from(e.history);
            put(
                &mut body,
                zigzag(offset.clamp(i64::MIN.into(), i64::MAX.into()) as i64),
            );
            put(&mut body, e.anchor_rows);
            body.extend_from_slice(&e.anchor.to_le_bytes());
        }
        let tag = crate::tools::cursor_key::tag(&body);
        body.extend_from_slice(&tag);
        format!("{PREFIX}{}", base64url(&body))
    }

    /// Reads a cursor a client passed: anything but an intact cursor this
    /// process made is an error that says what to pass instead.
    pub(crate) fn decode(text: &str) -> Result<Cursor, ToolError> {
        let bad = || bad_cursor(text);
        if text.starts_with(FNV32_PREFIX) {
            // Made by an older panescan process (the format before 64-bit
            // anchors): refused as any cursor from before a restart.
            return Err(not_ours(text));
        }
        let bytes = text
            .strip_prefix(PREFIX)
            .and_then(unbase64url)
            .ok_or_else(bad)?;
        let split = bytes
            .len()
            .checked_sub(crate::tools::cursor_key::TAG_BYTES)
            .ok_or_else(bad)?;
        let (body, tag) = bytes.split_at(split);
        if !crate::tools::cursor_key::verify(body, tag) {
            return Err(not_ours(text));
        }
        read_body(body, Format::Current).ok_or_else(bad)
    }

    /// A cursor read back from a file of the user's own (`panescan search
    /// --since-file`), written by this or an earlier panescan process,
    /// signed again for this one; a damaged one is an error.
    pub(crate) fn resign(text: &str) -> Result<String, ToolError> {
        let bad = || bad_cursor(text);
        let tag = crate::tools::cursor_key::TAG_BYTES;
        let (b64, check, format) = if let Some(b64) = text.strip_prefix(UNSIGNED_PREFIX) {
            (b64, 4, Format::Fnv32)
        } else if let Some(b64) = text.strip_prefix(FNV32_PREFIX) {
            (b64, tag, Format::Fnv32)
        } else {
            (
                text.strip_prefix(PREFIX).ok_or_else(bad)?,
                tag,
                Format::Current,
            )
        };
        let bytes = unbase64url(b64).ok_or_else(bad)?;
        let split = bytes.len().checked_sub(check).ok_or_else(bad)?;
        let (body, end) = bytes.split_at(split);
        if check == 4 && end != fnv32(body).to_le_bytes() {
            return Err(bad());
        }
        read_body(body, format).map(|c| c.encode()).ok_or_else(bad)
    }
}

fn not_ours(text: &str) -> ToolError {
    ToolError::invalid(format!(
        "since {:?} is not a cursor this panescan made (cursors hold for one panescan process: after a restart, or if it was edited, omit since for a full search)",
        text.chars().take(40).collect::<String>()
    ))
}

fn bad_cursor(text: &str) -> ToolError {
    ToolError::invalid(format!(
        "since {:?} is not a search_panes cursor: pass the cursor field of an earlier search_panes result, or omit since for a full search",
        text.chars().take(40).collect::<String>()
    ))
}

/// A cursor body's layout.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Format {
    /// `ps3.`: a flags byte (bit 0 joined, bit 1 32-bit anchors, bit 2
    /// boundaries as signed offsets), 8-byte anchors.
    Current,
    /// `ps1.` and `ps2.`: a joined byte, 4-byte anchors hashed with FNV-32.
    Fnv32,
}

fn read_body(body: &[u8], format: Format) -> Option<Cursor> {
    let mut r = Reader { bytes: body, at: 0 };
    let server = ServerId {
        socket: u32::try_from(r.varint()?).ok()?,
        pid: u32::try_from(r.varint()?).ok()?,
        start: r.varint()?,
    };
    let flags = r.byte()?;
    let most = if format == Format::Current { 7 } else { 1 };
    if flags > most {
        return None;
    }
    let joined = flags & 1 == 1;
    let anchors = if format == Format::Fnv32 || flags & 2 == 2 {
        HashKind::Fnv32
    } else {
        HashKind::Fnv64
    };
    let n = usize::try_from(r.varint()?)
        .ok()
        .filter(|n| *n <= MAX_ENTRIES)?;
    let mut entries = Vec::with_capacity(n.min(body.len()));
    let mut pane = 0u32;
    for i in 0..n {
        let step = u32::try_from(r.varint()?).ok()?;
        // Strictly increasing ids: one entry per pane.
        if i > 0 && step == 0 {
            return None;
        }
        pane = pane.checked_add(step)?;
        let pid = u32::try_from(r.varint()?).ok()?;
        let width = u32::try_from(r.varint()?).ok()?;
        let history = r.varint()?;
        let offset = r.varint()?;
        let boundary = if flags & SIGNED_BOUNDARIES != 0 {
            let history = i64::try_from(history).ok()?;
            u64::try_from(history.checked_add(unzigzag(offset))?).ok()?
        } else {
            history.checked_add(offset)?
        };
        let anchor_rows = r.varint()?;
        if boundary > MAX_ROWS || anchor_rows > boundary {
            return None;
        }
        let anchor = match format {
            Format::Current => u64::from_le_bytes(r.take(8)?.try_into().ok()?),
            Format::Fnv32 => u64::from(u32::from_le_bytes(r.take(4)?.try_into().ok()?)),
        };
        if anchors == HashKind::Fnv32 && anchor > u64::from(u32::MAX) {
            return None;
        }
        entries.push(Entry {
            pane,
            pid,
            width,
            history,
            boundary,
            anchor_rows,
            anchor,
        });
    }
    (r.at == body.len()).then_some(Cursor {
        server,
        joined,
        anchors,
        entries,
    })
}

/// The flag of cursors whose boundaries are signed offsets from their
/// history size (zigzag): a line being written that wrapped from history
/// onto the screen starts above it. `ps3.` files written before it have
/// boundaries at or below the history size, unsigned.
const SIGNED_BOUNDARIES: u8 = 4;

/// A signed number as an unsigned one, small either way (0, -1, 1, -2, ...
/// as 0, 1, 2, 3, ...).
fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

fn unzigzag(v: u64) -> i64 {
    (v >> 1) as i64 ^ -((v & 1) as i64)
}

fn put(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn byte(&mut self) -> Option<u8> {
        let b = *self.bytes.get(self.at)?;
        self.at += 1;
        Some(b)
    }

    fn take(&mut self, n: usize) -> Option<&[u8]> {
        let end = self.at.checked_add(n)?;
        let s = self.bytes.get(self.at..end)?;
        self.at = end;
        Some(s)
    }

    fn varint(&mut self) -> Option<u64> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.byte()?;
            v |= u64::from(b & 0x7f).checked_shl(shift)?;
            if b & 0x80 == 0 {
                return Some(v);
            }
        }
        None
    }
}

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// Base64 with the URL alphabet and no padding: safe in JSON, a shell
/// argument and a file name.
pub(crate) fn base64url(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, b)| n | u32::from(*b) << (16 - 8 * i));
        for i in 0..=chunk.len() {
            out.push(char::from(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize]));
        }
    }
    out
}

fn unbase64url(text: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(text.len() * 3 / 4);
    let mut acc = 0u32;
    let mut bits = 0u32;
    for c in text.bytes() {
        let v = ALPHABET.iter().position(|a| *a == c)? as u32;
        acc = (acc << 6) | v;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    // Leftover bits of a well-formed string are zero padding.
    (acc == 0 && bits < 6).then_some(out)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn sample(panes: u32) -> Cursor {
        Cursor {
            server: ServerId {
                socket: 0xdead_beef,
                pid: 4242,
                start: 1_764_000_000,
            },
            joined: true,
            anchors: HashKind::Fnv64,
            entries: (0..panes)
                .map(|i| Entry {
                    pane: i * 3 + 1,
                    pid: 30_000 + i,
                    width: 80,
                    history: 2_000,
                    boundary: 2_023,
                    anchor_rows: 3,
                    anchor: crate::tmux::rows::fnv64(&i.to_le_bytes()),
                })
                .collect(),
        }
    }

    /// A cursor as an older panescan wrote it (a joined byte, anchors of 32
    /// bits), with its prefix and its check: a checksum (`ps1.`) or any
    /// 16 bytes (`ps2.`, signed by another process).
    fn fnv32_format(c: &Cursor, prefix: &str) -> String {
        let mut body = Vec::new();
        put(&mut body, u64::from(c.server.socket));
        put(&mut body, u64::from(c.server.pid));
        put(&mut body, c.server.start);
        body.push(u8::from(c.joined));
        put(&mut body, c.entries.len() as u64);
        let mut previous = 0;
        for e in &c.entries {
            for v in [
                u64::from(e.pane - previous),
                u64::from(e.pid),
                u64::from(e.width),
                e.history,
                e.boundary - e.history,
                e.anchor_rows,
            ] {
                put(&mut body, v);
            }
            previous = e.pane;
            body.extend_from_slice(&(e.anchor as u32).to_le_bytes());
        }
        let check = match prefix {
            UNSIGNED_PREFIX => fnv32(&body).to_le_bytes().to_vec(),
            _ => vec![7; crate::tools::cursor_key::TAG_BYTES],
        };
        body.extend_from_slice(&check);
        format!("{prefix}{}", base64url(&body))
    }

    /// A sample cursor with 32-bit anchors.
    fn fnv32_sample(panes: u32) -> Cursor {
        let mut c = sample(panes);
        c.anchors = HashKind::Fnv32;
        for e in &mut c.entries {
            e.anchor = u64::from(fnv32(&e.pane.to_le_bytes()));
        }
        c
    }

    /// A `ps2.` cursor in a file (32-bit anchors of three lines) is read
    /// back as it was, its anchors checked with the hash they were made
    /// with.
    #[test]
    fn a_file_of_32_bit_anchors_keeps_them() {
        let c = fnv32_sample(4);
        for prefix in [UNSIGNED_PREFIX, FNV32_PREFIX] {
            let text = fnv32_format(&c, prefix);
            let e = Cursor::decode(&text).unwrap_err();
            if prefix == FNV32_PREFIX {
                assert!(e.message.contains("not a cursor this panescan made"), "{e}");
            }
            let again = Cursor::resign(&text).unwrap();
            assert!(again.starts_with(PREFIX), "{again}");
            assert_eq!(Cursor::decode(&again).unwrap(), c);
        }
    }

    /// FNV-1a exactly (its published 32-bit vectors): the anchors of
    /// cursors already handed out, and the checksums of `ps1.` cursors in
    /// users' files, were made with it.
    #[test]
    fn fnv32_is_fnv_1a() {
        assert_eq!(fnv32(b""), 0x811c_9dc5);
        assert_eq!(fnv32(b"a"), 0xe40c_292c);
        assert_eq!(fnv32(b"foobar"), 0xbf9c_f968);
    }

    #[test]
    fn a_cursor_round_trips_and_stays_small_for_a_thousand_panes() {
        for n in [0, 1, 7, 1_000] {
            let c = sample(n);
            assert_eq!(Cursor::decode(&c.encode()).unwrap(), c);
        }
        let len = sample(1_000).encode().len();
        assert!(len < 28_000, "{len} bytes");
    }

    #[test]
    fn a_damaged_or_foreign_string_is_an_error() {
        let good = sample(5).encode();
        let mut flipped = good.clone().into_bytes();
        let mid = flipped.len() / 2;
        flipped[mid] = if flipped[mid] == b'A' { b'B' } else { b'A' };
        let flipped = String::from_utf8(flipped).unwrap();
        for text in [
            "",
            "ps1.",
            "ps0.AAAA",
            "pc2.1.2.3.4.5.6.7",
            &good[..good.len() - 3],
            &flipped,
            &format!("{good}A"),
            "ps1.!!!!",
        ] {
            let e = Cursor::decode(text).unwrap_err();
            assert!(
                e.message.contains("not a search_panes cursor")
                    || e.message.contains("not a cursor this panescan made"),
                "{text}: {e}"
            );
        }
    }

    #[test]
    fn a_forged_cursor_is_refused_and_a_file_of_ones_own_is_signed_again() {
        let c = fnv32_sample(3);
        // What anyone can compute without the key: the old checksum, or a
        // body with any 16 bytes after it.
        let old = fnv32_format(&c, UNSIGNED_PREFIX);
        assert!(Cursor::decode(&old).is_err());
        let signed = unbase64url(c.encode().strip_prefix(PREFIX).unwrap()).unwrap();
        let mut forged = signed.clone();
        let n = forged.len();
        forged[n - 1] ^= 0x40;
        let e = Cursor::decode(&format!("{PREFIX}{}", base64url(&forged))).unwrap_err();
        assert!(e.message.contains("not a cursor this panescan made"), "{e}");
        // The user's own file, old format or new: signed again, the same.
        assert_eq!(Cursor::decode(&Cursor::resign(&old).unwrap()).unwrap(), c);
        assert_eq!(
            Cursor::decode(&Cursor::resign(&c.encode()).unwrap()).unwrap(),
            c
        );
        assert!(Cursor::resign(&old[..old.len() - 2]).is_err());
    }

    /// Pane %0 (a server's first pane) and `join_wrapped: false` round
    /// trip.
    #[test]
    fn pane_zero_and_unjoined_lines_round_trip() {
        let mut c = sample(3);
        c.joined = false;
        c.entries[0].pane = 0;
        assert_eq!(Cursor::decode(&c.encode()).unwrap(), c);
    }

    /// A `ps1.` file of the user's own is checksummed, not signed: one
    /// that names a pane twice (a second step of 0) is refused; the same
    /// with a step of 1 is read.
    #[test]
    fn a_file_naming_a_pane_twice_is_refused() {
        let file = |second_step: u64| {
            let mut body = Vec::new();
            for v in [7, 42, 1_764_000_000] {
                put(&mut body, v);
            }
            body.push(1);
            put(&mut body, 2);
            for step in [5, second_step] {
                for v in [step, 300, 80, 10, 2, 1] {
                    put(&mut body, v);
                }
                body.extend_from_slice(&9u32.to_le_bytes());
            }
            let check = fnv32(&body);
            body.extend_from_slice(&check.to_le_bytes());
            format!("{UNSIGNED_PREFIX}{}", base64url(&body))
        };
        let read = Cursor::decode(&Cursor::resign(&file(1)).unwrap()).unwrap();
        assert_eq!(
            read.entries.iter().map(|e| e.pane).collect::<Vec<_>>(),
            [5, 6]
        );
        assert!(Cursor::resign(&file(0)).is_err());
    }

    #[test]
    fn rows_no_pane_reaches_are_refused() {
        let mut c = sample(2);
        c.entries[1].history = u64::MAX / 2;
        c.entries[1].boundary = u64::MAX / 2 + 5;
        assert!(Cursor::decode(&c.encode()).is_err());
        let mut c = sample(2);
        c.entries[0].anchor_rows = c.entries[0].boundary + 1;
        assert!(Cursor::decode(&c.encode()).is_err());
        // The edges are rows a pane has: the last row counted, an anchor
        // from the top row (a fresh pane of three lines).
        let mut c = sample(2);
        (c.entries[0].history, c.entries[0].boundary) = (MAX_ROWS, MAX_ROWS);
        (c.entries[1].history, c.entries[1].boundary) = (0, 3);
        c.entries[1].anchor_rows = 3;
        assert_eq!(Cursor::decode(&c.encode()).unwrap(), c);
        c.entries[0].boundary = MAX_ROWS + 1;
        assert!(Cursor::decode(&c.encode()).is_err());
    }

    /// A boundary above the history size (a line being written that
    /// wrapped from history onto the screen starts there) is kept, not
    /// moved down to the screen's top row; a `ps3.` cursor written before
    /// signed boundaries reads its offsets as it always did.
    #[test]
    fn a_boundary_above_the_history_size_round_trips() {
        let mut c = sample(3);
        c.entries[0].boundary = c.entries[0].history - 7;
        c.entries[1].boundary = 0;
        c.entries[1].anchor_rows = 0;
        assert_eq!(Cursor::decode(&c.encode()).unwrap(), c);
        for v in [0, -1, 1, i64::MIN, i64::MAX, -300, 300] {
            assert_eq!(unzigzag(zigzag(v)), v);
        }
        assert_eq!(zigzag(-1), 1);
        assert_eq!(zigzag(1), 2);
        // The old layout: flags without the signed bit, offsets unsigned.
        let c = sample(2);
        let mut body = Vec::new();
        put(&mut body, u64::from(c.server.socket));
        put(&mut body, u64::from(c.server.pid));
        put(&mut body, c.server.start);
        body.push(1);
        put(&mut body, 2);
        let mut previous = 0;
        for e in &c.entries {
            for v in [
                u64::from(e.pane - previous),
                u64::from(e.pid),
                u64::from(e.width),
                e.history,
                e.boundary - e.history,
                e.anchor_rows,
            ] {
                put(&mut body, v);
            }
            previous = e.pane;
            body.extend_from_slice(&e.anchor.to_le_bytes());
        }
        body.extend_from_slice(&crate::tools::cursor_key::tag(&body));
        let old = format!("{PREFIX}{}", base64url(&body));
        assert_eq!(Cursor::decode(&old).unwrap(), c);
    }

    /// Only what `base64url` writes is read: a lone last character (six
    /// bits, no byte) or padding bits that are not zero are refused.
    #[test]
    fn unbase64url_refuses_what_base64url_never_writes() {
        assert_eq!(unbase64url("AA"), Some(vec![0]));
        assert_eq!(unbase64url("AAAA"), Some(vec![0, 0, 0]));
        assert_eq!(unbase64url("AAAAA"), None);
        assert_eq!(unbase64url("AB"), None);
        assert_eq!(unbase64url("AAB"), None);
    }

    #[test]
    fn base64url_round_trips_every_length() {
        for n in 0..40u8 {
            let bytes: Vec<u8> = (0..n).map(|i| i.wrapping_mul(37)).collect();
            assert_eq!(unbase64url(&base64url(&bytes)).unwrap(), bytes);
        }
    }
}
