//! One MCP session behind the HTTP endpoint: a stream to a session
//! (the daemon's, or one served in this process) that speaks JSON-RPC
//! lines, and the routes that take each line it writes to the HTTP
//! stream waiting for it.
//!
//! Several HTTP clients share a stateless session, and one client's ids
//! are its own, so every request is sent on with an id of ours
//! (`h1`, `h2`...) and its answer is given back under the client's id;
//! a progress token is renamed the same way. What a line is decides where
//! it goes: an answer to its request's stream (which it ends), progress
//! to the stream of the call it reports on, a listen stream's
//! notification to that stream, anything else (a server request, a
//! handshake-era resource update) to the session's GET stream, else the
//! newest open stream.
//!
//! A session opened with `initialize` (2025-11-25) keeps what its
//! streams sent ([`super::replay`]): each event carries an id, and a
//! client whose connection dropped resumes the stream with GET and
//! `Last-Event-ID`. So a dropped stream does not cancel its call there
//! (the specification: a disconnection is not a cancel); the call goes on
//! and what it sends is kept for the resume, and only when a resume could
//! no longer get all of it is the call cancelled. A stateless
//! (2026-07-28) session keeps nothing, and a dropped stream cancels its
//! call.
//!
//! What must hold: the reader never waits on an HTTP client. Each stream
//! has a bounded buffer; a client that lets it fill is dropped and its
//! call cancelled, so one slow reader holds up nobody, not even its own
//! session.

use std::collections::{HashMap, VecDeque};
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tokio::sync::mpsc;

use super::replay::{Refusal, Replay, REPLAY_EVENTS};
use crate::mcp::jsonrpc::MAX_LINE_BYTES;

/// Messages one HTTP stream may have waiting: past this its reader is
/// too slow, and it is dropped rather than buffered without end.
pub const STREAM_BUFFER: usize = 256;
/// How long a write to the session may block before the session counts
/// as stuck: its reader thread is always reading, so only a session that
/// stopped would take this long.
const WRITE_TIMEOUT: Duration = Duration::from_secs(10);

/// One message for an HTTP stream.
#[derive(Debug)]
pub struct Msg {
    /// The JSON-RPC message, one line.
    pub json: Arc<str>,
    /// The answer that ends the stream.
    pub last: bool,
    /// Its SSE event id (a session that keeps events for a resume).
    pub id: Option<String>,
}

/// Where a request's messages go.
#[derive(Debug)]
struct Route {
    /// The client's own id, given back on its answer.
    id: Value,
    /// The client's progress token, under ours (`None`: it asked for none).
    progress: Option<(String, Value)>,
    /// The token that sent it: only that token may cancel it.
    owner: usize,
    tx: mpsc::Sender<Msg>,
    started: u64,
    /// The first event kept after its reader went (a resume needs it).
    detached: Option<u64>,
    /// Its client cancelled it: no answer will come.
    cancelled: bool,
}

/// A session's GET stream.
#[derive(Debug)]
struct GetStream {
    /// Its name among the kept streams (`g3`).
    key: String,
    tx: mpsc::Sender<Msg>,
}

#[derive(Debug, Default)]
struct Routes {
    by_id: HashMap<String, Route>,
    /// Our progress token -> our request id.
    progress: HashMap<String, String>,
    /// The session's GET stream.
    get: Option<GetStream>,
    /// Cancels that came before their request (two connections keep no
    /// order between them): (owner, the client's request id).
    early_cancels: VecDeque<(usize, Value)>,
    /// What the streams sent, for a resume (`None`: a stateless session).
    replay: Option<Replay>,
}

impl Routes {
    /// Keeps an event of stream `key` for a resume (when the session
    /// keeps events): its id and seq, and the detached calls that lost an
    /// event a resume would need (to cancel: nobody can get them whole).
    fn keep(
        &mut self,
        key: &str,
        json: &Arc<str>,
        last: bool,
    ) -> (Option<(String, u64)>, Vec<String>) {
        let Some(replay) = &mut self.replay else {
            return (None, Vec::new());
        };
        let (event, lost) = replay.record(key, json.clone(), last);
        (Some((event.id, event.seq)), self.unresumable(lost))
    }

