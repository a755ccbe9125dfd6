//! Test harness: run the built `panescan serve` and speak JSON-RPC to it.
//!
//! ```ignore
//! mod common;
//! let (tmux, mut s) = common::Serve::with_tmux("my-test");
//! s.initialize();
//! let panes = s.call_ok("list_panes", json!({}));
//! ```
//!
//! Every read has a timeout, so a server that stops answering fails the
//! test instead of hanging it; the server process is killed on drop. Any
//! non-JSON line on stdout fails the test, and so does any line longer than
//! [`RESPONSE_CEILING`]: the harness keeps each line as it was written
//! ([`Received`]), so sizes are measured on the bytes the server sent, not
//! on a re-serialisation.
//!
//! - start: [`Serve::spawn`] (`serve --socket-name NAME`),
//!   [`Serve::spawn_with`] (any arguments and environment),
//!   [`Serve::with_tmux`] / [`Serve::with_tmux_size`] (a fresh
//!   [`PrivateServer`] plus a server pointed at it).
//! - talk: [`Serve::initialize`], [`Serve::request`] / [`Serve::request_bare`]
//!   (whole response), [`Serve::request_line`] / [`Serve::response_line`]
//!   (the same, with the line as written), [`Serve::call`] (the `result`), [`Serve::call_ok`]
//!   (`structuredContent`, asserts success), [`Serve::call_err`] (the error
//!   text, asserts `isError`), [`Serve::notify`], [`Serve::send`] /
//!   [`Serve::send_raw`] with [`Serve::response`] for hand-made messages.
//! - observe: [`Serve::recv`], [`Serve::drain`], [`Serve::message`] (the
//!   first message that fits), [`Serve::take_pending`] (notifications that
//!   arrived while waiting for a response).
//! - end: [`Serve::close_stdin`], [`Serve::signal`], [`Serve::wait_exit`].
//! - helpers: [`validate`] (structuredContent against an outputSchema),
//!   [`plain_shell`] (an rc-less bash in a pane, ready to type into),
//!   [`eventually`], [`modern_meta`], [`memory_kb`] (a process's peak and
//!   resident memory), [`counter::Counter`] (tmux's command counter),
//!   [`next_tmux`] (tmux 3.8, built from third_party/tmux-next).
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

pub mod counter;
pub mod daemon;
pub mod injection;
pub mod journal;
pub mod latency;
pub mod shells;
pub mod sshd;

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use crossbeam_channel::{unbounded, Receiver, RecvTimeoutError};
use panescan::testing::private_server::PrivateServer;
use panescan::testing::tmux::{ServerSpec, Tmux};
use serde_json::{json, Value};

/// How long a request may take before the test fails.
pub const REPLY_TIMEOUT: Duration = Duration::from_secs(15);

/// The most bytes one line of `panescan serve` may hold (its newline
/// aside): GUIDE.md's "a whole response" (Limits and budgets).
pub const RESPONSE_CEILING: usize = 1_000_000;

/// One line of the server's stdout: as written, and parsed.
#[derive(Debug, Clone)]
pub struct Received {
    pub value: Value,
    /// The line without its newline, byte for byte.
    pub line: String,
    parsed: bool,
}

impl Received {
    fn new(line: String) -> Received {
        let parsed = serde_json::from_str::<Value>(&line);
        Received {
            parsed: parsed.is_ok(),
            value: parsed.unwrap_or(Value::Null),
            line,
        }
    }

    /// The line, once it is known to be JSON within the ceiling.
    fn checked(self) -> Received {
        assert!(
            self.parsed,
            "stdout carried a non-JSON line: {}",
            head(&self.line, 2000)
        );
        assert!(
            self.line.len() <= RESPONSE_CEILING,
            "stdout carried a line of {} bytes, over the {RESPONSE_CEILING}-byte ceiling: {}...",
            self.line.len(),
            head(&self.line, 300)
        );
        self
    }

    fn answers(&self, id: &Value) -> bool {
        self.value.get("id") == Some(id) && self.value.get("method").is_none()
    }
}

/// At most the first `max` bytes of `text`, cut on a char boundary.
pub fn head(text: &str, max: usize) -> &str {
    let mut end = max.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// The `_meta` of a 2026-07-28 request.
pub fn modern_meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "panescan-tests", "version": "0"}
    })
}

