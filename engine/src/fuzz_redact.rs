//! Checks shared by the redaction fuzz target and its corpus-replay test.
//!
//! Not part of the stable API. `fuzz/fuzz_targets/redact.rs`,
//! `engine/tests/redact.rs` (property tests) and `engine/tests/fuzz_corpus.rs`
//! call [`check`].
//!
//! An input is decoded as: one byte choosing the kind ([`sample`]), one
//! byte splitting the rest, then the bytes that make the secret's body
//! (mapped onto the kind's alphabet) and, after the split, the text put
//! around it (any bytes, at most 4 KiB each side).

use crate::redact::redact_bytes;

/// Kinds [`sample`] can build: every token prefix, every assignment key
/// word, and the other shapes (see [`sample`]).
pub const SAMPLE_KINDS: u8 = (TOKENS.len() + KEYS.len() + OTHERS) as u8;

/// Shapes of [`sample`] that are neither a token nor a key assignment.
const OTHERS: usize = 8;

const ALNUM: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
const UPPER_DIGITS: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
const BASE64: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
/// A quoted value's alphabet: spaces and punctuation a bare value stops at.
const QUOTED: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789 ,;=!";

/// Token prefixes (every literal the redactor starts a token at, each of
/// the letters `gh?_` and `xox?` takes) and how many ALNUM characters
/// follow: the whole token is the secret.
const TOKENS: &[(&str, usize)] = &[
    ("ghp_", 36),
    ("gho_", 36),
    ("ghu_", 36),
    ("ghs_", 36),
    ("ghr_", 36),
    ("github_pat_", 40),
    ("glpat-", 20),
    ("xoxa-", 24),
    ("xoxb-", 24),
    ("xoxp-", 24),
    ("xoxr-", 24),
    ("xoxs-", 24),
    ("sk_live_", 24),
    ("rk_live_", 24),
    ("sk-ant-api03-", 40),
    ("sk-proj-7", 40),
    ("AIza", 35),
];

/// Assignment keys, one for each key word (and some case): `KEY=VALUE`,
/// the value is the secret.
const KEYS: &[&str] = &[
    "DB_PASSWORD",
    "Passwd",
    "client_secret",
    "GITHUB_TOKEN",
    "api_key",
    "APIKEY",
    "x-api-key",
];

/// `len` bytes of `alphabet` chosen by `body` (cycled; padded when short).
fn body_of(body: &[u8], alphabet: &[u8], len: usize) -> String {
    (0..len)
        .map(|i| {
            let b = body.get(i % body.len().max(1)).copied().unwrap_or(0);
            let b = b.wrapping_add(i as u8);
            char::from(alphabet[usize::from(b) % alphabet.len()])
        })
        .collect()
}

/// A secret of kind `kind % SAMPLE_KINDS` built from `body`: the text that
/// holds it (one line, or a private key block) and the part that must not
/// survive redaction.
pub fn sample(kind: u8, body: &[u8]) -> (String, String) {
    let an = |n| body_of(body, ALNUM, n);
    let whole = |s: String| (s.clone(), s);
    let kind = usize::from(kind % SAMPLE_KINDS);
    if let Some((prefix, len)) = TOKENS.get(kind) {
        return whole(format!("{prefix}{}", an(*len)));
    }
    let kind = kind - TOKENS.len();
    if let Some(key) = KEYS.get(kind) {
        let v = an(14);
        return (format!("{key}={v}"), v);
    }
    match kind - KEYS.len() {
        0 => whole(format!("AKIA{}", body_of(body, UPPER_DIGITS, 16))),
        1 => whole(format!("ASIA{}", body_of(body, UPPER_DIGITS, 16))),
        2 => {
            let v = body_of(body, BASE64, 40);
            (format!("aws_secret_access_key = {v}"), v)
        }
        3 => {
            let v = body_of(body, BASE64, 40);
            (format!("{{\"SecretAccessKey\": \"{v}\"}}"), v)
        }
        4 => whole(format!("eyJ{}.eyJ{}.{}", an(12), an(20), an(24))),
        5 => {
            let v = an(12);
            (format!("postgres://admin:{v}@db.internal:5432/app"), v)
        }
        6 => {
            // Quoted: spaces, commas and `=` are the value's own.
            let v = format!("{} {}", an(6), body_of(body, QUOTED, 10));
            let quote = if body.first().is_some_and(|b| b % 2 == 0) {
                '"'
            } else {
                '\''
            };
            (format!("password: {quote}{v}{quote}"), v)
        }
        _ => {
            let v = body_of(body, BASE64, 64);
            (
                format!("-----BEGIN PRIVATE KEY-----\n{v}\n-----END PRIVATE KEY-----"),
                v,
            )
        }
    }
}

