//! run_command and wait_for_command end to end through `panescan serve
//! --tier mutating` on private tmux servers: exit statuses, output exact
//! for no line, one line, a line wider than the pane, 10,000 lines,
//! marker-like and OSC 133-like text and `clear`; a bash that prints OSC
//! 133 marks and shells that do not; refusals of panes not at a prompt; a
//! timeout, an interrupt, then wait_for_command.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::time::Duration;

use common::{eventually, window_showing, Serve, TempDir};
use panescan::testing::private_server::PrivateServer;
use serde_json::{json, Value};

/// A bash without rc files, prompt `$ `.
const BASH: &str = "env PS1='$ ' bash --norc --noprofile";

fn serve(label: &str) -> (PrivateServer, Serve) {
    serve_with(label, &[])
}

fn serve_with(label: &str, more: &[&str]) -> (PrivateServer, Serve) {
    let tmux = PrivateServer::start(label, 80, 24).unwrap();
    let mut args = vec![
        "serve",
        "--socket-name",
        tmux.socket_name(),
        "--tier",
        "mutating",
    ];
    args.extend_from_slice(more);
    let mut s = Serve::spawn_with(&args, &[]);
    s.initialize();
    (tmux, s)
}

/// A new window running `shell`, once its prompt shows.
fn shell_pane(tmux: &PrivateServer, shell: &str) -> String {
    window_showing(tmux, None, shell, "$", &[])
}

fn run(s: &mut Serve, pane: &str, command: &str) -> Value {
    s.call_ok("run_command", json!({"pane_id": pane, "command": command}))
}

fn run_with(s: &mut Serve, pane: &str, command: &str, extra: Value) -> Value {
    let mut args = json!({"pane_id": pane, "command": command});
    for (k, v) in extra.as_object().unwrap() {
        args[k] = v.clone();
    }
    s.call_ok("run_command", args)
}

fn screen(tmux: &PrivateServer, pane: &str) -> String {
    tmux.run_ok(["capture-pane", "-p", "-J", "-t", pane])
        .unwrap()
}

#[test]
fn exit_status_and_output_are_exact() {
    let (tmux, mut s) = serve("run-exact");
    let pane = shell_pane(&tmux, BASH);

    let r = run(&mut s, &pane, "true");
    assert_eq!(
        (&r["exit_status"], &r["output"], &r["lines"]),
        (&json!(0), &json!(""), &json!(0)),
        "{r}"
    );
    assert_eq!(
        (&r["timed_out"], &r["output_truncated"]),
        (&json!(false), &json!(false))
    );
    assert!(r["command_id"].as_str().unwrap().starts_with("cmd-"));

    let r = run(&mut s, &pane, "false");
    assert_eq!(
        (&r["exit_status"], &r["output"]),
        (&json!(1), &json!("")),
        "{r}"
    );
    let r = run(&mut s, &pane, "(exit 7)");
    assert_eq!(r["exit_status"], 7, "{r}");

    let r = run(&mut s, &pane, "echo hello");
    assert_eq!(
        (&r["output"], &r["lines"]),
        (&json!("hello\n"), &json!(1)),
        "{r}"
    );
    let r = run(&mut s, &pane, "printf 'a\\n\\nb'");
    assert_eq!(r["output"], "a\n\nb\n", "{r}");

    // Wider than the pane (80 columns): one line, joined.
    let r = run(&mut s, &pane, "printf '%0250d\\n' 0");
    assert_eq!(r["output"], format!("{}\n", "0".repeat(250)), "{r}");

    // Text that looks like a marker or an OSC 133 mark is output, and does
    // not end the command early.
    let r = run(
        &mut s,
        &pane,
        "echo __ps00000000000000000000:0; printf '\\e]133;D;9\\a'; sleep 0.3; echo __ps:5; exit_was=3; (exit $exit_was)",
    );
    assert_eq!(r["exit_status"], 3, "{r}");
    assert_eq!(r["output"], "__ps00000000000000000000:0\n__ps:5\n", "{r}");
    tmux.kill();
}

