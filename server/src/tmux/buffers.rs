//! Paste buffers: listing them, reading one, and the short-lived buffer a
//! paste goes through.
//!
//! A listing goes through the control client with a per-listing random
//! field separator and record end (as [`super::inventory`] does), so a
//! buffer name holding tabs, newlines or anything else cannot shift a
//! field. A buffer's text is read by a one-shot client: tmux writes a
//! detached client's `show-buffer` output raw, where a control client gets
//! it escaped; and the read stops at the caller's bound (the process is
//! killed), so a huge buffer costs no more than what is returned.
//!
//! A paste delivers its text as given: from tmux 3.7 `paste-buffer` writes
//! control characters but tab, newline, CR, backspace and bell in caret
//! form (`^[`, `utf8_stravisx` with `VIS_SAFE|VIS_NOSLASH`, cmd-paste-buffer.c)
//! unless given `-S`, a flag tmux 3.2-3.6 refuse. So a paste asks for `-S`
//! and, where tmux refuses the flag, pastes again without it (nothing was
//! written: the command did not parse); the refusal is kept for the
//! server's control client, so later pastes there take one round trip.

use std::io::Read;
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use super::connection::Shared;
use super::process::finish;
use super::{PaneId, Server, TmuxCommand, TmuxError};
use crate::sync::{lock, nonce};

/// What pastes learned of one server: whether its `paste-buffer` refuses
/// `-S` (tmux before 3.7).
#[derive(Debug, Default)]
pub(crate) struct ServerState {
    /// The pid of the control client under which tmux refused `-S`: a
    /// later client may be of another tmux server on the same socket
    /// (restarted, upgraded), so there the flag is tried again.
    refused_under: Mutex<Option<u32>>,
}

impl ServerState {
    /// Whether to paste without `-S` at once: tmux refused it under the
    /// control client `client` (none: through one-shot clients, never
    /// known).
    fn refuses_raw(&self, client: Option<u32>) -> bool {
        client.is_some() && *lock(&self.refused_under) == client
    }

    fn refused_raw(&self, client: Option<u32>) {
        *lock(&self.refused_under) = client;
    }
}

/// Whether tmux refused `paste-buffer`'s `-S` as a flag it does not know
/// (tmux 3.3-3.6: `unknown flag -S`; 3.2: its usage line).
fn refused_raw_flag(reply: &Result<String, TmuxError>) -> bool {
    match reply {
        Err(TmuxError::Command(msg)) => {
            msg.contains("unknown flag -S") || msg.contains("usage: paste-buffer")
        }
        _ => false,
    }
}

/// `paste-buffer -d` of buffer `name` into `pane`: `-p` when `bracketed`,
/// `-S` (the text as it is) when `raw`.
fn paste_command(name: &str, pane: PaneId, bracketed: bool, raw: bool) -> TmuxCommand {
    let mut paste = TmuxCommand::new("paste-buffer").flag("-d");
    if bracketed {
        paste = paste.flag("-p");
    }
    if raw {
        paste = paste.flag("-S");
    }
    paste.option("-b", name).target(pane)
}

/// One paste buffer as `list-buffers` shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BufferInfo {
    /// Its name (`buffer0`, or any name `set-buffer -b` gave).
    pub name: String,
    /// Its size in bytes.
    pub size: u64,
    /// Creation time, seconds since the epoch.
    pub created: i64,
}

/// Every paste buffer of the server, most recent first (tmux's order).
pub(crate) fn list(shared: &Shared, deadline: Instant) -> Result<Vec<BufferInfo>, TmuxError> {
    let token = nonce();
    let token = token.get(..12).unwrap_or(&token);
    let (sep, end) = (format!("<{token}f>"), format!("<{token}r>"));
    let format = format!("#{{buffer_size}}{sep}#{{buffer_created}}{sep}#{{buffer_name}}{end}");
    let command = TmuxCommand::new("list-buffers").option("-F", &format);
    let text = shared
        .run_many(std::slice::from_ref(&command), deadline)
        .into_iter()
        .next()
        .unwrap_or(Err(TmuxError::ConnectionLost("no reply".into())))?;
    Ok(parse_list(&text, &sep, &end))
}

/// Records of `list`'s format; a record that does not parse is skipped
/// (tmux wrote every one, so that is never expected).
fn parse_list(text: &str, sep: &str, end: &str) -> Vec<BufferInfo> {
    text.split(end)
        .filter_map(|record| {
            // Each record but the first starts after tmux's newline.
            let record = record.strip_prefix('\n').unwrap_or(record);
            let mut f = record.splitn(3, sep);
            let size = f.next()?.trim().parse().ok()?;
            let created = f.next()?.trim().parse().ok()?;
            let name = f.next()?.to_owned();
            Some(BufferInfo {
                name,
                size,
                created,
            })
        })
        .collect()
}

/// A buffer's first bytes, at most `max_bytes` of them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BufferHead {
    /// The bytes read (raw: a buffer may hold anything).
    pub bytes: Vec<u8>,
    /// More bytes followed that were not read.
    pub truncated: bool,
}

