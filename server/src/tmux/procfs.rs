//! What tmux would print for a local pane's `pane_current_command` and
//! `pane_current_path`, read from `/proc` by panescan itself.
//!
//! tmux works these two fields out on its single thread, reading `/proc`
//! for every pane it is asked about: on hundreds of panes a good part of
//! what a search costs. When the server runs on this machine, panescan reads
//! the same files with tmux's rules (identical in 3.2-3.6b: format.c,
//! osdep-linux.c, names.c) and asks tmux only where it cannot be sure:
//!
//! * command: the first NUL-ended word of `/proc/PGRP/cmdline` of the pty's
//!   foreground group, through [`parse_window_name`]; missing or empty: tmux
//!   prints what panescan cannot know, so that pane is left to tmux;
//! * path: `readlink /proc/PGRP/cwd`, else the same for the pty's session,
//!   printed as read (a removed directory keeps ` (deleted)`), or empty.
//!
//! panescan cannot ask tmux's pty master, so it reads the pane process's
//! `/proc/PID/stat` instead: tmux starts every pane with `forkpty()`, so
//! that process leads the terminal's session, and its stat line carries the
//! foreground group (`tpgid`) and the session. Every step that could make
//! the answer differ from tmux's makes it answer nothing for that pane
//! ([`details`] says which). Why, in full: NOTES.md.

use std::collections::HashMap;
use std::io;
use std::path::Path;
use std::sync::Mutex;

use super::ids::PaneId;

/// tmux's `MAXPATHLEN` buffer for the cwd link: a longer target would be
/// cut by tmux (the kernel never makes one that long: an answer of this
/// length is left to tmux).
const MAXPATHLEN: usize = 4096;

/// How far the server's process start (from `/proc`) may be from the
/// `start_time` tmux reports: tmux reads the clock right after it forks,
/// and `btime` is whole seconds.
const START_SLACK_SECS: i64 = 2;

/// `AT_CLKTCK` in the auxiliary vector: the kernel's `USER_HZ`, which is
/// what `sysconf(_SC_CLK_TCK)` answers (the crate denies unsafe code, so
/// not by calling it).
const AT_CLKTCK: usize = 17;

/// Bounds on what is read of a `/proc` file. A stat line is a few hundred
/// bytes. An environment without `TMUX_PANE` in its first MiB, or a command
/// line whose first word is longer (an argument is at most 128 KiB, but a
/// program may write over its arguments), is left to tmux.
const STAT_LIMIT: u64 = 4096;
const ENVIRON_LIMIT: u64 = 1 << 20;
const CMDLINE_LIMIT: u64 = 1 << 20;

/// Panes per reading thread: fewer are read on the calling thread (a
/// thread costs about as much to start as two panes take to read).
const PARALLEL_FROM: usize = 24;

/// At most this many threads read panes at once.
const MAX_THREADS: usize = 4;

/// The fields of a `/proc/PID/stat` line this module reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stat {
    /// Field 1.
    pub pid: i64,
    /// Field 3 (`R`, `S`, `Z`, ...).
    pub state: u8,
    /// Field 4.
    pub ppid: i64,
    /// Field 5: the process group (a shell's job).
    pub pgrp: i64,
    /// Field 6: the session id.
    pub session: i64,
    /// Field 7: the controlling terminal's device number (0: none).
    pub tty_nr: i64,
    /// Field 8: the foreground process group of the controlling terminal
    /// (-1: no terminal).
    pub tpgid: i64,
    /// Field 22: when the process started, in clock ticks since boot.
    pub starttime: u64,
}

/// Parses a `/proc/PID/stat` line; `None` if it is not one. The command
/// name (field 2) is in parentheses and may hold anything but NUL, `)`
/// and newlines included: the fields after it are read from after the
/// last `)`.
pub fn parse_stat(line: &[u8]) -> Option<Stat> {
    let close = memchr::memrchr(b')', line)?;
    let (head, tail) = line.split_at(close);
    let open = memchr::memchr(b'(', head)?;
    let pid = number(head.get(..open)?.trim_ascii())?;
    let mut fields = tail
        .get(1..)?
        .split(|b| *b == b' ')
        .filter(|f| !f.is_empty());
    // The field after skipping `n`: fields 3 and 4, 6 (5 skipped), 7, 8
    // and 22, in that order.
    let mut field = |n: usize| -> Option<&[u8]> { fields.nth(n) };
    let state = match field(0)? {
        [s] => *s,
        _ => return None,
    };
    let ppid = number(field(0)?)?;
    let pgrp = number(field(0)?)?;
    let session = number(field(0)?)?;
    let tty_nr = number(field(0)?)?;
    let tpgid = number(field(0)?)?;
    let starttime = u64::try_from(number(field(13)?)?).ok()?;
    Some(Stat {
        pid,
        state,
        ppid,
        pgrp,
        session,
        tty_nr,
        tpgid,
        starttime,
    })
}

