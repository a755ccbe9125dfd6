//! What a tool argument may reach, and what a tmux client carries there.
//!
//! A tmux client sends its identify messages, the whole environment among
//! them, to whatever listens on the socket it is given. These tests put a
//! unix socket listener that is not tmux where a call might send a client
//! (a path outside, symlinks inside the tmux directory, names that climb
//! out), require that none connects to it, that the user's own tmux sockets
//! still answer by name and by path, and that panescan's environment reaches
//! no tmux server: not a fake one that records what clients send, not a real
//! one's session environment, not any tmux process panescan starts.
//!
//! Every test owns its `TMUX_TMPDIR` (a temp dir), so nothing here looks at
//! the real `/tmp/tmux-UID`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::io::{ErrorKind, Read};
use std::os::unix::fs::{symlink, MetadataExt, PermissionsExt};
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::time::Duration;

use common::{eventually, Serve, TempDir};
use panescan::testing::private_server::PrivateServer;
use serde_json::{json, Value};

/// The tmux socket directory under `tmux_tmpdir`, as tmux names it.
fn tmux_dir(tmux_tmpdir: &Path) -> PathBuf {
    let uid = std::fs::metadata(tmux_tmpdir).unwrap().uid();
    tmux_tmpdir.join(format!("tmux-{uid}"))
}

