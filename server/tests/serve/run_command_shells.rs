//! run_command in the shells people use, end to end through `panescan
//! serve --tier mutating` on private tmux servers: bash, zsh and fish,
//! each plain (no shell integration: the appended marker) and set up with
//! GUIDE.md's OSC 133 snippets, read from GUIDE.md itself (the zsh one
//! ends its marks with `ESC \`, the others with BEL). Expected output is
//! what the command really prints, run outside the pane by the same shell.
//!
//! The cases: exact output and status; unfinished last lines (and in zsh
//! and fish one the cursor moved back over); an unbalanced quote (the shell
//! reports it and the pane stays usable); several lines with
//! `allow_multiline` (a heredoc); an interrupt, then wait_for_command; a
//! command printing its own OSC 133 D mark (it never teaches the pane that
//! its shell prints marks); a script's `read` in a pane named "bash" (never
//! typed into); slow prompt hooks (waited for, never refused); a marker
//! drawn on the screen by the command (it never ends the command).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::path::Path;
use std::time::Duration;

use common::shells::{guide_snippet, shell_command, Sh};
use common::{eventually, session_showing, window_showing, Serve, TempDir};
use panescan::testing::private_server::PrivateServer;
use serde_json::{json, Value};

fn serve(label: &str, width: u16, more: &[&str]) -> (PrivateServer, Serve) {
    let tmux = PrivateServer::start(label, width, 24).unwrap();
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

/// A new window running `shell` with prompt `$ `, set up in `dir` with
/// `rc` (rc file text after the prompt is set), once its prompt shows.
fn shell_pane(tmux: &PrivateServer, dir: &Path, shell: Sh, rc: &str) -> String {
    window_showing(tmux, None, &shell_command(dir, shell, rc), "$", &[])
}

/// What `command` prints (stdout) when `shell` runs it outside any pane.
fn really_prints(shell: Sh, command: &str) -> String {
    let mut cmd = match shell {
        Sh::Bash => {
            let mut c = std::process::Command::new("bash");
            c.args(["--norc", "--noprofile", "-c"]);
            c
        }
        Sh::Zsh => {
            let mut c = std::process::Command::new("zsh");
            c.args(["-f", "-c"]);
            c
        }
        Sh::Fish => {
            let mut c = std::process::Command::new("fish");
            c.args(["-N", "-c"]);
            c
        }
    };
    let out = cmd.arg(command).output().unwrap();
    String::from_utf8(out.stdout).unwrap()
}

fn run(s: &mut Serve, pane: &str, command: &str, extra: Value) -> Value {
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

/// Whether any screen row is exactly `line` (trailing blanks aside).
fn shows_row(tmux: &PrivateServer, pane: &str, line: &str) -> bool {
    screen(tmux, pane).lines().any(|l| l.trim_end() == line)
}

/// Runs `echo waiting; sleep 100` (a call of 300 ms), interrupts it
/// (C-c) once it shows and waits for its end: the call's answer, then the
/// wait's.
fn run_and_interrupt(tmux: &PrivateServer, s: &mut Serve, pane: &str) -> (Value, Value) {
    let r = run(
        s,
        pane,
        "echo waiting; sleep 100",
        json!({"timeout_ms": 300}),
    );
    let id = r["command_id"].as_str().unwrap().to_owned();
    // Interrupted once it runs (on a loaded machine the shell may not have
    // read the line within the call's 300 ms).
    assert!(eventually(Duration::from_secs(10), || shows_row(
        tmux, pane, "waiting"
    )));
    s.call_ok("send_keys", json!({"pane_id": pane, "keys": ["C-c"]}));
    let w = s.call_ok(
        "wait_for_command",
        json!({"command_id": id, "timeout_ms": 15000}),
    );
    (r, w)
}

/// An interrupted command's end: status 130, its output from `waiting`
/// on, and no row of the next prompt (`top line`) in it.
fn interrupted_without_the_prompts_top(
    s: &mut Serve,
    tmux: &PrivateServer,
    pane: &str,
    case: &str,
) {
    let (_, w) = run_and_interrupt(tmux, s, pane);
    let out = w["output"].as_str().unwrap();
    assert_eq!(w["exit_status"], 130, "{case}: {w}");
    assert!(
        out.starts_with("waiting\n") && !out.contains("top line"),
        "{case}: {w}\n{}",
        screen(tmux, pane)
    );
}

/// What the echoed line holds between the command's closing quote and the
/// marker's second piece (less the first piece's 8 random digits).
const MARKER_HEAD: &str = "'; printf '\\n\\033[J%s%s:%s\\n' __ps";

/// How wide the echo of `command` is at the prompt `$ `, typed with the
/// marker (`plain`) or bare (OSC 133): ` eval 'COMMAND'; printf ...`, then
/// what puts the command back into bash's or zsh's history.
fn echo_width(shell: Sh, command: &str, plain: bool) -> usize {
    let bare = "$ eval ''".len() + command.len();
    if !plain {
        return bare;
    }
    let status = match shell {
        Sh::Fish => " $status".len(),
        _ => " \"$?\"".len(),
    };
    let history = match shell {
        Sh::Bash => "; history -s -- ''".len() + command.len(),
        Sh::Zsh => "; if [[ -o histignorespace ]]; then print -rs -- ''; fi".len() + command.len(),
        Sh::Fish => 0,
    };
    1 + bare - 1 + MARKER_HEAD.len() + 8 + 1 + 16 + status + history
}

/// Fails (never skips) when `shell` is not installed.
fn need(shell: Sh) {
    let name = format!("{shell:?}").to_lowercase();
    let found = std::process::Command::new(&name)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        found,
        "{name} is not installed: the shell matrix needs it (.ci/run installs it)"
    );
}

/// Every case, in `shell`, plain or with GUIDE.md's snippets.
fn matrix(shell: Sh, snippets: bool) {
    need(shell);
    let label = format!("shells-{shell:?}-{snippets}").to_lowercase();
    let (tmux, mut s) = serve(&label, 100, &[]);
    let dir = TempDir::new(&label);
    let rc = if snippets {
        guide_snippet(shell)
    } else {
        String::new()
    };
    let pane = shell_pane(&tmux, &dir.0, shell, &rc);
    if snippets {
        learns_the_marks(&tmux, &mut s, &pane);
    } else {
        own_marks_teach_nothing(shell, &mut s, &pane);
    }
    exact(shell, 100, &mut s, &pane);
    background_jobs_stay_apart(shell, &dir.0, &mut s, &pane);
    unfinished_last_lines(&mut s, &pane);
    if shell != Sh::Bash {
        unfollowed_last_line(&mut s, &pane);
    }
    typos_leave_the_pane_usable(&tmux, &mut s, &pane);
    several_lines(shell, &mut s, &pane);
    an_interrupt_ends_it(&tmux, &mut s, &pane);
    if snippets {
        // Still typed without the marker: the interrupt taught nothing wrong.
        run(&mut s, &pane, "true", json!({}));
        assert!(
            shows_row(&tmux, &pane, "$ eval 'true'"),
            "{}",
            screen(&tmux, &pane)
        );
    }
    tmux.kill();
}

/// With the snippets, the first marker run learns the D marks (after the
/// marker, in the pane's raw output) and later commands carry no marker.
fn learns_the_marks(tmux: &PrivateServer, s: &mut Serve, pane: &str) {
    let r = run(s, pane, "false", json!({}));
    assert_eq!(r["exit_status"], 1, "{r}");
    let learned = eventually(Duration::from_secs(10), || {
        let r = run(s, pane, "true", json!({}));
        assert_eq!((&r["exit_status"], &r["output"]), (&json!(0), &json!("")));
        shows_row(tmux, pane, "$ eval 'true'")
    });
    assert!(
        learned,
        "never typed without the marker:\n{}",
        screen(tmux, pane)
    );
}

/// A command printing its own D mark, in a shell that prints none: the
/// next commands still carry the marker and end (status 3, then 1,500
/// lines with status 0), never waiting out their timeout for a mark.
fn own_marks_teach_nothing(shell: Sh, s: &mut Serve, pane: &str) {
    let forged = "printf '\\033]133;D;0\\007\\033]133;A\\007'; sh -c 'exit 3'";
    let r = run(s, pane, forged, json!({}));
    assert_eq!(
        (&r["exit_status"], &r["output"]),
        (&json!(3), &json!("")),
        "{r}"
    );
    for _ in 0..2 {
        let r = run(
            s,
            pane,
            "seq 1 1500",
            json!({"max_lines": 3000, "timeout_ms": 10000}),
        );
        assert_eq!(
            (&r["timed_out"], &r["exit_status"], &r["lines"]),
            (&json!(false), &json!(0), &json!(1500)),
            "{}",
            common::head(&r.to_string(), 400)
        );
        assert_eq!(r["output"], really_prints(shell, "seq 1 1500"));
    }
}

/// A background job started by an earlier command ends while the next one
/// runs: the shell's notice of its end (`[1]+  Done ...`, printed between
/// the command's parts) is no output of the command and comes back in
/// `job_notices`; the job's own print cannot be told apart and stays, with
/// `background_jobs` saying a job ran alongside. No timing window: the job
/// waits on a FIFO the command opens, and the command waits until the
/// shell has reaped the job. The command ends on a program, not a builtin:
/// bash prints a reaped job's notice when it next waits for a foreground
/// child, so a job reaped during the loop's last `kill -0` would otherwise
/// be told of only at the next prompt, after the command's end.
fn background_jobs_stay_apart(shell: Sh, dir: &Path, s: &mut Serve, pane: &str) {
    let gate = dir.join("job-gate");
    let _ = std::fs::remove_file(&gate);
    let made = std::process::Command::new("mkfifo")
        .arg(&gate)
        .status()
        .unwrap();
    assert!(made.success());
    let g = gate.display();
    let r = run(
        s,
        pane,
        &format!("sh -c 'read x < {g}; echo late' &"),
        json!({}),
    );
    assert_eq!(r["exit_status"], 0, "{r}");
    assert!(r.get("background_jobs").is_none(), "{r}");
    let command = match shell {
        Sh::Fish => {
            format!(
                "echo go > {g}; while kill -0 $last_pid 2>/dev/null; sleep 0.05; end; env echo y"
            )
        }
        _ => {
            format!("echo go > {g}; while kill -0 $! 2>/dev/null; do sleep 0.05; done; env echo y")
        }
    };
    let r = run(s, pane, &command, json!({}));
    assert_eq!(
        (&r["exit_status"], &r["output"]),
        (&json!(0), &json!("late\ny\n")),
        "{r}"
    );
    assert_eq!(r["background_jobs"], 1, "{r}");
    let notices = r["job_notices"].as_array().cloned().unwrap_or_default();
    let said = match shell {
        // fish says so at its next prompt, after the command's end.
        Sh::Fish => notices.len() <= 1,
        Sh::Bash => notices.len() == 1 && notices[0].as_str().unwrap().contains("Done"),
        Sh::Zsh => notices.len() == 1 && notices[0].as_str().unwrap().contains("done"),
    };
    assert!(said, "{r}");
    // The job's end known, nothing more is taken out of later output.
    let r = run(s, pane, "echo '[1]+  Done  sleep 1'", json!({}));
    assert_eq!(r["output"], "[1]+  Done  sleep 1\n", "{r}");
    assert!(r.get("background_jobs").is_none(), "{r}");
}

fn exact(shell: Sh, width: usize, s: &mut Serve, pane: &str) {
    // Typed lines wider than the pane (100 columns), the marker's key
    // across the row's edge at one length or another.
    let long: Vec<String> = (140..150)
        .map(|n| format!("echo {}", "w".repeat(n)))
        .collect();
    let cases = [
        ("echo one; echo two; false", 1),
        ("seq 1 5; sh -c 'exit 3'", 3),
        ("printf 'a\\n\\nb\\n'", 0),
        ("echo 'it''s' \"q\"", 0),
    ];
    // Echoes that fill the row (`width` columns) exactly, with the marker
    // (plain) or bare (the snippets): the empty row zsh moves to after
    // such an echo is not output; in bash, tmux joins the next row to
    // such an echo (readline wrote into its last column), and that row is
    // output even when empty (a leading empty line, or no output at all).
    let heads = [
        "echo ",
        "echo  ",
        "printf \"\\nx\\n\" #",
        "printf \"\\nx\\n\"  #",
        "printf \"\\n\\n\" #",
        "printf \"\\n\\n\"  #",
        "true #",
        "true  #",
    ];
    let full: Vec<String> = heads
        .iter()
        .flat_map(|head| (1..100).map(move |n| format!("{head}{}", "w".repeat(n))))
        .filter(|c| {
            [echo_width(shell, c, true), echo_width(shell, c, false)]
                .iter()
                .any(|w| w % width == 0)
        })
        .collect();
    assert!(full.len() >= 8, "{full:?}");
    let long = long.iter().chain(&full).map(|c| (c.as_str(), 0));
    for (command, status) in cases.into_iter().chain(long) {
        let r = run(s, pane, command, json!({}));
        assert_eq!(
            (&r["exit_status"], &r["output"], &r["output_truncated"]),
            (
                &json!(status),
                &json!(really_prints(shell, command)),
                &json!(false)
            ),
            "{command}: {r}"
        );
    }
}

/// A last line without a newline, or ended by a bare CR, is output (the
/// marker starts a row of its own, never overwriting it), and
/// `partial_last_line` says it had no newline. With OSC 133 the shell
/// draws the next prompt after it: zsh and fish first print their
/// end-of-line mark (`%`/`#`, `⏎`) there and move on, and that mark is
/// not output; bash draws its prompt over the line, and a bare CR's line
/// is drawn over in every shell: the line is then the raw output's.
fn unfinished_last_lines(s: &mut Serve, pane: &str) {
    let cases = [
        ("printf 'one\\nabc'", "one\nabc\n", true),
        ("printf 'abc\\r'", "abc\n", true),
        ("printf 'abc\\rX'", "Xbc\n", true),
        ("printf 'a\\n\\n'", "a\n\n", false),
        ("printf 'ends in #\\n50%%'", "ends in #\n50%\n", true),
        ("printf '\\033[1mbold\\033[0m'", "bold\n", true),
        ("printf 'wide 日本'", "wide 日本\n", true),
        // Invalid UTF-8 shows nothing on tmux's screen, and the `a` that
        // broke the sequence shows: so in the line kept.
        ("printf 'B\\346a'", "Ba\n", true),
    ];
    for (command, want, partial) in cases {
        let r = run(s, pane, command, json!({}));
        assert_eq!(
            (&r["exit_status"], &r["output"], &r["partial_last_line"]),
            (&json!(0), &json!(want), &json!(partial)),
            "{command}: {r}"
        );
    }
}

/// A last line the cursor moved back over cannot be followed from the raw
/// output: it is the screen's, less zsh's or fish's end-of-line mark after
/// it. (bash with marks draws its next prompt on that row.)
fn unfollowed_last_line(s: &mut Serve, pane: &str) {
    let r = run(s, pane, "printf 'ab\\033[Dc'", json!({}));
    assert_eq!(
        (&r["exit_status"], &r["output"], &r["partial_last_line"]),
        (&json!(0), &json!("ac\n"), &json!(true)),
        "{r}"
    );
}

/// An unbalanced quote: the shell says so and gives a status; the pane is
/// back at its prompt (no continuation prompt, no line kept in fish's
/// editor) and the next command runs.
fn typos_leave_the_pane_usable(tmux: &PrivateServer, s: &mut Serve, pane: &str) {
    for typo in ["echo it's fine", "echo \"unclosed", "ls |"] {
        let r = run(s, pane, typo, json!({"timeout_ms": 10000}));
        assert_eq!(r["timed_out"], false, "{typo}: {r}\n{}", screen(tmux, pane));
        assert_ne!(r["exit_status"], 0, "{typo}: {r}");
        assert_ne!(r["output"], "", "{typo}: the shell's error: {r}");
        let r = run(s, pane, "echo after", json!({}));
        assert_eq!(
            (&r["exit_status"], &r["output"]),
            (&json!(0), &json!("after\n")),
            "after {typo}: {r}"
        );
    }
}

/// `allow_multiline`: a heredoc (bash, zsh) or two lines (fish) run whole.
fn several_lines(shell: Sh, s: &mut Serve, pane: &str) {
    let command = match shell {
        Sh::Fish => "echo first\nfor w in x y\n    echo $w\nend",
        // The heredoc's terminator is the last line.
        _ => "echo first\ncat <<'EOF'\nx y\n  z\nEOF",
    };
    let r = run(
        s,
        pane,
        command,
        json!({"allow_multiline": true, "timeout_ms": 10000}),
    );
    assert_eq!(
        (&r["exit_status"], &r["output"], &r["timed_out"]),
        (
            &json!(0),
            &json!(really_prints(shell, command)),
            &json!(false)
        ),
        "{r}"
    );
}

/// A command interrupted with C-c is seen to end (status 130), and the
/// pane takes the next one.
fn an_interrupt_ends_it(tmux: &PrivateServer, s: &mut Serve, pane: &str) {
    let (r, w) = run_and_interrupt(tmux, s, pane);
    assert_eq!(r["timed_out"], true, "{r}");
    assert_eq!(
        (&w["timed_out"], &w["exit_status"]),
        (&json!(false), &json!(130)),
        "{w}"
    );
    assert!(
        w["output"].as_str().unwrap().starts_with("waiting\n"),
        "{w}"
    );
    let r = run(s, pane, "echo again", json!({}));
    assert_eq!(r["output"], "again\n", "{r}");
}

#[test]
fn bash_plain() {
    matrix(Sh::Bash, false);
}

#[test]
fn bash_with_the_guide_snippet() {
    matrix(Sh::Bash, true);
}

#[test]
fn zsh_plain() {
    matrix(Sh::Zsh, false);
}

#[test]
fn zsh_with_the_guide_snippet() {
    matrix(Sh::Zsh, true);
}

#[test]
fn fish_plain() {
    matrix(Sh::Fish, false);
}

#[test]
fn fish_with_the_guide_snippet() {
    matrix(Sh::Fish, true);
}

/// A pane whose program is a bash script asking a question is "bash" by
/// name, but its line editor is not reading: nothing is typed into the
/// script's `read`, and the refusal says why.
/// bash's plain echo is always an odd number of columns wide: at an odd
/// width it fills its row exactly (the matrix's 100 columns never do).
#[test]
fn bash_plain_echoes_that_fill_an_odd_row() {
    need(Sh::Bash);
    let (tmux, mut s) = serve("shells-bash-odd", 101, &[]);
    let dir = TempDir::new("shells-bash-odd");
    let pane = shell_pane(&tmux, &dir.0, Sh::Bash, "");
    exact(Sh::Bash, 101, &mut s, &pane);
    tmux.kill();
}

#[test]
fn a_scripts_read_is_never_typed_into() {
    let (tmux, mut s) = serve("shells-read", 100, &[]);
    let pane = window_showing(
        &tmux,
        None,
        "bash --norc --noprofile -c 'read -p \"Proceed? \" a; echo \"got:$a\"; sleep 100'",
        "Proceed?",
        &[],
    );
    let e = s.call_err(
        "run_command",
        json!({"pane_id": pane, "command": "echo typed", "timeout_ms": 5000}),
    );
    assert!(e.contains("not reading a command line"), "{e}");
    assert!(
        !screen(&tmux, &pane).contains("typed"),
        "{}",
        screen(&tmux, &pane)
    );
    // The question is still the user's to answer.
    tmux.run_ok(["send-keys", "-t", &pane, "y", "Enter"])
        .unwrap();
    assert!(
        eventually(Duration::from_secs(10), || screen(&tmux, &pane)
            .contains("got:y")),
        "{}",
        screen(&tmux, &pane)
    );
    tmux.kill();
}

/// Prompt hooks that run a process (bash's PROMPT_COMMAND, zsh's precmd):
/// a call arriving while they run waits for the prompt, then types.
#[test]
fn slow_prompt_hooks_are_waited_for() {
    let (tmux, mut s) = serve("shells-slow", 100, &[]);
    let dir = TempDir::new("shells-slow");
    let bash = shell_pane(&tmux, &dir.0, Sh::Bash, "PROMPT_COMMAND='sleep 0.05'\n");
    let zsh = shell_pane(&tmux, &dir.0, Sh::Zsh, "precmd() { sleep 0.3 }\n");
    for pane in [&bash, &zsh] {
        for k in 0..8 {
            let r = run(&mut s, pane, &format!("echo {k}"), json!({}));
            assert_eq!(
                (&r["exit_status"], &r["output"]),
                (&json!(0), &json!(format!("{k}\n"))),
                "call {k} in {pane}: {r}"
            );
        }
    }
    tmux.kill();
}

/// Without the event stream the marker is read from the screen, which the
/// command can draw: here it deletes the space between the marker's
/// pieces in its own echoed line and writes `:0` after them, then runs on
/// and fails. The drawn marker does not end it; the shell's does.
#[test]
fn a_marker_drawn_on_the_screen_does_not_end_the_command() {
    let (tmux, mut s) = serve("shells-drawn", 400, &["--no-events"]);
    let dir = TempDir::new("shells-drawn");
    let pane = shell_pane(&tmux, &dir.0, Sh::Bash, "");
    // The echo: `$  eval 'CMD'; printf '\n\033[J%s%s:%s\n' __psXXXXXXXX KEY "$?"...`,
    // the space between the pieces at a column the command can count. It
    // deletes that space, inserts blanks before the pieces so that they
    // end two columns from the right edge, and writes `:0` there.
    let template = "printf \"\\033[A\\r\\033[___C\\033[P\\033[12D\\033[---@\\033[399G:0\\033[B\\r\"; sleep 2; false";
    let column = "$  eval '".len() + template.len() + MARKER_HEAD.len() + 8;
    let command = template
        .replace("___", &format!("{column:03}"))
        .replace("---", &format!("{:03}", 382 - column));
    let r = run(&mut s, &pane, &command, json!({"timeout_ms": 20000}));
    let drawn = screen(&tmux, &pane);
    assert_eq!(
        (&r["exit_status"], &r["timed_out"], &r["output"]),
        (&json!(1), &json!(false), &json!("")),
        "{r}\n{drawn}"
    );
    tmux.kill();
}

/// A command that replaces the shell (`exec dash`) is released with an
/// error that says so, and the pane takes the next command in dash.
#[test]
fn a_shell_replaced_by_exec_is_released_saying_so() {
    let (tmux, mut s) = serve("shells-exec", 100, &[]);
    let dir = TempDir::new("shells-exec");
    let pane = shell_pane(&tmux, &dir.0, Sh::Bash, "");
    let e = s.call_err(
        "run_command",
        json!({"pane_id": pane, "command": "exec env PS1='$ ' dash", "timeout_ms": 10000}),
    );
    assert!(e.contains("replaced") && e.contains("dash"), "{e}");
    let r = run(&mut s, &pane, "echo in dash; false", json!({}));
    assert_eq!(
        (&r["exit_status"], &r["output"]),
        (&json!(1), &json!("in dash\n")),
        "{r}"
    );
    tmux.kill();
}

/// Refusals say what helps: a pager is quit with `q`; a tool of the
/// mutating tier on a read-only server names the flag that serves it.
#[test]
fn refusals_say_what_helps() {
    let (tmux, mut s) = serve("shells-pager", 100, &[]);
    let dir = TempDir::new("shells-pager");
    let file = dir.0.join("long.txt");
    std::fs::write(&file, really_prints(Sh::Bash, "seq 1 200")).unwrap();
    let pager = window_showing(&tmux, None, &format!("less {}", file.display()), "1", &[]);
    let e = s.call_err("run_command", json!({"pane_id": pager, "command": "true"}));
    assert!(e.contains("send_keys q"), "{e}");
    tmux.kill();

    let tmux = PrivateServer::start("shells-readonly", 80, 24).unwrap();
    let mut s = Serve::spawn_with(&["serve", "--socket-name", tmux.socket_name()], &[]);
    s.initialize();
    let r = s.request(
        "tools/call",
        json!({"name": "run_command", "arguments": {"pane_id": "%0", "command": "true"}}),
    );
    let text = r.to_string();
    assert!(
        text.contains("needs tier mutating") && text.contains("panescan serve --tier mutating"),
        "{text}"
    );
    tmux.kill();
}

/// A prompt of two lines: its first line is never output, neither at the
/// next prompt (OSC 133) nor above the marker typed again after an
/// interrupt. Its height is learned from the first marker's answer.
#[test]
fn a_prompt_of_two_lines_is_not_output() {
    let (tmux, mut s) = serve("shells-twoline", 100, &[]);
    let dir = TempDir::new("shells-twoline");
    for shell in [Sh::Bash, Sh::Zsh, Sh::Fish] {
        need(shell);
        for snippets in [false, true] {
            let sub = dir.0.join(format!("{shell:?}-{snippets}"));
            std::fs::create_dir_all(&sub).unwrap();
            let prompt = match shell {
                Sh::Fish => "function fish_prompt; printf 'top line\\n$ '; end\n",
                _ => "PS1=$'top line\\n$ '\n",
            };
            let snippet = if snippets {
                guide_snippet(shell)
            } else {
                String::new()
            };
            let pane = shell_pane(&tmux, &sub, shell, &format!("{prompt}{snippet}"));
            let case = format!("{shell:?}, snippets {snippets}");
            let r = run(&mut s, &pane, "false", json!({}));
            assert_eq!(
                (&r["exit_status"], &r["output"]),
                (&json!(1), &json!("")),
                "{case}: {r}"
            );
            for k in 0..3 {
                let r = run(&mut s, &pane, &format!("echo one {k}"), json!({}));
                assert_eq!(r["output"], format!("one {k}\n"), "{case}: {r}");
            }
            interrupted_without_the_prompts_top(&mut s, &tmux, &pane, &case);
        }
    }
    tmux.kill();
}

/// The rc text of a pane whose prompt, `top line` then `$ `, is drawn by
/// `shell` only once its prompt hook (bash's PROMPT_COMMAND, zsh's precmd,
/// fish's `fish_prompt` event, each run after the snippet's D mark) has
/// printed `hook` and waited while the file `hold` exists.
fn held_prompt_rc(shell: Sh, hold: &Path, snippets: bool) -> String {
    let h = hold.display();
    let snippet = if snippets {
        guide_snippet(shell)
    } else {
        String::new()
    };
    match shell {
        Sh::Bash => format!(
            "PS1=$'top line\\n$ '\n\
             PROMPT_COMMAND='if [ -e {h} ]; then echo hook; while [ -e {h} ]; do sleep 0.01; done; fi'\n\
             {snippet}"
        ),
        Sh::Zsh => format!(
            "PS1=$'top line\\n$ '\n\
             {snippet}\
             __held() {{ if [[ -e {h} ]]; then echo hook; while [[ -e {h} ]]; do sleep 0.01; done; fi }}\n\
             precmd_functions+=(__held)\n"
        ),
        Sh::Fish => format!(
            "function fish_prompt; printf 'top line\\n$ '; end\n\
             {snippet}\
             function __held --on-event fish_prompt\n\
             if test -e {h}; echo hook; while test -e {h}; sleep 0.01; end; end\n\
             end\n"
        ),
    }
}

/// Presses Enter at the prompt of `pane` with `hold` made: returns once
/// the prompt hook printed `hook` and waits (the last row not blank),
/// with `armed` made: the next listing of the panes lets it go.
fn hold_the_prompt(tmux: &PrivateServer, pane: &str, (hold, armed): (&Path, &Path)) {
    std::fs::write(hold, "").unwrap();
    tmux.run_ok(["send-keys", "-t", pane, "Enter"]).unwrap();
    let last_row = || {
        screen(tmux, pane)
            .lines()
            .rev()
            .map(str::trim_end)
            .find(|l| !l.is_empty())
            .map(str::to_owned)
    };
    assert!(
        eventually(Duration::from_secs(10), || last_row().as_deref()
            == Some("hook")),
        "{}",
        screen(tmux, pane)
    );
    std::fs::write(armed, "").unwrap();
}

/// A call arriving while a prompt hook prints and the prompt (of two
/// lines) is not drawn yet: it waits for the prompt, and the command's
/// place is where it is typed, below the hook's line and the prompt's top
/// row. So its output is its own, without the next prompt's top row (OSC
/// 133), nor that row above the marker typed again after an interrupt.
/// The hook lets the prompt be drawn only once panescan has listed the
/// panes for the call (a tmux hook after `list-panes` removes the file it
/// waits on, once the test armed it: panescan lists them at other times).
#[test]
fn a_call_while_a_prompt_hook_prints_reads_only_its_output() {
    let (tmux, mut s) = serve("shells-hook-prints", 100, &[]);
    let dir = TempDir::new("shells-hook-prints");
    let (hold, armed) = (dir.0.join("hold"), dir.0.join("armed"));
    let (h, a) = (hold.display(), armed.display());
    let release = format!("run-shell 'if [ -e {a} ]; then rm -f {a} {h}; fi'");
    tmux.run_ok(["set-hook", "-g", "after-list-panes", &release])
        .unwrap();
    for shell in [Sh::Bash, Sh::Zsh, Sh::Fish] {
        need(shell);
        for snippets in [false, true] {
            let sub = dir.0.join(format!("{shell:?}-{snippets}"));
            std::fs::create_dir_all(&sub).unwrap();
            let rc = held_prompt_rc(shell, &hold, snippets);
            let pane = shell_pane(&tmux, &sub, shell, &rc);
            let case = format!("{shell:?}, snippets {snippets}");
            // The prompt's height learnt, and with the snippets its marks.
            if snippets {
                learns_the_marks(&tmux, &mut s, &pane);
            } else {
                let r = run(&mut s, &pane, "false", json!({}));
                assert_eq!(r["exit_status"], 1, "{case}: {r}");
            }
            for k in 0..2 {
                hold_the_prompt(&tmux, &pane, (&hold, &armed));
                let command = format!("echo one {k}; sh -c 'exit 3'");
                let r = run(&mut s, &pane, &command, json!({}));
                assert_eq!(
                    (&r["exit_status"], &r["output"], &r["output_truncated"]),
                    (&json!(3), &json!(format!("one {k}\n")), &json!(false)),
                    "{case}: {r}\n{}",
                    screen(&tmux, &pane)
                );
            }
            hold_the_prompt(&tmux, &pane, (&hold, &armed));
            interrupted_without_the_prompts_top(&mut s, &tmux, &pane, &case);
        }
    }
    tmux.kill();
}

/// A command still running a full-screen program (on the alternate
/// screen) answers no output, flagged as cut: neither that screen nor the
/// scrollback below it is what the command printed.
#[test]
fn a_full_screen_program_answers_no_output_until_it_ends() {
    let (tmux, mut s) = serve("shells-vim", 100, &[]);
    let dir = TempDir::new("shells-vim");
    let pane = shell_pane(&tmux, &dir.0, Sh::Bash, "");
    let r = run(&mut s, &pane, "seq 1 300", json!({}));
    assert_eq!(r["exit_status"], 0, "{r}");
    let r = run(
        &mut s,
        &pane,
        "echo before; vim -u NONE -N",
        json!({"timeout_ms": 1500}),
    );
    assert_eq!(
        (&r["timed_out"], &r["output"], &r["output_truncated"]),
        (&json!(true), &json!(""), &json!(true)),
        "{r}"
    );
    let id = r["command_id"].as_str().unwrap().to_owned();
    s.call_ok("send_keys", json!({"pane_id": pane, "keys": ["Escape"]}));
    s.call_ok(
        "send_keys",
        json!({"pane_id": pane, "text": ":q!", "enter": true}),
    );
    let w = s.call_ok(
        "wait_for_command",
        json!({"command_id": id, "timeout_ms": 15000}),
    );
    assert_eq!(
        (&w["exit_status"], &w["output"]),
        (&json!(0), &json!("before\n")),
        "{w}"
    );
    tmux.kill();
}

/// A new session (not the one panescan's control client watches) running
/// `shell` with prompt `$ `, set up in `dir`; its pane once the prompt shows.
fn shell_in_new_session(tmux: &PrivateServer, dir: &Path, shell: Sh, name: &str) -> String {
    let command = shell_command(dir, shell, "");
    session_showing(tmux, name, (400, 24), &command, "$")
}

/// A file of escape sequences that turns the echoed line of `command`
/// (typed as ` eval 'COMMAND'; printf '\n\033[J%s%s:%s\n' __psXXXXXXXX KEY
/// ...`, in a pane 400 columns wide and 24 rows high) into a marker line
/// ending in `:0` at the row's last column, then leaves the cursor on the
/// last row below a scroll region: a newline there does not move it, so
/// the next prompt is drawn over the shell's own marker, and the forged
/// one is the only marker left on the screen.
fn forged_end(command: &str) -> String {
    let space = "$  eval '".len() + command.len() + MARKER_HEAD.len() + 8;
    let token_at = space - 12;
    // Deleting the space joins the pieces; blanks inserted before them
    // push the marker's end to the row's third column from the right.
    let shift = 397 - (space + 15);
    format!(
        "\x1b[A\r\x1b[{}G\x1b[P\x1b[{}G\x1b[{shift}@\x1b[399G:0\r\x1b[1;20r\x1b[24;1H",
        space + 1,
        token_at + 1,
    )
}

/// Item: nothing printed can fake the end. A pane outside the session the
/// control client watches (held there by a resource subscription), or any
/// pane under `--no-events`: the command prints a file of escapes that
/// forges a marker with status 0 below the shell's own, then sleeps and
/// fails. The answer carries status 1 and comes after the sleep.
fn a_forged_end_outside_the_stream(shell: Sh, no_events: bool) {
    need(shell);
    let label = format!("shells-forged-{shell:?}-{no_events}").to_lowercase();
    let more: &[&str] = if no_events { &["--no-events"] } else { &[] };
    let (tmux, mut s) = serve(&label, 400, more);
    let dir = TempDir::new(&label);
    // The watched session: a subscription to main's first pane keeps the
    // control client there.
    let watched = tmux
        .run_ok(["display-message", "-p", "-t", "main:0.0", "#{pane_id}"])
        .unwrap();
    let uri = format!(
        "tmux://pane/{}/screen",
        watched.trim().trim_start_matches('%')
    );
    let r = s.request("resources/subscribe", json!({ "uri": uri }));
    assert!(r.get("error").is_none(), "{r}");
    let pane = shell_in_new_session(&tmux, &dir.0, shell, "elsewhere");
    let file = dir.0.join("forge.txt");
    let command = format!("cat {}; sleep 2; false", file.display());
    std::fs::write(&file, forged_end(&command)).unwrap();
    let r = run(&mut s, &pane, &command, json!({"timeout_ms": 20000}));
    let drawn = screen(&tmux, &pane);
    assert_eq!(
        (&r["exit_status"], &r["timed_out"]),
        (&json!(1), &json!(false)),
        "{r}\n{drawn}"
    );
    assert!(r["elapsed_ms"].as_u64().unwrap() >= 2000, "{r}\n{drawn}");
    // panescan's pipe (the tap that read the pane's bytes) is closed.
    let pipe = |tmux: &PrivateServer| {
        tmux.run_ok(["display-message", "-p", "-t", &pane, "#{pane_pipe}"])
            .unwrap()
            .trim()
            .to_owned()
    };
    assert!(eventually(Duration::from_secs(10), || pipe(&tmux) == "0"));
    // The scroll region the file left is the terminal's: reset it (and
    // redraw the prompt), as a user would.
    tmux.run_ok(["send-keys", "-R", "-t", &pane, "C-l"])
        .unwrap();
    // The pane takes the next command, its status its own.
    let r = run(&mut s, &pane, "echo next; sh -c 'exit 4'", json!({}));
    assert_eq!(
        (&r["exit_status"], &r["output"]),
        (&json!(4), &json!("next\n")),
        "{r}\n{}",
        screen(&tmux, &pane)
    );
    tmux.kill();
}

#[test]
fn a_forged_end_outside_the_stream_bash() {
    a_forged_end_outside_the_stream(Sh::Bash, false);
}

#[test]
fn a_forged_end_outside_the_stream_zsh() {
    a_forged_end_outside_the_stream(Sh::Zsh, false);
}

#[test]
fn a_forged_end_outside_the_stream_fish() {
    a_forged_end_outside_the_stream(Sh::Fish, false);
}

#[test]
fn a_forged_end_without_events_bash() {
    a_forged_end_outside_the_stream(Sh::Bash, true);
}

/// A pane outside the stream that already pipes its output (the user's
/// `pipe-pane`) keeps its pipe: run_command reads the screen there, and
/// the user's file still gets what the pane printed.
#[test]
fn a_pane_that_pipes_keeps_its_pipe() {
    let (tmux, mut s) = serve("shells-piped", 200, &["--no-events"]);
    let dir = TempDir::new("shells-piped");
    let pane = shell_pane(&tmux, &dir.0, Sh::Bash, "");
    let log = dir.0.join("pane.log");
    tmux.run_ok([
        "pipe-pane",
        "-t",
        &pane,
        &format!("cat >> {}", log.display()),
    ])
    .unwrap();
    for k in 0..2 {
        let r = run(&mut s, &pane, &format!("echo piped {k}; false"), json!({}));
        assert_eq!(
            (&r["exit_status"], &r["output"]),
            (&json!(1), &json!(format!("piped {k}\n"))),
            "{r}"
        );
    }
    let piping = tmux
        .run_ok(["display-message", "-p", "-t", &pane, "#{pane_pipe}"])
        .unwrap();
    assert_eq!(piping.trim(), "1");
    assert!(
        eventually(Duration::from_secs(10), || std::fs::read_to_string(&log)
            .is_ok_and(|t| t.contains("piped 1"))),
        "the user's pipe lost the pane's output"
    );
    tmux.kill();
}

/// Item: out of the user's history. After run_command (with the marker),
/// the shell's history holds no panescan marker text; bash (whatever its
/// HISTCONTROL) and zsh under HIST_IGNORE_SPACE hold the command itself,
/// as typed by the caller; fish 3.6 (a line starting with a space stays
/// out, and it has no `history append`) holds neither.
#[test]
fn the_history_holds_the_command_not_the_marker() {
    let (tmux, mut s) = serve("shells-history", 200, &[]);
    let dir = TempDir::new("shells-history");
    let setups = [
        (Sh::Bash, "", true),
        (Sh::Bash, "HISTCONTROL=ignoreboth\n", true),
        (Sh::Zsh, "HISTSIZE=100\nsetopt HIST_IGNORE_SPACE\n", true),
        (Sh::Fish, "", false),
    ];
    for (i, (shell, rc, kept)) in setups.into_iter().enumerate() {
        need(shell);
        let sub = dir.0.join(format!("h{i}"));
        std::fs::create_dir_all(&sub).unwrap();
        // bash's own file, not the user's.
        let rc = match shell {
            Sh::Bash => format!("HISTFILE={}/hist\n{rc}", sub.display()),
            _ => rc.to_owned(),
        };
        let pane = shell_pane(&tmux, &sub, shell, &rc);
        let commands = ["echo one", "echo 'it''s two'", "false"];
        for command in commands {
            let r = run(&mut s, &pane, command, json!({}));
            assert_eq!(r["timed_out"], false, "{r}");
        }
        // As the user would look: the shell's own listing, into a file.
        let file = sub.join("listed");
        let list = match shell {
            Sh::Zsh => format!("fc -ln 1 > {}", file.display()),
            _ => format!("history > {}", file.display()),
        };
        tmux.run_ok(["send-keys", "-t", &pane, "-l", &list])
            .unwrap();
        tmux.run_ok(["send-keys", "-t", &pane, "Enter"]).unwrap();
        let listed = || std::fs::read_to_string(&file).unwrap_or_default();
        assert!(
            eventually(Duration::from_secs(10), || file.exists()),
            "{shell:?}: {}",
            screen(&tmux, &pane)
        );
        // Written whole once the prompt is back.
        assert!(eventually(Duration::from_secs(10), || screen(&tmux, &pane)
            .trim_end()
            .ends_with('$')));
        let text = listed();
        let case = format!("{shell:?} {rc:?}:\n{text}");
        assert!(
            !text.contains("__ps") && !text.contains("printf") && !text.contains("eval"),
            "{case}"
        );
        let rows: Vec<&str> = text.lines().map(str::trim).collect();
        for command in commands {
            // bash numbers its rows: `  3  echo one`.
            let has = rows
                .iter()
                .any(|r| *r == command || r.ends_with(&format!("  {command}")));
            assert_eq!(has, kept, "{command}: {case}");
        }
    }
    tmux.kill();
}