    /// Of the streams that lost events (up to a seq), the detached calls
    /// that lost one sent after their reader went.
    fn unresumable(&self, lost: Vec<(String, u64)>) -> Vec<String> {
        lost.into_iter()
            .filter(|(stream, upto)| {
                self.by_id
                    .get(stream)
                    .and_then(|r| r.detached)
                    .is_some_and(|from| *upto >= from)
            })
            .map(|(stream, _)| stream)
            .collect()
    }
}

/// Early cancels remembered per session.
const EARLY_CANCELS: usize = 64;

/// A session's stream and its routes.
#[derive(Debug)]
pub struct Conn {
    writer: Mutex<UnixStream>,
    routes: Mutex<Routes>,
    next: AtomicU64,
    closed: AtomicBool,
    last_used: Mutex<Instant>,
}

impl Conn {
    /// Starts routing what `stream` (a session's) writes; `label` names
    /// the reader thread; `resumable`: its streams' events are kept for a
    /// resume (a session opened with `initialize`).
    pub fn start(stream: UnixStream, label: &str, resumable: bool) -> Result<Arc<Conn>, String> {
        let reader = stream.try_clone().map_err(|e| e.to_string())?;
        stream
            .set_write_timeout(Some(WRITE_TIMEOUT))
            .map_err(|e| e.to_string())?;
        let conn = Arc::new(Conn {
            writer: Mutex::new(stream),
            routes: Mutex::new(Routes {
                replay: resumable.then(Replay::new),
                ..Routes::default()
            }),
            next: AtomicU64::new(1),
            closed: AtomicBool::new(false),
            last_used: Mutex::new(Instant::now()),
        });
        let this = conn.clone();
        std::thread::Builder::new()
            .name(label.into())
            .spawn(move || this.read_loop(reader))
            .map_err(|e| format!("cannot start a session reader: {e}"))?;
        Ok(conn)
    }

