//! `panescan commands`: the command ledger a journaling daemon keeps, read
//! from the journal's directory (no daemon needed), for one tmux server
//! (`-L` / `-S`, else the default one, as `panescan search`).
//!
//! Prints one command a line, newest first: start time, status (`-` while
//! it runs), duration, pane, directory and command line; `--json` prints
//! `{commands: [...]}` as list_commands answers it.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use crate::daemon::ledger_read::{of_socket, row, select};
use crate::journal::{dir, ledger, servers, when};
use crate::tmux::ServerSpec;
use crate::tools::commands::{ListCommandsArgs, MAX_LIMIT};

/// `panescan commands`'s arguments.
#[derive(Debug, Args)]
pub struct CommandsArgs {
    #[command(flatten)]
    #[allow(missing_docs)]
    pub place: super::daemon::JournalDirArgs,
    /// Only commands that ended with a status other than 0.
    #[arg(long)]
    pub failed: bool,
    /// Only commands started since then: RFC 3339, or an age (15m, 2h, 7d).
    #[arg(long, value_name = "TIME")]
    pub since: Option<String>,
    /// Only this pane's (%N).
    #[arg(long, value_name = "PANE")]
    pub pane: Option<String>,
    /// Only this session's.
    #[arg(long)]
    pub session: Option<String>,
    /// Commands listed at most.
    #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u32).range(1..=i64::from(MAX_LIMIT)))]
    pub limit: u32,
    /// Print JSON, as list_commands answers.
    #[arg(long)]
    pub json: bool,
    /// The tmux server, by socket name (as `tmux -L`).
    #[arg(long, short = 'L', conflicts_with = "socket_path")]
    pub socket_name: Option<String>,
    /// The tmux server, by socket path (as `tmux -S`).
    #[arg(long, short = 'S')]
    pub socket_path: Option<PathBuf>,
}

/// Lists the ledger's commands.
pub fn run(args: &CommandsArgs) -> ExitCode {
    match list(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("panescan commands: {e}");
            ExitCode::from(2)
        }
    }
}

fn list(args: &CommandsArgs) -> Result<(), String> {
    let root = args.place.dir()?;
    dir::check(&root)?;
    let spec = ServerSpec {
        host: None,
        socket_name: args.socket_name.clone(),
        socket_path: args.socket_path.clone(),
    };
    let socket = crate::tmux::paths::resolve_socket(&spec).map_err(|e| e.to_string())?;
    let journal = servers::find(&root, &socket)?;
    let since = args
        .since
        .as_deref()
        .map(|t| when::parse(t, when::now_ms()))
        .transpose()?;
    let (all, notes) =
        ledger::read_all(&journal).map_err(|e| format!("{}: {e}", journal.display()))?;
    for note in notes {
        eprintln!("panescan commands: {note}");
    }
    let all = of_socket(all, &socket);
    let query = ListCommandsArgs {
        pane_id: args.pane.clone(),
        session: args.session.clone(),
        since_time: None,
        failed: Some(args.failed),
        limit: Some(args.limit),
        socket_name: None,
        socket_path: None,
    };
    let rows: Vec<_> = select(all, &query, since).iter().map(row).collect();
    if args.json {
        let out = serde_json::json!({ "commands": rows });
        println!("{out}");
        return Ok(());
    }
    for r in rows {
        let status = r.exit_status.map_or("-".to_owned(), |s| s.to_string());
        let took = r
            .duration_ms
            .map_or("-".to_owned(), |d| format!("{:.1}s", d as f64 / 1000.0));
        println!(
            "{}  {:>4}  {:>7}  {:<4} {}  {}",
            r.started_at,
            status,
            took,
            r.pane_id,
            r.cwd.as_deref().unwrap_or("?"),
            r.command.as_deref().unwrap_or("?")
        );
    }
    Ok(())
}
