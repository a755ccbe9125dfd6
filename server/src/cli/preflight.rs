//! Before a command starts: is tmux there, and new enough?
//!
//! panescan needs tmux 3.2 or newer (control clients with `no-output` and
//! `ignore-size`, `capture-pane -J` with `-S`/`-E` in history). A missing or
//! older tmux gets one sentence that says what to install, not a stack of
//! errors from the first command that fails.

use std::process::{Command, Stdio};

use crate::tmux::binary;

/// The oldest tmux panescan supports.
pub const MIN_TMUX: (u32, u32) = (3, 2);

/// Parses `tmux -V` output: `tmux 3.3a`, `tmux next-3.5`, `tmux master`.
/// `None` when no version number can be read (development builds are
/// trusted).
pub fn parse_version(text: &str) -> Option<(u32, u32)> {
    let word = text.split_whitespace().nth(1)?;
    let digits = word.trim_start_matches(|c: char| !c.is_ascii_digit());
    let mut parts = digits.split('.');
    let major = parts.next()?.parse().ok()?;
    let minor: String = parts
        .next()
        .unwrap_or("0")
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    Some((major, minor.parse().unwrap_or(0)))
}

/// `Ok(version text)`, or the sentence to print.
pub fn check_tmux() -> Result<String, String> {
    let install = "install tmux 3.2 or newer (Debian/Ubuntu: `apt install tmux`, Fedora: `dnf install tmux`, macOS: `brew install tmux`)";
    let program = binary::init(None).map_err(|e| format!("{e}; {install}"))?;
    let out = crate::tmux::client_env::apply(&mut Command::new(program))
        .arg("-V")
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run {} ({e}): {install}", program.display()))?;
    let text = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    match parse_version(&text) {
        Some(v) if v < MIN_TMUX => Err(format!(
            "{text} is too old: panescan needs tmux {}.{} or newer; {install}",
            MIN_TMUX.0, MIN_TMUX.1
        )),
        _ => Ok(text),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_parse_and_compare() {
        assert_eq!(parse_version("tmux 3.3a"), Some((3, 3)));
        assert_eq!(parse_version("tmux 3.2"), Some((3, 2)));
        assert_eq!(parse_version("tmux next-3.6"), Some((3, 6)));
        assert_eq!(parse_version("tmux 2.9a"), Some((2, 9)));
        assert_eq!(parse_version("tmux master"), None);
        assert!(parse_version("tmux 3.1c").is_some_and(|v| v < MIN_TMUX));
        assert!(parse_version("tmux 3.10").is_some_and(|v| v >= MIN_TMUX));
    }
}
