//! Checks shared by the `jsonrpc` and `framing` fuzz targets and their
//! corpus-replay test (`server/tests/repo/harden_fuzz_corpus.rs`).
//!
//! Not part of the stable API. Each check takes arbitrary bytes, runs them
//! through the real code and returns `Err` with a description when an
//! invariant breaks (a panic is a finding too: libFuzzer aborts on it).

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::config::ServeConfig;
use crate::mcp::dispatch::{Dispatcher, Outgoing};
use crate::mcp::jsonrpc::{self, ClientMessage, Line, LineReader};
use crate::tmux::framing::{Event, Parser, RawReply};
use crate::tmux::notification;
use crate::tmux::ServerSpec;
use crate::tools::registry::Registry;

// ---------------------------------------------------------------- jsonrpc

/// The line ceiling used by the JSON-RPC check (small, so over-long lines
/// are reachable by the fuzzer).
pub const FUZZ_LINE_BYTES: usize = 4096;

/// What one JSON-RPC input did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct JsonRpcStats {
    /// Lines read.
    pub lines: usize,
    /// Responses written (each checked against the line that caused it).
    pub responses: usize,
    /// Of those, JSON-RPC errors.
    pub errors: usize,
    /// Tool calls that ran (to a result or a tool error).
    pub tool_calls: usize,
}

/// A socket that does not exist: tool calls fail fast with "no server" and
/// never reach a real tmux.
fn nowhere() -> PathBuf {
    PathBuf::from("/nonexistent/panescan-fuzz/no-such-socket")
}

/// Removes `socket_name` / `socket_path` keys at any depth, so no fuzzed
/// request can point a tool at a real tmux server. Returns whether any was
/// removed.
fn strip_sockets(v: &mut Value) -> bool {
    match v {
        Value::Object(map) => {
            let mut hit = map.remove("socket_name").is_some();
            hit |= map.remove("socket_path").is_some();
            for child in map.values_mut() {
                hit |= strip_sockets(child);
            }
            hit
        }
        Value::Array(items) => items.iter_mut().fold(false, |h, c| strip_sockets(c) | h),
        _ => false,
    }
}

/// Runs `data` as client input through the line reader and the real
/// dispatcher (readonly tier, a tmux server that does not exist), one line
/// at a time, and checks that every request, invalid message and
/// over-long line gets exactly one well-formed answer with the right id,
/// that notifications and responses get none, and that nothing hangs.
pub fn jsonrpc(data: &[u8]) -> Result<JsonRpcStats, String> {
    let (registry, config) = shared_server();
    let (tx, rx) = crossbeam_channel::unbounded::<Outgoing>();
    let dispatcher = Arc::new(Dispatcher::new(registry.clone(), config.clone(), tx));
    let mut reader = LineReader::new(data, FUZZ_LINE_BYTES);
    let mut stats = JsonRpcStats::default();
    let mut expected_ids: Vec<Value> = Vec::new();
    loop {
        let line = match reader.next_line() {
            Ok(Some(l)) => without_sockets(l),
            Ok(None) => break,
            Err(e) => return Err(format!("reading from a slice failed: {e}")),
        };
        stats.lines += 1;
        let expect = expected_answer(&line);
        dispatcher.handle_line(line);
        wait_for_calls(&dispatcher)?;
        if let Some(id) = expect {
            expected_ids.push(id);
        }
    }
    // Everything sent so far, in order.
    let mut responses = Vec::new();
    while let Ok(msg) = rx.try_recv() {
        let Outgoing::Line(text) = msg else { continue };
        if let Some(v) = check_output(&text, &mut stats)? {
            responses.push(v);
        }
    }
    stats.responses = responses.len();
    check_ids(&responses, &expected_ids)?;
    Ok(stats)
}

/// The registry and configuration every input runs against, built once:
/// the registry generates every tool's schemas.
fn shared_server() -> &'static (Arc<Registry>, Arc<ServeConfig>) {
    static SHARED: OnceLock<(Arc<Registry>, Arc<ServeConfig>)> = OnceLock::new();
    SHARED.get_or_init(|| {
        let config = ServeConfig {
            server: ServerSpec {
                socket_path: Some(nowhere()),
                ..ServerSpec::default()
            },
            ..ServeConfig::default()
        };
        (Arc::new(Registry::for_config(&config)), Arc::new(config))
    })
}

/// A line with its socket arguments removed, when it is JSON.
fn without_sockets(line: Line) -> Line {
    match line {
        Line::Complete(bytes) => match serde_json::from_slice::<Value>(&bytes) {
            Ok(mut v) => {
                if strip_sockets(&mut v) {
                    Line::Complete(v.to_string().into_bytes())
                } else {
                    Line::Complete(bytes)
                }
            }
            Err(_) => Line::Complete(bytes),
        },
        other => other,
    }
}

