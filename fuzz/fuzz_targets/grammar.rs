//! Fuzz the bounded pattern grammar: any bytes must never panic; accepted
//! patterns compile within the caps and match exactly the lines the `regex`
//! crate matches, line by line. Input layout: see
//! `panescan_engine::fuzzing`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use panescan_engine::fuzzing::{check, OracleLine};

fn oracle(pattern: &str, match_case: bool) -> Option<OracleLine> {
    let re = regex::bytes::RegexBuilder::new(pattern).case_insensitive(!match_case).build().ok()?;
    Some(Box::new(move |line: &[u8]| re.is_match(line)))
}

fuzz_target!(|data: &[u8]| {
    if let Err(problem) = check(data, &oracle) {
        panic!("{problem}");
    }
});