fn text(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// `panescan serve` on `server`, with `TMUX_TMPDIR` and more.
fn serve(server: &PrivateServer, tmux_tmpdir: &Path, args: &[&str], env: &[(&str, &str)]) -> Serve {
    let mut argv = vec!["serve", "--socket-name", server.socket_name()];
    argv.extend_from_slice(args);
    let mut envs = vec![("TMUX_TMPDIR", text(tmux_tmpdir))];
    envs.extend_from_slice(env);
    let mut s = Serve::spawn_with(&argv, &envs);
    s.initialize();
    s
}

/// A unix socket listener that is not tmux: it never accepts, so whatever
/// connects stays in its backlog where [`Bait::connections`] finds it.
struct Bait {
    listener: UnixListener,
}

impl Bait {
    fn bind(path: &Path) -> Bait {
        let listener = UnixListener::bind(path).unwrap();
        listener.set_nonblocking(true).unwrap();
        Bait { listener }
    }

    fn connections(&self) -> usize {
        let mut n = 0;
        loop {
            match self.listener.accept() {
                Ok(_) => n += 1,
                Err(e) if e.kind() == ErrorKind::WouldBlock => return n,
                Err(e) => panic!("accept: {e}"),
            }
        }
    }
}

/// Every tool, each aimed at the server `at` names (merged into its
/// arguments), with what it needs besides.
fn every_tool_at(at: &Value) -> Vec<(&'static str, Value)> {
    let calls = [
        ("search_panes", json!({"pattern": "x"})),
        ("list_sessions", json!({})),
        ("list_windows", json!({})),
        ("list_panes", json!({})),
        ("get_server_info", json!({})),
        ("get_session_info", json!({"session_id": "$0"})),
        ("get_window_info", json!({"window_id": "@0"})),
        ("get_pane_info", json!({"pane_id": "%0"})),
        (
            "find_pane_by_position",
            json!({"window_id": "@0", "position": "top-left"}),
        ),
        ("capture_pane", json!({"pane_id": "%0"})),
        ("capture_since", json!({"pane_id": "%0"})),
        ("snapshot_pane", json!({"pane_id": "%0"})),
        ("get_tmux_variables", json!({"names": ["pane_id"]})),
        ("show_option", json!({"name": "status"})),
        ("show_environment", json!({})),
        ("show_hooks", json!({})),
        ("display_message", json!({"format": "x"})),
        (
            "wait_for_text",
            json!({"pane_id": "%0", "pattern": "x", "timeout_ms": 100}),
        ),
        ("watch_panes", json!({"pattern": "x", "timeout_ms": 100})),
        (
            "call_read_tools_batch",
            json!({"operations": [{"tool": "list_panes"}]}),
        ),
        ("send_keys", json!({"pane_id": "%0", "text": "x"})),
        ("rename_window", json!({"window_id": "@0", "name": "x"})),
        ("set_pane_title", json!({"pane_id": "%0", "title": "x"})),
        ("kill_pane", json!({"pane_id": "%0"})),
        ("kill_window", json!({"window_id": "@0"})),
        ("kill_session", json!({"session_id": "$0"})),
        ("set_option", json!({"name": "@x", "value": "x"})),
        ("set_environment", json!({"name": "X", "value": "x"})),
        (
            "wait_for_channel",
            json!({"channel": "x", "timeout_ms": 100}),
        ),
        ("signal_channel", json!({"channel": "x"})),
        ("respawn_pane", json!({"pane_id": "%0", "kill": true})),
        ("kill_server", json!({"confirm": true})),
        ("create_session", json!({"name": "x"})),
        ("create_window", json!({"session": "main"})),
        (
            "split_window",
            json!({"pane_id": "%0", "direction": "vertical"}),
        ),
        ("select_pane", json!({"pane_id": "%0"})),
        ("select_window", json!({"window_id": "@0"})),
        ("resize_pane", json!({"pane_id": "%0", "width": 10})),
        ("rename_session", json!({"session": "main", "name": "y"})),
        ("move_window", json!({"window_id": "@0", "session": "main"})),
        (
            "swap_pane",
            json!({"pane_id": "%0", "target_pane_id": "%1"}),
        ),
        ("paste_text", json!({"pane_id": "%0", "text": "x"})),
        ("clear_history", json!({"pane_id": "%0"})),
        ("pipe_pane", json!({"pane_id": "%0"})),
        ("show_buffer", json!({})),
        (
            "run_command",
            json!({"pane_id": "%0", "command": "true", "timeout_ms": 100}),
        ),
        ("list_commands", json!({})),
        (
            "get_command_output",
            json!({"command_id": "0123456789abcdef"}),
        ),
    ];
    calls
        .into_iter()
        .map(|(tool, mut args)| {
            for (k, v) in at.as_object().unwrap() {
                args[k] = v.clone();
            }
            (tool, args)
        })
        .collect()
}

#[test]
fn a_listener_that_is_not_tmux_gets_no_connection_from_any_tool_argument() {
    let home = TempDir::new("sk-h");
    let outside = TempDir::new("sk-o");
    let tmux = PrivateServer::start_under("sk-r", 80, 24, Some(&home.0)).unwrap();
    let dir = tmux_dir(&home.0);
    let bait_path = outside.0.join("listener");
    let bait = Bait::bind(&bait_path);
    symlink(&bait_path, dir.join("evil")).unwrap();
    symlink(&outside.0, dir.join("evil-dir")).unwrap();
    let outside_name = outside.0.file_name().unwrap().to_str().unwrap();
    let climb = format!("{}/../{outside_name}/listener", home.0.display());
    let logs = TempDir::new("sk-l");
    let log_dir = text(&logs.0);
    let mut s = serve(
        &tmux,
        &home.0,
        &["--tier", "destructive", "--log-dir", log_dir],
        &[],
    );

    let aims = [
        json!({"socket_path": text(&bait_path)}),
        json!({"socket_path": dir.join("evil")}),
        json!({"socket_name": "evil"}),
        json!({"socket_path": dir.join("evil-dir/listener")}),
        json!({"socket_path": climb}),
        json!({"socket_name": ".."}),
        json!({"socket_name": ""}),
        json!({"socket_name": format!("../../{outside_name}/listener")}),
        json!({"socket_name": "evil-dir/listener"}),
        json!({"socket_name": "panescan-x", "socket_path": text(&bait_path)}),
    ];
    // Every tool that takes a socket is aimed, the ones added later too.
    let listed = s.request_bare("tools/list");
    let mut takes_socket: Vec<&str> = listed["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["inputSchema"]["properties"].get("socket_path").is_some())
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    let mut aimed: Vec<&str> = every_tool_at(&json!({})).iter().map(|c| c.0).collect();
    takes_socket.sort_unstable();
    aimed.sort_unstable();
    assert_eq!(aimed, takes_socket, "tools aimed at the listener");
    let mut refused = 0;
    for at in &aims {
        for (tool, args) in every_tool_at(at) {
            let e = s.call_err(tool, args.clone());
            assert!(
                e.contains("refused") && e.contains("--allow-socket-dir"),
                "{tool} {args}: {e}"
            );
            refused += 1;
        }
    }
    // A batch's operation naming the socket itself fails alone, refused.
    let v = s.call_ok(
        "call_read_tools_batch",
        json!({"on_error": "continue", "operations": [
            {"tool": "list_panes"},
            {"tool": "get_server_info", "arguments": {"socket_path": text(&bait_path)}}]}),
    );
    assert_eq!(v["results"][0]["success"], true, "{v}");
    let e = v["results"][1]["error"].as_str().unwrap_or_default();
    assert!(e.contains("--allow-socket-dir"), "{v}");

    assert_eq!(bait.connections(), 0, "a tmux client reached the listener");
    eprintln!("{refused} calls refused, none reached the listener");
    // The served server is untouched and still answers.
    let v = s.call_ok("list_panes", json!({}));
    assert_eq!(v["total"], 1, "{v}");
}

#[test]
fn what_is_not_a_socket_of_this_user_is_refused_with_the_reason() {
    let home = TempDir::new("sk-k");
    let tmux = PrivateServer::start_under("sk-k", 80, 24, Some(&home.0)).unwrap();
    let dir = tmux_dir(&home.0);
    std::fs::write(dir.join("file"), b"").unwrap();
    std::fs::create_dir(dir.join("sub")).unwrap();
    let foreign = dir.join("foreign");
    let bait = Bait::bind(&foreign);
    // Only root can give a socket away; as anyone else that case is skipped.
    let given_away = std::os::unix::fs::chown(&foreign, Some(65534), Some(65534)).is_ok();
    let mut s = serve(&tmux, &home.0, &[], &[]);

    let e = s.call_err("list_panes", json!({"socket_name": "file"}));
    assert!(e.contains("not a socket (a regular file)"), "{e}");
    let e = s.call_err("list_panes", json!({"socket_path": dir.join("sub")}));
    assert!(e.contains("not a socket (a directory)"), "{e}");
    let e = s.call_err("list_panes", json!({"socket_path": "tmux-0/default"}));
    assert!(e.contains("absolute"), "{e}");
    // Nothing there, in the user's directory: no server, nothing refused.
    let e = s.call_err("list_panes", json!({"socket_name": "panescan-nobody-here"}));
    assert!(e.contains("no tmux server"), "{e}");
    // Nothing there, elsewhere: refused like any place outside (whether
    // something exists outside is not told).
    let e = s.call_err("list_panes", json!({"socket_path": "/nonexistent/sock"}));
    assert!(
        e.contains("outside") && e.contains("--allow-socket-dir"),
        "{e}"
    );
    if given_away {
        let e = s.call_err("list_panes", json!({"socket_name": "foreign"}));
        assert!(e.contains("owned by uid 65534"), "{e}");
        assert_eq!(bait.connections(), 0);
    } else {
        // reach.rs `a_socket_owned_by_another_user_is_refused_with_both_uids`
        // checks the refusal as any user, asked as another uid.
        eprintln!("not root: the socket owned by someone else was tried in reach.rs's unit test");
    }
}

#[test]
fn the_users_own_tmux_sockets_still_work_by_name_and_by_path() {
    let real = TempDir::new("sk-w");
    let links = TempDir::new("sk-l");
    // TMUX_TMPDIR through a symlink: tmux resolves it, and so must the check.
    let home = links.0.join("t");
    symlink(&real.0, &home).unwrap();
    let served = PrivateServer::start_under("sk-a", 80, 24, Some(&home)).unwrap();
    let other = PrivateServer::start_under("sk-b", 80, 24, Some(&home)).unwrap();
    other
        .run_ok([
            "respawn-pane",
            "-k",
            "-t",
            "main:0.0",
            "printf 'own-needle\\n'; exec sleep 600",
        ])
        .unwrap();
    let name = other.socket_name();
    let pid = other.pid().unwrap();
    let dir = tmux_dir(&home);
    symlink(dir.join(name), dir.join("alias")).unwrap();
    let mut s = serve(&served, &home, &[], &[]);

    let v = s.call_ok("get_server_info", json!({}));
    assert_eq!(v["pid"], served.pid().unwrap(), "{v}");
    for at in [
        json!({"socket_name": name}),
        json!({"socket_path": dir.join(name)}),
        json!({"socket_path": tmux_dir(&real.0).join(name)}),
        json!({"socket_path": other.socket_path().unwrap()}),
        json!({"socket_name": "alias"}),
    ] {
        let v = s.call_ok("get_server_info", at.clone());
        assert_eq!(v["pid"], pid, "{at}: {v}");
    }
    let found = eventually(Duration::from_secs(10), || {
        let v = s.call_ok(
            "search_panes",
            json!({"pattern": "own-needle", "socket_path": dir.join(name)}),
        );
        v["total_panes_matched"] == 1
    });
    assert!(found, "search through the socket path found nothing");
    let v = s.call_ok(
        "capture_pane",
        json!({"pane_id": "%0", "socket_name": name}),
    );
    assert!(v["text"].as_str().unwrap().contains("own-needle"), "{v}");
    let v = s.call_ok(
        "call_read_tools_batch",
        json!({"socket_name": name, "operations": [{"tool": "get_server_info"}, {"tool": "list_panes"}]}),
    );
    assert_eq!(v["succeeded"], 2, "{v}");
    assert_eq!(v["results"][0]["result"]["pid"], pid, "{v}");
}

#[test]
fn an_allowed_directory_is_reachable_and_so_is_the_operators_server() {
    let home = TempDir::new("sk-h");
    let elsewhere = TempDir::new("sk-e");
    let served = PrivateServer::start_under("sk-a", 80, 24, Some(&home.0)).unwrap();
    let far = PrivateServer::start_under("sk-b", 80, 24, Some(&elsewhere.0)).unwrap();
    let far_path = far.socket_path().unwrap();
    let far_pid = far.pid().unwrap();
    let at = json!({"socket_path": far_path});

    let mut plain = serve(&served, &home.0, &[], &[]);
    let e = plain.call_err("get_server_info", at.clone());
    assert!(
        e.contains("outside") && e.contains("--allow-socket-dir"),
        "{e}"
    );

    let far_dir = tmux_dir(&elsewhere.0);
    let mut by_flag = serve(
        &served,
        &home.0,
        &["--allow-socket-dir", text(&far_dir)],
        &[],
    );
    assert_eq!(
        by_flag.call_ok("get_server_info", at.clone())["pid"],
        far_pid
    );
    // The variable takes several directories; a socket deeper inside one is
    // inside it.
    let dirs = format!("/nonexistent:{}", elsewhere.0.display());
    let mut by_env = serve(
        &served,
        &home.0,
        &[],
        &[("PANESCAN_ALLOW_SOCKET_DIR", &dirs)],
    );
    assert_eq!(
        by_env.call_ok("get_server_info", at.clone())["pid"],
        far_pid
    );

    // The operator's own server, outside every allowed directory: served,
    // and reachable by its path too.
    let mut s = Serve::spawn_with(
        &["serve", "--socket-path", text(&far_path)],
        &[("TMUX_TMPDIR", text(&home.0))],
    );
    s.initialize();
    assert_eq!(s.call_ok("get_server_info", json!({}))["pid"], far_pid);
    assert_eq!(s.call_ok("get_server_info", at)["pid"], far_pid);
}

/// A fake tmux server: records the bytes each client sends up to its
/// `MSG_IDENTIFY_DONE`, then hangs up (the client gives up at once).
struct FakeTmux {
    received: crossbeam_channel::Receiver<Vec<u8>>,
}

/// tmux's message types (tmux.h): identify messages from a client.
const MSG_IDENTIFY_ENVIRON: u32 = 105;
const MSG_IDENTIFY_DONE: u32 = 106;

impl FakeTmux {
    fn listen(path: &Path) -> FakeTmux {
        let listener = UnixListener::bind(path).unwrap();
        let (tx, received) = crossbeam_channel::unbounded();
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(mut conn) = conn else { return };
                conn.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
                let mut bytes = Vec::new();
                let mut buf = [0u8; 4096];
                while !messages(&bytes)
                    .iter()
                    .any(|(t, _)| *t == MSG_IDENTIFY_DONE)
                {
                    match conn.read(&mut buf) {
                        Ok(0) | Err(_) => break,
                        Ok(n) => bytes.extend_from_slice(&buf[..n]),
                    }
                }
                if tx.send(bytes).is_err() {
                    return;
                }
            }
        });
        FakeTmux { received }
    }
}

