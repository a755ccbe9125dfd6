//! The command ledger with tmux's own command reports: tmux 3.8 (built
//! from third_party/tmux-next by `.ci/build-tmux-next`, or named by
//! `PANESCAN_TMUX_NEXT`) fires `pane-command-finished` with the status and
//! times it read, and the ledger takes them (`source: "tmux"`); on the tmux
//! of `PATH` (3.3a, which fires nothing) the same commands are listed
//! through the OSC 133 marks alone. Both in bash with GUIDE.md's snippet,
//! in a session made after the daemon started: exits 0, 1, 3 and 130 (C-c),
//! with their durations. With tmux 3.8 a daemon killed while its reporter
//! waits must leave tmux running (tmux 3.8 aborts when a client leaves with
//! a `wait-for -E` held and more queued: NOTES.md).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Child;
use std::time::Duration;

use common::daemon::Place;
use common::journal::{journaling_daemon_with, wait_for_feed};
use common::shells::{guide_snippet, shell_command, Sh};
use common::{eventually, next_tmux, session_showing};
use panescan::testing::journal::ledger::{read_all, Command};
use panescan::testing::private_server::PrivateServer;

struct Bed {
    tmux: PrivateServer,
    journal: PathBuf,
    log: PathBuf,
    daemon: Child,
    _place: Place,
}

impl Bed {
    fn start(label: &str, program: Option<&Path>) -> Bed {
        let tmux = match program {
            Some(p) => PrivateServer::start_with(label, 100, 24, p),
            None => PrivateServer::start(label, 100, 24),
        }
        .unwrap();
        let place = Place::new(label);
        let journal = place.temp_root().join("journal");
        let log = place.temp_root().join("daemon.stderr");
        let daemon = journaling_daemon_with(&place, tmux.socket_name(), &journal, &log, program);
        Bed {
            tmux,
            journal,
            log,
            daemon,
            _place: place,
        }
    }

    /// A session made now (after the daemon started) running bash with
    /// GUIDE.md's snippet; its pane once the prompt shows.
    fn bash_session(&self, dir: &Path) -> String {
        let script = format!(
            "cd {} && exec {}",
            dir.display(),
            shell_command(dir, Sh::Bash, &guide_snippet(Sh::Bash))
        );
        let pane = session_showing(&self.tmux, "later", (100, 24), &script, "$");
        wait_for_feed(&self.tmux, &pane);
        // As a person would: a moment before the first Enter.
        std::thread::sleep(Duration::from_millis(1000));
        self.type_text(&pane, "\n");
        std::thread::sleep(Duration::from_millis(500));
        pane
    }

    /// Puts `text` into `pane`'s terminal as typed (a line feed is Enter)
    /// by pasting it (as a terminal's paste would).
    fn type_text(&self, pane: &str, text: &str) {
        self.tmux
            .run_ok(["set-buffer", "-b", "ledger-test", "--", text])
            .unwrap();
        self.tmux
            .run_ok(["paste-buffer", "-d", "-b", "ledger-test", "-t", pane])
            .unwrap();
    }

    /// C-c as the terminal gives it: SIGINT to what the pane's shell runs
    /// (tmux 3.8 pastes a control character as its caret form).
    fn interrupt(&self, pane: &str) {
        let shell = self
            .tmux
            .run_ok(["display-message", "-p", "-t", pane, "#{pane_pid}"])
            .unwrap();
        let out = std::process::Command::new("ps")
            .args(["-o", "pid=", "--ppid", shell.trim()])
            .output()
            .unwrap();
        let children = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(!children.trim().is_empty(), "nothing runs in {pane}");
        for pid in children.split_whitespace() {
            let killed = std::process::Command::new("kill")
                .args(["-INT", pid])
                .status()
                .unwrap();
            assert!(killed.success(), "kill -INT {pid}");
        }
    }

    /// The pane's commands, each as its last record says, oldest first.
    fn commands(&self, pane: &str) -> Vec<Command> {
        let (all, _) = read_all(&self.journal).unwrap_or_default();
        let mut last: HashMap<String, Command> = HashMap::new();
        for c in all.into_iter().filter(|c| c.pane_id == pane) {
            last.insert(c.command_id.clone(), c);
        }
        let mut out: Vec<Command> = last.into_values().collect();
        out.sort_by_key(|c| c.started_ms);
        out
    }

