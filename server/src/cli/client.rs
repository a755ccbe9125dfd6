//! A small MCP client over a child `panescan serve`'s stdio.
//!
//! `panescan demo` and `panescan bench` search through the real front end
//! (JSON-RPC on a pipe, exactly what an MCP client does), so what they time
//! is what a client gets.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::Duration;

use crossbeam_channel::{Receiver, RecvTimeoutError};
use serde_json::{json, Value};

/// A running `panescan serve` and the pipe to it. Dropping it closes stdin
/// (the server exits on EOF) and reaps the child.
#[derive(Debug)]
pub struct McpClient {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    next_id: u64,
}

impl McpClient {
    /// Starts `panescan serve --no-daemon --socket-name NAME` from this very
    /// binary and completes the `initialize` handshake (in-process: what
    /// demo and bench time is one server of their own, never the user's
    /// daemon, and nothing stays behind).
    pub fn start(socket_name: &str) -> Result<McpClient, String> {
        Self::start_with(socket_name, &[])
    }

    /// [`McpClient::start`] with more `serve` options (`--no-cache`).
    pub fn start_with(socket_name: &str, serve_options: &[&str]) -> Result<McpClient, String> {
        let exe = std::env::current_exe().map_err(|e| format!("cannot find panescan: {e}"))?;
        let mut serve = Command::new(exe);
        serve
            .args(["serve", "--no-daemon", "--socket-name", socket_name])
            .args(serve_options);
        Self::spawn(serve)
    }

    /// A `serve` relaying to the daemon of the private runtime directory
    /// `runtime_dir` (the bench's journaling daemon), never the user's.
    pub fn through_daemon(socket_name: &str, runtime_dir: &Path) -> Result<McpClient, String> {
        let exe = std::env::current_exe().map_err(|e| format!("cannot find panescan: {e}"))?;
        let mut serve = Command::new(exe);
        serve
            .args(["serve", "--socket-name", socket_name])
            .env(crate::daemon::place::RUNTIME_DIR_ENV, runtime_dir)
            .env_remove("PANESCAN_NO_DAEMON")
            .env_remove("TMUX")
            .env_remove("TMUX_PANE");
        Self::spawn(serve)
    }

    fn spawn(mut serve: Command) -> Result<McpClient, String> {
        let mut child = serve
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("cannot start panescan serve: {e}"))?;
        let stdout = child.stdout.take().ok_or("no stdout")?;
        let (tx, lines) = crossbeam_channel::unbounded();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut client = McpClient {
            stdin: child.stdin.take(),
            child,
            lines,
            next_id: 1,
        };
        client.request(
            "initialize",
            json!({
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "panescan-cli", "version": env!("CARGO_PKG_VERSION")}
            }),
            Duration::from_secs(10),
        )?;
        client.notify("notifications/initialized", json!({}))?;
        Ok(client)
    }

    fn send(&mut self, message: &Value) -> Result<(), String> {
        let stdin = self.stdin.as_mut().ok_or("the server's stdin is closed")?;
        let mut line = serde_json::to_vec(message).map_err(|e| e.to_string())?;
        line.push(b'\n');
        stdin
            .write_all(&line)
            .and_then(|()| stdin.flush())
            .map_err(|e| format!("cannot write to panescan serve: {e}"))
    }

    /// Sends a notification.
    pub fn notify(&mut self, method: &str, params: Value) -> Result<(), String> {
        self.send(&json!({"jsonrpc": "2.0", "method": method, "params": params}))
    }

    /// Sends a request and waits for its response (notifications in between
    /// are skipped). Returns `result`, or the JSON-RPC error as text.
    pub fn request(
        &mut self,
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> Result<Value, String> {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))?;
        let deadline = std::time::Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            let line = match self.lines.recv_timeout(left) {
                Ok(line) => line,
                Err(RecvTimeoutError::Timeout) => {
                    return Err(format!("no answer to {method} within {timeout:?}"))
                }
                Err(RecvTimeoutError::Disconnected) => return Err("panescan serve exited".into()),
            };
            let Ok(message) = serde_json::from_str::<Value>(&line) else {
                return Err(format!(
                    "panescan serve wrote a line that is not JSON: {line}"
                ));
            };
            if message.get("id") != Some(&json!(id)) {
                continue;
            }
            if let Some(error) = message.get("error") {
                return Err(format!("JSON-RPC error: {error}"));
            }
            return Ok(message.get("result").cloned().unwrap_or(Value::Null));
        }
    }

    /// Sends a `tools/call` without waiting for it; its request id. Read
    /// the answers with [`McpClient::next_answer`] (several calls run in
    /// the server at once).
    pub fn send_call(&mut self, name: &str, arguments: Value) -> Result<u64, String> {
        let id = self.next_id;
        self.next_id += 1;
        let params = json!({"name": name, "arguments": arguments});
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params}))?;
        Ok(id)
    }

    /// The next response, whichever request it answers: its id, and whether
    /// the call succeeded (`Err` holds the error text).
    pub fn next_answer(&mut self, timeout: Duration) -> Result<(u64, Result<(), String>), String> {
        let deadline = std::time::Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            let line = match self.lines.recv_timeout(left) {
                Ok(line) => line,
                Err(RecvTimeoutError::Timeout) => {
                    return Err(format!("no answer within {timeout:?}"))
                }
                Err(RecvTimeoutError::Disconnected) => return Err("panescan serve exited".into()),
            };
            let Ok(message) = serde_json::from_str::<Value>(&line) else {
                return Err(format!(
                    "panescan serve wrote a line that is not JSON: {line}"
                ));
            };
            let Some(id) = message.get("id").and_then(Value::as_u64) else {
                continue;
            };
            let failed = message.get("error").map(Value::to_string).or_else(|| {
                let result = message.get("result")?;
                (result.get("isError") == Some(&Value::Bool(true))).then(|| {
                    let text = result.pointer("/content/0/text").and_then(Value::as_str);
                    text.unwrap_or("tool error").to_owned()
                })
            });
            return Ok((id, failed.map_or(Ok(()), Err)));
        }
    }

    /// Calls a tool; returns its `structuredContent`, or the tool's error
    /// message when it answered `isError`.
    pub fn call_tool(
        &mut self,
        name: &str,
        arguments: Value,
        timeout: Duration,
    ) -> Result<Value, String> {
        let result = self.request(
            "tools/call",
            json!({"name": name, "arguments": arguments}),
            timeout,
        )?;
        if result.get("isError") == Some(&Value::Bool(true)) {
            let text = result
                .pointer("/content/0/text")
                .and_then(Value::as_str)
                .unwrap_or("tool error");
            return Err(text.to_owned());
        }
        Ok(result
            .get("structuredContent")
            .cloned()
            .unwrap_or(Value::Null))
    }
}

impl Drop for McpClient {
    fn drop(&mut self) {
        // EOF asks the server to finish and exit; give it a moment, then make
        // sure.
        self.stdin.take();
        for _ in 0..50 {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
