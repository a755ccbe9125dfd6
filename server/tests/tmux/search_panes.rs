//! search_panes against real private tmux servers, called in-process (the
//! MCP path is covered by the end-to-end tests of the binary).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use panescan::testing::config::Ceilings;
use panescan::testing::fixture::{Fixture, FixtureShape, NEEDLE};
use panescan::testing::private_server::PrivateServer;
use panescan::testing::tmux::PaneId;
use panescan::testing::tools::context::ToolContext;
use panescan::testing::tools::search::{search_panes, SearchPanesArgs, SearchPanesResult};

fn context(socket_name: &str, limits: Ceilings) -> ToolContext {
    ToolContext::read_only(
        panescan::testing::tmux::ServerSpec::named(socket_name),
        limits,
    )
}

fn args(pattern: &str) -> SearchPanesArgs {
    SearchPanesArgs {
        pattern: Some(pattern.to_owned()),
        ..SearchPanesArgs::default()
    }
}

fn search(ctx: &ToolContext, args: SearchPanesArgs) -> SearchPanesResult {
    search_panes(ctx, &args).unwrap_or_else(|e| panic!("search failed: {e}"))
}

fn all_lines(result: &SearchPanesResult) -> Vec<(String, i64, String)> {
    result
        .matches
        .iter()
        .flat_map(|p| {
            p.lines
                .iter()
                .map(move |l| (p.pane_id.to_string(), l.line, l.text.clone()))
        })
        .collect()
}

