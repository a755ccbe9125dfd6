//! `panescan bench --journal-only`, keeping up: what journaling costs tmux
//! and the daemon while panes print, and what it records when they print
//! faster than it can read.
//!
//! - **steady**: [`PANES`] panes at history-limit 2,000 each print
//!   [`PER_SECOND`] lines a second (ten every 100 ms) for `--journal-seconds`,
//!   first with no journal, then (history cleared) with a journaling
//!   daemon (this binary, `daemon --journal`, a private runtime and
//!   journal directory): tmux's CPU in both, the daemon's, from
//!   `/proc/PID/stat` (utime + stime), and the gaps recorded (goal none).
//!   The lines are written by this process straight to each pane's
//!   terminal, so no printing process loads the machine and both runs
//!   print exactly the same lines.
//! - **flat out**: [`FLAT_PANES`] panes run `seq` as fast as tmux takes it
//!   for a third of that time: the gaps recorded and their spans, and
//!   list_panes through the same daemon meanwhile (goal <= 150 ms).

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::json;

use super::report::ms;
use crate::cli::client::McpClient;
use crate::journal::segment::{self, Read};
use crate::testbed::baseline::median;
use crate::testbed::private_server::PrivateServer;

/// Panes printing steadily, and how fast each.
pub const PANES: usize = 200;
const PER_SECOND: usize = 100;
/// Panes printing as fast as they can.
const FLAT_PANES: usize = 10;
const HISTORY_LIMIT: u32 = 2_000;
/// Ten lines at a time, ten times a second.
const TICK: Duration = Duration::from_millis(100);
/// Between two list_panes while the flat-out panes print.
const LIST_EVERY: Duration = Duration::from_millis(250);

/// The keeping-up rows of the journal section.
#[derive(Debug, Clone, Serialize)]
pub struct KeepUpBench {
    pub panes: usize,
    pub lines_per_second: usize,
    pub seconds: u64,
    pub history_limit: u32,
    /// Lines written to the panes in each run.
    pub lines_printed: u64,
    /// tmux's CPU, % of one core, without the journal.
    pub tmux_cpu_without: f64,
    /// With the journal as it is by default (the session feeds), and with
    /// `--journal-taps` (a pipe per pane).
    pub feeds: Journaled,
    pub taps: Journaled,
    /// Panes printing flat out, with the feeds and with the taps.
    pub flat: FlatOut,
    pub flat_taps: FlatOut,
}

/// One journaled run of the steady load.
#[derive(Debug, Clone, Serialize)]
pub struct Journaled {
    /// tmux's CPU, % of one core, and what the journal added to it (goal
    /// <= 5).
    pub tmux_cpu: f64,
    pub tmux_added: f64,
    /// The journaling daemon's CPU, % of one core (goal <= 10).
    pub daemon_cpu: f64,
    /// Lines journaled (those still on a pane's screen wait for the next
    /// scroll) and gaps recorded (goal none), with the first reasons.
    pub lines_journaled: u64,
    pub gaps: usize,
    pub gap_reasons: Vec<String>,
}

/// Panes printing as fast as tmux takes it.
#[derive(Debug, Clone, Serialize)]
pub struct FlatOut {
    pub panes: usize,
    pub seconds: u64,
    /// Lines `seq` printed (its last number, all panes).
    pub lines_printed: u64,
    pub lines_journaled: u64,
    /// Gaps recorded for those panes, their spans summed and the longest.
    pub gaps: usize,
    pub gap_total_ms: i64,
    pub gap_longest_ms: i64,
    /// A few gaps: (from, to) ms after the start, and why.
    pub gap_examples: Vec<(i64, i64, String)>,
    /// list_panes through the journaling daemon meanwhile: median, worst, calls.
    pub list_ms: f64,
    pub list_max_ms: f64,
    pub lists: usize,
}

/// A journaling daemon on a private runtime and journal directory, both
/// removed, and the daemon ended, on drop.
struct Journaling {
    child: Option<Child>,
    root: PathBuf,
}

