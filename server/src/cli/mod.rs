//! The command line: `panescan serve | daemon | status | stop | search | demo | bench |
//! completions | man`.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, CommandFactory, Parser, Subcommand};

pub(crate) mod arenas;
// The bench report's items are documented as they are reworked.
#[allow(missing_docs)]
pub(crate) mod bench;
pub(crate) mod client;
pub(crate) mod commands;
pub(crate) mod daemon;
pub(crate) mod demo;
pub(crate) mod http;
pub(crate) mod journal;
pub(crate) mod preflight;
pub(crate) mod progress;
pub(crate) mod relay;
pub(crate) mod search;
pub(crate) mod serve;
pub(crate) mod trust;

use crate::config::{Ceilings, Tier};
use crate::tmux::reach::SocketPolicy;

/// The version and, when built from a git checkout or a cargo package, the
/// commit (server/build.rs).
pub const VERSION: &str = env!("PANESCAN_VERSION");

/// panescan: search every tmux pane, scrollback included.
#[derive(Debug, Parser)]
#[command(name = "panescan", version = VERSION, about, long_about = None)]
pub struct Cli {
    /// The tmux program to run. Default: `tmux` on PATH, else the first
    /// found in ~/.nix-profile/bin, /run/current-system/sw/bin,
    /// /opt/homebrew/bin, /opt/local/bin, /usr/local/bin, /usr/bin (for
    /// clients that start panescan with a short PATH).
    #[arg(long, global = true, env = "PANESCAN_TMUX", value_name = "PATH")]
    pub tmux: Option<PathBuf>,
    // Doc comments on clap fields are help text: the subcommands say it.
    #[allow(missing_docs)]
    #[command(subcommand)]
    pub command: Commands,
}

