//! What a pane runs, read from /proc by panescan (tmux/procfs.rs), against
//! what tmux itself prints for `#{pane_current_command}` and
//! `#{pane_current_path}`, on a private server with panes in every state
//! the rules tell apart: an idle shell in a directory whose name has
//! spaces, `sleep` in a shell's foreground (another process group than the
//! pane's), a directory removed under a pane (` (deleted)`), an absolute
//! argv[0], an argv[0] that `parse_window_name` trims (`exec `, a quote,
//! dashes), a command string starting with `exec`, a pipeline whose group
//! leader is gone and a process whose argv[0] is empty (tmux falls back to
//! the pane's argv: so does panescan, to tmux) and a dead pane kept by
//! `remain-on-exit`.
//!
//! Each pane is read three ways: `procfs::details` directly (which must
//! answer for exactly the panes it can be sure of), `Tmux::commands_and_paths`
//! (which must answer for all, and ask tmux nothing for the /proc panes:
//! tmux's command counter says so), and a search through `panescan serve`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use common::counter::Counter;
use common::{eventually, Serve};
use panescan::testing::private_server::PrivateServer;
use panescan::testing::tmux::procfs::{self, ServerProcess};
use panescan::testing::tmux::{PaneId, ServerSpec, Tmux};
use serde_json::json;

fn soon() -> Instant {
    Instant::now() + Duration::from_secs(20)
}

/// A pane of the fixture and what it should show.
struct Case {
    /// The window's name, to find its pane.
    name: &'static str,
    /// Read from /proc (else left to tmux).
    from_proc: bool,
    /// tmux's `pane_current_command` once the pane has settled.
    command: String,
    /// tmux's `pane_current_path` once settled (None: not checked here,
    /// compared with tmux's below).
    path: Option<String>,
}

