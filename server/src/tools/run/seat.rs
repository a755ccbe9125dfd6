//! Who sits at a pane's terminal now, read from this machine's `/proc`
//! and the terminal itself: the process leading the terminal's foreground
//! group (what tmux names `pane_current_command`), how long it has run,
//! and whether a shell's line editor is reading a command line.
//!
//! What must hold: a command is typed only when a shell leads the
//! foreground group and, for a shell with a line editor (bash, zsh,
//! fish), that editor reads (the terminal is out of canonical mode). A
//! shell by name is not enough: `bash -c 'read -p "Proceed? " a'` is
//! "bash", in canonical mode, answering its own question. A shell that
//! does not edit lines (sh, dash) cannot be told from one of its `read`s
//! and is taken at its name. Every read is bounded and never blocks; what
//! cannot be read is `None`, and the caller falls back on tmux's names.

use std::sync::OnceLock;
use std::time::Duration;

use super::shell::{edits_lines, shell_name, Shell};
use crate::tmux::procfs;

/// What leads a pane's terminal.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Seat {
    /// A shell at its prompt (for a shell without a line editor: a shell
    /// leads, which is all that can be told).
    Prompt(Shell),
    /// A shell with a line editor leads, but the editor is not reading: it
    /// runs its prompt hooks' builtins, or a script or builtin reads the
    /// terminal (`read`).
    ShellNotReading(String),
    /// Another program leads; `young`: it started less than
    /// [`PROMPT_WAIT`] ago (a prompt hook's process, e.g. starship).
    Program {
        /// Its name, as tmux would show it.
        name: String,
        /// Started less than [`PROMPT_WAIT`] ago.
        young: bool,
    },
}

/// How long a call waits for a shell's prompt to be drawn (its prompt
/// hooks run, its line editor starts) before it refuses.
pub const PROMPT_WAIT: Duration = Duration::from_millis(2000);

/// Longest `/proc` file read here.
const PROC_LIMIT: usize = 64 * 1024;

impl Seat {
    /// Whether waiting may turn this into a prompt: a shell busy with its
    /// prompt, or a fresh process under a pane whose own process is a
    /// line-editing shell (a prompt hook).
    pub fn may_settle(&self, own_shell_edits: bool) -> bool {
        match self {
            Seat::Prompt(_) => false,
            Seat::ShellNotReading(_) => true,
            Seat::Program { young, .. } => *young && own_shell_edits,
        }
    }
}

/// Who leads the terminal of the pane whose own process is `pane_pid` and
/// whose terminal is `tty`; `None` when `/proc` cannot tell (another pid
/// namespace, the process gone).
pub fn seat(pane_pid: u32, tty: &str) -> Option<Seat> {
    let leader = u32::try_from(stat(pane_pid)?.tpgid)
        .ok()
        .filter(|p| *p > 0)?;
    let Some(name) = name_of(leader) else {
        // The leader just exited (a zombie has no command line): a
        // prompt hook's process, most likely; look again.
        return Some(Seat::Program {
            name: String::new(),
            young: true,
        });
    };
    match Shell::of(&name) {
        Some(shell) if !edits_lines(&name) => Some(Seat::Prompt(shell)),
        Some(shell) => Some(match line_editor_reading(tty) {
            Some(false) => Seat::ShellNotReading(name),
            // Reading, or the terminal's settings cannot be read: at its
            // prompt as far as can be told.
            _ => Seat::Prompt(shell),
        }),
        None => {
            let young = age(leader).is_some_and(|a| a < PROMPT_WAIT);
            Some(Seat::Program { name, young })
        }
    }
}

/// Whether `pane_pid`'s shell is at its prompt now: `Some(false)` only
/// when it is certainly not (another program or a busy shell leads).
pub fn at_prompt(pane_pid: Option<u32>, tty: &str) -> Option<bool> {
    seat(pane_pid?, tty).map(|s| matches!(s, Seat::Prompt(_)))
}

/// The name of the process leading the terminal of the pane whose own
/// process is `pane_pid` (the shell at the prompt, maybe one the pane's
/// shell started).
pub fn leader_name(pane_pid: u32) -> Option<String> {
    let leader = u32::try_from(stat(pane_pid)?.tpgid).ok()?;
    name_of(leader)
}

