//! The journal against a real tmux: what it keeps equals tmux's capture
//! for the lines tmux still holds (wide characters, wraps, blank runs,
//! clear, clear-history, resize, trims at the limit), keeps the lines tmux
//! trimmed, leaves a gap for the alternate screen, survives a SIGKILL of
//! the daemon (no line twice, none lost, the downtime a gap), and refuses
//! a directory others may enter or another user owns.
//!
//! Every test has its private tmux server and journal directory.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use common::daemon::Place;
use common::journal::{assert_none_twice, config, journal_of, journaling_daemon, Printer};
use common::{eventually, TempDir};
use panescan::testing::journal::frame::Gap;
use panescan::testing::journal::segment;
use panescan::testing::journal::writer;
use panescan::testing::private_server::PrivateServer;
use panescan::testing::tmux::feed_counts::FeedCounts;
use panescan::testing::tmux::SessionId;

const SETTLE: Duration = Duration::from_millis(1_500);

#[test]
fn the_journal_holds_what_tmux_holds_byte_for_byte_and_what_it_trimmed() {
    let temp = TempDir::new("journal-exact");
    let journal = temp.0.join("journal");
    let p = Printer::start("journal-exact", 300, &temp.0);
    let handle = writer::start(config(&journal), &p.spec(), None).unwrap();
    let numbered = |tag: &str, n: u32, extra: &str| {
        format!("i=0; while [ $i -lt {n} ]; do printf '{tag}%03d {extra}\\n' $i; i=$((i+1)); done")
    };
    // Wide characters, then past the limit (tmux trims a tenth at a time).
    p.run(&numbered("a", 250, "漢字 wide ✓"));
    p.run("echo a-done");
    p.wait_for("a-done");
    std::thread::sleep(SETTLE);
    // A wrapped line, a blank run, more lines: trims at the limit.
    p.run("printf 'w%0150d\\n' 7; printf '\\n\\n\\n\\n\\n\\n'");
    p.run(&numbered("b", 120, ""));
    p.run("echo b-done");
    p.wait_for("b-done");
    std::thread::sleep(SETTLE);
    // clear (the screen erased), then clear-history.
    p.run("printf '\\033[H\\033[2J'; echo after-clear");
    p.wait_for("after-clear");
    std::thread::sleep(SETTLE);
    p.tmux.run_ok(["clear-history", "-t", &p.pane]).unwrap();
    p.run(&numbered("c", 40, "after clear-history"));
    p.run("echo c-done");
    p.wait_for("c-done");
    std::thread::sleep(SETTLE);
    // A resize rewraps every line.
    p.tmux
        .run_ok(["resize-window", "-t", "main:j", "-x", "40", "-y", "10"])
        .unwrap();
    p.run(&numbered(
        "d",
        40,
        "after resize, a line longer than forty columns",
    ));
    p.run("i=0; while [ $i -lt 12 ]; do echo tail$i; i=$((i+1)); done");
    p.wait_for("tail11");
    std::thread::sleep(SETTLE);
    handle.stop();

    let (lines, gaps, skipped) = journal_of(&journal, &p.pane);
    assert!(skipped.is_empty(), "{skipped:?}");
    let held = p.history();
    assert!(p.history_size() > 0);
    assert!(
        lines.ends_with(&held),
        "the journal's last lines are not tmux's history:\njournal tail: {:?}\ntmux: {:?}",
        &lines[lines.len().saturating_sub(held.len() + 3)..],
        held
    );
    // What tmux trimmed and cleared is still there, once.
    assert!(
        lines.contains(&"a000 漢字 wide ✓".to_owned()),
        "{:?}",
        &lines[..5.min(lines.len())]
    );
    assert!(
        lines.iter().any(|l| l.starts_with("w0000")),
        "the wrapped line"
    );
    assert_none_twice(&lines);
    for (tag, n) in [('a', 250), ('b', 120)] {
        let numbered = |l: &&String| {
            l.strip_prefix(tag)
                .is_some_and(|r| r.starts_with(|c: char| c.is_ascii_digit()))
        };
        assert_eq!(
            lines.iter().filter(numbered).count(),
            n,
            "{tag}: every numbered line"
        );
    }
    // clear-history took lines the journal had not read yet only if a gap
    // says so; either way no gap is silent about its reason.
    assert!(gaps.iter().all(|g| !g.reason.is_empty()));
}

