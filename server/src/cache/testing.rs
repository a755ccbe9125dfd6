//! Builders shared by the cache's unit tests.

use super::freshness::{Fingerprint, ServerStamp};
use crate::tmux::CapturedText;

pub(super) fn text(hsize: u64, first_line: i64, bytes: &[u8]) -> CapturedText {
    CapturedText {
        first_line,
        bytes: bytes::Bytes::copy_from_slice(bytes),
        line_numbers: None,
        history_size: hsize,
        pane_height: 2,
        pane_width: 10,
        joined: false,
    }
}

pub(super) fn print(hsize: u64, limit: u64) -> Fingerprint {
    Fingerprint {
        server: ServerStamp { pid: 1, start: 2 },
        pane_pid: Some(3),
        history_size: hsize,
        history_limit: limit,
        width: 10,
        height: 2,
        cursor: (0, 0),
        alternate_on: false,
        dead: (false, None),
    }
}
