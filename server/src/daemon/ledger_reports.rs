//! The ledger's second witness on tmux 3.8 and later: tmux's own report of
//! each command's end (`tmux/command_reports.rs`), beside the OSC 133
//! marks the feeds read. Where a report comes for a command the marks
//! ended, the command takes tmux's status and tmux's times: tmux stamps a
//! mark when it parses it, while a feed's bytes reach the daemon later
//! under load; tmux's stamps are whole seconds, so a mark's millisecond
//! stamp is kept where it lies inside tmux's second and moved to its edge
//! where it does not. Such a command's `source` is `tmux`.
//!
//! What still needs the feeds: the command line (tmux keeps none), the
//! rows its output lies on (no format gives a mark's row) and whether
//! typing ran ahead of the prompt. On tmux without the event, or while no
//! reporter is attached, nothing here changes a record.
//!
//! Must hold: a report is matched to a command of its pane only, and only
//! to the last end the marks gave before the pane's next C; a report that
//! finds none is dropped at that C, so it never lands on a later command.
//! A command the marks ended twice (it printed a D of its own) takes no
//! report: tmux reports the first D, the ledger counts the last.

use std::collections::HashMap;
use std::time::Instant;

use crossbeam_channel::{Receiver, Sender};

use crate::journal::ledger::Command;
use crate::tmux::command_reports::{CommandReport, Reporter};
use crate::tmux::{PaneId, Tmux};

/// What the ledger's records say of a command tmux reported.
pub const SOURCE: &str = "tmux";
/// How far behind tmux's stamp of a D mark the feed may bring it (a
/// loaded feed's queue); a report further off is another D's.
const MAX_LAG_MS: i64 = 30_000;

/// The reporter of one followed server and the reports not yet matched.
#[derive(Debug)]
pub struct Reports {
    /// The server fires `pane-command-finished` (probed once).
    supported: bool,
    /// Kept for its drop, which stops it.
    _reporter: Option<Reporter>,
    rx: Receiver<CommandReport>,
    /// Kept so that `rx` never disconnects (with no reporter, or once it
    /// ended): a disconnected channel is always ready, and the follower
    /// waiting on it would spin.
    _tx: Sender<CommandReport>,
    /// Reports that came before their D mark.
    early: HashMap<PaneId, CommandReport>,
    /// The command each pane's last D ended, its report still to come.
    awaiting: HashMap<PaneId, String>,
}

impl Reports {
    /// Asks `tmux` whether it reports commands, and starts its reporter
    /// if it does.
    pub fn probe(tmux: &Tmux, deadline: Instant) -> Reports {
        let (tx, rx) = crossbeam_channel::unbounded();
        let reporter = if tmux.reports_commands(deadline) {
            match tmux.command_reporter(tx.clone()) {
                Ok(r) => {
                    eprintln!("panescan ledger: tmux reports pane-command-finished: statuses and times come from tmux, the command lines and output rows from the OSC 133 marks");
                    Some(r)
                }
                Err(e) => {
                    eprintln!("panescan ledger: no command reports from tmux: {e}");
                    None
                }
            }
        } else {
            None
        };
        Reports::with(reporter, tx, rx)
    }

    /// No reporter: the marks' account stands alone (tmux before 3.8).
    #[cfg(test)]
    pub fn none() -> Reports {
        let (tx, rx) = crossbeam_channel::unbounded();
        Reports::with(None, tx, rx)
    }

    fn with(
        reporter: Option<Reporter>,
        tx: Sender<CommandReport>,
        rx: Receiver<CommandReport>,
    ) -> Reports {
        Reports {
            supported: reporter.is_some(),
            _reporter: reporter,
            rx,
            _tx: tx,
            early: HashMap::new(),
            awaiting: HashMap::new(),
        }
    }

    /// Where the reports arrive.
    pub fn receiver(&self) -> Receiver<CommandReport> {
        self.rx.clone()
    }

    /// A C mark in `pane`: what was not matched by now never will be.
    pub fn started(&mut self, pane: PaneId) {
        self.early.remove(&pane);
        self.awaiting.remove(&pane);
    }

