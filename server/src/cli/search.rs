//! `panescan search`: search_panes for people, with grep's manners.
//!
//! Prints one line per hit (`%3 dev:1.0 -12: text`, coloured on a
//! terminal) and a closing summary on stderr; `--json` prints the same
//! structured result an MCP client gets. Exit status as grep: 0 when
//! something matched, 1 when nothing did, 2 on error.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use crate::config::Ceilings;
use crate::tmux::{PaneId, WindowId};
use crate::tools::context::{ServerArgs, ToolContext};
use crate::tools::search::{
    pane_place, push_group, push_hit, search_panes, summary_line, GroupBy, SearchPanesArgs,
    SearchPanesResult, Style,
};

/// `panescan search` options (the arguments of the search_panes tool).
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  panescan search 'error['                 # visible screens of every pane\n  panescan search -n 5000 Traceback          # and 5,000 lines of history\n  panescan search -e 'error\\[E\\d+\\]' -A      # regex, all history\n  panescan search -C 2 --session dev FAILED  # two lines of context, one session\n  panescan search --json panicked | jq .     # the structured result\n  panescan search --since-file .cur -A error # only what is new since the last run\n\nExit status: 0 if a line matched, 1 if none did, 2 on error."
)]
pub struct SearchArgs {
    /// Text to find; several PATTERNs match any of them.
    #[arg(required = true, num_args = 1..=64)]
    pub patterns: Vec<String>,
    /// Read patterns as bounded regular expressions.
    #[arg(short = 'e', long)]
    pub regex: bool,
    /// Match case exactly (default: case-insensitive).
    #[arg(short = 's', long)]
    pub match_case: bool,
    /// Only panes of this session (id $N or name).
    #[arg(long)]
    pub session: Option<String>,
    /// Only panes of this window (@N).
    #[arg(long)]
    pub window: Option<String>,
    /// Only these panes (%N; repeat or separate with commas).
    #[arg(long = "pane", value_delimiter = ',')]
    pub panes: Vec<String>,
    /// History lines searched above each screen (default 0: visible only).
    #[arg(short = 'n', long, value_name = "LINES")]
    pub scrollback_lines: Option<u64>,
    /// Search all history (the operator's ceiling).
    #[arg(short = 'A', long, conflicts_with = "scrollback_lines")]
    pub all_history: bool,
    /// Match screen rows, not lines joined across wraps.
    #[arg(long)]
    pub no_join: bool,
    /// Lines of context around each hit (0-10).
    #[arg(short = 'C', long, value_name = "LINES")]
    pub context: Option<u8>,
    /// Matching lines kept per pane.
    #[arg(long)]
    pub max_matches_per_pane: Option<u64>,
    /// Matching lines in all.
    #[arg(long)]
    pub max_matches: Option<u64>,
    /// Matching panes shown (a page).
    #[arg(long)]
    pub limit: Option<usize>,
    /// Matching panes skipped (paging).
    #[arg(long)]
    pub offset: Option<usize>,
    /// Stop after scanning this many bytes.
    #[arg(long)]
    pub max_scan_bytes: Option<u64>,
    /// Stop after scanning this many lines.
    #[arg(long)]
    pub max_scan_lines: Option<u64>,
    /// Stop after this many milliseconds.
    #[arg(long)]
    pub timeout_ms: Option<u64>,
    /// The tmux server, by socket name (as `tmux -L`; with --ssh, on every
    /// host searched).
    #[arg(short = 'L', long, conflicts_with = "socket_path")]
    pub socket_name: Option<String>,
    /// The tmux server, by socket path (as `tmux -S`).
    #[arg(short = 'S', long)]
    pub socket_path: Option<PathBuf>,
    /// Fold equal matching lines into groups, largest first: text, or
    /// shape (numbers and hex words compare equal).
    #[arg(long, value_name = "HOW", value_parser = ["text", "shape"])]
    pub group_by: Option<String>,
    /// Print lines as the panes show them: secrets are not replaced with
    /// [REDACTED:KIND].
    // `--help` shows this as written: rustdoc must not read a link.
    #[allow(rustdoc::broken_intra_doc_links)]
    #[arg(long)]
    pub no_redact: bool,
    /// Search only what was printed since the cursor in FILE (all of it when FILE is missing or empty), then write the new cursor to FILE.
    #[arg(long, value_name = "FILE")]
    pub since_file: Option<PathBuf>,
    /// Print the structured result as JSON.
    #[arg(long)]
    pub json: bool,
    #[allow(missing_docs)]
    #[command(flatten)]
    pub ssh: super::SshArgs,
    /// Search only these hosts (`local` or an --ssh DEST; repeat or
    /// separate with commas; default: this machine and every --ssh host).
    #[arg(long = "host", value_delimiter = ',', value_name = "HOST")]
    pub hosts: Vec<String>,
    /// Colour: auto (on a terminal), always, never.
    #[arg(long, default_value = "auto", value_parser = ["auto", "always", "never"])]
    pub color: String,
    /// Also search the journal (`panescan daemon --journal`): lines tmux
    /// no longer holds and panes that no longer exist, each with its time
    /// (all of tmux's history is searched too).
    #[arg(long)]
    pub journal: bool,
    /// Only lines first seen since then (RFC 3339, or 15m, 2h, 7d back
    /// from now), as the journal stamped them; lines not journaled yet
    /// count as seen now.
    #[arg(long, value_name = "TIME")]
    pub since: Option<String>,
    /// Only lines first seen until then.
    #[arg(long, value_name = "TIME")]
    pub until: Option<String>,
    #[allow(missing_docs)]
    #[command(flatten)]
    pub journal_place: super::daemon::JournalDirArgs,
}

