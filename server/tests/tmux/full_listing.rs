//! The full inventory, listed in pieces (tmux/inventory/full_listing.rs: panes,
//! then the sessions' details, then what each pane runs from `/proc`),
//! against tmux's own answer: one `list-panes -a` of every field, on a
//! private server with grouped sessions, a linked window, split windows,
//! panes in other directories, a dead pane, a pane in copy mode and names
//! that look like separators.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::collections::HashMap;
use std::time::{Duration, Instant};

use common::{connect, eventually, TempDir};
use panescan::testing::private_server::PrivateServer;
use panescan::testing::tmux::{Fields, Inventory};

/// Every field, as one `list-panes -a` would ask for them.
const FIELDS: &[&str] = &[
    "session_id",
    "session_name",
    "session_windows",
    "session_attached",
    "session_created",
    "session_grouped",
    "session_group",
    "session_path",
    "window_id",
    "window_name",
    "window_active",
    "window_width",
    "window_height",
    "window_layout",
    "window_panes",
    "pane_id",
    "pane_index",
    "pane_width",
    "pane_height",
    "pane_left",
    "pane_top",
    "pane_tty",
    "pane_pid",
    "pane_current_command",
    "pane_current_path",
    "pane_title",
    "pane_dead",
    "pane_dead_status",
    "pane_in_mode",
    "pane_mode",
    "cursor_x",
    "cursor_y",
    "history_size",
];

const SEP: &str = "<sep-7f3a9c>";
const END: &str = "<end-7f3a9c>";

/// tmux's own answer: one record per pane placement, by field name.
fn tmux_says(server: &PrivateServer) -> Vec<HashMap<&'static str, String>> {
    let format: Vec<String> = FIELDS.iter().map(|f| format!("#{{{f}}}")).collect();
    let text = server
        .run_ok(["list-panes", "-a", "-F", &(format.join(SEP) + END)])
        .unwrap();
    text.split(END)
        .map(|r| r.strip_prefix('\n').unwrap_or(r))
        .filter(|r| !r.is_empty())
        .map(|r| {
            FIELDS
                .iter()
                .copied()
                .zip(r.split(SEP).map(str::to_owned))
                .collect()
        })
        .collect()
}

/// The inventory's value of `field` for the placement `record` names.
fn ours(inv: &Inventory, record: &HashMap<&str, String>, field: &str, own: &str) -> String {
    let pane = inv
        .panes
        .iter()
        .find(|p| p.pane_id.to_string() == record["pane_id"])
        .unwrap_or_else(|| panic!("{} not listed", record["pane_id"]));
    let window = inv
        .windows
        .iter()
        .find(|w| w.window_id.to_string() == record["window_id"])
        .unwrap();
    let session = inv
        .sessions
        .iter()
        .find(|s| s.session_id.to_string() == record["session_id"])
        .unwrap();
    let b = |v: bool| u8::from(v).to_string();
    match field {
        "session_id" => session.session_id.to_string(),
        "session_name" => session.session_name.clone(),
        "session_windows" => session.session_windows.to_string(),
        // panescan's own control client is not counted.
        "session_attached" if session.session_id.to_string() == own => {
            (session.session_attached + 1).to_string()
        }
        "session_attached" => session.session_attached.to_string(),
        "session_created" => session.session_created.to_string(),
        "session_grouped" => b(session.session_group.is_some()),
        "session_group" => session.session_group.clone().unwrap_or_default(),
        "session_path" => session.session_path.clone(),
        "window_id" => window.window_id.to_string(),
        "window_name" => window.window_name.clone(),
        // Per placement in tmux; the inventory keeps the primary one's.
        "window_active" => b(window.window_active),
        "window_width" => window.window_width.to_string(),
        "window_height" => window.window_height.to_string(),
        "window_layout" => window.window_layout.clone(),
        "window_panes" => window.window_panes.to_string(),
        "pane_id" => pane.pane_id.to_string(),
        "pane_index" => pane.pane_index.to_string(),
        "pane_width" => pane.pane_width.to_string(),
        "pane_height" => pane.pane_height.to_string(),
        "pane_left" => pane.pane_left.to_string(),
        "pane_top" => pane.pane_top.to_string(),
        "pane_tty" => pane.pane_tty.clone(),
        "pane_pid" => pane.pane_pid.map(|p| p.to_string()).unwrap_or_default(),
        "pane_current_command" => pane.pane_current_command.clone(),
        "pane_current_path" => pane.pane_current_path.clone(),
        "pane_title" => pane.pane_title.clone(),
        "pane_dead" => b(pane.pane_dead),
        "pane_dead_status" => pane
            .pane_dead_status
            .map(|s| s.to_string())
            .unwrap_or_default(),
        "pane_in_mode" => b(pane.pane_in_mode),
        "pane_mode" => pane.pane_mode.clone(),
        "cursor_x" => pane.cursor_x.to_string(),
        "cursor_y" => pane.cursor_y.to_string(),
        "history_size" => pane.history_size.to_string(),
        other => panic!("no field {other}"),
    }
}

