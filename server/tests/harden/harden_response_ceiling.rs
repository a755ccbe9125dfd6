//! The response ceiling: no line `panescan serve` writes is longer than
//! 1,000,000 bytes, measured on the line as written (JSON escaping and the
//! echoed id included), whatever the pane holds and whatever the client
//! sends as an id.
//!
//! Pane text here is made of what grows under JSON escaping: `"` and `\`
//! (2 bytes each), escape sequences kept with `escapes: true` (ESC is
//! `\u001b`, 6 bytes); client text of C0 controls (`\x01` is `\u0001`, 6
//! bytes). Each tool is called with a numeric id, a string id at the id
//! limit and in the 2026-07-28 era, so the envelope counts too.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::path::Path;
use std::time::Duration;

use common::{eventually, modern_meta, window_showing, Received, Serve, TempDir, RESPONSE_CEILING};
use panescan::testing::private_server::PrivateServer;
use serde_json::{json, Value};

/// The longest id (as JSON, quotes and escapes included) a request may carry.
const MAX_ID_BYTES: usize = 4096;
/// Generous: captures of 256 KiB on a shared machine.
const CALL_TIMEOUT: Duration = Duration::from_secs(60);

/// A string id whose JSON is exactly `bytes` long, mostly `\u0001`.
fn id_of_json_len(bytes: usize) -> Value {
    let controls = (bytes - 2) / 6;
    let id = format!(
        "{}{}",
        "\u{1}".repeat(controls),
        "a".repeat(bytes - 2 - 6 * controls)
    );
    assert_eq!(json!(id).to_string().len(), bytes);
    json!(id)
}

/// A numeric id, the longest id allowed, and a modern-era request.
fn ids_and_eras() -> Vec<(Value, Option<Value>)> {
    vec![
        (json!(7), None),
        (id_of_json_len(MAX_ID_BYTES), None),
        (json!("modern"), Some(modern_meta())),
        (id_of_json_len(MAX_ID_BYTES - 8), Some(modern_meta())),
    ]
}

/// A line of `width` characters alternating `"` and `\`.
fn quote_line(width: usize) -> String {
    (0..width)
        .map(|i| if i % 2 == 0 { '"' } else { '\\' })
        .collect()
}

/// A new window whose pane prints `bytes` then an end marker and stays.
fn pane_printing(tmux: &PrivateServer, dir: &Path, name: &str, bytes: &[u8]) -> String {
    let file = dir.join(name);
    std::fs::write(&file, bytes).unwrap();
    let end = format!("END-OF-{name}");
    let script = format!(
        "stty -onlcr 2>/dev/null; cat '{}'; printf '{end}'; exec sleep 100000",
        file.display()
    );
    window_showing(tmux, Some(name), &script, &end, &[])
}

/// `lines` numbered lines (`00042 `) of quotes and backslashes, one
/// character short of the width.
fn quotes(lines: usize, width: usize) -> Vec<u8> {
    let line = quote_line(width - 7);
    (0..lines)
        .flat_map(|i| format!("{i:05} {line}\r\n").into_bytes())
        .collect()
}

/// The line tmux shows at `line` (tmux's scale), without its newline.
fn tmux_line(tmux: &PrivateServer, pane: &str, line: i64) -> String {
    let n = line.to_string();
    tmux_capture(tmux, pane, &["-S", &n, "-E", &n], false)
        .trim_end_matches('\n')
        .to_owned()
}

/// tmux's own capture of a range (what a tool must return a tail of).
fn tmux_capture(tmux: &PrivateServer, pane: &str, range: &[&str], escapes: bool) -> String {
    let mut args = vec!["capture-pane", "-p", "-t", pane];
    if escapes {
        args.push("-e");
    }
    args.extend_from_slice(range);
    tmux.run_ok(args).unwrap()
}

fn call_line(
    s: &mut Serve,
    id: &Value,
    tool: &str,
    args: &Value,
    meta: Option<&Value>,
) -> Received {
    let mut params = json!({"name": tool, "arguments": args});
    if let Some(meta) = meta {
        params["_meta"] = meta.clone();
    }
    s.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params}));
    s.response_line(id, CALL_TIMEOUT)
}