    /// Whether the session ended (its stream closed).
    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::SeqCst)
    }

    /// When a client last sent something, or a stream was open.
    pub fn idle_for(&self) -> Duration {
        if self.open_streams() > 0 {
            self.touch();
        }
        crate::sync::lock(&self.last_used).elapsed()
    }

    fn touch(&self) {
        *crate::sync::lock(&self.last_used) = Instant::now();
    }

    /// Requests waiting for answers, and the GET stream.
    fn open_streams(&self) -> usize {
        let routes = crate::sync::lock(&self.routes);
        routes.by_id.len() + usize::from(routes.get.as_ref().is_some_and(|g| !g.tx.is_closed()))
    }

    /// Sends `request` (an object with an `id`) on under an id of ours;
    /// its messages arrive on the receiver. `owner` is the sending token.
    pub fn request(
        self: &Arc<Self>,
        mut request: Value,
        owner: usize,
    ) -> Result<(mpsc::Receiver<Msg>, RouteGuard), String> {
        self.touch();
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        let ours = format!("h{n}");
        let id = request.get("id").cloned().unwrap_or(Value::Null);
        request["id"] = json!(ours);
        let progress = request
            .pointer_mut("/params/_meta/progressToken")
            .map(|token| {
                let theirs = token.take();
                *token = json!(ours);
                (ours.clone(), theirs)
            });
        let (tx, rx) = mpsc::channel(STREAM_BUFFER);
        let (prime, unresumable) = {
            let mut routes = crate::sync::lock(&self.routes);
            if let Some((token, _)) = &progress {
                routes.progress.insert(token.clone(), ours.clone());
            }
            routes.by_id.insert(
                ours.clone(),
                Route {
                    id: id.clone(),
                    progress,
                    owner,
                    tx,
                    started: n,
                    detached: None,
                    cancelled: false,
                },
            );
            match &mut routes.replay {
                Some(replay) => {
                    let (prime, forgotten) = replay.open(&ours);
                    let lost = forgotten.into_iter().map(|s| (s, u64::MAX)).collect();
                    (Some(prime), routes.unresumable(lost))
                }
                None => (None, Vec::new()),
            }
        };
        for gone in unresumable {
            self.forget(&gone, true);
        }
        let guard = RouteGuard {
            conn: self.clone(),
            id: ours.clone(),
            prime,
        };
        // On failure the guard's drop forgets the route.
        self.send(&request)?;
        if self.cancelled_early(owner, &id) {
            // Its cancel came first: the session gets it now, after the
            // call, as a stdio client's would come.
            self.send(
                &json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                "params": {"requestId": ours, "reason": "cancelled before it arrived"}}),
            )?;
        }
        Ok((rx, guard))
    }

    /// Sends a message that gets no answer of ours (a notification, a
    /// client's answer to a server request), as it came, except that a
    /// cancel names our id for the request `owner` sent.
    pub fn forward(&self, mut message: Value, owner: usize) -> Result<(), String> {
        self.touch();
        if message.get("method").and_then(Value::as_str) == Some("notifications/cancelled") {
            let theirs = message.pointer("/params/requestId").cloned();
            let ours = theirs.and_then(|theirs| {
                let mut routes = crate::sync::lock(&self.routes);
                let (ours, route) = routes
                    .by_id
                    .iter_mut()
                    .find(|(_, r)| r.owner == owner && r.id == theirs && !r.cancelled)?;
                route.cancelled = true;
                Some((ours.clone(), route.tx.is_closed()))
            });
            let ours = ours.map(|(ours, unread)| {
                if unread {
                    // Nobody reads it and no answer will come.
                    self.forget(&ours, false);
                }
                ours
            });
            match (ours, message.pointer("/params/requestId").cloned()) {
                (Some(ours), _) => message["params"]["requestId"] = json!(ours),
                // Not one of this client's requests yet: its request may
                // still be on its way on another connection.
                (None, Some(theirs)) => {
                    let mut routes = crate::sync::lock(&self.routes);
                    if routes.early_cancels.len() == EARLY_CANCELS {
                        routes.early_cancels.pop_front();
                    }
                    routes.early_cancels.push_back((owner, theirs));
                    return Ok(());
                }
                (None, None) => return Ok(()),
            }
        }
        self.send(&message)
    }

    /// Whether the client `owner` cancelled its request `id` before it
    /// came (forgotten once asked).
    fn cancelled_early(&self, owner: usize, id: &Value) -> bool {
        let mut routes = crate::sync::lock(&self.routes);
        match routes
            .early_cancels
            .iter()
            .position(|(o, theirs)| *o == owner && theirs == id)
        {
            Some(at) => {
                routes.early_cancels.remove(at);
                true
            }
            None => false,
        }
    }

    /// Opens the session's GET stream (`None`: one is open already),
    /// with its priming event's id when the session keeps events.
    pub fn open_get(&self) -> Option<(mpsc::Receiver<Msg>, Option<String>)> {
        self.touch();
        let mut routes = crate::sync::lock(&self.routes);
        if routes.get.as_ref().is_some_and(|g| !g.tx.is_closed()) {
            return None;
        }
        let key = format!("g{}", self.next.fetch_add(1, Ordering::Relaxed));
        let (tx, rx) = mpsc::channel(STREAM_BUFFER);
        let mut unresumable = Vec::new();
        let prime = routes.replay.as_mut().map(|replay| {
            let (prime, forgotten) = replay.open(&key);
            unresumable = forgotten;
            prime
        });
        let lost = unresumable.into_iter().map(|s| (s, u64::MAX)).collect();
        let unresumable = routes.unresumable(lost);
        routes.get = Some(GetStream { key, tx });
        drop(routes);
        for gone in unresumable {
            self.forget(&gone, true);
        }
        Some((rx, prime))
    }

    /// Resumes the stream `last_event_id` names: a stream of the events
    /// after it, then of what the stream sends from now on (a call's,
    /// until its answer; the GET stream's). Its reader takes the stream
    /// over from any earlier one.
    pub fn resume(
        self: &Arc<Self>,
        last_event_id: &str,
    ) -> Result<(mpsc::Receiver<Msg>, Option<RouteGuard>), Refusal> {
        self.touch();
        let mut routes = crate::sync::lock(&self.routes);
        let Some(replay) = &routes.replay else {
            return Err(Refusal::Foreign);
        };
        let (stream, events) = replay.resume(last_event_id)?;
        // Room for the replay and a live stream's own buffer.
        let (tx, rx) = mpsc::channel(STREAM_BUFFER + REPLAY_EVENTS);
        for e in events {
            let _ = tx.try_send(Msg {
                json: e.json,
                last: e.last,
                id: Some(e.id),
            });
        }
        if let Some(route) = routes.by_id.get_mut(&stream) {
            route.tx = tx;
            route.detached = None;
            let guard = RouteGuard {
                conn: self.clone(),
                id: stream,
                prime: None,
            };
            return Ok((rx, Some(guard)));
        }
        let is_get = routes.get.as_ref().is_some_and(|g| g.key == stream);
        if is_get || (routes.get.is_none() && stream.starts_with('g')) {
            routes.get = Some(GetStream { key: stream, tx });
        }
        // Otherwise the stream ended (its answer is in the replay) or a
        // newer GET stream took its place: the replay, then its end.
        Ok((rx, None))
    }

    /// Stops keeping stream `ours`: its answer went out whole as JSON.
    fn answered_whole(&self, ours: &str) {
        if let Some(replay) = &mut crate::sync::lock(&self.routes).replay {
            replay.forget(ours);
        }
    }

    /// Ends the session: its input closed (the session answers what it
    /// can and ends), every stream ended.
    pub fn close(&self) {
        self.closed.store(true, Ordering::SeqCst);
        let _ = crate::sync::lock(&self.writer).shutdown(std::net::Shutdown::Both);
        let mut routes = crate::sync::lock(&self.routes);
        routes.by_id.clear();
        routes.progress.clear();
        routes.get = None;
    }

    /// Ends every open stream with an error answer (the server stops).
    pub fn end_streams(&self, why: &str) {
        let mut routes = crate::sync::lock(&self.routes);
        for (_, route) in routes.by_id.drain() {
            let _ = route.tx.try_send(Msg {
                json: Arc::from(error_line(&route.id, why)),
                last: true,
                id: None,
            });
        }
        routes.progress.clear();
        routes.get = None;
    }

    fn send(&self, message: &Value) -> Result<(), String> {
        let mut line = message.to_string();
        line.push('\n');
        let mut writer = crate::sync::lock(&self.writer);
        writer
            .write_all(line.as_bytes())
            .map_err(|e| format!("the session is gone: {e}"))
    }

    /// Forgets route `ours` and what was kept of it; `cancel`: nobody
    /// will read its answer, so the call is cancelled too.
    fn forget(&self, ours: &str, cancel: bool) {
        let removed = {
            let mut routes = crate::sync::lock(&self.routes);
            let removed = routes.by_id.remove(ours);
            if let Some((token, _)) = removed.as_ref().and_then(|r| r.progress.as_ref()) {
                routes.progress.remove(token);
            }
            if let Some(replay) = &mut routes.replay {
                replay.forget(ours);
            }
            removed
        };
        if cancel && removed.is_some() && !self.is_closed() {
            let _ = self.send(&json!({
                "jsonrpc": "2.0",
                "method": "notifications/cancelled",
                "params": {"requestId": ours, "reason": "the HTTP stream closed"},
            }));
        }
    }

    fn read_loop(self: Arc<Self>, stream: UnixStream) {
        let mut reader = BufReader::new(stream);
        let mut line = Vec::new();
        loop {
            line.clear();
            match (&mut reader)
                .take(MAX_LINE_BYTES as u64 * 2)
                .read_until(b'\n', &mut line)
            {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            }
            if self.route_answer(&line) {
                continue;
            }
            match serde_json::from_slice::<Value>(&line) {
                Ok(message) => self.route(message),
                Err(e) => eprintln!("panescan http: a session line is not JSON: {e}"),
            }
        }
        // The session ended: whoever still waits gets an error, not silence.
        self.end_streams("the MCP session ended");
        self.closed.store(true, Ordering::SeqCst);
    }

    /// An answer to one of our requests, routed without building the
    /// whole message: only its id is read and the client's id is written
    /// in its place, the rest passed on byte for byte (an answer can be
    /// megabytes; parsing and writing it again was most of what HTTP added
    /// to a call). False: not such an answer, for [`Conn::route`].
    fn route_answer(&self, line: &[u8]) -> bool {
        #[derive(serde::Deserialize)]
        struct Head<'a> {
            #[serde(borrow)]
            id: Option<&'a serde_json::value::RawValue>,
            #[serde(borrow)]
            method: Option<&'a serde_json::value::RawValue>,
        }
        let Ok(head) = serde_json::from_slice::<Head>(line) else {
            return false;
        };
        let (Some(raw), None) = (head.id, head.method) else {
            return false;
        };
        let Ok(ours) = serde_json::from_str::<String>(raw.get()) else {
            return false;
        };
        // Where the id sits in the line (the RawValue borrows from it).
        let Some(at) = (raw.get().as_ptr() as usize).checked_sub(line.as_ptr() as usize) else {
            return false;
        };
        let end = at + raw.get().len();
        if line.get(at..end) != Some(raw.get().as_bytes()) {
            return false;
        }
        let mut routes = crate::sync::lock(&self.routes);
        let Some(route) = routes.by_id.remove(&ours) else {
            return true;
        };
        if let Some((token, _)) = &route.progress {
            routes.progress.remove(token);
        }
        let theirs = route.id.to_string();
        let mut out = Vec::with_capacity(line.len() + theirs.len());
        out.extend_from_slice(&line[..at]);
        out.extend_from_slice(theirs.as_bytes());
        out.extend_from_slice(line[end..].trim_ascii_end());
        let Ok(text) = String::from_utf8(out) else {
            return true;
        };
        let json: Arc<str> = Arc::from(text);
        let (kept, unresumable) = routes.keep(&ours, &json, true);
        // A reader that went finds it kept, on a resume.
        let _ = route.tx.try_send(Msg {
            json,
            last: true,
            id: kept.map(|(id, _)| id),
        });
        drop(routes);
        for gone in unresumable {
            self.forget(&gone, true);
        }
        true
    }

    /// Takes one line of the session to its stream.
    fn route(&self, mut message: Value) {
        let mut routes = crate::sync::lock(&self.routes);
        let method = message
            .get("method")
            .and_then(Value::as_str)
            .map(str::to_owned);
        let Some(method) = method else {
            // An answer: to its request's stream, under the client's id.
            let Some(ours) = message.get("id").and_then(Value::as_str) else {
                return;
            };
            let ours = ours.to_owned();
            if let Some(route) = routes.by_id.remove(&ours) {
                if let Some((token, _)) = &route.progress {
                    routes.progress.remove(token);
                }
                message["id"] = route.id;
                let json: Arc<str> = Arc::from(message.to_string());
                let (kept, unresumable) = routes.keep(&ours, &json, true);
                // A reader that went finds it kept, on a resume.
                let _ = route.tx.try_send(Msg {
                    json,
                    last: true,
                    id: kept.map(|(id, _)| id),
                });
                drop(routes);
                for gone in unresumable {
                    self.forget(&gone, true);
                }
            }
            return;
        };
        // Progress and a listen stream's notifications belong to one
        // request (dropped when it is gone); the rest is the session's.
        let target = if method == "notifications/progress" {
            Some(progress_target(&mut routes, &mut message))
        } else {
            message
                .pointer("/params/_meta/io.modelcontextprotocol~1subscriptionId")
                .and_then(Value::as_str)
                .map(str::to_owned)
                .map(|sub| listen_target(&routes, &mut message, &sub))
        };
        let json: Arc<str> = Arc::from(message.to_string());
        let delivered = match target {
            Some(Some(ours)) => deliver(&mut routes, &ours, json),
            Some(None) => Vec::new(),
            None => broadcast(&mut routes, json),
        };
        drop(routes);
        for ours in delivered {
            // Its reader is too slow: dropped, its call cancelled.
            self.forget(&ours, true);
        }
    }
}

