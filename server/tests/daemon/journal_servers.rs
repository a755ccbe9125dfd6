//! Several tmux servers journaled by one daemon (`--journal-socket`): each
//! into its own directory, searched and listed only for the server a call
//! names, though pane ids repeat across servers; a server started after
//! the daemon is picked up, one killed stops no other and is picked up
//! again when it comes back; a journal written before servers had
//! directories of their own is still searched; the bounds count every
//! server's segments together.
//!
//! Every test has its private tmux servers, runtime and journal directory.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::daemon::Place;
use common::journal::{config, journal_of, wait_for_feed};
use common::shells::{guide_snippet, shell_command, Sh};
use common::{eventually, window_showing, Serve};
use panescan::testing::journal::writer;
use panescan::testing::private_server::{unique_name, PrivateServer};
use panescan::testing::tmux::ServerSpec;
use serde_json::{json, Value};

/// A private server (history-limit 100) with a bash pane set up with
/// GUIDE.md's OSC 133 snippet.
struct Shelled {
    tmux: PrivateServer,
    pane: String,
}

impl Shelled {
    fn start(name: String, home: &Path) -> Shelled {
        let tmux = PrivateServer::start_named(name, 100, 24, None).unwrap();
        tmux.run_ok(["set-option", "-g", "history-limit", "100"])
            .unwrap();
        std::fs::create_dir_all(home).unwrap();
        let shell = shell_command(home, Sh::Bash, &guide_snippet(Sh::Bash));
        let script = format!("cd {} && exec {shell}", home.display());
        let pane = window_showing(&tmux, None, &script, "$", &[]);
        std::thread::sleep(Duration::from_millis(300));
        tmux.run_ok(["send-keys", "-t", &pane, "Enter"]).unwrap();
        std::thread::sleep(Duration::from_millis(500));
        Shelled { tmux, pane }
    }

    fn name(&self) -> &str {
        self.tmux.socket_name()
    }

    fn socket(&self) -> PathBuf {
        self.tmux.socket_path().unwrap()
    }

    /// Types `line` and Enter, then waits for `marker` on a line of its own.
    fn type_line(&self, line: &str, marker: &str) {
        self.tmux
            .run_ok(["send-keys", "-t", &self.pane, "-l", line])
            .unwrap();
        self.tmux
            .run_ok(["send-keys", "-t", &self.pane, "Enter"])
            .unwrap();
        let shown = eventually(Duration::from_secs(30), || {
            self.tmux
                .run_ok(["capture-pane", "-p", "-J", "-S", "-", "-t", &self.pane])
                .is_ok_and(|t| t.lines().any(|l| l == marker))
        });
        assert!(shown, "{} never showed {marker}", self.name());
    }

    /// Prints `needle`, then 150 lines slowly enough that the journal
    /// reads each before tmux trims it (history-limit 100), then `mark`.
    fn print_past_history(&self, needle: &str, mark: &str) {
        let script = format!(
            "echo {needle}; for i in $(seq 1 150); do echo pad-$i; [ $((i % 10)) -eq 0 ] && sleep 0.1; done; echo {mark}"
        );
        self.type_line(&script, mark);
    }
}

