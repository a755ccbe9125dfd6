//! Is this pane the one panescan's client runs in?
//!
//! `is_caller` is true only when the pane id equals `TMUX_PANE` *and* the
//! server's socket is the one named in `TMUX`, compared by device and
//! inode ([`super::identity`]): a hard link to the socket is the same
//! server; `None` when the client does not run inside tmux at all.
//!
//! The caller is a value, not the process's environment: in-process it is
//! this process's ([`CallerPane::of_process`]); a daemon's session carries
//! its serve's, checked by the daemon. A handle on a server
//! ([`super::Tmux`]) marks `is_caller` for its caller after the listing,
//! which sessions share.

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use super::identity::same_socket;
use super::ids::PaneId;

/// Where panescan's client runs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CallerPane {
    /// Realpath of the socket in `TMUX` (first comma field).
    pub socket: Option<PathBuf>,
    /// `TMUX_PANE`.
    pub pane: Option<PaneId>,
    /// The server's pid (second comma field of `TMUX`).
    pub server_pid: Option<u32>,
    /// The processes on the client's side: the one serving the session
    /// (serve) and its parents, nearest first. A pane whose process is
    /// one of them holds the client, whatever `TMUX_PANE` says.
    pub processes: Vec<u32>,
}

impl CallerPane {
    /// Reads `TMUX` and `TMUX_PANE`, and this process's parents.
    fn from_env() -> Self {
        Self::from_values(
            std::env::var_os("TMUX").map(|v| v.to_string_lossy().into_owned()),
            std::env::var("TMUX_PANE").ok(),
        )
        .with_processes(super::procfs::ancestors(std::process::id()))
    }

    /// This process's caller, read once.
    pub fn of_process() -> Arc<CallerPane> {
        static HERE: OnceLock<Arc<CallerPane>> = OnceLock::new();
        HERE.get_or_init(|| Arc::new(CallerPane::from_env()))
            .clone()
    }

    /// This caller with `processes` as its client's side.
    pub fn with_processes(mut self, processes: Vec<u32>) -> Self {
        self.processes = processes;
        self
    }

    /// Whether the pane whose process is `pane_pid` (on this machine)
    /// holds the client: that process is the client's or a parent of it.
    pub fn runs_under(&self, pane_pid: u32) -> bool {
        self.processes.contains(&pane_pid)
    }

    /// From explicit values of `TMUX` and `TMUX_PANE` (for tests).
    pub fn from_values(tmux: Option<String>, tmux_pane: Option<String>) -> Self {
        let socket = tmux.as_deref().and_then(|t| {
            let path = t.split(',').next().unwrap_or("");
            if path.is_empty() {
                None
            } else {
                Some(std::fs::canonicalize(path).unwrap_or_else(|_| PathBuf::from(path)))
            }
        });
        let pane = tmux_pane.as_deref().and_then(|p| PaneId::parse(p).ok());
        let server_pid = tmux
            .as_deref()
            .and_then(|t| t.split(',').nth(1))
            .and_then(|p| p.parse().ok());
        CallerPane {
            socket,
            pane,
            server_pid,
            processes: Vec::new(),
        }
    }

    /// `is_caller` for `pane` of the server whose socket is `server_socket`.
    pub fn is_caller(&self, server_socket: &Path, pane: PaneId) -> Option<bool> {
        self.on_server(server_socket)
            .map(|caller| caller == Some(pane))
    }

    /// The caller's pane if panescan runs on the server whose socket is
    /// `server_socket` (`Some(None)` if it runs inside another server,
    /// `None` if not inside tmux). Resolving the socket's realpath takes
    /// system calls: do it once per listing, not once per pane.
    pub fn on_server(&self, server_socket: &Path) -> Option<Option<PaneId>> {
        let mine = self.socket.as_ref()?;
        Some(if same_socket(mine, server_socket) {
            self.pane
        } else {
            None
        })
    }

    /// Whether panescan runs inside the server whose socket is
    /// `server_socket` (a pane of it or not).
    pub fn same_server(&self, server_socket: &Path) -> bool {
        self.socket
            .as_ref()
            .is_some_and(|mine| same_socket(mine, server_socket))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn caller_needs_both_socket_and_pane() {
        let dir = std::env::temp_dir().join(format!("panescan-caller-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let sock = dir.join("sock");
        std::fs::write(&sock, b"").unwrap();
        let link = dir.join("link");
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(&sock, &link).unwrap();
        let p3 = PaneId::parse("%3").unwrap();
        let p4 = PaneId::parse("%4").unwrap();
        let inside = CallerPane::from_values(
            Some(format!("{},1234,0", link.display())),
            Some("%3".into()),
        );
        assert_eq!(inside.is_caller(&sock, p3), Some(true));
        assert_eq!(inside.is_caller(&link, p3), Some(true));
        assert_eq!(inside.is_caller(&sock, p4), Some(false));
        assert_eq!(inside.is_caller(&dir.join("other"), p3), Some(false));
        let outside = CallerPane::from_values(None, Some("%3".into()));
        assert_eq!(outside.is_caller(&sock, p3), None);
        let no_pane = CallerPane::from_values(Some(format!("{},1,0", sock.display())), None);
        assert_eq!(no_pane.is_caller(&sock, p3), Some(false));
        // A hard link is the same socket; another file is not, even when
        // panescan runs in some tmux.
        let hard = dir.join("hard");
        let _ = std::fs::remove_file(&hard);
        std::fs::hard_link(&sock, &hard).unwrap();
        assert_eq!(inside.is_caller(&hard, p3), Some(true));
        assert!(inside.same_server(&hard));
        assert!(!inside.same_server(&dir.join("other")));
        assert!(!outside.same_server(&sock));
        assert_eq!(inside.server_pid, Some(1234));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
