//! tmux on other machines, through OpenSSH.
//!
//! The operator names hosts (`--ssh DEST`, [`dest`]) and may give ssh a
//! config file (`--ssh-config FILE`, passed as `-F`); a call names one of
//! them in `host` and nothing else reaches ssh. Every tmux client panescan
//! starts for a host (commands, the control client, capture sweeps) is
//!
//! ```text
//! ssh [-F FILE] -T -x -a -o BatchMode=yes -o ControlMaster=auto
//!     -o ControlPath=DIR/N-%C -o ControlPersist=60 -o ConnectTimeout=N
//!     -o ServerAliveInterval=5 -o ServerAliveCountMax=3 -o Compression=..
//!     [-l USER] [-p PORT] -- HOST 'exec' 'tmux' '-u' ...
//! ```
//!
//! * one multiplexed connection per host, its master in a directory of
//!   panescan's own (0700);
//! * `BatchMode`: ssh never prompts (a password or an unknown host key fails
//!   at once, with ssh's own words in the error);
//! * a connect timeout and keepalives: a host that vanishes fails its calls;
//! * every remote word single-quoted for a POSIX shell ([`quote`]): the
//!   remote side runs `tmux`, nothing is installed there;
//! * ssh gets only `HOME`, `PATH`, `USER`, `LOGNAME` and `SSH_AUTH_SOCK`.
//!
//! The remote tmux must be 3.2 or later, checked once per server handle
//! before anything else is sent ([`Host::check_version_then`], which lists
//! the sessions in the same exchange on the first call).

pub(crate) mod dest;
pub(crate) mod quote;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

pub use dest::{Dest, LOCAL};

use super::TmuxError;

/// The oldest tmux panescan drives (control-mode flags, formats).
pub const MIN_TMUX: (u32, u32) = (3, 2);

/// How long an idle master connection stays up.
const PERSIST_SECS: u32 = 60;

/// The variables ssh keeps from panescan's environment.
const SSH_ENV: [&str; 5] = ["HOME", "PATH", "USER", "LOGNAME", "SSH_AUTH_SOCK"];

/// What the operator configured (for a daemon's session: what its serve
/// was given).
#[derive(Debug, Clone, Default)]
pub struct Settings {
    /// `--ssh-config FILE`, given to ssh as `-F`.
    pub config_file: Option<PathBuf>,
    /// `--ssh DEST`, in the order given.
    pub hosts: Vec<Dest>,
    /// `--ssh-compress`: ssh's `Compression=yes`.
    pub compression: bool,
    /// ssh's `ConnectTimeout` (also bounds the handshake).
    pub connect_timeout: Duration,
    /// The values of [`SSH_ENV`] ssh runs with (the client's).
    pub env: Vec<(String, OsString)>,
}

impl Settings {
    /// The values of [`SSH_ENV`] in this process's environment.
    pub fn env_here() -> Vec<(String, OsString)> {
        SSH_ENV
            .iter()
            .filter_map(|k| std::env::var_os(k).map(|v| ((*k).to_owned(), v)))
            .collect()
    }
}

/// What a master connection is made of: two hosts share one only when
/// all of it is the same (the destination as written, the config file,
/// compression, the connect timeout, ssh's environment).
#[derive(Debug, Clone, PartialEq, Eq)]
struct HostKey {
    text: String,
    config_file: Option<PathBuf>,
    compression: bool,
    connect_timeout: Duration,
    env: Vec<(String, OsString)>,
}

/// One configured host, ready to start clients on.
#[derive(Debug)]
pub struct Host {
    /// Its place in the table: names its master connection.
    index: usize,
    /// What a [`super::ServerSpec`] names it by: the destination as
    /// written, or with `#N` when another host of that name with other
    /// settings came first.
    id: String,
    key: HostKey,
    dest: Dest,
    control_dir: PathBuf,
}

/// Every host registered in this process, kept (with its master
/// connection) until [`shutdown`]: a daemon's sessions asking for the same
/// host with the same settings share it.
static HOSTS: RwLock<Vec<Arc<Host>>> = RwLock::new(Vec::new());

/// How long an idle master connection stays up ([`set_persist`]).
static PERSIST: AtomicU32 = AtomicU32::new(PERSIST_SECS);

/// Keeps idle master connections up `secs` (a daemon: as long as it
/// stays without sessions, so a later session finds them up).
pub fn set_persist(secs: u32) {
    PERSIST.store(secs.max(1), Ordering::Relaxed);
}

