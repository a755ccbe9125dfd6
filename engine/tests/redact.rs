//! Redaction: every kind on known samples, known non-secrets untouched, and
//! properties over generated ones (a redacted text never holds the secret;
//! git hashes, UUIDs and words are left alone).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use panescan_engine::fuzz_redact::{check, sample, SAMPLE_KINDS};
use panescan_engine::{
    redact, redact_bytes, search_captures, Capture, Matcher, PatternOptions, SearchOptions,
};
use proptest::prelude::*;
use proptest::strategy::ValueTree;

/// One known sample per kind: the text, and what it must become.
const KNOWN: &[(&str, &str)] = &[
    ("export AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE", "export AWS_ACCESS_KEY_ID=[REDACTED:AWS_ACCESS_KEY]"),
    ("key AKIAIOSFODNN7EXAMPLE used", "key [REDACTED:AWS_ACCESS_KEY] used"),
    ("sts ASIAY34FZKBOKMUTVV7A ok", "sts [REDACTED:AWS_ACCESS_KEY] ok"),
    (
        "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "aws_secret_access_key = [REDACTED:AWS_SECRET_KEY]",
    ),
    (
        "remote: ghp_16C7e42F292c6912E7710c838347Ae178B4a done",
        "remote: [REDACTED:GITHUB_TOKEN] done",
    ),
    (
        "gho_16C7e42F292c6912E7710c838347Ae178B4a",
        "[REDACTED:GITHUB_TOKEN]",
    ),
    (
        "ghu_16C7e42F292c6912E7710c838347Ae178B4a",
        "[REDACTED:GITHUB_TOKEN]",
    ),
    (
        "x ghs_16C7e42F292c6912E7710c838347Ae178B4a",
        "x [REDACTED:GITHUB_TOKEN]",
    ),
    (
        "(ghr_16C7e42F292c6912E7710c838347Ae178B4a)",
        "([REDACTED:GITHUB_TOKEN])",
    ),
    (
        "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEF",
        "[REDACTED:GITHUB_TOKEN]",
    ),
    ("glpat-xxxxXXXXxxxxXXXX1234 x", "[REDACTED:GITLAB_TOKEN] x"),
    (
        "SLACK xoxb-2648731245-4829387104-ZdQpDkXr1vbA",
        "SLACK [REDACTED:SLACK_TOKEN]",
    ),
    ("xoxa-2648731245-ZdQpDkXr1vbA", "[REDACTED:SLACK_TOKEN]"),
    ("xoxp-2648731245-ZdQpDkXr1vbA", "[REDACTED:SLACK_TOKEN]"),
    ("xoxr-2648731245-ZdQpDkXr1vbA", "[REDACTED:SLACK_TOKEN]"),
    ("xoxs-2648731245-ZdQpDkXr1vbA", "[REDACTED:SLACK_TOKEN]"),
    ("sk_live_4eC39HqLyjWDarjtT1zdp7dc", "[REDACTED:STRIPE_KEY]"),
    ("rk_live_4eC39HqLyjWDarjtT1zdp7dc", "[REDACTED:STRIPE_KEY]"),
    (
        "sk-ant-api03-R2D2C3POabcdefghijklmnopqrstuvwxyz0123456789-AA",
        "[REDACTED:ANTHROPIC_KEY]",
    ),
    (
        "OPENAI sk-proj-Ab3dEfGhIjKlMnOpQrStUvWxYz0123456789",
        "OPENAI [REDACTED:OPENAI_KEY]",
    ),
    (
        "AIzaSyDaGmWKa4JsXZ-HjGw7ISLn_3namBGewQe!",
        "[REDACTED:GOOGLE_API_KEY]!",
    ),
    (
        "Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
        "Bearer [REDACTED:JWT]",
    ),
    (
        "git clone https://alice:hunter2@git.example.com/r.git",
        "git clone https://alice:[REDACTED:URL_PASSWORD]@git.example.com/r.git",
    ),
    ("mysql password=s3cret!", "mysql password=[REDACTED:SECRET]"),
    ("passwd: hunter2", "passwd: [REDACTED:SECRET]"),
    ("client_secret='a b c'", "client_secret='[REDACTED:SECRET]'"),
    ("GITHUB_TOKEN=abc123", "GITHUB_TOKEN=[REDACTED:SECRET]"),
    ("{\"api_key\": \"k-1\"}", "{\"api_key\": \"[REDACTED:SECRET]\"}"),
    ("token: abc123", "token: [REDACTED:SECRET]"),
    ("APIKEY=k-1", "APIKEY=[REDACTED:SECRET]"),
    ("x-api-key: k-1", "x-api-key: [REDACTED:SECRET]"),
    ("password = \"a b, c\"", "password = \"[REDACTED:SECRET]\""),
    (
        "{\"SecretAccessKey\": \"wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\"}",
        "{\"SecretAccessKey\": \"[REDACTED:AWS_SECRET_KEY]\"}",
    ),
    (
        "$ cat id\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----\n$",
        "$ cat id\n[REDACTED:PRIVATE_KEY]\n[REDACTED:PRIVATE_KEY]\n[REDACTED:PRIVATE_KEY]\n$",
    ),
];