#[test]
fn long_output_is_bounded_and_flagged_and_clear_is_survived() {
    let (tmux, mut s) = serve("run-long");
    let pane = shell_pane(&tmux, BASH);

    let r = run(&mut s, &pane, "seq 10000");
    assert_eq!(
        (&r["exit_status"], &r["lines"]),
        (&json!(0), &json!(200)),
        "{r}"
    );
    assert_eq!(r["output_truncated"], true);
    let want: String = (9801..=10000).map(|n| format!("{n}\n")).collect();
    assert_eq!(r["output"], want);

    // More than the history holds (2,000 rows): what is left, flagged.
    let r = run_with(&mut s, &pane, "seq 10000", json!({"max_lines": 10000}));
    let out = r["output"].as_str().unwrap();
    assert!(out.ends_with("9999\n10000\n"), "{r}");
    assert!(!out.contains('$'), "a prompt in the output");
    assert_eq!(r["output_truncated"], true);
    let r = run_with(&mut s, &pane, "seq 10000", json!({"max_bytes": 12}));
    assert_eq!(
        (&r["output"], &r["output_truncated"]),
        (&json!("9999\n10000\n"), &json!(true))
    );

    // A flood overruns the event channel: the marker is still found.
    let r = run(&mut s, &pane, "yes flood | head -n 100000");
    assert_eq!(
        (&r["exit_status"], &r["lines"]),
        (&json!(0), &json!(200)),
        "{r}"
    );
    assert_eq!(r["output"], "flood\n".repeat(200));

    let r = run(&mut s, &pane, "echo before; clear; echo after");
    assert_eq!(r["exit_status"], 0, "{r}");
    let out = r["output"].as_str().unwrap();
    assert!(out.ends_with("after\n"), "{r}");
    assert!(!out.contains("printf") && !out.contains("$ "), "{r}");
    tmux.kill();
}

/// A FIFO a test opens read-write, so neither side blocks opening it:
/// each line written to it releases one `read` of it in a pane.
struct Gate {
    _dir: TempDir,
    path: std::path::PathBuf,
    fifo: std::fs::File,
}

impl Gate {
    fn new(label: &str) -> Gate {
        let dir = TempDir::new(label);
        let path = dir.0.join("gate");
        let made = std::process::Command::new("mkfifo").arg(&path).status();
        assert!(made.is_ok_and(|s| s.success()), "mkfifo {}", path.display());
        let fifo = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&path)
            .unwrap();
        Gate {
            _dir: dir,
            path,
            fifo,
        }
    }

    /// Lets one waiting `read` of the gate go on.
    fn open_once(&mut self) {
        use std::io::Write;
        self.fifo.write_all(b"\n").unwrap();
    }
}

