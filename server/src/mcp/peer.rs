//! The client as a session knows it: its name, version and capabilities
//! from `initialize`, and the requests the server sends it
//! (`elicitation/create`), answered by the client's responses; in the
//! 2026-07-28 era, where no request is held open, the same question as an
//! input request in the call's answer (`trust::approval`).
//!
//! What must hold: server request ids are ours (`panescan-N`, never
//! reused in a session); at most [`MAX_SERVER_REQUESTS`] wait at once; a
//! response is matched to its request by id and nothing else (a response
//! with an unknown id is dropped); every waiting request ends at its
//! timeout, its call's cancel or the session's end, and its entry goes
//! with it.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crossbeam_channel::{bounded, Receiver, RecvTimeoutError, Sender};
use serde_json::{json, Value};

use super::dispatch::Outgoing;
use super::jsonrpc::id_key;
use super::protocol::META_CLIENT_CAPABILITIES;
use crate::trust::{approval, audit, Approval, Asker, Question};

/// Server requests waiting for the client at once: one per held call,
/// and held calls are few (a person answers each).
const MAX_SERVER_REQUESTS: usize = 16;
/// How often a waiting request looks at its call's cancel flag.
const CANCEL_POLL: Duration = Duration::from_millis(50);

/// What the client said about itself.
#[derive(Debug, Default, Clone)]
struct Client {
    name: String,
    version: String,
    elicitation_form: bool,
}

/// One session's client.
#[derive(Debug)]
pub struct Peer {
    client: Mutex<Client>,
    next: AtomicU64,
    waiting: Mutex<HashMap<String, Sender<Result<Value, Value>>>>,
    closed: AtomicBool,
    out: Sender<Outgoing>,
}

impl Peer {
    /// A peer writing its requests to `out`.
    pub fn new(out: Sender<Outgoing>) -> Peer {
        Peer {
            client: Mutex::new(Client::default()),
            next: AtomicU64::new(1),
            waiting: Mutex::new(HashMap::new()),
            closed: AtomicBool::new(false),
            out,
        }
    }

    /// Records what `initialize`'s params say of the client.
    pub fn initialized(&self, params: Option<&Value>) {
        let Some(p) = params else { return };
        let info = &p["clientInfo"];
        let s = |v: &Value| v.as_str().unwrap_or_default().chars().take(256).collect();
        let elicitation = &p["capabilities"]["elicitation"];
        // 2025-06-18 declared `{}` (form implied); 2025-11-25 may name `form`.
        let form = elicitation.is_object()
            && (elicitation.get("form").is_some() || elicitation.get("url").is_none());
        *crate::sync::lock(&self.client) = Client {
            name: s(&info["name"]),
            version: s(&info["version"]),
            elicitation_form: form,
        };
    }

    /// A response from the client: handed to the request waiting for it.
    pub fn answered(&self, id: &Value, outcome: Result<Value, Value>) {
        let waiting = crate::sync::lock(&self.waiting).remove(&id_key(id));
        if let Some(tx) = waiting {
            let _ = tx.try_send(outcome);
        }
    }

    /// Ends every waiting request (the session ends).
    pub fn close(&self) {
        self.closed.store(true, Ordering::SeqCst);
        crate::sync::lock(&self.waiting).clear();
    }

    /// Sends `method` to the client and waits for its answer.
    fn request(
        &self,
        method: &str,
        params: Value,
        timeout: Duration,
        cancel: &AtomicBool,
    ) -> Result<Value, Approval> {
        let (key, rx) = self.register()?;
        let line = json!({"jsonrpc": "2.0", "id": key, "method": method, "params": params});
        let sent = self.out.send(Outgoing::Line(line.to_string())).is_ok();
        let result = if sent {
            wait(&rx, timeout, cancel, &self.closed)
        } else {
            Err(Approval::Cancelled)
        };
        crate::sync::lock(&self.waiting).remove(&key);
        result
    }

    fn register(&self) -> Result<(String, Receiver<Result<Value, Value>>), Approval> {
        if self.closed.load(Ordering::SeqCst) {
            return Err(Approval::Cancelled);
        }
        let mut waiting = crate::sync::lock(&self.waiting);
        if waiting.len() >= MAX_SERVER_REQUESTS {
            return Err(Approval::Unavailable(format!(
                "{MAX_SERVER_REQUESTS} approvals are already waiting for the user"
            )));
        }
        let key = format!("panescan-{}", self.next.fetch_add(1, Ordering::Relaxed));
        let (tx, rx) = bounded(1);
        waiting.insert(id_key(&json!(key)), tx);
        Ok((key, rx))
    }
}

fn wait(
    rx: &Receiver<Result<Value, Value>>,
    timeout: Duration,
    cancel: &AtomicBool,
    closed: &AtomicBool,
) -> Result<Value, Approval> {
    let until = Instant::now() + timeout;
    loop {
        if cancel.load(Ordering::Relaxed) || closed.load(Ordering::SeqCst) {
            return Err(Approval::Cancelled);
        }
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(Approval::TimedOut);
        }
        match rx.recv_timeout(left.min(CANCEL_POLL)) {
            Ok(Ok(result)) => return Ok(result),
            Ok(Err(_)) => return Err(Approval::Declined),
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => return Err(Approval::Cancelled),
        }
    }
}

