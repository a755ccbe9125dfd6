//! `panescan serve`: what MCP clients are configured with. It relays its
//! session to the user's daemon (started detached when none answers) or,
//! with `--no-daemon`, serves in this process as it always did.
//!
//! Its flags become the session's [`SessionSpec`], resolved here (paths
//! made absolute, `$TMUX`'s server named), so a session means in the
//! daemon what it would have meant in-process. The daemon's own flags fill
//! in only what this serve's command line and environment leave unset.
//!
//! The session carries its caller (`$TMUX`, `$TMUX_PANE`, this process
//! and its parents), which the daemon checks against the connection's
//! peer: `is_caller` and the refusals to kill or type into the client's own
//! pane mean in the daemon what they mean here. Its `--ssh` hosts and
//! their options go with it: the daemon holds their master connections,
//! shared with sessions that ask for the same host with the same options.
//!
//! Served in-process even without `--no-daemon`: sessions with trust flags
//! of their own (`--policy`, `--scope-sessions`, `--confirm-destructive`,
//! `--audit-log`: the policy, its SIGHUP and its log are this process's).

use std::ffi::OsString;
use std::process::{Command, ExitCode};
use std::sync::Arc;

use clap::parser::ValueSource;
use clap::{Args, CommandFactory};

use super::daemon::RuntimeArgs;
use super::ServeArgs;
use crate::config::{Ceilings, ServeConfig};
use crate::daemon::client::{self, Connected};
use crate::daemon::place;
use crate::daemon::wire::{CallerSpec, Request, SessionEnv, SessionSpec, SshSpec};
use crate::trust::Trust;

/// `panescan serve`: the server flags, and how to reach the daemon.
#[derive(Debug, Args)]
pub struct ServeCommand {
    #[allow(missing_docs)]
    #[command(flatten)]
    pub args: ServeArgs,
    /// Serve in this process, as one MCP session on stdin/stdout, sharing
    /// nothing with other sessions (no daemon is used or started).
    #[arg(long, env = "PANESCAN_NO_DAEMON", value_parser = clap::builder::BoolishValueParser::new())]
    pub no_daemon: bool,
    #[allow(missing_docs)]
    #[command(flatten)]
    pub place: RuntimeArgs,
    #[allow(missing_docs)]
    #[command(flatten)]
    pub http: super::http::HttpArgs,
    /// With --http: HTTP sessions at once; one more initialize gets 503.
    #[arg(long, value_name = "N", requires = "http", default_value_t = crate::http::DEFAULT_MAX_SESSIONS)]
    pub max_sessions: usize,
}

/// The serve flags given on the command line or in the environment (not
/// left at their defaults): the daemon's own stand for the others.
#[derive(Debug, Default, Clone)]
pub struct Explicit(pub Vec<String>);

impl Explicit {
    /// Read from this process's command line and environment.
    fn from_command_line() -> Self {
        let Ok(matches) = super::Cli::command().try_get_matches() else {
            return Explicit::default();
        };
        let Some(("serve", sub)) = matches.subcommand() else {
            return Explicit::default();
        };
        Explicit(
            sub.ids()
                .filter(|id| {
                    matches!(
                        sub.value_source(id.as_str()),
                        Some(ValueSource::CommandLine | ValueSource::EnvVariable)
                    )
                })
                .map(|id| id.as_str().to_owned())
                .collect(),
        )
    }
}

/// The session `args` ask for.
pub fn spec_of(args: &ServeArgs, explicit: &Explicit) -> SessionSpec {
    let mut explicit = explicit.0.clone();
    let mut socket_path = args.socket_path.clone();
    if args.socket_name.is_none() && socket_path.is_none() {
        // The server `tmux` would use here: the one in this $TMUX.
        if let Some(path) = crate::tmux::paths::tmux_env_socket() {
            socket_path = Some(path);
            explicit.push("socket_path".into());
        }
    }
    let mut pass_env = ServeConfig::default().pass_env;
    pass_env.extend(args.pass_env.iter().filter(|n| !n.is_empty()).cloned());
    let pass_env_values = crate::tmux::client_env::values_of(&pass_env);
    SessionSpec {
        socket_name: args.socket_name.clone(),
        socket_path: socket_path.map(|p| std::path::absolute(&p).unwrap_or(p)),
        allow_socket_dirs: args.socket_policy().allowed_dirs,
        log_dir: args
            .log_dir
            .clone()
            .map(|d| std::path::absolute(&d).unwrap_or(d)),
        pass_env,
        pass_env_values,
        tier: args.tier,
        ceilings: args.ceilings.apply(Ceilings::default()),
        cache: !args.no_cache,
        wait_events: !args.no_events,
        redact: !args.no_redact,
        env: SessionEnv::here(),
        explicit,
        allow_own_pane: args.allow_own_pane,
        caller: CallerSpec::here(),
        ssh: args
            .ssh
            .settings()
            .ok()
            .filter(|s| !s.hosts.is_empty())
            .map(|s| SshSpec::of(&s)),
        journal_dir: args
            .journal_place
            .journal_dir
            .as_ref()
            .map(|d| std::path::absolute(d).unwrap_or_else(|_| d.clone())),
    }
}

