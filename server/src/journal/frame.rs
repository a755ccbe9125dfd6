//! A frame: the records written at one flush, compressed and checked
//! (pure).
//!
//! On disk a frame is a fixed header — magic, the compressed length, the
//! raw length, the first and last record times, a CRC-32 over the header
//! and the compressed bytes — then the zstd bytes. Inside, the records are
//! laid out so a search scans the text alone: a table of panes, one
//! `(pane, time)` per line, the gaps, then the lines' text, each ended by
//! `\n`, as one block the engine reads as one capture.
//!
//! A `PJF2` frame also holds each line's row on its pane's steady scale
//! ([`Row`]), after the gaps: what locates a command's output
//! (`journal/ledger.rs`). `PJF1` frames (without rows) are still read.
//!
//! Must hold: a frame decodes only if its CRC holds and every length in it
//! stays inside it; nothing from the file can panic the decoder.

use std::collections::HashMap;

pub use super::track::Row;

/// The first bytes of a frame without rows.
pub const MAGIC: [u8; 4] = *b"PJF1";
/// The first bytes of a frame with a row per line.
const MAGIC_ROWS: [u8; 4] = *b"PJF2";
/// Header bytes: magic, compressed length, raw length, first and last
/// time, CRC.
pub const HEADER: usize = 4 + 4 + 4 + 8 + 8 + 4;
/// A frame's raw payload at most (a flush writes smaller ones); a header
/// claiming more is corrupt.
const MAX_RAW: usize = 64 << 20;
/// zstd level 1: the measured best trade of size and write cost (NOTES.md).
const LEVEL: i32 = 1;

/// Where a line came from: the pane and its names when it was read.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Origin {
    /// The tmux server (`#{pid}.#{start_time}@socket`), so a pane id
    /// reused by a restarted server is another pane.
    pub server: String,
    /// `%N`.
    pub pane: String,
    /// Session, window and pane names (`session:window.index`, title).
    pub session: String,
    /// The window (`index:name`).
    pub window: String,
    /// The pane's index in its window.
    pub title: String,
}

/// A line of a pane, as tmux rendered it, and when it was first seen.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Line {
    /// Index into the frame's [`Records::origins`].
    pub origin: usize,
    /// Milliseconds since the Unix epoch.
    pub time_ms: i64,
    /// The line without its newline.
    pub text: Vec<u8>,
}

/// Lines a pane printed that the journal could not keep, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Gap {
    /// Index into the frame's [`Records::origins`].
    pub origin: usize,
    /// Since when (ms).
    pub from_ms: i64,
    /// Until when (ms).
    pub to_ms: i64,
    /// Why, in words.
    pub reason: String,
}

/// The records of one frame, in the order they were taken.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Records {
    /// The panes the records name.
    pub origins: Vec<Origin>,
    /// Lines, in the order they were taken.
    pub lines: Vec<Line>,
    /// Gaps.
    pub gaps: Vec<Gap>,
    /// Each line's row (written only when there is one per line).
    pub rows: Vec<Row>,
    index: HashMap<Origin, usize>,
}

impl Records {
    /// The index of `origin` in this frame's table (added when new).
    pub fn origin(&mut self, origin: &Origin) -> usize {
        if let Some(&i) = self.index.get(origin) {
            return i;
        }
        self.origins.push(origin.clone());
        self.index.insert(origin.clone(), self.origins.len() - 1);
        self.origins.len() - 1
    }

    /// Nothing to write.
    pub fn is_empty(&self) -> bool {
        self.lines.is_empty() && self.gaps.is_empty()
    }

    /// The raw bytes the records take, roughly (to decide when to flush).
    pub fn raw_len(&self) -> usize {
        self.lines.iter().map(|l| l.text.len() + 11).sum::<usize>() + self.gaps.len() * 64
    }

    fn times(&self) -> (i64, i64) {
        let all = self
            .lines
            .iter()
            .map(|l| l.time_ms)
            .chain(self.gaps.iter().flat_map(|g| [g.from_ms, g.to_ms]));
        all.fold((i64::MAX, i64::MIN), |(lo, hi), t| (lo.min(t), hi.max(t)))
    }
}

