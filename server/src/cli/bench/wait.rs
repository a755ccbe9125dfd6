//! `panescan bench` wait cases: how long `wait_for_text` takes from the
//! moment the text appears in a pane to its answer, on tmux's event stream
//! and on the polling path (`serve --no-events`), in the same run, beside
//! the cost of one capture of that pane.
//!
//! A private server runs `cat` on a FIFO in one pane (plus a few idle
//! panes). Each run starts a wait for a fresh needle, lets it settle (so the
//! polling path is at its steady interval, as for a wait that lasts), then
//! writes the needle to the FIFO and times until the wait returns: `cat`
//! prints it at once, so that moment is when the text appears. Event and
//! polling runs alternate, so load drifting on a shared machine moves both
//! alike. The waits run in-process through the same tool code `serve` runs.
//!
//! In the same run, run_command types `true` into an idle bash (no rc
//! files) and is timed from the call to its answer (exit status and
//! output): the loop an agent runs, on the mutating tier.
//! A third kind of run times watch_panes over every pane of the server
//! (the pane with the FIFO and the idle ones) the same way, and a fourth
//! watch_panes over a server of 500 panes ([`super::watch`]).

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::json;

use super::probe::{median_spread, one_capture, read_context, write_needle};
use super::watch::WideWatch;
use crate::config::{ServeConfig, Tier};
use crate::testbed::baseline::median;
use crate::testbed::private_server::PrivateServer;
use crate::tmux::{PaneId, ServerSpec};
use crate::tools::context::ToolContext;
use crate::tools::registry::{Registry, Tool};
use crate::tools::run::{RunCommand, RunCommandArgs};
use crate::tools::wait::{WaitForText, WaitForTextArgs, WatchPanes, WatchPanesArgs};

/// How long a wait runs before the text appears.
const SETTLE: Duration = Duration::from_millis(700);
/// Idle panes beside the one waited on.
const IDLE_PANES: usize = 8;

/// The wait section of the bench report (milliseconds).
#[derive(Debug, Clone, Serialize)]
pub struct WaitBench {
    pub runs: usize,
    /// Text appearing -> answer, event stream: median, best, worst.
    pub events_median_ms: f64,
    pub events_min_ms: f64,
    pub events_max_ms: f64,
    /// The same through the polling path.
    pub polling_median_ms: f64,
    pub polling_min_ms: f64,
    pub polling_max_ms: f64,
    /// The same for watch_panes over every pane, event stream.
    pub watch_median_ms: f64,
    pub watch_min_ms: f64,
    pub watch_max_ms: f64,
    /// Panes watch_panes watched.
    pub watch_panes: usize,
    /// One capture of the pane's screen, as a wait makes it.
    pub capture_median_ms: f64,
    /// Panes the event runs had to poll (0: the stream covered the pane).
    pub events_panes_polled: u64,
    /// run_command of `true` on an idle bash, call to answer.
    pub run_true_median_ms: f64,
    pub run_true_min_ms: f64,
    pub run_true_max_ms: f64,
    /// watch_panes over a server of 500 panes, 2 of which print.
    pub wide: WideWatch,
}

fn ms(d: Duration) -> f64 {
    (d.as_secs_f64() * 1e5).round() / 1e2
}

/// Runs the wait cases (`runs` of each) on a server of their own.
pub fn run(runs: usize) -> Result<WaitBench, String> {
    let server = PrivateServer::start("bench-wait", 120, 30).map_err(|e| e.to_string())?;
    let dir = std::env::temp_dir().join(format!("{}.d", server.socket_name()));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let result = measure(&server, &dir, runs.max(1));
    let _ = std::fs::remove_dir_all(&dir);
    drop(server);
    let mut bench = result?;
    bench.wide = super::watch::run(runs)?;
    Ok(bench)
}

fn measure(server: &PrivateServer, dir: &Path, runs: usize) -> Result<WaitBench, String> {
    let fifo = dir.join("text");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .map_err(|e| format!("cannot run mkfifo: {e}"))?;
    if !made.success() {
        return Err("mkfifo failed".into());
    }
    for _ in 0..IDLE_PANES {
        server
            .run_ok(["new-window", "-d"])
            .map_err(|e| e.to_string())?;
    }
    let script = format!("while :; do cat '{}'; done", fifo.display());
    let pane = server
        .run_ok(["new-window", "-d", "-P", "-F", "#{pane_id}", &script])
        .map_err(|e| e.to_string())?;
    let pane = PaneId::parse(pane.trim()).map_err(|e| e.to_string())?;
    let spec = ServerSpec::named(server.socket_name());
    let shell = idle_shell(server)?;
    let (mut events, mut polling, mut captures) = (Vec::new(), Vec::new(), Vec::new());
    let mut runs_true = Vec::new();
    let (mut watches, mut watched) = (Vec::new(), 0);
    let mut polled = 0;
    for k in 0..runs {
        runs_true.push(one_run(&spec, shell)?);
        let (t, p) = one_wait(&spec, pane, &fifo, &format!("needle-e{k}"), true)?;
        events.push(t);
        polled += p;
        polling.push(one_wait(&spec, pane, &fifo, &format!("needle-p{k}"), false)?.0);
        let (t, n) = one_watch(&spec, &fifo, &format!("needle-w{k}"))?;
        watches.push(t);
        watched = n;
        captures.push(one_capture(&spec, pane)?);
    }
    let (events_median_ms, events_min_ms, events_max_ms) = median_spread(&mut events);
    let (polling_median_ms, polling_min_ms, polling_max_ms) = median_spread(&mut polling);
    let (run_true_median_ms, run_true_min_ms, run_true_max_ms) = median_spread(&mut runs_true);
    let (watch_median_ms, watch_min_ms, watch_max_ms) = median_spread(&mut watches);
    Ok(WaitBench {
        runs,
        events_median_ms,
        events_min_ms,
        events_max_ms,
        polling_median_ms,
        polling_min_ms,
        polling_max_ms,
        watch_median_ms,
        watch_min_ms,
        watch_max_ms,
        watch_panes: watched,
        capture_median_ms: ms(median(&mut captures)),
        events_panes_polled: polled,
        run_true_median_ms,
        run_true_min_ms,
        run_true_max_ms,
        wide: WideWatch::default(),
    })
}

