//! Which socket a path names: its device and inode, so two names of one
//! socket (a hard link, which anyone who may write the directory can make,
//! or a symlink) are one tmux server wherever panescan decides "the same
//! server": its own pane, session and server ([`super::caller`]), the
//! sockets a call may reach ([`super::reach`]) and the one connection and
//! cache per server ([`super::connection`]). Paths are compared only when
//! a socket cannot be examined.

use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// A socket's device and inode.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SocketId {
    dev: u64,
    ino: u64,
}

impl SocketId {
    /// The identity of what `path` names (links followed), if it exists.
    pub fn of(path: &Path) -> Option<SocketId> {
        std::fs::metadata(path).ok().map(|m| SocketId {
            dev: m.dev(),
            ino: m.ino(),
        })
    }
}

/// Whether `a` and `b` name one socket: the same device and inode, or,
/// when either cannot be examined, the same resolved path.
pub fn same_socket(a: &Path, b: &Path) -> bool {
    match (SocketId::of(a), SocketId::of(b)) {
        (Some(x), Some(y)) => x == y,
        _ => {
            let real = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
            real(a) == real(b)
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn hard_and_symbolic_links_are_the_same_socket() {
        let dir = std::env::temp_dir().join(format!("panescan-identity-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let sock = dir.join("sock");
        let _listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
        let hard = dir.join("hard");
        std::fs::hard_link(&sock, &hard).unwrap();
        let soft = dir.join("soft");
        std::os::unix::fs::symlink(&sock, &soft).unwrap();
        let other = dir.join("other");
        let _other = std::os::unix::net::UnixListener::bind(&other).unwrap();
        assert!(same_socket(&sock, &hard));
        assert!(same_socket(&soft, &hard));
        assert!(!same_socket(&sock, &other));
        assert!(!same_socket(&sock, &dir.join("missing")));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
