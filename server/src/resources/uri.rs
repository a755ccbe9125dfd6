//! `tmux://` URIs: what each names, parsed strictly (pure, no tmux).
//!
//! Ids are written as tmux writes them: `tmux://pane/%3/screen`, not
//! percent-encoded. Decoding `%25` as well would be ambiguous (`%2534`
//! would be pane `%2534` or an encoded `%34`), so the listed form is the
//! only one. Every id goes through the same parsers as the tools'
//! arguments, so `tmux://pane/%1;kill-server/screen` is malformed, never a
//! pane.

use crate::tmux::{PaneId, SessionId, WindowId};

use super::ResourceError;

/// The one fixed resource: every session.
pub const SESSIONS: &str = "tmux://sessions";

/// The URI templates of `resources/templates/list`:
/// (template, name, mime type, description).
pub const TEMPLATES: &[(&str, &str, &str, &str)] = &[
    (
        "tmux://session/{session_id}",
        "session",
        "application/json",
        "One session ($N) and its windows, as get_session_info returns it.",
    ),
    (
        "tmux://window/{window_id}",
        "window",
        "application/json",
        "One window (@N), its layout and panes, as get_window_info returns it.",
    ),
    (
        "tmux://pane/{pane_id}",
        "pane",
        "application/json",
        "One pane (%N): every field get_pane_info returns.",
    ),
    (
        "tmux://pane/{pane_id}/screen",
        "pane screen",
        "text/plain",
        "The visible screen of a pane, as capture_pane returns it by default.",
    ),
    (
        "tmux://pane/{pane_id}/history{?lines}",
        "pane history",
        "text/plain",
        "The newest `lines` lines of a pane (scrollback and screen; default 200), bounded as capture_pane.",
    ),
];

/// What a `tmux://` URI names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Target {
    /// `tmux://sessions`.
    Sessions,
    /// `tmux://session/$N`.
    Session(SessionId),
    /// `tmux://window/@N`.
    Window(WindowId),
    /// `tmux://pane/%N`.
    Pane(PaneId),
    /// `tmux://pane/%N/screen`.
    Screen(PaneId),
    /// `tmux://pane/%N/history`, with `?lines=N` when given.
    History(PaneId, Option<usize>),
}

impl Target {
    /// The pane whose printing changes this resource's text.
    pub fn text_pane(&self) -> Option<PaneId> {
        match self {
            Target::Screen(p) | Target::History(p, _) => Some(*p),
            _ => None,
        }
    }
}

/// The screen resource of `pane`, as `resources/list` names it.
pub fn screen_uri(pane: PaneId) -> String {
    format!("tmux://pane/{pane}/screen")
}

/// Parses `uri`; a malformed one is an error saying which forms exist.
pub fn parse(uri: &str) -> Result<Target, ResourceError> {
    let malformed = |why: &str| {
        ResourceError::malformed(format!(
            "malformed resource URI {uri:?}: {why}; resources are {SESSIONS} and {}",
            TEMPLATES.iter().map(|t| t.0).collect::<Vec<_>>().join(", ")
        ))
    };
    let rest = uri
        .strip_prefix("tmux://")
        .ok_or_else(|| malformed("it must start with tmux://"))?;
    let (path, query) = match rest.split_once('?') {
        Some((p, q)) => (p, Some(q)),
        None => (rest, None),
    };
    let parts: Vec<&str> = path.split('/').collect();
    let target = match parts.as_slice() {
        ["sessions"] => Target::Sessions,
        ["session", id] => {
            Target::Session(SessionId::parse(id).map_err(|e| malformed(&e.to_string()))?)
        }
        ["window", id] => {
            Target::Window(WindowId::parse(id).map_err(|e| malformed(&e.to_string()))?)
        }
        ["pane", id, tail @ ..] => {
            let pane = PaneId::parse(id).map_err(|e| malformed(&e.to_string()))?;
            match tail {
                [] => Target::Pane(pane),
                ["screen"] => Target::Screen(pane),
                ["history"] => Target::History(pane, None),
                _ => return Err(malformed("a pane has /screen and /history")),
            }
        }
        _ => return Err(malformed("no such resource")),
    };
    match (target, query) {
        (_, None) => Ok(target),
        (Target::History(pane, None), Some(q)) => {
            let lines = q
                .strip_prefix("lines=")
                .filter(|n| !n.is_empty() && n.len() <= 9 && n.bytes().all(|b| b.is_ascii_digit()))
                .and_then(|n| n.parse::<usize>().ok())
                .ok_or_else(|| malformed("history takes ?lines=N (N a number)"))?;
            Ok(Target::History(pane, Some(lines)))
        }
        _ => Err(malformed("only history takes a query (?lines=N)")),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn p(n: u32) -> PaneId {
        PaneId::from_number(n)
    }

    #[test]
    fn every_form_parses() {
        assert_eq!(parse("tmux://sessions").unwrap(), Target::Sessions);
        assert_eq!(
            parse("tmux://session/$2").unwrap(),
            Target::Session(SessionId::from_number(2))
        );
        assert_eq!(
            parse("tmux://window/@7").unwrap(),
            Target::Window(WindowId::from_number(7))
        );
        assert_eq!(parse("tmux://pane/%3").unwrap(), Target::Pane(p(3)));
        assert_eq!(
            parse("tmux://pane/%3/screen").unwrap(),
            Target::Screen(p(3))
        );
        // %25 is pane 25, not an encoded '%'.
        assert_eq!(
            parse("tmux://pane/%25/screen").unwrap(),
            Target::Screen(p(25))
        );
        assert_eq!(
            parse("tmux://pane/%3/history").unwrap(),
            Target::History(p(3), None)
        );
        assert_eq!(
            parse("tmux://pane/%3/history?lines=50").unwrap(),
            Target::History(p(3), Some(50))
        );
        assert_eq!(parse(&screen_uri(p(9))).unwrap(), Target::Screen(p(9)));
    }

    #[test]
    fn malformed_uris_are_refused_naming_what_exists() {
        for bad in [
            "tmux://pane/%1;kill-server/screen",
            "tmux://../etc",
            "tmux://pane/%1/../../etc",
            "tmux://pane/1/screen",
            "tmux://pane/%1/screen?lines=3",
            "tmux://pane/%1/history?lines=",
            "tmux://pane/%1/history?lines=-1",
            "tmux://pane/%1/history?lines=3&x=1",
            "tmux://pane/%1/screen/",
            "file:///etc/passwd",
            "tmux://session/main",
            "",
        ] {
            let e = parse(bad).unwrap_err();
            assert_eq!(e.kind, super::super::ErrorKind::Malformed, "{bad}");
            assert!(
                e.message.contains("tmux://pane/{pane_id}/screen"),
                "{bad}: {}",
                e.message
            );
        }
    }
}
