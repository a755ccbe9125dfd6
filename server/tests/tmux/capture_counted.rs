//! A visible sweep of a large share of a server's panes is counted
//! (tmux/capture/counted.rs): one `capture-pane -N` a pane, unjoined, its
//! rows dealt out by the heights the chunk's own listing gave, one header
//! per group. These tests check on a private server (killed on drop, also
//! when a test fails) that what it hands out is, pane by pane and byte for
//! byte, what a capture of that pane alone with its own header gives:
//! blank, repeated and full-width rows, rows one cell short of the edge,
//! wrapped lines, wide characters pushed to the next row, colours, tabs,
//! trailing spaces, the alternate screen, a pane that printed nothing,
//! text that looks like tmux's framing, and a pane closed before the
//! sweep; joined or not, with escapes or not. And that it costs tmux about
//! one command a pane, where a headed sweep costs two.
//!
//! Deep sweeps are counted too (joined: each line dealt out by the rows its
//! text fills): the same comparison over history ranges, with long lines
//! wrapped in the history, lines of exactly one or two rows, wrapped lines
//! of wide characters (whose group is captured again with headers), a
//! wrapped row cleared short of the edge, and a pane with less history
//! than asked for.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::counter::Counter;
use panescan::testing::private_server::PrivateServer;
use panescan::testing::tmux::{
    CaptureOptions, CaptureRange, CaptureReply, CaptureRequest, Fields, PaneId, Tmux,
};

const WIDTH: u16 = 30;
const HEIGHT: u16 = 6;

/// What each pane prints, byte for byte.
fn pane_texts() -> Vec<String> {
    let a45 = "a".repeat(45);
    let b30 = "b".repeat(30);
    let c29 = "c".repeat(29);
    let d35 = "d".repeat(35);
    let wide = "\u{4e2d}".repeat(15);
    vec![
        "plain\nrows\n\nafter a blank\n".into(),
        format!("{a45}\nafter the wrap\n"),
        format!("{b30}\nfull row above\n"),
        format!("{c29}\none short of the edge above\n"),
        format!("x{wide}\nwide pushed over\n"),
        "\x1b[31mred\x1b[0m and \x1b[1;44mbold blue\x1b[0m\n".into(),
        "abc   \n\x1b[44m   \x1b[0m\nend\n".into(),
        "a\tb\tc\n".into(),
        String::new(),
        "\x1b[?1049hon the alternate screen\n".into(),
        format!("{d35}\x1b[A\r\x1b[Kshort\n"),
        "same\nsame\nsame\nsame\nsame\nsame\nsame\n".into(),
        "%begin 1 2 3\n%end 1 2 3\nTOKEN 0 %1 0 30 6\n".into(),
        format!("{}\n", "e".repeat(28)),
        // 29 cells, then a wide character that cannot fit in the last one:
        // pushed to the next row, the row wraps one byte short of the edge.
        format!("{}\u{4e2d}pushed\n", "g".repeat(29)),
        "\u{e9}\u{e8} accents \u{200b}zero width\n".into(),
        "f".repeat(30),
    ]
}

struct Fixture {
    server: PrivateServer,
    dir: std::path::PathBuf,
}

