//! Every way a pane's text can change without its output reaching
//! panescan's control client (NOTES.md, "What changes a pane without
//! output"), made while the pane cache is full and warm (a search served
//! every pane from it), then a search with the cache and one without it:
//! the answers must be the same. Each case runs on a private server of its
//! own, killed at the end even on failure.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use common::eventually;
use panescan::cache::PaneCache;
use panescan::config::Ceilings;
use panescan::testbed::private_server::PrivateServer;
use panescan::tmux::{ServerSpec, Tmux};
use panescan::tools::context::ToolContext;
use panescan::tools::search::{search_panes, SearchPanesArgs};
use serde_json::Value;

/// Rows each pane prints at start, then it sleeps (prints nothing more).
const ROWS: usize = 120;

fn context(socket_name: &str, cache: Option<Arc<PaneCache>>) -> ToolContext {
    ToolContext::read_only(ServerSpec::named(socket_name), Ceilings::default())
        .with_pane_cache(cache)
}

/// A private server whose three panes printed [`ROWS`] numbered rows each
/// and then sleep, and a warm pane cache for it.
struct Warm {
    server: PrivateServer,
    panes: Vec<String>,
    cache: Arc<PaneCache>,
    cached: ToolContext,
    cold: ToolContext,
}

impl Drop for Warm {
    fn drop(&mut self) {
        self.server.kill();
    }
}

fn program(tag: &str) -> String {
    format!("seq -f '{tag} row %g' 1 {ROWS}; exec sleep 1000000")
}

impl Warm {
    fn start(label: &str) -> Warm {
        let server = PrivateServer::start(label, 60, 12).unwrap();
        server
            .run_ok(["set-option", "-g", "automatic-rename", "off"])
            .unwrap();
        let mut panes = Vec::new();
        for i in 0..3 {
            let pane = server
                .run_ok([
                    "new-window",
                    "-d",
                    "-n",
                    &format!("w{i}"),
                    "-P",
                    "-F",
                    "#{pane_id}",
                    &program(&format!("p{i}")),
                ])
                .unwrap();
            panes.push(pane.trim().to_owned());
        }
        server.run_ok(["kill-window", "-t", "main:0"]).unwrap();
        let cache = Arc::new(PaneCache::new(64 << 20));
        let warm = Warm {
            cached: context(server.socket_name(), Some(cache.clone())),
            cold: context(server.socket_name(), None),
            server,
            panes,
            cache,
        };
        for pane in &warm.panes {
            let last = format!("row {ROWS}");
            assert!(eventually(Duration::from_secs(10), || warm
                .screen(pane)
                .contains(&last)));
        }
        warm.fill();
        warm
    }

    /// Searches until the cache served every pane from stored text: the
    /// cache is full and warm.
    /// A pane that printed in the second of its last capture is fetched
    /// again (a delta), so this takes a few searches a second apart.
    fn fill(&self) {
        for _ in 0..4 {
            search(&self.cached);
            wait_past_second();
            let before = self.cache.stats();
            search(&self.cached);
            let after = self.cache.stats();
            if after.reused - before.reused == self.panes.len() as u64 {
                return;
            }
        }
        panic!(
            "the cache never served every pane: {:?}",
            self.cache.stats()
        );
    }

    fn screen(&self, pane: &str) -> String {
        self.server
            .run_ok(["capture-pane", "-p", "-t", pane])
            .unwrap_or_default()
    }

    fn format(&self, pane: &str, format: &str) -> String {
        self.server
            .run_ok(["display-message", "-p", "-t", pane, format])
            .unwrap()
            .trim()
            .to_owned()
    }

