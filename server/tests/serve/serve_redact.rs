//! group_by and redaction through `panescan serve`: what an MCP client sees.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::time::Duration;

use common::{eventually, window_showing, Serve, TempDir};
use panescan::testing::private_server::PrivateServer;
use serde_json::{json, Value};

/// Samples of every kind: the line printed, the secret it holds, the kind
/// that must replace it.
const SECRETS: &[(&str, &str, &str)] = &[
    ("key AKIAIOSFODNN7EXAMPLE used", "AKIAIOSFODNN7EXAMPLE", "AWS_ACCESS_KEY"),
    (
        "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "AWS_SECRET_KEY",
    ),
    (
        "push ghp_16C7e42F292c6912E7710c838347Ae178B4a",
        "ghp_16C7e42F292c6912E7710c838347Ae178B4a",
        "GITHUB_TOKEN",
    ),
    ("glpat-xxxxXXXXxxxxXXXX1234 x", "glpat-xxxxXXXXxxxxXXXX1234", "GITLAB_TOKEN"),
    (
        "slack xoxb-2648731245-4829387104-ZdQpDkXr1vbA",
        "xoxb-2648731245-4829387104-ZdQpDkXr1vbA",
        "SLACK_TOKEN",
    ),
    ("sk_live_4eC39HqLyjWDarjtT1zdp7dc", "sk_live_4eC39HqLyjWDarjtT1zdp7dc", "STRIPE_KEY"),
    (
        "sk-ant-api03-R2D2C3POabcdefghijklmnopqrstuvwxyz0123456789-AA",
        "sk-ant-api03-R2D2C3POabcdefghijklmnopqrstuvwxyz0123456789-AA",
        "ANTHROPIC_KEY",
    ),
    (
        "openai sk-proj-Ab3dEfGhIjKlMnOpQrStUvWxYz0123456789",
        "sk-proj-Ab3dEfGhIjKlMnOpQrStUvWxYz0123456789",
        "OPENAI_KEY",
    ),
    (
        "maps AIzaSyDaGmWKa4JsXZ-HjGw7ISLn_3namBGewQe",
        "AIzaSyDaGmWKa4JsXZ-HjGw7ISLn_3namBGewQe",
        "GOOGLE_API_KEY",
    ),
    (
        "Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
        "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
        "JWT",
    ),
    (
        "git clone https://alice:hunter2pass@git.example.com/r.git",
        "hunter2pass",
        "URL_PASSWORD",
    ),
    ("mysql password=s3cretValue!", "s3cretValue!", "SECRET"),
    ("-----BEGIN RSA PRIVATE KEY-----", "BEGIN RSA", "PRIVATE_KEY"),
    ("MIIEpAIBAAKCAQEA75bodyline0123456789", "MIIEpAIBAAKCAQEA75bodyline", "PRIVATE_KEY"),
    ("-----END RSA PRIVATE KEY-----", "END RSA", "PRIVATE_KEY"),
];

/// Lines that must come back as they are.
const NOT_SECRETS: &[&str] = &[
    "commit 3f2a9c1d8e7b6a5f4e3d2c1b0a9f8e7d6c5b4a39",
    "request 550e8400-e29b-41d4-a716-446655440000",
    "tokenizer=bpe max_tokens: 100",
    "https://example.com/path?q=1",
];

/// A window printing every sample, then `SAMPLES-END`; its pane id.
fn sample_window(tmux: &PrivateServer, dir: &TempDir) -> String {
    let mut text: String = SECRETS
        .iter()
        .map(|(line, _, _)| format!("{line}\n"))
        .collect();
    for line in NOT_SECRETS {
        text.push_str(line);
        text.push('\n');
    }
    let file = dir.0.join("samples.txt");
    std::fs::write(&file, text).unwrap();
    let script = format!(
        "cat {}; echo SAMPLES-END; exec sleep 100000",
        file.display()
    );
    window_showing(tmux, Some("samples"), &script, "SAMPLES-END", &["-S", "-"])
}

fn assert_redacted(what: &str, text: &str) {
    for (_, secret, kind) in SECRETS {
        assert!(
            !text.contains(secret),
            "{what}: {secret} survived in {text}"
        );
        assert!(
            text.contains(&format!("[REDACTED:{kind}]")),
            "{what}: no {kind} in {text}"
        );
    }
    for line in NOT_SECRETS {
        assert!(text.contains(line), "{what}: {line} was changed in {text}");
    }
}

