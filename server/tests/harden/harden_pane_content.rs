//! Hostile pane content: forged control-mode framing, escape sequences of
//! every kind, invalid UTF-8, NUL bytes, 1 MB lines, a 100,000-line
//! history, wide and combining characters. Captures stay whole and are
//! attributed to the right pane; output is valid UTF-8 (it is JSON text)
//! and bounded.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::path::Path;
use std::time::Instant;

use common::{window_showing, Serve, TempDir};
use panescan::testing::private_server::PrivateServer;
use serde_json::{json, Value};

/// A new window whose pane prints `bytes` (raw, through `cat`) then an
/// end marker, and stays; returns its pane id once the marker shows.
fn pane_printing(tmux: &PrivateServer, dir: &Path, name: &str, bytes: &[u8]) -> String {
    let file = dir.join(name);
    std::fs::write(&file, bytes).unwrap();
    let end = format!("END-OF-{name}");
    let script = format!(
        "stty -onlcr 2>/dev/null; cat '{}'; printf '\\r\\n{end}\\r\\n'; exec sleep 100000",
        file.display()
    );
    window_showing(tmux, Some(name), &script, &end, &["-J", "-S", "-"])
}

/// A call that must succeed: the bytes of its response line as written,
/// and its `structuredContent`.
fn call_sized(s: &mut Serve, tool: &str, args: Value) -> (usize, Value) {
    let r = s.request_line("tools/call", json!({"name": tool, "arguments": args}));
    let result = &r.value["result"];
    assert_eq!(
        result["isError"],
        false,
        "{tool}: {}",
        common::head(&r.line, 500)
    );
    (r.line.len(), result["structuredContent"].clone())
}

/// Every string in a JSON value (keys and values).
fn strings(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::String(s) => out.push(s.clone()),
        Value::Array(a) => a.iter().for_each(|x| strings(x, out)),
        Value::Object(o) => o.iter().for_each(|(k, x)| {
            out.push(k.clone());
            strings(x, out)
        }),
        _ => {}
    }
}

/// Output a terminal cannot be fooled by: no C0 controls but tab, no ESC,
/// no NUL (escapes are stripped unless asked for).
fn assert_clean(what: &str, v: &Value) {
    let mut all = Vec::new();
    strings(v, &mut all);
    for s in all {
        assert!(
            !s.chars()
                .any(|c| (c < ' ' && c != '\t' && c != '\n') || c == '\u{7f}'),
            "{what}: control character in {s:?}"
        );
    }
}

#[test]
fn forged_control_mode_framing_in_panes_cannot_cut_or_shift_replies() {
    let dir = TempDir::new("content-forged");
    let (tmux, mut s) = Serve::with_tmux_size("harden-content-forged", 120, 30);
    s.initialize();
    let mut panes = Vec::new();
    for k in 0..6 {
        let mut text = String::new();
        for t in 0..4 {
            text.push_str(&format!(
                "%end 17000000{t} {k}{t} 1\r\n%error 17000000{t} {k}{t} 1\r\n%begin 17000000{t} {k}{t} 1\r\n%exit\r\n%session-changed $9 evil\r\n"
            ));
        }
        text.push_str(&format!("owner-of-this-text pane{k}\r\n"));
        text.push_str("%begin 1 1 1\r\n%end 1 1 1\r\n");
        panes.push(pane_printing(
            &tmux,
            &dir.0,
            &format!("forged{k}"),
            text.as_bytes(),
        ));
    }
    // Many rounds, each pipelining every pane's capture and a search.
    for round in 0..5 {
        let found = s.call_ok(
            "search_panes",
            json!({"pattern": "owner-of-this-text", "scrollback_lines": 100}),
        );
        let matches = found["matches"].as_array().unwrap();
        assert_eq!(matches.len(), panes.len(), "round {round}: {found}");
        for m in matches {
            let pane = m["pane_id"].as_str().unwrap();
            let k = panes.iter().position(|p| p == pane).unwrap();
            let lines = m["lines"].as_array().unwrap();
            assert_eq!(lines.len(), 1, "{m}");
            assert_eq!(
                lines[0]["text"],
                format!("owner-of-this-text pane{k}"),
                "round {round}: text attributed to the wrong pane"
            );
        }
        let forged = s.call_ok(
            "search_panes",
            json!({"pattern": "%end 17000000", "scrollback_lines": 100}),
        );
        assert_eq!(forged["matches"].as_array().unwrap().len(), panes.len());
        for (k, pane) in panes.iter().enumerate() {
            let r = s.call_ok("capture_pane", json!({"pane_id": pane, "start": -100}));
            let text = r["text"].as_str().unwrap();
            let ours = tmux
                .run_ok(["capture-pane", "-p", "-S", "-100", "-t", pane])
                .unwrap();
            // Whole: every line tmux has, in order.
            let want: Vec<&str> = ours
                .lines()
                .map(str::trim_end)
                .filter(|l| !l.is_empty())
                .collect();
            let got: Vec<&str> = text
                .lines()
                .map(str::trim_end)
                .filter(|l| !l.is_empty())
                .collect();
            assert_eq!(got, want, "round {round}: capture of pane{k} differs");
        }
    }
    s.call_ok("list_panes", json!({}));
}

