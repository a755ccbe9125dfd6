//! Who may use the HTTP endpoint: bearer tokens from the token file (each
//! with its tier), compared in constant time; the `Origin` and `Host`
//! checks that keep a browser from being turned against a local server.
//!
//! What must hold: a token file another user can read is refused before
//! anything is served; a wrong token and a missing one look the same to
//! the client (401); comparing a guess costs the same time whatever its
//! prefix, so timing tells nothing about the token.

use std::fs::{self, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

use subtle::ConstantTimeEq;

use crate::config::Tier;

/// The shortest token accepted from a file: 128 bits as hex. A fresh file
/// gets 256 bits.
const MIN_TOKEN_CHARS: usize = 32;

/// One accepted token and the tier its sessions run at.
#[derive(Clone)]
pub struct Token {
    secret: Vec<u8>,
    /// The tier of sessions opened with this token (`None`: the serve's).
    pub tier: Option<Tier>,
    /// Its line in the file, for logs and to keep sessions apart by token.
    pub line: usize,
}

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the secret.
        f.debug_struct("Token")
            .field("tier", &self.tier)
            .field("line", &self.line)
            .finish()
    }
}

/// The tokens an endpoint accepts (empty with `--no-auth`).
#[derive(Debug, Clone, Default)]
pub struct Tokens {
    tokens: Vec<Token>,
}

impl Tokens {
    /// The tokens of `path`, creating the file with one fresh 256-bit
    /// token (mode 0600) when it is missing. Refused: a file group or
    /// others may read or write, one owned by another user, a line that is
    /// not `TOKEN` or `TIER TOKEN`, a short token, no token at all.
    pub fn load_or_create(path: &Path) -> Result<Tokens, String> {
        if !path.exists() {
            create(path)?;
            eprintln!(
                "panescan: wrote a new bearer token to {} (mode 0600)",
                path.display()
            );
        }
        let meta = fs::metadata(path).map_err(|e| format!("{}: {e}", path.display()))?;
        if meta.permissions().mode() & 0o077 != 0 {
            return Err(format!(
                "{}: mode {:o} lets other users read or change the tokens; chmod 600 it",
                path.display(),
                meta.permissions().mode() & 0o777
            ));
        }
        if meta.uid() != rustix::process::getuid().as_raw() {
            return Err(format!("{}: owned by another user", path.display()));
        }
        let text = fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        Tokens::parse(&text).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// Tokens from the file's text: a line is `TOKEN` or `TIER TOKEN`;
    /// blank lines and `#` comments are skipped.
    pub fn parse(text: &str) -> Result<Tokens, String> {
        let mut tokens = Vec::new();
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let words: Vec<&str> = line.split_whitespace().collect();
            let (tier, secret) = match words[..] {
                [secret] => (None, secret),
                [tier, secret] => (Some(parse_tier(tier, n + 1)?), secret),
                _ => return Err(format!("line {}: expected TOKEN or TIER TOKEN", n + 1)),
            };
            if secret.len() < MIN_TOKEN_CHARS {
                return Err(format!(
                    "line {}: a token needs at least {MIN_TOKEN_CHARS} characters",
                    n + 1
                ));
            }
            tokens.push(Token {
                secret: secret.as_bytes().to_vec(),
                tier,
                line: n + 1,
            });
        }
        if tokens.is_empty() {
            return Err("no token in the file".into());
        }
        Ok(Tokens { tokens })
    }

    /// The token an `Authorization` header value names, if any. Every
    /// token is compared, each in constant time, whichever matches.
    pub fn check(&self, authorization: Option<&[u8]>) -> Option<&Token> {
        let offered = authorization.and_then(bearer)?;
        let mut found = None;
        for token in &self.tokens {
            if bool::from(constant_time_eq(&token.secret, offered)) && found.is_none() {
                found = Some(token);
            }
        }
        found
    }
}