/// imsg framing: a 16-byte header (type u32, len u16 with the header, flags
/// u16, peer id u32, pid u32) and the payload; whole messages only.
fn messages(bytes: &[u8]) -> Vec<(u32, &[u8])> {
    let mut out = Vec::new();
    let mut rest = bytes;
    while rest.len() >= 16 {
        let kind = u32::from_ne_bytes(rest[0..4].try_into().unwrap());
        let len = usize::from(u16::from_ne_bytes(rest[4..6].try_into().unwrap()));
        if len < 16 || len > rest.len() {
            break;
        }
        out.push((kind, &rest[16..len]));
        rest = &rest[len..];
    }
    out
}

/// The variables in a client's identify messages.
fn environ_of(bytes: &[u8]) -> Vec<String> {
    messages(bytes)
        .into_iter()
        .filter(|(t, _)| *t == MSG_IDENTIFY_ENVIRON)
        .map(|(_, p)| String::from_utf8_lossy(p).trim_end_matches('\0').to_owned())
        .collect()
}

fn secret(label: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("panescan-{label}-{nanos:x}")
}

/// What panescan's tmux clients may carry: the list in `tmux/client_env.rs`.
const CLIENT_VARS: [&str; 4] = ["HOME", "PATH", "TMUX_TMPDIR", "LC_ALL"];