#[test]
fn the_alternate_screen_leaves_a_gap_not_its_drawing() {
    let temp = TempDir::new("journal-alt");
    let journal = temp.0.join("journal");
    let p = Printer::start("journal-alt", 2000, &temp.0);
    let handle = writer::start(config(&journal), &p.spec(), None).unwrap();
    p.run("echo before");
    p.wait_for("before");
    std::thread::sleep(SETTLE);
    p.run("printf '\\033[?1049h'; i=0; while [ $i -lt 30 ]; do echo drawn-on-alternate$i; i=$((i+1)); done; echo alt-up");
    p.wait_for("alt-up");
    std::thread::sleep(SETTLE);
    p.run("printf '\\033[?1049l'; i=0; while [ $i -lt 20 ]; do echo after$i; i=$((i+1)); done");
    p.wait_for("after19");
    std::thread::sleep(SETTLE);
    handle.stop();
    let (lines, gaps, _) = journal_of(&journal, &p.pane);
    assert!(
        lines.iter().all(|l| !l.contains("drawn-on-alternate")),
        "{lines:?}"
    );
    assert!(lines.contains(&"before".to_owned()), "{lines:?}");
    assert!(lines.contains(&"after5".to_owned()), "{lines:?}");
    let alt: Vec<&Gap> = gaps
        .iter()
        .filter(|g| g.reason.contains("alternate"))
        .collect();
    assert_eq!(alt.len(), 1, "{gaps:?}");
    assert!(alt[0].to_ms > alt[0].from_ms);
}

#[test]
fn sigkill_during_heavy_writing_then_restart_loses_nothing_and_keeps_nothing_twice() {
    let place = Place::new("journal-kill");
    let journal = place.temp_root().join("journal");
    let p = Printer::start("journal-kill", 50_000, &place.temp_root());
    let stop = place.temp_root().join("stop");
    let log = place.temp_root().join("daemon1.stderr");
    let mut first = journaling_daemon(&place, p.tmux.socket_name(), &journal, &log);
    // About 1,000 lines a second: never more than history-limit between
    // two reads, even across the restart.
    p.run(&format!(
        "i=0; while [ ! -e {} ]; do echo k$i; i=$((i+1)); [ $((i % 20)) -eq 0 ] && sleep 0.02; done; echo k-done",
        stop.display()
    ));
    std::thread::sleep(Duration::from_secs(3));
    first.kill().unwrap(); // SIGKILL
    let _ = first.wait();
    let (before_kill, _, _) = journal_of(&journal, &p.pane);
    std::thread::sleep(Duration::from_millis(500));
    std::fs::write(&stop, b"").unwrap();
    p.wait_for("k-done");
    let log2 = place.temp_root().join("daemon2.stderr");
    let mut second = journaling_daemon(&place, p.tmux.socket_name(), &journal, &log2);
    std::thread::sleep(Duration::from_secs(3));
    common::journal::stop_daemon(&mut second);

    let (lines, gaps, skipped) = journal_of(&journal, &p.pane);
    assert!(skipped.is_empty(), "{skipped:?}");
    assert!(
        before_kill.len() > 100,
        "the first daemon wrote {} lines",
        before_kill.len()
    );
    assert_none_twice(&lines);
    let numbers: Vec<u64> = lines
        .iter()
        .filter_map(|l| l.strip_prefix('k').and_then(|n| n.parse().ok()))
        .collect();
    let last = *numbers.iter().max().unwrap();
    assert_eq!(
        numbers,
        (0..=last).collect::<Vec<u64>>(),
        "every line, in order"
    );
    assert!(
        lines.iter().any(|l| l == "k-done") || p.history().last().is_some_and(|l| l != "k-done")
    );
    assert!(
        gaps.iter().any(|g| g.reason.contains("not running")),
        "the downtime is a gap: {gaps:?}"
    );
}