/// A frame's header fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    /// Bytes of zstd after the header.
    pub compressed: usize,
    /// Bytes they decompress to.
    pub raw: usize,
    /// The earliest record time (ms).
    pub first_ms: i64,
    /// The latest record time (ms).
    pub last_ms: i64,
    /// CRC-32 of the header's fields before it and the compressed bytes.
    pub crc: u32,
    /// The payload has a row per line (`PJF2`).
    pub rows: bool,
}

/// Why bytes are not a frame.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Bad {
    /// The file ends inside the frame (a torn write).
    Short,
    /// The bytes are not what was written.
    Corrupt(String),
}

/// `records` as a frame's bytes.
pub fn encode(records: &Records) -> std::io::Result<Vec<u8>> {
    let raw = encode_raw(records);
    let packed = zstd::bulk::compress(&raw, LEVEL)?;
    let (first, last) = records.times();
    let mut out = Vec::with_capacity(HEADER + packed.len());
    out.extend_from_slice(if with_rows(records) {
        &MAGIC_ROWS
    } else {
        &MAGIC
    });
    out.extend_from_slice(&len32(packed.len()).to_le_bytes());
    out.extend_from_slice(&len32(raw.len()).to_le_bytes());
    out.extend_from_slice(&first.to_le_bytes());
    out.extend_from_slice(&last.to_le_bytes());
    let crc = checksum(&out[4..HEADER - 4], &packed);
    out.extend_from_slice(&crc.to_le_bytes());
    out.extend_from_slice(&packed);
    Ok(out)
}

fn with_rows(records: &Records) -> bool {
    !records.lines.is_empty() && records.rows.len() == records.lines.len()
}

fn len32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

fn checksum(fields: &[u8], packed: &[u8]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(fields);
    h.update(packed);
    h.finalize()
}

/// The header at the start of `bytes`.
pub fn header(bytes: &[u8]) -> Result<Header, Bad> {
    let h = bytes.get(..HEADER).ok_or(Bad::Short)?;
    if h[..4] != MAGIC && h[..4] != MAGIC_ROWS {
        return Err(Bad::Corrupt("no frame magic".into()));
    }
    let u32_at = |i: usize| u32::from_le_bytes([h[i], h[i + 1], h[i + 2], h[i + 3]]);
    let i64_at = |i: usize| {
        let mut b = [0u8; 8];
        b.copy_from_slice(&h[i..i + 8]);
        i64::from_le_bytes(b)
    };
    let header = Header {
        compressed: u32_at(4) as usize,
        raw: u32_at(8) as usize,
        first_ms: i64_at(12),
        last_ms: i64_at(20),
        crc: u32_at(28),
        rows: h[..4] == MAGIC_ROWS,
    };
    if header.raw > MAX_RAW || header.compressed > MAX_RAW {
        return Err(Bad::Corrupt("a length past the limit".into()));
    }
    Ok(header)
}

/// Checks the frame at the start of `bytes`: its header and its length in
/// bytes (header included).
pub fn check(bytes: &[u8]) -> Result<(Header, usize), Bad> {
    let header = header(bytes)?;
    let end = HEADER + header.compressed;
    let packed = bytes.get(HEADER..end).ok_or(Bad::Short)?;
    if checksum(&bytes[4..HEADER - 4], packed) != header.crc {
        return Err(Bad::Corrupt("checksum mismatch".into()));
    }
    Ok((header, end))
}

/// The records of a checked frame (`bytes` as [`check`] accepted it).
pub fn decode(bytes: &[u8], header: &Header) -> Result<Decoded, Bad> {
    let packed = bytes
        .get(HEADER..HEADER + header.compressed)
        .ok_or(Bad::Short)?;
    let raw = zstd::bulk::decompress(packed, header.raw)
        .map_err(|e| Bad::Corrupt(format!("zstd: {e}")))?;
    decode_raw(raw, header.rows)
}

/// A decoded frame: its tables and the text block.
#[derive(Clone, Debug, Default)]
pub struct Decoded {
    /// The panes the records name.
    pub origins: Vec<Origin>,
    /// `(origin, time_ms)` of every line of `text`, in order.
    pub lines: Vec<(usize, i64)>,
    /// Gaps.
    pub gaps: Vec<Gap>,
    /// Each line's row, when the frame has them (else empty).
    pub rows: Vec<Row>,
    /// Every line ended by `\n`.
    pub text: bytes::Bytes,
    /// Where each line starts in `text`.
    pub starts: Vec<usize>,
}

