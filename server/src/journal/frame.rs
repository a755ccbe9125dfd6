//! A frame: the records written at one flush, compressed and checked
//! (pure).
//!
//! On disk a frame is a fixed header — magic, the compressed length, the
//! raw length, the first and last record times, a CRC-32 over the header
//! and the compressed bytes — then the compressed bytes: the frame's index
//! as a zstd skippable frame ([`super::index`]; frames written before
//! indexes have none, and zstd skips it), then the zstd frame. Inside, the records are
//! laid out so a search scans the text alone: a table of panes, one
//! `(pane, time)` per line, the gaps, then the lines' text, each ended by
//! `\n`, as one block the engine reads as one capture.
//!
//! A `PJF2` frame also holds each line's row on its pane's steady scale
//! ([`Row`]), after the gaps: what locates a command's output
//! (`journal/ledger.rs`). `PJF1` frames (without rows) are still read.
//!
//! Two decodings: [`decode`] gives every line its pane, time, row and
//! start (the ledger, the pane journal); [`decode_block`] gives what a
//! search needs, the text as one block and the lines' panes and times as
//! [`Run`]s (a pane's lines read at one moment share both), so a frame
//! costs no work per line beyond one pass over its table.
//!
//! Must hold: a frame decodes only if its CRC holds and every length in it
//! stays inside it, the text holding exactly one line per record, the
//! same checks in both decodings; nothing from the file can panic the
//! decoder.

use std::cell::RefCell;
use std::collections::HashMap;

use super::index::{self, Index};

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
    encode_with(records, true)
}

/// `records` as a frame without an index, as frames were written before
/// indexes (the tests' older frames).
#[cfg(test)]
pub fn encode_unindexed(records: &Records) -> std::io::Result<Vec<u8>> {
    encode_with(records, false)
}

fn encode_with(records: &Records, indexed: bool) -> std::io::Result<Vec<u8>> {
    let (raw, text_at) = encode_raw(records);
    let zstd = zstd::bulk::compress(&raw, LEVEL)?;
    let packed = if records.lines.is_empty() || !indexed {
        zstd
    } else {
        let mut packed = index_of(records, &raw[text_at..], zstd.len()).encode();
        packed.extend_from_slice(&zstd);
        packed
    };
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

/// The index of a frame of `records` whose text block is `text`, its zstd
/// bytes `compressed` long.
fn index_of(records: &Records, text: &[u8], compressed: usize) -> Index {
    let mut panes: Vec<(u64, u64)> = Vec::new();
    let keys: Vec<u64> = records
        .origins
        .iter()
        .map(|o| index::pane_key(&o.server, &o.pane))
        .collect();
    let mut last: Option<(usize, usize)> = None;
    for line in &records.lines {
        // Lines of one origin come in runs: its slot is looked up once a run.
        let slot = match last {
            Some((origin, slot)) if origin == line.origin => slot,
            _ => {
                let key = keys.get(line.origin).copied().unwrap_or_default();
                let slot = panes.iter().position(|p| p.0 == key).unwrap_or_else(|| {
                    panes.push((key, 0));
                    panes.len() - 1
                });
                last = Some((line.origin, slot));
                slot
            }
        };
        panes[slot].1 += 1;
    }
    let lines = records.lines.len() as u64;
    index::build(text, lines, panes, !records.gaps.is_empty(), compressed)
}

/// The index written before a checked frame's zstd bytes (`bytes` as
/// [`check`] accepted it), when it has a sound one.
pub fn index(bytes: &[u8], header: &Header) -> Option<Index> {
    Index::read(bytes.get(HEADER..HEADER + header.compressed)?)
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
    decode_raw(payload(bytes, header)?, header.rows)
}

/// The text and the runs of a checked frame (`bytes` as [`check`]
/// accepted it): what a search reads.
pub fn decode_block(bytes: &[u8], header: &Header) -> Result<Block, Bad> {
    block_raw(payload(bytes, header)?, header.rows)
}

/// The raw payload of a checked frame, decompressed and not parsed.
pub fn payload(bytes: &[u8], header: &Header) -> Result<Vec<u8>, Bad> {
    let packed = bytes
        .get(HEADER..HEADER + header.compressed)
        .ok_or(Bad::Short)?;
    inflate(packed, header.raw)
}

thread_local! {
    /// One zstd context per thread, reused from frame to frame.
    static INFLATE: RefCell<Option<zstd::bulk::Decompressor<'static>>> =
        const { RefCell::new(None) };
}

/// The raw payload of `packed`, at most `raw` bytes.
fn inflate(packed: &[u8], raw: usize) -> Result<Vec<u8>, Bad> {
    let zstd = |e: std::io::Error| Bad::Corrupt(format!("zstd: {e}"));
    INFLATE.with(|cell| {
        let mut cell = cell.borrow_mut();
        let context = match cell.as_mut() {
            Some(c) => c,
            None => cell.insert(zstd::bulk::Decompressor::new().map_err(zstd)?),
        };
        context.decompress(packed, raw).map_err(zstd)
    })
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
        line_of(&self.text, &self.starts, i)
    }
}

