//! Search across time on a real tmux: search_panes `journal: true` finds
//! lines tmux trimmed and panes that are gone, once each, with their
//! times and (where tmux holds them) their line numbers; `since_time` /
//! `until_time` narrow; the budgets bound the journal's bytes; the
//! `tmux://pane/N/journal` resource and `panescan search --journal`.
//!
//! Every test has its private tmux server, runtime and journal directory.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::daemon::Place;
use common::journal::config;
use common::{Serve, TempDir};
use panescan::testing::journal::{when, writer};
use panescan::testing::private_server::PrivateServer;
use panescan::testing::tmux::ServerSpec;
use serde_json::{json, Value};

/// Long enough for the journal to read and flush what was printed.
const SETTLE: Duration = Duration::from_millis(2_000);

/// A tmux server whose panes run `sh` on the lines appended to their
/// command files (no prompt, no echo), history-limit `limit`.
struct Printers {
    tmux: PrivateServer,
    dir: PathBuf,
}

impl Printers {
    fn start(label: &str, limit: u32, dir: &Path) -> Printers {
        let tmux = PrivateServer::start(label, 60, 12).expect("tmux starts");
        tmux.run_ok(["set-option", "-g", "history-limit", &limit.to_string()])
            .unwrap();
        Printers {
            tmux,
            dir: dir.to_owned(),
        }
    }

    /// A new window running `sh` on `name`'s command file: its pane id.
    fn pane(&self, name: &str) -> String {
        let commands = self.dir.join(format!("{name}.sh"));
        std::fs::write(&commands, "").unwrap();
        let shell = format!("tail -f {} | sh", commands.display());
        self.tmux
            .run_ok([
                "new-window",
                "-d",
                "-P",
                "-F",
                "#{pane_id}",
                "-n",
                name,
                &shell,
            ])
            .unwrap()
            .trim()
            .to_owned()
    }

    fn run(&self, name: &str, script: &str) {
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(self.dir.join(format!("{name}.sh")))
            .unwrap();
        writeln!(f, "{script}").unwrap();
    }

    /// Prints `n` pad lines, 10 at a time with a pause, so the journal
    /// reads each before tmux trims it (no gap), then `marker`.
    fn pad(&self, name: &str, pane: &str, n: u32, marker: &str) {
        self.run(
            name,
            &format!("i=0; while [ $i -lt {n} ]; do echo pad-$i; i=$((i+1)); [ $((i % 10)) -eq 0 ] && sleep 0.1; done; echo {marker}"),
        );
        self.wait_for(pane, marker);
    }

    fn wait_for(&self, pane: &str, marker: &str) {
        let shown = common::eventually(Duration::from_secs(30), || {
            self.tmux
                .run_ok(["capture-pane", "-p", "-J", "-S", "-", "-t", pane])
                .is_ok_and(|t| t.lines().any(|l| l == marker))
        });
        assert!(shown, "{pane} never showed {marker}");
    }
}

/// The live hits of `result` whose text contains `needle`:
/// (pane, line, time, text).
fn live_hits(result: &Value, needle: &str) -> Vec<(String, i64, Option<String>, String)> {
    let mut out = Vec::new();
    for pane in result["matches"].as_array().unwrap() {
        for l in pane["lines"].as_array().unwrap() {
            let text = l["text"].as_str().unwrap().to_owned();
            if text.contains(needle) {
                out.push((
                    pane["pane_id"].as_str().unwrap().to_owned(),
                    l["line"].as_i64().unwrap(),
                    l["time"].as_str().map(str::to_owned),
                    text,
                ));
            }
        }
    }
    out
}