/// Runs `panescan serve`.
pub fn run(cmd: &ServeCommand) -> ExitCode {
    let args = &cmd.args;
    if cmd.http.http.is_some() {
        return serve_http(cmd);
    }
    let here = if cmd.no_daemon {
        Some(None)
    } else {
        served_here(args).map(Some)
    };
    if let Some(why) = here {
        if let Some(why) = why {
            eprintln!("panescan serve: {why}");
        }
        // Before any thread: may start this program again (same pid).
        super::arenas::cap();
        return serve_here(args);
    }
    // A flag the session cannot have is refused here, as in-process.
    if let Err(e) = args.ssh.settings() {
        eprintln!("panescan serve: {e}");
        return ExitCode::from(2);
    }
    let explicit = Explicit::from_command_line();
    warn_of_daemons_trust_flags(&explicit);
    let spec = spec_of(args, &explicit);
    let dir = cmd.place.dir();
    let connect = || open_session(&dir, args, &spec);
    match connect() {
        Ok(conn) => super::relay::run(conn, &connect),
        Err(e) => {
            eprintln!("panescan serve: no daemon session ({e}); serving in-process");
            serve_here(args)
        }
    }
}

/// `serve --http`: the endpoint, its sessions the daemon's (or this
/// process's, as for stdio).
fn serve_http(cmd: &ServeCommand) -> ExitCode {
    let args = &cmd.args;
    let opts = match cmd.http.options(cmd.max_sessions) {
        Ok(Some(opts)) => opts,
        Ok(None) => return ExitCode::from(2),
        Err(e) => {
            eprintln!("panescan serve: {e}");
            return ExitCode::from(2);
        }
    };
    let here = if cmd.no_daemon {
        Some(None)
    } else {
        served_here(args).map(Some)
    };
    let explicit = Explicit::from_command_line();
    if here.is_none() {
        warn_of_daemons_trust_flags(&explicit);
    }
    let spec = spec_of(args, &explicit);
    let dir = cmd.place.dir();
    // The daemon is found (or started) once now: an error shows at start.
    let daemon = here.is_none().then(|| open_session(&dir, args, &spec));
    // The trust settings served here, reloaded on SIGHUP (a daemon
    // reloads its own).
    let mut here_trust = None;
    let opener = match daemon {
        Some(Ok(_probe)) => {
            let (dir2, cache_mb) = (dir.clone(), args.cache_mb);
            super::http::through_daemon(
                dir,
                spec,
                Some(std::sync::Arc::new(move || daemon_command(&dir2, cache_mb))),
            )
        }
        other => {
            if let Some(Err(e)) = other {
                eprintln!("panescan serve: no daemon session ({e}); serving in-process");
            } else if let Some(Some(why)) = here {
                eprintln!("panescan serve: {why}");
            }
            match in_process_config(args) {
                Ok((config, trust)) => {
                    here_trust = Some(trust.clone());
                    super::http::in_process(config, trust)
                }
                Err(code) => return code,
            }
        }
    };
    let stop = super::http::stop_on_signals(here_trust);
    let code = match crate::http::serve(opts, opener, stop) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("panescan serve: {e}");
            ExitCode::from(1)
        }
    };
    crate::tools::shutdown_connections();
    code
}

/// Why a session with `args` is served in-process without being asked.
fn served_here(args: &ServeArgs) -> Option<&'static str> {
    args.trust
        .settings()
        .any()
        .then_some("a session with its own policy, scope or audit log is served in-process")
}