/// A daemon killed (and waited for) when the test ends, also on failure.
struct Running(std::process::Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The journal directory naming `socket` in its `sockets` file.
fn dir_naming(journal: &Path, socket: &Path) -> Option<PathBuf> {
    let mut dirs = vec![journal.to_owned()];
    if let Ok(entries) = std::fs::read_dir(journal.join("servers")) {
        dirs.extend(entries.flatten().map(|e| e.path()));
    }
    dirs.into_iter().find(|d| {
        std::fs::read_to_string(d.join("sockets"))
            .is_ok_and(|t| t.lines().any(|l| Path::new(l) == socket))
    })
}

/// Every text of `result`'s hits, tmux's and the journal's.
fn hit_texts(result: &Value) -> Vec<String> {
    let mut out = Vec::new();
    for pane in result["matches"].as_array().unwrap() {
        for l in pane["lines"].as_array().unwrap() {
            out.push(l["text"].as_str().unwrap().to_owned());
        }
    }
    for h in result["journal_matches"].as_array().into_iter().flatten() {
        out.push(h["text"].as_str().unwrap().to_owned());
    }
    out
}

/// The journal's own hits (lines tmux no longer holds) of `result`.
fn journal_texts(result: &Value) -> Vec<String> {
    result["journal_matches"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|h| h["text"].as_str().unwrap().to_owned())
        .collect()
}

fn serve(place: &Place, name: &str, socket_name: &str) -> Serve {
    let mut s = place.serve(name, socket_name, &[]);
    s.initialize();
    s
}

/// Waits until list_commands on `socket_name` lists `n` ended commands.
fn wait_commands(s: &mut Serve, socket_name: &str, n: usize) -> Vec<Value> {
    let mut last = Vec::new();
    let done = eventually(Duration::from_secs(30), || {
        let listed = s.call_ok("list_commands", json!({"socket_name": socket_name}));
        last = listed["commands"].as_array().unwrap().clone();
        last.len() >= n && last.iter().all(|c| !c["output_lines"].is_null())
    });
    assert!(done, "{socket_name}: the ledger has {last:?}");
    last
}

/// `panescan ARGS` to its end: (status, stdout, stderr).
fn cli(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_panescan"))
        .args(args)
        .env_remove("TMUX")
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Two servers whose shells sit in the same pane id print different
/// text: each server's search, ledger and CLI see only its own lines;
/// each has its own private directory; a server not journaled says so.
#[test]
fn two_servers_are_journaled_apart_though_their_pane_ids_repeat() {
    let place = Place::new("jsv-two");
    let journal = place.temp_root().join("journal");
    let a = Shelled::start(unique_name("jsv-a"), &place.temp_root().join("ha"));
    let b = Shelled::start(unique_name("jsv-b"), &place.temp_root().join("hb"));
    assert_eq!(a.pane, b.pane, "the same pane id in both servers");
    let b_socket = b.socket();
    let _daemon = Running(place.start_daemon(&[
        "--idle-exit",
        "0",
        "-L",
        a.name(),
        "--journal-socket",
        a.name(),
        "--journal-socket",
        b_socket.to_str().unwrap(),
        "--journal-dir",
        journal.to_str().unwrap(),
    ]));
    // The ledger's feeds attach at the daemon's start.
    wait_for_feed(&a.tmux, &a.pane);
    wait_for_feed(&b.tmux, &b.pane);
    a.print_past_history("needle-alpha-old", "mark-a1");
    b.print_past_history("needle-bravo-old", "mark-b1");
    a.type_line("echo needle-alpha-new; false", "needle-alpha-new");
    b.type_line("echo needle-bravo-new", "needle-bravo-new");

    // The layout: the default server in the root, the other under servers/.
    let a_dir = dir_naming(&journal, &a.socket()).expect("a's directory");
    let b_dir = dir_naming(&journal, &b_socket).expect("b's directory");
    assert_eq!(a_dir, journal);
    assert_eq!(b_dir.parent().unwrap(), journal.join("servers"));
    for d in [&journal, &b_dir, &journal.join("servers")] {
        let mode = std::fs::metadata(d).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700, "{}", d.display());
    }
    let mode = std::fs::metadata(b_dir.join("sockets"))
        .unwrap()
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(mode, 0o600);

    let mut sa = serve(&place, "sa", a.name());
    let a_cmds = wait_commands(&mut sa, a.name(), 2);
    let b_cmds = wait_commands(&mut sa, b.name(), 2);
    // Search across time, per server: the trimmed line from the journal,
    // nothing of the other server's.
    let search = |s: &mut Serve, socket: &str| {
        s.call_ok(
            "search_panes",
            json!({"pattern": "needle-", "journal": true, "socket_name": socket}),
        )
    };
    let in_a = search(&mut sa, a.name());
    let texts = hit_texts(&in_a);
    assert!(texts.iter().all(|t| !t.contains("bravo")), "{in_a}");
    assert!(
        journal_texts(&in_a).iter().any(|t| t == "needle-alpha-old"),
        "{in_a}"
    );
    let in_b = search(&mut sa, b.name());
    let texts = hit_texts(&in_b);
    assert!(texts.iter().all(|t| !t.contains("alpha")), "{in_b}");
    assert!(
        journal_texts(&in_b).iter().any(|t| t == "needle-bravo-old"),
        "{in_b}"
    );

    // The ledgers: each its own commands; ids never shared.
    let typed = |cmds: &[Value]| -> Vec<String> {
        cmds.iter()
            .map(|c| c["command"].as_str().unwrap_or("").to_owned())
            .collect()
    };
    assert!(
        typed(&a_cmds).iter().all(|c| c.contains("alpha")),
        "{a_cmds:?}"
    );
    assert!(
        typed(&b_cmds).iter().all(|c| c.contains("bravo")),
        "{b_cmds:?}"
    );
    let failed = sa.call_ok("list_commands", json!({"failed": true}));
    let failed = failed["commands"].as_array().unwrap().clone();
    assert_eq!(typed(&failed), ["echo needle-alpha-new; false"]);
    let b_id = b_cmds[0]["command_id"].as_str().unwrap();
    assert!(a_cmds.iter().all(|c| c["command_id"] != json!(b_id)));
    let out = sa.call_ok(
        "get_command_output",
        json!({"command_id": b_id, "socket_name": b.name()}),
    );
    assert_eq!(out["output"], json!("needle-bravo-new\n"), "{out}");
    // Asked of the wrong server: the answer names the right one.
    let err = sa.call_err("get_command_output", json!({"command_id": b_id}));
    assert!(err.contains(&b_socket.display().to_string()), "{err}");

    // The CLI, per server.
    let jd = journal.to_str().unwrap();
    let (ok, out, err) = cli(&["commands", "--json", "--journal-dir", jd, "-L", b.name()]);
    assert!(ok, "{err}");
    assert!(out.contains("bravo") && !out.contains("alpha"), "{out}");
    let (ok, out, err) = cli(&[
        "search",
        "--journal",
        "--journal-dir",
        jd,
        "-L",
        a.name(),
        "needle-",
    ]);
    assert!(ok, "{err}");
    assert!(
        out.contains("needle-alpha-old") && !out.contains("bravo"),
        "{out}"
    );

    // A server not journaled: said, by every reader.
    let c = PrivateServer::start("jsv-c", 80, 24).unwrap();
    let err = sa.call_err(
        "search_panes",
        json!({"pattern": "x", "journal": true, "socket_name": c.socket_name()}),
    );
    assert!(err.contains("not journaled"), "{err}");
    let err = sa.call_err("list_commands", json!({"socket_name": c.socket_name()}));
    assert!(err.contains("not journaled"), "{err}");
    let (ok, _, err) = cli(&["commands", "--journal-dir", jd, "-L", c.socket_name()]);
    assert!(!ok && err.contains("not journaled"), "{err}");
}

/// A server named before it runs is journaled once it starts; killing
/// another stops nothing else, and that one is journaled again when a
/// server comes back on its socket.
#[test]
fn a_server_started_later_is_picked_up_and_a_killed_one_stops_no_other() {
    let place = Place::new("jsv-late");
    let journal = place.temp_root().join("journal");
    let early = Shelled::start(unique_name("jsv-early"), &place.temp_root().join("he"));
    let late_name = unique_name("jsv-late");
    let _daemon = Running(place.start_daemon(&[
        "--idle-exit",
        "0",
        "-L",
        early.name(),
        "--journal-socket",
        early.name(),
        "--journal-socket",
        &late_name,
        "--journal-dir",
        journal.to_str().unwrap(),
    ]));
    early.print_past_history("needle-early", "mark-e1");
    // Only now does the late server start.
    std::thread::sleep(Duration::from_millis(1_500));
    let late = Shelled::start(late_name.clone(), &place.temp_root().join("hl"));
    late.print_past_history("needle-late", "mark-l1");
    let late_dir = dir_naming(&journal, &late.socket()).expect("the late server's directory");
    let journaled = |dir: &Path, pane: &str, line: &str| {
        eventually(Duration::from_secs(20), || {
            journal_of(dir, pane).0.iter().any(|l| l == line)
        })
    };
    assert!(
        journaled(&late_dir, &late.pane, "needle-late"),
        "{}",
        place.daemon_log()
    );
    assert!(journaled(&journal, &early.pane, "needle-early"));

    // The early server goes: the late one is still journaled.
    let (early_name, early_home) = (early.name().to_owned(), place.temp_root().join("he2"));
    early.tmux.kill();
    drop(early);
    late.print_past_history("needle-late-after-kill", "mark-l2");
    assert!(journaled(&late_dir, &late.pane, "needle-late-after-kill"));

    // A server on the early socket again: followed again.
    let again = Shelled::start(early_name, &early_home);
    again.print_past_history("needle-early-again", "mark-e2");
    assert!(journaled(&journal, &again.pane, "needle-early-again"));
    // And searched through the daemon, the late server's own lines only.
    let mut s = serve(&place, "late", &late_name);
    let found = s.call_ok(
        "search_panes",
        json!({"pattern": "needle-", "journal": true}),
    );
    let texts = journal_texts(&found);
    assert!(texts.iter().any(|t| t == "needle-late"), "{found}");
    assert!(
        hit_texts(&found).iter().all(|t| !t.contains("early")),
        "{found}"
    );
}

/// A journal written before servers had directories of their own (the
/// default server's, in the root, no `sockets` file) is searched after the
/// daemon journals several servers, and also when it journals others only.
#[test]
fn an_older_single_server_journal_is_still_searched() {
    let place = Place::new("jsv-old");
    let journal = place.temp_root().join("journal");
    let a = Shelled::start(unique_name("jsv-olda"), &place.temp_root().join("ha"));
    // The writer as the daemon ran it for its one server.
    let old = writer::start(config(&journal), &ServerSpec::named(a.name()), None).unwrap();
    a.print_past_history("needle-from-before", "mark-o1");
    std::thread::sleep(Duration::from_millis(2_000));
    old.stop();
    assert!(!journal.join("sockets").exists());
    assert!(journal_of(&journal, &a.pane)
        .0
        .iter()
        .any(|l| l == "needle-from-before"));
    a.print_past_history("pushes-it-out", "mark-o2");

    // The daemon journals another server only: the old journal still
    // answers for its server.
    let b = Shelled::start(unique_name("jsv-oldb"), &place.temp_root().join("hb"));
    let mut daemon = place.start_daemon(&[
        "--idle-exit",
        "0",
        "-L",
        a.name(),
        "--journal-socket",
        b.name(),
        "--journal-dir",
        journal.to_str().unwrap(),
    ]);
    let mut s = serve(&place, "old", a.name());
    let search = |s: &mut Serve| {
        s.call_ok(
            "search_panes",
            json!({"pattern": "needle-from-before", "journal": true}),
        )
    };
    let found = search(&mut s);
    assert_eq!(exactly(&found, "needle-from-before"), 1, "{found}");
    drop(s);
    let _ = Command::new(env!("CARGO_BIN_EXE_panescan"))
        .args(["stop", "--runtime-dir"])
        .arg(place.dir())
        .status();
    let _ = daemon.wait();

    // Upgraded in place: the same default server and one more.
    let _daemon = Running(place.start_daemon(&[
        "--idle-exit",
        "0",
        "-L",
        a.name(),
        "--journal-socket",
        a.name(),
        "--journal-socket",
        b.name(),
        "--journal-dir",
        journal.to_str().unwrap(),
    ]));
    assert_eq!(
        dir_naming(&journal, &a.socket()).as_deref(),
        Some(journal.as_path())
    );
    a.print_past_history("needle-after", "mark-o3");
    let mut s = serve(&place, "new", a.name());
    let found = search(&mut s);
    assert_eq!(exactly(&found, "needle-from-before"), 1, "{found}");
    // Written on in the same directory, each line once.
    let written = eventually(Duration::from_secs(20), || {
        journal_of(&journal, &a.pane)
            .0
            .iter()
            .any(|l| l == "needle-after")
    });
    assert!(written);
    let lines = journal_of(&journal, &a.pane).0;
    for line in ["needle-from-before", "needle-after"] {
        assert_eq!(lines.iter().filter(|l| *l == line).count(), 1, "{line}");
    }
}

/// The journal's own hits of `result` whose text is `text`.
fn exactly(result: &Value, text: &str) -> usize {
    journal_texts(result).iter().filter(|t| *t == text).count()
}

/// `--journal-max-bytes` bounds every server's segments together, the
/// oldest first whichever server wrote it, each server's newest kept.
#[test]
fn the_bounds_count_every_servers_segments_together() {
    let place = Place::new("jsv-bounds");
    let journal = place.temp_root().join("journal");
    let a = PrivateServer::start("jsv-ba", 80, 24).unwrap();
    let b = PrivateServer::start("jsv-bb", 80, 24).unwrap();
    let jd = journal.to_str().unwrap().to_owned();
    let args = |max: &'static str| {
        let mut v: Vec<String> = ["--idle-exit", "0", "-L", a.socket_name()]
            .iter()
            .map(|s| (*s).to_owned())
            .collect();
        for s in [a.socket_name(), b.socket_name()] {
            v.extend(["--journal-socket".to_owned(), s.to_owned()]);
        }
        v.extend([
            "--journal-dir".into(),
            jd.clone(),
            "--journal-max-bytes".into(),
            max.into(),
        ]);
        v
    };
    let start = |v: &[String]| {
        let refs: Vec<&str> = v.iter().map(String::as_str).collect();
        Running(place.start_daemon(&refs))
    };
    // A first run makes the directories.
    let first = start(&args("1073741824"));
    let b_dir = eventually(Duration::from_secs(10), || {
        dir_naming(&journal, &b.socket_path().unwrap()).is_some()
    });
    assert!(b_dir);
    drop(first);
    let b_dir = dir_naming(&journal, &b.socket_path().unwrap()).unwrap();
    // Old segments of 100 bytes: the root's at t=1000 and b's at 2000 (in
    // 1970); the newest of each directory, empty, at 3000 and 4000 (being
    // written: never removed).
    let segment = |dir: &Path, ms: i64, bytes: usize| {
        let path = dir.join(format!("{ms:013}.pjs"));
        std::fs::write(&path, vec![0u8; bytes]).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        path
    };
    let oldest = segment(&journal, 1000, 100);
    let second = segment(&b_dir, 2000, 100);
    segment(&journal, 3000, 0);
    segment(&b_dir, 4000, 0);
    // 200 bytes in all, 150 allowed: one goes, the oldest of all (each
    // server's own 100 bytes would fit).
    let _second_run = start(&args("150"));
    let gone = eventually(Duration::from_secs(10), || !oldest.exists());
    assert!(gone, "{} kept", oldest.display());
    std::thread::sleep(Duration::from_millis(500));
    assert!(second.exists(), "b's older segment went too");
}
