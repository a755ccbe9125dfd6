//! `serve --http`: MCP over Streamable HTTP on loopback, each test with a
//! private tmux server and its own endpoint (killed at the end, also on
//! failure). The client here is a few lines over a TcpStream, so every
//! header and every byte a test sends is the test's own.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::os::unix::fs::PermissionsExt;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::TempDir;
use panescan::testing::private_server::PrivateServer;
use serde_json::{json, Value};

const TOKEN_A: &str = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
const TOKEN_B: &str = "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb";
const WAIT: Duration = Duration::from_secs(20);

/// A `panescan serve --http 127.0.0.1:0` on a private tmux server.
struct Endpoint {
    child: Child,
    addr: String,
    stderr: std::sync::Mutex<mpsc::Receiver<String>>,
    _dir: TempDir,
}

impl Endpoint {
    /// With a token file of `tokens` (None: `--no-auth`) and `extra` flags.
    fn start(tmux: &PrivateServer, tokens: Option<&str>, extra: &[&str]) -> Endpoint {
        let dir = TempDir::new("http");
        let file = dir.0.join("tokens");
        let mut args = vec![
            "serve".to_owned(),
            "--socket-name".into(),
            tmux.socket_name().into(),
            "--http".into(),
            "127.0.0.1:0".into(),
        ];
        match tokens {
            Some(text) => {
                std::fs::write(&file, text).unwrap();
                std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
                args.extend(["--token-file".into(), file.display().to_string()]);
            }
            None => args.push("--no-auth".into()),
        }
        args.extend(extra.iter().map(|s| s.to_string()));
        let mut child = Command::new(env!("CARGO_BIN_EXE_panescan"))
            .args(&args)
            .env("PANESCAN_NO_DAEMON", "1")
            .env_remove("TMUX")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let (tx, rx) = mpsc::channel();
        let err = child.stderr.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(err).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        let mut addr = None;
        let until = Instant::now() + WAIT;
        while addr.is_none() && Instant::now() < until {
            if let Ok(line) = rx.recv_timeout(Duration::from_millis(100)) {
                addr = line
                    .split_once("MCP over HTTP at http://")
                    .map(|(_, rest)| rest.trim_end_matches("/mcp").to_owned());
            }
        }
        Endpoint {
            addr: addr.expect("serve --http says where it listens"),
            child,
            stderr: std::sync::Mutex::new(rx),
            _dir: dir,
        }
    }

    fn post(&self, token: Option<&str>, session: Option<&str>, body: &Value) -> Reply {
        let mut headers = vec![("accept", "application/json, text/event-stream".to_owned())];
        if let Some(t) = token {
            headers.push(("authorization", format!("Bearer {t}")));
        }
        if let Some(s) = session {
            headers.push(("mcp-session-id", s.to_owned()));
        }
        let headers: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
        self.request("POST", &headers, body.to_string().as_bytes())
    }

    /// One request, its whole answer (for SSE: until the stream ends).
    fn request(&self, method: &str, headers: &[(&str, &str)], body: &[u8]) -> Reply {
        let mut stream = self.open(method, headers, body);
        Reply::read(&mut stream)
    }

    /// Sends a request and leaves its answer unread.
    fn open(&self, method: &str, headers: &[(&str, &str)], body: &[u8]) -> TcpStream {
        let mut stream = TcpStream::connect(&self.addr).unwrap();
        stream.set_read_timeout(Some(WAIT)).unwrap();
        let mut head = format!("{method} /mcp HTTP/1.1\r\nconnection: close\r\n");
        if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
            head.push_str(&format!("host: {}\r\n", self.addr));
        }
        for (k, v) in headers {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        head.push_str(&format!(
            "content-type: application/json\r\ncontent-length: {}\r\n\r\n",
            body.len()
        ));
        stream.write_all(head.as_bytes()).unwrap();
        // A refused request may be answered (and closed) before the body
        // is all sent.
        let _ = stream.write_all(body);
        stream
    }

    /// An initialized session with `token`: its id.
    fn initialize(&self, token: Option<&str>) -> String {
        self.initialize_with(token, json!({}))
    }

    /// An initialized session declaring `capabilities`: its id.
    fn initialize_with(&self, token: Option<&str>, capabilities: Value) -> String {
        let r = self.post(
            token,
            None,
            &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": capabilities,
                "clientInfo": {"name": "serve_http", "version": "0"}}}),
        );
        assert_eq!(r.status, 200, "initialize: {}", r.text());
        r.header("mcp-session-id").expect("a session id").to_owned()
    }

    fn signal(&self, sig: &str) {
        Command::new("kill")
            .args([&format!("-{sig}"), &self.child.id().to_string()])
            .status()
            .unwrap();
    }
}

