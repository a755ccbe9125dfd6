//! The pane's side: whether it sits at a shell prompt (and what it does
//! instead, in a refusal that says what to do), and the line typed into it.
//!
//! What is typed: the command inside `eval '...'`, quoted for the shell,
//! then (without OSC 133) the marker's printf. The shell reads the quoted
//! line whole whatever the command holds: an unbalanced quote, a
//! heredoc, a trailing `|` or `#` comment are the eval's business, which
//! reports them as an error with a status, and the shell is back at its
//! prompt (never at a continuation prompt, never holding a rejected line
//! in fish's editor).
//!
//! Out of the user's history (with the marker): the line starts with a
//! space, which bash (`HISTCONTROL` ignorespace or ignoreboth), zsh
//! (`HIST_IGNORE_SPACE`) and fish keep out of their history; bash's
//! `history -s` (which also takes the line itself out when it went in)
//! and zsh's `print -s` (only where the space kept the line out) then put
//! the command itself there, as the user would have typed it ([`History`]).

use std::time::{Duration, Instant};

use super::seat::{self, Seat, PROMPT_WAIT};
use crate::tmux::Pane;
use crate::tools::context::ToolError;

/// Shells whose exit status is `$?` (sh family).
const POSIX_SHELLS: &[&str] = &[
    "bash", "sh", "dash", "zsh", "ksh", "mksh", "ash", "yash", "posh", "busybox",
];
/// The C shells: `$status`, and no quoting a line may be wrapped in.
const C_SHELLS: &[&str] = &["csh", "tcsh"];
/// Shells that read their prompt through a line editor.
const LINE_EDITING_SHELLS: &[&str] = &["bash", "zsh", "fish"];
/// Programs that page text: quit with `q`, not interrupted.
const PAGERS: &[&str] = &["less", "more", "most", "man", "pager", "pg"];
/// How often a call waiting for a prompt looks again.
const PROMPT_STEP: Duration = Duration::from_millis(2);

/// The shell's name in `command` (`pane_current_command`: a login shell
/// may show as `-bash`).
pub(super) fn shell_name(command: &str) -> &str {
    command.trim_start_matches('-')
}

/// The shell family of a pane's foreground program, if it is a shell.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shell {
    /// `$?`, POSIX quoting.
    Posix,
    /// fish: `$status`, its own quoting.
    Fish,
    /// csh, tcsh: `$status`; the command is typed as it is.
    Csh,
}

impl Shell {
    /// The family of `command` (`pane_current_command`: a login shell may
    /// show as `-bash`).
    pub fn of(command: &str) -> Option<Shell> {
        let name = shell_name(command);
        if POSIX_SHELLS.contains(&name) {
            Some(Shell::Posix)
        } else if name == "fish" {
            Some(Shell::Fish)
        } else if C_SHELLS.contains(&name) {
            Some(Shell::Csh)
        } else {
            None
        }
    }

    fn status_var(self) -> &'static str {
        match self {
            Shell::Posix => "\"$?\"",
            Shell::Fish | Shell::Csh => "$status",
        }
    }

    /// The command that prints the marker `first` + `second` and the last
    /// status: the marker never appears whole in what is typed. It starts
    /// a row of its own, so a last line printed without a newline (or
    /// ended by a bare CR) is never overwritten by it, and erases the
    /// screen below first (`ESC [ J`): whatever the command drew there (a
    /// marker forged from the echoed line's pieces) is gone before the
    /// next prompt is drawn, so the lowest marker is the shell's.
    pub fn marker_command(self, first: &str, second: &str) -> String {
        format!(
            "printf '\\n\\033[J%s%s:%s\\n' {first} {second} {}",
            self.status_var()
        )
    }

    /// `command` as one `eval` of a single-quoted word, which the shell
    /// reads whole; a command of several lines gets its closing quote on a
    /// line of its own (a heredoc's terminator must end its line).
    fn wrapped(self, command: &str) -> String {
        let quoted = match self {
            Shell::Posix => command.replace('\'', "'\\''"),
            Shell::Fish => command.replace('\\', "\\\\").replace('\'', "\\'"),
            Shell::Csh => return command.to_owned(),
        };
        let close = if command.contains(['\n', '\r']) {
            "\n'"
        } else {
            "'"
        };
        format!("eval '{quoted}{close}")
    }
}