fn error_line(id: &Value, why: &str) -> String {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32603, "message": why}}).to_string()
}

/// A progress notification's route, its token renamed back.
fn progress_target(routes: &mut Routes, message: &mut Value) -> Option<String> {
    let token = message
        .pointer("/params/progressToken")?
        .as_str()?
        .to_owned();
    let ours = routes.progress.get(&token)?.clone();
    let theirs = routes.by_id.get(&ours)?.progress.as_ref()?.1.clone();
    message["params"]["progressToken"] = theirs;
    Some(ours)
}

/// A listen stream's notification's route, its subscription id renamed back.
fn listen_target(routes: &Routes, message: &mut Value, sub: &str) -> Option<String> {
    let theirs = routes.by_id.get(sub)?.id.clone();
    if let Some(meta) = message.pointer_mut("/params/_meta") {
        meta["io.modelcontextprotocol/subscriptionId"] = theirs;
    }
    Some(sub.to_owned())
}

/// Sends to one route (kept for a resume first); the ids of routes to
/// drop and cancel (too slow, or no longer resumable).
fn deliver(routes: &mut Routes, ours: &str, json: Arc<str>) -> Vec<String> {
    if !routes.by_id.contains_key(ours) {
        return Vec::new();
    }
    let (kept, mut unresumable) = routes.keep(ours, &json, false);
    let Some(route) = routes.by_id.get_mut(ours) else {
        return unresumable;
    };
    let (id, seq) = kept.unzip();
    match route.tx.try_send(Msg {
        json,
        last: false,
        id,
    }) {
        Err(mpsc::error::TrySendError::Full(_)) => unresumable.push(ours.to_owned()),
        // Its reader went: the event waits, kept, for a resume.
        Err(mpsc::error::TrySendError::Closed(_)) => {
            if route.detached.is_none() {
                route.detached = seq;
            }
        }
        Ok(()) => {}
    }
    unresumable
}