/// A decimal integer, possibly negative, nothing else (trailing newline
/// aside).
fn number(text: &[u8]) -> Option<i64> {
    std::str::from_utf8(text).ok()?.trim_end().parse().ok()
}

/// The first NUL-terminated word of a `/proc/PID/cmdline`, as tmux's
/// `fgetc` loop reads it.
pub fn first_word(cmdline: &[u8]) -> &[u8] {
    cmdline.split(|b| *b == 0).next().unwrap_or_default()
}

/// names.c `parse_window_name()`, the same in tmux 3.2 to 3.6b: what tmux
/// makes of the foreground process's name. `None` where the answer would
/// depend on the C library rather than on tmux: a trailing byte outside
/// ASCII (its class under the server's locale) or a trailing `/` (which
/// `basename()` it was built with).
pub fn parse_window_name(word: &[u8]) -> Option<Vec<u8>> {
    // One leading quote skipped; cut at the next quote.
    let mut name = word.strip_prefix(b"\"").unwrap_or(word);
    if let Some(quote) = memchr::memchr(b'"', name) {
        name = name.get(..quote)?;
    }
    name = name.strip_prefix(b"exec ").unwrap_or(name);
    while let Some(rest) = name.strip_prefix(b" ").or_else(|| name.strip_prefix(b"-")) {
        name = rest;
    }
    if let Some(space) = memchr::memchr(b' ', name) {
        name = name.get(..space)?;
    }
    // Trailing bytes that are neither alphanumeric nor punctuation go, but
    // never the first one (`while (ptr > name ...)`).
    while let [rest @ .., last] = name {
        if rest.is_empty() || last.is_ascii_alphanumeric() || last.is_ascii_punctuation() {
            break;
        }
        if !last.is_ascii() {
            return None;
        }
        name = rest;
    }
    if name.first() == Some(&b'/') {
        // Every byte before the last `/` goes.
        if name.last() == Some(&b'/') {
            return None;
        }
        let slash = memchr::memrchr(b'/', name)?;
        name = name.get(slash + 1..)?;
    }
    Some(name.to_vec())
}

/// `btime` (boot time, seconds since the epoch) from `/proc/stat`.
fn parse_btime(proc_stat: &[u8]) -> Option<i64> {
    proc_stat
        .split(|b| *b == b'\n')
        .find_map(|l| l.strip_prefix(b"btime "))
        .and_then(number)
}

/// `AT_CLKTCK` from an auxiliary vector (`/proc/self/auxv`: native-endian
/// word pairs, type then value, up to `AT_NULL`).
pub fn parse_clock_ticks(auxv: &[u8]) -> Option<u64> {
    const WORD: usize = std::mem::size_of::<usize>();
    let mut words = auxv.chunks_exact(WORD).map(|w| {
        let mut b = [0u8; WORD];
        b.copy_from_slice(w);
        usize::from_ne_bytes(b)
    });
    while let (Some(kind), Some(value)) = (words.next(), words.next()) {
        match kind {
            0 => return None,
            AT_CLKTCK => return u64::try_from(value).ok().filter(|v| *v > 0),
            _ => {}
        }
    }
    None
}

/// Whether a process environment (`/proc/PID/environ`) says it was started
/// for `pane`: tmux gives every pane's process `TMUX_PANE=%N` (spawn.c, all
/// versions). The first `TMUX_PANE` counts, as for `getenv`.
fn environ_names_pane(environ: &[u8], pane: PaneId) -> bool {
    let want = format!("%{}", pane.number());
    environ
        .split(|b| *b == 0)
        .find_map(|entry| entry.strip_prefix(b"TMUX_PANE="))
        .is_some_and(|value| value == want.as_bytes())
}