/// How a shell's history is kept free of panescan's marker, by the shell's
/// name (see the module doc).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum History {
    /// `history -s`: replaces the line when it went into the history.
    Bash,
    /// `print -s`, only under `HIST_IGNORE_SPACE` (without it the line
    /// stays, and the command must not be there twice).
    Zsh,
    /// Nothing to add (fish 3.6 has no `history append`; sh, dash).
    Other,
}

impl History {
    /// The history of the shell named `name`.
    pub fn of(name: &str) -> History {
        match shell_name(name) {
            "bash" => History::Bash,
            "zsh" => History::Zsh,
            _ => History::Other,
        }
    }

    /// What puts `command` (of one line) into the history after the line
    /// ran, if anything.
    fn restore(self, command: &str) -> String {
        let quoted = format!("'{}'", command.replace('\'', "'\\''"));
        match self {
            History::Bash => format!("; history -s -- {quoted}"),
            History::Zsh => {
                format!("; if [[ -o histignorespace ]]; then print -rs -- {quoted}; fi")
            }
            History::Other => String::new(),
        }
    }
}

/// Whether the shell `command` (a pane's `pane_current_command`) reads its
/// prompt through a line editor.
pub fn edits_lines(command: &str) -> bool {
    LINE_EDITING_SHELLS.contains(&shell_name(command))
}

/// The shell of `pane` once it sits at its prompt, waiting until `until`
/// (at most [`PROMPT_WAIT`]) while its prompt is being drawn; otherwise a
/// refusal saying what the pane is doing and what to do.
pub fn ready(pane: &Pane, until: Instant) -> Result<Shell, ToolError> {
    refuse_by_state(pane)?;
    let until = until.min(Instant::now() + PROMPT_WAIT);
    let by_name = || {
        Shell::of(&pane.pane_current_command).ok_or_else(|| busy(pane, &pane.pane_current_command))
    };
    let Some(pid) = pane.pane_pid else {
        return by_name();
    };
    let own_edits = seat::name_of(pid).is_some_and(|n| edits_lines(&n));
    loop {
        let Some(now) = seat::seat(pid, &pane.pane_tty) else {
            return by_name();
        };
        match now {
            Seat::Prompt(shell) => return Ok(shell),
            ref s if s.may_settle(own_edits) && Instant::now() < until => {
                std::thread::sleep(PROMPT_STEP);
            }
            Seat::ShellNotReading(name) => {
                return Err(ToolError::refused(format!(
                    "pane {}'s shell ({name}) is not reading a command line: a script or a builtin (read) waits for input there, or its prompt took over {} s to draw; answer it with send_keys, or wait",
                    pane.pane_id,
                    PROMPT_WAIT.as_secs()
                )))
            }
            Seat::Program { name, .. } if name.is_empty() => {
                return Err(busy(pane, &pane.pane_current_command))
            }
            Seat::Program { name, .. } => return Err(busy(pane, &name)),
        }
    }
}

/// Refusals read from tmux's state of the pane alone.
fn refuse_by_state(pane: &Pane) -> Result<(), ToolError> {
    let id = pane.pane_id;
    if pane.pane_dead {
        return Err(ToolError::refused(format!(
            "pane {id} is dead (its program exited): respawn it or pick another pane"
        )));
    }
    if pane.pane_in_mode {
        let mode = if pane.pane_mode.is_empty() {
            "a mode"
        } else {
            pane.pane_mode.as_str()
        };
        return Err(ToolError::refused(format!(
            "pane {id} is in {mode} (copy mode or similar): leave it first (send_keys q or Escape)"
        )));
    }
    if pane.alternate_on {
        let quit = if PAGERS.contains(&pane.pane_current_command.as_str()) {
            " (send_keys q)"
        } else {
            ""
        };
        return Err(ToolError::refused(format!(
            "pane {id} shows a full-screen program on the alternate screen ({}): quit it first{quit}",
            pane.pane_current_command
        )));
    }
    Ok(())
}

