//! Which options set_option may set, and to what: the rule that no option
//! can make tmux run a shell command the mutating tier did not allow.
//!
//! tmux 3.3a's options table (options-table.c) holds three kinds of
//! option that run commands:
//!
//! * hooks (`after-new-window`, `client-attached`, `pane-died`, ... 65 in
//!   3.3a): options whose value is a tmux command list, run on an event;
//! * options whose value is a command or program: `default-command`,
//!   `default-shell` (every new pane), `command-alias` (new tmux
//!   commands), `copy-command`, `lock-command`, `editor`;
//! * formats expanded later: `status-left`/`-right`, `status-format`,
//!   `*-format`, `set-titles-string`, where `#(...)` runs a shell command
//!   whenever the status line or a title is drawn; and any user option
//!   `@x`, which a format may expand again with `E:` or `T:`.
//!
//! So a name is accepted only when it is a user option (`@name`) or
//! exactly one of [`SETTABLE`]: the table's options less hooks, the six
//! command-valued ones and `history-file` (a file tmux writes). Exactly:
//! tmux completes an unambiguous prefix (`default-c` is
//! `default-command`), so nothing but a whole listed name gets through,
//! and an option a later tmux adds is refused until it is judged. Every
//! value is taken literally (no `-F`) and must hold no `#(` and no control
//! character, and pass [`super::format_guard`] as a format: nothing
//! expanded twice (`E:`, `T:`), nothing whose cost to tmux is unbounded.

use super::format_guard::{self, LoopSizes};
use super::options::valid_option_name;

/// Longest value accepted (the format guard's limit).
pub const MAX_VALUE_BYTES: usize = format_guard::MAX_FORMAT_BYTES;

/// The options of tmux 3.3a that run nothing: every option of
/// options-table.c but the hooks and [`REFUSED`].
pub const SETTABLE: &[&str] = &[
    // server
    "backspace",
    "buffer-limit",
    "cursor-colour",
    "cursor-style",
    "default-terminal",
    "escape-time",
    "exit-empty",
    "exit-unattached",
    "extended-keys",
    "focus-events",
    "message-limit",
    "prompt-history-limit",
    "set-clipboard",
    "terminal-overrides",
    "terminal-features",
    "user-keys",
    // session
    "activity-action",
    "assume-paste-time",
    "base-index",
    "bell-action",
    "default-size",
    "destroy-unattached",
    "detach-on-destroy",
    "display-panes-active-colour",
    "display-panes-colour",
    "display-panes-time",
    "display-time",
    "history-limit",
    "key-table",
    "lock-after-time",
    "message-command-style",
    "message-style",
    "mouse",
    "prefix",
    "prefix2",
    "renumber-windows",
    "repeat-time",
    "set-titles",
    "set-titles-string",
    "silence-action",
    "status",
    "status-bg",
    "status-fg",
    "status-format",
    "status-interval",
    "status-justify",
    "status-keys",
    "status-left",
    "status-left-length",
    "status-left-style",
    "status-position",
    "status-right",
    "status-right-length",
    "status-right-style",
    "status-style",
    "update-environment",
    "visual-activity",
    "visual-bell",
    "visual-silence",
    "word-separators",
    // window and pane
    "aggressive-resize",
    "allow-passthrough",
    "allow-rename",
    "alternate-screen",
    "automatic-rename",
    "automatic-rename-format",
    "clock-mode-colour",
    "clock-mode-style",
    "copy-mode-match-style",
    "copy-mode-current-match-style",
    "copy-mode-mark-style",
    "fill-character",
    "main-pane-height",
    "main-pane-width",
    "mode-keys",
    "mode-style",
    "monitor-activity",
    "monitor-bell",
    "monitor-silence",
    "other-pane-height",
    "other-pane-width",
    "pane-active-border-style",
    "pane-base-index",
    "pane-border-format",
    "pane-border-indicators",
    "pane-border-lines",
    "pane-border-status",
    "pane-border-style",
    "pane-colours",
    "popup-style",
    "popup-border-style",
    "popup-border-lines",
    "remain-on-exit",
    "remain-on-exit-format",
    "scroll-on-clear",
    "synchronize-panes",
    "window-active-style",
    "window-size",
    "window-style",
    "window-status-activity-style",
    "window-status-bell-style",
    "window-status-current-format",
    "window-status-current-style",
    "window-status-format",
    "window-status-last-style",
    "window-status-separator",
    "window-status-style",
    "wrap-search",
    "xterm-keys",
];

