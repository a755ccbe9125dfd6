//! `/mcp`: one HTTP request turned into what the MCP session needs and
//! its messages turned back into an HTTP answer.
//!
//! - POST carries one JSON-RPC message. A request's answer comes back as
//!   JSON when it is ready at once, else as an SSE stream that carries
//!   its progress (and the session's own messages when no GET stream is
//!   open) and ends with the answer; a notification or a client's answer
//!   gets 202. `initialize` opens a session (`Mcp-Session-Id`); a request
//!   that names a 2026-07-28 version in `_meta` needs none and goes to a
//!   stateless session kept for its token's tier.
//! - GET opens the session's stream for messages no request owns; with
//!   `Last-Event-ID` it resumes the stream that id belongs to instead
//!   (the events after it, then the rest of that stream). An id this
//!   session did not give is refused (400), one whose following events
//!   are no longer kept too (410: the client sends its request again),
//!   and a stream the client had whole has nothing more (204).
//! - DELETE ends the session.
//!
//! What must hold: every check (Host, Origin, token) comes before
//! anything is read or opened; a client sees only its own token's
//! sessions; nothing is buffered past the body ceiling or a stream's
//! bound.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;
use hyper::header::{HeaderMap, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use serde_json::{json, Value};

use super::auth;
use super::body::{Out, SseBody};
use super::conn::{Conn, Msg, RouteGuard};
use super::replay::Refusal;
use super::HttpOptions;
use crate::config::Tier;
use crate::mcp::jsonrpc::MAX_LINE_BYTES;
use crate::mcp::protocol::META_PROTOCOL_VERSION;

/// How long a request's first message may take before its answer turns
/// into an SSE stream: answers quicker than this come back as plain JSON.
const SSE_AFTER: Duration = Duration::from_millis(250);
/// The session header (HTTP header names are case-insensitive).
const SESSION_HEADER: &str = "mcp-session-id";
const VERSION_HEADER: &str = "mcp-protocol-version";

/// Opens a session for a token's tier (`None`: the serve's own), as a
/// stream that speaks the session's JSON-RPC lines.
pub type Opener =
    Arc<dyn Fn(Option<Tier>) -> Result<std::os::unix::net::UnixStream, String> + Send + Sync>;

/// A session a client opened with `initialize`.
#[derive(Debug)]
struct Session {
    conn: Arc<Conn>,
    /// The token line that opened it (0 without tokens).
    owner: usize,
}

/// The endpoint's state, shared by every connection.
pub struct Endpoint {
    opts: HttpOptions,
    opener: Opener,
    sessions: std::sync::Mutex<HashMap<String, Session>>,
    /// Stateless sessions, by the tier's name (`None`: the serve's tier).
    stateless: std::sync::Mutex<HashMap<Option<&'static str>, Arc<Conn>>>,
    stopping: AtomicBool,
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Endpoint")
            .field("opts", &self.opts)
            .finish()
    }
}

/// Who is asking: the token's line and tier.
#[derive(Debug, Clone, Copy)]
struct Caller {
    owner: usize,
    tier: Option<Tier>,
}

type Answer = Response<Out>;

impl Endpoint {
    /// An endpoint opening sessions with `opener`.
    pub fn new(opts: HttpOptions, opener: Opener) -> Arc<Endpoint> {
        Arc::new(Endpoint {
            opts,
            opener,
            sessions: std::sync::Mutex::new(HashMap::new()),
            stateless: std::sync::Mutex::new(HashMap::new()),
            stopping: AtomicBool::new(false),
        })
    }

    /// Answers one HTTP request.
    pub async fn handle(self: Arc<Self>, req: Request<Incoming>) -> Answer {
        if let Some(refused) = self.refuse(&req) {
            return refused;
        }
        let caller = match self.authenticate(req.headers()) {
            Ok(caller) => caller,
            Err(answer) => return *answer,
        };
        match *req.method() {
            Method::POST => self.post(req, caller).await,
            Method::GET => self.get(req.headers(), caller),
            Method::DELETE => self.delete(req.headers(), caller),
            _ => {
                let mut answer = status(StatusCode::METHOD_NOT_ALLOWED, "use POST, GET or DELETE");
                answer
                    .headers_mut()
                    .insert("allow", HeaderValue::from_static("GET, POST, DELETE"));
                answer
            }
        }
    }

