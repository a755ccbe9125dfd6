//! Routing requests to answers: cheap methods are answered on the reader
//! thread at once, tool calls run on their own threads so a long call never
//! holds up a `ping`, a `tools/list` or a cancel. Cancellation, progress and
//! a last-line-of-defence panic catcher live here.

use std::collections::{HashMap, HashSet};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crossbeam_channel::Sender;
use serde_json::{json, Value};

use super::jsonrpc::{
    self, id_key, ClientMessage, Line, RpcError, INTERNAL_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND,
};
use super::listing;
use super::peer::{CallAsker, Peer};
use super::protocol::{self, Era};
use super::resources::{self, Subscriptions};
use super::response::Responses;
use crate::config::ServeConfig;
use crate::tools::context::{ProgressSink, ToolContext};
use crate::tools::registry::Registry;
use crate::trust::Trust;

/// Tool calls running at once. Past this a call is refused rather than
/// queued: a client that floods us gets a clear error, not a stall.
const MAX_IN_FLIGHT: usize = 64;

/// What the writer thread receives.
#[derive(Debug)]
pub enum Outgoing {
    /// One JSON-RPC line, ready to write.
    Line(String),
    /// Flush everything before this, then acknowledge.
    Flush(Sender<()>),
}

/// The state shared by the reader thread and the call threads.
#[derive(Debug)]
pub struct Dispatcher {
    registry: Arc<Registry>,
    /// The `tools` array of `tools/list`, rendered once.
    listing: Value,
    /// What every call's context is made from: the configuration, the
    /// registry and the pane cache all calls share.
    tools: ToolContext,
    out: Sender<Outgoing>,
    in_flight: Mutex<HashMap<String, Arc<AtomicBool>>>,
    /// Calls the client cancelled (they get no answer); a call stopped by
    /// our own shutdown still answers.
    client_cancelled: Mutex<HashSet<String>>,
    active: AtomicUsize,
    shutting_down: AtomicBool,
    /// Every answer's line is built, and kept within the ceiling, here.
    responses: Responses,
    /// Resource subscriptions and listen streams of this connection.
    subscriptions: Subscriptions,
    /// The operator's policy, scope and audit log: every call passes it.
    trust: Arc<Trust>,
    /// The client: who it is, and the requests we send it.
    peer: Peer,
}

impl Dispatcher {
    /// A dispatcher for `registry`'s tools under `config`, writing its answers to `out`.
    pub fn new(registry: Arc<Registry>, config: Arc<ServeConfig>, out: Sender<Outgoing>) -> Self {
        let tools = ToolContext::new(config.clone(), registry.clone());
        Dispatcher::with_tools(registry, tools, out)
    }

    /// A dispatcher whose calls are made from `tools` (a daemon's session:
    /// its own configuration and registry, the daemon's pane cache).
    pub fn with_tools(registry: Arc<Registry>, tools: ToolContext, out: Sender<Outgoing>) -> Self {
        let config = tools.config.clone();
        Dispatcher {
            listing: listing::tools_listing(&registry),
            subscriptions: Subscriptions::new(tools.child(), out.clone()),
            trust: Arc::new(Trust::none()),
            peer: Peer::new(out.clone()),
            tools,
            registry,
            responses: Responses::new(config.ceilings.response_bytes),
            out,
            in_flight: Mutex::new(HashMap::new()),
            client_cancelled: Mutex::new(HashSet::new()),
            active: AtomicUsize::new(0),
            shutting_down: AtomicBool::new(false),
        }
    }

    /// The same dispatcher with every call gated by `trust`.
    pub fn with_trust(mut self, trust: Arc<Trust>) -> Self {
        self.trust = trust;
        self
    }

    fn send(&self, line: String) {
        // The writer only goes away at exit; nothing useful to do then.
        let _ = self.out.send(Outgoing::Line(line));
    }

    fn send_error(&self, id: &Value, error: &RpcError) {
        self.send(self.responses.error(id, error));
    }