#[test]
fn a_journal_directory_others_may_enter_or_of_another_user_is_refused() {
    use std::os::unix::fs::PermissionsExt;
    let place = Place::new("journal-refuse");
    let tmux = PrivateServer::start("journal-refuse", 60, 12).unwrap();
    let journal = place.temp_root().join("journal");
    std::fs::create_dir(&journal).unwrap();
    std::fs::set_permissions(&journal, std::fs::Permissions::from_mode(0o755)).unwrap();
    // A daemon that accepted the directory would run on: `timeout` ends it.
    let daemon = |journal: &Path| {
        Command::new("timeout")
            .arg("20")
            .arg(env!("CARGO_BIN_EXE_panescan"))
            .args([
                "daemon",
                "--journal",
                "-L",
                tmux.socket_name(),
                "--journal-dir",
            ])
            .arg(journal)
            .arg("--runtime-dir")
            .arg(place.dir())
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    let out = daemon(&journal);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("mode 755"), "{err}");
    std::fs::set_permissions(&journal, std::fs::Permissions::from_mode(0o700)).unwrap();
    if rustix::process::getuid().is_root() {
        let chowned = Command::new("chown")
            .args(["65534", journal.to_str().unwrap()])
            .status();
        if chowned.is_ok_and(|s| s.success()) {
            let out = daemon(&journal);
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{err}");
            assert!(err.contains("belongs to uid 65534"), "{err}");
        }
    }
    // The search refuses it the same way.
    let out = Command::new(env!("CARGO_BIN_EXE_panescan"))
        .args([
            "search",
            "--journal",
            "-L",
            tmux.socket_name(),
            "x",
            "--journal-dir",
            journal.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn a_corrupted_segment_is_skipped_and_named_by_the_search() {
    let temp = TempDir::new("journal-corrupt");
    let journal = temp.0.join("journal");
    let p = Printer::start("journal-corrupt", 2000, &temp.0);
    let handle = writer::start(config(&journal), &p.spec(), None).unwrap();
    p.run("echo needle-one");
    p.wait_for("needle-one");
    p.run("i=0; while [ $i -lt 20 ]; do echo pad$i; i=$((i+1)); done");
    std::thread::sleep(SETTLE);
    handle.stop();
    let segments = segment::list(&journal).unwrap();
    assert_eq!(segments.len(), 1);
    // A second segment written later, then the first one damaged.
    let mut bytes = std::fs::read(&segments[0].path).unwrap();
    let last = bytes.len() - 3;
    bytes[last] ^= 0x5a;
    std::fs::write(&segments[0].path, &bytes).unwrap();
    let search = |pattern: &str| {
        Command::new(env!("CARGO_BIN_EXE_panescan"))
            .args([
                "search",
                "--journal",
                "--since",
                "1h",
                "-L",
                p.tmux.socket_name(),
                pattern,
                "--journal-dir",
                journal.to_str().unwrap(),
            ])
            .output()
            .unwrap()
    };
    let out = search("needle");
    let err = String::from_utf8_lossy(&out.stderr);
    let name = segments[0]
        .path
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    assert!(err.contains("skipped") && err.contains(&name), "{err}");
    assert_ne!(out.status.code(), Some(2), "{err}");
}

/// The journal's pacing (journal/pace.rs): a pane printing one and a half
/// times its history-limit a second is read whenever a quarter of that may
/// have piled up, not a second after its last read (3,000 lines would then
/// overrun 2,000), so every line is kept and no gap recorded; a quiet pane
/// that printed a few lines is journaled without waiting for more output.
#[test]
fn a_pane_printing_past_its_history_limit_each_second_is_read_in_time_and_a_quiet_one_soon() {
    let place = Place::new("journal-pace");
    let journal = place.temp_root().join("journal");
    let p = Printer::start("journal-pace", 2_000, &place.temp_root());
    let log = place.temp_root().join("daemon.stderr");
    let mut daemon = journaling_daemon(&place, p.tmux.socket_name(), &journal, &log);
    std::thread::sleep(SETTLE);
    // 20 lines on a 12-row screen: the first ones reach history.
    p.run("i=0; while [ $i -lt 20 ]; do echo quiet$i; i=$((i+1)); done");
    let quiet = common::eventually(Duration::from_secs(5), || {
        journal_of(&journal, &p.pane)
            .0
            .iter()
            .any(|l| l == "quiet0")
    });
    // 300 lines every 100 ms, 12,000 in all; then enough lines to scroll
    // the last of them into history.
    p.run("for i in $(seq 0 39); do seq $((i*300+1)) $((i*300+300)); sleep 0.1; done; i=0; while [ $i -lt 15 ]; do echo pad$i; i=$((i+1)); done");
    p.wait_for("pad14");
    std::thread::sleep(SETTLE);
    common::journal::stop_daemon(&mut daemon);

    let log = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(
        quiet,
        "a quiet pane's lines were not journaled within 5 s: {log}"
    );
    let (lines, gaps, _) = journal_of(&journal, &p.pane);
    assert!(gaps.is_empty(), "{gaps:?}");
    assert_none_twice(&lines);
    let numbers: Vec<u64> = lines.iter().filter_map(|l| l.parse().ok()).collect();
    assert_eq!(numbers.len(), 12_000, "lines kept: {}", numbers.len());
    assert_eq!(numbers, (1..=12_000).collect::<Vec<u64>>());
}

/// One `%output` stream for the journal and the ledger: the daemon's own
/// control client takes no output (only the session's feed does), and a
/// pane printing two and a half times its history-limit a second is still
/// read before tmux trims what the journal has not kept: its rows are
/// counted from the feed's bytes. Uncounted, it would be polled every
/// 500 ms, and 2,500 lines would pile up on a limit of 2,000 between two
/// polls.
#[test]
fn a_pane_is_paced_by_its_sessions_feed_while_the_daemons_own_client_takes_no_output() {
    let place = Place::new("journal-one-stream");
    let journal = place.temp_root().join("journal");
    let p = Printer::start("journal-one-stream", 2_000, &place.temp_root());
    let log = place.temp_root().join("daemon.stderr");
    let mut daemon = journaling_daemon(&place, p.tmux.socket_name(), &journal, &log);
    std::thread::sleep(SETTLE);
    // 500 lines every 100 ms, 20,000 in all, then enough lines to scroll
    // the last of them into history.
    p.run("for i in $(seq 0 39); do seq $((i*500+1)) $((i*500+500)); sleep 0.1; done; i=0; while [ $i -lt 15 ]; do echo pad$i; i=$((i+1)); done");
    std::thread::sleep(Duration::from_millis(500));
    let clients = p
        .tmux
        .run_ok(["list-clients", "-F", "#{client_flags}"])
        .unwrap();
    p.wait_for("pad14");
    std::thread::sleep(SETTLE);
    common::journal::stop_daemon(&mut daemon);

    // The feed, and the daemon's own client (commands, structure events).
    let taking: Vec<&str> = clients
        .lines()
        .filter(|flags| !flags.split(',').any(|f| f == "no-output"))
        .collect();
    assert_eq!(taking.len(), 1, "clients taking output: {clients}");
    assert!(clients.lines().count() >= 2, "{clients}");
    let log = std::fs::read_to_string(&log).unwrap_or_default();
    let (lines, gaps, _) = journal_of(&journal, &p.pane);
    assert!(gaps.is_empty(), "{gaps:?}\n{log}");
    assert_none_twice(&lines);
    let numbers: Vec<u64> = lines.iter().filter_map(|l| l.parse().ok()).collect();
    assert_eq!(numbers, (1..=20_000).collect::<Vec<u64>>());
}

/// tmux may report a pane's output to a session feed late (it serves a
/// control client's panes from the head of a list, so with many printing
/// the last ones can go unreported for tens of seconds): a counted pane
/// whose count never comes is read all the same, once a listing shows it
/// moved.
#[test]
fn a_counted_pane_never_reported_is_read_all_the_same() {
    let temp = TempDir::new("journal-unreported");
    let journal = temp.0.join("journal");
    let p = Printer::start("journal-unreported", 300, &temp.0);
    let session = p
        .tmux
        .run_ok(["display-message", "-p", "-t", &p.pane, "#{session_id}"])
        .unwrap();
    let counts = Arc::new(FeedCounts::default());
    // A feed of the session counts, and never reports a byte.
    counts.started(SessionId::parse(session.trim()).unwrap());
    let handle = writer::start_counted(config(&journal), &p.spec(), None, Some(counts)).unwrap();
    // Its first read.
    std::thread::sleep(SETTLE);
    // Then a screenful more, so all 40 are in history (a screen's lines are
    // journaled once they scroll off it).
    p.run("i=1; while [ $i -le 40 ]; do echo unreported-$i; i=$((i+1)); done");
    p.run("i=1; while [ $i -le 15 ]; do echo after-$i; i=$((i+1)); done");
    p.wait_for("after-15");
    // While the writer runs (stopping reads every pane once more anyway).
    let journaled = eventually(Duration::from_secs(20), || {
        let (lines, _, _) = journal_of(&journal, &p.pane);
        lines.iter().any(|l| l == "unreported-40")
    });
    handle.stop();
    let (lines, gaps, _) = journal_of(&journal, &p.pane);
    assert!(journaled, "never journaled while running: {lines:?}");
    let printed: Vec<String> = (1..=40).map(|i| format!("unreported-{i}")).collect();
    let kept: Vec<String> = lines
        .into_iter()
        .filter(|l| l.starts_with("unreported-"))
        .collect();
    assert_eq!(kept, printed);
    assert!(gaps.is_empty(), "{gaps:?}");
}
