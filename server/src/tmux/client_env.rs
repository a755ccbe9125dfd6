//! The environment of every tmux client panescan runs.
//!
//! A tmux client sends its whole environment to the server it connects to
//! (identify messages, one `MSG_IDENTIFY_ENVIRON` per variable), and the
//! server keeps it for as long as the client lives: attaching to a session
//! or creating one copies the variables named in `update-environment`
//! (`SSH_AUTH_SOCK`, `DISPLAY`...) into that session, and every pane started
//! there afterwards inherits them. panescan's environment is the operator's
//! (API keys included), and it is not the user's: its clients carry only
//! what tmux needs to run and find its sockets:
//!
//! * `LC_ALL=C.UTF-8`: without a UTF-8 locale tmux prints non-ASCII in
//!   formats as `_`;
//! * `HOME`, `PATH` and `TMUX_TMPDIR`, as panescan has them.
//!
//! Not `TMUX` or `TMUX_PANE`: whether a pane is panescan's own is worked out
//! in panescan from its own environment ([`super::caller`]), and every
//! command names its target, so tmux's own guess at a client's current pane
//! (which reads `TMUX_PANE`) is never wanted.
//!
//! The control client attaches with `-E` as well, so attaching copies
//! nothing into the user's session: without it, a variable of
//! `update-environment` that this environment lacks would be marked removed
//! in the session. `create_session` gives the new session the variables
//! of tmux's `update-environment` list that panescan's own environment
//! has, as `new-session -e NAME=VALUE` ([`for_new_session`]): what a user's
//! own `new-session` run from panescan's environment would copy, and
//! nothing else (a variable of the list panescan lacks is marked removed in
//! the session, as tmux does for a client that lacks it).

use std::process::Command;

/// The variables passed through, when panescan has them.
pub const PASSED: [&str; 3] = ["HOME", "PATH", "TMUX_TMPDIR"];

/// Gives `cmd` (a `tmux` command) the client environment above and nothing
/// else.
pub fn apply(cmd: &mut Command) -> &mut Command {
    cmd.env_clear();
    for key in PASSED {
        if let Some(value) = std::env::var_os(key) {
            cmd.env(key, value);
        }
    }
    cmd.env("LC_ALL", super::private_server::utf8_locale())
}

/// `NAME=VALUE` for each variable named in `update_environment` (the
/// output of `show-options -gv update-environment`, one name a line) that
/// this process has, as `new-session -e` takes them. Names that are not
/// one plain word and values that are not UTF-8 are left out, and so is an
/// entry written as a pattern (`SSH_*`): tmux matches those against the
/// client's variables, and panescan passes only names it can look up.
pub fn for_new_session(update_environment: &str) -> Vec<String> {
    update_environment
        .lines()
        .map(str::trim)
        .filter(|name| {
            !name.is_empty()
                && name.len() <= 256
                && !name.contains('=')
                && !name.chars().any(|c| c.is_control() || c.is_whitespace())
        })
        .filter_map(|name| {
            let value = std::env::var(name).ok()?;
            Some(format!("{name}={value}"))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_sessions_get_the_listed_variables_this_process_has() {
        // PATH is set in every test run; the others are names no process has.
        let path = std::env::var("PATH").unwrap_or_default();
        let listed = "PATH\nPANESCAN_NO_SUCH_VARIABLE\n\nA=B\nTWO WORDS\n";
        assert_eq!(for_new_session(listed), vec![format!("PATH={path}")]);
    }
}
