//! Fuzz the control-mode reply parser: raw bytes never produce more
//! replies than requested, and replies whose content forges `%begin`/
//! `%end`/`%error` lines come back whole, in order, whatever the chunking.
//! See `panescan::testing::fuzzing::framing`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(problem) = panescan::testing::fuzzing::framing(data) {
        panic!("{problem}");
    }
});
