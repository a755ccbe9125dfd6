//! Many hosts through OpenSSH, against a real sshd the tests start on
//! 127.0.0.1 (tests/common/sshd.rs): the tools over ssh answer as they do
//! locally, two hosts in one search name their host on every match, a
//! host that stops answering, has no tmux server or would prompt fails
//! alone and clearly. Skipped, with the reason printed, when sshd is not
//! installed.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::sshd::{self, Alias, SshWorld};
use common::{eventually, Serve, TempDir};
use panescan::testing::private_server::PrivateServer;
use serde_json::{json, Value};

fn serve(config: &Path, hosts: &[&str]) -> Serve {
    let mut args: Vec<String> = vec!["serve".into(), "--ssh-config".into()];
    args.push(config.display().to_string());
    for h in hosts {
        args.push("--ssh".into());
        args.push((*h).to_owned());
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut s = Serve::spawn_with(&args, &[]);
    s.initialize();
    s
}

/// A result without what differs between two runs or two routes.
fn comparable(mut v: Value) -> Value {
    strip(&mut v);
    v
}

fn strip(v: &mut Value) {
    match v {
        Value::Object(map) => {
            for key in ["host", "elapsed_ms", "cursor", "socket_path"] {
                map.remove(key);
            }
            map.values_mut().for_each(strip);
        }
        Value::Array(items) => items.iter_mut().for_each(strip),
        _ => {}
    }
}

fn hosts_of(result: &Value) -> Vec<String> {
    result["matches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["host"].as_str().unwrap_or("?").to_owned())
        .collect()
}

#[test]
fn tools_over_ssh_answer_as_they_do_locally() {
    sshd::require();
    let mut world = SshWorld::new("same");
    let n = world.start_sshd();
    let tmux = PrivateServer::start("ssh-same", 80, 24).unwrap();
    sshd::show(&tmux, "alpha one\\nbeta two\\nalpha three");
    let config = world.client_config(&[Alias {
        name: "box",
        sshd: n,
        tmux_tmpdir: None,
        identity: None,
    }]);
    let mut s = serve(&config, &["box"]);
    let name = tmux.socket_name();
    let pane = tmux
        .run_ok(["display-message", "-p", "-t", "main:0.0", "#{pane_id}"])
        .unwrap();
    let pane = pane.trim();
    for (tool, args) in [
        ("list_panes", json!({"socket_name": name})),
        (
            "capture_pane",
            json!({"socket_name": name, "pane_id": pane}),
        ),
        (
            "search_panes",
            json!({"socket_name": name, "pattern": "alpha", "context_lines": 1}),
        ),
    ] {
        let mut local_args = args.clone();
        local_args["host"] = json!("local");
        let local = s.call_ok(tool, local_args);
        let mut remote_args = args.clone();
        remote_args["host"] = json!("box");
        let remote = s.call_ok(tool, remote_args);
        assert_eq!(comparable(local), comparable(remote.clone()), "{tool}");
        if tool == "search_panes" {
            assert_eq!(hosts_of(&remote), ["box"]);
            assert_eq!(remote["matches"][0]["lines"].as_array().unwrap().len(), 2);
        }
    }
    // The search again, from the pane cache of that host: the same answer.
    let args = json!({"socket_name": name, "pattern": "alpha", "host": "box"});
    let first = s.call_ok("search_panes", args.clone());
    let again = s.call_ok("search_panes", args);
    assert_eq!(comparable(first), comparable(again));
    let info = s.call_ok(
        "get_server_info",
        json!({"socket_name": name, "host": "box"}),
    );
    // `3.3a`, or a development build's `next-3.8`.
    let version = info["version"].as_str().unwrap();
    assert!(
        version.trim_start_matches("next-").starts_with('3'),
        "{info}"
    );
    search_command_over_ssh(&config, name);
    wait_over_ssh(&mut s, &tmux, name, pane);
}

/// `panescan search` over ssh: -L names the server on every host.
fn search_command_over_ssh(config: &Path, name: &str) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_panescan"))
        .args(["search", "--ssh", "box", "--ssh-config"])
        .arg(config)
        .args([
            "-L",
            name,
            "--host",
            "local,box",
            "--color",
            "never",
            "alpha",
        ])
        .env("LC_ALL", "C.UTF-8")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 4, "{stdout}");
    assert!(
        lines[..2].iter().all(|l| l.starts_with("local %")),
        "{stdout}"
    );
    assert!(
        lines[2..].iter().all(|l| l.starts_with("box %")),
        "{stdout}"
    );
}