#[test]
fn panescans_environment_reaches_no_tmux_server_through_a_read_call() {
    let home = TempDir::new("sk-h");
    let allowed = TempDir::new("sk-f");
    let fake = FakeTmux::listen(&allowed.0.join("fake"));
    let tmux = PrivateServer::start_under("sk-v", 80, 24, Some(&home.0)).unwrap();
    tmux.run_ok([
        "set-environment",
        "-t",
        "main",
        "SSH_AUTH_SOCK",
        "/the/users/agent",
    ])
    .unwrap();
    let show = || {
        let session = tmux.run_ok(["show-environment", "-t", "main"]).unwrap();
        let global = tmux.run_ok(["show-environment", "-g"]).unwrap();
        (session, global)
    };
    let before = show();
    let (key, agent) = (secret("key"), secret("agent"));
    let mut s = serve(
        &tmux,
        &home.0,
        &["--allow-socket-dir", text(&allowed.0)],
        &[
            ("PANESCAN_TEST_KEY", &key),
            ("SSH_AUTH_SOCK", &agent),
            ("DISPLAY", &agent),
        ],
    );

    // A fake server in an allowed directory: the client connects, and what
    // it sends holds none of panescan's own variables.
    let fake_path = allowed.0.join("fake");
    s.call_err("list_panes", json!({"socket_path": fake_path}));
    s.call_err(
        "search_panes",
        json!({"pattern": "x", "socket_path": fake_path}),
    );
    let sent = fake.received.recv_timeout(common::REPLY_TIMEOUT).unwrap();
    let environ = environ_of(&sent);
    assert!(
        environ.iter().any(|v| v.starts_with("PATH=")),
        "the fake server saw no environment at all: {environ:?}"
    );
    for needle in [&key, &agent] {
        let leaked = sent.windows(needle.len()).any(|w| w == needle.as_bytes());
        assert!(!leaked, "panescan's environment reached the fake server");
    }
    for var in &environ {
        let name = var.split('=').next().unwrap_or_default();
        assert!(CLIENT_VARS.contains(&name), "a client sent {name}");
    }

    // The real server: reads through the control client (attached) and
    // capture sweeps change nothing in its environments.
    let v = s.call_ok("get_server_info", json!({}));
    assert_eq!(v["transport"], "control", "{v}");
    s.call_ok("list_panes", json!({}));
    s.call_ok("capture_pane", json!({"pane_id": "%0"}));
    s.call_ok(
        "search_panes",
        json!({"pattern": "x", "scrollback_lines": 100}),
    );
    s.call_ok("show_environment", json!({"session": "main"}));
    let after = show();
    assert_eq!(before.0, after.0, "the session environment changed");
    assert_eq!(
        changed_lines(&before.1, &after.1),
        Vec::<&str>::new(),
        "the global environment changed"
    );
    assert!(!after.0.contains(&agent) && !after.1.contains(&key));
}