impl Decoded {
    /// Line `i`'s text without its `\n`.
    pub fn line(&self, i: usize) -> &[u8] {
        let start = self.starts.get(i).copied().unwrap_or(self.text.len());
        // Every line, the last too, ends with its `\n`.
        let end = self.starts.get(i + 1).copied().unwrap_or(self.text.len());
        self.text
            .get(start..end.saturating_sub(1).max(start))
            .unwrap_or_default()
    }
}

fn encode_raw(records: &Records) -> Vec<u8> {
    let mut out = Vec::with_capacity(records.raw_len() + 64);
    put_u32(&mut out, records.origins.len());
    for o in &records.origins {
        for s in [&o.server, &o.pane, &o.session, &o.window, &o.title] {
            put_str(&mut out, s.as_bytes());
        }
    }
    put_u32(&mut out, records.lines.len());
    for l in &records.lines {
        put_u32(&mut out, l.origin);
        out.extend_from_slice(&l.time_ms.to_le_bytes());
    }
    put_u32(&mut out, records.gaps.len());
    for g in &records.gaps {
        put_u32(&mut out, g.origin);
        out.extend_from_slice(&g.from_ms.to_le_bytes());
        out.extend_from_slice(&g.to_ms.to_le_bytes());
        put_str(&mut out, g.reason.as_bytes());
    }
    if with_rows(records) {
        for r in &records.rows {
            out.extend_from_slice(&r.epoch.to_le_bytes());
            out.extend_from_slice(&r.row.to_le_bytes());
        }
    }
    for l in &records.lines {
        // A captured line holds no newline; one that did would shift
        // every later line's record, so it is replaced.
        out.extend(l.text.iter().map(|&b| if b == b'\n' { b' ' } else { b }));
        out.push(b'\n');
    }
    out
}

fn put_u32(out: &mut Vec<u8>, n: usize) {
    out.extend_from_slice(&len32(n).to_le_bytes());
}

fn put_str(out: &mut Vec<u8>, s: &[u8]) {
    let s = &s[..s.len().min(u16::MAX as usize)];
    out.extend_from_slice(&(s.len() as u16).to_le_bytes());
    out.extend_from_slice(s);
}

/// A cursor over a raw payload; every read checks its bounds.
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8], Bad> {
        let end = self.at.checked_add(n).ok_or(Bad::Short)?;
        let s = self
            .bytes
            .get(self.at..end)
            .ok_or_else(|| Bad::Corrupt("a record runs past its frame".into()))?;
        self.at = end;
        Ok(s)
    }
    fn u32(&mut self) -> Result<usize, Bad> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
    }
    fn i64(&mut self) -> Result<i64, Bad> {
        let mut a = [0u8; 8];
        a.copy_from_slice(self.take(8)?);
        Ok(i64::from_le_bytes(a))
    }
    fn string(&mut self) -> Result<String, Bad> {
        let b = self.take(2)?;
        let n = u16::from_le_bytes([b[0], b[1]]) as usize;
        Ok(String::from_utf8_lossy(self.take(n)?).into_owned())
    }
    /// A count of items at least `each` bytes long that must fit.
    fn count(&mut self, each: usize) -> Result<usize, Bad> {
        let n = self.u32()?;
        if n.saturating_mul(each) > self.bytes.len() - self.at {
            return Err(Bad::Corrupt("a count past its frame".into()));
        }
        Ok(n)
    }
}