/// Redacts a sample put between any two texts: the secret must be gone
/// (unless those texts hold it themselves) and redacting must not panic.
pub fn check(data: &[u8]) -> Result<(), String> {
    let Some((&kind, rest)) = data.split_first() else {
        return Ok(());
    };
    let Some((&split, rest)) = rest.split_first() else {
        return Ok(());
    };
    let split = usize::from(split).min(rest.len());
    let (body, around) = rest.split_at(split);
    let (before, after) = around.split_at(around.len() / 2);
    let (before, after) = (clip(before), clip(after));
    let (line, secret) = sample(kind, body);
    // Redaction of any bytes at all must not panic.
    let _ = redact_bytes(data);
    if contains(before, secret.as_bytes()) || contains(after, secret.as_bytes()) {
        return Ok(());
    }
    let mut text = before.to_vec();
    text.extend_from_slice(b"\n");
    text.extend_from_slice(line.as_bytes());
    text.extend_from_slice(b"\n");
    text.extend_from_slice(after);
    let (out, n) = redact_bytes(&text);
    if contains(&out, secret.as_bytes()) {
        return Err(format!(
            "secret {secret:?} survived: {:?}",
            String::from_utf8_lossy(&out)
        ));
    }
    if n == 0 {
        return Err(format!(
            "no redaction in {:?}",
            String::from_utf8_lossy(&text)
        ));
    }
    fixed_point(&out)?;
    two_in_a_line(kind, body, split)
}

/// A redacted text holds no secret any more: redacting it again changes
/// nothing (the `[REDACTED:KIND]` marks, and what they now stand next to,
/// are not secrets).
fn fixed_point(out: &[u8]) -> Result<(), String> {
    let (again, _) = redact_bytes(out);
    if again != out {
        return Err(format!(
            "redacting twice changed {:?} into {:?}",
            String::from_utf8_lossy(out),
            String::from_utf8_lossy(&again)
        ));
    }
    Ok(())
}

/// What may stand between two secrets on one line.
const SEPARATORS: &[&str] = &[" ", "\t", ", ", "; ", "\"", " | ", "' '", " && ", "\t=\t"];

/// Two secrets of two kinds on one line, between separators: neither
/// survives.
fn two_in_a_line(kind: u8, body: &[u8], split: usize) -> Result<(), String> {
    let other: Vec<u8> = body.iter().rev().map(|b| b.wrapping_add(7)).collect();
    let kind2 = kind.wrapping_add(1 + body.first().copied().unwrap_or(0) % (SAMPLE_KINDS - 1));
    let (line1, secret1) = sample(kind, body);
    let (line2, secret2) = sample(kind2, &other);
    let sep = SEPARATORS[split % SEPARATORS.len()];
    let text = format!("{sep}{line1}{sep}{line2}{sep}");
    let (out, _) = redact_bytes(text.as_bytes());
    for secret in [&secret1, &secret2] {
        if contains(&out, secret.as_bytes()) {
            return Err(format!(
                "secret {secret:?} survived beside another: {:?}",
                String::from_utf8_lossy(&out)
            ));
        }
    }
    fixed_point(&out)
}

fn clip(bytes: &[u8]) -> &[u8] {
    &bytes[..bytes.len().min(4096)]
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    memchr::memmem::find(hay, needle).is_some()
}
