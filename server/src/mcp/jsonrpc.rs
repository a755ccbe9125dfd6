//! JSON-RPC 2.0 framing: one message per line, ids echoed exactly, the
//! standard error codes.
//!
//! A line is read with a hard ceiling so a client cannot make the server
//! buffer an unbounded request; an over-long line is drained and answered
//! with an error, and the server keeps reading.

use std::io::{self, BufRead};

use serde_json::{json, Map, Value};

/// The line was not JSON.
const PARSE_ERROR: i64 = -32700;
/// JSON, but not a JSON-RPC request (or a batch, which MCP removed).
pub const INVALID_REQUEST: i64 = -32600;
/// No such method.
pub const METHOD_NOT_FOUND: i64 = -32601;
/// The params do not fit the method.
pub const INVALID_PARAMS: i64 = -32602;
/// A bug on our side (a caught panic, a failed serialization).
pub const INTERNAL_ERROR: i64 = -32603;
/// 2026-07-28: the request's protocol version is not one we speak.
pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;

/// The longest request line we accept. Large enough for any honest request
/// (a 16-operation batch is a few KB), small enough that a runaway client
/// cannot make us hold hundreds of megabytes.
pub const MAX_LINE_BYTES: usize = 4 * 1024 * 1024;

/// The longest request id, as JSON (quotes and escapes included), that a
/// request may carry. Every answer echoes the id, so it counts against the
/// response ceiling; a request with a longer id is refused with a null id,
/// as JSON-RPC answers a request whose id cannot be read. (Progress tokens,
/// echoed in every notification, have the same limit.)
pub const MAX_ID_BYTES: usize = 4096;

/// A JSON-RPC error object.
#[derive(Debug, Clone, PartialEq)]
pub struct RpcError {
    /// The JSON-RPC error code (`-32602` for invalid params, ...).
    pub code: i64,
    /// One sentence a person or model can act on.
    pub message: String,
    /// Structured detail (for a tool error, its kind), sent as `data` when present.
    pub data: Option<Value>,
}

impl RpcError {
    /// An error with `code` and `message` and no data.
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        RpcError {
            code,
            message: message.into(),
            data: None,
        }
    }

    /// Adds structured detail, sent as the error's `data`.
    pub fn with_data(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }

    /// An `invalid params` (-32602) error: the arguments were wrong, not the server.
    pub fn invalid_params(message: impl Into<String>) -> Self {
        Self::new(INVALID_PARAMS, message)
    }

    /// The error object as it goes on the wire (`data` left out when absent).
    pub fn to_value(&self) -> Value {
        let mut obj = Map::new();
        obj.insert("code".into(), json!(self.code));
        obj.insert("message".into(), json!(self.message));
        if let Some(data) = &self.data {
            obj.insert("data".into(), data.clone());
        }
        Value::Object(obj)
    }
}

/// One message from the client, classified.
#[derive(Debug, Clone, PartialEq)]
pub enum ClientMessage {
    /// A request: must be answered exactly once (unless cancelled).
    Request {
        /// The request's id, echoed in its answer.
        id: Value,
        /// The method called.
        method: String,
        /// The parameters, if the client sent any.
        params: Option<Value>,
    },
    /// A notification: never answered.
    Notification {
        /// The method notified.
        method: String,
        /// The parameters, if the client sent any.
        params: Option<Value>,
    },
    /// A response to a request of ours (`elicitation/create`): its id and
    /// its result, or its error object.
    Response {
        /// The id of our request it answers.
        id: Value,
        /// `result`, or `error`.
        outcome: Result<Value, Value>,
    },
    /// Not a valid message; answer with this error and this id (null when
    /// the id could not be read).
    Invalid {
        /// The id to answer with (null when it could not be read).
        id: Value,
        /// What was wrong with the message.
        error: RpcError,
    },
}

