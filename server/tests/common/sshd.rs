//! A real OpenSSH server for the ssh tests, on 127.0.0.1, made and owned
//! by the test: generated host and client keys, its own sshd_config and
//! port, a known_hosts naming its key, and an ssh config whose `Host`
//! aliases point at it. Each alias may carry its own `TMUX_TMPDIR`
//! (`SetEnv`, which this sshd accepts), so two aliases of one sshd reach
//! two different tmux servers as their default server. Every sshd (and the
//! sessions it forked) is killed on drop, also when the test fails.
//!
//! [`require`] fails a test on a machine without sshd, saying what to
//! install (CI installs openssh-server): a missing prerequisite is a
//! failure to see, never a test that passes without running.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use panescan::testing::private_server::PrivateServer;
use serde_json::Value;

use super::{eventually, Serve, TempDir};

/// The sshd binary.
pub const SSHD: &str = "/usr/sbin/sshd";

/// Fails the calling test unless sshd, ssh and ssh-keygen are here.
pub fn require() {
    assert!(
        available(),
        "{SSHD}, ssh or ssh-keygen is not installed: apt-get install openssh-server openssh-client"
    );
}

/// Whether sshd, ssh and ssh-keygen are here.
fn available() -> bool {
    Path::new(SSHD).exists()
        && ["ssh", "ssh-keygen"].iter().all(|p| {
            Command::new(p)
                .arg("-V")
                .stderr(Stdio::null())
                .stdout(Stdio::null())
                .status()
                .is_ok()
                || Command::new("sh")
                    .args(["-c", &format!("command -v {p}")])
                    .stdout(Stdio::null())
                    .status()
                    .is_ok_and(|s| s.success())
        })
}

/// Keys and files shared by every sshd of a test.
pub struct SshWorld {
    pub dir: TempDir,
    client_key: PathBuf,
    sshds: Vec<Sshd>,
}

/// One sshd.
pub struct Sshd {
    pub port: u16,
    dir: PathBuf,
    child: Option<Child>,
    host_pub: String,
    /// More `NAME=VALUE` pairs for the sessions' `SetEnv` line (sshd
    /// keeps the first `SetEnv` line only).
    set_env: Vec<String>,
}

/// A `Host` alias of the client config.
pub struct Alias<'a> {
    pub name: &'a str,
    /// Which sshd of the world ([`SshWorld::start_sshd`]'s index).
    pub sshd: usize,
    /// The remote tmux's `TMUX_TMPDIR` (`None`: the user's default).
    pub tmux_tmpdir: Option<&'a Path>,
    /// `None`: the client key; `Some(path)`: that key instead (one the
    /// sshd does not know, to make a login fail).
    pub identity: Option<&'a Path>,
}

fn keygen(path: &Path) {
    let ok = Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-C", "panescan-test", "-f"])
        .arg(path)
        .stdin(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "ssh-keygen failed for {}", path.display());
}

