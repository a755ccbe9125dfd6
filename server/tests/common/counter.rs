//! tmux's command counter, read by a control client of the test's own:
//! tmux numbers every command it runs (one counter for the whole server,
//! shown to a control client in each `%begin` line), so asking twice tells
//! how many commands ran in between, with no clock.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Stdio};
use std::time::Duration;

use panescan::testing::private_server::PrivateServer;

use super::{child_process, eventually, last_pid, new_children};

/// A control client attached to a private server, to read its counter.
pub struct Counter {
    child: Child,
    stdin: ChildStdin,
    lines: crossbeam_channel::Receiver<String>,
    asked: usize,
}

impl Counter {
    pub fn attach(tmux: &PrivateServer) -> Counter {
        let mut child = tmux
            .command()
            .args(["-C", "attach"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = crossbeam_channel::unbounded();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { return };
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        Counter {
            child,
            stdin,
            lines,
            asked: 0,
        }
    }

    /// The number tmux gives the next command it runs (asking is itself
    /// one command).
    pub fn now(&mut self) -> u64 {
        self.asked += 1;
        let probe = format!("counter-probe-{}", self.asked);
        writeln!(self.stdin, "display-message -p {probe}").unwrap();
        let mut number = None;
        loop {
            let line = self
                .lines
                .recv_timeout(Duration::from_secs(30))
                .expect("the counter's control client stopped answering");
            if let Some(rest) = line.strip_prefix("%begin ") {
                number = rest.split(' ').nth(1).and_then(|n| n.parse().ok());
            } else if line == probe {
                return number.expect("a %begin before the probe's answer");
            }
        }
    }

    /// Commands tmux ran (for every client) during `f`, a call to the
    /// `panescan serve` whose pid is `serve`, counted once every tmux
    /// client it started meanwhile has ended and been reaped.
    pub fn during<T>(&mut self, serve: u32, f: impl FnOnce() -> T) -> (u64, T) {
        let since = last_pid();
        let before = self.now();
        let out = f();
        let clients: Vec<u32> = new_children(serve, since)
            .into_iter()
            .filter(|p| p.cmdline.contains("source-file"))
            .map(|p| p.pid)
            .collect();
        let ended = eventually(Duration::from_secs(30), || {
            clients
                .iter()
                .all(|&pid| child_process(pid, serve).is_none())
        });
        assert!(
            ended,
            "a sweep client of panescan's was left running or unreaped"
        );
        // The second probe is one more command.
        (self.now() - before - 1, out)
    }
}

impl Drop for Counter {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