/// bash prints its OSC 133 D mark from `PROMPT_COMMAND`, before its line
/// editor reads: a call right after a command's end could type into the
/// terminal's own echo, then readline echoed the line again (seen once
/// under load: the output began with the echoed command). Here the prompt
/// command waits after the mark until the test opens a gate (a FIFO read
/// by the builtin `read`: a `sleep` would be the pane's current command,
/// not bash), so the gap is an event, not a length of time: a call made
/// while the gate is shut is refused and types nothing, however long it
/// waits; one answered after the gate opens is exact.
#[test]
fn a_command_typed_right_after_a_mark_waits_for_the_line_editor() {
    let (tmux, mut s) = serve("run-gap");
    let mut gate = Gate::new("run-gap");
    let bash = format!(
        "env PS1='$ ' PROMPT_COMMAND='printf \"\\033]133;D;%s\\007\" $?; read -u 9' \
         bash --norc --noprofile 9<>{}",
        gate.path.display()
    );
    // The first prompt.
    gate.open_once();
    let pane = shell_pane(&tmux, &bash);
    let r = run(&mut s, &pane, "false");
    assert_eq!(r["exit_status"], 1, "{r}");
    // The mark is printed and the gate shut: the shell does not read a
    // command line, and nothing is typed while it does not.
    let e = s.call_err(
        "run_command",
        json!({"pane_id": pane, "command": "echo typed-at-the-gate", "timeout_ms": 5000}),
    );
    assert!(e.contains("is not reading a command line"), "{e}");
    // Once the marks are learned, a call typed after the last one's mark
    // waits until the line editor reads (the gate opened while it waits).
    for k in 0..4 {
        let id = s.fresh_id();
        let args = json!({"pane_id": pane, "command": format!("echo one {k}; echo two")});
        s.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                       "params": {"name": "run_command", "arguments": args}}));
        gate.open_once();
        let r = s.response(&id, Duration::from_secs(60));
        let r = &r["result"];
        assert_eq!(r["isError"], false, "{r}");
        let r = &r["structuredContent"];
        assert_eq!(r["exit_status"], 0, "{r}");
        assert_eq!(r["output"], format!("one {k}\ntwo\n"), "{r}");
    }
    gate.open_once();
    let drawn = eventually(Duration::from_secs(10), || {
        screen(&tmux, &pane).trim_end().ends_with('$')
    });
    let shown = screen(&tmux, &pane);
    assert!(drawn, "no prompt after the gate opened:\n{shown}");
    assert!(
        !shown.contains("typed-at-the-gate"),
        "typed at the gate:\n{shown}"
    );
    assert!(
        !shown
            .lines()
            .any(|l| l.trim_end().starts_with("eval 'echo one")),
        "typed into the terminal's own echo:\n{shown}"
    );
    tmux.kill();
}

#[test]
fn a_bash_printing_osc_133_marks_is_ended_by_them() {
    let (tmux, mut s) = serve("run-osc");
    let bash =
        "env PS1='$ ' PROMPT_COMMAND='printf \"\\033]133;D;%s\\007\" $?' bash --norc --noprofile";
    let pane = shell_pane(&tmux, bash);
    // The first command carries a marker and learns the marks...
    let r = run(&mut s, &pane, "false");
    assert_eq!(r["exit_status"], 1, "{r}");
    // ...the next ones are typed without it.
    let learned = eventually(Duration::from_secs(10), || {
        let r = run(&mut s, &pane, "(exit 4)");
        assert_eq!(
            (&r["exit_status"], &r["output"]),
            (&json!(4), &json!("")),
            "{r}"
        );
        screen(&tmux, &pane)
            .lines()
            .any(|l| l.trim_end() == "$ eval '(exit 4)'")
    });
    assert!(learned, "never typed bare:\n{}", screen(&tmux, &pane));
    let r = run(&mut s, &pane, "echo one; echo two");
    assert_eq!(
        (&r["exit_status"], &r["output"]),
        (&json!(0), &json!("one\ntwo\n")),
        "{r}"
    );
    assert!(screen(&tmux, &pane).contains("$ eval 'echo one; echo two'\n"));
    tmux.kill();
}

#[test]
fn shells_without_marks_sh_too() {
    let (tmux, mut s) = serve("run-sh");
    let pane = shell_pane(&tmux, "env PS1='$ ' sh");
    let r = run(&mut s, &pane, "echo in sh; false");
    assert_eq!(
        (&r["exit_status"], &r["output"]),
        (&json!(1), &json!("in sh\n")),
        "{r}"
    );
    tmux.kill();
}

#[test]
fn without_the_event_stream_the_marker_is_found_on_the_screen() {
    let (tmux, mut s) = serve_with("run-poll", &["--no-events"]);
    let pane = shell_pane(&tmux, BASH);
    let r = run(&mut s, &pane, "echo polled; false");
    assert_eq!(
        (&r["exit_status"], &r["output"]),
        (&json!(1), &json!("polled\n")),
        "{r}"
    );
    let r = run_with(&mut s, &pane, "sleep 100", json!({"timeout_ms": 200}));
    let id = r["command_id"].as_str().unwrap().to_owned();
    s.call_ok("send_keys", json!({"pane_id": pane, "keys": ["C-c"]}));
    let w = s.call_ok(
        "wait_for_command",
        json!({"command_id": id, "timeout_ms": 10000}),
    );
    assert_eq!(w["exit_status"], 130, "{w}");
    tmux.kill();
}