/// The subcommands.
// `Commands::Commands` is `panescan commands`: clap names a subcommand
// after its variant.
#[allow(clippy::enum_variant_names)]
#[derive(Debug, Subcommand)]
pub enum Commands {
    /// Serve MCP on stdin/stdout (JSON-RPC 2.0, one message per line),
    /// through this user's daemon (started when none runs) unless --no-daemon.
    Serve(Box<serve::ServeCommand>),
    /// Search every pane of a tmux server, like grep.
    Search(Box<search::SearchArgs>),
    /// The commands a journaling daemon recorded (OSC 133 marks), newest
    /// first.
    Commands(Box<commands::CommandsArgs>),
    /// See it work: a private tmux server full of real output, searched.
    Demo(Box<demo::DemoArgs>),
    /// Time searches on a private tmux server of a given shape.
    Bench(Box<bench::BenchArgs>),
    /// The per-user daemon, in the foreground: serves the sessions of
    /// `panescan serve` over a unix socket, sharing tmux connections and
    /// the pane cache.
    Daemon(Box<daemon::DaemonArgs>),
    /// The daemon's pid, version, uptime, sessions, cache and memory (JSON).
    Status(daemon::RuntimeArgs),
    /// Stop the daemon (its sessions get their answers first).
    Stop(daemon::RuntimeArgs),
    /// Print the audit log of serve --audit-log.
    Audit(trust::AuditArgs),
    /// Print a shell completion script (source it, or install it where
    /// your shell loads completions).
    Completions {
        // A doc comment here would change the help text and the man page.
        #[allow(missing_docs)]
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the manual page (roff): `panescan man | man -l -`; with a
    /// subcommand, that subcommand's page.
    Man {
        /// serve, search, demo, bench, daemon, status, stop, audit, completions or man.
        command: Option<String>,
    },
}

/// `panescan serve` options.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  panescan serve                        # the tmux server `tmux` itself would use\n  panescan serve -L work                # tmux -L work\n  panescan serve --tier mutating        # also send_keys, paste_text, renames...\n  panescan serve --tier mutating --log-dir ~/tmux-logs   # and pipe_pane into it\n  claude mcp add panescan -- panescan serve\n\nstdout carries JSON-RPC only; diagnostics go to stderr."
)]
pub struct ServeArgs {
    /// The default tmux server, by socket name (as `tmux -L NAME`).
    #[arg(long, short = 'L', conflicts_with = "socket_path")]
    pub socket_name: Option<String>,
    /// The default tmux server, by socket path (as `tmux -S PATH`).
    #[arg(long, short = 'S')]
    pub socket_path: Option<PathBuf>,
    /// Let a call's socket_name / socket_path also reach this user's
    /// sockets in DIR (repeatable; the variable takes DIR:DIR...). Without
    /// it a call reaches this user's tmux socket directory
    /// ($TMUX_TMPDIR/tmux-UID or /tmp/tmux-UID) and the server served.
    #[arg(
        long = "allow-socket-dir",
        env = "PANESCAN_ALLOW_SOCKET_DIR",
        value_name = "DIR",
        value_delimiter = ':'
    )]
    pub allow_socket_dirs: Vec<PathBuf>,
    /// Let pipe_pane (mutating tier) append pane output to files in DIR
    /// (an existing directory). Without it pipe_pane is refused.
    #[arg(long, env = "PANESCAN_LOG_DIR", value_name = "DIR")]
    pub log_dir: Option<PathBuf>,
    /// Let create_session copy NAME from panescan's environment into new
    /// sessions when tmux's update-environment lists it (repeatable; the
    /// variable takes NAME,NAME...). Always allowed: tmux's default list
    /// (DISPLAY, SSH_AUTH_SOCK, XAUTHORITY...); nothing else of panescan's
    /// environment ever reaches a session.
    #[arg(
        long = "pass-env",
        env = "PANESCAN_PASS_ENV",
        value_name = "NAME",
        value_delimiter = ','
    )]
    pub pass_env: Vec<String>,
    /// Which tools exist: readonly (default), mutating, destructive.
    #[arg(long, env = "PANESCAN_TIER", value_enum, default_value_t = Tier::Readonly)]
    pub tier: Tier,
    /// Let send_keys, paste_text and run_command type into the pane the
    /// MCP client itself runs in (found from $TMUX_PANE and the process
    /// tree). Without it they are refused there: typing into one's own
    /// input is a loop.
    #[arg(long, env = "PANESCAN_ALLOW_OWN_PANE")]
    pub allow_own_pane: bool,
    #[allow(missing_docs)]
    #[command(flatten)]
    pub ssh: SshArgs,
    #[allow(missing_docs)]
    #[command(flatten)]
    pub trust: trust::TrustArgs,
    // The flattened options document themselves.
    #[allow(missing_docs)]
    #[command(flatten)]
    pub ceilings: SearchCeilingArgs,
    /// Keep no pane text between calls: every search captures everything
    /// it reads (results are the same; repeated searches are slower).
    #[arg(long, env = "PANESCAN_NO_CACHE")]
    pub no_cache: bool,
    /// wait_for_text polls panes instead of listening to tmux's output
    /// events (the control client then never turns pane output on).
    #[arg(long, env = "PANESCAN_NO_EVENTS")]
    pub no_events: bool,
    /// Return pane text as the pane shows it: secrets (tokens, keys,
    /// passwords, private keys) are not replaced with [REDACTED:KIND].
    // `--help` shows this as written: rustdoc must not read a link.
    #[allow(rustdoc::broken_intra_doc_links)]
    #[arg(long, env = "PANESCAN_NO_REDACT")]
    pub no_redact: bool,
    /// Memory ceiling of the pane cache; the panes searched least recently
    /// are dropped first.
    #[arg(
        long,
        env = "PANESCAN_CACHE_MB",
        value_name = "MIB",
        default_value_t = 256
    )]
    pub cache_mb: usize,
    #[allow(missing_docs)]
    #[command(flatten)]
    pub journal_place: daemon::JournalDirArgs,
}

impl ServeArgs {
    /// Where tool arguments may reach: the allowed directories made
    /// absolute (a relative one is taken from the working directory now,
    /// not from wherever a later call happens to run).
    fn socket_policy(&self) -> SocketPolicy {
        SocketPolicy::new(
            self.allow_socket_dirs
                .iter()
                .filter(|d| !d.as_os_str().is_empty())
                .map(|d| std::path::absolute(d).unwrap_or_else(|_| d.clone()))
                .collect(),
        )
    }

