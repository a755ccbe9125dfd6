//! `panescan bench` wait section, wide case: watch_panes over every pane
//! of a server of 500, two of which print, timed from the first print to
//! the answer holding both hits, beside one capture of a pane of that
//! server (what a check costs tmux grows with its panes).
//!
//! The server runs `sleep` in 498 panes and `cat` on a FIFO of its own in
//! two, so the moment a needle is written to a FIFO is the moment it
//! appears. Each run starts a watch for a fresh needle (`max_hits` 2),
//! waits until the watch says it is set (its first progress message) and
//! a little longer (as a watch that lasts), then writes the needle to both
//! FIFOs, one after the other, and times until the answer.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::json;

use super::probe::{median_spread, one_capture, read_context, write_needle};
use crate::testbed::private_server::PrivateServer;
use crate::tmux::{PaneId, ServerSpec};
use crate::tools::context::ProgressSink;
use crate::tools::registry::Tool;
use crate::tools::wait::{WatchPanes, WatchPanesArgs};

/// Panes of the server.
const WIDE_PANES: usize = 500;
/// How long a set watch runs before the needle is written.
const SETTLE: Duration = Duration::from_millis(300);

/// watch_panes over a wide server (milliseconds).
#[derive(Debug, Clone, Default, Serialize)]
pub struct WideWatch {
    /// Panes of the server, all watched.
    pub panes: usize,
    /// First print -> answer with both hits: median, best, worst.
    pub median_ms: f64,
    pub min_ms: f64,
    pub max_ms: f64,
    /// One capture of a printing pane's screen on that server.
    pub capture_median_ms: f64,
}

/// Runs `runs` watches on a server of its own.
pub fn run(runs: usize) -> Result<WideWatch, String> {
    let server = PrivateServer::start("bench-watch", 80, 10).map_err(|e| e.to_string())?;
    let dir = std::env::temp_dir().join(format!("{}.d", server.socket_name()));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let result = measure(&server, &dir, runs.max(1));
    let _ = std::fs::remove_dir_all(&dir);
    result
}

fn measure(server: &PrivateServer, dir: &Path, runs: usize) -> Result<WideWatch, String> {
    let fifos = [dir.join("a"), dir.join("b")];
    let mut printing = Vec::new();
    for fifo in &fifos {
        let made = std::process::Command::new("mkfifo")
            .arg(fifo)
            .status()
            .map_err(|e| format!("cannot run mkfifo: {e}"))?;
        if !made.success() {
            return Err("mkfifo failed".into());
        }
        let script = format!("while :; do cat '{}'; done", fifo.display());
        let pane = server
            .run_ok(["new-window", "-d", "-P", "-F", "#{pane_id}", &script])
            .map_err(|e| e.to_string())?;
        printing.push(PaneId::parse(pane.trim()).map_err(|e| e.to_string())?);
    }
    // The session's first window and the two above: the rest sleep.
    let mut script = String::new();
    for _ in 3..WIDE_PANES {
        let _ = writeln!(script, "new-window -d \"exec sleep 2147483647\"");
    }
    server.source(&script).map_err(|e| e.to_string())?;
    let listed = server
        .run_ok(["list-panes", "-a", "-F", "#{pane_id}"])
        .map_err(|e| e.to_string())?;
    let panes = listed.lines().count();
    let spec = ServerSpec::named(server.socket_name());
    let (mut times, mut captures) = (Vec::new(), Vec::new());
    for k in 0..runs {
        times.push(one_watch(&spec, &fifos, &format!("needle-wide{k}"))?);
        captures.push(one_capture(&spec, printing[0])?);
    }
    let (median_ms, min_ms, max_ms) = median_spread(&mut times);
    let (capture_median_ms, _, _) = median_spread(&mut captures);
    Ok(WideWatch {
        panes,
        median_ms,
        min_ms,
        max_ms,
        capture_median_ms,
    })
}

/// One watch for `needle` printed in both FIFOs' panes: the time from the
/// first write to the answer.
fn one_watch(spec: &ServerSpec, fifos: &[PathBuf], needle: &str) -> Result<Duration, String> {
    let mut ctx = read_context(spec, true);
    let (set_tx, set_rx) = crossbeam_channel::bounded(1);
    ctx.progress = ProgressSink::new(move |_, _, message| {
        if message.is_some_and(|m| m.starts_with("watching")) {
            let _ = set_tx.try_send(());
        }
    });
    let args: WatchPanesArgs = serde_json::from_value(
        json!({"pattern": needle, "max_hits": fifos.len(), "timeout_ms": 30_000}),
    )
    .map_err(|e| e.to_string())?;
    let watcher = std::thread::spawn(move || {
        let out = WatchPanes::run(&ctx, args);
        (out, Instant::now())
    });
    // Not set within the watch's own timeout: the answer says why.
    let _ = set_rx.recv_timeout(Duration::from_secs(30));
    std::thread::sleep(SETTLE);
    let mut written = None;
    for fifo in fifos {
        let at = write_needle(fifo, needle)?;
        written.get_or_insert(at);
    }
    let (out, answered) = watcher
        .join()
        .map_err(|_| "the watch panicked".to_string())?;
    let out = out.map_err(|e| format!("watch_panes failed: {e}"))?;
    if out.hits.len() < fifos.len() {
        return Err(format!(
            "watch_panes saw {} of {} prints of {needle}",
            out.hits.len(),
            fifos.len()
        ));
    }
    let written = written.unwrap_or(answered);
    Ok(answered.saturating_duration_since(written))
}

/// The wide watch's row of the report.
pub fn print(w: &WideWatch) {
    println!(
        "  watch_panes, 2 of {} panes print {:>7.1} ms  ({:.1}-{:.1})",
        w.panes, w.median_ms, w.min_ms, w.max_ms
    );
    println!(
        "  one capture, {} panes     {:>7.1} ms",
        w.panes, w.capture_median_ms
    );
}

/// The same as table rows (`--markdown`).
pub fn markdown(w: &WideWatch, out: &mut String) {
    let _ = writeln!(
        out,
        "| watch_panes, every pane ({}), 2 print, both hits | {:.1} ms | {:.1}-{:.1} ms |",
        w.panes, w.median_ms, w.min_ms, w.max_ms
    );
    let _ = writeln!(
        out,
        "| one capture of a pane, {} panes | {:.1} ms | |",
        w.panes, w.capture_median_ms
    );
}