impl Drop for Endpoint {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An HTTP answer.
#[derive(Debug)]
struct Reply {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Reply {
    fn read(stream: &mut TcpStream) -> Reply {
        let mut reader = BufReader::new(stream);
        let (status, headers) = read_head(&mut reader);
        let mut body = Vec::new();
        let chunked = headers
            .iter()
            .any(|(k, v)| k == "transfer-encoding" && v.contains("chunked"));
        if chunked {
            while let Some(chunk) = read_chunk(&mut reader) {
                body.extend_from_slice(&chunk);
            }
        } else {
            let _ = reader.read_to_end(&mut body);
        }
        Reply {
            status,
            headers,
            body,
        }
    }

    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// The JSON-RPC messages: the body, or each SSE event's data.
    fn messages(&self) -> Vec<Value> {
        if self.header("content-type") == Some("text/event-stream") {
            sse_messages(&self.text())
        } else {
            serde_json::from_slice(&self.body).into_iter().collect()
        }
    }

    fn json(&self) -> Value {
        self.messages().pop().unwrap_or(Value::Null)
    }
}

fn read_head(reader: &mut impl BufRead) -> (u16, Vec<(String, String)>) {
    let mut line = String::new();
    reader.read_line(&mut line).unwrap();
    let status = line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status line: {line:?}"));
    let mut headers = Vec::new();
    loop {
        line.clear();
        reader.read_line(&mut line).unwrap();
        let l = line.trim_end();
        if l.is_empty() {
            break;
        }
        if let Some((k, v)) = l.split_once(':') {
            headers.push((k.trim().to_ascii_lowercase(), v.trim().to_owned()));
        }
    }
    (status, headers)
}

/// The next chunk of a chunked body (`None`: its end, or the connection's).
fn read_chunk(reader: &mut impl BufRead) -> Option<Vec<u8>> {
    let mut size = String::new();
    if reader.read_line(&mut size).ok()? == 0 {
        return None;
    }
    let n = usize::from_str_radix(size.trim(), 16).ok()?;
    if n == 0 {
        return None;
    }
    let mut chunk = vec![0; n + 2];
    reader.read_exact(&mut chunk).ok()?;
    chunk.truncate(n);
    Some(chunk)
}

fn sse_messages(text: &str) -> Vec<Value> {
    text.lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .filter_map(|d| serde_json::from_str(d).ok())
        .collect()
}

/// An SSE stream read as it arrives.
struct Stream {
    reader: BufReader<TcpStream>,
    pending: String,
    /// Every event id seen, the priming event's included.
    ids: Vec<String>,
}

impl Stream {
    fn open(stream: TcpStream) -> (u16, Vec<(String, String)>, Stream) {
        let mut reader = BufReader::new(stream);
        let (status, headers) = read_head(&mut reader);
        (
            status,
            headers,
            Stream {
                reader,
                pending: String::new(),
                ids: Vec::new(),
            },
        )
    }

    /// The next message, or `None` at the stream's end or after `timeout`.
    fn next(&mut self, timeout: Duration) -> Option<Value> {
        let until = Instant::now() + timeout;
        loop {
            if let Some(end) = self.pending.find("\n\n") {
                let event: String = self.pending.drain(..end + 2).collect();
                if let Some(id) = event.lines().find_map(|l| l.strip_prefix("id: ")) {
                    self.ids.push(id.to_owned());
                }
                if let Some(m) = sse_messages(&event).pop() {
                    return Some(m);
                }
                continue;
            }
            let left = until.checked_duration_since(Instant::now())?;
            self.reader
                .get_ref()
                .set_read_timeout(Some(left.max(Duration::from_millis(1))))
                .ok()?;
            let chunk = read_chunk(&mut self.reader)?;
            self.pending.push_str(&String::from_utf8_lossy(&chunk));
        }
    }
}

fn tools_of(reply: &Reply) -> Vec<String> {
    reply.json()["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("tools/list: {}", reply.text()))
        .iter()
        .map(|t| t["name"].as_str().unwrap_or_default().to_owned())
        .collect()
}

fn tmux(label: &str) -> PrivateServer {
    PrivateServer::start(label, 80, 24).expect("private tmux server starts")
}

/// Pane %0 of `t` holds 40,000 numbered lines (history and screen), so a
/// deep search takes long enough to report progress.
fn fill_with_40000_lines(t: &PrivateServer) {
    t.run_ok([
        "respawn-pane",
        "-k",
        "-t",
        "%0",
        "seq 1 40000; exec sleep 1000000",
    ])
    .unwrap();
    assert!(common::eventually(WAIT, || t
        .run_ok(["capture-pane", "-p", "-t", "%0"])
        .is_ok_and(|o| o.contains("39999"))));
}

/// A search_panes call (id "s") over all of that history, asking for
/// progress with token "tok".
fn deep_search_with_progress() -> Value {
    json!({"jsonrpc": "2.0", "id": "s", "method": "tools/call", "params": {
        "name": "search_panes", "arguments": {"pattern": "^39000$", "regex": true, "scrollback_lines": 100000},
        "_meta": {"progressToken": "tok"}}})
}

#[test]
fn a_missing_or_wrong_token_gets_401_with_a_bearer_challenge() {
    let t = tmux("http-401");
    let ep = Endpoint::start(&t, Some(&format!("{TOKEN_A}\n")), &[]);
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}});
    let none = ep.post(None, None, &init);
    assert_eq!(none.status, 401, "{}", none.text());
    assert!(none
        .header("www-authenticate")
        .unwrap()
        .starts_with("Bearer"));
    let near = format!("{}x", &TOKEN_A[..63]);
    for wrong in [TOKEN_B, near.as_str(), &TOKEN_A[..63]] {
        let r = ep.post(Some(wrong), None, &init);
        assert_eq!(r.status, 401, "{wrong}: {}", r.text());
        assert!(r
            .header("www-authenticate")
            .unwrap()
            .contains("invalid_token"));
    }
    ep.initialize(Some(TOKEN_A));
}

