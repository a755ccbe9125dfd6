//! The private tmux server every other test relies on: it starts on its own
//! socket and is gone after drop.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use panescan::testing::private_server::PrivateServer;

#[test]
fn private_server_starts_and_is_killed_on_drop() {
    let server = PrivateServer::start("selftest", 80, 24).expect("tmux starts");
    let name = server.socket_name().to_owned();
    let pid = server.pid().expect("server pid");
    assert!(std::path::Path::new(&format!("/proc/{pid}")).exists());
    let sessions = server
        .run_ok(["list-sessions", "-F", "#{session_name}"])
        .expect("list");
    assert_eq!(sessions, "main\n");
    drop(server);
    let alive = std::process::Command::new("tmux")
        .args(["-L", &name, "list-sessions"])
        .output()
        .expect("tmux runs");
    assert!(
        !alive.status.success(),
        "server {name} still answers after drop"
    );
}

use panescan::testing::private_server::process_state as state;

/// Waits up to `limit` for `pid` to be in `want` state.
fn reaches(pid: u32, want: Option<char>, limit: Duration) -> bool {
    let until = std::time::Instant::now() + limit;
    while state(pid) != want {
        if std::time::Instant::now() >= until {
            return false;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    true
}

/// Drops `server` on another thread; whether that finished within `limit`
/// (a drop that blocks fails the test instead of hanging it).
fn dropped_within(server: PrivateServer, limit: Duration) -> bool {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        drop(server);
        let _ = tx.send(());
    });
    rx.recv_timeout(limit).is_ok()
}

#[test]
fn a_stopped_server_runs_again_when_its_guard_drops_even_on_panic() {
    let server = PrivateServer::start("selftest-stop", 80, 24).expect("tmux starts");
    let pid = server.pid().expect("server pid");
    let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let _stopped = server.stop().expect("stops");
        assert_eq!(state(pid), Some('T'), "SIGSTOP did not stop tmux");
        panic!("a test failing while tmux is stopped");
    }));
    assert!(panicked.is_err());
    assert_ne!(state(pid), Some('T'), "tmux left stopped after the panic");
    let sessions = server
        .run_ok(["list-sessions", "-F", "#{session_name}"])
        .expect("tmux answers again");
    assert_eq!(sessions, "main\n");
}

#[test]
fn a_server_stopped_behind_our_back_is_still_killed_on_drop() {
    let server = PrivateServer::start("selftest-stopped", 80, 24).expect("tmux starts");
    let pid = server.pid().expect("server pid");
    let socket = server.socket_path().expect("socket path");
    let stopped = std::process::Command::new("kill")
        .args(["-STOP", &pid.to_string()])
        .status()
        .expect("kill runs");
    assert!(stopped.success());
    assert!(
        reaches(pid, Some('T'), Duration::from_secs(10)),
        "never stopped"
    );
    // kill-server alone would wait forever for a stopped server.
    assert!(
        dropped_within(server, Duration::from_secs(30)),
        "dropping a stopped server blocked"
    );
    // Gone, or a zombie its new parent has not reaped yet: not running.
    let gone = |s: Option<char>| matches!(s, None | Some('Z'));
    assert!(
        gone(state(pid)),
        "tmux server {pid} still runs: {:?}",
        state(pid)
    );
    assert!(!socket.exists(), "socket {} left behind", socket.display());
}
