//! A resource subscriber that stops reading its stdout, so that panescan's
//! output queue and the pipe behind it are full: the updates due meanwhile
//! are kept, one per resource, and sent once the client reads again (none
//! lost, none piled up); memory stays flat while the panes print; tmux is
//! not held up; SIGTERM still ends the process promptly.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{eventually, memory_kb, TempDir};
use crossbeam_channel::{unbounded, Receiver};
use panescan::testing::private_server::PrivateServer;
use serde_json::{json, Value};

/// How long the client reads nothing. Longer than the old code took to
/// give up on the updates it held (2 s each, for 3 resources, twice).
const NOT_READING: Duration = Duration::from_secs(14);

/// `panescan serve` whose stdout is read only while the test lets it.
struct Raw {
    child: Child,
    stdin: ChildStdin,
    rx: Receiver<Value>,
    paused: Arc<AtomicBool>,
    next_id: i64,
}

impl Raw {
    fn spawn(tmux: &PrivateServer) -> Raw {
        let mut child = Command::new(env!("CARGO_BIN_EXE_panescan"))
            .args(["serve", "--socket-name", tmux.socket_name()])
            .env_remove("TMUX")
            .env_remove("TMUX_PANE")
            .env("LC_ALL", "C.UTF-8")
            .env("PANESCAN_NO_DAEMON", "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let paused = Arc::new(AtomicBool::new(false));
        let (tx, rx) = unbounded();
        let gate = paused.clone();
        std::thread::spawn(move || {
            let mut reader = BufReader::with_capacity(512, stdout);
            let mut line = String::new();
            loop {
                while gate.load(Ordering::SeqCst) {
                    std::thread::sleep(Duration::from_millis(10));
                }
                line.clear();
                if reader.read_line(&mut line).unwrap_or(0) == 0 {
                    break;
                }
                // A non-JSON line fails the test where it is awaited.
                let v = serde_json::from_str(&line).unwrap_or(Value::String(line.clone()));
                if tx.send(v).is_err() {
                    break;
                }
            }
        });
        Raw {
            child,
            stdin,
            rx,
            paused,
            next_id: 0,
        }
    }

    fn send(&mut self, method: &str, params: Value) -> i64 {
        self.next_id += 1;
        let msg = json!({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params});
        writeln!(self.stdin, "{msg}").unwrap();
        self.stdin.flush().unwrap();
        self.next_id
    }

    fn initialize(&mut self) {
        self.send(
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "panescan-tests", "version": "0"}}),
        );
        writeln!(
            self.stdin,
            r#"{{"jsonrpc":"2.0","method":"notifications/initialized"}}"#
        )
        .unwrap();
    }

    /// Whether panescan's stdout writer thread is blocked writing to the
    /// pipe (the kernel says so in the thread's `wchan`).
    fn writer_blocked(&self) -> bool {
        let tasks = format!("/proc/{}/task", self.child.id());
        let Ok(dir) = std::fs::read_dir(tasks) else {
            return false;
        };
        dir.flatten().any(|t| {
            let read = |f: &str| std::fs::read_to_string(t.path().join(f)).unwrap_or_default();
            read("comm").trim() == "stdout" && read("wchan").contains("pipe_write")
        })
    }

    /// Stops reading, then has panescan answer more than its queue and the
    /// pipe hold; returns once the pipe is full.
    fn stop_reading(&mut self) -> i64 {
        self.paused.store(true, Ordering::SeqCst);
        let mut last = 0;
        for _ in 0..200 {
            last = self.send("tools/list", json!({}));
        }
        assert!(
            eventually(Duration::from_secs(20), || self.writer_blocked()),
            "panescan's stdout never filled"
        );
        last
    }

    fn resume(&self) {
        self.paused.store(false, Ordering::SeqCst);
    }

    /// Messages until the answer to `id`; `updated` URIs counted into `seen`.
    fn answer(&self, id: i64, seen: &mut BTreeMap<String, u32>) -> Value {
        let until = Instant::now() + Duration::from_secs(60);
        loop {
            let left = until.saturating_duration_since(Instant::now());
            let m = self.rx.recv_timeout(left).expect("an answer");
            assert!(!m.is_string(), "stdout carried a non-JSON line: {m}");
            if m["id"] == id && m.get("method").is_none() {
                return m;
            }
            count_update(&m, seen);
        }
    }
}

