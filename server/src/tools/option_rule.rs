//! Which options set_option may set, to what, and in which tier: no option
//! can make tmux run a shell command, and none that ends sessions, panes or
//! the server (or erases what the user keeps) is set in the mutating tier.
//!
//! Every option of tmux 3.2-3.6's options tables (options-table.c) is
//! judged in [`OPTIONS`], with the reason beside it:
//!
//! * [`Rule::Refused`]: never set. Hooks (65+ in 3.3a, options whose value
//!   is a tmux command list run on an event), options whose value is a
//!   command or program (`default-command`, `command-alias`...), a file
//!   tmux writes, and `lock-after-time` (it runs `lock-command`);
//! * [`Rule::Destructive`]: set only in the destructive tier, and never on
//!   the session or server panescan runs in (`refuse_own_session` in [`crate::tools::settings`]), unless
//!   the value is one that ends nothing ([`Safe`]): `destroy-unattached`,
//!   `exit-unattached`, `exit-empty`, `remain-on-exit`, `buffer-limit`;
//! * [`Rule::Mutating`]: changes how tmux looks or behaves, ends nothing.
//!
//! A name is exact: tmux completes an unambiguous prefix (`default-c` is
//! `default-command`), so nothing but a whole listed name gets through, and
//! an option a later tmux adds is refused until it is judged here. Every
//! value is taken literally (no `-F`), must hold no `#(` and no control
//! character, and pass [`super::format_guard`] as a format.

use super::format_guard::{self, LoopSizes};
use super::options::valid_option_name;
use crate::config::Tier;

/// Longest value accepted (the format guard's limit).
const MAX_VALUE_BYTES: usize = format_guard::MAX_FORMAT_BYTES;

/// What set_option may do with an option.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rule {
    /// Set in the mutating tier.
    Mutating,
    /// Set in the destructive tier only, unless the value is [`Safe`].
    Destructive(Safe),
    /// Never set.
    Refused,
}

/// Which values make a [`Rule::Destructive`] option end nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Safe {
    /// Turned off (`off`, `no`, `0`; an empty value toggles, so it is not).
    Off,
    /// Turned on (`on`, `yes`, `1`).
    On,
    /// No value: every value may end something.
    Never,
}

impl Safe {
    fn admits(self, value: &str) -> bool {
        let v = value.to_ascii_lowercase();
        match self {
            Safe::Off => matches!(v.as_str(), "off" | "no" | "0"),
            Safe::On => matches!(v.as_str(), "on" | "yes" | "1"),
            Safe::Never => false,
        }
    }
}

use Rule::{Destructive, Mutating, Refused};