/// The name tmux shows for process `pid` (its command line's first word,
/// through tmux's own rules), a login shell's leading `-` stripped.
pub fn name_of(pid: u32) -> Option<String> {
    let cmdline = read_proc(&format!("/proc/{pid}/cmdline"))?;
    let name = procfs::parse_window_name(procfs::first_word(&cmdline))?;
    let name = String::from_utf8(name).ok()?;
    (!name.is_empty()).then(|| shell_name(&name).to_owned())
}

/// Whether process `pid` leads the foreground process group of its
/// terminal (`tpgid` in `/proc/PID/stat`): the pane's own shell, not a
/// program or a nested shell it started. `None` when it cannot be told.
pub fn in_foreground(pid: u32) -> Option<bool> {
    Some(stat(pid)?.tpgid == i64::from(pid))
}

pub(super) fn stat(pid: u32) -> Option<procfs::Stat> {
    procfs::parse_stat(&read_proc(&format!("/proc/{pid}/stat"))?)
}

/// How long process `pid` has run: `/proc/uptime` less its start.
fn age(pid: u32) -> Option<Duration> {
    static HZ: OnceLock<Option<u64>> = OnceLock::new();
    let hz =
        (*HZ.get_or_init(|| procfs::parse_clock_ticks(&std::fs::read("/proc/self/auxv").ok()?)))?;
    let started = stat(pid)?.starttime;
    let uptime = read_proc("/proc/uptime")?;
    let up: f64 = std::str::from_utf8(&uptime)
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    let since_boot = Duration::try_from_secs_f64(started as f64 / hz as f64).ok()?;
    Duration::try_from_secs_f64(up)
        .ok()?
        .checked_sub(since_boot)
        .or(Some(Duration::ZERO))
}

pub(super) fn read_proc(path: &str) -> Option<Vec<u8>> {
    use std::io::Read;
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .ok()?
        .take(PROC_LIMIT as u64)
        .read_to_end(&mut bytes)
        .ok()?;
    Some(bytes)
}