    /// The path, Host and Origin checks.
    fn refuse(&self, req: &Request<Incoming>) -> Option<Answer> {
        let headers = req.headers();
        if self.opts.loopback
            && !auth::host_is_loopback(headers.get("host").map(HeaderValue::as_bytes))
        {
            return Some(status(
                StatusCode::FORBIDDEN,
                "the Host header must name this machine's loopback address",
            ));
        }
        if !auth::origin_allowed(
            headers.get("origin").map(HeaderValue::as_bytes),
            headers.get("host").map(HeaderValue::as_bytes),
            &self.opts.allow_origins,
        ) {
            return Some(status(StatusCode::FORBIDDEN, "this Origin is not allowed"));
        }
        if req.uri().path() != "/mcp" {
            return Some(status(StatusCode::NOT_FOUND, "the MCP endpoint is /mcp"));
        }
        if self.stopping.load(Ordering::SeqCst) {
            return Some(status(
                StatusCode::SERVICE_UNAVAILABLE,
                "the server is stopping",
            ));
        }
        None
    }

    fn authenticate(&self, headers: &HeaderMap) -> Result<Caller, Box<Answer>> {
        let Some(tokens) = &self.opts.tokens else {
            return Ok(Caller {
                owner: 0,
                tier: None,
            });
        };
        let offered = headers.get("authorization").map(HeaderValue::as_bytes);
        match tokens.check(offered) {
            Some(token) => Ok(Caller {
                owner: token.line,
                tier: token.tier,
            }),
            None => {
                let challenge = if offered.is_some() {
                    "Bearer realm=\"panescan\", error=\"invalid_token\""
                } else {
                    "Bearer realm=\"panescan\""
                };
                let mut answer = status(StatusCode::UNAUTHORIZED, "a bearer token is required");
                answer
                    .headers_mut()
                    .insert("www-authenticate", HeaderValue::from_static(challenge));
                Err(Box::new(answer))
            }
        }
    }

    async fn post(self: Arc<Self>, req: Request<Incoming>, caller: Caller) -> Answer {
        let (parts, body) = req.into_parts();
        let bytes = match Limited::new(body, MAX_LINE_BYTES).collect().await {
            Ok(collected) => collected.to_bytes(),
            Err(e)
                if e.downcast_ref::<http_body_util::LengthLimitError>()
                    .is_some() =>
            {
                return rpc_error(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    &Value::Null,
                    -32600,
                    &format!("a request body may hold at most {MAX_LINE_BYTES} bytes"),
                )
            }
            Err(_) => return status(StatusCode::BAD_REQUEST, "the body could not be read"),
        };
        let message: Value = match serde_json::from_slice(&bytes) {
            Ok(Value::Object(m)) => Value::Object(m),
            // 2025-06-18 removed batches and 2025-11-25 says a POST body
            // is one message; stdio refuses them for every version too.
            Ok(Value::Array(_)) => {
                return rpc_error(
                    StatusCode::BAD_REQUEST,
                    &Value::Null,
                    -32600,
                    "JSON-RPC batches are not supported (removed in MCP 2025-06-18); POST one message at a time",
                )
            }
            Ok(_) => {
                return rpc_error(
                    StatusCode::BAD_REQUEST,
                    &Value::Null,
                    -32600,
                    "a JSON-RPC message must be an object",
                )
            }
            Err(e) => {
                return rpc_error(
                    StatusCode::BAD_REQUEST,
                    &Value::Null,
                    -32700,
                    &format!("parse error: {e}"),
                )
            }
        };
        let is_request = message.get("method").is_some() && message.get("id").is_some();
        let session_id = header_str(&parts.headers, SESSION_HEADER);
        let conn = match session_id {
            Some(id) => match self.session(id, caller) {
                Some(conn) => conn,
                None => return status(StatusCode::NOT_FOUND, "no such session; initialize again"),
            },
            None => match self.sessionless(&message, &parts.headers, caller).await {
                Ok(Target::Stateless(conn)) => conn,
                Ok(Target::New) => return self.initialize(message, &parts.headers, caller).await,
                Err(answer) => return answer,
            },
        };
        if !is_request {
            return match conn.forward(message, caller.owner) {
                Ok(()) => status(StatusCode::ACCEPTED, ""),
                Err(e) => status(StatusCode::NOT_FOUND, &e),
            };
        }
        let id = message.get("id").cloned().unwrap_or(Value::Null);
        match conn.request(message, caller.owner) {
            Ok((rx, guard)) => {
                answer(rx, guard, accepts_sse(&parts.headers), session_id.is_none()).await
            }
            Err(e) => rpc_error(StatusCode::INTERNAL_SERVER_ERROR, &id, -32603, &e),
        }
    }