/// The structured result of a successful call whose line fits the ceiling.
fn fitted(r: &Received, what: &str) -> Value {
    assert!(
        r.line.len() <= RESPONSE_CEILING,
        "{what}: a {}-byte line",
        r.line.len()
    );
    let result = &r.value["result"];
    assert_eq!(
        result["isError"],
        false,
        "{what}: {}",
        common::head(&r.line, 500)
    );
    assert!(result["content"][0]["text"].is_string(), "{what}");
    result["structuredContent"].clone()
}

#[test]
fn capture_pane_of_quotes_and_escapes_fits_and_keeps_the_tail() {
    let dir = TempDir::new("ceiling-capture");
    let (tmux, mut s) = Serve::with_tmux_size("ceiling-capture", 1000, 100);
    s.initialize();
    let plain = pane_printing(&tmux, &dir.0, "quotes", &quotes(1000, 1000));
    // Every cell changes colour, so `-e` emits an escape sequence per cell.
    let coloured: Vec<u8> = (0..1000)
        .flat_map(|_| {
            let cells: String = (0..499)
                .map(|i| {
                    format!(
                        "\x1b[3{}m{}",
                        1 + i % 2,
                        if i % 2 == 0 { '"' } else { '\\' }
                    )
                })
                .collect();
            format!("{cells}\x1b[0m\r\n").into_bytes()
        })
        .collect();
    let colour = pane_printing(&tmux, &dir.0, "colour", &coloured);
    for (pane, escapes) in [(&plain, false), (&colour, true)] {
        let args = json!({"pane_id": pane, "start": -1000, "end": -1,
                          "max_lines": 10000, "escapes": escapes});
        let full = tmux_capture(&tmux, pane, &["-S", "-1000", "-E", "-1"], escapes);
        for (id, meta) in ids_and_eras() {
            let r = call_line(&mut s, &id, "capture_pane", &args, meta.as_ref());
            assert_eq!(r.value["id"], id);
            let c = fitted(&r, &format!("capture_pane escapes={escapes}"));
            let text = c["text"].as_str().unwrap();
            assert_eq!(c["byte_clamped"], true);
            assert!(full.ends_with(text), "not a tail of the range");
            assert_eq!(c["returned_bytes"].as_u64().unwrap() as usize, text.len());
            assert_eq!(
                c["omitted_bytes"].as_u64().unwrap() as usize + text.len(),
                full.len(),
                "omitted + returned must account for the whole range"
            );
            let shown = (c["effective_end"].as_i64().unwrap()
                - c["effective_start"].as_i64().unwrap()
                + 1) as usize;
            assert_eq!(shown, text.lines().count(), "effective_start..end");
            assert_eq!(c["effective_end"], -1);
            if !escapes {
                let start = c["effective_start"].as_i64().unwrap();
                assert_eq!(text.lines().next().unwrap(), tmux_line(&tmux, pane, start));
            }
            assert_eq!(text.contains('\u{1b}'), escapes);
            // The ceiling, not something smaller, bounds it.
            assert!(r.line.len() > RESPONSE_CEILING - 20_000, "{}", r.line.len());
        }
    }
}

