//! The command ledger against real shells: bash, zsh and fish set up with
//! GUIDE.md's OSC 133 snippets (read from GUIDE.md itself) in panes of a
//! private tmux server that `panescan daemon --journal` follows.
//!
//! The cases: 20 commands a shell ran (statuses 0, 1 and 130, in several
//! directories, some taking a second) listed with the right status, cwd
//! and duration, by list_commands and `panescan commands`; the `failed`
//! and `since_time` filters; a command printing 50,000 lines at
//! history-limit 2,000 read back whole, and one printing nothing; a
//! command printing OSC 133 marks of its own; and the error without a
//! journaling daemon.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::Duration;

use common::daemon::Place;
use common::journal::{journaling_daemon_args, stop_daemon, wait_for_feed, wait_for_tap};
use common::shells::{guide_snippet, shell_command, Sh};
use common::{eventually, session_showing, window_showing, Serve};
use panescan::testing::journal::ledger::read_all;
use panescan::testing::private_server::PrivateServer;
use serde_json::{json, Value};

/// The command line that starts `shell` with GUIDE.md's snippet.
fn guide_shell(dir: &Path, shell: Sh) -> String {
    shell_command(dir, shell, &guide_snippet(shell))
}

/// A private tmux server followed by a journaling daemon.
struct Bed {
    tmux: PrivateServer,
    place: Place,
    journal: PathBuf,
    daemon: Child,
    /// The daemon reads panes through pipes (`--journal-taps`).
    taps: bool,
}

impl Bed {
    fn start(label: &str, history_limit: u32) -> Bed {
        Bed::start_with(label, history_limit, false)
    }

    /// With `taps`, the daemon runs with `--journal-taps`.
    fn start_with(label: &str, history_limit: u32, taps: bool) -> Bed {
        let tmux = PrivateServer::start(label, 100, 24).unwrap();
        tmux.run_ok([
            "set-option",
            "-g",
            "history-limit",
            &history_limit.to_string(),
        ])
        .unwrap();
        Bed::with_daemon(tmux, Place::new(label), taps)
    }

    /// Starts the daemon (with `taps`, `--journal-taps`) on `tmux`.
    fn with_daemon(tmux: PrivateServer, place: Place, taps: bool) -> Bed {
        let journal = place.temp_root().join("journal");
        let log = place.temp_root().join("daemon.stderr");
        let more: &[&str] = if taps { &["--journal-taps"] } else { &[] };
        let daemon = journaling_daemon_args(&place, tmux.socket_name(), &journal, &log, None, more);
        Bed {
            tmux,
            place,
            journal,
            daemon,
            taps,
        }
    }

    /// Waits until the daemon reads `pane`: its feed, and with taps its pipe.
    fn wait_followed(&self, pane: &str) {
        wait_for_feed(&self.tmux, pane);
        if self.taps {
            wait_for_tap(&self.tmux, pane);
        }
    }

    /// A pane running `shell` in `dir` once its prompt shows.
    fn shell(&self, shell: Sh, dir: &Path) -> String {
        let script = format!("cd {} && exec {}", dir.display(), guide_shell(dir, shell));
        let pane = window_showing(&self.tmux, None, &script, "$", &[]);
        self.wait_followed(&pane);
        // An empty command line first: a new prompt, as a person's first
        // Enter gives.
        std::thread::sleep(Duration::from_millis(300));
        self.send_line(&pane, "");
        std::thread::sleep(Duration::from_millis(500));
        pane
    }

    /// A new session `name` running `shell` in `dir`, made while the
    /// daemon runs; its pane once the prompt shows.
    fn session(&self, name: &str, shell: Sh, dir: &Path) -> String {
        let script = format!("cd {} && exec {}", dir.display(), guide_shell(dir, shell));
        let pane = session_showing(&self.tmux, name, (100, 24), &script, "$");
        self.wait_followed(&pane);
        // As a person would: a moment before the first Enter.
        std::thread::sleep(Duration::from_millis(1000));
        self.send_line(&pane, "");
        std::thread::sleep(Duration::from_millis(500));
        pane
    }

    /// The last lines of the daemon's stderr (for a failure's message).
    fn daemon_said(&self) -> String {
        let log = std::fs::read_to_string(self.place.temp_root().join("daemon.stderr"))
            .unwrap_or_default();
        let lines: Vec<&str> = log.lines().collect();
        lines[lines.len().saturating_sub(80)..].join("\n")
    }

