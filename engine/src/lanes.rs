//! Whole-buffer byte passes written for the compiler's vectoriser.
//!
//! A capture with no hit costs little more than the passes over its bytes,
//! so each pass counts. These loops work on fixed arrays of [`LANES`] bytes,
//! which the compiler turns into SIMD compares and adds on any target,
//! without `unsafe`: [`survey`] does in one pass what would otherwise be two
//! (a search for ESC or `\r`, then a line count), and [`lower_into`] copies
//! and lowers in one pass where a copy and an in-place lowering would be two.

/// Bytes handled side by side.
const LANES: usize = 64;
/// Rounds of [`LANES`] bytes before the per-lane `u8` counters could
/// overflow (each adds at most 1 per round).
const ROUNDS: usize = 255;

/// What one pass over a capture found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Survey {
    /// How many `\n` bytes there are.
    pub(crate) newlines: usize,
    /// Whether an ESC (0x1b) or a `\r` occurs: the text may need escapes
    /// stripped or `\r\n` folded.
    pub(crate) special: bool,
}

/// Counts the `\n` bytes of `bytes` and looks for ESC and `\r`, in one pass.
pub(crate) fn survey(bytes: &[u8]) -> Survey {
    let mut newlines = 0usize;
    let mut special = 0u8;
    let mut blocks = bytes.chunks_exact(LANES * ROUNDS);
    for block in &mut blocks {
        let (count, flags) = survey_rounds(block);
        newlines += count;
        special |= flags;
    }
    let rest = blocks.remainder();
    let mut rounds = rest.chunks_exact(LANES);
    let whole = rounds.len() * LANES;
    let (count, flags) = survey_rounds(&rest[..whole]);
    newlines += count;
    special |= flags;
    for &b in rounds.by_ref().remainder() {
        newlines += usize::from(b == b'\n');
        special |= u8::from(b == 0x1b) | u8::from(b == b'\r');
    }
    Survey {
        newlines,
        special: special != 0,
    }
}

/// [`survey`] of at most [`ROUNDS`] whole rounds of [`LANES`] bytes: the
/// newline count and a non-zero flag byte if ESC or `\r` occurs.
fn survey_rounds(block: &[u8]) -> (usize, u8) {
    let mut counts = [0u8; LANES];
    let mut flags = [0u8; LANES];
    for round in block.chunks_exact(LANES) {
        for ((count, flag), &b) in counts.iter_mut().zip(flags.iter_mut()).zip(round) {
            *count += u8::from(b == b'\n');
            *flag |= u8::from(b == 0x1b) | u8::from(b == b'\r');
        }
    }
    let count = counts.iter().map(|&c| usize::from(c)).sum();
    let flag = flags.iter().fold(0, |a, &f| a | f);
    (count, flag)
}

/// Replaces the contents of `out` with `text`, its ASCII letters lowered
/// (every other byte as it is), in one pass.
pub(crate) fn lower_into(text: &[u8], out: &mut Vec<u8>) {
    out.clear();
    out.resize(text.len(), 0);
    let mut dst = out.chunks_exact_mut(LANES);
    let mut src = text.chunks_exact(LANES);
    for (d, s) in (&mut dst).zip(&mut src) {
        for (d, &s) in d.iter_mut().zip(s) {
            *d = s.to_ascii_lowercase();
        }
    }
    for (d, &s) in dst.into_remainder().iter_mut().zip(src.remainder()) {
        *d = s.to_ascii_lowercase();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn slow_survey(bytes: &[u8]) -> Survey {
        Survey {
            newlines: bytes.iter().filter(|&&b| b == b'\n').count(),
            special: bytes.iter().any(|&b| b == 0x1b || b == b'\r'),
        }
    }

    #[test]
    fn survey_counts_across_block_edges() {
        // Every line end in a buffer longer than one block of counters, and
        // one more than a u8 counter holds in a single lane.
        let block = LANES * ROUNDS;
        for len in [
            0,
            1,
            LANES - 1,
            LANES,
            block - 1,
            block,
            block + 1,
            3 * block + 7,
        ] {
            let all = vec![b'\n'; len];
            assert_eq!(survey(&all), slow_survey(&all), "len {len}");
        }
    }

    #[test]
    fn survey_finds_a_lone_special_byte_anywhere() {
        let len = 2 * LANES * ROUNDS + 5;
        for special in [0x1b, b'\r'] {
            for at in [0, 1, LANES, LANES * ROUNDS - 1, LANES * ROUNDS, len - 1] {
                let mut bytes = vec![b'a'; len];
                bytes[at] = special;
                assert!(survey(&bytes).special, "{special} at {at}");
            }
        }
        assert!(!survey(&vec![b'a'; len]).special);
    }

    proptest! {
        #[test]
        fn survey_agrees_with_the_obvious_count(
            mut bytes in proptest::collection::vec(
                prop_oneof![Just(b'\n'), Just(b'x'), 0x80u8..=0xff],
                0..20_000,
            ),
            // At most one ESC or `\r`, anywhere, so that missing it shows.
            special in proptest::option::of(
                (any::<proptest::sample::Index>(), prop_oneof![Just(b'\r'), Just(0x1b)])
            ),
        ) {
            if let (Some((at, b)), false) = (special, bytes.is_empty()) {
                let at = at.index(bytes.len());
                bytes[at] = b;
            }
            prop_assert_eq!(survey(&bytes), slow_survey(&bytes));
        }

        #[test]
        fn lower_into_is_ascii_lowercase(
            bytes in proptest::collection::vec(any::<u8>(), 0..300),
            stale in proptest::collection::vec(any::<u8>(), 0..100),
        ) {
            let mut out = stale;
            lower_into(&bytes, &mut out);
            prop_assert_eq!(out, bytes.to_ascii_lowercase());
        }
    }
}
