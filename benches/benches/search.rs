//! End-to-end search on a private tmux server, beside the raw fetch of the
//! same text measured in the same run.
//!
//! Run: `cargo bench -p panescan-benches --bench search`
//! (PANESCAN_BENCH_PANES / PANESCAN_BENCH_LINES change the shape; default
//! 200 panes x 2,000 lines).
//!
//! Groups, each with a `raw-fetch` baseline (one `tmux source-file -` with
//! every `capture-pane -p`, the fastest raw path for deep captures) and
//! `search_panes` (the tool called in-process: inventory, pipelined fetch,
//! parallel scan, result shaping):
//! - `visible`: the visible screens;
//! - `deep`: all of every pane's history.
//!
//! Read the ratio search_panes / raw-fetch; the absolute numbers move with
//! the machine's load. `panescan bench` measures the same through the MCP
//! front end, with more cases.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use panescan::testing::baseline::{source_fetch, FetchRange};
use panescan::testing::config::Ceilings;
use panescan::testing::fixture::{Fixture, FixtureShape, NEEDLE};
use panescan::testing::tmux::ServerSpec;
use panescan::testing::tools::context::ToolContext;
use panescan::testing::tools::search::{search_panes, SearchPanesArgs};

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn bench(c: &mut Criterion) {
    let panes = env_usize("PANESCAN_BENCH_PANES", 200);
    let lines = env_usize("PANESCAN_BENCH_LINES", 2_000);
    let shape = FixtureShape {
        panes,
        lines,
        ..FixtureShape::default()
    };
    let fixture = Fixture::build(
        "criterion-search",
        shape,
        &panescan::testing::corpus::sources(),
        Duration::from_secs(300),
        &mut |_, _| {},
    )
    .unwrap();
    let socket = fixture.server.socket_name().to_owned();
    let ctx = ToolContext::read_only(ServerSpec::named(&socket), Ceilings::default());
    for (name, range, scrollback) in [
        ("visible", FetchRange::Visible, 0),
        ("deep", FetchRange::Scrollback(lines as u64), lines as u64),
    ] {
        let mut group = c.benchmark_group(format!("{panes}x{lines}/{name}"));
        group
            .sample_size(10)
            .measurement_time(Duration::from_secs(5));
        group.bench_function("raw-fetch", |b| {
            b.iter(|| source_fetch(&socket, &fixture.pane_ids, range).unwrap())
        });
        let args = SearchPanesArgs {
            pattern: Some(NEEDLE.into()),
            scrollback_lines: Some(scrollback),
            ..SearchPanesArgs::default()
        };
        group.bench_function("search_panes", |b| {
            b.iter(|| search_panes(&ctx, &args).unwrap())
        });
        group.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
