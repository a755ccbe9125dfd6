//! paste_text, show_buffer, clear_history, pipe_pane and list_servers
//! through `panescan serve`, each on private tmux servers.
//!
//! Pasted text is read back from a pane whose program writes what it
//! receives to a file (raw mode: nothing is edited on the way), so
//! "arrives exactly" is a byte comparison. list_servers runs with its own
//! `TMUX_TMPDIR`, so the user's real servers are never looked at.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::os::unix::fs::symlink;
use std::os::unix::net::UnixListener;
use std::path::Path;
use std::time::Duration;

use common::{eventually, plain_shell, typed_so_far, typing_sink, validate, Serve, TempDir};
use panescan::testing::private_server::PrivateServer;
use serde_json::{json, Value};

/// A private server and `panescan serve --tier mutating` on it, plus `extra`.
fn mutating(label: &str, extra: &[&str]) -> (PrivateServer, Serve) {
    let tmux = PrivateServer::start(label, 80, 24).unwrap();
    let mut args = vec![
        "serve",
        "--socket-name",
        tmux.socket_name(),
        "--tier",
        "mutating",
    ];
    args.extend_from_slice(extra);
    let mut s = Serve::spawn_with(&args, &[]);
    s.initialize();
    (tmux, s)
}

/// A call that must succeed and fit its listed outputSchema.
fn ok(s: &mut Serve, tool: &str, args: Value) -> Value {
    let listed = s.request_bare("tools/list");
    let schema = listed["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == tool)
        .map(|t| t["outputSchema"].clone())
        .unwrap_or_else(|| panic!("{tool} not listed"));
    let v = s.call_ok(tool, args.clone());
    let errors = validate(&schema, &v);
    assert!(errors.is_empty(), "{tool} {args}: {errors:?}\n{v}");
    v
}

/// Every buffer: name and content, in tmux's order; `None` when one
/// listed went before it was read (after a failed paste panescan deletes
/// its buffer on a thread of its own, while the call answers).
fn try_buffers(tmux: &PrivateServer) -> Option<Vec<(String, String)>> {
    let names = tmux
        .run_ok(["list-buffers", "-F", "#{buffer_name}"])
        .unwrap();
    names
        .lines()
        .map(|n| {
            let text = tmux.run_ok(["show-buffer", "-b", n]).ok()?;
            Some((n.to_owned(), text))
        })
        .collect()
}

/// Every buffer, read whole (listed and shown with none going between).
fn buffers(tmux: &PrivateServer) -> Vec<(String, String)> {
    let mut read = None;
    let whole = eventually(Duration::from_secs(10), || {
        read = try_buffers(tmux);
        read.is_some()
    });
    assert!(whole, "buffers kept going between listing and reading");
    read.unwrap_or_default()
}

/// The user's own buffers: an automatic one and a named one.
fn user_buffers(tmux: &PrivateServer) {
    tmux.run_ok(["set-buffer", "--", "automatic text"]).unwrap();
    tmux.run_ok(["set-buffer", "-b", "mine", "--", "named\ntext"])
        .unwrap();
}

fn hostile_text() -> String {
    let mut text = String::from(
        "#{session_name} #(touch /tmp/panescan-never) ; kill-server ;\n\
         'single' \"double\" \\back $HOME `id` ~ {brace}\n\
         wide: 日本語 テスト é 👍\n-flag-looking\n\
         control: \u{1}\u{3}\u{1b}[1mbold\u{1b}[0m\u{7f}\u{8}\u{7}\tend\n",
    );
    // 10 KB more, in lines of 100.
    for i in 0..100 {
        text.push_str(&format!("{i:04} {}\n", "x".repeat(94)));
    }
    text
}

#[test]
fn paste_text_arrives_exactly_and_leaves_every_buffer_as_it_was() {
    let (tmux, mut s) = mutating("buf-paste", &[]);
    let dir = TempDir::new("buf-paste");
    let file = dir.0.join("typed");
    let pane = typing_sink(&tmux, &file);
    user_buffers(&tmux);
    let before = buffers(&tmux);
    let text = hostile_text();
    assert!(text.len() > 10_000);
    let r = ok(&mut s, "paste_text", json!({"pane_id": pane, "text": text}));
    assert_eq!(r["text_bytes"], text.len());
    // A paste sends Enter (CR) for each line feed, as a terminal does.
    let got = typed_so_far(&tmux, &pane, &file);
    assert_eq!(
        String::from_utf8_lossy(&got),
        text.replace('\n', "\r"),
        "pasted text differs"
    );
    assert_eq!(buffers(&tmux), before, "buffers changed by a paste");
    // The largest paste allowed (64 KiB) arrives whole too.
    let seen = std::fs::metadata(&file).unwrap().len() as usize;
    let most: String = (0..1024).map(|i| format!("{i:063}\n")).collect();
    assert_eq!(most.len(), 64 * 1024);
    ok(&mut s, "paste_text", json!({"pane_id": pane, "text": most}));
    let got = typed_so_far(&tmux, &pane, &file);
    assert!(
        got[seen..] == *most.replace('\n', "\r").as_bytes(),
        "the 64 KiB paste arrived changed ({} bytes)",
        got.len() - seen
    );
    // A paste that fails (no such pane) leaves no buffer either.
    let e = s.call_err("paste_text", json!({"pane_id": "%999", "text": "lost"}));
    assert!(e.contains("no pane %999"), "{e}");
    // Its buffer is deleted on a thread of its own: gone soon, not at once.
    let gone = eventually(Duration::from_secs(10), || {
        try_buffers(&tmux).as_ref() == Some(&before)
    });
    assert!(
        gone,
        "a failed paste left a buffer: {:?}",
        try_buffers(&tmux)
    );
    assert!(!Path::new("/tmp/panescan-never").exists());
}

#[test]
fn paste_text_refuses_nul_empty_and_oversized_text() {
    let (tmux, mut s) = mutating("buf-refuse", &[]);
    let dir = TempDir::new("buf-refuse");
    let pane = typing_sink(&tmux, &dir.0.join("typed"));
    for (text, why) in [
        ("a\u{0}b".to_owned(), "NUL"),
        (String::new(), "empty"),
        ("x".repeat(64 * 1024 + 1), "at most 65536"),
    ] {
        let e = s.call_err("paste_text", json!({"pane_id": pane, "text": text}));
        assert!(e.contains(why), "{e}");
    }
    assert!(buffers(&tmux).is_empty());
}

#[test]
fn bracketed_paste_is_marked_when_the_program_asked_for_it() {
    let (tmux, mut s) = mutating("buf-bracket", &[]);
    let dir = TempDir::new("buf-bracket");
    let file = dir.0.join("typed");
    // The program turns bracketed paste on, as shells and editors do.
    tmux.run_ok([
        "respawn-pane",
        "-k",
        "-t",
        "main:0.0",
        &format!(
            "printf '\\033[?2004h'; stty raw -echo; exec cat > {}",
            file.display()
        ),
    ])
    .unwrap();
    let on = eventually(Duration::from_secs(10), || {
        tmux.run_ok([
            "display-message",
            "-p",
            "-t",
            "main:0.0",
            "#{pane_current_command}",
        ])
        .is_ok_and(|c| c.trim() == "cat")
    });
    assert!(on, "the sink never started");
    let pane = tmux
        .run_ok(["display-message", "-p", "-t", "main:0.0", "#{pane_id}"])
        .unwrap()
        .trim()
        .to_owned();
    s.call_ok(
        "paste_text",
        json!({"pane_id": pane, "text": "one", "bracketed": true}),
    );
    s.call_ok("paste_text", json!({"pane_id": pane, "text": "two"}));
    let got = typed_so_far(&tmux, &pane, &file);
    assert_eq!(
        String::from_utf8_lossy(&got),
        "\u{1b}[200~one\u{1b}[201~two"
    );
}

#[test]
fn show_buffer_lists_and_reads_buffers_bounded() {
    let (tmux, mut s) = mutating("buf-show", &[]);
    user_buffers(&tmux);
    let odd = "odd #{session_name};\"name\"";
    tmux.run_ok(["set-buffer", "-b", odd, "--", "a\tb\nc 日本"])
        .unwrap();
    let list = ok(&mut s, "show_buffer", json!({}));
    let rows = list["buffers"].as_array().unwrap();
    let named: Vec<(&str, u64)> = rows
        .iter()
        .map(|r| (r["name"].as_str().unwrap(), r["size"].as_u64().unwrap()))
        .collect();
    assert_eq!(named.len(), 3, "{list}");
    assert!(named.contains(&("mine", 10)), "{list}");
    assert!(named.contains(&("buffer0", 14)), "{list}");
    assert!(named.contains(&(odd, 12)), "{list}");

    let one = ok(&mut s, "show_buffer", json!({"name": odd}));
    assert_eq!(one["buffer"]["text"], "a\tb\nc 日本", "{one}");
    assert_eq!(one["buffer"]["truncated"], false);
    let cut = s.call_ok("show_buffer", json!({"name": "mine", "max_bytes": 4}));
    assert_eq!(cut["buffer"]["text"], "name");
    assert_eq!(cut["buffer"]["truncated"], true);
    assert_eq!(cut["buffer"]["returned_bytes"], 4);
    // A cut inside a wide character keeps whole characters.
    let wide = s.call_ok("show_buffer", json!({"name": odd, "max_bytes": 8}));
    assert_eq!(wide["buffer"]["text"], "a\tb\nc ", "{wide}");

    // A large buffer: read up to the bound and no further.
    let big = TempDir::new("buf-big");
    let big_file = big.0.join("big");
    std::fs::write(&big_file, "0123456789".repeat(300_000)).unwrap();
    tmux.run_ok(["load-buffer", "-b", "big", big_file.to_str().unwrap()])
        .unwrap();
    let head = ok(&mut s, "show_buffer", json!({"name": "big"}));
    assert_eq!(head["buffer"]["returned_bytes"], 262_144, "default bound");
    assert_eq!(head["buffer"]["truncated"], true);
    let text = head["buffer"]["text"].as_str().unwrap();
    assert!(text.starts_with("0123456789") && text.ends_with("0123"));
    let e = s.call_err("show_buffer", json!({"name": "nope"}));
    assert!(
        e.contains("no buffer \"nope\"") && e.contains("\"mine\""),
        "{e}"
    );
    let e = s.call_err("show_buffer", json!({"name": "a\nb"}));
    assert!(e.contains("control characters"), "{e}");
    let e = s.call_err(
        "show_buffer",
        json!({"name": "mine", "max_bytes": 10_000_000}),
    );
    assert!(e.contains("ceiling"), "{e}");
}

#[test]
fn reading_a_huge_buffer_stops_at_the_bound() {
    let (tmux, mut s) = mutating("buf-huge", &[]);
    let dir = TempDir::new("buf-huge");
    let file = dir.0.join("huge");
    std::fs::write(&file, "x".repeat(64 << 20)).unwrap();
    tmux.run_ok(["load-buffer", "-b", "huge", file.to_str().unwrap()])
        .unwrap();
    // Warm up with a listing: reading the buffer even once unbounded would
    // set the peak before it is measured.
    ok(&mut s, "show_buffer", json!({}));
    let (before, _) = common::memory_kb(s.pid());
    let r = ok(
        &mut s,
        "show_buffer",
        json!({"name": "huge", "max_bytes": 1000}),
    );
    assert_eq!(r["buffer"]["returned_bytes"], 1000);
    assert_eq!(r["buffer"]["truncated"], true);
    let (after, _) = common::memory_kb(s.pid());
    println!("1000 bytes of a 64 MiB buffer: panescan peak {before} -> {after} kB");
    // Reading the whole 64 MiB would raise the peak by at least that.
    assert!(
        after - before < 16 * 1024,
        "peak memory {before} -> {after} kB reading 1000 bytes"
    );
}

#[test]
fn a_buffer_that_escapes_past_the_response_ceiling_is_cut_to_fit() {
    let (tmux, mut s) = mutating("buf-escape", &[]);
    let dir = TempDir::new("buf-escape");
    let file = dir.0.join("controls");
    // Each \u{1} is 6 bytes in JSON and the text is sent twice: 256 KiB
    // of them would be a 3 MB response.
    std::fs::write(&file, vec![1u8; 256 * 1024]).unwrap();
    tmux.run_ok(["load-buffer", "-b", "controls", file.to_str().unwrap()])
        .unwrap();
    // The harness fails on any line over the 1,000,000-byte ceiling.
    let r = ok(&mut s, "show_buffer", json!({"name": "controls"}));
    let returned = r["buffer"]["returned_bytes"].as_u64().unwrap();
    assert_eq!(r["buffer"]["truncated"], true);
    assert!(returned > 0 && returned < 100_000, "{returned}");
    assert_eq!(r["buffer"]["text"].as_str().unwrap().len() as u64, returned);
}

#[test]
fn show_buffer_is_a_read_tool() {
    let tmux = PrivateServer::start("buf-read", 80, 24).unwrap();
    let mut s = Serve::spawn(tmux.socket_name());
    s.initialize();
    tmux.run_ok(["set-buffer", "-b", "b1", "--", "x"]).unwrap();
    let r = s.call_ok("show_buffer", json!({"name": "b1"}));
    assert_eq!(r["buffer"]["text"], "x");
    assert_eq!(r["buffer"]["redactions"], 0);
    // A buffer holds text copied from panes: its secrets are redacted too.
    let token = "ghp_16C7e42F292c6912E7710c838347Ae178B4a";
    tmux.run_ok(["set-buffer", "-b", "b2", "--", &format!("push {token}")])
        .unwrap();
    let r = s.call_ok("show_buffer", json!({"name": "b2"}));
    assert_eq!(r["buffer"]["text"], "push [REDACTED:GITHUB_TOKEN]", "{r}");
    assert_eq!(r["buffer"]["redactions"], 1);
    for tool in ["paste_text", "clear_history", "pipe_pane"] {
        let r = s.request(
            "tools/call",
            json!({"name": tool, "arguments": {"pane_id": "%0", "text": "x"}}),
        );
        let text = r.to_string();
        assert!(
            text.contains("unknown tool")
                && text.contains("readonly")
                && text.contains("panescan serve --tier mutating"),
            "{tool} in the read tier: {text}"
        );
    }
}

#[test]
fn clear_history_says_how_many_lines_it_dropped() {
    let (tmux, mut s) = mutating("buf-clear", &[]);
    plain_shell(&tmux, "main:0.0");
    tmux.run_ok([
        "send-keys",
        "-t",
        "main:0.0",
        "seq 1 300; echo done-seq",
        "Enter",
    ])
    .unwrap();
    let history = || -> u64 {
        tmux.run_ok(["display-message", "-p", "-t", "main:0.0", "#{history_size}"])
            .unwrap()
            .trim()
            .parse()
            .unwrap()
    };
    let printed = eventually(Duration::from_secs(10), || {
        tmux.run_ok(["capture-pane", "-p", "-t", "main:0.0"])
            .is_ok_and(|t| t.contains("\ndone-seq"))
    });
    assert!(printed);
    let before = history();
    assert!(before >= 270, "history {before}");
    let pane = tmux
        .run_ok(["display-message", "-p", "-t", "main:0.0", "#{pane_id}"])
        .unwrap()
        .trim()
        .to_owned();
    let r = ok(&mut s, "clear_history", json!({"pane_id": pane}));
    assert_eq!(r["lines_cleared"], before);
    assert_eq!(history(), 0);
    let again = s.call_ok("clear_history", json!({"pane_id": pane}));
    assert_eq!(again["lines_cleared"], 0);
    let e = s.call_err("clear_history", json!({"pane_id": "%999"}));
    assert!(e.contains("%999"), "{e}");
}

/// The pane id of `main:0.0`.
fn first_pane(tmux: &PrivateServer) -> String {
    tmux.run_ok(["display-message", "-p", "-t", "main:0.0", "#{pane_id}"])
        .unwrap()
        .trim()
        .to_owned()
}

#[test]
fn pipe_pane_is_off_without_a_log_dir() {
    let (tmux, mut s) = mutating("buf-nolog", &[]);
    let pane = first_pane(&tmux);
    let e = s.call_err("pipe_pane", json!({"pane_id": pane, "file": "x.log"}));
    assert!(e.contains("--log-dir"), "{e}");
}

#[test]
fn pipe_pane_writes_only_inside_the_log_dir() {
    let logs = TempDir::new("buf-logs");
    let outside = TempDir::new("buf-outside");
    let (tmux, mut s) = mutating("buf-pipe", &["--log-dir", logs.0.to_str().unwrap()]);
    plain_shell(&tmux, "main:0.0");
    let pane = first_pane(&tmux);
    symlink(outside.0.join("target"), logs.0.join("escape")).unwrap();
    std::fs::write(outside.0.join("real"), b"").unwrap();
    symlink(outside.0.join("real"), logs.0.join("escape2")).unwrap();
    std::fs::create_dir(logs.0.join("sub")).unwrap();
    // Were it run by a shell, this payload would leave `outside/X`.
    let touch = format!("$(touch {}/X)", outside.0.display());
    for bad in [
        "../x",
        "/etc/x",
        touch.as_str(),
        "..",
        "a/b",
        "escape",
        "escape2",
        "sub",
        "",
    ] {
        let e = s.call_err("pipe_pane", json!({"pane_id": pane, "file": bad}));
        assert!(e.contains("refused"), "{bad:?}: {e}");
    }
    assert!(!outside.0.join("X").exists() && !outside.0.join("target").exists());
    assert_eq!(std::fs::read(outside.0.join("real")).unwrap(), b"");

    let r = ok(
        &mut s,
        "pipe_pane",
        json!({"pane_id": pane, "file": "build-1.log"}),
    );
    assert_eq!(r["piping"], true, "{r}");
    let log = std::fs::canonicalize(&logs.0).unwrap().join("build-1.log");
    assert_eq!(r["path"], log.display().to_string());
    tmux.run_ok(["send-keys", "-t", &pane, "echo piped-$((6*7))", "Enter"])
        .unwrap();
    let arrived = eventually(Duration::from_secs(10), || {
        std::fs::read_to_string(&log).is_ok_and(|t| t.contains("piped-42"))
    });
    assert!(arrived, "log: {:?}", std::fs::read_to_string(&log));
    let stopped = ok(&mut s, "pipe_pane", json!({"pane_id": pane}));
    assert_eq!(stopped["piping"], false, "{stopped}");
    assert!(stopped.get("path").is_none());
}

fn server_row<'a>(list: &'a Value, name: &str) -> &'a Value {
    list["servers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["socket_name"] == name)
        .unwrap_or_else(|| panic!("no {name} in {list}"))
}