/// A [`Peer`] for one call: how the gate asks through it.
#[derive(Debug)]
pub struct CallAsker<'a> {
    /// The session's client.
    pub peer: &'a Peer,
    /// The call's cancel flag.
    pub cancel: Arc<AtomicBool>,
    /// Whether the call came in the stateless era (no server requests).
    pub modern: bool,
    /// The call's params (a 2026-07-28 retry carries `inputResponses`,
    /// `requestState` and the client's capabilities there).
    pub params: &'a Value,
}

impl CallAsker<'_> {
    /// The 2026-07-28 form: a retry that carries a person's answer and the
    /// state made for this very call is judged; otherwise the answer is an
    /// input request with a fresh state.
    fn ask_across_requests(&self, question: &Question, timeout: Duration) -> Approval {
        let state = self.params.get("requestState").and_then(Value::as_str);
        let answer = self
            .params
            .get("inputResponses")
            .and_then(|r| r.get("approve"));
        if let (Some(state), Some(answer)) = (state, answer) {
            if let Err(why) =
                approval::check(state, &question.tool, &question.args, audit::now_ms())
            {
                return Approval::Unavailable(why);
            }
            if !approval::spend(state) {
                return Approval::Unavailable("that approval was already used for a call".into());
            }
            return approval_of(answer);
        }
        let caps = &self.params["_meta"][META_CLIENT_CAPABILITIES];
        if !caps["elicitation"].is_object() {
            return Approval::Unavailable(NO_ELICITATION.into());
        }
        let expires =
            audit::now_ms().saturating_add(u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX));
        Approval::InputRequired(json!({
            "resultType": "input_required",
            "inputRequests": {"approve": {
                "method": "elicitation/create",
                "params": form(question),
            }},
            "requestState": approval::state_for(&question.tool, &question.args, expires),
        }))
    }
}

/// Why a client without elicitation gets a refusal.
const NO_ELICITATION: &str = "this client did not declare the elicitation capability, so no person can be asked: a person must approve it (run it themselves, or use a client that supports elicitation)";

/// The `elicitation/create` params asking about one call.
fn form(question: &Question) -> Value {
    json!({
        "mode": "form",
        "message": question.message,
        "requestedSchema": {
            "type": "object",
            "properties": {"approve": {
                "type": "boolean",
                "title": "Approve this call",
                "description": "true runs this one call; anything else refuses it",
                "default": false
            }},
            "required": ["approve"]
        }
    })
}

impl Asker for CallAsker<'_> {
    fn client(&self) -> (String, String) {
        let c = crate::sync::lock(&self.peer.client);
        (c.name.clone(), c.version.clone())
    }

    fn ask(&self, question: &Question, timeout: Duration) -> Approval {
        if self.modern {
            return self.ask_across_requests(question, timeout);
        }
        if !crate::sync::lock(&self.peer.client).elicitation_form {
            return Approval::Unavailable(NO_ELICITATION.into());
        }
        match self
            .peer
            .request("elicitation/create", form(question), timeout, &self.cancel)
        {
            Ok(result) => approval_of(&result),
            Err(approval) => approval,
        }
    }
}

/// An `ElicitResult` read strictly: only `accept` with `approve: true`.
fn approval_of(result: &Value) -> Approval {
    match result["action"].as_str() {
        Some("accept") if result["content"]["approve"] == json!(true) => Approval::Approved,
        Some("cancel") => Approval::Cancelled,
        _ => Approval::Declined,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_an_explicit_approval_approves() {
        for (r, want) in [
            (
                json!({"action": "accept", "content": {"approve": true}}),
                Approval::Approved,
            ),
            (
                json!({"action": "accept", "content": {"approve": "true"}}),
                Approval::Declined,
            ),
            (
                json!({"action": "accept", "content": {}}),
                Approval::Declined,
            ),
            (json!({"action": "decline"}), Approval::Declined),
            (json!({"action": "cancel"}), Approval::Cancelled),
            (json!({}), Approval::Declined),
        ] {
            assert_eq!(approval_of(&r), want, "{r}");
        }
    }

    #[test]
    fn requests_are_bounded_and_end_with_the_session() {
        let (tx, rx) = bounded(64);
        let peer = Arc::new(Peer::new(tx));
        let held: Vec<_> = (0..MAX_SERVER_REQUESTS)
            .map(|_| peer.register().unwrap())
            .collect();
        assert!(matches!(peer.register(), Err(Approval::Unavailable(_))));
        drop(held);
        crate::sync::lock(&peer.waiting).clear();
        let p = peer.clone();
        let asker = std::thread::spawn(move || {
            p.request(
                "x",
                json!({}),
                Duration::from_secs(30),
                &AtomicBool::new(false),
            )
        });
        let _ = rx.recv_timeout(Duration::from_secs(5)).unwrap();
        peer.close();
        assert_eq!(asker.join().unwrap(), Err(Approval::Cancelled));
    }
}
