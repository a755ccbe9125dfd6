//! Every way a pane's text can change without its output reaching
//! panescan's control client (NOTES.md, "What changes a pane without
//! output"), made while the pane cache is full and warm (a search served
//! every pane from it), then a search with the cache and one without it:
//! the answers must be the same. Each case runs on a private server of its
//! own, killed at the end even on failure.
//!
//! The second half changes what a listing shows (names, placements,
//! panes, sizes) while the cache is warm and the searches list without
//! the names (tmux/inventory/vouched.rs), then compares searches scoped
//! by session name or window, and reads from tmux's own log what the
//! warm search asked it for.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use common::eventually;
use panescan::testing::cache::PaneCache;
use panescan::testing::config::Ceilings;
use panescan::testing::private_server::PrivateServer;
use panescan::testing::tmux::{ServerSpec, Tmux, WindowId};
use panescan::testing::tools::context::ToolContext;
use panescan::testing::tools::search::{search_panes, SearchPanesArgs};
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
            warm.wait_printed(pane, &format!("row {ROWS}"));
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
    let v = search_in(ctx, &Scoped::default());
    assert!(v.get("error").is_none(), "{v}");
    v
}

/// The filters of a scoped search.
#[derive(Debug, Default)]
struct Scoped<'a> {
    session: Option<&'a str>,
    window: Option<&'a str>,
}

/// [`search`] within `scope`: the answer as JSON without timings, or the
/// error's message as `{"error": ...}`.
fn search_in(ctx: &ToolContext, scope: &Scoped) -> Value {
    let args = SearchPanesArgs {
        pattern: Some(".".to_owned()),
        regex: true,
        scrollback_lines: Some(100_000),
        max_matches: Some(10_000),
        max_matches_per_pane: Some(10_000),
        session: scope.session.map(str::to_owned),
        window: scope.window.map(|w| WindowId::parse(w).unwrap()),
        ..SearchPanesArgs::default()
    };
    let mut v = match search_panes(ctx, &args) {
        Ok(found) => serde_json::to_value(found).unwrap(),
        Err(e) => return serde_json::json!({ "error": e.message }),
    };
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
    for (i, pane) in w.panes.iter().enumerate() {
        w.wait_printed(pane, &format!("q{i} row {ROWS}"));
    }
    w.same_answers("the server restarted under the same socket");
}

impl Warm {
    /// Searches scoped by each session name in `sessions` (and unscoped,
    /// and by the window of `window_of`'s pane when given) with the cache
    /// and without it: the answers must be the same.
    fn same_scoped(&self, change: &str, sessions: &[&str], window_of: Option<&str>) {
        let window = window_of.map(|pane| self.format(pane, "#{window_id}"));
        let mut scopes: Vec<Scoped> = sessions
            .iter()
            .map(|s| Scoped {
                session: Some(s),
                window: None,
            })
            .collect();
        scopes.push(Scoped::default());
        if let Some(w) = window.as_deref() {
            scopes.push(Scoped {
                session: None,
                window: Some(w),
            });
        }
        for scope in &scopes {
            let warm = search_in(&self.cached, scope);
            let cold = search_in(&self.cold, scope);
            assert_eq!(
                warm, cold,
                "cache on and off differ in {scope:?} after {change}"
            );
        }
    }

    /// Makes a pane running [`program`] with `args` before it (a tmux
    /// command such as `split-window -d -t %1`), waits until it printed
    /// everything, and returns its id.
    fn make_pane(&self, args: &[&str], tag: &str) -> String {
        let mut command: Vec<&str> = args.to_vec();
        let program = program(tag);
        command.extend(["-P", "-F", "#{pane_id}", &program]);
        let pane = self.server.run_ok(command).unwrap().trim().to_owned();
        self.wait_printed(&pane, &format!("{tag} row {ROWS}"));
        pane
    }

    /// Waits until `pane` shows `last` and its shell has become `sleep`
    /// ([`program`]'s `exec`): before that, `pane_current_command` may
    /// change between the cached search and the cold one.
    fn wait_printed(&self, pane: &str, last: &str) {
        let done = eventually(Duration::from_secs(10), || {
            self.screen(pane).contains(last)
                && self.format(pane, "#{pane_current_command}") == "sleep"
        });
        assert!(done, "{pane} never showed {last:?} under sleep");
    }

    /// [`Warm::start`] with a second pane in window `w0` (split below the
    /// first) and a second session `side` of one window `s0`, the cache
    /// full and warm again.
    fn start_wide(label: &str) -> Warm {
        let mut w = Warm::start(label);
        let split = w.make_pane(&["split-window", "-d", "-t", &w.panes[0]], "split");
        let side = w.make_pane(&["new-session", "-d", "-s", "side", "-n", "s0"], "side");
        w.panes.extend([split, side]);
        w.fill();
        w
    }
}

