//! Fuzz redaction: any bytes must never panic, and a secret of any kind put
//! between any two texts never survives. Input layout: see
//! `panescan_engine::fuzz_redact`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use panescan_engine::fuzz_redact::check;

fuzz_target!(|data: &[u8]| {
    if let Err(problem) = check(data) {
        panic!("{problem}");
    }
});
