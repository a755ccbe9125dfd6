//! The command ledger as the tools ask it ([`crate::tools::commands::Ledger`]):
//! commands read back from the ledger's files and filtered, a command's
//! output from the journal and the writer's last view of its pane.
//!
//! Must hold: output is read only once the journal on disk holds every
//! line the writer read before the call (it is asked to flush, and waited
//! for a bounded time; past it, the answer says lines may be missing).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::journal::ledger::{self as book, Command};
use crate::journal::view::Views;
use crate::journal::when;
use crate::tmux::PaneId;
use crate::tools::commands::{CommandRow, KeptOutput, Ledger, ListCommandsArgs};
use crate::tools::context::ToolError;

/// How long a call waits for the journal to be on disk.
const SYNC_WAIT: Duration = Duration::from_secs(3);

/// The daemon's ledger for the tools.
#[derive(Debug)]
pub struct Reader {
    /// The journal's directory.
    pub dir: PathBuf,
    /// The writer's views.
    pub views: Arc<Views>,
}

impl Ledger for Reader {
    fn list(&self, args: &ListCommandsArgs) -> Result<Vec<CommandRow>, ToolError> {
        let now = when::now_ms();
        let since = match &args.since_time {
            Some(t) => Some(when::parse(t, now).map_err(ToolError::invalid)?),
            None => None,
        };
        let (all, _) = book::read_all(&self.dir)
            .map_err(|e| ToolError::internal(format!("cannot read the ledger: {e}")))?;
        Ok(select(all, args, since).iter().map(row).collect())
    }

    fn output(&self, command_id: &str) -> Result<KeptOutput, ToolError> {
        let (all, _) = book::read_all(&self.dir)
            .map_err(|e| ToolError::internal(format!("cannot read the ledger: {e}")))?;
        let Some(c) = all.into_iter().find(|c| c.command_id == command_id) else {
            return Err(ToolError::not_found(format!(
                "no command {command_id} in the ledger (list_commands gives the ids; the journal's bounds remove old ones)"
            )));
        };
        let mut notes = c.notes.clone();
        let view = pane_of(&c).and_then(|p| self.views.get(p));
        let asked = when::now_ms();
        self.views.ask_flush();
        let until = Instant::now() + SYNC_WAIT;
        while self.views.synced_ms() <= asked && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(20));
        }
        if self.views.synced_ms() <= asked {
            notes.push(
                "the journal did not write its newest lines in time: the last lines may be missing"
                    .into(),
            );
        }
        if c.output.is_none() {
            notes.push("its output could not be placed (its prompt's row was not read)".into());
        }
        let out = book::output(&self.dir, &c, view.as_ref())
            .map_err(|e| ToolError::internal(format!("cannot read the journal: {e}")))?;
        notes.extend(out.gaps.into_iter().map(|g| format!("journal gap: {g}")));
        notes.extend(out.skipped.into_iter().map(|s| format!("skipped: {s}")));
        Ok(KeptOutput {
            lines: out.lines,
            running: c.ended_ms.is_none(),
            notes,
        })
    }
}

fn pane_of(c: &Command) -> Option<PaneId> {
    PaneId::parse(&c.pane_id).ok()
}

/// The commands `args` asks for, newest first.
pub fn select(all: Vec<Command>, args: &ListCommandsArgs, since: Option<i64>) -> Vec<Command> {
    let mut out: Vec<Command> = all
        .into_iter()
        .filter(|c| args.pane_id.as_deref().is_none_or(|p| c.pane_id == p))
        .filter(|c| args.session.as_deref().is_none_or(|s| c.session == s))
        .filter(|c| since.is_none_or(|t| c.started_ms >= t))
        .filter(|c| !args.failed.unwrap_or(false) || c.exit_status.is_some_and(|s| s != 0))
        .collect();
    out.reverse();
    out.truncate(args.limit());
    out
}

/// A command as the tools list it.
pub fn row(c: &Command) -> CommandRow {
    CommandRow {
        command_id: c.command_id.clone(),
        pane_id: c.pane_id.clone(),
        session: c.session.clone(),
        command: c.command.clone(),
        cwd: c.cwd.clone(),
        started_at: when::format(c.started_ms),
        ended_at: c.ended_ms.map(when::format),
        duration_ms: c
            .ended_ms
            .map(|e| u64::try_from(e - c.started_ms).unwrap_or(0)),
        exit_status: c.exit_status,
        output_lines: c.output_lines,
    }
}
