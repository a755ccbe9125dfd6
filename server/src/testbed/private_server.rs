//! A private tmux server that panescan starts itself and always kills.
//!
//! `panescan demo`, `panescan bench` and every test that touches tmux use
//! one of these: a server on its own socket name (`tmux -L NAME`) with an
//! empty configuration file, so the user's default server and their
//! `~/.tmux.conf` are never involved. Dropping the value kills the server,
//! also when a test fails or a command is interrupted.
//!
//! Killing cannot hang: a server that was stopped (SIGSTOP, to play a tmux
//! that stops answering) never reads `kill-server`, so the known pid is
//! continued first, `kill-server` gets a time limit, and a server still
//! there after a grace period is killed outright. [`PrivateServer::stop`]
//! hands out a guard that continues the server when dropped, also when a
//! test panics while tmux is stopped.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::tmux::client_env::utf8_locale;

/// How long `kill-server` may take before its client is abandoned (the
/// server is then killed by pid).
const KILL_SERVER_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a server may take to exit after `kill-server` before SIGKILL.
const EXIT_GRACE: Duration = Duration::from_secs(2);

/// A tmux server on a unique socket name, killed on drop.
#[derive(Debug)]
pub struct PrivateServer {
    socket_name: String,
    config: PathBuf,
    /// `TMUX_TMPDIR` of every command aimed at it (`None`: as inherited).
    tmux_tmpdir: Option<PathBuf>,
    /// Learnt at start; tmux leaves its socket file behind when killed.
    socket_path: Option<PathBuf>,
    /// The server's pid, learnt at start, to make sure it is gone on drop.
    pid: Option<u32>,
    /// The tmux program of every command aimed at it (`None`: the
    /// process's, `tmux::binary::program`).
    program: Option<PathBuf>,
}

/// A socket name no other private server has: `label` (so a leftover
/// server says who made it), the pid, a counter and the time.
pub fn unique_name(label: &str) -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let label: String = label
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .take(24)
        .collect();
    format!(
        "panescan-{label}-{}-{}-{nanos:x}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    )
}

/// Why a private server could not be used.
#[derive(Debug)]
pub struct PrivateServerError(pub String);

impl std::fmt::Display for PrivateServerError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for PrivateServerError {}

impl PrivateServer {
    /// Starts a server with one detached session `main` of the given size.
    ///
    /// `label` goes into the socket name so a leftover server (after a
    /// SIGKILL) says who made it.
    pub fn start(label: &str, width: u16, height: u16) -> Result<Self, PrivateServerError> {
        Self::start_under(label, width, height, None)
    }

    /// [`PrivateServer::start`] with another tmux program than the
    /// process's (a tmux client talks only to a server of its own
    /// version, so every command aimed at it runs `program`).
    pub fn start_with(
        label: &str,
        width: u16,
        height: u16,
        program: &Path,
    ) -> Result<Self, PrivateServerError> {
        Self::start_as(unique_name(label), (width, height), None, Some(program))
    }

    /// [`PrivateServer::start`] with its socket under `tmux_tmpdir`
    /// (`TMUX_TMPDIR/tmux-UID/NAME`) instead of the inherited directory, so
    /// a test can own every socket a program it runs might look at.
    pub fn start_under(
        label: &str,
        width: u16,
        height: u16,
        tmux_tmpdir: Option<&Path>,
    ) -> Result<Self, PrivateServerError> {
        Self::start_as(unique_name(label), (width, height), tmux_tmpdir, None)
    }

    /// [`PrivateServer::start_under`] on `socket_name` (from
    /// [`unique_name`]): a test names a server before it starts, or starts
    /// one again on the socket of one it killed.
    pub fn start_named(
        socket_name: String,
        width: u16,
        height: u16,
        tmux_tmpdir: Option<&Path>,
    ) -> Result<Self, PrivateServerError> {
        Self::start_as(socket_name, (width, height), tmux_tmpdir, None)
    }

    fn start_as(
        socket_name: String,
        (width, height): (u16, u16),
        tmux_tmpdir: Option<&Path>,
        program: Option<&Path>,
    ) -> Result<Self, PrivateServerError> {
        let config = std::env::temp_dir().join(format!("{socket_name}.conf"));
        std::fs::write(&config, b"")
            .map_err(|e| PrivateServerError(format!("cannot write {}: {e}", config.display())))?;
        let mut server = PrivateServer {
            socket_name,
            config,
            tmux_tmpdir: tmux_tmpdir.map(Path::to_path_buf),
            socket_path: None,
            pid: None,
            program: program.map(Path::to_path_buf),
        };
        let (w, h) = (width.to_string(), height.to_string());
        server.run_ok(["new-session", "-d", "-s", "main", "-x", &w, "-y", &h])?;
        server.socket_path = Some(server.socket_path()?);
        server.pid = server.pid().ok();
        if let Ok(mut live) = LIVE.lock() {
            live.push((
                server.socket_name.clone(),
                server.tmux_tmpdir.clone(),
                server.pid,
                server.program.clone(),
            ));
        }
        Ok(server)
    }