/// Text that looks a little like a secret and is not one.
const NOT_SECRETS: &[&str] = &[
    "commit 3f2a9c1d8e7b6a5f4e3d2c1b0a9f8e7d6c5b4a39",
    "a1b2c3d fix the parser",
    "id 550e8400-e29b-41d4-a716-446655440000",
    "Password:",
    "password: ",
    "tokenizer=bpe max_tokens: 100",
    "disk-usage-report-2024-weekly-summary.txt",
    "https://example.com/path?q=1",
    "ssh git@github.com",
    "-----BEGIN CERTIFICATE-----",
    "-----BEGIN PUBLIC KEY-----",
    "sk-1 task-manager",
    "if token == null",
    "Asia/Tokyo",
    "worker 17 failed at 0x3fa0",
    "version 1.2.3-beta+sha.5114f85",
    "日本語のテキスト 全角１２３",
];

#[test]
fn every_kind_is_redacted_on_known_samples() {
    let wrong: Vec<String> = KNOWN
        .iter()
        .filter_map(|(text, want)| {
            let (out, n) = redact(text);
            (out != *want || n == 0).then(|| format!("{text:?} -> {out:?} ({n})"))
        })
        .collect();
    assert!(wrong.is_empty(), "{wrong:#?}");
}

#[test]
fn known_non_secrets_are_untouched() {
    let touched: Vec<String> = NOT_SECRETS
        .iter()
        .filter_map(|text| {
            let (out, n) = redact(text);
            (out != *text || n != 0).then(|| format!("{text:?} -> {out:?}"))
        })
        .collect();
    assert!(touched.is_empty(), "{touched:#?}");
}

#[test]
fn a_search_matches_the_real_text_and_returns_it_redacted() {
    let text = "ok\nexport KEY=AKIAIOSFODNN7EXAMPLE\n-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkq\n-----END PRIVATE KEY-----\n";
    let matcher = Matcher::new(&["AKIA", "MIIE"], PatternOptions::default()).unwrap();
    let options = SearchOptions {
        redact: true,
        context_lines: 1,
        ..SearchOptions::default()
    };
    let outcome = search_captures(&matcher, &options, vec![Capture::new(0, 0, text)]);
    let lines = &outcome.panes[0].lines;
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0].text, "export KEY=[REDACTED:AWS_ACCESS_KEY]");
    // The body line alone is not a secret; its block makes it one.
    assert_eq!(lines[1].text, "[REDACTED:PRIVATE_KEY]");
    assert_eq!(lines[1].before, ["[REDACTED:PRIVATE_KEY]"]);
    assert_eq!(lines[1].redactions, 3);

    let raw = search_captures(
        &matcher,
        &SearchOptions::default(),
        vec![Capture::new(0, 0, text)],
    );
    assert_eq!(
        raw.panes[0].lines[0].text,
        "export KEY=AKIAIOSFODNN7EXAMPLE"
    );
    assert_eq!(raw.panes[0].lines[0].redactions, 0);
}

#[test]
fn a_long_line_is_redacted_before_it_is_clipped() {
    // The secret sits where a clip around the match would cut it in half.
    let line = format!(
        "{} match {}ghp_{}",
        "x".repeat(500),
        "y ".repeat(240),
        "a".repeat(36)
    );
    let matcher = Matcher::new(&["match"], PatternOptions::default()).unwrap();
    let options = SearchOptions {
        redact: true,
        max_text_bytes: 1000,
        ..SearchOptions::default()
    };
    let outcome = search_captures(&matcher, &options, vec![Capture::new(0, 0, line)]);
    let text = &outcome.panes[0].lines[0].text;
    assert!(!text.contains("aaaaaaaaaa"), "{text}");
}

fn hex(len: usize) -> impl Strategy<Value = String> {
    proptest::collection::vec(proptest::sample::select(b"0123456789abcdef".to_vec()), len)
        .prop_map(|v| String::from_utf8(v).unwrap())
}

