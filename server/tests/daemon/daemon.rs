//! `panescan serve` through the per-user daemon: one daemon for the
//! sessions of a runtime directory, shared pane cache, per-session tier,
//! lifecycle (start on demand, killed, SIGTERM, idle exit) and refusals
//! (another build, another user, a directory others may enter).
//!
//! Every test has a private tmux server and a private runtime directory
//! ([`common::daemon::Place`]), whose daemons are stopped on drop.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::net::UnixListener;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::daemon::{tmux_env, Place};
use common::Serve;
use panescan::testing::private_server::PrivateServer;
use serde_json::{json, Value};

fn tmux(label: &str) -> PrivateServer {
    PrivateServer::start(label, 80, 24).expect("private tmux server starts")
}

fn kill(pid: u64, signal: &str) {
    let ok = Command::new("kill")
        .args([&format!("-{signal}"), &pid.to_string()])
        .status()
        .unwrap()
        .success();
    assert!(ok, "kill -{signal} {pid}");
}

/// This process's uid, from /proc.
fn own_uid() -> u32 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Uid:"))
                .and_then(|r| r.split_whitespace().next().map(str::to_owned))
        })
        .and_then(|u| u.parse().ok())
        .unwrap_or(u32::MAX)
}

/// A child process killed when the test ends, also when it fails (a
/// relay left running would start a new daemon after the test's).
struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A tools/call sent without waiting: its id.
fn start_call(s: &mut Serve, tool: &str, args: Value) -> Value {
    let id = s.fresh_id();
    s.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                   "params": {"name": tool, "arguments": args}}));
    id
}

