//! send_keys, paste_text and run_command never type into the pane
//! panescan's own MCP client runs in (typing into one's own input is a
//! loop) unless the operator passed `--allow-own-pane`: the pane found
//! from `$TMUX_PANE`, and from the process tree when the client's
//! environment says nothing; in-process and in a daemon's session.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use common::daemon::{tmux_env, Place};
use common::{Serve, TempDir};
use crossbeam_channel::{unbounded, Receiver};
use panescan::testing::private_server::PrivateServer;
use serde_json::{json, Value};

/// The three typing tools aimed at `pane`, each refused.
fn typing_is_refused(s: &mut Serve, pane: &str) {
    for (tool, args) in [
        (
            "send_keys",
            json!({"pane_id": pane, "text": "echo loop", "enter": true}),
        ),
        (
            "paste_text",
            json!({"pane_id": pane, "text": "echo loop\n"}),
        ),
        (
            "run_command",
            json!({"pane_id": pane, "command": "echo loop", "timeout_ms": 2000}),
        ),
    ] {
        let e = s.call_err(tool, args);
        assert!(
            e.contains("refused") && e.contains("own MCP client") && e.contains("--allow-own-pane"),
            "{tool}: {e}"
        );
    }
}

#[test]
fn the_clients_own_pane_is_not_typed_into_unless_allowed() {
    let tmux = PrivateServer::start("own-pane", 80, 24).unwrap();
    tmux.run_ok(["split-window", "-d", "-t", "main"]).unwrap();
    let dir = TempDir::new("own-pane");
    let sink = dir.0.join("typed");
    let own = common::typing_sink(&tmux, &sink);
    assert_eq!(own, "%0");
    let env = tmux_env(&tmux);
    let inside = [("TMUX", env.as_str()), ("TMUX_PANE", "%0")];
    let args = [
        "serve",
        "--socket-name",
        tmux.socket_name(),
        "--tier",
        "mutating",
    ];
    let mut s = Serve::spawn_with(&args, &inside);
    s.initialize();
    typing_is_refused(&mut s, "%0");
    // Another pane is typed into as ever.
    s.call_ok("send_keys", json!({"pane_id": "%1", "text": "true"}));
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(std::fs::read(&sink).unwrap(), b"", "the own pane got keys");
    // The operator may allow it.
    let mut allowed = args.to_vec();
    allowed.push("--allow-own-pane");
    let mut s = Serve::spawn_with(&allowed, &inside);
    s.initialize();
    s.call_ok("send_keys", json!({"pane_id": "%0", "text": "typed"}));
    assert!(common::eventually(Duration::from_secs(5), || {
        std::fs::read(&sink).is_ok_and(|t| t == b"typed")
    }));
}

#[test]
fn a_daemon_session_does_not_type_into_its_clients_pane() {
    let tmux = PrivateServer::start("own-pane-daemon", 80, 24).unwrap();
    tmux.run_ok(["split-window", "-d", "-t", "main"]).unwrap();
    let place = Place::new("own-pane");
    let env = tmux_env(&tmux);
    let mut a = place.serve_with_env(
        "a",
        tmux.socket_name(),
        &["--tier", "mutating"],
        &[("TMUX", &env), ("TMUX_PANE", "%0")],
    );
    let mut b = place.serve_with_env(
        "b",
        tmux.socket_name(),
        &["--tier", "mutating"],
        &[("TMUX", &env), ("TMUX_PANE", "%1")],
    );
    a.initialize();
    b.initialize();
    typing_is_refused(&mut a, "%0");
    typing_is_refused(&mut b, "%1");
    // Each may type into the other's pane: only its own is refused.
    a.call_ok("send_keys", json!({"pane_id": "%1", "text": "true"}));
    b.call_ok("send_keys", json!({"pane_id": "%0", "text": "true"}));
    assert_eq!(place.status()["sessions"], 2);
}

/// An MCP client over two FIFOs, its serve started by a pane's shell.
struct FifoClient {
    input: File,
    lines: Receiver<Value>,
    next: u64,
}