/// A fuzz input for [`check`]: a kind, the secret's body, the text around.
fn secret_input() -> impl Strategy<Value = Vec<u8>> {
    (
        0..SAMPLE_KINDS,
        proptest::collection::vec(any::<u8>(), 0..64),
        proptest::collection::vec(any::<u8>(), 0..200),
    )
        .prop_map(|(kind, body, around)| {
            let mut data = vec![kind, body.len() as u8];
            data.extend_from_slice(&body);
            data.extend_from_slice(&around);
            data
        })
}

/// Hashes, a UUID and words: text with nothing a secret starts with.
fn plain_text() -> impl Strategy<Value = String> {
    (
        hex(40),
        hex(7),
        (hex(8), hex(4), hex(4), hex(4), hex(12)),
        "[a-zA-Z ,.!?()-]{0,80}",
    )
        .prop_map(|(sha, short, (a, b, c, d, e), words)| {
            format!("commit {sha} ({short}) {words}\nrequest {a}-{b}-{c}-{d}-{e} {words}\n")
        })
}

/// Token prefixes and the shortest body each needs; a body one shorter
/// is not a token.
const TOKEN_SHAPES: &[(&str, usize)] = &[
    ("AKIA", 16),
    ("ASIA", 16),
    ("ghp_", 36),
    ("gho_", 36),
    ("ghu_", 36),
    ("ghs_", 36),
    ("ghr_", 36),
    ("github_pat_", 22),
    ("glpat-", 20),
    ("xoxb-", 10),
    ("xoxp-", 10),
    ("sk_live_", 16),
    ("rk_live_", 16),
    ("AIza", 35),
];

/// Key words of an assignment, in several cases.
const KEY_WORDS: &[&str] = &[
    "password", "Passwd", "SECRET", "token", "api_key", "ApiKey", "api-key",
];

/// What follows a key word without making it an assignment with a value:
/// nothing, only blanks, an empty or unclosed quote, `==`, `:=`.
const NO_VALUE: &[&str] = &[
    ":", "=", ": ", " = ", "=\t", ":\"", "='", "=\"\"", " == null", " := x", "==x", "s 5",
    "izer=bpe",
];

/// Text that comes close to a secret and is not one, a line each: a token
/// prefix with a body one character short (or glued to the word before
/// it), a key word with `:` or `=` and no value, a URL with a user or a
/// port but no password, an `sk-` word without a digit, `Asia/Tokyo`.
fn near_miss() -> impl Strategy<Value = String> {
    let alnum = "[A-Z0-9]{40}";
    prop_oneof![
        (proptest::sample::select(TOKEN_SHAPES), alnum, any::<bool>()).prop_map(
            |((prefix, least), body, glued)| {
                if glued {
                    format!("x{prefix}{}", &body[..least])
                } else {
                    format!("{prefix}{} x", &body[..least - 1])
                }
            }
        ),
        (
            proptest::sample::select(KEY_WORDS),
            proptest::sample::select(NO_VALUE)
        )
            .prop_map(|(key, rest)| format!("{key}{rest}")),
        proptest::sample::select(vec![
            "https://alice@example.com/x",
            "https://example.com:8443/x",
            "ssh://git@github.com:22/r.git",
            "sk-task-manager",
            "Asia/Tokyo",
            "AKIAbcd",
            "eyJhbGciOi",
        ])
        .prop_map(str::to_owned),
        "[a-zA-Z ,.!?()-]{0,30}",
    ]
}

/// Lines of near misses and plain text.
fn not_a_secret() -> impl Strategy<Value = String> {
    (plain_text(), proptest::collection::vec(near_miss(), 1..8))
        .prop_map(|(plain, lines)| format!("{plain}{}\n", lines.join("\n")))
}

proptest! {
    #[test]
    fn a_redacted_text_never_holds_the_secret(data in secret_input()) {
        if let Err(problem) = check(&data) {
            panic!("{problem}");
        }
    }

    #[test]
    fn a_sample_in_ordinary_text_is_found(
        kind in 0..SAMPLE_KINDS,
        body in proptest::collection::vec(any::<u8>(), 1..64),
        words in "[a-z ]{0,40}",
    ) {
        let (line, secret) = sample(kind, &body);
        let text = format!("{words}\n{line}\n{words}");
        let (out, n) = redact(&text);
        prop_assert!(!out.contains(&secret), "{out}");
        prop_assert!(n >= 1);
    }

    #[test]
    fn hashes_uuids_and_words_are_untouched(text in plain_text()) {
        let (out, n) = redact(&text);
        prop_assert_eq!(out, text.as_str());
        prop_assert_eq!(n, 0);
    }

    #[test]
    fn near_misses_are_untouched(text in not_a_secret()) {
        let (out, n) = redact(&text);
        prop_assert_eq!(out, text.as_str());
        prop_assert_eq!(n, 0);
    }
}

