//! tmux's own reports of the commands its panes' shells ran (tmux 3.8:
//! OSC 133 D fires the `pane-command-finished` event, with the pane, the
//! status tmux parsed and the command's start and end in whole seconds).
//!
//! A control client receives no event as a notification (control-notify.c
//! sends only its fixed list), so the reporter runs `tmux wait-for -E -v
//! pane-command-finished` again and again: tmux holds that client until
//! the event fires in any pane of any session, prints the payload as
//! `key=value` lines (cmd-wait-for.c) and the client exits. A client of
//! its own each time, never attached: it fires no hook and counts as no
//! session's client.
//!
//! Must hold: no client ever waits twice. tmux 3.8 (at c1f947a) aborts
//! when a client that waited for an event once leaves while it waits
//! again (a control client running `wait-for -E` in a loop, then killed or
//! detached: measured, NOTES.md "tmux 3.8's command events"), while a
//! client killed during its first wait is harmless. An event fired between
//! one client's exit and the next one's wait is not reported: the reader
//! keeps its own account (the marks). Whether a server reports at all is
//! probed ([`Tmux::reports_commands`]), never guessed from its version.

use std::io::{BufRead, BufReader};
use std::process::{Child, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crossbeam_channel::Sender;

use super::launch::Endpoint;
use super::{PaneId, Tmux, TmuxCommand, TmuxError};
use crate::sync::lock;

/// The event's name; the probe asks whether tmux knows it.
const EVENT: &str = "pane-command-finished";
/// A payload line longer than this is not a report's (tmux's are short).
const MAX_LINE: usize = 4096;
/// A client that failed (no server yet, a refused command) is tried again
/// after this long, so a gone server costs one process a second.
const RETRY: Duration = Duration::from_secs(1);

/// One command's end, as tmux saw it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CommandReport {
    /// The pane.
    pub pane: PaneId,
    /// The status tmux parsed from the D mark (0 when the mark had none,
    /// 255 when it was not a number from 0 to 255).
    pub status: Option<i32>,
    /// When tmux read the C mark (seconds since the epoch), if it did.
    pub start_s: Option<i64>,
    /// When tmux read the D mark (seconds since the epoch).
    pub end_s: Option<i64>,
}

/// The running reporter; stopped (its waiting client killed) when dropped.
#[derive(Debug)]
pub struct Reporter {
    stop: Arc<AtomicBool>,
    /// The client waiting now.
    child: Arc<Mutex<Option<Child>>>,
}