/// Every option of tmux 3.2-3.6 (hooks aside: all refused), its rule and
/// why. The first version that has it is noted where it is not 3.2.
pub const OPTIONS: &[(&str, Rule, &str)] = &[
    // ------------------------------------------------ run commands or write files
    ("command-alias", Refused, "it defines tmux commands"),
    ("default-command", Refused, "it is the command every new pane runs"),
    ("default-shell", Refused, "it is the program every new pane runs"),
    ("default-client-command", Refused, "(3.6) it is the tmux command a bare `tmux` runs"),
    ("copy-command", Refused, "it is a shell command tmux runs on copy"),
    ("lock-command", Refused, "it is a shell command tmux runs to lock a client"),
    ("lock-after-time", Refused, "it locks the user's clients by running lock-command"),
    ("editor", Refused, "it is a program tmux runs"),
    ("history-file", Refused, "it is a file tmux writes"),
    // ------------------------------------------------ end sessions, panes, the server, or erase
    ("destroy-unattached", Destructive(Safe::Off), "on: a session ends once no client is attached (panescan's control client detaches when idle)"),
    ("exit-unattached", Destructive(Safe::Off), "on: the server exits once no client is attached, every session with it"),
    ("exit-empty", Destructive(Safe::Off), "on: the server exits once it has no session"),
    ("remain-on-exit", Destructive(Safe::On), "off or failed: a pane whose program exits is closed, its text with it"),
    ("buffer-limit", Destructive(Safe::Never), "a lower limit deletes the user's paste buffers past it"),
    // ------------------------------------------------ server: behaviour and terminals
    ("backspace", Mutating, "the key sent for backspace"),
    ("codepoint-widths", Mutating, "(3.6) character widths tmux assumes"),
    ("cursor-colour", Mutating, "(3.3) default cursor colour"),
    ("cursor-style", Mutating, "(3.3) default cursor style"),
    ("default-terminal", Mutating, "TERM of new panes"),
    ("escape-time", Mutating, "how long tmux waits after an escape"),
    ("extended-keys", Mutating, "which key encoding programs may ask for"),
    ("extended-keys-format", Mutating, "(3.5) the extended key encoding"),
    ("focus-events", Mutating, "focus events passed to programs"),
    ("input-buffer-size", Mutating, "(3.6) the largest input sequence kept"),
    ("message-limit", Mutating, "messages kept in the log"),
    ("prompt-history-limit", Mutating, "(3.3) command-prompt history kept"),
    ("set-clipboard", Mutating, "whether programs may set the clipboard through tmux"),
    ("terminal-features", Mutating, "what tmux assumes of outer terminals"),
    ("terminal-overrides", Mutating, "what tmux assumes of outer terminals"),
    ("user-keys", Mutating, "extra key sequences tmux recognises"),
    ("variation-selector-always-wide", Mutating, "(3.6) character widths tmux assumes"),
    // ------------------------------------------------ session: keys, status line, looks
    ("activity-action", Mutating, "what an activity alert does"),
    ("assume-paste-time", Mutating, "key timing taken as a paste"),
    ("base-index", Mutating, "first index of new windows"),
    ("bell-action", Mutating, "what a bell alert does"),
    ("default-size", Mutating, "size of new sessions"),
    ("detach-on-destroy", Mutating, "where clients go when their session ends (it ends no session)"),
    ("display-panes-active-colour", Mutating, "looks"),
    ("display-panes-colour", Mutating, "looks"),
    ("display-panes-time", Mutating, "how long pane numbers show"),
    ("display-time", Mutating, "how long messages show"),
    ("history-limit", Mutating, "history kept by panes created afterwards (existing panes keep theirs)"),
    ("initial-repeat-time", Mutating, "(3.6) key repeat timing"),
    ("key-table", Mutating, "the key table clients start in"),
    ("message-command-style", Mutating, "looks"),
    ("message-line", Mutating, "(3.4) where messages show"),
    ("message-style", Mutating, "looks"),
    ("mouse", Mutating, "mouse support"),
    ("prefix", Mutating, "the prefix key"),
    ("prefix2", Mutating, "the second prefix key"),
    ("prefix-timeout", Mutating, "(3.5) how long the prefix waits"),
    ("prompt-cursor-colour", Mutating, "(3.6) looks"),
    ("prompt-cursor-style", Mutating, "(3.6) looks"),
    ("renumber-windows", Mutating, "window numbering"),
    ("repeat-time", Mutating, "key repeat timing"),
    ("set-titles", Mutating, "whether tmux sets outer terminal titles"),
    ("set-titles-string", Mutating, "a format drawn as the title (checked by the format guard)"),
    ("silence-action", Mutating, "what a silence alert does"),
    ("status", Mutating, "the status line"),
    ("status-bg", Mutating, "looks"),
    ("status-fg", Mutating, "looks"),
    ("status-format", Mutating, "formats drawn in the status line (checked by the format guard)"),
    ("status-interval", Mutating, "how often the status line is drawn"),
    ("status-justify", Mutating, "looks"),
    ("status-keys", Mutating, "key bindings at the prompt"),
    ("status-left", Mutating, "a format drawn in the status line (checked by the format guard)"),
    ("status-left-length", Mutating, "looks"),
    ("status-left-style", Mutating, "looks"),
    ("status-position", Mutating, "looks"),
    ("status-right", Mutating, "a format drawn in the status line (checked by the format guard)"),
    ("status-right-length", Mutating, "looks"),
    ("status-right-style", Mutating, "looks"),
    ("status-style", Mutating, "looks"),
    ("update-environment", Mutating, "variables a user's attach copies; panescan passes only the operator's list (--pass-env)"),
    ("visual-activity", Mutating, "how alerts show"),
    ("visual-bell", Mutating, "how alerts show"),
    ("visual-silence", Mutating, "how alerts show"),
    ("word-separators", Mutating, "copy mode's word boundaries"),
    // ------------------------------------------------ window and pane
    ("aggressive-resize", Mutating, "window sizing"),
    ("allow-passthrough", Mutating, "(3.3) whether programs may pass escape sequences to the outer terminal"),
    ("allow-rename", Mutating, "whether programs may rename windows"),
    ("allow-set-title", Mutating, "(3.5) whether programs may set the pane title"),
    ("alternate-screen", Mutating, "whether programs may use the alternate screen"),
    ("automatic-rename", Mutating, "window naming"),
    ("automatic-rename-format", Mutating, "a format expanded for window names (checked by the format guard)"),
    ("clock-mode-colour", Mutating, "looks"),
    ("clock-mode-style", Mutating, "looks"),
    ("copy-mode-current-match-style", Mutating, "looks"),
    ("copy-mode-mark-style", Mutating, "looks"),
    ("copy-mode-match-style", Mutating, "looks"),
    ("copy-mode-position-format", Mutating, "(3.6) a format drawn in copy mode (checked by the format guard)"),
    ("copy-mode-position-style", Mutating, "(3.6) looks"),
    ("copy-mode-selection-style", Mutating, "(3.6) looks"),
    ("fill-character", Mutating, "(3.3) looks"),
    ("main-pane-height", Mutating, "layout sizes"),
    ("main-pane-width", Mutating, "layout sizes"),
    ("menu-border-lines", Mutating, "(3.4) looks"),
    ("menu-border-style", Mutating, "(3.4) looks"),
    ("menu-selected-style", Mutating, "(3.4) looks"),
    ("menu-style", Mutating, "(3.4) looks"),
    ("mode-keys", Mutating, "copy mode key bindings"),
    ("mode-style", Mutating, "looks"),
    ("monitor-activity", Mutating, "alerts"),
    ("monitor-bell", Mutating, "alerts"),
    ("monitor-silence", Mutating, "alerts"),
    ("other-pane-height", Mutating, "layout sizes"),
    ("other-pane-width", Mutating, "layout sizes"),
    ("pane-active-border-style", Mutating, "looks"),
    ("pane-base-index", Mutating, "first index of panes"),
    ("pane-border-format", Mutating, "a format drawn on pane borders (checked by the format guard)"),
    ("pane-border-indicators", Mutating, "(3.3) looks"),
    ("pane-border-lines", Mutating, "looks"),
    ("pane-border-status", Mutating, "looks"),
    ("pane-border-style", Mutating, "looks"),
    ("pane-colours", Mutating, "(3.3) the palette"),
    ("pane-scrollbars", Mutating, "(3.6) looks"),
    ("pane-scrollbars-position", Mutating, "(3.6) looks"),
    ("pane-scrollbars-style", Mutating, "(3.6) looks"),
    ("pane-status-current-style", Mutating, "(3.6) looks"),
    ("pane-status-style", Mutating, "(3.6) looks"),
    ("popup-border-lines", Mutating, "(3.3) looks"),
    ("popup-border-style", Mutating, "(3.3) looks"),
    ("popup-style", Mutating, "(3.3) looks"),
    ("remain-on-exit-format", Mutating, "(3.3) a format drawn in dead panes (checked by the format guard)"),
    ("scroll-on-clear", Mutating, "(3.3) whether a clear keeps the screen in history"),
    ("session-status-current-style", Mutating, "(3.6) looks"),
    ("session-status-style", Mutating, "(3.6) looks"),
    ("synchronize-panes", Mutating, "typing into one pane types into every pane of the window: run_command, send_keys and paste_text then refuse the window unless allow_synchronized"),
    ("tiled-layout-max-columns", Mutating, "(3.6) layout sizes"),
    ("window-active-style", Mutating, "looks"),
    ("window-size", Mutating, "window sizing"),
    ("window-status-activity-style", Mutating, "looks"),
    ("window-status-bell-style", Mutating, "looks"),
    ("window-status-current-format", Mutating, "a format drawn in the status line (checked by the format guard)"),
    ("window-status-current-style", Mutating, "looks"),
    ("window-status-format", Mutating, "a format drawn in the status line (checked by the format guard)"),
    ("window-status-last-style", Mutating, "looks"),
    ("window-status-separator", Mutating, "looks"),
    ("window-status-style", Mutating, "looks"),
    ("window-style", Mutating, "looks"),
    ("wrap-search", Mutating, "copy mode search"),
    ("xterm-keys", Mutating, "key encoding"),
];

