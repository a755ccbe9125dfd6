//! search_panes through `panescan serve`: what an MCP client sees.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::time::Duration;

use common::{validate, Serve};
use panescan::testing::fixture::{Fixture, FixtureShape, NEEDLE};
use serde_json::{json, Value};

fn fixture(label: &str, panes: usize, lines: usize) -> Fixture {
    let shape = FixtureShape {
        panes,
        lines,
        width: 120,
        height: 30,
        needle_every: 10,
    };
    Fixture::build(
        label,
        shape,
        &panescan::testing::corpus::sources(),
        Duration::from_secs(120),
        &mut |_, _| {},
    )
    .unwrap()
}

/// Threads of process `pid`.
fn threads(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("Threads:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap()
}

fn output_schema(s: &mut Serve) -> Value {
    let list = s.request("tools/list", json!({}));
    list["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "search_panes")
        .unwrap()["outputSchema"]
        .clone()
}

#[test]
fn results_validate_and_render_like_grep() {
    let fx = fixture("serve-search", 20, 400);
    let mut s = Serve::spawn(fx.server.socket_name());
    s.initialize();
    let schema = output_schema(&mut s);
    let r = s.call(
        "search_panes",
        json!({"pattern": NEEDLE, "scrollback_lines": 1000, "context_lines": 1}),
    );
    assert_eq!(r["isError"], false, "{r}");
    let structured = &r["structuredContent"];
    assert_eq!(validate(&schema, structured), Vec::<String>::new());
    assert_eq!(structured["total_panes_matched"], 2);
    let text = r["content"][0]["text"].as_str().unwrap();
    let first = &fx.pane_ids[0];
    let line = structured["matches"][0]["lines"][0]["line"]
        .as_i64()
        .unwrap();
    assert!(
        text.contains(&format!(
            "{first} main:1.0 {line}: error: {NEEDLE} in pane 0"
        )),
        "{text}"
    );
    assert!(
        text.contains(&format!("{first} main:1.0 {}- ", line - 1)),
        "{text}"
    );
    assert!(text.trim_end().ends_with("complete"), "{text}");

    // A clamped search validates too and its text names the clamp.
    let r = s.call(
        "search_panes",
        json!({"pattern": "e", "scrollback_lines": 1000, "max_scan_lines": 100}),
    );
    assert_eq!(
        validate(&schema, &r["structuredContent"]),
        Vec::<String>::new()
    );
    assert!(r["content"][0]["text"]
        .as_str()
        .unwrap()
        .contains("matching_line_clamped"));
}

#[test]
fn every_pane_matching_stays_under_the_response_ceiling() {
    let fx = fixture("serve-ceiling", 60, 600);
    let mut s = Serve::spawn(fx.server.socket_name());
    s.initialize();
    let id = s.fresh_id();
    s.send(
        &json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
            "name": "search_panes",
            "arguments": {"pattern": "e", "scrollback_lines": 1000, "context_lines": 10,
                          "max_matches": 10000, "max_matches_per_pane": 100, "limit": 10000}
        }}),
    );
    let r = s.response_line(&id, Duration::from_secs(60));
    let bytes = r.line.len();
    assert!(bytes <= 1_000_000, "response is {bytes} bytes");
    assert!(
        bytes > 990_000,
        "the ceiling, not the input, should bound it: {bytes}"
    );
    let result = &r.value["result"]["structuredContent"];
    assert_eq!(result["matches_truncated"], true);
    assert_eq!(result["total_panes_matched"], 60);
}

/// Calls search_panes with `arguments` and progress token `token` (no
/// other call in flight); the progress it reported before its answer.
fn search_with_progress(s: &mut Serve, arguments: Value, token: &str) -> Vec<f64> {
    let id = s.fresh_id();
    s.send(
        &json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
            "name": "search_panes", "arguments": arguments,
            "_meta": {"progressToken": token}
        }}),
    );
    let r = s.response(&id, Duration::from_secs(30));
    assert_eq!(r["result"]["isError"], false, "{r}");
    s.take_pending()
        .into_iter()
        .filter(|m| m["method"] == "notifications/progress")
        .map(|m| {
            assert_eq!(m["params"]["progressToken"], token);
            m["params"]["progress"].as_f64().unwrap()
        })
        .collect()
}

