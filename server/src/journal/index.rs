//! A frame's index: what a search learns of a frame without decompressing
//! it (pure).
//!
//! Written by [`super::frame::encode`] as a zstd skippable frame before
//! the frame's zstd bytes (zstd itself skips it, so a reader that knows
//! nothing of it decodes the frame unchanged): a filter of the trigrams of
//! the frame's text block with its ASCII letters lowered (one bit per
//! trigram, a power of two of bits, see [`build`]), the text's bytes and
//! lines, whether the frame holds gaps or escape bytes, and each pane's
//! line count under a 64-bit hash of its key (a skipped frame's lines
//! still count toward the ordinals of later hits).
//!
//! Must hold: a trigram of the lowered text is always in the filter (a
//! search that skips a frame its filter rules out never misses a match);
//! an index whose own CRC fails, or that is malformed, is absent (the
//! frame is decompressed). Hash functions here are part of the on-disk
//! format: changing one needs a new tag.

/// zstd's skippable frames have magics `0x184D2A50..=0x184D2A5F`.
const SKIPPABLE: u32 = 0x184D_2A5A;
/// The first bytes inside the skippable frame.
const TAG: [u8; 4] = *b"PJX1";
/// Tag, CRC, flags, log2 of the filter's bits, text bytes, lines, panes.
const FIXED: usize = 4 + 4 + 1 + 1 + 4 + 4 + 4;
/// Per pane: its key's hash and its lines.
const PANE: usize = 8 + 4;
/// The filter's bits, at least and at most (log2).
const MIN_LOG2: u8 = 6;
const MAX_LOG2: u8 = 20;
/// Bits per distinct trigram the filter aims at (measured: BENCHMARKS.md,
/// "The journal's frame index").
pub const BITS_PER_TRIGRAM: usize = 4;
/// The filter takes at most this share of the frame's compressed bytes
/// (1 / N), so the index never weighs much on disk.
pub const SHARE_OF_COMPRESSED: usize = 10;

const GAPS: u8 = 1;
const ESCAPES: u8 = 2;

/// A frame's index, read or built.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Index {
    /// Bytes of the frame's text block.
    pub text_bytes: u64,
    /// Its lines.
    pub lines: u64,
    /// The frame holds gap records.
    pub gaps: bool,
    /// The text holds an ESC byte (a search that strips escapes cannot
    /// trust trigrams of the text as written).
    pub escapes: bool,
    /// `(pane_key(server, pane), lines)` of every pane with lines here.
    pub panes: Vec<(u64, u64)>,
    /// The filter: bit `trigram_hash(t) & (bits - 1)` set for every
    /// trigram `t` of the lowered text; little-endian words.
    filter: Vec<u64>,
}