    fn serve(&self, name: &str) -> Serve {
        let mut s = self.place.serve(name, self.tmux.socket_name(), &[]);
        s.initialize();
        s
    }

    /// `panescan commands --json ARGS`.
    fn cli(&self, args: &[&str]) -> Vec<Value> {
        let out = Command::new(env!("CARGO_BIN_EXE_panescan"))
            .args(["commands", "--json", "--limit", "1000", "--journal-dir"])
            .arg(&self.journal)
            .args(["-L", self.tmux.socket_name()])
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        v["commands"].as_array().unwrap().clone()
    }

    /// Types `line` and Enter into `pane`, then waits until the ledger
    /// holds `count` ended commands of the pane, their output counted.
    fn type_line(&self, pane: &str, line: &str, count: usize) {
        self.send_line(pane, line);
        self.wait_ended(pane, count, line);
    }

    /// Types `line` into `pane` (nothing when empty), then Enter.
    fn send_line(&self, pane: &str, line: &str) {
        if !line.is_empty() {
            self.tmux
                .run_ok(["send-keys", "-t", pane, "-l", line])
                .unwrap();
        }
        self.tmux
            .run_ok(["send-keys", "-t", pane, "Enter"])
            .unwrap();
    }

    fn wait_ended(&self, pane: &str, count: usize, what: &str) {
        let done = eventually(Duration::from_secs(30), || {
            let all = self.cli(&["--pane", pane]);
            all.len() >= count && all.iter().all(|c| !c["output_lines"].is_null())
        });
        assert!(
            done,
            "{what}: the ledger has {:?}\nits records:\n{}\nthe daemon said:\n{}",
            self.cli(&["--pane", pane]),
            self.records(pane),
            self.daemon_said()
        );
    }

    /// The ledger's records of `pane` as written, notes included (for a
    /// failure's message: the tools' rows leave the notes out).
    fn records(&self, pane: &str) -> String {
        match read_all(&self.journal) {
            Ok((all, _)) => all
                .iter()
                .filter(|c| c.pane_id == pane)
                .map(|c| format!("{c:?}"))
                .collect::<Vec<_>>()
                .join("\n"),
            Err(e) => format!("cannot read the ledger: {e}"),
        }
    }
}

impl Drop for Bed {
    fn drop(&mut self) {
        let _ = self.daemon.kill();
        let _ = self.daemon.wait();
    }
}

/// A private server whose bash (GUIDE.md's snippet) sits at its prompt
/// before any daemon starts: the server, its place, the shell's home and
/// its pane.
fn shell_before_a_daemon(label: &str) -> (PrivateServer, Place, PathBuf, String) {
    let tmux = PrivateServer::start(label, 100, 24).unwrap();
    let place = Place::new(label);
    let home = place.temp_root().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let script = format!(
        "cd {} && exec {}",
        home.display(),
        guide_shell(&home, Sh::Bash)
    );
    let pane = window_showing(&tmux, None, &script, "$", &[]);
    (tmux, place, home, pane)
}