/// Every literal redaction starts a secret at (redact.rs `LITERALS`,
/// lower case), and the letters after `xox` and the camel-case AWS key,
/// which the regexes tell apart.
const SHAPES: &[&str] = &[
    "akia",
    "asia",
    "secret",
    "password",
    "passwd",
    "token",
    "api_key",
    "apikey",
    "api-key",
    "ghp_",
    "gho_",
    "ghu_",
    "ghs_",
    "ghr_",
    "github_pat_",
    "glpat-",
    "xoxa",
    "xoxb",
    "xoxp",
    "xoxr",
    "xoxs",
    "sk_live_",
    "rk_live_",
    "sk-",
    "aiza",
    "eyj",
    "://",
    "secretaccesskey",
];

/// 2,000 values of `strategy` (a fixed seed: the same every run).
fn draw<S: Strategy>(strategy: S) -> Vec<S::Value> {
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    (0..2000)
        .map(|_| strategy.new_tree(&mut runner).unwrap().current())
        .collect()
}

/// Whether `text` holds a key word followed (after blanks and a quote) by
/// `:` or `=`: where an assignment's value would start.
fn assigns(text: &str) -> bool {
    let lower = text.to_ascii_lowercase();
    KEY_WORDS.iter().any(|key| {
        let key = key.to_ascii_lowercase();
        lower.match_indices(&key).any(|(at, _)| {
            let rest = lower[at + key.len()..].trim_start_matches(['"', '\'', ' ', '\t']);
            rest.starts_with([':', '='])
        })
    })
}

/// How far the generators reach, measured on 2,000 draws of the very
/// strategies above (printed; run with `--nocapture` to see it): the
/// secrets reach every shape, and most not-a-secret texts come near one.
#[test]
fn the_generators_reach_every_shape_and_near_misses() {
    let secrets = draw(secret_input());
    let mut reached = vec![0usize; SHAPES.len()];
    for data in &secrets {
        let (line, _) = sample(data[0], &data[2..2 + usize::from(data[1])]);
        let lower = line.to_ascii_lowercase();
        for (i, shape) in SHAPES.iter().enumerate() {
            reached[i] += usize::from(lower.contains(shape));
        }
    }
    let missed: Vec<&str> = SHAPES
        .iter()
        .zip(&reached)
        .filter(|(_, n)| **n == 0)
        .map(|(s, _)| *s)
        .collect();
    eprintln!(
        "secret never survives: {} of {} shapes reached in 2,000 draws (missed: {missed:?})",
        SHAPES.len() - missed.len(),
        SHAPES.len()
    );
    assert!(missed.is_empty(), "shapes never drawn: {missed:?}");

    for (name, texts) in [
        ("hashes, UUIDs and words", draw(plain_text())),
        ("near misses", draw(not_a_secret())),
    ] {
        let literal = texts
            .iter()
            .filter(|t| {
                let lower = t.to_ascii_lowercase();
                SHAPES.iter().any(|s| lower.contains(s))
            })
            .count();
        let near = texts.iter().filter(|t| assigns(t)).count();
        eprintln!(
            "not a secret ({name}): {:.1}% hold a redaction literal, {:.1}% a key word with ':' or '='",
            literal as f64 / 20.0,
            near as f64 / 20.0
        );
        if name == "near misses" {
            assert!(
                literal * 10 >= texts.len() * 9,
                "{literal} of 2,000 hold a literal"
            );
            assert!(
                near * 2 >= texts.len(),
                "{near} of 2,000 come near an assignment"
            );
        }
    }
}

/// A blank line inside a key block stays blank and is not counted: only
/// lines with text are replaced (a mutant that replaced empty lines too
/// survived every other test).
#[test]
fn a_blank_line_inside_a_key_block_stays_blank() {
    let text = "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkq\n\nhkiG9w0BAQEFAASC\n-----END PRIVATE KEY-----\n";
    let (out, n) = redact(text);
    let r = "[REDACTED:PRIVATE_KEY]";
    assert_eq!(out, format!("{r}\n{r}\n\n{r}\n{r}\n"));
    assert_eq!(n, 4);
}

/// Two keys printed cut short (`head -2`), neither with its END line: both
/// bodies go (the second was left whole when the first stayed open; found
/// by the `redact` fuzz target's fixed-point check).
#[test]
fn two_keys_cut_short_are_both_redacted() {
    let text = "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n$ head -2 other.pem\n-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAsecondkeybody\n$ ";
    let (out, _) = redact_bytes(text.as_bytes());
    let out = String::from_utf8_lossy(&out);
    assert!(!out.contains("MIIEvQIBADANBgkqhkiG9w0BAQEFAASC"), "{out}");
    assert!(!out.contains("MIIEowIBAAKCAQEAsecondkeybody"), "{out}");
    assert!(out.contains("$ head -2 other.pem"), "{out}");
}

