//! Fuzz the JSON-RPC front end: any bytes on stdin, read line by line with
//! a ceiling and dispatched by the real dispatcher (readonly tier, no tmux
//! server), must get exactly one well-formed answer per request, invalid
//! message or over-long line, none per notification, and never a panic or
//! a hang. See `panescan::testing::fuzzing::jsonrpc`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Err(problem) = panescan::testing::fuzzing::jsonrpc(data) {
        panic!("{problem}");
    }
});
