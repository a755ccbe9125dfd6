//! The pane's side: whether it sits at a shell prompt (and what it does
//! instead), the line typed into it, and whether its shell's line editor
//! is reading (the terminal out of canonical mode).

use std::time::{Duration, Instant};

use crate::tmux::Pane;
use crate::tools::context::ToolError;

/// Shells whose exit status is `$?` (sh family).
const POSIX_SHELLS: &[&str] = &[
    "bash", "sh", "dash", "zsh", "ksh", "mksh", "ash", "yash", "posh", "busybox",
];
/// Shells whose exit status is `$status`.
const STATUS_SHELLS: &[&str] = &["fish", "csh", "tcsh"];
/// Shells that read their prompt through a line editor.
const LINE_EDITING_SHELLS: &[&str] = &["bash", "zsh", "fish"];

/// The shell's name in `command` (`pane_current_command`: a login shell
/// may show as `-bash`).
fn shell_name(command: &str) -> &str {
    command.trim_start_matches('-')
}

/// The shell family of a pane's foreground program, if it is a shell.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shell {
    /// `$?`.
    Posix,
    /// `$status`.
    Status,
}

impl Shell {
    /// The family of `command` (`pane_current_command`: a login shell may
    /// show as `-bash`).
    pub fn of(command: &str) -> Option<Shell> {
        let name = shell_name(command);
        if POSIX_SHELLS.contains(&name) {
            Some(Shell::Posix)
        } else if STATUS_SHELLS.contains(&name) {
            Some(Shell::Status)
        } else {
            None
        }
    }

    fn status_var(self) -> &'static str {
        match self {
            Shell::Posix => "\"$?\"",
            Shell::Status => "$status",
        }
    }

    /// The command that prints the marker `first` + `second` and the last
    /// status: the marker never appears whole in what is typed.
    pub fn marker_command(self, first: &str, second: &str) -> String {
        format!("printf '%s%s:%s\\n' {first} {second} {}", self.status_var())
    }
}

/// The shell of `pane` if it sits at a prompt; otherwise a refusal saying
/// what the pane is doing.
pub fn ready(pane: &Pane) -> Result<Shell, ToolError> {
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
        return Err(ToolError::refused(format!(
            "pane {id} shows a full-screen program on the alternate screen ({}): quit it first",
            pane.pane_current_command
        )));
    }
    Shell::of(&pane.pane_current_command).ok_or_else(|| {
        ToolError::refused(format!(
            "pane {id} is running {:?}, not sitting at a shell prompt: wait for it, or interrupt it (send_keys C-c)",
            pane.pane_current_command
        ))
    })
}

/// What is typed: the command, then (with a marker) the marker's printf,
/// joined so the printf runs whatever the command's status. `None` for a
/// command that cannot be joined safely.
pub fn typed_line(command: &str, marker: Option<&str>) -> Result<String, ToolError> {
    let Some(marker) = marker else {
        return Ok(command.to_owned());
    };
    let body = command.trim_end().trim_end_matches(';').trim_end();
    if body.is_empty() {
        return Err(ToolError::new("command is empty"));
    }
    if body.ends_with('\\') {
        return Err(ToolError::new(
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
        return Err(ToolError::new("command is empty"));
    }
    if command.len() > max {
        return Err(ToolError::new(format!(
            "command is {} bytes; at most {max}",
            command.len()
        )));
    }
    if !allow_multiline && (command.contains('\n') || command.contains('\r')) {
        return Err(ToolError::new(
            "command holds a newline (several lines would run one by one): set allow_multiline to send it as it is",
        ));
    }
    let bad = command
        .chars()
        .find(|&c| c.is_control() && c != '\n' && c != '\t' && !(allow_multiline && c == '\r'));
    if let Some(c) = bad {
        return Err(ToolError::new(format!(
            "command holds the control character {:?}, which a line editor would take as a key: remove it",
            c
        )));
    }
    Ok(())
}

/// Whether process `pid` leads the foreground process group of its
/// terminal (`tpgid` in `/proc/PID/stat`): the pane's own shell, not a
/// program or a nested shell it started. `None` when it cannot be told.
pub fn in_foreground(pid: u32) -> Option<bool> {
    let stat = std::fs::read(format!("/proc/{pid}/stat")).ok()?;
    Some(crate::tmux::procfs::parse_stat(&stat)?.tpgid == i64::from(pid))
}

/// Whether the terminal `tty` is out of canonical mode: a line editor
/// (readline, zle, fish) is reading a line, i.e. the shell sits at its
/// prompt. `None` when it cannot be told. The terminal is opened read-only,
/// never as a controlling terminal and without blocking, and only its
/// settings are read (as capture/anchor.rs opens a pane's terminal).
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

/// Whether the shell `command` (a pane's `pane_current_command`) reads its
/// prompt through a line editor: a line typed before the editor starts is
/// echoed twice, once by the terminal and once by the editor.
pub fn edits_lines(command: &str) -> bool {
    LINE_EDITING_SHELLS.contains(&shell_name(command))
}

/// How long a command waits for the line editor of a shell that edits
/// lines. The shell prints its prompt's marks (OSC 133 D, from
/// `PROMPT_COMMAND` or a hook) before its line editor reads, so the call
/// after a command that just ended may come before it; a shell that
/// never leaves canonical mode (line editing off) costs this once a call.
pub const LINE_EDITOR_WAIT: Duration = Duration::from_millis(500);

/// Waits until the line editor reads on `tty`, at most until `until`;
/// returns at once when that cannot be told.
pub fn await_line_editor(tty: &str, until: Instant) {
    while line_editor_reading(tty) == Some(false) && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(2));
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn login_shells_are_named_as_their_shell() {
        assert_eq!(Shell::of("-bash"), Some(Shell::Posix));
        assert!(edits_lines("bash") && edits_lines("-zsh") && edits_lines("fish"));
        assert!(!edits_lines("dash") && !edits_lines("-sh") && !edits_lines("vim"));
    }

    #[test]
    fn the_marker_is_joined_so_it_always_runs() {
        let m = Shell::Posix.marker_command("__psA", "B");
        assert_eq!(m, "printf '%s%s:%s\\n' __psA B \"$?\"");
        assert_eq!(typed_line("make", Some(&m)).unwrap(), format!("make; {m}"));
        assert_eq!(
            typed_line("make ;; ", Some(&m)).unwrap(),
            format!("make; {m}")
        );
        assert_eq!(
            typed_line("sleep 9 &", Some(&m)).unwrap(),
            format!("sleep 9 & {m}")
        );
        assert_eq!(
            typed_line("a && b", Some(&m)).unwrap(),
            format!("a && b; {m}")
        );
        assert!(typed_line("echo \\", Some(&m)).is_err());
        assert_eq!(typed_line("ls", None).unwrap(), "ls");
        assert!(Shell::Status.marker_command("a", "b").ends_with("$status"));
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

    #[test]
    fn a_process_without_a_terminal_is_not_in_the_foreground() {
        // The test process has no controlling terminal under cargo, or is
        // not its foreground group leader; pid 0 has no /proc entry.
        assert_eq!(in_foreground(0), None);
        assert!(in_foreground(std::process::id()).is_some());
    }

    #[test]
    fn shells_by_name() {
        assert_eq!(Shell::of("-bash"), Some(Shell::Posix));
        assert_eq!(Shell::of("fish"), Some(Shell::Status));
        assert_eq!(Shell::of("vim"), None);
        assert_eq!(Shell::of("sleep"), None);
    }
}