/// A text longer than the prefilter's lowering chunk (64 KiB, cut at a
/// newline) is redacted line for line as its lines are alone: secrets on
/// every line around the first cut (the first line's length swept, so the
/// 64 KiB mark falls at every byte of a secret line), at both ends, and on
/// a line longer than a chunk. Mutants of the chunking (a cut inside a
/// line splits a secret's literal) survived every other test: no test
/// text was that long.
#[test]
fn a_text_longer_than_a_lowering_chunk_is_redacted_as_its_lines_are() {
    let secret = "ghp_16C7e42F292c6912E7710c838347Ae178B4a";
    // 50-byte lines: the 64 KiB mark falls in about line 1,310.
    let plain = |i: usize| format!("line {i:05} of plain build output, nothing to hide");
    assert_eq!(plain(0).len() + 1, 50);
    for pad in 0..64 {
        let mut lines: Vec<String> = (0..6000)
            .map(|i| match i {
                0 => format!("{}token {secret} at 0", "p".repeat(pad)),
                1290..=1320 | 2630 | 5999 => format!("token {secret} at {i}"),
                _ => plain(i),
            })
            .collect();
        // One line longer than a chunk, a secret at its end.
        lines[3000] = format!("{}{secret}", "x ".repeat(40_000));
        let text = lines.join("\n") + "\n";
        assert!(text.len() > 3 * 64 * 1024);
        let (out, n) = redact(&text);
        let alone: Vec<(String, usize)> = lines
            .iter()
            .map(|l| {
                let (r, n) = redact(l);
                (r.into_owned(), n)
            })
            .collect();
        // The first line that differs, not 300 KB of text.
        let got: Vec<&str> = out.lines().collect();
        let differs = (0..lines.len()).find(|&i| got.get(i) != Some(&alone[i].0.as_str()));
        assert_eq!(
            differs,
            None,
            "first line {pad} bytes longer: {:?}",
            differs.map(|i| (got.get(i), &alone[i].0))
        );
        assert_eq!(got.len(), lines.len());
        assert_eq!(n, alone.iter().map(|(_, n)| n).sum::<usize>());
        assert_eq!(n, 35);
        assert!(!out.contains(secret));
    }
}

/// An `sk-` word is an OpenAI key from 23 bytes on: the shortest key is
/// redacted, one byte shorter is a word with a dash and stays.
#[test]
fn an_openai_key_of_the_least_length_is_redacted_and_one_shorter_is_not() {
    let least = format!("sk-{}", "a1".repeat(10));
    assert_eq!(least.len(), 23);
    let text = format!("key {least} end");
    let (out, n) = redact(&text);
    assert_eq!((out.as_ref(), n), ("key [REDACTED:OPENAI_KEY] end", 1));
    let shorter = &least[..22];
    let text = format!("key {shorter} end");
    let (out, n) = redact(&text);
    assert_eq!((out.as_ref(), n), (text.as_str(), 0));
}

/// A BEGIN armour printed twice on one line (a key pasted twice) opens one
/// block, which runs to its END line: the END line goes too.
#[test]
fn two_begin_armours_on_one_line_open_one_block_to_its_end() {
    let begin = "-----BEGIN RSA PRIVATE KEY-----";
    let text =
        format!("{begin} {begin}\nMIIEowIBAAKCAQEAbody\n-----END RSA PRIVATE KEY-----\nok\n");
    let (out, n) = redact(&text);
    let r = "[REDACTED:PRIVATE_KEY]";
    assert_eq!(
        (out.as_ref(), n),
        (format!("{r}\n{r}\n{r}\nok\n").as_str(), 3)
    );
}

/// A second key whose BEGIN armour follows other text on its line, after a
/// first key cut short: the second block starts on the BEGIN line, and the
/// command line between the two keys stays.
#[test]
fn a_second_key_begun_mid_line_after_a_cut_key_leaves_the_line_between() {
    let text = "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANfirst\n$ cat other.pem\nkey: -----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCsecond\n-----END RSA PRIVATE KEY-----\nok\n";
    let (out, _) = redact(text);
    assert!(out.contains("\n$ cat other.pem\n"), "{out}");
    assert!(!out.contains("first") && !out.contains("second"), "{out}");
    assert!(out.ends_with("\nok\n"), "{out}");
}