/// Reads the first `max_bytes` of buffer `name` with a one-shot client
/// and stops reading there (the client is killed by its own pid).
pub(crate) fn read(
    shared: &Shared,
    name: &str,
    max_bytes: usize,
    deadline: Instant,
) -> Result<BufferHead, TmuxError> {
    let at = shared.endpoint().clone();
    let line = TmuxCommand::new("show-buffer").option("-b", name);
    let line = line.to_line()?.to_owned();
    let mut child = at
        .tmux(&["source-file", "-"])?
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| TmuxError::spawn("", e))?;
    if let Some(mut stdin) = child.stdin.take() {
        let _ = std::io::Write::write_all(&mut stdin, format!("{line}\n").as_bytes());
    }
    let (tx, rx) = crossbeam_channel::bounded(1);
    let stdout = child.stdout.take();
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        if let Some(out) = stdout {
            // One byte past the bound tells "more followed".
            let limit = u64::try_from(max_bytes)
                .unwrap_or(u64::MAX)
                .saturating_add(1);
            let _ = out.take(limit).read_to_end(&mut bytes);
        }
        let _ = tx.send(bytes);
    });
    let left = deadline.saturating_duration_since(Instant::now());
    let Ok(mut bytes) = rx.recv_timeout(left) else {
        let _ = child.kill();
        let _ = child.wait();
        return Err(TmuxError::Timeout);
    };
    let truncated = bytes.len() > max_bytes;
    if truncated {
        bytes.truncate(max_bytes);
        // What is left unread is not wanted: end the client now.
        let _ = child.kill();
        let _ = child.wait();
        return Ok(BufferHead { bytes, truncated });
    }
    let done = finish(child, deadline)?;
    if !done.success {
        return Err(at.client_error(done.stderr.trim(), done.code));
    }
    Ok(BufferHead { bytes, truncated })
}

/// A buffer name no user and no other call uses: the process, a counter
/// and 32 random bits.
pub(crate) fn scratch_name() -> String {
    static COUNT: AtomicU64 = AtomicU64::new(0);
    let n = COUNT.fetch_add(1, Ordering::Relaxed);
    let token = nonce();
    format!(
        "panescan-paste-{}-{n}-{}",
        std::process::id(),
        token.get(..8).unwrap_or(&token)
    )
}

/// Pastes `text` into `pane` through a buffer of its own: `set-buffer`
/// then `paste-buffer -d -S` (which deletes it), pipelined in one round
/// trip; without `-S` where tmux refuses it (module doc). When the paste
/// did not happen the buffer is deleted anyway, so nothing of the text
/// stays in the server.
pub(crate) fn paste(
    server: &Server,
    pane: PaneId,
    text: &str,
    bracketed: bool,
    deadline: Instant,
) -> Result<(), TmuxError> {
    let shared = server.connection();
    let name = scratch_name();
    // `--`: text starting with `-` is not a flag. set-buffer expands no
    // format in its data; quoting keeps `;`, newlines and quotes inert.
    let set = TmuxCommand::new("set-buffer")
        .option("-b", &name)
        .arg("--")
        .arg(text);
    let client = shared.own_client_pid();
    let raw = !server.pastes().refuses_raw(client);
    let paste = paste_command(&name, pane, bracketed, raw);
    let mut replies = shared.run_many(&[set, paste], deadline).into_iter();
    let set_reply = replies.next();
    let mut paste_reply = replies.next();
    if raw && matches!(set_reply, Some(Ok(_))) && paste_reply.as_ref().is_some_and(refused_raw_flag)
    {
        server.pastes().refused_raw(client);
        let paste = paste_command(&name, pane, bracketed, false);
        paste_reply = shared.run_many(&[paste], deadline).pop();
    }
    match (set_reply, paste_reply) {
        (Some(Ok(_)), Some(Ok(_))) => Ok(()),
        (set_reply, paste_reply) => {
            delete_later(shared, name);
            match (set_reply, paste_reply) {
                (Some(Err(e)), _) | (_, Some(Err(e))) => Err(e),
                _ => Err(TmuxError::ConnectionLost("no reply".into())),
            }
        }
    }
}

/// Whatever failed, the buffer may exist: it is deleted on a thread of
/// its own, with its own deadline, so a late server still gets the delete
/// while the call answers by its deadline (a stopped tmux held a paste 5 s
/// past it).
fn delete_later(shared: &Arc<Shared>, name: String) {
    let shared = shared.clone();
    let spawned = std::thread::Builder::new()
        .name("paste-cleanup".into())
        .spawn(move || {
            let delete = TmuxCommand::new("delete-buffer").option("-b", &name);
            let later = Instant::now() + std::time::Duration::from_secs(5);
            let _ = shared.run_many(&[delete], later);
        });
    if let Err(e) = spawned {
        eprintln!("panescan: cannot start the paste cleanup: {e}");
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn listing_survives_names_with_separators_and_newlines() {
        let (sep, end) = ("<f>", "<r>");
        let text = "10<f>1700000000<f>buffer0<r>\n3<f>1700000001<f>a\tb\nc 5 6<r>\n";
        let got = parse_list(text, sep, end);
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].name, "buffer0");
        assert_eq!(got[1].name, "a\tb\nc 5 6");
        assert_eq!(got[1].size, 3);
        assert!(parse_list("garbage\n<r>x<f>", sep, end).is_empty());
    }

    #[test]
    fn scratch_names_differ() {
        assert_ne!(scratch_name(), scratch_name());
        assert!(scratch_name().starts_with("panescan-paste-"));
    }
}