    /// A later D replaced the end of `pane`'s command: no report of tmux's
    /// (of the first D) is applied to it.
    pub fn superseded(&mut self, pane: PaneId) {
        self.early.remove(&pane);
        self.awaiting.remove(&pane);
    }

    /// A D mark ended `c`: tmux's report applied if it came first, else
    /// awaited. Whether `c` changed.
    pub fn ended(&mut self, pane: PaneId, c: &mut Command) -> bool {
        if !self.supported {
            return false;
        }
        // An early report of another D (one the marks did not count)
        // leaves this one awaited.
        if self.early.remove(&pane).is_some_and(|r| apply(c, &r)) {
            return true;
        }
        self.awaiting.insert(pane, c.command_id.clone());
        false
    }

    /// A report: the id of the command of `open` it was applied to, or
    /// kept until its D comes.
    pub fn reported(
        &mut self,
        report: CommandReport,
        open: &mut HashMap<String, Command>,
    ) -> Option<String> {
        let pane = report.pane;
        let Some(id) = self.awaiting.remove(&pane) else {
            self.early.insert(pane, report);
            return None;
        };
        let c = open.get_mut(&id)?;
        apply(c, &report).then_some(id)
    }
}

/// The pane formats (tmux 3.8) that say how its last command went, as
/// [`from_formats`] reads them: asked at each prompt with the prompt's
/// row, so a command whose event fell between two waiting clients still
/// gets tmux's account.
pub const FORMATS: &str = "#{pane_command_running}\t#{pane_command_status}\t#{pane_command_start_time}\t#{pane_command_end_time}";

/// [`FORMATS`] expanded for `pane`: a report of its last command, unless
/// one runs (a command typed ahead), none ended, or tmux knows no such
/// formats (they expand to nothing).
pub fn from_formats(pane: PaneId, told: &[&str]) -> Option<CommandReport> {
    let [running, status, start, end] = told else {
        return None;
    };
    if *running != "0" {
        return None;
    }
    Some(CommandReport {
        pane,
        status: Some(status.parse().ok()?),
        start_s: start.parse().ok(),
        end_s: Some(end.parse().ok()?),
    })
}

/// Takes tmux's status and times into `c`, where `r` is its end: `r`
/// ended at or after `c` started (give or take tmux's second), and not
/// after the feed brought `c`'s D (tmux parses a mark before it sends
/// it), nor [`MAX_LAG_MS`] before. Whether `c` changed.
pub fn apply(c: &mut Command, r: &CommandReport) -> bool {
    let Some(end_s) = r.end_s else {
        return false;
    };
    let Some(ended_ms) = c.ended_ms else {
        return false;
    };
    let end_ms = end_s.saturating_mul(1000);
    if end_ms.saturating_add(1000) <= c.started_ms
        || ended_ms < end_ms
        || ended_ms - end_ms > MAX_LAG_MS
    {
        return false;
    }
    // A bare D: tmux says 0 where the shell said nothing; keep nothing.
    if c.exit_status.is_some() {
        c.exit_status = r.status.or(c.exit_status);
    }
    if let Some(start_s) = r.start_s {
        c.started_ms = within_second(c.started_ms, start_s);
    }
    c.ended_ms = Some(within_second(ended_ms, end_s).max(c.started_ms));
    c.source = SOURCE.into();
    true
}

