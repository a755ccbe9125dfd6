//! The journal when its disk is full: journaling pauses with a warning,
//! searches go on, and once there is room again it resumes, with a gap
//! over the pause that says how many lines it could not keep.
//!
//! The disk is made full for the daemon alone, the same way on any
//! machine and without root: its RLIMIT_FSIZE is lowered to the journal's
//! current size (a write past it fails as it would on a full disk, and
//! SIGXFSZ is ignored as `sh`'s `trap` leaves it for the program it
//! execs), then raised again.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::io::Read as _;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::daemon::Place;
use common::journal::{assert_none_twice, journal_of, Printer};
use panescan::testing::journal::segment;
use panescan::testing::journal::when::now_ms;
use rustix::process::{prlimit, Pid, Resource, Rlimit};

const SETTLE: Duration = Duration::from_millis(2_500);

/// A journaling daemon whose SIGXFSZ is ignored, its stderr collected.
fn daemon(place: &Place, socket: &str, journal: &Path) -> (Child, Arc<Mutex<String>>) {
    let mut child = Command::new("sh")
        .args(["-c", "trap '' XFSZ; exec \"$0\" \"$@\""])
        .arg(env!("CARGO_BIN_EXE_panescan"))
        .args(["daemon", "--journal", "--idle-exit", "0", "-L", socket])
        .arg("--journal-dir")
        .arg(journal)
        .arg("--runtime-dir")
        .arg(place.dir())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // A pipe, not a file: RLIMIT_FSIZE does not limit it.
    let log = Arc::new(Mutex::new(String::new()));
    let mut err = child.stderr.take().unwrap();
    let sink = log.clone();
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok(n) = err.read(&mut buf) {
            if n == 0 {
                break;
            }
            sink.lock()
                .unwrap()
                .push_str(&String::from_utf8_lossy(&buf[..n]));
        }
    });
    assert!(
        common::eventually(Duration::from_secs(10), || place
            .dir()
            .join("panescan.sock")
            .exists()),
        "no socket: {}",
        log.lock().unwrap()
    );
    (child, log)
}

fn file_size_limit(child: &Child, bytes: Option<u64>) {
    let pid = Pid::from_raw(i32::try_from(child.id()).unwrap()).unwrap();
    prlimit(
        Some(pid),
        Resource::Fsize,
        Rlimit {
            current: bytes,
            maximum: None,
        },
    )
    .unwrap();
}

/// `n` numbered lines, then enough others to scroll them all into
/// history (the screen is 12 rows).
fn numbered(tag: &str, n: u32) -> String {
    format!("i=0; while [ $i -lt {n} ]; do echo {tag}$i line of the journal disk test; i=$((i+1)); done; i=0; while [ $i -lt 15 ]; do echo {tag}-pad$i; i=$((i+1)); done; echo {tag}-done")
}

fn journal_search(journal: &Path, socket: &str, pattern: &str) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_panescan"))
        .args([
            "search",
            "--journal",
            "-L",
            socket,
            pattern,
            "--journal-dir",
        ])
        .arg(journal)
        .output()
        .unwrap()
}

#[test]
fn a_full_disk_pauses_journaling_with_a_gap_and_searches_go_on() {
    let place = Place::new("journal-full");
    let journal = place.temp_root().join("journal");
    let p = Printer::start("journal-full", 2000, &place.temp_root());
    // Before the daemon: its first read stamps the screen's lines, and one
    // of them may be the first the full disk keeps out (4 ms before a
    // `started` taken after it, once in a full run).
    let started = now_ms();
    let (mut child, log) = daemon(&place, p.tmux.socket_name(), &journal);
    p.run(&numbered("a", 300));
    p.wait_for("a-done");
    std::thread::sleep(SETTLE);
    let segments = segment::list(&journal).unwrap();
    assert_eq!(segments.len(), 1, "{segments:?}");
    // Not one more frame fits (a frame's header alone is 32 bytes).
    file_size_limit(&child, Some(segments[0].bytes + 16));

    p.run(&numbered("b", 100));
    p.wait_for("b-done");
    std::thread::sleep(SETTLE);
    let paused = log.lock().unwrap().clone();
    assert!(
        paused.contains("journaling paused, searches go on"),
        "no warning: {paused}"
    );
    let out = journal_search(&journal, p.tmux.socket_name(), "a42 line");
    let found = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{found}");
    assert!(found.contains("a42 line of the journal"), "{found}");

    file_size_limit(&child, None);
    let room_from = now_ms();
    p.run(&numbered("c", 100));
    p.wait_for("c-done");
    std::thread::sleep(SETTLE);
    common::journal::stop_daemon(&mut child);
    let ended = now_ms();
    let resumed = log.lock().unwrap().clone();
    assert!(resumed.contains("writing again"), "{resumed}");

    let (lines, gaps, skipped) = journal_of(&journal, &p.pane);
    assert!(skipped.is_empty(), "{skipped:?}");
    assert_none_twice(&lines);
    let has = |tag: &str, n: u32| {
        (0..n)
            .filter(|i| lines.contains(&format!("{tag}{i} line of the journal disk test")))
            .count()
    };
    assert_eq!(has("a", 300), 300, "every line before the disk filled");
    assert_eq!(has("c", 100), 100, "every line after it had room again");
    let lost = 100 - has("b", 100);
    assert!(lost > 0, "no line was dropped: was the disk full?");
    let full: Vec<_> = gaps
        .iter()
        .filter(|g| g.reason.contains("journal writes failed"))
        .collect();
    assert_eq!(full.len(), 1, "{gaps:?}");
    let gap = full[0];
    // From the first line it could not write (a screen line first seen
    // before the disk filled, written when it scrolled) to the first
    // write that succeeded.
    assert!(
        gap.from_ms >= started && gap.from_ms < room_from,
        "{gap:?} {started} {room_from}"
    );
    assert!(
        gap.to_ms >= room_from && gap.to_ms <= ended,
        "{gap:?} {room_from} {ended}"
    );
    let not_kept: usize = gap
        .reason
        .split(": ")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap();
    assert!(not_kept >= lost, "{} < {lost}", gap.reason);
}
