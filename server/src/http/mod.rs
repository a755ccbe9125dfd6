//! MCP over Streamable HTTP (`serve --http`, `daemon --http`): an HTTP/1.1
//! endpoint at `/mcp` in front of ordinary MCP sessions.
//!
//! The HTTP layer speaks only HTTP: each MCP session it serves is a
//! stream of JSON-RPC lines that whoever starts it hands over (the
//! daemon's session, or one run in this process by
//! [`crate::mcp::session`]), so the dispatcher, progress, cancellation,
//! subscriptions and server requests are the stdio ones.
//!
//! - [`auth`] — bearer tokens and their tiers, constant-time comparison,
//!   the Origin and Host checks.
//! - [`endpoint`] — POST, GET and DELETE on `/mcp`; sessions by
//!   `Mcp-Session-Id`, stateless requests of the 2026-07-28 era.
//! - [`conn`] — one MCP session's stream and the routes that take its
//!   lines to the HTTP streams waiting for them.
//! - [`body`] — JSON and SSE bodies.
//! - [`replay`] — what a session's streams sent, for a resume with
//!   `Last-Event-ID`.
//! - [`tls`] — rustls for a non-loopback bind.
//!
//! What must hold: a non-loopback bind has TLS or was explicitly allowed
//! plain, and tokens (`--no-auth` is for loopback only); bodies, sessions,
//! connections and each stream's buffer are bounded; SIGTERM answers every
//! open stream and closes every connection before the process ends.

pub(crate) mod auth;
pub(crate) mod body;
pub(crate) mod conn;
pub(crate) mod endpoint;
pub(crate) mod replay;
pub(crate) mod tls;

use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crossbeam_channel::Receiver;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpListener;
use tokio::sync::{watch, Semaphore};
use tokio::task::JoinSet;

pub use endpoint::{Endpoint, Opener};

/// HTTP sessions at once, unless `--max-sessions` says otherwise.
pub const DEFAULT_MAX_SESSIONS: usize = 64;
/// A session with no request and no open stream for this long is ended.
pub const DEFAULT_SESSION_IDLE: Duration = Duration::from_secs(30 * 60);
/// TCP connections at once: each SSE stream holds one; past this a new
/// connection is closed at once instead of holding memory and threads.
const MAX_CONNECTIONS: usize = 1024;
/// How long a client has to send a request's headers (slow-loris).
const HEADER_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a TLS handshake may take.
const TLS_TIMEOUT: Duration = Duration::from_secs(10);
/// At a stop, how long open connections get to finish what they send.
const STOP_GRACE: Duration = Duration::from_secs(3);

/// How the endpoint is served.
#[derive(Debug, Clone)]
pub struct HttpOptions {
    /// Where to listen.
    pub addr: SocketAddr,
    /// The accepted tokens (`None`: `--no-auth`, loopback only).
    pub tokens: Option<auth::Tokens>,
    /// Origins a browser page may call from (`--allow-origin`).
    pub allow_origins: Vec<String>,
    /// Whether the bind is loopback: the Host header must then name it.
    pub loopback: bool,
    /// Sessions at once.
    pub max_sessions: usize,
    /// When an idle session ends.
    pub session_idle: Duration,
    /// The certificate chain and key (PEM), for TLS.
    pub tls: Option<(PathBuf, PathBuf)>,
}

/// Serves `/mcp` on `opts.addr` until `stop` says so (or its sender
/// goes), opening sessions with `opener`. Returns once every connection
/// closed (or [`STOP_GRACE`] passed).
pub fn serve(opts: HttpOptions, opener: Opener, stop: Receiver<()>) -> Result<(), String> {
    let acceptor = match &opts.tls {
        Some((cert, key)) => Some(tls::acceptor(cert, key)?),
        None => None,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("http")
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the HTTP runtime: {e}"))?;
    runtime.block_on(async move {
        let listener = TcpListener::bind(opts.addr)
            .await
            .map_err(|e| format!("cannot listen on {}: {e}", opts.addr))?;
        let local = listener.local_addr().map_err(|e| e.to_string())?;
        let scheme = if acceptor.is_some() { "https" } else { "http" };
        eprintln!("panescan: MCP over HTTP at {scheme}://{local}/mcp");
        let endpoint = Endpoint::new(opts.clone(), opener);
        let (stop_tx, stop_rx) = watch::channel(false);
        tokio::task::spawn_blocking(move || {
            let _ = stop.recv();
            let _ = stop_tx.send(true);
        });
        expire_idle(endpoint.clone(), opts.session_idle, stop_rx.clone());
        let conns = accept(&listener, &endpoint, acceptor, stop_rx).await;
        finish(&endpoint, conns).await;
        Ok(())
    })
}

/// Ends idle sessions every so often, until the stop.
fn expire_idle(endpoint: Arc<Endpoint>, idle: Duration, mut stop: watch::Receiver<bool>) {
    let tick = (idle / 4).clamp(Duration::from_millis(50), Duration::from_secs(30));
    tokio::spawn(async move {
        let mut interval = tokio::time::interval(tick);
        loop {
            tokio::select! {
                _ = interval.tick() => endpoint.expire_idle(),
                _ = stop.changed() => return,
            }
        }
    });
}

/// Accepts connections until the stop; the connections still running.
async fn accept(
    listener: &TcpListener,
    endpoint: &Arc<Endpoint>,
    acceptor: Option<tokio_rustls::TlsAcceptor>,
    mut stop: watch::Receiver<bool>,
) -> JoinSet<()> {
    let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    let mut conns = JoinSet::new();
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            _ = stop.changed() => break,
        };
        // Reap finished connections as we go.
        while conns.try_join_next().is_some() {}
        let Ok((tcp, _)) = accepted else { continue };
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            continue;
        };
        let (endpoint, stop, acceptor) = (endpoint.clone(), stop.clone(), acceptor.clone());
        conns.spawn(async move {
            let _ = tcp.set_nodelay(true);
            match acceptor {
                None => connection(tcp, endpoint, stop).await,
                Some(acceptor) => {
                    if let Ok(Ok(tls)) =
                        tokio::time::timeout(TLS_TIMEOUT, acceptor.accept(tcp)).await
                    {
                        connection(tls, endpoint, stop).await;
                    }
                }
            }
            drop(slot);
        });
    }
    conns
}

/// Serves one connection; at the stop it finishes the response under way
/// and closes.
async fn connection<IO>(io: IO, endpoint: Arc<Endpoint>, mut stop: watch::Receiver<bool>)
where
    IO: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let service = service_fn(move |req| {
        let endpoint = endpoint.clone();
        async move { Ok::<_, Infallible>(endpoint.handle(req).await) }
    });
    let conn = http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(HEADER_TIMEOUT)
        .serve_connection(TokioIo::new(io), service);
    tokio::pin!(conn);
    tokio::select! {
        _ = conn.as_mut() => return,
        _ = stop.changed() => {}
    }
    conn.as_mut().graceful_shutdown();
    let _ = conn.await;
}

/// The stop: every open stream answered and ended, connections given
/// [`STOP_GRACE`] to close, then the sessions ended.
async fn finish(endpoint: &Arc<Endpoint>, mut conns: JoinSet<()>) {
    endpoint.begin_stop();
    let _ = tokio::time::timeout(STOP_GRACE, async {
        while conns.join_next().await.is_some() {}
    })
    .await;
    conns.abort_all();
    endpoint.close_all();
    eprintln!("panescan: HTTP endpoint stopped");
}
