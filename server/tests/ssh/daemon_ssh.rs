//! `--ssh` sessions through the daemon, against the suite's own sshd
//! (tests/common/sshd.rs): the daemon holds the hosts and their master
//! connections, keyed by destination and options; a new session asking
//! for the same finds its master up (its first search needs no new ssh
//! connection: it works with sshd no longer listening), one asking with
//! other options never shares it, and the masters end with the daemon.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::time::{Duration, Instant};

use common::daemon::Place;
use common::eventually;
use common::sshd::{self, Alias, SshWorld};
use panescan::testing::private_server::PrivateServer;
use serde_json::json;

/// TCP connections to 127.0.0.1:`port` this machine holds open (client
/// side), from /proc/net/tcp.
fn connections_to(port: u16) -> usize {
    let table = std::fs::read_to_string("/proc/net/tcp").unwrap_or_default();
    table
        .lines()
        .skip(1)
        .filter(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let remote = f.get(2).and_then(|a| a.rsplit(':').next());
            let established = f.get(3) == Some(&"01");
            established && remote.and_then(|p| u16::from_str_radix(p, 16).ok()) == Some(port)
        })
        .count()
}

#[test]
fn a_new_sessions_first_search_over_ssh_uses_the_daemons_master() {
    sshd::require();
    let mut world = SshWorld::new("daemon");
    let n = world.start_sshd();
    let port = world.sshd(n).port;
    let tmux = PrivateServer::start("daemon-ssh", 80, 24).unwrap();
    sshd::show(&tmux, "alpha one\\nbeta two\\nalpha three");
    let config = world.client_config(&[Alias {
        name: "box",
        sshd: n,
        tmux_tmpdir: None,
        identity: None,
    }]);
    let place = Place::new("ssh");
    let cfg = config.to_str().unwrap();
    let flags = ["--ssh", "box", "--ssh-config", cfg];
    let search = json!({"socket_name": tmux.socket_name(), "pattern": "alpha", "host": "box"});

    let mut a = place.serve("a", tmux.socket_name(), &flags);
    a.initialize();
    let started = Instant::now();
    let first = a.call_ok("search_panes", search.clone());
    let cold = started.elapsed();
    assert_eq!(
        first["matches"][0]["lines"].as_array().unwrap().len(),
        2,
        "{first}"
    );
    drop(a);
    assert!(eventually(Duration::from_secs(10), || place.status()
        ["sessions"]
        == 0));
    assert_eq!(place.status()["ssh_hosts"], 1);
    // No new ssh connection can be made now: only the master is left.
    let listener = world.sshd(n).pid().unwrap();
    assert!(std::process::Command::new("kill")
        .args(["-TERM", &listener.to_string()])
        .status()
        .unwrap()
        .success());
    assert!(eventually(Duration::from_secs(10), || {
        std::net::TcpStream::connect(("127.0.0.1", port)).is_err()
    }));

    let mut b = place.serve("b", tmux.socket_name(), &flags);
    b.initialize();
    let started = Instant::now();
    let second = b.call_ok("search_panes", search.clone());
    let warm = started.elapsed();
    assert_eq!(first["matches"], second["matches"]);
    eprintln!(
        "a session's first search over ssh: cold daemon {} ms, new session through a warm daemon {} ms",
        cold.as_millis(),
        warm.as_millis()
    );
    for name in ["a", "b"] {
        let log = std::fs::read_to_string(place.log(name)).unwrap();
        assert!(!log.contains("in-process"), "{name}: {log}");
    }

    // Other options are another master, which needs a connection sshd no
    // longer takes: never the first session's.
    let mut other = flags.to_vec();
    other.push("--ssh-compress");
    let mut c = place.serve("c", tmux.socket_name(), &other);
    c.initialize();
    let r = c.call("search_panes", search.clone());
    let text = r.to_string();
    assert!(
        r["isError"] == true || text.contains("hosts_failed"),
        "a session with other options used the master: {text}"
    );
    assert_eq!(place.status()["ssh_hosts"], 2);
    assert_eq!(place.status()["sessions_served"], 3);
    drop((b, c));

    // The daemon's end closes the master.
    assert!(connections_to(port) >= 1);
    let _ = place.run(&["stop"]);
    assert!(place.wait_no_daemon(Duration::from_secs(10)));
    assert!(
        eventually(Duration::from_secs(10), || connections_to(port) == 0),
        "a master outlived the daemon"
    );
}
