//! Response lines: the bytes `serve` writes for each answer, built in one
//! place so that each is measured as written (JSON escaping, the echoed id
//! and the era's fields included) and none is longer than the response
//! ceiling.
//!
//! A tool result arrives already encoded ([`ToolOutput`]: the registry cut
//! it to [`Responses::room_for_result`]) and is spliced into its line, not
//! encoded again. What the client sends back to itself is bounded before it
//! gets here: ids where they are read ([`jsonrpc::MAX_ID_BYTES`]), error
//! messages (which may quote a method, a tool or an argument name) here, to
//! [`MAX_MESSAGE_BYTES`]. So an error line always fits, and it is what a
//! line that would not fit becomes.

use serde_json::{json, Value};

use super::jsonrpc::{self, RpcError, INTERNAL_ERROR};
use super::protocol::{self, Era};
use crate::tools::registry::ToolOutput;

/// Error messages (JSON-RPC errors and tool errors) are clipped to this
/// many bytes: they may quote what the client sent, which has no bound of
/// its own short of the request line.
const MAX_MESSAGE_BYTES: usize = 4096;

/// Builds every response line within one ceiling.
#[derive(Debug, Clone, Copy)]
pub struct Responses {
    ceiling: usize,
}

impl Responses {
    /// `ceiling`: the longest line, in bytes, its newline aside.
    pub fn new(ceiling: usize) -> Responses {
        Responses { ceiling }
    }

    /// Bytes a tool's result (its encoded structured content plus its
    /// encoded text) may take in the answer to request `id`: the ceiling
    /// less everything else on the line.
    pub fn room_for_result(&self, id: &Value, era: &Era) -> usize {
        let empty = tool_line(id, era, "", Some("")).len();
        self.ceiling.saturating_sub(empty)
    }

    /// The answer carrying a tool's result.
    pub fn tool_result(&self, id: &Value, era: &Era, out: &ToolOutput) -> String {
        let line = tool_line(id, era, &out.text, Some(&out.structured));
        if line.len() <= self.ceiling {
            return line;
        }
        // The registry fits every result to the room above; this is the
        // last line of defence, never a line over the ceiling.
        self.tool_error(
            id,
            era,
            &format!(
                "the result would make a {}-byte response, over the {}-byte ceiling; narrow the request",
                line.len(),
                self.ceiling
            ),
        )
    }

    /// The answer of a tool that failed (`isError: true`).
    pub fn tool_error(&self, id: &Value, era: &Era, message: &str) -> String {
        let text = Value::String(clip(message).into_owned()).to_string();
        tool_line(id, era, &text, None)
    }

    /// The answer to a method other than `tools/call`.
    pub fn result(&self, id: &Value, era: &Era, result: Value) -> String {
        let line = jsonrpc::response_ok(id, protocol::finish_result(era, result));
        if line.len() <= self.ceiling {
            return line;
        }
        self.error(
            id,
            &RpcError::new(
                INTERNAL_ERROR,
                format!(
                    "the answer would be {} bytes, over the {}-byte response ceiling",
                    line.len(),
                    self.ceiling
                ),
            ),
        )
    }

    /// A JSON-RPC error answer. Its message is clipped and data that is
    /// not small dropped, so it always fits.
    pub fn error(&self, id: &Value, error: &RpcError) -> String {
        let mut error = error.clone();
        error.message = clip(&error.message).into_owned();
        if error
            .data
            .as_ref()
            .is_some_and(|d| d.to_string().len() > MAX_MESSAGE_BYTES)
        {
            error.data = None;
        }
        jsonrpc::response_err(id, &error)
    }
}