#[test]
fn a_search_whose_last_panes_are_skipped_still_reports_progress() {
    // A scan budget of 100 bytes: the first panes are scanned in part,
    // the others skipped (the engine reports progress only for scanned
    // panes, so never "5 of 5"), and the call is quicker than the 100 ms
    // between two reports; the client that asked for progress still
    // hears how far the search got.
    let fx = fixture("serve-progress-skip", 5, 50);
    let mut s = Serve::spawn(fx.server.socket_name());
    s.initialize();
    s.call_ok("search_panes", json!({"pattern": NEEDLE}));
    let arguments = json!({"pattern": NEEDLE, "max_scan_bytes": 100});
    let progress = search_with_progress(&mut s, arguments, "skip-tok");
    // What was searched (skipped panes were not), never beyond the total.
    assert!(!progress.is_empty(), "no progress notification");
    assert!(
        progress.iter().all(|&p| (0.0..5.0).contains(&p)),
        "{progress:?}"
    );
}

#[test]
fn progress_is_reported_and_cancel_stops_a_search_with_no_response() {
    let fx = fixture("serve-cancel", 30, 300);
    let mut s = Serve::spawn(fx.server.socket_name());
    s.initialize();

    let arguments = json!({"pattern": NEEDLE, "scrollback_lines": 1000});
    let progress = search_with_progress(&mut s, arguments, "tok-1");
    assert!(!progress.is_empty(), "no progress notification");
    assert!(progress.windows(2).all(|w| w[0] < w[1]), "{progress:?}");
    assert_eq!(progress.last(), Some(&30.0), "{progress:?}");

    // Freeze tmux so the search cannot finish, cancel it, then thaw.
    let idle_threads = threads(s.pid());
    let frozen = fx.server.stop().unwrap();
    let id = s.fresh_id();
    s.send(
        &json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
            "name": "search_panes", "arguments": {"pattern": NEEDLE, "scrollback_lines": 1000}
        }}),
    );
    // (Lines are read in order: the search is registered when its cancel
    // is read, whenever that is.)
    s.notify("notifications/cancelled", json!({"requestId": id}));
    // A ping is answered while tmux is frozen, so while the search cannot
    // have ended: it was not blocked by it.
    let ping = s.request_bare("ping");
    assert_eq!(ping["result"], json!({}));
    drop(frozen);
    // Once the search's thread is gone, any answer it wrote was read before
    // the answer to a ping sent after that.
    let gone = common::eventually(common::REPLY_TIMEOUT, || threads(s.pid()) <= idle_threads);
    assert!(gone, "threads: {} (idle {idle_threads})", threads(s.pid()));
    let ping = s.request_bare("ping");
    assert_eq!(ping["result"], json!({}));
    let late = s.take_pending();
    assert!(
        late.iter().all(|m| m.get("id") != Some(&id)),
        "a cancelled request was answered: {late:?}"
    );
    // The server goes on serving searches.
    let again = s.call_ok(
        "search_panes",
        json!({"pattern": NEEDLE, "scrollback_lines": 1000}),
    );
    assert_eq!(again["total_panes_matched"], 3);
}

#[test]
fn operator_ceilings_bound_what_a_caller_may_ask() {
    let fx = fixture("serve-ceilings", 4, 300);
    let mut s = Serve::spawn_with(
        &[
            "serve",
            "--socket-name",
            fx.server.socket_name(),
            "--max-scrollback-lines",
            "50",
        ],
        &[("PANESCAN_MAX_SCAN_BYTES", "100000")],
    );
    s.initialize();
    let err = s.call_err(
        "search_panes",
        json!({"pattern": "x", "max_scan_bytes": 200000}),
    );
    assert!(err.contains("at most 100000"), "{err}");
    let r = s.call_ok(
        "search_panes",
        json!({"pattern": NEEDLE, "scrollback_lines": 100000}),
    );
    assert_eq!(r["scrollback_clamped"], true);
    assert_eq!(r["effective_scrollback_lines"], 50);
    assert_eq!(
        r["total_panes_matched"], 0,
        "the needles lie deeper than 50 lines"
    );
}

/// A scope of no pane (an empty `pane_ids`) is an answer that searched
/// nothing, not an error: only a search whose every capture failed is one.
#[test]
fn a_scope_of_no_pane_searches_nothing_without_an_error() {
    let fx = fixture("serve-no-pane", 1, 20);
    let mut s = Serve::spawn(fx.server.socket_name());
    s.initialize();
    let r = s.call_ok("search_panes", json!({"pattern": NEEDLE, "pane_ids": []}));
    assert_eq!(
        (&r["panes_searched"], &r["total_panes_matched"]),
        (&json!(0), &json!(0)),
        "{r}"
    );
}
