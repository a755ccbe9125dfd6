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

use crate::common;

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use common::{memory_kb, window_showing, Serve};
use panescan::testing::private_server::PrivateServer;
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
            .env("PANESCAN_NO_DAEMON", "1")
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

/// Calls with hostile arguments, one a line: tool | arguments | what its
/// refusal must name (the value or the rule it broke, so a model can act
/// on it).
const HOSTILE_ARGUMENTS: &str = r#"
search_panes | {"pattern": "x", "max_matches": -1} | `-1`
search_panes | {"pattern": "x", "max_matches": 1e300} | 1e+300
search_panes | {"pattern": "x", "max_matches": 7.378697629483821e19} | e+19
search_panes | {"pattern": "x", "context_lines": 300} | `300`
search_panes | {"pattern": "x", "context_lines": 11} | must be 0 to 10, got 11
search_panes | {"pattern": "x", "limit": -5} | `-5`
search_panes | {"pattern": "x", "scrollback_lines": "all"} | "all"
search_panes | {"pattern": 7} | `7`
search_panes | {"pattern": ["a"]} | sequence
search_panes | {"patterns": []} | 1 to 64 patterns, got 0
search_panes | {"pattern": "x", "regex": "yes"} | "yes"
search_panes | {"pattern": "x", "pane_ids": "%0"} | "%0"
search_panes | {"pattern": "x", "pane_ids": ["%-1"]} | "%-1" must look like %N
search_panes | {"pattern": "x", "window": "@99999999999999999999"} | must look like @N
search_panes | {"pattern": "x", "nope": true} | unknown argument nope
search_panes | {"pattern": "(", "regex": true} | at byte 0
search_panes | {"pattern": "x{100000}", "regex": true} | {100000} exceeds the limit
search_panes | {"pattern": "(a{1000}){1000}", "regex": true} | would need more than the limit of 4 MiB
search_panes | {"patterns": ["ok", "(a{1000}){1000}"], "regex": true, "socket_name": "panescan-no-such-server"} | pattern 1: invalid regular expression at byte 0: the compiled pattern would need more
capture_pane | {"pane_id": "%0", "start": 9223372036854775807, "end": -9223372036854775807} | is after end
capture_pane | {"pane_id": "%0", "start": 1e40} | 1e+40
capture_pane | {"pane_id": "%0", "max_lines": -1} | `-1`
capture_pane | {"pane_id": "%0", "max_lines": 0} | max_lines must be at least 1
capture_pane | {"pane_id": 0} | `0`
capture_pane | {"pane_id": null} | null
capture_since | {"pane_id": "%0", "cursor": "\u0000\uffff"} | is not a capture_since cursor
wait_for_text | {"pane_id": "%0", "pattern": "x", "timeout_ms": -1} | `-1`
list_panes | {"filters": "x"} | filters must be an object
list_panes | {"socket_name": "a/b"} | socket_name "a/b" refused: it contains `/`
list_panes | {"socket_name": 5} | `5`
find_pane_by_position | {"x": -1, "y": 1e12} | unknown arguments x, y
call_read_tools_batch | {"operations": "x"} | "x"
"#;

/// [`HOSTILE_ARGUMENTS`], and the cases too long to write out.
fn hostile_arguments() -> Vec<(String, Value, String)> {
    let mut cases: Vec<(String, Value, String)> = HOSTILE_ARGUMENTS
        .lines()
        .filter(|l| !l.is_empty())
        .map(|l| {
            let parts: Vec<&str> = l.split(" | ").collect();
            assert_eq!(parts.len(), 3, "{l}");
            let args = serde_json::from_str(parts[1]).unwrap();
            (parts[0].to_owned(), args, parts[2].to_owned())
        })
        .collect();
    cases.push((
        "search_panes".into(),
        json!({"pattern": "a".repeat(100_000)}),
        "over the limit of 4,096 bytes".into(),
    ));
    cases.push((
        "get_tmux_variables".into(),
        json!({"names": vec!["a"; 100]}),
        "100".into(),
    ));
    cases
}

#[test]
fn out_of_range_numbers_wrong_types_and_unknown_fields_are_tool_errors() {
    let (_tmux, mut s) = Serve::with_tmux("harden-input-args");
    s.initialize();
    let cases = hostile_arguments();
    for (tool, args, names) in &cases {
        let r = s.request("tools/call", json!({"name": tool, "arguments": args}));
        assert!(r.get("error").is_none(), "{tool} {args}: {r}");
        assert_eq!(r["result"]["isError"], true, "{tool} {args} accepted: {r}");
        let message = r["result"]["content"][0]["text"].as_str().unwrap();
        assert!(
            message.contains(names) && message.len() < 4096,
            "{tool} {args}: the refusal does not name {names:?}: {message}"
        );
    }
    // A batch is itself a success that reports its failed operation.
    let v = s.call_ok(
        "call_read_tools_batch",
        json!({"operations": [{"tool": "search_panes", "arguments": {"pattern": 1}}]}),
    );
    assert_eq!(
        (&v["succeeded"], &v["failed"]),
        (&json!(0), &json!(1)),
        "{v}"
    );
    let error = v["results"][0]["error"].as_str().unwrap();
    assert!(error.contains("`1`, expected a string"), "{v}");
    let panes = s.call_ok("list_panes", json!({}));
    assert!(panes.to_string().contains("%0"), "{panes}");
    eprintln!("arguments: {} hostile calls, all refused", cases.len() + 1);
}