/// 20 commands in `shell`: statuses 0, 1 and 130, directories, durations;
/// with `taps`, read through the pane's pipe.
fn twenty_commands(shell: Sh, taps: bool) {
    let label = format!("ledger-{shell:?}{}", if taps { "-taps" } else { "" }).to_lowercase();
    let bed = Bed::start_with(&label, 2000, taps);
    let home = bed.place.temp_root().join("home");
    let sub = home.join("sub dir");
    std::fs::create_dir_all(&sub).unwrap();
    let pane = bed.shell(shell, &home);
    // (typed line, status, directory it ran in, at least this long in ms)
    let home_s = home.display().to_string();
    let sub_s = sub.display().to_string();
    let mut expect: Vec<(String, i64, String, u64)> = Vec::new();
    let mut n = 0;
    for round in 0..3 {
        for (line, status, dir, ms) in [
            ("true".to_owned(), 0, &home_s, 0),
            ("false".to_owned(), 1, &home_s, 0),
            (format!("cd '{sub_s}'"), 0, &home_s, 0),
            ("sleep 1".to_owned(), 0, &sub_s, 900),
            ("ls /nonexistent-ledger".to_owned(), 2, &sub_s, 0),
            (format!("cd '{home_s}'"), 0, &sub_s, 0),
        ] {
            if expect.len() == 18 {
                break;
            }
            n += 1;
            bed.type_line(&pane, &line, n);
            expect.push((line, status, dir.clone(), ms));
        }
        let _ = round;
    }
    // Two interrupted: C-c while sleep runs.
    for _ in 0..2 {
        bed.send_line(&pane, "sleep 30");
        std::thread::sleep(Duration::from_millis(700));
        bed.tmux.run_ok(["send-keys", "-t", &pane, "C-c"]).unwrap();
        n += 1;
        bed.wait_ended(&pane, n, "an interrupt");
        expect.push(("sleep 30".into(), 130, home_s.clone(), 500));
    }
    let mut listed = bed.cli(&["--pane", &pane]);
    listed.reverse();
    assert_eq!(listed.len(), 20, "{listed:#?}");
    for (c, (line, status, dir, ms)) in listed.iter().zip(&expect) {
        assert_eq!(c["command"], json!(line), "{c}");
        assert_eq!(c["exit_status"], json!(status), "{c}");
        assert_eq!(c["cwd"], json!(dir), "{c}");
        let took = c["duration_ms"].as_u64().unwrap();
        assert!(took >= *ms && took < ms + 10_000, "{took} ms for {c}");
    }
    // The same through list_commands, with the filters.
    let mut s = bed.serve("list");
    let all = s.call_ok("list_commands", json!({"pane_id": pane, "limit": 100}));
    assert_eq!(all["commands"].as_array().unwrap().len(), 20);
    let failed = s.call_ok("list_commands", json!({"failed": true}));
    let statuses: Vec<i64> = failed["commands"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["exit_status"].as_i64().unwrap())
        .collect();
    assert_eq!(
        statuses.len(),
        expect.iter().filter(|e| e.1 != 0).count(),
        "{failed}"
    );
    assert!(statuses.iter().all(|&s| s != 0));
    let tenth = &listed[10]["started_at"];
    let since = s.call_ok("list_commands", json!({"since_time": tenth}));
    assert_eq!(since["commands"].as_array().unwrap().len(), 10, "{since}");
    let limited = s.call_ok("list_commands", json!({"limit": 3}));
    assert_eq!(limited["commands"][0]["command"], json!("sleep 30"));
    assert_eq!(limited["commands"].as_array().unwrap().len(), 3);
}

#[test]
fn bash_lists_twenty_commands_with_status_cwd_and_duration() {
    twenty_commands(Sh::Bash, false);
}

#[test]
fn zsh_lists_twenty_commands_with_status_cwd_and_duration() {
    twenty_commands(Sh::Zsh, false);
}

#[test]
fn fish_lists_twenty_commands_with_status_cwd_and_duration() {
    twenty_commands(Sh::Fish, false);
}

/// Commands in a session made after the daemon started, and in a second
/// session made before, are listed beside the first session's.
#[test]
fn commands_in_sessions_made_later_are_listed() {
    let bed = Bed::start("ledger-sessions", 2000);
    let home = bed.place.temp_root().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let first = bed.shell(Sh::Bash, &home);
    bed.type_line(&first, "echo in-first", 1);
    let later = bed.session("later", Sh::Bash, &home);
    bed.type_line(&later, "echo in-later; false", 1);
    let other = bed.session("other", Sh::Zsh, &home);
    bed.type_line(&other, "echo in-other", 1);
    let mut s = bed.serve("sessions");
    let listed = s.call_ok("list_commands", json!({"session": "later"}));
    let cmds = listed["commands"].as_array().unwrap();
    assert_eq!(cmds.len(), 1, "{listed}");
    assert_eq!(cmds[0]["command"], json!("echo in-later; false"));
    assert_eq!(cmds[0]["pane_id"], json!(later));
    assert_eq!(cmds[0]["exit_status"], json!(1));
    let out = s.call_ok(
        "get_command_output",
        json!({"command_id": cmds[0]["command_id"]}),
    );
    assert_eq!(out["output"], json!("in-later\n"), "{out}");
    let all = s.call_ok("list_commands", json!({}));
    let mut panes: Vec<&str> = all["commands"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["pane_id"].as_str().unwrap())
        .collect();
    panes.sort_unstable();
    let mut want = vec![first.as_str(), later.as_str(), other.as_str()];
    want.sort_unstable();
    assert_eq!(panes, want, "{all}");
    // The ledger's clients (one per session) are tmux clients, but not
    // clients panescan counts.
    let clients = bed
        .tmux
        .run_ok(["list-clients", "-F", "#{client_pid}"])
        .unwrap();
    assert!(clients.lines().count() >= 3, "{clients}");
    let info = s.call_ok("get_server_info", json!({}));
    assert_eq!(info["client_count"], json!(0), "{info} beside {clients}");
}