#[test]
fn two_serves_at_once_make_one_daemon_and_the_directory_is_private() {
    let tmux = tmux("daemon-two");
    let place = Place::new("two");
    // Four serves started at the same moment, none finding a daemon.
    let start = std::sync::Barrier::new(4);
    let mut serves: Vec<Serve> = std::thread::scope(|scope| {
        let started: Vec<_> = (0..4)
            .map(|n| {
                let (place, start, name) = (&place, &start, tmux.socket_name());
                scope.spawn(move || {
                    start.wait();
                    place.serve(&format!("s{n}"), name, &[])
                })
            })
            .collect();
        started.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for s in &mut serves {
        s.initialize();
        let panes = s.call_ok("list_panes", json!({}));
        assert_eq!(panes["panes"][0]["pane_id"], "%0");
    }
    assert_eq!(place.daemons().len(), 1, "daemons: {:?}", place.daemons());
    let status = place.status();
    assert_eq!(status["sessions"], 4, "{status}");
    // One control client for every session.
    assert_eq!(status["tmux_servers"], 1, "{status}");
    assert!(status["rss_bytes"].as_u64().unwrap() > 0, "{status}");
    let dir = std::fs::symlink_metadata(place.dir()).unwrap();
    assert_eq!(dir.mode() & 0o777, 0o700);
    let sock = std::fs::symlink_metadata(place.dir().join("panescan.sock")).unwrap();
    assert_eq!(sock.mode() & 0o777, 0o600);
    assert_eq!(sock.mode() & 0o170000, 0o140000, "not a socket");
}

#[test]
fn a_directory_others_may_enter_is_refused_and_serve_answers_in_process() {
    let tmux = tmux("daemon-open-dir");
    let place = Place::new("open-dir");
    std::fs::create_dir(place.dir()).unwrap();
    std::fs::set_permissions(place.dir(), std::fs::Permissions::from_mode(0o755)).unwrap();
    // (Bounded: a daemon that wrongly started leaves after a second.)
    let out = place.run(&["daemon", "--idle-exit", "1"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("mode 755"), "{err}");
    let mut s = place.serve("s", tmux.socket_name(), &[]);
    s.initialize();
    s.call_ok("list_panes", json!({}));
    assert!(place.daemons().is_empty());
    let log = std::fs::read_to_string(place.log("s")).unwrap();
    assert!(log.contains("serving in-process"), "{log}");
}

#[test]
fn a_second_sessions_first_search_is_served_from_the_shared_cache() {
    let tmux = tmux("daemon-warm");
    // Text that stays as it is: a second session finds it unchanged.
    tmux.run_ok(["new-window", "-d", "-n", "seq", "seq 1 500; sleep 1000"])
        .unwrap();
    assert!(common::eventually(Duration::from_secs(10), || {
        tmux.run_ok(["capture-pane", "-p", "-S", "-", "-t", "seq"])
            .is_ok_and(|text| text.contains("500"))
    }));
    let place = Place::new("warm");
    let pane = tmux
        .run_ok(["display-message", "-p", "-t", "seq", "#{pane_id}"])
        .unwrap();
    let search = json!({"pattern": "437", "scrollback_lines": 2000, "pane_ids": [pane.trim()]});
    let mut a = place.serve("a", tmux.socket_name(), &[]);
    a.initialize();
    let first = a.call_ok("search_panes", search.clone());
    drop(a);
    let cold = place.status();
    let fetched = cold["cache_full"].as_u64().unwrap() + cold["cache_delta"].as_u64().unwrap();
    assert!(fetched >= 1, "{cold}");
    let mut b = place.serve("b", tmux.socket_name(), &[]);
    b.initialize();
    let second = b.call_ok("search_panes", search);
    assert_eq!(first["matches"], second["matches"]);
    let warm = place.status();
    assert_eq!(warm["sessions_served"], 2, "{warm}");
    // Served from what the first session fetched: no pane fetched whole
    // again; it was found unchanged, or brought up to date by its new
    // rows (none) where tmux's one-second activity clock cannot tell.
    assert_eq!(warm["cache_full"], cold["cache_full"], "{cold} then {warm}");
    let served =
        |s: &Value| s["cache_reused"].as_u64().unwrap() + s["cache_delta"].as_u64().unwrap();
    assert!(served(&warm) > served(&cold), "{cold} then {warm}");
}

#[test]
fn the_tier_is_per_session() {
    let tmux = tmux("daemon-tier");
    let place = Place::new("tier");
    let mut mutating = place.serve("m", tmux.socket_name(), &["--tier", "mutating"]);
    let mut readonly = place.serve("r", tmux.socket_name(), &[]);
    mutating.initialize();
    readonly.initialize();
    let names = |s: &mut Serve| -> Vec<String> {
        let r = s.request_bare("tools/list");
        r["result"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_owned())
            .collect()
    };
    assert!(names(&mut mutating).contains(&"send_keys".to_owned()));
    assert!(!names(&mut readonly).contains(&"send_keys".to_owned()));
    let r = readonly.request(
        "tools/call",
        json!({"name": "send_keys", "arguments": {"pane_id": "%0", "keys": ["x"]}}),
    );
    let msg = r["error"]["message"].as_str().unwrap_or_default();
    assert!(msg.contains("needs tier mutating"), "{r}");
    assert_eq!(place.status()["sessions"], 2);
    assert_eq!(place.daemons().len(), 1);
}

#[test]
fn a_daemon_killed_during_a_call_answers_it_with_an_error_and_the_next_request_starts_another() {
    let tmux = tmux("daemon-killed");
    let place = Place::new("killed");
    let mut s = place.serve("s", tmux.socket_name(), &[]);
    s.initialize();
    let first = place.status()["pid"].as_u64().unwrap();
    let id = start_call(
        &mut s,
        "wait_for_text",
        json!({"pane_id": "%0", "pattern": "never printed", "timeout_ms": 60000}),
    );
    std::thread::sleep(Duration::from_millis(300));
    kill(first, "KILL");
    let r = s.response(&id, Duration::from_secs(10));
    let msg = r["error"]["message"].as_str().unwrap_or_default();
    assert!(msg.contains("daemon went away"), "{r}");
    // The same client goes on: a new daemon replaces the stale socket.
    assert_eq!(s.request_bare("ping")["result"], json!({}));
    s.call_ok("list_panes", json!({}));
    let second = place.status()["pid"].as_u64().unwrap();
    assert_ne!(first, second);
    assert!(
        place.daemon_log().contains("replaced the stale socket"),
        "{}",
        place.daemon_log()
    );
}

/// `--ask-timeout` and the audit options tune a session's own trust
/// settings; relayed to the daemon they change nothing, and serve says so.
#[test]
fn trust_flags_the_daemon_overrides_are_named_on_stderr() {
    let tmux = tmux("daemon-trust-flags");
    let place = Place::new("trust-flags");
    let mut s = place.serve("s", tmux.socket_name(), &["--ask-timeout", "5"]);
    s.initialize();
    s.call_ok("list_panes", json!({}));
    assert_eq!(place.daemons().len(), 1, "relayed to a daemon");
    let log = std::fs::read_to_string(place.log("s")).unwrap();
    assert!(log.contains("--ask-timeout change nothing here"), "{log}");
    let mut quiet = place.serve("q", tmux.socket_name(), &[]);
    quiet.initialize();
    let log = std::fs::read_to_string(place.log("q")).unwrap();
    assert!(!log.contains("change nothing"), "{log}");
}

#[test]
fn a_daemon_of_another_build_is_not_used() {
    let tmux = tmux("daemon-build");
    let place = Place::new("build");
    std::fs::create_dir(place.dir()).unwrap();
    std::fs::set_permissions(place.dir(), std::fs::Permissions::from_mode(0o700)).unwrap();
    // A daemon of another build at the shared socket: says hello, and
    // reports every line it is sent.
    let listener = UnixListener::bind(place.dir().join("panescan.sock")).unwrap();
    let (seen_tx, seen_rx) = crossbeam_channel::unbounded::<String>();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut w = stream.try_clone().unwrap();
            let _ = writeln!(
                w,
                r#"{{"panescan_daemon":"0.0.1","build":"000000000000","pid":1}}"#
            );
            let seen_tx = seen_tx.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(stream).lines().map_while(Result::ok) {
                    let _ = seen_tx.send(line);
                }
            });
        }
    });
    let mut s = place.serve("s", tmux.socket_name(), &[]);
    s.initialize();
    s.call_ok("list_panes", json!({}));
    let status = place.status();
    let socket = status["socket"].as_str().unwrap();
    assert!(socket.ends_with(&format!(
        "panescan-{}.sock",
        status["build"].as_str().unwrap()
    )));
    assert_eq!(place.daemons().len(), 1);
    let log = std::fs::read_to_string(place.log("s")).unwrap();
    assert!(log.contains("not this build"), "{log}");
    let said: Vec<String> = seen_rx.try_iter().collect();
    assert!(said.is_empty(), "the other build was told {said:?}");
}

