//! The command ledger as the tools ask it ([`crate::tools::commands::Ledger`]):
//! commands read back from the ledger's files and filtered, a command's
//! output from the journal and the writer's last view of its pane, each
//! for the tmux server the call names (one ledger per journaled server).
//!
//! Must hold: output is read only once the journal on disk holds every
//! line the writer read before the call (it is asked to flush, and waited
//! for a bounded time; past it, the answer says lines may be missing).

use std::path::{Path, PathBuf};
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

/// One journaled server: its socket, its journal's directory and its
/// writer's views.
#[derive(Debug)]
pub struct Journaled {
    /// The socket path of the server.
    pub socket: PathBuf,
    /// Its journal's directory.
    pub dir: PathBuf,
    /// Its writer's views.
    pub views: Arc<Views>,
}

/// The daemon's ledgers for the tools, one per journaled server.
#[derive(Debug)]
pub struct Reader {
    /// The servers journaled.
    pub journaled: Vec<Journaled>,
}

impl Reader {
    /// The server at `socket`, or an error naming those journaled.
    fn server(&self, socket: &Path) -> Result<&Journaled, ToolError> {
        self.journaled
            .iter()
            .find(|j| j.socket == socket)
            .ok_or_else(|| {
                let known: Vec<String> = self
                    .journaled
                    .iter()
                    .map(|j| j.socket.display().to_string())
                    .collect();
                ToolError::invalid(format!(
                    "the tmux server at {} is not journaled, so it has no command ledger (journaled: {}); the daemon journals it with --journal-socket {}",
                    socket.display(),
                    known.join(", "),
                    socket.display()
                ))
            })
    }
}

impl Ledger for Reader {
    fn list(&self, socket: &Path, args: &ListCommandsArgs) -> Result<Vec<CommandRow>, ToolError> {
        let journaled = self.server(socket)?;
        let now = when::now_ms();
        let since = match &args.since_time {
            Some(t) => Some(when::parse(t, now).map_err(ToolError::invalid)?),
            None => None,
        };
        let all = read_server(journaled)?;
        Ok(select(all, args, since).iter().map(row).collect())
    }

    fn output(&self, socket: &Path, command_id: &str) -> Result<KeptOutput, ToolError> {
        let journaled = self.server(socket)?;
        let all = read_server(journaled)?;
        let Some(mut c) = all.iter().find(|c| c.command_id == command_id).cloned() else {
            // Ids are random (64 bits): one found in another server's
            // ledger is that server's command.
            let elsewhere = self
                .journaled
                .iter()
                .filter(|j| j.socket != socket)
                .find(|j| {
                    read_server(j).is_ok_and(|all| all.iter().any(|c| c.command_id == command_id))
                });
            if let Some(j) = elsewhere {
                return Err(ToolError::not_found(format!(
                    "command {command_id} ran on the tmux server at {}, not at {}: pass socket_path {}",
                    j.socket.display(),
                    socket.display(),
                    j.socket.display()
                )));
            }
            return Err(ToolError::not_found(format!(
                "no command {command_id} in the ledger of the tmux server at {} (list_commands gives the ids; the journal's bounds remove old ones)",
                socket.display()
            )));
        };
        let views = &journaled.views;
        let mut notes = c.notes.clone();
        let (span, bound) = book::bounded_span(&all, &c);
        c.output = span;
        notes.extend(bound);
        // The pane itself is read after this call, then the journal
        // flushed: a flush alone waits only for panes whose output was
        // counted, and a pane's count can come late (NOTES.md, "Counts can
        // come late"), so its newest lines would be left out.
        let pane = pane_of(&c).filter(|p| views.get(*p).is_some());
        let asked = when::now_ms();
        if let Some(p) = pane {
            views.ask_read(p);
        }
        let until = Instant::now() + SYNC_WAIT;
        let read = || {
            pane.and_then(|p| views.get(p))
                .is_none_or(|v| v.read_ms > asked)
        };
        while !read() && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(20));
        }
        // Every read taken before a later sync is on disk.
        let read_by = when::now_ms();
        views.ask_flush();
        while views.synced_ms() <= read_by && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(20));
        }
        let view = pane_of(&c).and_then(|p| views.get(p));
        if !read() || views.synced_ms() <= read_by {
            notes.push(
                "the journal did not write its newest lines in time: the last lines may be missing"
                    .into(),
            );
        }
        if c.output.is_none() {
            notes.push("its output could not be placed (its prompt's row was not read)".into());
        }
        let out = book::output(&journaled.dir, &c, view.as_ref())
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

/// The commands in `j`'s ledger that are its server's.
fn read_server(j: &Journaled) -> Result<Vec<Command>, ToolError> {
    let (all, _) = book::read_all(&j.dir)
        .map_err(|e| ToolError::internal(format!("cannot read the ledger: {e}")))?;
    Ok(of_socket(all, &j.socket))
}

/// The commands of the server at `socket`: a directory may hold another
/// server's (the root, when the daemon's default server changed between
/// runs); a command not placed yet names no server and is kept.
pub fn of_socket(all: Vec<Command>, socket: &Path) -> Vec<Command> {
    let suffix = format!("@{}", socket.display());
    all.into_iter()
        .filter(|c| c.server.is_empty() || c.server.ends_with(&suffix))
        .collect()
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