#[test]
fn a_tokens_tier_decides_its_tools_and_sessions_stay_with_their_token() {
    let t = tmux("http-tiers");
    let ep = Endpoint::start(
        &t,
        Some(&format!("readonly {TOKEN_A}\nmutating {TOKEN_B}\n")),
        &[],
    );
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    let a = ep.initialize(Some(TOKEN_A));
    let b = ep.initialize(Some(TOKEN_B));
    let read_tools = tools_of(&ep.post(Some(TOKEN_A), Some(&a), &list));
    let write_tools = tools_of(&ep.post(Some(TOKEN_B), Some(&b), &list));
    assert!(
        !read_tools.iter().any(|t| t == "send_keys"),
        "{read_tools:?}"
    );
    assert!(
        write_tools.iter().any(|t| t == "send_keys"),
        "{write_tools:?}"
    );
    // B cannot use A's session, which would give B A's tier (or the
    // reverse): to B it does not exist.
    assert_eq!(ep.post(Some(TOKEN_B), Some(&a), &list).status, 404);
    // A stateless request runs at its token's tier too.
    let modern = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list",
        "params": {"_meta": common::modern_meta()}});
    let headers = |token: &str| {
        vec![
            ("accept", "application/json".to_owned()),
            ("authorization", format!("Bearer {token}")),
            ("mcp-protocol-version", "2026-07-28".to_owned()),
            ("mcp-method", "tools/list".to_owned()),
        ]
    };
    for (token, has) in [(TOKEN_A, false), (TOKEN_B, true)] {
        let h = headers(token);
        let h: Vec<(&str, &str)> = h.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let tools = tools_of(&ep.request("POST", &h, modern.to_string().as_bytes()));
        assert_eq!(tools.iter().any(|t| t == "send_keys"), has, "{tools:?}");
    }
}

#[test]
fn a_foreign_origin_or_host_gets_403() {
    let t = tmux("http-origin");
    let ep = Endpoint::start(
        &t,
        Some(&format!("{TOKEN_A}\n")),
        &["--allow-origin", "https://ok.example"],
    );
    let auth = format!("Bearer {TOKEN_A}");
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}).to_string();
    let with = |extra: &[(&str, &str)]| {
        let mut h = vec![
            ("authorization", auth.as_str()),
            ("accept", "application/json"),
        ];
        h.extend_from_slice(extra);
        ep.request("POST", &h, body.as_bytes()).status
    };
    assert_eq!(with(&[("origin", "https://evil.example")]), 403);
    assert_eq!(with(&[("host", "evil.example")]), 403);
    assert_eq!(
        with(&[
            ("host", "evil.example:80"),
            ("origin", "https://ok.example")
        ]),
        403
    );
    assert_eq!(with(&[("origin", "https://ok.example")]), 200);
    assert_eq!(with(&[]), 200);
}

#[test]
fn a_body_over_the_line_ceiling_gets_413_and_the_endpoint_goes_on() {
    let t = tmux("http-body");
    let ep = Endpoint::start(&t, None, &[]);
    let big = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":{{\"x\":\"{}\"}}}}",
        "x".repeat(4 * 1024 * 1024)
    );
    let r = ep.request("POST", &[("accept", "application/json")], big.as_bytes());
    assert_eq!(r.status, 413, "{}", r.text());
    ep.initialize(None);
}