/// Options of tmux 3.3a refused by name, and why.
pub const REFUSED: &[(&str, &str)] = &[
    ("command-alias", "it defines tmux commands"),
    ("default-command", "it is the command every new pane runs"),
    ("default-shell", "it is the program every new pane runs"),
    ("copy-command", "it is a shell command tmux runs on copy"),
    (
        "lock-command",
        "it is a shell command tmux runs to lock a client",
    ),
    ("editor", "it is a program tmux runs"),
    ("history-file", "it is a file tmux writes"),
];

/// Why a name may not be set, or `None` when it may.
pub fn refuse_name(name: &str) -> Option<String> {
    if !valid_option_name(name) {
        return Some(format!(
            "{name:?} is not an option name (letters, digits, - and _, optional leading @ and [index])"
        ));
    }
    if name.starts_with('@') {
        return None;
    }
    let base = name.split_once('[').map_or(name, |(b, _)| b);
    if SETTABLE.contains(&base) {
        return None;
    }
    if let Some((_, why)) = REFUSED.iter().find(|(n, _)| *n == base) {
        return Some(format!(
            "set_option refuses {base}: {why}; options that run commands (hooks, command-alias, default-command/-shell, copy-/lock-command, editor) are never set"
        ));
    }
    Some(format!(
        "set_option refuses {base:?}: not a tmux option known to run nothing (hooks such as after-new-window run commands; names are exact, never prefixes). Use a user option @name or one of tmux's plain options"
    ))
}

/// Why `value` may not be stored, or `None` when it may. `sizes` are the
/// server's, for formats that loop.
pub fn refuse_value(value: &str, sizes: &LoopSizes) -> Option<String> {
    if value.len() > MAX_VALUE_BYTES {
        return Some(format!(
            "value is {} bytes; at most {MAX_VALUE_BYTES}",
            value.len()
        ));
    }
    if value.chars().any(char::is_control) {
        return Some("value holds a control character (newline, NUL, ESC...); remove it".into());
    }
    if let Some(at) = value.find("#(") {
        return Some(format!(
            "value holds #( at byte {at}: in a status line, title or any format (a user option too, through E:) it runs a shell command, so set_option never stores it"
        ));
    }
    format_guard::check(value, sizes)
        .err()
        .map(|r| format!("set_option refuses the value: as a format it holds {r}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_that_run_commands_are_refused() {
        for ok in [
            "status-left",
            "history-limit",
            "@my_opt",
            "status-format[1]",
            "mode-keys",
        ] {
            assert_eq!(refuse_name(ok), None, "{ok}");
        }
        for bad in [
            "after-new-window",
            "client-attached",
            "pane-died",
            "command-alias",
            "command-alias[0]",
            "default-command",
            "default-c",
            "default-shell",
            "copy-command",
            "lock-command",
            "editor",
            "history-file",
            "status-l",
            "a b",
            "",
        ] {
            assert!(refuse_name(bad).is_some(), "{bad}");
        }
    }

    #[test]
    fn values_that_run_or_expand_again_are_refused() {
        let sizes = LoopSizes::default();
        for ok in [
            "#[fg=red]#S #{session_name}",
            "on",
            "50000",
            "vi",
            "C-a",
            "a b;c",
        ] {
            assert_eq!(refuse_value(ok, &sizes), None, "{ok}");
        }
        for bad in [
            "#(id)",
            "##(id)",
            "x#{E:@evil}",
            "#{T:status-left}",
            "a\nb",
            "a\0b",
            "\u{1b}]52;c;eA==\u{7}",
            &"x".repeat(MAX_VALUE_BYTES + 1),
        ] {
            assert!(refuse_value(bad, &sizes).is_some(), "{bad:?}");
        }
    }

    #[test]
    fn no_name_is_both_settable_and_refused() {
        for (name, _) in REFUSED {
            assert!(!SETTABLE.contains(name), "{name}");
        }
    }
}
