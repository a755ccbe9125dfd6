//! Fetching pane text from tmux: panescan's capture batches against the
//! one-process-per-pane baseline and a raw single-connection fetch (plain
//! `capture-pane -p` pipelined on one control client), measured in the same
//! run on one private tmux server: 200 panes of 200x50, ~2,000 history lines
//! each.
//!
//! `cargo bench -p panescan-benches --bench fetch` (few samples: the machine
//! is small and shared). A summary with medians and ratios is printed last.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use criterion::Criterion;
use panescan::testing::private_server::PrivateServer;
use panescan::testing::tmux::{
    CaptureOptions, CaptureRange, CaptureRequest, PaneId, ServerSpec, Tmux,
};

const PANES: usize = 200;
const HISTORY: u64 = 2_000;

static TIMES: Mutex<BTreeMap<String, Vec<Duration>>> = Mutex::new(BTreeMap::new());

fn record(name: &str, d: Duration) {
    TIMES
        .lock()
        .unwrap()
        .entry(name.to_string())
        .or_default()
        .push(d);
}

fn setup() -> (PrivateServer, Vec<PaneId>) {
    let server = PrivateServer::start("bench-fetch", 200, 50).unwrap();
    server
        .run_ok(["set-option", "-g", "history-limit", "5000"])
        .unwrap();
    let script = server.config_path().with_extension("fill.sh");
    std::fs::write(
        &script,
        "awk 'BEGIN { for (i = 1; i <= 2100; i++) printf \"%05d Compiling panescan-engine v0.1.0 (/repo/engine) step %d of 2100 ... ok\\n\", i, i }'\nexec sleep 1000000\n",
    )
    .unwrap();
    // Fresh panes only: the first pane was made before the history limit
    // was raised (tmux trims history 10% at a time at the limit).
    let mut s = String::new();
    for _ in 0..PANES {
        s.push_str(&format!(
            "new-window -d -t main: \"sh {}\"\n",
            script.display()
        ));
    }
    s.push_str("kill-window -t main:0\n");
    server.source(&s).unwrap();
    let start = Instant::now();
    loop {
        let sizes = server
            .run_ok(["list-panes", "-a", "-F", "#{history_size}"])
            .unwrap();
        if sizes
            .lines()
            .all(|l| l.parse::<u64>().unwrap_or(0) >= HISTORY)
        {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "panes never filled: {sizes:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let _ = std::fs::remove_file(script);
    let ids = server
        .run_ok(["list-panes", "-a", "-F", "#{pane_id}"])
        .unwrap()
        .lines()
        .map(|l| PaneId::parse(l).unwrap())
        .collect();
    (server, ids)
}

fn range_args(deep: bool) -> Vec<String> {
    if deep {
        vec!["-S".into(), format!("-{HISTORY}")]
    } else {
        Vec::new()
    }
}

/// panescan: `Tmux::capture`, consuming every reply.
fn panescan_fetch(tmux: &Tmux, ids: &[PaneId], deep: bool) -> usize {
    let range = if deep {
        CaptureRange::Scrollback(HISTORY)
    } else {
        CaptureRange::Visible
    };
    let reqs = ids
        .iter()
        .map(|&pane| CaptureRequest { pane, range })
        .collect();
    let rx = tmux.capture(
        reqs,
        CaptureOptions::default(),
        Instant::now() + Duration::from_secs(60),
        Arc::new(AtomicBool::new(false)),
    );
    rx.iter().map(|r| r.result.unwrap().bytes.len()).sum()
}

/// Baseline: one `tmux capture-pane -p` process per pane.
fn process_per_pane(server: &PrivateServer, ids: &[PaneId], deep: bool) -> usize {
    let socket = server.socket_path().unwrap();
    ids.iter()
        .map(|id| {
            let out = Command::new("tmux")
                .arg("-S")
                .arg(&socket)
                .args(["capture-pane", "-p", "-t", &id.to_string()])
                .args(range_args(deep))
                .env("LC_ALL", "C.UTF-8")
                .env_remove("TMUX")
                .output()
                .unwrap();
            out.stdout.len()
        })
        .sum()
}

/// A raw control client: `capture-pane -p` pipelined, replies counted.
struct RawControl {
    child: Child,
    stdin: ChildStdin,
    stdout: ChildStdout,
    buf: Vec<u8>,
}

impl RawControl {
    fn new(server: &PrivateServer) -> Self {
        let mut child = Command::new("tmux")
            .arg("-S")
            .arg(server.socket_path().unwrap())
            .args([
                "-C",
                "attach-session",
                "-r",
                "-f",
                "no-output,ignore-size",
                "-t",
                "main",
            ])
            .env("LC_ALL", "C.UTF-8")
            .env_remove("TMUX")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let mut raw = RawControl {
            child,
            stdin,
            stdout,
            buf: Vec::new(),
        };
        raw.stdin.write_all(b"display-message -p READY\n").unwrap();
        let mut chunk = vec![0u8; 1 << 16];
        while !raw.buf.windows(7).any(|w| w == b"\nREADY\n") {
            let n = raw.stdout.read(&mut chunk).unwrap();
            raw.buf.extend_from_slice(&chunk[..n]);
        }
        raw.buf.clear();
        raw
    }

    /// Pipelines one capture per pane; returns payload bytes once every
    /// reply is in (bench panes print no guard-like lines).
    fn fetch(&mut self, ids: &[PaneId], deep: bool) -> usize {
        let mut script = String::new();
        for id in ids {
            script.push_str(&format!(
                "capture-pane -p -t {id} {}\n",
                range_args(deep).join(" ")
            ));
        }
        self.stdin.write_all(script.as_bytes()).unwrap();
        let (mut done, mut payload, mut in_block) = (0, 0, false);
        let mut chunk = vec![0u8; 1 << 20];
        let mut partial: Vec<u8> = Vec::new();
        while done < ids.len() {
            let n = self.stdout.read(&mut chunk).unwrap();
            assert!(n > 0, "control client exited");
            partial.extend_from_slice(&chunk[..n]);
            let mut start = 0;
            while let Some(k) = memchr_nl(&partial[start..]) {
                let line = &partial[start..start + k];
                if line.starts_with(b"%begin ") {
                    in_block = true;
                } else if in_block && (line.starts_with(b"%end ") || line.starts_with(b"%error ")) {
                    in_block = false;
                    done += 1;
                } else if in_block {
                    payload += line.len() + 1;
                }
                start += k + 1;
            }
            partial.drain(..start);
        }
        payload
    }
}

fn memchr_nl(b: &[u8]) -> Option<usize> {
    b.iter().position(|&c| c == b'\n')
}

impl Drop for RawControl {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The floor of panescan's path: one `source-file -` with every capture,
/// optionally in slices of `slice` lines.
fn raw_source_file(
    server: &PrivateServer,
    ids: &[PaneId],
    deep: bool,
    slice: Option<i64>,
) -> usize {
    let mut script = String::new();
    for id in ids {
        match (deep, slice) {
            (true, Some(step)) => {
                let mut s = -(HISTORY as i64);
                while s <= 49 {
                    let e = (s + step - 1).min(49);
                    script.push_str(&format!("capture-pane -p -t {id} -S {s} -E {e}\n"));
                    s += step;
                }
            }
            _ => script.push_str(&format!(
                "capture-pane -p -t {id} {}\n",
                range_args(deep).join(" ")
            )),
        }
    }
    let mut child = Command::new("tmux")
        .arg("-S")
        .arg(server.socket_path().unwrap())
        .args(["source-file", "-"])
        .env("LC_ALL", "C.UTF-8")
        .env_remove("TMUX")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || stdin.write_all(script.as_bytes()));
    let mut out = Vec::new();
    child.stdout.take().unwrap().read_to_end(&mut out).unwrap();
    writer.join().unwrap().unwrap();
    child.wait().unwrap();
    out.len()
}

fn timed(name: &str, iters: u64, mut f: impl FnMut() -> usize) -> Duration {
    let mut total = Duration::ZERO;
    for _ in 0..iters {
        let t = Instant::now();
        std::hint::black_box(f());
        let d = t.elapsed();
        record(name, d);
        total += d;
    }
    total
}

fn median(v: &[Duration]) -> Duration {
    let mut v = v.to_vec();
    v.sort();
    v[v.len() / 2]
}

fn main() {
    let mut c = Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3))
        .configure_from_args();
    let (server, ids) = setup();
    let tmux = Tmux::connect(&ServerSpec {
        socket_path: Some(server.socket_path().unwrap()),
        ..ServerSpec::default()
    })
    .unwrap();
    let mut raw = RawControl::new(&server);
    // Sanity: every path returns the same amount of text.
    for deep in [false, true] {
        let a = panescan_fetch(&tmux, &ids, deep);
        let b = raw_source_file(&server, &ids, deep, None);
        assert_eq!(a, b, "panescan and source-file disagree (deep: {deep})");
        let r = raw.fetch(&ids, deep);
        assert_eq!(a, r, "panescan and raw control disagree (deep: {deep})");
        eprintln!("{} bytes per fetch (deep: {deep})", a);
    }
    for (group, deep) in [("fetch_visible_200", false), ("fetch_deep_200x2000", true)] {
        let mut g = c.benchmark_group(group);
        g.sample_size(10);
        let n = |s: &str| format!("{group}/{s}");
        g.bench_function("panescan_capture", |b| {
            b.iter_custom(|i| {
                timed(&n("panescan_capture"), i, || {
                    panescan_fetch(&tmux, &ids, deep)
                })
            })
        });
        g.bench_function("raw_control_capture_p", |b| {
            b.iter_custom(|i| timed(&n("raw_control_capture_p"), i, || raw.fetch(&ids, deep)))
        });
        g.bench_function("raw_source_file", |b| {
            b.iter_custom(|i| {
                timed(&n("raw_source_file"), i, || {
                    raw_source_file(&server, &ids, deep, None)
                })
            })
        });
        if deep {
            g.bench_function("raw_source_file_slices_500", |b| {
                b.iter_custom(|i| {
                    timed(&n("raw_source_file_slices_500"), i, || {
                        raw_source_file(&server, &ids, deep, Some(500))
                    })
                })
            });
        }
        g.sample_size(10)
            .measurement_time(Duration::from_secs(1))
            .warm_up_time(Duration::from_millis(1));
        g.bench_function("process_per_pane", |b| {
            b.iter_custom(|i| {
                timed(&n("process_per_pane"), i, || {
                    process_per_pane(&server, &ids, deep)
                })
            })
        });
        g.finish();
    }
    c.final_summary();
    drop(raw);
    tmux.shutdown();
    let times = TIMES.lock().unwrap();
    println!("\nsummary (medians of every timed iteration, warm-up included):");
    for (name, v) in times.iter() {
        println!(
            "  {name:<48} {:>9.1} ms  (n={})",
            median(v).as_secs_f64() * 1e3,
            v.len()
        );
    }
    let get = |k: &str| times.get(k).map(|v| median(v).as_secs_f64());
    if let (Some(p), Some(b)) = (
        get("fetch_visible_200/panescan_capture"),
        get("fetch_visible_200/process_per_pane"),
    ) {
        println!(
            "  visible: process-per-pane / panescan = {:.1}x (goal >= 15x)",
            b / p
        );
    }
    if let (Some(p), Some(r)) = (
        get("fetch_deep_200x2000/panescan_capture"),
        get("fetch_deep_200x2000/raw_control_capture_p"),
    ) {
        println!(
            "  deep: panescan / raw control capture-pane -p = {:.2}x (goal <= 1.2x)",
            p / r
        );
    }
    if let (Some(p), Some(r)) = (
        get("fetch_deep_200x2000/panescan_capture"),
        get("fetch_deep_200x2000/raw_source_file"),
    ) {
        println!("  deep: panescan / raw source-file sweep = {:.2}x", p / r);
    }
    if let (Some(p), Some(r)) = (
        get("fetch_deep_200x2000/panescan_capture"),
        get("fetch_deep_200x2000/process_per_pane"),
    ) {
        println!("  deep: process-per-pane / panescan = {:.1}x", r / p);
    }
    drop(server);
}