/// Lines in one text and not the other, either way.
fn changed_lines<'a>(a: &'a str, b: &'a str) -> Vec<&'a str> {
    let gone = a.lines().filter(|l| !b.lines().any(|m| m == *l));
    let new = b.lines().filter(|l| !a.lines().any(|m| m == *l));
    gone.chain(new).collect()
}

/// A `tmux` on PATH that logs each run's environment and arguments to
/// `log`, then runs the real tmux.
fn logging_tmux(bin: &Path, log: &Path) {
    let real = std::env::split_paths(&std::env::var_os("PATH").unwrap())
        .map(|d| d.join("tmux"))
        .find(|p| p.is_file())
        .expect("tmux on PATH");
    let script = format!(
        "#!/bin/sh\nenv > '{log}/env.'$$\nprintf '%s\\n' \"$@\" > '{log}/args.'$$\nexec '{real}' \"$@\"\n",
        log = log.display(),
        real = real.display()
    );
    let path = bin.join("tmux");
    std::fs::write(&path, script).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// Contents of the log files whose name starts with `prefix`.
fn logged(log: &Path, prefix: &str) -> Vec<String> {
    std::fs::read_dir(log)
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().starts_with(prefix))
        .map(|e| std::fs::read_to_string(e.path()).unwrap_or_default())
        .collect()
}

