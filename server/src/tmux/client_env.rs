//! The environment of every tmux client panescan runs.
//!
//! A tmux client sends its whole environment to the server it connects to
//! (one `MSG_IDENTIFY_ENVIRON` per variable), and the server keeps it while
//! the client lives: attaching to a session or creating one copies the
//! variables named in `update-environment` (`SSH_AUTH_SOCK`, `DISPLAY`...)
//! into that session, and every pane started there inherits them.
//! panescan's environment is the operator's (API keys included), not the
//! user's: its clients carry only what tmux needs to run and find sockets:
//!
//! * `LC_ALL=C.UTF-8`: without a UTF-8 locale tmux prints non-ASCII in
//!   formats as `_`;
//! * `HOME`, `PATH` and `TMUX_TMPDIR`, as panescan has them.
//!
//! Not `TMUX` or `TMUX_PANE`: panescan works out whether a pane is its own
//! from its own environment ([`super::caller`]), and every command names its
//! target, so tmux's guess at a client's current pane is never wanted. The
//! control client attaches with `-E`, so attaching copies nothing into the
//! user's session. `create_session` passes into the new session what a
//! user's own `new-session` would copy from panescan's environment
//! ([`for_new_session`]), but only the names the operator gave
//! ([`DEFAULT_PASSED_TO_SESSIONS`], `serve --pass-env NAME`):
//! `update-environment`, which any mutating call can set, only narrows that
//! list. On another host nothing of this machine's environment is sent.

use std::process::Command;

/// The variables passed through, when panescan has them.
const PASSED: [&str; 3] = ["HOME", "PATH", "TMUX_TMPDIR"];

/// The variables `create_session` may copy into a new session when tmux's
/// `update-environment` lists them: tmux's own default list (3.2-3.6).
pub const DEFAULT_PASSED_TO_SESSIONS: [&str; 9] = [
    "DISPLAY",
    "KRB5CCNAME",
    "MSYSTEM",
    "SSH_ASKPASS",
    "SSH_AUTH_SOCK",
    "SSH_AGENT_PID",
    "SSH_CONNECTION",
    "WINDOWID",
    "XAUTHORITY",
];

/// Gives `cmd` (a `tmux` command) the client environment above and nothing
/// else.
pub fn apply(cmd: &mut Command) -> &mut Command {
    cmd.env_clear();
    for key in PASSED {
        if let Some(value) = std::env::var_os(key) {
            cmd.env(key, value);
        }
    }
    cmd.env("LC_ALL", utf8_locale())
}

/// A UTF-8 locale name for tmux: without one, tmux replaces non-ASCII in
/// formats with `_`. `C.UTF-8` exists on every glibc since 2.35 and on
/// Debian for longer.
pub fn utf8_locale() -> &'static str {
    "C.UTF-8"
}

/// What `new-session` is given so the new session's environment is what
/// a user's own `new-session`, run from panescan's environment, would give
/// it ([`for_new_session`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NewSessionEnv {
    /// `NAME=VALUE` for `new-session -e`.
    pub set: Vec<String>,
    /// tmux copies `LC_ALL` from panescan's client (which carries it
    /// whatever panescan's environment says) but panescan has none: it is
    /// given empty (in `set`) for the first pane, and the session must mark
    /// it removed once it exists, as tmux does for a client without it.
    pub remove_lc_all: bool,
}