/// Classifies one line of input.
pub fn parse_message(line: &[u8]) -> ClientMessage {
    let value: Value = match serde_json::from_slice(line) {
        Ok(v) => v,
        Err(e) => {
            return ClientMessage::Invalid {
                id: Value::Null,
                error: RpcError::new(PARSE_ERROR, format!("parse error: {e}")),
            }
        }
    };
    let obj = match value {
        Value::Object(obj) => obj,
        Value::Array(_) => {
            return ClientMessage::Invalid {
                id: Value::Null,
                error: RpcError::new(
                    INVALID_REQUEST,
                    "JSON-RPC batches are not supported (removed in MCP 2025-06-18); send one message per line",
                ),
            }
        }
        _ => {
            return ClientMessage::Invalid {
                id: Value::Null,
                error: RpcError::new(INVALID_REQUEST, "a JSON-RPC message must be an object"),
            }
        }
    };
    let id = obj.get("id").cloned();
    // An id we cannot echo (object, array, bool, null, or too long to fit
    // an answer) makes the message invalid; the error then carries a null
    // id, as JSON-RPC says.
    if let Some(too_long) = id.as_ref().map(id_bytes).filter(|n| *n > MAX_ID_BYTES) {
        return ClientMessage::Invalid {
            id: Value::Null,
            error: RpcError::new(
                INVALID_REQUEST,
                format!(
                    "\"id\" is {too_long} bytes as JSON, over the limit of {MAX_ID_BYTES}: every answer echoes it; use a shorter id"
                ),
            ),
        };
    }
    let id_ok = matches!(id, Some(Value::String(_)) | Some(Value::Number(_)));
    if obj.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return ClientMessage::Invalid {
            id: if id_ok {
                id.unwrap_or(Value::Null)
            } else {
                Value::Null
            },
            error: RpcError::new(INVALID_REQUEST, "\"jsonrpc\" must be \"2.0\""),
        };
    }
    let method = match obj.get("method") {
        Some(Value::String(m)) => m.clone(),
        Some(_) => {
            return ClientMessage::Invalid {
                id: if id_ok {
                    id.unwrap_or(Value::Null)
                } else {
                    Value::Null
                },
                error: RpcError::new(INVALID_REQUEST, "\"method\" must be a string"),
            }
        }
        None => {
            if let Some(result) = obj.get("result") {
                return ClientMessage::Response {
                    id: id.unwrap_or(Value::Null),
                    outcome: Ok(result.clone()),
                };
            }
            if let Some(error) = obj.get("error") {
                return ClientMessage::Response {
                    id: id.unwrap_or(Value::Null),
                    outcome: Err(error.clone()),
                };
            }
            return ClientMessage::Invalid {
                id: if id_ok {
                    id.unwrap_or(Value::Null)
                } else {
                    Value::Null
                },
                error: RpcError::new(INVALID_REQUEST, "missing \"method\""),
            };
        }
    };
    let params = obj.get("params").cloned();
    match id {
        None => ClientMessage::Notification { method, params },
        Some(id) if id_ok => ClientMessage::Request { id, method, params },
        Some(_) => ClientMessage::Invalid {
            id: Value::Null,
            error: RpcError::new(INVALID_REQUEST, "\"id\" must be a string or a number"),
        },
    }
}

/// A success response line (without the newline).
pub fn response_ok(id: &Value, result: Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string()
}

/// An error response line (without the newline).
pub fn response_err(id: &Value, error: &RpcError) -> String {
    json!({"jsonrpc": "2.0", "id": id, "error": error.to_value()}).to_string()
}

/// A notification line (without the newline).
pub fn notification(method: &str, params: Value) -> String {
    json!({"jsonrpc": "2.0", "method": method, "params": params}).to_string()
}

/// The bytes `id` takes when echoed (as JSON).
pub fn id_bytes(id: &Value) -> usize {
    match id {
        Value::String(s) => crate::tools::json_str_len(s) + 2,
        // Numbers are short once parsed (an f64 is at most ~24 bytes).
        other => other.to_string().len(),
    }
}

/// A map key for a request id: `1` and `"1"` are different requests.
pub fn id_key(id: &Value) -> String {
    id.to_string()
}

/// One line read by [`LineReader`].
#[derive(Debug, PartialEq, Eq)]
pub enum Line {
    /// The bytes of a line, without the newline (and without a trailing CR).
    Complete(Vec<u8>),
    /// A line longer than the ceiling; it was read and dropped.
    /// The line's length in bytes.
    TooLong {
        /// How long it was (bytes, newline excluded).
        bytes: usize,
    },
}

/// Reads newline-delimited messages with a ceiling on the line length.
#[derive(Debug)]
pub struct LineReader<R> {
    inner: R,
    max: usize,
}

impl<R: BufRead> LineReader<R> {
    /// Reads `inner`, dropping any line longer than `max` bytes without holding it in memory.
    pub fn new(inner: R, max: usize) -> Self {
        LineReader { inner, max }
    }