/// A running `panescan serve`.
#[derive(Debug)]
pub struct Serve {
    child: Child,
    stdin: Option<ChildStdin>,
    rx: Receiver<Received>,
    /// Messages read while waiting for something else.
    pending: VecDeque<Received>,
    next_id: i64,
}

impl Serve {
    /// `panescan serve --socket-name NAME`.
    pub fn spawn(socket_name: &str) -> Serve {
        Serve::spawn_with(&["serve", "--socket-name", socket_name], &[])
    }

    /// A private tmux server and a `panescan serve` pointed at it.
    pub fn with_tmux(label: &str) -> (PrivateServer, Serve) {
        Serve::with_tmux_size(label, 80, 24)
    }

    pub fn with_tmux_size(label: &str, w: u16, h: u16) -> (PrivateServer, Serve) {
        let tmux = PrivateServer::start(label, w, h).expect("private tmux server starts");
        let serve = Serve::spawn(tmux.socket_name());
        (tmux, serve)
    }

    /// The binary with any arguments and extra environment.
    pub fn spawn_with(args: &[&str], envs: &[(&str, &str)]) -> Serve {
        Serve::spawn_env(args, envs, &[])
    }

    /// [`Serve::spawn_with`], and without the variables `removed` (even
    /// `LC_ALL`, which the tests otherwise set).
    pub fn spawn_env(args: &[&str], envs: &[(&str, &str)], removed: &[&str]) -> Serve {
        Serve::spawn_logged(args, envs, removed, Stdio::null())
    }