/// The refusal of a pane where `name`, not a shell, leads.
fn busy(pane: &Pane, name: &str) -> ToolError {
    let id = pane.pane_id;
    if PAGERS.contains(&name) {
        return ToolError::refused(format!(
            "pane {id} is showing the pager {name:?}, not sitting at a shell prompt: quit it first (send_keys q)"
        ));
    }
    ToolError::refused(format!(
        "pane {id} is running {name:?}, not sitting at a shell prompt: wait for it, or interrupt it (send_keys C-c)"
    ))
}

/// What is typed: the command wrapped for `shell` (see the module doc),
/// then (with a marker) the marker's printf, which runs whatever the
/// command's status, behind a space and followed by what puts the
/// command alone into the `history`.
pub fn typed_line(
    command: &str,
    marker: Option<&str>,
    shell: Shell,
    history: History,
) -> Result<String, ToolError> {
    if command.trim().is_empty() {
        return Err(ToolError::invalid("command is empty"));
    }
    if shell == Shell::Csh {
        return csh_line(command.trim_end(), marker);
    }
    let line = shell.wrapped(command);
    let Some(marker) = marker else {
        return Ok(line);
    };
    // A command of several lines is not written again: it stays out of
    // the history (or in it as typed, where a space does not keep it out).
    let restore = if command.contains(['\n', '\r']) || shell == Shell::Fish {
        String::new()
    } else {
        history.restore(command)
    };
    Ok(format!(" {line}; {marker}{restore}"))
}

/// A C shell's line: the command as it is, joined to the marker.
fn csh_line(body: &str, marker: Option<&str>) -> Result<String, ToolError> {
    let Some(marker) = marker else {
        return Ok(body.to_owned());
    };
    let body = body.trim_end_matches(';').trim_end();
    if body.ends_with('\\') {
        return Err(ToolError::invalid(
            "command ends with a backslash (a line continuation): remove it",
        ));
    }
    // `cmd &; x` is a syntax error; `cmd & x` runs x at once, as meant.
    let joint = if body.ends_with('&') && !body.ends_with("&&") {
        " "
    } else {
        "; "
    };
    Ok(format!("{body}{joint}{marker}"))
}

