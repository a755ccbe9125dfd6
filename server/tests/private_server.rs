//! The private tmux server every other test relies on: it starts on its own
//! socket and is gone after drop.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use panescan::tmux::private_server::PrivateServer;

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