    /// The pane cache's size these options ask for (`None`: no cache).
    fn cache_bytes(&self) -> Option<usize> {
        (!self.no_cache).then(|| self.cache_mb.saturating_mul(1 << 20))
    }
}

/// The hosts panescan reaches through OpenSSH.
#[derive(Debug, Args, Default)]
pub struct SshArgs {
    /// A host whose tmux servers calls may reach (`host`): host,
    /// user@host, ssh://user@host:port or a Host alias (repeatable).
    #[arg(long = "ssh", value_name = "DEST")]
    pub ssh: Vec<String>,
    /// The ssh config file for those hosts (ssh -F FILE).
    #[arg(long, value_name = "FILE")]
    pub ssh_config: Option<PathBuf>,
    /// Compress the ssh connections (ssh's Compression=yes).
    #[arg(long)]
    pub ssh_compress: bool,
    /// Seconds ssh may take to connect to a host (and shake hands).
    #[arg(long, value_name = "SECS", default_value_t = 10)]
    pub ssh_connect_timeout: u64,
}

impl SshArgs {
    /// Checks the destinations and hands them to the transport; the
    /// names calls may use, in order (in this process: also the ids).
    pub fn configure(&self) -> Result<Vec<String>, String> {
        let settings = self.settings()?;
        crate::tmux::ssh::configure(&settings)?;
        Ok(settings.hosts.iter().map(|d| d.text.clone()).collect())
    }

    /// What these flags ask of ssh, checked: the destinations parsed
    /// (each once), the config file made absolute, this environment's.
    pub fn settings(&self) -> Result<crate::tmux::ssh::Settings, String> {
        let mut hosts = Vec::new();
        for text in &self.ssh {
            let dest = crate::tmux::ssh::dest::parse(text).map_err(|e| e.to_string())?;
            if hosts
                .iter()
                .any(|h: &crate::tmux::ssh::Dest| h.text == dest.text)
            {
                return Err(format!("--ssh {text} is given twice"));
            }
            hosts.push(dest);
        }
        let config_file = match &self.ssh_config {
            Some(f) => Some(std::path::absolute(f).map_err(|e| format!("--ssh-config: {e}"))?),
            None => None,
        };
        Ok(crate::tmux::ssh::Settings {
            config_file,
            hosts,
            compression: self.ssh_compress,
            connect_timeout: std::time::Duration::from_secs(self.ssh_connect_timeout),
            env: crate::tmux::ssh::Settings::env_here(),
        })
    }
}

/// The operator's ceilings on search_panes: a caller may ask for less,
/// never for more.
#[derive(Debug, Args)]
pub struct SearchCeilingArgs {
    /// Ceiling of max_scan_bytes (bytes scanned by one search).
    #[arg(long, env = "PANESCAN_MAX_SCAN_BYTES", value_name = "BYTES")]
    pub max_scan_bytes: Option<u64>,
    /// Ceiling of max_scan_lines (lines scanned by one search).
    #[arg(long, env = "PANESCAN_MAX_SCAN_LINES", value_name = "LINES")]
    pub max_scan_lines: Option<u64>,
    /// Ceiling of timeout_ms (one search's time budget).
    #[arg(long, env = "PANESCAN_MAX_TIMEOUT_MS", value_name = "MS")]
    pub max_timeout_ms: Option<u64>,
    /// Ceiling of scrollback_lines (history lines searched per pane).
    #[arg(long, env = "PANESCAN_MAX_SCROLLBACK_LINES", value_name = "LINES")]
    pub max_scrollback_lines: Option<u64>,
    /// Panes one search may cover (more set pane_limit_clamped).
    #[arg(long, env = "PANESCAN_MAX_PANES", value_name = "N")]
    pub max_panes: Option<usize>,
    /// Ceiling of max_matches (matching lines returned by one search).
    #[arg(long, env = "PANESCAN_MAX_MATCHES", value_name = "N")]
    pub max_matches: Option<u64>,
}

