//! Hostile client input: garbage, invalid UTF-8, a 100 MB line, JSON nested
//! 100,000 deep, out-of-range numbers, wrong types, unknown fields,
//! duplicate ids, a flood of 10,000 requests nobody reads, requests right
//! before EOF. Each gets a clear JSON-RPC or tool error (or a bounded
//! refusal); the server never dies, never hangs, stays under a memory
//! ceiling and serves the next request.
//!
//! (serve_protocol.rs already covers the basic error codes and a 10 MB
//! line; these go further.)
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use common::{memory_kb, Serve};
use serde_json::{json, Value};

/// A socket name no server listens on: protocol tests need no tmux.
const NOBODY: &str = "panescan-harden-input-nobody";

/// The memory ceiling (VmHWM) every test here holds `panescan serve` to.
const CEILING_KB: u64 = 96 * 1024;

/// `panescan serve` with raw access to both pipes: bytes that are not
/// UTF-8 in, and no reader draining stdout unless the test reads.
struct Raw {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
}

impl Raw {
    fn spawn() -> Raw {
        let mut child = Command::new(env!("CARGO_BIN_EXE_panescan"))
            .args(["serve", "--socket-name", NOBODY])
            .env_remove("TMUX")
            .env_remove("TMUX_PANE")
            .env_remove("PANESCAN_TIER")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        Raw {
            child,
            stdin,
            stdout,
        }
    }

    fn write(&mut self, bytes: &[u8]) {
        let w = self.stdin.as_mut().unwrap();
        w.write_all(bytes).unwrap();
        w.flush().unwrap();
    }

    /// The next line as JSON (the test fails on a non-JSON line).
    fn read(&mut self) -> Value {
        let mut line = String::new();
        let n = self.stdout.read_line(&mut line).unwrap();
        assert!(n > 0, "panescan closed stdout");
        serde_json::from_str(line.trim_end()).unwrap_or_else(|e| panic!("{e}: {line:?}"))
    }

    fn ping(&mut self, id: i64) {
        self.write(format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"ping\"}}\n").as_bytes());
        let r = self.read();
        assert_eq!(r["id"], json!(id), "{r}");
        assert_eq!(r["result"], json!({}), "{r}");
    }
}

impl Drop for Raw {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn garbage_and_invalid_utf8_lines_get_parse_or_request_errors() {
    let mut s = Raw::spawn();
    let hostile: Vec<(&[u8], i64)> = vec![
        (b"garbage", -32700),
        (b"\xff\xfe\xfd", -32700),
        (b"\x00\x00\x00", -32700),
        (
            b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"p\xffng\"}",
            -32700,
        ),
        (
            b"{\"jsonrpc\":\"2.0\",\"id\":\"\xed\xa0\x80\",\"method\":\"ping\"}",
            -32700,
        ),
        (b"\x1b[2J\x1b]0;title\x07", -32700),
        (b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"", -32700),
        (
            b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}}",
            -32700,
        ),
        (b"\"just a string\"", -32600),
        (b"12345678901234567890123456789", -32600),
        (b"[]", -32600),
        (b"{}", -32600),
        (b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":null}", -32600),
        (b"{\"jsonrpc\":2,\"id\":1,\"method\":\"ping\"}", -32600),
        (
            b"{\"jsonrpc\":\"2.0\",\"id\":[1],\"method\":\"ping\"}",
            -32600,
        ),
        (
            b"{\"jsonrpc\":\"2.0\",\"id\":true,\"method\":\"ping\"}",
            -32600,
        ),
    ];
    for (i, (line, code)) in hostile.iter().enumerate() {
        let mut bytes = line.to_vec();
        bytes.push(b'\n');
        s.write(&bytes);
        let r = s.read();
        assert_eq!(
            r["error"]["code"],
            json!(code),
            "{:?}: {r}",
            String::from_utf8_lossy(line)
        );
        assert!(r["error"]["message"]
            .as_str()
            .is_some_and(|m| !m.is_empty()));
        s.ping(i as i64);
    }
    let (hwm, _) = memory_kb(s.child.id());
    assert!(hwm < CEILING_KB, "VmHWM {hwm} kB");
    eprintln!("garbage: {} hostile lines, VmHWM {hwm} kB", hostile.len());
}

