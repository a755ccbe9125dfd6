//! search_panes with `since` through `panescan serve`: only what panes
//! printed after a cursor, and what broke the cursor said per pane.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::collections::HashMap;
use std::io::Write;
use std::time::Duration;

use common::{eventually, validate, Serve};
use panescan::testing::fixture::{Fixture, FixtureShape};
use panescan::testing::private_server::{process_state, PrivateServer};
use serde_json::{json, Value};

const MARK: &str = "since-mark";

fn fixture(label: &str, panes: usize, lines: usize) -> Fixture {
    let shape = FixtureShape {
        panes,
        lines,
        width: 100,
        height: 20,
        needle_every: 1_000_000,
    };
    Fixture::build(
        label,
        shape,
        &panescan::testing::corpus::sources(),
        Duration::from_secs(300),
        &mut |_, _| {},
    )
    .unwrap()
}

/// Each pane's terminal: writing there is the pane printing.
fn ttys(tmux: &PrivateServer) -> HashMap<String, String> {
    tmux.run_ok(["list-panes", "-a", "-F", "#{pane_id} #{pane_tty}"])
        .unwrap()
        .lines()
        .filter_map(|l| l.split_once(' '))
        .map(|(p, t)| (p.to_owned(), t.to_owned()))
        .collect()
}

/// Prints `text` as a line in `pane` and waits until tmux shows it.
fn print_in(tmux: &PrivateServer, pane: &str, text: &str) {
    let tty = ttys(tmux).remove(pane).unwrap();
    let mut f = std::fs::OpenOptions::new().write(true).open(&tty).unwrap();
    write!(f, "{text}\r\n").unwrap();
    let shown = eventually(Duration::from_secs(10), || {
        tmux.run_ok(["capture-pane", "-p", "-t", pane])
            .is_ok_and(|t| t.contains(text))
    });
    assert!(shown, "{text:?} never showed in {pane}");
}

fn hits(r: &Value) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for pane in r["matches"].as_array().unwrap() {
        for line in pane["lines"].as_array().unwrap() {
            out.push((
                pane["pane_id"].as_str().unwrap().to_owned(),
                line["text"].as_str().unwrap().to_owned(),
            ));
        }
    }
    out.sort();
    out
}

fn search(s: &mut Serve, since: Option<&Value>) -> Value {
    let mut args = json!({"pattern": MARK, "scrollback_lines": 100_000});
    if let Some(cursor) = since {
        args["since"] = cursor.clone();
    }
    s.call_ok("search_panes", args)
}