/// What a new session gets, from `update_environment` (the output of
/// `show-options -gv update-environment`, one entry a line), tmux's rule
/// (`environ_update`): for each entry, the first variable of the client's
/// environment, by name, that the entry matches (`*` and `?` are
/// wildcards, as `fnmatch`) is copied. Only the variables in `passed` (the
/// operator's list with the values the client has, [`values_of`]) are
/// candidates, so an entry such as `*SECRET*` finds nothing of panescan's
/// own; an entry that holds a bracket
/// expression, a variable whose value is not UTF-8 or an entry that is not
/// one word is left out.
pub fn for_new_session(update_environment: &str, passed: &[(String, String)]) -> NewSessionEnv {
    let ours: std::collections::BTreeMap<&str, &str> = passed
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let everything: std::collections::BTreeSet<String> = std::env::vars_os()
        .filter_map(|(k, _)| k.into_string().ok())
        .collect();
    let mut client: Vec<&str> = PASSED
        .iter()
        .copied()
        .filter(|k| everything.contains(*k))
        .collect();
    client.push("LC_ALL");
    client.sort_unstable();
    let entries = update_environment.lines().map(str::trim).filter(|e| {
        !e.is_empty()
            && e.len() <= 256
            && !e.contains(['=', '['])
            && !e.chars().any(|c| c.is_control() || c.is_whitespace())
    });
    let mut out = NewSessionEnv::default();
    for entry in entries {
        if let Some((k, v)) = ours.iter().find(|(k, _)| matches(entry, k)) {
            let pair = format!("{k}={v}");
            if !out.set.contains(&pair) {
                out.set.push(pair);
            }
        }
        let from_client = client.iter().find(|k| matches(entry, k));
        out.remove_lc_all |= from_client == Some(&"LC_ALL") && !everything.contains("LC_ALL");
    }
    if out.remove_lc_all {
        out.set.push("LC_ALL=".into());
    }
    out
}

/// The variables of this process's environment named in `allowed` (the
/// operator's list), with their values; a value that is not UTF-8 is left
/// out.
pub fn values_of(allowed: &[String]) -> Vec<(String, String)> {
    std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
        .filter(|(k, _)| allowed.iter().any(|a| a == k))
        .collect()
}

/// Whether `name` matches `pattern` as `fnmatch(pattern, name, 0)` does
/// for `*`, `?` and `\` escapes.
fn matches(pattern: &str, name: &str) -> bool {
    let (p, n): (Vec<char>, Vec<char>) = (pattern.chars().collect(), name.chars().collect());
    // Iterative wildcard match: on a mismatch, let the last `*` take one
    // more character.
    let (mut pi, mut ni, mut star): (usize, usize, Option<(usize, usize)>) = (0, 0, None);
    while ni < n.len() {
        let (c, escaped) = match p.get(pi) {
            Some('\\') => (p.get(pi + 1).copied(), true),
            other => (other.copied(), false),
        };
        match c {
            Some('*') if !escaped => {
                star = Some((pi, ni));
                pi += 1;
            }
            Some(c) if (c == '?' && !escaped) || c == n[ni] => {
                pi += if escaped { 2 } else { 1 };
                ni += 1;
            }
            _ => match star {
                Some((sp, sn)) => {
                    pi = sp + 1;
                    ni = sn + 1;
                    star = Some((sp, sn + 1));
                }
                None => return false,
            },
        }
    }
    p[pi.min(p.len())..].iter().all(|c| *c == '*')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_sessions_get_the_listed_variables_this_process_has() {
        // PATH is set in every test run; the others are names no process has.
        let path = std::env::var("PATH").unwrap_or_default();
        let allowed = values_of(&["PATH".to_owned(), "PANESCAN_NO_SUCH_VARIABLE".to_owned()]);
        let listed = "PATH\nPANESCAN_NO_SUCH_VARIABLE\n\nA=B\nTWO WORDS\nP[A]TH\n";
        assert_eq!(
            for_new_session(listed, &allowed).set,
            vec![format!("PATH={path}")]
        );
        // A pattern passes its first allowed match by name, once.
        let got = for_new_session("P*\nPATH\n", &allowed).set;
        assert_eq!(got, vec![format!("PATH={path}")]);
        // Nothing the operator did not name, whatever the list says.
        assert_eq!(
            for_new_session("*\nPATH\nHOME\n", &[]).set,
            Vec::<String>::new()
        );
    }

    #[test]
    fn patterns_match_as_fnmatch_does() {
        for (p, n) in [
            ("A*", "AB"),
            ("*", ""),
            ("A?C", "ABC"),
            ("*_SOCK", "SSH_AUTH_SOCK"),
            ("a\\*", "a*"),
            ("**b", "ab"),
        ] {
            assert!(matches(p, n), "{p} {n}");
        }
        for (p, n) in [
            ("A", "AB"),
            ("A?", "A"),
            ("a\\*", "ab"),
            ("*_SOCK", "SOCKET"),
            ("", "x"),
        ] {
            assert!(!matches(p, n), "{p} {n}");
        }
    }
}
