//! Fuzz the tmux:// resource URI parser: see
//! `panescan::testing::fuzz_parsers::uri` for the invariants.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(problem) = panescan::testing::fuzz_parsers::uri(data) {
        panic!("{problem}");
    }
});
