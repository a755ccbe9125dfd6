//! `panescan daemon | status | stop`: the per-user daemon in the
//! foreground (for systemd user units, launchd, tests), what it is doing,
//! and stopping it.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;

use super::serve::{spec_of, Explicit};
use super::ServeArgs;
use crate::daemon::wire::{Request, SessionSpec};
use crate::daemon::{self, client, place, DaemonConfig};
use crate::journal;
use crate::tmux::ServerSpec;

/// Where the daemon's socket is.
#[derive(Debug, Args, Clone, Default)]
pub struct RuntimeArgs {
    /// The daemon's directory (made 0700; refused unless this user's and
    /// private). Default: $XDG_RUNTIME_DIR/panescan, else
    /// /tmp/panescan-UID.
    #[arg(long, env = place::RUNTIME_DIR_ENV, value_name = "DIR")]
    pub runtime_dir: Option<PathBuf>,
}

impl RuntimeArgs {
    /// The directory these options name.
    pub fn dir(&self) -> PathBuf {
        place::runtime_dir(self.runtime_dir.as_deref())
    }
}

/// `panescan daemon` options.
#[derive(Debug, Args)]
#[command(
    after_help = "Its serve flags (-L, -S, --tier, ceilings...) are the defaults of sessions whose `panescan serve` does not set them; its cache and ssh flags are the daemon's own.\n\nExamples:\n  panescan daemon                          # until idle for 10 minutes\n  panescan daemon --idle-exit 0            # until stopped (systemd user unit)\n  panescan status; panescan stop"
)]
pub struct DaemonArgs {
    #[allow(missing_docs)]
    #[command(flatten)]
    pub place: RuntimeArgs,
    /// MCP sessions served at once; one more is refused (its serve then
    /// serves in-process).
    #[arg(long, value_name = "N", default_value_t = daemon::DEFAULT_MAX_SESSIONS)]
    pub max_sessions: usize,
    /// Exit after SECS with no session (0: never).
    #[arg(long, value_name = "SECS", default_value_t = daemon::DEFAULT_IDLE_EXIT.as_secs())]
    pub idle_exit: u64,
    #[allow(missing_docs)]
    #[command(flatten)]
    pub journal: JournalArgs,
    #[allow(missing_docs)]
    #[command(flatten)]
    pub serve: ServeArgs,
    #[allow(missing_docs)]
    #[command(flatten)]
    pub http: super::http::HttpArgs,
}

/// Where the journal is (for `daemon` and `search --journal`).
#[derive(Debug, Args, Clone, Default)]
pub struct JournalDirArgs {
    /// The journal's directory (made 0700; refused unless this user's and
    /// private). Default: $XDG_STATE_HOME/panescan/journal, else
    /// ~/.local/state/panescan/journal.
    #[arg(long, env = "PANESCAN_JOURNAL_DIR", value_name = "DIR")]
    pub journal_dir: Option<PathBuf>,
}

impl JournalDirArgs {
    /// The directory these options name, or why there is none.
    pub fn dir(&self) -> Result<PathBuf, String> {
        match &self.journal_dir {
            Some(d) => Ok(std::path::absolute(d).unwrap_or_else(|_| d.clone())),
            None => journal::dir::default_dir()
                .ok_or_else(|| "no $XDG_STATE_HOME nor $HOME: pass --journal-dir".to_owned()),
        }
    }
}

/// `panescan daemon`'s journal options.
#[derive(Debug, Args)]
pub struct JournalArgs {
    /// Journal every pane of the default tmux server: each line kept on
    /// disk past history-limit, searchable with `panescan search
    /// --journal`. The daemon then runs until stopped.
    #[arg(long)]
    pub journal: bool,
    /// Journal the tmux server at NAME (as `tmux -L`) or PATH (with a `/`,
    /// as `tmux -S`) instead of the default one (repeatable: exactly the
    /// servers named are journaled; name the default one too to keep it;
    /// the variable takes NAME:PATH...). Implies --journal.
    #[arg(
        long = "journal-socket",
        env = "PANESCAN_JOURNAL_SOCKET",
        value_name = "NAME_OR_PATH",
        value_delimiter = ':'
    )]
    pub journal_sockets: Vec<String>,
    /// The journal's size at most; the oldest segments go first.
    #[arg(long, value_name = "BYTES", default_value_t = journal::DEFAULT_MAX_BYTES)]
    pub journal_max_bytes: u64,
    /// Segments older than this go (`7d`, `12h`).
    #[arg(long, value_name = "SPAN", default_value = "7d")]
    pub journal_max_age: String,
    /// Write lines as they are: secrets are redacted otherwise.
    #[arg(long)]
    pub journal_keep_secrets: bool,
    /// Read each pane's output through a pipe of its own (`pipe-pane`)
    /// instead of a control client per session: journaling costs tmux
    /// about 40% less, but a pane has one pipe, so a user's `pipe-pane -o`
    /// does nothing on a tapped pane and `#{pane_pipe}` reads 1 (GUIDE.md).
    #[arg(long)]
    pub journal_taps: bool,
}