#[test]
fn two_hundred_sessions_at_once_and_one_more_refused() {
    let t = tmux("http-200");
    let ep = Endpoint::start(&t, None, &["--max-sessions", "200"]);
    let ep = &ep;
    let sessions: Vec<String> = std::thread::scope(|s| {
        let threads: Vec<_> = (0..20)
            .map(|_| {
                s.spawn(move || {
                    (0..10)
                        .map(|_| {
                            let id = ep.initialize(None);
                            let r = ep.post(
                                None,
                                Some(&id),
                                &json!({"jsonrpc": "2.0", "id": 9, "method": "ping"}),
                            );
                            assert_eq!(r.json()["id"], 9, "{}", r.text());
                            id
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        threads
            .into_iter()
            .flat_map(|t| t.join().unwrap())
            .collect()
    });
    let unique: std::collections::BTreeSet<_> = sessions.iter().collect();
    assert_eq!(unique.len(), 200);
    let over = ep.post(
        None,
        None,
        &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}),
    );
    assert_eq!(over.status, 503, "{}", over.text());
    // Every session still answers.
    for id in sessions.iter().step_by(20) {
        let r = ep.post(
            None,
            Some(id),
            &json!({"jsonrpc": "2.0", "id": 5, "method": "tools/list"}),
        );
        assert!(!tools_of(&r).is_empty());
    }
}

#[test]
fn a_reader_that_stops_holds_up_nobody() {
    let t = tmux("http-slow");
    let ep = Endpoint::start(&t, None, &[]);
    let slow = ep.initialize(None);
    // Its GET stream and a long call's stream, neither ever read.
    let _get = ep.open(
        "GET",
        &[("accept", "text/event-stream"), ("mcp-session-id", &slow)],
        b"",
    );
    let call = json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {
        "name": "wait_for_text", "arguments": {"pane_id": "%0", "pattern": "never here", "timeout_ms": 60000},
        "_meta": {"progressToken": "p"}}});
    let _held = ep.open(
        "POST",
        &[
            ("accept", "text/event-stream, application/json"),
            ("mcp-session-id", &slow),
        ],
        call.to_string().as_bytes(),
    );
    let other = ep.initialize(None);
    let started = Instant::now();
    for n in 0..20 {
        let r = ep.post(
            None,
            Some(&other),
            &json!({"jsonrpc": "2.0", "id": n, "method": "tools/call",
            "params": {"name": "list_panes", "arguments": {}}}),
        );
        assert_eq!(r.json()["id"], n, "{}", r.text());
    }
    // The slow session's own other requests answer too.
    let r = ep.post(
        None,
        Some(&slow),
        &json!({"jsonrpc": "2.0", "id": 77, "method": "ping"}),
    );
    assert_eq!(r.json()["id"], 77);
    assert!(started.elapsed() < WAIT, "{:?}", started.elapsed());
}

#[test]
fn an_idle_session_expires() {
    let t = tmux("http-idle");
    let ep = Endpoint::start(&t, None, &["--session-idle", "1"]);
    let id = ep.initialize(None);
    let ping = json!({"jsonrpc": "2.0", "id": 2, "method": "ping"});
    assert_eq!(ep.post(None, Some(&id), &ping).status, 200);
    std::thread::sleep(Duration::from_millis(2500));
    assert_eq!(ep.post(None, Some(&id), &ping).status, 404);
    // A session in use does not expire.
    let busy = ep.initialize(None);
    for _ in 0..5 {
        std::thread::sleep(Duration::from_millis(500));
        assert_eq!(ep.post(None, Some(&busy), &ping).status, 200);
    }
}

#[test]
fn sigterm_with_open_streams_answers_them_and_exits() {
    let t = tmux("http-term");
    let mut ep = Endpoint::start(&t, None, &[]);
    let id = ep.initialize(None);
    let (status, _, mut get) = Stream::open(ep.open(
        "GET",
        &[("accept", "text/event-stream"), ("mcp-session-id", &id)],
        b"",
    ));
    assert_eq!(status, 200);
    let call = json!({"jsonrpc": "2.0", "id": 41, "method": "tools/call", "params": {
        "name": "wait_for_text", "arguments": {"pane_id": "%0", "pattern": "never here", "timeout_ms": 60000}}});
    let (status, headers, mut waiting) = Stream::open(ep.open(
        "POST",
        &[
            ("accept", "text/event-stream, application/json"),
            ("mcp-session-id", &id),
        ],
        call.to_string().as_bytes(),
    ));
    assert_eq!(status, 200);
    assert!(headers
        .iter()
        .any(|(k, v)| k == "content-type" && v == "text/event-stream"));
    std::thread::sleep(Duration::from_millis(300));
    let sent = Instant::now();
    ep.signal("TERM");
    let answer = waiting.next(WAIT).expect("the open call is answered");
    assert_eq!(answer["id"], 41, "{answer}");
    assert!(answer.get("error").is_some() || answer.get("result").is_some());
    assert!(waiting.next(WAIT).is_none(), "the call's stream ends");
    assert!(get.next(WAIT).is_none(), "the GET stream ends");
    let until = Instant::now() + WAIT;
    let exit = loop {
        if let Some(status) = ep.child.try_wait().unwrap() {
            break status;
        }
        assert!(Instant::now() < until, "still running after SIGTERM");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(exit.success(), "{exit:?}");
    eprintln!("closed {:?} after SIGTERM", sent.elapsed());
    let said: Vec<String> = ep.stderr.lock().unwrap().try_iter().collect();
    assert!(
        said.iter().any(|l| l.contains("HTTP endpoint stopped")),
        "{said:?}"
    );
}

#[test]
fn a_call_reports_progress_on_its_stream_and_a_cancel_stops_it() {
    let t = tmux("http-progress");
    fill_with_40000_lines(&t);
    let ep = Endpoint::start(&t, None, &[]);
    let id = ep.initialize(None);
    let search = deep_search_with_progress();
    let r = ep.post(None, Some(&id), &search);
    let messages = r.messages();
    let progress: Vec<&Value> = messages
        .iter()
        .filter(|m| m["method"] == "notifications/progress")
        .collect();
    assert!(!progress.is_empty(), "no progress: {}", r.text());
    assert!(progress
        .iter()
        .all(|m| m["params"]["progressToken"] == "tok"));
    let last = messages.last().unwrap();
    assert_eq!(last["id"], "s");
    assert!(last["result"].to_string().contains("39000"), "{last}");

    // A call that would answer (timed out) after 3 s, cancelled at once:
    // its stream never gets that answer.
    let wait = json!({"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": {
        "name": "wait_for_text", "arguments": {"pane_id": "%0", "pattern": "never here", "timeout_ms": 3000}}});
    let (_, _, mut waiting) = Stream::open(ep.open(
        "POST",
        &[
            ("accept", "text/event-stream, application/json"),
            ("mcp-session-id", &id),
        ],
        wait.to_string().as_bytes(),
    ));
    std::thread::sleep(Duration::from_millis(300));
    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 8, "reason": "test"}});
    assert_eq!(ep.post(None, Some(&id), &cancel).status, 202);
    assert!(
        waiting.next(Duration::from_millis(4500)).is_none(),
        "a cancelled call was answered"
    );
    let r = ep.post(
        None,
        Some(&id),
        &json!({"jsonrpc": "2.0", "id": 9, "method": "ping"}),
    );
    assert_eq!(r.json()["id"], 9);
}

