//! A sweep's clients show tmux the terminal of its lowest-numbered pane
//! (tmux/capture/anchor.rs), so tmux finds their pane at once. These tests
//! check on private servers (killed on drop, also when a test fails) that
//! this harms nothing: that pane receives no byte and shows none, its
//! terminal attributes and foreground process group are unchanged, the
//! pane dying mid-sweep fails no other pane, and a dead lowest pane makes
//! the sweep fall back to a pipe with the same answers. The anchor the
//! server keeps for the next sweep, and the client started on it before
//! the sweep's script is known, are held to the same.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::connect;
use panescan::testing::private_server::PrivateServer;
use panescan::testing::tmux::{
    CaptureOptions, CaptureRange, CaptureReply, CaptureRequest, Fields, PaneId, Tmux,
};

/// Polls `f` until it holds; fails the test after a minute.
fn eventually(what: &str, mut f: impl FnMut() -> bool) {
    let until = Instant::now() + Duration::from_secs(60);
    while !f() {
        assert!(Instant::now() < until, "never: {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn pane_ids(server: &PrivateServer) -> Vec<PaneId> {
    let out = server
        .run_ok(["list-panes", "-a", "-F", "#{pane_id}"])
        .unwrap();
    let mut ids: Vec<PaneId> = out.lines().map(|l| PaneId::parse(l).unwrap()).collect();
    ids.sort_by_key(|p| p.number());
    ids
}

fn screen(server: &PrivateServer, pane: &str) -> String {
    server.run_ok(["capture-pane", "-p", "-t", pane]).unwrap()
}

fn field(server: &PrivateServer, pane: &str, format: &str) -> String {
    let out = server
        .run_ok(["display-message", "-p", "-t", pane, format])
        .unwrap();
    out.trim().to_owned()
}

/// A server whose pane %0 reads its terminal raw into `out` (any byte that
/// reaches it lands there at once), with `panes` more panes each printing
/// `PANE-<id>` then `lines` lines.
///
/// The socket has a directory of its own (under `dir`), so the sweep
/// scripts a test sees beside it are its own.
fn server_with_reader(label: &str, panes: usize, lines: usize) -> Fixture {
    let dir = std::env::temp_dir().join(format!("panescan-{label}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let server = PrivateServer::start_under(label, 80, 10, Some(&dir)).unwrap();
    let out = dir.join("received");
    server
        .run_ok(["set-option", "-g", "history-limit", "5000"])
        .unwrap();
    let reader = format!(
        "sh -c 'stty raw -echo; echo READY; exec cat > {}'",
        out.display()
    );
    server
        .run_ok(["respawn-pane", "-k", "-t", "%0", &reader])
        .unwrap();
    eventually("%0 reads its terminal", || {
        screen(&server, "%0").contains("READY")
    });
    let mut script = String::new();
    for _ in 0..panes {
        script.push_str(&format!(
            "new-window -d -t main: \"sh -c 'echo PANE-\\$TMUX_PANE; seq -f row-%g 1 {lines}; echo DONE; exec sleep 1000000'\"\n"
        ));
    }
    server.source(&script).unwrap();
    for id in pane_ids(&server).iter().skip(1) {
        let id = id.to_string();
        eventually("the panes printed", || {
            let text = server
                .run_ok(["capture-pane", "-p", "-J", "-S", "-", "-t", &id])
                .unwrap();
            text.contains("DONE")
        });
    }
    Fixture { server, out, dir }
}

/// The server and its directory: the server is killed before the
/// directory (its socket's) is removed.
struct Fixture {
    server: PrivateServer,
    out: PathBuf,
    dir: PathBuf,
}

impl Drop for Fixture {
    fn drop(&mut self) {
        self.server.kill();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn sweep(
    tmux: &Tmux,
    ids: &[PaneId],
    range: CaptureRange,
) -> crossbeam_channel::Receiver<CaptureReply> {
    sweep_on(tmux, ids, range, None)
}

/// [`sweep`] whose first chunk may run on a client started ahead.
fn sweep_on(
    tmux: &Tmux,
    ids: &[PaneId],
    range: CaptureRange,
    spare: Option<panescan::testing::tmux::capture::Spare>,
) -> crossbeam_channel::Receiver<CaptureReply> {
    let requests = ids
        .iter()
        .map(|&pane| CaptureRequest { pane, range })
        .collect();
    tmux.sweep_with_spare(
        requests,
        CaptureOptions::default(),
        Instant::now() + Duration::from_secs(60),
        Arc::new(AtomicBool::new(false)),
        spare,
    )
}

/// A client started on the anchor the server keeps, as a search without
/// the pane cache starts one before its listing is back (the server must
/// have been listed: an anchor pays only on a server of many panes).
fn early_client(tmux: &Tmux) -> Option<panescan::testing::tmux::capture::Spare> {
    let deadline = Instant::now() + Duration::from_secs(60);
    tmux.inventory(Fields::Search, &[], deadline).unwrap();
    tmux.anchored_spare()
}

/// Every pane but %0 answered with its own text, whole.
fn assert_exact(replies: &[CaptureReply], ids: &[PaneId], range: CaptureRange) {
    assert_eq!(replies.len(), ids.len());
    for r in replies.iter().filter(|r| r.pane.number() != 0) {
        let t = r
            .result
            .as_ref()
            .unwrap_or_else(|e| panic!("{}: {e}", r.pane));
        let body = String::from_utf8_lossy(&t.bytes);
        if range == CaptureRange::AllHistory {
            assert_eq!(
                body.lines().next(),
                Some(format!("PANE-{}", r.pane).as_str())
            );
        }
        assert!(body.contains("DONE"), "{}: {body}", r.pane);
    }
}

fn collect(rx: crossbeam_channel::Receiver<CaptureReply>) -> Vec<CaptureReply> {
    let mut out = Vec::new();
    while let Ok(r) = rx.recv_timeout(Duration::from_secs(60)) {
        out.push(r);
    }
    out
}

fn sweep_files(socket: &Path) -> Vec<String> {
    let dir = socket.parent().unwrap();
    std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.starts_with(".panescan-sweep-"))
        .collect()
}

#[test]
fn the_anchor_pane_receives_nothing_and_keeps_its_terminal() {
    let fixture = server_with_reader("anchor-quiet", 30, 200);
    let (server, out) = (&fixture.server, &fixture.out);
    let tty = field(server, "%0", "#{pane_tty}");
    let pid = field(server, "%0", "#{pane_pid}");
    let termios = || {
        let o = Command::new("stty")
            .args(["-g", "-F", &tty])
            .output()
            .unwrap();
        assert!(o.status.success());
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    let foreground = || {
        let o = Command::new("ps")
            .args(["-o", "tpgid=", "-p", &pid])
            .output()
            .unwrap();
        String::from_utf8_lossy(&o.stdout).trim().to_owned()
    };
    let (termios_before, fg_before, screen_before) =
        (termios(), foreground(), screen(server, "%0"));
    let tmux = connect(server);
    let ids = pane_ids(server);
    assert_eq!(ids[0].number(), 0);
    for range in [CaptureRange::Visible, CaptureRange::AllHistory].repeat(3) {
        assert_exact(&collect(sweep(&tmux, &ids, range)), &ids, range);
        // The next sweep's first client starts on the kept anchor, then
        // waits for its script (as during a search's listing).
        let early = early_client(&tmux);
        assert!(early.is_some(), "a client on the kept anchor");
        std::thread::sleep(Duration::from_millis(100));
        assert_exact(&collect(sweep_on(&tmux, &ids, range, early)), &ids, range);
        // Not used (the listing failed, the scope was small): it ends.
        drop(early_client(&tmux));
    }
    assert_eq!(termios(), termios_before, "terminal attributes");
    assert_eq!(foreground(), fg_before, "foreground process group");
    assert_eq!(screen(server, "%0"), screen_before, "nothing shown");
    let received = std::fs::read(out).unwrap();
    assert!(received.is_empty(), "the pane read {received:?}");
    // Each script is removed once its client has ended.
    let socket = server.socket_path().unwrap();
    eventually("no script left", || sweep_files(&socket).is_empty());
}

#[test]
fn the_anchor_pane_dying_mid_sweep_fails_no_other_pane() {
    let fixture = server_with_reader("anchor-dies", 60, 3_000);
    let server = &fixture.server;
    let tmux = connect(server);
    let ids = pane_ids(server);
    let socket = server.socket_path().unwrap();
    let rx = sweep(&tmux, &ids, CaptureRange::AllHistory);
    let first = rx.recv_timeout(Duration::from_secs(60)).unwrap();
    assert_eq!(first.pane, ids[0]);
    // The later chunk already runs on %0's terminal, its script in a file.
    assert!(
        !sweep_files(&socket).is_empty(),
        "the sweep shows tmux a terminal"
    );
    server.run_ok(["kill-pane", "-t", "%0"]).unwrap();
    let mut replies = vec![first];
    replies.extend(collect(rx));
    assert_exact(&replies, &ids, CaptureRange::AllHistory);
    // The next sweep has a pane of its own to show, or none: still exact.
    let rest = &ids[1..];
    assert_exact(
        &collect(sweep(&tmux, rest, CaptureRange::Visible)),
        rest,
        CaptureRange::Visible,
    );
    eventually("no script left", || sweep_files(&socket).is_empty());
}

/// The whole history of a pane as tmux itself prints it.
fn history(server: &PrivateServer, pane: &str) -> String {
    server
        .run_ok(["capture-pane", "-p", "-S", "-", "-E", "-", "-t", pane])
        .unwrap()
}

#[test]
fn a_dead_lowest_pane_makes_the_sweep_use_a_pipe() {
    let fixture = server_with_reader("anchor-dead", 20, 200);
    let (server, out) = (&fixture.server, &fixture.out);
    // A sweep while %0 lives keeps its terminal for the next.
    let tmux = connect(server);
    let ids = pane_ids(server);
    assert_exact(
        &collect(sweep(&tmux, &ids, CaptureRange::Visible)),
        &ids,
        CaptureRange::Visible,
    );
    assert!(early_client(&tmux).is_some(), "the anchor is kept");
    server
        .run_ok(["set-option", "-w", "-t", "%0", "remain-on-exit", "on"])
        .unwrap();
    server
        .run_ok(["respawn-pane", "-k", "-t", "%0", "sh -c 'echo GONE'"])
        .unwrap();
    // Only tmux's own flag is waited for: what a dead pane shows is not
    // certain (tmux 3.3a may drop the last output of a process that exits
    // at once, and writes its "Pane is dead" line only once it has reaped
    // the process, which a respawn that killed another one can leave
    // undone). Its text must then hold still, so the sweep and tmux's own
    // capture below read the same thing.
    eventually("%0 is dead", || field(server, "%0", "#{pane_dead}") == "1");
    // The anchor kept from the sweep before is not taken: its pane died.
    assert!(early_client(&tmux).is_none(), "no client on a dead pane");
    let mut last = history(server, "%0");
    eventually("%0 holds still", || {
        std::thread::sleep(Duration::from_millis(300));
        let now = history(server, "%0");
        std::mem::replace(&mut last, now) == last
    });
    let socket = server.socket_path().unwrap();
    let rx = sweep(&tmux, &ids, CaptureRange::AllHistory);
    let first = rx.recv_timeout(Duration::from_secs(60)).unwrap();
    assert!(
        sweep_files(&socket).is_empty(),
        "no terminal to show: a pipe"
    );
    assert_eq!(first.pane.number(), 0, "the dead pane is answered first");
    let dead = first.result.as_ref().unwrap();
    assert_eq!(String::from_utf8_lossy(&dead.bytes), history(server, "%0"));
    let mut replies = vec![first];
    replies.extend(collect(rx));
    assert_exact(&replies, &ids, CaptureRange::AllHistory);
    assert!(std::fs::read(out).unwrap_or_default().is_empty());
}