#[test]
fn another_user_is_refused_before_a_byte_is_read() {
    // Running a client as nobody takes root (CI runs as root). Without it
    // the test fails rather than pass unrun, as the ssh tests do without
    // sshd.
    assert_eq!(
        own_uid(),
        0,
        "needs root to run a client as another user (setpriv --reuid=nobody)"
    );
    let tmux = tmux("daemon-user");
    let place = Place::new("user");
    let mut s = place.serve("s", tmux.socket_name(), &[]);
    s.initialize();
    let pid = place.status()["pid"].as_u64().unwrap();
    // Open the door by mistake: only the uid check is left.
    let open = |path: &std::path::Path, mode| {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap()
    };
    open(&place.temp_root(), 0o711);
    open(&place.dir(), 0o711);
    open(&place.dir().join("panescan.sock"), 0o666);
    let out = Command::new("setpriv")
        .args(["--reuid=nobody", "--regid=nogroup", "--clear-groups"])
        .arg(env!("CARGO_BIN_EXE_panescan"))
        .args(["stop", "--runtime-dir"])
        .arg(place.dir())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "nobody stopped the daemon: {err}");
    assert!(err.contains("no daemon of this build answers"), "{err}");
    let log = place.daemon_log();
    assert!(log.contains("refused a connection of uid 65534"), "{log}");
    // Still there, still serving its own user.
    assert_eq!(place.status()["pid"].as_u64().unwrap(), pid);
    s.call_ok("list_panes", json!({}));
}

#[test]
fn a_session_that_stops_reading_does_not_hold_up_another() {
    let tmux = tmux("daemon-slow");
    let place = Place::new("slow");
    let mut quick = place.serve("quick", tmux.socket_name(), &[]);
    quick.initialize();
    // A client that writes and never reads: its answers fill its socket,
    // its queue, then its calls wait.
    let mut stuck = KillOnDrop(
        Command::new(env!("CARGO_BIN_EXE_panescan"))
            .args(["serve", "--socket-name", tmux.socket_name()])
            .env("PANESCAN_RUNTIME_DIR", place.dir())
            .env_remove("PANESCAN_NO_DAEMON")
            .env_remove("TMUX")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let mut stuck_in = stuck.0.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        for id in 0..20_000 {
            let line = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/list"}}"#);
            if writeln!(stuck_in, "{line}").is_err() {
                return;
            }
        }
    });
    assert!(common::eventually(Duration::from_secs(10), || place
        .status()["sessions"]
        == 2));
    std::thread::sleep(Duration::from_millis(500));
    for _ in 0..5 {
        let started = Instant::now();
        quick.call_ok("list_panes", json!({}));
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "a call took {:?} while another session did not read",
            started.elapsed()
        );
    }
    assert!(
        !writer.is_finished(),
        "the stuck client was never held back"
    );
    drop(stuck);
    let _ = writer.join();
}

