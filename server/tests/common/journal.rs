//! The journal tests' pane and journal helpers: a pane printing what a
//! test appends to a command file ([`Printer`]), the journal's lines and
//! gaps of one pane ([`journal_of`]), a journaling daemon
//! ([`journaling_daemon`]).

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use panescan::testing::journal::frame::Gap;
use panescan::testing::journal::segment::{self, Read};
use panescan::testing::journal::JournalConfig;
use panescan::testing::private_server::PrivateServer;
use panescan::testing::tmux::ServerSpec;

use super::daemon::Place;

/// A pane of its own (history-limit `limit`) running `sh` on the lines
/// appended to a command file, so a test prints without a prompt or echo.
pub struct Printer {
    pub tmux: PrivateServer,
    pub pane: String,
    pub commands: PathBuf,
}

impl Printer {
    pub fn start(label: &str, limit: u32, dir: &Path) -> Printer {
        let tmux = PrivateServer::start(label, 60, 12).expect("tmux starts");
        let commands = dir.join("commands.sh");
        std::fs::write(&commands, "").unwrap();
        tmux.run_ok(["set-option", "-g", "history-limit", &limit.to_string()])
            .unwrap();
        let shell = format!("tail -f {} | sh", commands.display());
        let pane = tmux
            .run_ok([
                "new-window",
                "-d",
                "-P",
                "-F",
                "#{pane_id}",
                "-n",
                "j",
                &shell,
            ])
            .unwrap()
            .trim()
            .to_owned();
        Printer {
            tmux,
            pane,
            commands,
        }
    }

    pub fn run(&self, script: &str) {
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&self.commands)
            .unwrap();
        writeln!(f, "{script}").unwrap();
    }

    /// tmux's history lines (wrapped lines joined), as capture-pane gives;
    /// none when the history is empty (`-E -1` then gives the screen's
    /// first line: the size is asked in the same command list).
    pub fn history(&self) -> Vec<String> {
        let out = self
            .tmux
            .run_ok([
                "display-message",
                "-p",
                "-t",
                &self.pane,
                "#{history_size}",
                ";",
                "capture-pane",
                "-p",
                "-J",
                "-S",
                "-",
                "-E",
                "-1",
                "-t",
                &self.pane,
            ])
            .unwrap();
        let mut lines = out.lines();
        if lines.next().is_none_or(|size| size.trim() == "0") {
            return Vec::new();
        }
        lines.map(str::to_owned).collect()
    }

    pub fn history_size(&self) -> u64 {
        self.tmux
            .run_ok(["display-message", "-p", "-t", &self.pane, "#{history_size}"])
            .unwrap()
            .trim()
            .parse()
            .unwrap()
    }

    /// Waits until the pane's output ends with `marker` (on screen or in
    /// history).
    pub fn wait_for(&self, marker: &str) {
        let shown = super::eventually(Duration::from_secs(20), || {
            self.tmux
                .run_ok(["capture-pane", "-p", "-J", "-S", "-", "-t", &self.pane])
                .is_ok_and(|t| t.contains(marker))
        });
        assert!(shown, "the pane never showed {marker}");
    }

    pub fn spec(&self) -> ServerSpec {
        ServerSpec::named(self.tmux.socket_name())
    }
}

/// The journal's lines of `pane` and its gaps (and those over every pane).
pub fn journal_of(dir: &Path, pane: &str) -> (Vec<String>, Vec<Gap>, Vec<String>) {
    let mut lines = Vec::new();
    let mut gaps = Vec::new();
    let mut skipped = Vec::new();
    segment::read(dir, i64::MIN, i64::MAX, &mut |read| {
        match read {
            Read::Frame(d) => {
                for (i, (o, _)) in d.lines.iter().enumerate() {
                    if d.origins[*o].pane == pane {
                        lines.push(String::from_utf8_lossy(d.line(i)).into_owned());
                    }
                }
                for g in &d.gaps {
                    if matches!(d.origins[g.origin].pane.as_str(), "*")
                        || d.origins[g.origin].pane == pane
                    {
                        gaps.push(g.clone());
                    }
                }
            }
            Read::Skipped { segment, why } => skipped.push(format!("{} {why}", segment.display())),
        }
        true
    })
    .unwrap();
    (lines, gaps, skipped)
}

