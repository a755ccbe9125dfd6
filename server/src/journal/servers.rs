//! Which directory holds which tmux server's journal, and the bounds over
//! all of them.
//!
//! Layout under `--journal-dir` (the root): the daemon's default server
//! writes in the root itself, as panescan always did (so a journal written
//! before several servers could be journaled is that server's, read and
//! bounded as before); every other server named by `--journal-socket` has
//! `servers/<key>/`, where the key is the socket's last name made safe and
//! a hash of its whole path (stable across runs, distinct per socket).
//! Each directory is 0700 and names the sockets written into it in a
//! 0600 `sockets` file, one path a line (the root may name several: the
//! daemon's default server changed between runs).
//!
//! Must hold: two servers never write into one directory (pane ids repeat
//! across servers; a directory has one writer); records carry their
//! server anyway (`pid start_time@socket`), so readers filter by socket;
//! the bounds count every directory's files together, oldest first, and
//! never remove the newest segment or ledger file of a directory (a
//! writer may be appending to it).

use std::fs::{self, OpenOptions};
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::{dir, ledger, segment};

/// The subdirectory of the root holding the other servers' directories.
pub const SERVERS: &str = "servers";
/// The file naming the sockets a directory's journal is of.
pub const SOCKETS: &str = "sockets";

/// A socket's directory name under [`SERVERS`]: its last name (letters,
/// digits, `-`, `_`, `.` kept, 32 at most) and 16 hex digits of a SHA-256
/// of its whole path.
pub fn key(socket: &Path) -> String {
    let name: String = socket
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .take(32)
        .collect();
    let digest = Sha256::digest(socket.as_os_str().as_encoded_bytes());
    let hex: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
    // A name of dots alone (`.`, `..`) is not a directory name of its own.
    let name = if name.trim_matches('.').is_empty() {
        "socket".to_owned()
    } else {
        name
    };
    format!("{name}-{hex}")
}

/// Where `socket`'s journal is written: the root for the daemon's default
/// server, else its own directory under [`SERVERS`].
pub fn dir_of(root: &Path, socket: &Path, is_default: bool) -> PathBuf {
    if is_default {
        root.to_owned()
    } else {
        root.join(SERVERS).join(key(socket))
    }
}

/// Makes `dir` (0700, checked) the journal of `socket`: the socket is
/// added to its `sockets` file (0600) unless named there already.
pub fn claim(dir: &Path, socket: &Path) -> Result<(), String> {
    dir::ensure(dir)?;
    let file = dir.join(SOCKETS);
    if sockets_in(dir).iter().any(|s| s == socket) {
        return Ok(());
    }
    let mut line = socket.as_os_str().as_encoded_bytes().to_vec();
    line.push(b'\n');
    OpenOptions::new()
        .append(true)
        .create(true)
        .mode(0o600)
        .open(&file)
        .and_then(|mut f| f.write_all(&line))
        .map_err(|e| format!("cannot write {}: {e}", file.display()))
}

/// The sockets `dir`'s `sockets` file names (none when it has none).
pub fn sockets_in(dir: &Path) -> Vec<PathBuf> {
    let Ok(text) = fs::read_to_string(dir.join(SOCKETS)) else {
        return Vec::new();
    };
    text.lines()
        .filter(|l| !l.is_empty())
        .map(PathBuf::from)
        .collect()
}

/// Whether the root holds segments written before it named its sockets
/// (by a panescan that journaled one server only, its default).
fn unnamed_root(root: &Path) -> bool {
    !root.join(SOCKETS).exists() && segment::list(root).is_ok_and(|s| !s.is_empty())
}

/// The directory holding `socket`'s journal under `root`, or why there is
/// none (the message names the servers that are journaled). The root
/// counts when it names the socket, or names none (an older journal: its
/// records say their server, and readers filter by it).
pub fn find(root: &Path, socket: &Path) -> Result<PathBuf, String> {
    let own = root.join(SERVERS).join(key(socket));
    if sockets_in(&own).iter().any(|s| s == socket) {
        dir::check(&own)?;
        return Ok(own);
    }
    if sockets_in(root).iter().any(|s| s == socket) || unnamed_root(root) {
        return Ok(root.to_owned());
    }
    let known: Vec<String> = journaled(root)
        .into_iter()
        .map(|(s, _)| s.display().to_string())
        .collect();
    let known = if known.is_empty() {
        "none yet".to_owned()
    } else {
        known.join(", ")
    };
    Err(format!(
        "the tmux server at {} is not journaled (journaled servers: {known}): journal it with `panescan daemon --journal-socket {}`",
        socket.display(),
        socket.display()
    ))
}