/// Line `i` of `text` (lines starting at `starts`) without its `\n`.
fn line_of<'a>(text: &'a [u8], starts: &[usize], i: usize) -> &'a [u8] {
    let start = starts.get(i).copied().unwrap_or(text.len());
    // Every line, the last too, ends with its `\n`.
    let end = starts.get(i + 1).copied().unwrap_or(text.len());
    text.get(start..end.saturating_sub(1).max(start))
        .unwrap_or_default()
}

/// Consecutive lines of a frame from one pane with one time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Run {
    /// The index of its first line in the frame.
    pub first: usize,
    /// Its lines.
    pub len: usize,
    /// Index into the frame's origins.
    pub origin: usize,
    /// When its lines were first seen (ms).
    pub time_ms: i64,
}

/// A frame decoded for a search: the text as one block, the lines' panes
/// and times as runs ([`decode_block`]).
#[derive(Clone, Debug, Default)]
pub struct Block {
    /// The panes the records name.
    pub origins: Vec<Origin>,
    /// The lines of `text` in order, as runs.
    pub runs: Vec<Run>,
    /// Gaps.
    pub gaps: Vec<Gap>,
    /// Every line ended by `\n`.
    pub text: bytes::Bytes,
    /// Lines in `text`.
    pub lines: usize,
}

impl Block {
    /// The run holding line `i` (the search walks runs in order instead).
    #[cfg(test)]
    pub fn run_of(&self, i: usize) -> Option<&Run> {
        let k = self.runs.partition_point(|r| r.first + r.len <= i);
        self.runs.get(k).filter(|r| r.first <= i)
    }

    /// Where each line starts in `text` (one pass over it, for the few
    /// readers that want lines one by one).
    pub fn starts(&self) -> Vec<usize> {
        let mut starts = Vec::with_capacity(self.lines);
        starts.push(0);
        starts.extend(memchr::memchr_iter(b'\n', &self.text).map(|i| i + 1));
        starts.truncate(self.lines);
        starts
    }

    /// Line `i`'s text without its `\n`, `starts` from [`Block::starts`].
    pub fn line<'a>(&'a self, starts: &[usize], i: usize) -> &'a [u8] {
        line_of(&self.text, starts, i)
    }
}

