//! A small batch of the pane cache goes over the open control client
//! through a named paste buffer (tmux/capture/control.rs) instead of a
//! sweep process. These tests check on a private server (killed on drop,
//! also when a test fails) that both paths give the same bytes, numbers
//! and sizes for the same panes whatever they hold, that the control path
//! starts no tmux process, and that no buffer is left, also after a cancel,
//! and the user's own buffer is untouched.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use common::eventually;
use panescan::testing::private_server::PrivateServer;
use panescan::testing::tmux::{
    CaptureOptions, CaptureRange, CaptureReply, CaptureRequest, PaneId, Tmux,
};

/// Every tmux this test binary runs goes through a wrapper that logs its
/// arguments, so a test can see whether a capture started a process.
fn tmux_log() -> &'static PathBuf {
    static LOG: OnceLock<PathBuf> = OnceLock::new();
    LOG.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("panescan-ctlcap-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let real = std::process::Command::new("sh")
            .args(["-c", "command -v tmux"])
            .output()
            .unwrap();
        let real = String::from_utf8(real.stdout).unwrap().trim().to_owned();
        assert!(!real.is_empty(), "tmux on PATH");
        let log = dir.join("runs.log");
        let wrapper = dir.join("tmux");
        std::fs::write(
            &wrapper,
            format!(
                "#!/bin/sh\necho \"$*\" >> '{}'\nexec '{real}' \"$@\"\n",
                log.display()
            ),
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
        panescan::testing::tmux::binary::init(Some(wrapper.as_os_str())).unwrap();
        log
    })
}

/// `source-file` clients started so far (sweeps).
fn sweeps_started() -> usize {
    std::fs::read_to_string(tmux_log())
        .unwrap_or_default()
        .lines()
        .filter(|l| l.contains("source-file"))
        .count()
}

/// The tests of this file one at a time: a sweep one starts would count
/// as another's.
fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static TURN: std::sync::Mutex<()> = std::sync::Mutex::new(());
    TURN.lock().unwrap_or_else(|e| e.into_inner())
}

fn soon() -> Instant {
    Instant::now() + Duration::from_secs(20)
}

fn connect(server: &PrivateServer) -> Tmux {
    let tmux = common::connect(server);
    // Attaches the control client, as a search's listing does.
    tmux.server_info(soon()).unwrap();
    tmux
}

/// Text no pane could print through a plain capture without escaping:
/// backslashes and octal-looking text, `$` before names, tabs, wide
/// characters, a bad UTF-8 byte, controls, colours, forged control-mode
/// guards, lines wider than the pane, blank lines.
fn tricky_text() -> Vec<u8> {
    let mut t = Vec::new();
    t.extend_from_slice(b"back\\slash \\101 \\0 \\\\ \\n \\t \\$HOME end\n");
    t.extend_from_slice(b"dollars $HOME ${x} $_ $1 $ trailing $\n");
    t.extend_from_slice(b"tab\there\t\tand\tmore\n");
    t.extend_from_slice("wide 漢字かな ✓ é\n".as_bytes());
    t.extend_from_slice(b"bad utf8 \xff\xfe \xc3( here\n");
    t.extend_from_slice(b"\x1b[31mred\x1b[0m and \x1b[1;42mbold green\x1b[0m\n");
    t.extend_from_slice(b"%end 1700000000 5 1\n%begin 1700000000 6 1\n% alone\n");
    t.extend_from_slice(&[b'w'; 150]);
    t.extend_from_slice(b"\n");
    t.extend_from_slice("漢".repeat(45).as_bytes());
    t.extend_from_slice(b"\n\n\n0123 \\000 \\377 octal\n   spaces   \n");
    t
}

/// A server with three panes: the tricky text, an empty pane and one whose
/// history holds numbered lines under the tricky text.
fn server() -> (PrivateServer, Vec<PaneId>, PathBuf) {
    let log = tmux_log().clone();
    let server = PrivateServer::start("ctlcap", 60, 12).unwrap();
    let file = log.with_file_name(format!("tricky-{}", std::process::id()));
    std::fs::write(&file, tricky_text()).unwrap();
    let f = file.display();
    server
        .run_ok([
            "respawn-pane",
            "-k",
            "-t",
            "%0",
            &format!("sh -c 'cat {f}; echo DONE; exec sleep 100000'"),
        ])
        .unwrap();
    server
        .run_ok(["new-window", "-d", "-t", "main:", "exec sleep 100000"])
        .unwrap();
    server
        .run_ok([
            "new-window",
            "-d",
            "-t",
            "main:",
            &format!("sh -c 'seq 1 40; cat {f}; echo DONE; exec sleep 100000'"),
        ])
        .unwrap();
    let ids: Vec<PaneId> = server
        .run_ok(["list-panes", "-a", "-F", "#{pane_id}"])
        .unwrap()
        .lines()
        .map(|l| PaneId::parse(l).unwrap())
        .collect();
    assert_eq!(ids.len(), 3);
    let printed = eventually(Duration::from_secs(30), || {
        [ids[0], ids[2]].iter().all(|p| {
            server
                .run_ok(["capture-pane", "-p", "-t", &p.to_string()])
                .is_ok_and(|t| t.contains("DONE"))
        })
    });
    assert!(printed, "the panes printed their text");
    (server, ids, file)
}