    /// Handles one input line. Never panics outward.
    pub fn handle_line(self: &Arc<Self>, line: Line) {
        match line {
            Line::TooLong { bytes } => self.send_error(
                &Value::Null,
                &RpcError::new(
                    INVALID_REQUEST,
                    format!(
                        "request line of {bytes} bytes exceeds the {}-byte limit; it was dropped",
                        jsonrpc::MAX_LINE_BYTES
                    ),
                ),
            ),
            Line::Complete(bytes) => {
                if bytes.iter().all(u8::is_ascii_whitespace) {
                    return;
                }
                match jsonrpc::parse_message(&bytes) {
                    ClientMessage::Request { id, method, params } => {
                        let this = self.clone();
                        let caught = catch_unwind(AssertUnwindSafe(|| {
                            this.handle_request(&id, &method, params)
                        }));
                        if caught.is_err() {
                            self.send_error(&id, &internal_error(&method));
                        }
                    }
                    ClientMessage::Notification { method, params } => {
                        let _ = catch_unwind(AssertUnwindSafe(|| {
                            self.handle_notification(&method, params.as_ref())
                        }));
                    }
                    ClientMessage::Response { id, outcome } => self.peer.answered(&id, outcome),
                    ClientMessage::Invalid { id, error } => self.send_error(&id, &error),
                }
            }
        }
    }

    fn handle_notification(&self, method: &str, params: Option<&Value>) {
        if method == "notifications/cancelled" {
            if let Some(id) = params.and_then(|p| p.get("requestId")) {
                let key = id_key(id);
                // A listen stream ends with no answer, as a cancelled call.
                if self.subscriptions.cancel(&key) {
                    return;
                }
                if let Ok(map) = self.in_flight.lock() {
                    if let Some(flag) = map.get(&key) {
                        if let Ok(mut by_client) = self.client_cancelled.lock() {
                            by_client.insert(key);
                        }
                        flag.store(true, Ordering::Relaxed);
                    }
                }
            }
        }
        // Everything else (initialized, roots changed, unknown) needs no
        // action and never an answer.
    }

    fn handle_request(self: &Arc<Self>, id: &Value, method: &str, params: Option<Value>) {
        if let Some(p) = &params {
            if !p.is_object() {
                return self.send_error(id, &RpcError::invalid_params("params must be an object"));
            }
        }
        let era = match protocol::request_era(params.as_ref()) {
            Ok(era) => era,
            Err(e) => return self.send_error(id, &e),
        };
        if era.is_modern() && protocol::removed_in_modern(method) {
            return self.send_error(id, &method_not_found(method, &era));
        }
        // server/discover exists only in the modern era: answer it as such
        // even when the probe carries no `_meta`.
        let era = if method == "server/discover" && !era.is_modern() {
            Era::Modern {
                version: protocol::MODERN_VERSIONS[0].to_owned(),
            }
        } else {
            era
        };
        let result = match method {
            "initialize" => {
                self.peer.initialized(params.as_ref());
                protocol::initialize_result(params.as_ref())
            }
            "ping" => Ok(json!({})),
            "server/discover" => Ok(protocol::discover_result()),
            "tools/list" => self.tools_list(params.as_ref(), &era),
            "tools/call" => return self.start_call(id, params, era),
            "prompts/list" => self.prompts_list(params.as_ref(), &era),
            "prompts/get" => resources::prompts_get(params.as_ref()),
            "resources/templates/list" => {
                resources::no_cursor(params.as_ref(), "resources/templates/list").map(|()| {
                    cacheable(
                        &era,
                        crate::resources::read::templates(),
                        protocol::LIST_TTL_MS,
                    )
                })
            }
            "resources/list"
            | "resources/read"
            | "resources/subscribe"
            | "resources/unsubscribe" => return self.answer_later(id, era, method, params),
            "subscriptions/listen" if era.is_modern() => {
                return self.answer_later(id, era, method, params)
            }
            _ => Err(method_not_found(method, &era)),
        };
        match result {
            Ok(result) => self.send(self.responses.result(id, &era, result)),
            Err(e) => self.send_error(id, &e),
        }
    }

