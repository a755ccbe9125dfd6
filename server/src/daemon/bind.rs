//! Which socket a starting daemon listens on, decided under the start
//! lock so that two daemons starting at once end as one.
//!
//! Under the lock: [`place::SOCKET`] when no daemon answers there (a file
//! left by a killed daemon is stale: connecting is refused, so it is
//! removed and replaced); when a daemon of another build answers there,
//! this build's own socket ([`place::build_socket`]) by the same rule; a
//! daemon of this build already answering means this one is not needed.

use std::fs::{self, File, OpenOptions};
use std::io::{BufReader, ErrorKind};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::place;
use super::wire::{self, Hello};

/// How long a daemon found at a socket has to say hello.
const HELLO_WAIT: Duration = Duration::from_secs(3);

/// What a socket holds.
#[derive(Debug)]
pub enum Found {
    /// Nothing answers (no file, or a stale one).
    Nothing,
    /// A daemon, which said this.
    Daemon(Hello),
    /// Something that accepts connections but did not say hello.
    Stranger(String),
}

/// Connects to `socket` and reads the daemon's hello.
pub fn probe(socket: &Path) -> Found {
    match UnixStream::connect(socket) {
        Ok(stream) => match read_hello(stream) {
            Ok((hello, _)) => Found::Daemon(hello),
            Err(e) => Found::Stranger(e),
        },
        Err(_) => Found::Nothing,
    }
}

/// The hello on a fresh connection, and the connection (buffered, with
/// nothing after the hello consumed).
pub fn read_hello(stream: UnixStream) -> Result<(Hello, BufReader<UnixStream>), String> {
    stream
        .set_read_timeout(Some(HELLO_WAIT))
        .map_err(|e| e.to_string())?;
    let mut reader = BufReader::new(stream);
    let hello = wire::receive::<Hello>(&mut reader)?;
    reader
        .get_ref()
        .set_read_timeout(None)
        .map_err(|e| e.to_string())?;
    Ok((hello, reader))
}

/// The start lock, held until dropped.
#[derive(Debug)]
pub struct StartLock {
    _file: File,
}

/// Takes the start lock of `dir` (waits for another starting daemon).
pub fn lock(dir: &Path) -> Result<StartLock, String> {
    let path = place::lock_path(dir);
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .mode(0o600)
        .open(&path)
        .map_err(|e| format!("cannot open {}: {e}", path.display()))?;
    rustix::fs::flock(&file, rustix::fs::FlockOperation::LockExclusive)
        .map_err(|e| format!("cannot lock {}: {e}", path.display()))?;
    Ok(StartLock { _file: file })
}

/// Why no socket was bound.
#[derive(Debug)]
pub enum NotBound {
    /// A daemon of this build already answers at this socket.
    Running(PathBuf, Hello),
    /// Something went wrong.
    Failed(String),
}

/// Binds this build's socket in `dir` (call with the start lock held):
/// the listener and its path.
pub fn bind(dir: &Path, build: &str) -> Result<(UnixListener, PathBuf), NotBound> {
    let default = place::default_socket(dir);
    let socket = match probe(&default) {
        Found::Nothing => default,
        Found::Daemon(hello) if hello.build == build => {
            return Err(NotBound::Running(default, hello))
        }
        Found::Daemon(_) | Found::Stranger(_) => {
            let own = place::build_socket(dir, build);
            match probe(&own) {
                Found::Nothing => own,
                Found::Daemon(hello) => return Err(NotBound::Running(own, hello)),
                Found::Stranger(e) => {
                    return Err(NotBound::Failed(format!(
                        "{} answers but is no panescan daemon: {e}",
                        own.display()
                    )))
                }
            }
        }
    };
    // A file nothing answers at is a killed daemon's: replace it.
    match fs::remove_file(&socket) {
        Ok(()) => eprintln!(
            "panescan daemon: replaced the stale socket {}",
            socket.display()
        ),
        Err(e) if e.kind() == ErrorKind::NotFound => {}
        Err(e) => {
            return Err(NotBound::Failed(format!(
                "cannot remove the stale socket {}: {e}",
                socket.display()
            )))
        }
    }
    let listener = UnixListener::bind(&socket)
        .map_err(|e| NotBound::Failed(format!("cannot listen on {}: {e}", socket.display())))?;
    // The directory already keeps others out; the socket says so too.
    fs::set_permissions(&socket, fs::Permissions::from_mode(0o600)).map_err(|e| {
        NotBound::Failed(format!("cannot set the mode of {}: {e}", socket.display()))
    })?;
    Ok((listener, socket))
}