/// Checks what the caller asked to type.
pub fn check_command(command: &str, allow_multiline: bool, max: usize) -> Result<(), ToolError> {
    if command.trim().is_empty() {
        return Err(ToolError::invalid("command is empty"));
    }
    if command.len() > max {
        return Err(ToolError::invalid(format!(
            "command is {} bytes; at most {max}",
            command.len()
        )));
    }
    if !allow_multiline && (command.contains('\n') || command.contains('\r')) {
        return Err(ToolError::invalid(
            "command holds a newline (several lines would run one by one): set allow_multiline to send it as it is",
        ));
    }
    let bad = command
        .chars()
        .find(|&c| c.is_control() && c != '\n' && c != '\t' && !(allow_multiline && c == '\r'));
    if let Some(c) = bad {
        return Err(ToolError::invalid(format!(
            "command holds the control character {:?}, which a line editor would take as a key: remove it",
            c
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;
    use crate::config::Ceilings;
    use crate::testbed::private_server::{process_state, PrivateServer};
    use crate::tmux::{ServerSpec, Tmux};
    use crate::tools::context::{ServerArgs, ToolContext};

    #[test]
    fn login_shells_are_named_as_their_shell() {
        assert_eq!(Shell::of("-bash"), Some(Shell::Posix));
        assert!(edits_lines("bash") && edits_lines("-zsh") && edits_lines("fish"));
        assert!(!edits_lines("dash") && !edits_lines("-sh") && !edits_lines("vim"));
    }

    #[test]
    fn the_command_is_one_eval_and_the_marker_always_runs() {
        let m = Shell::Posix.marker_command("__psA", "B");
        assert_eq!(m, "printf '\\n\\033[J%s%s:%s\\n' __psA B \"$?\"");
        let posix =
            |c: &str, m: Option<&str>| typed_line(c, m, Shell::Posix, History::Other).unwrap();
        assert_eq!(posix("make", Some(&m)), format!(" eval 'make'; {m}"));
        assert_eq!(
            posix("echo it's", Some(&m)),
            format!(" eval 'echo it'\\''s'; {m}")
        );
        assert_eq!(posix("sleep 9 &", None), "eval 'sleep 9 &'");
        assert_eq!(posix("echo \\", None), "eval 'echo \\'");
        // A heredoc's terminator keeps its own line.
        assert_eq!(
            posix("cat <<E\nx\nE", Some(&m)),
            format!(" eval 'cat <<E\nx\nE\n'; {m}")
        );
        let fish = typed_line("echo 'a\\b'", None, Shell::Fish, History::Other).unwrap();
        assert_eq!(fish, "eval 'echo \\'a\\\\b\\''");
        assert!(Shell::Fish.marker_command("a", "b").ends_with("$status"));
        let csh = |c: &str| typed_line(c, Some(&m), Shell::Csh, History::Other);
        assert_eq!(csh("make ;; ").unwrap(), format!("make; {m}"));
        assert_eq!(csh("sleep 9 &").unwrap(), format!("sleep 9 & {m}"));
        assert!(csh("echo \\").is_err());
        assert!(typed_line("  ", None, Shell::Posix, History::Other).is_err());
    }

    #[test]
    fn the_command_alone_goes_back_into_the_history() {
        let m = Shell::Posix.marker_command("__psA", "B");
        let bash = typed_line("echo it's", Some(&m), Shell::Posix, History::of("-bash")).unwrap();
        assert_eq!(
            bash,
            format!(" eval 'echo it'\\''s'; {m}; history -s -- 'echo it'\\''s'")
        );
        let zsh = typed_line("ls", Some(&m), Shell::Posix, History::of("zsh")).unwrap();
        assert_eq!(
            zsh,
            format!(" eval 'ls'; {m}; if [[ -o histignorespace ]]; then print -rs -- 'ls'; fi")
        );
        // Not with OSC 133 (no marker), nor for several lines.
        assert_eq!(
            typed_line("ls", None, Shell::Posix, History::Bash).unwrap(),
            "eval 'ls'"
        );
        let lines = typed_line("a\nb", Some(&m), Shell::Posix, History::Bash).unwrap();
        assert!(!lines.contains("history"), "{lines}");
        let fish = typed_line("ls", Some(&m), Shell::Fish, History::of("fish")).unwrap();
        assert_eq!(fish, format!(" eval 'ls'; {m}"));
    }

    #[test]
    fn commands_are_checked() {
        assert!(check_command("ls", false, 100).is_ok());
        assert!(check_command("a\nb", false, 100).is_err());
        assert!(check_command("a\nb", true, 100).is_ok());
        assert!(check_command("a\x1bb", true, 100).is_err());
        assert!(check_command(" ", false, 100).is_err());
        assert!(check_command("xxxx", false, 3).is_err());
    }

    /// The refusals name what is wrong: a CR alone is a line end, not a
    /// key; a tab is typed as it is; the byte bound is inclusive.
    #[test]
    fn each_refusal_of_a_command_says_why() {
        let why =
            |c: &str, multi: bool, max: usize| check_command(c, multi, max).unwrap_err().message;
        assert!(why("a\rb", false, 100).contains("holds a newline"));
        assert!(why("a\nb", false, 100).contains("holds a newline"));
        assert!(check_command("a\rb", true, 100).is_ok());
        assert!(check_command("a\r\nb", true, 100).is_ok());
        assert!(check_command("printf 'a\tb'", false, 100).is_ok());
        assert!(check_command("a\tb", true, 100).is_ok());
        assert!(why("a\x07b", false, 100).contains("control character '\\u{7}'"));
        assert!(why("a\x1bb", true, 100).contains("control character"));
        assert!(check_command("xxx", false, 3).is_ok());
        assert!(why("xxxx", false, 3).contains("4 bytes; at most 3"));
        assert!(why(" \t", true, 100).contains("empty"));
    }

    /// A pane as tmux listed it, running `command`, with no process of
    /// its own to read: what tmux's state and names tell alone.
    fn listed_as(command: &str) -> Pane {
        let mut p = crate::tmux::inventory::pane_for_tests(7, 1);
        p.pane_current_command = command.into();
        p
    }

    fn refusal(pane: &Pane) -> String {
        match ready(pane, Instant::now() + Duration::from_secs(5)) {
            Ok(shell) => panic!("{} was taken as {shell:?}", pane.pane_current_command),
            Err(e) => e.message,
        }
    }

    #[test]
    fn a_pane_is_refused_by_tmuxs_state_first_then_by_its_program() {
        assert_eq!(
            ready(&listed_as("-bash"), Instant::now()).unwrap(),
            Shell::Posix
        );
        assert_eq!(
            ready(&listed_as("fish"), Instant::now()).unwrap(),
            Shell::Fish
        );
        let mut dead = listed_as("bash");
        dead.pane_dead = true;
        assert!(
            refusal(&dead).contains("pane %7 is dead"),
            "{}",
            refusal(&dead)
        );
        let mut copying = listed_as("bash");
        copying.pane_in_mode = true;
        assert!(refusal(&copying).contains("is in a mode"));
        copying.pane_mode = "copy-mode".into();
        assert!(refusal(&copying).contains("is in copy-mode"));
        let mut paging = listed_as("less");
        paging.alternate_on = true;
        let r = refusal(&paging);
        assert!(
            r.contains("alternate screen (less): quit it first (send_keys q)"),
            "{r}"
        );
        let mut editing = listed_as("vim");
        editing.alternate_on = true;
        let r = refusal(&editing);
        assert!(
            r.contains("(vim): quit it first") && !r.contains("send_keys q"),
            "{r}"
        );
        let r = refusal(&listed_as("less"));
        assert!(
            r.contains("showing the pager \"less\"") && r.contains("send_keys q"),
            "{r}"
        );
        let r = refusal(&listed_as("make"));
        assert!(
            r.contains("pane %7 is running \"make\"") && r.contains("C-c"),
            "{r}"
        );
    }

    /// A private server whose pane runs bash (no rc files, its prompt
    /// `ps> `), and a context on it.
    struct Bed {
        server: PrivateServer,
        ctx: ToolContext,
        tmux: Tmux,
        pane: String,
    }

    impl Bed {
        fn new() -> Bed {
            let server = PrivateServer::start("shell-ready", 80, 10).unwrap();
            let bash = "env PS1='ps> ' HISTFILE=/dev/null bash --norc --noprofile";
            server
                .run_ok(["respawn-pane", "-k", "-t", "%0", bash])
                .unwrap();
            let ctx = ToolContext::read_only(
                ServerSpec::named(server.socket_name()),
                Ceilings::default(),
            );
            let tmux = ctx.tmux(&ServerArgs::default()).unwrap();
            let bed = Bed {
                server,
                ctx,
                tmux,
                pane: "%0".into(),
            };
            bed.shows("ps> ");
            bed
        }

        fn listed(&self) -> Pane {
            let inv = self.ctx.inventory(&self.tmux).unwrap();
            inv.panes
                .into_iter()
                .find(|p| p.pane_id.to_string() == self.pane)
                .unwrap()
        }

        fn keys(&self, keys: &[&str]) {
            let mut cmd = vec!["send-keys", "-t", &self.pane];
            cmd.extend(keys);
            self.server.run_ok(cmd).unwrap();
        }

        /// Returns once the pane's last line that is not blank is `text`.
        fn shows(&self, text: &str) {
            let until = Instant::now() + Duration::from_secs(20);
            while Instant::now() < until {
                let screen = self
                    .server
                    .run_ok(["capture-pane", "-p", "-t", &self.pane])
                    .unwrap_or_default();
                if screen
                    .lines()
                    .rev()
                    .map(str::trim_end)
                    .find(|l| !l.is_empty())
                    == Some(text.trim_end())
                {
                    return;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            panic!("the pane never showed {text:?}");
        }

        /// Returns once `name` leads the pane's terminal.
        fn led_by(&self, pane: &Pane, name: &str) {
            let until = Instant::now() + Duration::from_secs(20);
            while Instant::now() < until {
                if pane.pane_pid.and_then(seat::leader_name).as_deref() == Some(name) {
                    return;
                }
                std::thread::sleep(Duration::from_millis(5));
            }
            panic!("{name} never led the pane");
        }
    }

    /// A leader that exited and was not reaped (a zombie: no command
    /// line, so no name) leads the terminal of a pane whose own program is
    /// no line-editing shell: refused by the name tmux listed, not by an
    /// empty one.
    #[test]
    fn a_nameless_leader_is_refused_by_the_listed_name() {
        let bed = Bed::new();
        // perl makes a child the terminal's foreground group, which exits
        // and is never waited for.
        let perl = "perl -MPOSIX -e 'my $c = fork; if (!$c) { sleep 1; exit 0 } \
                    setpgid($c, $c); tcsetpgrp(0, $c); sleep 60'";
        bed.server
            .run_ok(["respawn-pane", "-k", "-t", "%0", perl])
            .unwrap();
        let mut pane = bed.listed();
        pane.pane_current_command = "perl".into();
        let pid = pane.pane_pid.unwrap();
        let until = Instant::now() + Duration::from_secs(20);
        loop {
            let leader = seat::stat(pid).and_then(|s| u32::try_from(s.tpgid).ok());
            let gone = leader
                .filter(|&l| l != pid && l > 0)
                .and_then(process_state);
            if gone == Some('Z') {
                break;
            }
            assert!(
                Instant::now() < until,
                "the child never became a zombie leader"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(seat::leader_name(pid), None);
        let r = ready(&pane, Instant::now() + Duration::from_secs(5))
            .unwrap_err()
            .message;
        assert!(r.contains("is running \"perl\""), "{r}");
    }

    /// A shell at its prompt is ready; a young program its shell started
    /// (a prompt hook's, or a command that is about to end) is waited
    /// for, and named when it outlasts the wait; a shell whose builtin
    /// reads the terminal is refused once the wait is out.
    #[test]
    fn a_shell_is_waited_for_while_it_may_come_back_to_its_prompt() {
        let bed = Bed::new();
        let at_prompt = bed.listed();
        assert_eq!(at_prompt.pane_current_command, "bash");
        let far = || Instant::now() + Duration::from_secs(30);
        assert_eq!(ready(&at_prompt, far()).unwrap(), Shell::Posix);

        // A short command: waited for (within PROMPT_WAIT), then ready.
        bed.keys(&["sleep 1", "Enter"]);
        bed.led_by(&at_prompt, "sleep");
        assert_eq!(ready(&at_prompt, far()), Ok(Shell::Posix));
        bed.shows("ps>");

        // A long one outlasts the wait: refused by its own name, not by
        // what tmux listed before it started.
        bed.keys(&["sleep 30", "Enter"]);
        bed.led_by(&at_prompt, "sleep");
        let soon = Instant::now() + Duration::from_millis(200);
        let r = ready(&at_prompt, soon).unwrap_err().message;
        assert!(r.contains("is running \"sleep\""), "{r}");
        bed.keys(&["C-c"]);
        bed.shows("ps>");

        // bash's own `read`: bash leads, its line editor does not read.
        bed.keys(&["read -p 'Proceed? ' a", "Enter"]);
        bed.shows("Proceed?");
        let soon = Instant::now() + Duration::from_millis(300);
        let r = ready(&at_prompt, soon).unwrap_err().message;
        assert!(
            r.contains("shell (bash) is not reading a command line"),
            "{r}"
        );
        bed.keys(&["y", "Enter"]);
        bed.shows("ps>");
        assert_eq!(ready(&at_prompt, far()), Ok(Shell::Posix));
    }

    #[test]
    fn shells_by_name() {
        assert_eq!(Shell::of("-bash"), Some(Shell::Posix));
        assert_eq!(Shell::of("fish"), Some(Shell::Fish));
        assert_eq!(Shell::of("tcsh"), Some(Shell::Csh));
        assert_eq!(Shell::of("vim"), None);
        assert_eq!(Shell::of("sleep"), None);
    }
}