/// The rule and reason for `name` (without an `[index]`), if judged.
fn rule_of(name: &str) -> Option<(Rule, &'static str)> {
    let base = name.split_once('[').map_or(name, |(b, _)| b);
    OPTIONS
        .iter()
        .find(|(n, _, _)| *n == base)
        .map(|(_, rule, why)| (*rule, *why))
}

/// Why a name may not be set at all, or `None` when it may (in some tier:
/// [`tier_needed`] says which).
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
    match rule_of(base) {
        Some((Refused, why)) => Some(format!(
            "set_option refuses {base}: {why}; options that run commands (hooks, command-alias, default-command/-shell, copy-/lock-command, lock-after-time, editor) are never set"
        )),
        Some(_) => None,
        None => Some(format!(
            "set_option refuses {base:?}: not a tmux option known to run nothing (hooks such as after-new-window run commands; names are exact, never prefixes). Use a user option @name or one of tmux's plain options"
        )),
    }
}

/// The tier setting `name` to `value` (`None`: unset, back to the
/// inherited value, which may be anything) needs, and why when it is the
/// destructive one. `name` must have passed [`refuse_name`].
pub fn tier_needed(name: &str, value: Option<&str>) -> (Tier, Option<&'static str>) {
    match rule_of(name) {
        Some((Destructive(safe), why)) if !value.is_some_and(|v| safe.admits(v)) => {
            (Tier::Destructive, Some(why))
        }
        _ => (Tier::Mutating, None),
    }
}

