//! The tmux transport against private tmux servers (killed on drop, also
//! when a test fails).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::connect;
use panescan::testing::private_server::PrivateServer;
use panescan::testing::tmux::connection::IDLE_DETACH;
use panescan::testing::tmux::{
    CaptureOptions, CaptureRange, CaptureReply, CaptureRequest, Fields, PaneId, ServerSpec, Target,
    Tmux, TmuxCommand, TmuxError,
};

fn soon() -> Instant {
    Instant::now() + Duration::from_secs(20)
}

/// A new window in `main` (with `options`, e.g. a name) running `command`,
/// which ends by printing DONE; once it has, a connection and its pane.
fn window_running(server: &PrivateServer, options: &[&str], command: &str) -> (Tmux, PaneId) {
    let mut args = vec!["new-window", "-d", "-t", "main:"];
    args.extend_from_slice(options);
    args.push(command);
    server.run_ok(args).unwrap();
    wait_printed(server);
    let tmux = connect(server);
    let pane = *pane_ids(server).last().unwrap();
    (tmux, pane)
}

/// Adds `n` windows to session `main`, each printing `PANE-<id>` then
/// `lines` numbered lines; waits until all have printed.
fn add_panes(server: &PrivateServer, n: usize, lines: usize) {
    let mut script = String::new();
    for _ in 0..n {
        script.push_str(&format!(
            "new-window -d -t main: \"sh -c 'echo PANE-\\$TMUX_PANE; seq -f row-%g 1 {lines}; echo DONE; exec sleep 1000000'\"\n"
        ));
    }
    server.source(&script).unwrap();
    wait_printed(server);
}