/// A new window whose pane prints `text` (from a file, so no shell quoting
/// is involved) and then sleeps. Waits until the last line is on screen.
fn pane_printing(server: &PrivateServer, text: &str) -> String {
    let file: PathBuf = std::env::temp_dir().join(format!(
        "{}-{}.txt",
        server.socket_name(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    ));
    let text = format!("{text}\nEND-OF-TEXT\n");
    std::fs::write(&file, &text).unwrap();
    let pane = server
        .run_ok([
            "new-window",
            "-d",
            "-P",
            "-F",
            "#{pane_id}",
            &format!("cat '{}'; exec sleep 1000000", file.display()),
        ])
        .unwrap()
        .trim()
        .to_owned();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let shown = server
            .run_ok(["capture-pane", "-p", "-J", "-S", "-", "-t", &pane])
            .unwrap();
        if shown.contains("END-OF-TEXT") {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "pane {pane} never printed its text"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = std::fs::remove_file(&file);
    pane
}

fn small_fixture(label: &str, panes: usize, lines: usize) -> Fixture {
    let shape = FixtureShape {
        panes,
        lines,
        width: 80,
        height: 20,
        needle_every: 2,
    };
    let source = "compiling foo v0.1.0\nwarning: unused variable `x`\nerror[E0425]: cannot find value `y`\ntest result: ok. 3 passed\n";
    Fixture::build(
        label,
        shape,
        &[source],
        Duration::from_secs(60),
        &mut |_, _| {},
    )
    .unwrap()
}

#[test]
fn finds_history_lines_only_with_scrollback_and_numbers_them_for_capture_pane() {
    let fx = small_fixture("search-history", 4, 300);
    let ctx = context(fx.server.socket_name(), Ceilings::default());

    let visible = search(&ctx, args(NEEDLE));
    assert_eq!(
        visible.total_panes_matched, 0,
        "needles are in history, not on screen"
    );
    assert_eq!(visible.panes_searched, 4);

    let deep = search(
        &ctx,
        SearchPanesArgs {
            scrollback_lines: Some(100_000),
            ..args(NEEDLE)
        },
    );
    let hits = all_lines(&deep);
    assert_eq!(hits.len(), fx.needles.len(), "{hits:?}");
    for ((pane, line, text), needle) in hits.iter().zip(&fx.needles) {
        assert_eq!(pane, &fx.pane_ids[needle.pane_number]);
        assert_eq!(text, &needle.text);
        assert!(*line < 0, "history line numbers are negative");
        // The line number is tmux's: capture_pane at that line shows it.
        let at = fx
            .server
            .run_ok([
                "capture-pane",
                "-p",
                "-t",
                pane,
                "-S",
                &line.to_string(),
                "-E",
                &line.to_string(),
            ])
            .unwrap();
        assert_eq!(at.trim_end(), needle.text);
    }
    assert!(!deep.scrollback_clamped && !deep.matching_byte_clamped && !deep.matches_truncated);
    assert_eq!(deep.effective_scrollback_lines, 100_000);
}

#[test]
fn finds_text_on_screen_across_a_wrap_and_in_linked_windows_once() {
    let server = PrivateServer::start("search-screen", 40, 10).unwrap();
    let wrapped = format!("{}WRAPPED-NEEDLE-HERE tail", "x".repeat(30));
    let pane = pane_printing(&server, &format!("first line\n{wrapped}"));
    server
        .run_ok(["new-session", "-d", "-s", "other", "-x", "40", "-y", "10"])
        .unwrap();
    let window = server
        .run_ok(["display-message", "-p", "-t", &pane, "#{window_id}"])
        .unwrap()
        .trim()
        .to_owned();
    server
        .run_ok(["link-window", "-s", &window, "-t", "other:"])
        .unwrap();
    let ctx = context(server.socket_name(), Ceilings::default());

    let joined = search(&ctx, args("wrapped-needle-here"));
    assert_eq!(joined.total_panes_matched, 1);
    let hit = &joined.matches[0];
    assert_eq!(hit.pane_id.to_string(), pane);
    assert_eq!(hit.lines.len(), 1);
    assert_eq!(
        hit.lines[0].text, wrapped,
        "the wrapped line comes back whole"
    );
    assert!(hit.lines[0].line >= 0, "on screen");
    let sessions: Vec<&str> = hit
        .placements
        .iter()
        .map(|p| p.session_name.as_str())
        .collect();
    assert_eq!(hit.placements.len(), 2, "{sessions:?}");
    assert!(sessions.contains(&"main") && sessions.contains(&"other"));
    // What the pane runs is filled in after the scan, for the page only.
    let runs = server
        .run_ok([
            "display-message",
            "-p",
            "-t",
            &pane,
            "#{pane_current_command}|#{pane_current_path}",
        ])
        .unwrap();
    assert_eq!(
        format!("{}|{}", hit.pane_current_command, hit.pane_current_path),
        runs.trim_end()
    );
    assert_eq!(hit.pane_current_command, "sleep");

    let unjoined = search(
        &ctx,
        SearchPanesArgs {
            join_wrapped: Some(false),
            ..args("wrapped-needle-here")
        },
    );
    assert_eq!(
        unjoined.total_panes_matched, 0,
        "the needle crosses the wrap"
    );

    // The line after the wrapped one is numbered past both of its rows.
    let end = search(&ctx, args("END-OF-TEXT"));
    let first = search(&ctx, args("first line"));
    assert_eq!(
        end.matches[0].lines[0].line,
        first.matches[0].lines[0].line + 3
    );
}

#[test]
fn context_lines_multi_patterns_and_paging() {
    let server = PrivateServer::start("search-context", 80, 20).unwrap();
    let a = pane_printing(&server, "one\ntwo\nALPHA\nthree\nfour");
    let b = pane_printing(&server, "BETA here\nnothing");
    let c = pane_printing(&server, "alpha again");
    let ctx = context(server.socket_name(), Ceilings::default());

    let r = search(
        &ctx,
        SearchPanesArgs {
            context_lines: Some(2),
            ..args("alpha")
        },
    );
    assert_eq!(r.total_panes_matched, 2);
    let hit = &r.matches[0].lines[0];
    assert_eq!(r.matches[0].pane_id.to_string(), a);
    assert_eq!(hit.before, vec!["one", "two"]);
    assert_eq!(hit.after, vec!["three", "four"]);
    assert_eq!(hit.pattern_index, None, "one pattern: no index");

    let multi = search(
        &ctx,
        SearchPanesArgs {
            pattern: None,
            patterns: Some(vec!["alpha".into(), "beta".into()]),
            ..SearchPanesArgs::default()
        },
    );
    let found: Vec<(String, Option<usize>)> = multi
        .matches
        .iter()
        .flat_map(|p| {
            p.lines
                .iter()
                .map(move |l| (p.pane_id.to_string(), l.pattern_index))
        })
        .collect();
    assert_eq!(
        found,
        vec![
            (a.clone(), Some(0)),
            (b.clone(), Some(1)),
            (c.clone(), Some(0))
        ]
    );

    let page = search(
        &ctx,
        SearchPanesArgs {
            limit: Some(1),
            offset: Some(1),
            pattern: None,
            patterns: Some(vec!["alpha".into(), "beta".into()]),
            ..SearchPanesArgs::default()
        },
    );
    assert_eq!(page.total_panes_matched, 3);
    assert_eq!(page.matches.len(), 1);
    assert_eq!(page.matches[0].pane_id.to_string(), b);
    assert!(page.truncated);
    assert_eq!(page.truncated_panes, vec![PaneId::parse(&c).unwrap()]);

    let exact = search(
        &ctx,
        SearchPanesArgs {
            match_case: true,
            ..args("alpha")
        },
    );
    assert_eq!(exact.total_panes_matched, 1);
    assert_eq!(exact.matches[0].pane_id.to_string(), c);

    let scoped = search(
        &ctx,
        SearchPanesArgs {
            pane_ids: Some(vec![PaneId::parse(&a).unwrap()]),
            ..args("a")
        },
    );
    assert!(scoped.matches.iter().all(|p| p.pane_id.to_string() == a));
    assert_eq!(scoped.panes_searched, 1);
}

#[test]
fn format_and_command_syntax_is_searched_literally_and_never_run() {
    let server = PrivateServer::start("search-inject", 80, 20).unwrap();
    let marker = std::env::temp_dir().join(format!("{}-marker", server.socket_name()));
    let touch = format!("#(touch {})", marker.display());
    let lines = [
        r"C:\Users\me",
        "#S",
        "#{pane_id}",
        touch.as_str(),
        "}",
        "a;b",
    ];
    let pane = pane_printing(&server, &lines.join("\n"));
    let ctx = context(server.socket_name(), Ceilings::default());
    for pattern in lines {
        let r = search(&ctx, args(pattern));
        let texts: Vec<String> = all_lines(&r).into_iter().map(|(_, _, t)| t).collect();
        assert!(
            texts.iter().any(|t| t.contains(pattern)),
            "{pattern:?} not found literally: {texts:?}"
        );
        assert!(r.matches.iter().all(|p| p.pane_id.to_string() == pane));
    }
    common::tmux_jobs_settled(&server, &std::env::temp_dir());
    assert!(!marker.exists(), "a pattern ran a command");
}

#[test]
fn every_clamp_flag_fires_when_its_limit_changes_the_answer() {
    let fx = small_fixture("search-flags", 6, 400);
    let name = fx.server.socket_name().to_owned();
    let deep = |extra: SearchPanesArgs| SearchPanesArgs {
        scrollback_lines: Some(100_000),
        ..extra
    };
    let ctx = context(&name, Ceilings::default());

    let full = search(&ctx, deep(args("error")));
    assert!(full.total_panes_matched == 6 && !full.matches_truncated);

    let bytes = search(
        &ctx,
        deep(SearchPanesArgs {
            max_scan_bytes: Some(5_000),
            ..args("error")
        }),
    );
    assert!(
        bytes.matching_byte_clamped && bytes.bytes_scanned <= 5_000,
        "{}",
        bytes.bytes_scanned
    );
    assert!(!bytes.matching_line_clamped);

    let lines = search(
        &ctx,
        deep(SearchPanesArgs {
            max_scan_lines: Some(50),
            ..args("error")
        }),
    );
    assert!(lines.matching_line_clamped && lines.lines_scanned <= 50);

    // The same clamped search gives the same answer every time.
    for _ in 0..3 {
        let again = search(
            &ctx,
            deep(SearchPanesArgs {
                max_scan_bytes: Some(5_000),
                ..args("error")
            }),
        );
        assert_eq!(all_lines(&again), all_lines(&bytes));
        assert_eq!(
            (
                again.panes_searched,
                again.panes_failed,
                again.bytes_scanned,
                again.lines_scanned
            ),
            (
                bytes.panes_searched,
                bytes.panes_failed,
                bytes.bytes_scanned,
                bytes.lines_scanned
            )
        );
    }

    let few = search(
        &ctx,
        deep(SearchPanesArgs {
            max_matches: Some(3),
            ..args("error")
        }),
    );
    assert!(few.matches_truncated);
    assert_eq!(all_lines(&few).len(), 3);

    let per_pane = search(
        &ctx,
        deep(SearchPanesArgs {
            max_matches_per_pane: Some(2),
            ..args("error")
        }),
    );
    assert!(per_pane
        .matches
        .iter()
        .all(|p| p.lines.len() <= 2 && p.lines_truncated));
    assert!(
        !per_pane.matches_truncated,
        "a per-pane cap is not a global clamp"
    );

    let mut tight = Ceilings::default();
    tight.search.max_panes = 2;
    tight.search.max_scrollback_lines = 100;
    tight.search.max_capture_bytes = 2_000;
    let tight_ctx = context(&name, tight);
    let clamped = search(&tight_ctx, deep(args("error")));
    assert!(clamped.pane_limit_clamped && clamped.panes_searched == 2);
    assert!(clamped.scrollback_clamped && clamped.effective_scrollback_lines == 100);
    assert!(clamped.captures_byte_clamped);
    let unclamped = search(
        &tight_ctx,
        SearchPanesArgs {
            scrollback_lines: Some(50),
            ..args("error")
        },
    );
    assert!(
        !unclamped.scrollback_clamped,
        "50 lines is within the ceiling"
    );

    // 1 ms cannot list and fetch 6 x 400 lines: either the listing itself
    // runs out of time (a clear error: nothing was searched) or the fetch
    // does (a partial result that says so). Without the pane cache: the
    // searches above filled it, and a search it answers whole can finish
    // within 1 ms.
    let uncached = context(&name, Ceilings::default()).with_pane_cache(None);
    match search_panes(
        &uncached,
        &deep(SearchPanesArgs {
            timeout_ms: Some(1),
            ..args("error")
        }),
    ) {
        Ok(timed) => assert!(
            timed.matching_time_clamped,
            "1 ms cannot fetch 6 x 400 lines"
        ),
        Err(e) => assert!(e.message.contains("deadline"), "{e}"),
    }
}

#[test]
fn bad_arguments_are_clear_errors() {
    let server = PrivateServer::start("search-errors", 80, 20).unwrap();
    let ctx = context(server.socket_name(), Ceilings::default());
    let err = |a: SearchPanesArgs| search_panes(&ctx, &a).unwrap_err().message;
    assert!(err(SearchPanesArgs::default()).contains("pattern is required"));
    assert!(err(SearchPanesArgs {
        regex: true,
        ..args("a{5000}")
    })
    .contains("1,000"));
    assert!(err(SearchPanesArgs {
        session: Some("nope".into()),
        ..args("x")
    })
    .contains("sessions: $0 (main)"));
    assert!(err(SearchPanesArgs {
        pane_ids: Some(vec![PaneId::parse("%99").unwrap()]),
        ..args("x")
    })
    .contains("no pane %99"));
    assert!(err(SearchPanesArgs {
        context_lines: Some(11),
        ..args("x")
    })
    .contains("context_lines"));
    assert!(err(SearchPanesArgs {
        max_scan_bytes: Some(u64::MAX),
        ..args("x")
    })
    .contains("ceiling"));
}
