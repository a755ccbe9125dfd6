//! The command line as a person uses it: demo, search (grep's exit codes),
//! bench, help and version.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::process::Command;

use panescan::testing::private_server::PrivateServer;

fn panescan() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_panescan"));
    cmd.env_remove("TMUX").env_remove("TMUX_PANE");
    cmd
}

fn server_alive(socket_name: &str) -> bool {
    Command::new("tmux")
        .args(["-L", socket_name, "list-sessions"])
        .output()
        .unwrap()
        .status
        .success()
}

#[test]
fn demo_finds_lines_and_leaves_no_server_behind() {
    let out = panescan()
        .args(["demo", "--panes", "20", "--lines", "300"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "demo failed: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("error: panescan-needle in pane 0"),
        "{stdout}"
    );
    assert!(stdout.contains("clamped: matches_truncated"), "{stdout}");
    assert!(stdout.contains("one tmux process per pane"), "{stdout}");
    // A ratio only where the search read everything the fetch did.
    let timed: Vec<&str> = stdout
        .lines()
        .filter(|l| l.contains("through MCP"))
        .collect();
    assert_eq!(timed.len(), 4, "{stdout}");
    for line in &timed {
        if line.contains("clamped:") {
            assert!(
                line.contains("stopped early on a budget") && line.contains("no ratio"),
                "{line}"
            );
        }
    }
    assert!(
        timed.iter().any(|l| l.contains("x), before any searching")),
        "{stdout}"
    );
    let socket = stdout
        .split("tmux -L ")
        .nth(1)
        .and_then(|rest| rest.split(')').next())
        .expect("demo names its server");
    assert!(!server_alive(socket), "demo left {socket} running");
}

#[test]
fn search_exit_codes_follow_grep() {
    let server = PrivateServer::start("cli-search", 80, 20).unwrap();
    server
        .run_ok([
            "new-window",
            "-d",
            "printf 'hello from the pane\\n'; exec sleep 100000",
        ])
        .unwrap();
    let name = server.socket_name();
    let mut found = String::new();
    for _ in 0..100 {
        let out = panescan()
            .args(["search", "-L", name, "hello from"])
            .output()
            .unwrap();
        found = String::from_utf8_lossy(&out.stdout).into_owned();
        if out.status.code() == Some(0) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(found.contains(": hello from the pane"), "{found}");
    assert!(!found.contains('\x1b'), "no colour when not on a terminal");

    let none = panescan()
        .args(["search", "-L", name, "absent-text-zzz"])
        .output()
        .unwrap();
    assert_eq!(none.status.code(), Some(1));
    assert!(none.stdout.is_empty());

    let bad = panescan()
        .args(["search", "-L", name, "-e", "a{5000}"])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("1,000"));

    let json = panescan()
        .args(["search", "-L", name, "--json", "hello from"])
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(v["total_panes_matched"], 1);

    let gone = panescan()
        .args(["search", "-L", "panescan-no-such-server-x", "x"])
        .output()
        .unwrap();
    assert_eq!(gone.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&gone.stderr).contains("no tmux server"));
}

#[test]
fn bench_reports_every_case_as_json_and_as_a_chart() {
    let chart = std::env::temp_dir().join(format!("panescan-bench-{}.svg", std::process::id()));
    let out = panescan()
        .args([
            "bench",
            "--panes",
            "4",
            "--lines",
            "200",
            "--width",
            "80",
            "--runs",
            "1",
            "--json",
            "--no-process-baseline",
        ])
        .arg("--svg")
        .arg(&chart)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = v["rows"].as_array().unwrap();
    assert!(rows.len() >= 8);
    assert!(v["raw_deep_ms"].as_f64().unwrap() > 0.0);
    let clamped = rows
        .iter()
        .find(|r| r["case"].as_str().unwrap().contains("max_scan_bytes"))
        .unwrap();
    // 4 panes x 200 lines is well under 1 MB: the budget does not fire.
    assert!(
        clamped["clamps"].as_array().unwrap().is_empty(),
        "{clamped}"
    );
    let rare = rows
        .iter()
        .find(|r| r["case"] == "rare literal" && r["scope"] == "deep")
        .unwrap();
    assert_eq!(rare["matching_lines"], 1, "{rare}");
    // Each row is read against raw fetches timed beside its own runs.
    for r in rows {
        assert!(r["raw_fetch_ms"].as_f64().unwrap() > 0.0, "{r}");
        assert!(r["ratio_to_raw_fetch"].as_f64().unwrap() > 0.0, "{r}");
    }
    // The chart: one bar label per case, beside the raw fetch floor.
    let svg = std::fs::read_to_string(&chart).unwrap_or_default();
    let _ = std::fs::remove_file(&chart);
    assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
    for r in rows {
        let label = format!(
            "{}: {}",
            r["scope"].as_str().unwrap(),
            r["case"].as_str().unwrap()
        );
        assert!(svg.contains(&label), "{label} not in the chart");
    }
    assert!(svg.contains("(the floor)") && svg.contains("x floor"));
}