    fn tools_list(&self, params: Option<&Value>, era: &Era) -> Result<Value, RpcError> {
        // One page holds every tool, so no cursor we could have issued
        // exists: any cursor is invalid.
        if let Some(cursor) = params.and_then(|p| p.get("cursor")) {
            if !cursor.is_null() {
                return Err(RpcError::invalid_params(format!(
                    "invalid cursor {cursor}: tools/list returns every tool in one page"
                )));
            }
        }
        let mut result = json!({"tools": self.listing});
        if era.is_modern() {
            result["ttlMs"] = json!(protocol::LIST_TTL_MS);
            result["cacheScope"] = json!("private");
        }
        Ok(result)
    }

    fn prompts_list(&self, params: Option<&Value>, era: &Era) -> Result<Value, RpcError> {
        resources::no_cursor(params, "prompts/list")?;
        Ok(cacheable(
            era,
            resources::prompts_list(),
            protocol::LIST_TTL_MS,
        ))
    }

    /// A resource request that talks to tmux, answered from its own
    /// thread so the reader stays free for pings and cancels.
    fn answer_later(self: &Arc<Self>, id: &Value, era: Era, method: &str, params: Option<Value>) {
        if self.shutting_down.load(Ordering::Relaxed) {
            return self.send_error(
                id,
                &RpcError::new(INTERNAL_ERROR, "server is shutting down"),
            );
        }
        if self.active.load(Ordering::SeqCst) >= 2 * MAX_IN_FLIGHT {
            return self.send_error(
                id,
                &RpcError::new(
                    INTERNAL_ERROR,
                    format!("{MAX_IN_FLIGHT} requests already running; retry when one ends"),
                ),
            );
        }
        self.active.fetch_add(1, Ordering::SeqCst);
        let (this, request, method) = (self.clone(), id.clone(), method.to_owned());
        let spawned = std::thread::Builder::new()
            .name(format!("req-{method}"))
            .spawn(move || {
                let id = request;
                let outcome = catch_unwind(AssertUnwindSafe(|| {
                    this.resource_request(&id, &method, params.as_ref())
                }));
                match outcome {
                    // What tmux shows changes at any moment: never cached.
                    Ok(Some(Ok(result))) => {
                        this.send(this.responses.result(&id, &era, cacheable(&era, result, 0)))
                    }
                    Ok(Some(Err(e))) => this.send_error(&id, &e),
                    Ok(None) => {}
                    Err(_) => this.send_error(&id, &internal_error(&method)),
                }
                this.active.fetch_sub(1, Ordering::SeqCst);
            });
        if spawned.is_err() {
            self.active.fetch_sub(1, Ordering::SeqCst);
            self.send_error(
                id,
                &RpcError::new(INTERNAL_ERROR, "cannot start a thread for this request"),
            );
        }
    }

    /// The answer to a resource request (`None`: a listen stream, which
    /// stays open without one).
    fn resource_request(
        &self,
        id: &Value,
        method: &str,
        params: Option<&Value>,
    ) -> Option<Result<Value, RpcError>> {
        let ctx = self.tools.child();
        Some(match method {
            "resources/list" => resources::cursor(params).and_then(|cursor| {
                crate::resources::read::list(&ctx, cursor.as_deref()).map_err(resources::rpc_error)
            }),
            "resources/read" => match params.and_then(|p| p.get("uri")).and_then(Value::as_str) {
                // The URI in the error's data, as MCP asks (SEP-2164).
                Some(uri) => crate::resources::read::read(&ctx, uri)
                    .map_err(|e| resources::rpc_error(e).with_data(json!({ "uri": uri }))),
                None => Err(RpcError::invalid_params(
                    "resources/read needs \"uri\" (a string), e.g. tmux://sessions",
                )),
            },
            "resources/subscribe" => self.subscriptions.subscribe(params),
            "resources/unsubscribe" => self.subscriptions.unsubscribe(params),
            _ => return self.subscriptions.listen(id, params).err().map(Err),
        })
    }