/// A wait over ssh (the event stream rides the same control client):
/// text typed into the pane until the wait sees it.
fn wait_over_ssh(s: &mut Serve, tmux: &PrivateServer, name: &str, pane: &str) {
    let id = s.fresh_id();
    s.send(
        &json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
        "name": "wait_for_text",
        "arguments": {"host": "box", "socket_name": name, "pane_id": pane,
                      "pattern": "gamma", "timeout_ms": 30000}}}),
    );
    let mut answer = None;
    let seen = eventually(Duration::from_secs(30), || {
        tmux.run_ok(["send-keys", "-t", "main:0.0", "gamma", "Enter"])
            .unwrap();
        answer = s.recv(Duration::from_millis(300));
        answer.is_some()
    });
    assert!(seen, "wait_for_text over ssh never answered");
    let answer = answer.unwrap();
    assert_eq!(answer["id"], id, "{answer}");
    assert_eq!(answer["result"]["isError"], false, "{answer}");
    let text = answer["result"]["structuredContent"].to_string();
    assert!(text.contains("gamma"), "{text}");
}

#[test]
fn two_hosts_in_one_search_name_their_host_on_every_match() {
    sshd::require();
    let mut world = SshWorld::new("two");
    let n = world.start_sshd();
    let (dir_a, dir_b) = (TempDir::new("ssh-two-a"), TempDir::new("ssh-two-b"));
    let a = sshd::server_under("ssh-two-a", &dir_a.0);
    let b = sshd::server_under("ssh-two-b", &dir_b.0);
    sshd::show(&a, "shared from-a");
    sshd::show(&b, "shared from-b\\nshared again-b");
    let config = world.client_config(&[
        Alias {
            name: "a",
            sshd: n,
            tmux_tmpdir: Some(&dir_a.0),
            identity: None,
        },
        Alias {
            name: "b",
            sshd: n,
            tmux_tmpdir: Some(&dir_b.0),
            identity: None,
        },
    ]);
    let mut s = serve(&config, &["a", "b"]);
    let r = s.call_ok(
        "search_panes",
        json!({"pattern": "shared", "hosts": ["b", "a"]}),
    );
    // Host order as asked, then pane order.
    assert_eq!(hosts_of(&r), ["b", "a"], "{r}");
    for m in r["matches"].as_array().unwrap() {
        let host = m["host"].as_str().unwrap();
        for line in m["lines"].as_array().unwrap() {
            let text = line["text"].as_str().unwrap();
            assert!(text.ends_with(&format!("-{host}")), "{host}: {text}");
        }
    }
    assert_eq!(r["total_panes_matched"], 2);
    assert!(r.get("hosts_failed").is_none(), "{r}");
    // %0 on both hosts is two panes: capture each by host.
    let pane = r["matches"][0]["pane_id"].as_str().unwrap().to_owned();
    for host in ["a", "b"] {
        let c = s.call_ok("capture_pane", json!({"pane_id": pane, "host": host}));
        assert!(
            c["text"]
                .as_str()
                .unwrap()
                .contains(&format!("from-{host}")),
            "{c}"
        );
    }
    // A shared line budget is charged in host order: b's scan fills it.
    let r = s.call_ok(
        "search_panes",
        json!({"pattern": "shared", "hosts": ["b", "a"], "max_scan_lines": 1}),
    );
    assert_eq!(hosts_of(&r), ["b"], "{r}");
    assert_eq!(r["matching_line_clamped"], true);
    // An unknown host is refused, and never reaches ssh.
    let e = s.call_err(
        "search_panes",
        json!({"pattern": "x", "hosts": ["a", "elsewhere"]}),
    );
    assert!(e.contains("not configured"), "{e}");
}