/// Whether setting `name` to `value` can end the session or server it
/// applies to, so it is refused on the session or server panescan runs in
/// (as the kill tools refuse them).
pub fn ends_its_target(name: &str, value: Option<&str>) -> bool {
    matches!(
        name,
        "destroy-unattached" | "exit-unattached" | "exit-empty"
    ) && tier_needed(name, value).0 == Tier::Destructive
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
            "lock-after-time",
            "default-client-command",
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
    fn every_option_is_judged_once() {
        let mut names: Vec<&str> = OPTIONS.iter().map(|(n, _, _)| *n).collect();
        names.sort_unstable();
        let before = names.len();
        names.dedup();
        assert_eq!(before, names.len(), "an option is judged twice");
        // tmux 3.2-3.6 have 142 options besides hooks.
        assert_eq!(names.len(), 142);
    }

    #[test]
    fn options_that_end_things_need_the_destructive_tier() {
        for (name, value) in [
            ("destroy-unattached", Some("on")),
            ("destroy-unattached", Some("keep-last")),
            ("destroy-unattached", Some("")),
            ("destroy-unattached", None),
            ("exit-unattached", Some("ON")),
            ("exit-unattached", Some("yes")),
            ("exit-empty", Some("1")),
            ("remain-on-exit", Some("off")),
            ("remain-on-exit", Some("failed")),
            ("buffer-limit", Some("1")),
            ("buffer-limit", Some("5000")),
        ] {
            assert_eq!(
                tier_needed(name, value).0,
                Tier::Destructive,
                "{name} {value:?}"
            );
        }
        for (name, value) in [
            ("destroy-unattached", Some("off")),
            ("exit-unattached", Some("no")),
            ("exit-empty", Some("0")),
            ("remain-on-exit", Some("on")),
            ("status-left", Some("x")),
            ("synchronize-panes", Some("on")),
            ("@x", Some("on")),
        ] {
            assert_eq!(
                tier_needed(name, value).0,
                Tier::Mutating,
                "{name} {value:?}"
            );
        }
        assert!(ends_its_target("exit-unattached", Some("on")));
        assert!(!ends_its_target("exit-unattached", Some("off")));
        assert!(!ends_its_target("buffer-limit", Some("1")));
        assert!(!ends_its_target("remain-on-exit", Some("off")));
    }
}