/// A message of the session's own: to the GET stream, else the newest
/// request stream being read; with neither it waits, kept, for the GET
/// stream's resume (a session that keeps events), else it cannot be
/// delivered.
fn broadcast(routes: &mut Routes, json: Arc<str>) -> Vec<String> {
    let get_key = routes.get.as_ref().map(|g| g.key.clone());
    if let Some(key) = &get_key {
        if routes.get.as_ref().is_some_and(|g| !g.tx.is_closed()) {
            let (kept, unresumable) = routes.keep(key, &json, false);
            let id = kept.map(|(id, _)| id);
            if let Some(get) = &routes.get {
                if get
                    .tx
                    .try_send(Msg {
                        json,
                        last: false,
                        id,
                    })
                    .is_err()
                {
                    // A GET reader too slow is dropped (what it missed is
                    // kept); nothing to cancel.
                    routes.get = None;
                }
            }
            return unresumable;
        }
    }
    let newest = routes
        .by_id
        .iter()
        .filter(|(_, r)| !r.tx.is_closed())
        .max_by_key(|(_, r)| r.started)
        .map(|(ours, _)| ours.clone());
    match (newest, get_key) {
        (Some(ours), _) => deliver(routes, &ours, json),
        (None, Some(key)) => routes.keep(&key, &json, false).1,
        (None, None) => Vec::new(),
    }
}

