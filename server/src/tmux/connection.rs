//! The long-lived control-mode connection.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

use super::{ServerInfo, ServerSpec, TmuxCommand, TmuxError};

/// State shared by every clone of a [`super::Tmux`].
#[derive(Debug)]
pub struct Shared {
    spec: ServerSpec,
    socket: PathBuf,
}

impl Shared {
    pub(crate) fn new(spec: ServerSpec) -> Result<Self, TmuxError> {
        let socket = resolve_socket(&spec)?;
        Ok(Shared { spec, socket })
    }

    pub(crate) fn spec(&self) -> &ServerSpec {
        &self.spec
    }

    pub(crate) fn socket_path(&self) -> &Path {
        &self.socket
    }

    pub(crate) fn run_many(
        &self,
        commands: &[TmuxCommand],
        _deadline: Instant,
    ) -> Vec<Result<String, TmuxError>> {
        commands
            .iter()
            .map(|_| Err(TmuxError::ConnectionLost("not connected".into())))
            .collect()
    }

    pub(crate) fn server_info(&self, _deadline: Instant) -> Result<ServerInfo, TmuxError> {
        Err(TmuxError::ConnectionLost("not connected".into()))
    }

    pub(crate) fn shutdown(&self) {}
}

/// The process-wide handle for a server.
pub(crate) fn shared(spec: &ServerSpec) -> Result<Arc<Shared>, TmuxError> {
    static MAP: OnceLock<Mutex<HashMap<ServerSpec, Arc<Shared>>>> = OnceLock::new();
    let map = MAP.get_or_init(|| Mutex::new(HashMap::new()));
    let mut map = map.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(s) = map.get(spec) {
        return Ok(s.clone());
    }
    let s = Arc::new(Shared::new(spec.clone())?);
    map.insert(spec.clone(), s.clone());
    Ok(s)
}

/// The socket path `tmux` would use for `spec`.
pub fn resolve_socket(spec: &ServerSpec) -> Result<PathBuf, TmuxError> {
    if let Some(p) = &spec.socket_path {
        return Ok(p.clone());
    }
    let uid = current_uid();
    let dir = || {
        let base = std::env::var_os("TMUX_TMPDIR")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("/tmp"));
        base.join(format!("tmux-{uid}"))
    };
    if let Some(name) = &spec.socket_name {
        if name.is_empty() || name.contains('/') {
            return Err(TmuxError::Invalid(format!(
                "socket_name {name:?} must be a plain name (use socket_path for a path)"
            )));
        }
        return Ok(dir().join(name));
    }
    if let Some(t) = std::env::var_os("TMUX") {
        let t = t.to_string_lossy();
        if let Some(path) = t.split(',').next().filter(|p| !p.is_empty()) {
            return Ok(PathBuf::from(path));
        }
    }
    Ok(dir().join("default"))
}

fn current_uid() -> u32 {
    // The real uid from /proc (the crate denies unsafe code, so no getuid()).
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Uid:"))
                .and_then(|rest| rest.split_whitespace().next().map(str::to_owned))
        })
        .and_then(|u| u.parse().ok())
        .unwrap_or(0)
}