#[test]
fn json_nested_100000_deep_is_refused_without_a_stack_overflow() {
    let mut s = Raw::spawn();
    for (open, close) in [("[", "]"), ("{\"a\":", "}")] {
        // As the whole message, and as the arguments of a tool call.
        let deep = format!("{}1{}", open.repeat(100_000), close.repeat(100_000));
        s.write(format!("{deep}\n").as_bytes());
        let r = s.read();
        assert_eq!(r["error"]["code"], -32700, "{r}");
        let call = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/call\",\"params\":{{\"name\":\"search_panes\",\"arguments\":{{\"pattern\":{deep}}}}}}}\n"
        );
        s.write(call.as_bytes());
        let r = s.read();
        assert_eq!(r["error"]["code"], -32700, "{r}");
        assert!(
            r["error"]["message"]
                .as_str()
                .unwrap()
                .contains("recursion"),
            "{r}"
        );
        s.ping(6);
    }
}

#[test]
fn a_100_megabyte_line_is_dropped_within_the_memory_ceiling() {
    let mut s = Raw::spawn();
    s.ping(1);
    let mut w = s.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        let chunk = vec![b'x'; 1 << 20];
        w.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\",\"params\":{\"x\":\"")
            .unwrap();
        for _ in 0..100 {
            w.write_all(&chunk).unwrap();
        }
        w.write_all(b"\"}}\n").unwrap();
        w.flush().unwrap();
        w
    });
    let r = s.read();
    assert_eq!(r["error"]["code"], -32600, "{r}");
    assert_eq!(r["id"], Value::Null, "{r}");
    let msg = r["error"]["message"].as_str().unwrap();
    assert!(msg.contains("limit") && msg.contains("10485"), "{msg}");
    s.stdin = Some(writer.join().unwrap());
    s.ping(3);
    let (hwm, rss) = memory_kb(s.child.id());
    eprintln!("100 MB line: VmHWM {hwm} kB, VmRSS {rss} kB");
    assert!(hwm < CEILING_KB, "VmHWM {hwm} kB after a 100 MB line");
}

#[test]
fn out_of_range_numbers_wrong_types_and_unknown_fields_are_tool_errors() {
    let (_tmux, mut s) = Serve::with_tmux("harden-input-args");
    s.initialize();
    let cases = [
        ("search_panes", json!({"pattern": "x", "max_matches": -1})),
        (
            "search_panes",
            json!({"pattern": "x", "max_matches": 1e300}),
        ),
        (
            "search_panes",
            json!({"pattern": "x", "max_matches": 18_446_744_073_709_551_615u64 as f64 * 4.0}),
        ),
        (
            "search_panes",
            json!({"pattern": "x", "context_lines": 300}),
        ),
        ("search_panes", json!({"pattern": "x", "context_lines": 11})),
        ("search_panes", json!({"pattern": "x", "limit": -5})),
        (
            "search_panes",
            json!({"pattern": "x", "scrollback_lines": "all"}),
        ),
        ("search_panes", json!({"pattern": 7})),
        ("search_panes", json!({"pattern": ["a"]})),
        ("search_panes", json!({"patterns": []})),
        ("search_panes", json!({"pattern": "x", "regex": "yes"})),
        ("search_panes", json!({"pattern": "x", "pane_ids": "%0"})),
        ("search_panes", json!({"pattern": "x", "pane_ids": ["%-1"]})),
        (
            "search_panes",
            json!({"pattern": "x", "window": "@99999999999999999999"}),
        ),
        ("search_panes", json!({"pattern": "x", "nope": true})),
        ("search_panes", json!({"pattern": "(", "regex": true})),
        (
            "search_panes",
            json!({"pattern": "x{100000}", "regex": true}),
        ),
        ("search_panes", json!({"pattern": "a".repeat(100_000)})),
        (
            "capture_pane",
            json!({"pane_id": "%0", "start": 9_223_372_036_854_775_807i64, "end": -9_223_372_036_854_775_807i64}),
        ),
        ("capture_pane", json!({"pane_id": "%0", "start": 1e40})),
        ("capture_pane", json!({"pane_id": "%0", "max_lines": -1})),
        ("capture_pane", json!({"pane_id": 0})),
        ("capture_pane", json!({"pane_id": null})),
        (
            "capture_since",
            json!({"pane_id": "%0", "cursor": "\u{0}\u{ffff}"}),
        ),
        (
            "wait_for_text",
            json!({"pane_id": "%0", "pattern": "x", "timeout_ms": -1}),
        ),
        ("list_panes", json!({"filters": "x"})),
        ("list_panes", json!({"socket_name": "a/b"})),
        ("list_panes", json!({"socket_name": 5})),
        ("get_tmux_variables", json!({"names": vec!["a"; 100]})),
        ("find_pane_by_position", json!({"x": -1, "y": 1e12})),
        ("call_read_tools_batch", json!({"operations": "x"})),
        (
            "call_read_tools_batch",
            json!({"operations": [{"tool": "search_panes", "arguments": {"pattern": 1}}]}),
        ),
    ];
    let mut tool_errors = 0;
    for (tool, args) in &cases {
        let r = s.request("tools/call", json!({"name": tool, "arguments": args}));
        let message = if let Some(e) = r.get("error") {
            assert!(e["code"].as_i64().unwrap() != -32603, "{tool} {args}: {r}");
            e["message"].as_str().unwrap().to_owned()
        } else {
            let result = &r["result"];
            if result["isError"] == false {
                // Accepted: only when the value was clamped to something
                // sensible; a batch reports a failed operation inside.
                assert!(
                    *tool == "call_read_tools_batch"
                        || *tool == "capture_pane"
                        || *tool == "search_panes",
                    "{tool} {args} accepted: {r}"
                );
                continue;
            }
            tool_errors += 1;
            result["content"][0]["text"].as_str().unwrap().to_owned()
        };
        assert!(
            !message.is_empty() && message.len() < 4096,
            "{tool}: {message}"
        );
    }
    // Almost all of them are refused with words the model can act on.
    assert!(
        tool_errors >= cases.len() - 6,
        "{tool_errors} of {}",
        cases.len()
    );
    let panes = s.call_ok("list_panes", json!({}));
    assert!(panes.to_string().contains("%0"), "{panes}");
    eprintln!(
        "arguments: {} hostile calls, {tool_errors} tool errors",
        cases.len()
    );
}