/// Held by whoever waits for a request's messages: dropping it before
/// the answer (the client disconnected) cancels the call.
#[derive(Debug)]
pub struct RouteGuard {
    conn: Arc<Conn>,
    id: String,
    /// The priming event's id (a session that keeps events).
    prime: Option<String>,
}

impl RouteGuard {
    /// The id of the event that opens its SSE stream, before any message
    /// (`None`: the session keeps nothing for a resume).
    pub fn prime(&self) -> Option<String> {
        self.prime.clone()
    }

    /// Its answer went out whole as JSON: nothing to keep for a resume.
    pub fn answered_whole(&self) {
        self.conn.answered_whole(&self.id);
    }
}

impl Drop for RouteGuard {
    fn drop(&mut self) {
        let (resumable, cancelled) = {
            let routes = crate::sync::lock(&self.conn.routes);
            let cancelled = routes.by_id.get(&self.id).is_some_and(|r| r.cancelled);
            (routes.replay.is_some(), cancelled)
        };
        // A session that keeps events: the call goes on, its messages
        // kept for a resume (`deliver`), unless its client cancelled it.
        if !resumable || cancelled {
            self.conn.forget(&self.id, !resumable);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io::{BufRead, BufReader, Write};
    use std::os::unix::net::UnixStream;
    use std::time::Duration;

    use serde_json::{json, Value};

    use super::*;

    /// A conn whose "session" is the test: what the conn sends arrives on
    /// the returned reader, what the test writes the conn routes.
    fn pair() -> (Arc<Conn>, BufReader<UnixStream>, UnixStream) {
        let (ours, session) = UnixStream::pair().unwrap();
        session
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        let conn = Conn::start(ours, "test-conn", false).unwrap();
        (conn, BufReader::new(session.try_clone().unwrap()), session)
    }

    fn read(reader: &mut BufReader<UnixStream>) -> Value {
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        serde_json::from_str(&line).unwrap()
    }

    fn recv(rx: &mut mpsc::Receiver<Msg>) -> Msg {
        let until = Instant::now() + Duration::from_secs(5);
        loop {
            if let Ok(msg) = rx.try_recv() {
                return msg;
            }
            assert!(Instant::now() < until, "nothing routed");
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    /// A cancel that overtook its request (two connections, no order):
    /// the session gets the request, then the cancel, as on stdio; another
    /// client's cancel of the same id cancels nothing.
    #[test]
    fn a_cancel_that_comes_before_its_request_follows_it() {
        let (conn, mut from, _to) = pair();
        let cancel = |n: u64| {
            json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": {"requestId": n}})
        };
        conn.forward(cancel(36), 1).unwrap();
        conn.forward(cancel(37), 2).unwrap();
        let call = |n: u64| {
            json!({"jsonrpc": "2.0", "id": n, "method": "tools/call",
            "params": {"name": "x"}})
        };
        let (_rx, _guard) = conn.request(call(36), 1).unwrap();
        let sent = read(&mut from);
        let ours = sent["id"].clone();
        let then = read(&mut from);
        assert_eq!(then["method"], "notifications/cancelled", "{then}");
        assert_eq!(then["params"]["requestId"], ours);
        // Client 1's id 37 was cancelled by client 2 only: it runs.
        let (_rx2, _guard2) = conn.request(call(37), 1).unwrap();
        let sent = read(&mut from);
        assert_eq!(sent["method"], "tools/call");
        // Asked once: a later request with id 36 is not cancelled again.
        let (_rx3, _guard3) = conn.request(call(36), 1).unwrap();
        assert_eq!(read(&mut from)["method"], "tools/call");
        conn.forward(cancel(99), 1).unwrap();
        let (_rx4, _guard4) = conn.request(call(37), 2).unwrap();
        assert_eq!(read(&mut from)["method"], "tools/call");
        assert_eq!(read(&mut from)["method"], "notifications/cancelled");
    }

    #[test]
    fn ids_and_progress_tokens_are_renamed_both_ways() {
        let (conn, mut from, mut to) = pair();
        let request = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
            "params": {"name": "x", "_meta": {"progressToken": "p"}}});
        let (mut rx, _guard) = conn.request(request, 1).unwrap();
        let sent = read(&mut from);
        let ours = sent["id"].as_str().unwrap().to_owned();
        assert_eq!(sent["params"]["_meta"]["progressToken"], json!(ours));
        writeln!(
            to,
            "{}",
            json!({"jsonrpc": "2.0", "method": "notifications/progress",
            "params": {"progressToken": ours, "progress": 1}})
        )
        .unwrap();
        writeln!(
            to,
            "{}",
            json!({"jsonrpc": "2.0", "id": ours, "result": {}})
        )
        .unwrap();
        let progress: Value = serde_json::from_str(&recv(&mut rx).json).unwrap();
        assert_eq!(progress["params"]["progressToken"], "p");
        let answer = recv(&mut rx);
        assert!(answer.last);
        assert_eq!(
            serde_json::from_str::<Value>(&answer.json).unwrap()["id"],
            7
        );
        // A cancel by the client's id reaches the session under ours,
        // and only from the token that sent the request.
        let (_rx2, _g2) = conn
            .request(json!({"jsonrpc": "2.0", "id": 8, "method": "ping"}), 1)
            .unwrap();
        let ours2 = read(&mut from)["id"].clone();
        let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": {"requestId": 8}});
        conn.forward(cancel.clone(), 2).unwrap();
        conn.forward(cancel, 1).unwrap();
        assert_eq!(read(&mut from)["params"]["requestId"], ours2);
    }

    /// A stream whose reader stops is dropped once its buffer is full,
    /// its call cancelled, and the session's other streams still served.
    #[test]
    fn a_stream_that_is_not_read_is_dropped_and_its_call_cancelled() {
        let (conn, mut from, mut to) = pair();
        let slow = json!({"jsonrpc": "2.0", "id": "slow", "method": "tools/call",
            "params": {"name": "x", "_meta": {"progressToken": 1}}});
        let (mut slow_rx, _slow_guard) = conn.request(slow, 1).unwrap();
        let slow_id = read(&mut from)["id"].clone();
        let (mut quick_rx, _quick_guard) = conn
            .request(
                json!({"jsonrpc": "2.0", "id": "quick", "method": "ping"}),
                1,
            )
            .unwrap();
        let quick_id = read(&mut from)["id"].clone();
        for n in 0..STREAM_BUFFER + 10 {
            writeln!(
                to,
                "{}",
                json!({"jsonrpc": "2.0", "method": "notifications/progress",
                "params": {"progressToken": slow_id, "progress": n}})
            )
            .unwrap();
        }
        // The session heard the cancel for the dropped stream.
        let cancel = read(&mut from);
        assert_eq!(cancel["method"], "notifications/cancelled");
        assert_eq!(cancel["params"]["requestId"], slow_id);
        writeln!(
            to,
            "{}",
            json!({"jsonrpc": "2.0", "id": quick_id, "result": {}})
        )
        .unwrap();
        assert!(recv(&mut quick_rx).last);
        // The slow stream holds what fit, then ends: never more.
        let mut held = 0;
        while slow_rx.try_recv().is_ok() {
            held += 1;
        }
        assert_eq!(held, STREAM_BUFFER);
        assert!(slow_rx.is_closed());
    }
}
