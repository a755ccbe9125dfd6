//! `serve` caps glibc's malloc arenas (server/src/cli/arenas.rs): it starts
//! itself again, same process, with `MALLOC_ARENA_MAX=2` (what the process
//! was started with is in `/proc/PID/environ`, whatever it removed since);
//! an operator's own value is kept. The memory this saves is the soak's
//! (HARDENING.md, "Soak").

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use common::Serve;
use panescan::testing::private_server::PrivateServer;
use serde_json::json;

const VARS: [&str; 3] = [
    "MALLOC_ARENA_MAX",
    "GLIBC_TUNABLES",
    "PANESCAN_ARENAS_CAPPED",
];

/// The environment a process was started with (`/proc`: what `exec` gave
/// it, whatever it removed since).
fn environ(pid: u32) -> Vec<String> {
    let raw = std::fs::read(format!("/proc/{pid}/environ")).unwrap();
    raw.split(|b| *b == 0)
        .filter(|v| !v.is_empty())
        .map(|v| String::from_utf8_lossy(v).into_owned())
        .collect()
}

fn ours(env: &[String]) -> Vec<&str> {
    env.iter()
        .map(String::as_str)
        .filter(|v| VARS.iter().any(|k| v.starts_with(&format!("{k}="))))
        .collect()
}

/// `serve` with the arena variables given (and no others of them): its
/// own, read once it answered a tool call.
fn serve_with(label: &str, given: &[(&str, &str)]) -> Vec<String> {
    let tmux = PrivateServer::start(label, 80, 24).unwrap();
    let removed: Vec<&str> = VARS
        .iter()
        .copied()
        .filter(|k| !given.iter().any(|(g, _)| g == k))
        .collect();
    let mut s = Serve::spawn_env(
        &["serve", "--socket-name", tmux.socket_name()],
        given,
        &removed,
    );
    s.initialize();
    let sc = s.call_ok("list_panes", json!({}));
    assert_eq!(sc["panes"].as_array().map(Vec::len), Some(1), "{sc}");
    let mut env: Vec<String> = ours(&environ(s.pid()))
        .into_iter()
        .map(String::from)
        .collect();
    env.sort_unstable();
    env
}

#[test]
fn serve_starts_again_as_the_same_process_with_two_arenas() {
    assert_eq!(
        serve_with("arenas", &[]),
        ["MALLOC_ARENA_MAX=2", "PANESCAN_ARENAS_CAPPED=1"]
    );
}

#[test]
fn an_operators_arena_setting_is_kept() {
    assert_eq!(
        serve_with("arenas-own", &[("MALLOC_ARENA_MAX", "16")]),
        ["MALLOC_ARENA_MAX=16"]
    );
    assert_eq!(
        serve_with(
            "arenas-tuned",
            &[("GLIBC_TUNABLES", "glibc.malloc.arena_max=4")]
        ),
        ["GLIBC_TUNABLES=glibc.malloc.arena_max=4"]
    );
}