fn decode_raw(raw: Vec<u8>, with_rows: bool) -> Result<Decoded, Bad> {
    let mut r = Reader { bytes: &raw, at: 0 };
    let mut origins = Vec::new();
    for _ in 0..r.count(10)? {
        origins.push(Origin {
            server: r.string()?,
            pane: r.string()?,
            session: r.string()?,
            window: r.string()?,
            title: r.string()?,
        });
    }
    let known = |o: usize| {
        (o < origins.len())
            .then_some(o)
            .ok_or_else(|| Bad::Corrupt("a record names no pane".into()))
    };
    let mut lines = Vec::new();
    for _ in 0..r.count(12)? {
        let origin = known(r.u32()?)?;
        lines.push((origin, r.i64()?));
    }
    let mut gaps = Vec::new();
    for _ in 0..r.count(22)? {
        let origin = known(r.u32()?)?;
        gaps.push(Gap {
            origin,
            from_ms: r.i64()?,
            to_ms: r.i64()?,
            reason: r.string()?,
        });
    }
    let mut rows = Vec::new();
    if with_rows {
        if lines.len().saturating_mul(16) > r.bytes.len() - r.at {
            return Err(Bad::Corrupt("rows past the frame".into()));
        }
        for _ in 0..lines.len() {
            let epoch = r.i64()? as u64;
            let row = r.i64()? as u64;
            rows.push(Row { epoch, row });
        }
    }
    let at = r.at;
    let text = bytes::Bytes::from(raw).slice(at..);
    let mut starts = Vec::with_capacity(lines.len());
    let mut pos = 0;
    for _ in 0..lines.len() {
        starts.push(pos);
        pos += memchr::memchr(b'\n', &text[pos..])
            .ok_or_else(|| Bad::Corrupt("fewer lines than records".into()))?
            + 1;
    }
    if pos != text.len() {
        return Err(Bad::Corrupt("more lines than records".into()));
    }
    Ok(Decoded {
        origins,
        lines,
        gaps,
        rows,
        text,
        starts,
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    fn sample() -> Records {
        let mut r = Records::default();
        let o = Origin {
            server: "1.2@/s".into(),
            pane: "%1".into(),
            session: "main".into(),
            window: "0:build".into(),
            title: "host".into(),
        };
        let i = r.origin(&o);
        assert_eq!(r.origin(&o), i);
        for (t, text) in [(5, "first"), (6, ""), (7, "ünïcode 漢字")] {
            r.lines.push(Line {
                origin: i,
                time_ms: t,
                text: text.into(),
            });
        }
        r.gaps.push(Gap {
            origin: i,
            from_ms: 1,
            to_ms: 4,
            reason: "daemon not running".into(),
        });
        r
    }

    #[test]
    fn a_frame_round_trips() {
        let bytes = encode(&sample()).unwrap();
        let (h, len) = check(&bytes).unwrap();
        assert_eq!(len, bytes.len());
        assert_eq!((h.first_ms, h.last_ms), (1, 7));
        let d = decode(&bytes, &h).unwrap();
        assert_eq!(d.lines, vec![(0, 5), (0, 6), (0, 7)]);
        assert_eq!(d.line(0), b"first");
        assert_eq!(d.line(1), b"");
        assert_eq!(d.line(2), "ünïcode 漢字".as_bytes());
        assert_eq!(d.gaps, sample().gaps);
        assert_eq!(d.origins, sample().origins);
    }

    #[test]
    fn rows_round_trip_and_frames_without_them_still_read() {
        let mut r = sample();
        r.rows = (0..3)
            .map(|i| Row {
                epoch: 9,
                row: 100 + i,
            })
            .collect();
        let bytes = encode(&r).unwrap();
        assert_eq!(bytes[..4], MAGIC_ROWS);
        let (h, _) = check(&bytes).unwrap();
        let d = decode(&bytes, &h).unwrap();
        assert_eq!(d.rows, r.rows);
        assert_eq!(d.line(2), "ünïcode 漢字".as_bytes());
        let plain = encode(&sample()).unwrap();
        assert_eq!(plain[..4], MAGIC);
        let (h, _) = check(&plain).unwrap();
        assert!(decode(&plain, &h).unwrap().rows.is_empty());
    }

    #[test]
    fn every_flipped_byte_or_cut_is_refused_never_a_panic() {
        let mut rowed = sample();
        rowed.rows = vec![Row { epoch: 1, row: 2 }; 3];
        let bytes = encode(&rowed).unwrap();
        for i in 0..4 {
            let mut b = bytes.clone();
            b[i] ^= 0x41;
            assert!(check(&b).is_err());
        }
        let bytes = encode(&sample()).unwrap();
        for cut in 0..bytes.len() {
            assert_eq!(check(&bytes[..cut]).err(), Some(Bad::Short), "cut {cut}");
        }
        for i in 0..bytes.len() {
            let mut b = bytes.clone();
            b[i] ^= 0x41;
            assert!(check(&b).is_err() || decode(&b, &check(&b).unwrap().0).is_err());
        }
    }
}
