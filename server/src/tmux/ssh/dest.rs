//! Destinations the operator names with `--ssh DEST`: `host`, `user@host`,
//! `ssh://[user@]host[:port]` or a `Host` alias of the ssh config. Pure:
//! nothing here runs ssh.
//!
//! A destination becomes ssh's own arguments (`-l USER -p PORT -- HOST`),
//! so whatever is accepted must be inert there: nothing that starts with
//! `-` (ssh would read an option), no whitespace or control character, and
//! only the characters host names, aliases and user names use. ssh reads
//! `%` tokens in some places and a config file's patterns use `*`, `?` and
//! `!`: none of them is accepted.

use std::fmt;

/// The longest destination accepted (host names are at most 253 bytes).
const MAX_DEST_BYTES: usize = 255;

/// A checked destination.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Dest {
    /// The text the operator wrote: what calls name in `host`.
    pub text: String,
    /// `-l USER`, when the destination names one.
    pub user: Option<String>,
    /// The host name, address or `Host` alias ssh is given.
    pub host: String,
    /// `-p PORT`, when the destination names one.
    pub port: Option<u16>,
}

/// Why a destination was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadDest {
    /// The destination, as written (escaped when printed).
    pub text: String,
    /// What is wrong with it.
    pub why: &'static str,
}

impl fmt::Display for BadDest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "ssh destination {:?} refused: {}; write host, user@host, ssh://user@host:port or a Host alias of the ssh config",
            self.text, self.why
        )
    }
}

impl std::error::Error for BadDest {}

/// The name `"local"` means this machine in every `host` argument: no
/// destination may take it.
pub const LOCAL: &str = "local";

/// Parses and checks `text`.
pub fn parse(text: &str) -> Result<Dest, BadDest> {
    let bad = |why| BadDest {
        text: text.to_owned(),
        why,
    };
    if text.is_empty() {
        return Err(bad("it is empty"));
    }
    if text.len() > MAX_DEST_BYTES {
        return Err(bad("it is longer than 255 bytes"));
    }
    if text.starts_with('-') {
        return Err(bad("it starts with `-`, which ssh would read as an option"));
    }
    if text.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(bad("it contains whitespace or a control character"));
    }
    if text == LOCAL {
        return Err(bad("\"local\" names this machine"));
    }
    let (rest, uri) = match text.strip_prefix("ssh://") {
        Some(rest) => (rest.strip_suffix('/').unwrap_or(rest), true),
        None => (text, false),
    };
    let (user, hostport) = match rest.rsplit_once('@') {
        Some((user, hostport)) => (Some(user), hostport),
        None => (None, rest),
    };
    let (host, port) = if uri {
        split_port(hostport).map_err(bad)?
    } else {
        (hostport, None)
    };
    if let Some(user) = user {
        check_user(user).map_err(bad)?;
    }
    check_host(host).map_err(bad)?;
    Ok(Dest {
        text: text.to_owned(),
        user: user.map(str::to_owned),
        host: host.to_owned(),
        port,
    })
}

/// `host:port` (or `[v6]:port`) of a `ssh://` destination.
fn split_port(hostport: &str) -> Result<(&str, Option<u16>), &'static str> {
    if let Some(inner) = hostport.strip_prefix('[') {
        let (addr, after) = inner
            .split_once(']')
            .ok_or("its `[` address has no closing `]`")?;
        let port = match after {
            "" => None,
            p => Some(port_number(
                p.strip_prefix(':').ok_or("junk follows its `]`")?,
            )?),
        };
        if addr.is_empty() || !addr.bytes().all(|b| b.is_ascii_hexdigit() || b == b':') {
            return Err("its bracketed address is not an IPv6 address");
        }
        return Ok((addr, port));
    }
    match hostport.split_once(':') {
        Some((host, port)) => Ok((host, Some(port_number(port)?))),
        None => Ok((hostport, None)),
    }
}

fn port_number(text: &str) -> Result<u16, &'static str> {
    if text.is_empty() || text.len() > 5 || !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err("its port is not a number from 1 to 65535");
    }
    match text.parse::<u16>() {
        Ok(0) | Err(_) => Err("its port is not a number from 1 to 65535"),
        Ok(p) => Ok(p),
    }
}