/// Trust flags that only tune trust settings of a session's own: a session
/// without a policy, scope, confirmation or audit log of its own is the
/// daemon's, whose ask timeout and audit options apply.
const DAEMONS_TRUST_FLAGS: [(&str, &str); 3] = [
    ("ask_timeout", "--ask-timeout"),
    ("audit_hash_text", "--audit-hash-text"),
    ("audit_max_bytes", "--audit-max-bytes"),
];

/// Says on stderr which of [`DAEMONS_TRUST_FLAGS`] were given to a session
/// the daemon serves, where they change nothing.
fn warn_of_daemons_trust_flags(explicit: &Explicit) {
    let given: Vec<&str> = DAEMONS_TRUST_FLAGS
        .iter()
        .filter(|(id, _)| explicit.0.iter().any(|e| e == id))
        .map(|(_, flag)| *flag)
        .collect();
    if let Some(first) = given.first() {
        eprintln!(
            "panescan serve: {} change nothing here: without --policy, --scope-sessions, \
             --confirm-destructive or --audit-log the session is the daemon's, and the \
             daemon's own settings apply (panescan daemon {first} ...)",
            given.join(", ")
        );
    }
}

/// A session of this build's daemon in `dir`, started when none answers.
fn open_session(
    dir: &std::path::Path,
    args: &ServeArgs,
    spec: &SessionSpec,
) -> Result<Connected, String> {
    let build = place::build_id();
    let mut conn = client::find_or_start(dir, &build, daemon_command(dir, args.cache_mb)?)?;
    let answer = conn.request(&Request::Session {
        spec: Box::new(spec.clone()),
    })?;
    match answer.refused {
        Some(why) => Err(format!("the daemon refused: {why}")),
        None => Ok(conn),
    }
}

/// The daemon a serve starts: this program, this tmux, the cache size
/// asked for; none of panescan's variables (a later session must not
/// inherit this one's tier or ceilings as the daemon's defaults) and no
/// `$TMUX` (the daemon runs in no pane).
fn daemon_command(dir: &std::path::Path, cache_mb: usize) -> Result<Command, String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this program: {e}"))?;
    let mut cmd = Command::new(exe);
    cmd.arg("--tmux")
        .arg(crate::tmux::binary::program())
        .arg("daemon")
        .arg("--runtime-dir")
        .arg(dir)
        .arg("--cache-mb")
        .arg(cache_mb.to_string());
    let ours: Vec<OsString> = std::env::vars_os()
        .map(|(k, _)| k)
        .filter(|k| k.to_string_lossy().starts_with("PANESCAN_"))
        .collect();
    for key in ours {
        cmd.env_remove(key);
    }
    cmd.env_remove("TMUX").env_remove("TMUX_PANE");
    Ok(cmd)
}

/// The in-process server (`--no-daemon`), as `serve` always was.
fn serve_here(args: &ServeArgs) -> ExitCode {
    // Off the path to the first answer: a missing tmux is worth a line on
    // stderr, not a slower start.
    std::thread::spawn(|| {
        if let Err(e) = super::preflight::check_tmux() {
            eprintln!("panescan serve: {e}");
        }
    });
    let (config, trust) = match in_process_config(args) {
        Ok(started) => started,
        Err(code) => return code,
    };
    let code = crate::mcp::server::serve(config, trust);
    ExitCode::from(u8::try_from(code).unwrap_or(1))
}

/// The configuration of a session served in this process, and its trust
/// settings (policy, scope, audit log) started.
fn in_process_config(args: &ServeArgs) -> Result<(ServeConfig, Arc<Trust>), ExitCode> {
    let hosts = match args.ssh.configure() {
        Ok(h) => h,
        Err(e) => {
            eprintln!("panescan serve: {e}");
            return Err(ExitCode::from(2));
        }
    };
    // A policy that does not load or a log that cannot be written: no
    // session runs without them.
    let trust = match args.trust.start() {
        Ok(t) => t,
        Err(e) => {
            eprintln!("panescan serve: {e}");
            return Err(ExitCode::from(2));
        }
    };
    let spec = spec_of(args, &Explicit::default());
    let mut config = spec.config(hosts, args.cache_bytes());
    config.journal_dir = args.journal_place.dir().ok();
    // In-process, an unset server is whatever `tmux` would use, $TMUX
    // included, as it always was.
    if args.socket_name.is_none() && args.socket_path.is_none() {
        config.server.socket_path = None;
    }
    Ok((config, trust))
}
