//! The terminal a sweep's tmux client shows the server, so tmux finds the
//! client's pane at once instead of walking every pane for every command.
//!
//! tmux runs `cmd_find_inside_pane` for every command of a client without a
//! session, comparing each pane's tty with the client's: a client whose
//! stdin is a pipe walks the whole server at every command, one on the
//! terminal of the sweep's lowest-numbered pane stops at about the first.
//!
//! What must hold, so that this harms nothing:
//! - panescan opens the terminal itself, read-only and `O_NOCTTY`: it is
//!   never anyone's controlling terminal, and its flags are this open's;
//! - the client attaches to nothing and has no `TERM`: tmux reads the
//!   terminal's attributes and size, nothing else;
//! - nothing reads from it: the script comes from a 0600 file beside the
//!   socket, removed when the chunk ends (a stale one after an hour);
//! - anything unsure (a pane dead or gone, a terminal that cannot be opened,
//!   a socket path tmux would read as a glob) falls back to a pipe.
//!
//! The server keeps the anchor it found ([`super::ServerState`]) for the
//! next sweep whose lowest pane is the same, while its terminal proves live
//! (a hung-up terminal is asked about again); a kept anchor also lets a
//! sweep's first client start before its script is known
//! ([`super::spare`]). The `capture_anchor` tests check each point on
//! private servers. Why, in full: NOTES.md.

use std::fs::File;
use std::io::{IsTerminal as _, Write as _};
use std::os::unix::fs::{FileTypeExt as _, OpenOptionsExt as _};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use super::super::command::TmuxCommand;
use super::super::connection::Shared;
use super::super::ids::PaneId;
use super::super::Server;
use super::CaptureRequest;

/// Fewer requests than this sweep through a pipe. Finding the terminal
/// costs a round trip on the control client (and opening the terminal, a
/// look in the socket directory, a script file), ~0.5 ms on a quiet
/// machine and more under load; it saves tmux the walk of ~16 ns a pane
/// for each of a sweep's commands (two a request). Below ~16 requests it
/// saves less than it costs even on 1,000 panes, and a warm or since
/// search's few deltas are such sweeps.
pub(crate) const MIN_REQUESTS: usize = 16;

/// How a chunk's script is named: this, then the chunk's token.
const SCRIPT_PREFIX: &str = ".panescan-sweep-";
/// A script this old belongs to no running chunk (every chunk ends at its
/// call's deadline): a panescan killed mid-chunk left it, and the next
/// sweep removes it.
const STALE_SCRIPT: Duration = Duration::from_secs(3600);
/// An early client's FIFO ([`super::spare`]) this old belongs to no waiting
/// spare (a spare is fed or let go once its caller's listing is back): a
/// panescan killed between starting the client and feeding it left it, and
/// possibly the client waiting on it, which the next sweep releases.
const STALE_FIFO: Duration = Duration::from_secs(60);
/// How often a sweep that finds its anchor kept looks for stale scripts.
const STALE_LOOK_EVERY: Duration = Duration::from_secs(60);
/// Between two looks at whether a FIFO's reader has opened it.
pub(super) const FIFO_POLL: Duration = Duration::from_micros(100);

/// A sweep's terminal, and where its scripts go.
#[derive(Debug)]
pub(crate) struct Anchor {
    /// The pane whose terminal it is.
    pane: PaneId,
    tty: File,
    dir: PathBuf,
    /// The server's tmux version, `(major, minor)`, when it reads as one.
    version: Option<(u32, u32)>,
    /// When stale scripts were last looked for beside the socket.
    last_look: std::sync::Mutex<Instant>,
}

/// A script written for one chunk; removed when dropped.
#[derive(Debug)]
pub(crate) struct ScriptFile {
    path: PathBuf,
}

