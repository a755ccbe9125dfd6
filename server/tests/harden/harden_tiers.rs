//! Attacks on the tiers, as a prompt-injected agent would make them, each
//! against a private tmux server through `panescan serve`:
//!
//! * a mutating set_option that would end a session or the server
//!   (`destroy-unattached`, `exit-unattached`, `exit-empty`,
//!   `remain-on-exit off`, `buffer-limit`), and in the destructive tier the
//!   same on panescan's own session and server;
//! * a hard link to the socket, passed as `socket_name`, to reach
//!   panescan's own pane, window, session and server with the kill tools;
//! * `update-environment` set to carry panescan's own environment into a
//!   session create_session makes;
//! * pipe_pane onto a hard link or symlink to a file outside `--log-dir`;
//! * typing into a window with synchronize-panes on;
//! * forged and foreign cursors.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::path::Path;
use std::time::Duration;

use common::{eventually, Serve, TempDir, REPLY_TIMEOUT};
use panescan::testing::private_server::PrivateServer;
use serde_json::{json, Value};

fn serve(tmux: &PrivateServer, tier: &str, envs: &[(&str, &str)], more: &[&str]) -> Serve {
    let mut args = vec!["serve", "--socket-name", tmux.socket_name(), "--tier", tier];
    args.extend_from_slice(more);
    let mut s = Serve::spawn_with(&args, envs);
    s.initialize();
    s
}

/// A destructive-tier serve of `tmux` that runs, as far as it can tell, in
/// pane `%0` of it (`TMUX` and `TMUX_PANE` as a shell there has them).
fn serve_inside(tmux: &PrivateServer) -> Serve {
    let socket = tmux.socket_path().unwrap();
    let pid = tmux.pid().unwrap();
    let env = format!("{},{pid},0", socket.display());
    serve(
        tmux,
        "destructive",
        &[("TMUX", &env), ("TMUX_PANE", "%0")],
        &[],
    )
}

fn option(tmux: &PrivateServer, args: &[&str]) -> String {
    let mut a = vec!["show-options", "-v"];
    a.extend_from_slice(args);
    tmux.run_ok(a).unwrap_or_default().trim().to_owned()
}

