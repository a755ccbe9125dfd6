//! The tmux transport against private tmux servers (killed on drop, also
//! when a test fails).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

use panescan::tmux::private_server::PrivateServer;
use panescan::tmux::{
    CaptureOptions, CaptureRange, CaptureReply, CaptureRequest, PaneId, ServerSpec, Target, Tmux,
    TmuxCommand, TmuxError,
};

fn soon() -> Instant {
    Instant::now() + Duration::from_secs(20)
}

fn connect(server: &PrivateServer) -> Tmux {
    Tmux::connect(&ServerSpec {
        socket_name: None,
        socket_path: Some(server.socket_path().unwrap()),
    })
    .unwrap()
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
    server
        .run_ok([
            "new-window",
            "-d",
            "-t",
            "main:",
            "-n",
            "%end 1 2 1",
            &format!("sh {}", path.display()),
        ])
        .unwrap();
    wait_printed(&server);
    let tmux = connect(&server);
    let forger = *pane_ids(&server).last().unwrap();
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
    let inv = tmux.inventory(soon()).unwrap();
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
    let replies = capture_all(
        &tmux,
        &ids,
        CaptureRange::Visible,
        CaptureOptions::default(),
    );
    assert!(replies[0].result.is_ok() && replies[1].result.is_ok() && replies[3].result.is_ok());
    assert!(
        matches!(replies[2].result, Err(TmuxError::NotFound(_))),
        "{:?}",
        replies[2].result
    );
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