#[test]
fn capture_since_of_quotes_fits_and_the_cursor_goes_on() {
    let dir = TempDir::new("ceiling-since");
    let (tmux, mut s) = Serve::with_tmux_size("ceiling-since", 1000, 100);
    s.initialize();
    let first = dir.0.join("first");
    let second = dir.0.join("second");
    std::fs::write(&first, quotes(1000, 1000)).unwrap();
    std::fs::write(&second, quotes(600, 1000)).unwrap();
    // The second half is printed when Enter is pressed in the pane.
    let script = format!(
        "stty -onlcr -echo 2>/dev/null; cat '{}'; printf 'END-ONE\\r\\n'; read x; cat '{}'; printf 'END-TWO\\r\\n'; exec sleep 100000",
        first.display(),
        second.display()
    );
    let pane = tmux
        .run_ok(["new-window", "-d", "-P", "-F", "#{pane_id}", &script])
        .unwrap()
        .trim()
        .to_owned();
    let printed = |end: &str| {
        eventually(Duration::from_secs(20), || {
            tmux.run_ok(["capture-pane", "-p", "-t", &pane])
                .is_ok_and(|t| t.contains(end))
        })
    };
    assert!(printed("END-ONE"));
    let args = json!({"pane_id": pane, "max_lines": 10000});
    let (id, meta) = (id_of_json_len(MAX_ID_BYTES), Some(modern_meta()));
    let r = call_line(&mut s, &id, "capture_since", &args, meta.as_ref());
    let c = fitted(&r, "capture_since, no cursor");
    let text = c["text"].as_str().unwrap();
    assert!(c["omitted_bytes"].as_u64().unwrap() > 0);
    assert!(text.ends_with("END-ONE\n"));
    assert!(text.lines().rev().nth(1).unwrap().starts_with("00999 "));
    assert_eq!(c["lines"].as_u64().unwrap() as usize, text.lines().count());

    tmux.run_ok(["send-keys", "-t", &pane, "Enter"]).unwrap();
    assert!(printed("END-TWO"));
    let args = json!({"pane_id": pane, "max_lines": 10000, "cursor": c["cursor"]});
    let r = call_line(&mut s, &json!(8), "capture_since", &args, None);
    let c = fitted(&r, "capture_since, with the cursor");
    let text = c["text"].as_str().unwrap();
    assert_eq!(c["missed"], false);
    assert!(c["omitted_bytes"].as_u64().unwrap() > 0);
    assert!(text.ends_with("END-TWO\n"));
    assert!(text.lines().rev().nth(1).unwrap().starts_with("00599 "));
    // first_line numbers the first line returned: tmux shows the same line.
    let first_line = c["first_line"].as_i64().unwrap();
    assert_eq!(
        text.lines().next().unwrap(),
        tmux_line(&tmux, &pane, first_line)
    );
}

#[test]
fn snapshot_pane_of_a_screen_of_quotes_fits() {
    let dir = TempDir::new("ceiling-snapshot");
    let (tmux, mut s) = Serve::with_tmux_size("ceiling-snapshot", 1000, 400);
    s.initialize();
    let pane = pane_printing(&tmux, &dir.0, "screen", &quotes(398, 1000));
    let screen = tmux_capture(&tmux, &pane, &[], false);
    assert!(
        screen.len() > 300_000,
        "the screen holds {} bytes",
        screen.len()
    );
    for (id, meta) in ids_and_eras() {
        let r = call_line(
            &mut s,
            &id,
            "snapshot_pane",
            &json!({"pane_id": pane}),
            meta.as_ref(),
        );
        let c = fitted(&r, "snapshot_pane");
        let text = c["text"].as_str().unwrap();
        assert_eq!(c["byte_clamped"], true);
        assert!(screen.ends_with(text), "not the bottom of the screen");
        assert_eq!(
            c["omitted_bytes"].as_u64().unwrap() as usize + text.len(),
            screen.len()
        );
        let first = c["first_line"].as_i64().unwrap();
        assert_eq!(first as usize + text.lines().count(), 400, "first_line");
        assert_eq!(text.lines().next().unwrap(), tmux_line(&tmux, &pane, first));
    }
}