/// A shell already at its prompt when the daemon starts (as in a session
/// made a moment before its feed attached): its first command counts.
#[test]
fn a_shell_at_its_prompt_before_the_daemon_started_is_followed() {
    let (tmux, place, home, pane) = shell_before_a_daemon("ledger-adopt");
    let bed = Bed::with_daemon(tmux, place, false);
    // The feed attaches at the daemon's start, the shell already at its
    // prompt.
    wait_for_feed(&bed.tmux, &pane);
    bed.type_line(&pane, "echo adopted; false", 1);
    let listed = bed.cli(&["--pane", &pane]);
    assert_eq!(
        listed[0]["command"],
        json!("echo adopted; false"),
        "{listed:?}"
    );
    assert_eq!(listed[0]["exit_status"], json!(1), "{listed:?}");
    assert_eq!(listed[0]["cwd"], json!(home.display().to_string()));
    let mut s = bed.serve("adopt");
    let out = s.call_ok(
        "get_command_output",
        json!({"command_id": listed[0]["command_id"]}),
    );
    assert_eq!(out["output"], json!("adopted\n"), "{out}");
}

/// A shell that reports its directory by OSC 7 (as over ssh, where tmux
/// sees only the local ssh process's directory): the command's cwd is the
/// reported one, `%XX` undone.
#[test]
fn a_directory_reported_by_osc_7_is_the_commands_cwd() {
    let bed = Bed::start("ledger-osc7", 2000);
    let home = bed.place.temp_root().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let rc = format!(
        "{}PROMPT_COMMAND=\"$PROMPT_COMMAND\"'; printf \"\\033]7;file://far-host/srv/osc7%%20dir\\007\"'\n",
        guide_snippet(Sh::Bash)
    );
    let script = format!(
        "cd {} && exec {}",
        home.display(),
        shell_command(&home, Sh::Bash, &rc)
    );
    let pane = window_showing(&bed.tmux, None, &script, "$", &[]);
    wait_for_feed(&bed.tmux, &pane);
    std::thread::sleep(Duration::from_millis(300));
    bed.send_line(&pane, "");
    std::thread::sleep(Duration::from_millis(500));
    bed.type_line(&pane, "echo far", 1);
    let listed = bed.cli(&["--pane", &pane]);
    assert_eq!(listed[0]["command"], json!("echo far"), "{listed:?}");
    assert_eq!(listed[0]["cwd"], json!("/srv/osc7 dir"), "{listed:?}");
}

#[test]
fn fifty_thousand_lines_past_history_limit_come_back_whole() {
    fifty_thousand_lines(false);
}

/// 50,000 lines at history-limit 2,000 read back whole, the last command
/// printing nothing; with `taps`, counted from the pane's pipe (the
/// journal's reads paced by them).
fn fifty_thousand_lines(taps: bool) {
    let bed = Bed::start_with(
        if taps {
            "ledger-big-taps"
        } else {
            "ledger-big"
        },
        2000,
        taps,
    );
    let home = bed.place.temp_root().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let pane = bed.shell(Sh::Bash, &home);
    bed.type_line(&pane, "true", 1);
    // 50,000 lines, 1,000 at a time: as fast as the journal reads a pane
    // (printed faster than history-limit between two reads, lines are lost
    // and a gap says so; GUIDE.md).
    let big = "for i in $(seq 0 49); do seq $((i*1000+1)) $((i*1000+1000)); sleep 0.1; done";
    bed.type_line(&pane, big, 2);
    bed.type_line(&pane, "echo after", 3);
    let mut s = bed.serve("big");
    let listed = s.call_ok("list_commands", json!({"pane_id": pane}));
    let cmds = listed["commands"].as_array().unwrap();
    let id = |i: usize| cmds[i]["command_id"].as_str().unwrap().to_owned();
    assert_eq!(cmds[1]["command"], json!(big));
    assert_eq!(cmds[1]["output_lines"], json!(50_000), "{listed}");
    let expected: String = (1..=50_000).map(|i| format!("{i}\n")).collect();
    let whole = s.call_ok(
        "get_command_output",
        json!({"command_id": id(1), "max_lines": 100000, "max_bytes": 1048576, "from": "head"}),
    );
    assert_eq!(whole["total_lines"], json!(50_000), "{}", whole["notes"]);
    assert_eq!(whole["output"].as_str().unwrap().len(), expected.len());
    assert!(
        whole["output"].as_str().unwrap() == expected,
        "{}",
        whole["notes"]
    );
    assert_eq!(whole["truncated"], json!(false));
    let head = s.call_ok(
        "get_command_output",
        json!({"command_id": id(1), "max_lines": 2, "from": "head"}),
    );
    assert_eq!(head["output"], json!("1\n2\n"));
    let tail = s.call_ok(
        "get_command_output",
        json!({"command_id": id(1), "max_lines": 2}),
    );
    assert_eq!(tail["output"], json!("49999\n50000\n"));
    assert_eq!(tail["truncated"], json!(true));
    // A command printing nothing, and the one after it.
    let none = s.call_ok("get_command_output", json!({"command_id": id(2)}));
    assert_eq!(
        (&none["output"], &none["total_lines"]),
        (&json!(""), &json!(0)),
        "{none}"
    );
    assert_eq!(cmds[2]["output_lines"], json!(0));
    let after = s.call_ok("get_command_output", json!({"command_id": id(0)}));
    assert_eq!(after["output"], json!("after\n"));
    let err = s.call_err(
        "get_command_output",
        json!({"command_id": "0123456789abcdef"}),
    );
    assert!(err.contains("no command"), "{err}");
}

