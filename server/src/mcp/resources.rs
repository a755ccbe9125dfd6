//! Resources, subscriptions and prompts as the protocol shows them, in
//! both eras.
//!
//! - Handshake era (2024-11-05 .. 2025-11-25): `resources/subscribe` and
//!   `resources/unsubscribe` keep a set of URIs for the connection;
//!   `notifications/resources/updated` names a URI as subscribed. That era
//!   has no way to ask for list changes alone, so
//!   `notifications/resources/list_changed` goes out while the connection
//!   holds at least one subscription (and not before: no tmux work for a
//!   client that subscribes to nothing).
//! - 2026-07-28: the protocol is stateless per request and
//!   `resources/subscribe` / `unsubscribe` are gone (SEP-2575). A client
//!   opens a `subscriptions/listen` request whose `notifications` filter
//!   says what it wants (`resourcesListChanged`, `resourceSubscriptions`);
//!   the server first sends `notifications/subscriptions/acknowledged`
//!   with the subset it honours, then every change notification with
//!   `_meta["io.modelcontextprotocol/subscriptionId"]` = the listen
//!   request's id. On stdio the client ends a stream with
//!   `notifications/cancelled` for that id (no answer follows); the server
//!   ends it gracefully at shutdown by answering the listen request with
//!   an empty result. Kinds the client did not ask for are never sent.
//!
//! Subscriptions end with the connection (the process): the watcher is
//! stopped and the tmux subscription dropped.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use crossbeam_channel::Sender;
use serde_json::{json, Value};

use super::dispatch::Outgoing;
use super::jsonrpc::{self, id_key, RpcError, INTERNAL_ERROR, INVALID_PARAMS};
use crate::prompts;
use crate::resources::uri::{self, Target};
use crate::resources::watch::{Change, Wanted, Watcher};
use crate::resources::{read, ResourceError, ResourceErrorKind};
use crate::tools::context::ToolContext;

/// MCP's "resource not found" code.
const RESOURCE_NOT_FOUND: i64 = -32002;
/// URIs one connection may watch at once (all streams and subscriptions).
const MAX_SUBSCRIPTIONS: usize = 4096;
/// `_meta` key stamping every notification of a listen stream.
pub const META_SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

/// The JSON-RPC error for a failed resource request.
pub fn rpc_error(e: ResourceError) -> RpcError {
    let code = match e.kind {
        ResourceErrorKind::Malformed => INVALID_PARAMS,
        ResourceErrorKind::NotFound => RESOURCE_NOT_FOUND,
        ResourceErrorKind::Failed => INTERNAL_ERROR,
    };
    RpcError::new(code, e.message)
}

/// A `subscriptions/listen` stream.
#[derive(Debug)]
struct Stream {
    id: Value,
    uris: BTreeMap<String, Target>,
    list_changed: bool,
}

#[derive(Debug, Default)]
struct State {
    /// `resources/subscribe` (handshake era).
    subscribed: BTreeMap<String, Target>,
    /// `subscriptions/listen` streams (2026-07-28), by request id.
    streams: BTreeMap<String, Stream>,
}

impl State {
    fn wanted(&self) -> Wanted {
        let mut uris = self.subscribed.clone();
        for s in self.streams.values() {
            uris.extend(s.uris.iter().map(|(u, t)| (u.clone(), *t)));
        }
        Wanted {
            uris,
            list_changed: !self.subscribed.is_empty()
                || self.streams.values().any(|s| s.list_changed),
        }
    }

    /// The notification lines `change` makes.
    fn lines(&self, change: &Change) -> Vec<String> {
        let (method, uri) = match change {
            Change::Updated(uri) => ("notifications/resources/updated", Some(uri)),
            Change::ListChanged => ("notifications/resources/list_changed", None),
        };
        let params = |meta: Option<&Value>| {
            let mut p = json!({});
            if let Some(uri) = uri {
                p["uri"] = json!(uri);
            }
            if let Some(id) = meta {
                p["_meta"] = json!({ META_SUBSCRIPTION_ID: id });
            }
            p
        };
        let mut out = Vec::new();
        let handshake = match uri {
            Some(u) => self.subscribed.contains_key(u),
            None => !self.subscribed.is_empty(),
        };
        if handshake {
            out.push(jsonrpc::notification(method, params(None)));
        }
        for s in self.streams.values() {
            let wants = match uri {
                Some(u) => s.uris.contains_key(u),
                None => s.list_changed,
            };
            if wants {
                out.push(jsonrpc::notification(method, params(Some(&s.id))));
            }
        }
        out
    }

    fn count(&self) -> usize {
        self.subscribed.len() + self.streams.values().map(|s| s.uris.len()).sum::<usize>()
    }
}

/// One connection's subscriptions and the watcher serving them.
#[derive(Debug)]
pub struct Subscriptions {
    state: Arc<Mutex<State>>,
    watcher: Watcher,
    ctx: ToolContext,
    out: Sender<Outgoing>,
}

