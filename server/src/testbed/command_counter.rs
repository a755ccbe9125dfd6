//! tmux's command counter, read by a control client of the caller's own:
//! tmux numbers every command it runs (one counter for the whole server,
//! shown to a control client in each `%begin` line), so asking twice tells
//! how many commands ran in between, with no clock. The bench counts what
//! a warm search sends with it (the tests' own reader,
//! server/tests/common/counter.rs, also waits for sweep clients to end).

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Stdio};
use std::time::Duration;

use crossbeam_channel::Receiver;

use super::private_server::PrivateServer;

/// A control client attached to a private server, to read its counter.
#[derive(Debug)]
pub struct CommandCounter {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<String>,
    asked: u64,
}

impl CommandCounter {
    /// Attaches to `server`'s first session.
    pub fn attach(server: &PrivateServer) -> Result<CommandCounter, String> {
        let mut child = server
            .command()
            .args(["-C", "attach"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("cannot start a counting client: {e}"))?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            let _ = child.kill();
            let _ = child.wait();
            return Err("the counting client has no pipes".into());
        };
        let (tx, lines) = crossbeam_channel::unbounded();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { return };
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        Ok(CommandCounter {
            child,
            stdin,
            lines,
            asked: 0,
        })
    }

    /// The number tmux gives the next command it runs (asking is itself
    /// one command).
    pub fn now(&mut self) -> Result<u64, String> {
        self.asked += 1;
        let probe = format!("counter-probe-{}", self.asked);
        writeln!(self.stdin, "display-message -p {probe}")
            .map_err(|e| format!("the counting client is gone: {e}"))?;
        let mut number = None;
        loop {
            let line = self
                .lines
                .recv_timeout(Duration::from_secs(30))
                .map_err(|_| "the counting client stopped answering".to_owned())?;
            if let Some(rest) = line.strip_prefix("%begin ") {
                number = rest.split(' ').nth(1).and_then(|n| n.parse().ok());
            } else if line == probe {
                return number.ok_or_else(|| "no %begin before the probe's answer".to_owned());
            }
        }
    }

    /// Commands tmux ran (for every client) during `f`.
    pub fn during<T>(&mut self, f: impl FnOnce() -> T) -> Result<(u64, T), String> {
        let before = self.now()?;
        let out = f();
        // The second probe is one more command.
        Ok((self.now()?.saturating_sub(before + 1), out))
    }
}

impl Drop for CommandCounter {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
