//! Resources, subscriptions and prompts through `panescan serve`, spoken
//! to as raw JSON-RPC against private tmux servers: listing (1,000 panes
//! in pages), templates, reading every kind, malformed and unknown URIs,
//! updates when a pane prints (through the event stream, and by polling
//! for a pane in a session it does not cover) and list changes when a
//! window comes and goes (both eras), unsubscribing, 500 subscriptions ended by the
//! connection, and prompts.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use common::{eventually, modern_meta, plain_shell, Serve, REPLY_TIMEOUT};
use panescan::testing::private_server::PrivateServer;
use serde_json::{json, Value};

fn type_line(tmux: &PrivateServer, pane: &str, text: &str) {
    tmux.run_ok(["send-keys", "-t", pane, "-l", text]).unwrap();
    tmux.run_ok(["send-keys", "-t", pane, "Enter"]).unwrap();
}

fn first_pane(tmux: &PrivateServer) -> String {
    tmux.run_ok(["list-panes", "-a", "-F", "#{pane_id}"])
        .unwrap()
        .lines()
        .next()
        .unwrap()
        .to_owned()
}

fn ok(r: &Value) -> Value {
    assert!(r.get("error").is_none(), "error: {r}");
    r["result"].clone()
}

fn err(r: &Value) -> (i64, String) {
    let e = r.get("error").unwrap_or_else(|| panic!("no error: {r}"));
    (
        e["code"].as_i64().unwrap(),
        e["message"].as_str().unwrap().to_owned(),
    )
}

fn read(s: &mut Serve, uri: &str) -> Value {
    let r = ok(&s.request("resources/read", json!({ "uri": uri })));
    let c = r["contents"][0].clone();
    assert_eq!(c["uri"], uri, "{r}");
    c
}

fn is_updated(m: &Value, uri: &str) -> bool {
    m["method"] == "notifications/resources/updated" && m["params"]["uri"] == uri
}

fn is_list_changed(m: &Value) -> bool {
    m["method"] == "notifications/resources/list_changed"
}

/// Every JSON resource holds exactly what its tool returns.
fn json_reads_match_their_tools(s: &mut Serve, pane: &str) {
    // JSON resources hold what the matching tools return.
    let pairs = [
        ("tmux://sessions", "list_sessions", json!({})),
        (
            "tmux://session/$0",
            "get_session_info",
            json!({"session_id": "$0"}),
        ),
        (
            "tmux://window/@0",
            "get_window_info",
            json!({"window_id": "@0"}),
        ),
        (
            &*format!("tmux://pane/{}", &pane[1..]),
            "get_pane_info",
            json!({"pane_id": pane}),
        ),
    ]
    .map(|(u, t, a)| (u.to_owned(), t, a));
    for (uri, tool, args) in pairs {
        let c = read(s, &uri);
        assert_eq!(c["mimeType"], "application/json");
        let got: Value = serde_json::from_str(c["text"].as_str().unwrap()).unwrap();
        let want = s.call_ok(tool, args);
        assert_eq!(got, want, "{uri} differs from {tool}");
    }
}