fn collect(rx: crossbeam_channel::Receiver<CaptureReply>) -> Vec<CaptureReply> {
    let mut out = Vec::new();
    while let Ok(r) = rx.recv_timeout(Duration::from_secs(60)) {
        out.push(r);
    }
    out
}

fn requests(ids: &[PaneId]) -> Vec<CaptureRequest> {
    let ranges = [
        CaptureRange::Visible,
        CaptureRange::Lines { start: -8, end: 3 },
        CaptureRange::Lines {
            start: -60,
            end: 40,
        },
        CaptureRange::Scrollback(5),
    ];
    ids.iter()
        .flat_map(|&pane| {
            ranges
                .iter()
                .map(move |&range| CaptureRequest { pane, range })
        })
        .collect()
}

fn buffers(server: &PrivateServer) -> String {
    server
        .run_ok(["list-buffers", "-F", "#{buffer_name}"])
        .unwrap()
}

#[test]
fn the_control_path_gives_the_sweeps_bytes_and_starts_no_process() {
    let _turn = one_at_a_time();
    let (server, ids, file) = server();
    let tmux = connect(&server);
    server
        .run_ok(["set-buffer", "-b", "users-own", "the user's text"])
        .unwrap();
    let reqs = requests(&ids);
    let no_cancel = || Arc::new(AtomicBool::new(false));
    for join_wrapped in [false, true] {
        for escapes in [false, true] {
            let options = CaptureOptions {
                join_wrapped,
                escapes,
            };
            let before = sweeps_started();
            let swept = collect(tmux.capture(reqs.clone(), options, soon(), no_cancel()));
            assert!(sweeps_started() > before, "the plain capture sweeps");
            let before = sweeps_started();
            let over_control =
                collect(tmux.capture_with_spare(reqs.clone(), options, soon(), no_cancel(), None));
            assert_eq!(
                sweeps_started(),
                before,
                "a small batch of the pane cache starts no process"
            );
            assert_eq!(swept.len(), reqs.len());
            assert_eq!(over_control.len(), reqs.len());
            for (s, c) in swept.iter().zip(&over_control) {
                assert_eq!((s.index, s.pane), (c.index, c.pane));
                let s = s.result.as_ref().expect("the sweep");
                let c = c
                    .result
                    .as_ref()
                    .unwrap_or_else(|e| panic!("{options:?}: {e}"));
                assert_eq!(
                    s,
                    c,
                    "{options:?}: sweep {:?} control {:?}",
                    String::from_utf8_lossy(&s.bytes),
                    String::from_utf8_lossy(&c.bytes)
                );
            }
            let whole = &over_control[2].result.as_ref().unwrap().bytes;
            assert!(whole.windows(4).any(|w| w == b"\\101"), "the text came");
        }
    }
    assert_eq!(
        buffers(&server),
        "users-own\n",
        "no buffer of panescan's left"
    );
    let top = server.run_ok(["show-buffer"]).unwrap();
    assert_eq!(top, "the user's text", "paste-buffer's default untouched");
    let _ = std::fs::remove_file(file);
}

#[test]
fn a_cancelled_or_late_batch_leaves_no_buffer() {
    let _turn = one_at_a_time();
    let (server, ids, file) = server();
    let tmux = connect(&server);
    let reqs = requests(&ids[..1]);
    let options = CaptureOptions::default();
    let cancelled = Arc::new(AtomicBool::new(true));
    let replies = collect(tmux.capture_with_spare(reqs.clone(), options, soon(), cancelled, None));
    assert!(replies.iter().all(|r| r.result.is_err()), "cancelled");
    let late = Instant::now();
    let replies =
        collect(tmux.capture_with_spare(reqs.clone(), options, late, Arc::default(), None));
    assert!(replies.iter().all(|r| r.result.is_err()), "out of time");
    // The control client runs its lines in order: once this batch is
    // answered, the ones given up on above have run too.
    let replies = collect(tmux.capture_with_spare(reqs, options, soon(), Arc::default(), None));
    for r in &replies {
        assert!(r.result.is_ok(), "{:?}", r.result);
    }
    assert_eq!(buffers(&server), "", "no buffer left");
    let _ = std::fs::remove_file(file);
}
