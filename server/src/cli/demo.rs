//! `panescan demo`: see search_panes work without touching your own tmux.
//!
//! Starts a private tmux server, fills it with real terminal output from
//! the embedded corpus (scrollback included), runs a few searches through
//! the real MCP front end (a `panescan serve` child on a pipe, as an MCP
//! client would), shows what they found and how long they took beside
//! fetching the same text with one tmux process per pane, then kills the
//! server — also on Ctrl-C.

use std::time::{Duration, Instant};

use clap::Args;
use serde_json::{json, Value};

use super::client::McpClient;
use super::progress;
use crate::testbed::baseline::{self, FetchRange};
use crate::testbed::fixture::{FixtureShape, NEEDLE};
use crate::testbed::private_server::kill_on_interrupt;

/// `panescan demo` options.
#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  panescan demo\n  panescan demo --panes 50 --lines 500")]
pub struct DemoArgs {
    /// Panes to fill.
    #[arg(long, default_value_t = 200)]
    pub panes: usize,
    /// Lines printed in each pane.
    #[arg(long, default_value_t = 2_000)]
    pub lines: usize,
    /// Pane width in cells.
    #[arg(long, default_value_t = 200)]
    pub width: u16,
    /// Lines of each search's hits to print.
    #[arg(long, default_value_t = 5)]
    pub show: usize,
}

/// Runs the demo.
pub fn run(args: &DemoArgs) -> Result<(), String> {
    kill_on_interrupt();
    let shape = FixtureShape {
        panes: args.panes.max(1),
        lines: args.lines.max(1),
        width: args.width.max(20),
        height: 50,
        needle_every: 40,
    };
    println!(
        "panescan demo: {} panes x {} lines of real terminal output (build logs, test runs, tracebacks, TUIs) in a private tmux server\n",
        shape.panes, shape.lines
    );
    let filling = Instant::now();
    let fixture = progress::fill_fixture("demo", shape.clone(), true)?;
    println!(
        "filled in {:.1} s (tmux -L {})\n",
        filling.elapsed().as_secs_f64(),
        fixture.server.socket_name()
    );
    let socket = fixture.server.socket_name().to_owned();
    let mut client = McpClient::start(&socket)?;

    let all = shape.lines as u64;
    let searches = [
        (
            "A rare literal, in every pane's history",
            json!({"pattern": NEEDLE, "scrollback_lines": all}),
            FetchRange::Scrollback(all),
        ),
        (
            "A regex (compiler errors), in every pane's history",
            json!({"pattern": r"error\[E\d{4}\]", "regex": true, "scrollback_lines": all, "max_matches_per_pane": 2}),
            FetchRange::Scrollback(all),
        ),
        (
            "A common word on the visible screens",
            json!({"pattern": "error"}),
            FetchRange::Visible,
        ),
        (
            "A common word in all history: the budgets clamp, and say so",
            json!({"pattern": "the", "scrollback_lines": all, "max_matches": 100}),
            FetchRange::Scrollback(all),
        ),
    ];
    for (n, (title, arguments, range)) in searches.iter().enumerate() {
        println!("{}. {title}", n + 1);
        println!("   search_panes {arguments}");
        let start = Instant::now();
        let result =
            client.call_tool("search_panes", arguments.clone(), Duration::from_secs(300))?;
        let took = start.elapsed();
        print_hits(&result, args.show);
        let per_pane = baseline::process_per_pane(&socket, &fixture.pane_ids, *range)
            .map_err(|e| format!("tmux failed: {e}"))?;
        let (ms, fetch_ms) = (
            took.as_secs_f64() * 1e3,
            per_pane.elapsed.as_secs_f64() * 1e3,
        );
        // A ratio only where both sides did the same work: a search that
        // stopped early on a budget read less than the fetch did.
        if read_everything(&result, fixture.pane_ids.len()) {
            println!(
                "   {} in {ms:.0} ms through MCP; fetching the same text with one tmux process per pane takes {fetch_ms:.0} ms ({:.1}x), before any searching\n",
                summary(&result),
                fetch_ms / ms.max(1e-3),
            );
        } else {
            println!(
                "   {} in {ms:.0} ms through MCP, stopped early on a budget; fetching all of the text with one tmux process per pane takes {fetch_ms:.0} ms (no ratio: the search did not read all of it)\n",
                summary(&result),
            );
        }
    }
    drop(client);
    drop(fixture);
    println!("Private tmux server killed. On your own tmux: panescan search -A 'error[' (all history), or add `panescan serve` to your MCP client (see README).");
    Ok(())
}

fn print_hits(result: &Value, show: usize) {
    let mut shown = 0;
    let panes = result
        .get("matches")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for pane in &panes {
        let id = pane.get("pane_id").and_then(Value::as_str).unwrap_or("?");
        let session = pane
            .get("session_name")
            .and_then(Value::as_str)
            .unwrap_or("?");
        let window = pane
            .get("window_index")
            .and_then(Value::as_u64)
            .unwrap_or(0);
        let index = pane.get("pane_index").and_then(Value::as_u64).unwrap_or(0);
        for line in pane
            .get("lines")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if shown == show {
                println!("   ...");
                return;
            }
            let number = line.get("line").and_then(Value::as_i64).unwrap_or(0);
            let text = line.get("text").and_then(Value::as_str).unwrap_or("");
            let text: String = text.chars().take(110).collect();
            println!("   {id} {session}:{window}.{index} {number}: {text}");
            shown += 1;
        }
    }
}

/// Did the search read every pane's text in full: no budget clamped it,
/// no pane's hits were cut, every pane searched?
fn read_everything(result: &Value, panes: usize) -> bool {
    let searched = result
        .get("panes_searched")
        .and_then(Value::as_u64)
        .unwrap_or(0);
    let cut_pane = result
        .get("matches")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .any(|p| p.get("lines_truncated") == Some(&Value::Bool(true)));
    crate::tools::search::clamp_names_in_json(result).is_empty()
        && !cut_pane
        && searched >= panes as u64
}

fn summary(result: &Value) -> String {
    let n = |k: &str| result.get(k).and_then(Value::as_u64).unwrap_or(0);
    let lines: u64 = result
        .get("matches")
        .and_then(Value::as_array)
        .map(|p| {
            p.iter()
                .filter_map(|p| p.get("lines").and_then(Value::as_array))
                .map(|l| l.len() as u64)
                .sum()
        })
        .unwrap_or(0);
    let clamps = crate::tools::search::clamp_names_in_json(result);
    let mut s = format!(
        "{lines} lines in {} panes, {} panes and {:.1} MB searched",
        n("total_panes_matched"),
        n("panes_searched"),
        n("bytes_scanned") as f64 / 1e6
    );
    let truncated_panes = result
        .get("matches")
        .and_then(Value::as_array)
        .map_or(0, |m| {
            m.iter()
                .filter(|p| p.get("lines_truncated") == Some(&Value::Bool(true)))
                .count()
        });
    if truncated_panes > 0 {
        s.push_str(&format!(
            " ({truncated_panes} panes had more hits than max_matches_per_pane)"
        ));
    }
    if !clamps.is_empty() {
        s.push_str(&format!(", clamped: {}", clamps.join(", ")));
    }
    s
}