/// The value of `name` in a process environment (`/proc/PID/environ`):
/// the first entry counts, as for `getenv`.
pub fn environ_value<'e>(environ: &'e [u8], name: &str) -> Option<&'e [u8]> {
    environ.split(|b| *b == 0).find_map(|entry| {
        entry
            .strip_prefix(name.as_bytes())
            .and_then(|rest| rest.strip_prefix(b"="))
    })
}

/// The environment `pid` was started with (`None`: not readable here).
pub fn environ_of(pid: u32) -> Option<Vec<u8>> {
    read_proc(&format!("/proc/{pid}/environ"), ENVIRON_LIMIT)
}

/// How many parents [`ancestors`] follows at most: a chain deeper than
/// this is not a process tree anyone runs an agent in.
const MAX_ANCESTORS: usize = 64;

/// `pid` and its parents, nearest first, up to (not including) pid 1 or
/// the first process whose `/proc` entry cannot be read; empty when even
/// `pid`'s cannot.
pub fn ancestors(pid: u32) -> Vec<u32> {
    let mut chain = Vec::new();
    let mut at = pid;
    while at > 1 && chain.len() < MAX_ANCESTORS && !chain.contains(&at) {
        let Some(stat) = read_proc(&format!("/proc/{at}/stat"), STAT_LIMIT)
            .as_deref()
            .and_then(parse_stat)
        else {
            break;
        };
        chain.push(at);
        at = u32::try_from(stat.ppid).unwrap_or(0);
    }
    chain
}

/// The lines of a `/proc/PID/status` that decide what that process may
/// read of another's `/proc` entry (`ptrace_may_access`: its uids, gids
/// and effective capabilities).
fn access_lines(status: &[u8]) -> Vec<&[u8]> {
    status
        .split(|b| *b == b'\n')
        .filter(|l| l.starts_with(b"Uid:") || l.starts_with(b"Gid:") || l.starts_with(b"CapEff:"))
        .collect()
}

/// `#{pid} #{start_time}` as tmux printed it.
pub fn parse_identity(text: &str) -> Option<(u32, i64)> {
    let mut words = text.split_whitespace();
    let pid = words.next()?.parse().ok()?;
    let start = words.next()?.parse().ok()?;
    words.next().is_none().then_some((pid, start))
}

/// The tmux server's process as seen in this machine's `/proc`, checked to
/// be the one tmux reports ([`ServerProcess::verify`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ServerProcess {
    pid: u32,
    /// Its start in clock ticks since boot: a pid reused by another
    /// process starts at another tick.
    starttime: u64,
}

impl ServerProcess {
    /// The tmux server that reports pid `pid` and `start_time` (seconds
    /// since the epoch), if `/proc/PID` is that process and panescan reads
    /// `/proc` as it does: same pid and user namespaces (so its pids are
    /// ours), a start within [`START_SLACK_SECS`] of `start_time`, and the
    /// same uids, gids and capabilities (so a file it may not read,
    /// panescan may not either, and the other way round).
    pub fn verify(pid: u32, start_time: i64) -> Option<ServerProcess> {
        if !cfg!(target_os = "linux") || pid == 0 {
            return None;
        }
        let dir = format!("/proc/{pid}");
        let stat = parse_stat(&std::fs::read(format!("{dir}/stat")).ok()?)?;
        if stat.pid != i64::from(pid) || matches!(stat.state, b'Z' | b'X' | b'x') {
            return None;
        }
        let hz = parse_clock_ticks(&std::fs::read("/proc/self/auxv").ok()?)?;
        let btime = parse_btime(&std::fs::read("/proc/stat").ok()?)?;
        let started = btime.checked_add(i64::try_from(stat.starttime / hz).ok()?)?;
        if started.abs_diff(start_time) > START_SLACK_SECS.unsigned_abs() {
            return None;
        }
        for ns in ["ns/pid", "ns/user"] {
            let theirs = std::fs::read_link(format!("{dir}/{ns}")).ok()?;
            if std::fs::read_link(format!("/proc/self/{ns}")).ok()? != theirs {
                return None;
            }
        }
        let theirs = std::fs::read(format!("{dir}/status")).ok()?;
        let ours = std::fs::read("/proc/self/status").ok()?;
        let (theirs, ours) = (access_lines(&theirs), access_lines(&ours));
        (theirs.len() == 3 && theirs == ours).then_some(ServerProcess {
            pid,
            starttime: stat.starttime,
        })
    }