/// Registers the hosts of `settings`; the id of each, in order, for
/// [`super::ServerSpec::host`]. A host already registered with the same
/// [`HostKey`] is that host (its master connection shared); makes the
/// private directory of the master connections on first use.
pub fn configure(settings: &Settings) -> Result<Vec<String>, String> {
    if settings.hosts.is_empty() {
        return Ok(Vec::new());
    }
    let control_dir = shared_control_dir()?;
    let mut hosts = crate::sync::write(&HOSTS);
    let mut ids = Vec::new();
    for dest in &settings.hosts {
        let key = HostKey {
            text: dest.text.clone(),
            config_file: settings.config_file.clone(),
            compression: settings.compression,
            connect_timeout: settings.connect_timeout.max(Duration::from_secs(1)),
            env: settings.env.clone(),
        };
        if let Some(h) = hosts.iter().find(|h| h.key == key) {
            ids.push(h.id.clone());
            continue;
        }
        let index = hosts.len();
        let id = if hosts.iter().any(|h| h.id == dest.text) {
            format!("{}#{index}", dest.text)
        } else {
            dest.text.clone()
        };
        ids.push(id.clone());
        hosts.push(Arc::new(Host {
            index,
            id,
            key,
            dest: dest.clone(),
            control_dir: control_dir.clone(),
        }));
    }
    Ok(ids)
}

/// The directory of this process's master connections, made once.
fn shared_control_dir() -> Result<PathBuf, String> {
    static DIR: std::sync::Mutex<Option<PathBuf>> = std::sync::Mutex::new(None);
    let mut dir = crate::sync::lock(&DIR);
    if let Some(d) = dir.as_ref().filter(|d| d.exists()) {
        return Ok(d.clone());
    }
    let made = control_dir()?;
    *dir = Some(made.clone());
    Ok(made)
}

/// `$TMPDIR/panescan-ssh-UID-PID`, made 0700 (ssh's ControlPath must be
/// short: a unix socket path has ~100 bytes). The directories of panescan
/// processes that are gone (killed before they could remove theirs) are
/// removed first.
fn control_dir() -> Result<PathBuf, String> {
    use std::os::unix::fs::DirBuilderExt;
    let uid = super::paths::current_uid().unwrap_or(0);
    remove_stale(&std::env::temp_dir(), &format!("panescan-ssh-{uid}-"));
    let dir = std::env::temp_dir().join(format!("panescan-ssh-{uid}-{}", std::process::id()));
    match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
        Ok(()) => Ok(dir),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => own_private_dir(dir, uid),
        Err(e) => Err(format!(
            "cannot make {} for ssh connections: {e}",
            dir.display()
        )),
    }
}

/// `dir`, found already there, if it is a real directory (not a link)
/// of this user that no one else can enter: the temporary directory is
/// shared, and ssh would trust a master socket someone else placed in it.
fn own_private_dir(dir: PathBuf, uid: u32) -> Result<PathBuf, String> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::symlink_metadata(&dir)
        .map_err(|e| format!("cannot read {}: {e}", dir.display()))?;
    if meta.is_dir() && meta.uid() == uid && meta.mode() & 0o077 == 0 {
        Ok(dir)
    } else {
        Err(format!(
            "{} exists and is not a private directory of this user: remove it, or set TMPDIR",
            dir.display()
        ))
    }
}