#[test]
fn panes_not_at_a_prompt_are_refused_saying_why() {
    let (tmux, mut s) = serve("run-refuse");
    tmux.run_ok(["set-option", "-g", "remain-on-exit", "on"])
        .unwrap();
    let dead = tmux
        .run_ok(["new-window", "-d", "-P", "-F", "#{pane_id}", "true"])
        .unwrap()
        .trim()
        .to_owned();
    assert!(eventually(Duration::from_secs(10), || {
        tmux.run_ok(["display-message", "-p", "-t", &dead, "#{pane_dead}"])
            .is_ok_and(|t| t.trim() == "1")
    }));
    let e = s.call_err("run_command", json!({"pane_id": dead, "command": "true"}));
    assert!(e.contains("is dead"), "{e}");
    tmux.run_ok(["set-option", "-g", "remain-on-exit", "off"])
        .unwrap();
    let alt = window_showing(
        &tmux,
        None,
        "printf 'FULL\\e[?1049hSCREEN'; sleep 100",
        "SCREEN",
        &[],
    );
    let e = s.call_err("run_command", json!({"pane_id": alt, "command": "true"}));
    assert!(e.contains("alternate screen"), "{e}");

    let busy = window_showing(&tmux, None, "echo BUSY; sleep 100", "BUSY", &[]);
    let e = s.call_err("run_command", json!({"pane_id": busy, "command": "true"}));
    assert!(
        e.contains("\"sleep\"") && e.contains("not sitting at a shell prompt"),
        "{e}"
    );

    let shell = shell_pane(&tmux, BASH);
    tmux.run_ok(["copy-mode", "-t", &shell]).unwrap();
    let e = s.call_err("run_command", json!({"pane_id": shell, "command": "true"}));
    assert!(e.contains("copy-mode"), "{e}");
    tmux.run_ok(["send-keys", "-t", &shell, "-X", "cancel"])
        .unwrap();

    let e = s.call_err(
        "run_command",
        json!({"pane_id": shell, "command": "echo a\necho b"}),
    );
    assert!(e.contains("allow_multiline"), "{e}");
    let e = s.call_err("run_command", json!({"pane_id": "%999", "command": "true"}));
    assert!(e.contains("no pane %999"), "{e}");
    let e = s.call_err("wait_for_command", json!({"command_id": "cmd-0000"}));
    assert!(e.contains("no command"), "{e}");
    // Nothing was typed into the refused shell.
    assert!(
        !screen(&tmux, &shell).contains("echo"),
        "{}",
        screen(&tmux, &shell)
    );
    tmux.kill();
}