#[test]
fn a_window_renamed_while_warm() {
    let w = Warm::start("vouched-rename-window");
    w.server
        .run_ok(["rename-window", "-t", &w.panes[2], "w2 renamed"])
        .unwrap();
    w.same_scoped("rename-window", &["main"], Some(&w.panes[2]));
}

#[test]
fn a_session_renamed_while_warm() {
    let w = Warm::start("vouched-rename-session");
    w.server
        .run_ok(["rename-session", "-t", "main", "renamed"])
        .unwrap();
    w.same_scoped("rename-session", &["renamed", "main"], None);
}

#[test]
fn a_pane_joined_to_another_window_and_broken_out() {
    let w = Warm::start_wide("vouched-join");
    w.server
        .run_ok(["join-pane", "-d", "-s", &w.panes[4], "-t", &w.panes[1]])
        .unwrap();
    w.same_scoped(
        "join-pane from another session",
        &["main", "side"],
        Some(&w.panes[4]),
    );
    w.server
        .run_ok(["break-pane", "-d", "-s", &w.panes[3], "-n", "broken"])
        .unwrap();
    w.same_scoped("break-pane", &["main"], Some(&w.panes[3]));
}

#[test]
fn a_window_moved_to_another_session() {
    let w = Warm::start_wide("vouched-move-window");
    w.server
        .run_ok(["move-window", "-d", "-s", &w.panes[2], "-t", "side:"])
        .unwrap();
    w.same_scoped(
        "move-window to another session",
        &["main", "side"],
        Some(&w.panes[2]),
    );
}

#[test]
fn windows_swapped_and_renumbered_which_tmux_tells_nobody() {
    // swap-window and move-window -r notify no control client (tmux 3.3a
    // cmd-swap-window.c, session.c session_renumber_windows): the short
    // listing's ids and indexes must show it.
    let w = Warm::start_wide("vouched-swap-window");
    w.server
        .run_ok(["swap-window", "-d", "-s", &w.panes[1], "-t", &w.panes[4]])
        .unwrap();
    w.same_scoped(
        "swap-window across sessions",
        &["main", "side"],
        Some(&w.panes[1]),
    );
    w.server.run_ok(["kill-pane", "-t", &w.panes[2]]).unwrap();
    w.same_scoped("a window closed", &["main", "side"], None);
    w.server
        .run_ok(["move-window", "-r", "-t", "main:"])
        .unwrap();
    w.same_scoped("move-window -r", &["main", "side"], Some(&w.panes[4]));
}

#[test]
fn a_pane_killed_and_another_made_that_reuses_nothing() {
    let w = Warm::start("vouched-replace");
    w.server.run_ok(["kill-pane", "-t", &w.panes[2]]).unwrap();
    let new = w.make_pane(&["new-window", "-d", "-n", "w2"], "new");
    assert_ne!(new, w.panes[2]);
    w.same_scoped("a pane killed and another made", &["main"], Some(&new));
}

#[test]
fn panes_swapped_in_a_window_and_across_sessions() {
    let w = Warm::start_wide("vouched-swap-pane");
    // The same ids at each other's place: in one window, then across two.
    w.server
        .run_ok(["swap-pane", "-d", "-s", &w.panes[0], "-t", &w.panes[3]])
        .unwrap();
    w.same_scoped("swap-pane in a window", &["main"], Some(&w.panes[0]));
    w.server
        .run_ok(["swap-pane", "-d", "-s", &w.panes[1], "-t", &w.panes[4]])
        .unwrap();
    w.same_scoped(
        "swap-pane across sessions",
        &["main", "side"],
        Some(&w.panes[4]),
    );
}

#[test]
fn panes_resized_here_and_in_a_session_the_client_does_not_show() {
    // %layout-change reaches a control client only for windows of its own
    // session (panescan's shows `main`): the short listing's sizes must
    // show the resize in `side`.
    let w = Warm::start_wide("vouched-resize");
    w.server
        .run_ok(["resize-pane", "-t", &w.panes[3], "-y", "3"])
        .unwrap();
    w.same_scoped("resize-pane", &["main"], Some(&w.panes[3]));
    w.server
        .run_ok(["resize-window", "-t", &w.panes[4], "-x", "9", "-y", "5"])
        .unwrap();
    w.same_scoped(
        "resize-window in another session",
        &["side"],
        Some(&w.panes[4]),
    );
}

#[test]
fn a_new_pane_split_while_warm() {
    let w = Warm::start_wide("vouched-split");
    let new = w.make_pane(&["split-window", "-d", "-t", &w.panes[4]], "new");
    w.same_scoped(
        "a new pane in another session",
        &["main", "side"],
        Some(&new),
    );
    let new = w.make_pane(&["split-window", "-d", "-t", &w.panes[2]], "new2");
    w.same_scoped("a new pane", &["main"], Some(&new));
}