impl Drop for Raw {
    fn drop(&mut self) {
        self.resume();
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn count_update(m: &Value, seen: &mut BTreeMap<String, u32>) {
    assert!(!m.is_string(), "stdout carried a non-JSON line: {m}");
    if m["method"] == "notifications/resources/updated" {
        let uri = m["params"]["uri"].as_str().unwrap().to_owned();
        *seen.entry(uri).or_default() += 1;
    }
}

/// Windows running `bash SCRIPT i`; their pane ids.
fn windows(tmux: &PrivateServer, n: usize, script: &std::path::Path) -> Vec<String> {
    (0..n)
        .map(|i| {
            let cmd = format!("bash {} {i}", script.display());
            tmux.run_ok(["new-window", "-d", "-P", "-F", "#{pane_id}", &cmd])
                .unwrap()
                .trim()
                .to_owned()
        })
        .collect()
}

fn subscribe_all(s: &mut Raw, panes: &[String]) -> Vec<String> {
    let uris: Vec<String> = panes
        .iter()
        .map(|p| format!("tmux://pane/{}/screen", p.trim_start_matches('%')))
        .collect();
    for uri in &uris {
        let id = s.send("resources/subscribe", json!({ "uri": uri }));
        let r = s.answer(id, &mut BTreeMap::new());
        assert!(r.get("error").is_none(), "{r}");
    }
    uris
}

#[test]
fn updates_due_while_the_client_does_not_read_are_kept_and_coalesced() {
    let tmux = PrivateServer::start("harden-sub-kept", 80, 24).unwrap();
    let dir = TempDir::new("harden-sub-kept");
    let go = dir.0.join("go");
    let script = dir.0.join("print.sh");
    // Waits for `go`, prints 3,000 lines, then is quiet for good.
    let body = format!(
        "while [ ! -e {} ]; do sleep 0.05; done; seq -f \"kept $1 %g\" 3000; echo done-$1; exec sleep 100000\n",
        go.display()
    );
    std::fs::write(&script, body).unwrap();
    let panes = windows(&tmux, 3, &script);
    let mut s = Raw::spawn(&tmux);
    s.initialize();
    let uris = subscribe_all(&mut s, &panes);
    let last = s.stop_reading();
    std::fs::write(&go, b"").unwrap();
    for (i, p) in panes.iter().enumerate() {
        assert!(eventually(Duration::from_secs(20), || tmux
            .run_ok(["capture-pane", "-p", "-t", p])
            .is_ok_and(|t| t.contains(&format!("done-{i}")))));
    }
    // The panes are quiet now; the client reads nothing for a while.
    std::thread::sleep(NOT_READING);
    s.resume();
    let mut seen = BTreeMap::new();
    s.answer(last, &mut seen);
    let all = eventually(Duration::from_secs(30), || {
        while let Ok(m) = s.rx.try_recv() {
            count_update(&m, &mut seen);
        }
        uris.iter().all(|u| seen.contains_key(u))
    });
    eprintln!("updates after {NOT_READING:?} unread: {seen:?}");
    assert!(all, "updates lost while the client did not read: {seen:?}");
    // Coalesced: 3,000 lines per pane made a few updates, not thousands.
    assert!(seen.values().all(|n| *n <= 3), "{seen:?}");
}

#[test]
fn a_client_that_never_reads_costs_flat_memory_and_sigterm_still_ends_it() {
    let tmux = PrivateServer::start("harden-sub-never", 80, 24).unwrap();
    let dir = TempDir::new("harden-sub-never");
    let script = dir.0.join("print.sh");
    // Prints without end, a line every 20 ms, starting no process.
    std::fs::write(
        &script,
        "exec 3<> <(:); i=0; while :; do i=$((i+1)); echo \"never $1 $i\"; read -t 0.02 -u 3; done\n",
    )
    .unwrap();
    // A short history, full before the first sample: tmux's memory then
    // holds still while the panes print.
    tmux.run_ok(["set-option", "-g", "history-limit", "50"])
        .unwrap();
    let panes = windows(&tmux, 12, &script);
    let full = || {
        tmux.run_ok(["list-panes", "-a", "-F", "#{history_size}"])
            .is_ok_and(|t| {
                t.lines()
                    .filter(|l| l.parse::<u32>().unwrap_or(0) >= 45)
                    .count()
                    >= 12
            })
    };
    assert!(
        eventually(Duration::from_secs(30), full),
        "histories never filled"
    );
    let mut s = Raw::spawn(&tmux);
    s.initialize();
    subscribe_all(&mut s, &panes);
    s.stop_reading();
    let (pid, tmux_pid) = (s.child.id(), tmux.pid().unwrap());
    // The panes keep printing, every screen keeps changing; memory is
    // compared after a first few seconds of that.
    let mut answered = 0;
    let mut early = None;
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(11) {
        if early.is_none() && started.elapsed() >= Duration::from_secs(3) {
            early = Some((memory_kb(pid), memory_kb(tmux_pid)));
        }
        // tmux serves its other clients meanwhile.
        tmux.run_ok(["display-message", "-p", "#{pane_id}"])
            .unwrap();
        answered += 1;
        std::thread::sleep(Duration::from_millis(100));
    }
    let early = early.unwrap();
    let late = (memory_kb(pid), memory_kb(tmux_pid));
    eprintln!(
        "not reading for 8 s, 12 screens printing: panescan VmHWM {} -> {} kB, tmux {} -> {} kB, {answered} tmux calls answered",
        early.0 .0, late.0 .0, early.1 .0, late.1 .0
    );
    assert!(
        late.0 .0 * 10 < early.0 .0 * 11,
        "panescan grew: {early:?} -> {late:?}"
    );
    assert!(
        late.1 .0 * 10 < early.1 .0 * 11,
        "tmux grew: {early:?} -> {late:?}"
    );
    let stopping = Instant::now();
    let ok = Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status()
        .unwrap()
        .success();
    assert!(ok);
    let mut exited = None;
    eventually(Duration::from_secs(10), || {
        exited = s.child.try_wait().unwrap();
        exited.is_some()
    });
    eprintln!("exited {:?} after SIGTERM", stopping.elapsed());
    assert!(
        exited.is_some(),
        "SIGTERM did not end a server whose client does not read"
    );
    // Nothing of it stays in tmux.
    assert!(eventually(Duration::from_secs(10), || tmux
        .run_ok(["list-clients"])
        .is_ok_and(|c| c.trim().is_empty())));
}