pub fn config(dir: &Path) -> JournalConfig {
    JournalConfig {
        dir: dir.to_owned(),
        max_bytes: 1 << 30,
        max_age_ms: 86_400_000,
        keep_secrets: false,
        taps: false,
    }
}

/// Lines that must not be journaled twice: all but blank ones.
pub fn assert_none_twice(lines: &[String]) {
    let mut seen: HashMap<&str, usize> = HashMap::new();
    for l in lines.iter().filter(|l| !l.trim().is_empty()) {
        *seen.entry(l).or_default() += 1;
    }
    let twice: Vec<_> = seen.iter().filter(|(_, n)| **n > 1).collect();
    assert!(twice.is_empty(), "journaled twice: {twice:?}");
}

/// Stops a daemon as a user would (SIGTERM) and waits for it: its clean
/// stop reads every pane once more and flushes.
pub fn stop_daemon(daemon: &mut std::process::Child) {
    let _ = Command::new("kill")
        .args(["-TERM", &daemon.id().to_string()])
        .status();
    let _ = daemon.wait();
}

/// `panescan daemon --journal` on `place`, its stderr in `log`.
pub fn journaling_daemon(
    place: &Place,
    socket: &str,
    journal: &Path,
    log: &Path,
) -> std::process::Child {
    journaling_daemon_with(place, socket, journal, log, None)
}

/// [`journaling_daemon`] running `tmux` (its `PANESCAN_TMUX`) when given.
pub fn journaling_daemon_with(
    place: &Place,
    socket: &str,
    journal: &Path,
    log: &Path,
    tmux: Option<&Path>,
) -> std::process::Child {
    journaling_daemon_args(place, socket, journal, log, tmux, &[])
}

/// [`journaling_daemon_with`] given more arguments (`--journal-taps`).
pub fn journaling_daemon_args(
    place: &Place,
    socket: &str,
    journal: &Path,
    log: &Path,
    tmux: Option<&Path>,
    more: &[&str],
) -> std::process::Child {
    let mut daemon = Command::new(env!("CARGO_BIN_EXE_panescan"));
    if let Some(tmux) = tmux {
        daemon.env("PANESCAN_TMUX", tmux);
    }
    let child = daemon
        .args(["daemon", "--journal", "--idle-exit", "0", "-L", socket])
        .args(more)
        .arg("--journal-dir")
        .arg(journal)
        .arg("--runtime-dir")
        .arg(place.dir())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(log).unwrap())
        .spawn()
        .unwrap();
    assert!(
        super::eventually(Duration::from_secs(10), || place
            .dir()
            .join("panescan.sock")
            .exists()),
        "no socket: {}",
        std::fs::read_to_string(log).unwrap_or_default()
    );
    child
}

/// Waits until a journaling daemon's ledger has a feed (a control client
/// without `no-output`, which the daemon's own client has) attached to
/// `pane`'s session: marks printed before it attached are never seen, so a
/// test types its first Enter only after this.
pub fn wait_for_feed(tmux: &PrivateServer, pane: &str) {
    let session = tmux
        .run_ok(["display-message", "-p", "-t", pane, "#{session_name}"])
        .unwrap()
        .trim()
        .to_owned();
    let fed = super::eventually(Duration::from_secs(20), || {
        tmux.run_ok(["list-clients", "-t", &session, "-F", "#{client_flags}"])
            .is_ok_and(|c| c.lines().any(|f| !f.contains("no-output")))
    });
    let clients = tmux.run_ok(["list-clients", "-F", "#{session_name} #{client_flags}"]);
    assert!(fed, "no feed attached to {session} ({pane}): {clients:?}");
}

/// Waits until a daemon started with `--journal-taps` has tapped `pane`
/// (its pipe open) and switched it from its feed (a moment later).
pub fn wait_for_tap(tmux: &PrivateServer, pane: &str) {
    let tapped = super::eventually(Duration::from_secs(20), || {
        tmux.run_ok(["display-message", "-p", "-t", pane, "#{pane_pipe}"])
            .is_ok_and(|p| p.trim() == "1")
    });
    assert!(tapped, "{pane} was never tapped");
    std::thread::sleep(Duration::from_millis(500));
}