#[test]
fn a_since_search_returns_exactly_the_lines_printed_in_3_of_200_panes() {
    let fx = fixture("since-200", 200, 60);
    let mut s = Serve::spawn(fx.server.socket_name());
    s.initialize();
    let first = search(&mut s, None);
    assert_eq!(first["total_panes_matched"], 0, "{first}");
    assert_eq!(first["panes_searched"], 200);
    // A client reading only the text gets the cursor too.
    let r = s.call(
        "search_panes",
        json!({"pattern": MARK, "pane_ids": [fx.pane_ids[0]]}),
    );
    let text = r["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("cursor: ps3."), "{text}");
    assert!(text.trim_end().ends_with("complete"), "{text}");

    let changed = [&fx.pane_ids[3], &fx.pane_ids[100], &fx.pane_ids[199]];
    let mut expected = Vec::new();
    for (i, pane) in changed.iter().enumerate() {
        let text = format!("{MARK} {i} error");
        print_in(&fx.server, pane, &text);
        expected.push((pane.to_string(), text));
    }
    expected.sort();
    let since = search(&mut s, Some(&first["cursor"]));
    assert_eq!(hits(&since), expected, "{since}");
    assert_eq!(since["panes_searched"], 200);
    // Only the new lines were scanned: one a changed pane.
    assert_eq!(since["lines_scanned"], 3, "{since}");
    assert!(since.get("since_panes").is_none(), "{since}");
    assert!(since.get("since_reset").is_none(), "{since}");

    // Nothing printed since: nothing scanned, nothing found.
    let again = search(&mut s, Some(&since["cursor"]));
    assert_eq!(again["total_panes_matched"], 0, "{again}");
    assert_eq!(again["lines_scanned"], 0, "{again}");
}

/// `panescan serve` on `socket_name`, with its pane cache or without (a
/// search without one lists fewer fields: the cursor's must all be there).
fn serve(socket_name: &str, cached: bool) -> Serve {
    let mut args = vec!["serve", "--socket-name", socket_name];
    if !cached {
        args.push("--no-cache");
    }
    Serve::spawn_with(&args, &[])
}

#[test]
fn a_since_search_says_per_pane_what_was_cleared_resized_respawned_or_new() {
    since_reasons("since-reset", true);
}

#[test]
fn without_the_pane_cache_a_since_search_says_the_same() {
    since_reasons("since-reset-uncached", false);
}

fn since_reasons(label: &str, cached: bool) {
    let fx = fixture(label, 4, 120);
    let tmux = &fx.server;
    let ids = &fx.pane_ids;
    let mut s = serve(tmux.socket_name(), cached);
    s.initialize();
    let first = search(&mut s, None);
    assert_eq!(first["total_panes_matched"], 0, "{first}");

    tmux.run_ok(["clear-history", "-t", &ids[0]]).unwrap();
    tmux.run_ok(["resize-window", "-t", &ids[1], "-x", "90"])
        .unwrap();
    let respawned = format!("{MARK} respawned");
    tmux.run_ok([
        "respawn-pane",
        "-k",
        "-t",
        &ids[2],
        &format!("sh -c 'echo {respawned}; exec sleep 1000'"),
    ])
    .unwrap();
    let printed = format!("{MARK} printed");
    print_in(tmux, &ids[3], &printed);
    let new = tmux
        .run_ok([
            "new-window",
            "-d",
            "-P",
            "-F",
            "#{pane_id}",
            &format!("sh -c 'echo {MARK} new; exec sleep 1000'"),
        ])
        .unwrap()
        .trim()
        .to_owned();
    let shown = eventually(Duration::from_secs(10), || {
        [&ids[2], &new].iter().all(|p| {
            tmux.run_ok(["capture-pane", "-p", "-t", p])
                .is_ok_and(|t| t.contains(MARK))
        })
    });
    assert!(shown);

    let since = search(&mut s, Some(&first["cursor"]));
    let list = s.request("tools/list", json!({}));
    let schema = list["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "search_panes")
        .unwrap()["outputSchema"]
        .clone();
    assert_eq!(validate(&schema, &since), Vec::<String>::new());
    let notes: HashMap<String, (String, Value)> = since["since_panes"]
        .as_array()
        .unwrap_or_else(|| panic!("no since_panes: {since}"))
        .iter()
        .map(|n| {
            (
                n["pane_id"].as_str().unwrap().to_owned(),
                (
                    n["reason"].as_str().unwrap().to_owned(),
                    n["missed_lines"].clone(),
                ),
            )
        })
        .collect();
    let reason = |p: &str| notes.get(p).map(|n| n.0.as_str());
    assert_eq!(reason(&ids[0]), Some("cleared"), "{since}");
    // Clearing the history left the lines above the cursor on screen.
    assert_eq!(notes[&ids[0]].1, 0, "{since}");
    assert_eq!(reason(&ids[1]), Some("resized"), "{since}");
    assert_eq!(reason(&ids[2]), Some("respawned"), "{since}");
    assert_eq!(reason(&ids[3]), None, "{since}");
    assert_eq!(reason(&new), Some("new"), "{since}");
    assert_eq!(
        hits(&since),
        vec![
            (ids[2].clone(), respawned),
            (ids[3].clone(), printed),
            (new.clone(), format!("{MARK} new")),
        ],
        "{since}"
    );
}

#[test]
fn a_damaged_or_foreign_cursor_is_an_error_and_a_restart_searches_in_full() {
    let fx = fixture("since-bad", 2, 10);
    let mut s = Serve::spawn(fx.server.socket_name());
    s.initialize();
    let first = search(&mut s, None);
    let cursor = first["cursor"].as_str().unwrap().to_owned();
    let cut = &cursor[..cursor.len() - 2];
    let e = s.call_err("search_panes", json!({"pattern": MARK, "since": cut}));
    assert!(
        e.contains("not a search_panes cursor") || e.contains("not a cursor this panescan made"),
        "{e}"
    );

    // Another tmux server, through the same panescan: named as such.
    let other = fixture("since-other", 1, 10);
    let e = s.call_err(
        "search_panes",
        json!({"pattern": MARK, "since": cursor.clone(), "socket_name": other.server.socket_name()}),
    );
    assert!(e.contains("another tmux server"), "{e}");
    // Another panescan process: not a cursor it made (the key is per
    // process), so no guess is made from it.
    let mut s2 = Serve::spawn(other.server.socket_name());
    s2.initialize();
    let e = s2.call_err(
        "search_panes",
        json!({"pattern": MARK, "since": cursor.clone()}),
    );
    assert!(e.contains("not a cursor this panescan made"), "{e}");

    // The same socket, a new server: everything in full, flagged. tmux
    // answers kill-server before its process has ended (it waits for its
    // clients to go): a new session started meanwhile reaches the dying
    // server, so wait for it to be gone.
    let old = fx.server.pid().unwrap();
    fx.server.kill();
    let gone = eventually(Duration::from_secs(10), || {
        process_state(old).is_none_or(|state| state == 'Z')
    });
    assert!(gone, "the old server {old} did not exit");
    fx.server
        .run_ok([
            "new-session",
            "-d",
            "-s",
            "again",
            &format!("sh -c 'echo {MARK} restarted; exec sleep 1000'"),
        ])
        .unwrap();
    let shown = eventually(Duration::from_secs(10), || {
        fx.server
            .run_ok(["capture-pane", "-p", "-t", "again"])
            .is_ok_and(|t| t.contains(MARK))
    });
    assert!(shown);
    let r = search(&mut s, Some(&Value::String(cursor)));
    assert_eq!(r["since_reset"], true, "{r}");
    assert_eq!(r["total_panes_matched"], 1, "{r}");
}

#[test]
fn a_since_search_says_when_history_was_trimmed_and_whether_lines_were_lost() {
    since_trimmed("since-trim", true);
}

#[test]
fn without_the_pane_cache_a_since_search_says_when_history_was_trimmed() {
    since_trimmed("since-trim-uncached", false);
}

fn since_trimmed(label: &str, cached: bool) {
    let tmux = PrivateServer::start(label, 80, 20).unwrap();
    tmux.run_ok(["set-option", "-g", "history-limit", "100"])
        .unwrap();
    let window = |name: &str| {
        tmux.run_ok([
            "new-window",
            "-d",
            "-n",
            name,
            "-P",
            "-F",
            "#{pane_id}",
            "sh -c 'seq 1 200; exec sleep 100000'",
        ])
        .unwrap()
        .trim()
        .to_owned()
    };
    let (lost, kept) = (window("lost"), window("kept"));
    let filled = eventually(Duration::from_secs(10), || {
        [&lost, &kept].iter().all(|p| {
            tmux.run_ok(["capture-pane", "-p", "-t", p])
                .is_ok_and(|t| t.contains("200"))
        })
    });
    assert!(filled);
    let mut s = serve(tmux.socket_name(), cached);
    s.initialize();
    let first = search(&mut s, None);
    // `lost` prints far more than its history keeps; `kept` a little,
    // enough for tmux to trim its oldest rows.
    let mut long = String::new();
    for i in 0..300 {
        long.push_str(&format!("{MARK} lost {i}\r\n"));
    }
    let mut tty = std::fs::OpenOptions::new()
        .write(true)
        .open(ttys(&tmux).remove(&lost).unwrap())
        .unwrap();
    tty.write_all(long.as_bytes()).unwrap();
    for i in 0..15 {
        print_in(&tmux, &kept, &format!("{MARK} kept {i}"));
    }
    print_in(&tmux, &lost, &format!("{MARK} lost end"));
    let since = search(&mut s, Some(&first["cursor"]));
    let note = |p: &str| {
        since["since_panes"]
            .as_array()
            .unwrap_or_else(|| panic!("no since_panes: {since}"))
            .iter()
            .find(|n| n["pane_id"] == p)
            .cloned()
            .unwrap_or_else(|| panic!("{p} not named: {since}"))
    };
    let (l, k) = (note(&lost), note(&kept));
    assert_eq!(l["reason"], "trimmed", "{since}");
    assert!(l.get("missed_lines").is_none(), "{since}");
    assert_eq!(k["reason"], "trimmed", "{since}");
    assert_eq!(k["missed_lines"], 0, "{since}");
    let kept_hits: Vec<String> = hits(&since)
        .into_iter()
        .filter(|(p, _)| p == &kept)
        .map(|(_, t)| t)
        .collect();
    let mut want: Vec<String> = (0..15).map(|i| format!("{MARK} kept {i}")).collect();
    want.sort();
    assert_eq!(kept_hits, want, "{since}");
    tmux.kill();
}

/// A since search that a budget cut short (lines, bytes, matches) keeps
/// every pane's old place in its cursor: the next since search finds all
/// that was printed, not only what follows the cut. The first pane prints
/// 52 lines, more than `max_matches_per_pane`'s default of 20, the second
/// 8, fewer: cut by `max_matches`, the second pane is not cut on its own
/// (skipped, or scanned whole with its matches left out of the answer),
/// and only the search's flag keeps its place.
#[test]
fn a_since_search_cut_short_by_a_budget_keeps_every_panes_place() {
    let fx = fixture("since-budget", 2, 10);
    let tmux = &fx.server;
    let mut s = Serve::spawn(tmux.socket_name());
    s.initialize();
    let first = search(&mut s, None);
    assert_eq!(first["total_panes_matched"], 0, "{first}");
    let mut want = Vec::new();
    for (pane, lines) in [(&fx.pane_ids[0], 52), (&fx.pane_ids[1], 8)] {
        let mut printed = String::new();
        for i in 0..lines - 1 {
            printed.push_str(&format!("{MARK} budget {i:02}\r\n"));
        }
        let mut tty = std::fs::OpenOptions::new()
            .write(true)
            .open(ttys(tmux).remove(pane).unwrap())
            .unwrap();
        tty.write_all(printed.as_bytes()).unwrap();
        print_in(tmux, pane, &format!("{MARK} budget {:02}", lines - 1));
        want.extend((0..lines).map(|i| (pane.clone(), format!("{MARK} budget {i:02}"))));
    }
    want.sort();
    // (budget, its value, where the answer says it cut)
    let budgets = [
        ("max_scan_lines", 10, "/matching_line_clamped"),
        ("max_scan_bytes", 200, "/matching_byte_clamped"),
        ("max_matches", 5, "/matches_truncated"),
        ("max_matches_per_pane", 5, "/matches/0/lines_truncated"),
    ];
    for (name, value, flag) in budgets {
        let mut args = json!({"pattern": MARK, "since": first["cursor"]});
        args[name] = json!(value);
        let cut = s.call_ok("search_panes", args);
        assert_eq!(cut.pointer(flag), Some(&json!(true)), "{name}: {cut}");
        assert!(hits(&cut).len() < want.len(), "{name} did not cut: {cut}");
        let next = s.call_ok(
            "search_panes",
            json!({"pattern": MARK, "since": cut["cursor"], "max_matches_per_pane": 1000}),
        );
        assert_eq!(hits(&next), want, "after {name}: {next}");
    }
}

/// A since search that takes a second look (a pane cleared since the
/// cursor: its history is captured again and scanned in a second engine
/// pass) stays within the caller's budgets, says which one cut it, and
/// keeps every pane's place. Each pane prints 8 matching lines; a budget
/// of three quarters of what the whole search takes lets the first pass
/// (the pane not cleared) through and cuts the second. The second pass
/// got every budget whole again: twice the lines, bytes or matches asked
/// for, and no flag.
#[test]
fn a_since_search_that_looks_twice_stays_within_its_budgets() {
    let fx = fixture("since-twice", 2, 120);
    let tmux = &fx.server;
    let (cleared, printed) = (&fx.pane_ids[0], &fx.pane_ids[1]);
    let mut s = Serve::spawn(tmux.socket_name());
    s.initialize();
    let first = search(&mut s, None);
    assert_eq!(first["total_panes_matched"], 0, "{first}");
    tmux.run_ok(["clear-history", "-t", cleared]).unwrap();
    let mut want = Vec::new();
    for pane in [cleared, printed] {
        for i in 0..8 {
            let text = format!("{MARK} twice {i}");
            print_in(tmux, pane, &text);
            want.push((pane.clone(), text));
        }
    }
    want.sort();
    let whole = search(&mut s, Some(&first["cursor"]));
    assert_eq!(hits(&whole), want, "{whole}");
    assert_eq!(whole["since_panes"][0]["pane_id"], *cleared, "{whole}");
    assert_eq!(whole["since_panes"][0]["reason"], "cleared", "{whole}");
    let count = |r: &Value, what: &str| r[what].as_u64().unwrap();
    let (lines, bytes) = (
        count(&whole, "lines_scanned"),
        count(&whole, "bytes_scanned"),
    );
    // (budget, its value, what it bounds, where the answer says it cut)
    let budgets = [
        (
            "max_scan_lines",
            lines * 3 / 4,
            "lines_scanned",
            "matching_line_clamped",
        ),
        (
            "max_scan_bytes",
            bytes * 3 / 4,
            "bytes_scanned",
            "matching_byte_clamped",
        ),
        ("max_matches", 12, "matches", "matches_truncated"),
    ];
    for (name, value, bounded, flag) in budgets {
        let mut args = json!({"pattern": MARK, "scrollback_lines": 100_000,
                              "since": first["cursor"]});
        args[name] = json!(value);
        let cut = s.call_ok("search_panes", args);
        let used = match bounded {
            "matches" => hits(&cut).len() as u64,
            _ => count(&cut, bounded),
        };
        assert!(
            used <= value,
            "{name} {value}: {bounded} {used} (the whole search: {lines} lines, {bytes} bytes, 16 matches): {cut}"
        );
        assert_eq!(cut[flag], true, "{name} {value}: {cut}");
        assert!(hits(&cut).len() < want.len(), "{name} did not cut: {cut}");
        let next = search(&mut s, Some(&cut["cursor"]));
        assert_eq!(hits(&next), want, "after {name}: {next}");
    }
}

/// A cursor remembers whether wrapped lines were joined (its anchors hash
/// what was scanned): a since search with the other join_wrapped is
/// refused, either way round, and the same join_wrapped is accepted.
#[test]
fn a_cursor_made_with_another_join_wrapped_is_refused() {
    let fx = fixture("since-joined", 1, 10);
    let mut s = Serve::spawn(fx.server.socket_name());
    s.initialize();
    for (made, other) in [(true, false), (false, true)] {
        let first = s.call_ok(
            "search_panes",
            json!({"pattern": MARK, "join_wrapped": made}),
        );
        let e = s.call_err(
            "search_panes",
            json!({"pattern": MARK, "join_wrapped": other, "since": first["cursor"]}),
        );
        assert!(
            e.contains(&format!("made with join_wrapped {made}")),
            "join_wrapped {made} then {other}: {e}"
        );
        let same = s.call_ok(
            "search_panes",
            json!({"pattern": MARK, "join_wrapped": made, "since": first["cursor"]}),
        );
        assert_eq!(same["lines_scanned"], 0, "{same}");
    }
}

/// A since search whose answer is cut to fit the response (not by a
/// budget: every match was found, only the response had no room for them)
/// keeps every pane's place too: the lines it could not show are found by
/// the next since search from its cursor. 600 new matching lines of quotes
/// (each about 3.7 KB in the answer, JSON-escaped in the result and its
/// text) do not fit in the 1,000,000-byte response.
#[test]
fn a_since_search_cut_to_fit_the_response_keeps_every_panes_place() {
    let dir = common::TempDir::new("since-ceiling");
    let (tmux, mut s) = Serve::with_tmux_size("since-ceiling", 1000, 50);
    s.initialize();
    let file = dir.0.join("lines");
    let quotes: String = (0..900)
        .map(|i| if i % 2 == 0 { '"' } else { '\\' })
        .collect();
    let printed: String = (0..600)
        .map(|i| format!("{MARK} {i:05} {quotes}\r\n"))
        .collect();
    std::fs::write(&file, printed).unwrap();
    // The lines are printed when Enter is pressed in the pane.
    let script = format!(
        "stty -onlcr -echo 2>/dev/null; printf 'READY\\r\\n'; read x; cat '{}'; printf 'END\\r\\n'; exec sleep 100000",
        file.display()
    );
    let pane = common::window_showing(&tmux, None, &script, "READY", &[]);
    let args = |pattern: &str, since: &Value| {
        json!({"pattern": pattern, "pane_ids": [pane], "scrollback_lines": 100_000,
               "max_matches": 10_000, "max_matches_per_pane": 10_000, "since": since})
    };
    let first = s.call_ok("search_panes", args(MARK, &json!("")));
    assert_eq!(first["total_panes_matched"], 0, "{first}");
    tmux.run_ok(["send-keys", "-t", &pane, "Enter"]).unwrap();
    let printed = eventually(Duration::from_secs(20), || {
        tmux.run_ok(["capture-pane", "-p", "-t", &pane])
            .is_ok_and(|t| t.contains("END"))
    });
    assert!(printed, "the lines were never printed");

    let cut = s.call_ok("search_panes", args(MARK, &first["cursor"]));
    let shown = hits(&cut).len();
    assert!(
        cut["matches_truncated"] == true && shown > 0 && shown < 600,
        "not cut to fit: {shown} lines shown, matches_truncated {}",
        cut["matches_truncated"]
    );
    for flag in [
        "matching_line_clamped",
        "matching_byte_clamped",
        "matching_time_clamped",
    ] {
        assert_eq!(
            cut[flag], false,
            "{flag}: a budget cut it, not the response"
        );
    }
    // The last 100 lines (00500..00599) were never shown: the next since
    // search finds them all.
    let next = s.call_ok("search_panes", args(&format!("{MARK} 005"), &cut["cursor"]));
    let want: Vec<(String, String)> = (500..600)
        .map(|i| (pane.clone(), format!("{MARK} {i:05} {quotes}")))
        .collect();
    let found = hits(&next);
    assert_eq!(
        found.len(),
        want.len(),
        "after a cut of {shown} lines shown, the next since search found {} of the 100 never shown",
        found.len()
    );
    assert_eq!(found, want);
}

/// A private server with history-limit 100 (tmux trims 10 rows at once)
/// and one pane that printed `seq 1 200`, then ran `tail` (a shell
/// command): its pane id and its terminal.
fn near_the_limit(label: &str, tail: &str) -> (PrivateServer, String, String) {
    let tmux = PrivateServer::start(label, 80, 20).unwrap();
    tmux.run_ok(["set-option", "-g", "history-limit", "100"])
        .unwrap();
    let pane = tmux
        .run_ok([
            "new-window",
            "-d",
            "-P",
            "-F",
            "#{pane_id}",
            &format!("sh -c 'seq 1 200; {tail}; exec sleep 100000'"),
        ])
        .unwrap()
        .trim()
        .to_owned();
    let filled = eventually(Duration::from_secs(10), || {
        tmux.run_ok(["capture-pane", "-p", "-t", &pane])
            .is_ok_and(|t| t.contains("200"))
    });
    assert!(filled);
    let tty = ttys(&tmux).remove(&pane).unwrap();
    (tmux, pane, tty)
}

/// Writes `ERR`, `filler` lines of `fill`, then `tail` to the pane's
/// terminal: history passes its limit (more than one trim), and waits
/// until tmux shows the tail.
fn print_over_the_limit(tmux: &PrivateServer, pane: &str, tty: &str, fill: &str, filler: usize) {
    let mut out = format!("{MARK} ERR\r\n");
    out.push_str(&format!("{fill}\r\n").repeat(filler));
    out.push_str(&format!("{MARK} tail\r\n"));
    let mut f = std::fs::OpenOptions::new().write(true).open(tty).unwrap();
    f.write_all(out.as_bytes()).unwrap();
    let shown = eventually(Duration::from_secs(10), || {
        tmux.run_ok(["capture-pane", "-p", "-t", pane])
            .is_ok_and(|t| t.contains(&format!("{MARK} tail")))
    });
    assert!(shown);
}

/// The pane's last lines are blank when the cursor is made; it then
/// prints ERR and 45 blank lines, and tmux trims its history 5 times. A
/// three-line anchor of blank lines was found again on blank lines after
/// the trims, and ERR was skipped with "missed_lines: 0"; the anchor now
/// reaches past the blank lines to "199" and "200", found once where the
/// trims moved it.
#[test]
fn a_since_search_finds_what_came_before_blank_lines_trimmed_onto_its_anchor() {
    for cached in [true, false] {
        let (tmux, pane, tty) = near_the_limit(
            &format!("since-blank-{cached}"),
            "printf \"\\n\\n\\n\\n\\n\"",
        );
        let mut s = serve(tmux.socket_name(), cached);
        s.initialize();
        let first = search(&mut s, None);
        assert_eq!(first["total_panes_matched"], 0, "{first}");
        print_over_the_limit(&tmux, &pane, &tty, "", 45);
        let since = search(&mut s, Some(&first["cursor"]));
        let lines: Vec<String> = hits(&since).into_iter().map(|(_, t)| t).collect();
        assert_eq!(
            lines,
            [format!("{MARK} ERR"), format!("{MARK} tail")],
            "cached {cached}: {since}"
        );
        let note = &since["since_panes"][0];
        assert_eq!(note["reason"], "trimmed", "{since}");
        assert_eq!(note["missed_lines"], 0, "{since}");
        tmux.kill();
    }
}

/// capture_since the same way, over a line repeated: `tick` printed 8
/// times before the cursor, then ERR and 45 more `tick`s past the limit.
/// A three-line anchor of `tick` (two lines of text were enough) held at
/// its row after the trims and ERR was never returned; the anchor now
/// reaches "200", found once where the trims moved it.
#[test]
fn capture_since_returns_what_came_before_repeated_lines_trimmed_onto_its_anchor() {
    let (tmux, pane, tty) = near_the_limit("since-tick", "yes tick | head -n 8");
    let mut s = Serve::spawn(tmux.socket_name());
    s.initialize();
    let first = s.call_ok("capture_since", json!({"pane_id": pane}));
    print_over_the_limit(&tmux, &pane, &tty, "tick", 45);
    let next = s.call_ok(
        "capture_since",
        json!({"pane_id": pane, "cursor": first["cursor"]}),
    );
    let text = next["text"].as_str().unwrap();
    assert!(text.starts_with(&format!("{MARK} ERR\ntick\n")), "{next}");
    assert!(text.ends_with(&format!("{MARK} tail\n")), "{next}");
    assert_eq!(next["missed"], false, "{next}");
    assert_eq!(next["missed_lines"], 0, "{next}");
    tmux.kill();
}

/// A line still being written that wrapped onto the terminal cursor's row
/// (joined, it starts on a row above the cursor's): a since search left
/// it for later, and the next one finds it once, whole. It was taken for
/// complete (the capture ends at the cursor's row and no line started
/// there): scanned half-written, and the next search found the cursor's
/// place in the middle of the line, said the pane was `cleared` and
/// searched it in full.
#[test]
fn a_wrapped_line_still_being_written_is_found_once_when_complete() {
    let tmux = PrivateServer::start("since-wrapped", 40, 10).unwrap();
    let pane = tmux
        .run_ok([
            "new-window",
            "-d",
            "-P",
            "-F",
            "#{pane_id}",
            "sh -c 'seq 1 5; exec sleep 100000'",
        ])
        .unwrap()
        .trim()
        .to_owned();
    assert!(eventually(Duration::from_secs(10), || {
        tmux.run_ok(["capture-pane", "-p", "-t", &pane])
            .is_ok_and(|t| t.contains('5'))
    }));
    let tty = ttys(&tmux).remove(&pane).unwrap();
    let mut s = Serve::spawn(tmux.socket_name());
    s.initialize();
    let first = search(&mut s, None);
    assert_eq!(first["total_panes_matched"], 0, "{first}");

    let begun = format!("{MARK} begun {}", "x".repeat(50));
    let mut f = std::fs::OpenOptions::new().write(true).open(&tty).unwrap();
    write!(f, "{begun}").unwrap();
    assert!(eventually(Duration::from_secs(10), || {
        tmux.run_ok(["display-message", "-p", "-t", &pane, "#{cursor_y}"])
            .is_ok_and(|y| y.trim() == "6")
    }));
    let writing = search(&mut s, Some(&first["cursor"]));
    assert_eq!(hits(&writing), vec![], "{writing}");
    assert!(writing.get("since_panes").is_none(), "{writing}");

    write!(f, " ended\r\n").unwrap();
    print_in(&tmux, &pane, "after");
    let ended = search(&mut s, Some(&writing["cursor"]));
    assert_eq!(
        hits(&ended),
        vec![(pane.clone(), format!("{begun} ended"))],
        "{ended}"
    );
    assert!(ended.get("since_panes").is_none(), "{ended}");
    tmux.kill();
}
