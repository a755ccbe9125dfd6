//! `serve`'s relay: stdin's lines to the daemon's session, the session's
//! lines to stdout, unchanged. stdout carries the daemon's JSON-RPC lines
//! and, when the daemon goes away, this relay's own error answers.
//!
//! What must hold: every request the client sent gets an answer. The
//! relay notes each request's id as it passes (and forgets it when its
//! answer or the client's cancel passes); when the daemon's side ends
//! before the client's (the daemon was killed or stopped), each open
//! request is answered with an error, and the next line from the client
//! opens a session of a new daemon.

use std::collections::HashMap;
use std::io::{self, BufRead, BufReader, Write};
use std::process::ExitCode;
use std::sync::{Arc, Mutex};

use crossbeam_channel::{bounded, Receiver};
use serde::Deserialize;
use serde_json::{json, Value};

use crate::daemon::client::Connected;
use crate::mcp::jsonrpc::{self, LineReader, INTERNAL_ERROR, INVALID_REQUEST, MAX_LINE_BYTES};

/// Requests sent and not answered yet: id key -> id.
type Pending = Arc<Mutex<HashMap<String, Value>>>;

/// The fields of a line the relay looks at.
#[derive(Deserialize)]
struct Peek {
    #[serde(default)]
    id: Option<Value>,
    #[serde(default)]
    method: Option<String>,
    #[serde(default)]
    params: Option<PeekParams>,
}

#[derive(Deserialize)]
struct PeekParams {
    #[serde(default, rename = "requestId")]
    request_id: Option<Value>,
}

/// One session of one daemon: where lines go, the requests it was sent
/// and not yet answered, and the end of its answers.
struct Link {
    writer: std::os::unix::net::UnixStream,
    /// This link's open requests (a new link starts with none).
    pending: Pending,
    /// Set, under its lock, when the daemon's side ended and its open
    /// requests were answered: a line is noted and written under the same
    /// lock, so it is either written before that sweep (and answered by
    /// it) or not at all (and sent to a new daemon).
    dead: Arc<Mutex<bool>>,
    /// Closed when the daemon's side ended (its answers all relayed).
    ended: Receiver<()>,
}

impl Link {
    fn is_dead(&self) -> bool {
        *crate::sync::lock(&self.dead)
    }

    /// Writes `line`; `false` when it did not reach this daemon.
    fn send(&mut self, line: &[u8]) -> bool {
        let dead = crate::sync::lock(&self.dead);
        if *dead {
            return false;
        }
        note(&self.pending, line);
        let sent = self
            .writer
            .write_all(line)
            .and_then(|()| self.writer.write_all(b"\n"))
            .is_ok();
        if !sent {
            forget(&self.pending, line);
        }
        drop(dead);
        sent
    }
}

/// Relays until the client's input ends; `connect` opens a session again
/// after the daemon went away.
pub fn run(first: Connected, connect: &dyn Fn() -> Result<Connected, String>) -> ExitCode {
    let out = Arc::new(Mutex::new(io::stdout()));
    let mut link = Some(attach(first, &out));
    let mut input = LineReader::new(BufReader::new(io::stdin()), MAX_LINE_BYTES);
    loop {
        let line = match input.next_line() {
            Ok(Some(jsonrpc::Line::Complete(line))) => line,
            Ok(Some(jsonrpc::Line::TooLong { bytes })) => {
                write_line(&out, &too_long(bytes));
                continue;
            }
            Ok(None) => break,
            Err(e) => {
                eprintln!("panescan serve: stdin: {e}");
                break;
            }
        };
        relay_line(&line, &mut link, &out, connect);
    }
    // The client is done: the daemon's session drains, answers and closes.
    if let Some(l) = link {
        let _ = l.writer.shutdown(std::net::Shutdown::Write);
        let _ = l.ended.recv();
    }
    ExitCode::SUCCESS
}