    /// The `-L` socket name of this server.
    pub fn socket_name(&self) -> &str {
        &self.socket_name
    }

    /// The socket path tmux uses for this server.
    pub fn socket_path(&self) -> Result<PathBuf, PrivateServerError> {
        let out = self.run_ok(["display-message", "-p", "#{socket_path}"])?;
        Ok(PathBuf::from(out.trim_end_matches('\n')))
    }

    /// The tmux server's process id.
    pub fn pid(&self) -> Result<u32, PrivateServerError> {
        let out = self.run_ok(["display-message", "-p", "#{pid}"])?;
        out.trim()
            .parse()
            .map_err(|_| PrivateServerError(format!("tmux printed no pid: {out:?}")))
    }

    /// A `tmux` command aimed at this server (`-L NAME -f EMPTY`), in a UTF-8
    /// locale, with the caller's `TMUX` removed so tmux never refuses to
    /// nest.
    pub fn command(&self) -> Command {
        let program = self
            .program
            .as_deref()
            .unwrap_or_else(|| crate::tmux::binary::program());
        let mut cmd = Command::new(program);
        cmd.arg("-L")
            .arg(&self.socket_name)
            .arg("-f")
            .arg(&self.config)
            .env_remove("TMUX")
            .env_remove("TMUX_PANE")
            .env("LC_ALL", utf8_locale())
            .stdin(Stdio::null());
        if let Some(dir) = &self.tmux_tmpdir {
            cmd.env("TMUX_TMPDIR", dir);
        }
        cmd
    }