#[test]
fn capabilities_list_templates_and_every_kind_read() {
    let (tmux, mut s) = Serve::with_tmux("res-read");
    let init = s.initialize();
    assert_eq!(
        init["capabilities"]["resources"],
        json!({"subscribe": true, "listChanged": true})
    );
    assert!(init["capabilities"]["prompts"].is_object());
    let pane = first_pane(&tmux);
    plain_shell(&tmux, &pane);
    type_line(&tmux, &pane, "echo READ-MARK-$((6*7))");
    assert!(eventually(Duration::from_secs(10), || tmux
        .run_ok(["capture-pane", "-p", "-t", &pane])
        .unwrap_or_default()
        .contains("READ-MARK-42")));

    let list = ok(&s.request("resources/list", json!({})));
    let uris: Vec<&str> = list["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["uri"].as_str().unwrap())
        .collect();
    assert_eq!(
        uris,
        [
            "tmux://sessions".to_owned(),
            format!("tmux://pane/{}/screen", &pane[1..])
        ]
    );
    assert!(list.get("nextCursor").is_none());

    let templates = ok(&s.request("resources/templates/list", json!({})));
    let names: Vec<&str> = templates["resourceTemplates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["uriTemplate"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "tmux://session/{session_id}",
            "tmux://window/{window_id}",
            "tmux://pane/{pane_number}",
            "tmux://pane/{pane_number}/screen",
            "tmux://pane/{pane_number}/history{?lines}",
            "tmux://pane/{pane_number}/journal{?since,until}",
        ]
    );

    json_reads_match_their_tools(&mut s, &pane);
    let c = read(&mut s, &format!("tmux://pane/{}/screen", &pane[1..]));
    assert_eq!(c["mimeType"], "text/plain");
    assert!(c["text"].as_str().unwrap().contains("READ-MARK-42"), "{c}");
    let c = read(
        &mut s,
        &format!("tmux://pane/{}/history?lines=2", &pane[1..]),
    );
    let text = c["text"].as_str().unwrap();
    assert_eq!(text.lines().count(), 2, "{text:?}");
    assert!(
        c["_meta"]["panescan/capture"]["dropped_lines"]
            .as_u64()
            .unwrap()
            > 0
    );
    // Bounded like capture_pane: over the ceiling is an error naming it.
    let r = s.request(
        "resources/read",
        json!({"uri": format!("tmux://pane/{}/history?lines=99999999", &pane[1..])}),
    );
    let (code, message) = err(&r);
    assert_eq!(code, -32602);
    assert!(
        message.contains("?lines=") && message.contains("10000"),
        "{message}"
    );
}

#[test]
fn malformed_and_unknown_uris_are_errors_naming_what_exists() {
    let (tmux, mut s) = Serve::with_tmux("res-bad-uri");
    s.initialize();
    let pane = first_pane(&tmux);
    for uri in [
        "tmux://pane/%1;kill-server/screen",
        "tmux://../etc",
        "file:///etc/passwd",
    ] {
        let (code, message) = err(&s.request("resources/read", json!({ "uri": uri })));
        assert_eq!(code, -32602, "{uri}: {message}");
        assert!(
            message.contains("tmux://pane/{pane_number}/screen"),
            "{uri}: {message}"
        );
        let (code, _) = err(&s.request("resources/subscribe", json!({ "uri": uri })));
        assert_eq!(code, -32602, "subscribe {uri}");
    }
    // The form written before (`%N`, not a valid URI) is refused naming
    // the form to use, never read as another pane.
    for old in [
        format!("tmux://pane/{pane}/screen"),
        format!("tmux://pane/%25{}/screen", &pane[1..]),
    ] {
        let (code, message) = err(&s.request("resources/read", json!({ "uri": old })));
        assert_eq!(code, -32602, "{old}: {message}");
        assert!(message.contains("without %"), "{old}: {message}");
    }
    let (_, message) = err(&s.request(
        "resources/read",
        json!({ "uri": format!("tmux://pane/{pane}/screen") }),
    ));
    assert!(
        message.contains(&format!("tmux://pane/{}/screen", &pane[1..])),
        "{message}"
    );
    // Each names what exists of its own kind.
    for (uri, exists) in [
        ("tmux://pane/99999/screen", pane.as_str()),
        ("tmux://window/@999", "@0"),
        ("tmux://session/$999", "$0"),
    ] {
        let (code, message) = err(&s.request("resources/read", json!({ "uri": uri })));
        assert_eq!(code, -32002, "{uri}: {message}");
        assert!(
            message.contains(exists),
            "{uri} does not name {exists}: {message}"
        );
        let (code, _) = err(&s.request("resources/subscribe", json!({ "uri": uri })));
        assert_eq!(code, -32002, "subscribe {uri}");
    }
    let (code, message) = err(&s.request("resources/list", json!({"cursor": "bogus"})));
    assert_eq!(code, -32602, "{message}");
    // The server is whole: tmux still answers.
    assert!(tmux.run_ok(["list-sessions"]).is_ok());
}