/// A window running a bash without rc files, once its prompt shows.
fn idle_shell(server: &PrivateServer) -> Result<PaneId, String> {
    let pane = server
        .run_ok([
            "new-window",
            "-d",
            "-P",
            "-F",
            "#{pane_id}",
            "env PS1='$ ' bash --norc --noprofile",
        ])
        .map_err(|e| e.to_string())?;
    let pane = pane.trim().to_owned();
    let until = Instant::now() + Duration::from_secs(10);
    while Instant::now() < until {
        let screen = server
            .run_ok(["capture-pane", "-p", "-t", &pane])
            .unwrap_or_default();
        if screen.lines().any(|l| l.starts_with('$')) {
            return PaneId::parse(&pane).map_err(|e| e.to_string());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Err("the bench's bash never showed its prompt".into())
}

/// One run_command of `true`: the time from the call to the answer.
fn one_run(spec: &ServerSpec, pane: PaneId) -> Result<Duration, String> {
    let config = ServeConfig {
        server: spec.clone(),
        tier: Tier::Mutating,
        ..ServeConfig::default()
    };
    let ctx = ToolContext::new(
        Arc::new(config),
        Arc::new(Registry::for_tier(Tier::Mutating)),
    );
    let args: RunCommandArgs = serde_json::from_value(json!({
        "pane_id": pane.to_string(), "command": "true", "timeout_ms": 10_000
    }))
    .map_err(|e| e.to_string())?;
    let started = Instant::now();
    let out = RunCommand::run(&ctx, args).map_err(|e| format!("run_command failed: {e}"))?;
    let took = started.elapsed();
    if out.exit_status != Some(0) || !out.output.is_empty() {
        return Err(format!(
            "run_command true answered status {:?}, output {:?}",
            out.exit_status, out.output
        ));
    }
    Ok(took)
}

/// One wait for `needle`: the time from writing it to the answer, and how
/// many panes the wait polled.
fn one_wait(
    spec: &ServerSpec,
    pane: PaneId,
    fifo: &Path,
    needle: &str,
    events: bool,
) -> Result<(Duration, u64), String> {
    let ctx = read_context(spec, events);
    let args: WaitForTextArgs = serde_json::from_value(json!({
        "pane_id": pane.to_string(), "pattern": needle, "timeout_ms": 10_000
    }))
    .map_err(|e| e.to_string())?;
    let waiter = std::thread::spawn(move || {
        let out = WaitForText::run(&ctx, args);
        (out, Instant::now())
    });
    std::thread::sleep(SETTLE);
    let written = write_needle(fifo, needle)?;
    let (out, answered) = waiter.join().map_err(|_| "the wait panicked".to_string())?;
    let out = out.map_err(|e| format!("wait_for_text failed: {e}"))?;
    if !out.found {
        return Err(format!("wait_for_text did not see {needle}"));
    }
    Ok((
        answered.saturating_duration_since(written),
        out.panes_polled as u64,
    ))
}

/// One watch_panes over every pane for `needle`: the time from writing it
/// to the answer, and how many panes were watched.
fn one_watch(spec: &ServerSpec, fifo: &Path, needle: &str) -> Result<(Duration, usize), String> {
    let ctx = read_context(spec, true);
    let args: WatchPanesArgs =
        serde_json::from_value(json!({"pattern": needle, "timeout_ms": 10_000}))
            .map_err(|e| e.to_string())?;
    let watcher = std::thread::spawn(move || {
        let out = WatchPanes::run(&ctx, args);
        (out, Instant::now())
    });
    std::thread::sleep(SETTLE);
    let written = write_needle(fifo, needle)?;
    let (out, answered) = watcher
        .join()
        .map_err(|_| "the watch panicked".to_string())?;
    let out = out.map_err(|e| format!("watch_panes failed: {e}"))?;
    if out.hits.is_empty() {
        return Err(format!("watch_panes did not see {needle}"));
    }
    Ok((
        answered.saturating_duration_since(written),
        out.panes_watched,
    ))
}

/// The wait section of the table.
pub fn print(w: &WaitBench) {
    println!();
    println!(
        "wait_for_text, text appearing -> answer (median of {} runs, min-max):",
        w.runs
    );
    println!(
        "  event stream            {:>7.1} ms  ({:.1}-{:.1})",
        w.events_median_ms, w.events_min_ms, w.events_max_ms
    );
    println!(
        "  polling (--no-events)   {:>7.1} ms  ({:.1}-{:.1})",
        w.polling_median_ms, w.polling_min_ms, w.polling_max_ms
    );
    println!(
        "  watch_panes, {} panes   {:>7.1} ms  ({:.1}-{:.1})",
        w.watch_panes, w.watch_median_ms, w.watch_min_ms, w.watch_max_ms
    );
    println!("  one capture of the pane {:>7.1} ms", w.capture_median_ms);
    super::watch::print(&w.wide);
    println!(
        "run_command true, call to answer {:>7.1} ms  ({:.1}-{:.1})",
        w.run_true_median_ms, w.run_true_min_ms, w.run_true_max_ms
    );
}
