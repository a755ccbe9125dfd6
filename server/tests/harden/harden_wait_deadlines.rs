//! A wait ends by its own `timeout_ms` while tmux does not answer: tmux
//! stopped (SIGSTOP, continued by a guard even when a test fails) before
//! or during wait_for_text, watch_panes, run_command, wait_for_command and
//! wait_for_channel with a short timeout_ms. Each answers with its
//! timed-out answer, or an error naming its timeout_ms, well before
//! panescan's round-trip deadline for tmux (which would otherwise hold it),
//! on this machine and on a host reached through ssh.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::time::{Duration, Instant};

use common::sshd::{self, Alias, SshWorld};
use common::{plain_shell, Serve, TempDir};
use panescan::testing::private_server::PrivateServer;
use serde_json::{json, Value};

/// panescan's deadline for one tmux round trip (config `tmux_timeout`).
const TMUX_DEADLINE: Duration = Duration::from_secs(10);
/// The waits' timeout_ms: a tenth of that deadline.
const WAIT_MS: u64 = 1000;
/// How long past its timeout_ms a wait on a stopped tmux may answer, as a
/// share of that timeout: panescan allows its reads of tmux half a second
/// more (`WAIT_GRACE`), so 1,000 ms answer by about 1.5 s; 2.5 times the
/// timeout leaves a loaded machine a second for scheduling, and fails a
/// grace of 3.5 s (4.5 s) as it fails any wait held by the round trip's
/// deadline of 10 s.
const MOST_PER_TIMEOUT: (u32, u32) = (5, 2);

/// The longest a wait with `timeout_ms` may take on a stopped tmux.
fn most(timeout_ms: u64) -> Duration {
    Duration::from_millis(timeout_ms) * MOST_PER_TIMEOUT.0 / MOST_PER_TIMEOUT.1
}

/// A private server with a plain shell in %0 and `panescan serve` on it
/// (`extra` flags added), its control client connected.
fn serve(label: &str, extra: &[&str]) -> (PrivateServer, Serve) {
    let tmux = PrivateServer::start(label, 100, 30).unwrap();
    let mut args = vec!["serve", "--socket-name", tmux.socket_name()];
    args.extend_from_slice(&["--tier", "mutating"]);
    args.extend_from_slice(extra);
    let mut s = Serve::spawn_with(&args, &[]);
    s.initialize();
    plain_shell(&tmux, "%0");
    s.call_ok("list_panes", json!({}));
    (tmux, s)
}

/// Sends `tool` with `args` (and a progress token `token`, if any).
fn send(s: &mut Serve, tool: &str, args: Value, token: Option<&str>) -> Value {
    let id = s.fresh_id();
    let mut params = json!({"name": tool, "arguments": args});
    if let Some(token) = token {
        params["_meta"] = json!({"progressToken": token});
    }
    s.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params}));
    id
}

/// The answer to `id`, and how long after `since` it came.
fn answer(s: &mut Serve, id: &Value, since: Instant) -> (Value, Duration) {
    let r = s.response(id, TMUX_DEADLINE * 3);
    (r["result"].clone(), since.elapsed())
}

/// The wait answered within [`most`] of its timeout_ms (well before
/// tmux's round-trip deadline), no sooner than its timeout_ms, with its
/// timed-out answer or a clear error that names its time.
fn assert_ended_by_its_time(what: &str, result: &Value, took: Duration) {
    eprintln!("{what}: {took:.2?} {result}");
    assert!(
        took < most(WAIT_MS),
        "{what} answered after {took:?}, more than {:?} for its timeout_ms {WAIT_MS}: {result}",
        most(WAIT_MS)
    );
    assert!(
        took >= Duration::from_millis(WAIT_MS),
        "{what} answered before its timeout_ms: {took:?} {result}"
    );
    if result["isError"] == true {
        let text = result["content"][0]["text"].as_str().unwrap_or("");
        assert!(
            text.contains(&format!("timeout_ms ({WAIT_MS} ms)")),
            "{what}: {text}"
        );
        for bad in ["panicked", "internal error"] {
            assert!(!text.contains(bad), "{what}: {text}");
        }
    } else {
        let sc = &result["structuredContent"];
        assert_eq!(sc["timed_out"], true, "{what}: {result}");
    }
}

