//! Fuzz run_command's completion detector (marker and OSC 133 D): see
//! `panescan::testing::fuzz_parsers::detect` for the invariants.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(problem) = panescan::testing::fuzz_parsers::detect(data) {
        panic!("{problem}");
    }
});
