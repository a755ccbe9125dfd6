//! Times the stages of one search on a private tmux server, each beside the
//! raw single-process fetch of the same text, in the same run: where does a
//! search spend the time that the raw fetch does not?
//!
//! ```sh
//! cargo run --release -p panescan --example search_stages -- 200 2000          # visible screens
//! cargo run --release -p panescan --example search_stages -- 1000 200 deep     # scrollback too
//! ```
//!
//! Prints medians of 15 interleaved rounds: the raw `tmux source-file -`
//! sweep of `capture-pane -p -J` (what `panescan bench` calls the floor),
//! the search's listing (`Tmux::inventory` with `Fields::Search`), the transport's
//! batch capture of every listed pane (`Tmux::capture`), and the whole
//! `search_panes` in-process (listing, capture, scan, result).

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

use panescan::testing::baseline::{source_fetch, FetchRange};
use panescan::testing::config::Ceilings;
use panescan::testing::corpus;
use panescan::testing::fixture::{Fixture, FixtureShape, NEEDLE};
use panescan::testing::tmux::capture::{CaptureOptions, CaptureRange, CaptureRequest};
use panescan::testing::tmux::{Fields, ServerSpec, Tmux};
use panescan::testing::tools::context::ToolContext;
use panescan::testing::tools::search::{search_panes, SearchPanesArgs};

const ROUNDS: usize = 15;

fn main() -> Result<(), String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let number =
        |i: usize, default: usize| args.get(i).and_then(|v| v.parse().ok()).unwrap_or(default);
    let (panes, lines) = (number(0, 200), number(1, 2_000));
    let deep = args.get(2).is_some_and(|a| a == "deep");
    panescan::testing::private_server::kill_on_interrupt();
    let shape = FixtureShape {
        panes,
        lines,
        ..FixtureShape::default()
    };
    let fixture = Fixture::build(
        "stages",
        shape,
        &corpus::sources(),
        Duration::from_secs(600),
        &mut |_, _| {},
    )
    .map_err(|e| e.to_string())?;
    let socket = fixture.server.socket_name().to_owned();
    let spec = ServerSpec::named(&socket);
    let tmux = Tmux::connect(&spec).map_err(|e| e.to_string())?;
    // No pane cache: every search fetches its panes, like the raw sweep.
    let ctx = ToolContext::read_only(spec, Ceilings::default()).with_pane_cache(None);
    let (fetch, range) = if deep {
        (
            FetchRange::Scrollback(lines as u64),
            CaptureRange::Scrollback(lines as u64),
        )
    } else {
        (FetchRange::Visible, CaptureRange::Visible)
    };
    let search = SearchPanesArgs {
        pattern: Some(NEEDLE.to_owned()),
        scrollback_lines: deep.then_some(lines as u64),
        ..SearchPanesArgs::default()
    };
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let mut times: [Vec<f64>; 4] = Default::default();
    for _ in 0..ROUNDS {
        let raw = source_fetch(&socket, &fixture.pane_ids, fetch).map_err(|e| e.to_string())?;
        times[0].push(ms(raw.elapsed));
        let start = Instant::now();
        let deadline = start + Duration::from_secs(120);
        let inv = tmux
            .inventory(Fields::Search, &[], deadline)
            .map(|(inv, _)| inv)
            .map_err(|e| e.to_string())?;
        times[1].push(ms(start.elapsed()));
        let listed = Instant::now();
        let requests = inv
            .panes
            .iter()
            .map(|p| CaptureRequest {
                pane: p.pane_id,
                range,
            })
            .collect();
        let options = CaptureOptions {
            join_wrapped: true,
            escapes: false,
        };
        let cancel = Arc::new(AtomicBool::new(false));
        let failed = tmux
            .capture(requests, options, deadline, cancel)
            .iter()
            .filter(|r| r.result.is_err())
            .count();
        if failed > 0 {
            return Err(format!("{failed} captures failed"));
        }
        times[2].push(ms(listed.elapsed()));
        let start = Instant::now();
        search_panes(&ctx, &search).map_err(|e| e.message)?;
        times[3].push(ms(start.elapsed()));
    }
    let [raw, list, capture, search] = times.map(|mut t| {
        t.sort_by(f64::total_cmp);
        t[t.len() / 2]
    });
    println!(
        "{panes} panes x {lines} lines, {}, medians of {ROUNDS}:",
        if deep { "deep" } else { "visible" }
    );
    println!("  raw source-file sweep  {raw:8.1} ms");
    println!("  search listing         {list:8.1} ms");
    println!(
        "  capture of every pane  {capture:8.1} ms  {:.2}x raw",
        capture / raw
    );
    println!(
        "  search_panes           {search:8.1} ms  {:.2}x raw",
        search / raw
    );
    Ok(())
}