/// Stops tmux, calls `tool`, and checks the answer came by its time.
fn stopped_before(label: &str, tool: &str, args: impl Fn(&mut Serve) -> Value) -> Value {
    let (tmux, mut s) = serve(label, &[]);
    let args = args(&mut s);
    let frozen = tmux.stop().unwrap();
    let started = Instant::now();
    let id = send(&mut s, tool, args, None);
    let (result, took) = answer(&mut s, &id, started);
    drop(frozen);
    assert_ended_by_its_time(tool, &result, took);
    result
}

#[test]
fn wait_for_text_on_a_stopped_tmux_ends_by_its_timeout() {
    stopped_before(
        "wait-dl-text",
        "wait_for_text",
        |_| json!({"pane_id": "%0", "pattern": "never", "timeout_ms": WAIT_MS}),
    );
}

#[test]
fn watch_panes_on_a_stopped_tmux_ends_by_its_timeout() {
    stopped_before(
        "wait-dl-watch",
        "watch_panes",
        |_| json!({"pattern": "never", "timeout_ms": WAIT_MS}),
    );
}

#[test]
fn run_command_on_a_stopped_tmux_ends_by_its_timeout() {
    let r = stopped_before(
        "wait-dl-run",
        "run_command",
        |_| json!({"pane_id": "%0", "command": "echo x", "timeout_ms": WAIT_MS}),
    );
    // tmux never listed the panes: nothing was typed, and it says so.
    let text = r["content"][0]["text"].as_str().unwrap_or("");
    assert!(text.contains("not typed"), "{r}");
}

#[test]
fn wait_for_command_on_a_stopped_tmux_ends_by_its_timeout() {
    let r = stopped_before("wait-dl-cmd", "wait_for_command", |s| {
        let r = s.call_ok(
            "run_command",
            json!({"pane_id": "%0", "command": "sleep 30", "timeout_ms": 100}),
        );
        assert_eq!(r["timed_out"], true, "{r}");
        json!({"command_id": r["command_id"], "timeout_ms": WAIT_MS})
    });
    // Still running, its output not read while tmux stood still.
    let sc = &r["structuredContent"];
    assert_eq!(sc["output"], "", "{r}");
    assert_eq!(sc["output_truncated"], true, "{r}");
}

#[test]
fn wait_for_channel_on_a_stopped_tmux_ends_by_its_timeout() {
    let r = stopped_before(
        "wait-dl-chan",
        "wait_for_channel",
        |_| json!({"channel": "never-signalled", "timeout_ms": WAIT_MS}),
    );
    assert_eq!(r["structuredContent"]["signalled"], false, "{r}");
}

/// Starts `tool` with a progress token, waits for its progress message
/// starting with `set` (the wait is under way), then stops tmux: the
/// answer, and how long after the stop it came.
fn stopped_during(label: &str, tool: &str, args: Value, set: &str) {
    let timeout_ms = args["timeout_ms"].as_u64().unwrap();
    // Without the event stream every pane is probed: the wait keeps going
    // to tmux while it waits.
    let (tmux, mut s) = serve(label, &["--no-events"]);
    let token = format!("{label}-progress");
    let started = Instant::now();
    let id = send(&mut s, tool, args, Some(&token));
    let progress = s.message(TMUX_DEADLINE, |m| {
        m["params"]["progressToken"] == token.as_str()
            && m["params"]["message"]
                .as_str()
                .is_some_and(|t| t.starts_with(set))
    });
    let frozen = tmux.stop().unwrap();
    let stopped = Instant::now();
    let (result, _) = answer(&mut s, &id, started);
    let took = stopped.elapsed();
    drop(frozen);
    eprintln!("{tool}: under way ({progress}), answered {took:.2?} after the stop");
    // The stop came after the wait began: its time left is less than
    // timeout_ms, so only the upper bound holds here: that time left, and
    // the overrun a wait of WAIT_MS may take.
    let bound = Duration::from_millis(timeout_ms) + most(WAIT_MS) - Duration::from_millis(WAIT_MS);
    assert!(
        took < bound,
        "{tool} answered {took:?} after tmux stopped, more than {bound:?} for its timeout_ms {timeout_ms}: {result}"
    );
    assert_eq!(result["structuredContent"]["timed_out"], true, "{result}");
}