/// Waits until every pane of the server shows `DONE`.
fn wait_printed(server: &PrivateServer) {
    let start = Instant::now();
    loop {
        let out = server
            .run_ok(["list-panes", "-a", "-F", "#{pane_id}"])
            .unwrap();
        let mut all = true;
        for id in out.lines() {
            if id == "%0" {
                continue;
            }
            let text = server
                .run_ok(["capture-pane", "-p", "-t", id, "-S", "-", "-J"])
                .unwrap();
            if !text.contains("DONE") {
                all = false;
                break;
            }
        }
        if all {
            return;
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "panes never finished printing"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Polls `f` until it holds or `timeout` passes; whether it held.
fn wait_until(timeout: Duration, mut f: impl FnMut() -> bool) -> bool {
    let until = Instant::now() + timeout;
    while !f() {
        if Instant::now() >= until {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    true
}

fn pane_ids(server: &PrivateServer) -> Vec<PaneId> {
    server
        .run_ok(["list-panes", "-a", "-F", "#{pane_id}"])
        .unwrap()
        .lines()
        .map(|l| PaneId::parse(l).unwrap())
        .collect()
}

fn collect(rx: crossbeam_channel::Receiver<CaptureReply>) -> Vec<CaptureReply> {
    let mut out = Vec::new();
    while let Ok(r) = rx.recv_timeout(Duration::from_secs(60)) {
        out.push(r);
    }
    out
}

fn capture_all(
    tmux: &Tmux,
    panes: &[PaneId],
    range: CaptureRange,
    options: CaptureOptions,
) -> Vec<CaptureReply> {
    let reqs = panes
        .iter()
        .map(|&pane| CaptureRequest { pane, range })
        .collect();
    let replies = collect(tmux.capture(reqs, options, soon(), Arc::new(AtomicBool::new(false))));
    assert_eq!(replies.len(), panes.len());
    for (i, r) in replies.iter().enumerate() {
        assert_eq!(r.index, i, "replies in request order");
        assert_eq!(r.pane, panes[i]);
    }
    replies
}

#[test]
fn run_quotes_everything() {
    let server = PrivateServer::start("run-quote", 80, 24).unwrap();
    let tmux = connect(&server);
    let nasty = "a;b\nc'd\"e$HOME\\f#{pane_id}#(echo hi)\t🦀 ; kill-server";
    tmux.run(
        &TmuxCommand::new("set-option")
            .flag("-g")
            .arg("@nasty")
            .arg(nasty),
        soon(),
    )
    .unwrap();
    let got = tmux
        .run(
            &TmuxCommand::new("show-options").flag("-gv").arg("@nasty"),
            soon(),
        )
        .unwrap();
    assert_eq!(got.trim_end_matches('\n'), nasty);
    // A format-expanding command sees the text literally.
    tmux.run(
        &TmuxCommand::new("rename-window")
            .target(Target::SessionName("main".into()))
            .literal_arg("#(echo pwned)#{pane_id}"),
        soon(),
    )
    .unwrap();
    let name = server
        .run_ok(["display-message", "-p", "-t", "main:", "#{window_name}"])
        .unwrap();
    assert_eq!(name.trim_end(), "#(echo pwned)#{pane_id}");
    // tmux's own error comes back as such; the connection stays in step.
    let bad = tmux.run(
        &TmuxCommand::new("capture-pane")
            .flag("-p")
            .target(PaneId::parse("%99").unwrap()),
        soon(),
    );
    assert!(
        matches!(bad, Err(TmuxError::NotFound(ref m)) if m.contains("%99")),
        "{bad:?}"
    );
    let many: Vec<TmuxCommand> = (0..50)
        .map(|i| {
            TmuxCommand::new("display-message")
                .flag("-p")
                .arg(&format!("n{i}"))
        })
        .collect();
    let res = tmux.run_many(&many, soon());
    for (i, r) in res.iter().enumerate() {
        assert_eq!(r.as_ref().unwrap(), &format!("n{i}\n"));
    }
    assert!(server.run_ok(["list-buffers"]).unwrap().is_empty());
    tmux.shutdown();
}

#[test]
fn ordering_across_9_10_100() {
    let server = PrivateServer::start("order", 80, 24).unwrap();
    add_panes(&server, 101, 3);
    let tmux = connect(&server);
    let ids = pane_ids(&server);
    let mut picked: Vec<PaneId> = ["%100", "%9", "%10", "%1", "%99", "%11"]
        .iter()
        .map(|s| PaneId::parse(s).unwrap())
        .collect();
    picked.extend(ids.iter().rev().copied());
    let replies = capture_all(
        &tmux,
        &picked,
        CaptureRange::Visible,
        CaptureOptions::default(),
    );
    for r in &replies {
        let text = r.result.as_ref().unwrap();
        let body = String::from_utf8_lossy(&text.bytes);
        if r.pane.number() != 0 {
            assert!(
                body.starts_with(&format!("PANE-{}\n", r.pane)),
                "{}: {body:?}",
                r.pane
            );
        }
        assert_eq!(text.first_line, 0);
        assert_eq!(text.pane_height, 24);
    }
}

#[test]
fn two_hundred_panes_deep_in_one_batch() {
    let server = PrivateServer::start("p200", 80, 10).unwrap();
    server
        .run_ok(["set-option", "-g", "history-limit", "5000"])
        .unwrap();
    add_panes(&server, 199, 300);
    let tmux = connect(&server);
    let ids = pane_ids(&server);
    assert_eq!(ids.len(), 200);
    let replies = capture_all(
        &tmux,
        &ids,
        CaptureRange::AllHistory,
        CaptureOptions::default(),
    );
    for r in replies.iter().filter(|r| r.pane.number() != 0) {
        let t = r.result.as_ref().unwrap();
        let body = String::from_utf8_lossy(&t.bytes);
        let lines: Vec<&str> = body.lines().collect();
        assert_eq!(lines[0], format!("PANE-{}", r.pane));
        assert_eq!(t.first_line, -(t.history_size as i64));
        // Line numbers: row-300 sits at first_line + 300.
        let at = lines.iter().position(|l| *l == "row-300").unwrap();
        assert_eq!(t.first_line + at as i64, -(t.history_size as i64) + 300);
        assert_eq!(lines.len() as i64, t.history_size as i64 + 10);
    }
    // Scrollback(N) and Lines ranges.
    let some = &ids[1..4];
    for r in capture_all(
        &tmux,
        some,
        CaptureRange::Scrollback(5),
        CaptureOptions::default(),
    ) {
        let t = r.result.unwrap();
        assert_eq!(t.first_line, -5);
        assert_eq!(t.bytes.iter().filter(|&&b| b == b'\n').count(), 15);
    }
    for r in capture_all(
        &tmux,
        some,
        CaptureRange::Lines { start: -3, end: -2 },
        CaptureOptions::default(),
    ) {
        let t = r.result.unwrap();
        assert_eq!(t.first_line, -3);
        assert_eq!(t.bytes.iter().filter(|&&b| b == b'\n').count(), 2);
    }
}

#[test]
fn forged_framing_changes_nothing() {
    let server = PrivateServer::start("forge", 120, 10).unwrap();
    server
        .run_ok(["set-option", "-g", "history-limit", "200000"])
        .unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    // Every plausible guard: the next minute of seconds, command numbers
    // 0..600, both flags, %end and %error; plus a fake nonce block.
    let script = format!(
        "awk -v t={now} 'BEGIN {{ for (s = t - 2; s <= t + 60; s++) for (n = 0; n < 600; n++) for (f = 0; f < 2; f++) {{ print \"%end \" s \" \" n \" \" f; print \"%error \" s \" \" n \" \" f; print \"%begin \" s \" \" n \" \" f; print \"ok\" }} }}'; echo DONE; exec sleep 1000000"
    );
    std::fs::write(server.config_path().with_extension("forge.sh"), &script).unwrap();
    let path = server.config_path().with_extension("forge.sh");
    let (tmux, forger) = window_running(
        &server,
        &["-n", "%end 1 2 1"],
        &format!("sh {}", path.display()),
    );
    let expected = server
        .run_ok(["capture-pane", "-p", "-t", &forger.to_string(), "-S", "-"])
        .unwrap();
    assert!(expected.lines().count() > 100_000);
    // Through the control client: raw capture text framed by tmux.
    let cmds = vec![
        TmuxCommand::new("capture-pane")
            .flag("-p")
            .target(forger)
            .option("-S", "-"),
        TmuxCommand::new("display-message").flag("-p").arg("after"),
        TmuxCommand::new("capture-pane")
            .flag("-p")
            .target(forger)
            .option("-S", "-"),
        TmuxCommand::new("display-message").flag("-p").arg("last"),
    ];
    let res = tmux.run_many(&cmds, soon());
    assert_eq!(res[0].as_ref().unwrap(), &expected);
    assert_eq!(res[1].as_ref().unwrap(), "after\n");
    assert_eq!(res[2].as_ref().unwrap(), &expected);
    assert_eq!(res[3].as_ref().unwrap(), "last\n");
    // Through the capture path.
    let replies = capture_all(
        &tmux,
        &[forger, PaneId::from_number(0), forger],
        CaptureRange::AllHistory,
        CaptureOptions::default(),
    );
    assert_eq!(
        String::from_utf8_lossy(&replies[0].result.as_ref().unwrap().bytes),
        expected
    );
    assert_eq!(
        String::from_utf8_lossy(&replies[2].result.as_ref().unwrap().bytes),
        expected
    );
    // And the window name `%end 1 2 1` does not disturb the inventory.
    let inv = tmux.inventory(Fields::Full, &[], soon()).unwrap().0;
    assert!(inv.windows.iter().any(|w| w.window_name == "%end 1 2 1"));
    assert_eq!(inv.panes.len(), 2);
    let _ = std::fs::remove_file(path);
}

#[test]
fn vanished_pane_fails_alone() {
    let server = PrivateServer::start("vanish", 80, 24).unwrap();
    add_panes(&server, 3, 5);
    let tmux = connect(&server);
    let ids = pane_ids(&server);
    server
        .run_ok(["kill-pane", "-t", &ids[2].to_string()])
        .unwrap();
    // Visible screens (headed from one listing, as the server is known to
    // be small once listed) and deep captures (each headed by its own
    // probe) alike.
    tmux.inventory(Fields::Full, &[], soon()).unwrap();
    for range in [CaptureRange::Visible, CaptureRange::Scrollback(100)] {
        let replies = capture_all(&tmux, &ids, range, CaptureOptions::default());
        assert!(
            replies[0].result.is_ok() && replies[1].result.is_ok() && replies[3].result.is_ok(),
            "{range:?}"
        );
        assert!(
            matches!(replies[2].result, Err(TmuxError::NotFound(_))),
            "{range:?}: {:?}",
            replies[2].result
        );
    }
}

#[test]
fn deadline_and_cancel_answer_every_request() {
    let server = PrivateServer::start("cancel", 80, 24).unwrap();
    let tmux = connect(&server);
    let past = Instant::now();
    assert!(matches!(
        tmux.run(
            &TmuxCommand::new("display-message").flag("-p").arg("x"),
            past
        ),
        Err(TmuxError::Timeout)
    ));
    let reqs: Vec<CaptureRequest> = (0..50)
        .map(|_| CaptureRequest {
            pane: PaneId::from_number(0),
            range: CaptureRange::Visible,
        })
        .collect();
    let cancel = Arc::new(AtomicBool::new(true));
    let replies = collect(tmux.capture(reqs.clone(), CaptureOptions::default(), soon(), cancel));
    assert_eq!(replies.len(), 50);
    assert!(replies
        .iter()
        .all(|r| matches!(r.result, Err(TmuxError::Cancelled))));
    let replies = collect(tmux.capture(
        reqs,
        CaptureOptions::default(),
        past,
        Arc::new(AtomicBool::new(false)),
    ));
    assert_eq!(replies.len(), 50);
    assert!(replies
        .iter()
        .enumerate()
        .all(|(i, r)| r.index == i && r.result.is_err()));
}

/// Records, until stopped, the pids of this process's children whose
/// command line names `socket` and `source-file` (the capture sweeps).
struct SweepWatch {
    stop: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<std::collections::BTreeSet<u32>>,
}

impl SweepWatch {
    fn start(socket: &str) -> SweepWatch {
        let stop = Arc::new(AtomicBool::new(false));
        let since = common::last_pid();
        let me = std::process::id();
        let socket = socket.to_owned();
        let thread = std::thread::spawn({
            let stop = stop.clone();
            move || {
                let mut seen = std::collections::BTreeSet::new();
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    for c in common::new_children(me, since) {
                        if c.cmdline.contains(&socket) && c.cmdline.contains("source-file") {
                            seen.insert(c.pid);
                        }
                    }
                    // A sweep lives for tens of milliseconds at least.
                    std::thread::sleep(Duration::from_millis(2));
                }
                seen
            }
        });
        SweepWatch { stop, thread }
    }

    fn stop(self) -> std::collections::BTreeSet<u32> {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        self.thread.join().unwrap()
    }
}

#[test]
fn cancel_mid_stream_reaps_the_sweeps_and_the_next_capture_is_exact() {
    let server = PrivateServer::start("cancel-stream", 80, 24).unwrap();
    server
        .run_ok(["set-option", "-g", "history-limit", "5000"])
        .unwrap();
    add_panes(&server, 40, 2000);
    let tmux = connect(&server);
    let ids = pane_ids(&server);
    let socket = server.socket_path().unwrap().display().to_string();
    let mut reqs: Vec<CaptureRequest> = Vec::new();
    for _ in 0..5 {
        reqs.extend(ids.iter().map(|&pane| CaptureRequest {
            pane,
            range: CaptureRange::AllHistory,
        }));
    }
    let n = reqs.len();
    let watch = SweepWatch::start(&socket);
    let cancel = Arc::new(AtomicBool::new(false));
    let rx = tmux.capture(reqs, CaptureOptions::default(), soon(), cancel.clone());
    // The flag flips once the first pane's bytes are in, while the sweep
    // streams the rest.
    let first = rx.recv_timeout(Duration::from_secs(20)).unwrap();
    assert_eq!(first.index, 0);
    assert!(!first.result.as_ref().unwrap().bytes.is_empty());
    cancel.store(true, std::sync::atomic::Ordering::Relaxed);
    let mut replies = collect(rx);
    replies.insert(0, first);
    let sweeps = watch.stop();
    // Every request answered once, in order: what came in before the flag,
    // then cancelled ones only.
    assert_eq!(replies.len(), n);
    assert!(replies.iter().enumerate().all(|(i, r)| r.index == i));
    let delivered = replies.iter().take_while(|r| r.result.is_ok()).count();
    assert!(
        replies[delivered..]
            .iter()
            .all(|r| matches!(r.result, Err(TmuxError::Cancelled))),
        "after the first cancelled reply: {:?}",
        replies[delivered..]
            .iter()
            .find(|r| !matches!(r.result, Err(TmuxError::Cancelled)))
    );
    assert!(delivered < n, "the cancel landed after the whole sweep");
    // Every sweep process is reaped: gone, not a zombie of ours.
    assert!(!sweeps.is_empty(), "no sweep process seen");
    let me = std::process::id();
    let left = || -> Vec<common::ProcessInfo> {
        sweeps
            .iter()
            .filter_map(|&pid| common::child_process(pid, me))
            .filter(|p| p.state == 'Z' || p.cmdline.contains(&socket))
            .collect()
    };
    assert!(
        wait_until(Duration::from_secs(10), || left().is_empty()),
        "sweeps not reaped: {:?}",
        left()
    );
    // The next capture of every pane is tmux's own text, byte for byte.
    let again = capture_all(
        &tmux,
        &ids,
        CaptureRange::AllHistory,
        CaptureOptions::default(),
    );
    for r in &again {
        let want = server
            .run_ok(["capture-pane", "-p", "-t", &r.pane.to_string(), "-S", "-"])
            .unwrap();
        let got = &r.result.as_ref().unwrap().bytes;
        assert_eq!(String::from_utf8_lossy(got), want, "{}", r.pane);
    }
    eprintln!(
        "cancel mid-stream: {delivered} of {n} captures delivered, {} sweeps reaped",
        sweeps.len()
    );
}

/// A pane's pid and tty are tmux's own; no pane is the caller's: the tests
/// run outside this private server. Inside some other tmux (TMUX names its
/// socket) that is known for sure (false); outside tmux it cannot be said
/// (None).
fn assert_process_and_caller(server: &PrivateServer, inv: &panescan::testing::tmux::Inventory) {
    let p = &inv.panes[0];
    let (pid, tty) = {
        let out = server
            .run_ok([
                "display-message",
                "-p",
                "-t",
                &p.pane_id.to_string(),
                "#{pane_pid} #{pane_tty}",
            ])
            .unwrap();
        let (pid, tty) = out.trim().split_once(' ').unwrap();
        (pid.parse::<u32>().unwrap(), tty.to_owned())
    };
    assert_eq!((p.pane_pid, &p.pane_tty), (Some(pid), &tty));
    assert!(tty.starts_with("/dev/"), "{tty}");
    let inside_tmux = std::env::var_os("TMUX").is_some_and(|t| {
        !t.to_string_lossy()
            .split(',')
            .next()
            .unwrap_or("")
            .is_empty()
    });
    let expected = inside_tmux.then_some(false);
    assert!(
        inv.panes.iter().all(|p| p.is_caller == expected),
        "expected is_caller {expected:?}: {:?}",
        inv.panes.iter().map(|p| p.is_caller).collect::<Vec<_>>()
    );
}

#[test]
fn names_linked_windows_and_grouped_sessions() {
    let server = PrivateServer::start("names", 80, 24).unwrap();
    let tmux = connect(&server);
    let with_tab = "a;b'c\"d\te🦀 #{x} $HOME";
    let new_session = |name: &str| {
        tmux.run(
            &TmuxCommand::new("new-session")
                .flag("-d")
                .flag("-s")
                .literal_arg(name),
            soon(),
        )
    };
    // tmux 3.7 and later refuse a name with a control character: the
    // refusal comes back as tmux's, and the name without it is used.
    let tabs = common::names_take_control_characters(&server);
    let weird = if tabs {
        with_tab
    } else {
        let refused = new_session(with_tab).unwrap_err().to_string();
        assert!(refused.contains("invalid session name"), "{refused}");
        "a;b'c\"d e🦀 #{x} $HOME"
    };
    // Create through our own quoting: session, window names.
    new_session(weird).unwrap();
    // tmux stores the tab as `\t`; find the session by id.
    let sid = tmux
        .inventory(Fields::Full, &[], soon())
        .unwrap()
        .0
        .sessions
        .iter()
        .find(|s| s.session_name.contains("🦀"))
        .map(|s| s.session_id)
        .unwrap();
    let stored = tmux
        .inventory(Fields::Full, &[], soon())
        .unwrap()
        .0
        .sessions
        .iter()
        .find(|s| s.session_id == sid)
        .unwrap()
        .session_name
        .clone();
    // tmux normalises names (tab -> `\t`, `$` -> `\$`); `#{x}` stayed literal.
    let expected = if tabs {
        "a;b'c\"d\\te🦀 #{x} "
    } else {
        "a;b'c\"d e🦀 #{x} "
    };
    assert!(stored.starts_with(expected), "{stored:?}");
    // An exact-name target reaches it (quoted, `;` and `#{}` inert).
    tmux.run(
        &TmuxCommand::new("rename-window")
            .target(Target::SessionName(stored.clone()))
            .literal_arg(if tabs {
                "win\nnl\t;tab 🦀"
            } else {
                "win nl ;tab 🦀"
            }),
        soon(),
    )
    .unwrap();
    tmux.run(
        &TmuxCommand::new("new-session")
            .flag("-d")
            .option("-s", "other"),
        soon(),
    )
    .unwrap();
    // Link main's window 0 into `other` at index 5; group `grp` with main.
    server
        .run_ok(["link-window", "-s", "main:0", "-t", "other:5"])
        .unwrap();
    server
        .run_ok(["new-session", "-d", "-s", "grp", "-t", "main"])
        .unwrap();
    let inv = tmux.inventory(Fields::Full, &[], soon()).unwrap().0;
    // The search listings agree with the full one on every field they fill.
    let lean = tmux.inventory(Fields::Search, &[], soon()).unwrap().0;
    let (cached, _) = tmux
        .inventory(Fields::SearchWithFingerprint, &[], soon())
        .unwrap();
    assert_eq!(lean.panes.len(), inv.panes.len());
    assert_eq!(cached.panes.len(), inv.panes.len());
    let ids: Vec<PaneId> = inv.panes.iter().map(|p| p.pane_id).collect();
    // With their pids, read from /proc (tmux/procfs.rs): the same answers.
    let with_pids: Vec<(PaneId, Option<u32>)> =
        inv.panes.iter().map(|p| (p.pane_id, p.pane_pid)).collect();
    let details = tmux.commands_and_paths(&with_pids, soon());
    assert_eq!(details.len(), ids.len());
    for (((l, c), f), d) in lean
        .panes
        .iter()
        .zip(&cached.panes)
        .zip(&inv.panes)
        .zip(&details)
    {
        for p in [l, c] {
            assert_eq!(
                (
                    p.pane_id,
                    p.pane_index,
                    &p.placements,
                    p.history_size,
                    p.is_caller
                ),
                (
                    f.pane_id,
                    f.pane_index,
                    &f.placements,
                    f.history_size,
                    f.is_caller
                )
            );
            assert_eq!(
                (&p.window_name, &p.session_name),
                (&f.window_name, &f.session_name)
            );
        }
        assert_eq!(
            (
                c.pane_width,
                c.pane_height,
                c.pane_pid,
                c.history_limit,
                c.cursor_x,
                c.cursor_y,
                c.alternate_on,
                c.pane_dead
            ),
            (
                f.pane_width,
                f.pane_height,
                f.pane_pid,
                f.history_limit,
                f.cursor_x,
                f.cursor_y,
                f.alternate_on,
                f.pane_dead
            )
        );
        let (command, path) = d.clone().unwrap();
        assert_eq!(
            (&command, &path),
            (&f.pane_current_command, &f.pane_current_path)
        );
        assert!(!command.is_empty());
    }
    // A pane that is gone has no details; the others still do — asked in
    // one listing (a large share of the server's panes) or pane by pane (a
    // small share, once the server has more panes), with the same answers.
    let gone = PaneId::from_number(9_999);
    let mixed = tmux.commands_and_paths(&[(gone, None), (ids[0], None)], soon());
    assert_eq!(mixed.len(), 2);
    assert!(mixed[0].is_none() && mixed[1].is_some(), "{mixed:?}");
    let names: Vec<&str> = inv
        .sessions
        .iter()
        .map(|s| s.session_name.as_str())
        .collect();
    let expected_names = server
        .run_ok(["list-sessions", "-F", "#{session_name}"])
        .unwrap();
    assert_eq!(names, expected_names.lines().collect::<Vec<_>>());
    assert!(
        names
            .iter()
            .any(|n| n.contains("🦀") && n.contains(';') && n.contains('\'')),
        "{names:?}"
    );
    let shown = server
        .run_ok(["list-windows", "-a", "-F", "#{window_name}"])
        .unwrap();
    let weird_window = inv
        .windows
        .iter()
        .find(|w| w.window_name.contains("🦀"))
        .unwrap();
    assert!(shown.lines().any(|l| l == weird_window.window_name));
    // Panes once each, with every placement.
    let ids = pane_ids(&server);
    let mut unique = ids.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(inv.panes.len(), unique.len());
    let p0 = inv.panes.iter().find(|p| p.pane_id.number() == 0).unwrap();
    let places: Vec<(&str, u32)> = p0
        .placements
        .iter()
        .map(|p| (p.session_name.as_str(), p.window_index))
        .collect();
    assert_eq!(places.len(), 3, "{places:?}");
    assert!(
        places.contains(&("main", 0))
            && places.contains(&("other", 5))
            && places.contains(&("grp", 0))
    );
    let w0 = inv
        .windows
        .iter()
        .find(|w| w.window_id == p0.window_id)
        .unwrap();
    assert_eq!(w0.placements.len(), 3);
    let grp = inv
        .sessions
        .iter()
        .find(|s| s.session_name == "grp")
        .unwrap();
    // `new-session -t main` puts both in a group named after main.
    assert_eq!(grp.session_group.as_deref(), Some("main"));
    assert!(inv
        .sessions
        .iter()
        .find(|s| s.session_name == "other")
        .unwrap()
        .session_group
        .is_none());
    // Our own control client is not counted as attached.
    assert!(
        inv.sessions.iter().all(|s| s.session_attached == 0),
        "{:?}",
        inv.sessions
    );
    let p = &inv.panes[0];
    assert_eq!((p.pane_width, p.pane_height), (80, 24));
    assert!(p.pane_at_top && p.pane_at_left && p.pane_active && !p.pane_dead);
    assert_process_and_caller(&server, &inv);
    // Serde output uses tmux's ids.
    let json = serde_json::to_value(&inv).unwrap();
    assert_eq!(
        json["panes"][0]["pane_id"],
        inv.panes[0].pane_id.to_string()
    );
    assert!(json["panes"][0]["pane_id"]
        .as_str()
        .unwrap()
        .starts_with('%'));
    assert!(json["sessions"][0]["session_id"]
        .as_str()
        .unwrap()
        .starts_with('$'));
    // What the panes run, asked pane by pane once the server has more
    // panes (a small share asked), matches the listing of them all.
    let gone = PaneId::from_number(9_999);
    let first = inv.panes[0].pane_id;
    // Without pids: tmux is asked.
    let before = tmux.commands_and_paths(&[(gone, None), (first, None)], soon());
    for _ in 0..12 {
        server
            .run_ok(["new-window", "-d", "-t", "main:", "exec sleep 1000000"])
            .unwrap();
    }
    // Compare once every new pane runs its final command and tmux can
    // read its directory (a pane that has just exec'd can list an empty
    // pane_current_path for a moment).
    let settled = Instant::now() + Duration::from_secs(10);
    let many = loop {
        let inv = tmux.inventory(Fields::Full, &[], soon()).unwrap().0;
        let sleeping = inv
            .panes
            .iter()
            .filter(|p| p.pane_current_command == "sleep" && !p.pane_current_path.is_empty())
            .count();
        if sleeping >= 12 || Instant::now() > settled {
            break inv;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(many.panes.len() >= 15);
    let one = tmux.commands_and_paths(&[(gone, None), (first, None)], soon());
    assert_eq!(one, before);
    assert!(one[0].is_none() && one[1].is_some(), "{one:?}");
    let all: Vec<(PaneId, Option<u32>)> = many.panes.iter().map(|p| (p.pane_id, None)).collect();
    let listed = tmux.commands_and_paths(&all, soon());
    for (p, d) in many.panes.iter().zip(&listed) {
        assert_eq!(
            d.clone(),
            Some((p.pane_current_command.clone(), p.pane_current_path.clone()))
        );
    }
}

#[test]
fn attached_session_killed_mid_batch() {
    let server = PrivateServer::start("killsess", 80, 24).unwrap();
    server
        .run_ok(["new-session", "-d", "-s", "zother"])
        .unwrap();
    let tmux = connect(&server);
    tmux.run(
        &TmuxCommand::new("display-message").flag("-p").arg("x"),
        soon(),
    )
    .unwrap();
    let clients = server
        .run_ok(["list-clients", "-F", "#{client_session}"])
        .unwrap();
    assert_eq!(clients.trim(), "main");
    let cmds: Vec<TmuxCommand> = (0..3000)
        .map(|i| {
            TmuxCommand::new("display-message")
                .flag("-p")
                .arg(&format!("r{i}"))
        })
        .collect();
    let killer = {
        let name = server.socket_name().to_string();
        let conf = server.config_path().to_path_buf();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(5));
            let _ = std::process::Command::new("tmux")
                .args(["-L", &name, "-f"])
                .arg(conf)
                .args(["kill-session", "-t", "main"])
                .env_remove("TMUX")
                .status();
        })
    };
    let res = tmux.run_many(&cmds, soon());
    killer.join().unwrap();
    for (i, r) in res.iter().enumerate() {
        match r {
            Ok(t) => assert_eq!(t, &format!("r{i}\n")),
            Err(TmuxError::ConnectionLost(_)) => {}
            Err(e) => panic!("request {i}: {e}"),
        }
    }
    // The next request works, attached to the remaining session.
    assert_eq!(
        tmux.run(
            &TmuxCommand::new("display-message").flag("-p").arg("y"),
            soon()
        )
        .unwrap(),
        "y\n"
    );
    let clients = server
        .run_ok(["list-clients", "-F", "#{client_session}"])
        .unwrap();
    assert_eq!(clients.trim(), "zother");
    tmux.shutdown();
    let clients = || {
        server
            .run_ok(["list-clients", "-F", "#{client_session}"])
            .unwrap()
    };
    assert!(
        wait_until(Duration::from_secs(10), || clients().trim().is_empty()),
        "shutdown did not detach the control client: {}",
        clients()
    );
}

#[test]
fn server_killed_mid_batch_and_restarted() {
    let server = PrivateServer::start("killsrv", 80, 24).unwrap();
    server
        .run_ok(["set-option", "-g", "history-limit", "5000"])
        .unwrap();
    add_panes(&server, 40, 2000);
    let tmux = connect(&server);
    let ids = pane_ids(&server);
    let mut reqs: Vec<CaptureRequest> = Vec::new();
    for _ in 0..5 {
        reqs.extend(ids.iter().map(|&pane| CaptureRequest {
            pane,
            range: CaptureRange::AllHistory,
        }));
    }
    let n = reqs.len();
    let rx = tmux.capture(
        reqs,
        CaptureOptions::default(),
        soon(),
        Arc::new(AtomicBool::new(false)),
    );
    let first = rx.recv_timeout(Duration::from_secs(20)).unwrap();
    assert_eq!(first.index, 0);
    server.kill();
    let start = Instant::now();
    let mut rest = collect(rx);
    assert!(start.elapsed() < Duration::from_secs(15));
    rest.insert(0, first);
    assert_eq!(rest.len(), n);
    assert!(rest.iter().enumerate().all(|(i, r)| r.index == i));
    assert!(rest.last().unwrap().result.is_err());
    let err = tmux.run(
        &TmuxCommand::new("display-message").flag("-p").arg("x"),
        soon(),
    );
    assert!(matches!(err, Err(TmuxError::NoServer { .. })), "{err:?}");
    assert!(err.unwrap_err().to_string().contains("no tmux server at"));
    // Restart on the same socket: the next request reconnects.
    let out = server
        .command()
        .args(["new-session", "-d", "-s", "again"])
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(
        tmux.run(
            &TmuxCommand::new("display-message").flag("-p").arg("back"),
            soon()
        )
        .unwrap(),
        "back\n"
    );
    let info = tmux.server_info(soon()).unwrap();
    assert_eq!(info.session_count, 1);
    assert_eq!(info.transport, "control");
    assert_eq!(info.client_count, 0);
}

#[test]
fn empty_server_uses_one_shot_processes() {
    let server = PrivateServer::start("empty", 80, 24).unwrap();
    server
        .run_ok(["set-option", "-g", "exit-empty", "off"])
        .unwrap();
    server.run_ok(["kill-session", "-t", "main"]).unwrap();
    let tmux = connect(&server);
    let inv = tmux.inventory(Fields::Full, &[], soon()).unwrap().0;
    assert!(inv.sessions.is_empty() && inv.panes.is_empty());
    assert_eq!(
        tmux.run(
            &TmuxCommand::new("display-message").flag("-p").arg("a;b"),
            soon()
        )
        .unwrap(),
        "a;b\n"
    );
    let bad = tmux.run(&TmuxCommand::new("no-such-command"), soon());
    assert!(matches!(bad, Err(TmuxError::Command(_))), "{bad:?}");
    let info = tmux.server_info(soon()).unwrap();
    assert_eq!(
        (info.session_count, info.transport.as_str()),
        (0, "oneshot")
    );
    assert_eq!(info.pid, server.pid().unwrap());
    let replies = capture_all(
        &tmux,
        &[PaneId::from_number(0)],
        CaptureRange::Visible,
        CaptureOptions::default(),
    );
    assert!(matches!(replies[0].result, Err(TmuxError::NotFound(_))));
    // A session appears: the control client takes over, same answers.
    server.run_ok(["new-session", "-d", "-s", "late"]).unwrap();
    let inv = tmux.inventory(Fields::Full, &[], soon()).unwrap().0;
    assert_eq!(inv.sessions.len(), 1);
    assert_eq!(tmux.server_info(soon()).unwrap().transport, "control");
}

#[test]
fn no_server_is_a_clear_error() {
    let name = format!("panescan-nothing-here-{}", std::process::id());
    let tmux = Tmux::connect(&ServerSpec::named(&name)).unwrap();
    let err = tmux.inventory(Fields::Full, &[], soon()).unwrap_err();
    assert!(matches!(err, TmuxError::NoServer { .. }));
    let replies = collect(tmux.capture(
        vec![CaptureRequest {
            pane: PaneId::from_number(1),
            range: CaptureRange::Visible,
        }],
        CaptureOptions::default(),
        soon(),
        Arc::new(AtomicBool::new(false)),
    ));
    assert!(
        matches!(replies[0].result, Err(TmuxError::NoServer { .. })),
        "{:?}",
        replies[0].result
    );
}

#[test]
fn joined_lines_get_exact_numbers() {
    let server = PrivateServer::start("join", 20, 10).unwrap();
    // 45 cells (3 rows), 1 row, 24 cells of CJK (2 rows): 6 rows in all.
    let (tmux, pane) = window_running(
        &server,
        &[],
        "sh -c 'printf \"%045d\\nb\\n一二三四五六七八九十一二\\nDONE\"; exec sleep 1000000'",
    );
    let opts = CaptureOptions {
        join_wrapped: true,
        escapes: false,
    };
    let r = capture_all(&tmux, &[pane], CaptureRange::Visible, opts).remove(0);
    let t = r.result.unwrap();
    let text = String::from_utf8_lossy(&t.bytes).to_string();
    let lines: Vec<&str> = text.lines().collect();
    assert!(t.joined);
    assert_eq!(lines[0].trim_end().len(), 45, "{text:?}");
    let nums = t.line_numbers.unwrap();
    assert_eq!(nums.len(), lines.len());
    assert_eq!(&nums[..4], &[0, 3, 4, 6]);
    // Plain capture: one row per line, numbered from first_line.
    let r = capture_all(
        &tmux,
        &[pane],
        CaptureRange::Visible,
        CaptureOptions::default(),
    )
    .remove(0);
    let t = r.result.unwrap();
    assert!(t.line_numbers.is_none() && !t.joined);
    assert_eq!(
        String::from_utf8_lossy(&t.bytes).lines().nth(4).unwrap(),
        "一二三四五六七八九十"
    );
}

/// Kinds of text whose display width tmux and a width table may see
/// differently: emoji, emoji with a variation selector (U+FE0F), ZWJ
/// sequences, flags, combining marks, ambiguous-width and CJK characters.
const TRICKY: [(&str, &str); 10] = [
    ("ascii", "x"),
    ("emoji", "😀"),
    ("vs16", "☺\u{FE0F}"),
    ("heart", "❤\u{FE0F}"),
    ("zwj", "👨\u{200D}👩\u{200D}👧"),
    ("ambiguous", "±§¶×÷αβγ─│"),
    ("flag", "🇫🇷"),
    ("combining", "e\u{301}"),
    ("cjk", "中"),
    ("mixed", "a😀b❤\u{FE0F}c"),
];

/// Lines of `units`, each repeated so that lines wrap onto 1-5 rows, with
/// blank and plain lines between.
fn tricky_lines(units: &[&str]) -> String {
    let mut out = String::new();
    for (i, unit) in units.iter().enumerate() {
        for reps in [1, 4, 9, 17] {
            out.push_str(&format!("L{i}-{reps}:{}\n\n", unit.repeat(reps)));
        }
        out.push_str(&format!("{}\n", "y".repeat(37)));
    }
    out
}

/// Checks a joined capture of `pane` line by line against tmux's own rows:
/// each line's number is the row it starts on, and the rows from there to
/// the next line's number hold exactly its text (spaces aside: tmux trims
/// each row's end). Returns whether the capture was joined.
fn check_numbers_against_rows(
    server: &PrivateServer,
    pane: PaneId,
    t: &panescan::testing::tmux::CapturedText,
    what: &str,
) -> bool {
    let target = pane.to_string();
    let rows_text = server
        .run_ok(["capture-pane", "-p", "-t", &target, "-S", "-"])
        .unwrap();
    let rows: Vec<&str> = rows_text.lines().collect();
    let text = String::from_utf8_lossy(&t.bytes).into_owned();
    let lines: Vec<&str> = text.lines().collect();
    let numbers: Vec<i64> = match &t.line_numbers {
        Some(n) => n.clone(),
        None => (0..lines.len() as i64).map(|i| t.first_line + i).collect(),
    };
    assert_eq!(numbers.len(), lines.len(), "{what}");
    assert_eq!(t.first_line, -(t.history_size as i64), "{what}");
    if t.joined {
        let tmux_joined = server
            .run_ok(["capture-pane", "-p", "-J", "-t", &target, "-S", "-"])
            .unwrap();
        assert_eq!(text, tmux_joined, "{what}");
    }
    let squeeze = |s: &str| s.replace(' ', "");
    for (i, line) in lines.iter().enumerate() {
        let row = |n: i64| usize::try_from(n - t.first_line).unwrap();
        let (from, to) = (
            row(numbers[i]),
            numbers.get(i + 1).map_or(rows.len(), |&n| row(n)),
        );
        assert!(
            from < to && to <= rows.len(),
            "{what}, line {i}: rows {from}..{to}"
        );
        assert_eq!(
            squeeze(&rows[from..to].concat()),
            squeeze(line),
            "{what}: line {i} {line:?} numbered {}",
            numbers[i]
        );
    }
    t.joined
}

#[test]
fn joined_line_numbers_match_tmux_rows_line_by_line() {
    let mut joined = Vec::new();
    for width in [20u16, 21, 33, 57] {
        let server = PrivateServer::start("join-rows", width, 12).unwrap();
        server
            .run_ok(["set-option", "-g", "history-limit", "5000"])
            .unwrap();
        // One pane per kind of text, and one with them all.
        let mut texts: Vec<(String, String)> = TRICKY
            .iter()
            .map(|(name, unit)| (name.to_string(), tricky_lines(&[unit])))
            .collect();
        let all: Vec<&str> = TRICKY.iter().map(|(_, u)| *u).collect();
        texts.push(("all".into(), tricky_lines(&all)));
        // Two errors of a width count that cancel out in the row total: 21
        // CJK characters take 3 rows at width 21 (the 11th cannot straddle
        // the edge), not 42 / 21 = 2; a ZWJ family is 2 cells to tmux 3.3a,
        // not the 6 of its parts.
        texts.push((
            "compensating".into(),
            format!(
                "{}\nbetween\n{}\nafter\n",
                "中".repeat(21),
                "👨\u{200D}👩\u{200D}👧".repeat(4)
            ),
        ));
        let mut script = String::new();
        for (name, text) in &texts {
            let file = server.config_path().with_extension(format!("{name}.txt"));
            std::fs::write(&file, text).unwrap();
            script.push_str(&format!(
                "new-window -d -t main: \"sh -c 'cat {}; echo DONE; exec sleep 1000000'\"\n",
                file.display()
            ));
        }
        server.source(&script).unwrap();
        wait_printed(&server);
        let tmux = connect(&server);
        let panes = pane_ids(&server);
        let opts = CaptureOptions {
            join_wrapped: true,
            escapes: false,
        };
        let replies = capture_all(&tmux, &panes[1..], CaptureRange::AllHistory, opts);
        for ((name, _), r) in texts.iter().zip(&replies) {
            let what = format!("{name} at width {width}");
            if check_numbers_against_rows(&server, r.pane, r.result.as_ref().unwrap(), &what) {
                joined.push(what);
            }
        }
        for (name, _) in &texts {
            let _ =
                std::fs::remove_file(server.config_path().with_extension(format!("{name}.txt")));
        }
    }
    eprintln!("joined: {joined:?}");
    assert!(!joined.is_empty(), "no pane was captured joined");
}

/// The visible screen of `pane`, wrapped lines joined.
fn visible_joined(tmux: &Tmux, pane: PaneId) -> panescan::testing::tmux::CapturedText {
    let opts = CaptureOptions {
        join_wrapped: true,
        escapes: false,
    };
    capture_all(tmux, &[pane], CaptureRange::Visible, opts)
        .remove(0)
        .result
        .unwrap()
}

#[test]
fn joined_numbers_count_the_cell_a_wide_character_leaves_empty() {
    // Width 21: 21 wide characters take 10 per row (the 21st cell stays
    // empty, the 11th cannot straddle the edge), so 3 rows, while 42 cells
    // / 21 would say 2.
    let server = PrivateServer::start("join-odd", 21, 6).unwrap();
    let (tmux, pane) = window_running(
        &server,
        &[],
        "sh -c 'printf \"一二三四五六七八九十一二三四五六七八九十一\\nDONE\"; exec sleep 1000000'",
    );
    let t = visible_joined(&tmux, pane);
    assert!(t.joined);
    assert_eq!(&t.line_numbers.as_ref().unwrap()[..2], &[0, 3]);
    assert!(check_numbers_against_rows(&server, pane, &t, "width 21"));
}

#[test]
fn joined_numbers_fall_back_when_a_width_may_be_seen_otherwise() {
    // ZWJ families: tmux 3.3a draws each in 2 cells (the line fits one row
    // here), a width table counts 6 (two rows); the pane is captured
    // unjoined, one row a line.
    let server = PrivateServer::start("join-zwj", 20, 6).unwrap();
    let (tmux, pane) = window_running(
        &server,
        &[],
        "sh -c 'printf \"family:👨\u{200D}👩\u{200D}👧👨\u{200D}👩\u{200D}👧👨\u{200D}👩\u{200D}👧👨\u{200D}👩\u{200D}👧\\nDONE\"; exec sleep 1000000'",
    );
    let t = visible_joined(&tmux, pane);
    assert!(!t.joined, "a ZWJ sequence's width is not certain: unjoined");
    assert!(t.line_numbers.is_none());
    assert_eq!(String::from_utf8_lossy(&t.bytes).lines().count(), 6);
    assert!(!check_numbers_against_rows(&server, pane, &t, "zwj"));
}

#[test]
fn shared_handles_are_one_per_server() {
    let server = PrivateServer::start("shared", 80, 24).unwrap();
    let spec = ServerSpec {
        socket_path: Some(server.socket_path().unwrap()),
        ..ServerSpec::default()
    };
    let a = Tmux::shared(&spec).unwrap();
    let b = Tmux::shared(&spec).unwrap();
    let threads: Vec<_> = (0..8)
        .map(|t| {
            let h = if t % 2 == 0 { a.clone() } else { b.clone() };
            std::thread::spawn(move || {
                for i in 0..50 {
                    let s = format!("t{t}-{i}");
                    let out = h.run(
                        &TmuxCommand::new("display-message").flag("-p").arg(&s),
                        soon(),
                    );
                    assert_eq!(out.unwrap(), format!("{s}\n"));
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let clients = server
        .run_ok(["list-clients", "-F", "#{client_pid}"])
        .unwrap();
    assert_eq!(
        clients.lines().count(),
        1,
        "one control client for both handles"
    );
    a.shutdown();
}

#[test]
fn kill_server_with_control_client_attached_leaves_nothing() {
    let server = PrivateServer::start("killclean", 80, 24).unwrap();
    let pid = server.pid().unwrap();
    let tmux = connect(&server);
    tmux.run(
        &TmuxCommand::new("display-message").flag("-p").arg("x"),
        soon(),
    )
    .unwrap();
    server.kill();
    let start = Instant::now();
    while std::path::Path::new(&format!("/proc/{pid}")).exists() {
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "tmux server {pid} did not exit"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    drop(tmux);
}

fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap()
}

#[test]
fn two_thousand_deep_captures_do_not_grow_tmux() {
    let server = PrivateServer::start("leak", 120, 40).unwrap();
    server
        .run_ok(["set-option", "-g", "history-limit", "5000"])
        .unwrap();
    add_panes(&server, 1, 2000);
    let tmux = connect(&server);
    let pane = *pane_ids(&server).last().unwrap();
    let pid = tmux.server_info(soon()).unwrap().pid;
    let buffers_before = server.run_ok(["list-buffers"]).unwrap();
    // Warm up (first allocations of the capture path), then measure.
    let reqs = |n: usize| -> Vec<CaptureRequest> {
        (0..n)
            .map(|_| CaptureRequest {
                pane,
                range: CaptureRange::AllHistory,
            })
            .collect()
    };
    for r in collect(tmux.capture(
        reqs(50),
        CaptureOptions::default(),
        soon(),
        Arc::new(AtomicBool::new(false)),
    )) {
        r.result.unwrap();
    }
    let before = rss_kib(pid);
    let mut bytes = 0usize;
    for _ in 0..10 {
        let replies = collect(tmux.capture(
            reqs(200),
            CaptureOptions::default(),
            soon(),
            Arc::new(AtomicBool::new(false)),
        ));
        assert_eq!(replies.len(), 200);
        for r in replies {
            let t = r.result.unwrap();
            assert!(t.history_size + u64::from(t.pane_height) >= 2000);
            bytes += t.bytes.len();
        }
    }
    let after = rss_kib(pid);
    eprintln!(
        "tmux VmRSS before {before} KiB, after 2,000 captures ({} MB) {after} KiB, delta {} KiB",
        bytes / 1_000_000,
        after as i64 - before as i64
    );
    assert!(
        after < before + 4 * 1024,
        "tmux grew from {before} KiB to {after} KiB"
    );
    assert_eq!(server.run_ok(["list-buffers"]).unwrap(), buffers_before);
}

/// The measurement above can fail: the same captures through plain
/// control-mode `capture-pane -p` (tmux 3.2-3.5a) do grow the server.
#[test]
fn control_mode_capture_p_is_the_leak_we_avoid() {
    let server = PrivateServer::start("leak-p", 120, 40).unwrap();
    server
        .run_ok(["set-option", "-g", "history-limit", "5000"])
        .unwrap();
    add_panes(&server, 1, 2000);
    let version = server
        .run_ok(["display-message", "-p", "#{version}"])
        .unwrap();
    if !["3.2", "3.3", "3.4", "3.5"]
        .iter()
        .any(|v| version.starts_with(v))
    {
        return; // fixed in tmux 3.6
    }
    let tmux = connect(&server);
    let pane = *pane_ids(&server).last().unwrap();
    let pid = tmux.server_info(soon()).unwrap().pid;
    let cmd = TmuxCommand::new("capture-pane")
        .flag("-p")
        .target(pane)
        .option("-S", "-");
    let before = rss_kib(pid);
    for _ in 0..4 {
        let res = tmux.run_many(&vec![cmd.clone(); 100], soon());
        assert!(res.iter().all(Result::is_ok));
    }
    let after = rss_kib(pid);
    assert!(
        after > before + 4 * 1024,
        "expected the leak: {before} -> {after} KiB"
    );
}

#[test]
fn idle_control_client_detaches_and_comes_back() {
    let server = PrivateServer::start("idle", 80, 24).unwrap();
    let tmux = connect(&server);
    let x = TmuxCommand::new("display-message").flag("-p").arg("x");
    // Idle counts from the request's submission, so the clock starts
    // before it: taken after the reply, it would start late by the reply's
    // time and the lower bound below would fail by that much.
    let used = Instant::now();
    tmux.run(&x, soon()).unwrap();
    assert_eq!(server.run_ok(["list-clients"]).unwrap().lines().count(), 1);
    let detached = wait_until(IDLE_DETACH * 3, || {
        server.run_ok(["list-clients"]).unwrap().is_empty()
    });
    assert!(detached, "idle client still attached");
    // Not before it was idle that long (a lower bound: load only delays).
    assert!(
        used.elapsed() >= IDLE_DETACH,
        "detached after {:?}",
        used.elapsed()
    );
    assert_eq!(tmux.run(&x, soon()).unwrap(), "x\n");
    assert_eq!(server.run_ok(["list-clients"]).unwrap().lines().count(), 1);
}

#[test]
fn first_line_is_exact_while_the_pane_prints() {
    let server = PrivateServer::start("busy", 80, 20).unwrap();
    server
        .run_ok(["set-option", "-g", "history-limit", "3000"])
        .unwrap();
    server
        .run_ok(["new-window", "-d", "-t", "main:", "seq 1 100000000"])
        .unwrap();
    let tmux = connect(&server);
    let pane = *pane_ids(&server).last().unwrap();
    // The history fills up while the captures run.
    let printing = wait_until(Duration::from_secs(20), || {
        server
            .run_ok([
                "display-message",
                "-p",
                "-t",
                &pane.to_string(),
                "#{history_size}",
            ])
            .is_ok_and(|h| h.trim().parse::<u64>().is_ok_and(|h| h >= 1000))
    });
    assert!(printing, "the pane never printed 1,000 lines");
    for range in [
        CaptureRange::AllHistory,
        CaptureRange::Scrollback(1000),
        CaptureRange::Lines {
            start: -700,
            end: 5,
        },
    ] {
        let reqs: Vec<CaptureRequest> = (0..20).map(|_| CaptureRequest { pane, range }).collect();
        for r in collect(tmux.capture(
            reqs,
            CaptureOptions::default(),
            soon(),
            Arc::new(AtomicBool::new(false)),
        )) {
            let t = r.result.unwrap();
            let lines = t.bytes.iter().filter(|&&b| b == b'\n').count() as i64;
            let last = match range {
                CaptureRange::Lines { end, .. } => end,
                _ => i64::from(t.pane_height) - 1,
            };
            assert_eq!(
                lines,
                last - t.first_line + 1,
                "{range:?} hsize {}",
                t.history_size
            );
            // Consecutive numbers: the capture is one snapshot.
            let text = String::from_utf8_lossy(&t.bytes);
            let mut nums: Vec<u64> = text.lines().filter_map(|l| l.trim().parse().ok()).collect();
            nums.pop(); // the line being written may be partial
            assert!(
                nums.windows(2).all(|w| w[1] == w[0] + 1),
                "{range:?}: {:?}",
                nums.windows(2).find(|w| w[1] != w[0] + 1)
            );
        }
    }
}

#[test]
fn escapes_are_kept_only_when_asked() {
    let server = PrivateServer::start("esc", 80, 10).unwrap();
    let (tmux, pane) = window_running(
        &server,
        &[],
        "sh -c 'printf \"\\033[1;31mred\\033[0m plain\\nDONE\"; exec sleep 1000000'",
    );
    let plain = capture_all(
        &tmux,
        &[pane],
        CaptureRange::Visible,
        CaptureOptions::default(),
    )
    .remove(0)
    .result
    .unwrap();
    assert!(String::from_utf8_lossy(&plain.bytes).starts_with("red plain\n"));
    let opts = CaptureOptions {
        join_wrapped: true,
        escapes: true,
    };
    let esc = capture_all(&tmux, &[pane], CaptureRange::Visible, opts)
        .remove(0)
        .result
        .unwrap();
    let text = String::from_utf8_lossy(&esc.bytes);
    assert!(
        text.contains("\u{1b}[1m") || text.contains("\u{1b}[31m") || text.contains("\u{1b}[1;31m"),
        "{text:?}"
    );
    assert!(esc.joined);
    // Each line is one row here: numbers follow from the first line.
    assert_eq!(esc.line_numbers, None);
    assert_eq!(esc.first_line, 0);
}

#[test]
fn control_and_one_shot_answer_the_same() {
    let server = PrivateServer::start("same", 80, 24).unwrap();
    add_panes(&server, 3, 20);
    server
        .run_ok(["new-session", "-d", "-s", "b;c 🦀"])
        .unwrap();
    server
        .run_ok(["link-window", "-s", "main:1", "-t", "=b;c 🦀:7"])
        .unwrap();
    let tmux = connect(&server);
    let cmds = vec![
        TmuxCommand::new("display-message")
            .flag("-p")
            .target(PaneId::parse("%1").unwrap())
            .option("-F", "#{pane_id} #{window_index}"),
        TmuxCommand::new("capture-pane")
            .flag("-p")
            .target(PaneId::parse("%99").unwrap()),
        TmuxCommand::new("show-options")
            .flag("-gv")
            .arg("history-limit"),
        TmuxCommand::new("list-windows")
            .flag("-a")
            .option("-F", "#{window_id} #{window_name}"),
        TmuxCommand::new("no-such-command"),
    ];
    let deadline = soon();
    let via_control = tmux.run_many(&cmds, deadline);
    let inv_control =
        serde_json::to_value(tmux.inventory(Fields::Full, &[], deadline).unwrap().0).unwrap();
    assert_eq!(tmux.server_info(deadline).unwrap().transport, "control");
    tmux.set_oneshot_only(true);
    let via_oneshot = tmux.run_many(&cmds, deadline);
    let inv_oneshot =
        serde_json::to_value(tmux.inventory(Fields::Full, &[], deadline).unwrap().0).unwrap();
    assert_eq!(tmux.server_info(deadline).unwrap().transport, "oneshot");
    assert_eq!(via_control, via_oneshot);
    assert_eq!(inv_control, inv_oneshot);
    assert!(matches!(via_control[1], Err(TmuxError::NotFound(_))));
    assert!(matches!(via_control[4], Err(TmuxError::Command(_))));
    assert_eq!(server.run_ok(["list-clients"]).unwrap(), "");
}

/// Run by `dead_owner_leaves_no_client_attached` in a child process: starts
/// many replies and exits while they are still queued in tmux.
#[test]
#[ignore = "helper run in a child process"]
fn helper_exit_with_replies_pending() {
    let Ok(socket) = std::env::var("PANESCAN_TEST_SOCKET") else {
        return;
    };
    let tmux = Tmux::connect(&ServerSpec {
        socket_path: Some(socket.into()),
        ..ServerSpec::default()
    })
    .unwrap();
    tmux.run(
        &TmuxCommand::new("display-message").flag("-p").arg("x"),
        soon(),
    )
    .unwrap();
    let cmd = TmuxCommand::new("capture-pane")
        .flag("-p")
        .target(PaneId::from_number(0))
        .option("-S", "-");
    std::thread::spawn(move || tmux.run_many(&vec![cmd; 200], soon()));
    std::thread::sleep(Duration::from_millis(50));
    std::process::exit(0);
}

#[test]
fn dead_owner_leaves_no_client_attached() {
    let server = PrivateServer::start("dead-owner", 200, 50).unwrap();
    server
        .run_ok(["set-option", "-g", "history-limit", "5000"])
        .unwrap();
    server
        .run_ok([
            "respawn-pane",
            "-k",
            "-t",
            "main:",
            "seq 1 3000; exec sleep 1000000",
        ])
        .unwrap();
    let printed = wait_until(Duration::from_secs(20), || {
        server
            .run_ok(["capture-pane", "-p", "-t", "main:"])
            .is_ok_and(|t| t.lines().any(|l| l == "3000"))
    });
    assert!(printed, "the pane never printed its 3,000 lines");
    // The helper's name in this binary: its module path without the crate
    // (`tmux_transport::helper_exit_with_replies_pending`).
    let path = concat!(module_path!(), "::helper_exit_with_replies_pending");
    let name = path.split_once("::").map_or(path, |(_, name)| name);
    let helper = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--ignored", "--exact", name, "--nocapture"])
        .env("PANESCAN_TEST_SOCKET", server.socket_path().unwrap())
        .output()
        .unwrap();
    assert!(helper.status.success());
    // A name that matches nothing would run no helper and pass.
    let said = String::from_utf8_lossy(&helper.stdout);
    assert!(
        said.contains("running 1 test"),
        "the helper did not run: {said}"
    );
    let start = Instant::now();
    loop {
        let clients = server.run_ok(["list-clients"]).unwrap();
        if clients.is_empty() {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "a control client stayed attached after its owner died: {clients}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Fair sharing, by order rather than time: with eight deep sweeps running
/// on one server, a listing and a one-pane capture (by a process and over
/// the control client) started once every sweep
/// has delivered its first pane both complete before half of the sweeps
/// have delivered their last one. (Without the gate, each sweep puts its whole remaining
/// range into tmux at once and the cheap calls wait behind all of it.)
#[test]
fn cheap_calls_pass_eight_deep_sweeps() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    const SWEEPS: usize = 8;
    let server = PrivateServer::start("fair8", 80, 10).unwrap();
    server
        .run_ok(["set-option", "-g", "history-limit", "5000"])
        .unwrap();
    add_panes(&server, 39, 3_000);
    let tmux = connect(&server);
    let ids = pane_ids(&server);
    // One sequence orders every completion below.
    let seq = Arc::new(AtomicUsize::new(0));
    let (started_tx, started_rx) = crossbeam_channel::unbounded();
    let sweeps: Vec<_> = (0..SWEEPS)
        .map(|_| {
            let reqs: Vec<CaptureRequest> = ids
                .iter()
                .map(|&pane| CaptureRequest {
                    pane,
                    range: CaptureRange::AllHistory,
                })
                .collect();
            let rx = tmux.capture(
                reqs,
                CaptureOptions::default(),
                Instant::now() + Duration::from_secs(120),
                Arc::new(AtomicBool::new(false)),
            );
            let (seq, started_tx, expected) = (seq.clone(), started_tx.clone(), ids.len());
            std::thread::spawn(move || {
                let mut n = 0;
                while let Ok(reply) = rx.recv_timeout(Duration::from_secs(120)) {
                    assert!(reply.result.is_ok(), "{:?}", reply.result);
                    n += 1;
                    if n == 1 {
                        let _ = started_tx.send(());
                    }
                }
                assert_eq!(n, expected, "every pane answered");
                seq.fetch_add(1, Ordering::SeqCst)
            })
        })
        .collect();
    for _ in 0..SWEEPS {
        started_rx.recv_timeout(Duration::from_secs(60)).unwrap();
    }
    let listed = tmux.inventory(Fields::Full, &[], soon()).unwrap().0;
    let listing_done = seq.fetch_add(1, Ordering::SeqCst);
    assert_eq!(listed.panes.len(), ids.len());
    let one = capture_all(
        &tmux,
        &ids[1..2],
        CaptureRange::Visible,
        CaptureOptions::default(),
    );
    let capture_done = seq.fetch_add(1, Ordering::SeqCst);
    assert!(one[0].result.is_ok());
    // The same capture over the control client (capture_pane's path).
    let small = collect(tmux.capture_small(
        vec![CaptureRequest {
            pane: ids[2],
            range: CaptureRange::Visible,
        }],
        CaptureOptions::default(),
        soon(),
        Arc::new(AtomicBool::new(false)),
    ));
    let small_done = seq.fetch_add(1, Ordering::SeqCst);
    assert!(small.len() == 1 && small[0].result.is_ok(), "{small:?}");
    let sweeps_done: Vec<usize> = sweeps.into_iter().map(|s| s.join().unwrap()).collect();
    // A sweep whose last chunk was already in tmux when the cheap calls
    // came may end first (seen: two of eight, on a loaded machine); behind
    // whole sweeps, they would come after nearly all of them.
    let mut ends = sweeps_done.clone();
    ends.sort_unstable();
    let half_ended = ends[SWEEPS / 2 - 1];
    assert!(
        listing_done < half_ended && capture_done < half_ended && small_done < half_ended,
        "listing #{listing_done}, capture #{capture_done}, over control #{small_done}, \
         sweeps ended #{sweeps_done:?}"
    );
}