#[test]
fn marks_a_command_prints_cannot_end_it_early_or_forge_its_status() {
    let bed = Bed::start("ledger-forged", 2000);
    let home = bed.place.temp_root().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let pane = bed.shell(Sh::Bash, &home);
    // A D mark alone, then a whole fake prompt (D, A, B), then more output
    // and the real status.
    let forged = r"printf 'one\033]133;D;0\007\n'; sleep 0.5; printf '\033]133;D;0\007\033]133;A\007$ \033]133;B\007\n'; sleep 0.5; echo two; false";
    bed.type_line(&pane, forged, 1);
    // Ended by the first forged D and counted, until the shell's own D.
    let real = eventually(Duration::from_secs(20), || {
        let c = &bed.cli(&["--pane", &pane])[0];
        c["exit_status"] == json!(1) && !c["output_lines"].is_null()
    });
    assert!(
        real,
        "{:?}\n{}",
        bed.cli(&["--pane", &pane]),
        bed.daemon_said()
    );
    let mut s = bed.serve("forged");
    let listed = s.call_ok("list_commands", json!({"pane_id": pane}));
    let c = &listed["commands"][0];
    assert_eq!(c["exit_status"], json!(1), "{listed}");
    assert!(c["duration_ms"].as_u64().unwrap() >= 900, "{c}");
    let out = s.call_ok("get_command_output", json!({"command_id": c["command_id"]}));
    let text = out["output"].as_str().unwrap();
    assert!(
        text.starts_with("one\n") && text.ends_with("two\n"),
        "{out}"
    );
    assert!(out["notes"].to_string().contains("more than once"), "{out}");
}

#[test]
fn without_a_journaling_daemon_the_tools_say_how_to_start_one() {
    let tmux = PrivateServer::start("ledger-none", 80, 24).unwrap();
    let mut s = Serve::spawn_with(
        &["serve", "--socket-name", tmux.socket_name(), "--no-daemon"],
        &[],
    );
    s.initialize();
    let err = s.call_err("list_commands", json!({}));
    assert!(err.contains("panescan daemon --journal"), "{err}");
    let err = s.call_err("get_command_output", json!({"command_id": "x"}));
    assert!(err.contains("panescan daemon --journal"), "{err}");
}

#[test]
fn with_taps_bash_lists_twenty_commands_with_status_cwd_and_duration() {
    twenty_commands(Sh::Bash, true);
}

#[test]
fn with_taps_fish_lists_twenty_commands_with_status_cwd_and_duration() {
    twenty_commands(Sh::Fish, true);
}

#[test]
fn with_taps_fifty_thousand_lines_past_history_limit_come_back_whole() {
    fifty_thousand_lines(true);
}