fn current_user() -> String {
    let out = Command::new("id").arg("-un").output().unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

impl SshWorld {
    pub fn new(label: &str) -> SshWorld {
        let dir = TempDir::new(&format!("ssh-{label}"));
        let client_key = dir.0.join("client_key");
        keygen(&client_key);
        // sshd's privilege separation directory, made as Debian's init does.
        let _ = std::fs::create_dir_all("/run/sshd");
        SshWorld {
            dir,
            client_key,
            sshds: Vec::new(),
        }
    }

    /// A key no sshd here accepts.
    pub fn stranger_key(&self) -> PathBuf {
        let key = self.dir.0.join("stranger_key");
        if !key.exists() {
            keygen(&key);
        }
        key
    }

    /// Starts another sshd; its index.
    pub fn start_sshd(&mut self) -> usize {
        self.start_sshd_env(&[])
    }

    /// Starts another sshd whose sessions also get `set_env`
    /// (`NAME=VALUE` each, e.g. a `PATH` with another tmux first); its
    /// index.
    pub fn start_sshd_env(&mut self, set_env: &[&str]) -> usize {
        let n = self.sshds.len();
        let dir = self.dir.0.join(format!("sshd{n}"));
        std::fs::create_dir_all(&dir).unwrap();
        keygen(&dir.join("host_key"));
        std::fs::copy(
            self.client_key.with_extension("pub"),
            dir.join("authorized_keys"),
        )
        .unwrap();
        let host_pub = std::fs::read_to_string(dir.join("host_key.pub")).unwrap();
        let mut sshd = Sshd {
            port: 0,
            dir,
            child: None,
            host_pub,
            set_env: with_tests_path(set_env),
        };
        sshd.start();
        self.sshds.push(sshd);
        n
    }

    /// The port sshd `n` listens on.
    pub fn sshd_port(&self, n: usize) -> u16 {
        self.sshds[n].port
    }

    pub fn sshd(&mut self, n: usize) -> &mut Sshd {
        &mut self.sshds[n]
    }

    /// Writes the client config with `aliases`; its path.
    pub fn client_config(&self, aliases: &[Alias]) -> PathBuf {
        let known = self.dir.0.join("known_hosts");
        let mut known_text = String::new();
        let mut text = String::new();
        for a in aliases {
            let sshd = &self.sshds[a.sshd];
            known_text.push_str(&format!("[127.0.0.1]:{} {}", sshd.port, sshd.host_pub));
            let key = a.identity.unwrap_or(&self.client_key);
            text.push_str(&format!(
                "Host {}\n  HostName 127.0.0.1\n  Port {}\n  User {}\n  IdentityFile {}\n  IdentitiesOnly yes\n  UserKnownHostsFile {}\n  StrictHostKeyChecking yes\n  LogLevel ERROR\n",
                a.name,
                sshd.port,
                current_user(),
                key.display(),
                known.display()
            ));
            if let Some(d) = a.tmux_tmpdir {
                text.push_str(&format!("  SetEnv TMUX_TMPDIR={}\n", d.display()));
            }
        }
        std::fs::write(&known, known_text).unwrap();
        let path = self.dir.0.join("ssh_config");
        std::fs::write(&path, text).unwrap();
        path
    }
}

/// `set_env`, with the tests' own `PATH` unless it names one: the remote
/// `tmux` must be the program the tests' servers run (a tmux client of
/// another version finds "server exited unexpectedly"), also when the
/// suite runs with another tmux first on `PATH` (tmux 3.8: NOTES.md).
fn with_tests_path(set_env: &[&str]) -> Vec<String> {
    let mut env: Vec<String> = set_env.iter().map(|v| (*v).to_owned()).collect();
    let path = std::env::var("PATH").unwrap_or_default();
    // sshd_config separates SetEnv entries by spaces.
    let usable = !path.is_empty() && !path.contains([' ', '"', '\t']);
    if usable && !env.iter().any(|v| v.starts_with("PATH=")) {
        env.push(format!("PATH={path}"));
    }
    env
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap()
}

impl Sshd {
    /// (Re)starts sshd on its port (a new one the first time).
    ///
    /// `SetEnv SHLVL=1`: bash reads `~/.bashrc` for a command sshd runs
    /// only at shell level 1, and this machine's may wait for ever
    /// (version managers initialised there); a remote shell panescan runs
    /// a command in must not read interactive rc files (GUIDE.md, "Many hosts through ssh").
    pub fn start(&mut self) {
        if self.port == 0 {
            self.port = free_port();
        }
        let config = self.dir.join("sshd_config");
        std::fs::write(
            &config,
            format!(
                "Port {port}\nListenAddress 127.0.0.1\nHostKey {d}/host_key\nAuthorizedKeysFile {d}/authorized_keys\nPidFile {d}/sshd.pid\nStrictModes no\nUsePAM no\nPermitRootLogin prohibit-password\nPasswordAuthentication no\nKbdInteractiveAuthentication no\nAcceptEnv TMUX_TMPDIR\nSetEnv SHLVL=1{env}\nPrintMotd no\nLogLevel ERROR\n",
                port = self.port,
                d = self.dir.display(),
                env = self.set_env.iter().map(|v| format!(" {v}")).collect::<String>(),
            ),
        )
        .unwrap();
        let child = Command::new(SSHD)
            .args(["-D", "-e", "-f"])
            .arg(&config)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("sshd starts");
        self.child = Some(child);
        let port = self.port;
        let up = eventually(Duration::from_secs(10), || {
            std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
        });
        assert!(up, "sshd never listened on port {port}");
    }

    /// The sshd's own process id, if it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// The sshd and every process it forked (sessions, the tmux clients
    /// they run), deepest first.
    fn family(&self) -> Vec<u32> {
        let Some(root) = self.child.as_ref().map(Child::id) else {
            return Vec::new();
        };
        let mut family = descendants(vec![root], &processes());
        family.reverse();
        family
    }

    fn signal(&self, sig: &str) {
        for pid in self.family() {
            let _ = Command::new("kill")
                .args([sig, &pid.to_string()])
                .stderr(Stdio::null())
                .status();
        }
    }

    /// Freezes the sshd and its sessions (SIGSTOP): the host stops
    /// answering without closing anything.
    pub fn freeze(&self) {
        self.signal("-STOP");
    }

    /// Kills the sshd and its sessions: every connection to it drops.
    pub fn kill(&mut self) {
        self.signal("-KILL");
        if let Some(mut c) = self.child.take() {
            let _ = c.wait();
        }
    }
}

impl Drop for Sshd {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Shows `lines` in pane `main:0.0` and waits until tmux has them.
pub fn show(tmux: &PrivateServer, lines: &str) {
    let script = format!("printf '{lines}\\n'; exec cat");
    tmux.run_ok(["respawn-pane", "-k", "-t", "main:0.0", &script])
        .unwrap();
    // A fixed name: tmux's automatic rename would change it under a test.
    tmux.run_ok(["rename-window", "-t", "main:0", "w"]).unwrap();
    let last = lines.rsplit("\\n").next().unwrap_or(lines).to_owned();
    let shown = eventually(Duration::from_secs(10), || {
        tmux.run_ok(["capture-pane", "-p", "-t", "main:0.0"])
            .is_ok_and(|t| t.contains(&last))
    });
    assert!(shown, "{lines:?} never showed");
}

/// A private server whose socket is also `DIR/tmux-UID/default`, so a
/// remote tmux with `TMUX_TMPDIR=DIR` finds it as its default server.
pub fn server_under(label: &str, dir: &Path) -> PrivateServer {
    let tmux = PrivateServer::start_under(label, 80, 24, Some(dir)).unwrap();
    let socket = tmux.socket_path().unwrap();
    std::os::unix::fs::symlink(&socket, socket.with_file_name("default")).unwrap();
    tmux
}

/// The `hosts_failed` of a search answer, as (host, error) pairs.
pub fn hosts_failed(r: &Value) -> Vec<(String, String)> {
    r["hosts_failed"]
        .as_array()
        .map(|v| {
            v.iter()
                .map(|f| {
                    (
                        f["host"].as_str().unwrap().to_owned(),
                        f["error"].as_str().unwrap().to_owned(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

/// One process as `/proc/PID/stat` shows it.
struct Process {
    pid: u32,
    ppid: u32,
    /// utime + stime + cutime + cstime, in clock ticks.
    cpu_ticks: u64,
}

/// Every process of the machine now.
fn processes() -> Vec<Process> {
    let mut procs = Vec::new();
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let Some((_, rest)) = stat.rsplit_once(')') else {
            continue;
        };
        let f: Vec<&str> = rest.split_whitespace().collect();
        let num = |i: usize| f.get(i).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
        // After the name: state, ppid, ... utime (11), stime, cutime, cstime.
        procs.push(Process {
            pid,
            ppid: num(1) as u32,
            cpu_ticks: num(11) + num(12) + num(13) + num(14),
        });
    }
    procs
}

/// `roots` and every process descending from them, parents before
/// children, each once.
fn descendants(mut family: Vec<u32>, procs: &[Process]) -> Vec<u32> {
    let mut i = 0;
    while i < family.len() {
        let p = family[i];
        let children: Vec<u32> = procs
            .iter()
            .filter(|c| c.ppid == p && !family.contains(&c.pid))
            .map(|c| c.pid)
            .collect();
        family.extend(children);
        i += 1;
    }
    family
}

/// CPU time (user + system, with that of reaped children) in ms spent so far
/// by the processes in `roots`, every process descending from them, and
/// every process whose command line holds `marker` (ssh's backgrounded
/// ControlMasters, which init adopts), with their descendants.
pub fn cpu_ms(roots: &[u32], marker: Option<&str>) -> f64 {
    let procs = processes();
    let mut family: Vec<u32> = roots.to_vec();
    if let Some(m) = marker {
        family.extend(procs.iter().map(|p| p.pid).filter(|pid| {
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            String::from_utf8_lossy(&cmdline).contains(m)
        }));
    }
    let mut family = descendants(family, &procs);
    family.sort_unstable();
    family.dedup();
    let ticks: u64 = procs
        .iter()
        .filter(|p| family.binary_search(&p.pid).is_ok())
        .map(|p| p.cpu_ticks)
        .sum();
    // Linux reports these in clock ticks of 1/100 s (USER_HZ).
    ticks as f64 * 10.0
}

/// Whether `serve` runs an ssh client for host `host` now.
pub fn ssh_client_for(serve: &Serve, host: &str) -> bool {
    let needle = format!(" -- {host} exec ");
    let pid = serve.pid().to_string();
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .any(|e| {
            let dir = e.path();
            let stat = std::fs::read_to_string(dir.join("stat")).unwrap_or_default();
            let ppid = stat
                .rsplit_once(')')
                .and_then(|(_, r)| r.split_whitespace().nth(1))
                .unwrap_or("");
            let cmd = std::fs::read(dir.join("cmdline"))
                .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
                .unwrap_or_default();
            ppid == pid && cmd.starts_with("ssh ") && cmd.contains(&needle)
        })
}
