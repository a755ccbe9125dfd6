//! `tmux://` URIs: what each names, parsed strictly (pure, no tmux).
//!
//! Every URI panescan writes is a valid RFC 3986 URI and every template a
//! valid RFC 6570 one. Sessions and windows keep tmux's ids (`$` and `@`
//! may stand in a path); a pane is written by its number alone,
//! `tmux://pane/3/screen` for `%3`, because `%` must start a
//! percent-encoding. Percent-encoding the id instead (`%253`) would be
//! ambiguous with the form written before, where `tmux://pane/%253` was
//! pane 253: a `%` in a pane URI is refused with an error that names the
//! new form, never read as some other pane. Every id goes through the
//! same parsers as the tools' arguments, so `tmux://pane/1;kill-server`
//! is malformed, never a pane.

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
        "tmux://pane/{pane_number}",
        "pane",
        "application/json",
        "One pane: every field get_pane_info returns. pane_number is N of pane %N, without the %.",
    ),
    (
        "tmux://pane/{pane_number}/screen",
        "pane screen",
        "text/plain",
        "The visible screen of a pane (N of pane %N), as capture_pane returns it by default.",
    ),
    (
        "tmux://pane/{pane_number}/history{?lines}",
        "pane history",
        "text/plain",
        "The newest `lines` lines of a pane (N of pane %N; scrollback and screen; default 200), bounded as capture_pane.",
    ),
    (
        "tmux://pane/{pane_number}/journal{?since,until}",
        "pane journal",
        "text/plain",
        "A pane's journaled lines (panescan daemon --journal), even trimmed or closed: `TIME<tab>line`, the newest 200, between since and until (RFC 3339 or 15m, 2h, 7d ago).",
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
    /// `tmux://pane/N` (pane `%N`).
    Pane(PaneId),
    /// `tmux://pane/N/screen`.
    Screen(PaneId),
    /// `tmux://pane/N/history`, with `?lines=L` when given.
    History(PaneId, Option<usize>),
    /// `tmux://pane/N/journal`, with `?since=T&until=T` (ms) when given.
    Journal(PaneId, Option<i64>, Option<i64>),
}

impl Target {
    /// The one way panescan writes this URI.
    pub fn uri(&self) -> String {
        match self {
            Target::Sessions => SESSIONS.to_owned(),
            Target::Session(s) => format!("tmux://session/{s}"),
            Target::Window(w) => format!("tmux://window/{w}"),
            Target::Pane(p) => format!("tmux://pane/{}", p.number()),
            Target::Screen(p) => format!("tmux://pane/{}/screen", p.number()),
            Target::History(p, None) => format!("tmux://pane/{}/history", p.number()),
            Target::History(p, Some(n)) => {
                format!("tmux://pane/{}/history?lines={n}", p.number())
            }
            Target::Journal(p, since, until) => {
                let mut q: Vec<String> = Vec::new();
                if let Some(t) = since {
                    q.push(format!("since={}", crate::journal::when::format(*t)));
                }
                if let Some(t) = until {
                    q.push(format!("until={}", crate::journal::when::format(*t)));
                }
                let q = if q.is_empty() {
                    String::new()
                } else {
                    format!("?{}", q.join("&"))
                };
                format!("tmux://pane/{}/journal{q}", p.number())
            }
        }
    }

    /// The pane whose printing changes this resource's text.
    pub fn text_pane(&self) -> Option<PaneId> {
        match self {
            Target::Screen(p) | Target::History(p, _) | Target::Journal(p, ..) => Some(*p),
            _ => None,
        }
    }
}

/// The screen resource of `pane`, as `resources/list` names it.
pub fn screen_uri(pane: PaneId) -> String {
    Target::Screen(pane).uri()
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
            let pane = pane_of(id, uri)?;
            match tail {
                [] => Target::Pane(pane),
                ["screen"] => Target::Screen(pane),
                ["history"] => Target::History(pane, None),
                ["journal"] => Target::Journal(pane, None, None),
                _ => return Err(malformed("a pane has /screen, /history and /journal")),
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
        (Target::Journal(pane, None, None), Some(q)) => {
            let (since, until) = journal_query(q).map_err(|why| malformed(&why))?;
            Ok(Target::Journal(pane, since, until))
        }
        _ => Err(malformed(
            "only history (?lines=N) and journal (?since=T&until=T) take a query",
        )),
    }
}

/// `since=T&until=T` (either, each once), as ms: RFC 3339 or a span back
/// from now (`2h`).
fn journal_query(q: &str) -> Result<(Option<i64>, Option<i64>), String> {
    let now = crate::journal::when::now_ms();
    let (mut since, mut until) = (None, None);
    for pair in q.split('&') {
        let (key, value) = pair
            .split_once('=')
            .ok_or_else(|| "journal takes ?since=T&until=T".to_owned())?;
        let fine = |b: u8| b.is_ascii_alphanumeric() || b":+-.".contains(&b);
        if value.is_empty() || value.len() > 40 || !value.bytes().all(fine) {
            return Err(format!(
                "{key}= takes a time: RFC 3339 (2026-12-06T12:00:00Z) or a span back from now (15m, 2h, 7d)"
            ));
        }
        // Before 1970 reads as 1970: a URI written back names the same.
        let ms = crate::journal::when::parse(value, now)
            .map_err(|e| format!("{key}: {e}"))?
            .max(0);
        let slot = match key {
            "since" => &mut since,
            "until" => &mut until,
            _ => return Err(format!("journal takes since and until, not {key}")),
        };
        if slot.replace(ms).is_some() {
            return Err(format!("{key} is given twice"));
        }
    }
    Ok((since, until))
}