/// Every socket named in the root's directories, with its directory.
pub fn journaled(root: &Path) -> Vec<(PathBuf, PathBuf)> {
    all_dirs(root)
        .into_iter()
        .flat_map(|d| sockets_in(&d).into_iter().map(move |s| (s, d.clone())))
        .collect()
}

/// The root and every directory under its [`SERVERS`] (real directories
/// only, not links).
pub fn all_dirs(root: &Path) -> Vec<PathBuf> {
    let mut out = vec![root.to_owned()];
    if let Ok(entries) = fs::read_dir(root.join(SERVERS)) {
        let mut subs: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
            .map(|e| e.path())
            .collect();
        subs.sort();
        out.extend(subs);
    }
    out
}

/// The journal's bounds over every server together: segments unchanged
/// for `max_age_ms` go, then the oldest (by when their first frame was
/// written) while all segments pass `max_bytes`; the ledger's files the
/// same within a sixteenth of it. Never the newest file of a directory.
/// The files removed.
pub fn enforce_bounds(root: &Path, max_bytes: u64, max_age_ms: i64, now_ms: i64) -> Vec<PathBuf> {
    let mut segments = Vec::new();
    let mut books = Vec::new();
    for d in all_dirs(root) {
        if let Ok(mut list) = segment::list(&d) {
            list.pop(); // The newest: being written.
            segments.extend(list.into_iter().map(|s| File {
                path: s.path,
                first_ms: s.first_ms,
                bytes: s.bytes,
                modified_ms: s.modified_ms,
            }));
        }
        if let Ok(mut list) = ledger::files(&d) {
            list.pop();
            books.extend(list.into_iter().filter_map(|(first_ms, path)| {
                let m = fs::symlink_metadata(&path).ok()?;
                Some(File {
                    first_ms,
                    bytes: m.len(),
                    modified_ms: std::os::unix::fs::MetadataExt::mtime(&m) * 1000,
                    path,
                })
            }));
        }
    }
    let mut removed = oldest_over(segments, max_bytes, max_age_ms, now_ms, &all_bytes(root));
    removed.extend(oldest_over(
        books,
        max_bytes / 16,
        max_age_ms,
        now_ms,
        &|| ledger_bytes(root),
    ));
    removed
}

/// How often [`Bounds`] enforces the bounds.
pub const BOUNDS_EVERY: std::time::Duration = std::time::Duration::from_secs(60);

