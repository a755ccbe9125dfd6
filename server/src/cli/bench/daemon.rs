//! `panescan bench` daemon rows: what the daemon saves a new session,
//! measured on the real binary (this program run as `serve`) against the
//! filled server, with a private runtime directory whose daemon is stopped
//! at the end.
//!
//! - **first search**: a deep search (every line, a pattern found nowhere)
//!   as the first call of a session: in-process (`--no-daemon`), in the
//!   first session of a new daemon (cold) and in a later session of it
//!   (warm: served from the text the first one fetched; goal <= 0.15x);
//! - **start**: serve start to the `initialize` answer, in-process and
//!   through a running daemon (goal <= 10 ms), median of the runs;
//! - **sixteen**: 16 sessions searching at once: the control clients tmux
//!   sees (one) and whether every answer found every needle.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::Instant;

use serde::Serialize;
use serde_json::{json, Value};

use super::report::ms;
use crate::testbed::baseline::median;
use crate::testbed::fixture::{Fixture, NEEDLE};

/// Sessions searching at once in the last row.
const AT_ONCE: usize = 16;

/// The daemon section of the bench report.
#[derive(Debug, Clone, Serialize)]
pub struct DaemonBench {
    /// The deep search, first call of an in-process serve.
    pub in_process_ms: f64,
    /// The same, first session of a new daemon.
    pub cold_ms: f64,
    /// The same, a later session of that daemon.
    pub warm_ms: f64,
    /// `warm_ms` over `cold_ms`.
    pub ratio_warm: f64,
    /// Panes the warm search fetched whole (the daemon's counters).
    pub warm_fetched_whole: u64,
    /// serve start to the initialize answer, in-process, median.
    pub init_in_process_ms: f64,
    /// The same through a running daemon, median.
    pub init_daemon_ms: f64,
    /// 16 sessions searching at once: the slowest answer.
    pub sixteen_ms: f64,
    /// tmux's control clients while they were open.
    pub sixteen_control_clients: usize,
    /// Every one of the 16 answers found every needle.
    pub sixteen_all_right: bool,
}

/// The runtime directory of the bench's daemon; stopped and removed on
/// drop, also when the bench fails.
struct Place(PathBuf);