#[test]
fn search_answers_of_quotes_fit_whatever_the_id() {
    let dir = TempDir::new("ceiling-search");
    let (tmux, mut s) = Serve::with_tmux_size("ceiling-search", 80, 40);
    s.initialize();
    let mut panes = Vec::new();
    for name in ["s1", "s2", "s3"] {
        panes.push(pane_printing(&tmux, &dir.0, name, &quotes(3000, 40)));
    }
    let args = json!({"pattern": "\"\\", "scrollback_lines": 5000, "context_lines": 10,
                      "max_matches": 10000, "max_matches_per_pane": 10000,
                      "pane_ids": panes});
    for (id, meta) in ids_and_eras() {
        let r = call_line(&mut s, &id, "search_panes", &args, meta.as_ref());
        let v = fitted(&r, "search_panes");
        assert_eq!(v["matches_truncated"], true);
        assert_eq!(v["total_panes_matched"], 3);
        // Lines are dropped from the end: the first pane keeps its first
        // hits, in order, from the top of its history.
        let first = &v["matches"][0];
        assert_eq!(first["pane_id"], json!(panes[0]));
        // (line number, the number printed on that line)
        let lines: Vec<(i64, i64)> = first["lines"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| {
                let text = l["text"].as_str().unwrap();
                (l["line"].as_i64().unwrap(), text[..5].parse().unwrap())
            })
            .collect();
        assert!(lines.len() > 100, "{} lines kept", lines.len());
        let history = tmux
            .run_ok(["display-message", "-p", "-t", &panes[0], "#{history_size}"])
            .unwrap();
        assert_eq!(lines[0].0, -history.trim().parse::<i64>().unwrap());
        assert!(
            lines
                .windows(2)
                .all(|w| w[1].0 == w[0].0 + 1 && w[1].1 == w[0].1 + 1),
            "not a run of consecutive lines"
        );
        assert!(r.line.len() > RESPONSE_CEILING - 20_000, "{}", r.line.len());
    }
}

#[test]
fn batch_of_quoted_captures_fits_and_a_long_id_is_refused() {
    let dir = TempDir::new("ceiling-batch");
    let (tmux, mut s) = Serve::with_tmux_size("ceiling-batch", 1000, 100);
    s.initialize();
    let pane = pane_printing(&tmux, &dir.0, "quotes", &quotes(1000, 1000));
    let ops: Vec<Value> = (0..16)
        .map(|i| {
            json!({"tool": "capture_pane", "arguments": {"pane_id": pane,
                        "start": -1000, "max_lines": 10000, "max_bytes": 20_000 + 1000 * i}})
        })
        .collect();
    let args = json!({"operations": ops, "on_error": "continue"});
    for (id, meta) in ids_and_eras() {
        let r = call_line(&mut s, &id, "call_read_tools_batch", &args, meta.as_ref());
        let v = fitted(&r, "call_read_tools_batch");
        assert_eq!(v["succeeded"], 16);
        assert_eq!(v["truncated"], true);
        let rows = v["results"].as_array().unwrap();
        let kept = rows.iter().filter(|r| r["result"].is_object()).count();
        let dropped = rows
            .iter()
            .filter(|r| r["result_truncated"] == true)
            .count();
        assert!(
            kept > 0 && kept + dropped == 16,
            "kept {kept}, dropped {dropped}"
        );
        // The largest go first: every kept result is smaller than every
        // dropped one (max_bytes grows with the index).
        let last_kept = rows.iter().rposition(|r| r["result"].is_object()).unwrap();
        assert!(rows[last_kept + 1..]
            .iter()
            .all(|r| r["result_truncated"] == true));
        assert!(
            r.line.len() > RESPONSE_CEILING - 200_000,
            "{}",
            r.line.len()
        );
    }
    // An id of 300 KB is refused (the answer could not carry it), with a
    // null id as JSON-RPC says when the id cannot be read.
    let long = json!("i".repeat(300_000));
    s.send(
        &json!({"jsonrpc": "2.0", "id": long, "method": "tools/call",
                   "params": {"name": "call_read_tools_batch", "arguments": args}}),
    );
    let r = s.response_line(&Value::Null, CALL_TIMEOUT);
    assert_eq!(
        r.value["error"]["code"],
        -32600,
        "{}",
        common::head(&r.line, 300)
    );
    assert!(r.line.len() < 1000, "{}", r.line.len());
}

/// A socket no server listens on: these need no tmux.
const NOBODY: &str = "panescan-ceiling-nobody";

