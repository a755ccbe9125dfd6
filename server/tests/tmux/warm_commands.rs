//! What a repeated search costs tmux, counted in commands rather than
//! timed: tmux numbers every command it runs (one counter for the whole
//! server, shown to a control client in each `%begin` line), so a control
//! client of the test's own that asks twice learns how many commands ran
//! in between. A warm search of unchanged panes, and a search since a
//! cursor with nothing printed, must cost one round trip of two commands
//! (the listing and the server's stamp: [`LISTING`]), a since search
//! included: with a control client live it starts no sweep client ahead;
//! a since search after one pane printed fetches that pane's delta over
//! the control client ([`DELTA_OVER_CONTROL`]: no process, no terminal
//! probe). Every sweep client panescan started has ended and been reaped
//! before the count is read.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::io::Write;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use common::counter::Counter;
use common::{eventually, Serve};
use panescan::testing::fixture::{Fixture, FixtureShape};
use serde_json::{json, Value};

const MARK: &str = "warm-commands-mark";

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// Waits until the clock is in a later second than `than`: the pane cache
/// reuses text only when a window's last output came in an earlier second
/// than its capture.
fn next_second(than: u64) {
    assert!(eventually(Duration::from_secs(5), || now_secs() > than));
}

fn search(s: &mut Serve, since: Option<&Value>) -> Value {
    let mut args = json!({"pattern": MARK, "scrollback_lines": 100_000});
    if let Some(cursor) = since {
        args["since"] = cursor.clone();
    }
    s.call_ok("search_panes", args)
}

#[test]
fn a_repeated_search_costs_tmux_one_listing_and_a_since_search_no_process() {
    let shape = FixtureShape {
        panes: 30,
        lines: 200,
        width: 100,
        height: 20,
        needle_every: 1_000_000,
    };
    let fx = Fixture::build(
        "warm-commands",
        shape,
        &panescan::testing::corpus::sources(),
        Duration::from_secs(300),
        &mut |_, _| {},
    )
    .unwrap();
    let mut s = Serve::spawn(fx.server.socket_name());
    s.initialize();
    let mut counter = Counter::attach(&fx.server);
    next_second(now_secs());

    let first = search(&mut s, None);
    assert_eq!(first["total_panes_matched"], 0, "{first}");
    let all_lines = first["lines_scanned"].as_u64().unwrap();
    assert!(all_lines > 30 * 200, "{first}");
    next_second(now_secs());

    // Nothing printed: every pane comes from the cache.
    let serve = s.pid();
    let (commands, warm) = counter.during(serve, || search(&mut s, None));
    assert_eq!(warm["lines_scanned"], all_lines, "{warm}");
    assert_eq!(
        commands, LISTING,
        "a warm search of unchanged panes: {warm}"
    );

    let (commands, since) = counter.during(serve, || search(&mut s, Some(&warm["cursor"])));
    assert_eq!(since["lines_scanned"], 0, "{since}");
    assert_eq!(
        commands, LISTING,
        "a since search, nothing printed: {since}"
    );

    // One pane prints a line: the listing, that pane's delta over the
    // control client (DELTA_OVER_CONTROL says what it holds), and the
    // server's identity, asked once so the hit's command and path can be
    // read from /proc (tmux/procfs.rs).
    let pane = &fx.pane_ids[7];
    let tty = fx
        .server
        .run_ok(["display-message", "-p", "-t", pane, "#{pane_tty}"])
        .unwrap();
    let text = format!("{MARK} printed");
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .open(tty.trim())
        .unwrap();
    write!(f, "{text}\r\n").unwrap();
    assert!(eventually(Duration::from_secs(10), || {
        fx.server
            .run_ok(["capture-pane", "-p", "-t", pane])
            .is_ok_and(|t| t.contains(&text))
    }));
    let (commands, found) = counter.during(serve, || search(&mut s, Some(&since["cursor"])));
    assert_eq!(found["lines_scanned"], 1, "{found}");
    assert_eq!(found["total_panes_matched"], 1, "{found}");
    eprintln!("since search after one pane printed: {commands} tmux commands");
    // tmux 3.4 and later print `show-buffer` otherwise than panescan
    // decodes (capture/control.rs): the first delta learns it and sweeps.
    let expected = if common::tmux_version(&fx.server).is_some_and(|v| v < (3, 4)) {
        DELTA_OVER_CONTROL
    } else {
        DELTA_THEN_SWEEP
    };
    assert_eq!(commands, expected, "{found}");
}

/// The listing and the server's stamp, in one round trip on panescan's
/// control client, which follows every command with a `display-message`
/// of a fresh nonce (tmux/framing.rs): 2 x 2.
const LISTING: u64 = 4;

/// What the since search after one pane printed costs tmux: the listing
/// (4), the server's `#{pid} #{start_time}`, asked the first time a
/// search returns a pane, so its command and path are read from /proc
/// (one command and its nonce: 2), and the delta's two ranges (the new rows below the anchor, the
/// oldest stored rows) over the control client, 6 each
/// (tmux/capture/control.rs): `display-message` (the probe) and
/// `capture-pane -b` on one line, `show-buffer` and `delete-buffer` on the
/// next, and each line's nonce. A sweep process instead would cost 14 in
/// all (its client's `source-file` command, that command's completion and
/// the client's, the script's probes, captures and end marker), and a
/// spare client started ahead and left unused 3 more.
const DELTA_OVER_CONTROL: u64 = 18;

/// The same search on tmux 3.4 and later: all of the above (the probes
/// name a version whose `show-buffer` panescan does not decode, so the
/// texts are dropped), then the delta through one sweep process (8 more,
/// measured on tmux 3.8; the server's later deltas go straight to sweeps).
const DELTA_THEN_SWEEP: u64 = 26;