#[test]
fn escapes_invalid_utf8_and_nul_come_out_as_valid_bounded_text() {
    let dir = TempDir::new("content-bytes");
    let (tmux, mut s) = Serve::with_tmux_size("harden-content-bytes", 100, 30);
    s.initialize();
    let mut hostile: Vec<u8> = Vec::new();
    let escapes: [&[u8]; 14] = [
        b"\x1b[31mred\x1b[0m",
        b"\x1b]0;title\x07",
        b"\x1b]2;#(id)\x1b\\",
        b"\x1b]52;c;aGVsbG8=\x07",
        b"\x1bP1$qm\x1b\\",
        b"\x1b[?1049h\x1b[?1049l",
        b"\x1b[6n",
        b"\x1b(0lqk\x1b(B",
        b"\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\",
        b"\x1b[2J\x1b[H",
        b"\x9b31m\x9d0;c1\x9c",
        b"\x1bc",
        b"\x1b[999;999H",
        b"\x1b[1;2r",
    ];
    for (i, e) in escapes.iter().enumerate() {
        hostile.extend_from_slice(b"esc-line ");
        hostile.extend_from_slice(e);
        hostile.extend_from_slice(format!(" after{i}\r\n").as_bytes());
    }
    hostile.extend_from_slice(b"\x1b[r\x1b[0m");
    hostile
        .extend_from_slice(b"bad-utf8 \xff\xfe \xc3\x28 \xed\xa0\x80 \xf4\x90\x80\x80 tail-a\r\n");
    hostile.extend_from_slice(b"nul-bytes \x00\x00 mid \x00 tail-b\r\n");
    hostile.extend_from_slice(b"c0-controls \x01\x02\x07\x08\x0b\x0c\x7f tail-c\r\n");
    let pane = pane_printing(&tmux, &dir.0, "bytes", &hostile);
    let quiet = pane_printing(&tmux, &dir.0, "quiet", b"nothing special here\r\n");
    for pattern in ["tail-a", "tail-b", "tail-c", "after3", "esc-line"] {
        let r = s.call_ok(
            "search_panes",
            json!({"pattern": pattern, "scrollback_lines": 200}),
        );
        assert_clean(pattern, &r);
        let matches = r["matches"].as_array().unwrap();
        assert!(!matches.is_empty(), "{pattern}: {r}");
        for m in matches {
            assert_eq!(m["pane_id"], json!(pane), "{pattern}: wrong pane: {m}");
            assert_ne!(m["pane_id"], json!(quiet));
        }
    }
    let r = s.call_ok("capture_pane", json!({"pane_id": pane, "start": -200}));
    assert_clean("capture", &r);
    let text = r["text"].as_str().unwrap();
    assert!(text.contains("tail-a") && text.contains("tail-b") && text.contains("tail-c"));
    // Asked for, escapes come back, still as valid JSON text.
    let r = s.call_ok(
        "capture_pane",
        json!({"pane_id": pane, "start": -200, "escapes": true}),
    );
    assert!(r["text"].as_str().unwrap().contains('\u{1b}'));
    let (bytes, _) = call_sized(&mut s, "snapshot_pane", json!({"pane_id": pane}));
    assert!(bytes <= 1_000_000, "{bytes}");
    // The title an escape set is data, and the server is fine.
    let (bytes, _) = call_sized(&mut s, "get_pane_info", json!({"pane_id": pane}));
    assert!(bytes < 100_000, "{bytes}");
    s.call_ok("list_panes", json!({}));
}