/// A server with a bit of everything a listing reads.
fn varied_server(dir: &std::path::Path) -> PrivateServer {
    let server = PrivateServer::start("full-listing", 90, 30).unwrap();
    let d = dir.display();
    // A tab where tmux takes it (3.3a stores `\t`); tmux 3.7 and later
    // refuse a name with a control character.
    let name = if common::names_take_control_characters(&server) {
        "we;ird\tname"
    } else {
        "we;ird name"
    };
    let script = format!(
        "set -g remain-on-exit on\n\
         new-session -d -s '{name}' -c {d} \"exec sleep 100000\"\n\
         split-window -d -t '$1:0' -c /tmp \"cd /; exec sleep 100001\"\n\
         new-window -d -t main: -n 'a<~f~>b' \"sh -c 'exit 3'\"\n\
         new-window -d -t main: \"exec sleep 100002\"\n\
         select-pane -t main:2.0 -T 'title with <~r~> in it'\n\
         new-session -d -s grp -t main\n\
         link-window -s main:0 -t '$1:7'\n"
    );
    server.source(&script).unwrap();
    server.run_ok(["copy-mode", "-t", "main:0.0"]).unwrap();
    server
}

fn settled(server: &PrivateServer) -> bool {
    let dead = server
        .run_ok([
            "list-panes",
            "-a",
            "-F",
            "#{pane_dead} #{pane_current_command}",
        ])
        .unwrap_or_default();
    dead.lines().any(|l| l.starts_with("1 "))
        && dead
            .lines()
            .filter(|l| l.starts_with("0 "))
            .all(|l| l.ends_with("sleep") || l.ends_with("sh") || l.ends_with("bash"))
}

#[test]
fn a_full_listing_in_pieces_answers_as_one_listing_of_every_field() {
    let dir = TempDir::new("full-listing");
    let server = varied_server(&dir.0);
    let tmux = connect(&server);
    let soon = || Instant::now() + Duration::from_secs(10);
    assert!(eventually(Duration::from_secs(20), || settled(&server)));
    // Two listings taken around the inventory must agree (nothing moved
    // meanwhile) for the comparison to mean anything.
    let (inv, before) = (0..10)
        .find_map(|_| {
            let before = tmux_says(&server);
            let inv = tmux.inventory(Fields::Full, &[], soon()).unwrap().0;
            (tmux_says(&server) == before).then_some((inv, before))
        })
        .expect("the server kept changing");
    assert!(before.len() >= 7, "{before:?}");
    // panescan's control client: the only control-mode client (attached since
    // the first call).
    let own_id = server
        .run_ok(["list-clients", "-F", "#{client_control_mode} #{session_id}"])
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("1 ").map(str::to_owned))
        .unwrap_or_default();

    let mut checked = 0;
    for record in &before {
        for field in FIELDS {
            // window_active is per placement; the inventory keeps the
            // primary placement's (the first record of the window).
            let primary = before
                .iter()
                .find(|r| r["window_id"] == record["window_id"])
                .unwrap();
            let want = if *field == "window_active" {
                &primary[field]
            } else {
                &record[field]
            };
            // A session and window name are the placement's.
            if matches!(*field, "session_id" | "session_name") {
                continue;
            }
            assert_eq!(
                &ours(&inv, record, field, &own_id),
                want,
                "{field} of {} in {}",
                record["pane_id"],
                record["session_name"]
            );
            checked += 1;
        }
    }
    assert!(checked > 100);
    // Every placement is there, with its session's name.
    for record in &before {
        let pane = inv
            .panes
            .iter()
            .find(|p| p.pane_id.to_string() == record["pane_id"])
            .unwrap();
        assert!(
            pane.placements
                .iter()
                .any(|p| p.session_id.to_string() == record["session_id"]
                    && p.session_name == record["session_name"]),
            "{record:?}"
        );
    }
    // What was worth checking was there.
    let values = |f: &str| before.iter().map(|r| r[f].clone()).collect::<Vec<_>>();
    assert!(values("pane_dead_status").contains(&"3".to_owned()));
    assert!(values("pane_mode").contains(&"copy-mode".to_owned()));
    assert!(values("pane_current_path").contains(&"/".to_owned()));
    assert!(values("session_grouped").contains(&"1".to_owned()));
    assert!(values("pane_current_command").contains(&"sleep".to_owned()));
}