    /// Waits until the pane's `n`th command ended with its source `source`.
    fn wait_ended(&self, pane: &str, n: usize, source: &str) -> Vec<Command> {
        let done = eventually(Duration::from_secs(30), || {
            let cs = self.commands(pane);
            cs.len() >= n && cs.iter().all(|c| c.ended_ms.is_some()) && cs[n - 1].source == source
        });
        assert!(
            done,
            "command {n} of {pane} not ended with source {source}: {:#?}\ndaemon: {}",
            self.commands(pane),
            std::fs::read_to_string(&self.log).unwrap_or_default()
        );
        self.commands(pane)
    }
}

impl Drop for Bed {
    fn drop(&mut self) {
        let _ = self.daemon.kill();
        let _ = self.daemon.wait();
    }
}

/// (typed line, exit status, at least this long in ms); `None` for the
/// line: `sleep 30` interrupted by C-c.
const CASES: [(Option<&str>, i32, i64); 5] = [
    (Some("true"), 0, 0),
    (Some("false"), 1, 0),
    (Some("sleep 1"), 0, 900),
    (Some("sh -c 'exit 3'"), 3, 0),
    (None, 130, 500),
];

/// Runs [`CASES`] in a new session and checks what the ledger says of
/// each; with `tmux_next`, also that it says what tmux itself read.
fn statuses_and_durations(bed: &Bed, tmux_next: bool) {
    let source = if tmux_next { "tmux" } else { "osc133" };
    let home = bed._place.temp_root().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let pane = bed.bash_session(&home);
    for (i, (line, status, ms)) in CASES.iter().enumerate() {
        let typed = line.unwrap_or("sleep 30");
        bed.type_text(&pane, &format!("{typed}\n"));
        if line.is_none() {
            std::thread::sleep(Duration::from_millis(700));
            bed.interrupt(&pane);
        }
        let cs = bed.wait_ended(&pane, i + 1, source);
        let c = &cs[i];
        assert_eq!(c.command.as_deref(), Some(typed), "{c:#?}");
        assert_eq!(c.exit_status, Some(*status), "{c:#?}");
        let took = c.ended_ms.unwrap() - c.started_ms;
        assert!(took >= *ms && took < ms + 10_000, "{took} ms for {c:#?}");
        if tmux_next {
            // What tmux read of the same command, in whole seconds.
            let told = bed
                .tmux
                .run_ok([
                    "display-message",
                    "-p",
                    "-t",
                    &pane,
                    "#{pane_command_status} #{pane_command_start_time} #{pane_command_end_time}",
                ])
                .unwrap();
            let told: Vec<i64> = told
                .split_whitespace()
                .map(|w| w.parse().unwrap())
                .collect();
            assert_eq!(
                (
                    i64::from(c.exit_status.unwrap()),
                    c.started_ms / 1000,
                    c.ended_ms.unwrap() / 1000
                ),
                (told[0], told[1], told[2]),
                "{c:#?}"
            );
        }
    }
    let log = std::fs::read_to_string(&bed.log).unwrap_or_default();
    assert_eq!(
        log.contains("tmux reports pane-command-finished"),
        tmux_next,
        "{log}"
    );
}

#[test]
fn tmux_reports_each_commands_status_and_times() {
    let program = next_tmux();
    let mut bed = Bed::start("ledger-next", Some(&program));
    statuses_and_durations(&bed, true);
    // The daemon dies with its reporter's wait held; a command ending
    // afterwards fires the event again: tmux must go on.
    bed.daemon.kill().unwrap();
    bed.daemon.wait().unwrap();
    for _ in 0..2 {
        bed.type_text("later:", "true\n");
        std::thread::sleep(Duration::from_millis(300));
    }
    let alive = bed.tmux.run_ok(["list-sessions", "-F", "#{session_name}"]);
    assert!(
        alive.as_deref().is_ok_and(|s| s.contains("later")),
        "tmux did not outlive the reporter: {alive:?}"
    );
}

