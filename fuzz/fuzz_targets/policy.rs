//! Fuzz the policy file and the judging of a call: see
//! `panescan::testing::fuzz_parsers::policy` for the invariants.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(problem) = panescan::testing::fuzz_parsers::policy(data) {
        panic!("{problem}");
    }
});