fn lock(state: &Mutex<State>) -> MutexGuard<'_, State> {
    match state.lock() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    }
}

impl Subscriptions {
    /// Subscriptions reading tmux through `ctx` and writing notifications to `out`.
    pub fn new(ctx: ToolContext, out: Sender<Outgoing>) -> Subscriptions {
        let state = Arc::new(Mutex::new(State::default()));
        let sink = {
            let (state, out) = (state.clone(), out.clone());
            Arc::new(move |change: Change| {
                let lines = lock(&state).lines(&change);
                // A client that stops reading holds the watcher at most
                // this long per round; the change is offered again later.
                lines.into_iter().all(|line| {
                    out.send_timeout(Outgoing::Line(line), Duration::from_secs(2))
                        .is_ok()
                })
            })
        };
        Subscriptions {
            watcher: Watcher::new(ctx.child(), sink),
            state,
            ctx,
            out,
        }
    }

    fn apply(&self) {
        let wanted = lock(&self.state).wanted();
        self.watcher.set(wanted, self.ctx.tmux_deadline());
    }

    /// `resources/subscribe`: the URI must be well formed and name
    /// something that exists now.
    pub fn subscribe(&self, params: Option<&Value>) -> Result<Value, RpcError> {
        let uri = uri_param(params)?;
        let target = uri::parse(&uri).map_err(rpc_error)?;
        read::exists(&self.ctx, target).map_err(rpc_error)?;
        {
            let mut st = lock(&self.state);
            if !st.subscribed.contains_key(&uri) && st.count() >= MAX_SUBSCRIPTIONS {
                return Err(RpcError::invalid_params(format!(
                    "this connection already watches {MAX_SUBSCRIPTIONS} resources; unsubscribe from some first"
                )));
            }
            st.subscribed.insert(uri, target);
        }
        self.apply();
        Ok(json!({}))
    }

    /// `resources/unsubscribe`: forgetting a URI not subscribed is no error.
    pub fn unsubscribe(&self, params: Option<&Value>) -> Result<Value, RpcError> {
        let uri = uri_param(params)?;
        lock(&self.state).subscribed.remove(&uri);
        self.apply();
        Ok(json!({}))
    }

    /// `subscriptions/listen` (2026-07-28): registers the stream and sends
    /// its acknowledgement; the request stays open (no answer) until the
    /// client cancels it or the server shuts down.
    pub fn listen(&self, id: &Value, params: Option<&Value>) -> Result<(), RpcError> {
        let filter = params
            .and_then(|p| p.get("notifications"))
            .and_then(Value::as_object)
            .ok_or_else(|| {
                RpcError::invalid_params("subscriptions/listen needs \"notifications\" (an object)")
            })?;
        let list_changed = filter.get("resourcesListChanged") == Some(&Value::Bool(true));
        let uris = match filter.get("resourceSubscriptions") {
            None | Some(Value::Null) => BTreeMap::new(),
            Some(Value::Array(list)) => self.honoured(list)?,
            Some(_) => {
                return Err(RpcError::invalid_params(
                    "notifications.resourceSubscriptions must be an array of URIs",
                ))
            }
        };
        let mut honoured = json!({});
        if list_changed {
            honoured["resourcesListChanged"] = json!(true);
        }
        if !uris.is_empty() {
            honoured["resourceSubscriptions"] = json!(uris.keys().collect::<Vec<_>>());
        }
        {
            let mut st = lock(&self.state);
            let key = id_key(id);
            if st.streams.contains_key(&key) {
                return Err(RpcError::invalid_params(format!(
                    "request id {id} is already a listen stream"
                )));
            }
            if st.count() + uris.len() > MAX_SUBSCRIPTIONS {
                return Err(RpcError::invalid_params(format!(
                    "this connection may watch at most {MAX_SUBSCRIPTIONS} resources"
                )));
            }
            st.streams.insert(
                key,
                Stream {
                    id: id.clone(),
                    uris,
                    list_changed,
                },
            );
        }
        self.apply();
        let ack = json!({"notifications": honoured, "_meta": { META_SUBSCRIPTION_ID: id }});
        let _ = self.out.send(Outgoing::Line(jsonrpc::notification(
            "notifications/subscriptions/acknowledged",
            ack,
        )));
        Ok(())
    }

    /// The URIs of a listen filter that the server will watch: a malformed
    /// one fails the request; one naming nothing that exists now is left
    /// out of the acknowledgement (it would never fire).
    fn honoured(&self, list: &[Value]) -> Result<BTreeMap<String, Target>, RpcError> {
        if list.len() > MAX_SUBSCRIPTIONS {
            return Err(RpcError::invalid_params(format!(
                "notifications.resourceSubscriptions holds {} URIs; at most {MAX_SUBSCRIPTIONS}",
                list.len()
            )));
        }
        let mut parsed = Vec::with_capacity(list.len());
        for v in list {
            let text = v.as_str().ok_or_else(|| {
                RpcError::invalid_params("notifications.resourceSubscriptions must hold strings")
            })?;
            parsed.push((text.to_owned(), uri::parse(text).map_err(rpc_error)?));
        }
        if parsed.is_empty() {
            return Ok(BTreeMap::new());
        }
        let inv = read::current_inventory(&self.ctx).map_err(rpc_error)?;
        Ok(parsed
            .into_iter()
            .filter(|(_, t)| read::exists_in(&inv, *t).is_ok())
            .collect())
    }

