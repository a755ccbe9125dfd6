//! Searches started ahead of their listing (tools/search/ahead.rs) and the
//! sweep client kept for them (tmux/listing_ahead.rs), through `panescan
//! serve --no-cache` on private servers: the same answers as listed
//! searches when the panes stay, when one comes and when one goes; a
//! cursor that misses nothing; and a kept client that never keeps a tmux
//! server alive once its last session is gone.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::process::Stdio;
use std::time::Duration;

use common::{eventually, window_showing, Serve, TempDir};
use panescan::testing::private_server::{process_state, PrivateServer};
use panescan::testing::tmux::listing_ahead::KEPT_CLIENT_IDLE;
use serde_json::{json, Value};

/// Windows printing text that hits: repeated and blank lines, wide
/// characters, an escape sequence, the needle twice in some panes. Each
/// window is named (which turns tmux's automatic rename off for it): a
/// name that followed the running command would change between two
/// answers compared here.
const PANES: usize = 20;

fn filled_server(label: &str) -> PrivateServer {
    filled_server_under(label, None)
}

/// [`filled_server`] with its socket (and so the sweeps' scripts) in
/// `dir` instead of the shared directory.
fn filled_server_under(label: &str, dir: Option<&std::path::Path>) -> PrivateServer {
    let tmux = PrivateServer::start_under(label, 80, 12, dir).unwrap();
    let mut script = String::new();
    for k in 0..PANES {
        let needle = if k % 3 == 0 {
            "printf 'needle here\\n\\nneedle here\\n'; "
        } else {
            ""
        };
        script.push_str(&format!(
            "new-window -d -n w{k} \"printf 'pane {k}\\n\\n\\033[1m表示 {k}\\033[0m\\nsame\\nsame\\n'; {needle}printf 'ready\\n'; exec sleep 100000\"\n"
        ));
    }
    tmux.source(&script).unwrap();
    tmux.run_ok(["kill-window", "-t", "main:0"]).unwrap();
    let ready = eventually(Duration::from_secs(20), || {
        let listing = tmux
            .run_ok(["list-panes", "-a", "-F", "#{pane_id}"])
            .unwrap_or_default();
        listing.lines().count() == PANES
            && listing.lines().all(|p| {
                tmux.run_ok(["capture-pane", "-p", "-t", p])
                    .is_ok_and(|t| t.contains("ready"))
            })
    });
    assert!(ready, "panes did not print");
    assert!(all_sleeping(&tmux), "panes never reached their sleep");
    tmux
}

/// Waits until every pane runs its final `sleep`: a pane still in its
/// shell reports another `pane_current_command` than it will a moment
/// later.
fn all_sleeping(tmux: &PrivateServer) -> bool {
    eventually(Duration::from_secs(20), || {
        tmux.run_ok(["list-panes", "-a", "-F", "#{pane_current_command}"])
            .is_ok_and(|l| l.lines().all(|c| c == "sleep"))
    })
}

/// `panescan serve --no-cache` on `tmux`, its spans in `log`.
fn serve(tmux: &PrivateServer, log: &std::path::Path) -> Serve {
    let file = std::fs::File::create(log).unwrap();
    let socket = tmux.socket_path().unwrap();
    let mut s = Serve::spawn_logged(
        &[
            "serve",
            "--socket-path",
            socket.to_str().unwrap(),
            "--no-cache",
        ],
        &[("PANESCAN_SPANS", "1")],
        &[],
        Stdio::from(file),
    );
    s.initialize();
    s
}

/// A search's answer without its timing.
/// Bytes of a search cursor's tag (a per-process key signs it), and of
/// the base64 characters that can hold part of it.
const CURSOR_TAG_CHARS: usize = 24;

/// A search's answer without its time, and its cursor without the tag:
/// two panescan processes sign the same cursor differently.
fn search(s: &mut Serve, args: Value) -> Value {
    let mut r = s.call_ok("search_panes", args);
    let o = r.as_object_mut().unwrap();
    o.remove("elapsed_ms");
    if let Some(Value::String(c)) = o.get_mut("cursor") {
        c.truncate(c.len().saturating_sub(CURSOR_TAG_CHARS));
    }
    r
}

fn kept_sweeps(log: &std::path::Path) -> usize {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .matches("search.ahead_kept")
        .count()
}