    /// Where a message without a session goes.
    async fn sessionless(
        &self,
        message: &Value,
        headers: &HeaderMap,
        caller: Caller,
    ) -> Result<Target, Answer> {
        let method = message.get("method").and_then(Value::as_str);
        let id = message.get("id").cloned().unwrap_or(Value::Null);
        if method.is_none() || message.get("id").is_none() {
            // A cancel (or a client's answer) for a stateless request.
            return match crate::sync::lock(&self.stateless).get(&caller.tier.map(Tier::as_str)) {
                Some(conn) => Ok(Target::Stateless(conn.clone())),
                None => Err(status(StatusCode::ACCEPTED, "")),
            };
        }
        let meta_version = message
            .pointer("/params/_meta")
            .and_then(|m| m.get(META_PROTOCOL_VERSION))
            .and_then(Value::as_str);
        // A 2026-07-28 `initialize` is a removed method, answered so by
        // the session (404); only a handshake-era one opens a session.
        if method == Some("initialize") && meta_version.is_none() {
            return Ok(Target::New);
        }
        let Some(meta_version) = meta_version else {
            // A stateless request names its version; a client of the
            // handshake era forgot its session.
            let modern = method == Some("server/discover")
                || header_str(headers, VERSION_HEADER).is_some_and(|v| v >= "2026");
            let (rpc, why) = if modern {
                (-32602, "a request without a session must name its protocol version in _meta[\"io.modelcontextprotocol/protocolVersion\"]")
            } else {
                (-32600, "Mcp-Session-Id required: initialize first, or name a 2026-07-28 version in _meta")
            };
            return Err(rpc_error(StatusCode::BAD_REQUEST, &id, rpc, why));
        };
        if let Some(header) = header_str(headers, VERSION_HEADER) {
            let meta = meta_version;
            if meta != header {
                return Err(rpc_error(
                    StatusCode::BAD_REQUEST,
                    &id,
                    -32020,
                    &format!(
                        "the MCP-Protocol-Version header ({header}) does not match _meta ({meta})"
                    ),
                ));
            }
        }
        if let Err(why) = method_headers(message, headers) {
            return Err(rpc_error(StatusCode::BAD_REQUEST, &id, -32020, &why));
        }
        match self.stateless_conn(caller.tier).await {
            Ok(conn) => Ok(Target::Stateless(conn)),
            Err(e) => Err(rpc_error(StatusCode::SERVICE_UNAVAILABLE, &id, -32603, &e)),
        }
    }

    /// The stateless session of `tier`, opened (again) when needed.
    async fn stateless_conn(&self, tier: Option<Tier>) -> Result<Arc<Conn>, String> {
        if let Some(conn) = crate::sync::lock(&self.stateless).get(&tier.map(Tier::as_str)) {
            if !conn.is_closed() {
                return Ok(conn.clone());
            }
        }
        let conn = self.open(tier, false).await?;
        let mut map = crate::sync::lock(&self.stateless);
        // Two first requests at once: keep one, close the other.
        match map.get(&tier.map(Tier::as_str)) {
            Some(kept) if !kept.is_closed() => {
                conn.close();
                Ok(kept.clone())
            }
            _ => {
                map.insert(tier.map(Tier::as_str), conn.clone());
                Ok(conn)
            }
        }
    }

    /// A session for `tier`; `resumable`: it keeps its streams' events
    /// for a resume (a session opened with `initialize`).
    async fn open(&self, tier: Option<Tier>, resumable: bool) -> Result<Arc<Conn>, String> {
        let opener = self.opener.clone();
        let stream = tokio::task::spawn_blocking(move || opener(tier))
            .await
            .map_err(|e| format!("cannot open a session: {e}"))??;
        Conn::start(stream, "http-session", resumable)
    }

    /// `initialize` without a session: a new session, its id in the answer.
    async fn initialize(&self, message: Value, headers: &HeaderMap, caller: Caller) -> Answer {
        let id = message.get("id").cloned().unwrap_or(Value::Null);
        if crate::sync::lock(&self.sessions).len() >= self.opts.max_sessions {
            return rpc_error(
                StatusCode::SERVICE_UNAVAILABLE,
                &id,
                -32603,
                &format!(
                    "{} sessions are open, the --max-sessions",
                    self.opts.max_sessions
                ),
            );
        }
        let conn = match self.open(caller.tier, true).await {
            Ok(conn) => conn,
            Err(e) => return rpc_error(StatusCode::SERVICE_UNAVAILABLE, &id, -32603, &e),
        };
        let session_id = new_session_id();
        crate::sync::lock(&self.sessions).insert(
            session_id.clone(),
            Session {
                conn: conn.clone(),
                owner: caller.owner,
            },
        );
        let mut out = match conn.request(message, caller.owner) {
            Ok((rx, guard)) => answer(rx, guard, accepts_sse(headers), false).await,
            Err(e) => rpc_error(StatusCode::INTERNAL_SERVER_ERROR, &id, -32603, &e),
        };
        if let Ok(value) = HeaderValue::from_str(&session_id) {
            out.headers_mut().insert(SESSION_HEADER, value);
        }
        out
    }