impl JournalArgs {
    /// The journal's configuration in `place`, `None` without `--journal`
    /// nor `--journal-socket`.
    pub fn config(&self, place: &JournalDirArgs) -> Result<Option<journal::JournalConfig>, String> {
        if !self.journal && self.journal_sockets.is_empty() {
            return Ok(None);
        }
        let age = humantime::parse_duration(&self.journal_max_age)
            .map_err(|e| format!("--journal-max-age {:?}: {e}", self.journal_max_age))?;
        Ok(Some(journal::JournalConfig {
            dir: place.dir()?,
            max_bytes: self.journal_max_bytes,
            max_age_ms: i64::try_from(age.as_millis()).unwrap_or(i64::MAX),
            keep_secrets: self.journal_keep_secrets,
            taps: self.journal_taps,
        }))
    }

    /// The servers `--journal-socket` names: a value with a `/` is a socket
    /// path, else a socket name.
    pub fn sockets(&self) -> Result<Vec<ServerSpec>, String> {
        self.journal_sockets
            .iter()
            .filter(|s| !s.is_empty())
            .map(|s| {
                let spec = if s.contains('/') {
                    let path = PathBuf::from(s);
                    ServerSpec {
                        socket_path: Some(std::path::absolute(&path).unwrap_or(path)),
                        ..ServerSpec::default()
                    }
                } else {
                    ServerSpec::named(s)
                };
                crate::tmux::paths::resolve_socket(&spec)
                    .map(|_| spec)
                    .map_err(|e| format!("--journal-socket {s:?}: {e}"))
            })
            .collect()
    }
}

/// Runs `panescan daemon`.
pub fn run_daemon(args: &DaemonArgs) -> ExitCode {
    super::arenas::cap();
    // Master connections stay up while the daemon waits for a session:
    // the next one's first call over ssh pays no handshake.
    let idle = if args.idle_exit > 0 {
        args.idle_exit
    } else {
        daemon::DEFAULT_IDLE_EXIT.as_secs()
    };
    crate::tmux::ssh::set_persist(u32::try_from(idle).unwrap_or(u32::MAX));
    let hosts = match args.serve.ssh.configure() {
        Ok(h) => h,
        Err(e) => {
            eprintln!("panescan daemon: {e}");
            return ExitCode::from(2);
        }
    };
    let trust = match args.serve.trust.start() {
        Ok(t) => t,
        Err(e) => {
            eprintln!("panescan daemon: {e}");
            return ExitCode::from(2);
        }
    };
    let http = match args.http.options(args.max_sessions) {
        Ok(http) => http,
        Err(e) => {
            eprintln!("panescan daemon: {e}");
            return ExitCode::from(2);
        }
    };
    let journal = match args.journal.config(&args.serve.journal_place) {
        Ok(j) => j,
        Err(e) => {
            eprintln!("panescan daemon: {e}");
            return ExitCode::from(2);
        }
    };
    let journal_sockets = match args.journal.sockets() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("panescan daemon: {e}");
            return ExitCode::from(2);
        }
    };
    let config = DaemonConfig {
        trust,
        journal,
        journal_sockets,
        runtime_dir: args.place.dir(),
        max_sessions: args.max_sessions.max(1),
        // An HTTP endpoint is a service: it stays until stopped.
        idle_exit: (args.idle_exit > 0 && http.is_none())
            .then(|| Duration::from_secs(args.idle_exit)),
        cache_bytes: args.serve.cache_bytes(),
        hosts,
        defaults: SessionSpec {
            // A session that names no journal reads the daemon's.
            journal_dir: args.serve.journal_place.dir().ok(),
            ..spec_of(&args.serve, &Explicit::default())
        },
    };
    let endpoint = http.map(|opts| {
        // Its sessions are the daemon's own, opened through its socket
        // like any client's (counted, checked, stopped with the daemon).
        let opener =
            super::http::through_daemon(config.runtime_dir.clone(), config.defaults.clone(), None);
        let (stop_tx, stop_rx) = crossbeam_channel::bounded::<()>(1);
        let thread = std::thread::Builder::new()
            .name("http-endpoint".into())
            .spawn(move || {
                if let Err(e) = crate::http::serve(opts, opener, stop_rx) {
                    eprintln!("panescan daemon: {e}");
                }
            });
        (stop_tx, thread)
    });
    let code = daemon::run(config);
    if let Some((stop, thread)) = endpoint {
        let _ = stop.send(());
        if let Ok(thread) = thread {
            let _ = thread.join();
        }
    }
    ExitCode::from(u8::try_from(code).unwrap_or(1))
}

/// Runs `panescan status`: the daemon's state as JSON on stdout.
pub fn run_status(place: &RuntimeArgs) -> ExitCode {
    ask(
        place,
        &Request::Status,
        "status",
        |answer| match serde_json::to_string_pretty(&answer.status) {
            Ok(text) => println!("{text}"),
            Err(e) => eprintln!("panescan status: {e}"),
        },
    )
}

/// Runs `panescan stop`: the daemon answers its sessions and exits.
pub fn run_stop(place: &RuntimeArgs) -> ExitCode {
    ask(place, &Request::Stop, "stop", |_| {
        eprintln!("panescan stop: the daemon is stopping");
    })
}

fn ask(
    place: &RuntimeArgs,
    request: &Request,
    what: &str,
    show: impl FnOnce(daemon::wire::Answer),
) -> ExitCode {
    let dir = place.dir();
    let Some(mut conn) = client::find(&dir, &place::build_id(), false) else {
        eprintln!(
            "panescan {what}: no daemon of this build answers in {}",
            dir.display()
        );
        return ExitCode::from(1);
    };
    match conn.request(request) {
        Ok(answer) => {
            show(answer);
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("panescan {what}: {e}");
            ExitCode::from(1)
        }
    }
}
