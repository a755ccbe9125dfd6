//! Which tmux sockets a tool argument may reach.
//!
//! A tmux client sends its identify messages (its terminal, working
//! directory and whole environment) to whatever listens on the socket it is
//! given. `socket_name` and `socket_path` come from the model, so a socket a
//! tool argument names must be one of this user's tmux sockets:
//!
//! * resolved first (`realpath`, every symlink followed); the checks and
//!   tmux see the resolved path, never the caller's;
//! * inside the user's tmux socket directory (`$TMUX_TMPDIR/tmux-UID`, else
//!   `/tmp/tmux-UID`) or a directory the operator allowed
//!   (`--allow-socket-dir`), or exactly the operator's server or the one
//!   panescan runs in (`$TMUX`);
//! * a socket (`lstat`) owned by this user;
//! * a `socket_name` is a plain name: not empty, no `/`, not `.` or `..`.
//!
//! Anything else is refused before any tmux client starts, with an error
//! that says how the operator can allow it; a missing socket in an allowed
//! directory is "no tmux server". The operator's own `--socket-name` /
//! `--socket-path` are not checked here. What is left (a directory others
//! may write to) and why each rule, in full: NOTES.md; what a client sends carries no more of panescan's
//! environment ([`super::client_env`]).

use std::io;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Component, Path, PathBuf};

use super::identity::same_socket;
use super::paths::{current_uid, tmux_env_socket, user_socket_dir};
use super::{ServerSpec, TmuxError};

/// What every refusal tells the operator.
const HOW_TO_ALLOW: &str = "the operator can allow sockets in another directory with `panescan serve --allow-socket-dir DIR` (or PANESCAN_ALLOW_SOCKET_DIR=DIR[:DIR...])";

/// Where a socket named by a tool argument may be.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SocketPolicy {
    /// Directories the operator allowed beside the user's tmux socket
    /// directory (absolute).
    pub allowed_dirs: Vec<PathBuf>,
}

impl SocketPolicy {
    /// The user's tmux socket directory and `allowed_dirs`.
    pub fn new(allowed_dirs: Vec<PathBuf>) -> Self {
        SocketPolicy { allowed_dirs }
    }

    /// The server a call's `socket_name` / `socket_path` names, as the
    /// checked, resolved socket path tmux is to be given; `operator` is the
    /// server panescan serves (a call naming none gets it unchanged).
    pub fn confine(
        &self,
        asked: &ServerSpec,
        operator: &ServerSpec,
    ) -> Result<ServerSpec, TmuxError> {
        if let Some(name) = &asked.socket_name {
            check_name(name)?;
        }
        let wanted = match (&asked.socket_path, &asked.socket_name) {
            (Some(path), _) => path.clone(),
            (None, Some(name)) => user_socket_dir().join(name),
            (None, None) => return Ok(operator.clone()),
        };
        if !wanted.is_absolute() {
            return Err(self.refuse(&wanted, "socket_path must be an absolute path"));
        }
        let real = match std::fs::canonicalize(&wanted) {
            Ok(real) => real,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(self.missing(&wanted)),
            Err(e) => return Err(self.refuse(&wanted, &format!("it cannot be resolved ({e})"))),
        };
        // A trusted socket under another name (a hard link) is that
        // socket: the caller gets the trusted path, so every "same server"
        // decision and the connection and cache are the trusted one's.
        if let Some(trusted) = trusted_sockets(operator)
            .into_iter()
            .find(|t| same_socket(t, &real))
        {
            return Ok(ServerSpec {
                socket_path: Some(trusted),
                ..ServerSpec::default()
            });
        }
        if !self.holds(real.parent().unwrap_or(&real)) {
            let why = if real == wanted {
                "it is outside the directories allowed".to_owned()
            } else {
                format!(
                    "it resolves to {}, outside the directories allowed",
                    real.display()
                )
            };
            return Err(self.refuse(&wanted, &why));
        }
        self.check_socket(&wanted, &real)?;
        Ok(ServerSpec {
            socket_path: Some(real),
            ..ServerSpec::default()
        })
    }