#[test]
fn a_stopped_host_fails_alone_and_clearly() {
    sshd::require();
    let mut world = SshWorld::new("stopped");
    let (n0, n1) = (world.start_sshd(), world.start_sshd());
    let (dir_a, dir_b, empty) = (
        TempDir::new("ssh-stop-a"),
        TempDir::new("ssh-stop-b"),
        TempDir::new("ssh-stop-none"),
    );
    let a = sshd::server_under("ssh-stop-a", &dir_a.0);
    let b = sshd::server_under("ssh-stop-b", &dir_b.0);
    sshd::show(&a, "needle a");
    sshd::show(&b, "needle b");
    let stranger = world.stranger_key();
    let config = world.client_config(&[
        Alias {
            name: "a",
            sshd: n0,
            tmux_tmpdir: Some(&dir_a.0),
            identity: None,
        },
        Alias {
            name: "b",
            sshd: n1,
            tmux_tmpdir: Some(&dir_b.0),
            identity: None,
        },
        Alias {
            name: "empty",
            sshd: n0,
            tmux_tmpdir: Some(&empty.0),
            identity: None,
        },
        Alias {
            name: "locked",
            sshd: n0,
            tmux_tmpdir: None,
            identity: Some(&stranger),
        },
    ]);
    let mut s = serve(&config, &["a", "b", "empty", "locked"]);
    let all =
        json!({"pattern": "needle", "hosts": ["a", "b", "empty", "locked"], "timeout_ms": 4000});
    let r = s.call_ok("search_panes", all.clone());
    assert_eq!(hosts_of(&r), ["a", "b"], "{r}");
    let failed = sshd::hosts_failed(&r);
    assert_eq!(failed.len(), 2, "{r}");
    // No tmux server there: said so, naming the host.
    assert_eq!(failed[0].0, "empty");
    assert!(
        failed[0].1.contains("no tmux server at host empty"),
        "{}",
        failed[0].1
    );
    // A login ssh would have to prompt for: refused at once (BatchMode),
    // with ssh's own words, not a timeout.
    assert_eq!(failed[1].0, "locked");
    assert!(failed[1].1.contains("Permission denied"), "{}", failed[1].1);
    let e = s.call_err("list_panes", json!({"host": "locked"}));
    assert!(e.contains("host locked cannot be used"), "{e}");

    // b's sshd stops answering: b fails (its time budget), a answers.
    world.sshd(n1).freeze();
    let r = s.call_ok(
        "search_panes",
        json!({"pattern": "needle", "hosts": ["a", "b"], "timeout_ms": 3000}),
    );
    assert_eq!(hosts_of(&r), ["a"], "{r}");
    let failed = sshd::hosts_failed(&r);
    assert_eq!(failed.len(), 1, "{r}");
    assert_eq!(failed[0].0, "b");
}

