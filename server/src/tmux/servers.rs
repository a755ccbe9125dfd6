//! The tmux servers of this user: the sockets in the user's tmux socket
//! directory, each found alive or stale.
//!
//! The directory is checked as tmux checks it before it uses it (a
//! directory, not a symlink, owned by this user, nothing for others): a
//! directory tmux itself would refuse is not listed from. A socket is
//! first connected to directly: "connection refused" is a stale socket (a
//! server killed without cleaning up) and costs no tmux client. A live one
//! is asked for its sessions by a one-shot client, within a deadline.
//! Sockets are probed in parallel, so many servers cost one deadline.

use std::io;
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Instant;

use super::launch::Endpoint;
use super::paths::current_uid;
use super::process::{client_error, finish};
use super::TmuxError;

/// What a probe found at one socket.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Probe {
    /// A server answered, with this many sessions.
    Alive {
        /// Sessions the server has.
        sessions: u32,
    },
    /// Nothing listens (connection refused): a server that died without
    /// removing its socket.
    Stale,
    /// Something listens but did not answer as tmux within the deadline,
    /// or answered with an error (the reason).
    Unknown(String),
}

/// The sockets in `dir`, sorted by name, at most `max` of them; and how
/// many more there were. A directory that does not exist holds none.
pub fn sockets_in(dir: &Path, max: usize) -> Result<(Vec<PathBuf>, usize), String> {
    let meta = match std::fs::symlink_metadata(dir) {
        Ok(meta) => meta,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok((Vec::new(), 0)),
        Err(e) => return Err(format!("{} cannot be examined: {e}", dir.display())),
    };
    check_dir(dir, &meta)?;
    let entries =
        std::fs::read_dir(dir).map_err(|e| format!("{} cannot be read: {e}", dir.display()))?;
    let mut found: Vec<PathBuf> = entries
        .flatten()
        // Links too: the reach rules judge where they lead.
        .filter(|e| e.file_type().is_ok_and(|t| t.is_socket() || t.is_symlink()))
        .map(|e| e.path())
        .collect();
    found.sort();
    let more = found.len().saturating_sub(max);
    found.truncate(max);
    Ok((found, more))
}

/// tmux's own checks of its socket directory.
fn check_dir(dir: &Path, meta: &std::fs::Metadata) -> Result<(), String> {
    let why = if !meta.file_type().is_dir() {
        "it is not a directory".to_owned()
    } else if current_uid() != Some(meta.uid()) {
        format!("it is owned by uid {}, not by this user", meta.uid())
    } else if meta.permissions().mode() & 0o007 != 0 {
        format!(
            "others may use it (mode {:o})",
            meta.permissions().mode() & 0o777
        )
    } else {
        return Ok(());
    };
    Err(format!(
        "{} is not a tmux socket directory tmux would use: {why}",
        dir.display()
    ))
}

/// Probes the socket at `path` until `deadline`.
pub fn probe(path: &Path, deadline: Instant) -> Probe {
    match UnixStream::connect(path) {
        Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => return Probe::Stale,
        Err(e) => return Probe::Unknown(format!("cannot connect: {e}")),
        // Closed at once: the server sees a client that went away.
        Ok(_) => {}
    }
    match sessions(path, deadline) {
        Ok(sessions) => Probe::Alive { sessions },
        Err(TmuxError::NoServer { .. }) => Probe::Stale,
        Err(TmuxError::Timeout) => Probe::Unknown("no answer before the deadline".into()),
        Err(e) => Probe::Unknown(e.to_string()),
    }
}

/// The number of sessions of the server at `path` (one-shot client).
fn sessions(path: &Path, deadline: Instant) -> Result<u32, TmuxError> {
    // list-sessions, unlike new-session, never starts a server on a
    // socket nothing answers on.
    let child = Endpoint::local(path.to_path_buf())
        .tmux(&["list-sessions", "-F", "#{session_id}"])?
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| TmuxError::Spawn(e.to_string()))?;
    let done = finish(child, deadline)?;
    if done.success {
        let text = String::from_utf8_lossy(&done.stdout);
        Ok(text.lines().filter(|l| l.starts_with('$')).count() as u32)
    } else if done.stderr.contains("no sessions") {
        Ok(0)
    } else {
        Err(client_error(
            &path.display().to_string(),
            done.stderr.trim(),
        ))
    }
}

/// Probes every socket in parallel, each until `deadline`; results in the
/// order given.
pub fn probe_all(paths: &[PathBuf], deadline: Instant) -> Vec<Probe> {
    let handles: Vec<_> = paths
        .iter()
        .map(|p| {
            let p = p.clone();
            std::thread::Builder::new()
                .name("tmux-probe".into())
                .spawn(move || probe(&p, deadline))
        })
        .collect();
    handles
        .into_iter()
        .map(|h| match h {
            Ok(h) => h
                .join()
                .unwrap_or_else(|_| Probe::Unknown("the probe failed".into())),
            Err(e) => Probe::Unknown(format!("cannot start a probe: {e}")),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn a_missing_directory_holds_no_socket_and_a_file_is_refused() {
        let missing = std::env::temp_dir().join(format!("panescan-no-dir-{}", std::process::id()));
        assert_eq!(sockets_in(&missing, 10).unwrap(), (Vec::new(), 0));
        let file = std::env::temp_dir().join(format!("panescan-file-{}", std::process::id()));
        std::fs::write(&file, b"x").unwrap();
        let err = sockets_in(&file, 10).unwrap_err();
        std::fs::remove_file(&file).unwrap();
        assert!(err.contains("not a directory"), "{err}");
    }
}