    /// `real` (resolved) must be a socket owned by this user.
    fn check_socket(&self, wanted: &Path, real: &Path) -> Result<(), TmuxError> {
        self.check_socket_of(wanted, real, current_uid())
    }

    /// [`Self::check_socket`] for the user `uid` (`None`: not known). Apart
    /// so that a test as any user can be another user: only root can give
    /// a socket away.
    fn check_socket_of(
        &self,
        wanted: &Path,
        real: &Path,
        uid: Option<u32>,
    ) -> Result<(), TmuxError> {
        let meta = std::fs::symlink_metadata(real)
            .map_err(|e| self.refuse(wanted, &format!("it cannot be examined ({e})")))?;
        let kind = meta.file_type();
        if !kind.is_socket() {
            let what = if kind.is_dir() {
                "a directory"
            } else if kind.is_file() {
                "a regular file"
            } else if kind.is_symlink() {
                "a symlink"
            } else {
                "not a file tmux listens on"
            };
            return Err(self.refuse(wanted, &format!("it is not a socket ({what})")));
        }
        match uid {
            Some(uid) if uid == meta.uid() => Ok(()),
            Some(uid) => Err(self.refuse(
                wanted,
                &format!(
                    "it is owned by uid {}, not by this user (uid {uid})",
                    meta.uid()
                ),
            )),
            None => Err(self.refuse(wanted, "this user's uid cannot be read")),
        }
    }

    /// A path that does not exist: no server, if it would be in an allowed
    /// directory; refused otherwise (so nothing tells a caller whether
    /// something exists outside).
    fn missing(&self, wanted: &Path) -> TmuxError {
        let leaves = wanted
            .components()
            .any(|c| matches!(c, Component::ParentDir));
        let parent = wanted.parent().unwrap_or(wanted);
        let parent = std::fs::canonicalize(parent).unwrap_or_else(|_| parent.to_path_buf());
        if !leaves && self.holds(&parent) {
            TmuxError::NoServer {
                socket: wanted.display().to_string(),
            }
        } else {
            self.refuse(wanted, "it is outside the directories allowed")
        }
    }

    /// Whether `dir` is an allowed directory or inside one (compared both
    /// as given and resolved: a directory may not exist yet).
    fn holds(&self, dir: &Path) -> bool {
        self.dirs().iter().any(|allowed| {
            dir.starts_with(allowed)
                || std::fs::canonicalize(allowed).is_ok_and(|real| dir.starts_with(real))
        })
    }

    /// The user's tmux socket directory, then the operator's.
    fn dirs(&self) -> Vec<PathBuf> {
        let mut dirs = vec![user_socket_dir()];
        dirs.extend(self.allowed_dirs.iter().cloned());
        dirs
    }

    fn refuse(&self, wanted: &Path, why: &str) -> TmuxError {
        let dirs: Vec<String> = self
            .dirs()
            .iter()
            .map(|d| d.display().to_string())
            .collect();
        TmuxError::Refused(format!(
            "socket {} refused: {why}; a tool argument reaches only this user's tmux sockets in {}: {HOW_TO_ALLOW}",
            wanted.display(),
            dirs.join(", ")
        ))
    }
}

/// A socket name is a file name in the user's tmux directory, nothing
/// that leads out of it.
pub fn check_name(name: &str) -> Result<(), TmuxError> {
    let why = if name.is_empty() {
        "it is empty"
    } else if name.contains('/') {
        "it contains `/`"
    } else if name == "." || name == ".." {
        "it names a directory"
    } else if name.contains('\0') {
        "it contains a NUL byte"
    } else {
        return Ok(());
    };
    Err(TmuxError::Refused(format!(
        "socket_name {name:?} refused: {why}; socket_name is a plain name in this user's tmux socket directory ({}), for a socket elsewhere pass socket_path: {HOW_TO_ALLOW}",
        user_socket_dir().display()
    )))
}