#[test]
fn a_timeout_then_wait_for_command_and_an_interrupt() {
    let (tmux, mut s) = serve("run-wait");
    let pane = shell_pane(&tmux, BASH);

    // The command waits at a gate (a FIFO the test opens read-write, read
    // by the builtin `read`) until the test opens it: it times out however
    // slow the machine, and its output so far is `started` once printed.
    let mut gate = Gate::new("run-wait");
    let r = run_with(
        &mut s,
        &pane,
        &format!(
            "echo started; read -r _ < {}; echo done",
            gate.path.display()
        ),
        json!({"timeout_ms": 200}),
    );
    let so_far = |r: &Value| {
        assert_eq!(
            (&r["timed_out"], &r["exit_status"]),
            (&json!(true), &Value::Null),
            "{r}"
        );
        let out = r["output"].as_str().unwrap();
        assert!("started\n".starts_with(out), "{r}");
        out == "started\n"
    };
    let mut started = so_far(&r);
    let id = r["command_id"].as_str().unwrap().to_owned();
    let waited = eventually(Duration::from_secs(20), || {
        started = started
            || so_far(&s.call_ok(
                "wait_for_command",
                json!({"command_id": id, "timeout_ms": 100}),
            ));
        started
    });
    assert!(waited, "`started` never showed in the output so far");
    gate.open_once();
    let w = s.call_ok(
        "wait_for_command",
        json!({"command_id": id, "timeout_ms": 10000}),
    );
    assert_eq!(
        (&w["timed_out"], &w["exit_status"]),
        (&json!(false), &json!(0)),
        "{w}"
    );
    assert_eq!(w["output"], "started\ndone\n", "{w}");
    assert_eq!(w["command_id"], id.as_str());

    let r = run_with(
        &mut s,
        &pane,
        "echo waiting; sleep 100",
        json!({"timeout_ms": 200}),
    );
    assert_eq!(r["timed_out"], true, "{r}");
    let id = r["command_id"].as_str().unwrap().to_owned();
    // The pane still runs it: a second command is refused.
    let e = s.call_err("run_command", json!({"pane_id": pane, "command": "true"}));
    // Refused by what the pane runs (`sleep`, once bash started it) or by
    // the command panescan typed there: each names the pane and its reason.
    let by_program = format!("pane {pane} is running \"sleep\", not sitting at a shell prompt");
    let by_command = format!("pane {pane} still runs command {id} that run_command typed");
    assert!(e.contains(&by_program) || e.contains(&by_command), "{e}");
    let w = s.call_ok(
        "wait_for_command",
        json!({"command_id": id, "timeout_ms": 100}),
    );
    assert_eq!(w["timed_out"], true, "{w}");
    s.call_ok("send_keys", json!({"pane_id": pane, "keys": ["C-c"]}));
    let w = s.call_ok(
        "wait_for_command",
        json!({"command_id": id, "timeout_ms": 10000}),
    );
    assert_eq!(
        (&w["timed_out"], &w["exit_status"]),
        (&json!(false), &json!(130)),
        "{w}"
    );
    let out = w["output"].as_str().unwrap();
    assert!(
        out.starts_with("waiting\n") && !out.contains("printf"),
        "{w}\n{}",
        screen(&tmux, &pane)
    );
    // The pane is usable again.
    let r = run(&mut s, &pane, "echo again");
    assert_eq!(r["output"], "again\n", "{r}");

    // A nested shell at its prompt is the command still running: it ends
    // when that shell exits.
    let r = run_with(
        &mut s,
        &pane,
        "PS1='> ' bash --norc --noprofile",
        json!({"timeout_ms": 1500}),
    );
    assert_eq!(r["timed_out"], true, "{r}");
    let id = r["command_id"].as_str().unwrap().to_owned();
    s.call_ok(
        "send_keys",
        json!({"pane_id": pane, "text": "exit 5", "enter": true}),
    );
    let w = s.call_ok(
        "wait_for_command",
        json!({"command_id": id, "timeout_ms": 10000}),
    );
    assert_eq!(
        (&w["timed_out"], &w["exit_status"]),
        (&json!(false), &json!(5)),
        "{w}"
    );
    tmux.kill();
}

#[test]
fn a_secret_the_command_prints_comes_back_redacted_unless_the_operator_said_no() {
    // Printed from pieces, so the typed line (echoed above the output)
    // does not hold the key either.
    let command = "printf 'key %s%s used\\n' AKIAIOSFOD NN7EXAMPLE";
    let (tmux, mut s) = serve("run-redact");
    let pane = shell_pane(&tmux, BASH);
    let r = run(&mut s, &pane, command);
    assert_eq!(r["exit_status"], 0, "{r}");
    assert_eq!(r["output"], "key [REDACTED:AWS_ACCESS_KEY] used\n", "{r}");
    assert_eq!(r["redactions"], 1, "{r}");

    let (tmux, mut s) = serve_with("run-noredact", &["--no-redact"]);
    let pane = shell_pane(&tmux, BASH);
    let r = run(&mut s, &pane, command);
    assert_eq!(r["output"], "key AKIAIOSFODNN7EXAMPLE used\n", "{r}");
    assert_eq!(r["redactions"], 0, "{r}");
}