/// Removes `DIR/PREFIX<pid>` directories whose process no longer runs
/// (read in `/proc`; where there is none, nothing is removed).
fn remove_stale(dir: &Path, prefix: &str) {
    if !Path::new("/proc/self").exists() {
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix(prefix))
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        if !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

/// The registered host whose id is `id`, if it is one.
pub fn host(id: &str) -> Option<Arc<Host>> {
    crate::sync::read(&HOSTS)
        .iter()
        .find(|h| h.id == id)
        .cloned()
}

/// Master connections registered (what a daemon holds).
pub fn hosts_held() -> usize {
    crate::sync::read(&HOSTS).len()
}

/// Ends every master connection and removes their directory (at shutdown).
pub fn shutdown() {
    let hosts = std::mem::take(&mut *crate::sync::write(&HOSTS));
    let mut dirs = Vec::new();
    for h in &hosts {
        let mut cmd = h.ssh();
        cmd.args(["-O", "exit", "--", &h.dest.host])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        if let Ok(child) = cmd.spawn() {
            let _ = super::process::finish(child, Instant::now() + Duration::from_secs(2));
        }
        if !dirs.contains(&h.control_dir) {
            dirs.push(h.control_dir.clone());
        }
    }
    for d in dirs {
        let _ = std::fs::remove_dir_all(d);
    }
}

impl Host {
    /// The destination as the operator wrote it.
    pub fn name(&self) -> &str {
        &self.dest.text
    }

    /// What a [`super::ServerSpec`] names this host by.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// `ssh` with every option but the destination and command.
    fn ssh(&self) -> Command {
        let mut cmd = Command::new("ssh");
        cmd.env_clear();
        for (k, v) in &self.key.env {
            if SSH_ENV.contains(&k.as_str()) {
                cmd.env(k, v);
            }
        }
        if let Some(f) = &self.key.config_file {
            cmd.arg("-F").arg(f);
        }
        cmd.args([
            "-T",
            "-x",
            "-a",
            "-o",
            "BatchMode=yes",
            "-o",
            "ControlMaster=auto",
        ]);
        // One master per registered host, even for two destinations (or
        // two settings of one) that reach the same machine as the same
        // user (ssh's %C would be the same): each keeps its own settings.
        cmd.arg("-o").arg(format!(
            "ControlPath={}/{}-%C",
            self.control_dir.display(),
            self.index
        ));
        cmd.arg("-o").arg(format!(
            "ControlPersist={}",
            PERSIST.load(Ordering::Relaxed)
        ));
        cmd.arg("-o").arg(format!(
            "ConnectTimeout={}",
            self.key.connect_timeout.as_secs().max(1)
        ));
        cmd.args(["-o", "ServerAliveInterval=5", "-o", "ServerAliveCountMax=3"]);
        cmd.arg("-o").arg(if self.key.compression {
            "Compression=yes"
        } else {
            "Compression=no"
        });
        if let Some(user) = &self.dest.user {
            cmd.arg("-l").arg(user);
        }
        if let Some(port) = self.dest.port {
            cmd.arg("-p").arg(port.to_string());
        }
        cmd
    }

    /// `ssh ... -- HOST 'exec' WORDS...`: runs `words` on the host, each
    /// word quoted for its shell.
    pub fn command(&self, words: &[&str]) -> Result<Command, TmuxError> {
        let line = quote::command_line(words.iter().copied())
            .ok_or_else(|| TmuxError::Invalid("an argument contains a NUL byte".into()))?;
        Ok(self.command_line(&line))
    }

    /// `ssh ... -- HOST LINE`: `line` is already quoted for the remote
    /// shell (made of [`quote`]'s words only).
    fn command_line(&self, line: &str) -> Command {
        let mut cmd = self.ssh();
        cmd.arg("--").arg(&self.dest.host).arg(line);
        cmd.stdin(Stdio::null());
        cmd
    }

    /// `tmux -V` on the host: its version, or an error naming the host
    /// (unreachable, no tmux, or one older than [`MIN_TMUX`]); and in the
    /// same exchange (one channel of the connection: on a far host every
    /// channel costs round trips) the tmux client `then` (its words, `tmux`
    /// first), run once `tmux -V` succeeded: the version and `then`'s end
    /// (`None` when `then` is empty).
    pub(crate) fn check_version_then(
        &self,
        then: &[&str],
        deadline: Instant,
    ) -> Result<(String, Option<super::process::Finished>), TmuxError> {
        let _span = super::spans::Span::new("ssh.check_version");
        let mut cmd = match then {
            [] => self.command(&["tmux", "-V"])?,
            _ => {
                let line = quote::command_line(then.iter().copied())
                    .ok_or_else(|| TmuxError::Invalid("an argument contains a NUL byte".into()))?;
                self.command_line(&format!("'tmux' '-V' && {line}"))
            }
        };
        let child = cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| TmuxError::spawn("ssh", e))?;
        let mut done = super::process::finish(child, deadline)?;
        if done.code == Some(255) {
            return Err(self.unreachable(&done.stderr));
        }
        // The version is the first line; what `then` printed follows.
        let text = String::from_utf8_lossy(&done.stdout).into_owned();
        let (first, rest) = text.split_once('\n').unwrap_or((&text, ""));
        let out = first.trim().to_owned();
        if version(&out).is_none() && !done.success {
            return Err(self.unreachable(&format!(
                "no tmux on this host (`tmux -V`: {})",
                done.stderr.trim()
            )));
        }
        match version(&out) {
            Some(v) if v >= MIN_TMUX => {
                done.stdout = rest.as_bytes().to_vec();
                Ok((out, (!then.is_empty()).then_some(done)))
            }
            _ => Err(self.unreachable(&format!(
                "{out:?} is not tmux {}.{} or later, which panescan needs",
                MIN_TMUX.0, MIN_TMUX.1
            ))),
        }
    }

    /// An error naming this host, with what ssh (or the host) said.
    pub fn unreachable(&self, said: &str) -> TmuxError {
        let said = said.trim();
        let said = if said.is_empty() {
            "ssh ended without a word"
        } else {
            said
        };
        TmuxError::Unreachable {
            host: self.dest.text.clone(),
            message: said.chars().take(500).collect(),
        }
    }
}