/// A directory of the test's own, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> TempDir {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .subsec_nanos();
        let dir =
            std::env::temp_dir().join(format!("panescan-procfs-{}-{nanos:x}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// An rc-less interactive bash (job control on: a foreground command gets
/// its own process group).
const BASH: &str = "env PS1='$ ' bash --norc --noprofile";

fn window(server: &PrivateServer, name: &str, dir: &Path, command: &str) {
    let dir = dir.to_str().unwrap();
    server
        .run_ok([
            "new-window",
            "-d",
            "-t",
            "main:",
            "-n",
            name,
            "-c",
            dir,
            command,
        ])
        .unwrap();
}

fn typed(server: &PrivateServer, name: &str, keys: &str) {
    let target = format!("main:{name}");
    assert!(
        eventually(Duration::from_secs(10), || {
            server
                .run_ok(["capture-pane", "-p", "-t", &target])
                .is_ok_and(|t| t.lines().any(|l| l.starts_with('$')))
        }),
        "no prompt in {name}"
    );
    server
        .run_ok(["send-keys", "-t", &target, "-l", keys])
        .unwrap();
    server
        .run_ok(["send-keys", "-t", &target, "Enter"])
        .unwrap();
}

/// Builds every pane; returns the cases and the removed directory's path.
fn build(server: &PrivateServer, tmp: &TempDir) -> Vec<Case> {
    server
        .run_ok(["set-option", "-g", "remain-on-exit", "on"])
        .unwrap();
    let spaced = tmp.0.join("a dir/with  spaces");
    let removed = tmp.0.join("gone soon");
    std::fs::create_dir_all(&spaced).unwrap();
    std::fs::create_dir_all(&removed).unwrap();
    let spaced_s = spaced.to_str().unwrap().to_owned();
    let removed_s = removed.to_str().unwrap().to_owned();

    window(server, "idle", &spaced, BASH);
    typed(server, "idle", "echo MARKP-idle");
    window(server, "fg", &spaced, BASH);
    typed(server, "fg", "echo MARKP-fg; sleep 100000");
    window(
        server,
        "removed",
        &removed,
        "echo MARKP-removed; exec sleep 100000",
    );
    window(
        server,
        "absolute",
        &tmp.0,
        "echo MARKP-absolute; exec /bin/sleep 100000",
    );
    window(
        server,
        "trimmed",
        &tmp.0,
        r#"exec bash -c 'echo MARKP-trimmed; exec -a "\"exec  --odd name" /bin/sleep 100000'"#,
    );
    window(
        server,
        "execstyle",
        &tmp.0,
        "exec sh -c 'echo MARKP-execstyle; exec sleep 100000'",
    );
    window(server, "leaderless", &tmp.0, BASH);
    typed(
        server,
        "leaderless",
        "echo MARKT-leaderless; true | sleep 100000",
    );
    window(
        server,
        "nameless",
        &tmp.0,
        r#"exec bash -c 'echo MARKT-nameless; exec -a "" /bin/sleep 100000'"#,
    );
    // It lives a moment after printing: tmux may drop what a process
    // printed just before it exited.
    window(server, "dead", &tmp.0, "echo MARKT-dead; sleep 0.3");

    let at = |p: &str| Some(p.to_owned());
    let case = |name, from_proc, command: &str, path| Case {
        name,
        from_proc,
        command: command.to_owned(),
        path,
    };
    let tmp_s = tmp.0.to_str().unwrap().to_owned();
    vec![
        case("idle", true, "bash", at(&spaced_s)),
        case("fg", true, "sleep", at(&spaced_s)),
        case(
            "removed",
            true,
            "sleep",
            Some(format!("{removed_s} (deleted)")),
        ),
        case("absolute", true, "sleep", at(&tmp_s)),
        case("trimmed", true, "odd", at(&tmp_s)),
        case("execstyle", true, "sleep", at(&tmp_s)),
        // The group leader (`true`) is gone: tmux prints the pane's argv.
        case("leaderless", false, "env", None),
        // argv[0] is empty: tmux prints the pane's argv (`exec ` trimmed).
        case("nameless", false, "bash", at(&tmp_s)),
        // Dead: no process; tmux prints its argv and no path.
        case("dead", false, "echo", at("")),
    ]
}

/// What tmux prints for a window's pane: id, pid, command, path. A dead
/// pane has no pid on tmux 3.7 and later (format.c `format_cb_pane_pid`
/// asks for a live pane); tmux 3.3a still prints the one it had.
fn tmux_says(server: &PrivateServer, name: &str) -> (PaneId, Option<u32>, String, String) {
    let out = server
        .run_ok([
            "display-message",
            "-p",
            "-t",
            &format!("main:{name}"),
            "#{pane_id}\t#{pane_pid}\t#{pane_current_command}\t#{pane_current_path}",
        ])
        .unwrap();
    let f: Vec<&str> = out.trim_end_matches('\n').split('\t').collect();
    assert_eq!(f.len(), 4, "{out:?}");
    (
        PaneId::parse(f[0]).unwrap(),
        (!f[1].is_empty()).then(|| f[1].parse().unwrap()),
        f[2].to_owned(),
        f[3].to_owned(),
    )
}

/// Waits until tmux shows every case as expected (a pane takes a moment to
/// exec its final command); then what tmux says of each.
fn settled_any(
    server: &PrivateServer,
    cases: &[Case],
) -> Vec<(PaneId, Option<u32>, String, String)> {
    let mut last = Vec::new();
    let ok = eventually(Duration::from_secs(15), || {
        last = cases.iter().map(|c| tmux_says(server, c.name)).collect();
        cases.iter().zip(&last).all(|(c, (_, _, command, path))| {
            *command == c.command && c.path.as_ref().is_none_or(|p| p == path)
        })
    });
    let shown: Vec<_> = last.iter().map(|(_, _, c, p)| (c, p)).collect();
    assert!(ok, "tmux never showed the expected panes: {shown:?}");
    last
}

/// [`settled_any`] for live panes, which have pids.
fn settled(server: &PrivateServer, cases: &[Case]) -> Vec<(PaneId, u32, String, String)> {
    settled_any(server, cases)
        .into_iter()
        .map(|(id, pid, command, path)| (id, pid.expect("a live pane has a pid"), command, path))
        .collect()
}

fn server_process(server: &PrivateServer) -> ServerProcess {
    let out = server
        .run_ok(["display-message", "-p", "#{pid} #{start_time}"])
        .unwrap();
    let (pid, start) = procfs::parse_identity(&out).unwrap();
    ServerProcess::verify(pid, start).expect("the private server is verified in /proc")
}

#[test]
fn proc_answers_are_tmux_answers_and_only_the_uncertain_panes_ask_tmux() {
    let server = PrivateServer::start("procfs-details", 120, 30).unwrap();
    let tmp = TempDir::new();
    let cases = build(&server, &tmp);
    let removed = tmp.0.join("gone soon");
    std::fs::remove_dir(&removed).unwrap();
    let said = settled_any(&server, &cases);
    let known = server_process(&server);
    assert_eq!(known.pid(), server.pid().unwrap());

    // procfs::details answers for the certain panes, with tmux's answer,
    // and for no other.
    for (case, (id, pid, command, path)) in cases.iter().zip(&said) {
        let Some(pid) = pid else {
            // No pid (a dead pane on tmux 3.7 and later): nothing to read.
            assert!(!case.from_proc, "{}: no pid from tmux", case.name);
            continue;
        };
        let read = procfs::details(*pid, *id, &known);
        if case.from_proc {
            assert_eq!(
                read,
                Some((command.clone(), path.clone())),
                "{}: /proc against tmux",
                case.name
            );
        } else {
            assert_eq!(read, None, "{}: must be left to tmux", case.name);
        }
        // The right process and the right pane only: another pane's id, or
        // a pid that is not the pane's, is never answered for.
        let other = PaneId::from_number(id.number() + 1_000);
        assert_eq!(procfs::details(*pid, other, &known), None, "{}", case.name);
        assert_eq!(procfs::details(std::process::id(), *id, &known), None);
    }

    // Through a connection: every pane answered, as tmux answers; the
    // /proc panes cost tmux no command (once the server's pid is known),
    // the others are asked.
    let tmux = common::connect(&server);
    let mut counter = Counter::attach(&server);
    let pairs: Vec<(PaneId, Option<u32>)> = said.iter().map(|s| (s.0, s.1)).collect();
    let all = tmux.commands_and_paths(&pairs, soon());
    for ((case, s), got) in cases.iter().zip(&said).zip(&all) {
        assert_eq!(got, &Some((s.2.clone(), s.3.clone())), "{}", case.name);
    }
    let (proc_pairs, tmux_pairs): (Vec<_>, Vec<_>) =
        cases.iter().zip(&pairs).partition(|(c, _)| c.from_proc);
    let proc_pairs: Vec<_> = proc_pairs.into_iter().map(|(_, p)| *p).collect();
    let tmux_pairs: Vec<_> = tmux_pairs.into_iter().map(|(_, p)| *p).collect();
    let before = quiet(&mut counter);
    let again = tmux.commands_and_paths(&proc_pairs, soon());
    let used = counter.now() - before - 1;
    assert!(again.iter().all(Option::is_some), "{again:?}");
    assert_eq!(used, 0, "the /proc panes asked tmux {used} commands");
    let before = quiet(&mut counter);
    let asked = tmux.commands_and_paths(&tmux_pairs, soon());
    let used = counter.now() - before - 1;
    assert!(asked.iter().all(Option::is_some), "{asked:?}");
    assert!(used > 0, "the uncertain panes were not asked of tmux");
    // Without a pid, tmux is asked too.
    let before = quiet(&mut counter);
    let no_pid = tmux.commands_and_paths(&[(pairs[0].0, None)], soon());
    assert!(counter.now() - before - 1 > 0);
    assert_eq!(no_pid[0], all[0]);
    tmux.shutdown();
}

/// A process found once to be its pane's stays its pane's through exec
/// (same pid, same start), even once its environment no longer says so:
/// `procfs::details`, which remembers nothing, leaves it to tmux, but a
/// connection that read it before still reads it from /proc.
#[test]
fn a_pane_process_found_once_is_known_through_exec() {
    let server = PrivateServer::start("procfs-exec", 80, 24).unwrap();
    let tmp = TempDir::new();
    window(&server, "reexec", &tmp.0, BASH);
    let mut case = Case {
        name: "reexec",
        from_proc: true,
        command: "bash".into(),
        path: tmp.0.to_str().map(str::to_owned),
    };
    let (id, pid, command, path) = settled(&server, std::slice::from_ref(&case)).remove(0);
    let tmux = common::connect(&server);
    let pair = [(id, Some(pid))];
    assert_eq!(
        tmux.commands_and_paths(&pair, soon()),
        [Some((command, path.clone()))]
    );

    typed(&server, "reexec", "exec env -i /bin/sleep 100000");
    case.command = "sleep".into();
    let (_, same_pid, command, _) = settled(&server, std::slice::from_ref(&case)).remove(0);
    assert_eq!(same_pid, pid);
    let known = server_process(&server);
    assert_eq!(procfs::details(pid, id, &known), None);
    let mut counter = Counter::attach(&server);
    let before = quiet(&mut counter);
    assert_eq!(
        tmux.commands_and_paths(&pair, soon()),
        [Some((command, path))]
    );
    assert_eq!(counter.now() - before - 1, 0, "tmux was asked");
    tmux.shutdown();
}

/// A new server on the same socket (the old one killed): the pid panescan
/// knew is not the new panes' parent, so it asks tmux again, once, and
/// reads /proc for the new server's panes from then on.
#[test]
fn a_new_server_on_the_same_socket_is_asked_for_again() {
    let server = PrivateServer::start("procfs-restart", 80, 24).unwrap();
    let tmp = TempDir::new();
    window(&server, "one", &tmp.0, "exec sleep 100000");
    let first = Case {
        name: "one",
        from_proc: true,
        command: "sleep".into(),
        path: tmp.0.to_str().map(str::to_owned),
    };
    let (id, pid, command, path) = settled(&server, std::slice::from_ref(&first)).remove(0);
    let tmux = common::connect(&server);
    let got = tmux.commands_and_paths(&[(id, Some(pid))], soon());
    assert_eq!(got, [Some((command, path))]);

    let old_pid = server.pid().unwrap();
    server.kill();
    let deeper = tmp.0.join("second");
    std::fs::create_dir_all(&deeper).unwrap();
    server
        .run_ok([
            "new-session",
            "-d",
            "-s",
            "main",
            "-c",
            deeper.to_str().unwrap(),
            "exec sleep 100000",
        ])
        .unwrap();
    assert_ne!(server.pid().unwrap(), old_pid);
    let second = Case {
        name: "0",
        from_proc: true,
        command: "sleep".into(),
        path: deeper.to_str().map(str::to_owned),
    };
    let (id, pid, command, path) = settled(&server, std::slice::from_ref(&second)).remove(0);
    let want = Some((command, path));
    assert_eq!(
        tmux.commands_and_paths(&[(id, Some(pid))], soon()),
        std::slice::from_ref(&want)
    );
    let mut counter = Counter::attach(&server);
    let before = quiet(&mut counter);
    assert_eq!(tmux.commands_and_paths(&[(id, Some(pid))], soon()), [want]);
    assert_eq!(
        counter.now() - before - 1,
        0,
        "the new server's pane was not read from /proc"
    );
    tmux.shutdown();
}

/// A socket that leads to another server while the one panescan knew
/// still runs (here a link moved from one server's socket to another's,
/// with no control client kept): the new panes are not the known
/// server's children, so it asks tmux again, and reads /proc from then on.
#[test]
fn a_socket_taken_over_by_another_server_is_asked_for_again() {
    let first = PrivateServer::start("procfs-first", 80, 24).unwrap();
    let second = PrivateServer::start("procfs-second", 80, 24).unwrap();
    let tmp = TempDir::new();
    let link = tmp.0.join("socket");
    std::os::unix::fs::symlink(first.socket_path().unwrap(), &link).unwrap();
    let tmux = Tmux::connect(&ServerSpec {
        socket_path: Some(link.clone()),
        ..ServerSpec::default()
    })
    .unwrap();
    tmux.set_oneshot_only(true);
    let pane_of = |server: &PrivateServer| {
        window(server, "w", &tmp.0, "exec sleep 100000");
        let case = Case {
            name: "w",
            from_proc: true,
            command: "sleep".into(),
            path: tmp.0.to_str().map(str::to_owned),
        };
        settled(server, std::slice::from_ref(&case)).remove(0)
    };
    let (id, pid, command, path) = pane_of(&first);
    assert_eq!(
        tmux.commands_and_paths(&[(id, Some(pid))], soon()),
        [Some((command, path))]
    );

    let (id, pid, command, path) = pane_of(&second);
    std::fs::remove_file(&link).unwrap();
    std::os::unix::fs::symlink(second.socket_path().unwrap(), &link).unwrap();
    let want = Some((command, path));
    let mut counter = Counter::attach(&second);
    let before = quiet(&mut counter);
    assert_eq!(
        tmux.commands_and_paths(&[(id, Some(pid))], soon()),
        std::slice::from_ref(&want)
    );
    // The server's pid and start, asked again (a one-shot client: its
    // `source-file` and the command).
    assert!(counter.now() - before - 1 > 0);
    let before = quiet(&mut counter);
    assert_eq!(tmux.commands_and_paths(&[(id, Some(pid))], soon()), [want]);
    assert_eq!(
        counter.now() - before - 1,
        0,
        "the new server's pane was not read from /proc"
    );
}

/// The counter's reading once tmux has run nothing for a while: a client
/// that has just attached or reconnected may still be settling, and its
/// commands would be counted as the next call's.
fn quiet(counter: &mut Counter) -> u64 {
    let mut last = counter.now();
    for _ in 0..50 {
        std::thread::sleep(Duration::from_millis(100));
        let now = counter.now();
        // Only the probe itself ran in between.
        if now == last + 1 {
            return now;
        }
        last = now;
    }
    panic!("tmux never stopped running commands");
}

/// Commands tmux ran (for every client) during `f`, a call to the
/// `panescan serve` whose pid is `serve`, once tmux has gone quiet
/// ([`Counter::during`]).
fn commands_during<T>(counter: &mut Counter, serve: u32, f: impl FnOnce() -> T) -> (u64, T) {
    quiet(counter);
    counter.during(serve, f)
}

fn next_second() {
    let now = || {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_secs()
    };
    let start = now();
    assert!(eventually(Duration::from_secs(5), || now() > start));
}

/// The listing and the server's stamp, in one round trip on panescan's
/// control client, each followed by a nonce (tests/tmux/warm_commands.rs).
const LISTING: u64 = 4;

#[test]
fn a_search_reads_what_its_panes_run_from_proc() {
    let server = PrivateServer::start("procfs-search", 120, 30).unwrap();
    let tmp = TempDir::new();
    let cases = build(&server, &tmp);
    std::fs::remove_dir(tmp.0.join("gone soon")).unwrap();
    let said = settled_any(&server, &cases);
    let mut s = Serve::spawn(server.socket_name());
    s.initialize();
    let mut counter = Counter::attach(&server);
    let search = |s: &mut Serve, pattern: &str, panes: Option<&[String]>| {
        let mut args = json!({"pattern": pattern, "scrollback_lines": 1000});
        if let Some(ids) = panes {
            args["pane_ids"] = json!(ids);
        }
        s.call_ok("search_panes", args)
    };
    // The panes read from /proc (else the others), the dead one included
    // or not: each with what tmux says it runs.
    let check = |result: &serde_json::Value, from_proc: bool, dead: bool| {
        let matches = result["matches"].as_array().unwrap();
        let expected: Vec<_> = cases
            .iter()
            .zip(&said)
            .filter(|(c, _)| c.from_proc == from_proc && (dead || c.name != "dead"))
            .collect();
        assert_eq!(matches.len(), expected.len(), "{result}");
        for (case, (id, _, command, path)) in expected {
            let m = matches
                .iter()
                .find(|m| m["pane_id"] == id.to_string())
                .unwrap_or_else(|| panic!("{} not matched: {result}", case.name));
            assert_eq!(m["pane_current_command"], command.as_str(), "{}", case.name);
            assert_eq!(m["pane_current_path"], path.as_str(), "{}", case.name);
            assert!(m.get("pane_pid").is_none(), "{m}");
        }
    };
    next_second();
    // Cold: captures, and the server's pid asked once.
    check(&search(&mut s, "MARKP-", None), true, true);
    check(&search(&mut s, "MARKT-", None), false, true);
    next_second();
    // Warm (the pane cache reuses every capture; a dead pane is captured
    // again by every search, so it is left out here): the /proc panes'
    // search costs tmux the listing alone, the other's asks what it runs.
    let live: Vec<String> = cases
        .iter()
        .zip(&said)
        .filter(|(c, _)| c.name != "dead")
        .map(|(_, s)| s.0.to_string())
        .collect();
    let serve = s.pid();
    let (commands, found) = commands_during(&mut counter, serve, || {
        search(&mut s, "MARKP-", Some(&live))
    });
    check(&found, true, false);
    assert_eq!(commands, LISTING, "{found}");
    let (commands, found) = commands_during(&mut counter, serve, || {
        search(&mut s, "MARKT-", Some(&live))
    });
    check(&found, false, false);
    assert!(commands > LISTING, "{commands}: {found}");
}