    fn start_call(self: &Arc<Self>, id: &Value, params: Option<Value>, era: Era) {
        let params = params.unwrap_or_else(|| json!({}));
        let Some(name) = params.get("name").and_then(Value::as_str) else {
            return self.send_error(
                id,
                &RpcError::invalid_params("tools/call needs \"name\" (a string)"),
            );
        };
        if self.registry.get(name).is_none() {
            // A tool of a higher tier: say how to start a server that has it.
            let needs = crate::tools::all()
                .into_iter()
                .find(|e| e.name == name)
                .map(|e| {
                    format!(
                        ": it needs tier {t}, so start panescan as `panescan serve --tier {t}` (in the client's config: \"args\": [\"serve\", \"--tier\", \"{t}\"])",
                        t = e.tier
                    )
                })
                .unwrap_or_default();
            return self.send_error(
                id,
                &RpcError::invalid_params(format!(
                    "unknown tool {name:?} in tier {}{needs}; tools: {}",
                    self.registry.tier(),
                    self.registry.names().join(", ")
                )),
            );
        }
        let args = params.get("arguments").cloned().unwrap_or(Value::Null);
        if !(args.is_object() || args.is_null()) {
            return self.send_error(
                id,
                &RpcError::invalid_params("tools/call \"arguments\" must be an object"),
            );
        }
        let progress_token = match progress_token(&params) {
            Ok(token) => token,
            Err(e) => return self.send_error(id, &e),
        };
        if self.shutting_down.load(Ordering::Relaxed) {
            return self.send_error(
                id,
                &RpcError::new(INTERNAL_ERROR, "server is shutting down"),
            );
        }
        let slot = match self.claim_slot(id) {
            Ok(slot) => slot,
            Err(e) => return self.send_error(id, &e),
        };
        let cancel = slot.cancel.clone();
        let mut ctx = self.tools.child();
        ctx.cancel = cancel.clone();
        ctx.response_room = self.responses.room_for_result(id, &era);
        if let Some(token) = progress_token {
            ctx.progress = self.progress_sink(token, cancel.clone());
        }
        let call = Call {
            id: id.clone(),
            era,
            name: name.to_owned(),
            cancel,
            slot,
            params: params.clone(),
        };
        self.active.fetch_add(1, Ordering::SeqCst);
        let spawned = std::thread::Builder::new()
            .name(format!("call-{name}"))
            .spawn({
                let this = self.clone();
                move || this.run_call(call, &ctx, args)
            });
        // A call that could not start dropped its slot with its closure.
        if spawned.is_err() {
            self.active.fetch_sub(1, Ordering::SeqCst);
            self.send_error(
                id,
                &RpcError::new(INTERNAL_ERROR, "cannot start a thread for this call"),
            );
        }
    }

    /// Registers a call under its id: its slot (which holds its cancel
    /// flag and frees the id when dropped), or why it may not run now.
    fn claim_slot(self: &Arc<Self>, id: &Value) -> Result<Slot, RpcError> {
        let Ok(mut map) = self.in_flight.lock() else {
            return Err(internal_error("tools/call"));
        };
        // Calls whose answers wait for a client that does not read
        // still hold a thread: bound those too.
        if map.len() >= MAX_IN_FLIGHT || self.active.load(Ordering::SeqCst) >= 2 * MAX_IN_FLIGHT {
            return Err(RpcError::new(
                INTERNAL_ERROR,
                format!("{MAX_IN_FLIGHT} tool calls already running; retry when one ends"),
            ));
        }
        let key = id_key(id);
        if map.contains_key(&key) {
            return Err(RpcError::new(
                INVALID_REQUEST,
                format!("request id {id} is already in use"),
            ));
        }
        let cancel = Arc::new(AtomicBool::new(false));
        map.insert(key.clone(), cancel.clone());
        Ok(Slot {
            dispatcher: self.clone(),
            key,
            cancel,
        })
    }

