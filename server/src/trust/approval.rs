//! An approval across requests, for the 2026-07-28 era, where a call
//! cannot be held open while a person answers: the server answers with an
//! input request and a `requestState` bound to that one call; the client
//! asks the person and sends the call again with the answer and the state.
//!
//! What must hold: a state is good only for the tool and arguments it was
//! made for (an HMAC under this process's cursor key), only until it
//! expires, and only once (spent states are remembered, bounded); anything
//! else is refused, never run.

use std::collections::VecDeque;
use std::sync::{Mutex, OnceLock};

use serde_json::Value;

use crate::tools::cursor_key;

/// Spent states remembered (each expires within the ask timeout anyway).
const MAX_SPENT: usize = 4096;

/// The state for `tool` with `args`, good until `expires_ms`.
pub fn state_for(tool: &str, args: &Value, expires_ms: u64) -> String {
    let nonce = crate::sync::nonce();
    let head = format!("v1.{expires_ms}.{nonce}");
    let tag = cursor_key::tag(body(&head, tool, args).as_bytes());
    let hex: String = tag.iter().map(|b| format!("{b:02x}")).collect();
    format!("{head}.{hex}")
}

fn body(head: &str, tool: &str, args: &Value) -> String {
    format!("{head}\0{tool}\0{args}")
}

/// Checks `state` against the call it comes with.
pub fn check(state: &str, tool: &str, args: &Value, now_ms: u64) -> Result<(), String> {
    let bad = || "the approval's requestState is not one this server made for this call".to_owned();
    let (head, hex) = state.rsplit_once('.').ok_or_else(bad)?;
    let tag: Vec<u8> = (0..hex.len() / 2)
        .map(|i| {
            hex.get(2 * i..2 * i + 2)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
        })
        .collect::<Option<_>>()
        .ok_or_else(bad)?;
    if hex.len() % 2 != 0 || !cursor_key::verify(body(head, tool, args).as_bytes(), &tag) {
        return Err(bad());
    }
    let expires: u64 = head
        .split('.')
        .nth(1)
        .and_then(|e| e.parse().ok())
        .ok_or_else(bad)?;
    if now_ms > expires {
        return Err("the approval came after its time ran out".into());
    }
    Ok(())
}

/// Marks `state` spent in this process; false when it already was.
pub fn spend(state: &str) -> bool {
    static SPENT: OnceLock<Spent> = OnceLock::new();
    SPENT.get_or_init(Spent::default).spend(state)
}

/// States already used.
#[derive(Debug, Default)]
struct Spent(Mutex<VecDeque<String>>);

impl Spent {
    /// Marks `state` spent; false when it already was.
    pub fn spend(&self, state: &str) -> bool {
        let mut spent = crate::sync::lock(&self.0);
        if spent.iter().any(|s| s == state) {
            return false;
        }
        if spent.len() >= MAX_SPENT {
            spent.pop_front();
        }
        spent.push_back(state.to_owned());
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_state_holds_for_its_call_once_and_in_time() {
        let args = json!({"pane_id": "%1", "text": "deploy"});
        let s = state_for("send_keys", &args, 1000);
        assert!(check(&s, "send_keys", &args, 999).is_ok());
        assert!(check(
            &s,
            "send_keys",
            &json!({"pane_id": "%1", "text": "deploy; rm"}),
            0
        )
        .is_err());
        assert!(check(&s, "paste_text", &args, 0).is_err());
        assert!(check(&s, "send_keys", &args, 1001).is_err());
        assert!(check(&s.replace("v1.1000", "v1.9999"), "send_keys", &args, 0).is_err());
        assert!(check("garbage", "send_keys", &args, 0).is_err());
        let spent = Spent::default();
        assert!(spent.spend(&s) && !spent.spend(&s));
    }
}