/// The raw payload of `records`, and where its text block starts.
fn encode_raw(records: &Records) -> (Vec<u8>, usize) {
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
    let text_at = out.len();
    for l in &records.lines {
        // A captured line holds no newline; one that did would shift
        // every later line's record, so it is replaced.
        out.extend(l.text.iter().map(|&b| if b == b'\n' { b' ' } else { b }));
        out.push(b'\n');
    }
    (out, text_at)
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

/// Where a raw payload's parts lie, its small tables read: what both
/// decodings share.
struct Layout {
    origins: Vec<Origin>,
    gaps: Vec<Gap>,
    /// Lines (records in the table, lines in the text).
    lines: usize,
    /// Where the `(pane, time)` table starts: 12 bytes a line.
    table: usize,
    /// Where the rows start, when the frame has them: 16 bytes a line.
    rows: Option<usize>,
    /// Where the text starts: it runs to the end.
    text: usize,
}

const TABLE_ENTRY: usize = 12;
const ROW_ENTRY: usize = 16;

fn layout(raw: &[u8], with_rows: bool) -> Result<Layout, Bad> {
    let mut r = Reader { bytes: raw, at: 0 };
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
    let lines = r.count(TABLE_ENTRY)?;
    let table = r.at;
    // `count` made sure the table fits.
    r.take(lines * TABLE_ENTRY)?;
    let mut gaps = Vec::new();
    for _ in 0..r.count(22)? {
        let origin = known(&origins, r.u32()?)?;
        gaps.push(Gap {
            origin,
            from_ms: r.i64()?,
            to_ms: r.i64()?,
            reason: r.string()?,
        });
    }
    let rows = if with_rows {
        if lines.saturating_mul(ROW_ENTRY) > r.bytes.len() - r.at {
            return Err(Bad::Corrupt("rows past the frame".into()));
        }
        let at = r.at;
        r.take(lines * ROW_ENTRY)?;
        Some(at)
    } else {
        None
    };
    Ok(Layout {
        origins,
        gaps,
        lines,
        table,
        rows,
        text: r.at,
    })
}

fn known(origins: &[Origin], o: usize) -> Result<usize, Bad> {
    (o < origins.len())
        .then_some(o)
        .ok_or_else(|| Bad::Corrupt("a record names no pane".into()))
}

/// The table's `(origin, time)` entries, each origin checked.
fn entries<'a>(
    raw: &'a [u8],
    layout: &'a Layout,
) -> impl Iterator<Item = Result<(usize, i64), Bad>> + 'a {
    let table = &raw[layout.table..layout.table + layout.lines * TABLE_ENTRY];
    table.chunks_exact(TABLE_ENTRY).map(|e| {
        let origin = u32::from_le_bytes([e[0], e[1], e[2], e[3]]) as usize;
        let mut time = [0u8; 8];
        time.copy_from_slice(&e[4..]);
        Ok((known(&layout.origins, origin)?, i64::from_le_bytes(time)))
    })
}

fn decode_raw(raw: Vec<u8>, with_rows: bool) -> Result<Decoded, Bad> {
    let layout = layout(&raw, with_rows)?;
    let lines = entries(&raw, &layout).collect::<Result<Vec<_>, Bad>>()?;
    let rows = match layout.rows {
        Some(at) => raw[at..at + layout.lines * ROW_ENTRY]
            .chunks_exact(ROW_ENTRY)
            .map(|e| {
                let mut epoch = [0u8; 8];
                let mut row = [0u8; 8];
                epoch.copy_from_slice(&e[..8]);
                row.copy_from_slice(&e[8..]);
                Row {
                    epoch: u64::from_le_bytes(epoch),
                    row: u64::from_le_bytes(row),
                }
            })
            .collect(),
        None => Vec::new(),
    };
    let text = bytes::Bytes::from(raw).slice(layout.text..);
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
        origins: layout.origins,
        lines,
        gaps: layout.gaps,
        rows,
        text,
        starts,
    })
}