    /// The server's pid.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Whether `/proc/PID` is still this process.
    fn alive(&self) -> bool {
        read_proc(&format!("/proc/{}/stat", self.pid), STAT_LIMIT)
            .and_then(|s| parse_stat(&s))
            .is_some_and(|s| s.starttime == self.starttime && s.state != b'Z')
    }
}

/// The first `limit` bytes of a `/proc` file, or all of it. Not
/// `std::fs::read`: that asks the file's size first (`statx`, and for a
/// `/proc` file of unknown size reads in small steps), which doubled what
/// reading a pane cost.
fn read_proc(path: &str, limit: u64) -> Option<Vec<u8>> {
    use std::io::Read;
    let mut bytes = Vec::with_capacity(4096);
    std::fs::File::open(path)
        .ok()?
        .take(limit)
        .read_to_end(&mut bytes)
        .ok()?;
    Some(bytes)
}

/// The NUL-terminated words of `bytes`, read up to `limit`: when the limit
/// was reached, the last word may have been cut, and is left out.
fn whole_words(bytes: &[u8], limit: u64) -> &[u8] {
    if (bytes.len() as u64) < limit {
        return bytes;
    }
    match memchr::memrchr(0, bytes) {
        Some(nul) => bytes.get(..=nul).unwrap_or_default(),
        None => &[],
    }
}

/// What reading one pane gave.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Outcome {
    /// tmux's `pane_current_command` and `pane_current_path`, and the
    /// start tick of the pane's process (found to be the pane's).
    Details(String, String, u64),
    /// The pane's process is not the server's child: the server behind the
    /// socket may have changed.
    NotChild,
    /// Not certain: ask tmux.
    Unsure,
}

/// What tmux would print for `pane` (whose process tmux reports as
/// `pane_pid`) as its `pane_current_command` and `pane_current_path`;
/// `None` when panescan cannot be certain and tmux must be asked: the
/// process is gone, a zombie or not the server's child, it does not lead
/// its terminal's session, its environment does not name `pane` (a dead
/// pane whose pid was reused), its terminal has no foreground group, the
/// group's `cmdline` is missing or empty (tmux would print the pane's
/// argv), its name ends in a way only the C library decides, or the
/// directory could not be read for a reason tmux might not share.
pub fn details(pane_pid: u32, pane: PaneId, server: &ServerProcess) -> Option<(String, String)> {
    match read_pane(pane_pid, pane, server, None) {
        Outcome::Details(command, path, _) => Some((command, path)),
        Outcome::NotChild | Outcome::Unsure => None,
    }
}

/// [`details`]; `owner_start`: the start tick of a process found before
/// to be this pane's (its environment need not be read again).
fn read_pane(
    pane_pid: u32,
    pane: PaneId,
    server: &ServerProcess,
    owner_start: Option<u64>,
) -> Outcome {
    if pane_pid == 0 {
        return Outcome::Unsure;
    }
    let dir = format!("/proc/{pane_pid}");
    let Some(stat) = read_proc(&format!("{dir}/stat"), STAT_LIMIT).and_then(|s| parse_stat(&s))
    else {
        return Outcome::Unsure;
    };
    if stat.pid != i64::from(pane_pid) || matches!(stat.state, b'Z' | b'X' | b'x') {
        return Outcome::Unsure;
    }
    if stat.ppid != i64::from(server.pid) {
        return Outcome::NotChild;
    }
    // The pane's process leads its terminal's session (forkpty), so its
    // terminal is the pane's and `session` is what TIOCGSID answers.
    if stat.session != i64::from(pane_pid) || stat.tty_nr == 0 || stat.tpgid <= 0 {
        return Outcome::Unsure;
    }
    // A process keeps its pid and start tick through exec, and no other
    // process has both: one found to be the pane's stays the pane's.
    if owner_start != Some(stat.starttime) {
        let ours = read_proc(&format!("{dir}/environ"), ENVIRON_LIMIT);
        if !ours.is_some_and(|e| environ_names_pane(whole_words(&e, ENVIRON_LIMIT), pane)) {
            return Outcome::Unsure;
        }
    }
    let group = format!("/proc/{}", stat.tpgid);
    let Some(name) = read_proc(&format!("{group}/cmdline"), CMDLINE_LIMIT)
        .map(|c| first_word(whole_words(&c, CMDLINE_LIMIT)).to_vec())
        .filter(|w| !w.is_empty())
        .and_then(|w| parse_window_name(&w))
    else {
        return Outcome::Unsure;
    };
    let Some(path) = cwd(Path::new(&group), Path::new(&dir)) else {
        return Outcome::Unsure;
    };
    Outcome::Details(
        String::from_utf8_lossy(&name).into_owned(),
        String::from_utf8_lossy(&path).into_owned(),
        stat.starttime,
    )
}