/// Whether `a` and `b` are equal, in time that depends on their lengths
/// only, never on where they first differ.
fn constant_time_eq(a: &[u8], b: &[u8]) -> subtle::Choice {
    // `ct_eq` on slices returns false at once for unequal lengths, which
    // tells only the length (a fresh token's is public: 64 hex digits).
    a.ct_eq(b)
}

/// The credentials of `Bearer CREDENTIALS` (scheme case-insensitive).
fn bearer(value: &[u8]) -> Option<&[u8]> {
    let value = value.trim_ascii();
    let (scheme, rest) = value.split_at_checked(6)?;
    if !scheme.eq_ignore_ascii_case(b"bearer") || !rest.first()?.is_ascii_whitespace() {
        return None;
    }
    let rest = rest.trim_ascii();
    (!rest.is_empty()).then_some(rest)
}

fn parse_tier(word: &str, line: usize) -> Result<Tier, String> {
    match word {
        "readonly" => Ok(Tier::Readonly),
        "mutating" => Ok(Tier::Mutating),
        "destructive" => Ok(Tier::Destructive),
        _ => Err(format!(
            "line {line}: tier {word:?} is not readonly, mutating or destructive"
        )),
    }
}

/// A new token file at `path`: one line, 256 random bits as hex, 0600.
fn create(path: &Path) -> Result<(), String> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|e| format!("no randomness for a token: {e}"))?;
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .map_err(|e| format!("cannot create {}: {e}", path.display()))?;
    file.write_all(format!("{hex}\n").as_bytes())
        .map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// Whether a request's `Origin` may reach us: none (not a browser), our
/// own (the origin of the `Host` asked for, when that is loopback: a page
/// we served, and we serve none), or one the operator listed with
/// `--allow-origin`.
pub fn origin_allowed(origin: Option<&[u8]>, host: Option<&[u8]>, allowed: &[String]) -> bool {
    let Some(origin) = origin else {
        return true;
    };
    let own = host
        .filter(|h| host_is_loopback(Some(h)))
        .is_some_and(|host| {
            [&b"http://"[..], b"https://"].iter().any(|scheme| {
                origin.len() == scheme.len() + host.len()
                    && origin.starts_with(scheme)
                    && origin[scheme.len()..].eq_ignore_ascii_case(host)
            })
        });
    own || allowed
        .iter()
        .any(|a| a.as_bytes().eq_ignore_ascii_case(origin))
}