    /// Runs one tmux command and returns its raw output.
    pub fn run<I, S>(&self, args: I) -> Result<Output, PrivateServerError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.command()
            .args(args)
            .output()
            .map_err(|e| PrivateServerError(format!("cannot run tmux: {e}")))
    }

    /// Runs one tmux command; a non-zero exit is an error carrying stderr.
    pub fn run_ok<I, S>(&self, args: I) -> Result<String, PrivateServerError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let out = self.run(args)?;
        if !out.status.success() {
            return Err(PrivateServerError(format!(
                "tmux failed ({}): {}",
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            )));
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// Feeds a script to `tmux source-file -`: one process for any number of
    /// commands, each line on its own (a failing line does not stop the rest).
    pub fn source(&self, script: &str) -> Result<(), PrivateServerError> {
        use std::io::Write;
        let mut child = self
            .command()
            .args(["source-file", "-"])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| PrivateServerError(format!("cannot run tmux: {e}")))?;
        if let Some(mut stdin) = child.stdin.take() {
            stdin
                .write_all(script.as_bytes())
                .map_err(|e| PrivateServerError(format!("cannot write to tmux: {e}")))?;
        }
        let out = child
            .wait_with_output()
            .map_err(|e| PrivateServerError(format!("tmux source-file failed: {e}")))?;
        if !out.status.success() {
            return Err(PrivateServerError(format!(
                "tmux source-file failed: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            )));
        }
        Ok(())
    }

    /// Kills the server now (also done on drop). Never blocks for long: a
    /// stopped server is continued first, and `kill-server` is abandoned
    /// after [`KILL_SERVER_TIMEOUT`].
    pub fn kill(&self) {
        let pid = self.pid.filter(|&pid| self.owns(pid));
        if let Some(pid) = pid {
            let _ = signal(pid, "CONT");
        }
        kill_server(self.command(), KILL_SERVER_TIMEOUT);
        // kill-server returns before the server has exited: a command sent
        // meanwhile reaches the dying server ("server exited
        // unexpectedly") instead of starting a new one.
        let until = Instant::now() + KILL_SERVER_TIMEOUT;
        while let Some(pid) = pid {
            // A zombie's command line is empty: it no longer counts.
            if !self.owns(pid) || Instant::now() >= until {
                break;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    /// Stops the server process (SIGSTOP), as a tmux that stops answering,
    /// and returns once it is stopped. It runs again when the returned
    /// guard is dropped, so a failing test cannot leave it stopped.
    pub fn stop(&self) -> Result<Stopped<'_>, PrivateServerError> {
        let pid = self
            .pid
            .ok_or_else(|| PrivateServerError("the server's pid is not known".into()))?;
        if !signal(pid, "STOP") {
            return Err(PrivateServerError(format!("cannot stop tmux server {pid}")));
        }
        // Built before waiting, so an error below still continues tmux.
        let stopped = Stopped { server: self, pid };
        // The signal is delivered asynchronously: wait until it took.
        let until = Instant::now() + KILL_SERVER_TIMEOUT;
        while process_state(pid) != Some('T') {
            if Instant::now() >= until {
                return Err(PrivateServerError(format!(
                    "tmux server {pid} did not stop"
                )));
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        Ok(stopped)
    }

    /// Whether `pid` is still this server's process (its command line names
    /// our unique socket), so a reused pid is never signalled.
    fn owns(&self, pid: u32) -> bool {
        std::fs::read(format!("/proc/{pid}/cmdline"))
            .map(|c| {
                c.windows(self.socket_name.len())
                    .any(|w| w == self.socket_name.as_bytes())
            })
            .unwrap_or(false)
    }

    /// The empty configuration file the server was started with.
    pub fn config_path(&self) -> &Path {
        &self.config
    }
}

/// A stopped private server (see [`PrivateServer::stop`]); dropping it
/// continues the server.
#[derive(Debug)]
#[must_use = "the server runs again as soon as the guard is dropped"]
pub struct Stopped<'a> {
    server: &'a PrivateServer,
    pid: u32,
}

impl Stopped<'_> {
    /// Lets the server run again now (the same as dropping the guard).
    pub fn resume(self) {}
}

impl Drop for Stopped<'_> {
    fn drop(&mut self) {
        if self.server.owns(self.pid) {
            let _ = signal(self.pid, "CONT");
        }
    }
}

/// The state letter of process `pid` in `/proc` (`T` when stopped).
pub fn process_state(pid: u32) -> Option<char> {
    let stat = std::fs::read(format!("/proc/{pid}/stat")).ok()?;
    crate::tmux::procfs::parse_stat(&stat).map(|s| char::from(s.state))
}

/// Sends `sig` (a name such as `CONT`) to `pid`; whether it was delivered.
fn signal(pid: u32, sig: &str) -> bool {
    Command::new("kill")
        .arg(format!("-{sig}"))
        .arg(pid.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Runs `tmux ... kill-server` through `cmd`, abandoning (killing) the
/// client if it has not finished within `timeout`.
fn kill_server(mut cmd: Command, timeout: Duration) {
    let child = cmd
        .arg("kill-server")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn();
    let Ok(mut child) = child else { return };
    let until = Instant::now() + timeout;
    while Instant::now() < until {
        match child.try_wait() {
            Ok(None) => std::thread::sleep(Duration::from_millis(5)),
            Ok(Some(_)) | Err(_) => return,
        }
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// A private server this process started and has not dropped yet.
type Live = (String, Option<PathBuf>, Option<u32>, Option<PathBuf>);

/// Socket names, `TMUX_TMPDIR` and pids (when known) of the private servers
/// this process started and has not dropped yet, so a signal handler can
/// kill them before exiting ([`kill_all_live`]).
static LIVE: Mutex<Vec<Live>> = Mutex::new(Vec::new());

/// Kills every private server this process still has running. For
/// SIGINT/SIGTERM handlers: exiting from a signal runs no destructor.
fn kill_all_live() {
    let names = std::mem::take(&mut *crate::sync::lock(&LIVE));
    for (name, tmux_tmpdir, pid, program) in names {
        if let Some(pid) = pid {
            let _ = signal(pid, "CONT");
        }
        let program = program.unwrap_or_else(|| crate::tmux::binary::program().to_path_buf());
        let mut cmd = Command::new(program);
        if let Some(dir) = tmux_tmpdir {
            cmd.env("TMUX_TMPDIR", dir);
        }
        cmd.args(["-L", &name]).env_remove("TMUX");
        kill_server(cmd, KILL_SERVER_TIMEOUT);
    }
}

/// Kills this process's private servers and exits with status 130 on
/// SIGINT or SIGTERM, for commands (demo, bench) that start servers.
pub fn kill_on_interrupt() {
    use signal_hook::consts::{SIGINT, SIGTERM};
    let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGINT, SIGTERM]) else {
        return;
    };
    let _ = std::thread::Builder::new()
        .name("interrupt".into())
        .spawn(move || {
            if signals.forever().next().is_some() {
                kill_all_live();
                eprintln!("\ninterrupted: private tmux server killed");
                std::process::exit(130);
            }
        });
}

impl PrivateServer {
    /// Waits for the server process to be gone after `kill-server`; if it
    /// is still there after a grace period, kills it (it is ours: its command
    /// line names our unique socket).
    ///
    /// Needed because tmux 3.3 does not exit while a control client it
    /// shuts down still has output queued: if the process that read that
    /// client's output is gone (a test binary exiting right after its
    /// servers are dropped), the server and the client wait forever.
    fn make_sure_dead(&self) {
        let Some(pid) = self.pid else { return };
        let until = Instant::now() + EXIT_GRACE;
        while self.owns(pid) && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(10));
        }
        if self.owns(pid) {
            let _ = signal(pid, "KILL");
        }
    }
}

impl Drop for PrivateServer {
    fn drop(&mut self) {
        if let Ok(mut live) = LIVE.lock() {
            live.retain(|(n, _, _, _)| n != &self.socket_name);
        }
        self.kill();
        self.make_sure_dead();
        let _ = std::fs::remove_file(&self.config);
        if let Some(path) = &self.socket_path {
            let _ = std::fs::remove_file(path);
        }
    }
}