#[test]
fn list_servers_finds_live_and_stale_servers_and_probes_nothing_outside() {
    let home = TempDir::new("buf-servers");
    let served = PrivateServer::start_under("ls-served", 80, 24, Some(&home.0)).unwrap();
    let busy = PrivateServer::start_under("ls-busy", 80, 24, Some(&home.0)).unwrap();
    busy.run_ok(["new-session", "-d", "-s", "second"]).unwrap();
    let dead = PrivateServer::start_under("ls-dead", 80, 24, Some(&home.0)).unwrap();
    let dead_pid = dead.pid().unwrap();
    let dead_socket = dead.socket_path().unwrap();
    // SIGKILL: the server cannot remove its socket.
    std::process::Command::new("kill")
        .args(["-KILL", &dead_pid.to_string()])
        .status()
        .unwrap();
    assert!(eventually(Duration::from_secs(10), || {
        std::fs::read_to_string(format!("/proc/{dead_pid}/stat")).is_err()
    }));
    assert!(dead_socket.exists(), "the killed server's socket is gone");
    // A link in the tmux directory to a listener outside it.
    let far = TempDir::new("buf-far");
    let listener = UnixListener::bind(far.0.join("sock")).unwrap();
    listener.set_nonblocking(true).unwrap();
    let tmux_dir = dead_socket.parent().unwrap().to_path_buf();
    symlink(far.0.join("sock"), tmux_dir.join("elsewhere")).unwrap();

    let mut s = Serve::spawn_with(
        &["serve", "--socket-name", served.socket_name()],
        &[("TMUX_TMPDIR", home.0.to_str().unwrap())],
    );
    s.initialize();
    let list = ok(&mut s, "list_servers", json!({}));
    assert_eq!(list["servers"].as_array().unwrap().len(), 4, "{list}");
    assert_eq!(list["more_servers"], 0);
    let row = server_row(&list, served.socket_name());
    assert_eq!(
        (&row["state"], &row["sessions"], &row["served"]),
        (&json!("alive"), &json!(1), &json!(true))
    );
    let row = server_row(&list, busy.socket_name());
    assert_eq!(
        (&row["state"], &row["sessions"], &row["served"]),
        (&json!("alive"), &json!(2), &json!(false))
    );
    let row = server_row(&list, dead.socket_name());
    assert_eq!(row["state"], "stale", "{row}");
    assert!(row.get("sessions").is_none());
    let row = server_row(&list, "elsewhere");
    assert_eq!(row["state"], "not_reachable", "{row}");
    assert!(row["reason"].as_str().unwrap().contains("outside"), "{row}");
    // The listener outside was never connected to.
    assert!(listener.accept().is_err(), "list_servers connected outside");
    // The stale socket stays a stale socket (no server was started on it).
    assert!(std::os::unix::net::UnixStream::connect(&dead_socket).is_err());
}

