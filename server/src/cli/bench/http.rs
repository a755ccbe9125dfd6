//! `panescan bench` HTTP row: the same search over Streamable HTTP and
//! over stdio, in the same run, calls interleaved, so only the transport
//! differs: two `serve --no-daemon` of this program on the filled server,
//! one on stdio, one `--http 127.0.0.1:0 --no-auth`, its client one
//! keep-alive connection with TCP_NODELAY (as HTTP client libraries set
//! it). Goal: HTTP <= 1.1x stdio.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::{json, Value};

use super::daemon::Session;
use crate::testbed::baseline::median;
use crate::testbed::fixture::{Fixture, NEEDLE};

/// Calls per transport, at least.
const MIN_CALLS: usize = 20;
/// How long one HTTP answer may take before the bench gives up.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(120);

/// The HTTP section of the bench report.
#[derive(Debug, Clone, Serialize)]
pub struct HttpBench {
    /// Calls per transport.
    pub calls: usize,
    /// The search over stdio, median.
    pub stdio_ms: f64,
    /// The same over HTTP, median.
    pub http_ms: f64,
    /// `http_ms` over `stdio_ms`.
    pub ratio: f64,
    /// The answer's size, bytes.
    pub answer_bytes: usize,
}

/// `serve --http` on a free port, killed on drop.
struct HttpServe {
    child: Child,
    conn: BufReader<TcpStream>,
    addr: String,
    session: Option<String>,
}

impl Drop for HttpServe {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl HttpServe {
    fn start(socket: &str) -> Result<HttpServe, String> {
        let exe = std::env::current_exe().map_err(|e| e.to_string())?;
        let mut child = Command::new(exe)
            .args(["serve", "--no-daemon", "--socket-name", socket])
            .args(["--http", "127.0.0.1:0", "--no-auth"])
            .env_remove("TMUX")
            .env_remove("TMUX_PANE")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot start serve --http: {e}"))?;
        let Some(err) = child.stderr.take() else {
            return Err("serve --http has no stderr".into());
        };
        let mut lines = BufReader::new(err).lines();
        let addr = lines
            .by_ref()
            .map_while(Result::ok)
            .find_map(|l| {
                l.split_once("MCP over HTTP at http://")
                    .map(|(_, rest)| rest.trim_end_matches("/mcp").to_owned())
            })
            .ok_or("serve --http did not say where it listens")?;
        // Its stderr drained, so it never blocks on a full pipe.
        std::thread::spawn(move || lines.for_each(drop));
        let tcp = TcpStream::connect(&addr).map_err(|e| e.to_string())?;
        tcp.set_nodelay(true).map_err(|e| e.to_string())?;
        tcp.set_read_timeout(Some(ANSWER_TIMEOUT))
            .map_err(|e| e.to_string())?;
        let mut s = HttpServe {
            child,
            conn: BufReader::new(tcp),
            addr,
            session: None,
        };
        s.post(
            &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "bench", "version": "0"}}}),
        )?;
        Ok(s)
    }

    /// One POST on the kept-alive connection: its answer's body (JSON, or
    /// the whole SSE stream, which ends after the answer).
    fn post(&mut self, body: &Value) -> Result<String, String> {
        let body = body.to_string();
        let mut head = format!(
            "POST /mcp HTTP/1.1\r\nhost: {}\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\ncontent-length: {}\r\n",
            self.addr,
            body.len()
        );
        if let Some(id) = &self.session {
            head.push_str(&format!("mcp-session-id: {id}\r\n"));
        }
        head.push_str("\r\n");
        let tcp = self.conn.get_mut();
        tcp.write_all(head.as_bytes())
            .and_then(|()| tcp.write_all(body.as_bytes()))
            .map_err(|e| format!("serve --http: {e}"))?;
        let (length, chunked) = self.read_head()?;
        let mut out = Vec::new();
        if chunked {
            while let Some(chunk) = self.read_chunk()? {
                out.extend_from_slice(&chunk);
            }
        } else {
            out.resize(length, 0);
            self.conn.read_exact(&mut out).map_err(|e| e.to_string())?;
        }
        String::from_utf8(out).map_err(|e| e.to_string())
    }

    /// The status line and headers: the content length and whether the
    /// body is chunked; the session id kept.
    fn read_head(&mut self) -> Result<(usize, bool), String> {
        let mut line = String::new();
        self.conn.read_line(&mut line).map_err(|e| e.to_string())?;
        if !line.starts_with("HTTP/1.1 200") {
            return Err(format!("serve --http answered {}", line.trim_end()));
        }
        let (mut length, mut chunked) = (0, false);
        loop {
            line.clear();
            self.conn.read_line(&mut line).map_err(|e| e.to_string())?;
            let l = line.trim_end();
            if l.is_empty() {
                return Ok((length, chunked));
            }
            let Some((k, v)) = l.split_once(':') else {
                continue;
            };
            match k.trim().to_ascii_lowercase().as_str() {
                "content-length" => length = v.trim().parse().map_err(|_| "bad length")?,
                "transfer-encoding" => chunked = v.contains("chunked"),
                "mcp-session-id" => self.session = Some(v.trim().to_owned()),
                _ => {}
            }
        }
    }

    fn read_chunk(&mut self) -> Result<Option<Vec<u8>>, String> {
        let mut size = String::new();
        self.conn.read_line(&mut size).map_err(|e| e.to_string())?;
        let n = usize::from_str_radix(size.trim(), 16).map_err(|_| "bad chunk")?;
        let mut chunk = vec![0; n + 2];
        self.conn
            .read_exact(&mut chunk)
            .map_err(|e| e.to_string())?;
        chunk.truncate(n);
        Ok((n > 0).then_some(chunk))
    }
}

