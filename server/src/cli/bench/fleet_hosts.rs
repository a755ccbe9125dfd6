//! The far hosts of `panescan bench --fleet-only`: N hosts, each its own
//! sshd and its own filled tmux server, each reached through a relay on
//! 127.0.0.1 that delays every round trip ([`crate::testbed::far`]).
//!
//! Must hold: nothing of the machine's ssh setup is read or written. The
//! keys (ed25519, made by `ssh-keygen`), each sshd's config, the
//! `known_hosts` and the client config panescan is given (`-F`) are in a
//! private temporary directory; every sshd listens on 127.0.0.1 only and
//! reads only its own config; the client config names each host's key,
//! its `known_hosts` (no global one) and its key alone (`IdentitiesOnly`).
//! Dropping the fleet kills the sshds and the tmux servers and removes the
//! directory. (A Ctrl-C reaches the sshds too: they are in the bench's
//! process group.)

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::testbed::far::Far;
use crate::testbed::fixture::{Fixture, FixtureShape};

/// How long an sshd may take to listen.
const SSHD_UP: Duration = Duration::from_secs(10);

/// sshd on `PATH`, else `/usr/sbin/sshd` (absolute: sshd re-executes
/// itself for each connection); `None` when there is none.
pub(super) fn sshd_program() -> Option<PathBuf> {
    let on_path = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .unwrap_or_default();
    on_path
        .into_iter()
        .filter(|d| d.is_absolute())
        .map(|d| d.join("sshd"))
        .chain([PathBuf::from("/usr/sbin/sshd")])
        .find(|p| p.is_file())
}

/// What is missing for the fleet (`sshd`, `ssh`, `ssh-keygen`), if anything.
pub(super) fn missing() -> Option<&'static str> {
    if sshd_program().is_none() {
        return Some("sshd not installed");
    }
    let runs = |p: &str| {
        Command::new(p)
            .arg("-V")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok()
    };
    if !runs("ssh") {
        return Some("ssh not installed");
    }
    // ssh-keygen has no -V: any start will do (it fails on the option).
    if !runs("ssh-keygen") {
        return Some("ssh-keygen not installed");
    }
    None
}

/// N far hosts and the client config naming them `h0`, `h1`, ...
pub(super) struct Fleet {
    // Dropped in this order: the relays and tmux servers, the sshds, the
    // directory.
    hosts: Vec<FarHost>,
    sshds: Vec<Sshd>,
    dir: Private,
}

/// One host: its filled tmux server and the relay in front of its sshd.
struct FarHost {
    name: String,
    _fixture: Fixture,
    far: Far,
    /// Where its tmux finds the fixture as its default server.
    tmux_tmpdir: PathBuf,
    sshd_port: u16,
}

/// An sshd child, killed on drop.
struct Sshd(Child);

impl Drop for Sshd {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The fleet's private directory, removed on drop.
struct Private(PathBuf);

impl Drop for Private {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

impl Fleet {
    /// `n` hosts of `shape` whose round trips take `rtt`; `progress(i)`
    /// after each host is up.
    pub(super) fn build(
        n: usize,
        shape: &FixtureShape,
        rtt: Duration,
        progress: &mut dyn FnMut(usize),
    ) -> Result<Fleet, String> {
        let sshd = sshd_program().ok_or("sshd not installed")?;
        let dir = Private(private_dir()?);
        keygen(&dir.0.join("client_key"))?;
        let mut fleet = Fleet {
            hosts: Vec::new(),
            sshds: Vec::new(),
            dir,
        };
        for i in 0..n {
            fleet.add(&sshd, &format!("h{i}"), shape, rtt)?;
            progress(i + 1);
        }
        Ok(fleet)
    }

    /// Adds host `name`: its tmux server, its sshd, its relay.
    fn add(
        &mut self,
        sshd: &Path,
        name: &str,
        shape: &FixtureShape,
        rtt: Duration,
    ) -> Result<(), String> {
        let fixture = Fixture::build(
            &format!("fleet-{name}"),
            shape.clone(),
            &crate::testbed::corpus::sources(),
            Duration::from_secs(120),
            &mut |_, _| {},
        )
        .map_err(|e| format!("cannot build host {name}'s tmux server: {e}"))?;
        let host_dir = self.dir.0.join(name);
        let tmux_tmpdir = host_dir.join("tmux");
        default_server_link(&fixture, &tmux_tmpdir)?;
        let port = free_port()?;
        let child = start_sshd(sshd, &host_dir, port, &self.dir.0.join("client_key.pub"))?;
        self.sshds.push(Sshd(child));
        wait_listening(port)?;
        let far = Far::start(SocketAddr::from(([127, 0, 0, 1], port)), rtt)
            .map_err(|e| format!("cannot start host {name}'s relay: {e}"))?;
        self.hosts.push(FarHost {
            name: name.to_owned(),
            _fixture: fixture,
            far,
            tmux_tmpdir,
            sshd_port: port,
        });
        Ok(())
    }

    /// The hosts' names, in order.
    pub(super) fn names(&self) -> Vec<String> {
        self.hosts.iter().map(|h| h.name.clone()).collect()
    }