#[test]
fn a_subscribed_screen_is_updated_when_the_pane_prints_and_not_after_unsubscribe() {
    let (tmux, mut s) = Serve::with_tmux("res-updated");
    s.initialize();
    let pane = first_pane(&tmux);
    plain_shell(&tmux, &pane);
    let uri = format!("tmux://pane/{}/screen", &pane[1..]);
    ok(&s.request("resources/subscribe", json!({ "uri": uri })));
    s.drain(Duration::from_millis(300));

    let typed = Instant::now();
    type_line(&tmux, &pane, "echo hello-subscriber");
    s.message(REPLY_TIMEOUT, |m| is_updated(m, &uri));
    eprintln!("updated {:?} after the keys were sent", typed.elapsed());
    // What the update points at is there to read.
    assert!(eventually(Duration::from_secs(10), || read(&mut s, &uri)
        ["text"]
        .as_str()
        .unwrap()
        .contains("hello-subscriber")));

    // Debounced: a pane printing all the time is at most one update per 100 ms.
    let printing = Instant::now();
    type_line(
        &tmux,
        &pane,
        "for i in $(seq 150); do echo tick $i; sleep 0.01; done",
    );
    // Counted over the whole time the server could have sent them (from
    // before the keys to the last read), not between read times: updates
    // read late arrive together, and that is not a burst the server sent.
    // (An update left from the line before counts too: the bound's 2.)
    let mut seen = 0u128;
    let until = printing + Duration::from_millis(1500);
    while Instant::now() < until {
        if let Some(m) = s.recv(Duration::from_millis(50)) {
            seen += u128::from(is_updated(&m, &uri));
        }
    }
    let span = printing.elapsed();
    assert!(seen >= 2, "a printing pane sent {seen} updates");
    let most = span.as_millis() / 100 + 2;
    assert!(
        seen <= most,
        "{seen} updates in {span:?}: more than one per 100 ms"
    );

    type_line(&tmux, &pane, "clear");
    s.drain(Duration::from_millis(500));
    ok(&s.request("resources/unsubscribe", json!({ "uri": uri })));
    type_line(&tmux, &pane, "echo after-unsubscribe");
    assert!(eventually(Duration::from_secs(10), || tmux
        .run_ok(["capture-pane", "-p", "-t", &pane])
        .unwrap_or_default()
        .contains("after-unsubscribe\n")));
    let late: Vec<Value> = s
        .drain(Duration::from_millis(800))
        .into_iter()
        .filter(|m| {
            m["method"]
                .as_str()
                .is_some_and(|x| x.starts_with("notifications/resources"))
        })
        .collect();
    assert!(late.is_empty(), "notifications after unsubscribe: {late:?}");
}

#[test]
fn a_pane_the_event_stream_does_not_cover_is_polled() {
    let (tmux, mut s) = Serve::with_tmux("res-polled");
    s.initialize();
    // Two watched panes in main, one in another session: the one control
    // client shows main, so the other session's pane is polled.
    let main_pane = first_pane(&tmux);
    let second = tmux
        .run_ok(["new-window", "-d", "-t", "main:", "-P", "-F", "#{pane_id}"])
        .unwrap()
        .trim()
        .to_owned();
    let other = tmux
        .run_ok(["new-session", "-d", "-s", "other", "-P", "-F", "#{pane_id}"])
        .unwrap()
        .trim()
        .to_owned();
    plain_shell(&tmux, &other);
    for pane in [&main_pane, &second, &other] {
        let uri = format!("tmux://pane/{}/screen", &pane[1..]);
        ok(&s.request("resources/subscribe", json!({ "uri": uri })));
    }
    s.drain(Duration::from_millis(300));
    let uri = format!("tmux://pane/{}/screen", &other[1..]);
    type_line(&tmux, &other, "echo polled-pane");
    s.message(REPLY_TIMEOUT, |m| is_updated(m, &uri));
    assert!(read(&mut s, &uri)["text"]
        .as_str()
        .unwrap()
        .contains("polled-pane"));
}