/// The id a line's answer must carry; none when it needs no answer.
fn expected_answer(line: &Line) -> Option<Value> {
    match line {
        Line::TooLong { .. } => Some(Value::Null),
        Line::Complete(b) if b.iter().all(u8::is_ascii_whitespace) => None,
        Line::Complete(b) => match jsonrpc::parse_message(b) {
            ClientMessage::Request { id, .. } | ClientMessage::Invalid { id, .. } => Some(id),
            ClientMessage::Notification { .. } | ClientMessage::Response { .. } => None,
        },
    }
}

/// One line at a time: waits for any tool call the line started.
fn wait_for_calls(dispatcher: &Dispatcher) -> Result<(), String> {
    let until = Instant::now() + Duration::from_secs(20);
    while dispatcher.active_calls() > 0 {
        if Instant::now() > until {
            return Err("a tool call did not end within 20 s".into());
        }
        std::thread::sleep(Duration::from_micros(200));
    }
    Ok(())
}

/// Checks one output line: a JSON-RPC 2.0 progress notification (none
/// returned) or a response with exactly one of result/error (returned).
fn check_output(text: &str, stats: &mut JsonRpcStats) -> Result<Option<Value>, String> {
    if text.contains('\n') {
        return Err(format!("an output line holds a newline: {text:?}"));
    }
    let v: Value =
        serde_json::from_str(text).map_err(|e| format!("output is not JSON ({e}): {text}"))?;
    if v.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err(format!("output without jsonrpc 2.0: {text}"));
    }
    if v.get("method").is_some() {
        if v["method"] != "notifications/progress" {
            return Err(format!("unexpected notification: {text}"));
        }
        return Ok(None);
    }
    let has_result = v.get("result").is_some();
    let has_error = v.get("error").is_some();
    if has_result == has_error {
        return Err(format!(
            "a response needs exactly one of result/error: {text}"
        ));
    }
    if has_error {
        let code = v["error"]["code"].as_i64().unwrap_or(0);
        if code == jsonrpc::INTERNAL_ERROR
            && v["error"]["message"]
                .as_str()
                .is_some_and(|m| m.starts_with("internal error"))
        {
            return Err(format!("a panic was caught: {text}"));
        }
        if !v["error"]["message"].is_string() {
            return Err(format!("error without a message: {text}"));
        }
        stats.errors += 1;
    } else if v["result"].get("isError").is_some() {
        stats.tool_calls += 1;
    }
    Ok(Some(v))
}

/// One response per line that needs one, in order, each with its line's id.
fn check_ids(responses: &[Value], expected_ids: &[Value]) -> Result<(), String> {
    if responses.len() != expected_ids.len() {
        return Err(format!(
            "{} responses for {} lines that need one (ids {:?})",
            responses.len(),
            expected_ids.len(),
            expected_ids
        ));
    }
    for (r, id) in responses.iter().zip(expected_ids) {
        // A duplicate id of a call is answered with that id too.
        if r.get("id") != Some(id) {
            return Err(format!("response {r} answers id {id}"));
        }
    }
    Ok(())
}

// ---------------------------------------------------------------- framing

/// What one framing input did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FramingStats {
    /// Replies parsed from the raw bytes (phase 1).
    pub raw_replies: usize,
    /// Replies built from the input and parsed back exactly (phase 2).
    pub framed_replies: usize,
    /// Content lines that looked like control-mode framing (`%...`).
    pub forged_lines: usize,
    /// Notification lines handed out and parsed (both phases).
    pub notifications: usize,
}

/// The nonce of request `i` (fixed, so inputs replay the same way).
fn fuzz_nonce(i: usize) -> Vec<u8> {
    let x = 0x9e37_79b9_7f4a_7c15_f39c_c060_5ced_c835u128.wrapping_mul(i as u128 + 1);
    format!("{x:032x}").into_bytes()
}

/// Feeds `stream` to `parser` in pieces whose sizes cycle through `sizes`.
fn feed_chunked(parser: &mut Parser, stream: &[u8], sizes: &[u8], events: &mut Vec<Event>) {
    let mut at = 0;
    let mut k = 0;
    while at < stream.len() {
        let size = sizes
            .get(k % sizes.len().max(1))
            .map_or(64, |&s| usize::from(s) + 1);
        let end = (at + size).min(stream.len());
        parser.feed(&stream[at..end], events);
        at = end;
        k += 1;
    }
}