/// `ms` moved into the second `s` (`[s, s + 1)`), where it lies outside.
fn within_second(ms: i64, s: i64) -> i64 {
    let from = s.saturating_mul(1000);
    ms.clamp(from, from.saturating_add(999))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn command(started_ms: i64, ended_ms: i64, status: Option<i32>) -> Command {
        Command {
            command_id: "c1".into(),
            pane_id: "%3".into(),
            started_ms,
            ended_ms: Some(ended_ms),
            exit_status: status,
            source: "osc133".into(),
            ..Command::default()
        }
    }

    fn report(start_s: Option<i64>, end_s: i64, status: i32) -> CommandReport {
        CommandReport {
            pane: PaneId::from_number(3),
            status: Some(status),
            start_s,
            end_s: Some(end_s),
        }
    }

    #[test]
    fn tmux_status_and_seconds_bound_the_marks_stamps() {
        // The feed saw the D 2.4 s late (a loaded feed); tmux stamped it
        // at second 102, the C at second 100 where the feed agreed.
        let mut c = command(100_250, 104_400, Some(1));
        assert!(apply(&mut c, &report(Some(100), 102, 130)));
        assert_eq!(
            (c.started_ms, c.ended_ms, c.exit_status),
            (100_250, Some(102_999), Some(130))
        );
        assert_eq!(c.source, SOURCE);
        // Inside tmux's seconds: the millisecond stamps stay.
        let mut c = command(100_250, 102_500, Some(0));
        assert!(apply(&mut c, &report(Some(100), 102, 0)));
        assert_eq!((c.started_ms, c.ended_ms), (100_250, Some(102_500)));
        // A bare D: tmux's 0 is not the shell's word.
        let mut c = command(100_250, 100_300, None);
        assert!(apply(&mut c, &report(Some(100), 100, 0)));
        assert_eq!(c.exit_status, None);
    }

    #[test]
    fn a_report_of_another_d_changes_nothing() {
        let mut c = command(100_250, 101_000, Some(0));
        let before = c.clone();
        // Ended in second 98: before this command started.
        assert!(!apply(&mut c, &report(Some(97), 98, 1)));
        // Ended in second 102: after the feed brought this D (a later
        // empty Enter's, this one's report lost).
        assert!(!apply(&mut c, &report(Some(100), 102, 1)));
        // Stamped far before the feed brought it.
        let mut late = command(10_250, 101_000, Some(0));
        assert!(!apply(&mut late, &report(Some(10), 11, 1)));
        assert_eq!(c, before);
    }

    #[test]
    fn the_formats_report_only_an_ended_command() {
        let pane = PaneId::from_number(3);
        assert_eq!(
            from_formats(pane, &["0", "130", "100", "102"]),
            Some(report(Some(100), 102, 130))
        );
        // Running (typed ahead), never ended, or tmux 3.3a's nothing.
        assert_eq!(from_formats(pane, &["1", "", "100", ""]), None);
        assert_eq!(from_formats(pane, &["0", "", "", ""]), None);
        assert_eq!(from_formats(pane, &["", "", "", ""]), None);
        assert_eq!(from_formats(pane, &["0", "1"]), None);
    }

    #[test]
    fn with_no_reporter_the_receiver_waits_instead_of_spinning() {
        let (tx, rx) = crossbeam_channel::unbounded();
        let r = Reports::with(None, tx, rx);
        let waited = r
            .receiver()
            .recv_timeout(std::time::Duration::from_millis(20));
        assert_eq!(waited, Err(crossbeam_channel::RecvTimeoutError::Timeout));
    }

    fn reports() -> Reports {
        let (tx, rx) = crossbeam_channel::unbounded();
        Reports {
            supported: true,
            _reporter: None,
            rx,
            _tx: tx,
            early: HashMap::new(),
            awaiting: HashMap::new(),
        }
    }

    #[test]
    fn a_report_meets_its_d_in_either_order_and_never_a_later_command() {
        let pane = PaneId::from_number(3);
        // The report first, then the D.
        let mut r = reports();
        let mut open = HashMap::new();
        assert_eq!(r.reported(report(Some(100), 101, 7), &mut open), None);
        let mut c = command(100_100, 101_200, Some(0));
        assert!(r.ended(pane, &mut c));
        assert_eq!(c.exit_status, Some(7));
        // The D first, then the report.
        let mut c = command(100_100, 101_200, Some(0));
        assert!(!r.ended(pane, &mut c));
        open.insert(c.command_id.clone(), c);
        let id = r.reported(report(Some(100), 101, 9), &mut open);
        assert_eq!(id.as_deref(), Some("c1"));
        assert_eq!(open["c1"].exit_status, Some(9));
        // A report whose D was not counted is dropped at the next C.
        assert_eq!(r.reported(report(Some(100), 101, 5), &mut open), None);
        r.started(pane);
        let mut c = command(100_100, 101_200, Some(0));
        assert!(!r.ended(pane, &mut c));
        assert_eq!(c.exit_status, Some(0));
    }
}