    /// The next line, or `None` at end of input. A last line without a
    /// newline still counts.
    pub fn next_line(&mut self) -> io::Result<Option<Line>> {
        let mut buf = Vec::new();
        let mut total = 0usize;
        let mut overflow = false;
        loop {
            let avail = match self.inner.fill_buf() {
                Ok(a) => a,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if avail.is_empty() {
                if total == 0 && buf.is_empty() {
                    return Ok(None);
                }
                return Ok(Some(self.finish(buf, total, overflow)));
            }
            let (chunk_len, done) = match memchr::memchr(b'\n', avail) {
                Some(i) => (i, true),
                None => (avail.len(), false),
            };
            total += chunk_len;
            if !overflow {
                if buf.len() + chunk_len > self.max {
                    overflow = true;
                    buf = Vec::new();
                } else {
                    buf.extend_from_slice(&avail[..chunk_len]);
                }
            }
            self.inner
                .consume(if done { chunk_len + 1 } else { chunk_len });
            if done {
                return Ok(Some(self.finish(buf, total, overflow)));
            }
        }
    }

    fn finish(&self, mut buf: Vec<u8>, total: usize, overflow: bool) -> Line {
        if overflow {
            return Line::TooLong { bytes: total };
        }
        if buf.last() == Some(&b'\r') {
            buf.pop();
        }
        Line::Complete(buf)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_messages() {
        assert!(matches!(
            parse_message(br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#),
            ClientMessage::Request { method, .. } if method == "ping"
        ));
        assert!(matches!(
            parse_message(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#),
            ClientMessage::Notification { .. }
        ));
        assert!(matches!(
            parse_message(br#"{"jsonrpc":"2.0","id":1,"result":{}}"#),
            ClientMessage::Response { .. }
        ));
        match parse_message(b"{not json") {
            ClientMessage::Invalid { id, error } => {
                assert_eq!(id, Value::Null);
                assert_eq!(error.code, PARSE_ERROR);
            }
            other => panic!("{other:?}"),
        }
        match parse_message(br#"[{"jsonrpc":"2.0","id":9,"method":"ping"}]"#) {
            ClientMessage::Invalid { error, .. } => assert_eq!(error.code, INVALID_REQUEST),
            other => panic!("{other:?}"),
        }
        match parse_message(br#"{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}"#) {
            ClientMessage::Invalid { id, error } => {
                assert_eq!(id, Value::Null);
                assert_eq!(error.code, INVALID_REQUEST);
            }
            other => panic!("{other:?}"),
        }
        match parse_message(br#"{"jsonrpc":"1.0","id":"x","method":"ping"}"#) {
            ClientMessage::Invalid { id, error } => {
                assert_eq!(id, json!("x"));
                assert_eq!(error.code, INVALID_REQUEST);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn ids_longer_than_the_limit_are_invalid_with_a_null_id() {
        // 682 C0 controls escape to 4,092 bytes; quotes and 2 more: 4,096.
        let at = format!("{}ab", "\u{1}".repeat(682));
        let over = format!("{at}c");
        assert_eq!(id_bytes(&json!(at)), MAX_ID_BYTES);
        for (id, accepted) in [(at, true), (over, false)] {
            let line = json!({"jsonrpc": "2.0", "id": id, "method": "ping"}).to_string();
            match parse_message(line.as_bytes()) {
                ClientMessage::Request { id: got, .. } if accepted => assert_eq!(got, json!(id)),
                ClientMessage::Invalid { id: got, error } if !accepted => {
                    assert_eq!(got, Value::Null);
                    assert_eq!(error.code, INVALID_REQUEST);
                    assert!(error.message.contains("4097 bytes"), "{}", error.message);
                }
                other => panic!("{other:?}"),
            }
        }
        // Numbers echo as serde_json writes them back: short.
        assert!(id_bytes(&json!(1.5e300)) <= 24);
        let long = format!(
            r#"{{"jsonrpc":"2.0","id":0.{}1,"method":"ping"}}"#,
            "0".repeat(10_000)
        );
        assert!(matches!(
            parse_message(long.as_bytes()),
            ClientMessage::Request { .. }
        ));
    }

    #[test]
    fn reader_caps_long_lines_and_keeps_going() {
        let mut input = Vec::new();
        input.extend_from_slice(b"short\r\n");
        input.extend(std::iter::repeat_n(b'x', 100));
        input.extend_from_slice(b"\nafter\nlast");
        let mut r = LineReader::new(io::BufReader::with_capacity(7, &input[..]), 50);
        assert_eq!(
            r.next_line().unwrap(),
            Some(Line::Complete(b"short".to_vec()))
        );
        assert_eq!(r.next_line().unwrap(), Some(Line::TooLong { bytes: 100 }));
        assert_eq!(
            r.next_line().unwrap(),
            Some(Line::Complete(b"after".to_vec()))
        );
        assert_eq!(
            r.next_line().unwrap(),
            Some(Line::Complete(b"last".to_vec()))
        );
        assert_eq!(r.next_line().unwrap(), None);
    }

    proptest::proptest! {
        #[test]
        fn any_bytes_classify_without_panicking(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..256)) {
            let _ = parse_message(&bytes);
        }

        #[test]
        fn reader_splits_like_split_whatever_the_buffering(
            lines in proptest::collection::vec("[a-z{}\\\" ]{0,40}", 0..20),
            cap in 1usize..64,
        ) {
            let input = lines.iter().map(|l| format!("{l}\n")).collect::<String>();
            let mut r = LineReader::new(io::BufReader::with_capacity(cap, input.as_bytes()), 1 << 20);
            let mut got = Vec::new();
            while let Some(line) = r.next_line().unwrap() {
                match line {
                    Line::Complete(b) => got.push(String::from_utf8(b).unwrap()),
                    Line::TooLong { .. } => panic!("no line is too long here"),
                }
            }
            proptest::prop_assert_eq!(got, lines);
        }
    }
}