impl Drop for Reporter {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // A client killed in its first wait leaves tmux as it was.
        if let Some(mut c) = lock(&self.child).take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Tmux {
    /// Whether the server fires `pane-command-finished` (tmux 3.8 and
    /// later): `wait-for -E -l` lists the waiters of an event tmux knows,
    /// and older tmux refuses `-E`.
    pub fn reports_commands(&self, deadline: Instant) -> bool {
        let probe = TmuxCommand::new("wait-for")
            .flag("-E")
            .flag("-l")
            .arg(EVENT);
        self.run(&probe, deadline).is_ok()
    }

    /// Starts reporting each command's end in any pane of the server to
    /// `reports`, until the reporter is dropped or `reports` closes.
    pub fn command_reporter(&self, reports: Sender<CommandReport>) -> Result<Reporter, TmuxError> {
        let at = self.inner.connection().endpoint().clone();
        let stop = Arc::new(AtomicBool::new(false));
        let child = Arc::new(Mutex::new(None));
        let reporter = Reporter {
            stop: stop.clone(),
            child: child.clone(),
        };
        std::thread::Builder::new()
            .name("tmux-command-reports".into())
            .spawn(move || report_loop(&at, &stop, &child, &reports))
            .map_err(|e| TmuxError::spawn("", e))?;
        Ok(reporter)
    }
}

/// One waiting client after another until stopped.
fn report_loop(
    at: &Endpoint,
    stop: &AtomicBool,
    slot: &Mutex<Option<Child>>,
    reports: &Sender<CommandReport>,
) {
    while !stop.load(Ordering::SeqCst) {
        let report = wait_once(at, stop, slot);
        match report {
            Some(r) => {
                if reports.send(r).is_err() {
                    return;
                }
            }
            None => std::thread::sleep(RETRY),
        }
    }
}

/// Runs one waiting client: its report, or `None` when it failed.
fn wait_once(
    at: &Endpoint,
    stop: &AtomicBool,
    slot: &Mutex<Option<Child>>,
) -> Option<CommandReport> {
    let mut child = at
        .tmux(&["wait-for", "-E", "-v", EVENT])
        .ok()?
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let stdout = child.stdout.take();
    {
        let mut slot = lock(slot);
        // Stopped while it started: it must not wait on.
        if stop.load(Ordering::SeqCst) {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        *slot = Some(child);
    }
    let report = stdout.and_then(read_report);
    if let Some(mut c) = lock(slot).take() {
        let _ = c.wait();
    }
    report
}

/// Reads one client's output: its payload's report, if whole.
fn read_report(stdout: impl std::io::Read) -> Option<CommandReport> {
    let mut reader = BufReader::new(stdout);
    let mut payload = Payload::default();
    let mut line = Vec::new();
    loop {
        line.clear();
        match reader.read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => return None,
            Ok(_) => {}
        }
        if line.len() > MAX_LINE {
            continue;
        }
        let text = String::from_utf8_lossy(&line);
        if let Some(report) = payload.line(text.trim_end_matches(['\n', '\r'])) {
            return Some(report);
        }
    }
}

/// One payload being read: its keys come sorted (tmux keeps them in a
/// tree), so `window` comes after every key a report needs.
#[derive(Debug, Default)]
struct Payload {
    pane: Option<PaneId>,
    status: Option<i32>,
    start_s: Option<i64>,
    end_s: Option<i64>,
    event: bool,
}

impl Payload {
    /// Takes one line; the report once its payload is whole. Unknown keys
    /// (and `%` lines, should a control client print them) are passed
    /// over.
    fn line(&mut self, text: &str) -> Option<CommandReport> {
        if text.starts_with('%') {
            return None;
        }
        let (key, value) = text.split_once('=')?;
        match key {
            "command_status" => self.status = value.parse().ok(),
            "command_start_time" => self.start_s = value.parse().ok(),
            "command_end_time" => self.end_s = value.parse().ok(),
            "event" => self.event = value == EVENT,
            "pane" => self.pane = PaneId::parse(value).ok(),
            "window" => {
                let whole = std::mem::take(self);
                return whole
                    .pane
                    .filter(|_| whole.event)
                    .map(|pane| CommandReport {
                        pane,
                        status: whole.status,
                        start_s: whole.start_s,
                        end_s: whole.end_s,
                    });
            }
            _ => {}
        }
        None
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    fn read(lines: &[&str]) -> Vec<CommandReport> {
        let mut p = Payload::default();
        lines.iter().filter_map(|l| p.line(l)).collect()
    }

    #[test]
    fn a_payload_is_a_report_once_whole_and_guards_are_passed_over() {
        // As tmux 3.8 prints it (to a control client: after the guard).
        let got = read(&[
            "%begin 1796592896 319 1",
            "%end 1796592896 319 1",
            "command_duration=1",
            "command_end_time=1796592898",
            "command_start_time=1796592897",
            "command_status=130",
            "event=pane-command-finished",
            "pane=%7",
            "session=$1",
            "window=@1",
            "window_index=0",
            "%sessions-changed",
            // No C seen: no start; a bare D: status 0 from tmux.
            "command_end_time=1796592899",
            "command_status=0",
            "event=pane-command-finished",
            "pane=%8",
            "window=@2",
        ]);
        assert_eq!(
            got,
            vec![
                CommandReport {
                    pane: PaneId::from_number(7),
                    status: Some(130),
                    start_s: Some(1_796_592_897),
                    end_s: Some(1_796_592_898),
                },
                CommandReport {
                    pane: PaneId::from_number(8),
                    status: Some(0),
                    start_s: None,
                    end_s: Some(1_796_592_899),
                },
            ]
        );
    }

    #[test]
    fn another_event_or_a_payload_without_a_pane_is_no_report() {
        let got = read(&[
            "event=pane-command-started",
            "pane=%1",
            "window=@1",
            "event=pane-command-finished",
            "pane=nonsense",
            "window=@1",
            "garbage without equals",
            "=",
            "window=@1",
        ]);
        assert!(got.is_empty(), "{got:?}");
    }
}