#[test]
fn values_past_a_ceiling_are_refused_and_ranges_clamped_to_what_exists() {
    let (tmux, mut s) = Serve::with_tmux("harden-input-clamp");
    tmux.run_ok(["set-option", "-g", "history-limit", "20000"])
        .unwrap();
    // 12,000 short lines (more than the 10,000-line capture ceiling), and
    // 3,000 lines of 101 bytes (more than the 262,144-byte one).
    let short = filled_pane(&tmux, "seq 1 12000");
    let long = filled_pane(&tmux, "seq -f '%0100g' 3000");
    let history = |pane: &str| -> i64 {
        tmux.run_ok(["display-message", "-p", "-t", pane, "#{history_size}"])
            .unwrap()
            .trim()
            .parse()
            .unwrap()
    };
    s.initialize();
    let far = 9_223_372_036_854_775_807i64;

    // A range past both ends: clamped to the history and the screen.
    let all = history(&short) + 24;
    let v = s.call_ok(
        "capture_pane",
        json!({"pane_id": short, "start": -far, "end": far, "max_lines": 5}),
    );
    assert_eq!(v["range_clamped"], true, "{v}");
    assert_eq!(v["total_lines"], all, "{v}");
    assert_eq!(v["effective_end"], 23, "{v}");
    assert_eq!(v["dropped_lines"], all - 5, "{v}");

    // max_lines past its ceiling: an error naming the ceiling (asking for
    // more than a ceiling is never silently served as less); at the
    // ceiling, the newest 10,000 lines.
    let r = s.call(
        "capture_pane",
        json!({"pane_id": short, "start": -far, "max_lines": far}),
    );
    assert_eq!(r["isError"], true, "{r}");
    let text = r["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("at most 10000"), "{text}");
    let v = s.call_ok(
        "capture_pane",
        json!({"pane_id": short, "start": -far, "max_lines": 10_000}),
    );
    assert_eq!(v["byte_clamped"], false, "{}", v["returned_bytes"]);
    assert_eq!(v["total_lines"], all);
    assert_eq!(v["dropped_lines"], all - 10_000);
    assert_eq!(v["effective_start"], 23 - 9_999);
    assert_eq!(v["text"].as_str().unwrap().lines().count(), 10_000);

    // max_bytes past its ceiling: an error; at the ceiling, 262,144 bytes,
    // whole lines, the newest.
    let r = s.call(
        "capture_pane",
        json!({"pane_id": long, "start": -far, "max_lines": 10_000, "max_bytes": far}),
    );
    assert_eq!(r["isError"], true, "{r}");
    let text = r["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("at most 262144"), "{text}");
    let v = s.call_ok(
        "capture_pane",
        json!({"pane_id": long, "start": -far, "max_lines": 10_000, "max_bytes": 262_144}),
    );
    assert_eq!(v["byte_clamped"], true, "{}", v["returned_bytes"]);
    let returned = v["returned_bytes"].as_u64().unwrap();
    assert!(
        returned <= 262_144 && returned > 262_144 - 101,
        "{returned}"
    );
    assert_eq!(returned as usize, v["text"].as_str().unwrap().len());

    // scrollback_lines past the operator's ceiling: searched to it, and
    // flagged only if some pane had more history than that.
    let v = s.call_ok(
        "search_panes",
        json!({"pattern": "filled", "scrollback_lines": u64::MAX}),
    );
    assert_eq!(v["effective_scrollback_lines"], 1_000_000, "{v}");
    assert_eq!(v["scrollback_clamped"], false, "{v}");
    assert_eq!(v["total_panes_matched"], 2, "{v}");
}

/// A new window running `command`, then printing `filled`; its pane id once
/// it has.
fn filled_pane(tmux: &PrivateServer, command: &str) -> String {
    let script = format!("{command}; echo filled; exec sleep 100000");
    window_showing(tmux, None, &script, "filled", &[])
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
    // No pause needed: ids are registered as lines are read, in order.
    s.send(&json!({"jsonrpc": "2.0", "id": 42, "method": "tools/call",
        "params": {"name": "list_panes", "arguments": {}}}));
    let first = s.response(&json!(42), Duration::from_secs(5));
    assert_eq!(first["error"]["code"], -32600, "{first}");
    assert!(first["error"]["message"]
        .as_str()
        .unwrap()
        .contains("already in use"));
    let second = s.response(&json!(42), Duration::from_secs(10));
    assert_eq!(
        second["result"]["structuredContent"]["timed_out"], true,
        "{second}"
    );
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