/// Whether the terminal `tty` is out of canonical mode: a line editor
/// (readline, zle, fish) is reading a line, i.e. the shell sits at its
/// prompt. `None` when it cannot be told. The terminal is opened read-only,
/// never as a controlling terminal and without blocking, and only its
/// settings are read (as [`crate::tmux::capture::Anchor`] opens a pane's terminal).
pub fn line_editor_reading(tty: &str) -> Option<bool> {
    use std::os::unix::fs::OpenOptionsExt;
    if !tty.starts_with("/dev/") || tty.contains("..") {
        return None;
    }
    let terminal = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOCTTY | libc::O_NONBLOCK)
        .open(tty)
        .ok()?;
    let settings = rustix::termios::tcgetattr(&terminal).ok()?;
    Some(
        !settings
            .local_modes
            .contains(rustix::termios::LocalModes::ICANON),
    )
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn a_process_without_a_terminal_is_not_in_the_foreground() {
        // The test process has no controlling terminal under cargo, or is
        // not its foreground group leader; pid 0 has no /proc entry.
        assert_eq!(in_foreground(0), None);
        assert!(in_foreground(std::process::id()).is_some());
    }

    /// The terminal a test asks a session leader to read
    /// ([`reading_a_terminal_takes_no_controlling_terminal`]).
    const LEADER_TTY: &str = "PANESCAN_TEST_LEADER_TTY";

    /// Run as a session leader with no controlling terminal (`setsid`)
    /// by the test below, with [`LEADER_TTY`] set: reads that terminal's
    /// settings, then says whether this process now has a controlling
    /// terminal. Without the variable (a plain test run) it does nothing.
    #[test]
    fn leader_reads_a_terminal() {
        let Ok(tty) = std::env::var(LEADER_TTY) else {
            return;
        };
        let reading = line_editor_reading(&tty);
        let ctty = std::fs::File::open("/dev/tty").is_ok();
        println!("LEADER reading={reading:?} ctty={ctty}");
    }

    /// A session leader without a controlling terminal that opens a
    /// terminal no session holds takes it as its own unless it says
    /// O_NOCTTY: reading a pane's settings must never do that (a
    /// panescan run by a service manager leads its session, and a pane
    /// whose process exited holds no session). The terminal here is a
    /// pseudo-terminal a helper process opened and holds.
    #[test]
    fn reading_a_terminal_takes_no_controlling_terminal() {
        use std::io::{BufRead, BufReader};
        use std::process::{Command, Stdio};
        let hold = "import os, sys\nm, s = os.openpty()\nprint(os.ttyname(s), flush=True)\nos.close(s)\nsys.stdin.read()\n";
        let mut holder = Command::new("python3")
            .args(["-c", hold])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("python3 (a helper holding a pseudo-terminal)");
        let mut tty = String::new();
        BufReader::new(holder.stdout.take().unwrap())
            .read_line(&mut tty)
            .unwrap();
        let tty = tty.trim().to_owned();
        assert!(tty.starts_with("/dev/pts/"), "{tty:?}");
        let me = std::env::current_exe().unwrap();
        let out = Command::new("setsid")
            .arg("--wait")
            .arg(me)
            .args([
                "--exact",
                "tools::run::seat::tests::leader_reads_a_terminal",
            ])
            .args(["--nocapture", "--test-threads=1"])
            .env(LEADER_TTY, &tty)
            .stdin(Stdio::null())
            .output()
            .expect("setsid (util-linux)");
        drop(holder.stdin.take());
        let _ = holder.wait();
        let said = String::from_utf8_lossy(&out.stdout);
        // The harness prints the test's name on the same line first.
        let line = said
            .lines()
            .find_map(|l| l.find("LEADER ").map(|at| &l[at..]))
            .unwrap_or("");
        assert_eq!(line, "LEADER reading=Some(false) ctty=false", "{said}");
    }

    #[test]
    fn this_process_is_young_and_named() {
        let me = std::process::id();
        let a = age(me).unwrap();
        assert!(a < Duration::from_secs(24 * 3600), "{a:?}");
        assert!(name_of(me).is_some_and(|n| !n.is_empty()));
        assert_eq!(name_of(0), None);
    }

    /// A child in a process group of its own leads no terminal's
    /// foreground; its name is its program's, its age how long ago it was
    /// started (a lower bound: a sleep of this test's own; the upper one
    /// far from the machine's uptime).
    #[test]
    fn a_child_of_its_own_group_is_named_aged_and_not_in_the_foreground() {
        use std::os::unix::process::CommandExt;
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .process_group(0)
            .spawn()
            .unwrap();
        let pid = child.id();
        let started = std::time::Instant::now();
        std::thread::sleep(Duration::from_millis(1200));
        let name = name_of(pid);
        let fg = in_foreground(pid);
        let a = age(pid);
        let leader = leader_name(pid);
        let _ = child.kill();
        let _ = child.wait();
        assert_eq!(name.as_deref(), Some("sleep"));
        assert_eq!(fg, Some(false));
        let a = a.unwrap();
        assert!(a >= Duration::from_secs(1), "{a:?}");
        assert!(a <= started.elapsed() + Duration::from_secs(60), "{a:?}");
        // No terminal, or one whose foreground is not the child's group:
        // never the child itself.
        assert_ne!(leader.as_deref(), Some("sleep"));
    }

    /// Only a terminal under /dev is opened, no path that climbs out; a
    /// fresh terminal is in canonical mode (no line editor reads); what is
    /// not a terminal cannot tell.
    #[test]
    fn a_terminals_mode_is_read_only_under_dev() {
        // A new pseudo-terminal's master (closed again at once).
        assert_eq!(line_editor_reading("/dev/ptmx"), Some(false));
        assert_eq!(line_editor_reading("/dev/../dev/ptmx"), None);
        assert_eq!(line_editor_reading("/dev/null"), None);
        assert_eq!(line_editor_reading("/tmp/../dev/ptmx"), None);
        assert_eq!(at_prompt(None, "/dev/ptmx"), None);
    }

    #[test]
    fn only_busy_shells_and_fresh_hooks_may_settle() {
        let prog = |young| Seat::Program {
            name: "sleep".into(),
            young,
        };
        assert!(prog(true).may_settle(true));
        assert!(!prog(true).may_settle(false));
        assert!(!prog(false).may_settle(true));
        assert!(Seat::ShellNotReading("bash".into()).may_settle(false));
        assert!(!Seat::Prompt(Shell::Posix).may_settle(true));
    }
}