    /// Writes the client config (every host; `kex`: the key exchange
    /// ssh offers, `None` for its default) and its `known_hosts`; the
    /// config's path.
    pub(super) fn client_config(&self, kex: Option<&str>) -> Result<PathBuf, String> {
        let d = &self.dir.0;
        let known = d.join("known_hosts");
        let mut known_text = String::new();
        let mut text = String::new();
        for h in &self.hosts {
            let host_pub = read(&d.join(&h.name).join("host_key.pub"))?;
            // The host key is the sshd's, named by the sshd's port
            // (`HostKeyAlias`) though ssh connects to the relay's.
            known_text.push_str(&format!("[127.0.0.1]:{} {host_pub}", h.sshd_port));
            text.push_str(&format!(
                "Host {name}\n  HostName 127.0.0.1\n  Port {relay}\n  HostKeyAlias [127.0.0.1]:{port}\n  IdentityFile {key}\n  IdentitiesOnly yes\n  UserKnownHostsFile {known}\n  GlobalKnownHostsFile /dev/null\n  StrictHostKeyChecking yes\n  UpdateHostKeys no\n  LogLevel ERROR\n  SetEnv TMUX_TMPDIR={tmux}\n",
                name = h.name,
                relay = h.far.port(),
                port = h.sshd_port,
                key = d.join("client_key").display(),
                known = known.display(),
                tmux = h.tmux_tmpdir.display(),
            ));
        }
        if let Some(kex) = kex {
            text.push_str(&format!("Host *\n  KexAlgorithms {kex}\n"));
        }
        write(&known, &known_text)?;
        let path = d.join("ssh_config");
        write(&path, &text)?;
        Ok(path)
    }
}

/// `$TMPDIR/panescan-fleet-PID`, made 0700 (its keys are private).
fn private_dir() -> Result<PathBuf, String> {
    use std::os::unix::fs::DirBuilderExt;
    let dir = std::env::temp_dir().join(format!("panescan-fleet-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::DirBuilder::new()
        .mode(0o700)
        .create(&dir)
        .map_err(|e| format!("cannot make {}: {e}", dir.display()))?;
    Ok(dir)
}

/// An ed25519 key without passphrase at `path` (and `path.pub`).
fn keygen(path: &Path) -> Result<(), String> {
    let ok = Command::new("ssh-keygen")
        .args([
            "-q",
            "-t",
            "ed25519",
            "-N",
            "",
            "-C",
            "panescan-bench",
            "-f",
        ])
        .arg(path)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if ok {
        Ok(())
    } else {
        Err(format!("ssh-keygen failed for {}", path.display()))
    }
}

/// `DIR/tmux-UID/default`, a link to the fixture's socket: a tmux run
/// with `TMUX_TMPDIR=DIR` finds it as its default server.
fn default_server_link(fixture: &Fixture, dir: &Path) -> Result<(), String> {
    use std::os::unix::fs::DirBuilderExt;
    let uid = crate::tmux::paths::current_uid().ok_or("cannot read this user's id")?;
    let uid_dir = dir.join(format!("tmux-{uid}"));
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&uid_dir)
        .map_err(|e| format!("cannot make {}: {e}", uid_dir.display()))?;
    let socket = fixture.server.socket_path().map_err(|e| e.to_string())?;
    std::os::unix::fs::symlink(socket, uid_dir.join("default"))
        .map_err(|e| format!("cannot link the tmux socket: {e}"))
}

/// A free port of 127.0.0.1 (free a moment ago).
fn free_port() -> Result<u16, String> {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| format!("no free port on 127.0.0.1: {e}"))
}

/// sshd on 127.0.0.1:`port` with a host key and config in `dir`,
/// accepting the client key `client_pub` for this user, in the
/// foreground (`-D`) so it is this process's child.
///
/// `SetEnv SHLVL=1`: bash reads `~/.bashrc` for a command sshd runs only
/// at shell level 1 (GUIDE.md, "Many hosts through ssh").
fn start_sshd(sshd: &Path, dir: &Path, port: u16, client_pub: &Path) -> Result<Child, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot make {}: {e}", dir.display()))?;
    keygen(&dir.join("host_key"))?;
    std::fs::copy(client_pub, dir.join("authorized_keys"))
        .map_err(|e| format!("cannot write authorized_keys: {e}"))?;
    let config = dir.join("sshd_config");
    write(
        &config,
        &format!(
            "Port {port}\nListenAddress 127.0.0.1\nHostKey {d}/host_key\nAuthorizedKeysFile {d}/authorized_keys\nPidFile {d}/sshd.pid\nStrictModes no\nUsePAM no\nPermitRootLogin prohibit-password\nPasswordAuthentication no\nKbdInteractiveAuthentication no\nAcceptEnv TMUX_TMPDIR\nSetEnv SHLVL=1\nPrintMotd no\nLogLevel ERROR\n",
            d = dir.display(),
        ),
    )?;
    // Run as root, sshd needs its privilege separation directory (made
    // as Debian's init makes it).
    if crate::tmux::paths::current_uid() == Some(0) {
        let _ = std::fs::create_dir_all("/run/sshd");
    }
    Command::new(sshd)
        .args(["-D", "-e", "-f"])
        .arg(&config)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", sshd.display()))
}

/// Waits until something listens on 127.0.0.1:`port`.
fn wait_listening(port: u16) -> Result<(), String> {
    let until = Instant::now() + SSHD_UP;
    while Instant::now() < until {
        if TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Err(format!("sshd never listened on 127.0.0.1:{port}"))
}

fn read(path: &Path) -> Result<String, String> {
    std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))
}

fn write(path: &Path, text: &str) -> Result<(), String> {
    std::fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))
}