/// Whether a `Host` header names this machine's loopback (`localhost`,
/// `127.0.0.1`, `[::1]`, with any port): on a loopback bind anything else
/// is a page whose DNS name was rebound to 127.0.0.1.
pub fn host_is_loopback(host: Option<&[u8]>) -> bool {
    let Some(host) = host.and_then(|h| std::str::from_utf8(h).ok()) else {
        return false;
    };
    let name = if let Some(rest) = host.strip_prefix('[') {
        match rest.split_once(']') {
            Some((name, port)) if port.is_empty() || port.starts_with(':') => name,
            _ => return false,
        }
    } else {
        host.split_once(':').map_or(host, |(name, _)| name)
    };
    let name = name.to_ascii_lowercase();
    name == "localhost"
        || name == "::1"
        || name
            .parse::<std::net::Ipv4Addr>()
            .is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: &str = "0123456789abcdef0123456789abcdef";
    const B: &str = "fedcba9876543210fedcba9876543210ff";

    #[test]
    fn tokens_and_tiers_are_read() {
        let t = Tokens::parse(&format!("# ops\n{A}\nmutating {B}\n")).unwrap();
        let a = t.check(Some(format!("Bearer {A}").as_bytes())).unwrap();
        assert_eq!((a.tier, a.line), (None, 2));
        let b = t.check(Some(format!("bearer  {B} ").as_bytes())).unwrap();
        assert_eq!(b.tier, Some(Tier::Mutating));
        assert!(t.check(Some(format!("Bearer {A}x").as_bytes())).is_none());
        assert!(t.check(Some(format!("Basic {A}").as_bytes())).is_none());
        assert!(t.check(Some(b"Bearer")).is_none());
        assert!(t.check(None).is_none());
        assert!(Tokens::parse("short").is_err());
        assert!(Tokens::parse(&format!("root {A}")).is_err());
        assert!(Tokens::parse("# nothing\n").is_err());
    }

    #[test]
    fn comparison_is_exact() {
        assert!(bool::from(constant_time_eq(b"abc", b"abc")));
        assert!(!bool::from(constant_time_eq(b"abc", b"abd")));
        assert!(!bool::from(constant_time_eq(b"abc", b"ab")));
        assert!(!bool::from(constant_time_eq(b"", b"a")));
    }

    /// A guess that shares a long prefix with the token takes no longer
    /// to refuse than one that differs at the first byte: measured as a
    /// ratio of medians over many rounds, so a loaded machine moves both.
    #[test]
    fn comparison_time_does_not_depend_on_the_prefix() {
        let secret = vec![b'k'; 4096];
        let mut near = secret.clone();
        near[4095] = b'x';
        let mut far = secret.clone();
        far[0] = b'x';
        let time = |guess: &[u8]| {
            let mut runs: Vec<u128> = (0..301)
                .map(|_| {
                    let t = std::time::Instant::now();
                    for _ in 0..50 {
                        std::hint::black_box(constant_time_eq(
                            std::hint::black_box(&secret),
                            std::hint::black_box(guess),
                        ));
                    }
                    t.elapsed().as_nanos()
                })
                .collect();
            runs.sort_unstable();
            runs[150].max(1) as f64
        };
        // Warm up, then alternate so load hits both alike.
        let _ = (time(&near), time(&far));
        let ratio = time(&near) / time(&far);
        assert!(
            (0.5..2.0).contains(&ratio),
            "near/far comparison time ratio {ratio:.2}: the comparison stops early"
        );
    }

    #[test]
    fn a_file_others_can_read_is_refused_and_a_missing_one_made() {
        let dir = std::env::temp_dir().join(format!("panescan-auth-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        let path = dir.join("tokens");
        let made = Tokens::load_or_create(&path).unwrap();
        assert_eq!(made.tokens.len(), 1);
        assert_eq!(made.tokens[0].secret.len(), 64);
        let mode = fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        fs::set_permissions(&path, fs::Permissions::from_mode(0o644)).unwrap();
        let err = Tokens::load_or_create(&path).unwrap_err();
        assert!(err.contains("other users"), "{err}");
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn origin_and_host_rules() {
        let allowed = vec!["https://app.example".to_owned()];
        let host = Some(&b"127.0.0.1:8765"[..]);
        assert!(origin_allowed(None, host, &allowed));
        assert!(origin_allowed(Some(b"https://app.example"), host, &allowed));
        assert!(!origin_allowed(
            Some(b"https://evil.example"),
            host,
            &allowed
        ));
        assert!(!origin_allowed(Some(b"null"), host, &[]));
        // Our own origin, and only on loopback, only with our port.
        assert!(origin_allowed(Some(b"http://127.0.0.1:8765"), host, &[]));
        assert!(!origin_allowed(Some(b"http://127.0.0.1:9999"), host, &[]));
        assert!(!origin_allowed(Some(b"http://localhost:8765"), host, &[]));
        let far = Some(&b"evil.example:8765"[..]);
        assert!(!origin_allowed(Some(b"http://evil.example:8765"), far, &[]));
        for ok in [
            "localhost",
            "localhost:8765",
            "127.0.0.1:1",
            "[::1]:80",
            "127.1.2.3",
        ] {
            assert!(host_is_loopback(Some(ok.as_bytes())), "{ok}");
        }
        for bad in [
            "evil.example",
            "evil.example:8765",
            "localhost.evil",
            "[::2]:1",
            "",
        ] {
            assert!(!host_is_loopback(Some(bad.as_bytes())), "{bad}");
        }
        assert!(!host_is_loopback(None));
    }
}