    /// The session `id` if `caller`'s token opened it.
    fn session(&self, id: &str, caller: Caller) -> Option<Arc<Conn>> {
        let sessions = crate::sync::lock(&self.sessions);
        let session = sessions.get(id)?;
        (session.owner == caller.owner && !session.conn.is_closed()).then(|| session.conn.clone())
    }

    fn get(&self, headers: &HeaderMap, caller: Caller) -> Answer {
        let Some(id) = header_str(headers, SESSION_HEADER) else {
            return status(
                StatusCode::METHOD_NOT_ALLOWED,
                "a GET stream belongs to a session: send Mcp-Session-Id",
            );
        };
        if !accepts_sse(headers) {
            return status(
                StatusCode::NOT_ACCEPTABLE,
                "a GET stream is text/event-stream",
            );
        }
        let Some(conn) = self.session(id, caller) else {
            return status(StatusCode::NOT_FOUND, "no such session");
        };
        if let Some(last) = header_str(headers, "last-event-id") {
            return match conn.resume(last) {
                Ok((rx, guard)) => sse(SseBody::new(None, None, rx, guard)),
                Err(Refusal::Foreign) => status(
                    StatusCode::BAD_REQUEST,
                    "this Last-Event-ID is not an event of this session",
                ),
                Err(Refusal::Forgotten) => status(
                    StatusCode::GONE,
                    "the events after this Last-Event-ID are no longer kept: send the request again",
                ),
                Err(Refusal::Finished) => status(StatusCode::NO_CONTENT, ""),
            };
        }
        match conn.open_get() {
            Some((rx, prime)) => sse(SseBody::new(prime, None, rx, None)),
            None => status(
                StatusCode::CONFLICT,
                "this session's GET stream is open already",
            ),
        }
    }

    fn delete(&self, headers: &HeaderMap, caller: Caller) -> Answer {
        let Some(id) = header_str(headers, SESSION_HEADER) else {
            return status(StatusCode::BAD_REQUEST, "send the Mcp-Session-Id to end");
        };
        if self.session(id, caller).is_none() {
            return status(StatusCode::NOT_FOUND, "no such session");
        }
        if let Some(session) = crate::sync::lock(&self.sessions).remove(id) {
            session.conn.close();
        }
        status(StatusCode::OK, "")
    }

    /// Closes the sessions idle for longer than the idle limit, and those
    /// whose MCP session ended.
    pub fn expire_idle(&self) {
        let idle = self.opts.session_idle;
        let mut ended = Vec::new();
        crate::sync::lock(&self.sessions).retain(|_, s| {
            let keep = !s.conn.is_closed() && s.conn.idle_for() < idle;
            if !keep {
                ended.push(s.conn.clone());
            }
            keep
        });
        for conn in ended {
            conn.close();
        }
    }

    /// At the server's end: no new request, every stream answered and
    /// ended.
    pub fn begin_stop(&self) {
        self.stopping.store(true, Ordering::SeqCst);
        for s in crate::sync::lock(&self.sessions).values() {
            s.conn.end_streams("the server is stopping");
        }
        for conn in crate::sync::lock(&self.stateless).values() {
            conn.end_streams("the server is stopping");
        }
    }

    /// After the connections closed: every session ended.
    pub fn close_all(&self) {
        for (_, s) in crate::sync::lock(&self.sessions).drain() {
            s.conn.close();
        }
        for (_, conn) in crate::sync::lock(&self.stateless).drain() {
            conn.close();
        }
    }
}

enum Target {
    New,
    Stateless(Arc<Conn>),
}

/// A request's answer: JSON when its answer comes within [`SSE_AFTER`]
/// (or the client takes no SSE), an SSE stream otherwise. `stateless`:
/// an error answer's HTTP status says what kind of error it is.
async fn answer(
    mut rx: tokio::sync::mpsc::Receiver<Msg>,
    guard: RouteGuard,
    sse_ok: bool,
    stateless: bool,
) -> Answer {
    if !sse_ok {
        // Progress and the like have nowhere to go: only the answer.
        while let Some(msg) = rx.recv().await {
            if msg.last {
                guard.answered_whole();
                return json_answer(&msg.json, stateless);
            }
        }
        return status(StatusCode::INTERNAL_SERVER_ERROR, "the session ended");
    }
    match tokio::time::timeout(SSE_AFTER, rx.recv()).await {
        Ok(Some(msg)) if msg.last => {
            guard.answered_whole();
            json_answer(&msg.json, stateless)
        }
        Ok(Some(msg)) => sse(SseBody::new(guard.prime(), Some(msg), rx, Some(guard))),
        Ok(None) => status(StatusCode::INTERNAL_SERVER_ERROR, "the session ended"),
        Err(_) => sse(SseBody::new(guard.prime(), None, rx, Some(guard))),
    }
}