#[test]
fn wait_for_text_ends_by_its_timeout_when_tmux_stops_during_it() {
    stopped_during(
        "wait-dl-text-during",
        "wait_for_text",
        json!({"pane_id": "%0", "pattern": "never", "timeout_ms": 2 * WAIT_MS}),
        "waiting for text",
    );
}

#[test]
fn watch_panes_ends_by_its_timeout_when_tmux_stops_during_it() {
    stopped_during(
        "wait-dl-watch-during",
        "watch_panes",
        json!({"pattern": "never", "timeout_ms": 2 * WAIT_MS}),
        "watching",
    );
}

/// The same through ssh: a host whose tmux stopped (its sshd still
/// answering) holds each wait no longer than on this machine.
#[test]
fn waits_on_a_host_whose_tmux_stopped_end_by_their_timeout() {
    sshd::require();
    let mut world = SshWorld::new("wait-dl");
    let n = world.start_sshd();
    let dir = TempDir::new("wait-dl-host");
    let tmux = sshd::server_under("wait-dl-host", &dir.0);
    let config = world.client_config(&[Alias {
        name: "h",
        sshd: n,
        tmux_tmpdir: Some(&dir.0),
        identity: None,
    }]);
    let config = config.display().to_string();
    let args = [
        "serve",
        "--ssh-config",
        &config,
        "--ssh",
        "h",
        "--tier",
        "mutating",
    ];
    let mut s = Serve::spawn_with(&args, &[]);
    s.initialize();
    s.call_ok("list_panes", json!({"host": "h"}));
    let waits = [
        (
            "wait_for_text",
            json!({"host": "h", "pane_id": "%0", "pattern": "never", "timeout_ms": WAIT_MS}),
        ),
        (
            "watch_panes",
            json!({"host": "h", "pattern": "never", "timeout_ms": WAIT_MS}),
        ),
        (
            "wait_for_channel",
            json!({"host": "h", "channel": "never-signalled", "timeout_ms": WAIT_MS}),
        ),
    ];
    let frozen = tmux.stop().unwrap();
    for (tool, args) in waits {
        let started = Instant::now();
        let id = send(&mut s, tool, args, None);
        let (result, took) = answer(&mut s, &id, started);
        assert_ended_by_its_time(&format!("{tool} on host h"), &result, took);
    }
    drop(frozen);
}

/// A command running while tmux stands still past a round trip's deadline
/// is still watched: wait_for_command afterwards finds how it ended.
#[test]
fn a_command_outlives_a_stopped_tmux_and_its_end_is_still_found() {
    let (tmux, mut s) = serve("wait-dl-outlive", &[]);
    let r = s.call_ok(
        "run_command",
        json!({"pane_id": "%0", "command": "sleep 2; echo done-$((6*7))", "timeout_ms": 100}),
    );
    assert_eq!(r["timed_out"], true, "{r}");
    let frozen = tmux.stop().unwrap();
    // The fault: tmux stands still longer than one round trip may take.
    std::thread::sleep(TMUX_DEADLINE + Duration::from_secs(1));
    drop(frozen);
    let w = s.call(
        "wait_for_command",
        json!({"command_id": r["command_id"], "timeout_ms": 30_000}),
    );
    let sc = &w["structuredContent"];
    assert_eq!(sc["timed_out"], false, "the command was lost: {w}");
    assert_eq!(sc["exit_status"], 0, "{w}");
    assert_eq!(sc["output"], "done-42\n", "{w}");
}