#[test]
fn a_subscribed_pane_is_updated_on_the_get_stream() {
    let t = tmux("http-sub");
    let ep = Endpoint::start(&t, None, &[]);
    let id = ep.initialize(None);
    let pane = t
        .run_ok(["list-panes", "-a", "-F", "#{pane_id}"])
        .unwrap()
        .lines()
        .next()
        .unwrap()
        .to_owned();
    let uri = format!("tmux://pane/{}/screen", &pane[1..]);
    let (status, _, mut get) = Stream::open(ep.open(
        "GET",
        &[("accept", "text/event-stream"), ("mcp-session-id", &id)],
        b"",
    ));
    assert_eq!(status, 200);
    let r = ep.post(
        None,
        Some(&id),
        &json!({"jsonrpc": "2.0", "id": 3,
        "method": "resources/subscribe", "params": {"uri": uri}}),
    );
    assert!(r.json().get("result").is_some(), "{}", r.text());
    std::thread::sleep(Duration::from_millis(300));
    t.run_ok(["send-keys", "-t", &pane, "-l", "echo hello-http"])
        .unwrap();
    t.run_ok(["send-keys", "-t", &pane, "Enter"]).unwrap();
    let until = Instant::now() + WAIT;
    loop {
        let m = get.next(until.saturating_duration_since(Instant::now()));
        let m = m.expect("an update on the GET stream");
        if m["method"] == "notifications/resources/updated" && m["params"]["uri"] == uri {
            break;
        }
    }
}

#[test]
fn unsafe_binds_are_refused_at_start_and_delete_ends_a_session() {
    let t = tmux("http-binds");
    let dir = TempDir::new("http-binds");
    let tokens = dir.0.join("tokens");
    let tokens = tokens.to_str().unwrap();
    let refused = |extra: &[&str], why: &str| {
        let out = Command::new(env!("CARGO_BIN_EXE_panescan"))
            .args([
                "serve",
                "--socket-name",
                t.socket_name(),
                "--http",
                "0.0.0.0:0",
            ])
            .args(extra)
            .env("PANESCAN_NO_DAEMON", "1")
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{extra:?}: {err}");
        assert!(err.contains(why), "{extra:?}: {err}");
    };
    refused(
        &["--no-auth", "--allow-plain-http"],
        "--no-auth serves loopback only",
    );
    refused(&["--token-file", tokens], "--tls-cert and --tls-key");
    // A token file others may read is refused before anything is served.
    std::fs::write(tokens, format!("{TOKEN_A}\n")).unwrap();
    std::fs::set_permissions(tokens, std::fs::Permissions::from_mode(0o644)).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_panescan"))
        .args([
            "serve",
            "--socket-name",
            t.socket_name(),
            "--http",
            "127.0.0.1:0",
            "--token-file",
            tokens,
        ])
        .env("PANESCAN_NO_DAEMON", "1")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("other users"));

    let ep = Endpoint::start(&t, None, &[]);
    let id = ep.initialize(None);
    let gone = ep.request("DELETE", &[("mcp-session-id", &id)], b"");
    assert_eq!(gone.status, 200);
    let r = ep.post(
        None,
        Some(&id),
        &json!({"jsonrpc": "2.0", "id": 2, "method": "ping"}),
    );
    assert_eq!(r.status, 404);
}