#[test]
fn sigterm_during_a_deep_search_answers_the_calls_and_removes_the_socket() {
    let tmux = tmux("daemon-term");
    tmux.run_ok(["set", "-g", "history-limit", "50000"])
        .unwrap();
    for _ in 0..6 {
        tmux.run_ok(["new-window", "-d", "seq 1 40000; sleep 1000"])
            .unwrap();
    }
    std::thread::sleep(Duration::from_millis(800));
    let place = Place::new("term");
    let mut s = place.serve("s", tmux.socket_name(), &[]);
    s.initialize();
    let pid = place.status()["pid"].as_u64().unwrap();
    let wait = start_call(
        &mut s,
        "wait_for_text",
        json!({"pane_id": "%0", "pattern": "never printed", "timeout_ms": 60000}),
    );
    let search = start_call(
        &mut s,
        "search_panes",
        json!({"pattern": "never printed", "scrollback_lines": 50000}),
    );
    std::thread::sleep(Duration::from_millis(100));
    kill(pid, "TERM");
    for id in [&wait, &search] {
        let r = s.response(id, Duration::from_secs(10));
        // Answered by the daemon (a result, or its shutdown error), never
        // the relay's "went away".
        let text = r.to_string();
        assert!(!text.contains("daemon went away"), "{text}");
    }
    assert!(place.wait_no_daemon(Duration::from_secs(10)));
    assert!(!place.dir().join("panescan.sock").exists());
}

#[test]
fn an_idle_daemon_exits_and_a_busy_one_stays() {
    let tmux = tmux("daemon-idle");
    let place = Place::new("idle");
    let mut daemon = place.start_daemon(&["--idle-exit", "1"]);
    let mut s = place.serve("s", tmux.socket_name(), &[]);
    s.initialize();
    std::thread::sleep(Duration::from_millis(2500));
    assert!(
        daemon.try_wait().unwrap().is_none(),
        "exited with a session open"
    );
    s.call_ok("list_panes", json!({}));
    drop(s);
    let until = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(status) = daemon.try_wait().unwrap() {
            break status;
        }
        assert!(Instant::now() < until, "still running after its idle time");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success(), "{status}");
    assert!(!place.dir().join("panescan.sock").exists());
}

#[test]
fn past_max_sessions_serve_answers_in_process() {
    let tmux = tmux("daemon-max");
    let place = Place::new("max");
    let mut daemon = place.start_daemon(&["--max-sessions", "1"]);
    let mut a = place.serve("a", tmux.socket_name(), &[]);
    a.initialize();
    let mut b = place.serve("b", tmux.socket_name(), &[]);
    b.initialize();
    b.call_ok("list_panes", json!({}));
    let log = std::fs::read_to_string(place.log("b")).unwrap();
    assert!(log.contains("--max-sessions"), "{log}");
    assert_eq!(place.status()["sessions"], 1);
    let _ = daemon.kill();
    let _ = daemon.wait();
}

/// The same lines, answered in-process and through the daemon: the same
/// answers (as JSON), and serve ends at end of input with status 0.
#[test]
fn the_protocol_is_the_same_through_the_daemon_as_in_process() {
    let tmux = tmux("daemon-protocol");
    let place = Place::new("protocol");
    let lines = [
        r#"{"jsonrpc":"2.0","id":"a","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}"#.to_owned(),
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.to_owned(),
        r#"{"jsonrpc":"2.0","id":1.5,"method":"ping"}"#.to_owned(),
        r#"{"jsonrpc":"2.0","id":2,"method":"no/such"}"#.to_owned(),
        "{not json".to_owned(),
        r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"list_sessions","arguments":{}}}"#.to_owned(),
        r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"kill_server","arguments":{}}}"#.to_owned(),
        format!(
            r#"{{"jsonrpc":"2.0","id":5,"method":"ping","params":{{"x":"{}"}}}}"#,
            "x".repeat(5 * 1024 * 1024)
        ),
        r#"{"jsonrpc":"2.0","id":6,"method":"server/discover"}"#.to_owned(),
    ];
    let answers = |mut s: Serve| -> Vec<Value> {
        for line in &lines {
            s.send_raw(line);
        }
        let mut got = s.drain(Duration::from_secs(3));
        s.close_stdin();
        let status = s.wait_exit(Duration::from_secs(10)).expect("serve ends");
        assert!(status.success(), "{status}");
        // Answers of calls that run on threads may come in any order.
        got.sort_by_key(|v| (v["id"].to_string(), v.to_string()));
        got
    };
    let here = answers(Serve::spawn_with(
        &["serve", "--socket-name", tmux.socket_name(), "--no-daemon"],
        &[],
    ));
    let there = answers(place.serve("s", tmux.socket_name(), &[]));
    assert_eq!(here.len(), 8, "{here:#?}");
    assert_eq!(here, there);
    assert_eq!(place.daemons().len(), 1);
}