/// `TMUX_TMPDIR/tmux-UID` under `home`, made as tmux makes it (0700).
fn tmux_dir(home: &Path) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let uid = std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .and_then(|r| r.split_whitespace().next().map(str::to_owned))
        .unwrap();
    let dir = home.join(format!("tmux-{uid}"));
    std::fs::create_dir(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    dir
}

#[test]
fn list_servers_bounds_the_count_and_every_probe() {
    let home = TempDir::new("buf-many");
    let dir = tmux_dir(&home.0);
    // Listeners that never answer as tmux: each probe must give up alone.
    let _listeners: Vec<UnixListener> = (0..66)
        .map(|i| UnixListener::bind(dir.join(format!("quiet-{i:02}"))).unwrap())
        .collect();
    let mut s = Serve::spawn_with(
        &["serve", "--socket-name", "none"],
        &[("TMUX_TMPDIR", home.0.to_str().unwrap())],
    );
    s.initialize();
    let list = ok(&mut s, "list_servers", json!({}));
    let rows = list["servers"].as_array().unwrap();
    assert_eq!(rows.len(), 64, "{list}");
    assert_eq!(list["more_servers"], 2);
    for r in rows {
        assert_eq!(r["state"], "unknown", "{r}");
        assert!(r["reason"].is_string(), "{r}");
    }
    assert_eq!(rows[0]["socket_name"], "quiet-00");
}

#[test]
fn list_servers_refuses_a_socket_directory_tmux_would_refuse() {
    use std::os::unix::fs::PermissionsExt;
    let home = TempDir::new("buf-open-dir");
    let dir = tmux_dir(&home.0);
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    let mut s = Serve::spawn_with(
        &["serve", "--socket-name", "none"],
        &[("TMUX_TMPDIR", home.0.to_str().unwrap())],
    );
    s.initialize();
    let e = s.call_err("list_servers", json!({}));
    assert!(e.contains("others may use it"), "{e}");
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    let empty = s.call_ok("list_servers", json!({}));
    assert_eq!(empty["servers"], json!([]), "{empty}");
}