/// The hash of a pane's key (its server and `%N`), as the index names it.
pub fn pane_key(server: &str, pane: &str) -> u64 {
    // FNV-1a, 64 bits, over server, a 0xff (never in UTF-8), pane.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in server
        .as_bytes()
        .iter()
        .chain(&[0xff])
        .chain(pane.as_bytes())
    {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// The hash of a trigram (three bytes, ASCII letters lowered, the first
/// in the low byte): a multiply by 2^64 / phi, its high bits folded onto
/// its low ones (the filter takes the low bits). One multiply a byte of
/// text: the writer pays it for every line.
fn trigram_hash(t: u32) -> u64 {
    let h = u64::from(t).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    h ^ (h >> 29)
}

/// The trigram hashes of `s`, its ASCII letters lowered.
pub fn trigrams(s: &[u8]) -> Vec<u64> {
    s.windows(3)
        .map(|w| {
            let [a, b, c] = [w[0], w[1], w[2]].map(|x| u32::from(x.to_ascii_lowercase()));
            trigram_hash(a | b << 8 | c << 16)
        })
        .collect()
}

/// The index of a frame whose text block is `text`, its panes' line
/// counts `panes`, `gaps` when it holds gap records, its filter
/// [`BITS_PER_TRIGRAM`] bits per distinct trigram and no larger than
/// [`SHARE_OF_COMPRESSED`] of `compressed` bytes.
pub fn build(
    text: &[u8],
    lines: u64,
    panes: Vec<(u64, u64)>,
    gaps: bool,
    compressed: usize,
) -> Index {
    let mut index = build_with(text, BITS_PER_TRIGRAM, compressed / SHARE_OF_COMPRESSED);
    index.lines = lines;
    index.panes = panes;
    index.gaps = gaps;
    index
}

/// The index of `text` alone (no panes, no gaps), its filter
/// `bits_per_trigram` bits per distinct trigram, at most `cap_bytes`
/// (a power of two, 8 bytes at least).
pub fn build_with(text: &[u8], bits_per_trigram: usize, cap_bytes: usize) -> Index {
    // First at a size where distinct trigrams rarely share a bit: the bits
    // set count them; then folded down to the size they need.
    let start = ceil_log2(text.len().saturating_mul(8)).clamp(MIN_LOG2, MAX_LOG2);
    let mut filter = vec![0u64; (1usize << start) / 64];
    let mask = (1u64 << start) - 1;
    let mut t: u32 = 0;
    for (i, &b) in text.iter().enumerate() {
        t = (t >> 8) | u32::from(b.to_ascii_lowercase()) << 16;
        if i >= 2 {
            let bit = trigram_hash(t) & mask;
            filter[(bit >> 6) as usize] |= 1 << (bit & 63);
        }
    }
    let distinct: usize = filter.iter().map(|w| w.count_ones() as usize).sum();
    let mut log2 = ceil_log2(distinct.saturating_mul(bits_per_trigram)).clamp(MIN_LOG2, start);
    let cap_bits = cap_bytes.saturating_mul(8);
    while log2 > MIN_LOG2 && (1usize << log2) > cap_bits {
        log2 -= 1;
    }
    // Bit `h & (m - 1)` of a filter of m bits is bit `h & (m/2 - 1)` of
    // one of m/2 bits, its upper half ORed onto its lower.
    while filter.len() > (1usize << log2) / 64 {
        let half = filter.len() / 2;
        let (low, high) = filter.split_at_mut(half);
        for (l, h) in low.iter_mut().zip(high.iter()) {
            *l |= h;
        }
        filter.truncate(half);
    }
    Index {
        text_bytes: text.len() as u64,
        lines: 0,
        gaps: false,
        escapes: memchr::memchr(0x1b, text).is_some(),
        panes: Vec::new(),
        filter,
    }
}

/// The smallest `b` with `2^b >= n` (0 for n <= 1), at most 63.
fn ceil_log2(n: usize) -> u8 {
    (usize::BITS - n.saturating_sub(1).leading_zeros()).min(63) as u8
}

impl Index {
    /// Whether the filter may hold every trigram of `hashes`.
    pub fn may_hold(&self, hashes: &[u64]) -> bool {
        let mask = (self.filter.len() as u64 * 64).wrapping_sub(1);
        hashes.iter().all(|h| {
            let bit = h & mask;
            self.filter
                .get((bit >> 6) as usize)
                .is_some_and(|w| w & (1 << (bit & 63)) != 0)
        })
    }

    /// Bytes of the filter.
    pub fn filter_bytes(&self) -> usize {
        self.filter.len() * 8
    }

    /// The index as a zstd skippable frame.
    pub fn encode(&self) -> Vec<u8> {
        let mut body = Vec::with_capacity(FIXED + self.panes.len() * PANE + self.filter_bytes());
        body.push((u8::from(self.gaps) * GAPS) | (u8::from(self.escapes) * ESCAPES));
        body.push((self.filter.len() * 64).trailing_zeros() as u8);
        body.extend_from_slice(&u32_of(self.text_bytes).to_le_bytes());
        body.extend_from_slice(&u32_of(self.lines).to_le_bytes());
        body.extend_from_slice(&u32_of(self.panes.len() as u64).to_le_bytes());
        for &(key, lines) in &self.panes {
            body.extend_from_slice(&key.to_le_bytes());
            body.extend_from_slice(&u32_of(lines).to_le_bytes());
        }
        for w in &self.filter {
            body.extend_from_slice(&w.to_le_bytes());
        }
        let mut out = Vec::with_capacity(8 + 8 + body.len());
        out.extend_from_slice(&SKIPPABLE.to_le_bytes());
        out.extend_from_slice(&u32_of(8 + body.len() as u64).to_le_bytes());
        out.extend_from_slice(&TAG);
        out.extend_from_slice(&crc32fast::hash(&body).to_le_bytes());
        out.extend_from_slice(&body);
        out
    }

    /// The index at the start of a frame's compressed bytes: `None` when
    /// there is none (an older frame) or it is not whole and sound.
    pub fn read(packed: &[u8]) -> Option<Index> {
        let u32_at = |b: &[u8], i: usize| -> Option<u32> {
            Some(u32::from_le_bytes(b.get(i..i + 4)?.try_into().ok()?))
        };
        if u32_at(packed, 0)? != SKIPPABLE {
            return None;
        }
        let len = u32_at(packed, 4)? as usize;
        let inner = packed.get(8..8usize.checked_add(len)?)?;
        if inner.get(..4)? != TAG || inner.len() < FIXED {
            return None;
        }
        let body = &inner[8..];
        if crc32fast::hash(body) != u32_at(inner, 4)? {
            return None;
        }
        let (flags, log2) = (body[0], body[1]);
        if !(MIN_LOG2..=MAX_LOG2).contains(&log2) {
            return None;
        }
        let panes = u32_at(body, 10)? as usize;
        let filter_at = 14usize.checked_add(panes.checked_mul(PANE)?)?;
        let filter_bytes = (1usize << log2) / 8;
        if body.len() != filter_at.checked_add(filter_bytes)? {
            return None;
        }
        let u64_at = |i: usize| -> u64 {
            let mut b = [0u8; 8];
            b.copy_from_slice(&body[i..i + 8]);
            u64::from_le_bytes(b)
        };
        Some(Index {
            text_bytes: u64::from(u32_at(body, 2)?),
            lines: u64::from(u32_at(body, 6)?),
            gaps: flags & GAPS != 0,
            escapes: flags & ESCAPES != 0,
            panes: (0..panes)
                .map(|p| {
                    let at = 14 + p * PANE;
                    Some((u64_at(at), u64::from(u32_at(body, at + 8)?)))
                })
                .collect::<Option<Vec<_>>>()?,
            filter: (0..filter_bytes / 8)
                .map(|w| u64_at(filter_at + w * 8))
                .collect(),
        })
    }
}

fn u32_of(n: u64) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// A pattern's needs ([`panescan_engine::Needs`]) as trigram hashes:
/// what [`Probe::may_match`] asks of a frame's filter.
#[derive(Clone, Debug)]
pub struct Probe {
    /// Per pattern, per clause, per string: its trigram hashes.
    patterns: Vec<Vec<Vec<Vec<u64>>>>,
}

impl Probe {
    /// The probe of `needs`; `None` when some pattern needs nothing the
    /// filter can check (every frame must be read).
    pub fn new(needs: &panescan_engine::Needs) -> Option<Probe> {
        let needs = needs.as_ref()?;
        let mut patterns = Vec::with_capacity(needs.len());
        for clauses in needs {
            let clauses: Vec<Vec<Vec<u64>>> = clauses
                .iter()
                .filter(|c| !c.is_empty() && c.iter().all(|s| s.len() >= 3))
                .map(|c| c.iter().map(|s| trigrams(s)).collect())
                .collect();
            if clauses.is_empty() {
                return None;
            }
            patterns.push(clauses);
        }
        (!patterns.is_empty()).then_some(Probe { patterns })
    }

    /// Whether a line of the frame indexed by `index` may match: some
    /// pattern's every clause has a string whose trigrams may all be in
    /// the frame.
    pub fn may_match(&self, index: &Index) -> bool {
        self.patterns.iter().any(|clauses| {
            clauses
                .iter()
                .all(|clause| clause.iter().any(|s| index.may_hold(s)))
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn every_trigram_of_the_lowered_text_is_held_at_every_size() {
        let text = "Error: Disk FULL on /dev/sda1\n漢字 ok\n\n".repeat(3);
        for compressed in [0, 10, 100, 1_000, 100_000] {
            let index = build(text.as_bytes(), 3, vec![(1, 3)], false, compressed);
            for w in text.as_bytes().windows(3) {
                assert!(index.may_hold(&trigrams(w)), "{compressed} {w:?}");
                assert!(index.may_hold(&trigrams(&w.to_ascii_uppercase())));
            }
            let back = Index::read(&index.encode()).unwrap();
            assert_eq!(back, index);
        }
        let big = build(text.as_bytes(), 3, vec![], false, 1 << 20);
        assert!(!big.may_hold(&trigrams(b"q7Zx-absent")));
    }

    #[test]
    fn the_filter_is_sized_by_its_trigrams_within_its_share() {
        let text: Vec<u8> = (0..200_000u32)
            .flat_map(|i| format!("{i:x}-{}\n", i * 7919).into_bytes())
            .collect();
        let roomy = build(&text, 1, vec![], false, usize::MAX / 16);
        let distinct = {
            let mut all: Vec<&[u8]> = text.windows(3).collect();
            all.sort();
            all.dedup();
            all.len()
        };
        let bits = roomy.filter_bytes() * 8;
        assert!(
            bits >= distinct * BITS_PER_TRIGRAM * 7 / 8 && bits < distinct * BITS_PER_TRIGRAM * 2,
            "{bits} bits for {distinct} trigrams"
        );
        let tight = build(&text, 1, vec![], false, 8_000);
        assert!(tight.filter_bytes() * SHARE_OF_COMPRESSED <= 8_000);
    }

    #[test]
    fn a_damaged_index_is_absent_never_wrong() {
        let index = build(b"some text\n", 1, vec![(pane_key("s", "%1"), 1)], true, 500);
        let bytes = index.encode();
        assert_eq!(Index::read(&bytes), Some(index));
        for i in 0..bytes.len() {
            let mut b = bytes.clone();
            b[i] ^= 0x10;
            assert_eq!(Index::read(&b), None, "byte {i}");
        }
        for cut in 0..bytes.len() {
            assert_eq!(Index::read(&bytes[..cut]), None, "cut {cut}");
        }
        // A zstd frame, as older frames start: no index.
        assert_eq!(
            Index::read(&zstd::bulk::compress(b"text", 1).unwrap()),
            None
        );
    }
}