/// `serve --http --no-daemon --policy`: SIGHUP reloads the policy, as it
/// does for stdio's serve, and stops nothing (it stopped the endpoint).
#[test]
fn sighup_reloads_a_policy_served_here_and_the_endpoint_goes_on() {
    let t = tmux("http-hup");
    let dir = TempDir::new("http-hup");
    let policy = dir.0.join("policy.toml");
    let deny =
        |word: &str| format!("[[deny]]\ntools = [\"send_keys\"]\ncommand = \"^echo {word}\"\n");
    std::fs::write(&policy, deny("one")).unwrap();
    let p = policy.display().to_string();
    let ep = Endpoint::start(&t, None, &["--tier", "mutating", "--policy", &p]);
    let id = ep.initialize(None);
    let send = |n: u64| {
        let call = json!({"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": {
            "name": "send_keys", "arguments": {"pane_id": "%0", "text": "echo one", "enter": true}}});
        ep.post(None, Some(&id), &call).json()
    };
    let refused = send(2);
    assert_eq!(refused["result"]["isError"], true, "{refused}");
    std::fs::write(&policy, deny("two")).unwrap();
    ep.signal("HUP");
    let reloaded = {
        let rx = ep.stderr.lock().unwrap();
        let until = Instant::now() + WAIT;
        let mut seen = false;
        while !seen && Instant::now() < until {
            seen = rx
                .recv_timeout(Duration::from_millis(100))
                .is_ok_and(|l| l.contains("reloaded"));
        }
        seen
    };
    assert!(reloaded, "the policy was never reloaded");
    let ran = send(3);
    assert_ne!(ran["result"]["isError"], true, "{ran}");
}

/// An event id's place on its stream (`TAG-STREAM-SEQ`).
fn seq_of(id: &str) -> u64 {
    id.rsplit('-').next().unwrap().parse().unwrap()
}

/// An event id's stream.
fn stream_of(id: &str) -> &str {
    id.split('-').nth(1).unwrap()
}

/// Every event id of one stream, across its connections, once each and
/// in order from the priming event (seq 0).
fn assert_whole_once(ids: &[String]) {
    let seqs: Vec<u64> = ids.iter().map(|i| seq_of(i)).collect();
    assert_eq!(
        seqs,
        (0..ids.len() as u64).collect::<Vec<_>>(),
        "each event once, none missed: {ids:?}"
    );
    assert!(
        ids.iter().all(|i| stream_of(i) == stream_of(&ids[0])),
        "{ids:?}"
    );
}

/// 2025-11-25 resumption: a call's SSE stream dropped after its first
/// progress event and resumed with GET and `Last-Event-ID` gets exactly
/// the events it missed, its answer last; asked again after the answer,
/// there is nothing more (204).
#[test]
fn a_dropped_call_stream_resumes_with_exactly_the_missed_events() {
    let t = tmux("http-resume");
    fill_with_40000_lines(&t);
    let ep = Endpoint::start(&t, None, &[]);
    let id = ep.initialize(None);
    let search = deep_search_with_progress();
    let (status, headers, mut first) = Stream::open(ep.open(
        "POST",
        &[
            ("accept", "text/event-stream, application/json"),
            ("mcp-session-id", &id),
        ],
        search.to_string().as_bytes(),
    ));
    assert_eq!(status, 200);
    assert!(
        headers.contains(&("content-type".into(), "text/event-stream".into())),
        "{headers:?}"
    );
    let mut messages = vec![first.next(WAIT).expect("a first message")];
    assert_eq!(messages[0]["method"], "notifications/progress");
    let mut ids = first.ids.clone();
    assert_eq!(ids.len(), 2, "a priming event, then the progress: {ids:?}");
    // The connection drops mid-stream: what follows is kept.
    drop(first);
    let last = ids.last().unwrap().clone();
    let (status, _, mut resumed) = Stream::open(ep.open(
        "GET",
        &[
            ("accept", "text/event-stream"),
            ("mcp-session-id", &id),
            ("last-event-id", &last),
        ],
        b"",
    ));
    assert_eq!(status, 200);
    while let Some(m) = resumed.next(WAIT) {
        messages.push(m);
    }
    ids.extend(resumed.ids.iter().cloned());
    assert_whole_once(&ids);
    let answers: Vec<&Value> = messages.iter().filter(|m| m.get("id").is_some()).collect();
    assert_eq!(answers.len(), 1, "{messages:?}");
    let answer = messages.last().unwrap();
    assert_eq!(answer["id"], "s");
    assert!(answer["result"].to_string().contains("39000"), "{answer}");
    let progress: Vec<f64> = messages
        .iter()
        .filter_map(|m| m["params"]["progress"].as_f64())
        .collect();
    assert!(
        progress.windows(2).all(|w| w[0] < w[1]),
        "no progress twice: {progress:?}"
    );
    // The client had it all: nothing more on that stream.
    let again = ep.request(
        "GET",
        &[
            ("accept", "text/event-stream"),
            ("mcp-session-id", &id),
            ("last-event-id", ids.last().unwrap()),
        ],
        b"",
    );
    assert_eq!(again.status, 204, "{}", again.text());
}