#[test]
fn a_bad_destination_or_remote_socket_path_is_refused() {
    // No sshd needed: nothing here reaches ssh.
    let empty = PathBuf::from("/nonexistent/ssh_config");
    for dest in [
        "-oProxyCommand=touch /tmp/x",
        "a b",
        "a;b",
        "local",
        "$(id)",
    ] {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_panescan"))
            .args(["serve", &format!("--ssh={dest}"), "--ssh-config"])
            .arg(&empty)
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{dest:?}");
        assert!(
            out.stdout.is_empty(),
            "{dest:?}: stdout carries JSON-RPC only"
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("refused"), "{dest:?}: {err}");
    }
    let mut s = serve(&empty, &["box"]);
    let e = s.call_err(
        "list_panes",
        json!({"host": "box", "socket_path": "/tmp/x"}),
    );
    assert!(
        e.contains("socket_path cannot be used with host box"),
        "{e}"
    );
    let e = s.call_err("list_panes", json!({"host": "other"}));
    assert!(e.contains("not configured"), "{e}");
    // run_command reads the pane's processes: this machine's only.
    let config = empty.display().to_string();
    let mut m = Serve::spawn_with(
        &[
            "serve",
            "--tier",
            "mutating",
            "--ssh-config",
            &config,
            "--ssh",
            "box",
        ],
        &[],
    );
    m.initialize();
    let e = m.call_err(
        "run_command",
        json!({"host": "box", "pane_id": "%0", "command": "true"}),
    );
    assert!(e.contains("this machine's panes only"), "{e}");
}

