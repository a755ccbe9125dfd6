//! tmux's own reports of the commands its panes' shells ran (tmux 3.8:
//! OSC 133 D fires the `pane-command-finished` event, with the pane, the
//! status tmux parsed and the command's start and end in whole seconds).
//!
//! A control client receives no event as a notification (control-notify.c
//! sends only its fixed list), so the reporter is a control client of its
//! own that runs `wait-for -E -v pane-command-finished`: tmux holds the
//! command until the event fires in any pane of any session, then prints
//! its payload as `key=value` lines (cmd-wait-for.c; tmux 3.8 writes them
//! after the command's `%end`, so they are read wherever they come). The
//! next wait is written only once a report was read whole.
//!
//! Must hold: the client never has more than that one command queued.
//! tmux 3.8 (at c1f947a) exits with a fatal error when a client leaves
//! while a `wait-for -E` is held with another command queued behind it
//! (measured: NOTES.md, "tmux 3.8's command events"), so this client
//! never uses the connection's framing (a nonce command after each
//! request). An event fired while no wait is held (between a report and
//! the next wait) is not reported: the reader must keep its own account.
//! Whether a server reports at all is probed ([`Tmux::reports_commands`]),
//! never guessed from its version.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use crossbeam_channel::Sender;

use super::connection;
use super::{PaneId, SessionId, Tmux, TmuxCommand, TmuxError};
use crate::sync::lock;

/// The command the reporter's client runs, again after each report.
const WAIT: &[u8] = b"wait-for -E -v pane-command-finished\n";
/// The event's name; the probe asks whether tmux knows it.
const EVENT: &str = "pane-command-finished";
/// A payload line longer than this is not a report's (tmux's are short).
const MAX_LINE: usize = 4096;

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

/// What the reporter tells its reader.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReportEvent {
    /// A command ended.
    Finished(CommandReport),
    /// The reporter's client is gone (its session closed, the server
    /// died): a new one must be attached.
    Closed,
}

/// The reporter: a control client attached to one session (events are
/// server-wide); closed when dropped.
#[derive(Debug)]
pub struct Reporter {
    child: Arc<Mutex<Child>>,
    session: SessionId,
    pid: u32,
    connection: Arc<connection::Shared>,
}

impl Reporter {
    /// The session its client is attached to.
    pub fn session(&self) -> SessionId {
        self.session
    }
}

impl Drop for Reporter {
    fn drop(&mut self) {
        // Its one command is the held wait: ending the client leaves
        // nothing queued behind it (see the module's must-hold).
        let mut child = lock(&self.child);
        let _ = child.kill();
        let _ = child.wait();
        self.connection.forget_feed(self.pid);
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

    /// Attaches a reporter to `session`: each command's end in any pane
    /// of the server goes to `events`, and its end as
    /// [`ReportEvent::Closed`].
    pub fn command_reporter(
        &self,
        session: SessionId,
        events: Sender<ReportEvent>,
    ) -> Result<Reporter, TmuxError> {
        let connection = self.inner.connection().clone();
        let id = session.to_string();
        // Not read-only (`-r`): tmux refuses `wait-for` to a read-only
        // client. `no-output`: it reads no pane's bytes.
        let args = [
            "-C",
            "attach-session",
            "-E",
            "-f",
            "no-output,ignore-size",
            "-t",
            id.as_str(),
        ];
        let mut child = connection
            .endpoint()
            .tmux(&args)?
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| TmuxError::spawn("", e))?;
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| TmuxError::spawn_without("no stdout"))?;
        let mut stdin = child
            .stdin
            .take()
            .ok_or_else(|| TmuxError::spawn_without("no stdin"))?;
        let pid = child.id();
        connection.leave_out(pid);
        let child = Arc::new(Mutex::new(child));
        let reporter = Reporter {
            child,
            session,
            pid,
            connection,
        };
        stdin
            .write_all(WAIT)
            .and_then(|()| stdin.flush())
            .map_err(|e| TmuxError::ConnectionLost(format!("the reporter's client: {e}")))?;
        std::thread::Builder::new()
            .name("tmux-command-reports".into())
            .spawn(move || read_reports(stdout, stdin, &events))
            .map_err(|e| TmuxError::spawn("", e))?;
        Ok(reporter)
    }
}

/// Reads the client's lines: a report each time a payload is whole, the
/// next wait written after it; [`ReportEvent::Closed`] at the end.
fn read_reports(stdout: impl std::io::Read, mut stdin: ChildStdin, events: &Sender<ReportEvent>) {
    let mut reader = BufReader::new(stdout);
    let mut payload = Payload::default();
    let mut line = Vec::new();
    loop {
        line.clear();
        match reader.read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        if line.len() > MAX_LINE {
            continue;
        }
        let text = String::from_utf8_lossy(&line);
        let text = text.trim_end_matches(['\n', '\r']);
        if text.starts_with("%exit") {
            break;
        }
        let Some(report) = payload.line(text) else {
            continue;
        };
        if events.send(ReportEvent::Finished(report)).is_err() {
            break;
        }
        if stdin.write_all(WAIT).and_then(|()| stdin.flush()).is_err() {
            break;
        }
    }
    let _ = events.send(ReportEvent::Closed);
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
    /// Takes one line; the report once its payload is whole. Guard and
    /// notification lines (`%...`) and unknown keys are passed over.
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
        // As tmux 3.8 wrote it to a control client: the guard first, the
        // payload after it.
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
