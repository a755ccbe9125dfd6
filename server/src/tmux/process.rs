//! A tmux client process's end: its output read while it runs, waited for
//! until a deadline and killed past it, and its error in words. A leaf of
//! `tmux/`: what one-shot clients, ssh and paste buffers share.

use std::io::Read;
use std::process::Child;
use std::time::{Duration, Instant};

use super::TmuxError;

/// Maps a failed tmux client's stderr to an error; `socket` names the
/// server in it.
pub(crate) fn client_error(socket: &str, stderr: &str) -> TmuxError {
    let msg = stderr.trim();
    if msg.starts_with("no server running")
        || msg.starts_with("error connecting to")
        || msg.contains("No such file or directory")
        || msg.contains("Connection refused")
    {
        TmuxError::NoServer {
            socket: socket.to_owned(),
        }
    } else if msg.starts_with("can't find") {
        TmuxError::NotFound(msg.to_string())
    } else {
        TmuxError::Command(msg.to_string())
    }
}

/// Output of a finished client.
#[derive(Debug)]
pub(crate) struct Finished {
    pub stdout: Vec<u8>,
    pub stderr: String,
    pub success: bool,
    /// The exit code (`None`: ended by a signal).
    pub code: Option<i32>,
}

/// Waits for `child` until `deadline`, reading stdout and stderr; kills it
/// (by its own pid) when the deadline passes.
pub(crate) fn finish(mut child: Child, deadline: Instant) -> Result<Finished, TmuxError> {
    let out = child.stdout.take();
    let err = child.stderr.take();
    let (tx, rx) = crossbeam_channel::bounded(2);
    let tx2 = tx.clone();
    std::thread::spawn(move || {
        let mut buf = Vec::new();
        if let Some(mut o) = out {
            let _ = o.read_to_end(&mut buf);
        }
        let _ = tx.send((0u8, buf));
    });
    std::thread::spawn(move || {
        let mut buf = Vec::new();
        if let Some(mut e) = err {
            let _ = e.read_to_end(&mut buf);
        }
        let _ = tx2.send((1u8, buf));
    });
    let (mut stdout, mut stderr) = (Vec::new(), Vec::new());
    for _ in 0..2 {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok((0, b)) => stdout = b,
            Ok((_, b)) => stderr = b,
            Err(_) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(TmuxError::Timeout);
            }
        }
    }
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break s,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(1)),
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(TmuxError::Timeout);
            }
            Err(e) => return Err(TmuxError::Spawn(e.to_string())),
        }
    };
    Ok(Finished {
        stdout,
        stderr: String::from_utf8_lossy(&stderr).into_owned(),
        success: status.success(),
        code: status.code(),
    })
}