fn json_answer(json: &str, stateless: bool) -> Answer {
    let code = if stateless {
        let code = serde_json::from_str::<Value>(json)
            .ok()
            .and_then(|v| v.pointer("/error/code").and_then(Value::as_i64));
        match code {
            Some(-32601) => StatusCode::NOT_FOUND,
            Some(-32602 | -32020 | -32021 | -32022) => StatusCode::BAD_REQUEST,
            _ => StatusCode::OK,
        }
    } else {
        StatusCode::OK
    };
    let mut answer = Response::new(Out::text(json.to_owned()));
    *answer.status_mut() = code;
    answer
        .headers_mut()
        .insert("content-type", HeaderValue::from_static("application/json"));
    answer
}

fn sse(body: SseBody) -> Answer {
    let mut answer = Response::new(Out::Sse(body));
    let headers = answer.headers_mut();
    headers.insert(
        "content-type",
        HeaderValue::from_static("text/event-stream"),
    );
    headers.insert("cache-control", HeaderValue::from_static("no-cache"));
    answer
}

/// An answer of `code` with `text` (empty: no body).
pub fn status(code: StatusCode, text: &str) -> Answer {
    let mut answer = Response::new(if text.is_empty() {
        Out::empty()
    } else {
        Out::text(format!("{text}\n"))
    });
    *answer.status_mut() = code;
    if !text.is_empty() {
        answer.headers_mut().insert(
            "content-type",
            HeaderValue::from_static("text/plain; charset=utf-8"),
        );
    }
    answer
}

/// A JSON-RPC error answer with HTTP status `code`. Without an id (the
/// message could not be read, or is a batch) the answer has none: the
/// MCP schema's error response has an optional id that is a string or a
/// number, never `null`, and the transport says "an error response that
/// has no `id`".
fn rpc_error(code: StatusCode, id: &Value, rpc: i64, message: &str) -> Answer {
    let mut body = json!({"jsonrpc": "2.0", "error": {"code": rpc, "message": message}});
    if !id.is_null() {
        body["id"] = id.clone();
    }
    let mut answer = json_answer(&body.to_string(), false);
    *answer.status_mut() = code;
    answer
}

/// The headers a 2026-07-28 request repeats from its body (SEP-2243):
/// `Mcp-Method` always, `Mcp-Name` for the methods that name something;
/// both compared exactly (values are case-sensitive).
fn method_headers(message: &Value, headers: &HeaderMap) -> Result<(), String> {
    let method = message
        .get("method")
        .and_then(Value::as_str)
        .unwrap_or_default();
    match header_str(headers, "mcp-method") {
        Some(h) if h == method => {}
        Some(h) => {
            return Err(format!(
                "the Mcp-Method header ({h}) does not match the body ({method})"
            ))
        }
        None => {
            return Err(format!(
                "the Mcp-Method header is missing (the body says {method})"
            ))
        }
    }
    let named = match method {
        "tools/call" | "prompts/get" => message.pointer("/params/name"),
        "resources/read" => message.pointer("/params/uri"),
        _ => None,
    };
    if let Some(name) = named.and_then(Value::as_str) {
        match header_str(headers, "mcp-name") {
            Some(h) if h == name => {}
            Some(h) => {
                return Err(format!(
                    "the Mcp-Name header ({h}) does not match the body ({name})"
                ))
            }
            None => {
                return Err(format!(
                    "the Mcp-Name header is missing (the body names {name})"
                ))
            }
        }
    }
    Ok(())
}

fn header_str<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
}

fn accepts_sse(headers: &HeaderMap) -> bool {
    headers
        .get_all("accept")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .any(|v| v.contains("text/event-stream") || v.contains("*/*"))
}

/// 128 random bits as hex: an id no client can guess.
fn new_session_id() -> String {
    let mut bytes = [0u8; 16];
    if getrandom::fill(&mut bytes).is_err() {
        // Without randomness the token still guards the session.
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        bytes = nanos.to_le_bytes();
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