impl SearchCeilingArgs {
    /// `ceilings` with these applied; a default above a lowered ceiling
    /// comes down to it.
    pub fn apply(&self, mut ceilings: Ceilings) -> Ceilings {
        let s = &mut ceilings.search;
        if let Some(v) = self.max_scan_bytes {
            s.max_scan_bytes = v.max(1);
            s.default_scan_bytes = s.default_scan_bytes.min(s.max_scan_bytes);
        }
        if let Some(v) = self.max_scan_lines {
            s.max_scan_lines = v.max(1);
            s.default_scan_lines = s.default_scan_lines.min(s.max_scan_lines);
        }
        if let Some(v) = self.max_timeout_ms {
            s.max_timeout = std::time::Duration::from_millis(v.max(1));
            s.default_timeout = s.default_timeout.min(s.max_timeout);
        }
        if let Some(v) = self.max_scrollback_lines {
            s.max_scrollback_lines = v;
        }
        if let Some(v) = self.max_panes {
            s.max_panes = v.max(1);
        }
        if let Some(v) = self.max_matches {
            s.max_matches = v.max(1);
            s.default_matches = s.default_matches.min(s.max_matches);
        }
        ceilings
    }
}

/// Parses the command line and runs it.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    // Fixed before anything runs tmux; a tmux found nowhere is reported by
    // the preflight check and by every call that needs it.
    let _ = crate::tmux::binary::init(cli.tmux.as_deref().map(|p| p.as_os_str()));
    match cli.command {
        Commands::Serve(cmd) => serve::run(&cmd),
        Commands::Daemon(args) => daemon::run_daemon(&args),
        Commands::Status(place) => daemon::run_status(&place),
        Commands::Stop(place) => daemon::run_stop(&place),
        Commands::Audit(args) => trust::run_audit(&args),
        Commands::Commands(args) => commands::run(&args),
        Commands::Search(args) => match preflight::check_tmux() {
            Ok(_) => search::run(&args),
            Err(e) => {
                eprintln!("panescan search: {e}");
                ExitCode::from(2)
            }
        },
        Commands::Demo(args) => match preflight::check_tmux().and_then(|_| demo::run(&args)) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("panescan demo: {e}");
                ExitCode::from(2)
            }
        },
        Commands::Bench(args) => match preflight::check_tmux().and_then(|_| bench::run(&args)) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("panescan bench: {e}");
                ExitCode::from(2)
            }
        },
        Commands::Completions { shell } => {
            let mut text = Vec::new();
            clap_complete::generate(shell, &mut Cli::command(), "panescan", &mut text);
            print_generated("completions", Ok(text))
        }
        Commands::Man { command } => print_generated("man", man_page(command.as_deref())),
    }
}

/// The roff page of the program, or of one of its subcommands.
fn man_page(subcommand: Option<&str>) -> Result<Vec<u8>, String> {
    let mut cmd = Cli::command();
    cmd.build();
    if let Some(name) = subcommand {
        let names: Vec<String> = cmd
            .get_subcommands()
            .map(|c| c.get_name().to_owned())
            .collect();
        cmd = cmd
            .find_subcommand(name)
            // Built, a subcommand is displayed as `panescan-NAME`.
            .map(|c| c.clone().version(VERSION))
            .ok_or_else(|| format!("no subcommand {name:?}; pages: {}", names.join(", ")))?;
    }
    let mut text = Vec::new();
    clap_mangen::Man::new(cmd)
        .render(&mut text)
        .map_err(|e| e.to_string())?;
    Ok(text)
}

/// Prints generated text (made in memory first: the generators panic on a
/// failed write); a closed pipe (`| head`) is no error.
fn print_generated(what: &str, text: Result<Vec<u8>, String>) -> ExitCode {
    let written = text.and_then(|text| {
        let mut out = std::io::stdout().lock();
        match std::io::Write::write_all(&mut out, &text)
            .and_then(|()| std::io::Write::flush(&mut out))
        {
            Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e.to_string()),
            _ => Ok(()),
        }
    });
    match written {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("panescan {what}: {e}");
            ExitCode::from(2)
        }
    }
}