/// The pane a URI's pane segment names: its number, as tmux's `%N`
/// without the `%`. A segment with `%` (the form written before, or that
/// form percent-encoded) is refused naming the form to use.
fn pane_of(segment: &str, uri: &str) -> Result<PaneId, ResourceError> {
    if segment.contains('%') {
        let number = segment
            .rsplit('%')
            .next()
            .filter(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
            .unwrap_or("N");
        return Err(ResourceError::malformed(format!(
            "resource URI {uri:?}: a pane is written by its number without %, e.g. tmux://pane/{number}/screen for pane %{number} (the %N form is not a valid URI); resources are {SESSIONS} and {}",
            TEMPLATES.iter().map(|t| t.0).collect::<Vec<_>>().join(", ")
        )));
    }
    let malformed = || {
        ResourceError::malformed(format!(
            "malformed resource URI {uri:?}: {segment:?} is not a pane number (N of pane %N); resources are {SESSIONS} and {}",
            TEMPLATES.iter().map(|t| t.0).collect::<Vec<_>>().join(", ")
        ))
    };
    if segment.is_empty() || !segment.bytes().all(|b| b.is_ascii_digit()) {
        return Err(malformed());
    }
    PaneId::parse(&format!("%{segment}")).map_err(|_| malformed())
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
        assert_eq!(parse("tmux://pane/3").unwrap(), Target::Pane(p(3)));
        assert_eq!(parse("tmux://pane/3/screen").unwrap(), Target::Screen(p(3)));
        assert_eq!(
            parse("tmux://pane/25/screen").unwrap(),
            Target::Screen(p(25))
        );
        assert_eq!(
            parse("tmux://pane/3/history").unwrap(),
            Target::History(p(3), None)
        );
        assert_eq!(
            parse("tmux://pane/3/history?lines=50").unwrap(),
            Target::History(p(3), Some(50))
        );
        assert_eq!(parse(&screen_uri(p(9))).unwrap(), Target::Screen(p(9)));
        assert_eq!(screen_uri(p(0)), "tmux://pane/0/screen");
    }

    /// RFC 3986: every character is unreserved, a delimiter, or starts a
    /// `%XX` percent-encoding.
    fn is_valid_uri(uri: &str) -> bool {
        let b = uri.as_bytes();
        let mut i = 0;
        while i < b.len() {
            let c = b[i];
            if c == b'%' {
                if !(i + 2 < b.len()
                    && b[i + 1].is_ascii_hexdigit()
                    && b[i + 2].is_ascii_hexdigit())
                {
                    return false;
                }
                i += 3;
                continue;
            }
            if !(c.is_ascii_alphanumeric() || b"-._~:/?#[]@!$&'()*+,;=".contains(&c)) {
                return false;
            }
            i += 1;
        }
        true
    }

    #[test]
    fn every_uri_written_is_valid_and_the_old_pane_form_names_the_new_one() {
        for t in [
            Target::Sessions,
            Target::Session(SessionId::from_number(4)),
            Target::Window(WindowId::from_number(5)),
            Target::Pane(p(0)),
            Target::Screen(p(12)),
            Target::History(p(250), Some(3)),
        ] {
            assert!(is_valid_uri(&t.uri()), "{}", t.uri());
            assert_eq!(parse(&t.uri()).unwrap(), t);
        }
        assert!(!is_valid_uri("tmux://pane/%0/screen"));
        for old in [
            "tmux://pane/%3/screen",
            "tmux://pane/%3",
            "tmux://pane/%253/history?lines=2",
        ] {
            let e = parse(old).unwrap_err();
            assert!(
                e.message.contains("written by its number without %"),
                "{old}: {}",
                e.message
            );
        }
        let e = parse("tmux://pane/%3/screen").unwrap_err();
        assert!(e.message.contains("tmux://pane/3/screen"), "{}", e.message);
    }

    #[test]
    fn malformed_uris_are_refused_naming_what_exists() {
        for bad in [
            "tmux://pane/1;kill-server/screen",
            "tmux://pane/%1;kill-server/screen",
            "tmux://../etc",
            "tmux://pane/1/../../etc",
            "tmux://pane/x1/screen",
            "tmux://pane/-1/screen",
            "tmux://pane//screen",
            "tmux://pane/99999999999999/screen",
            "tmux://pane/1/screen?lines=3",
            "tmux://pane/1/history?lines=",
            "tmux://pane/1/history?lines=-1",
            "tmux://pane/1/history?lines=3&x=1",
            "tmux://pane/1/screen/",
            "file:///etc/passwd",
            "tmux://session/main",
            "",
        ] {
            let e = parse(bad).unwrap_err();
            assert_eq!(e.kind, super::super::ResourceErrorKind::Malformed, "{bad}");
            assert!(
                e.message.contains("tmux://pane/{pane_number}/screen"),
                "{bad}: {}",
                e.message
            );
        }
    }
}