fn sessions(tmux: &PrivateServer) -> Vec<String> {
    tmux.run_ok(["list-sessions", "-F", "#{session_name}"])
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

#[test]
fn the_mutating_tier_cannot_set_an_option_that_ends_things() {
    let tmux = PrivateServer::start("tiers-options", 80, 24).unwrap();
    tmux.run_ok(["new-session", "-d", "-s", "victim"]).unwrap();
    let mut s = serve(&tmux, "mutating", &[], &[]);
    let attacks = [
        json!({"name": "destroy-unattached", "value": "on", "target": "victim"}),
        json!({"name": "destroy-unattached", "value": "on"}),
        json!({"name": "destroy-unattached", "value": ""}),
        json!({"name": "destroy-unattached", "unset": true, "target": "victim"}),
        json!({"name": "exit-unattached", "value": "on", "scope": "server"}),
        json!({"name": "exit-unattached", "value": "YES", "scope": "server"}),
        json!({"name": "exit-empty", "value": "1", "scope": "server"}),
        json!({"name": "remain-on-exit", "value": "off", "scope": "window", "target": "victim"}),
        json!({"name": "remain-on-exit", "value": "failed", "scope": "window"}),
        json!({"name": "buffer-limit", "value": "1", "scope": "server"}),
    ];
    for a in attacks {
        let e = s.call_err("set_option", a.clone());
        assert!(e.contains("destructive tier"), "{a}: {e}");
    }
    let e = s.call_err(
        "set_option",
        json!({"name": "lock-after-time", "value": "1"}),
    );
    assert!(e.contains("lock-command"), "{e}");
    // Nothing was stored: tmux still has its defaults.
    assert_eq!(option(&tmux, &["-s", "exit-unattached"]), "off");
    assert_eq!(option(&tmux, &["-s", "buffer-limit"]), "50");
    assert_eq!(option(&tmux, &["-g", "destroy-unattached"]), "off");
    assert_eq!(option(&tmux, &["-t", "victim", "destroy-unattached"]), "");
    // Values that end nothing are mutating calls.
    for a in [
        json!({"name": "exit-unattached", "value": "off", "scope": "server"}),
        json!({"name": "destroy-unattached", "value": "off", "target": "victim"}),
        json!({"name": "remain-on-exit", "value": "on", "scope": "window", "target": "victim"}),
    ] {
        s.call_ok("set_option", a);
    }
    // The attack was that the control client's idle detach ended it all:
    // let it go, and the server and both sessions are still there.
    s.close_stdin();
    s.wait_exit(REPLY_TIMEOUT);
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(sessions(&tmux), ["main", "victim"]);
}

#[test]
fn the_destructive_tier_sets_them_but_not_on_panescans_own_session_or_server() {
    let tmux = PrivateServer::start("tiers-own", 80, 24).unwrap();
    tmux.run_ok(["new-session", "-d", "-s", "victim"]).unwrap();
    let mut s = serve_inside(&tmux);
    for a in [
        json!({"name": "exit-unattached", "value": "on", "scope": "server"}),
        json!({"name": "exit-empty", "value": "on", "scope": "server"}),
        json!({"name": "destroy-unattached", "value": "on"}),
        json!({"name": "destroy-unattached", "value": "on", "target": "main"}),
        json!({"name": "destroy-unattached", "value": "on", "target": "%0"}),
        json!({"name": "destroy-unattached", "value": "on", "target": "@0"}),
    ] {
        let e = s.call_err("set_option", a.clone());
        assert!(e.contains("panescan runs in"), "{a}: {e}");
    }
    assert_eq!(option(&tmux, &["-s", "exit-unattached"]), "off");
    // Another session may be ended so: it is.
    s.call_ok(
        "set_option",
        json!({"name": "destroy-unattached", "value": "on", "target": "victim"}),
    );
    assert!(
        eventually(REPLY_TIMEOUT, || sessions(&tmux) == ["main"]),
        "sessions: {:?}",
        sessions(&tmux)
    );
}

#[test]
fn a_hard_link_to_the_socket_is_the_same_server() {
    let tmux = PrivateServer::start("tiers-link", 80, 24).unwrap();
    tmux.run_ok(["split-window", "-t", "main"]).unwrap();
    tmux.run_ok(["new-window", "-t", "main"]).unwrap();
    let socket = tmux.socket_path().unwrap();
    let link_name = format!("{}-x", tmux.socket_name());
    let link = socket.with_file_name(&link_name);
    std::fs::hard_link(&socket, &link).unwrap();
    let _remove = RemoveOnDrop(link.clone());
    let mut s = serve_inside(&tmux);
    let via = |args: Value| {
        let mut a = args;
        a["socket_name"] = json!(link_name);
        a
    };
    for (tool, args) in [
        ("kill_session", json!({"session_id": "$0"})),
        ("kill_window", json!({"window_id": "@0"})),
        ("kill_pane", json!({"pane_id": "%0"})),
        ("respawn_pane", json!({"pane_id": "%0", "kill": true})),
        ("kill_server", json!({"confirm": true})),
    ] {
        let e = s.call_err(tool, via(args.clone()));
        assert!(e.contains("refused"), "{tool} {args}: {e}");
    }
    // Through the link it is the same server, and is_caller says so.
    let panes = s.call_ok("list_panes", via(json!({})));
    let own: Vec<&Value> = panes["panes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["is_caller"] == true)
        .collect();
    assert_eq!(own.len(), 1, "{panes}");
    assert_eq!(own[0]["pane_id"], "%0");
    assert_eq!(sessions(&tmux), ["main"]);
    // Another pane of the same server is not panescan's: killed.
    s.call_ok("kill_pane", via(json!({"pane_id": "%1"})));

    // Running inside one server, panescan may still end another.
    let other = PrivateServer::start("tiers-link-other", 80, 24).unwrap();
    let v = s.call_ok(
        "kill_server",
        json!({"confirm": true, "socket_name": other.socket_name()}),
    );
    assert_eq!(v["sessions"], 1);
    assert_eq!(sessions(&tmux), ["main"]);
}

struct RemoveOnDrop(std::path::PathBuf);

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

#[test]
fn create_session_passes_only_the_variables_the_operator_named() {
    let tmux = PrivateServer::start("tiers-env", 80, 24).unwrap();
    let mut s = serve(
        &tmux,
        "mutating",
        &[
            ("TIERS_SECRET_API_KEY", "sk-live-do-not-leak"),
            ("DISPLAY", ":77"),
            ("TIERS_CHOSEN", "chosen-value"),
        ],
        &["--pass-env", "TIERS_CHOSEN"],
    );
    // The attack: the list of names is an option any mutating call sets.
    let list = "*SECRET* TIERS_SECRET_API_KEY * DISPLAY TIERS_CHOSEN";
    s.call_ok(
        "set_option",
        json!({"name": "update-environment", "value": list, "global": true}),
    );
    let stored = tmux
        .run_ok(["show-options", "-gv", "update-environment"])
        .unwrap();
    assert!(stored.lines().any(|l| l == "*SECRET*"), "{stored}");
    let v = s.call_ok("create_session", json!({"name": "envtest"}));
    let session = v["session_id"].as_str().unwrap().to_owned();
    let env = tmux.run_ok(["show-environment", "-t", &session]).unwrap();
    assert!(!env.contains("sk-live-do-not-leak"), "{env}");
    assert!(env.lines().any(|l| l == "DISPLAY=:77"), "{env}");
    assert!(
        env.lines().any(|l| l == "TIERS_CHOSEN=chosen-value"),
        "{env}"
    );
}

#[test]
fn pipe_pane_refuses_links_out_of_the_log_dir() {
    let tmux = PrivateServer::start("tiers-pipe", 80, 24).unwrap();
    let logs = TempDir::new("tiers-pipe-logs");
    let outside = TempDir::new("tiers-pipe-outside");
    let target = outside.0.join("victim");
    std::fs::write(&target, "keep\n").unwrap();
    std::fs::hard_link(&target, logs.0.join("hard.log")).unwrap();
    std::os::unix::fs::symlink(&target, logs.0.join("soft.log")).unwrap();
    std::os::unix::fs::symlink(logs.0.join("nowhere"), logs.0.join("dangling.log")).unwrap();
    // The pane prints a line every 100 ms (no shell to wait for).
    tmux.run_ok([
        "respawn-pane",
        "-k",
        "-t",
        "%0",
        "sh -c 'while :; do echo piped-$((6*7)); sleep 0.1; done'",
    ])
    .unwrap();
    let dir = logs.0.display().to_string();
    let mut s = serve(&tmux, "mutating", &[], &["--log-dir", &dir]);
    for (file, says) in [
        ("hard.log", "2 links"),
        ("soft.log", "symbolic link"),
        ("dangling.log", "symbolic link"),
    ] {
        let e = s.call_err("pipe_pane", json!({"pane_id": "%0", "file": file}));
        assert!(e.contains(says), "{file}: {e}");
    }
    let pipe = tmux
        .run_ok(["display-message", "-p", "-t", "%0", "#{pane_pipe}"])
        .unwrap();
    assert_eq!(pipe.trim(), "0", "a refused call piped the pane");
    // A plain file: created 0600, and the pane's output arrives.
    let v = s.call_ok("pipe_pane", json!({"pane_id": "%0", "file": "ok.log"}));
    assert_eq!(v["piping"], true);
    let log = logs.0.join("ok.log");
    assert_eq!(v["path"], log.display().to_string());
    assert!(
        eventually(REPLY_TIMEOUT, || std::fs::read_to_string(&log)
            .is_ok_and(|t| t.contains("piped-42"))),
        "{:?}",
        std::fs::read_to_string(&log)
    );
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&log).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    s.call_ok("pipe_pane", json!({"pane_id": "%0"}));
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep\n");
}

#[test]
fn typing_refuses_a_synchronized_window_unless_asked() {
    let tmux = PrivateServer::start("tiers-sync", 80, 24).unwrap();
    tmux.run_ok(["split-window", "-t", "main"]).unwrap();
    let dir = TempDir::new("tiers-sync");
    let (a, b) = (dir.0.join("a"), dir.0.join("b"));
    common::typing_sink_at(&tmux, "%0", &a);
    common::typing_sink_at(&tmux, "%1", &b);
    tmux.run_ok(["set-option", "-w", "-t", "%0", "synchronize-panes", "on"])
        .unwrap();
    let mut s = serve(&tmux, "mutating", &[], &[]);
    let e = s.call_err("send_keys", json!({"pane_id": "%0", "text": "typed-1"}));
    assert!(e.contains("synchronize-panes") && e.contains("%1"), "{e}");
    // Two shells at their prompts, synchronized: run_command types into
    // neither.
    tmux.run_ok(["new-window", "-t", "main"]).unwrap();
    tmux.run_ok(["split-window", "-t", "%2"]).unwrap();
    common::plain_shell(&tmux, "%2");
    common::plain_shell(&tmux, "%3");
    tmux.run_ok(["set-option", "-w", "-t", "%2", "synchronize-panes", "on"])
        .unwrap();
    let e = s.call_err(
        "run_command",
        json!({"pane_id": "%2", "command": "echo run-1"}),
    );
    assert!(e.contains("synchronize-panes") && e.contains("%3"), "{e}");
    assert!(e.contains("allow_synchronized"), "{e}");
    std::thread::sleep(Duration::from_millis(200));
    for p in ["%2", "%3"] {
        let screen = tmux.run_ok(["capture-pane", "-p", "-t", p]).unwrap();
        assert!(!screen.contains("run-1"), "{p}: {screen}");
    }
    // A paste goes to the pane named alone (tmux writes it to that pane).
    s.call_ok("paste_text", json!({"pane_id": "%0", "text": "pasted-1"}));
    // Opting in types into both: that is what the window asks for.
    s.call_ok(
        "send_keys",
        json!({"pane_id": "%0", "text": "typed-2", "allow_synchronized": true}),
    );
    let read = |p: &Path| std::fs::read_to_string(p).unwrap_or_default();
    assert!(
        eventually(REPLY_TIMEOUT, || read(&a).contains("typed-2")
            && read(&b).contains("typed-2")),
        "a: {:?} b: {:?}",
        read(&a),
        read(&b)
    );
    assert_eq!(read(&a), "pasted-1typed-2");
    assert_eq!(read(&b), "typed-2");
    // Without synchronization the pane named gets it.
    tmux.run_ok(["set-option", "-w", "-t", "%0", "synchronize-panes", "off"])
        .unwrap();
    s.call_ok("send_keys", json!({"pane_id": "%1", "text": "typed-3"}));
    assert!(eventually(REPLY_TIMEOUT, || read(&b).ends_with("typed-3")));
    assert_eq!(read(&a), "pasted-1typed-2");
}

#[test]
fn a_forged_edited_or_foreign_cursor_is_refused() {
    let tmux = PrivateServer::start("tiers-cursor", 80, 24).unwrap();
    let mut s = serve(&tmux, "readonly", &[], &[]);
    let first = s.call_ok("capture_since", json!({"pane_id": "%0"}));
    let cursor = first["cursor"].as_str().unwrap().to_owned();
    s.call_ok("capture_since", json!({"pane_id": "%0", "cursor": cursor}));
    // Its fields edited, the tag kept: refused.
    let mut fields: Vec<String> = cursor.split('.').map(str::to_owned).collect();
    let boundary: u64 = fields[3].parse().unwrap();
    fields[3] = (boundary + 1).to_string();
    let edited = fields.join(".");
    let e = s.call_err("capture_since", json!({"pane_id": "%0", "cursor": edited}));
    assert!(e.contains("not one this panescan made"), "{e}");
    let search = s.call_ok("search_panes", json!({"pattern": "x"}));
    let since = search["cursor"].as_str().unwrap().to_owned();
    s.call_ok("search_panes", json!({"pattern": "x", "since": since}));

    // Another panescan process (a restart): neither cursor is its own.
    let mut again = serve(&tmux, "readonly", &[], &[]);
    let e = again.call_err("capture_since", json!({"pane_id": "%0", "cursor": cursor}));
    assert!(e.contains("not one this panescan made"), "{e}");
    let e = again.call_err("search_panes", json!({"pattern": "x", "since": since}));
    assert!(e.contains("not a cursor this panescan made"), "{e}");
}

#[test]
fn create_session_on_another_host_sends_nothing_of_this_machines_environment() {
    use common::sshd::{self, Alias, SshWorld};
    sshd::require();
    let mut world = SshWorld::new("tiers-env");
    let n = world.start_sshd();
    let tmux = PrivateServer::start("tiers-env-ssh", 80, 24).unwrap();
    let config = world.client_config(&[Alias {
        name: "box",
        sshd: n,
        tmux_tmpdir: None,
        identity: None,
    }]);
    let config = config.display().to_string();
    // DISPLAY is in tmux's default update-environment and panescan's list.
    let mut s = serve(
        &tmux,
        "mutating",
        &[("DISPLAY", ":55"), ("TIERS_CHOSEN", "chosen-here")],
        &[
            "--ssh-config",
            &config,
            "--ssh",
            "box",
            "--pass-env",
            "TIERS_CHOSEN",
        ],
    );
    tmux.run_ok(["set-option", "-ga", "update-environment", "TIERS_CHOSEN"])
        .unwrap();
    let v = s.call_ok(
        "create_session",
        json!({"name": "remote-env", "host": "box", "socket_name": tmux.socket_name()}),
    );
    let session = v["session_id"].as_str().unwrap().to_owned();
    let env = tmux.run_ok(["show-environment", "-t", &session]).unwrap();
    assert!(
        !env.contains(":55") && !env.contains("chosen-here"),
        "{env}"
    );
    // The same call here passes both.
    let v = s.call_ok("create_session", json!({"name": "local-env"}));
    let session = v["session_id"].as_str().unwrap().to_owned();
    let env = tmux.run_ok(["show-environment", "-t", &session]).unwrap();
    assert!(
        env.contains("DISPLAY=:55") && env.contains("TIERS_CHOSEN=chosen-here"),
        "{env}"
    );
}