fn panes_matched(r: &Value) -> Vec<String> {
    r["matches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["pane_id"].as_str().unwrap().to_owned())
        .collect()
}

/// What a fresh `panescan serve` answers (its first search lists over
/// the control client: nothing to start ahead on).
fn listed_answer(tmux: &PrivateServer, dir: &TempDir, args: &Value) -> Value {
    let mut fresh = serve(tmux, &dir.0.join("fresh"));
    search(&mut fresh, args.clone())
}

#[test]
fn searches_started_ahead_answer_as_listed_ones_as_panes_come_and_go() {
    let tmux = filled_server("ahead-same");
    let dir = TempDir::new("ahead-same");
    let log = dir.0.join("spans");
    let mut s = serve(&tmux, &log);
    let needle = json!({"pattern": "needle"});
    for args in [
        needle.clone(),
        json!({"pattern": "same|表示", "regex": true, "context_lines": 1}),
    ] {
        let listed = listed_answer(&tmux, &dir, &args);
        let before = kept_sweeps(&log);
        for _ in 0..4 {
            assert_eq!(search(&mut s, args.clone()), listed, "{args}");
        }
        assert!(kept_sweeps(&log) >= before + 2, "no search went ahead");
    }
    let first = search(&mut s, needle.clone());
    assert_eq!(first["total_panes_matched"], 7);

    // A pane comes: the sweep started ahead does not hold it, the listing
    // does; the search finds it.
    let came = window_showing(
        &tmux,
        Some("came"),
        "printf 'needle new\\n'; exec sleep 100000",
        "needle new",
        &[],
    );
    assert!(all_sleeping(&tmux), "the new pane never reached its sleep");
    let with_new = search(&mut s, needle.clone());
    assert!(panes_matched(&with_new).contains(&came), "{with_new}");
    assert_eq!(with_new, listed_answer(&tmux, &dir, &needle));
    assert_eq!(with_new["total_panes_matched"], 8);

    // A pane goes: it is not reported, nothing fails.
    let gone = panes_matched(&first)[0].clone();
    tmux.run_ok(["kill-pane", "-t", &gone]).unwrap();
    let listed = listed_answer(&tmux, &dir, &needle);
    assert!(!panes_matched(&listed).contains(&gone), "{listed}");
    let before = kept_sweeps(&log);
    for _ in 0..4 {
        assert_eq!(search(&mut s, needle.clone()), listed);
    }
    assert!(kept_sweeps(&log) >= before + 2, "no search went ahead");
    assert_eq!(listed["total_panes_matched"], 7, "{listed}");
    assert_eq!(listed["panes_failed"], 0, "{listed}");
    assert_eq!(listed["panes_searched"], PANES, "{listed}");
}

#[test]
fn a_cursor_from_a_search_started_ahead_misses_nothing() {
    let tmux = filled_server("ahead-cursor");
    let dir = TempDir::new("ahead-cursor");
    let log = dir.0.join("spans");
    let mut s = serve(&tmux, &log);
    let args = json!({"pattern": "late line"});
    for _ in 0..3 {
        search(&mut s, args.clone());
    }
    let before = kept_sweeps(&log);
    // The whole cursor, tag included, to pass back.
    let r = s.call_ok("search_panes", args.clone());
    assert!(kept_sweeps(&log) > before, "the search did not go ahead");
    assert_eq!(r["total_panes_matched"], 0);
    let cursor = r["cursor"].as_str().unwrap().to_owned();
    // Typed after the cursor into two panes (the terminal echoes it), on
    // the line their cursor was on when the cursor was taken.
    let panes = tmux
        .run_ok(["list-panes", "-a", "-F", "#{pane_id}"])
        .unwrap();
    let panes: Vec<&str> = panes.lines().collect();
    let typed = [panes[1], panes[7]];
    for p in typed {
        tmux.run_ok(["send-keys", "-t", p, "-l", "late line"])
            .unwrap();
        tmux.run_ok(["send-keys", "-t", p, "Enter"]).unwrap();
    }
    assert!(eventually(Duration::from_secs(10), || {
        typed.iter().all(|p| {
            tmux.run_ok(["capture-pane", "-p", "-t", p])
                .is_ok_and(|t| t.contains("late line"))
        })
    }));
    let since = search(&mut s, json!({"pattern": "late line", "since": cursor}));
    let mut found = panes_matched(&since);
    found.sort();
    let mut want: Vec<String> = typed.iter().map(|p| (*p).to_owned()).collect();
    want.sort();
    assert_eq!(found, want, "{since}");
    // Every pane searched from its boundary: none in full.
    assert!(since.get("since_panes").is_none(), "{since}");
}

#[test]
fn a_search_short_of_time_lists_on_its_own() {
    let tmux = filled_server("ahead-short");
    let dir = TempDir::new("ahead-short");
    let log = dir.0.join("spans");
    let mut s = serve(&tmux, &log);
    for _ in 0..3 {
        search(&mut s, json!({"pattern": "needle"}));
    }
    let spans = || std::fs::read_to_string(&log).unwrap_or_default();
    let ahead = spans().matches("search.ahead_listing").count();
    assert!(ahead > 0, "no search went ahead");
    let listings = spans().matches("search.list ").count();
    // A sweep started ahead gives its listing once its first chunk has
    // run; a search with less than twice the last one's time lists first,
    // and its answer (cut by time, or a timeout) comes from that listing.
    let r = s.call(
        "search_panes",
        json!({"pattern": "needle", "timeout_ms": 1}),
    );
    assert!(r["content"][0]["text"].is_string(), "{r}");
    assert_eq!(spans().matches("search.ahead_listing").count(), ahead);
    assert_eq!(spans().matches("search.list ").count(), listings + 1);
}

/// The tmux clients panescan runs for sweeps, waiting or working.
fn sweep_client_pids(serve_pid: u32) -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|pid| common::child_process(pid, serve_pid))
        .filter(|p| p.cmdline.contains("source-file"))
        .map(|p| p.pid)
        .collect()
}