impl SearchArgs {
    fn to_tool_args(&self, ceilings: &Ceilings) -> Result<SearchPanesArgs, String> {
        let (pattern, patterns) = if self.patterns.len() == 1 {
            (self.patterns.first().cloned(), None)
        } else {
            (None, Some(self.patterns.clone()))
        };
        let window = match &self.window {
            Some(w) => Some(WindowId::parse(w).map_err(|e| e.to_string())?),
            None => None,
        };
        let pane_ids = if self.panes.is_empty() {
            None
        } else {
            Some(
                self.panes
                    .iter()
                    .map(|p| PaneId::parse(p).map_err(|e| e.to_string()))
                    .collect::<Result<Vec<_>, _>>()?,
            )
        };
        let scrollback_lines = if self.all_history {
            Some(ceilings.search.max_scrollback_lines)
        } else {
            self.scrollback_lines
        };
        Ok(SearchPanesArgs {
            pattern,
            patterns,
            regex: self.regex,
            match_case: self.match_case,
            session: self.session.clone(),
            window,
            pane_ids,
            scrollback_lines,
            join_wrapped: Some(!self.no_join),
            context_lines: self.context,
            max_matches_per_pane: self.max_matches_per_pane,
            max_matches: self.max_matches,
            limit: self.limit,
            offset: self.offset,
            max_scan_bytes: self.max_scan_bytes,
            max_scan_lines: self.max_scan_lines,
            timeout_ms: self.timeout_ms,
            group_by: match self.group_by.as_deref() {
                Some("shape") => Some(GroupBy::Shape),
                Some(_) => Some(GroupBy::Text),
                None => None,
            },
            since: match &self.since_file {
                Some(file) => read_cursor(file)?,
                None => None,
            },
            // With --ssh hosts, -L names the server on every host searched
            // (a socket path exists on this machine only).
            server: ServerArgs {
                socket_name: if self.ssh.ssh.is_empty() {
                    None
                } else {
                    self.socket_name.clone()
                },
                ..ServerArgs::default()
            },
            hosts: (!self.hosts.is_empty()).then(|| self.hosts.clone()),
            journal: self.journal,
            since_time: self.since.clone(),
            until_time: self.until.clone(),
        })
    }
}

