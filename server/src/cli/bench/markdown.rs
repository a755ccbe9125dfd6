//! `panescan bench --markdown`: the report as the Markdown section that
//! BENCHMARKS.md keeps, so the figures there are pasted from a run, never
//! retyped.
//!
//! The same numbers as `--json`, laid out as tables: the raw fetch floors,
//! one row per search with its ratio to the floor, then the pane cache and
//! the wait sections when the run has them.

use std::fmt::Write as _;

use super::cache::CacheBench;
use super::report::BenchReport;
use super::wait::WaitBench;

/// The whole report: the command that reproduces it, the floors, the
/// search matrix, then the cache and wait sections.
pub fn report(r: &BenchReport) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "`panescan bench --panes {} --lines {} --width {} --runs {}` \
         (medians of {} runs; filling the panes took {:.0} ms)\n",
        r.panes, r.lines, r.width, r.runs, r.runs, r.fill_ms
    );
    out.push_str("| fetch of the same text, no search | visible | deep |\n|---|---|---|\n");
    let _ = writeln!(
        out,
        "| raw, one connection (the floor) | {:.1} ms ({} bytes) | {:.1} ms ({} bytes) |",
        r.raw_visible_ms, r.raw_visible_bytes, r.raw_deep_ms, r.raw_deep_bytes
    );
    if let (Some(v), Some(d)) = (r.process_per_pane_visible_ms, r.process_per_pane_deep_ms) {
        let _ = writeln!(out, "| one tmux process per pane | {v:.1} ms | {d:.1} ms |");
    }
    out.push_str(
        "\n| scope | search | median | raw fetch beside it | x raw fetch (median of paired runs) | bytes | lines | hits | clamps |\n\
         |---|---|---|---|---|---|---|---|---|\n",
    );
    for row in &r.rows {
        let clamps = if row.clamps.is_empty() {
            "-".to_owned()
        } else {
            row.clamps.join(", ")
        };
        let _ = writeln!(
            out,
            "| {} | {} | {:.1} ms | {:.1} ms | {:.2} | {} | {} | {} | {} |",
            row.scope,
            cell(&row.case),
            row.median_ms,
            row.raw_fetch_ms,
            row.ratio_to_raw_fetch,
            row.bytes_scanned,
            row.lines_scanned,
            row.matching_lines,
            cell(&clamps)
        );
    }
    if let Some(c) = &r.cache {
        out.push('\n');
        out.push_str(&cache(c));
    }
    if let Some(w) = &r.wait {
        out.push('\n');
        out.push_str(&wait(w));
    }
    if let Some(l) = &r.load {
        out.push('\n');
        out.push_str(&super::load::markdown(l));
    }
    if let Some(b) = &r.big {
        out.push('\n');
        out.push_str(&super::big::markdown(b));
    }
    if let Some(d) = &r.daemon {
        out.push('\n');
        out.push_str(&super::daemon::markdown(d));
    }
    if let Some(h) = &r.http {
        out.push('\n');
        out.push_str(&super::http::markdown(h));
    }
    out
}

/// The pane cache section (`--cache-only` prints it alone).
pub fn cache(c: &CacheBench) -> String {
    let mut out = String::from(
        "| pane cache: the same deep search, in-process | median | x cold |\n|---|---|---|\n",
    );
    let _ = writeln!(out, "| cold (no cache) | {:.1} ms | 1 |", c.cold_deep_ms);
    let _ = writeln!(
        out,
        "| warm, nothing changed | {:.1} ms | {:.3} |",
        c.warm_unchanged_ms, c.ratio_unchanged
    );
    let _ = writeln!(
        out,
        "| warm, {} panes printed {} lines | {:.1} ms | {:.3} |",
        c.changed_panes, c.new_lines_per_changed_pane, c.warm_changed_ms, c.ratio_changed
    );
    let _ = writeln!(
        out,
        "| since the last search, {} panes printed {} lines | {:.1} ms | {:.3} |",
        c.since_changed_panes, c.new_lines_per_changed_pane, c.since_ms, c.ratio_since
    );
    let _ = writeln!(
        out,
        "| regex returning {} lines, cold (no cache) | {:.1} ms | 1 |",
        c.regex_lines, c.cold_regex_ms
    );
    let _ = writeln!(
        out,
        "| the same regex, warm, nothing changed | {:.1} ms | {:.3} |",
        c.warm_regex_ms, c.ratio_regex
    );
    let _ = writeln!(
        out,
        "| tmux commands a warm search sends, nothing printed | {} | |",
        c.warm_commands
    );
    let _ = writeln!(
        out,
        "\nCache memory {:.1} MiB for {} panes; reused {}, delta {}, full {}, \
         delta rejected {}; hits identical to the cold search: {}.",
        c.cache_memory_bytes as f64 / (1u64 << 20) as f64,
        c.cache_panes,
        c.reused,
        c.delta,
        c.full,
        c.delta_rejected,
        if c.same_hits { "yes" } else { "no" }
    );
    out
}

