//! `panescan bench --journal-only`: the journal's frame indexes measured.
//! Their bytes on disk beside the segments', what building one costs the
//! writer (ms per MB of text, one thread), and, over the first frames'
//! text, the filter's false-positive rate against its size: the rows that
//! chose [`index::BITS_PER_TRIGRAM`].
//!
//! A false positive is a frame whose filter passes a string the frame's
//! text (ASCII letters lowered) does not hold: probes of 3 and 8 random
//! letters and digits absent from the frame, and the bench's needle over
//! the frames without it.

use std::fs;
use std::path::Path;
use std::time::Instant;

use serde::Serialize;

use crate::journal::{frame, index, segment};

/// Bits per distinct trigram tried.
const SIZES: [usize; 5] = [1, 2, 4, 8, 16];
/// Random probes per sample frame, each length.
const PROBES: usize = 400;

/// The index rows.
#[derive(Debug, Clone, Serialize)]
pub struct IndexBench {
    /// Bytes of every frame's index, and of the segments holding them.
    pub index_bytes: u64,
    pub disk_bytes: u64,
    /// `index_bytes / disk_bytes`.
    pub share_of_disk: f64,
    /// Frames with an index, of all.
    pub frames_indexed: usize,
    pub frames: usize,
    /// Building an index (filter and counts): ms per MB of text.
    pub build_ms_per_mb: f64,
    /// The demo corpus's frame: its index's bytes.
    pub corpus_index_bytes: u64,
    /// The filter's size against its false positives.
    pub sizes: Vec<SizeRow>,
    /// Sample frames the sizes were measured on, and their text bytes.
    pub samples: usize,
    pub sample_bytes: u64,
}

/// One filter size over the sample frames (no cap by compressed bytes).
#[derive(Debug, Clone, Serialize)]
pub struct SizeRow {
    pub bits_per_trigram: usize,
    /// Filter bytes per frame (mean), and as a share of the frames' zstd
    /// bytes.
    pub filter_bytes: f64,
    pub share_of_compressed: f64,
    /// Share of absent probes the filter passes: 3 bytes (one trigram),
    /// 8 bytes (six trigrams), the needle.
    pub fp_3: f64,
    pub fp_8: f64,
    pub fp_needle: f64,
}

/// Measures the indexes of `journal`, and the filter sizes over `samples`
/// (frames' text blocks).
pub fn run(
    journal: &Path,
    samples: &[Vec<u8>],
    needle: &str,
    corpus_index_bytes: u64,
) -> Result<IndexBench, String> {
    let (mut index_bytes, mut disk_bytes, mut indexed, mut frames) = (0u64, 0u64, 0, 0);
    for seg in segment::list(journal).map_err(|e| e.to_string())? {
        let bytes = fs::read(&seg.path).map_err(|e| e.to_string())?;
        disk_bytes += bytes.len() as u64;
        for (at, header) in segment::walk(&bytes).frames {
            frames += 1;
            if let Some(i) = frame::index(&bytes[at..], &header) {
                indexed += 1;
                index_bytes += i.encode().len() as u64;
            }
        }
    }
    let compressed: Vec<usize> = samples
        .iter()
        .map(|t| zstd::bulk::compress(t, 1).map_or(0, |z| z.len()))
        .collect();
    let sample_bytes: u64 = samples.iter().map(|t| t.len() as u64).sum();
    // Twice, the second timed: the first warms caches and allocator.
    let mut build_s = 0.0;
    for _ in 0..2 {
        let started = Instant::now();
        for (text, &c) in samples.iter().zip(&compressed) {
            std::hint::black_box(index::build(text, 0, Vec::new(), false, c));
        }
        build_s = started.elapsed().as_secs_f64();
    }
    let sizes = SIZES
        .iter()
        .map(|&bits| size_row(samples, &compressed, needle, bits))
        .collect();
    Ok(IndexBench {
        index_bytes,
        disk_bytes,
        share_of_disk: index_bytes as f64 / (disk_bytes.max(1)) as f64,
        frames_indexed: indexed,
        frames,
        build_ms_per_mb: build_s * 1e3 / (sample_bytes.max(1) as f64 / 1e6),
        corpus_index_bytes,
        sizes,
        samples: samples.len(),
        sample_bytes,
    })
}

/// The filter at `bits` per trigram over `samples`.
fn size_row(samples: &[Vec<u8>], compressed: &[usize], needle: &str, bits: usize) -> SizeRow {
    let mut rng = 0x2545_f491_4f6c_dd1du64;
    let mut letter = || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        b"abcdefghijklmnopqrstuvwxyz0123456789"[(rng % 36) as usize]
    };
    let (mut filter, mut packed) = (0usize, 0usize);
    let mut counts = [(0u64, 0u64); 3];
    for (text, &c) in samples.iter().zip(compressed) {
        let i = index::build_with(text, bits, usize::MAX / 64);
        filter += i.filter_bytes();
        packed += c;
        let lowered = text.to_ascii_lowercase();
        let absent = |s: &[u8]| memchr::memmem::find(&lowered, s).is_none();
        for (slot, len) in [(0, 3), (1, 8)] {
            for _ in 0..PROBES {
                let probe: Vec<u8> = (0..len).map(|_| letter()).collect();
                if absent(&probe) {
                    counts[slot].0 += 1;
                    counts[slot].1 += u64::from(i.may_hold(&index::trigrams(&probe)));
                }
            }
        }
        let needle = needle.to_ascii_lowercase();
        if absent(needle.as_bytes()) {
            counts[2].0 += 1;
            counts[2].1 += u64::from(i.may_hold(&index::trigrams(needle.as_bytes())));
        }
    }
    let rate = |(n, passed): (u64, u64)| passed as f64 / n.max(1) as f64;
    SizeRow {
        bits_per_trigram: bits,
        filter_bytes: filter as f64 / samples.len().max(1) as f64,
        share_of_compressed: filter as f64 / packed.max(1) as f64,
        fp_3: rate(counts[0]),
        fp_8: rate(counts[1]),
        fp_needle: rate(counts[2]),
    }
}
