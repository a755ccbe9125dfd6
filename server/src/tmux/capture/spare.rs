//! A sweep client started before its script is known.
//!
//! Starting a `tmux source-file -` process is most of what a small sweep
//! costs (a since search's few deltas: a handful of commands for tmux, a
//! process start for the machine, far longer on a loaded one). A caller
//! that will likely sweep a few panes once its listing is back starts a
//! spare first, so the process starts while the listing's round trip is
//! under way; the first small chunk of its batch then writes its script
//! to the spare's standard input instead of starting a process.
//!
//! The spare is an ordinary pipe-fed sweep client: tmux reads the script
//! only when its standard input ends, and runs it then, without yielding,
//! as any sweep's (the probes and captures stay atomic). A spare not used
//! is given an empty script (its standard input closed: tmux runs nothing
//! and the client exits) and reaped on a thread of its own; if panescan
//! dies first, the pipe closes just the same. A spare whose client has
//! already exited (the server went away) is not used.

use std::io::Write as _;
use std::process::{Child, ChildStdin, Stdio};

use super::super::launch::Endpoint;

/// A `tmux source-file -` client waiting for its script.
#[derive(Debug)]
pub struct Spare {
    child: Option<Child>,
    stdin: Option<ChildStdin>,
}

impl Spare {
    /// Starts a spare client for the server at `at` (here or on a host);
    /// `None` if it cannot be started (the batch then starts its own).
    pub(crate) fn start(at: &Endpoint) -> Option<Spare> {
        let mut child = at
            .tmux(&["source-file", "-"])
            .ok()?
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .ok()?;
        let stdin = child.stdin.take();
        Some(Spare {
            child: Some(child),
            stdin,
        })
    }

    /// The client with `script` on its way to it, if it is still running.
    pub(crate) fn feed(mut self, script: String) -> Option<Child> {
        let alive = self
            .child
            .as_mut()
            .is_some_and(|c| matches!(c.try_wait(), Ok(None)));
        if !alive {
            return None;
        }
        let (child, mut stdin) = (self.child.take()?, self.stdin.take()?);
        // Written on a thread, as a freshly started sweep's script is: the
        // caller reads the output while the script is still going in.
        std::thread::spawn(move || {
            let _ = stdin.write_all(script.as_bytes());
        });
        Some(child)
    }
}

impl Drop for Spare {
    fn drop(&mut self) {
        // End of input: an empty script, which tmux runs as nothing.
        drop(self.stdin.take());
        if let Some(mut child) = self.child.take() {
            std::thread::spawn(move || {
                let _ = child.wait();
            });
        }
    }
}
