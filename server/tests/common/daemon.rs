//! A private runtime directory for the daemon tests: `serve`s that use
//! the daemon in it, its status, and on drop every daemon in it stopped
//! (`panescan stop`, then SIGKILL for any left) and the directory removed,
//! also when the test fails.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use panescan::testing::private_server::PrivateServer;

use super::{Serve, TempDir};

/// A private runtime directory (made by the daemon, 0700) and its daemons.
pub struct Place {
    temp: TempDir,
}

impl Place {
    pub fn new(label: &str) -> Place {
        Place {
            temp: TempDir::new(&format!("daemon-{label}")),
        }
    }

    /// The test's own directory, which holds the runtime directory.
    pub fn temp_root(&self) -> PathBuf {
        self.temp.0.clone()
    }

    /// The runtime directory (not made until a daemon or serve makes it).
    pub fn dir(&self) -> PathBuf {
        self.temp.0.join("rt")
    }

    /// Where serve's standard error goes.
    pub fn log(&self, name: &str) -> PathBuf {
        self.temp.0.join(format!("{name}.stderr"))
    }

    /// `panescan serve -L SOCKET ARGS` through the daemon in this place;
    /// its stderr in [`Self::log`]`(name)`.
    pub fn serve(&self, name: &str, socket_name: &str, args: &[&str]) -> Serve {
        self.serve_with_env(name, socket_name, args, &[])
    }

    /// [`Self::serve`] with `envs` in serve's environment.
    pub fn serve_with_env(
        &self,
        name: &str,
        socket_name: &str,
        args: &[&str],
        envs: &[(&str, &str)],
    ) -> Serve {
        let mut all = vec!["serve", "--socket-name", socket_name];
        all.extend_from_slice(args);
        let dir = self.dir();
        let stderr = std::fs::File::create(self.log(name)).expect("stderr file");
        let mut env = vec![("PANESCAN_RUNTIME_DIR", dir.to_str().expect("utf-8 dir"))];
        env.extend_from_slice(envs);
        Serve::spawn_logged(&all, &env, &["PANESCAN_NO_DAEMON"], Stdio::from(stderr))
    }

    /// `panescan ARGS --runtime-dir DIR`, run to its end.
    pub fn run(&self, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_panescan"))
            .args(args)
            .arg("--runtime-dir")
            .arg(self.dir())
            .env_remove("TMUX")
            .env_remove("PANESCAN_NO_DAEMON")
            .stdin(Stdio::null())
            .output()
            .expect("panescan runs")
    }

    /// `panescan status` as JSON (panics when no daemon answers).
    pub fn status(&self) -> Value {
        let out = self.run(&["status"]);
        assert!(
            out.status.success(),
            "status: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).expect("status is JSON")
    }

    /// Processes of `panescan daemon` for this directory.
    pub fn daemons(&self) -> Vec<u32> {
        daemons_in(&self.dir())
    }

    /// The daemon log's text.
    pub fn daemon_log(&self) -> String {
        std::fs::read_to_string(self.dir().join("daemon.log")).unwrap_or_default()
    }

    /// `panescan daemon ARGS` started in the foreground on this directory,
    /// once its socket is there (stopped with the place if the test fails).
    pub fn start_daemon(&self, args: &[&str]) -> std::process::Child {
        let daemon = Command::new(env!("CARGO_BIN_EXE_panescan"))
            .arg("daemon")
            .args(args)
            .arg("--runtime-dir")
            .arg(self.dir())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        assert!(
            super::eventually(Duration::from_secs(10), || self
                .dir()
                .join("panescan.sock")
                .exists()),
            "the daemon made no socket"
        );
        daemon
    }

    /// Waits until no daemon of this directory runs; whether none does.
    pub fn wait_no_daemon(&self, timeout: Duration) -> bool {
        let until = Instant::now() + timeout;
        while Instant::now() < until {
            if self.daemons().is_empty() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        self.daemons().is_empty()
    }
}

impl Drop for Place {
    fn drop(&mut self) {
        if self.daemons().is_empty() {
            return;
        }
        let _ = self.run(&["stop"]);
        if !self.wait_no_daemon(Duration::from_secs(5)) {
            for pid in self.daemons() {
                let _ = Command::new("kill")
                    .args(["-KILL", &pid.to_string()])
                    .status();
            }
        }
    }
}

/// The pids whose command line is `panescan ... daemon ... --runtime-dir DIR`.
pub fn daemons_in(dir: &Path) -> Vec<u32> {
    let want = dir.as_os_str().as_encoded_bytes();
    let mut pids = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse().ok()) else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let args: Vec<&[u8]> = cmdline.split(|b| *b == 0).collect();
        let is_daemon = args.iter().any(|a| *a == b"daemon");
        let here = args
            .windows(2)
            .any(|w| w[0] == b"--runtime-dir" && w[1] == want);
        let zombie = std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|s| s.rsplit(") ").next().map(|r| r.starts_with('Z')))
            .unwrap_or(true);
        if is_daemon && here && !zombie {
            pids.push(pid);
        }
    }
    pids
}

/// `TMUX` as a shell in a pane of `tmux` has it: the caller a serve
/// started there sends its daemon.
pub fn tmux_env(tmux: &PrivateServer) -> String {
    format!(
        "{},{},0",
        tmux.socket_path().unwrap().display(),
        tmux.pid().unwrap()
    )
}
