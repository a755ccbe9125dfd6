//! A private tmux server that panescan starts itself and always kills.
//!
//! `panescan demo`, `panescan bench` and every test that touches tmux use
//! one of these: a server on its own socket name (`tmux -L NAME`) with an
//! empty configuration file, so the user's default server and their
//! `~/.tmux.conf` are never involved. Dropping the value kills the server,
//! also when a test fails or a command is interrupted.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

/// A tmux server on a unique socket name, killed on drop.
#[derive(Debug)]
pub struct PrivateServer {
    socket_name: String,
    config: PathBuf,
    /// Learnt at start; tmux leaves its socket file behind when killed.
    socket_path: Option<PathBuf>,
    /// The server's pid, learnt at start, to make sure it is gone on drop.
    pid: Option<u32>,
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
        let socket_name = format!(
            "panescan-{label}-{}-{}-{nanos:x}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        );
        let config = std::env::temp_dir().join(format!("{socket_name}.conf"));
        std::fs::write(&config, b"")
            .map_err(|e| PrivateServerError(format!("cannot write {}: {e}", config.display())))?;
        let mut server = PrivateServer {
            socket_name,
            config,
            socket_path: None,
            pid: None,
        };
        let (w, h) = (width.to_string(), height.to_string());
        server.run_ok(["new-session", "-d", "-s", "main", "-x", &w, "-y", &h])?;
        server.socket_path = Some(server.socket_path()?);
        if let Ok(mut live) = LIVE.lock() {
            live.push(server.socket_name.clone());
        }
        server.pid = server.pid().ok();
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
        let mut cmd = Command::new(super::binary::program());
        cmd.arg("-L")
            .arg(&self.socket_name)
            .arg("-f")
            .arg(&self.config)
            .env_remove("TMUX")
            .env_remove("TMUX_PANE")
            .env("LC_ALL", utf8_locale())
            .stdin(Stdio::null());
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

    /// Kills the server now (also done on drop).
    pub fn kill(&self) {
        let _ = self.run(["kill-server"]);
    }

    /// The empty configuration file the server was started with.
    pub fn config_path(&self) -> &Path {
        &self.config
    }
}

/// Socket names of the private servers this process started and has not
/// dropped yet, so a signal handler can kill them before exiting
/// ([`kill_all_live`]).
static LIVE: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// Kills every private server this process still has running. For
/// SIGINT/SIGTERM handlers: exiting from a signal runs no destructor.
pub fn kill_all_live() {
    let names = match LIVE.lock() {
        Ok(mut live) => std::mem::take(&mut *live),
        Err(poisoned) => std::mem::take(&mut *poisoned.into_inner()),
    };
    for name in names {
        let _ = Command::new(super::binary::program())
            .args(["-L", &name, "kill-server"])
            .env_remove("TMUX")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
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
        let proc_dir = PathBuf::from(format!("/proc/{pid}"));
        let ours = || {
            std::fs::read(proc_dir.join("cmdline"))
                .map(|c| {
                    c.windows(self.socket_name.len())
                        .any(|w| w == self.socket_name.as_bytes())
                })
                .unwrap_or(false)
        };
        let until = std::time::Instant::now() + std::time::Duration::from_secs(2);
        while ours() && std::time::Instant::now() < until {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        if ours() {
            let _ = Command::new("kill")
                .arg("-KILL")
                .arg(pid.to_string())
                .stderr(Stdio::null())
                .status();
        }
    }
}

impl Drop for PrivateServer {
    fn drop(&mut self) {
        if let Ok(mut live) = LIVE.lock() {
            live.retain(|n| n != &self.socket_name);
        }
        self.kill();
        self.make_sure_dead();
        let _ = std::fs::remove_file(&self.config);
        if let Some(path) = &self.socket_path {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// A UTF-8 locale name for tmux: without one, tmux replaces non-ASCII in
/// formats with `_`. `C.UTF-8` exists on every glibc since 2.35 and on
/// Debian for longer.
pub fn utf8_locale() -> &'static str {
    "C.UTF-8"
}