impl Drop for Place {
    fn drop(&mut self) {
        if let Ok(exe) = std::env::current_exe() {
            let _ = Command::new(exe)
                .args(["stop", "--runtime-dir"])
                .arg(&self.0)
                .stderr(Stdio::null())
                .status();
        }
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// One `panescan serve` and its pipes.
pub(super) struct Session {
    child: Child,
    input: ChildStdin,
    output: BufReader<ChildStdout>,
    next: u64,
}

impl Session {
    /// Starts serve on `socket` (through the daemon in `rt`, or with
    /// `extra` flags) and waits for its `initialize` answer.
    pub(super) fn start(socket: &str, rt: &Path, extra: &[&str]) -> Result<Session, String> {
        let mut args = vec!["serve", "--socket-name", socket];
        args.extend_from_slice(extra);
        Session::launch(&args, Some(rt))
    }

    /// This program run with `args` (`serve ...`), in-process (no daemon),
    /// initialized.
    pub(super) fn spawn(args: &[&str]) -> Result<Session, String> {
        Session::launch(args, None)
    }

    /// This program run with `args`, through the daemon in `rt` (`None`:
    /// never a daemon), initialized.
    fn launch(args: &[&str], rt: Option<&Path>) -> Result<Session, String> {
        let exe = std::env::current_exe().map_err(|e| e.to_string())?;
        let mut cmd = Command::new(exe);
        cmd.args(args);
        match rt {
            Some(rt) => cmd
                .env("PANESCAN_RUNTIME_DIR", rt)
                .env_remove("PANESCAN_NO_DAEMON"),
            None => cmd.env("PANESCAN_NO_DAEMON", "1"),
        };
        let mut child = cmd
            .env_remove("TMUX")
            .env_remove("TMUX_PANE")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("cannot start serve: {e}"))?;
        let (Some(input), Some(output)) = (child.stdin.take(), child.stdout.take()) else {
            return Err("serve has no pipes".into());
        };
        let mut s = Session {
            child,
            input,
            output: BufReader::new(output),
            next: 0,
        };
        let init = json!({"protocolVersion": "2025-11-25", "capabilities": {},
                          "clientInfo": {"name": "bench", "version": "0"}});
        s.ask("initialize", init)?;
        Ok(s)
    }

    fn send(&mut self, method: &str, params: Value) -> Result<u64, String> {
        self.next += 1;
        let line = json!({"jsonrpc": "2.0", "id": self.next, "method": method, "params": params});
        writeln!(self.input, "{line}").map_err(|e| format!("serve: {e}"))?;
        Ok(self.next)
    }

    fn answer(&mut self, id: u64) -> Result<Value, String> {
        let mut line = String::new();
        loop {
            line.clear();
            if self
                .output
                .read_line(&mut line)
                .map_err(|e| e.to_string())?
                == 0
            {
                return Err("serve ended without an answer".into());
            }
            let v: Value = serde_json::from_str(&line).map_err(|e| e.to_string())?;
            if v["id"] == id {
                return Ok(v);
            }
        }
    }

    fn ask(&mut self, method: &str, params: Value) -> Result<Value, String> {
        let id = self.send(method, params)?;
        self.answer(id)
    }

    /// A tool call's structured result (an error if it failed).
    pub(super) fn call(&mut self, args: &Value) -> Result<Value, String> {
        let id = self.send(
            "tools/call",
            json!({"name": "search_panes", "arguments": args}),
        )?;
        let r = self.answer(id)?;
        if r["result"]["isError"] != false {
            return Err(format!("search failed: {r}"));
        }
        Ok(r["result"]["structuredContent"].clone())
    }

    pub(super) fn end(mut self) {
        drop(self.input);
        let _ = self.child.wait();
    }
}

/// The deep search of every line, `pattern` found where it is planted.
fn deep(lines: usize, pattern: &str) -> Value {
    json!({"pattern": pattern, "scrollback_lines": lines, "max_scan_bytes": 1u64 << 34,
           "limit": 1000})
}

/// A search's first call in a new session, timed.
fn first_search(socket: &str, rt: &Path, lines: usize, extra: &[&str]) -> Result<f64, String> {
    let mut s = Session::start(socket, rt, extra)?;
    let started = Instant::now();
    s.call(&deep(lines, "found nowhere at all"))?;
    let took = ms(started.elapsed());
    s.end();
    Ok(took)
}

/// serve start to its initialize answer, median of `runs`.
fn to_initialize(socket: &str, rt: &Path, extra: &[&str], runs: usize) -> Result<f64, String> {
    let mut times = Vec::new();
    for _ in 0..runs {
        let started = Instant::now();
        let s = Session::start(socket, rt, extra)?;
        times.push(started.elapsed());
        s.end();
    }
    Ok(ms(median(&mut times)))
}

/// The daemon's `cache_full` counter.
fn fetched_whole(rt: &Path) -> Result<u64, String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let out = Command::new(exe)
        .args(["status", "--runtime-dir"])
        .arg(rt)
        .output()
        .map_err(|e| e.to_string())?;
    let status: Value = serde_json::from_slice(&out.stdout).map_err(|e| e.to_string())?;
    Ok(status["cache_full"].as_u64().unwrap_or(0))
}

/// Measures the daemon rows on `fixture`.
pub fn run(fixture: &Fixture, runs: usize) -> Result<DaemonBench, String> {
    let socket = fixture.server.socket_name();
    let lines = fixture.shape.lines;
    let rt = Place(std::env::temp_dir().join(format!("panescan-bench-rt-{}", std::process::id())));
    let _ = std::fs::remove_dir_all(&rt.0);
    let in_process_ms = first_search(socket, &rt.0, lines, &["--no-daemon"])?;
    let cold_ms = first_search(socket, &rt.0, lines, &[])?;
    let before = fetched_whole(&rt.0)?;
    let warm_ms = first_search(socket, &rt.0, lines, &[])?;
    let warm_fetched_whole = fetched_whole(&rt.0)?.saturating_sub(before);
    let init_in_process_ms = to_initialize(socket, &rt.0, &["--no-daemon"], runs)?;
    let init_daemon_ms = to_initialize(socket, &rt.0, &[], runs)?;
    let (sixteen_ms, sixteen_all_right, sixteen_control_clients) = sixteen(fixture, &rt.0, lines)?;
    Ok(DaemonBench {
        in_process_ms,
        cold_ms,
        warm_ms,
        ratio_warm: if cold_ms > 0.0 {
            warm_ms / cold_ms
        } else {
            0.0
        },
        warm_fetched_whole,
        init_in_process_ms,
        init_daemon_ms,
        sixteen_ms,
        sixteen_control_clients,
        sixteen_all_right,
    })
}

