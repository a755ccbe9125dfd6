//! Fuzz the search_panes since-cursor decoder: see
//! `panescan::testing::fuzz_parsers::cursor` for the invariants.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(problem) = panescan::testing::fuzz_parsers::cursor(data) {
        panic!("{problem}");
    }
});