impl FifoClient {
    /// Starts `serve ARGS` in a new pane of `tmux` (its shell the serve's
    /// parent; `TMUX` and `TMUX_PANE` removed, so only the process tree
    /// says where the client runs), with `envs`; the pane's id and the
    /// client.
    fn in_new_pane(
        tmux: &PrivateServer,
        dir: &Path,
        args: &[&str],
        envs: &[(&str, &str)],
    ) -> (String, FifoClient) {
        let (fin, fout) = (dir.join("in"), dir.join("out"));
        for f in [&fin, &fout] {
            assert!(Command::new("mkfifo").arg(f).status().unwrap().success());
        }
        let mut line = String::from("env -u TMUX -u TMUX_PANE");
        for (k, v) in envs {
            line.push_str(&format!(" {k}='{v}'"));
        }
        line.push_str(&format!(" '{}'", env!("CARGO_BIN_EXE_panescan")));
        for a in args {
            line.push_str(&format!(" '{a}'"));
        }
        line.push_str(&format!(
            " <'{}' >'{}' 2>'{}'; sleep 1000",
            fin.display(),
            fout.display(),
            dir.join("err").display()
        ));
        let pane = tmux
            .run_ok([
                "split-window",
                "-d",
                "-P",
                "-F",
                "#{pane_id}",
                "-t",
                "main",
                &line,
            ])
            .unwrap()
            .trim()
            .to_owned();
        let (tx, lines) = unbounded();
        std::thread::spawn(move || {
            let Ok(out) = File::open(&fout) else { return };
            for l in BufReader::new(out).lines().map_while(Result::ok) {
                if let Ok(v) = serde_json::from_str::<Value>(&l) {
                    let _ = tx.send(v);
                }
            }
        });
        let input = File::options().write(true).open(&fin).unwrap();
        let mut client = FifoClient {
            input,
            lines,
            next: 0,
        };
        client.request(
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "panescan-tests", "version": "0"}}),
        );
        writeln!(
            client.input,
            r#"{{"jsonrpc":"2.0","method":"notifications/initialized"}}"#
        )
        .unwrap();
        (pane, client)
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        self.next += 1;
        let id = self.next;
        let msg = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        writeln!(self.input, "{msg}").unwrap();
        loop {
            let v = self
                .lines
                .recv_timeout(Duration::from_secs(20))
                .expect("an answer");
            if v["id"] == id {
                return v;
            }
        }
    }

    /// A tool call's result.
    fn call(&mut self, tool: &str, args: Value) -> Value {
        self.request("tools/call", json!({"name": tool, "arguments": args}))["result"].clone()
    }
}

/// The pane whose shell started serve is refused though nothing in serve's
/// environment names it: in-process, and through a daemon (which reads
/// serve's parents itself).
#[test]
fn the_pane_found_from_the_process_tree_is_not_typed_into() {
    let tmux = PrivateServer::start("own-pane-tree", 80, 24).unwrap();
    let place = Place::new("own-pane-tree");
    let rt = place.dir();
    let rt = rt.to_str().unwrap();
    for (label, envs) in [
        ("here", vec![("PANESCAN_NO_DAEMON", "1")]),
        ("daemon", vec![("PANESCAN_RUNTIME_DIR", rt)]),
    ] {
        let dir = TempDir::new(&format!("own-pane-tree-{label}"));
        let args = [
            "serve",
            "--socket-name",
            tmux.socket_name(),
            "--tier",
            "mutating",
        ];
        let (pane, mut c) = FifoClient::in_new_pane(&tmux, &dir.0, &args, &envs);
        let r = c.call("send_keys", json!({"pane_id": pane, "text": "echo loop"}));
        assert_eq!(r["isError"], true, "{label}: {r}");
        let text = r["content"][0]["text"].as_str().unwrap_or_default();
        assert!(text.contains("own MCP client"), "{label}: {text}");
        let r = c.call("paste_text", json!({"pane_id": pane, "text": "echo loop"}));
        assert_eq!(r["isError"], true, "{label}: {r}");
        // Not reported as is_caller (no $TMUX_PANE), yet refused.
        let r = c.call("send_keys", json!({"pane_id": "%0", "text": "true"}));
        assert_eq!(r["isError"], false, "{label}: {r}");
        tmux.run_ok(["kill-pane", "-t", &pane]).unwrap();
    }
    assert_eq!(place.status()["sessions_served"], 1);
}