#[test]
fn duplicate_ids_are_refused_while_in_flight_and_both_calls_end() {
    let (tmux, mut s) = Serve::with_tmux("harden-input-dup");
    s.initialize();
    let pane = tmux
        .run_ok(["display-message", "-p", "#{pane_id}"])
        .unwrap()
        .trim()
        .to_owned();
    // A call that runs for a while, then another with the same id.
    let wait = json!({"jsonrpc": "2.0", "id": 42, "method": "tools/call",
        "params": {"name": "wait_for_text", "arguments":
            {"pane_id": pane, "pattern": "never-printed-here", "timeout_ms": 1500}}});
    s.send(&wait);
    std::thread::sleep(Duration::from_millis(200));
    s.send(&json!({"jsonrpc": "2.0", "id": 42, "method": "tools/call",
        "params": {"name": "list_panes", "arguments": {}}}));
    let first = s.response(&json!(42), Duration::from_secs(5));
    assert_eq!(first["error"]["code"], -32600, "{first}");
    assert!(first["error"]["message"]
        .as_str()
        .unwrap()
        .contains("already in use"));
    let second = s.response(&json!(42), Duration::from_secs(10));
    assert!(second.get("result").is_some(), "{second}");
    // The same id twice for cheap methods: both answered.
    for _ in 0..2 {
        s.send(&json!({"jsonrpc": "2.0", "id": "same", "method": "ping"}));
    }
    for _ in 0..2 {
        let r = s.response(&json!("same"), Duration::from_secs(5));
        assert_eq!(r["result"], json!({}));
    }
    // And the server still serves.
    let r = s.request("ping", json!({}));
    assert_eq!(r["result"], json!({}));
}

