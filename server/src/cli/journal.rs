//! `panescan search --journal`: a pattern over the journal, grep's manners.
//!
//! Prints `TIME %3 session:window.pane: text` per hit, oldest first, the
//! gaps in the span and the segments that could not be read on stderr;
//! `--json` prints them as one object. Exit status as grep.

use std::io::Write;
use std::process::ExitCode;

use panescan_engine::{Matcher, PatternOptions, SearchOptions};

use super::search::SearchArgs;
use crate::journal::{dir, search, when};

/// Runs a journal search; the exit code follows grep.
pub fn run_search(args: &SearchArgs) -> ExitCode {
    match search_journal(args) {
        Ok(found) => {
            if found {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            }
        }
        Err(e) => {
            eprintln!("panescan search: {e}");
            ExitCode::from(2)
        }
    }
}

fn search_journal(args: &SearchArgs) -> Result<bool, String> {
    let journal = args.journal_place.dir()?;
    dir::check(&journal)?;
    let now = when::now_ms();
    let since_ms = args
        .since
        .as_deref()
        .map(|t| when::parse(t, now))
        .transpose()?;
    let until_ms = args
        .until
        .as_deref()
        .map(|t| when::parse(t, now))
        .transpose()?;
    let matcher = Matcher::new(
        &args.patterns,
        PatternOptions {
            regex: args.regex,
            match_case: args.match_case,
        },
    )
    .map_err(|e| e.to_string())?;
    let mut options = SearchOptions {
        context_lines: usize::from(args.context.unwrap_or(0)),
        redact: !args.no_redact,
        ..SearchOptions::default()
    };
    if let Some(n) = args.max_scan_bytes {
        options.limits.max_scan_bytes = n;
    }
    if let Some(n) = args.max_matches {
        options.limits.max_matches = n;
    }
    let query = search::Query {
        options,
        since_ms: since_ms.unwrap_or(i64::MIN),
        until_ms: until_ms.unwrap_or(i64::MAX),
        panes: (!args.panes.is_empty()).then(|| args.panes.clone()),
    };
    let outcome = search::search(&journal, &matcher, &query)
        .map_err(|e| format!("cannot read {}: {e}", journal.display()))?;
    print(args.json, &outcome).map_err(|e| e.to_string())?;
    Ok(!outcome.hits.is_empty())
}

fn print(json: bool, outcome: &search::Outcome) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    let place = |o: &crate::journal::frame::Origin| {
        format!("{} {}:{}.{}", o.pane, o.session, o.window, o.title)
    };
    if json {
        let hits: Vec<serde_json::Value> = outcome
            .hits
            .iter()
            .map(|h| {
                serde_json::json!({
                    "time": when::format(h.time_ms),
                    "pane_id": h.origin.pane,
                    "session": h.origin.session,
                    "window": h.origin.window,
                    "text": h.line.text,
                    "before": h.line.before,
                    "after": h.line.after,
                })
            })
            .collect();
        let gaps: Vec<serde_json::Value> = outcome
            .gaps
            .iter()
            .map(|(o, g)| {
                serde_json::json!({
                    "pane_id": o.pane,
                    "from": when::format(g.from_ms),
                    "to": when::format(g.to_ms),
                    "reason": g.reason,
                })
            })
            .collect();
        let value = serde_json::json!({
            "matches": hits,
            "gaps": gaps,
            "skipped": outcome.skipped,
            "bytes_scanned": outcome.bytes_scanned,
            "clamped": outcome.flags.any(),
        });
        writeln!(out, "{value:#}")?;
    } else {
        for h in &outcome.hits {
            writeln!(
                out,
                "{} {}: {}",
                when::format(h.time_ms),
                place(&h.origin),
                h.line.text
            )?;
        }
        for (o, g) in &outcome.gaps {
            eprintln!(
                "gap {} .. {} {}: {}",
                when::format(g.from_ms),
                when::format(g.to_ms),
                place(o),
                g.reason
            );
        }
        eprintln!(
            "{} matches, {} bytes of journal scanned{}",
            outcome.hits.len(),
            outcome.bytes_scanned,
            if outcome.flags.any() {
                " (clamped by a budget)"
            } else {
                ""
            }
        );
    }
    for s in &outcome.skipped {
        eprintln!("panescan search: skipped {s}");
    }
    Ok(())
}