/// A thread enforcing [`enforce_bounds`] at start and every
/// [`BOUNDS_EVERY`]; stop it to end the thread.
#[derive(Debug)]
pub struct Bounds {
    stop: crossbeam_channel::Sender<()>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Bounds {
    /// Starts bounding the journal under `root`.
    pub fn start(root: PathBuf, max_bytes: u64, max_age_ms: i64) -> Result<Bounds, String> {
        let (stop, stopped) = crossbeam_channel::bounded::<()>(1);
        let thread = std::thread::Builder::new()
            .name("journal-bounds".into())
            .spawn(move || loop {
                enforce_bounds(&root, max_bytes, max_age_ms, super::when::now_ms());
                if !matches!(
                    stopped.recv_timeout(BOUNDS_EVERY),
                    Err(crossbeam_channel::RecvTimeoutError::Timeout)
                ) {
                    return;
                }
            })
            .map_err(|e| format!("cannot start the journal's bounds thread: {e}"))?;
        Ok(Bounds {
            stop,
            thread: Some(thread),
        })
    }

    /// Ends the thread.
    pub fn stop(mut self) {
        let _ = self.stop.try_send(());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// A file the bounds may remove.
struct File {
    path: PathBuf,
    first_ms: i64,
    bytes: u64,
    modified_ms: i64,
}

/// Removes the expired `files`, then the oldest while `total()` passes
/// `max_bytes`. A file already gone (another reader's bounds) counts as
/// removed.
fn oldest_over(
    mut files: Vec<File>,
    max_bytes: u64,
    max_age_ms: i64,
    now_ms: i64,
    total: &dyn Fn() -> u64,
) -> Vec<PathBuf> {
    files.sort_by_key(|f| f.first_ms);
    let mut over = total();
    let mut removed = Vec::new();
    for f in files {
        let expired = now_ms - f.modified_ms > max_age_ms;
        if !expired && over <= max_bytes {
            continue;
        }
        match fs::remove_file(&f.path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                eprintln!("panescan journal: cannot remove {}: {e}", f.path.display());
                continue;
            }
        }
        over = over.saturating_sub(f.bytes);
        removed.push(f.path);
    }
    removed
}

/// Every segment's bytes, newest ones included.
fn all_bytes(root: &Path) -> impl Fn() -> u64 + '_ {
    move || {
        all_dirs(root)
            .iter()
            .filter_map(|d| segment::list(d).ok())
            .flatten()
            .map(|s| s.bytes)
            .sum()
    }
}

/// Every ledger file's bytes.
fn ledger_bytes(root: &Path) -> u64 {
    all_dirs(root)
        .iter()
        .filter_map(|d| ledger::files(d).ok())
        .flatten()
        .filter_map(|(_, p)| fs::symlink_metadata(p).ok())
        .map(|m| m.len())
        .sum()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use std::os::unix::fs::{MetadataExt, PermissionsExt};

    fn root(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("pj-servers-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        dir::ensure(&d).unwrap();
        d
    }

    #[test]
    fn keys_are_safe_stable_and_distinct() {
        let a = key(Path::new("/tmp/tmux-1000/work"));
        assert_eq!(a, key(Path::new("/tmp/tmux-1000/work")));
        assert!(
            a.starts_with("work-") && a.len() == "work-".len() + 16,
            "{a}"
        );
        assert_ne!(a, key(Path::new("/run/tmux-1000/work")));
        for odd in ["/x/..", "/x/a b/c d", "/", "/x/../../etc", "/x/\u{e9}\n"] {
            let k = key(Path::new(odd));
            assert!(
                !k.contains('/') && !k.starts_with('.') && !k.contains('\n'),
                "{k}"
            );
        }
    }

    #[test]
    fn a_server_is_found_where_it_was_claimed_and_others_are_refused() {
        let r = root("find");
        let (def, other) = (Path::new("/s/default"), Path::new("/s/other"));
        claim(&dir_of(&r, def, true), def).unwrap();
        let own = dir_of(&r, other, false);
        claim(&own, other).unwrap();
        claim(&own, other).unwrap();
        assert_eq!(sockets_in(&own), vec![other.to_owned()]);
        assert_eq!(fs::metadata(&own).unwrap().mode() & 0o777, 0o700);
        let mode = fs::metadata(own.join(SOCKETS)).unwrap().mode() & 0o777;
        assert_eq!(mode, 0o600);
        assert_eq!(find(&r, def).unwrap(), r);
        assert_eq!(find(&r, other).unwrap(), own);
        let err = find(&r, Path::new("/s/third")).unwrap_err();
        assert!(
            err.contains("not journaled") && err.contains("/s/other"),
            "{err}"
        );
        // Open to others: refused, not read.
        fs::set_permissions(&own, fs::Permissions::from_mode(0o755)).unwrap();
        assert!(find(&r, other).unwrap_err().contains("mode 755"));
        fs::remove_dir_all(&r).unwrap();
    }

    #[test]
    fn an_older_journal_without_names_answers_for_any_server() {
        let r = root("legacy");
        fs::write(r.join("0000000001000.pjs"), b"").unwrap();
        assert_eq!(find(&r, Path::new("/s/any")).unwrap(), r);
        fs::remove_dir_all(&r).unwrap();
    }

    #[test]
    fn bounds_count_every_server_and_keep_each_newest() {
        let r = root("bounds");
        let other = dir_of(&r, Path::new("/s/o"), false);
        claim(&other, Path::new("/s/o")).unwrap();
        // Root: segments at 1000, 3000 (newest); other: 2000, 4000 (newest).
        for (d, ms) in [(&r, 1000), (&other, 2000), (&r, 3000), (&other, 4000)] {
            fs::write(d.join(format!("{ms:013}.pjs")), vec![0u8; 100]).unwrap();
        }
        let now = segment::list(&r).unwrap()[0].modified_ms;
        // 400 bytes in all, 250 allowed: the two oldest go, one per dir.
        let removed = enforce_bounds(&r, 250, i64::MAX, now);
        let names: Vec<String> = removed
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["0000000001000.pjs", "0000000002000.pjs"]);
        // Nothing fits in 0 bytes, but each directory keeps its newest.
        enforce_bounds(&r, 0, i64::MAX, now);
        assert_eq!(segment::list(&r).unwrap().len(), 1);
        assert_eq!(segment::list(&other).unwrap().len(), 1);
        fs::remove_dir_all(&r).unwrap();
    }
}