    /// A search with the cache equals one without it.
    fn same_answers(&self, change: &str) {
        let warm = search(&self.cached);
        let cold = search(&self.cold);
        assert_eq!(warm, cold, "cache on and off differ after {change}");
    }
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// Waits into the next second (the cache reuses text only when a window's
/// last output came in an earlier second than its capture).
fn wait_past_second() {
    let now = now_secs();
    assert!(eventually(Duration::from_secs(5), || now_secs() > now));
}

/// Every line of every pane, history included, as JSON without timings.
fn search(ctx: &ToolContext) -> Value {
    let args = SearchPanesArgs {
        pattern: Some(".".to_owned()),
        regex: true,
        scrollback_lines: Some(100_000),
        max_matches: Some(10_000),
        max_matches_per_pane: Some(10_000),
        ..SearchPanesArgs::default()
    };
    let mut v = serde_json::to_value(search_panes(ctx, &args).unwrap()).unwrap();
    for key in ["elapsed_ms", "cursor", "cursor_if_cut"] {
        v.as_object_mut().unwrap().remove(key);
    }
    v
}

#[test]
fn clear_history_from_another_client() {
    let w = Warm::start("unseen-clear");
    w.server
        .run_ok(["clear-history", "-t", &w.panes[1]])
        .unwrap();
    assert_eq!(w.format(&w.panes[1], "#{history_size}"), "0");
    w.same_answers("clear-history");
}

#[test]
fn history_limit_changed_by_another_client() {
    // tmux sets a pane's limit when the pane is made (options.c pushes no
    // history-limit change to existing panes): the old panes keep theirs,
    // a new pane gets the new one and trims at it.
    let w = Warm::start("unseen-limit");
    w.server
        .run_ok(["set-option", "-g", "history-limit", "30"])
        .unwrap();
    let pane = w
        .server
        .run_ok([
            "split-window",
            "-d",
            "-t",
            &w.panes[0],
            "-P",
            "-F",
            "#{pane_id}",
            &program("new"),
        ])
        .unwrap();
    let pane = pane.trim();
    assert!(eventually(Duration::from_secs(10), || w
        .screen(pane)
        .contains(&format!("row {ROWS}"))));
    assert_eq!(w.format(pane, "#{history_limit}"), "30");
    w.same_answers("history-limit changed, a pane made after");
}

#[test]
fn resize_rewraps_without_output() {
    let w = Warm::start("unseen-resize");
    w.server
        .run_ok(["resize-window", "-t", &w.panes[2], "-x", "9", "-y", "5"])
        .unwrap();
    w.same_answers("resize-window");
    w.server
        .run_ok(["resize-window", "-t", &w.panes[2], "-x", "60", "-y", "12"])
        .unwrap();
    w.same_answers("resize-window and back");
}

#[test]
fn respawn_without_output_clears_the_screen() {
    let w = Warm::start("unseen-respawn");
    let before = w.format(&w.panes[0], "#{pane_pid}");
    w.server
        .run_ok([
            "respawn-pane",
            "-k",
            "-t",
            &w.panes[0],
            "exec sleep 1000000",
        ])
        .unwrap();
    assert!(eventually(Duration::from_secs(10), || w
        .format(&w.panes[0], "#{pane_pid}")
        != before));
    w.same_answers("respawn-pane with a program that prints nothing");
}

#[test]
fn history_trimmed_at_the_limit() {
    let w = Warm::start("unseen-trim");
    // The limit of a new pane, printed past it: tmux trims its oldest
    // tenth at a time.
    w.server
        .run_ok(["set-option", "-g", "history-limit", "50"])
        .unwrap();
    let pane = w
        .server
        .run_ok(["new-window", "-d", "-P", "-F", "#{pane_id}", &program("t")])
        .unwrap();
    let pane = pane.trim().to_owned();
    assert!(eventually(Duration::from_secs(10), || w
        .screen(&pane)
        .contains(&format!("row {ROWS}"))));
    wait_past_second();
    search(&w.cached);
    wait_past_second();
    w.server
        .run_ok([
            "respawn-pane",
            "-k",
            "-t",
            &pane,
            &format!("seq -f 'more %g' 1 40; {}", program("u")),
        ])
        .unwrap();
    assert!(eventually(Duration::from_secs(10), || w
        .screen(&pane)
        .contains(&format!("u row {ROWS}"))));
    w.same_answers("a pane printing past its history limit");
}

#[test]
fn copy_mode_changes_no_captured_text() {
    let w = Warm::start("unseen-copy");
    w.server.run_ok(["copy-mode", "-t", &w.panes[1]]).unwrap();
    w.server
        .run_ok(["send-keys", "-t", &w.panes[1], "-X", "history-top"])
        .unwrap();
    assert_eq!(w.format(&w.panes[1], "#{pane_in_mode}"), "1");
    w.same_answers("copy mode, scrolled to the top");
    // The pane's program prints while the pane shows copy mode: the view
    // stays, the pane's text (what a capture returns) moves on.
    let tty = w.format(&w.panes[1], "#{pane_tty}");
    std::fs::write(&tty, "printed under copy mode\r\n").unwrap();
    assert!(eventually(Duration::from_secs(10), || w
        .server
        .run_ok(["capture-pane", "-p", "-S", "-", "-t", &w.panes[1]])
        .is_ok_and(|t| t.contains("printed under copy mode"))));
    assert_eq!(w.format(&w.panes[1], "#{pane_in_mode}"), "1");
    w.same_answers("output under copy mode");
}

#[test]
fn a_pane_dying_under_remain_on_exit_is_drawn_on() {
    // tmux draws "Pane is dead" on the pane itself (server-fn.c,
    // server_destroy_pane): text, and no %output.
    let w = Warm::start("unseen-dead");
    w.server
        .run_ok([
            "set-option",
            "-w",
            "-t",
            &w.panes[2],
            "remain-on-exit",
            "on",
        ])
        .unwrap();
    let pid = w.format(&w.panes[2], "#{pane_pid}");
    let killed = std::process::Command::new("kill")
        .args(["-9", &pid])
        .status()
        .unwrap();
    assert!(killed.success());
    assert!(eventually(Duration::from_secs(10), || w
        .format(&w.panes[2], "#{pane_dead}")
        == "1"));
    w.same_answers("the pane's program died, remain-on-exit on");
}

#[test]
fn a_terminal_reset_from_another_client() {
    // send-keys -R resets the pane's terminal (input.c input_reset): the
    // screen is cleared without output.
    let w = Warm::start("unseen-reset");
    w.server
        .run_ok(["send-keys", "-R", "-t", &w.panes[0]])
        .unwrap();
    w.same_answers("send-keys -R");
}

#[test]
fn the_control_client_reconnecting() {
    let w = Warm::start("unseen-reconnect");
    // panescan's control client goes; meanwhile history is cleared.
    Tmux::shared(&ServerSpec::named(w.server.socket_name()))
        .unwrap()
        .shutdown();
    w.server
        .run_ok(["clear-history", "-t", &w.panes[2]])
        .unwrap();
    w.same_answers("the control client reconnecting after a clear");
}

#[test]
fn a_server_restarted_under_the_same_socket() {
    let w = Warm::start("unseen-restart");
    let old = w.server.pid().unwrap();
    w.server.run_ok(["kill-server"]).ok();
    let deadline = Instant::now() + Duration::from_secs(10);
    // The same socket, a new server, the same pane ids and window names,
    // other text.
    loop {
        let started = w
            .server
            .command()
            .args(["new-session", "-d", "-s", "main", "-x", "60", "-y", "12"])
            .status()
            .unwrap();
        if started.success() {
            break;
        }
        assert!(Instant::now() < deadline, "no new server");
        std::thread::sleep(Duration::from_millis(50));
    }
    w.server
        .run_ok(["set-option", "-g", "automatic-rename", "off"])
        .unwrap();
    for i in 0..3 {
        w.server
            .run_ok([
                "new-window",
                "-d",
                "-n",
                &format!("w{i}"),
                &program(&format!("q{i}")),
            ])
            .unwrap();
    }
    w.server.run_ok(["kill-window", "-t", "main:0"]).unwrap();
    assert_ne!(w.server.pid().unwrap(), old);
    assert!(eventually(Duration::from_secs(10), || w
        .screen(&w.panes[2])
        .contains(&format!("q2 row {ROWS}"))));
    w.same_answers("the server restarted under the same socket");
}
