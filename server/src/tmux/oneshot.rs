//! One-shot tmux processes: `tmux -S SOCKET source-file -` (on another
//! host, the same through ssh: [`super::launch`]).
//!
//! Used for every capture batch (fastest measured path, see the module docs
//! of [`super`]) and for commands when no control client can attach (a
//! server with no sessions). A `source-file -` client attaches to nothing:
//! it fires no hooks, is never counted in `session_attached` and does not
//! keep a `destroy-unattached` session alive. Its commands run one after the
//! other in the server without yielding, so a probe and a capture written
//! next to each other see the same pane state.
//!
//! Caveat: one line tmux cannot parse (an unknown command) makes tmux
//! reject the whole script, so scripts here contain only commands built by
//! this module, and single user commands run one per process.

use std::io::Write;
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::Instant;

use super::launch::Endpoint;
use super::process::finish;
use super::TmuxError;

/// Starts `tmux source-file -` with `script` on its stdin (written by a
/// thread so a large script cannot dead-lock against unread output).
pub(crate) fn spawn_source(at: &Endpoint, script: String) -> Result<Child, TmuxError> {
    let mut child = at
        .tmux(&["source-file", "-"])?
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| TmuxError::spawn("", e))?;
    if let Some(mut stdin) = child.stdin.take() {
        std::thread::spawn(move || {
            let _ = stdin.write_all(script.as_bytes());
        });
    }
    Ok(child)
}

/// Starts `tmux source-file PATH` with `stdin` as its standard input: a
/// pane's terminal, which tells tmux the client's pane (see
/// [`super::capture::Anchor`]), so the script comes from the file at `script`.
pub(crate) fn spawn_source_path(
    at: &Endpoint,
    script: &Path,
    stdin: std::fs::File,
) -> Result<Child, TmuxError> {
    at.tmux(&[std::ffi::OsStr::new("source-file"), script.as_os_str()])?
        .stdin(Stdio::from(stdin))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| TmuxError::spawn("", e))
}

/// Runs one command line in its own client; its stdout, or its error.
pub(crate) fn run_line(at: &Endpoint, line: &str, deadline: Instant) -> Result<String, TmuxError> {
    let child = spawn_source(at, format!("{line}\n"))?;
    let done = finish(child, deadline)?;
    if done.success {
        Ok(String::from_utf8_lossy(&done.stdout).into_owned())
    } else {
        // ssh's own failure (255) or no tmux there (127): stderr says why.
        if at.host().is_some() && matches!(done.code, Some(255 | 127)) {
            return Err(at.client_error(&done.stderr, done.code));
        }
        // `source-file` reports parse errors on stdout, command errors on
        // stderr.
        let msg = if done.stderr.trim().is_empty() {
            String::from_utf8_lossy(&done.stdout).into_owned()
        } else {
            done.stderr
        };
        Err(at.client_error(strip_location(msg.trim()), done.code))
    }
}

/// `-:1: unknown command: x` -> `unknown command: x`.
fn strip_location(msg: &str) -> &str {
    msg.strip_prefix("-:")
        .and_then(|rest| rest.split_once(": ").map(|(_, m)| m))
        .unwrap_or(msg)
}