/// Sockets reachable whatever their directory: the operator's server and
/// the one panescan runs in (resolved; those that do not exist are left
/// out).
fn trusted_sockets(operator: &ServerSpec) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut add = |p: PathBuf| {
        if let Ok(real) = std::fs::canonicalize(p) {
            out.push(real);
        }
    };
    if let Ok(p) = super::paths::resolve_socket(operator) {
        add(p);
    }
    if let Some(p) = tmux_env_socket() {
        add(p);
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    fn refused(r: Result<ServerSpec, TmuxError>) -> String {
        match r {
            Err(TmuxError::Refused(m)) => m,
            other => panic!("expected a refusal, got {other:?}"),
        }
    }

    #[test]
    fn names_that_lead_out_are_refused_before_any_lookup() {
        let policy = SocketPolicy::default();
        let operator = ServerSpec::default();
        for name in ["", "..", ".", "a/b", "../x", "/tmp/x", "a\0b"] {
            let m = refused(policy.confine(&ServerSpec::named(name), &operator));
            assert!(m.contains("--allow-socket-dir"), "{name:?}: {m}");
            // By the name check, not by a lookup of what it names.
            assert!(m.starts_with("socket_name "), "{name:?}: {m}");
        }
    }

    /// A path that cannot be resolved for another reason than not
    /// existing (a regular file used as a directory) is refused, not "no
    /// server"; a link outside says where it leads.
    #[test]
    fn unresolvable_paths_are_refused_and_links_say_where_they_lead() {
        let dir = std::env::temp_dir().join(format!("panescan-reach-r-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("file");
        std::fs::write(&file, b"").unwrap();
        let policy = SocketPolicy::new(vec![dir.clone()]);
        let operator = ServerSpec::default();
        let at = |p: PathBuf| ServerSpec {
            socket_path: Some(p),
            ..ServerSpec::default()
        };
        let m = refused(policy.confine(&at(file.join("x")), &operator));
        assert!(m.contains("cannot be resolved"), "{m}");
        let outside = SocketPolicy::default();
        let link = dir.join("link");
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(&file, &link).unwrap();
        let m = refused(outside.confine(&at(link.clone()), &operator));
        assert!(
            m.contains(&format!("it resolves to {}", file.display())),
            "{m}"
        );
        let m = refused(outside.confine(&at(file.clone()), &operator));
        assert!(m.contains("it is outside the directories allowed"), "{m}");
        assert!(!m.contains("resolves to"), "{m}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A socket of another user is refused naming both uids, before any
    /// client connects (the socket is a listener nobody accepts on: a
    /// connection would queue). As any user: the check is asked as a uid
    /// that is not the socket's.
    #[test]
    fn a_socket_owned_by_another_user_is_refused_with_both_uids() {
        let dir = std::env::temp_dir().join(format!("panescan-reach-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("sock");
        let _ = std::fs::remove_file(&path);
        let listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
        listener.set_nonblocking(true).unwrap();
        let owner = std::fs::metadata(&path).unwrap().uid();
        let policy = SocketPolicy::new(vec![dir.clone()]);
        let other = owner.wrapping_add(1);
        let m = match policy.check_socket_of(&path, &path, Some(other)) {
            Err(TmuxError::Refused(m)) => m,
            r => panic!("expected a refusal, got {r:?}"),
        };
        assert!(
            m.contains(&format!(
                "owned by uid {owner}, not by this user (uid {other})"
            )),
            "{m}"
        );
        assert!(m.contains("--allow-socket-dir"), "{m}");
        assert!(policy.check_socket_of(&path, &path, Some(owner)).is_ok());
        assert!(policy.check_socket(&path, &path).is_ok());
        let m = format!("{:?}", policy.check_socket_of(&path, &path, None));
        assert!(m.contains("uid cannot be read"), "{m}");
        assert!(listener.accept().is_err(), "a client connected");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn relative_paths_are_refused() {
        let asked = ServerSpec {
            socket_path: Some(PathBuf::from("tmux-0/default")),
            ..ServerSpec::default()
        };
        let m = refused(SocketPolicy::default().confine(&asked, &ServerSpec::default()));
        assert!(m.contains("absolute"), "{m}");
    }
}