#[test]
fn help_and_version_work_everywhere() {
    let v = panescan().arg("--version").output().unwrap();
    assert!(String::from_utf8_lossy(&v.stdout).starts_with("panescan "));
    for sub in ["serve", "search", "demo", "bench"] {
        let h = panescan().args([sub, "--help"]).output().unwrap();
        assert!(h.status.success(), "{sub} --help");
        let text = String::from_utf8_lossy(&h.stdout);
        assert!(text.contains("Usage"), "{sub}: {text}");
        assert!(text.contains("Examples"), "{sub} --help has no examples");
    }
}

#[test]
fn a_missing_tmux_gets_one_clear_sentence() {
    // tmux is looked for beyond PATH too (cli_setup.rs); one named that is
    // not there stands for a machine without it.
    let empty = std::env::temp_dir().join(format!("panescan-no-tmux-{}", std::process::id()));
    std::fs::create_dir_all(&empty).unwrap();
    for args in [&["search", "x"][..], &["demo", "--panes", "2"][..]] {
        let out = panescan()
            .args(args)
            .env("PATH", &empty)
            .env("PANESCAN_TMUX", empty.join("tmux"))
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("install tmux 3.2 or newer"), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "one sentence, not a stack: {err}");
    }
    let _ = std::fs::remove_dir(&empty);
}

#[test]
fn search_since_file_shows_only_what_is_new_on_each_run() {
    let server = PrivateServer::start("cli-since", 80, 20).unwrap();
    let pane = server
        .run_ok([
            "new-window",
            "-d",
            "-P",
            "-F",
            "#{pane_id}",
            "printf 'old error\\n'; exec sleep 100000",
        ])
        .unwrap()
        .trim()
        .to_owned();
    let name = server.socket_name();
    let shown = |text: &str| {
        (0..250).any(|_| {
            let screen = server.run_ok(["capture-pane", "-p", "-t", &pane]).unwrap();
            screen.contains(text) || {
                std::thread::sleep(std::time::Duration::from_millis(20));
                false
            }
        })
    };
    assert!(shown("old error"));
    let dir = std::env::temp_dir().join(format!("{name}.since"));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("cursor");
    let run = || {
        panescan()
            .args(["search", "-L", name, "--since-file"])
            .arg(&file)
            .arg("error")
            .output()
            .unwrap()
    };
    // No file yet: everything, and the cursor is written.
    let first = run();
    assert_eq!(first.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&first.stdout).contains("old error"));
    assert!(std::fs::read_to_string(&file).unwrap().starts_with("ps3."));
    // Nothing new: nothing found.
    assert_eq!(run().status.code(), Some(1));
    // One new line: only it.
    let tty = server
        .run_ok(["display-message", "-p", "-t", &pane, "#{pane_tty}"])
        .unwrap();
    std::fs::write(tty.trim(), "new error\r\n").unwrap();
    assert!(shown("new error"));
    let third = run();
    let out = String::from_utf8_lossy(&third.stdout).into_owned();
    assert_eq!(third.status.code(), Some(0), "{out}");
    assert!(
        out.contains("new error") && !out.contains("old error"),
        "{out}"
    );
    // A damaged cursor: an error that says how to start over.
    std::fs::write(&file, "ps1.garbage").unwrap();
    let bad = run();
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("remove the file"));
    let _ = std::fs::remove_dir_all(&dir);
}