/// 16 sessions, one deep search each sent at once: the slowest answer,
/// whether each found every needle, tmux's control clients meanwhile.
fn sixteen(fixture: &Fixture, rt: &Path, lines: usize) -> Result<(f64, bool, usize), String> {
    let socket = fixture.server.socket_name();
    let mut sessions = (0..AT_ONCE)
        .map(|_| Session::start(socket, rt, &[]))
        .collect::<Result<Vec<_>, _>>()?;
    let args = deep(lines, NEEDLE);
    let started = Instant::now();
    let mut ids = Vec::new();
    for s in &mut sessions {
        ids.push(s.send(
            "tools/call",
            json!({"name": "search_panes", "arguments": args}),
        )?);
    }
    let mut all_right = true;
    for (s, id) in sessions.iter_mut().zip(ids) {
        let r = s.answer(id)?;
        let found: usize = r["result"]["structuredContent"]["matches"]
            .as_array()
            .map(|m| {
                m.iter()
                    .map(|m| m["lines"].as_array().map_or(0, Vec::len))
                    .sum()
            })
            .unwrap_or(0);
        all_right &= r["result"]["isError"] == false && found == fixture.needles.len();
    }
    let slowest = ms(started.elapsed());
    let clients = fixture
        .server
        .run_ok(["list-clients", "-F", "#{client_flags}"])
        .map_err(|e| e.to_string())?;
    let control = clients
        .lines()
        .filter(|l| l.contains("control-mode"))
        .count();
    for s in sessions {
        s.end();
    }
    Ok((slowest, all_right, control))
}

/// The section as a table.
pub fn print(d: &DaemonBench) {
    println!();
    println!("daemon (deep search as a session's first call; serve start):");
    println!(
        "  in-process (--no-daemon), cold   {:>9.1} ms",
        d.in_process_ms
    );
    println!("  daemon, first session (cold)     {:>9.1} ms", d.cold_ms);
    println!(
        "  daemon, later session (warm)     {:>9.1} ms  {:.3}x cold (goal <= 0.15x; {} panes fetched whole)",
        d.warm_ms, d.ratio_warm, d.warm_fetched_whole
    );
    println!(
        "  serve start to initialize: in-process {:.1} ms, through a running daemon {:.1} ms (goal <= 10 ms)",
        d.init_in_process_ms, d.init_daemon_ms
    );
    println!(
        "  {AT_ONCE} sessions searching at once: {:.1} ms, {} control client(s), every answer right: {}",
        d.sixteen_ms, d.sixteen_control_clients, d.sixteen_all_right
    );
}

/// The section as Markdown.
pub fn markdown(d: &DaemonBench) -> String {
    let mut out = String::from(
        "| daemon: deep search as a session's first call | median | x cold |\n|---|---|---|\n",
    );
    out.push_str(&format!(
        "| in-process (`--no-daemon`) | {:.1} ms | |\n",
        d.in_process_ms
    ));
    out.push_str(&format!(
        "| daemon, first session (cold) | {:.1} ms | 1 |\n",
        d.cold_ms
    ));
    out.push_str(&format!(
        "| daemon, later session (warm; goal <= 0.15x) | {:.1} ms | {:.3} |\n",
        d.warm_ms, d.ratio_warm
    ));
    out.push_str(&format!(
        "\nserve start to initialize: in-process {:.1} ms, through a running daemon {:.1} ms (goal <= 10 ms). {AT_ONCE} sessions searching at once: {:.1} ms, {} control client(s), every answer right: {}.\n",
        d.init_in_process_ms, d.init_daemon_ms, d.sixteen_ms, d.sixteen_control_clients, d.sixteen_all_right
    ));
    out
}