/// osdep-linux.c `osdep_get_cwd`: the foreground group's directory, else
/// the session's. tmux turns to the session when the first `readlink`
/// fails for any reason; panescan only when the group's process is gone or
/// a zombie (`ENOENT`), the one failure it knows tmux meets too. `None`
/// when it cannot tell what tmux reads, or tmux would print nothing (a
/// rare race: left to tmux).
fn cwd(group: &Path, session: &Path) -> Option<Vec<u8>> {
    use std::os::unix::ffi::OsStrExt;
    let link = match std::fs::read_link(group.join("cwd")) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => std::fs::read_link(session.join("cwd")),
        other => other,
    };
    let bytes = link.ok()?.into_os_string();
    let bytes = bytes.as_bytes();
    (!bytes.is_empty() && bytes.len() < MAXPATHLEN).then(|| bytes.to_vec())
}

/// A pane to read: where its answer goes, its id and pid, and the start
/// tick of the process last found to be its own.
#[derive(Clone, Copy, Debug)]
struct Todo {
    slot: usize,
    pane: PaneId,
    pid: u32,
    owner_start: Option<u64>,
}

/// Reads `panes`, on a few threads when there are many: the kernel
/// formats every `/proc` file on the reader's thread (~12 µs a pane).
/// Threads of their own rather than rayon's pool, which the engine's scans
/// of other searches may hold.
fn read_panes(panes: &[Todo], server: &ServerProcess) -> Vec<Outcome> {
    let read = |t: &Todo| read_pane(t.pid, t.pane, server, t.owner_start);
    let threads = cores().min(MAX_THREADS).min(panes.len() / PARALLEL_FROM);
    if threads < 2 {
        return panes.iter().map(read).collect();
    }
    let chunk = panes.len().div_ceil(threads);
    std::thread::scope(|scope| {
        let mut chunks = panes.chunks(chunk);
        let here = chunks.next().unwrap_or_default();
        let spawned: Vec<_> = chunks
            .map(|c| {
                let thread = std::thread::Builder::new()
                    .name("panescan-procfs".into())
                    .spawn_scoped(scope, move || c.iter().map(read).collect::<Vec<_>>());
                (c, thread)
            })
            .collect();
        let mut out: Vec<Outcome> = here.iter().map(read).collect();
        for (c, thread) in spawned {
            match thread.map(|t| t.join()) {
                Ok(Ok(outcomes)) => out.extend(outcomes),
                // No thread to be had: read them here.
                Err(_) => out.extend(c.iter().map(read)),
                // Never expected (nothing in a read panics): ask tmux.
                Ok(Err(_)) => out.extend(c.iter().map(|_| Outcome::Unsure)),
            }
        }
        out
    })
}