#[test]
fn ids_longer_than_the_limit_are_refused_with_a_null_id() {
    let mut s = Serve::spawn(NOBODY);
    s.initialize();
    // At the limit: answered, the id echoed exactly.
    let at = id_of_json_len(MAX_ID_BYTES);
    s.send(&json!({"jsonrpc": "2.0", "id": at, "method": "ping"}));
    assert_eq!(s.response(&at, CALL_TIMEOUT)["result"], json!({}));
    // A byte over, 300 KB, and 1.2 MB once escaped: refused, null id.
    for id in [
        id_of_json_len(MAX_ID_BYTES + 1),
        json!("i".repeat(300_000)),
        json!("\u{1}".repeat(200_000)),
    ] {
        for method in ["ping", "tools/list", "no/such/method"] {
            s.send(&json!({"jsonrpc": "2.0", "id": id, "method": method}));
            let r = s.response_line(&Value::Null, CALL_TIMEOUT);
            assert_eq!(
                r.value["error"]["code"],
                -32600,
                "{}",
                common::head(&r.line, 300)
            );
            let message = r.value["error"]["message"].as_str().unwrap();
            assert!(message.contains("4096"), "{message}");
            assert!(r.line.len() < 1000, "{}", r.line.len());
        }
    }
    // Invalid requests echo their id too: the same rule.
    let id = json!("i".repeat(300_000));
    s.send(&json!({"jsonrpc": "1.0", "id": id, "method": "ping"}));
    let r = s.response_line(&Value::Null, CALL_TIMEOUT);
    assert_eq!(r.value["error"]["code"], -32600);
    // Numbers, however written, come back as short numbers.
    let digits = format!("0.{}1", "0".repeat(300_000));
    for id in ["7", "-1", "18446744073709551615", "1.5e300", &digits] {
        s.send_raw(&format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#));
        let want: Value = serde_json::from_str(id).unwrap();
        let r = s.response_line(&want, CALL_TIMEOUT);
        assert_eq!(r.value["result"], json!({}), "id {}", common::head(id, 40));
        assert!(r.line.len() < 1000, "{}", r.line.len());
    }
}

#[test]
fn client_text_echoed_in_errors_is_bounded() {
    let mut s = Serve::spawn(NOBODY);
    s.initialize();
    // 200,000 C0 controls: 1.2 MB once JSON escapes them.
    let controls = "\u{1}".repeat(200_000);
    let r = s.request_line("tools/call", json!({"name": controls, "arguments": {}}));
    assert_eq!(r.value["error"]["code"], -32602);
    assert!(
        r.line.len() < 100_000,
        "unknown tool: {} bytes",
        r.line.len()
    );
    let r = s.request_line(&controls, json!({}));
    assert_eq!(r.value["error"]["code"], -32601);
    assert!(
        r.line.len() < 100_000,
        "unknown method: {} bytes",
        r.line.len()
    );
    let r = s.request_line("tools/list", json!({"cursor": controls}));
    assert_eq!(r.value["error"]["code"], -32602);
    assert!(r.line.len() < 100_000, "bad cursor: {} bytes", r.line.len());
    let meta = json!({"io.modelcontextprotocol/protocolVersion": controls,
                      "io.modelcontextprotocol/clientCapabilities": {}});
    let r = s.request_line("tools/list", json!({"_meta": meta}));
    assert_eq!(r.value["error"]["code"], -32022);
    assert!(
        r.line.len() < 100_000,
        "bad version: {} bytes",
        r.line.len()
    );
    // A tool error that names an argument.
    let r = s.request_line(
        "tools/call",
        json!({"name": "list_panes", "arguments": {controls.clone(): 1}}),
    );
    assert_eq!(r.value["result"]["isError"], true);
    assert!(
        r.line.len() < 100_000,
        "unknown argument: {} bytes",
        r.line.len()
    );
    // A progress token is echoed in every notification: the id's limit.
    let r = s.request_line(
        "tools/call",
        json!({"name": "call_read_tools_batch", "_meta": {"progressToken": controls},
               "arguments": {"operations": [{"tool": "list_sessions"}]}}),
    );
    assert_eq!(
        r.value["error"]["code"],
        -32602,
        "{}",
        common::head(&r.line, 300)
    );
    assert!(r.line.len() < 1000);
    assert!(
        s.take_pending().is_empty(),
        "no progress for a refused call"
    );
    // Still serving.
    assert_eq!(s.request_bare("ping")["result"], json!({}));
}