/// Runs the search; the exit code follows grep.
pub fn run(args: &SearchArgs) -> ExitCode {
    let server = crate::tmux::ServerSpec {
        socket_name: args.socket_name.clone(),
        socket_path: args.socket_path.clone(),
        host: None,
    };
    let hosts = match args.ssh.configure() {
        Ok(h) => h,
        Err(e) => {
            eprintln!("panescan search: {e}");
            return ExitCode::from(2);
        }
    };
    let mut ctx = ToolContext::read_only(server, Ceilings::default());
    {
        let mut config = (*ctx.config).clone();
        config.redact = !args.no_redact;
        config.hosts = hosts;
        config.journal_dir = args.journal_place.dir().ok();
        ctx.config = std::sync::Arc::new(config);
    }
    let tool_args = match args.to_tool_args(ctx.ceilings()) {
        Ok(a) => a,
        Err(e) => return fail(&e),
    };
    let result = search_panes(&ctx, &tool_args);
    crate::tools::shutdown_connections();
    let result = match result {
        Ok(r) => r,
        Err(e) => match &args.since_file {
            Some(file) if tool_args.since.is_some() => {
                return fail(&format!(
                    "{} (the cursor in {}; remove the file to start over)",
                    e.message,
                    file.display()
                ))
            }
            _ => return fail(&e.message),
        },
    };
    if let Some(file) = &args.since_file {
        if let Err(e) = write_cursor(file, &result.cursor) {
            return fail(&format!("cannot write {}: {e}", file.display()));
        }
    }
    let mut out = std::io::stdout().lock();
    let written = if args.json {
        serde_json::to_string_pretty(&result)
            .map_err(std::io::Error::other)
            .and_then(|s| writeln!(out, "{s}"))
    } else {
        let colour = match args.color.as_str() {
            "always" => true,
            "never" => false,
            _ => std::io::stdout().is_terminal(),
        };
        print_hits(&mut out, &result, colour)
    };
    if let Err(e) = written {
        // A closed pipe (`| head`) is not an error worth a message.
        if e.kind() != std::io::ErrorKind::BrokenPipe {
            return fail(&e.to_string());
        }
    }
    if !args.json {
        super::journal::print_across(&result);
        eprintln!("{}", summary_line(&result));
        for failed in &result.hosts_failed {
            eprintln!("host {} failed: {}", failed.host, failed.error);
        }
        for note in &result.since_panes {
            eprintln!("{} {}: searched in full", note.pane_id, note.reason);
        }
        if result.since_reset {
            eprintln!("the tmux server restarted since the cursor: searched in full");
        }
    }
    if result.total_panes_matched > 0 || !result.journal_matches.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

/// The cursor in `file`; none when the file is missing or empty (the first
/// run searches in full).
/// The cursor in `file`, signed again for this process (the file is the
/// user's own; cursors from clients are checked against this process's
/// key, [`crate::tools::cursor_key`]).
fn read_cursor(file: &std::path::Path) -> Result<Option<String>, String> {
    let text = match std::fs::read_to_string(file) {
        Ok(text) => text.trim().to_owned(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("cannot read {}: {e}", file.display())),
    };
    if text.is_empty() {
        return Ok(None);
    }
    crate::tools::search::cursor::Cursor::resign(&text)
        .map(Some)
        .map_err(|e| {
            format!(
                "{} (the cursor in {}; remove the file to start over)",
                e.message,
                file.display()
            )
        })
}

/// Replaces `file` with the cursor in one rename, so a run interrupted
/// half-way leaves the old cursor, never half of one.
fn write_cursor(file: &std::path::Path, cursor: &str) -> std::io::Result<()> {
    let mut tmp = file.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    std::fs::write(&tmp, format!("{cursor}\n"))?;
    std::fs::rename(&tmp, file)
}

fn fail(message: &str) -> ExitCode {
    eprintln!("panescan search: {message}");
    ExitCode::from(2)
}

fn print_hits(
    out: &mut impl Write,
    result: &SearchPanesResult,
    colour: bool,
) -> std::io::Result<()> {
    let style = if colour { Style::COLOUR } else { Style::PLAIN };
    for pane in &result.matches {
        let place = pane_place(pane, &style);
        let mut text = String::new();
        for hit in &pane.lines {
            push_hit(&mut text, &place, hit, &style);
        }
        out.write_all(text.as_bytes())?;
    }
    let mut text = String::new();
    for group in result.groups.iter().flatten() {
        push_group(&mut text, group);
    }
    out.write_all(text.as_bytes())?;
    Ok(())
}
