//! The stdio loop: a reader thread feeds the dispatcher, a writer thread
//! owns stdout (so protocol lines never interleave), and the main thread
//! waits for end of input or SIGINT/SIGTERM to shut down cleanly.

use std::io::{self, BufReader, Write};
use std::sync::Arc;
use std::time::Duration;

use crossbeam_channel::{bounded, Receiver};

use super::dispatch::{Dispatcher, Outgoing};
use super::jsonrpc::{LineReader, MAX_LINE_BYTES};
use crate::config::ServeConfig;
use crate::tools::registry::Registry;

/// How long running calls get to notice a cancel at shutdown.
const SHUTDOWN_GRACE: Duration = Duration::from_millis(400);
/// At end of input, how long running calls may take to finish and answer
/// before they are cancelled: `echo REQUEST | panescan serve` must get its
/// answer, but a client that went away must not keep us alive.
const EOF_GRACE: Duration = Duration::from_secs(1);

/// Lines waiting for the writer. A client that stops reading fills this,
/// then the threads that answer wait, then the reader stops reading: the
/// client meets back-pressure on its own stdin instead of the server
/// buffering every answer (unread `tools/list` answers alone grow without
/// end).
pub const OUT_QUEUE_LINES: usize = 64;

#[derive(Debug)]
enum Stop {
    Eof,
    Signal(i32),
}

/// Serves MCP on stdin/stdout until EOF or a signal. Returns the exit code.
pub fn serve(config: ServeConfig) -> i32 {
    let registry = Arc::new(Registry::for_config(&config));
    let config = Arc::new(config);
    let (out_tx, out_rx) = bounded::<Outgoing>(OUT_QUEUE_LINES);
    let writer = std::thread::Builder::new()
        .name("stdout".into())
        .spawn(move || writer_loop(out_rx));
    let Ok(writer) = writer else {
        eprintln!("panescan: cannot start the writer thread");
        return 1;
    };
    let dispatcher = Arc::new(Dispatcher::new(registry, config.clone(), out_tx.clone()));
    let (stop_tx, stop_rx) = bounded::<Stop>(2);

    // SIGHUP too: a closed terminal must not leave a control client behind.
    match signal_hook::iterator::Signals::new([
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGHUP,
    ]) {
        Ok(mut signals) => {
            let stop_tx = stop_tx.clone();
            let _ = std::thread::Builder::new()
                .name("signals".into())
                .spawn(move || {
                    if let Some(sig) = signals.forever().next() {
                        let _ = stop_tx.send(Stop::Signal(sig));
                    }
                });
        }
        Err(e) => eprintln!("panescan: cannot watch SIGINT/SIGTERM/SIGHUP: {e}"),
    }

    {
        let dispatcher = dispatcher.clone();
        let spawned = std::thread::Builder::new()
            .name("stdin".into())
            .spawn(move || {
                let stdin = io::stdin();
                let mut reader = LineReader::new(BufReader::new(stdin.lock()), MAX_LINE_BYTES);
                loop {
                    match reader.next_line() {
                        Ok(Some(line)) => dispatcher.handle_line(line),
                        Ok(None) => break,
                        Err(e) => {
                            eprintln!("panescan: stdin: {e}");
                            break;
                        }
                    }
                }
                let _ = stop_tx.send(Stop::Eof);
            });
        if spawned.is_err() {
            eprintln!("panescan: cannot start the reader thread");
            return 1;
        }
    }

    let reason = stop_rx.recv().unwrap_or(Stop::Eof);
    match reason {
        Stop::Signal(sig) => eprintln!("panescan: signal {sig}, shutting down"),
        Stop::Eof => {
            dispatcher.drain(EOF_GRACE);
        }
    }
    // Stop the work, let every call write its answer (a call stopped here
    // answers with what it has or an error, never silence), flush.
    dispatcher.shutdown(SHUTDOWN_GRACE);
    let (ack_tx, ack_rx) = bounded(1);
    // A client that reads nothing keeps the queue full: do not wait forever.
    let _ = out_tx.send_timeout(Outgoing::Flush(ack_tx), Duration::from_secs(2));
    let _ = ack_rx.recv_timeout(Duration::from_secs(2));
    crate::tools::shutdown_connections();
    drop(writer);
    0
}

fn writer_loop(rx: Receiver<Outgoing>) {
    let stdout = io::stdout();
    let mut out = io::BufWriter::with_capacity(64 * 1024, stdout.lock());
    while let Ok(msg) = rx.recv() {
        let mut ok = true;
        let mut handle = |msg: Outgoing, out: &mut io::BufWriter<io::StdoutLock<'_>>| match msg {
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