/// A user name: letters, digits, `.`, `_`, `-` (not first).
fn check_user(user: &str) -> Result<(), &'static str> {
    if user.is_empty() {
        return Err("its user name is empty");
    }
    if user.starts_with('-') {
        return Err("its user name starts with `-`");
    }
    if !user
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
    {
        return Err("its user name has a character other than letters, digits, `.`, `_`, `-`");
    }
    Ok(())
}

/// A host name, an address or an alias: letters, digits, `.`, `_`, `-`
/// (not first) and `:` (IPv6).
fn check_host(host: &str) -> Result<(), &'static str> {
    if host.is_empty() {
        return Err("its host is empty");
    }
    if host.starts_with('-') {
        return Err("its host starts with `-`");
    }
    if !host
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-' | b':'))
    {
        return Err("its host has a character other than letters, digits, `.`, `_`, `-`, `:`");
    }
    Ok(())
}

/// What the fuzz target checks on any input: parsing never panics, and
/// anything accepted is inert on ssh's command line. `Err` says which rule
/// an accepted destination broke.
pub fn fuzz_check(data: &[u8]) -> Result<(), String> {
    let text = String::from_utf8_lossy(data);
    let Ok(dest) = parse(&text) else {
        return Ok(());
    };
    let mut parts = vec![dest.host.as_str()];
    parts.extend(dest.user.as_deref());
    for part in parts {
        if part.is_empty() || part.starts_with('-') {
            return Err(format!(
                "{text:?}: accepted part {part:?} is empty or an option"
            ));
        }
        if let Some(c) = part
            .chars()
            .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | ':')))
        {
            return Err(format!("{text:?}: accepted part {part:?} holds {c:?}"));
        }
    }
    if dest.port == Some(0) {
        return Err(format!("{text:?}: port 0 accepted"));
    }
    if dest.text != text || dest.text == LOCAL {
        return Err(format!("{text:?}: the text kept is not the one given"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_forms_ssh_accepts() {
        let d = parse("build1").unwrap();
        assert_eq!((d.user, d.host.as_str(), d.port), (None, "build1", None));
        let d = parse("me@gpu-2.lab").unwrap();
        assert_eq!(d.user.as_deref(), Some("me"));
        assert_eq!(d.host, "gpu-2.lab");
        let d = parse("ssh://ci@10.0.0.7:2222").unwrap();
        assert_eq!(
            (d.user.as_deref(), d.host.as_str(), d.port),
            (Some("ci"), "10.0.0.7", Some(2222))
        );
        let d = parse("ssh://[::1]:22").unwrap();
        assert_eq!((d.host.as_str(), d.port), ("::1", Some(22)));
        assert_eq!(parse("ssh://box").unwrap().port, None);
    }

    #[test]
    fn refusals() {
        for bad in [
            "",
            "-oProxyCommand=x",
            "a b",
            "a\tb",
            "a\nb",
            "me@-x",
            "-me@x",
            "local",
            "a;b",
            "$(x)",
            "`x`",
            "a'b",
            "h%n",
            "*",
            "ssh://h:0",
            "ssh://h:70000",
            "ssh://h:x",
            "ssh://[zz]:1",
            "@h",
            "u@",
            "a\u{0}b",
            "é",
        ] {
            assert!(parse(bad).is_err(), "{bad:?} accepted");
        }
        assert!(parse(&"h".repeat(256)).is_err());
    }

    proptest::proptest! {
        #[test]
        fn accepted_destinations_are_inert(text in "(?s).{0,40}") {
            proptest::prop_assert!(fuzz_check(text.as_bytes()).is_ok());
        }

        #[test]
        fn names_and_users_round_trip(user in "[a-z_][a-z0-9._-]{0,8}", host in "[a-z0-9][a-z0-9.-]{0,20}") {
            let d = parse(&format!("{user}@{host}")).unwrap();
            proptest::prop_assert_eq!(d.user.as_deref(), Some(user.as_str()));
            proptest::prop_assert_eq!(d.host, host);
        }
    }
}