/// The cores this process may run on (asked once: the answer reads
/// cgroup files).
fn cores() -> usize {
    static CORES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// At most this many panes' processes are remembered as their panes'
/// (then the memory starts again).
const MAX_OWNERS: usize = 4096;

/// What tmux last reported about its server process, kept per server
/// (beside its connection, in `tmux::Server`) so a search asks it once,
/// not every time; and which processes were found to be their panes'.
#[derive(Debug, Default)]
pub struct ServerCache {
    /// `None` until asked; then the process if it could be verified.
    known: Mutex<Option<Option<ServerProcess>>>,
    /// Start ticks of the processes found to be their panes' (by pane and
    /// pid): reading one's environment costs as much as the rest.
    owners: Mutex<HashMap<(PaneId, u32), u64>>,
}

impl ServerCache {
    /// The details of every pane of `panes` (id and pid, when listed) that
    /// can be read from `/proc` with certainty; `None` for the others.
    /// `ask` asks tmux for `#{pid} #{start_time}`: once when nothing is
    /// known, and once more when a pane's process is not the known
    /// server's child (the socket may now lead to another server).
    pub(crate) fn details(
        &self,
        panes: &[(PaneId, Option<u32>)],
        mut ask: impl FnMut() -> Option<(u32, i64)>,
    ) -> Vec<Option<(String, String)>> {
        let mut out = vec![None; panes.len()];
        if !cfg!(target_os = "linux") || panes.iter().all(|p| p.1.is_none()) {
            return out;
        }
        let mut server = self.server(&mut ask, false);
        let mut todo = self.todo(panes);
        let mut asked_again = false;
        while let Some(known) = server {
            let outcomes = read_panes(&todo, &known);
            let mut strays = Vec::new();
            let mut owners = Vec::new();
            for (entry, outcome) in todo.iter().zip(outcomes) {
                match outcome {
                    Outcome::Details(command, path, start) => {
                        owners.push(((entry.pane, entry.pid), start));
                        if let Some(slot) = out.get_mut(entry.slot) {
                            *slot = Some((command, path));
                        }
                    }
                    Outcome::NotChild => strays.push(*entry),
                    Outcome::Unsure => {}
                }
            }
            self.remember(owners);
            if strays.is_empty() || asked_again {
                break;
            }
            asked_again = true;
            todo = strays;
            // Retried only if tmux now names another process.
            server = self.server(&mut ask, true).filter(|s| *s != known);
        }
        out
    }

    /// The panes of `panes` with a pid, with what is remembered of them.
    fn todo(&self, panes: &[(PaneId, Option<u32>)]) -> Vec<Todo> {
        let owners = crate::sync::lock(&self.owners);
        panes
            .iter()
            .enumerate()
            .filter_map(|(slot, &(pane, pid))| {
                let pid = pid?;
                let owner_start = owners.get(&(pane, pid)).copied();
                Some(Todo {
                    slot,
                    pane,
                    pid,
                    owner_start,
                })
            })
            .collect()
    }

    fn remember(&self, found: Vec<((PaneId, u32), u64)>) {
        let mut owners = crate::sync::lock(&self.owners);
        if owners.len() + found.len() > MAX_OWNERS {
            owners.clear();
        }
        owners.extend(found);
    }

    /// The server process, asking tmux if nothing is known yet, if the
    /// known process has gone, or if `again`.
    fn server(
        &self,
        ask: &mut impl FnMut() -> Option<(u32, i64)>,
        again: bool,
    ) -> Option<ServerProcess> {
        let cached = *crate::sync::lock(&self.known);
        match cached {
            Some(Some(s)) if !again && s.alive() => return Some(s),
            // Verified once and found unusable (another namespace, another
            // user): asking again would tell the same.
            Some(None) if !again => return None,
            _ => {}
        }
        let (pid, start) = ask()?;
        let fresh = ServerProcess::verify(pid, start);
        *crate::sync::lock(&self.known) = Some(fresh);
        if fresh != cached.flatten() {
            // Another server's panes: nothing known of them.
            crate::sync::lock(&self.owners).clear();
        }
        fresh
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stat_line(comm: &str) -> Vec<u8> {
        format!(
            "4242 ({comm}) S 17 4243 4242 34817 5000 4194560 1 2 3 4 5 6 7 8 20 0 1 0 987654 1 2 3\n"
        )
        .into_bytes()
    }

    #[test]
    fn stat_fields_are_read_after_the_last_parenthesis() {
        for comm in [
            "bash",
            "a b",
            "x) S 1 2 3",
            "((",
            ")",
            "new\nline",
            "",
            "a)b(c)",
        ] {
            let s = parse_stat(&stat_line(comm)).unwrap_or_else(|| panic!("{comm:?}"));
            assert_eq!(
                s,
                Stat {
                    pid: 4242,
                    state: b'S',
                    ppid: 17,
                    pgrp: 4243,
                    session: 4242,
                    tty_nr: 34817,
                    tpgid: 5000,
                    starttime: 987654,
                },
                "{comm:?}"
            );
        }
        // No terminal: tpgid -1, tty_nr 0.
        let s = parse_stat(b"9 (sleep) R 1 9 9 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 77 0").unwrap();
        assert_eq!((s.tty_nr, s.tpgid, s.starttime), (0, -1, 77));
    }

    #[test]
    fn short_or_garbled_stat_lines_are_refused() {
        let full = stat_line("bash");
        for cut in 0..full.len() - 30 {
            assert_eq!(parse_stat(&full[..cut]), None, "{cut}");
        }
        for bad in [
            &b""[..],
            b")",
            b"(",
            b"12 bash S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20",
            b"12 (bash) SS 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20",
            b"12 (bash) S x 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20",
            b"x (bash) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20",
            b"12 (bash) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 -19 20",
            b"12 (bash) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 99999999999999999999",
            b"\xff\xfe (\xff) \xff",
        ] {
            assert_eq!(parse_stat(bad), None, "{:?}", String::from_utf8_lossy(bad));
        }
    }

    fn name(word: &str) -> Option<String> {
        parse_window_name(word.as_bytes()).map(|n| String::from_utf8(n).unwrap())
    }

    #[test]
    fn window_names_follow_tmux() {
        let cases = [
            ("bash", "bash"),
            ("-bash", "bash"),
            ("--  -zsh", "zsh"),
            ("/usr/bin/vim", "vim"),
            ("/bin/sleep 100", "sleep"),
            ("exec sleep", "sleep"),
            ("exec  --x y", "x"),
            ("exec", "exec"),
            ("execsleep", "execsleep"),
            ("\"quoted\" rest", "quoted"),
            ("\"unclosed", "unclosed"),
            ("a\"b", "a"),
            ("\"\"", ""),
            ("\"exec /opt/x/prog -v\"", "prog"),
            ("", ""),
            ("   ", ""),
            ("---", ""),
            ("exec ", ""),
            ("python3", "python3"),
            ("tail\x7f\t\r", "tail"),
            ("\t", "\t"),
            ("x\x01", "x"),
            ("dots...", "dots..."),
            ("ends:", "ends:"),
            ("/path/to/prog\x01", "prog"),
            ("relative/path/prog", "relative/path/prog"),
            ("caf\u{e9}1", "caf\u{e9}1"),
        ];
        for (word, want) in cases {
            assert_eq!(name(word).as_deref(), Some(want), "{word:?}");
        }
        // Left to tmux: the C library decides.
        for word in ["caf\u{e9}", "/usr/bin/", "/", "//", "/x/\u{e9}"] {
            assert_eq!(name(word), None, "{word:?}");
        }
    }

    #[test]
    fn the_first_word_of_a_cmdline_is_up_to_its_first_nul() {
        assert_eq!(first_word(b"sleep\x00100\x00"), b"sleep");
        assert_eq!(first_word(b"no nul at all"), b"no nul at all");
        assert_eq!(first_word(b"\x00after"), b"");
        assert_eq!(first_word(b""), b"");
        // A read that reached its bound loses its last, maybe cut, word.
        assert_eq!(whole_words(b"a\0bc", 6), b"a\0bc");
        assert_eq!(whole_words(b"a\0bc", 4), b"a\0");
        assert_eq!(whole_words(b"abcde", 5), b"");
        assert_eq!(first_word(whole_words(b"abcde", 5)), b"");
        assert_eq!(whole_words(b"ab\0", 3), b"ab\0");
    }

    #[test]
    fn boot_time_clock_ticks_environment_and_identity() {
        let stat = b"cpu  1 2 3\ncpu0 1 2 3\nintr 5\nbtime 1700000000\nprocesses 9\n";
        assert_eq!(parse_btime(stat), Some(1_700_000_000));
        assert_eq!(parse_btime(b"cpu 1\nbtime x\n"), None);
        assert_eq!(parse_btime(b""), None);

        let words =
            |pairs: &[usize]| -> Vec<u8> { pairs.iter().flat_map(|w| w.to_ne_bytes()).collect() };
        assert_eq!(
            parse_clock_ticks(&words(&[6, 4096, 17, 100, 0, 0])),
            Some(100)
        );
        assert_eq!(parse_clock_ticks(&words(&[6, 4096, 0, 0, 17, 100])), None);
        assert_eq!(parse_clock_ticks(&words(&[17, 0])), None);
        let mut cut = words(&[6, 4096, 17, 100]);
        cut.truncate(cut.len() - 1);
        assert_eq!(parse_clock_ticks(&cut), None);

        let pane = PaneId::from_number(12);
        assert!(environ_names_pane(b"A=1\0TMUX_PANE=%12\0B=2\0", pane));
        assert!(environ_names_pane(b"TMUX_PANE=%12", pane));
        assert!(!environ_names_pane(b"TMUX_PANE=%120\0", pane));
        assert!(!environ_names_pane(b"TMUX_PANE=%1\0TMUX_PANE=%12\0", pane));
        assert!(!environ_names_pane(b"XTMUX_PANE=%12\0", pane));
        assert!(!environ_names_pane(b"", pane));

        let status = b"Name:\tbash\nUid:\t1 1 1 1\nGid:\t2 2 2 2\nGroups:\t3\nCapEff:\t0\n";
        assert_eq!(
            access_lines(status),
            [&b"Uid:\t1 1 1 1"[..], b"Gid:\t2 2 2 2", b"CapEff:\t0"]
        );

        assert_eq!(
            parse_identity("123 1700000000\n"),
            Some((123, 1_700_000_000))
        );
        for bad in ["", "123", "x 1", "1 2 3", "-1 5"] {
            assert_eq!(parse_identity(bad), None, "{bad:?}");
        }
    }

    /// This test process's pid and start (seconds since the epoch), as
    /// tmux's `#{pid} #{start_time}` would give a server's.
    fn own_pid_and_start() -> (u32, i64) {
        let stat = parse_stat(&std::fs::read("/proc/self/stat").unwrap()).unwrap();
        let hz = parse_clock_ticks(&std::fs::read("/proc/self/auxv").unwrap()).unwrap();
        let btime = parse_btime(&std::fs::read("/proc/stat").unwrap()).unwrap();
        (std::process::id(), btime + (stat.starttime / hz) as i64)
    }

    #[test]
    fn a_server_process_is_known_by_its_start_and_namespaces() {
        // verify() accepts a process whose start matches: this test's own
        // process stands in for a server (same namespaces and user).
        let (me, started) = own_pid_and_start();
        let found = ServerProcess::verify(me, started).unwrap();
        assert_eq!(found.pid(), me);
        assert!(found.alive());
        assert_eq!(ServerProcess::verify(me, started - 60), None);
        assert_eq!(ServerProcess::verify(me, started + 60), None);
        assert_eq!(ServerProcess::verify(0, started), None);
        // It has no pane: asked about, it is not a pane of itself.
        assert_eq!(details(me, PaneId::from_number(0), &found), None);
    }

    #[test]
    fn the_server_is_asked_for_once_and_again_only_for_a_stray_pane() {
        let (me, started) = own_pid_and_start();
        let asked = std::cell::Cell::new(0);
        let ask = || {
            asked.set(asked.get() + 1);
            Some((me, started))
        };
        let pane = PaneId::from_number(1);
        let cache = ServerCache::default();
        // No pid listed: nothing to read, nothing asked.
        assert_eq!(cache.details(&[(pane, None)], ask), [None]);
        assert_eq!(asked.get(), 0);
        // A process that is not the known server's child (pid 1's parent
        // is 0): asked once for the server, then once more, no further.
        assert_eq!(
            cache.details(&[(pane, Some(1)), (pane, Some(1))], ask),
            [None, None]
        );
        assert_eq!(asked.get(), 2);
        assert_eq!(cache.details(&[(pane, Some(1))], ask), [None]);
        assert_eq!(asked.get(), 3);
        // A process that is gone: the known server is kept, not asked for.
        assert_eq!(cache.details(&[(pane, Some(4_000_000_000))], ask), [None]);
        assert_eq!(asked.get(), 3);

        // A server that cannot be verified is remembered as such.
        let unusable = ServerCache::default();
        let wrong = || {
            asked.set(asked.get() + 1);
            Some((me, started - 100))
        };
        for _ in 0..3 {
            assert_eq!(unusable.details(&[(pane, Some(1))], wrong), [None]);
        }
        assert_eq!(asked.get(), 4);
        // tmux not answering is not remembered.
        let silent = ServerCache::default();
        let none = || {
            asked.set(asked.get() + 1);
            None
        };
        for _ in 0..2 {
            assert_eq!(silent.details(&[(pane, Some(1))], none), [None]);
        }
        assert_eq!(asked.get(), 6);
    }

    proptest::proptest! {
        #[test]
        fn parsers_never_panic(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..200)) {
            let _ = parse_stat(&bytes);
            let _ = parse_window_name(first_word(&bytes));
            let _ = parse_btime(&bytes);
            let _ = parse_clock_ticks(&bytes);
            let _ = environ_names_pane(&bytes, PaneId::from_number(1));
            let _ = access_lines(&bytes);
            let _ = parse_identity(&String::from_utf8_lossy(&bytes));
        }
    }
}