#[test]
fn a_flood_of_10000_unread_requests_meets_back_pressure_and_all_are_answered() {
    let mut s = Raw::spawn();
    let pid = s.child.id();
    const N: usize = 10_000;
    let mut w = s.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        for i in 0..N {
            // Every 10th asks for the whole tool list (~40 KB answer).
            let method = if i % 10 == 0 { "tools/list" } else { "ping" };
            let line = format!("{{\"jsonrpc\":\"2.0\",\"id\":{i},\"method\":\"{method}\"}}\n");
            if w.write_all(line.as_bytes()).is_err() {
                return None;
            }
        }
        w.flush().ok()?;
        Some(w)
    });
    // Nobody reads for 2 s: answers must not pile up in the server.
    std::thread::sleep(Duration::from_secs(2));
    let (hwm_unread, _) = memory_kb(pid);
    let started = Instant::now();
    let mut seen = vec![false; N];
    for _ in 0..N {
        let r = s.read();
        let id = r["id"].as_u64().unwrap() as usize;
        assert!(r.get("result").is_some(), "{r}");
        assert!(!seen[id], "id {id} answered twice");
        seen[id] = true;
    }
    assert!(seen.iter().all(|&b| b));
    s.stdin = Some(writer.join().unwrap().expect("writer finished"));
    s.ping(N as i64);
    let (hwm, rss) = memory_kb(pid);
    eprintln!(
        "flood: {N} requests answered in {:?} once read; VmHWM {hwm_unread} kB while unread, {hwm} kB at end, VmRSS {rss} kB",
        started.elapsed()
    );
    assert!(hwm < CEILING_KB, "VmHWM {hwm} kB");
}

#[test]
fn requests_written_just_before_eof_are_answered_then_the_server_exits() {
    let mut s = Raw::spawn();
    let pid = s.child.id();
    // Two requests and a last line without a newline, then EOF.
    s.write(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n");
    s.write(b"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"list_sessions\",\"arguments\":{}}}\n");
    s.write(b"{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"ping\"}");
    s.stdin = None;
    let mut ids = Vec::new();
    for _ in 0..3 {
        let r = s.read();
        ids.push(r["id"].clone());
    }
    ids.sort_by_key(|v| v.as_i64());
    assert_eq!(ids, vec![json!(1), json!(2), json!(3)]);
    let until = Instant::now() + Duration::from_secs(5);
    let status = loop {
        if let Some(st) = s.child.try_wait().unwrap() {
            break st;
        }
        assert!(
            Instant::now() < until,
            "panescan {pid} did not exit after EOF"
        );
        std::thread::sleep(Duration::from_millis(10));
    };
    assert!(status.success(), "{status}");
    let mut rest = String::new();
    let _ = std::io::Read::read_to_string(&mut s.stdout, &mut rest);
    assert!(rest.is_empty(), "output after the last answer: {rest:?}");
}

#[test]
fn a_flood_of_unread_tool_calls_is_bounded_in_threads_and_memory() {
    let mut s = Raw::spawn();
    let pid = s.child.id();
    const N: usize = 3000;
    let mut w = s.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        for i in 0..N {
            let line = format!(
                "{{\"jsonrpc\":\"2.0\",\"id\":{i},\"method\":\"tools/call\",\"params\":{{\"name\":\"get_server_info\",\"arguments\":{{}}}}}}\n"
            );
            if w.write_all(line.as_bytes()).is_err() {
                return None;
            }
        }
        w.flush().ok()?;
        Some(w)
    });
    std::thread::sleep(Duration::from_millis(1500));
    let threads = |pid: u32| -> u64 {
        std::fs::read_to_string(format!("/proc/{pid}/status"))
            .unwrap()
            .lines()
            .find_map(|l| l.strip_prefix("Threads:"))
            .and_then(|v| v.trim().parse().ok())
            .unwrap()
    };
    let busy = threads(pid);
    let (mut results, mut refusals) = (0, 0);
    for _ in 0..N {
        let r = s.read();
        if r.get("result").is_some() {
            results += 1;
        } else {
            let msg = r["error"]["message"].as_str().unwrap();
            assert!(msg.contains("already running"), "{r}");
            refusals += 1;
        }
    }
    s.stdin = Some(writer.join().unwrap().expect("writer finished"));
    s.ping(N as i64);
    let (hwm, _) = memory_kb(pid);
    eprintln!("tool-call flood: {N} calls, {results} answered, {refusals} refused; {busy} threads while unread; VmHWM {hwm} kB");
    assert!(busy < 2 * 64 + 32, "{busy} threads while nobody reads");
    assert!(results >= 64, "{results}");
    assert!(hwm < CEILING_KB, "VmHWM {hwm} kB");
}
