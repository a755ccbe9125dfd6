//! Where tmux sockets are: the path `tmux` itself would use for a server,
//! this user's socket directory, the socket in `$TMUX`, and the uid they
//! are named after. A leaf of `tmux/`: it imports only the parent's
//! [`ServerSpec`] and [`TmuxError`].

use std::path::PathBuf;

use super::{ServerSpec, TmuxError};

/// The socket path `tmux` would use for `spec`.
pub fn resolve_socket(spec: &ServerSpec) -> Result<PathBuf, TmuxError> {
    if let Some(p) = &spec.socket_path {
        return Ok(p.clone());
    }
    if let Some(name) = &spec.socket_name {
        if name.is_empty() || name.contains('/') {
            return Err(TmuxError::Invalid(format!(
                "socket_name {name:?} must be a plain name (use socket_path for a path)"
            )));
        }
        return Ok(user_socket_dir().join(name));
    }
    if let Some(path) = tmux_env_socket() {
        return Ok(path);
    }
    Ok(user_socket_dir().join("default"))
}

/// The socket named in `$TMUX` (its first comma field), if any.
pub(crate) fn tmux_env_socket() -> Option<PathBuf> {
    let t = std::env::var_os("TMUX")?;
    let t = t.to_string_lossy();
    t.split(',')
        .next()
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
}

/// This user's tmux socket directory, as tmux itself names it:
/// `$TMUX_TMPDIR/tmux-UID`, else `/tmp/tmux-UID`.
pub fn user_socket_dir() -> PathBuf {
    let base = std::env::var_os("TMUX_TMPDIR")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/tmp"));
    base.join(format!("tmux-{}", current_uid().unwrap_or(0)))
}

/// The real uid, from /proc (the crate denies unsafe code, so no getuid()).
pub(crate) fn current_uid() -> Option<u32> {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Uid:"))
                .and_then(|rest| rest.split_whitespace().next().map(str::to_owned))
        })
        .and_then(|u| u.parse().ok())
}
