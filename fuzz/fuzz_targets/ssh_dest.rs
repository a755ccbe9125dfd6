//! Fuzz the ssh destination parser (`--ssh DEST`): any bytes must never
//! panic, and whatever it accepts is inert on ssh's command line (no part
//! that is empty or starts with `-`, only host-name characters, no port
//! 0). The check: `panescan::testing::tmux::ssh::dest::fuzz_check`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use panescan::testing::tmux::ssh::dest::fuzz_check;

fuzz_target!(|data: &[u8]| {
    if let Err(problem) = fuzz_check(data) {
        panic!("{problem}");
    }
});