/// Two checks on the control-mode parser:
///
/// 1. the raw bytes, fed in pieces to a parser expecting three replies,
///    never produce more replies than requested;
/// 2. the input split at `0xFF` bytes gives chunk sizes (first record) and
///    reply contents (the others, which may hold forged `%begin`/`%end`/
///    `%error` lines, invalid UTF-8, NUL, CR...); framed as tmux frames them,
///    with a nonce block after each and notifications between, the parser
///    must return exactly those replies, in order, whatever the chunking.
pub fn framing(data: &[u8]) -> Result<FramingStats, String> {
    let mut stats = FramingStats::default();

    raw_bytes(data, &mut stats)?;

    // Phase 2: framed replies with hostile content.
    let mut records = data.split(|&b| b == 0xFF);
    let sizes: Vec<u8> = records.next().unwrap_or_default().to_vec();
    let contents: Vec<&[u8]> = records.take(64).collect();
    let nonces: Vec<Vec<u8>> = (0..contents.len()).map(fuzz_nonce).collect();
    let mut stream =
        b"%begin 1700000000 1 0\n%end 1700000000 1 0\n%session-changed $0 main\n".to_vec();
    let mut expected = vec![Event::Notification(b"%session-changed $0 main".to_vec())];
    let mut cmd = 2u64;
    for (i, content) in contents.iter().enumerate() {
        let (flags, body) = content
            .split_first()
            .map_or((0u8, &[][..]), |(f, b)| (*f, b));
        let lines: Vec<&[u8]> = if body.is_empty() {
            Vec::new()
        } else {
            body.split(|&b| b == b'\n').collect()
        };
        // A pane cannot print a nonce it has never seen.
        if lines.iter().any(|l| nonces.iter().any(|n| n == l)) {
            return Ok(stats);
        }
        stats.forged_lines += lines.iter().filter(|l| l.starts_with(b"%")).count();
        let mut output = Vec::new();
        for l in &lines {
            output.extend_from_slice(l);
            output.push(b'\n');
        }
        let ok = flags & 1 == 0;
        let t = 1_700_000_000 + u64::from(flags >> 4);
        stream.extend_from_slice(format!("%begin {t} {cmd} 1\n").as_bytes());
        stream.extend_from_slice(&output);
        let close = if ok { "%end" } else { "%error" };
        stream.extend_from_slice(format!("{close} {t} {cmd} 1\n").as_bytes());
        if flags & 2 != 0 {
            stream.extend_from_slice(b"%window-add @7\n");
        }
        if flags & 4 != 0 {
            // A block that is not ours (a hook's), between two of ours.
            stream
                .extend_from_slice(format!("%begin {t} 9{cmd} 0\n%end {t} 9{cmd} 0\n").as_bytes());
        }
        stream.extend_from_slice(format!("%begin {t} {} 1\n", cmd + 1).as_bytes());
        stream.extend_from_slice(&nonces[i]);
        stream.extend_from_slice(format!("\n%end {t} {} 1\n", cmd + 1).as_bytes());
        if flags & 8 != 0 {
            stream.extend_from_slice(b"%sessions-changed\n");
        }
        cmd += 2;
        // Only the real notifications come out: one tmux wrote between the
        // reply's end and its nonce block (shown by the nonce to be
        // outside the reply's content) before the reply, so a waiter woken
        // by the reply finds it already handed out; one after the nonce
        // block after it.
        if flags & 2 != 0 {
            expected.push(Event::Notification(b"%window-add @7".to_vec()));
        }
        expected.push(Event::Reply(RawReply { output, ok }));
        if flags & 8 != 0 {
            expected.push(Event::Notification(b"%sessions-changed".to_vec()));
        }
    }
    let mut parser = Parser::new();
    for n in &nonces {
        parser.expect(n);
    }
    let mut events = Vec::new();
    feed_chunked(&mut parser, &stream, &sizes, &mut events);
    if events != expected {
        let first = events
            .iter()
            .zip(&expected)
            .position(|(a, b)| a != b)
            .unwrap_or(events.len().min(expected.len()));
        return Err(format!(
            "parsed {} events for {} replies; first difference at {first}: got {:?}, want {:?}",
            events.len(),
            expected.len(),
            events.get(first),
            expected.get(first)
        ));
    }
    if parser.pending() != 0 {
        return Err(format!("{} requests left pending", parser.pending()));
    }
    stats.framed_replies = expected
        .iter()
        .filter(|e| matches!(e, Event::Reply(_)))
        .count();
    stats.notifications += parse_notifications(&events);
    Ok(stats)
}

/// Phase 1 of [`framing`]: anything at all, fed in pieces to a parser
/// expecting three replies, never gives more; every notification it hands
/// out parses.
fn raw_bytes(data: &[u8], stats: &mut FramingStats) -> Result<(), String> {
    let mut parser = Parser::new();
    for i in 0..3 {
        parser.expect(&fuzz_nonce(i));
    }
    let mut events = Vec::new();
    let sizes = data.get(..4).unwrap_or(&[7]);
    feed_chunked(&mut parser, data, sizes, &mut events);
    let replies = events
        .iter()
        .filter(|e| matches!(e, Event::Reply(_)))
        .count();
    if replies + parser.pending() != 3 {
        return Err(format!(
            "{replies} replies and {} pending for 3 requests",
            parser.pending()
        ));
    }
    stats.raw_replies = replies;
    stats.notifications = parse_notifications(&events);
    Ok(())
}

/// Parses every notification among `events` and unescapes any output (a
/// panic here is a finding); returns how many there were.
fn parse_notifications(events: &[Event]) -> usize {
    let mut scratch = Vec::new();
    let mut n = 0;
    for e in events {
        if let Event::Notification(line) = e {
            n += 1;
            if let notification::Notification::Output { escaped, .. } = notification::parse(line) {
                scratch.clear();
                notification::unescape(escaped, &mut scratch);
            }
        }
    }
    n
}
