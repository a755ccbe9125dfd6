//! Hostile policy files and trust flags: regexes and globs at and past the
//! grammar's bounds, files that never end, the injection payloads as every
//! field of a rule and as `--scope-sessions`. Each is refused at start with
//! the rule and field named, or accepted and then judged in bounded time;
//! nothing a policy holds reaches tmux or a shell.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::injection::{assert_whole, payloads, Markers};
use common::{typing_sink_at, Serve, TempDir, REPLY_TIMEOUT};
use panescan::testing::private_server::PrivateServer;
use serde_json::json;

/// `serve --no-daemon --policy FILE` on an empty stdin: exit code and stderr.
fn start_with(policy: &std::path::Path, extra: &[&str]) -> (Option<i32>, String) {
    let started = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_panescan"))
        .args([
            "serve",
            "--no-daemon",
            "--socket-name",
            "policy-none",
            "--policy",
        ])
        .arg(policy)
        .args(extra)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        started.elapsed() < REPLY_TIMEOUT,
        "start took {:?}",
        started.elapsed()
    );
    assert!(out.stdout.is_empty(), "nothing on stdout");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// One rule as TOML, every value a TOML basic string written as JSON
/// writes it (the same escapes), so a payload stays one string whatever
/// quotes it holds.
fn rule(kind: &str, field: &str, value: &str) -> String {
    let v = serde_json::to_string(value).unwrap();
    let value = if field == "command" {
        v
    } else {
        format!("[{v}]")
    };
    let tools = if field == "tools" {
        String::new()
    } else {
        "tools = [\"*\"]\n".into()
    };
    format!("[[{kind}]]\n{tools}{field} = {value}\n")
}

#[test]
fn regexes_and_globs_past_the_bounds_refuse_the_start() {
    let dir = TempDir::new("policy-bounds");
    let path = dir.0.join("p.toml");
    let nested = format!("{}a{}", "(".repeat(1000), ")".repeat(1000));
    let cases: Vec<(String, &str)> = vec![
        (
            rule("deny", "command", &"a".repeat(5000)),
            "deny[0]: command",
        ),
        (
            rule("deny", "command", "a{1000}{1000}{1000}"),
            "deny[0]: command",
        ),
        (
            rule("deny", "command", "(?:\\w{1000}){1000}"),
            "deny[0]: command",
        ),
        (rule("ask", "command", &nested), "ask[0]: command"),
        (rule("deny", "command", "(?<n>a)\\k<n>"), "deny[0]: command"),
        (
            rule("allow", "sessions", &"*".repeat(300)),
            "allow[0]: sessions",
        ),
        (rule("allow", "cwd", "{a,b"), "allow[0]: cwd"),
        (rule("deny", "sessions", "[z-a]"), "deny[0]: sessions"),
        (
            format!("[[deny]]\ntools = [{}]\n", vec!["\"x\""; 65].join(",")),
            "limit of 64",
        ),
        ("[[deny]]\ntools=[\"x\"]\n".repeat(257), "limit of 256"),
        (format!("#{}\n", "x".repeat(70_000)), "limit of 65536"),
        (
            "[[deny]]\ntools = [\"x\"]\nsessions = \"main\"\n".into(),
            "sessions",
        ),
    ];
    for (text, says) in cases {
        std::fs::write(&path, &text).unwrap();
        let (code, err) = start_with(&path, &[]);
        assert_eq!(code, Some(2), "{says}: accepted");
        assert!(err.contains(says), "{says}: {err}");
    }
    // Files that never end, or are not text.
    for endless in ["/dev/zero", "/dev/urandom"] {
        let (code, err) = start_with(std::path::Path::new(endless), &[]);
        assert_eq!(code, Some(2), "{endless}");
        assert!(err.contains(endless), "{err}");
    }
}

#[test]
fn hostile_patterns_within_the_bounds_are_judged_in_bounded_time() {
    let tmux = PrivateServer::start("policy-redos", 80, 24).unwrap();
    let dir = TempDir::new("policy-redos");
    let file = dir.0.join("typed");
    let pane = typing_sink_at(&tmux, "main:0.0", &file);
    let policy = dir.0.join("p.toml");
    let text = [
        rule("deny", "command", "(a*)*b"),
        rule("deny", "command", "(x+x+)+y"),
        rule("deny", "command", "^(\\w+\\s?)*$z"),
        rule("ask", "sessions", &"*a".repeat(60)),
        rule("ask", "cwd", &format!("{}zz", "**/".repeat(80))),
    ]
    .concat();
    std::fs::write(&policy, &text).unwrap();
    let p = policy.to_str().unwrap();
    let mut s = Serve::spawn_with(
        &[
            "serve",
            "--socket-name",
            tmux.socket_name(),
            "--tier",
            "mutating",
            "--policy",
            p,
        ],
        &[],
    );
    s.initialize();
    for long in ["a".repeat(16_000), "x".repeat(16_000), "ac ".repeat(5_000)] {
        let started = Instant::now();
        let r = s.call("send_keys", json!({"pane_id": pane, "text": long}));
        let took = started.elapsed();
        assert!(
            took < Duration::from_secs(5),
            "{} bytes judged in {took:?}",
            long.len()
        );
        assert_eq!(r["isError"], false, "{r}");
        s.call_ok("send_keys", json!({"pane_id": pane, "keys": ["C-u"]}));
    }
}

#[test]
fn injection_payloads_in_a_policy_reach_nothing() {
    let m = Markers::new("policy-inject");
    let tmux = PrivateServer::start("policy-inject", 80, 24).unwrap();
    let dir = TempDir::new("policy-inject-files");
    let policy = dir.0.join("p.toml");
    let (mut accepted, mut refused) = (0, 0);
    for payload in payloads(&m.touch("policy")) {
        for (kind, field) in [
            ("deny", "command"),
            ("ask", "sessions"),
            ("allow", "cwd"),
            ("deny", "tools"),
        ] {
            std::fs::write(&policy, rule(kind, field, &payload)).unwrap();
            // A NUL cannot be an argument; the rest are also a scope glob.
            let scope = format!("--scope-sessions={payload}");
            let extra: &[&str] = if payload.contains('\0') {
                &[]
            } else {
                &[scope.as_str()]
            };
            let (code, err) = start_with(&policy, extra);
            match code {
                Some(0) => accepted += 1,
                Some(2) => {
                    assert!(
                        err.contains(&format!("{kind}[0]")) || err.contains("--scope-sessions"),
                        "{err}"
                    );
                    refused += 1;
                }
                other => panic!("{payload:?} as {field}: exit {other:?}: {err}"),
            }
        }
    }
    assert!(
        accepted > 0 && refused > 0,
        "accepted {accepted}, refused {refused}"
    );
    m.assert_none(&tmux, "policy payloads");
    assert_whole(&tmux);
}
