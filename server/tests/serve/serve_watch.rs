//! watch_panes through `panescan serve`: new output of any pane, panes
//! created during the call included, each hit as it happens.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::io::Write;
use std::time::{Duration, Instant};

use common::Serve;
use panescan::testing::fixture::{Fixture, FixtureShape};
use panescan::testing::private_server::PrivateServer;
use serde_json::{json, Value};

const MARK: &str = "watch-mark";

/// Starts a watch_panes call with a progress token; returns once the watch
/// says it is set (output from then on counts).
fn start_watch(s: &mut Serve, args: Value) -> (Value, String) {
    let id = s.fresh_id();
    let token = format!("progress-{id}");
    s.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": "watch_panes", "arguments": args,
                   "_meta": {"progressToken": token}}}));
    let set = s.message(Duration::from_secs(60), |m| {
        m["method"] == "notifications/progress"
            && m["params"]["progressToken"] == token.as_str()
            && m["params"]["message"]
                .as_str()
                .is_some_and(|t| t.starts_with("watching"))
    });
    assert_eq!(set["params"]["progress"].as_f64(), Some(0.0), "{set}");
    (id, token)
}

/// Prints `text` as a line in `pane`, through its terminal.
fn print_in(tmux: &PrivateServer, pane: &str, text: &str) {
    let out = tmux
        .run_ok(["display-message", "-p", "-t", pane, "#{pane_tty}"])
        .unwrap();
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .open(out.trim())
        .unwrap();
    write!(f, "{text}\r\n").unwrap();
}

fn hits(v: &Value) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = v["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| {
            (
                h["pane_id"].as_str().unwrap().to_owned(),
                h["text"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    out.sort();
    out
}

#[test]
fn a_pane_created_after_the_watch_started_is_watched() {
    let (tmux, mut s) = Serve::with_tmux("watch-new-pane");
    s.initialize();
    // Text on screen before the call does not count.
    print_in(&tmux, "%0", &format!("{MARK} old"));
    let (id, _) = start_watch(&mut s, json!({"pattern": MARK, "timeout_ms": 30_000}));
    let new = tmux
        .run_ok([
            "new-window",
            "-d",
            "-P",
            "-F",
            "#{pane_id}",
            &format!("sh -c 'echo {MARK} new; exec sleep 1000'"),
        ])
        .unwrap()
        .trim()
        .to_owned();
    let r = s.response(&id, Duration::from_secs(30));
    let v = &r["result"]["structuredContent"];
    assert_eq!(r["result"]["isError"], false, "{r}");
    assert_eq!(hits(v), vec![(new, format!("{MARK} new"))], "{v}");
    assert_eq!(v["timed_out"], false, "{v}");
    assert_eq!(v["panes_watched"], 2, "{v}");
}

#[test]
fn output_in_2_of_500_panes_returns_both_hits_as_they_happen() {
    let shape = FixtureShape {
        panes: 500,
        lines: 5,
        width: 80,
        height: 10,
        needle_every: 1_000_000,
    };
    let fx = Fixture::build(
        "watch-500",
        shape,
        &panescan::testing::corpus::sources(),
        Duration::from_secs(300),
        &mut |_, _| {},
    )
    .unwrap();
    let mut s = Serve::spawn(fx.server.socket_name());
    s.initialize();
    let timeout_ms = 60_000;
    let (id, token) = start_watch(
        &mut s,
        json!({"pattern": MARK, "max_hits": 2, "timeout_ms": timeout_ms}),
    );
    let (a, b) = (&fx.pane_ids[17], &fx.pane_ids[444]);
    let printed = Instant::now();
    print_in(&fx.server, a, &format!("{MARK} a"));
    print_in(&fx.server, b, &format!("{MARK} b"));
    // Each hit is a progress notification before the answer.
    let mut told = Vec::new();
    while told.len() < 2 {
        let m = s.message(Duration::from_secs(30), |m| {
            m["params"]["progressToken"] == token.as_str()
                && m["params"]["progress"].as_f64().is_some_and(|p| p >= 1.0)
        });
        told.push(m["params"]["message"].as_str().unwrap().to_owned());
    }
    let r = s.response(&id, Duration::from_secs(30));
    let latency = printed.elapsed();
    let v = &r["result"]["structuredContent"];
    assert_eq!(
        hits(v),
        vec![
            (a.clone(), format!("{MARK} a")),
            (b.clone(), format!("{MARK} b"))
        ],
        "{v}"
    );
    assert_eq!(v["timed_out"], false, "{v}");
    assert_eq!(v["panes_watched"], 500, "{v}");
    assert!(
        told.iter().any(|t| t.contains(&format!("{MARK} a"))),
        "{told:?}"
    );
    // Woken by the output, not by the clock: far from the timeout.
    eprintln!("watch_panes answered {latency:?} after the print (500 panes)");
    assert!(
        latency < Duration::from_millis(timeout_ms / 4),
        "{latency:?}"
    );
}

#[test]
fn a_secret_in_a_hit_is_redacted_in_the_answer_and_in_its_progress_message() {
    let (tmux, mut s) = Serve::with_tmux("watch-redact");
    s.initialize();
    let (id, token) = start_watch(&mut s, json!({"pattern": MARK, "timeout_ms": 30_000}));
    print_in(
        &tmux,
        "%0",
        &format!("{MARK} push ghp_16C7e42F292c6912E7710c838347Ae178B4a"),
    );
    let r = s.response(&id, Duration::from_secs(30));
    let v = &r["result"]["structuredContent"];
    let want = format!("{MARK} push [REDACTED:GITHUB_TOKEN]");
    assert_eq!(hits(v), vec![("%0".to_owned(), want.clone())], "{v}");
    assert_eq!(v["redactions"], 1, "{v}");
    let reported = s
        .take_pending()
        .into_iter()
        .filter(|m| m["params"]["progressToken"] == token.as_str())
        .filter_map(|m| m["params"]["message"].as_str().map(str::to_owned))
        .filter(|m| m.contains(MARK))
        .collect::<Vec<_>>();
    assert_eq!(reported.len(), 1, "{reported:?}");
    assert!(reported[0].ends_with(&want), "{reported:?}");
    assert!(!r.to_string().contains("ghp_"), "{r}");
}