#[test]
fn every_kind_is_redacted_in_every_tool_that_returns_pane_text() {
    let (tmux, mut s) = Serve::with_tmux_size("redact-tools", 200, 40);
    let dir = TempDir::new("redact-tools");
    let pane = sample_window(&tmux, &dir);
    s.initialize();

    let cap = s.call_ok("capture_pane", json!({"pane_id": pane, "start": -100}));
    assert_redacted("capture_pane", cap["text"].as_str().unwrap());
    assert_eq!(cap["redactions"], SECRETS.len(), "{cap}");

    let snap = s.call_ok("snapshot_pane", json!({"pane_id": pane}));
    assert_redacted("snapshot_pane", snap["text"].as_str().unwrap());
    assert_eq!(snap["redactions"], SECRETS.len());

    let since = s.call_ok("capture_since", json!({"pane_id": pane}));
    let since_text = since["text"].as_str().unwrap();
    assert_redacted("capture_since", since_text);
    assert!(since["redactions"].as_u64().unwrap() >= SECRETS.len() as u64);

    // Matching sees the real text; the line comes back redacted.
    let r = s.call_ok(
        "search_panes",
        json!({"pattern": "AKIA", "context_lines": 1}),
    );
    let hit = &r["matches"][0]["lines"][0];
    assert_eq!(hit["text"], "key [REDACTED:AWS_ACCESS_KEY] used", "{r}");
    // The line and the AWS secret key in the context line after it.
    assert_eq!(
        hit["after"][0],
        "aws_secret_access_key = [REDACTED:AWS_SECRET_KEY]"
    );
    assert_eq!(r["redactions"], 2, "{r}");
    // Counted on what is returned: a page past the hit holds no secret.
    let r = s.call_ok(
        "search_panes",
        json!({"pattern": "AKIA", "context_lines": 1, "offset": 1}),
    );
    assert_eq!(r["matches"], json!([]), "{r}");
    assert_eq!(r["redactions"], 0, "{r}");
    // A private key's body line is found and comes back redacted, as its
    // context does.
    let r = s.call_ok(
        "search_panes",
        json!({"pattern": "MIIEpAIB", "context_lines": 1}),
    );
    let hit = &r["matches"][0]["lines"][0];
    assert_eq!(hit["text"], "[REDACTED:PRIVATE_KEY]", "{r}");
    assert_eq!(hit["before"][0], "[REDACTED:PRIVATE_KEY]", "{r}");
    assert_eq!(hit["after"][0], "[REDACTED:PRIVATE_KEY]", "{r}");
    assert_eq!(r["redactions"], 3, "{r}");
    // Every line at once, through the text rendering too.
    let r = s.call(
        "search_panes",
        json!({"pattern": ".", "regex": true, "pane_ids": [pane]}),
    );
    let rendered = r["content"][0]["text"].as_str().unwrap();
    assert_redacted("search_panes text", rendered);
}

#[test]
fn wait_for_text_returns_the_line_redacted() {
    let (tmux, mut s) = Serve::with_tmux("redact-wait");
    // A pane that keeps printing the token, so the wait always sees it new.
    let script = "while :; do echo 'tok ghp_16C7e42F292c6912E7710c838347Ae178B4a'; sleep 0.2; done";
    let pane = window_showing(&tmux, None, script, "tok ghp_", &[]);
    s.initialize();
    let r = s.call_ok(
        "wait_for_text",
        json!({"pane_id": pane, "pattern": "ghp_16C7"}),
    );
    assert_eq!(r["found"], true, "{r}");
    assert_eq!(r["text"], "tok [REDACTED:GITHUB_TOKEN]", "{r}");
    assert_eq!(r["line"], "tok [REDACTED:GITHUB_TOKEN]", "{r}");
    assert_eq!(r["redactions"], 1, "{r}");
}

#[test]
fn no_redact_returns_the_text_as_the_pane_shows_it() {
    let tmux = PrivateServer::start("redact-off", 200, 40).unwrap();
    let dir = TempDir::new("redact-off");
    let pane = sample_window(&tmux, &dir);
    let mut s = Serve::spawn_with(
        &["serve", "--socket-name", tmux.socket_name(), "--no-redact"],
        &[],
    );
    s.initialize();
    let r = s.call_ok("search_panes", json!({"pattern": "AKIA"}));
    assert_eq!(
        r["matches"][0]["lines"][0]["text"], "key AKIAIOSFODNN7EXAMPLE used",
        "{r}"
    );
    assert_eq!(r["redactions"], 0);
    let cap = s.call_ok("capture_pane", json!({"pane_id": pane, "start": -100}));
    let text = cap["text"].as_str().unwrap();
    for (line, _, _) in SECRETS {
        assert!(text.contains(line), "{line} missing in {text}");
    }
    assert_eq!(cap["redactions"], 0);
}

