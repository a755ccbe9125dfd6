//! tmux wait channels (`wait-for`): a blocking wait in its own client.
//!
//! `wait-for CHANNEL` blocks the client that sends it until someone runs
//! `wait-for -S CHANNEL`. Sent on panescan's one control client it would
//! stall every other request queued behind it, so a wait runs in a tmux
//! process of its own, ended (by its own pid) at the deadline or on
//! cancel. A `wait-for` client attaches to no session: it fires no hook and
//! is not listed by `list-clients`. When it is killed, tmux keeps its
//! entry on the channel until the next signal, which then wakes nobody
//! alive; the server is unharmed.

use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::TmuxError;

/// Longest channel name accepted.
const MAX_CHANNEL_BYTES: usize = 128;

/// How often a wait looks at its client, the deadline and the cancel flag.
const POLL: Duration = Duration::from_millis(5);

/// How a wait ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaitEnd {
    /// The channel was signalled.
    Signalled,
    /// The deadline passed first.
    TimedOut,
}

/// Fails unless `name` is 1-128 bytes of `[A-Za-z0-9._-]`: a word tmux's
/// parser and `wait-for` take as it is, that no flag starts.
pub fn check_channel(name: &str) -> Result<(), TmuxError> {
    let ok = !name.is_empty()
        && name.len() <= MAX_CHANNEL_BYTES
        && !name.starts_with('-')
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
    if ok {
        Ok(())
    } else {
        Err(TmuxError::Invalid(format!(
            "channel {name:?} must be 1-{MAX_CHANNEL_BYTES} characters of letters, digits, '.', '_' and '-', not starting with '-'"
        )))
    }
}

/// Waits on `channel` of the server at `socket` in a client of its own
/// until it is signalled, `deadline` passes or `cancel` is set; the client
/// is killed in the last two cases.
pub fn wait(
    at: &super::launch::Endpoint,
    channel: &str,
    deadline: Instant,
    cancel: &AtomicBool,
) -> Result<WaitEnd, TmuxError> {
    check_channel(channel)?;
    let mut child = at
        .tmux(&["wait-for", channel])?
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| TmuxError::spawn("", e))?;
    let ended = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) => {}
            Err(e) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(TmuxError::spawn("", e));
            }
        }
        if cancel.load(Ordering::Relaxed) || Instant::now() >= deadline {
            break None;
        }
        std::thread::sleep(POLL);
    };
    match ended {
        Some(status) if status.success() => Ok(WaitEnd::Signalled),
        Some(status) => {
            let code = status.code();
            let mut stderr = String::new();
            if let Some(mut e) = child.stderr.take() {
                use std::io::Read;
                let _ = e.read_to_string(&mut stderr);
            }
            Err(at.client_error(&stderr, code))
        }
        None => {
            let _ = child.kill();
            let _ = child.wait();
            if cancel.load(Ordering::Relaxed) {
                Err(TmuxError::Cancelled)
            } else {
                Ok(WaitEnd::TimedOut)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn channel_names() {
        for ok in ["build.done", "a", "A-1_b.c", &"x".repeat(MAX_CHANNEL_BYTES)] {
            assert!(check_channel(ok).is_ok(), "{ok}");
        }
        let long = "x".repeat(MAX_CHANNEL_BYTES + 1);
        for bad in ["", "-S", "a b", "a;b", "a\nb", "#(x)", "a\"b", "é", &long] {
            assert!(check_channel(bad).is_err(), "{bad:?}");
        }
    }
}