    /// Runs a tool call on its own thread and writes its answer.
    fn run_call(&self, call: Call, ctx: &ToolContext, args: Value) {
        let Call {
            id,
            era,
            name,
            cancel,
            slot,
            params,
        } = call;
        let outcome = catch_unwind(AssertUnwindSafe(|| {
            self.gated_call(ctx, &name, &era, &params, args)
        }));
        let line = match outcome {
            // Not run yet: the trust gate's answer (an input request).
            Ok(Err(answer)) => self.responses.result(&id, &era, answer),
            Ok(Ok(outcome)) => self.call_line(&id, &era, &name, outcome),
            Err(_) => self.responses.error(&id, &internal_error(&name)),
        };
        // A request the client cancelled gets no response at all; one
        // stopped by our shutdown still gets its answer.
        let key = id_key(&id);
        let by_client = cancel.load(Ordering::Relaxed)
            && self
                .client_cancelled
                .lock()
                .map(|mut set| set.remove(&key))
                .unwrap_or(true);
        // The slot is free before the answer goes out, so a client that
        // sends a call per answer never meets the limit; `active` (below)
        // still counts this thread.
        drop(slot);
        if !by_client {
            self.send(line);
        }
        self.active.fetch_sub(1, Ordering::SeqCst);
    }

    /// The tool run once the operator's trust settings admit it (a
    /// refusal is the call's error; `Err`: a result to answer with
    /// instead, the call not run), its audit line written after.
    fn gated_call(
        &self,
        ctx: &ToolContext,
        name: &str,
        era: &Era,
        params: &Value,
        args: Value,
    ) -> Result<CallOutcome, Value> {
        let Some(entry) = self.registry.get(name) else {
            return Ok(None);
        };
        let asker = CallAsker {
            peer: &self.peer,
            cancel: ctx.cancel.clone(),
            modern: era.is_modern(),
            params,
        };
        let admitted = self.trust.admit(ctx, name, entry.tier, &args, &asker);
        if let Some(answer) = admitted.answer.clone() {
            self.trust.finish(admitted, None);
            return Err(answer);
        }
        if let Some(refusal) = admitted.refusal.clone() {
            self.trust.finish(admitted, None);
            return Ok(Some(Err(refusal)));
        }
        let result = self.registry.call(ctx, name, args);
        let error = match &result {
            Some(Err(e)) => Some(e),
            _ => None,
        };
        self.trust.finish(admitted, error);
        Ok(result)
    }

    /// The answer line of a call that ran (or was refused).
    fn call_line(&self, id: &Value, era: &Era, name: &str, outcome: CallOutcome) -> String {
        match outcome {
            Some(Ok(out)) => self.responses.tool_result(id, era, &out),
            Some(Err(e)) => self.responses.tool_error(id, era, &e.message),
            None => self.responses.error(
                id,
                &RpcError::invalid_params(format!("unknown tool {name:?}")),
            ),
        }
    }

    /// Progress notifications for one call: token echoed as given, values
    /// strictly increasing, nothing after the call was cancelled.
    fn progress_sink(self: &Arc<Self>, token: Value, cancel: Arc<AtomicBool>) -> ProgressSink {
        let out = self.out.clone();
        let last = Mutex::new(f64::NEG_INFINITY);
        ProgressSink::new(move |progress, total, message| {
            if cancel.load(Ordering::Relaxed) || !progress.is_finite() {
                return;
            }
            let Ok(mut last) = last.lock() else { return };
            if progress <= *last {
                return;
            }
            *last = progress;
            let mut params = json!({"progressToken": token, "progress": progress});
            if let Some(total) = total {
                params["total"] = json!(total);
            }
            if let Some(message) = message {
                params["message"] = json!(message);
            }
            // Progress is advice: when the client is not reading, drop it
            // rather than hold the call up.
            let _ = out.try_send(Outgoing::Line(jsonrpc::notification(
                "notifications/progress",
                params,
            )));
        })
    }