#[test]
fn sixteen_sessions_searching_at_once_share_one_control_client() {
    let tmux = tmux("daemon-sixteen");
    for n in 0..8 {
        tmux.run_ok([
            "new-window",
            "-d",
            &format!("seq -f 'w{n} line %g' 1 300; sleep 1000"),
        ])
        .unwrap();
    }
    std::thread::sleep(Duration::from_millis(500));
    let place = Place::new("sixteen");
    let mut serves: Vec<Serve> = (0..16)
        .map(|n| place.serve(&format!("s{n}"), tmux.socket_name(), &[]))
        .collect();
    let search = json!({"pattern": "line 277", "scrollback_lines": 1000});
    let ids: Vec<Value> = serves
        .iter_mut()
        .map(|s| start_call(s, "search_panes", search.clone()))
        .collect();
    let mut found = Vec::new();
    for (s, id) in serves.iter_mut().zip(&ids) {
        let r = s.response(id, Duration::from_secs(30));
        assert_eq!(r["result"]["isError"], false, "{r}");
        let mut hits: Vec<String> = r["result"]["structuredContent"]["matches"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|m| m["lines"].as_array().unwrap().iter())
            .map(|l| l["text"].as_str().unwrap().to_owned())
            .collect();
        hits.sort();
        found.push(hits);
    }
    let want: Vec<String> = {
        let mut w: Vec<String> = (0..8).map(|n| format!("w{n} line 277")).collect();
        w.sort();
        w
    };
    for hits in &found {
        assert_eq!(hits, &want);
    }
    assert_eq!(place.status()["sessions"], 16);
    let clients = tmux
        .run_ok(["list-clients", "-F", "#{client_flags}"])
        .unwrap();
    let control = clients
        .lines()
        .filter(|l| l.contains("control-mode"))
        .count();
    assert_eq!(control, 1, "clients: {clients}");
}

/// Threads of `pid` named `name`.
fn threads_named(pid: u64, name: &str) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .into_iter()
        .flatten()
        .flatten()
        .filter(|t| std::fs::read_to_string(t.path().join("comm")).is_ok_and(|c| c.trim() == name))
        .count()
}

#[test]
fn a_sessions_commands_are_its_own_and_their_watching_ends_with_it() {
    let tmux = tmux("daemon-run");
    common::plain_shell(&tmux, "main:0.0");
    assert!(common::eventually(Duration::from_secs(10), || {
        tmux.run_ok(["capture-pane", "-p", "-t", "main:0.0"])
            .is_ok_and(|t| t.contains('$'))
    }));
    let place = Place::new("run");
    let mut a = place.serve("a", tmux.socket_name(), &["--tier", "mutating"]);
    let mut b = place.serve("b", tmux.socket_name(), &["--tier", "mutating"]);
    a.initialize();
    b.initialize();
    let r = a.call_ok(
        "run_command",
        json!({"pane_id": "%0", "command": "sleep 100", "timeout_ms": 300}),
    );
    let id = r["command_id"].as_str().unwrap().to_owned();
    let pid = place.status()["pid"].as_u64().unwrap();
    assert_eq!(threads_named(pid, "run-command-wat"), 1);
    // Another session cannot wait on it.
    let e = b.call_err(
        "wait_for_command",
        json!({"command_id": id, "timeout_ms": 200}),
    );
    assert!(e.contains("no command"), "{e}");
    // Its session ends: its command is no longer watched.
    drop(a);
    assert!(
        common::eventually(Duration::from_secs(10), || threads_named(
            pid,
            "run-command-wat"
        ) == 0),
        "the command is still watched after its session ended"
    );
    b.call_ok("send_keys", json!({"pane_id": "%0", "keys": ["C-c"]}));
}