/// The wait_for_text section (`--wait-only` prints it alone).
pub fn wait(w: &WaitBench) -> String {
    let mut out = format!(
        "| wait_for_text, text appearing -> answer ({} runs) | median | min-max |\n|---|---|---|\n",
        w.runs
    );
    let _ = writeln!(
        out,
        "| event stream | {:.1} ms | {:.1}-{:.1} ms |",
        w.events_median_ms, w.events_min_ms, w.events_max_ms
    );
    let _ = writeln!(
        out,
        "| polling (`serve --no-events`) | {:.1} ms | {:.1}-{:.1} ms |",
        w.polling_median_ms, w.polling_min_ms, w.polling_max_ms
    );
    let _ = writeln!(
        out,
        "| watch_panes, every pane ({}), event stream | {:.1} ms | {:.1}-{:.1} ms |",
        w.watch_panes, w.watch_median_ms, w.watch_min_ms, w.watch_max_ms
    );
    let _ = writeln!(
        out,
        "| one capture of the pane | {:.1} ms | |",
        w.capture_median_ms
    );
    super::watch::markdown(&w.wide, &mut out);
    let _ = writeln!(
        out,
        "| run_command true, call to answer (idle bash) | {:.1} ms | {:.1}-{:.1} ms |",
        w.run_true_median_ms, w.run_true_min_ms, w.run_true_max_ms
    );
    out
}

/// Text for a table cell: a `|` would end the cell early.
fn cell(text: &str) -> String {
    text.replace('|', "\\|")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::bench::report::BenchRow;

    fn sample() -> BenchReport {
        BenchReport {
            panes: 3,
            lines: 40,
            width: 80,
            runs: 2,
            fill_ms: 12.0,
            raw_visible_ms: 1.5,
            raw_visible_bytes: 900,
            raw_deep_ms: 4.0,
            raw_deep_bytes: 5000,
            process_per_pane_visible_ms: None,
            process_per_pane_deep_ms: Some(9.0),
            rows: vec![BenchRow {
                case: "a|b".to_owned(),
                scope: "deep",
                median_ms: 8.31,
                bytes_scanned: 5000,
                lines_scanned: 120,
                matching_lines: 3,
                clamps: vec!["matches_clamped".to_owned(), "time_clamped".to_owned()],
                ratio_to_raw_fetch: 2.06,
                raw_fetch_ms: 4.2,
            }],
            cache: None,
            wait: Some(WaitBench {
                runs: 2,
                events_median_ms: 4.0,
                events_min_ms: 3.0,
                events_max_ms: 5.0,
                polling_median_ms: 90.0,
                polling_min_ms: 80.0,
                polling_max_ms: 100.0,
                watch_median_ms: 5.0,
                watch_min_ms: 4.0,
                watch_max_ms: 6.0,
                watch_panes: 10,
                capture_median_ms: 2.5,
                events_panes_polled: 0,
                run_true_median_ms: 20.0,
                run_true_min_ms: 15.0,
                run_true_max_ms: 30.0,
                wide: Default::default(),
            }),
            load: None,
            big: None,
            daemon: None,
            http: None,
        }
    }

    #[test]
    fn a_report_is_its_command_floors_rows_and_sections() {
        let text = report(&sample());
        assert!(
            text.starts_with("`panescan bench --panes 3 --lines 40 --width 80 --runs 2`"),
            "{text}"
        );
        assert!(
            text.contains(
                "| raw, one connection (the floor) | 1.5 ms (900 bytes) | 4.0 ms (5000 bytes) |"
            ),
            "{text}"
        );
        // Half a process baseline is not a row.
        assert!(!text.contains("one tmux process per pane"), "{text}");
        assert!(
            text.contains(
                "| deep | a\\|b | 8.3 ms | 4.2 ms | 2.06 | 5000 | 120 | 3 | matches_clamped, time_clamped |"
            ),
            "{text}"
        );
        assert!(!text.contains("pane cache"), "{text}");
        assert!(
            text.contains("| event stream | 4.0 ms | 3.0-5.0 ms |"),
            "{text}"
        );
        // Every table row has as many cells as its header.
        for table in text.split("\n\n").filter(|t| t.starts_with('|')) {
            let bars: Vec<usize> = table.lines().map(unescaped_bars).collect();
            assert!(bars.iter().all(|&n| n == bars[0]), "{table}");
        }
    }

    fn unescaped_bars(line: &str) -> usize {
        line.replace("\\|", "").matches('|').count()
    }
}