impl Journaling {
    /// With `taps`, the daemon runs with `--journal-taps`.
    fn start(socket: &str, root: &Path, taps: bool) -> Result<Journaling, String> {
        let _ = std::fs::remove_dir_all(root);
        std::fs::create_dir_all(root).map_err(|e| e.to_string())?;
        let exe = std::env::current_exe().map_err(|e| e.to_string())?;
        let child = Command::new(exe)
            .args(["daemon", "--journal", "--idle-exit", "0", "-L", socket])
            .arg("--journal-dir")
            .arg(root.join("journal"))
            .arg("--runtime-dir")
            .arg(root.join("rt"))
            .args(taps.then_some("--journal-taps"))
            .env_remove("TMUX")
            .env_remove("TMUX_PANE")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("cannot start the daemon: {e}"))?;
        let mut d = Journaling {
            child: Some(child),
            root: root.to_owned(),
        };
        let started = Instant::now();
        while !root.join("rt").join("panescan.sock").exists() {
            if started.elapsed() > Duration::from_secs(20) {
                d.end();
                return Err("the journaling daemon did not start".into());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        // Its first read of every pane.
        std::thread::sleep(Duration::from_secs(1));
        Ok(d)
    }

    fn pid(&self) -> u32 {
        self.child.as_ref().map_or(0, Child::id)
    }

    fn journal(&self) -> PathBuf {
        self.root.join("journal")
    }

    /// SIGTERM (the journal flushes), then SIGKILL if it lingers.
    fn end(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        let _ = Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status();
        let until = Instant::now() + Duration::from_secs(10);
        while Instant::now() < until {
            if let Ok(Some(_)) = child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = child.kill();
        let _ = child.wait();
    }
}

impl Drop for Journaling {
    fn drop(&mut self) {
        self.end();
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

/// utime + stime of `pid`, in seconds.
pub(super) fn cpu_seconds(pid: u32) -> f64 {
    let Ok(stat) = std::fs::read(format!("/proc/{pid}/stat")) else {
        return 0.0;
    };
    let Some(close) = stat.iter().rposition(|&b| b == b')') else {
        return 0.0;
    };
    let fields: Vec<&[u8]> = stat[close + 1..]
        .split(|&b| b == b' ')
        .filter(|f| !f.is_empty())
        .collect();
    // Fields 14 and 15 of the line; the first after `)` is field 3.
    let tick = |i: usize| -> f64 {
        fields
            .get(i)
            .and_then(|f| std::str::from_utf8(f).ok()?.parse::<u64>().ok())
            .unwrap_or(0) as f64
    };
    (tick(11) + tick(12)) / clock_ticks()
}

fn clock_ticks() -> f64 {
    std::fs::read("/proc/self/auxv")
        .ok()
        .and_then(|a| crate::tmux::procfs::parse_clock_ticks(&a))
        .unwrap_or(100) as f64
}

/// A private server of `panes` idle panes (one window each) at the
/// bench's history limit, and their ids and terminals.
fn server(label: &str, panes: usize) -> Result<(PrivateServer, Vec<(String, String)>), String> {
    let server = PrivateServer::start(label, 120, 30).map_err(|e| e.to_string())?;
    let mut script = format!("set-option -g history-limit {HISTORY_LIMIT}\n");
    for _ in 1..panes {
        script.push_str("new-window -d 'exec sleep 100000'\n");
    }
    server.source(&script).map_err(|e| e.to_string())?;
    server
        .run_ok(["respawn-pane", "-k", "-t", "main:0", "exec sleep 100000"])
        .map_err(|e| e.to_string())?;
    let listed = server
        .run_ok(["list-panes", "-a", "-F", "#{pane_id} #{pane_tty}"])
        .map_err(|e| e.to_string())?;
    let panes: Vec<(String, String)> = listed
        .lines()
        .filter_map(|l| l.split_once(' '))
        .map(|(a, b)| (a.to_owned(), b.to_owned()))
        .collect();
    Ok((server, panes))
}

/// Prints ten lines every 100 ms to every terminal for `seconds`; the
/// lines written.
fn print_steadily(ttys: &mut [File], seconds: u64, corpus: &[String]) -> u64 {
    let per_tick = PER_SECOND * TICK.as_millis() as usize / 1000;
    let ticks = seconds * 1000 / TICK.as_millis() as u64;
    let started = Instant::now();
    let mut written = 0;
    for tick in 0..ticks {
        for (p, tty) in ttys.iter_mut().enumerate() {
            let mut chunk = String::new();
            for i in 0..per_tick {
                let n = tick as usize * per_tick + i;
                let text = &corpus[(n + p * 13) % corpus.len()];
                chunk.push_str(&format!("{p}:{n} {text}\n"));
            }
            if tty.write_all(chunk.as_bytes()).is_ok() {
                written += per_tick as u64;
            }
        }
        let next = TICK * (tick as u32 + 1);
        if let Some(wait) = next.checked_sub(started.elapsed()) {
            std::thread::sleep(wait);
        }
    }
    written
}

/// The demo corpus's plain lines, cut to fit a pane's width.
fn corpus() -> Vec<String> {
    crate::testbed::corpus::sources()
        .iter()
        .flat_map(|t| {
            let plain = panescan_engine::strip_escapes(t.as_bytes()).into_owned();
            String::from_utf8_lossy(&plain)
                .lines()
                .map(|l| l.chars().filter(|c| !c.is_control()).take(90).collect())
                .collect::<Vec<String>>()
        })
        .collect()
}

/// The journal's lines and gaps of the panes named.
fn journaled(journal: &Path) -> (u64, Vec<(i64, i64, String)>) {
    let mut lines = 0;
    let mut gaps = Vec::new();
    let _ = segment::read(journal, i64::MIN, i64::MAX, &mut |read| {
        if let Read::Frame(d) = read {
            lines += d.lines.len() as u64;
            gaps.extend(
                d.gaps
                    .iter()
                    .map(|g| (g.from_ms, g.to_ms, g.reason.clone())),
            );
        }
        true
    });
    (lines, gaps)
}

/// Measures both cases, `seconds` of steady printing each run.
pub fn run(seconds: u64) -> Result<KeepUpBench, String> {
    let corpus = corpus();
    let (server, panes) = server("bench-journal", PANES)?;
    let tmux_pid = server.pid().map_err(|e| e.to_string())?;
    let mut ttys = panes
        .iter()
        .map(|(_, tty)| {
            OpenOptions::new()
                .write(true)
                .custom_flags(libc::O_NOCTTY)
                .open(tty)
                .map_err(|e| format!("cannot open {tty}: {e}"))
        })
        .collect::<Result<Vec<File>, String>>()?;
    // Without the journal.
    let before = cpu_seconds(tmux_pid);
    let started = Instant::now();
    let lines_printed = print_steadily(&mut ttys, seconds, &corpus);
    let without = (cpu_seconds(tmux_pid) - before) / started.elapsed().as_secs_f64() * 100.0;
    let load = Load {
        server: &server,
        panes: &panes,
        tmux_pid,
        corpus: &corpus,
        seconds,
    };
    let feeds = load.journaled(&mut ttys, without, false)?;
    let taps = load.journaled(&mut ttys, without, true)?;
    drop(ttys);
    server.kill();
    let flat = flat_out((seconds / 3).max(5), false)?;
    let flat_taps = flat_out((seconds / 3).max(5), true)?;
    Ok(KeepUpBench {
        panes: PANES,
        lines_per_second: PER_SECOND,
        seconds,
        history_limit: HISTORY_LIMIT,
        lines_printed,
        tmux_cpu_without: without,
        feeds,
        taps,
        flat,
        flat_taps,
    })
}

/// The steady load's server and what it prints.
struct Load<'a> {
    server: &'a PrivateServer,
    panes: &'a [(String, String)],
    tmux_pid: u32,
    corpus: &'a [String],
    seconds: u64,
}

impl Load<'_> {
    /// The steady load again (history cleared first) under a journaling
    /// daemon, with `taps` or the feeds; tmux's CPU beside `without`.
    fn journaled(&self, ttys: &mut [File], without: f64, taps: bool) -> Result<Journaled, String> {
        let mut clear = String::new();
        for (id, _) in self.panes {
            clear.push_str(&format!("clear-history -t {id}\n"));
        }
        self.server.source(&clear).map_err(|e| e.to_string())?;
        let root = std::env::temp_dir().join(format!(
            "panescan-bench-keepup-{}{}",
            std::process::id(),
            if taps { "-taps" } else { "" }
        ));
        let mut daemon = Journaling::start(self.server.socket_name(), &root, taps)?;
        let (t0, d0) = (cpu_seconds(self.tmux_pid), cpu_seconds(daemon.pid()));
        let started = Instant::now();
        print_steadily(ttys, self.seconds, self.corpus);
        let took = started.elapsed().as_secs_f64();
        let tmux_cpu = (cpu_seconds(self.tmux_pid) - t0) / took * 100.0;
        let daemon_cpu = (cpu_seconds(daemon.pid()) - d0) / took * 100.0;
        daemon.end();
        let (lines_journaled, gaps) = journaled(&daemon.journal());
        Ok(Journaled {
            tmux_cpu,
            tmux_added: tmux_cpu - without,
            daemon_cpu,
            lines_journaled,
            gaps: gaps.len(),
            gap_reasons: gaps.iter().take(3).map(|g| g.2.clone()).collect(),
        })
    }
}

/// [`FLAT_PANES`] panes running `seq` for `seconds` under a journaling
/// daemon (with `taps`, or the feeds), list_panes through it meanwhile.
fn flat_out(seconds: u64, taps: bool) -> Result<FlatOut, String> {
    let (server, panes) = server("bench-journal-flat", FLAT_PANES)?;
    let root = std::env::temp_dir().join(format!("panescan-bench-flat-{}", std::process::id()));
    let mut daemon = Journaling::start(server.socket_name(), &root, taps)?;
    let mut client = McpClient::through_daemon(server.socket_name(), &root.join("rt"))?;
    let start_ms = crate::journal::when::now_ms();
    let mut go = String::new();
    for (id, _) in &panes {
        go.push_str(&format!(
            "respawn-pane -k -t {id} 'seq 1 4000000000; exec sleep 100000'\n"
        ));
    }
    server.source(&go).map_err(|e| e.to_string())?;
    let started = Instant::now();
    let mut lists = Vec::new();
    while started.elapsed() < Duration::from_secs(seconds) {
        let asked = Instant::now();
        client.call_tool("list_panes", json!({}), Duration::from_secs(60))?;
        lists.push(asked.elapsed());
        std::thread::sleep(LIST_EVERY);
    }
    drop(client);
    let mut lines_printed = 0;
    for (id, _) in &panes {
        let last = server
            .run_ok(["capture-pane", "-p", "-t", id])
            .unwrap_or_default();
        // The highest number on the screen: where seq was.
        lines_printed += last
            .lines()
            .filter_map(|l| l.trim().parse::<u64>().ok())
            .max()
            .unwrap_or(0);
        let _ = server.run_ok(["respawn-pane", "-k", "-t", id, "exec sleep 100000"]);
    }
    daemon.end();
    let (lines_journaled, gaps) = journaled(&daemon.journal());
    drop(daemon);
    server.kill();
    let span = |g: &(i64, i64, String)| (g.1 - g.0).max(0);
    let worst = lists.iter().max().copied().unwrap_or_default();
    Ok(FlatOut {
        panes: FLAT_PANES,
        seconds,
        lines_printed,
        lines_journaled,
        gaps: gaps.len(),
        gap_total_ms: gaps.iter().map(span).sum(),
        gap_longest_ms: gaps.iter().map(span).max().unwrap_or(0),
        gap_examples: gaps
            .iter()
            .take(3)
            .map(|g| (g.0 - start_ms, g.1 - start_ms, g.2.clone()))
            .collect(),
        list_max_ms: ms(worst),
        lists: lists.len(),
        list_ms: ms(median(&mut lists)),
    })
}
