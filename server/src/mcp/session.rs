//! One MCP session over any reader and writer: stdin/stdout for `serve
//! --no-daemon`, a unix stream for each of the daemon's sessions.
//!
//! A reader thread feeds the session's own [`Dispatcher`] (its calls,
//! cancels, waits and subscriptions are the session's alone), a writer
//! thread owns the output (so lines never interleave), and the caller's
//! thread waits for end of input or a stop. What sessions share (the pane
//! cache; tmux connections are shared by `Tmux::shared` anyway) comes in
//! as [`Shared`]. A session never closes the tmux connections: the
//! process that owns them does, once, at its own end.

use std::io::{self, BufReader, Read, Write};
use std::sync::Arc;
use std::time::Duration;

use crossbeam_channel::{bounded, select, Receiver};

use super::dispatch::{Dispatcher, Outgoing};
use super::jsonrpc::{LineReader, MAX_LINE_BYTES};
use crate::cache::PaneCache;
use crate::config::ServeConfig;
use crate::tools::context::ToolContext;
use crate::tools::registry::Registry;
use crate::trust::Trust;

/// How long running calls get to notice a cancel at shutdown.
const SHUTDOWN_GRACE: Duration = Duration::from_millis(400);
/// At end of input, how long running calls may take to finish and answer
/// before they are cancelled: `echo REQUEST | panescan serve` must get its
/// answer, but a client that went away must not keep us alive.
const EOF_GRACE: Duration = Duration::from_secs(1);
/// How long the last answers may take to reach a client at the end: one
/// that reads nothing keeps the queue full, and must not keep us.
const FLUSH_GRACE: Duration = Duration::from_secs(2);

/// Lines waiting for the writer. A client that stops reading fills this,
/// then the threads that answer wait, then the reader stops reading: the
/// client meets back-pressure on its own input instead of the server
/// buffering every answer (unread `tools/list` answers alone grow without
/// end). Each session has its own queue, so one slow reader holds up only
/// its own calls.
const OUT_QUEUE_LINES: usize = 64;

/// What every session of a process shares.
#[derive(Debug, Clone, Default)]
pub struct Shared {
    /// The pane cache (`None`: no session keeps pane text).
    pub pane_cache: Option<Arc<PaneCache>>,
    /// The operator's policy, scope and audit log (`Trust::none()`: none).
    pub trust: Arc<Trust>,
}

impl Shared {
    /// A pane cache of `bytes` (`None`: none).
    pub fn new(cache_bytes: Option<usize>) -> Self {
        Shared {
            pane_cache: cache_bytes.map(|bytes| Arc::new(PaneCache::new(bytes))),
            trust: Arc::new(Trust::none()),
        }
    }
}

/// How a session ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// The client closed its side; running calls had [`EOF_GRACE`] to answer.
    Eof,
    /// Told to stop (a signal, the daemon's end): calls were cancelled and
    /// answered.
    Stopped,
}

/// Serves one MCP session: lines from `input`, answers to `output`, until
/// end of input or a message on `stop`. `config` is the session's own
/// (tier, ceilings, default server); `shared` what it shares with others;
/// `threads` names its reader and writer threads (`stdin`, `stdout` on
/// stdio: what an operator sees in `/proc`).
pub fn run<R, W>(
    config: Arc<ServeConfig>,
    shared: &Shared,
    (input, output): (R, W),
    stop: &Receiver<()>,
    threads: [&str; 2],
) -> Result<Ended, String>
where
    R: Read + Send + 'static,
    W: Write + Send + 'static,
{
    let registry = Arc::new(Registry::for_config(&config));
    let mut tools = ToolContext::new_shared(config, registry.clone(), shared.pane_cache.clone());
    tools.session = next_session();
    let session = tools.session;
    let (out_tx, out_rx) = bounded::<Outgoing>(OUT_QUEUE_LINES);
    let writer = std::thread::Builder::new()
        .name(threads[1].into())
        .spawn(move || writer_loop(out_rx, output))
        .map_err(|e| format!("cannot start the writer thread: {e}"))?;
    let dispatcher = Arc::new(
        Dispatcher::with_tools(registry, tools, out_tx.clone()).with_trust(shared.trust.clone()),
    );
    let (eof_tx, eof_rx) = bounded::<()>(1);
    {
        let dispatcher = dispatcher.clone();
        std::thread::Builder::new()
            .name(threads[0].into())
            .spawn(move || {
                let mut reader = LineReader::new(BufReader::new(input), MAX_LINE_BYTES);
                loop {
                    match reader.next_line() {
                        Ok(Some(line)) => dispatcher.handle_line(line),
                        Ok(None) => break,
                        Err(e) => {
                            eprintln!("panescan: input: {e}");
                            break;
                        }
                    }
                }
                let _ = eof_tx.send(());
            })
            .map_err(|e| format!("cannot start the reader thread: {e}"))?;
    }

    let ended = select! {
        recv(eof_rx) -> _ => Ended::Eof,
        recv(stop) -> msg => match msg {
            Ok(()) => Ended::Stopped,
            // Nobody can stop this session but its client.
            Err(_) => {
                let _ = eof_rx.recv();
                Ended::Eof
            }
        },
    };
    if ended == Ended::Eof {
        dispatcher.drain(EOF_GRACE);
    }
    // Stop the work, let every call write its answer (a call stopped here
    // answers with what it has or an error, never silence), flush.
    dispatcher.shutdown(SHUTDOWN_GRACE);
    // What the session started ends with it.
    crate::tools::run::end_session(session);
    let (ack_tx, ack_rx) = bounded(1);
    let _ = out_tx.send_timeout(Outgoing::Flush(ack_tx), FLUSH_GRACE);
    let _ = ack_rx.recv_timeout(FLUSH_GRACE);
    drop(writer);
    Ok(ended)
}

/// A process-unique session id (never 0: 0 is a context made outside any
/// session, the command line's).
fn next_session() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

fn writer_loop<W: Write>(rx: Receiver<Outgoing>, output: W) {
    let mut out = io::BufWriter::with_capacity(64 * 1024, output);
    while let Ok(msg) = rx.recv() {
        let mut ok = true;
        let mut handle = |msg: Outgoing, out: &mut io::BufWriter<W>| match msg {
            Outgoing::Line(line) => {
                ok &= out.write_all(line.as_bytes()).is_ok();
                ok &= out.write_all(b"\n").is_ok();
            }
            Outgoing::Flush(ack) => {
                let _ = out.flush();
                let _ = ack.send(());
            }
        };
        handle(msg, &mut out);
        // Batch what is already queued, then flush once: a burst of
        // progress notifications costs one write.
        while let Ok(more) = rx.try_recv() {
            handle(more, &mut out);
        }
        if out.flush().is_err() || !ok {
            // The client is gone; nothing more can be said.
            break;
        }
    }
}
