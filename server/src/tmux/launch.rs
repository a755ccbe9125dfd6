//! Where a tmux client runs: on this machine (`tmux -S SOCKET`, in the
//! client environment of [`super::client_env`]) or on a configured host
//! (`ssh ... HOST 'exec' 'tmux' '-u' ['-L' NAME] ...`, [`super::ssh`]).
//! Every tmux process panescan starts for a server is built here, so a
//! command, the control client and a capture sweep reach a remote server
//! the same way they reach a local one.
//!
//! A remote server is named by its host and, optionally, a socket name
//! (`-L`) in the remote user's tmux directory; panescan cannot look at a
//! remote socket, so a path is never sent. `-u` keeps the remote client in
//! UTF-8 whatever the remote locale is.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;

use super::ssh::Host;
use super::{ServerSpec, TmuxError};

/// The server a handle's clients reach, and how.
#[derive(Debug, Clone)]
pub struct Endpoint {
    /// The local socket; for a remote server a name that no local socket
    /// can have (`ssh://HOST/NAME`), which keys caches and cursors.
    socket: PathBuf,
    remote: Option<Remote>,
}

#[derive(Debug, Clone)]
struct Remote {
    host: Arc<Host>,
    socket_name: Option<String>,
}

impl Endpoint {
    /// The local server listening on `socket`.
    pub fn local(socket: PathBuf) -> Endpoint {
        Endpoint {
            socket,
            remote: None,
        }
    }

    /// The server `spec` names: on its host when it names one (which must
    /// be configured), else here.
    pub fn for_spec(spec: &ServerSpec) -> Result<Endpoint, TmuxError> {
        let Some(name) = spec.host.as_deref() else {
            return super::paths::resolve_socket(spec).map(Endpoint::local);
        };
        let host = super::ssh::host(name).ok_or_else(|| {
            TmuxError::Refused(format!(
                "host {name:?} is not one the operator configured with --ssh"
            ))
        })?;
        if spec.socket_path.is_some() {
            return Err(TmuxError::Refused(format!(
                "socket_path cannot be used on host {name}: name the server with socket_name"
            )));
        }
        if let Some(n) = &spec.socket_name {
            if n.is_empty() || n.contains('/') || n.contains('\0') {
                return Err(TmuxError::Invalid(format!(
                    "socket_name {n:?} must be a plain name"
                )));
            }
        }
        let socket = PathBuf::from(format!(
            "ssh://{}/{}",
            host.id(),
            spec.socket_name.as_deref().unwrap_or("default")
        ));
        Ok(Endpoint {
            socket,
            remote: Some(Remote {
                host,
                socket_name: spec.socket_name.clone(),
            }),
        })
    }

    /// The local socket path (a remote server: see the field).
    pub fn path(&self) -> &Path {
        &self.socket
    }

    /// The host, for a remote server.
    pub fn host(&self) -> Option<&Arc<Host>> {
        self.remote.as_ref().map(|r| &r.host)
    }

    /// How errors name the server.
    pub fn label(&self) -> String {
        match &self.remote {
            None => self.socket.display().to_string(),
            Some(r) => match &r.socket_name {
                Some(n) => format!("host {} (socket_name {n})", r.host.name()),
                None => format!("host {} (its default server)", r.host.name()),
            },
        }
    }

    /// A tmux client with `args`, stdin null (callers may pipe it).
    pub fn tmux<S: AsRef<OsStr>>(&self, args: &[S]) -> Result<Command, TmuxError> {
        let Some(remote) = &self.remote else {
            let mut cmd = Command::new(super::binary::program());
            super::client_env::apply(&mut cmd)
                .arg("-S")
                .arg(&self.socket)
                .args(args)
                .stdin(Stdio::null());
            return Ok(cmd);
        };
        let mut words: Vec<&str> = vec!["tmux", "-u"];
        if let Some(n) = &remote.socket_name {
            words.extend(["-L", n.as_str()]);
        }
        for a in args {
            words.push(a.as_ref().to_str().ok_or_else(|| {
                TmuxError::Invalid("an argument for a remote tmux is not UTF-8".into())
            })?);
        }
        remote.host.command(&words)
    }

    /// On a remote server, its host's version check and then the tmux
    /// client `args` in one exchange (`Host::check_version_then`):
    /// `args`' output, or its error; `None` on this machine.
    pub(crate) fn check_version_then(
        &self,
        args: &[&str],
        deadline: std::time::Instant,
    ) -> Option<Result<Result<String, TmuxError>, TmuxError>> {
        let remote = self.remote.as_ref()?;
        let mut words: Vec<&str> = vec!["tmux", "-u"];
        if let Some(n) = &remote.socket_name {
            words.extend(["-L", n.as_str()]);
        }
        words.extend_from_slice(args);
        let checked = remote.host.check_version_then(&words, deadline);
        Some(checked.map(|(_, then)| match then {
            Some(done) if done.success => Ok(String::from_utf8_lossy(&done.stdout).into_owned()),
            Some(done) => Err(self.client_error(&done.stderr, done.code)),
            None => Ok(String::new()),
        }))
    }

    /// Maps a failed client's stderr (and exit code, when known) to an
    /// error: ssh's own failures (code 255) name the host.
    pub fn client_error(&self, stderr: &str, code: Option<i32>) -> TmuxError {
        if let Some(r) = &self.remote {
            if code == Some(255) {
                return r.host.unreachable(stderr);
            }
            if code == Some(127) {
                return r
                    .host
                    .unreachable(&format!("no tmux on this host ({})", stderr.trim()));
            }
        }
        super::process::client_error(&self.label(), stderr)
    }
}