/// The journal's own hits containing `needle`: (pane, gone, time, text).
fn journal_hits(result: &Value, needle: &str) -> Vec<(String, bool, String, String)> {
    result["journal_matches"]
        .as_array()
        .map(|a| a.as_slice())
        .unwrap_or_default()
        .iter()
        .filter(|h| h["text"].as_str().unwrap().contains(needle))
        .map(|h| {
            (
                h["pane_id"].as_str().unwrap().to_owned(),
                h["pane_gone"].as_bool().unwrap(),
                h["time"].as_str().unwrap().to_owned(),
                h["text"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

fn ms(rfc3339: &str) -> i64 {
    when::parse(rfc3339, 0).unwrap()
}

/// Through the daemon: a session that names no journal reads the
/// daemon's; trimmed lines come from the journal, held ones from tmux
/// (with the journal's time and the line number capture_pane takes),
/// each once; a killed pane's lines are found; since_time and until_time
/// narrow, with and without `journal`; the resource; the CLI; a server
/// that is gone.
#[test]
fn journal_search_finds_trimmed_and_gone_lines_once_with_their_times() {
    let place = Place::new("jsearch");
    let journal = place.temp_root().join("journal");
    let p = Printers::start("jsearch", 100, &place.temp_root());
    let main = p.pane("main");
    let doomed = p.pane("doomed");
    let started = when::now_ms();
    let mut daemon = place.start_daemon(&[
        "--journal",
        "--idle-exit",
        "0",
        "-L",
        p.tmux.socket_name(),
        "--journal-dir",
        journal.to_str().unwrap(),
    ]);
    p.run("main", "echo needle-old");
    p.pad("main", &main, 300, "mark-1");
    p.run("doomed", "echo needle-killed");
    p.pad("doomed", &doomed, 20, "mark-d");
    std::thread::sleep(SETTLE);
    let middle = when::now_ms();
    std::thread::sleep(Duration::from_millis(1_100));
    p.run("main", "echo needle-new");
    p.pad("main", &main, 20, "mark-2");
    std::thread::sleep(SETTLE);
    p.tmux.run_ok(["kill-pane", "-t", &doomed]).unwrap();
    std::thread::sleep(SETTLE);

    let mut serve = place.serve("s1", p.tmux.socket_name(), &[]);
    serve.initialize();
    // tmux alone: the trimmed line is not there.
    let plain = serve.call_ok(
        "search_panes",
        json!({"pattern": "needle", "scrollback_lines": 100000}),
    );
    assert!(live_hits(&plain, "needle-old").is_empty(), "{plain}");
    assert_eq!(live_hits(&plain, "needle-new").len(), 1, "{plain}");
    assert!(plain.get("journal_matches").is_none());

    let before_call = when::now_ms();
    let all = serve.call_ok(
        "search_panes",
        json!({"pattern": "needle", "journal": true}),
    );
    // Held: from tmux once, with the journal's time (not this search's).
    let new = live_hits(&all, "needle-new");
    assert_eq!(new.len(), 1, "{all}");
    let (pane, line, time, _) = &new[0];
    assert_eq!(pane, &main);
    let t = ms(time.as_deref().expect("a held, journaled line has a time"));
    assert!(
        t > middle && t < before_call,
        "{t} not in ({middle}, {before_call})"
    );
    assert!(
        journal_hits(&all, "needle-new").is_empty(),
        "reported twice: {all}"
    );
    // Its line number is where capture_pane finds it.
    let at = serve.call_ok(
        "capture_pane",
        json!({"pane_id": main, "start": line, "end": line}),
    );
    assert_eq!(
        at["text"].as_str().unwrap().trim_end(),
        "needle-new",
        "{at}"
    );
    // Trimmed: from the journal, the pane still there.
    let old = journal_hits(&all, "needle-old");
    assert_eq!(old.len(), 1, "{all}");
    assert_eq!((old[0].0.as_str(), old[0].1), (main.as_str(), false));
    let t_old = ms(&old[0].2);
    assert!(t_old >= started - 1_000 && t_old < middle, "{t_old}");
    // Killed: from the journal, the pane gone.
    let killed = journal_hits(&all, "needle-killed");
    assert_eq!(killed.len(), 1, "{all}");
    assert_eq!((killed[0].0.as_str(), killed[0].1), (doomed.as_str(), true));
    // Nothing else twice: every pad line of the held history once.
    let pads = serve.call_ok("search_panes", json!({"pattern": "pad-1", "journal": true, "max_matches": 2000, "max_matches_per_pane": 2000}));
    let mut count: std::collections::BTreeMap<String, usize> = Default::default();
    let live = live_hits(&pads, "pad-")
        .into_iter()
        .filter(|h| h.0 == main)
        .map(|h| h.3);
    let kept = journal_hits(&pads, "pad-")
        .into_iter()
        .filter(|h| h.0 == main)
        .map(|h| h.3);
    for text in live.chain(kept) {
        *count.entry(text).or_default() += 1;
    }
    // pad-1 and pad-10..19 were printed by both runs, pad-100..199 by
    // the first: each exactly as often as printed.
    let mut want: std::collections::BTreeMap<String, usize> = Default::default();
    for i in (0..300).chain(0..20) {
        let text = format!("pad-{i}");
        if text.starts_with("pad-1") {
            *want.entry(text).or_default() += 1;
        }
    }
    assert_eq!(count, want, "{pads}");

    // Narrowed: since the middle, only the new line; until it, only the old.
    let since = when::format(middle);
    let after = serve.call_ok(
        "search_panes",
        json!({"pattern": "needle", "journal": true, "since_time": since}),
    );
    assert_eq!(live_hits(&after, "needle").len(), 1, "{after}");
    assert!(journal_hits(&after, "needle").is_empty(), "{after}");
    let until = serve.call_ok(
        "search_panes",
        json!({"pattern": "needle", "journal": true, "until_time": since}),
    );
    assert!(live_hits(&until, "needle").is_empty(), "{until}");
    assert_eq!(journal_hits(&until, "needle").len(), 2, "{until}");
    // Without the journal's lines, a time still narrows tmux's.
    let live_since = serve.call_ok(
        "search_panes",
        json!({"pattern": "needle", "since_time": "1h"}),
    );
    assert_eq!(live_hits(&live_since, "needle").len(), 1, "{live_since}");
    assert!(live_since.get("journal_matches").is_none());
    let live_until = serve.call_ok(
        "search_panes",
        json!({"pattern": "needle", "until_time": since}),
    );
    assert!(live_hits(&live_until, "needle").is_empty(), "{live_until}");

    // The resource: the killed pane's journal, and narrowed.
    let number = doomed.trim_start_matches('%');
    let read = serve.request(
        "resources/read",
        json!({"uri": format!("tmux://pane/{number}/journal")}),
    );
    let text = read["result"]["contents"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let line = text
        .lines()
        .find(|l| l.ends_with("\tneedle-killed"))
        .unwrap_or_else(|| panic!("{read}"));
    assert!(ms(line.split('\t').next().unwrap()) < middle);
    let main_number = main.trim_start_matches('%');
    let read = serve.request(
        "resources/read",
        json!({"uri": format!("tmux://pane/{main_number}/journal?since={since}")}),
    );
    let text = read["result"]["contents"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(text.contains("\tneedle-new"), "{read}");
    // Only lines of the span (without it: the newest 200, most older).
    for line in text.lines() {
        assert!(ms(line.split('\t').next().unwrap()) >= middle, "{line}");
    }
    let templates = serve.request("resources/templates/list", json!({}));
    assert!(
        templates.to_string().contains("/journal{?since,until}"),
        "{templates}"
    );

    // The command line, the same semantics.
    let cli = Command::new(env!("CARGO_BIN_EXE_panescan"))
        .args([
            "search",
            "--journal",
            "--since",
            "2h",
            "-L",
            p.tmux.socket_name(),
            "needle",
        ])
        .arg("--journal-dir")
        .arg(&journal)
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&cli.stdout);
    assert_eq!(cli.status.code(), Some(0), "{out}");
    assert_eq!(out.matches("needle-new").count(), 1, "{out}");
    assert!(
        out.lines()
            .any(|l| l.contains(&format!("{doomed} (gone)")) && l.ends_with("needle-killed")),
        "{out}"
    );

    // The server gone: its panes are all in the journal.
    drop(serve);
    p.tmux.run_ok(["kill-server"]).ok();
    let mut serve = place.serve("s2", p.tmux.socket_name(), &[]);
    serve.initialize();
    let gone = serve.call_ok(
        "search_panes",
        json!({"pattern": "needle", "journal": true}),
    );
    let hits = journal_hits(&gone, "needle");
    assert_eq!(hits.len(), 3, "{gone}");
    assert!(hits.iter().all(|h| h.1), "{gone}");
    let _ = daemon.kill();
    let _ = daemon.wait();
}

/// In-process serve with --journal-dir: the byte budget stops the journal
/// as it stops captures (and says so); hostile times and a missing
/// journal are clear errors.
#[test]
fn journal_bytes_are_budgeted_and_bad_times_refused() {
    let temp = TempDir::new("jsearch-budget");
    let journal = temp.0.join("journal");
    let p = Printers::start("jsearch-budget", 100, &temp.0);
    let main = p.pane("main");
    let handle = writer::start(
        config(&journal),
        &ServerSpec::named(p.tmux.socket_name()),
        None,
    )
    .unwrap();
    p.run("main", "echo needle-old");
    p.pad("main", &main, 300, "mark-1");
    std::thread::sleep(SETTLE);
    handle.stop();
    let mut serve = Serve::spawn_with(
        &[
            "serve",
            "-L",
            p.tmux.socket_name(),
            "--journal-dir",
            journal.to_str().unwrap(),
        ],
        &[],
    );
    serve.initialize();
    let live = serve.call_ok(
        "search_panes",
        json!({"pattern": "needle", "scrollback_lines": 100000}),
    );
    // A pattern no frame index can rule out (`zq`: under three bytes):
    // frames an index rules out are not scanned (not even those holding
    // the live pane's lines, since tails are held compressed), and their
    // bytes would not count.
    let full = serve.call_ok(
        "search_panes",
        json!({"pattern": "needle|zq", "regex": true, "journal": true}),
    );
    let live_bytes = live["bytes_scanned"].as_u64().unwrap();
    let all_bytes = full["bytes_scanned"].as_u64().unwrap();
    assert!(
        all_bytes > live_bytes + 1000,
        "the journal's bytes count: {live_bytes} {all_bytes}"
    );
    assert_eq!(journal_hits(&full, "needle-old").len(), 1, "{full}");
    assert_eq!(full["matching_byte_clamped"], false);
    // Room for tmux's bytes and a little of the journal's.
    let budget = live_bytes + 5;
    let cut = serve.call_ok(
        "search_panes",
        json!({"pattern": "needle", "journal": true, "max_scan_bytes": budget}),
    );
    assert_eq!(cut["matching_byte_clamped"], true, "{cut}");
    assert!(cut["bytes_scanned"].as_u64().unwrap() <= budget, "{cut}");
    assert!(journal_hits(&cut, "needle-old").is_empty(), "{cut}");
    // A match budget taken by tmux's hit leaves none for the journal's.
    let one = serve.call_ok(
        "search_panes",
        json!({"pattern": "needle|mark", "regex": true, "journal": true, "max_matches": 1}),
    );
    assert_eq!(one["matches_truncated"], true, "{one}");
    assert!(journal_hits(&one, "needle").is_empty(), "{one}");

    for (args, says) in [
        (
            json!({"pattern": "x", "since_time": "yesterday"}),
            "since_time",
        ),
        (
            json!({"pattern": "x", "until_time": "2026-13-45T99:00:00Z"}),
            "until_time",
        ),
        (
            json!({"pattern": "x", "since_time": "1h", "until_time": "2h"}),
            "after until_time",
        ),
        (
            json!({"pattern": "x", "since_time": "9".repeat(10_000)}),
            "too long",
        ),
        (
            json!({"pattern": "x", "since_time": "99999999999999999999999d"}),
            "since_time",
        ),
        (
            json!({"pattern": "x", "journal": true, "group_by": "text"}),
            "group_by",
        ),
    ] {
        let err = serve.call_err("search_panes", args.clone());
        assert!(err.contains(says), "{args}: {err}");
    }
    // A span reaching before any journal is no error.
    let wide = serve.call_ok(
        "search_panes",
        json!({"pattern": "needle", "journal": true, "since_time": "100000d"}),
    );
    assert_eq!(journal_hits(&wide, "needle-old").len(), 1, "{wide}");
    let bad = serve.request(
        "resources/read",
        json!({"uri": "tmux://pane/1/journal?since=tomorrow"}),
    );
    assert!(
        bad["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("since"),
        "{bad}"
    );
    drop(serve);

    // No journal there: the error says how to start one.
    let mut serve = Serve::spawn_with(
        &[
            "serve",
            "-L",
            p.tmux.socket_name(),
            "--journal-dir",
            temp.0.join("none").to_str().unwrap(),
        ],
        &[],
    );
    serve.initialize();
    let err = serve.call_err("search_panes", json!({"pattern": "x", "journal": true}));
    assert!(err.contains("panescan daemon --journal"), "{err}");
    let err = serve.call_err("search_panes", json!({"pattern": "x", "since_time": "1h"}));
    assert!(err.contains("panescan daemon --journal"), "{err}");
}