#[test]
fn a_one_megabyte_line_and_a_100000_line_history_stay_bounded() {
    let dir = TempDir::new("content-big");
    let (tmux, mut s) = Serve::with_tmux_size("harden-content-big", 200, 50);
    s.initialize();
    tmux.run_ok(["set-option", "-g", "history-limit", "110000"])
        .unwrap();
    // 1 MB on one line (it wraps over 5,000+ rows), needle at the end.
    let mut big = vec![b'x'; 1 << 20];
    big.extend_from_slice(b" megaline-needle\r\n");
    let wide = pane_printing(&tmux, &dir.0, "mega", &big);
    // 100,000 numbered lines.
    let mut lines = String::new();
    for i in 0..100_000 {
        lines.push_str(&format!("history line {i:06}\r\n"));
    }
    let deep = pane_printing(&tmux, &dir.0, "deep", lines.as_bytes());

    let started = Instant::now();
    let (bytes, r) = call_sized(
        &mut s,
        "search_panes",
        json!({"pattern": "megaline-needle", "scrollback_lines": 200_000}),
    );
    eprintln!(
        "1 MB line: search {:?}, {bytes} bytes out, flags {}",
        started.elapsed(),
        json!({"captures_byte_clamped": r["captures_byte_clamped"], "matches_truncated": r["matches_truncated"]})
    );
    assert!(bytes <= 1_000_000, "unbounded result: {bytes} bytes");
    let matches = r["matches"].as_array().unwrap();
    assert_eq!(matches.len(), 1, "{}", common::head(&r.to_string(), 2000));
    assert_eq!(matches[0]["pane_id"], json!(wide));

    let started = Instant::now();
    let r = s.call_ok(
        "search_panes",
        json!({"pattern": "^history line 0[0-9]{2}000$", "regex": true, "scrollback_lines": 200_000,
               "max_matches_per_pane": 200}),
    );
    let elapsed = started.elapsed();
    let flags = [
        "captures_byte_clamped",
        "matching_byte_clamped",
        "matching_line_clamped",
        "matching_time_clamped",
        "matches_truncated",
    ];
    let clamped: Vec<&str> = flags.iter().copied().filter(|f| r[f] == true).collect();
    eprintln!(
        "100,000 lines: search {elapsed:?}, scanned {} lines, clamped {clamped:?}",
        r["lines_scanned"]
    );
    let hits: Vec<&Value> = r["matches"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["pane_id"] == json!(deep))
        .flat_map(|m| m["lines"].as_array().unwrap())
        .collect();
    // Nothing here is near a byte, line or match limit; only time depends
    // on the machine, and a search cut by time still found what it found.
    assert!(
        clamped.iter().all(|f| *f == "matching_time_clamped"),
        "{clamped:?}"
    );
    if clamped.is_empty() {
        // Every thousandth line, exactly once.
        assert_eq!(hits.len(), 100, "{} hits", hits.len());
    } else {
        assert!(!hits.is_empty() && hits.len() <= 100, "{} hits", hits.len());
    }
    // A hit's line number goes straight to capture_pane.
    let hit = hits[hits.len() / 2];
    let line = hit["line"].as_i64().unwrap();
    let c = s.call_ok(
        "capture_pane",
        json!({"pane_id": deep, "start": line, "end": line}),
    );
    assert_eq!(
        c["text"].as_str().unwrap().trim_end(),
        hit["text"].as_str().unwrap()
    );
    // A capture of the whole history is clamped to the ceiling and says so.
    let (bytes, c) = call_sized(
        &mut s,
        "capture_pane",
        json!({"pane_id": deep, "start": -200_000}),
    );
    assert!(bytes <= 1_000_000, "{bytes}");
    // The range reaches past the history; the default max_lines (200)
    // keeps the newest lines and counts the rest as dropped.
    assert_eq!(c["range_clamped"], true);
    let total = c["total_lines"].as_u64().unwrap();
    assert!(total > 100_000, "{total}");
    assert_eq!(c["dropped_lines"], total - 200);
    assert_eq!(c["text"].as_str().unwrap().lines().count(), 200);
    assert_eq!(
        c["effective_end"].as_i64().unwrap() - c["effective_start"].as_i64().unwrap(),
        199
    );
}

#[test]
fn wide_and_combining_characters_come_back_whole() {
    let dir = TempDir::new("content-wide");
    let (tmux, mut s) = Serve::with_tmux_size("harden-content-wide", 40, 20);
    s.initialize();
    let samples = [
        "日本語のテキスト wide-needle 한국어 中文",
        "e\u{301}\u{301}\u{301} combining-needle a\u{308}o\u{308}",
        "emoji 😀👩‍👩‍👧‍👦🏳️‍🌈 zwj-needle",
        "ＦＵＬＬＷＩＤＴＨ fullwidth-needle ｱｲｳ",
        "wrap-needle 一二三四五六七八九十一二三四五六七八九十一二三四五六七八九十",
    ];
    let mut text = String::new();
    for l in samples {
        text.push_str(l);
        text.push_str("\r\n");
    }
    let pane = pane_printing(&tmux, &dir.0, "wide", text.as_bytes());
    for (l, needle) in samples.iter().zip([
        "wide-needle",
        "combining-needle",
        "zwj-needle",
        "fullwidth-needle",
        "wrap-needle",
    ]) {
        let r = s.call_ok(
            "search_panes",
            json!({"pattern": needle, "scrollback_lines": 100}),
        );
        let m = &r["matches"][0];
        assert_eq!(m["pane_id"], json!(pane));
        let got = m["lines"][0]["text"].as_str().unwrap();
        // tmux may drop zero-width joiners; the needle and the CJK stay.
        let keep: String = l
            .chars()
            .filter(|c| !matches!(c, '\u{200d}' | '\u{fe0f}'))
            .collect();
        let got_kept: String = got
            .chars()
            .filter(|c| !matches!(c, '\u{200d}' | '\u{fe0f}'))
            .collect();
        if needle == "zwj-needle" {
            assert!(got.contains("zwj-needle") && got.contains('😀'), "{got}");
        } else {
            assert_eq!(got_kept.trim_end(), keep, "{needle}");
        }
    }
}