impl ScriptFile {
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for ScriptFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// The terminal of the lowest-numbered pane of `requests`, opened, if that
/// pane is live and everything above holds; `None`: use a pipe. The one
/// the server keeps is taken when it is that pane's and still live; else
/// tmux is asked, and what it says is kept.
pub(crate) fn find(
    shared: &Server,
    requests: &[CaptureRequest],
    deadline: Instant,
) -> Option<Arc<Anchor>> {
    let lowest = requests.iter().map(|r| r.pane).min_by_key(|p| p.number())?;
    let mut kept = crate::sync::lock(&shared.capture().anchor);
    if let Some(anchor) = kept.as_ref() {
        if anchor.pane == lowest && anchor.is_live() {
            anchor.look_for_stale_scripts();
            return Some(Arc::clone(anchor));
        }
    }
    let found = ask(shared.connection(), lowest, deadline).map(Arc::new);
    kept.clone_from(&found);
    found
}

/// The anchor the server keeps, if its terminal is still live: what a
/// sweep's early client ([`super::spare`]) is started on.
/// A dead one is let go (its terminal closed) on the way.
pub(crate) fn kept(shared: &Server) -> Option<Arc<Anchor>> {
    let mut kept = crate::sync::lock(&shared.capture().anchor);
    if kept.as_ref().is_some_and(|a| !a.is_live()) {
        *kept = None;
    }
    kept.clone()
}

/// Asks tmux for `lowest`'s terminal and opens it.
fn ask(shared: &Shared, lowest: PaneId, deadline: Instant) -> Option<Anchor> {
    // On another host the terminal is not here to open: a pipe it is.
    if shared.endpoint().host().is_some() {
        return None;
    }
    let dir = shared.socket_path().parent()?.to_path_buf();
    let dir_text = dir.to_str()?;
    if !dir.is_absolute() || dir_text.contains(['*', '?', '[', '\\']) {
        return None;
    }
    let probe = TmuxCommand::new("display-message")
        .flag("-p")
        .target(lowest)
        .format_arg("#{pane_dead} #{pane_tty} #{version}");
    let answer = shared.run_many(&[probe], deadline).pop()?.ok()?;
    let (tty, version) = live_tty(&answer)?;
    let tty = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOCTTY)
        .open(tty)
        .ok()?;
    remove_stale_scripts(&dir, SystemTime::now());
    Some(Anchor {
        pane: lowest,
        tty,
        dir,
        version: parse_version(version),
        last_look: std::sync::Mutex::new(Instant::now()),
    })
}

