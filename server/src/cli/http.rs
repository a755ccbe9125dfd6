//! `serve --http ADDR` and `daemon --http ADDR`: the HTTP endpoint's
//! flags checked into [`crate::http::HttpOptions`], and how its sessions
//! are opened: as sessions of the user's daemon (so HTTP and stdio
//! clients share its tmux connections and pane cache), or in this
//! process with `--no-daemon`.

use std::net::SocketAddr;
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use crossbeam_channel::{bounded, Receiver};

use crate::config::{ServeConfig, Tier};
use crate::daemon::client;
use crate::daemon::place;
use crate::daemon::wire::{Request, SessionSpec};
use crate::http::auth::Tokens;
use crate::http::{HttpOptions, Opener};
use crate::mcp::session::{self, Shared};

/// The HTTP endpoint's flags.
#[derive(Debug, Args, Clone, Default)]
pub struct HttpArgs {
    /// Serve MCP over Streamable HTTP at http://ADDR/mcp (e.g.
    /// 127.0.0.1:8765) instead of stdin/stdout.
    #[arg(long, value_name = "ADDR")]
    pub http: Option<String>,
    /// Bearer tokens, one a line: TOKEN, or TIER TOKEN for a token whose
    /// sessions run at TIER. Created with one fresh 256-bit token (mode
    /// 0600) when missing; refused when other users may read it.
    #[arg(long, value_name = "FILE", requires = "http")]
    pub token_file: Option<PathBuf>,
    /// Serve without tokens (loopback only): every local user and process
    /// can then use the endpoint.
    #[arg(long, requires = "http", conflicts_with = "token_file")]
    pub no_auth: bool,
    /// Let browser pages of ORIGIN (e.g. https://app.example) call the
    /// endpoint (repeatable). Without it any request with an Origin gets 403.
    #[arg(long = "allow-origin", value_name = "ORIGIN", requires = "http")]
    pub allow_origins: Vec<String>,
    /// The TLS certificate chain (PEM), with --tls-key.
    #[arg(long, value_name = "FILE", requires_all = ["http", "tls_key"])]
    pub tls_cert: Option<PathBuf>,
    /// The TLS private key (PEM), with --tls-cert.
    #[arg(long, value_name = "FILE", requires_all = ["http", "tls_cert"])]
    pub tls_key: Option<PathBuf>,
    /// Serve plain HTTP on a non-loopback address (tokens then cross the
    /// network readable).
    #[arg(long, requires = "http")]
    pub allow_plain_http: bool,
    /// End an HTTP session after SECS with no request and no open stream.
    #[arg(long, value_name = "SECS", requires = "http", default_value_t = crate::http::DEFAULT_SESSION_IDLE.as_secs())]
    pub session_idle: u64,
}

impl HttpArgs {
    /// The checked options (`max_sessions`: sessions at once).
    pub fn options(&self, max_sessions: usize) -> Result<Option<HttpOptions>, String> {
        let Some(addr) = &self.http else {
            return Ok(None);
        };
        let addr: SocketAddr = addr
            .parse()
            .map_err(|e| format!("--http {addr}: {e} (e.g. 127.0.0.1:8765)"))?;
        let loopback = addr.ip().is_loopback();
        let tls = self.tls_cert.clone().zip(self.tls_key.clone());
        if !loopback && tls.is_none() && !self.allow_plain_http {
            return Err(format!(
                "--http {addr} is not a loopback address: give --tls-cert and --tls-key, or --allow-plain-http"
            ));
        }
        let tokens = match (&self.token_file, self.no_auth) {
            (_, true) if !loopback => {
                return Err(format!(
                    "--no-auth serves loopback only; {addr} is reachable from other machines"
                ))
            }
            (_, true) => None,
            (Some(file), false) => Some(Tokens::load_or_create(file)?),
            (None, false) => return Err(
                "--http needs --token-file FILE (created when missing) or, on loopback, --no-auth"
                    .into(),
            ),
        };
        Ok(Some(HttpOptions {
            addr,
            tokens,
            allow_origins: self.allow_origins.clone(),
            loopback,
            max_sessions: max_sessions.max(1),
            session_idle: Duration::from_secs(self.session_idle.max(1)),
            tls,
        }))
    }
}

/// Sessions served in this process, sharing one pane cache; `base` is
/// the configuration a token's tier changes.
pub fn in_process(base: ServeConfig, trust: Arc<crate::trust::Trust>) -> Opener {
    let mut shared = Shared::new(base.cache_bytes);
    shared.trust = trust;
    Arc::new(move |tier: Option<Tier>| {
        let mut config = base.clone();
        if let Some(tier) = tier {
            config.tier = tier;
        }
        let (ours, theirs) = UnixStream::pair().map_err(|e| e.to_string())?;
        let input = theirs.try_clone().map_err(|e| e.to_string())?;
        let shared = shared.clone();
        std::thread::Builder::new()
            .name("http-session".into())
            .spawn(move || {
                // No stop of its own: the endpoint ends it by closing its input.
                let (_, never) = bounded::<()>(0);
                let closer = theirs.try_clone().ok();
                let _ = session::run(
                    Arc::new(config),
                    &shared,
                    (input, theirs),
                    &never,
                    ["session-in", "session-out"],
                );
                if let Some(c) = closer {
                    let _ = c.shutdown(std::net::Shutdown::Both);
                }
            })
            .map_err(|e| format!("cannot start a session: {e}"))?;
        Ok(ours)
    })
}

/// Sessions of the daemon in `dir` under `spec` (a token's tier
/// replacing the spec's); `start` starts one when none answers.
pub fn through_daemon(
    dir: PathBuf,
    spec: SessionSpec,
    start: Option<Arc<dyn Fn() -> Result<std::process::Command, String> + Send + Sync>>,
) -> Opener {
    Arc::new(move |tier: Option<Tier>| {
        let mut spec = spec.clone();
        if let Some(tier) = tier {
            spec.tier = tier;
            spec.explicit.push("tier".into());
        }
        let build = place::build_id();
        let mut conn = match &start {
            Some(start) => client::find_or_start(&dir, &build, start()?)?,
            None => client::find(&dir, &build, true)
                .ok_or_else(|| format!("no daemon answers in {}", dir.display()))?,
        };
        let answer = conn.request(&Request::Session {
            spec: Box::new(spec),
        })?;
        if let Some(why) = answer.refused {
            return Err(format!("the daemon refused: {why}"));
        }
        // Nothing of the session is buffered in the reader yet: the
        // daemon writes only after a request.
        if !conn.reader.buffer().is_empty() {
            return Err("the daemon spoke before the session started".into());
        }
        Ok(conn.writer)
    })
}

/// A stop on SIGINT, SIGTERM or SIGHUP (for `serve --http`); SIGHUP
/// reloads a policy served here, as stdio's serve does.
pub fn stop_on_signals(trust: Option<Arc<crate::trust::Trust>>) -> Receiver<()> {
    crate::mcp::server::stop_on_signals(trust, "stopping the HTTP endpoint")
}
