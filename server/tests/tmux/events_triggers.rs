//! The event stream's output triggers on private tmux servers: a pane
//! paused for a trigger must never stay paused once nobody holds that
//! trigger. A watcher of every pane that subscribes after another
//! subscriber's trigger paused a pane hears that pane (it went deaf: only
//! the subscriber that took the trigger could re-arm it, and it left), and
//! so it does when tmux stood still past the deadline meanwhile.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::time::{Duration, Instant};

use common::eventually;
use panescan::testing::private_server::PrivateServer;
use panescan::testing::tmux::events::{Interest, OutputMode, StreamEvent, Subscription, Watch};
use panescan::testing::tmux::{PaneId, Tmux};

/// A server whose pane `%0` runs `cat` (each line typed comes back once),
/// and a handle on it.
fn server(label: &str) -> (PrivateServer, Tmux, PaneId) {
    let server = PrivateServer::start(label, 80, 24).unwrap();
    server
        .run_ok(["respawn-pane", "-k", "-t", "%0", "cat"])
        .unwrap();
    let tmux = common::connect(&server);
    (server, tmux, PaneId::parse("%0").unwrap())
}

fn type_line(server: &PrivateServer, text: &str) {
    server
        .run_ok(["send-keys", "-t", "%0", "-l", text])
        .unwrap();
    server.run_ok(["send-keys", "-t", "%0", "Enter"]).unwrap();
}

fn every_pane() -> Interest {
    Interest {
        watch: Watch::Every,
        mode: OutputMode::Trigger,
        structure: false,
    }
}

/// Takes the trigger of `pane` from `sub` and does not re-arm it: the pane
/// stays paused for `sub`.
fn take_trigger(server: &PrivateServer, sub: &Subscription, pane: PaneId) {
    type_line(server, "first");
    let until = Instant::now() + Duration::from_secs(10);
    loop {
        match sub.recv_deadline(until) {
            Some(StreamEvent::Printed(p)) if p == pane => return,
            Some(_) => {}
            None => panic!("no trigger for {pane}"),
        }
    }
}

/// Whether `sub` hears `pane`: lines are typed until its trigger comes
/// (one typed before tmux was told to report the pane is not reported).
fn hears(server: &PrivateServer, sub: &Subscription, pane: PaneId) -> bool {
    eventually(Duration::from_secs(15), || {
        type_line(server, "again");
        let until = Instant::now() + Duration::from_millis(500);
        while let Some(event) = sub.recv_deadline(until) {
            if event == StreamEvent::Printed(pane) {
                return true;
            }
        }
        false
    })
}

#[test]
fn a_watch_of_every_pane_hears_a_pane_another_subscriber_left_paused() {
    let (server, tmux, pane) = server("events-left-paused");
    let deadline = || Instant::now() + Duration::from_secs(10);
    let holder = tmux.subscribe(Interest::printed([pane]), deadline());
    take_trigger(&server, &holder, pane);
    let every = tmux.subscribe(every_pane(), deadline());
    drop(holder);
    assert!(
        every.coverage().panes.contains(&pane),
        "{:?}",
        every.coverage()
    );
    assert!(hears(&server, &every, pane), "the watch never heard {pane}");
}

#[test]
fn a_pane_left_paused_while_tmux_stood_still_is_heard_once_it_answers() {
    let (server, tmux, pane) = server("events-stood-still");
    let holder = tmux.subscribe(
        Interest::printed([pane]),
        Instant::now() + Duration::from_secs(10),
    );
    take_trigger(&server, &holder, pane);
    let frozen = server.stop().unwrap();
    // Subscribing cannot reach tmux by its deadline.
    let every = tmux.subscribe(every_pane(), Instant::now() + Duration::from_millis(500));
    drop(holder);
    drop(frozen);
    assert!(hears(&server, &every, pane), "the watch never heard {pane}");
    assert!(every.coverage().panes.contains(&pane));
}