    /// Waits up to `grace` for running calls to finish on their own (and
    /// send their answers); returns whether they all did.
    pub fn drain(&self, grace: Duration) -> bool {
        let until = Instant::now() + grace;
        while self.active.load(Ordering::SeqCst) > 0 {
            if Instant::now() >= until {
                return false;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        true
    }

    /// Cancels every running call and waits up to `grace` for them to end;
    /// ends every subscription, answering open listen streams (their
    /// graceful close).
    pub fn shutdown(&self, grace: Duration) {
        self.shutting_down.store(true, Ordering::SeqCst);
        self.peer.close();
        let modern = Era::Modern {
            version: protocol::MODERN_VERSIONS[0].to_owned(),
        };
        for id in self.subscriptions.close() {
            let result = json!({"_meta": {resources::META_SUBSCRIPTION_ID: id}});
            self.send(self.responses.result(&id, &modern, result));
        }
        if let Ok(map) = self.in_flight.lock() {
            for flag in map.values() {
                flag.store(true, Ordering::Relaxed);
            }
        }
        let until = Instant::now() + grace;
        while self.active.load(Ordering::SeqCst) > 0 && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Tool calls running now.
    pub fn active_calls(&self) -> usize {
        self.active.load(Ordering::SeqCst)
    }
}

/// What a tool call came to: its output or error (`None`: no such tool).
type CallOutcome =
    Option<Result<crate::tools::registry::ToolOutput, crate::tools::context::ToolError>>;

/// A tool call on its way: what its answer needs.
#[derive(Debug)]
struct Call {
    id: Value,
    era: Era,
    name: String,
    cancel: Arc<AtomicBool>,
    slot: Slot,
    /// Its params (the trust gate reads a retry's `inputResponses`).
    params: Value,
}

/// A call's entry in the in-flight table, removed when this is dropped:
/// whichever way the call ends (answered, failed to start, panicked), its
/// id is free again and its cancel flag gone.
#[derive(Debug)]
struct Slot {
    dispatcher: Arc<Dispatcher>,
    key: String,
    cancel: Arc<AtomicBool>,
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut map = match self.dispatcher.in_flight.lock() {
            Ok(map) => map,
            Err(poisoned) => poisoned.into_inner(),
        };
        map.remove(&self.key);
    }
}

/// The call's `_meta.progressToken` (a string or a number; anything else
/// asks for no progress). Every progress notification echoes it, so it
/// has the id's limit.
fn progress_token(params: &Value) -> Result<Option<Value>, RpcError> {
    let token = params
        .get("_meta")
        .and_then(|m| m.get("progressToken"))
        .filter(|t| t.is_string() || t.is_number());
    match token {
        Some(t) if jsonrpc::id_bytes(t) > jsonrpc::MAX_ID_BYTES => Err(RpcError::invalid_params(
            format!(
                "_meta.progressToken is {} bytes as JSON, over the limit of {}: every progress notification echoes it; use a shorter token",
                jsonrpc::id_bytes(t),
                jsonrpc::MAX_ID_BYTES
            ),
        )),
        other => Ok(other.cloned()),
    }
}

/// A list or read result as 2026-07-28 requires it: how long it may be
/// cached (`ttl_ms`), privately. Handshake-era results stay as they were;
/// an empty result (subscribe, unsubscribe) is not a cacheable one.
fn cacheable(era: &Era, mut result: Value, ttl_ms: u64) -> Value {
    let empty = result.as_object().is_some_and(|o| o.is_empty());
    if era.is_modern() && !empty {
        result["ttlMs"] = json!(ttl_ms);
        result["cacheScope"] = json!("private");
    }
    result
}

fn method_not_found(method: &str, era: &Era) -> RpcError {
    let why = if era.is_modern() && protocol::removed_in_modern(method) {
        " (removed in protocol 2026-07-28)"
    } else {
        ""
    };
    RpcError::new(METHOD_NOT_FOUND, format!("method not found: {method}{why}"))
}

fn internal_error(what: &str) -> RpcError {
    RpcError::new(
        INTERNAL_ERROR,
        format!("internal error while handling {what}; the server keeps running"),
    )
}