/// Median of `runs` timed search_panes calls with `args`, in ms (the
/// structured result of the last one, to check it).
fn timed(s: &mut Serve, args: &Value, runs: usize) -> (f64, Value) {
    let mut ms = Vec::new();
    let mut last = Value::Null;
    for _ in 0..runs {
        let t = std::time::Instant::now();
        last = s.call_ok("search_panes", args.clone());
        ms.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    ms.sort_by(f64::total_cmp);
    (ms[ms.len() / 2], last)
}

/// The bench row of BENCHMARKS.md ("Many hosts through ssh"): 4 hosts x
/// 200 panes (4 Host aliases to one local sshd, each its own tmux server)
/// searched in one call, beside the slowest host searched alone, same
/// run. Run: `cargo test -p panescan --test ssh --
/// --ignored --nocapture bench_four_hosts`.
#[test]
#[ignore]
fn bench_four_hosts() {
    use panescan::testing::fixture::FixtureShape;
    sshd::require();
    let mut world = SshWorld::new("bench");
    let n = world.start_sshd();
    let shape = FixtureShape {
        panes: 200,
        lines: 500,
        width: 120,
        height: 30,
        needle_every: 40,
    };
    let names = ["h1", "h2", "h3", "h4"];
    let (fixtures, dirs) = bench_servers(&names, &shape);
    let aliases: Vec<Alias> = names
        .iter()
        .zip(&dirs)
        .map(|(name, dir)| Alias {
            name,
            sshd: n,
            tmux_tmpdir: Some(&dir.0),
            identity: None,
        })
        .collect();
    let config = world.client_config(&aliases);
    let mut s = serve(&config, &names);
    let all = json!({"pattern": panescan::testing::fixture::NEEDLE, "hosts": names, "scrollback_lines": 1_000_000});
    let cold = std::time::Instant::now();
    let first = s.call_ok("search_panes", all.clone());
    let cold_ms = cold.elapsed().as_secs_f64() * 1000.0;
    let per_host = fixtures[0].needles.len();
    assert_eq!(
        first["total_panes_matched"],
        4 * 5,
        "{}",
        first["hosts_failed"]
    );
    assert!(per_host > 0);
    // CPU spent per call by everything a search crosses: the four tmux
    // servers and the sshd with its sessions (the "remote" side), panescan
    // and its ssh clients (the local side).
    let marker = config.display().to_string();
    let mut remote: Vec<u32> = fixtures
        .iter()
        .filter_map(|f| f.server.pid().ok())
        .collect();
    remote.extend(world.sshd(n).pid());
    let local = [s.pid()];
    let (remote, local, marker) = (&remote[..], &local[..], marker.as_str());
    let cpu = |runs: f64| {
        let (r, l) = (
            sshd::cpu_ms(remote, None),
            sshd::cpu_ms(local, Some(marker)),
        );
        move || {
            let r2 = sshd::cpu_ms(remote, None) - r;
            let l2 = sshd::cpu_ms(local, Some(marker)) - l;
            (r2 / runs, l2 / runs)
        }
    };
    let spent = cpu(7.0);
    let (together, r) = timed(&mut s, &all, 7);
    let (remote_cpu, local_cpu) = spent();
    assert_eq!(r["panes_searched"], 800);
    let mut slowest = (0.0, "", (0.0, 0.0));
    for name in names {
        let one = json!({"pattern": panescan::testing::fixture::NEEDLE, "hosts": [name], "scrollback_lines": 1_000_000});
        let spent = cpu(7.0);
        let (ms, r) = timed(&mut s, &one, 7);
        let used = spent();
        assert_eq!(r["panes_searched"], 200);
        if ms > slowest.0 {
            slowest = (ms, name, used);
        }
    }
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
    eprintln!(
        "CPU per call: 4 hosts {remote_cpu:.0} ms remote side (tmux, sshd) + {local_cpu:.0} ms local (panescan, ssh); slowest host alone {:.0} + {:.0} ms. \
         That CPU spread over {cores} cores is {:.1} ms ({:.2}x the slowest host alone; it counts threads that spin while they wait, so a call can take less); measured {together:.1} ms",
        slowest.2 .0,
        slowest.2 .1,
        (remote_cpu + local_cpu) / cores,
        (remote_cpu + local_cpu) / cores / slowest.0,
    );
    // The pane cache off: what the hosts cost when every capture crosses ssh.
    let mut nc = Serve::spawn_with(
        &[
            "serve",
            "--no-cache",
            "--ssh-config",
            &config.display().to_string(),
            "--ssh",
            "h1",
            "--ssh",
            "h2",
            "--ssh",
            "h3",
            "--ssh",
            "h4",
        ],
        &[],
    );
    nc.initialize();
    let _ = nc.call_ok("search_panes", all.clone());
    let (uncached, _) = timed(&mut nc, &all, 5);
    let one = json!({"pattern": panescan::testing::fixture::NEEDLE, "hosts": [slowest.1], "scrollback_lines": 1_000_000});
    let (uncached_one, _) = timed(&mut nc, &one, 5);
    eprintln!(
        "4 hosts x 200 panes x 500 lines: first call {cold_ms:.0} ms (connects); median {together:.1} ms; slowest host alone ({}) {:.1} ms; ratio {:.2}; without the pane cache: 4 hosts {uncached:.1} ms, {} alone {uncached_one:.1} ms, ratio {:.2}",
        slowest.1,
        slowest.0,
        together / slowest.0,
        slowest.1,
        uncached / uncached_one
    );
}

/// One filled server per host name, each the default server of its own
/// `TMUX_TMPDIR` (what the host's alias sets).
fn bench_servers(
    names: &[&str],
    shape: &panescan::testing::fixture::FixtureShape,
) -> (Vec<panescan::testing::fixture::Fixture>, Vec<TempDir>) {
    use panescan::testing::fixture::Fixture;
    let mut fixtures = Vec::new();
    let mut dirs = Vec::new();
    for name in names {
        let f = Fixture::build(
            &format!("ssh-bench-{name}"),
            shape.clone(),
            &panescan::testing::corpus::sources(),
            Duration::from_secs(300),
            &mut |_, _| {},
        )
        .unwrap();
        let dir = TempDir::new(&format!("ssh-bench-{name}"));
        let uid_dir = dir.0.join(format!("tmux-{}", current_uid()));
        std::fs::create_dir_all(&uid_dir).unwrap();
        std::fs::set_permissions(
            &uid_dir,
            std::os::unix::fs::PermissionsExt::from_mode(0o700),
        )
        .unwrap();
        std::os::unix::fs::symlink(f.server.socket_path().unwrap(), uid_dir.join("default"))
            .unwrap();
        fixtures.push(f);
        dirs.push(dir);
    }
    (fixtures, dirs)
}

fn current_uid() -> u32 {
    let out = std::process::Command::new("id").arg("-u").output().unwrap();
    String::from_utf8_lossy(&out.stdout).trim().parse().unwrap()
}