fn sweep_clients(serve_pid: u32) -> usize {
    sweep_client_pids(serve_pid).len()
}

fn gone(pid: u32) -> bool {
    !matches!(process_state(pid), Some(state) if state != 'Z')
}

#[test]
fn a_kept_sweep_client_ends_with_a_killed_panescan() {
    let (tmux, dir, mut s) = with_a_kept_client("ahead-killed");
    let kept = sweep_client_pids(s.pid());
    assert_eq!(kept.len(), 1);
    // Killed: nothing of panescan's runs to let the client go; the FIFO's
    // write end it held closes with it, and the client reads an empty
    // script.
    s.signal("KILL");
    assert!(s.wait_exit(Duration::from_secs(10)).is_some());
    assert!(
        eventually(KEPT_CLIENT_IDLE / 2, || gone(kept[0])),
        "the kept client outlived panescan"
    );
    // Nothing is left beside the socket either.
    let left = sweep_fifos(tmux.socket_path().unwrap().parent().unwrap());
    assert!(left.is_empty(), "{left:?}");
    let pid = tmux.pid().unwrap();
    tmux.run_ok(["kill-session", "-t", "main"]).unwrap();
    assert!(eventually(Duration::from_secs(5), || gone(pid)));
    drop(dir);
}

/// A filled server and a serve that has searched it three times alike:
/// a sweep client is kept for the next search.
fn with_a_kept_client(label: &str) -> (PrivateServer, TempDir, Serve) {
    let dir = TempDir::new(label);
    let tmux = filled_server_under(label, Some(&dir.0));
    let mut s = serve(&tmux, &dir.0.join("spans"));
    for _ in 0..3 {
        search(&mut s, json!({"pattern": "needle"}));
    }
    assert!(
        eventually(Duration::from_secs(10), || sweep_clients(s.pid()) == 1),
        "no sweep client kept"
    );
    // Kept means held: panescan removes the FIFO's name once it holds the
    // write end, and only from then on does the client end with panescan.
    let beside = tmux.socket_path().unwrap().parent().unwrap().to_path_buf();
    assert!(
        eventually(Duration::from_secs(10), || sweep_fifos(&beside).is_empty()),
        "the kept client's FIFO was never held: {:?}",
        sweep_fifos(&beside)
    );
    (tmux, dir, s)
}

/// The sweep FIFOs and scripts beside a server's socket.
fn sweep_fifos(dir: &std::path::Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with(".panescan-sweep-"))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn a_kept_sweep_client_lets_the_server_exit_with_its_last_session() {
    let (tmux, _dir, s) = with_a_kept_client("ahead-exit");
    let pid = tmux.pid().unwrap();
    // The last session goes: tmux detaches panescan's control client, and
    // the kept client must go too, well before its idle time is up (a
    // connected client keeps the server from exiting).
    tmux.run_ok(["kill-session", "-t", "main"]).unwrap();
    let exited = eventually(KEPT_CLIENT_IDLE / 2, || gone(pid));
    assert!(exited, "the tmux server outlived its last session");
    assert!(eventually(Duration::from_secs(5), || sweep_clients(
        s.pid()
    ) == 0));
}

#[test]
fn a_kept_sweep_client_unused_goes_after_its_idle_time() {
    let (_tmux, _dir, mut s) = with_a_kept_client("ahead-idle");
    assert!(
        eventually(KEPT_CLIENT_IDLE * 3, || sweep_clients(s.pid()) == 0),
        "the kept client stayed"
    );
    // The server still answers, and the next searches keep one again.
    for _ in 0..3 {
        assert_eq!(
            search(&mut s, json!({"pattern": "needle"}))["total_panes_matched"],
            7
        );
    }
    assert!(eventually(Duration::from_secs(10), || sweep_clients(
        s.pid()
    ) == 1));
}