#[test]
fn a_new_session_gets_the_variables_of_its_serve_not_the_daemons() {
    let tmux = tmux("daemon-env");
    tmux.run_ok(["set-option", "-ga", "update-environment", "DAEMON_PASSED"])
        .unwrap();
    let place = Place::new("env");
    // The daemon is started on its own, without the variable.
    let mut daemon = place.start_daemon(&[]);
    let mut s = place.serve_with_env(
        "s",
        tmux.socket_name(),
        &["--tier", "mutating", "--pass-env", "DAEMON_PASSED"],
        &[("DAEMON_PASSED", "from-serve")],
    );
    s.initialize();
    s.call_ok(
        "create_session",
        json!({"name": "env", "command": "exec sleep 60"}),
    );
    let env = tmux.run_ok(["show-environment", "-t", "env"]).unwrap();
    assert!(
        env.lines().any(|l| l == "DAEMON_PASSED=from-serve"),
        "the new session's environment: {env}"
    );
    // Served by the daemon, not in-process beside it.
    assert_eq!(place.status()["sessions_served"], json!(1));
    drop(s);
    let _ = daemon.kill();
    let _ = daemon.wait();
}

/// `is_caller` of every pane `list_panes` shows, by pane id.
fn callers(s: &mut Serve) -> Vec<(String, Value)> {
    let panes = s.call_ok("list_panes", json!({}));
    panes["panes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["pane_id"].as_str().unwrap().to_owned(),
                p["is_caller"].clone(),
            )
        })
        .collect()
}

#[test]
fn is_caller_is_each_sessions_own_client_pane() {
    let tmux = tmux("daemon-caller");
    tmux.run_ok(["split-window", "-d", "-t", "main"]).unwrap();
    let place = Place::new("caller");
    let env = tmux_env(&tmux);
    // Two clients in two panes of one server; one mutating (served by the
    // daemon now, not in-process).
    let mut a = place.serve_with_env(
        "a",
        tmux.socket_name(),
        &["--tier", "mutating"],
        &[("TMUX", &env), ("TMUX_PANE", "%0")],
    );
    let mut b = place.serve_with_env(
        "b",
        tmux.socket_name(),
        &[],
        &[("TMUX", &env), ("TMUX_PANE", "%1")],
    );
    let mut outside = place.serve("c", tmux.socket_name(), &[]);
    for s in [&mut a, &mut b, &mut outside] {
        s.initialize();
    }
    for _ in 0..2 {
        assert_eq!(
            callers(&mut a),
            [("%0".into(), json!(true)), ("%1".into(), json!(false))]
        );
        assert_eq!(
            callers(&mut b),
            [("%0".into(), json!(false)), ("%1".into(), json!(true))]
        );
        // Not inside tmux: not reported.
        assert_eq!(
            callers(&mut outside),
            [("%0".into(), Value::Null), ("%1".into(), Value::Null)]
        );
    }
    let hit = b.call_ok("search_panes", json!({"pattern": "\\$|#|%"}));
    for m in hit["matches"].as_array().unwrap() {
        assert_eq!(m["is_caller"] == json!(true), m["pane_id"] == "%1", "{m}");
    }
    let status = place.status();
    assert_eq!(status["sessions"], 3, "{status}");
    assert_eq!(place.daemons().len(), 1);
    let log = std::fs::read_to_string(place.log("a")).unwrap();
    assert!(!log.contains("in-process"), "{log}");
}

#[test]
fn a_daemon_session_refuses_to_kill_its_clients_own_pane_and_server() {
    let tmux = tmux("daemon-own");
    tmux.run_ok(["split-window", "-d", "-t", "main"]).unwrap();
    let place = Place::new("own");
    let env = tmux_env(&tmux);
    let mut s = place.serve_with_env(
        "s",
        tmux.socket_name(),
        &["--tier", "destructive"],
        &[("TMUX", &env), ("TMUX_PANE", "%0")],
    );
    s.initialize();
    let e = s.call_err("kill_pane", json!({"pane_id": "%0"}));
    assert!(e.contains("refused") && e.contains("%0"), "{e}");
    let e = s.call_err("kill_session", json!({"session_id": "$0"}));
    assert!(e.contains("refused"), "{e}");
    let e = s.call_err("kill_server", json!({"confirm": true}));
    assert!(e.contains("refused"), "{e}");
    let v = s.call_ok("kill_pane", json!({"pane_id": "%1"}));
    assert_eq!(v["killed"], "%1");
    assert_eq!(place.status()["sessions"], 1);
    let log = std::fs::read_to_string(place.log("s")).unwrap();
    assert!(!log.contains("in-process"), "{log}");
}