/// With `--journal-taps`, a user's own pipes: a pane piping before the
/// daemon started is left alone (the user's pipe keeps getting its
/// bytes) and followed through its feed; a `pipe-pane` of the user's on
/// a tapped pane replaces the daemon's pipe, and the pane is followed
/// through its feed again; once the user's pipe closes, it is tapped
/// again. Commands count throughout, and a stopped daemon closes its own
/// pipes only.
#[test]
fn with_taps_a_users_pipe_wins_and_the_pane_is_followed_all_the_same() {
    let (tmux, place, home, piped) = shell_before_a_daemon("ledger-taps-pipe");
    let users = place.temp_root().join("users-pipe");
    let to = |path: &Path| format!("cat >> '{}'", path.display());
    tmux.run_ok(["pipe-pane", "-t", &piped, &to(&users)])
        .unwrap();
    let mut bed = Bed::with_daemon(tmux, place, true);
    let free = bed.shell(Sh::Bash, &home);
    wait_for_feed(&bed.tmux, &piped);
    bed.type_line(&piped, "echo users-own; false", 1);
    let kept = std::fs::read_to_string(&users).unwrap_or_default();
    assert!(kept.contains("users-own"), "the user's pipe got {kept:?}");
    assert_eq!(bed.cli(&["--pane", &piped])[0]["exit_status"], json!(1));

    bed.type_line(&free, "echo tapped", 1);
    let second = bed.place.temp_root().join("second-pipe");
    bed.tmux
        .run_ok(["pipe-pane", "-t", &free, &to(&second)])
        .unwrap();
    // The daemon's pipe ended: the pane goes back to its feed.
    std::thread::sleep(Duration::from_millis(1000));
    bed.type_line(&free, "echo replaced; false", 2);
    let got = std::fs::read_to_string(&second).unwrap_or_default();
    assert!(got.contains("replaced"), "the user's pipe got {got:?}");
    // The user's pipe closed: tapped again at the next listing.
    bed.tmux.run_ok(["pipe-pane", "-t", &free]).unwrap();
    wait_for_tap(&bed.tmux, &free);
    bed.type_line(&free, "echo retapped; (exit 3)", 3);
    let listed = bed.cli(&["--pane", &free]);
    let seen: Vec<(&Value, &Value)> = listed
        .iter()
        .map(|c| (&c["command"], &c["exit_status"]))
        .collect();
    assert_eq!(
        seen,
        [
            (&json!("echo retapped; (exit 3)"), &json!(3)),
            (&json!("echo replaced; false"), &json!(1)),
            (&json!("echo tapped"), &json!(0)),
        ],
        "{}",
        bed.daemon_said()
    );
    let mut s = bed.serve("taps-pipe");
    for (i, want) in ["retapped\n", "replaced\n", "tapped\n"].iter().enumerate() {
        let out = s.call_ok(
            "get_command_output",
            json!({"command_id": listed[i]["command_id"]}),
        );
        assert_eq!(out["output"], json!(want), "{out}");
    }
    drop(s);
    // Stopped, the daemon closes its own pipe and leaves the user's.
    stop_daemon(&mut bed.daemon);
    let pipe_of = |pane: &str| {
        bed.tmux
            .run_ok(["display-message", "-p", "-t", pane, "#{pane_pipe}"])
            .unwrap()
            .trim()
            .to_owned()
    };
    assert_eq!(pipe_of(&free), "0");
    assert_eq!(pipe_of(&piped), "1");
}

/// With `--journal-taps`, panes printing flat out when the daemon taps
/// them, their feed behind: tmux 3.3a to 3.6 crashed when a pane with
/// output queued for a control client was turned off for it (the daemon
/// pauses it first). tmux is still there, the panes are tapped, and a
/// shell beside them is still followed.
#[test]
fn with_taps_panes_printing_flat_out_are_switched_without_crashing_tmux() {
    let bed = Bed::start_with("ledger-taps-flat", 2000, true);
    let pid = || {
        bed.tmux
            .run_ok(["display-message", "-p", "#{pid}"])
            .map(|p| p.trim().to_owned())
    };
    let before = pid().unwrap();
    let flat: Vec<String> = (0..4)
        .map(|_| window_showing(&bed.tmux, None, "yes flat-out-line", "flat-out", &[]))
        .collect();
    for pane in &flat {
        wait_for_tap(&bed.tmux, pane);
    }
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(
        pid().ok(),
        Some(before),
        "tmux is gone; the daemon said:\n{}",
        bed.daemon_said()
    );
    let home = bed.place.temp_root().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let pane = bed.shell(Sh::Bash, &home);
    bed.send_line(&pane, "echo beside; false");
    // Listed with its status (its rows, asked of a tmux this busy, may
    // come too late to count its output: so with the feeds too).
    let listed = eventually(Duration::from_secs(30), || {
        bed.cli(&["--pane", &pane])
            .first()
            .is_some_and(|c| c["exit_status"] == json!(1))
    });
    assert!(listed, "{}", bed.daemon_said());
}
