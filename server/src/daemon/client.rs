//! The client's side of a daemon connection (`serve`, `status`, `stop`):
//! find a daemon of this build, start one when none answers, make a
//! request.
//!
//! A daemon of another version or build is never used: [`find`] says so
//! on stderr and looks at this build's own socket instead.

use std::fs::OpenOptions;
use std::io::BufReader;
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::bind::read_hello;
use super::place;
use super::wire::{self, Answer, Hello, Request};

/// How long a started daemon has to answer.
const START_WAIT: Duration = Duration::from_secs(10);
/// The daemon's log, in its runtime directory.
pub const LOG: &str = "daemon.log";

/// A connection to a daemon of this build, past its hello.
#[derive(Debug)]
pub struct Connected {
    /// Reading side (buffered; nothing after the hello consumed).
    pub reader: BufReader<UnixStream>,
    /// Writing side.
    pub writer: UnixStream,
}

impl Connected {
    /// Sends `request` and reads the daemon's answer.
    pub fn request(&mut self, request: &Request) -> Result<Answer, String> {
        wire::send(&mut self.writer, request).map_err(|e| format!("daemon: {e}"))?;
        wire::receive::<Answer>(&mut self.reader)
    }
}

/// Connects to `socket` if a daemon of build `build` answers there;
/// `Err` carries the hello of a daemon of another build.
fn try_socket(socket: &Path, build: &str) -> Option<Result<Connected, Hello>> {
    let stream = UnixStream::connect(socket).ok()?;
    let writer = stream.try_clone().ok()?;
    let (hello, reader) = read_hello(stream).ok()?;
    if hello.build != build || hello.panescan_daemon != super::VERSION {
        return Some(Err(hello));
    }
    Some(Ok(Connected { reader, writer }))
}

/// A daemon of this build in `dir`, at the shared socket or at this
/// build's own; `quiet` leaves another build's daemon unmentioned.
pub fn find(dir: &Path, build: &str, quiet: bool) -> Option<Connected> {
    let default = place::default_socket(dir);
    match try_socket(&default, build) {
        Some(Ok(conn)) => return Some(conn),
        Some(Err(other)) if !quiet => eprintln!(
            "panescan: the daemon at {} is panescan {} (build {}), not this build ({}, build {build}): using one of this build at {}",
            default.display(),
            other.panescan_daemon,
            other.build,
            super::VERSION,
            place::build_socket(dir, build).display()
        ),
        _ => {}
    }
    match try_socket(&place::build_socket(dir, build), build) {
        Some(Ok(conn)) => Some(conn),
        _ => None,
    }
}

/// A daemon of this build in `dir`, started with `start` (the daemon
/// command, detached here) when none answers. Two clients starting one at
/// once end with one daemon: the second daemon finds the first under the
/// start lock and exits.
pub fn find_or_start(dir: &Path, build: &str, mut start: Command) -> Result<Connected, String> {
    place::ensure_private_dir(dir)?;
    if let Some(conn) = find(dir, build, false) {
        return Ok(conn);
    }
    let log_path = dir.join(LOG);
    let log = OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(&log_path)
        .map_err(|e| format!("cannot open {}: {e}", log_path.display()))?;
    let mut child = start
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log)
        // Its own process group: the terminal's ^C is not for it.
        .process_group(0)
        .spawn()
        .map_err(|e| format!("cannot start the daemon: {e}"))?;
    let until = Instant::now() + START_WAIT;
    let mut exited = None;
    loop {
        if let Some(conn) = find(dir, build, true) {
            // Reap it whenever it ends, so no zombie stays behind us.
            std::thread::spawn(move || child.wait());
            return Ok(conn);
        }
        if exited.is_none() {
            exited = child.try_wait().ok().flatten();
        }
        // 3: another daemon of this build won the race; wait for it.
        if let Some(status) = exited.filter(|s| s.code() != Some(3)) {
            return Err(format!(
                "the daemon exited ({status}) before answering; see {}",
                log_path.display()
            ));
        }
        if Instant::now() >= until {
            return Err(format!(
                "the daemon did not answer within {} s; see {}",
                START_WAIT.as_secs(),
                log_path.display()
            ));
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}