/// `count` windows, each printing `lines(i)` then a marker; waits until all show it.
fn printing_windows(tmux: &PrivateServer, count: usize, lines: impl Fn(usize) -> Vec<String>) {
    let mut panes = Vec::new();
    for i in 0..count {
        let printed: String = lines(i)
            .iter()
            .map(|l| format!("printf '%s\\n' '{l}'; "))
            .collect();
        let script = format!("{printed}echo PRINTED-{i}; exec sleep 100000");
        let pane = tmux
            .run_ok(["new-window", "-d", "-P", "-F", "#{pane_id}", &script])
            .unwrap();
        panes.push((pane.trim().to_owned(), format!("PRINTED-{i}")));
    }
    let all_shown = eventually(Duration::from_secs(60), || {
        panes.iter().all(|(pane, marker)| {
            tmux.run_ok(["capture-pane", "-p", "-t", pane])
                .is_ok_and(|t| t.contains(marker.as_str()))
        })
    });
    assert!(all_shown, "not every window printed");
}

fn summary(groups: &Value) -> Vec<(String, u64, usize)> {
    groups
        .as_array()
        .unwrap()
        .iter()
        .map(|g| {
            let text = g["text"].as_str().unwrap().to_owned();
            (
                text,
                g["count"].as_u64().unwrap(),
                g["panes"].as_array().unwrap().len(),
            )
        })
        .collect()
}

#[test]
fn group_by_folds_a_line_printed_in_40_panes_into_one_group() {
    let (tmux, mut s) = Serve::with_tmux("group-by");
    printing_windows(&tmux, 40, |i| {
        let mut lines = vec![
            "FATAL same line in every pane   ".to_owned(),
            format!("FATAL worker {i} failed at 0x{:x}", 0x1b20 + i * 977),
        ];
        if i == 7 {
            lines.push("FATAL only here".to_owned());
        }
        lines
    });
    s.initialize();

    let r = s.call_ok(
        "search_panes",
        json!({"pattern": "FATAL", "group_by": "text"}),
    );
    assert_eq!(r["matches"], json!([]), "{r}");
    assert_eq!(r["total_panes_matched"], 40);
    assert_eq!(r["total_groups"], 42, "{r}");
    let g = summary(&r["groups"]);
    // Trailing spaces trimmed; 40 lines in 40 panes; then the first-seen order.
    assert_eq!(g[0], ("FATAL same line in every pane".to_owned(), 40, 40));
    assert_eq!(g[1], ("FATAL worker 0 failed at 0x1b20".to_owned(), 1, 1));
    assert_eq!(
        r["groups"][0]["first"]["pane_id"],
        r["groups"][1]["first"]["pane_id"]
    );

    let r = s.call_ok(
        "search_panes",
        json!({"pattern": "FATAL", "group_by": "shape"}),
    );
    let g = summary(&r["groups"]);
    assert_eq!(
        g,
        [
            ("FATAL same line in every pane".to_owned(), 40, 40),
            ("FATAL worker 0 failed at 0x1b20".to_owned(), 40, 40),
            ("FATAL only here".to_owned(), 1, 1),
        ],
        "{r}"
    );
    let text = s.call(
        "search_panes",
        json!({"pattern": "FATAL", "group_by": "shape"}),
    );
    let text = text["content"][0]["text"].as_str().unwrap();
    assert!(
        text.contains("40x FATAL worker 0 failed at 0x1b20 (40 panes, first %"),
        "{text}"
    );

    // Groups are paged like panes.
    let r = s.call_ok(
        "search_panes",
        json!({"pattern": "FATAL", "group_by": "shape", "limit": 1, "offset": 1}),
    );
    assert_eq!(summary(&r["groups"]).len(), 1);
    assert_eq!(r["groups"][0]["count"], 40);
    assert_eq!(r["truncated"], true);
    assert_eq!(r["total_groups"], 3);
}

/// `panescan search ARGS` against `tmux`: its stdout.
fn cli_search(tmux: &PrivateServer, args: &[&str]) -> String {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_panescan"))
        .args(["search", "-L", tmux.socket_name(), "--color", "never"])
        .args(args)
        .env_remove("TMUX")
        .env_remove("TMUX_PANE")
        .output()
        .unwrap();
    assert!(out.status.success(), "{args:?}: {out:?}");
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn the_command_line_search_redacts_and_groups() {
    let tmux = PrivateServer::start("redact-cli", 200, 40).unwrap();
    let dir = TempDir::new("redact-cli");
    sample_window(&tmux, &dir);
    let out = cli_search(&tmux, &["AKIA"]);
    assert!(
        out.contains(": key [REDACTED:AWS_ACCESS_KEY] used"),
        "{out}"
    );
    let out = cli_search(&tmux, &["--no-redact", "AKIA"]);
    assert!(out.contains(": key AKIAIOSFODNN7EXAMPLE used"), "{out}");
    let out = cli_search(&tmux, &["--group-by", "shape", "-e", "PRIVATE KEY"]);
    // The BEGIN and END lines, redacted alike, are one group.
    assert!(
        out.contains("2x [REDACTED:PRIVATE_KEY] (1 panes, first %"),
        "{out}"
    );
    assert_eq!(out.lines().count(), 1, "{out}");
}