/// A `tools/call` answer from its encoded parts: `text` is a JSON string,
/// `structured` a JSON value (`None`: a tool error, which has none). The
/// fields are written by hand so that a large result is copied, not parsed
/// or encoded again.
fn tool_line(id: &Value, era: &Era, text: &str, structured: Option<&str>) -> String {
    let id = id.to_string();
    let era_fields = era_fields(era);
    let mut line = String::with_capacity(
        128 + id.len() + era_fields.len() + text.len() + structured.map_or(0, str::len),
    );
    line.push_str(r#"{"jsonrpc":"2.0","id":"#);
    line.push_str(&id);
    line.push_str(r#","result":{"content":[{"type":"text","text":"#);
    line.push_str(text);
    line.push_str("}]");
    match structured {
        Some(structured) => {
            line.push_str(r#","structuredContent":"#);
            line.push_str(structured);
            line.push_str(r#","isError":false"#);
        }
        None => line.push_str(r#","isError":true"#),
    }
    line.push_str(&era_fields);
    line.push_str("}}");
    line
}

/// What the era adds to every result (`,"_meta":...,"resultType":...` in
/// the 2026-07-28 era, nothing before), as the members of an object.
fn era_fields(era: &Era) -> String {
    let stamped = protocol::finish_result(era, json!({})).to_string();
    let members = stamped
        .strip_prefix('{')
        .and_then(|s| s.strip_suffix('}'))
        .unwrap_or_default();
    if members.is_empty() {
        String::new()
    } else {
        format!(",{members}")
    }
}

/// `message`, clipped to [`MAX_MESSAGE_BYTES`] on a char boundary and
/// marked when it was.
fn clip(message: &str) -> std::borrow::Cow<'_, str> {
    if message.len() <= MAX_MESSAGE_BYTES {
        return message.into();
    }
    let mut end = MAX_MESSAGE_BYTES;
    while !message.is_char_boundary(end) {
        end -= 1;
    }
    format!(
        "{}… ({} more bytes not shown)",
        &message[..end],
        message.len() - end
    )
    .into()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn modern() -> Era {
        Era::Modern {
            version: protocol::MODERN_VERSIONS[0].to_owned(),
        }
    }

    fn output(text: &str, structured: Value) -> ToolOutput {
        ToolOutput {
            structured: structured.to_string(),
            text: Value::String(text.to_owned()).to_string(),
        }
    }

    #[test]
    fn a_tool_line_is_the_json_it_would_encode_to_and_its_room_is_exact() {
        let out = output("a \"quoted\" \u{1} line\n", json!({"text": "\\ \u{1b}[0m"}));
        for era in [Era::Handshake, modern()] {
            for id in [json!(7), json!("\u{1}id\"")] {
                let line = Responses::new(1_000_000).tool_result(&id, &era, &out);
                let parsed: Value = serde_json::from_str(&line).unwrap();
                let want = json!({"jsonrpc": "2.0", "id": id, "result": protocol::finish_result(&era, json!({
                    "content": [{"type": "text", "text": "a \"quoted\" \u{1} line\n"}],
                    "structuredContent": {"text": "\\ \u{1b}[0m"},
                    "isError": false,
                }))});
                assert_eq!(parsed, want);
                assert_eq!(line.len(), want.to_string().len());
                let room = Responses::new(1_000_000).room_for_result(&id, &era);
                assert_eq!(line.len(), 1_000_000 - room + out.encoded_len());
            }
        }
    }

    #[test]
    fn a_line_over_the_ceiling_becomes_a_tool_error_that_fits() {
        let out = output(&"\"".repeat(600), json!({}));
        let responses = Responses::new(1000);
        let line = responses.tool_result(&json!(1), &Era::Handshake, &out);
        assert!(line.len() <= 1000, "{}", line.len());
        let parsed: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(parsed["result"]["isError"], true);
        let text = parsed["result"]["content"][0]["text"].as_str().unwrap();
        assert!(text.contains("over the 1000-byte ceiling"), "{text}");
    }

    #[test]
    fn messages_are_clipped_and_large_data_dropped() {
        let responses = Responses::new(1_000_000);
        let name = "\u{1}".repeat(200_000);
        let error = RpcError::invalid_params(format!("unknown tool {name}"))
            .with_data(json!({"requested": name}));
        let line = responses.error(&json!(1), &error);
        assert!(line.len() < 6 * MAX_MESSAGE_BYTES + 200, "{}", line.len());
        let parsed: Value = serde_json::from_str(&line).unwrap();
        assert!(parsed["error"].get("data").is_none());
        let message = parsed["error"]["message"].as_str().unwrap();
        let cut = 13 + 200_000 - MAX_MESSAGE_BYTES;
        assert!(
            message.ends_with(&format!("({cut} more bytes not shown)")),
            "{message}"
        );
        let small = RpcError::invalid_params("short").with_data(json!({"a": 1}));
        let parsed: Value = serde_json::from_str(&responses.error(&json!(1), &small)).unwrap();
        assert_eq!(parsed["error"]["data"], json!({"a": 1}));
        let line = responses.tool_error(&json!(1), &Era::Handshake, &name);
        assert!(line.len() < 6 * MAX_MESSAGE_BYTES + 200, "{}", line.len());
        // Three-byte characters: the cut falls on a character boundary.
        let euros = "\u{20ac}".repeat(3000);
        let clipped = clip(&euros);
        assert!(clipped.starts_with(&"\u{20ac}".repeat(1365)));
        assert!(
            clipped.ends_with("… (4905 more bytes not shown)"),
            "{clipped}"
        );
    }
}