/// `(major, minor)` of `tmux -V` output (`tmux 3.3a`, `tmux next-3.5`).
pub fn version(text: &str) -> Option<(u32, u32)> {
    let v = text.strip_prefix("tmux ")?;
    let v = v.strip_prefix("next-").unwrap_or(v);
    let (major, rest) = v.split_once('.')?;
    let minor: String = rest.chars().take_while(char::is_ascii_digit).collect();
    Some((major.parse().ok()?, minor.parse().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_control_directory_found_there_must_be_private_and_ours() {
        use std::os::unix::fs::PermissionsExt;
        let root = std::env::temp_dir().join(format!("panescan-own-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(&root).unwrap();
        let uid = crate::tmux::paths::current_uid().unwrap();
        let private = root.join("private");
        std::fs::create_dir(&private).unwrap();
        std::fs::set_permissions(&private, std::fs::Permissions::from_mode(0o700)).unwrap();
        assert!(own_private_dir(private.clone(), uid).is_ok());
        let open = root.join("open");
        std::fs::create_dir(&open).unwrap();
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert!(own_private_dir(open, uid).is_err(), "others can enter it");
        let link = root.join("link");
        std::os::unix::fs::symlink(&private, &link).unwrap();
        assert!(
            own_private_dir(link, uid).is_err(),
            "a link to a private one"
        );
        assert!(own_private_dir(private, uid + 1).is_err(), "someone else's");
        let _ = std::fs::remove_dir_all(&root);
    }

    #[test]
    fn only_the_directories_of_gone_processes_are_removed() {
        let root = std::env::temp_dir().join(format!("panescan-stale-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let gone = root.join("p-4294967"); // above any pid_max
        let live = root.join(format!("p-{}", std::process::id()));
        let other = root.join("q-4294967");
        for d in [&gone, &live, &other] {
            std::fs::create_dir_all(d).unwrap();
        }
        remove_stale(&root, "p-");
        assert!(!gone.exists());
        assert!(live.exists() && other.exists());
        let _ = std::fs::remove_dir_all(&root);
    }

    #[test]
    fn versions() {
        assert_eq!(version("tmux 3.3a"), Some((3, 3)));
        assert_eq!(version("tmux 3.2"), Some((3, 2)));
        assert_eq!(version("tmux next-3.5"), Some((3, 5)));
        assert_eq!(version("tmux 10.1"), Some((10, 1)));
        assert!(version("tmux 3.1c").is_some_and(|v| v < MIN_TMUX));
        assert_eq!(version("sh: tmux: not found"), None);
    }

    #[test]
    fn the_command_line_quotes_every_word_and_ends_options() {
        let dest = dest::parse("ssh://me@box:2222").unwrap();
        let host = Host {
            index: 0,
            id: dest.text.clone(),
            key: HostKey {
                text: dest.text.clone(),
                config_file: Some(PathBuf::from("/etc/x config")),
                compression: false,
                connect_timeout: Duration::from_secs(5),
                env: Vec::new(),
            },
            dest,
            control_dir: PathBuf::from("/tmp/d"),
        };
        let cmd = host.command(&["tmux", "-L", "a'b;$(x)"]).unwrap();
        let args: Vec<String> = cmd
            .get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        let n = args.len();
        assert_eq!(&args[n - 3..n - 1], ["--", "box"]);
        assert_eq!(args[n - 1], r#"exec 'tmux' '-L' 'a'\''b;$(x)'"#);
        assert!(args.windows(2).any(|w| w == ["-F", "/etc/x config"]));
        assert!(args.windows(2).any(|w| w == ["-l", "me"]));
        assert!(args.windows(2).any(|w| w == ["-p", "2222"]));
        assert!(args.windows(2).any(|w| w == ["-o", "BatchMode=yes"]));
        assert!(host.command(&["a\0"]).is_err());
    }
}
