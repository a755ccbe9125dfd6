//! Fuzz the bounded pattern grammar with inputs that are mostly accepted
//! patterns: the bytes are choices of a generator over the grammar
//! (`panescan_engine::fuzz_structured`), the haystack is built from
//! samples of the patterns, and the engine must match exactly the lines
//! the `regex` crate matches, with the same pattern index and context.
#![no_main]

use libfuzzer_sys::fuzz_target;
use panescan_engine::fuzz_structured::check;
use panescan_engine::fuzzing::OracleLine;
use panescan_engine::MAX_NESTING;

/// The `regex` crate with its nesting and size limits raised, so that every
/// pattern the engine accepts builds.
fn oracle(pattern: &str, match_case: bool) -> Option<OracleLine> {
    let re = regex::bytes::RegexBuilder::new(pattern)
        .case_insensitive(!match_case)
        .nest_limit(MAX_NESTING * 2)
        .size_limit(256 << 20)
        .build()
        .ok()?;
    Some(Box::new(move |line: &[u8]| re.is_match(line)))
}

fuzz_target!(|data: &[u8]| {
    if let Err(problem) = check(data, &oracle) {
        panic!("{problem}");
    }
});