    /// [`Serve::spawn_env`] with its standard error going to `stderr`.
    pub fn spawn_logged(
        args: &[&str],
        envs: &[(&str, &str)],
        removed: &[&str],
        stderr: Stdio,
    ) -> Serve {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_panescan"));
        cmd.args(args)
            .env_remove("TMUX")
            .env_remove("TMUX_PANE")
            .env_remove("PANESCAN_TIER")
            .env_remove("PANESCAN_ALLOW_SOCKET_DIR")
            .env_remove("PANESCAN_LOG_DIR")
            .env("LC_ALL", "C.UTF-8")
            // In-process: no test shares (or leaves behind) a daemon;
            // tests/daemon*.rs run the daemon path on private directories.
            .env("PANESCAN_NO_DAEMON", "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(stderr);
        for (k, v) in envs {
            cmd.env(k, v);
        }
        for k in removed {
            cmd.env_remove(k);
        }
        let mut child = cmd.spawn().expect("panescan starts");
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().expect("stdout piped");
        let (tx, rx) = unbounded();
        std::thread::spawn(move || {
            let mut reader = BufReader::new(stdout);
            let mut line = String::new();
            loop {
                line.clear();
                match reader.read_line(&mut line) {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {
                        let end = line.trim_end_matches(['\n', '\r']).len();
                        line.truncate(end);
                        if tx.send(Received::new(std::mem::take(&mut line))).is_err() {
                            break;
                        }
                    }
                }
            }
        });
        Serve {
            child,
            stdin,
            rx,
            pending: VecDeque::new(),
            next_id: 1000,
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Sends one message (one line).
    pub fn send(&mut self, msg: &Value) {
        self.send_raw(&msg.to_string());
    }

    /// Sends raw text plus a newline.
    pub fn send_raw(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("stdin still open");
        stdin.write_all(line.as_bytes()).expect("write to panescan");
        stdin.write_all(b"\n").expect("write to panescan");
        stdin.flush().expect("flush to panescan");
    }

    /// The next message, if one arrives within `timeout`.
    pub fn recv(&mut self, timeout: Duration) -> Option<Value> {
        if let Some(m) = self.pending.pop_front() {
            return Some(m.value);
        }
        match self.rx.recv_timeout(timeout) {
            Ok(m) => Some(m.checked().value),
            Err(RecvTimeoutError::Timeout) | Err(RecvTimeoutError::Disconnected) => None,
        }
    }

    /// Every message arriving within `window`.
    pub fn drain(&mut self, window: Duration) -> Vec<Value> {
        let until = Instant::now() + window;
        let mut out: Vec<Value> = self.pending.drain(..).map(|m| m.value).collect();
        loop {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return out;
            }
            match self.rx.recv_timeout(left) {
                Ok(m) => out.push(m.checked().value),
                Err(_) => return out,
            }
        }
    }

    /// The response with this id; other messages are kept for later.
    pub fn response(&mut self, id: &Value, timeout: Duration) -> Value {
        self.response_line(id, timeout).value
    }

    /// [`Serve::response`] with the line as the server wrote it.
    pub fn response_line(&mut self, id: &Value, timeout: Duration) -> Received {
        if let Some(pos) = self.pending.iter().position(|m| m.answers(id)) {
            return self.pending.remove(pos).unwrap();
        }
        let until = Instant::now() + timeout;
        loop {
            let left = until.saturating_duration_since(Instant::now());
            let m = match self.rx.recv_timeout(left) {
                Ok(m) => m.checked(),
                Err(_) => panic!("no response to id {id} within {timeout:?}"),
            };
            if m.answers(id) {
                return m;
            }
            self.pending.push_back(m);
        }
    }

    /// The first message `want` accepts; others are kept for later.
    pub fn message(&mut self, timeout: Duration, mut want: impl FnMut(&Value) -> bool) -> Value {
        if let Some(pos) = self.pending.iter().position(|m| want(&m.value)) {
            return self.pending.remove(pos).unwrap().value;
        }
        let until = Instant::now() + timeout;
        loop {
            let left = until.saturating_duration_since(Instant::now());
            let m = match self.rx.recv_timeout(left) {
                Ok(m) => m.checked(),
                Err(_) => panic!("no such message within {timeout:?}"),
            };
            if want(&m.value) {
                return m.value;
            }
            self.pending.push_back(m);
        }
    }

    /// Messages already received that are not the response to anything
    /// asked for (notifications, mostly).
    pub fn take_pending(&mut self) -> Vec<Value> {
        self.pending.drain(..).map(|m| m.value).collect()
    }

    pub fn fresh_id(&mut self) -> Value {
        self.next_id += 1;
        json!(self.next_id)
    }

    /// Sends a request and returns the whole response.
    pub fn request(&mut self, method: &str, params: Value) -> Value {
        self.request_line(method, params).value
    }

    /// [`Serve::request`] with the line as the server wrote it.
    pub fn request_line(&mut self, method: &str, params: Value) -> Received {
        let id = self.fresh_id();
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        self.response_line(&id, REPLY_TIMEOUT)
    }

    /// Sends a request without params.
    pub fn request_bare(&mut self, method: &str) -> Value {
        let id = self.fresh_id();
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method}));
        self.response(&id, REPLY_TIMEOUT)
    }

    pub fn notify(&mut self, method: &str, params: Value) {
        self.send(&json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    /// The handshake of the 2025-11-25 era, plus `initialized`.
    pub fn initialize(&mut self) -> Value {
        let r = self.request(
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "panescan-tests", "version": "0"}}),
        );
        self.notify("notifications/initialized", json!({}));
        r["result"].clone()
    }

    /// `tools/call`: the `result` object (panics on a protocol error).
    pub fn call(&mut self, tool: &str, args: Value) -> Value {
        let r = self.request("tools/call", json!({"name": tool, "arguments": args}));
        assert!(r.get("error").is_none(), "{tool}: protocol error {r}");
        r["result"].clone()
    }

    /// A call that must succeed: its `structuredContent`.
    pub fn call_ok(&mut self, tool: &str, args: Value) -> Value {
        let r = self.call(tool, args.clone());
        assert_eq!(r["isError"], false, "{tool} {args} failed: {r}");
        assert!(r["content"][0]["text"].is_string(), "{tool}: no text: {r}");
        r["structuredContent"].clone()
    }

    /// A call that must fail as a tool error: its message.
    pub fn call_err(&mut self, tool: &str, args: Value) -> String {
        let r = self.call(tool, args.clone());
        assert_eq!(r["isError"], true, "{tool} {args} should fail: {r}");
        r["content"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    }

    /// Closes stdin (end of input).
    pub fn close_stdin(&mut self) {
        self.stdin = None;
    }

    /// Waits for the process to exit.
    pub fn wait_exit(&mut self, timeout: Duration) -> Option<ExitStatus> {
        let until = Instant::now() + timeout;
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Some(status);
            }
            if Instant::now() >= until {
                return None;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Sends a signal to the server process.
    pub fn signal(&self, name: &str) {
        let ok = Command::new("kill")
            .args([&format!("-{name}"), &self.child.id().to_string()])
            .status()
            .expect("kill runs")
            .success();
        assert!(ok, "kill -{name} failed");
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A temp directory unique to one test (`panescan-harden-LABEL-PID-NANOS`),
/// removed when dropped, also when the test fails.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(label: &str) -> TempDir {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        let dir = std::env::temp_dir().join(format!(
            "panescan-harden-{label}-{}-{nanos}",
            std::process::id()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Turns pane `main:0.0` into a sink for typed text: raw mode, no echo,
/// whatever reaches it written to `file` (data, never a command). Returns
/// its pane id once it runs.
pub fn typing_sink(tmux: &PrivateServer, file: &Path) -> String {
    typing_sink_at(tmux, "main:0.0", file)
}

/// [`typing_sink`] in the pane `target` names.
pub fn typing_sink_at(tmux: &PrivateServer, target: &str, file: &Path) -> String {
    tmux.run_ok([
        "respawn-pane",
        "-k",
        "-t",
        target,
        &format!("stty raw -echo; exec cat > {}", file.display()),
    ])
    .unwrap();
    // Ready once `cat` runs (stty has set the terminal up before it).
    let command = || {
        tmux.run_ok([
            "display-message",
            "-p",
            "-t",
            target,
            "#{pane_current_command}",
        ])
        .unwrap_or_default()
    };
    assert!(
        eventually(Duration::from_secs(10), || command().trim() == "cat"),
        "the sink pane runs {:?}",
        command()
    );
    tmux.run_ok(["display-message", "-p", "-t", target, "#{pane_id}"])
        .unwrap()
        .trim()
        .to_owned()
}

/// VmHWM (peak) and VmRSS of a process, in kB.
pub fn memory_kb(pid: u32) -> (u64, u64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .unwrap()
    };
    (field("VmHWM:"), field("VmRSS:"))
}

/// Everything a [`typing_sink`] pane received so far: types a unique
/// sentinel into it through tmux and waits for it in `file`. The terminal
/// is a queue, so whatever was typed earlier arrived before the sentinel:
/// no sleep can tell "nothing was typed" as surely.
pub fn typed_so_far(tmux: &PrivateServer, pane: &str, file: &Path) -> Vec<u8> {
    static COUNT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = COUNT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let sentinel = format!("<sentinel-{}-{n}>", std::process::id());
    tmux.run_ok(["send-keys", "-l", "-t", pane, "--", &sentinel])
        .unwrap();
    let mut got = Vec::new();
    let arrived = eventually(REPLY_TIMEOUT, || {
        got = std::fs::read(file).unwrap_or_default();
        got.ends_with(sentinel.as_bytes())
    });
    assert!(
        arrived,
        "the sentinel never reached {pane}: {:?}",
        String::from_utf8_lossy(&got)
    );
    got.truncate(got.len() - sentinel.len());
    got
}

/// Waits until tmux has run a job started now (`run-shell` of a `touch`
/// in `dir`, removed again): tmux forks its jobs (`#()` ones too) the
/// moment it starts them, so any started earlier, by a payload that got
/// through, has been forked before it and had as long to run.
pub fn tmux_jobs_settled(tmux: &PrivateServer, dir: &Path) {
    static COUNT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = COUNT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let flag = dir.join(format!(".jobs-settled-{}-{n}", std::process::id()));
    let command = format!("touch '{}'", flag.display());
    tmux.run_ok(["run-shell", &command]).unwrap();
    assert!(
        eventually(REPLY_TIMEOUT, || flag.exists()),
        "tmux never ran the job {command}"
    );
    let _ = std::fs::remove_file(&flag);
}

/// A new window (named `name`, if given) running `script`; its pane id once
/// `marker` shows in `tmux capture-pane -p <capture> -t PANE` (for example
/// `&["-J", "-S", "-"]` to look through the whole history).
pub fn window_showing(
    tmux: &PrivateServer,
    name: Option<&str>,
    script: &str,
    marker: &str,
    capture: &[&str],
) -> String {
    let mut args = vec!["new-window", "-d", "-P", "-F", "#{pane_id}"];
    if let Some(name) = name {
        args.extend(["-n", name]);
    }
    args.push(script);
    let pane = tmux.run_ok(args).unwrap().trim().to_owned();
    let shown = eventually(Duration::from_secs(20), || {
        let mut cmd = vec!["capture-pane", "-p"];
        cmd.extend_from_slice(capture);
        cmd.extend(["-t", pane.as_str()]);
        tmux.run_ok(cmd).is_ok_and(|t| t.contains(marker))
    });
    assert!(shown, "{marker:?} never showed in {pane} ({script})");
    pane
}

/// A new session `name` of `width` x `height` running `script` (made with
/// `new-session -d`, so no client is attached to it); its pane id once
/// `marker` shows on its screen.
pub fn session_showing(
    tmux: &PrivateServer,
    name: &str,
    (width, height): (u16, u16),
    script: &str,
    marker: &str,
) -> String {
    let (width, height) = (width.to_string(), height.to_string());
    let pane = tmux
        .run_ok([
            "new-session",
            "-d",
            "-s",
            name,
            "-x",
            &width,
            "-y",
            &height,
            "-P",
            "-F",
            "#{pane_id}",
            script,
        ])
        .unwrap()
        .trim()
        .to_owned();
    let shown = eventually(Duration::from_secs(20), || {
        tmux.run_ok(["capture-pane", "-p", "-t", &pane])
            .is_ok_and(|t| t.contains(marker))
    });
    assert!(shown, "{marker:?} never showed in {pane} ({script})");
    pane
}

/// A connection to the private server `server` (by its socket path).
pub fn connect(server: &PrivateServer) -> Tmux {
    Tmux::connect(&ServerSpec {
        socket_path: Some(server.socket_path().unwrap()),
        ..ServerSpec::default()
    })
    .unwrap()
}

/// Polls `f` until it returns true or `timeout` passes.
pub fn eventually(timeout: Duration, mut f: impl FnMut() -> bool) -> bool {
    let until = Instant::now() + timeout;
    loop {
        if f() {
            return true;
        }
        if Instant::now() >= until {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Checks `value` against the subset of JSON Schema our schemas use (type,
/// properties, required, additionalProperties false, items, enum, anyOf,
/// oneOf). Returns what does not fit.
pub fn validate(schema: &Value, value: &Value) -> Vec<String> {
    let mut errors = Vec::new();
    check(schema, value, "$", &mut errors);
    errors
}

fn type_ok(t: &str, v: &Value) -> bool {
    match t {
        "object" => v.is_object(),
        "array" => v.is_array(),
        "string" => v.is_string(),
        "integer" => v.is_i64() || v.is_u64(),
        "number" => v.is_number(),
        "boolean" => v.is_boolean(),
        "null" => v.is_null(),
        _ => true,
    }
}

fn check(schema: &Value, v: &Value, path: &str, errors: &mut Vec<String>) {
    let Some(s) = schema.as_object() else { return };
    match s.get("type") {
        Some(Value::String(t)) if !type_ok(t, v) => {
            errors.push(format!("{path}: expected {t}, got {v}"));
            return;
        }
        Some(Value::Array(ts)) if !ts.iter().any(|t| type_ok(t.as_str().unwrap_or(""), v)) => {
            errors.push(format!("{path}: expected one of {ts:?}, got {v}"));
            return;
        }
        _ => {}
    }
    if let Some(Value::Array(options)) = s.get("enum") {
        if !options.contains(v) {
            errors.push(format!("{path}: {v} not in {options:?}"));
        }
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(Value::Array(alts)) = s.get(key) {
            if !alts.iter().any(|alt| validate(alt, v).is_empty()) {
                errors.push(format!("{path}: matches no {key} alternative"));
            }
        }
    }
    if let (Some(obj), Some(props)) = (
        v.as_object(),
        s.get("properties").and_then(Value::as_object),
    ) {
        if let Some(Value::Array(req)) = s.get("required") {
            for r in req {
                let r = r.as_str().unwrap_or_default();
                if !obj.contains_key(r) {
                    errors.push(format!("{path}: missing required {r}"));
                }
            }
        }
        for (k, child) in obj {
            match props.get(k) {
                Some(ps) => check(ps, child, &format!("{path}.{k}"), errors),
                None if s.get("additionalProperties") == Some(&Value::Bool(false)) => {
                    errors.push(format!("{path}: unexpected property {k}"))
                }
                None => {
                    if let Some(ap) = s.get("additionalProperties").filter(|a| a.is_object()) {
                        check(ap, child, &format!("{path}.{k}"), errors);
                    }
                }
            }
        }
    }
    if let (Some(items), Some(arr)) = (s.get("items"), v.as_array()) {
        for (i, item) in arr.iter().enumerate() {
            check(items, item, &format!("{path}[{i}]"), errors);
        }
    }
}

/// Restarts `pane` running a bash without rc files (prompt `$ `) and waits
/// for its prompt: the user's shell start-up can be slow and can swallow
/// keys typed before it is ready, which would make tests flaky.
pub fn plain_shell(tmux: &PrivateServer, pane: &str) {
    tmux.run_ok([
        "respawn-pane",
        "-k",
        "-t",
        pane,
        "env PS1='$ ' bash --norc --noprofile",
    ])
    .expect("respawn-pane");
    let ready = eventually(Duration::from_secs(10), || {
        tmux.run_ok(["capture-pane", "-p", "-t", pane])
            .map(|s| s.lines().any(|l| l.starts_with('$')))
            .unwrap_or(false)
    });
    assert!(ready, "no prompt in {pane}");
}

/// A process seen in `/proc`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProcessInfo {
    pub pid: u32,
    /// `R`, `S`, `T` (stopped), `Z` (zombie: exited, not reaped)...
    pub state: char,
    /// Its arguments joined by spaces (empty for a zombie).
    pub cmdline: String,
}

/// The pid the kernel handed out last, to pass to [`new_children`].
pub fn last_pid() -> u32 {
    std::fs::read_to_string("/proc/sys/kernel/ns_last_pid")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(0)
}

/// The processes whose parent is `parent` among those started after
/// `since` (a [`last_pid`]): only the new pids are read, so it stays fast
/// enough to see a process that lives a few milliseconds on a loaded
/// machine. Pids wrap at `pid_max` back to 300.
pub fn new_children(parent: u32, since: u32) -> Vec<ProcessInfo> {
    let max: u32 = std::fs::read_to_string("/proc/sys/kernel/pid_max")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(32_768);
    let now = last_pid();
    let mut out = Vec::new();
    let mut pid = since;
    let mut steps = 0;
    while pid != now && steps < max {
        pid = if pid + 1 >= max { 300 } else { pid + 1 };
        steps += 1;
        out.extend(child_process(pid, parent));
    }
    out
}

/// Process `pid`, if it exists and its parent is `parent`.
pub fn child_process(pid: u32, parent: u32) -> Option<ProcessInfo> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // `pid (comm) state ppid ...`: comm may hold spaces and `)`.
    let mut rest = stat.rsplit_once(')')?.1.split_whitespace();
    let state = rest.next()?.chars().next()?;
    let ppid: u32 = rest.next()?.parse().ok()?;
    (ppid == parent).then(|| ProcessInfo {
        pid,
        state,
        cmdline: std::fs::read(format!("/proc/{pid}/cmdline"))
            .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
            .unwrap_or_default(),
    })
}

/// The seed corpus of fuzz target `target` (fuzz/corpus/TARGET), in name
/// order: each file's path and bytes.
pub fn seed_corpus(target: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../fuzz/corpus")
        .join(target);
    let mut entries: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    entries
        .into_iter()
        .map(|p| {
            let data = std::fs::read(&p).unwrap();
            (p, data)
        })
        .collect()
}

/// The `(major, minor)` of the tmux serving `server` (`3.3a` -> (3, 3),
/// `next-3.8` -> (3, 8)); `None` for `master` or the like.
pub fn tmux_version(server: &PrivateServer) -> Option<(u32, u32)> {
    let v = server
        .run_ok(["display-message", "-p", "#{version}"])
        .ok()?;
    let v = v.trim();
    let v = v.strip_prefix("next-").unwrap_or(v);
    let (major, rest) = v.split_once('.')?;
    let minor: String = rest.chars().take_while(char::is_ascii_digit).collect();
    Some((major.parse().ok()?, minor.parse().ok()?))
}

/// Whether `server`'s tmux takes a session or window name with a control
/// character (stored escaped, a tab as `\t`): tmux 3.3a does; tmux 3.7
/// and later refuse it ("invalid session name", utf8.c `utf8_isvalid`
/// through `check_name`, commit 64e83ca).
pub fn names_take_control_characters(server: &PrivateServer) -> bool {
    tmux_version(server).is_some_and(|v| v < (3, 7))
}

/// The tmux 3.8 program (tmux's development source, built from
/// third_party/tmux-next by `.ci/build-tmux-next`, or named by
/// `PANESCAN_TMUX_NEXT`); a test needing it fails without it.
pub fn next_tmux() -> PathBuf {
    let program = std::env::var_os("PANESCAN_TMUX_NEXT").map_or_else(
        || {
            PathBuf::from(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../target/tmux-next/bin/tmux"
            ))
        },
        PathBuf::from,
    );
    assert!(
        program.is_file(),
        "no tmux 3.8 at {}: build it with .ci/build-tmux-next, or name one with PANESCAN_TMUX_NEXT",
        program.display()
    );
    program
}
