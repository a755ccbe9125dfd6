//! Fuzz the tmux:// resource URI parser: see
//! `panescan::testbed::fuzz_parsers::uri` for the invariants.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(problem) = panescan::testbed::fuzz_parsers::uri(data) {
        panic!("{problem}");
    }
});