/// Measures the HTTP row on `fixture`.
pub fn run(fixture: &Fixture, runs: usize) -> Result<HttpBench, String> {
    let socket = fixture.server.socket_name();
    let args = json!({"pattern": NEEDLE, "scrollback_lines": fixture.shape.lines, "limit": 1000});
    let call = |id: usize| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
               "params": {"name": "search_panes", "arguments": args}})
    };
    let rt = std::env::temp_dir();
    let mut stdio = Session::start(socket, &rt, &["--no-daemon"])?;
    let mut http = HttpServe::start(socket)?;
    let calls = (runs * 4).max(MIN_CALLS);
    let (mut ts, mut th) = (Vec::new(), Vec::new());
    let mut answer_bytes = 0;
    // Three of each first: both warm. Which goes first alternates, so
    // neither always follows the other's work.
    for i in 0..calls + 3 {
        let mut took = Duration::ZERO;
        let mut took_http = Duration::ZERO;
        for which in [i % 2, 1 - i % 2] {
            let started = Instant::now();
            if which == 0 {
                stdio.call(&args)?;
                took = started.elapsed();
            } else {
                let body = http.post(&call(i + 1))?;
                took_http = started.elapsed();
                if !body.contains("\"isError\":false") {
                    return Err(format!("the search over HTTP failed: {body:.300}"));
                }
                answer_bytes = body.len();
            }
        }
        if i >= 3 {
            ts.push(took);
            th.push(took_http);
        }
    }
    stdio.end();
    let stdio_ms = super::report::ms(median(&mut ts));
    let http_ms = super::report::ms(median(&mut th));
    Ok(HttpBench {
        calls,
        stdio_ms,
        http_ms,
        ratio: if stdio_ms > 0.0 {
            http_ms / stdio_ms
        } else {
            0.0
        },
        answer_bytes,
    })
}

/// The section as a table.
pub fn print(h: &HttpBench) {
    println!();
    println!(
        "HTTP transport (search_panes, {} interleaved calls each, --no-daemon):",
        h.calls
    );
    println!(
        "  stdio {:.2} ms, HTTP {:.2} ms: {:.3}x (goal <= 1.1x; answer {} bytes)",
        h.stdio_ms, h.http_ms, h.ratio, h.answer_bytes
    );
}

/// The section as Markdown.
pub fn markdown(h: &HttpBench) -> String {
    format!(
        "| HTTP transport: search_panes, {} interleaved calls | median | x stdio |\n|---|---|---|\n| stdio | {:.2} ms | 1 |\n| Streamable HTTP (goal <= 1.1x) | {:.2} ms | {:.3} |\n",
        h.calls, h.stdio_ms, h.http_ms, h.ratio
    )
}
