//! tmux object ids (`%N` panes, `@N` windows, `$N` sessions) and targets.
//!
//! Every id that reaches a tmux command line goes through these types, so a
//! string like `%1; kill-server` can never be mistaken for a pane: parsing
//! accepts exactly one sigil followed by ASCII digits that fit a `u32`.

use std::fmt;
use std::str::FromStr;

use super::TmuxError;

fn parse_id(text: &str, sigil: char, what: &str) -> Result<u32, TmuxError> {
    let digits = text.strip_prefix(sigil).ok_or_else(|| {
        TmuxError::Invalid(format!(
            "{what} id {text:?} must look like {sigil}N (for example {sigil}3)"
        ))
    })?;
    if digits.is_empty() || digits.len() > 10 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(TmuxError::Invalid(format!(
            "{what} id {text:?} must look like {sigil}N (for example {sigil}3)"
        )));
    }
    digits
        .parse::<u32>()
        .map_err(|_| TmuxError::Invalid(format!("{what} id {text:?} is out of range")))
}

macro_rules! id_type {
    ($name:ident, $sigil:literal, $what:literal, $pattern:literal) => {
        #[doc = concat!("A tmux ", $what, " id, written `", $sigil, "N`.")]
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(u32);

        impl $name {
            #[doc = concat!("Parses `", $sigil, "N`; anything else is [`TmuxError::Invalid`].")]
            pub fn parse(text: &str) -> Result<Self, TmuxError> {
                parse_id(text, $sigil, $what).map($name)
            }

            /// The id from its number.
            pub fn from_number(n: u32) -> Self {
                $name(n)
            }

            /// The number after the sigil.
            pub fn number(self) -> u32 {
                self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}{}", $sigil, self.0)
            }
        }

        impl FromStr for $name {
            type Err = TmuxError;
            fn from_str(s: &str) -> Result<Self, TmuxError> {
                Self::parse(s)
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_str(self)
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let text = String::deserialize(d)?;
                Self::parse(&text).map_err(serde::de::Error::custom)
            }
        }

        impl schemars::JsonSchema for $name {
            fn schema_name() -> std::borrow::Cow<'static, str> {
                stringify!($name).into()
            }
            fn inline_schema() -> bool {
                true
            }
            fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
                schemars::json_schema!({
                    "type": "string",
                    "pattern": $pattern,
                    "description": concat!("tmux ", $what, " id, e.g. ", $sigil, "3")
                })
            }
        }
    };
}

id_type!(PaneId, '%', "pane", "^%[0-9]+$");
id_type!(WindowId, '@', "window", "^@[0-9]+$");
id_type!(SessionId, '$', "session", "^\\$[0-9]+$");

/// What a command acts on (`-t`). Ids are validated by construction; a
/// session name is matched exactly (`=NAME`) and quoted.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Target {
    /// A pane by id.
    Pane(PaneId),
    /// A window by id.
    Window(WindowId),
    /// A session by id.
    Session(SessionId),
    /// A session by exact name (sent as `=NAME`, never a prefix or pattern).
    SessionName(String),
}

impl Target {
    /// The target as tmux reads it, before quoting.
    pub(crate) fn to_tmux(&self) -> String {
        match self {
            Target::Pane(p) => p.to_string(),
            Target::Window(w) => w.to_string(),
            Target::Session(s) => s.to_string(),
            // A trailing ':' makes tmux read the whole text as a session name
            // even if it contains '.'; '=' asks for an exact match.
            Target::SessionName(name) => format!("={name}:"),
        }
    }

    /// Parses a pane, window or session id (`%N`, `@N`, `$N`).
    pub fn parse_id(text: &str) -> Result<Self, TmuxError> {
        match text.chars().next() {
            Some('%') => PaneId::parse(text).map(Target::Pane),
            Some('@') => WindowId::parse(text).map(Target::Window),
            Some('$') => SessionId::parse(text).map(Target::Session),
            _ => Err(TmuxError::Invalid(format!(
                "target {text:?} must be a pane (%N), window (@N) or session ($N) id"
            ))),
        }
    }
}

impl From<PaneId> for Target {
    fn from(p: PaneId) -> Self {
        Target::Pane(p)
    }
}
impl From<WindowId> for Target {
    fn from(w: WindowId) -> Self {
        Target::Window(w)
    }
}
impl From<SessionId> for Target {
    fn from(s: SessionId) -> Self {
        Target::Session(s)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn ids_parse_and_display() {
        assert_eq!(PaneId::parse("%3").unwrap().to_string(), "%3");
        assert_eq!(WindowId::parse("@0").unwrap().to_string(), "@0");
        assert_eq!(SessionId::parse("$12").unwrap().to_string(), "$12");
        for bad in [
            "",
            "%",
            "3",
            "%3;",
            "% 3",
            "%-1",
            "%+1",
            "@3",
            "%99999999999",
            "%1\n",
        ] {
            assert!(PaneId::parse(bad).is_err(), "{bad:?}");
        }
        assert_eq!(serde_json::to_string(&PaneId(7)).unwrap(), "\"%7\"");
        assert!(PaneId(9) < PaneId(10) && PaneId(10) < PaneId(100));
    }
}