/// Removes the scripts in `dir` older than [`STALE_SCRIPT`] at `now`, and
/// the FIFOs older than [`STALE_FIFO`]: only regular files and FIFOs named
/// as panescan names them (the prefix and a chunk's token: 22 letters and
/// digits, or the 32 hex digits of older builds), so nothing of tmux's or
/// the user's is touched. A client still waiting on a stale FIFO (its
/// panescan died before feeding it) would wait for a writer as long as
/// tmux runs: the FIFO is opened for writing and closed first, which ends
/// its script there, empty, and the client with it.
pub(super) fn remove_stale_scripts(dir: &Path, now: SystemTime) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let is_script = name.to_str().is_some_and(|n| {
            n.strip_prefix(SCRIPT_PREFIX).is_some_and(|t| {
                (t.len() == 22 && t.bytes().all(|b| b.is_ascii_alphanumeric()))
                    || (t.len() == 32 && t.bytes().all(|b| b.is_ascii_hexdigit()))
            })
        });
        let Ok(meta) = entry.metadata() else { continue };
        let age = meta
            .modified()
            .ok()
            .and_then(|m| now.duration_since(m).ok());
        let older = |limit: Duration| age.is_some_and(|age| age > limit);
        if !is_script {
            continue;
        }
        if meta.file_type().is_fifo() && older(STALE_FIFO) {
            // Opened (and closed at once) only when a client has it open.
            drop(open_for_writing(&entry.path(), Instant::now()));
            let _ = std::fs::remove_file(entry.path());
        } else if meta.is_file() && older(STALE_SCRIPT) {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// The FIFO at `path` opened for writing, non-blocking, once a reader has
/// it open (before that, opening it so fails with `ENXIO`); `None` when it
/// is gone or `until` passes first (at once when `until` has passed).
pub(super) fn open_for_writing(path: &Path, until: Instant) -> Option<std::fs::File> {
    loop {
        match std::fs::OpenOptions::new()
            .write(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(path)
        {
            Ok(file) => return Some(file),
            Err(e) if e.raw_os_error() == Some(libc::ENXIO) && Instant::now() < until => {
                std::thread::sleep(FIFO_POLL);
            }
            Err(_) => return None,
        }
    }
}

/// `0 /dev/pts/N VERSION` (live, its terminal, tmux's version) -> the
/// terminal and the version.
fn live_tty(answer: &str) -> Option<(&Path, &str)> {
    let mut fields = answer.trim_end_matches('\n').splitn(3, ' ');
    let (dead, tty) = (fields.next()?, fields.next()?);
    let version = fields.next().unwrap_or("");
    (dead == "0" && tty.starts_with("/dev/")).then(|| (Path::new(tty), version))
}

/// `3.3a` -> `(3, 3)`, a development build `next-3.8` -> `(3, 8)` (the
/// release it leads to); `None` for what names no release (`master`, ...).
fn parse_version(version: &str) -> Option<(u32, u32)> {
    let version = version.strip_prefix("next-").unwrap_or(version);
    let (major, rest) = version.split_once('.')?;
    let minor: String = rest.chars().take_while(char::is_ascii_digit).collect();
    Some((major.parse().ok()?, minor.parse().ok()?))
}

impl Anchor {
    /// Removes stale scripts beside the socket, at most once every
    /// [`STALE_LOOK_EVERY`] for the life of a kept anchor (a new one
    /// looks when it is found).
    fn look_for_stale_scripts(&self) {
        let mut last = crate::sync::lock(&self.last_look);
        if last.elapsed() >= STALE_LOOK_EVERY {
            *last = Instant::now();
            remove_stale_scripts(&self.dir, SystemTime::now());
        }
    }

    /// Whether the terminal still belongs to a live pane: a pane whose
    /// process ended (or was respawned, or killed) had its master side
    /// closed by tmux, which hangs the terminal up, and a hung-up terminal
    /// answers `tcgetattr` (what `isatty` asks) with `EIO`.
    pub(crate) fn is_live(&self) -> bool {
        self.tty.is_terminal()
    }

    /// A handle on the terminal for one client's stdin.
    pub(crate) fn stdin(&self) -> Option<File> {
        self.tty.try_clone().ok()
    }

    /// The `capture-pane` flags that print every row of a pane on a line
    /// of its own (no join) with the bytes a joined capture gives a row
    /// that did not wrap (trailing spaces kept, cells as far as tmux's
    /// `-J` goes): `-N` on tmux 3.2-3.3, `-N -T` from 3.4, where `-T` came
    /// and an unjoined capture otherwise runs to the row's allocated cells
    /// (cmd-capture-pane.c; unchanged for plain captures through tmux 3.8,
    /// whose new flags -F, -H, -L and -R panescan does not use). `None` for
    /// a version not known here: a counted sweep ([`super::counted`]) is
    /// then not used.
    pub(crate) fn counted_flags(&self) -> Option<&'static str> {
        match self.version? {
            (3, 2..=3) => Some("-N"),
            (3, 4..=8) => Some("-N -T"),
            _ => None,
        }
    }

    /// Where chunk `token`'s script (or FIFO) goes: beside the socket, named
    /// as [`remove_stale_scripts`] recognises.
    fn script_path(&self, token: &str) -> PathBuf {
        self.dir.join(format!("{SCRIPT_PREFIX}{token}"))
    }

    /// Makes a FIFO only panescan can open, named as a script is, for an
    /// early client to read its script from ([`super::spare`]).
    pub(crate) fn fifo(&self, token: &str) -> Option<ScriptFile> {
        let path = self.script_path(token);
        rustix::fs::mkfifoat(
            rustix::fs::CWD,
            &path,
            rustix::fs::Mode::from_raw_mode(0o600),
        )
        .ok()?;
        Some(ScriptFile { path })
    }

    /// Writes `script` to a new file only panescan can read, named with
    /// the chunk's `token` (128 random bits: no name is guessed or reused).
    pub(crate) fn script_file(&self, token: &str, script: &str) -> Option<ScriptFile> {
        let path = self.script_path(token);
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
            .ok()?;
        let file_guard = ScriptFile { path };
        file.write_all(script.as_bytes()).ok()?;
        Some(file_guard)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_stale_scripts_named_by_panescan_are_removed() {
        let dir = std::env::temp_dir().join(format!(
            "panescan-stale-scripts-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir(&dir).unwrap_or_default();
        let token = "0123456789abcdef0123456789abcdef";
        let names = [
            format!("{SCRIPT_PREFIX}{token}"),
            format!("{SCRIPT_PREFIX}Ab3DeFgH1jKlMnOpQr5tUv"),
            format!("{SCRIPT_PREFIX}{token}x"),
            format!("{SCRIPT_PREFIX}short"),
            format!("{SCRIPT_PREFIX}Ab3DeFgH1jKlMnOpQr5t-v"),
            "default".to_owned(),
        ];
        for n in &names {
            std::fs::write(dir.join(n), b"x").unwrap_or_default();
        }
        let an_hour_on = SystemTime::now() + STALE_SCRIPT + Duration::from_secs(60);
        remove_stale_scripts(&dir, SystemTime::now());
        assert!(dir.join(&names[0]).exists(), "a fresh script is kept");
        assert!(dir.join(&names[1]).exists(), "a fresh script is kept");
        remove_stale_scripts(&dir, an_hour_on);
        let left: Vec<bool> = names.iter().map(|n| dir.join(n).exists()).collect();
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(left, [false, false, true, true, true, true]);
    }

    #[test]
    fn only_a_live_pane_gives_its_terminal() {
        let pts3 = Path::new("/dev/pts/3");
        assert_eq!(live_tty("0 /dev/pts/3 3.3a\n"), Some((pts3, "3.3a")));
        assert_eq!(live_tty("0 /dev/pts/3\n"), Some((pts3, "")));
        assert_eq!(live_tty("1 /dev/pts/3 3.3a\n"), None);
        assert_eq!(live_tty("0  3.3a\n"), None);
        assert_eq!(live_tty(""), None);
        assert_eq!(live_tty("0 pts/3 3.3a"), None);
    }

    #[test]
    fn counted_sweeps_only_on_versions_whose_flags_are_known() {
        assert_eq!(parse_version("3.3a"), Some((3, 3)));
        assert_eq!(parse_version("3.6b"), Some((3, 6)));
        assert_eq!(parse_version("3.10"), Some((3, 10)));
        assert_eq!(parse_version("next-3.6"), Some((3, 6)));
        assert_eq!(parse_version("master"), None);
        assert_eq!(parse_version(""), None);
        let flags = |v: &str| {
            let tty = File::open("/dev/null").unwrap();
            Anchor {
                pane: PaneId::from_number(0),
                tty,
                dir: PathBuf::new(),
                version: parse_version(v),
                last_look: std::sync::Mutex::new(Instant::now()),
            }
            .counted_flags()
        };
        assert_eq!(flags("3.2"), Some("-N"));
        assert_eq!(flags("3.3a"), Some("-N"));
        assert_eq!(flags("3.4"), Some("-N -T"));
        assert_eq!(flags("3.6b"), Some("-N -T"));
        assert_eq!(flags("3.1c"), None);
        assert_eq!(flags("3.7"), Some("-N -T"));
        assert_eq!(flags("next-3.8"), Some("-N -T"));
        assert_eq!(flags("3.9"), None);
        assert_eq!(flags("next-3.9"), None);
    }
}