/// Sends one client line to the daemon, to a new one when the daemon went
/// away (tried twice); a request that reaches none is answered with an
/// error.
fn relay_line(
    line: &[u8],
    link: &mut Option<Link>,
    out: &Arc<Mutex<io::Stdout>>,
    connect: &dyn Fn() -> Result<Connected, String>,
) {
    for _ in 0..2 {
        if link.as_ref().is_none_or(Link::is_dead) {
            *link = match connect() {
                Ok(conn) => {
                    eprintln!("panescan serve: relaying to a new daemon session");
                    Some(attach(conn, out))
                }
                Err(e) => {
                    eprintln!("panescan serve: no daemon: {e}");
                    None
                }
            };
        }
        match link.as_mut().map(|l| l.send(line)) {
            Some(true) => return,
            Some(false) => *link = None,
            None => break,
        }
    }
    let unsent: Pending = Arc::default();
    note(&unsent, line);
    answer_lost(out, &unsent);
}

/// Starts relaying `conn`'s lines to stdout.
fn attach(conn: Connected, out: &Arc<Mutex<io::Stdout>>) -> Link {
    let (done_tx, done_rx) = bounded::<()>(1);
    let pending: Pending = Arc::default();
    let dead = Arc::new(Mutex::new(false));
    let (out, pending_in, dead_in) = (out.clone(), pending.clone(), dead.clone());
    let Connected { reader, writer, .. } = conn;
    let relayed = std::thread::Builder::new()
        .name("from-daemon".into())
        .spawn(move || {
            relay_answers(reader, &out, &pending_in);
            let mut dead = crate::sync::lock(&dead_in);
            *dead = true;
            answer_lost(&out, &pending_in);
            drop(dead);
            drop(done_tx);
        });
    if relayed.is_err() {
        eprintln!("panescan serve: cannot start the relay thread");
    }
    Link {
        writer,
        pending,
        dead,
        ended: done_rx,
    }
}

/// Copies the daemon's lines to stdout until it closes.
fn relay_answers(
    mut reader: BufReader<std::os::unix::net::UnixStream>,
    out: &Mutex<io::Stdout>,
    pending: &Pending,
) {
    let mut line = Vec::new();
    loop {
        line.clear();
        match reader.read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        if let Ok(peek) = serde_json::from_slice::<Peek>(&line) {
            if let (Some(id), None) = (&peek.id, &peek.method) {
                crate::sync::lock(pending).remove(&jsonrpc::id_key(id));
            }
        }
        let mut out = crate::sync::lock(out);
        let ok = out.write_all(&line).and_then(|()| out.flush()).is_ok();
        if !ok {
            return;
        }
    }
}

/// Notes a client's request (or forgets a cancelled one).
fn note(pending: &Pending, line: &[u8]) {
    let Ok(peek) = serde_json::from_slice::<Peek>(line) else {
        return;
    };
    match (peek.method.as_deref(), peek.id) {
        (Some(_), Some(id)) => {
            crate::sync::lock(pending).insert(jsonrpc::id_key(&id), id);
        }
        (Some("notifications/cancelled"), None) => {
            if let Some(id) = peek.params.and_then(|p| p.request_id) {
                crate::sync::lock(pending).remove(&jsonrpc::id_key(&id));
            }
        }
        _ => {}
    }
}

/// Forgets a request that was not sent after all.
fn forget(pending: &Pending, line: &[u8]) {
    if let Ok(Peek {
        id: Some(id),
        method: Some(_),
        ..
    }) = serde_json::from_slice::<Peek>(line)
    {
        crate::sync::lock(pending).remove(&jsonrpc::id_key(&id));
    }
}

/// Answers every open request with an error: its daemon went away.
fn answer_lost(out: &Mutex<io::Stdout>, pending: &Pending) {
    let lost: Vec<Value> = crate::sync::lock(pending)
        .drain()
        .map(|(_, id)| id)
        .collect();
    for id in lost {
        let line = json!({
            "jsonrpc": "2.0",
            "id": id,
            "error": {
                "code": INTERNAL_ERROR,
                "message": "the panescan daemon went away before answering; retry (the next request starts a new one)"
            }
        });
        write_line(out, &line);
    }
}

/// The in-process server's answer to an over-long line.
fn too_long(bytes: usize) -> Value {
    json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": {
            "code": INVALID_REQUEST,
            "message": format!("request line of {bytes} bytes exceeds the {MAX_LINE_BYTES}-byte limit; it was dropped")
        }
    })
}

fn write_line(out: &Mutex<io::Stdout>, value: &Value) {
    let mut out = crate::sync::lock(out);
    let _ = writeln!(out, "{value}").and_then(|()| out.flush());
}
