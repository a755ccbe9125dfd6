//! The ways of fetching pane text that panescan is measured against.
//!
//! `panescan bench`, `panescan demo` and the criterion benches time a search
//! beside the cost of merely getting the same text out of tmux, measured in
//! the same run on the same server (this machine is shared and noisy: only
//! ratios within one run mean anything):
//!
//! - [`process_per_pane`]: one `tmux capture-pane` process per pane, one
//!   after the other — what the existing servers do.
//! - [`control_fetch`]: one control-mode client with every `capture-pane -p`
//!   written at once — the fastest raw path for visible screens, but it
//!   leaks inside tmux 3.2-3.5a, so panescan itself never uses it on a
//!   user's server (fine on a private bench server).
//! - [`source_fetch`]: one `tmux source-file -` process with every capture
//!   on its own line.
//!
//! [`raw_floor`] is the faster of the two single-connection fetches: the
//! floor a search is compared with.

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::tmux::client_env::utf8_locale;

/// Which lines to fetch of every pane.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FetchRange {
    /// The visible screen.
    Visible,
    /// N history lines and the screen (`-S -N`).
    Scrollback(u64),
}

impl FetchRange {
    fn args(self) -> Vec<String> {
        match self {
            FetchRange::Visible => vec![],
            FetchRange::Scrollback(n) => vec!["-S".into(), format!("-{n}")],
        }
    }
}

/// How long a fetch took and how much text it brought.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fetched {
    /// Wall time from the first command to the last byte.
    pub elapsed: Duration,
    /// Bytes of pane text received.
    pub bytes: usize,
}

/// One `capture-pane -p -J` line per pane: the raw fetch both single-
/// connection paths send.
fn capture_script(panes: &[String], range: FetchRange) -> String {
    let mut script = String::new();
    for pane in panes {
        script.push_str("capture-pane -p -J -t ");
        script.push_str(pane);
        for a in range.args() {
            script.push(' ');
            script.push_str(&a);
        }
        script.push('\n');
    }
    script
}

fn tmux(socket_name: &str) -> Command {
    let mut cmd = Command::new(crate::tmux::binary::program());
    cmd.arg("-L")
        .arg(socket_name)
        .env_remove("TMUX")
        .env("LC_ALL", utf8_locale());
    cmd
}

/// One `tmux capture-pane -p` process per pane, sequentially.
pub fn process_per_pane(
    socket_name: &str,
    panes: &[String],
    range: FetchRange,
) -> std::io::Result<Fetched> {
    let start = Instant::now();
    let mut bytes = 0;
    for pane in panes {
        let out = tmux(socket_name)
            .args(["capture-pane", "-p", "-J", "-t", pane])
            .args(range.args())
            .stdin(Stdio::null())
            .output()?;
        bytes += out.stdout.len();
    }
    Ok(Fetched {
        elapsed: start.elapsed(),
        bytes,
    })
}

/// One control-mode client, every capture written at once, replies read
/// until the last `%end`/`%error` (the bench's panes print no framing).
fn control_fetch(
    socket_name: &str,
    session: &str,
    panes: &[String],
    range: FetchRange,
) -> std::io::Result<Fetched> {
    let start = Instant::now();
    let mut child = tmux(socket_name)
        .args([
            "-C",
            "attach-session",
            "-r",
            "-f",
            "no-output,ignore-size",
            "-t",
            session,
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()?;
    let script = capture_script(panes, range);
    let mut stdin = child
        .stdin
        .take()
        .ok_or_else(|| std::io::Error::other("no stdin"))?;
    let stdout = child
        .stdout
        .take()
        .ok_or_else(|| std::io::Error::other("no stdout"))?;
    stdin.write_all(script.as_bytes())?;
    stdin.flush()?;
    let mut reader = BufReader::with_capacity(1 << 20, stdout);
    let mut line = Vec::new();
    let mut ends = 0;
    let mut bytes = 0;
    // The attach itself answers with one %begin/%end block first.
    let wanted = panes.len() + 1;
    while ends < wanted {
        line.clear();
        if reader.read_until(b'\n', &mut line)? == 0 {
            break;
        }
        if line.starts_with(b"%end ") || line.starts_with(b"%error ") {
            ends += 1;
        } else if !line.starts_with(b"%") {
            bytes += line.len();
        }
    }
    let elapsed = start.elapsed();
    drop(stdin);
    let _ = child.kill();
    let _ = child.wait();
    Ok(Fetched { elapsed, bytes })
}

/// One `tmux source-file -` process with every capture on its own line.
pub fn source_fetch(
    socket_name: &str,
    panes: &[String],
    range: FetchRange,
) -> std::io::Result<Fetched> {
    let start = Instant::now();
    let mut child = tmux(socket_name)
        .args(["source-file", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()?;
    let script = capture_script(panes, range);
    if let Some(mut stdin) = child.stdin.take() {
        stdin.write_all(script.as_bytes())?;
    }
    let mut out = Vec::new();
    if let Some(mut stdout) = child.stdout.take() {
        stdout.read_to_end(&mut out)?;
    }
    child.wait()?;
    Ok(Fetched {
        elapsed: start.elapsed(),
        bytes: out.len(),
    })
}

/// The two single-connection ways of fetching text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FloorPath {
    /// [`control_fetch`].
    Control,
    /// [`source_fetch`].
    Source,
}

impl FloorPath {
    /// One fetch along this path.
    pub fn fetch(
        self,
        socket_name: &str,
        session: &str,
        panes: &[String],
        range: FetchRange,
    ) -> std::io::Result<Fetched> {
        match self {
            FloorPath::Control => control_fetch(socket_name, session, panes, range),
            FloorPath::Source => source_fetch(socket_name, panes, range),
        }
    }
}

/// The faster of [`control_fetch`] and [`source_fetch`], each the median of
/// `runs`, and which of them it was (so later fetches can be paired with
/// what they are compared to).
pub fn raw_floor(
    socket_name: &str,
    session: &str,
    panes: &[String],
    range: FetchRange,
    runs: usize,
) -> std::io::Result<(Fetched, FloorPath)> {
    let mut control = Vec::new();
    let mut source = Vec::new();
    for _ in 0..runs.max(1) {
        control.push(control_fetch(socket_name, session, panes, range)?);
        source.push(source_fetch(socket_name, panes, range)?);
    }
    let c = median_fetch(&mut control);
    let s = median_fetch(&mut source);
    Ok(if c.elapsed <= s.elapsed {
        (c, FloorPath::Control)
    } else {
        (s, FloorPath::Source)
    })
}

fn median_fetch(runs: &mut [Fetched]) -> Fetched {
    runs.sort_by_key(|f| f.elapsed);
    runs.get(runs.len() / 2).copied().unwrap_or(Fetched {
        elapsed: Duration::ZERO,
        bytes: 0,
    })
}

/// The median of some durations (zero when empty).
pub fn median(times: &mut [Duration]) -> Duration {
    times.sort();
    times
        .get(times.len() / 2)
        .copied()
        .unwrap_or(Duration::ZERO)
}