#[test]
fn without_tmux_reports_the_marks_alone_say_the_same() {
    let bed = Bed::start("ledger-marks", None);
    statuses_and_durations(&bed, false);
}

/// tmux 3.7's `send-keys` refuses to type through a read-only client, and
/// without `-c` it goes through the best client of the target's session:
/// in a session nothing else is attached to, that is the ledger's feed.
/// The feeds attach read-write, so a user's `send-keys` still types.
#[test]
fn a_users_send_keys_types_beside_the_ledgers_feed_on_tmux_next() {
    let program = next_tmux();
    let bed = Bed::start("ledger-next-keys", Some(&program));
    let home = bed._place.temp_root().join("home");
    std::fs::create_dir_all(&home).unwrap();
    // The daemon's own client (`no-output`) attaches to the first session
    // tmux lists, by name: "later" comes before "main", so it is made only
    // once that client is in, for the feed alone.
    let daemons_client_in = eventually(Duration::from_secs(20), || {
        bed.tmux
            .run_ok(["list-clients", "-F", "#{client_flags}"])
            .is_ok_and(|c| c.contains("no-output"))
    });
    assert!(daemons_client_in, "the daemon's client never attached");
    let pane = bed.bash_session(&home);
    let attached = eventually(Duration::from_secs(20), || {
        bed.tmux
            .run_ok(["list-clients", "-t", "later", "-F", "#{client_flags}"])
            .is_ok_and(|c| c.lines().count() == 1)
    });
    let clients = bed
        .tmux
        .run_ok(["list-clients", "-F", "#{session_name} #{client_flags}"]);
    assert!(
        attached,
        "the feed never attached to the session: {clients:?}"
    );
    let typed = std::process::Command::new(&program)
        .args(["-L", bed.tmux.socket_name(), "send-keys", "-t", &pane])
        .args(["echo user-$((8*9))", "Enter"])
        .output()
        .unwrap();
    assert!(
        typed.status.success(),
        "a user's send-keys failed beside the feed ({clients:?}): {}",
        String::from_utf8_lossy(&typed.stderr)
    );
    let shown = eventually(Duration::from_secs(10), || {
        bed.tmux
            .run_ok(["capture-pane", "-p", "-t", &pane])
            .is_ok_and(|s| s.lines().any(|l| l == "user-72"))
    });
    assert!(shown, "the user's send-keys typed nothing");
}

/// A command that prints OSC 133 D marks of its own: tmux 3.8 reports the
/// first D it parses (the forged status 0), the marks count the last (the
/// shell's 1), and the ledger keeps the marks' account.
#[test]
fn a_forged_d_does_not_give_a_command_tmuxs_status_of_it_on_tmux_next() {
    let program = next_tmux();
    let bed = Bed::start("ledger-next-forged", Some(&program));
    let home = bed._place.temp_root().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let pane = bed.bash_session(&home);
    let forged = r"printf 'one\033]133;D;0\007\n'; sleep 0.5; printf '\033]133;D;0\007\033]133;A\007$ \033]133;B\007\n'; sleep 0.5; echo two; false";
    bed.type_text(&pane, &format!("{forged}\n"));
    let last = || bed.commands(&pane).last().cloned();
    let ended = eventually(Duration::from_secs(20), || {
        last().is_some_and(|c| c.exit_status == Some(1))
    });
    assert!(
        ended,
        "{:#?}\ndaemon: {}",
        last(),
        std::fs::read_to_string(&bed.log).unwrap_or_default()
    );
    // tmux's report of the forged D, or its formats at the next prompt,
    // come a moment later: they must not take the command over.
    std::thread::sleep(Duration::from_millis(2000));
    let c = last().unwrap();
    assert_eq!(
        (c.exit_status, c.source.as_str()),
        (Some(1), "osc133"),
        "{c:#?}"
    );
    assert_eq!(bed.commands(&pane).len(), 1, "{:#?}", bed.commands(&pane));
    assert!(
        c.notes.iter().any(|n| n.contains("more than once")),
        "{c:#?}"
    );
}
