//! A filled fixture has the shape asked for, its needles where it says, and
//! its server dies with it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use panescan::testing::fixture::{Fixture, FixtureShape, NEEDLE};

#[test]
fn fixture_fills_panes_and_plants_needles() {
    let shape = FixtureShape {
        panes: 6,
        lines: 300,
        width: 80,
        height: 20,
        needle_every: 3,
    };
    let source = "alpha\n\x1b[2Jbeta \x1b[32mgreen\x1b[0m\ngamma\n";
    let fixture = Fixture::build(
        "fixture",
        shape,
        &[source],
        Duration::from_secs(30),
        &mut |_, _| {},
    )
    .expect("fixture builds");
    assert_eq!(fixture.pane_ids.len(), 6);
    assert_eq!(fixture.needles.len(), 2);
    let name = fixture.server.socket_name().to_owned();
    for (needle, pane_number) in fixture.needles.iter().zip([0, 3]) {
        assert_eq!(needle.pane_number, pane_number);
        let pane = &fixture.pane_ids[pane_number];
        let text = fixture
            .server
            .run_ok(["capture-pane", "-p", "-S", "-", "-t", pane])
            .unwrap();
        assert!(text.contains(&needle.text), "{pane} lacks {NEEDLE}");
        assert!(text.contains("beta green"), "escape handling lost text");
        let history: usize = fixture
            .server
            .run_ok(["display-message", "-p", "-t", pane, "#{history_size}"])
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert!(history >= 300 - 20, "history {history} too short");
    }
    drop(fixture);
    let alive = std::process::Command::new("tmux")
        .args(["-L", &name, "list-sessions"])
        .output()
        .unwrap();
    assert!(!alive.status.success());
}