    /// `notifications/cancelled` for a listen stream: ends it. False when
    /// `key` is no stream.
    pub fn cancel(&self, key: &str) -> bool {
        let removed = lock(&self.state).streams.remove(key).is_some();
        if removed {
            self.apply();
        }
        removed
    }

    /// Ends everything at shutdown; returns the ids of the listen streams
    /// still open, whose requests are then answered (a graceful close).
    pub fn close(&self) -> Vec<Value> {
        let streams = std::mem::take(&mut lock(&self.state).streams);
        lock(&self.state).subscribed.clear();
        self.watcher.stop();
        streams.into_values().map(|s| s.id).collect()
    }
}

fn uri_param(params: Option<&Value>) -> Result<String, RpcError> {
    params
        .and_then(|p| p.get("uri"))
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| RpcError::invalid_params("needs \"uri\" (a string), e.g. tmux://sessions"))
}

/// `prompts/list`: every prompt in one page.
pub fn prompts_list() -> Value {
    let prompts: Vec<Value> = prompts::PROMPTS
        .iter()
        .map(|p| {
            let arguments: Vec<Value> = p
                .arguments
                .iter()
                .map(|a| json!({"name": a.name, "description": a.description, "required": a.required}))
                .collect();
            json!({"name": p.name, "title": p.title, "description": p.description, "arguments": arguments})
        })
        .collect();
    json!({ "prompts": prompts })
}

/// `prompts/get`: the prompt filled in as one user message.
pub fn prompts_get(params: Option<&Value>) -> Result<Value, RpcError> {
    let name = params
        .and_then(|p| p.get("name"))
        .and_then(Value::as_str)
        .ok_or_else(|| RpcError::invalid_params("prompts/get needs \"name\" (a string)"))?;
    let mut args = BTreeMap::new();
    match params.and_then(|p| p.get("arguments")) {
        None | Some(Value::Null) => {}
        Some(Value::Object(map)) => {
            for (k, v) in map {
                let v = v.as_str().ok_or_else(|| {
                    RpcError::invalid_params(format!(
                        "prompt {name} argument {k:?} must be a string (prompt arguments are strings)"
                    ))
                })?;
                args.insert(k.clone(), v.to_owned());
            }
        }
        Some(_) => {
            return Err(RpcError::invalid_params(
                "prompts/get \"arguments\" must be an object",
            ))
        }
    }
    let filled = prompts::get(name, &args).map_err(RpcError::invalid_params)?;
    Ok(json!({
        "description": filled.description,
        "messages": [{"role": "user", "content": {"type": "text", "text": filled.text}}],
    }))
}

/// A `cursor` on a list that has one page is an error (none was issued).
pub fn no_cursor(params: Option<&Value>, what: &str) -> Result<(), RpcError> {
    match params.and_then(|p| p.get("cursor")) {
        None | Some(Value::Null) => Ok(()),
        Some(c) => Err(RpcError::invalid_params(format!(
            "invalid cursor {c}: {what} returns everything in one page"
        ))),
    }
}

/// `resources/list`'s cursor, when given.
pub fn cursor(params: Option<&Value>) -> Result<Option<String>, RpcError> {
    match params.and_then(|p| p.get("cursor")) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(c) => Err(RpcError::invalid_params(format!(
            "invalid cursor {c}: a cursor is a string"
        ))),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::tmux::PaneId;

    #[test]
    fn notifications_go_where_they_were_asked_for() {
        let mut st = State::default();
        let t = Target::Screen(PaneId::from_number(1));
        let h = Target::History(PaneId::from_number(1), None);
        st.subscribed.insert("tmux://pane/1/screen".into(), t);
        st.streams.insert(
            "7".into(),
            Stream {
                id: json!(7),
                uris: BTreeMap::from([("tmux://pane/1/history".to_owned(), h)]),
                list_changed: false,
            },
        );
        let lines = st.lines(&Change::Updated("tmux://pane/1/screen".into()));
        assert_eq!(lines.len(), 1);
        assert!(!lines[0].contains(META_SUBSCRIPTION_ID));
        let lines = st.lines(&Change::Updated("tmux://pane/1/history".into()));
        assert_eq!(lines.len(), 1);
        let v: Value = serde_json::from_str(&lines[0]).unwrap();
        assert_eq!(v["params"]["_meta"][META_SUBSCRIPTION_ID], 7);
        // The stream did not ask for list changes; the handshake client did.
        assert_eq!(st.lines(&Change::ListChanged).len(), 1);
    }
}