/// A GET stream dropped while a subscribed pane changes, resumed with
/// `Last-Event-ID`: the update made while nobody read is replayed, once;
/// an id of another session, a made-up one and one past the stream's
/// end are refused and take nothing over.
#[test]
fn a_dropped_get_stream_resumes_and_foreign_ids_are_refused() {
    let t = tmux("http-resume-get");
    let ep = Endpoint::start(&t, None, &[]);
    let id = ep.initialize(None);
    let uri = "tmux://pane/0/screen";
    let get_headers = |last: Option<&str>, session: &str| {
        let mut h = vec![
            ("accept".to_owned(), "text/event-stream".to_owned()),
            ("mcp-session-id".to_owned(), session.to_owned()),
        ];
        if let Some(last) = last {
            h.push(("last-event-id".to_owned(), last.to_owned()));
        }
        h
    };
    let open_get = |last: Option<&str>, session: &str| {
        let h = get_headers(last, session);
        let h: Vec<(&str, &str)> = h.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        Stream::open(ep.open("GET", &h, b""))
    };
    let type_line = |text: &str| {
        t.run_ok(["send-keys", "-t", "%0", "-l", text]).unwrap();
        t.run_ok(["send-keys", "-t", "%0", "Enter"]).unwrap();
    };
    let update = |s: &mut Stream| loop {
        let m = s.next(WAIT).expect("an update");
        if m["method"] == "notifications/resources/updated" && m["params"]["uri"] == uri {
            return m;
        }
    };
    let (status, _, mut get) = open_get(None, &id);
    assert_eq!(status, 200);
    let r = ep.post(
        None,
        Some(&id),
        &json!({"jsonrpc": "2.0", "id": 3,
        "method": "resources/subscribe", "params": {"uri": uri}}),
    );
    assert!(r.json().get("result").is_some(), "{}", r.text());
    std::thread::sleep(Duration::from_millis(300));
    type_line("echo one");
    update(&mut get);
    let mut ids = get.ids.clone();
    drop(get);
    std::thread::sleep(Duration::from_millis(300));
    // Nobody reads: the update is kept for the resume.
    type_line("echo two");
    std::thread::sleep(Duration::from_millis(1000));
    let last = ids.last().unwrap().clone();

    // Refused, and none of them takes the stream over.
    let other = ep.initialize(None);
    let (status, _, _) = open_get(Some(&last), &other);
    assert_eq!(status, 400, "another session's id");
    let (status, _, _) = open_get(Some("0123456789abcdef-g1-1"), &id);
    assert_eq!(status, 400, "a made-up id");
    let past = format!("{}-{}", last.rsplit_once('-').unwrap().0, 999_999);
    let (status, _, _) = open_get(Some(&past), &id);
    assert_eq!(status, 400, "an id past the stream's end");

    let (status, _, mut resumed) = open_get(Some(&last), &id);
    assert_eq!(status, 200);
    update(&mut resumed);
    // And it goes on live.
    type_line("echo three");
    update(&mut resumed);
    ids.extend(resumed.ids.iter().cloned());
    assert_whole_once(&ids);
    assert!(stream_of(&ids[0]).starts_with('g'), "{ids:?}");
}