impl Drop for Fixture {
    fn drop(&mut self) {
        self.server.kill();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A server with the panes of [`pane_texts`], then `plain` panes printing
/// a line each, and one pane closed after it was created. Returns the
/// live panes and the closed one.
fn server(label: &str, plain: usize) -> (Fixture, Vec<PaneId>, PaneId) {
    let mut texts = pane_texts();
    texts.extend((0..plain).map(|i| format!("plain pane {i}\n")));
    server_with(label, &texts)
}

/// A server with a pane printing each of `texts`, and one pane closed
/// after it was created.
fn server_with(label: &str, texts: &[String]) -> (Fixture, Vec<PaneId>, PaneId) {
    let server = PrivateServer::start(label, WIDTH, HEIGHT).unwrap();
    let dir = std::env::temp_dir().join(format!("{}.texts", server.socket_name()));
    let fixture = Fixture { server, dir };
    std::fs::create_dir_all(&fixture.dir).unwrap();
    let mut script = String::new();
    for (i, text) in texts.iter().enumerate() {
        let file = fixture.dir.join(format!("pane-{i}"));
        std::fs::write(&file, text).unwrap();
        script.push_str(&format!(
            "new-window -d \"sh -c 'cat {}; exec sleep 2147483647'\"\n",
            file.display()
        ));
    }
    fixture.server.source(&script).unwrap();
    let closed = fixture
        .server
        .run_ok(["new-window", "-d", "-P", "-F", "#{pane_id}", "sleep 600"])
        .unwrap();
    let closed = PaneId::parse(closed.trim()).unwrap();
    fixture
        .server
        .run_ok(["kill-pane", "-t", &closed.to_string()])
        .unwrap();
    let out = fixture
        .server
        .run_ok(["list-panes", "-a", "-F", "#{pane_id}"])
        .unwrap();
    let mut ids: Vec<PaneId> = out.lines().map(|l| PaneId::parse(l).unwrap()).collect();
    ids.sort_by_key(|p| p.number());
    // A pane has printed all of its text once sh has become sleep (the
    // session's first window runs a shell, which is left alone).
    let until = Instant::now() + Duration::from_secs(60);
    loop {
        let commands = fixture
            .server
            .run_ok(["list-panes", "-a", "-F", "#{pane_current_command}"])
            .unwrap();
        if commands.lines().filter(|c| *c == "sleep").count() == texts.len() {
            break;
        }
        assert!(Instant::now() < until, "panes never settled: {commands}");
        std::thread::sleep(Duration::from_millis(50));
    }
    // ... and tmux has read all of it once every screen stays the same.
    let screens = || -> String {
        ids.iter()
            .map(|p| {
                fixture
                    .server
                    .run_ok(["capture-pane", "-p", "-e", "-J", "-t", &p.to_string()])
                    .unwrap_or_default()
            })
            .collect()
    };
    let mut last = screens();
    loop {
        std::thread::sleep(Duration::from_millis(100));
        let now = screens();
        if now == last {
            break;
        }
        assert!(Instant::now() < until, "panes never settled");
        last = now;
    }
    (fixture, ids, closed)
}

fn connect(server: &PrivateServer) -> Tmux {
    let tmux = common::connect(server);
    // A sweep chooses its chunks' shape from the last listing's size.
    tmux.inventory(
        Fields::Search,
        &[],
        Instant::now() + Duration::from_secs(30),
    )
    .unwrap();
    tmux
}

fn capture(tmux: &Tmux, ids: &[PaneId], options: CaptureOptions) -> Vec<CaptureReply> {
    capture_range(tmux, ids, CaptureRange::Visible, options)
}

fn capture_range(
    tmux: &Tmux,
    ids: &[PaneId],
    range: CaptureRange,
    options: CaptureOptions,
) -> Vec<CaptureReply> {
    let requests = ids
        .iter()
        .map(|&pane| CaptureRequest { pane, range })
        .collect();
    let rx = tmux.capture(
        requests,
        options,
        Instant::now() + Duration::from_secs(60),
        Arc::new(AtomicBool::new(false)),
    );
    let mut out = Vec::new();
    while let Ok(r) = rx.recv_timeout(Duration::from_secs(60)) {
        out.push(r);
    }
    out
}

/// A reply as compared: everything a capture says of the pane.
fn summary(r: &CaptureReply) -> String {
    match &r.result {
        Ok(t) => format!(
            "{} first {} hsize {} {}x{} joined {} numbers {:?}\n{}",
            r.pane,
            t.first_line,
            t.history_size,
            t.pane_width,
            t.pane_height,
            t.joined,
            t.line_numbers,
            String::from_utf8_lossy(&t.bytes)
        ),
        Err(e) => format!(
            "{} error {}",
            r.pane,
            e.to_string().split(' ').next().unwrap_or("")
        ),
    }
}

/// Joined or not, with escapes or not.
fn every_option() -> [CaptureOptions; 4] {
    [(true, false), (true, true), (false, false), (false, true)].map(|(join_wrapped, escapes)| {
        CaptureOptions {
            join_wrapped,
            escapes,
        }
    })
}

/// Sweeps `ids` and checks that each reply comes in order and says, field
/// for field, what a capture of its pane alone (headed) says; the replies.
fn assert_swept_as_alone(
    tmux: &Tmux,
    ids: &[PaneId],
    range: CaptureRange,
    options: CaptureOptions,
) -> Vec<CaptureReply> {
    let swept = capture_range(tmux, ids, range, options);
    assert_eq!(swept.len(), ids.len());
    for (i, r) in swept.iter().enumerate() {
        assert_eq!((r.index, r.pane), (i, ids[i]));
        let alone = capture_range(tmux, &[r.pane], range, options);
        assert_eq!(
            summary(r),
            summary(&alone[0]),
            "{} with {range:?} {options:?}",
            r.pane
        );
    }
    swept
}

#[test]
fn a_counted_sweep_gives_each_pane_what_its_own_capture_gives() {
    let (fx, mut ids, closed) = server("counted-same", 8);
    let tmux = connect(&fx.server);
    ids.push(closed);
    ids.sort_by_key(|p| p.number());
    for options in every_option() {
        let swept = assert_swept_as_alone(&tmux, &ids, CaptureRange::Visible, options);
        let gone = swept.iter().find(|r| r.pane == closed).unwrap();
        assert!(gone.result.is_err(), "the closed pane fails alone");
    }
    // The fixture does hold what a join changes: a wrapped line.
    let joined = capture(
        &tmux,
        &ids[..],
        CaptureOptions {
            join_wrapped: true,
            escapes: false,
        },
    );
    let wrapped = joined
        .iter()
        .filter_map(|r| r.result.as_ref().ok())
        .any(|t| String::from_utf8_lossy(&t.bytes).contains(&"a".repeat(45)));
    assert!(wrapped, "the 45-cell line comes back joined");
}

#[test]
fn panes_that_may_have_wrapped_come_back_joined_and_in_order() {
    // One pane in ten wraps a line, one in ten ends a row at the edge
    // unwrapped: those are captured again while the rest stay counted
    // (when nearly all panes wrap, counting turns off and the sweep is
    // the headed one this compares with); answers stay exact and in order.
    let texts: Vec<String> = (0..40)
        .map(|i| match i % 10 {
            0 => format!("{}{i}\nnext\n", "w".repeat(40)),
            1 => format!("{}\n{i}\n", "x".repeat(30)),
            _ => format!("short {i}\n"),
        })
        .collect();
    let (fx, ids, _closed) = server_with("counted-wrapped", &texts);
    let tmux = connect(&fx.server);
    let options = CaptureOptions {
        join_wrapped: true,
        escapes: false,
    };
    let mut counter = Counter::attach(&fx.server);
    let before = counter.now();
    let swept = capture_range(&tmux, &ids, CaptureRange::Visible, options);
    let commands = counter.now() - before;
    let joined = swept
        .iter()
        .filter_map(|r| r.result.as_ref().ok())
        .filter(|t| t.line_numbers.is_some())
        .count();
    assert_eq!(joined, 4, "panes that hold a joined line");
    // Counted: a capture a pane, a header per group, the listing, the end,
    // the terminal probe, and the 8 captured again with headers (measured:
    // 70); a headed sweep takes two a pane (82) and more.
    let panes = ids.len() as u64;
    eprintln!("{panes} panes, 8 captured again: {commands} tmux commands");
    assert!(
        commands < panes * 2,
        "{commands} commands for {panes} panes: not counted"
    );
    assert_swept_as_alone(&tmux, &ids, CaptureRange::Visible, options);
}

#[test]
fn a_counted_sweep_costs_tmux_about_one_command_a_pane() {
    let (fx, ids, _closed) = server("counted-cost", 48);
    let tmux = connect(&fx.server);
    let mut counter = Counter::attach(&fx.server);
    let plain = CaptureOptions {
        join_wrapped: false,
        escapes: false,
    };
    // Warm: panescan's own control client is attached by now.
    assert_eq!(capture(&tmux, &ids, plain).len(), ids.len());
    // The cheapest of three sweeps: one sweep took 80 commands once in a
    // full run of the suite, against 73 in every run alone or beside this
    // binary's other tests (cause not pinned down; a pane that moved while
    // swept is captured again with a header, as it must be); a sweep that
    // is not counted costs two a pane every time.
    let commands = (0..3)
        .map(|_| {
            let before = counter.now();
            let replies = capture(&tmux, &ids, plain);
            assert!(replies.iter().all(|r| r.result.is_ok()));
            counter.now() - before - 1
        })
        .min()
        .unwrap_or(u64::MAX);
    // A headed sweep runs a header and a capture a pane (2 x 64 = 128).
    // Counted: a capture a pane, a header per 32, the listing, the end,
    // the terminal probe.
    let panes = ids.len() as u64;
    eprintln!("a counted visible sweep of {panes} panes: {commands} tmux commands");
    assert!(
        commands <= panes + panes / 8 + 4,
        "{commands} commands for {panes} panes"
    );
}

/// What each pane prints for the deep sweeps: [`pane_texts`] after and
/// between lines that go into the history, and lines that wrap there.
fn deep_texts(plain: usize) -> Vec<String> {
    let history: String = (0..9).map(|k| format!("history line {k}\n")).collect();
    let mut texts: Vec<String> = pane_texts()
        .into_iter()
        .enumerate()
        .map(|(i, t)| match i % 3 {
            0 => format!("{history}{t}"),
            1 => format!("{t}{history}"),
            _ => format!("{history}{t}{history}"),
        })
        .collect();
    texts.push(format!(
        "{}\n{history}{}\n{history}",
        "g".repeat(60),
        "h".repeat(31)
    ));
    texts.push(format!("{history}{}\nend\n", "\u{4e2d}".repeat(20)));
    texts.push(format!("{}\n{}\n{history}", "i".repeat(90), "i".repeat(90)));
    texts.push("only\n".into());
    texts.extend(
        (0..plain).map(|i| format!("{history}plain pane {i}\n{}\n", "p".repeat(40 + i % 25))),
    );
    texts
}

#[test]
fn a_counted_deep_sweep_gives_each_pane_what_its_own_capture_gives() {
    let texts = deep_texts(48);
    let (fx, mut ids, closed) = server_with("counted-deep", &texts);
    let tmux = connect(&fx.server);
    // Panes in the order they were made: the session's first, the texts.
    let plain_ids = ids[ids.len() - 48..].to_vec();
    ids.push(closed);
    ids.sort_by_key(|p| p.number());
    let mut counter = Counter::attach(&fx.server);
    for range in [
        CaptureRange::Scrollback(4),
        CaptureRange::Scrollback(1_000),
        CaptureRange::AllHistory,
    ] {
        for options in every_option() {
            // The plain panes alone (ASCII, some lines wrapped in the
            // history): counted, a capture a pane and a header per group,
            // where headed would be two commands a pane. (A first chunk
            // sized for long histories before any pane was seen may hold
            // too few panes to be counted: headed.)
            let before = counter.now();
            let plain = capture_range(&tmux, &plain_ids, range, options);
            let commands = counter.now() - before - 1;
            let panes = plain_ids.len() as u64;
            assert!(plain.iter().all(|r| r.result.is_ok()));
            assert!(
                commands < 2 * panes - panes / 4,
                "{range:?} {options:?}: {commands} commands for {panes} panes"
            );
            let swept = assert_swept_as_alone(&tmux, &ids, range, options);
            let gone = swept.iter().find(|r| r.pane == closed).unwrap();
            assert!(gone.result.is_err(), "the closed pane fails alone");
        }
    }
    // The fixture does hold what counting by rows must get right: lines
    // wrapped in the history, joined.
    let joined = capture_range(
        &tmux,
        &ids,
        CaptureRange::AllHistory,
        CaptureOptions {
            join_wrapped: true,
            escapes: false,
        },
    );
    let numbered = joined
        .iter()
        .filter_map(|r| r.result.as_ref().ok())
        .filter(|t| t.line_numbers.is_some())
        .count();
    assert!(numbered >= 20, "{numbered} panes hold a joined line");
    let text = |needle: &str| {
        joined
            .iter()
            .filter_map(|r| r.result.as_ref().ok())
            .any(|t| String::from_utf8_lossy(&t.bytes).contains(needle))
    };
    assert!(text(&"g".repeat(60)) && text(&"i".repeat(90)));
}