#[test]
fn a_window_created_and_killed_sends_list_changed_and_session_updates() {
    let (tmux, mut s) = Serve::with_tmux("res-list-changed");
    s.initialize();
    for uri in ["tmux://sessions", "tmux://session/$0"] {
        ok(&s.request("resources/subscribe", json!({ "uri": uri })));
    }
    s.drain(Duration::from_millis(300));
    let window = tmux
        .run_ok(["new-window", "-d", "-P", "-F", "#{window_id}"])
        .unwrap()
        .trim()
        .to_owned();
    s.message(REPLY_TIMEOUT, is_list_changed);
    s.message(REPLY_TIMEOUT, |m| is_updated(m, "tmux://session/$0"));
    s.message(REPLY_TIMEOUT, |m| is_updated(m, "tmux://sessions"));
    s.drain(Duration::from_millis(300));
    tmux.run_ok(["kill-window", "-t", &window]).unwrap();
    s.message(REPLY_TIMEOUT, is_list_changed);
    s.message(REPLY_TIMEOUT, |m| is_updated(m, "tmux://session/$0"));
}

#[test]
fn the_2026_era_listens_with_a_filter_and_ends_the_stream_on_cancel() {
    let (tmux, mut s) = Serve::with_tmux("res-listen");
    let pane = first_pane(&tmux);
    plain_shell(&tmux, &pane);
    let uri = format!("tmux://pane/{}/screen", &pane[1..]);
    // resources/subscribe is gone in 2026-07-28.
    let (code, _) = err(&s.request(
        "resources/subscribe",
        json!({"uri": uri, "_meta": modern_meta()}),
    ));
    assert_eq!(code, -32601);

    let id = json!("listen-1");
    s.send(
        &json!({"jsonrpc": "2.0", "id": id, "method": "subscriptions/listen", "params": {
        "_meta": modern_meta(),
        "notifications": {"resourcesListChanged": true,
                          "resourceSubscriptions": [uri, "tmux://pane/99999/screen"]}}}),
    );
    let ack = s.message(REPLY_TIMEOUT, |m| {
        m["method"] == "notifications/subscriptions/acknowledged"
    });
    assert_eq!(
        ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        id
    );
    // A pane that does not exist is not honoured.
    assert_eq!(
        ack["params"]["notifications"],
        json!({"resourcesListChanged": true, "resourceSubscriptions": [uri]})
    );
    type_line(&tmux, &pane, "echo to-the-stream");
    let m = s.message(REPLY_TIMEOUT, |m| is_updated(m, &uri));
    assert_eq!(
        m["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        id
    );
    tmux.run_ok(["new-window", "-d"]).unwrap();
    let m = s.message(REPLY_TIMEOUT, is_list_changed);
    assert_eq!(
        m["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        id
    );

    s.notify("notifications/cancelled", json!({"requestId": id}));
    s.drain(Duration::from_millis(300));
    type_line(&tmux, &pane, "echo after-cancel");
    tmux.run_ok(["new-window", "-d"]).unwrap();
    let late: Vec<Value> = s
        .drain(Duration::from_millis(1200))
        .into_iter()
        .filter(|m| {
            m.get("id") == Some(&id)
                || m["method"]
                    .as_str()
                    .is_some_and(|x| x.starts_with("notifications/resources"))
        })
        .collect();
    assert!(late.is_empty(), "after the cancel: {late:?}");
    // Reading works in this era too.
    let r = ok(&s.request(
        "resources/read",
        json!({"uri": uri, "_meta": modern_meta()}),
    ));
    assert_eq!(r["resultType"], "complete");
    // 2026-07-28 results say how long they may be cached: a screen, never.
    assert_eq!(
        (r["ttlMs"].clone(), r["cacheScope"].clone()),
        (json!(0), json!("private"))
    );
    assert!(r["contents"][0]["text"]
        .as_str()
        .unwrap()
        .contains("after-cancel"));
}

#[test]
fn a_thousand_panes_are_listed_in_pages() {
    let tmux = PrivateServer::start("res-1000", 80, 24).unwrap();
    let script = "new-window -d -t main: 'exec sleep 1000000'\n".repeat(999);
    tmux.source(&script).unwrap();
    let want: BTreeSet<String> = tmux
        .run_ok(["list-panes", "-a", "-F", "#{pane_id}"])
        .unwrap()
        .lines()
        .map(|id| format!("tmux://pane/{}/screen", id.trim_start_matches('%')))
        .collect();
    assert_eq!(want.len(), 1000);
    let mut s = Serve::spawn(tmux.socket_name());
    s.initialize();
    let (mut got, mut pages, mut cursor) = (Vec::new(), 0, Value::Null);
    let started = Instant::now();
    loop {
        let page = ok(&s.request("resources/list", json!({ "cursor": cursor })));
        pages += 1;
        let rows = page["resources"].as_array().unwrap();
        assert!(rows.len() <= 201, "a page of {}", rows.len());
        got.extend(rows.iter().map(|r| r["uri"].as_str().unwrap().to_owned()));
        match page.get("nextCursor") {
            Some(c) => cursor = c.clone(),
            None => break,
        }
        assert!(pages < 50, "the pages never end");
    }
    eprintln!(
        "1,000 panes listed in {pages} pages in {:?}",
        started.elapsed()
    );
    assert_eq!(pages, 5);
    assert_eq!(got[0], "tmux://sessions");
    let listed: BTreeSet<String> = got[1..].iter().cloned().collect();
    assert_eq!(listed.len(), got.len() - 1, "a pane listed twice");
    assert_eq!(listed, want);
}

#[test]
fn five_hundred_subscriptions_end_with_the_connection() {
    let tmux = PrivateServer::start("res-500", 80, 24).unwrap();
    tmux.source(&"new-window -d -t main: 'exec sleep 1000000'\n".repeat(49))
        .unwrap();
    let panes: Vec<String> = tmux
        .run_ok(["list-panes", "-a", "-F", "#{pane_id}"])
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    assert_eq!(panes.len(), 50);
    let mut s = Serve::spawn(tmux.socket_name());
    s.initialize();
    let mut n = 0;
    for pane in &panes {
        let mut uris = vec![
            format!("tmux://pane/{}", &pane[1..]),
            format!("tmux://pane/{}/screen", &pane[1..]),
            format!("tmux://pane/{}/history", &pane[1..]),
        ];
        uris.extend((1..=7).map(|l| format!("tmux://pane/{}/history?lines={l}", &pane[1..])));
        for uri in uris {
            ok(&s.request("resources/subscribe", json!({ "uri": uri })));
            n += 1;
        }
    }
    assert_eq!(n, 500);
    // panescan's one control client serves them all.
    let clients = || {
        tmux.run_ok(["list-clients", "-F", "#{client_pid}"])
            .unwrap_or_default()
            .lines()
            .count()
    };
    assert_eq!(clients(), 1);
    s.close_stdin();
    assert!(
        s.wait_exit(Duration::from_secs(10)).is_some(),
        "serve did not exit"
    );
    assert!(
        eventually(Duration::from_secs(10), || clients() == 0),
        "a client stayed attached after the connection ended"
    );
    assert_eq!(
        tmux.run_ok(["list-windows", "-a"]).unwrap().lines().count(),
        50
    );
}

#[test]
fn prompts_are_listed_and_filled_and_bad_arguments_named() {
    let (_tmux, mut s) = Serve::with_tmux("res-prompts");
    s.initialize();
    let list = ok(&s.request("prompts/list", json!({})));
    let names: Vec<&str> = list["prompts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "run_and_wait",
            "diagnose_failing_pane",
            "triage_panes",
            "interrupt_gracefully",
            "build_dev_workspace"
        ]
    );
    let r = ok(&s.request(
        "prompts/get",
        json!({"name": "run_and_wait", "arguments": {"pane_id": "%3", "command": "make test"}}),
    ));
    let text = r["messages"][0]["content"]["text"].as_str().unwrap();
    assert_eq!(r["messages"][0]["role"], "user");
    for want in ["run_command", "wait_for_command", "%3", "make test"] {
        assert!(text.contains(want), "{want} missing from {text}");
    }
    let r = ok(&s.request(
        "prompts/get",
        json!({"name": "build_dev_workspace", "arguments": {"project_dir": "/src/app"}}),
    ));
    let text = r["messages"][0]["content"]["text"].as_str().unwrap();
    for want in ["create_session", "create_window", "split_window", "\"app\""] {
        assert!(text.contains(want), "{want} missing from {text}");
    }
    for (args, names) in [
        (
            json!({"name": "run_and_wait", "arguments": {"pane_id": "%3"}}),
            "\"command\"",
        ),
        (
            json!({"name": "run_and_wait", "arguments": {"pane_id": "3", "command": "x"}}),
            "\"pane_id\"",
        ),
        (
            json!({"name": "triage_panes", "arguments": {"colour": "x"}}),
            "\"colour\"",
        ),
        (
            json!({"name": "diagnose_failing_pane", "arguments": {"pane_id": "%1", "lines": "-5"}}),
            "\"lines\"",
        ),
        (json!({"name": "no_such_prompt"}), "run_and_wait"),
    ] {
        let (code, message) = err(&s.request("prompts/get", args.clone()));
        assert_eq!(code, -32602, "{args}");
        assert!(message.contains(names), "{args}: {message}");
    }
}

/// The history resource without `?lines` is the newest 200 lines (its
/// documented default), and the screen and history resources return a
/// secret redacted, as capture_pane does.
#[test]
fn history_defaults_to_200_lines_and_screen_and_history_are_redacted() {
    let (tmux, mut s) = Serve::with_tmux("res-default");
    s.initialize();
    let token = format!("ghp_{}", "Ab3".repeat(12));
    let script = format!("sh -c 'seq 1 500; echo token {token}; exec sleep 600'");
    let pane = tmux
        .run_ok(["new-window", "-d", "-P", "-F", "#{pane_id}", &script])
        .unwrap()
        .trim()
        .to_owned();
    let shown = eventually(Duration::from_secs(10), || {
        tmux.run_ok(["capture-pane", "-p", "-t", &pane])
            .is_ok_and(|t| t.contains("token ghp_"))
    });
    assert!(shown, "the pane never printed");
    let text = |s: &mut Serve, uri: String| read(s, &uri)["text"].as_str().unwrap().to_owned();
    let n = &pane[1..];
    let default = text(&mut s, format!("tmux://pane/{n}/history"));
    assert_eq!(default.lines().count(), 200, "{default:?}");
    assert_eq!(
        default,
        text(&mut s, format!("tmux://pane/{n}/history?lines=200"))
    );
    assert_ne!(
        default,
        text(&mut s, format!("tmux://pane/{n}/history?lines=199"))
    );
    let screen = text(&mut s, format!("tmux://pane/{n}/screen"));
    for (what, got) in [("history", &default), ("screen", &screen)] {
        assert!(got.contains("500\n"), "{what}: {got:?}");
        assert!(!got.contains(&token), "{what} shows the token: {got:?}");
        assert!(
            got.contains("token [REDACTED:GITHUB_TOKEN]"),
            "{what}: {got:?}"
        );
    }
}