#[test]
fn every_tmux_client_panescan_starts_gets_a_minimal_environment() {
    let home = TempDir::new("sk-h");
    let bin = TempDir::new("sk-bin");
    let log = TempDir::new("sk-log");
    logging_tmux(&bin.0, &log.0);
    let tmux = PrivateServer::start_under("sk-m", 80, 24, Some(&home.0)).unwrap();
    let path = format!("{}:{}", bin.0.display(), std::env::var("PATH").unwrap());
    let key = secret("min");
    let mut s = serve(
        &tmux,
        &home.0,
        &[],
        &[("PATH", &path), ("PANESCAN_TEST_KEY", &key)],
    );

    s.call_ok("list_panes", json!({}));
    s.call_ok("capture_pane", json!({"pane_id": "%0"}));
    s.call_ok(
        "search_panes",
        json!({"pattern": "x", "scrollback_lines": 100}),
    );
    // Each kind of client ran through the logging tmux: the version check,
    // the control client, `source-file -` (the lookup before attaching and
    // the capture sweeps).
    let ran = |what: &str| logged(&log.0, "args.").iter().any(|a| a.contains(what));
    let all_ran = eventually(Duration::from_secs(10), || {
        ["-V", "attach-session", "source-file"]
            .iter()
            .all(|w| ran(w))
    });
    assert!(
        all_ran,
        "not every kind of client ran: {:?}",
        logged(&log.0, "args.")
    );
    // sh itself may add these to what `env` prints.
    let shell = ["PWD", "OLDPWD", "SHLVL", "_"];
    for env in logged(&log.0, "env.") {
        assert!(!env.contains(&key), "a tmux client got PANESCAN_TEST_KEY");
        for line in env.lines() {
            let name = line.split('=').next().unwrap_or_default();
            assert!(
                CLIENT_VARS.contains(&name) || shell.contains(&name),
                "a tmux client got {name}"
            );
        }
    }
}