/// A policy's `ask` answered by a client over HTTP: in the handshake
/// era the question comes on the GET stream (or, with none open, on the
/// call's own stream) and the answer is POSTed back; in the stateless
/// era the call comes back with the answer in `inputResponses`.
#[test]
fn a_policy_ask_is_answered_over_http_in_both_eras() {
    let t = tmux("http-elicit");
    let dir = TempDir::new("http-elicit");
    let policy = dir.0.join("policy.toml");
    std::fs::write(
        &policy,
        "[[ask]]\ntools = [\"send_keys\"]\ncommand = \"^deploy\"\n",
    )
    .unwrap();
    let file = dir.0.join("typed");
    let pane = common::typing_sink_at(&t, "main:0.0", &file);
    let typed = || common::typed_so_far(&t, &pane, &file);
    let strip = |b: Vec<u8>| {
        let sentinel = regex::bytes::Regex::new(r"<sentinel-\d+-\d+>").unwrap();
        sentinel.replace_all(&b, &b""[..]).into_owned()
    };
    let p = policy.display().to_string();
    let ep = Endpoint::start(&t, None, &["--tier", "mutating", "--policy", &p]);
    let id = ep.initialize_with(None, json!({"elicitation": {"form": {}}}));
    let call = |n: u64, text: &str| {
        json!({"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": {
            "name": "send_keys", "arguments": {"pane_id": pane, "text": text, "enter": true}}})
    };
    let post_stream = |body: &Value| {
        Stream::open(ep.open(
            "POST",
            &[
                ("accept", "text/event-stream, application/json"),
                ("mcp-session-id", &id),
            ],
            body.to_string().as_bytes(),
        ))
    };
    let answer_of = |s: &mut Stream, n: u64| loop {
        let m = s.next(WAIT).expect("the call's answer");
        if m["id"] == n {
            return m;
        }
    };

    let (_, _, mut get) = Stream::open(ep.open(
        "GET",
        &[("accept", "text/event-stream"), ("mcp-session-id", &id)],
        b"",
    ));
    let (_, _, mut waiting) = post_stream(&call(5, "deploy --prod"));
    let asked = get.next(WAIT).expect("the question on the GET stream");
    assert_eq!(asked["method"], "elicitation/create", "{asked}");
    let message = asked["params"]["message"].as_str().unwrap();
    assert!(message.contains("\"deploy --prod\""), "{message}");
    let yes = json!({"jsonrpc": "2.0", "id": asked["id"],
        "result": {"action": "accept", "content": {"approve": true}}});
    assert_eq!(ep.post(None, Some(&id), &yes).status, 202);
    let r = answer_of(&mut waiting, 5);
    assert_eq!(r["result"]["isError"], false, "{r}");
    assert_eq!(strip(typed()), b"deploy --prod\r");

    // No GET stream: the question comes on the call's own stream.
    drop(get);
    std::thread::sleep(Duration::from_millis(300));
    let (_, _, mut waiting) = post_stream(&call(6, "deploy --staging"));
    let asked = waiting
        .next(WAIT)
        .expect("the question on the call's stream");
    assert_eq!(asked["method"], "elicitation/create", "{asked}");
    let no = json!({"jsonrpc": "2.0", "id": asked["id"], "result": {"action": "decline"}});
    assert_eq!(ep.post(None, Some(&id), &no).status, 202);
    let r = answer_of(&mut waiting, 6);
    assert_eq!(r["result"]["isError"], true, "{r}");
    assert!(r["result"]["content"][0]["text"]
        .as_str()
        .unwrap()
        .starts_with("refused"));
    assert_eq!(strip(typed()), b"deploy --prod\r", "nothing declined typed");

    // 2026-07-28: no session; the answer rides on the call again.
    let mut meta = common::modern_meta();
    meta["io.modelcontextprotocol/clientCapabilities"] = json!({"elicitation": {}});
    let stateless = |n: u64, extra: Value| {
        let mut params = json!({"name": "send_keys", "_meta": meta,
            "arguments": {"pane_id": pane, "text": "deploy --canary", "enter": true}});
        if let (Some(p), Some(e)) = (params.as_object_mut(), extra.as_object()) {
            p.extend(e.clone());
        }
        let body = json!({"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": params});
        ep.request(
            "POST",
            &[
                ("accept", "application/json, text/event-stream"),
                ("mcp-protocol-version", "2026-07-28"),
                ("mcp-method", "tools/call"),
                ("mcp-name", "send_keys"),
            ],
            body.to_string().as_bytes(),
        )
        .json()
    };
    let first = stateless(7, json!({}));
    assert_eq!(first["result"]["resultType"], "input_required", "{first}");
    let state = first["result"]["requestState"].clone();
    assert_eq!(
        strip(typed()),
        b"deploy --prod\r",
        "nothing before the answer"
    );
    let approved = stateless(
        8,
        json!({"requestState": state, "inputResponses":
            {"approve": {"action": "accept", "content": {"approve": true}}}}),
    );
    assert_eq!(approved["result"]["isError"], false, "{approved}");
    assert_eq!(strip(typed()), b"deploy --prod\rdeploy --canary\r");
}

/// A batch (2025-06-18 removed them; a 2025-11-25 POST is one message)
/// and a body that is not JSON get 400 with a JSON-RPC error that has no
/// id, as the MCP schema has it (an id is a string or a number, never
/// null).
#[test]
fn a_batch_or_a_broken_body_gets_a_json_rpc_error_without_an_id() {
    let t = tmux("http-batch");
    let ep = Endpoint::start(&t, None, &[]);
    let id = ep.initialize(None);
    let batch = json!([{"jsonrpc": "2.0", "id": 1, "method": "ping"},
                       {"jsonrpc": "2.0", "id": 2, "method": "ping"}]);
    for (body, code, says) in [
        (batch.to_string(), -32600, "batches are not supported"),
        ("{\"jsonrpc\": ".to_owned(), -32700, "parse error"),
        ("7".to_owned(), -32600, "must be an object"),
    ] {
        let r = ep.request(
            "POST",
            &[
                ("accept", "application/json, text/event-stream"),
                ("mcp-session-id", &id),
            ],
            body.as_bytes(),
        );
        assert_eq!(r.status, 400, "{body}: {}", r.text());
        let e = r.json();
        assert_eq!(e["error"]["code"], code, "{e}");
        assert!(e.get("id").is_none(), "{e}");
        assert!(
            e["error"]["message"].as_str().unwrap().contains(says),
            "{e}"
        );
    }
    // The session goes on.
    let r = ep.post(
        None,
        Some(&id),
        &json!({"jsonrpc": "2.0", "id": 3, "method": "ping"}),
    );
    assert_eq!(r.json()["id"], 3);
}
