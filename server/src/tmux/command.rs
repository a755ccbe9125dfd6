//! Building tmux command lines that cannot be turned into other commands.
//!
//! A [`TmuxCommand`] is one tmux command: a validated name, validated flags,
//! validated targets and arguments that are always quoted for tmux's command
//! parser. Every argument is written in double quotes with `\`, `"` and `$`
//! escaped and every control character (newline included) written as an
//! octal escape, so `;`, newlines, quotes, `{`, `~`, `#` and `%` in user text
//! are inert to the parser and the rendered line is always exactly one
//! command on one line. Commands that expand formats in an argument
//! (`rename-window`, `new-session -s`, `display-message`, ...) would still
//! expand `#{...}` and `#(...)` in it: pass such text through
//! [`TmuxCommand::literal_arg`], which also doubles every `#`.

use std::fmt::Write as _;

use super::ids::Target;
use super::TmuxError;

/// One tmux command, safe to send on a command line.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TmuxCommand {
    line: String,
    error: Option<String>,
}

impl TmuxCommand {
    /// A command by name (`show-options`, `capture-pane`, ...). The name
    /// must be lower-case ASCII letters and `-`.
    pub fn new(name: &str) -> Self {
        let ok = !name.is_empty()
            && name.len() <= 32
            && name.bytes().all(|b| b.is_ascii_lowercase() || b == b'-');
        TmuxCommand {
            line: name.to_string(),
            error: (!ok).then(|| format!("{name:?} is not a tmux command name")),
        }
    }

    /// A flag such as `-g` or `-pJ`: a dash and ASCII letters only.
    pub fn flag(mut self, flag: &str) -> Self {
        let ok = flag.len() >= 2
            && flag.starts_with('-')
            && flag[1..].bytes().all(|b| b.is_ascii_alphabetic());
        if ok {
            self.line.push(' ');
            self.line.push_str(flag);
        } else {
            self.fail(format!("{flag:?} is not a tmux flag"));
        }
        self
    }

    /// A flag with a value (`-S -2000`, `-F FORMAT`); the value is quoted.
    pub fn option(self, flag: &str, value: &str) -> Self {
        self.flag(flag).arg(value)
    }

    /// `-t TARGET`.
    pub fn target(self, target: impl Into<Target>) -> Self {
        let t = target.into();
        let text = t.to_tmux();
        self.option("-t", &text)
    }

    /// A positional argument, quoted for tmux's parser. It stays one
    /// argument whatever it contains.
    pub fn arg(mut self, text: &str) -> Self {
        self.line.push(' ');
        quote_into(&mut self.line, text);
        self
    }

    /// An argument that tmux will expand as a format: every `#` is doubled
    /// so `#{...}`, `#(...)` and `#[...]` come out as written, never run.
    pub fn literal_arg(self, text: &str) -> Self {
        let escaped = text.replace('#', "##");
        self.arg(&escaped)
    }

    /// A format we wrote ourselves (never user text): passed quoted, not
    /// `#`-escaped.
    pub(crate) fn format_arg(self, format: &str) -> Self {
        self.arg(format)
    }

    /// An integer argument.
    pub fn int(mut self, n: i64) -> Self {
        let _ = write!(self.line, " {n}");
        self
    }

    /// The command line as sent to tmux (one line, no newline).
    pub fn to_line(&self) -> Result<&str, TmuxError> {
        match &self.error {
            Some(e) => Err(TmuxError::Invalid(e.clone())),
            None => Ok(&self.line),
        }
    }

    /// This command, then `next`, as one command list (`a ; b`): tmux runs
    /// the commands of one line one after the other, nothing between them.
    pub(crate) fn then(mut self, next: TmuxCommand) -> Self {
        if let Some(e) = next.error {
            self.fail(e);
        }
        self.line.push_str(" ; ");
        self.line.push_str(&next.line);
        self
    }

    fn fail(&mut self, message: String) {
        if self.error.is_none() {
            self.error = Some(message);
        }
    }
}

impl std::fmt::Display for TmuxCommand {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.line)
    }
}

/// Appends `text` to `out` as one double-quoted tmux word.
pub(crate) fn quote_into(out: &mut String, text: &str) {
    out.push('"');
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '$' => out.push_str("\\$"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                let _ = write!(out, "\\{:03o}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use crate::tmux::ids::PaneId;

    #[test]
    fn lines_are_single_and_quoted() {
        let c = TmuxCommand::new("set-option")
            .flag("-g")
            .arg("@x")
            .arg("a;b\nc\"d$e\\f#{g}");
        let line = c.to_line().unwrap();
        assert_eq!(line, r#"set-option -g "@x" "a;b\012c\"d\$e\\f#{g}""#);
        assert!(!line.contains('\n'));
        assert!(TmuxCommand::new("kill-server;").to_line().is_err());
        assert!(TmuxCommand::new("x").flag("-g;").to_line().is_err());
        let t = TmuxCommand::new("capture-pane").target(PaneId::parse("%3").unwrap());
        assert_eq!(t.to_line().unwrap(), r#"capture-pane -t "%3""#);
        assert_eq!(
            TmuxCommand::new("x")
                .literal_arg("#(id)")
                .to_line()
                .unwrap(),
            "x \"##(id)\""
        );
    }
}