fn block_raw(raw: Vec<u8>, with_rows: bool) -> Result<Block, Bad> {
    let layout = layout(&raw, with_rows)?;
    let mut runs: Vec<Run> = Vec::new();
    for (i, entry) in entries(&raw, &layout).enumerate() {
        let (origin, time_ms) = entry?;
        match runs.last_mut() {
            Some(run) if run.origin == origin && run.time_ms == time_ms => run.len += 1,
            _ => runs.push(Run {
                first: i,
                len: 1,
                origin,
                time_ms,
            }),
        }
    }
    let text = bytes::Bytes::from(raw).slice(layout.text..);
    // One line per record, each ended by its `\n`, as `decode` requires.
    let newlines = memchr::memchr_iter(b'\n', &text).count();
    if newlines < layout.lines {
        return Err(Bad::Corrupt("fewer lines than records".into()));
    }
    if newlines > layout.lines || text.last().is_some_and(|&b| b != b'\n') {
        return Err(Bad::Corrupt("more lines than records".into()));
    }
    Ok(Block {
        origins: layout.origins,
        runs,
        gaps: layout.gaps,
        text,
        lines: layout.lines,
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

    /// Records of three origins (two of one pane, renamed) from `lines`.
    fn records_of(lines: &[(usize, i64, String)], rows: bool) -> Records {
        let mut r = Records::default();
        let o: Vec<usize> = ["a", "b", "a"]
            .iter()
            .enumerate()
            .map(|(i, pane)| {
                r.origin(&Origin {
                    server: "s".into(),
                    pane: (*pane).into(),
                    session: format!("session {i}"),
                    window: "0:w".into(),
                    title: "t".into(),
                })
            })
            .collect();
        for (origin, time_ms, text) in lines {
            r.lines.push(Line {
                origin: o[*origin],
                time_ms: *time_ms,
                text: text.clone().into_bytes(),
            });
        }
        if rows {
            r.rows = (0..r.lines.len() as u64)
                .map(|row| Row { epoch: 1, row })
                .collect();
        }
        r
    }

    #[test]
    fn both_decodings_want_exactly_one_ended_line_per_record() {
        let two = [(0, 1, "a".to_owned()), (0, 1, "b".to_owned())];
        let raw = encode_raw(&records_of(&two, false)).0;
        let at = layout(&raw, false).unwrap().text;
        for (text, want) in [
            ("a\nb\n", None),
            ("\n\n", None),
            ("a\nb", Some("fewer lines than records")),
            ("", Some("fewer lines than records")),
            ("a\n\nb", Some("more lines than records")),
            ("a\nb\nc\n", Some("more lines than records")),
            ("a\nb\nc", Some("more lines than records")),
        ] {
            let mut raw = raw[..at].to_vec();
            raw.extend_from_slice(text.as_bytes());
            let want = want.map(|w| Bad::Corrupt(w.into()));
            assert_eq!(decode_raw(raw.clone(), false).err(), want, "{text:?}");
            assert_eq!(block_raw(raw, false).err(), want, "{text:?}");
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(500))]

        /// The search's decoding refuses what the full one refuses, for the
        /// same reason, and otherwise gives the same lines, panes and times.
        #[test]
        fn a_block_holds_what_decode_holds(
            lines in proptest::collection::vec(
                (0..3usize, 0..3i64, "needle|[a 漢\n]{0,5}"), 0..24),
            rows in proptest::bool::ANY,
            flips in proptest::collection::vec(
                (proptest::sample::select(vec![0usize, 1, 2, 3, 5, 8, 13, 40, 99, 300]),
                 1..=255u8), 0..3),
            cut in proptest::option::of(0..400usize),
        ) {
            let records = records_of(&lines, rows);
            let mut raw = encode_raw(&records).0;
            let len = raw.len();
            for (at, x) in flips {
                // Count from the end too: the text and the rows.
                let at = if at % 2 == 0 { at } else { len.saturating_sub(at) };
                if let Some(b) = raw.get_mut(at) {
                    *b ^= x;
                }
            }
            if let Some(cut) = cut {
                raw.truncate(len.saturating_sub(cut));
            }
            let with_rows = rows && !records.lines.is_empty();
            let decoded = decode_raw(raw.clone(), with_rows);
            let block = block_raw(raw, with_rows);
            match (decoded, block) {
                (Ok(d), Ok(b)) => {
                    let expanded: Vec<(usize, i64)> = b
                        .runs
                        .iter()
                        .flat_map(|r| std::iter::repeat_n((r.origin, r.time_ms), r.len))
                        .collect();
                    proptest::prop_assert_eq!(&expanded, &d.lines);
                    proptest::prop_assert_eq!(b.lines, d.lines.len());
                    proptest::prop_assert_eq!(&b.text, &d.text);
                    proptest::prop_assert_eq!(&b.origins, &d.origins);
                    proptest::prop_assert_eq!(&b.gaps, &d.gaps);
                    let starts = b.starts();
                    proptest::prop_assert_eq!(&starts, &d.starts);
                    for i in 0..d.lines.len() {
                        proptest::prop_assert_eq!(b.line(&starts, i), d.line(i));
                        let run = b.run_of(i).unwrap();
                        proptest::prop_assert_eq!((run.origin, run.time_ms), d.lines[i]);
                    }
                    proptest::prop_assert!(b.run_of(d.lines.len()).is_none());
                }
                (d, b) => proptest::prop_assert_eq!(d.err(), b.err()),
            }
        }
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
