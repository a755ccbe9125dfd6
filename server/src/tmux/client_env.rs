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
//! in the session. No tool creates sessions or windows today; one that did
//! would pass the variables of tmux's `update-environment` list, as a user's
//! own `new-session` does.

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
