//! The report as a table for people, or as CSV.

use super::report::BenchReport;

pub(super) fn print_table(r: &BenchReport) {
    println!(
        "panescan bench: {} panes x {} lines, width {}, median of {} runs (fill took {:.0} ms)\n",
        r.panes, r.lines, r.width, r.runs, r.fill_ms
    );
    println!(
        "raw fetch floor (one connection): visible {:.1} ms ({} bytes), deep {:.1} ms ({} bytes)",
        r.raw_visible_ms, r.raw_visible_bytes, r.raw_deep_ms, r.raw_deep_bytes
    );
    if let (Some(v), Some(d)) = (r.process_per_pane_visible_ms, r.process_per_pane_deep_ms) {
        println!("one tmux process per pane:         visible {v:.1} ms, deep {d:.1} ms");
    }
    println!();
    println!(
        "{:<8} {:<34} {:>10} {:>8} {:>7} {:>12} {:>10} {:>6}  clamps",
        "scope", "search", "median ms", "raw ms", "x raw", "bytes", "lines", "hits"
    );
    for row in &r.rows {
        println!(
            "{:<8} {:<34} {:>10.1} {:>8.1} {:>7.2} {:>12} {:>10} {:>6}  {}",
            row.scope,
            row.case,
            row.median_ms,
            row.raw_fetch_ms,
            row.ratio_to_raw_fetch,
            row.bytes_scanned,
            row.lines_scanned,
            row.matching_lines,
            if row.clamps.is_empty() {
                "-".to_owned()
            } else {
                row.clamps.join(",")
            }
        );
    }
}

pub(super) fn print_csv(r: &BenchReport) {
    println!("scope,case,median_ms,ratio_to_raw_fetch,bytes_scanned,lines_scanned,matching_lines,clamps,raw_fetch_ms,panes,lines");
    for row in &r.rows {
        println!(
            "{},\"{}\",{},{},{},{},{},\"{}\",{},{},{}",
            row.scope,
            row.case,
            row.median_ms,
            row.ratio_to_raw_fetch,
            row.bytes_scanned,
            row.lines_scanned,
            row.matching_lines,
            row.clamps.join(" "),
            row.raw_fetch_ms,
            r.panes,
            r.lines
        );
    }
}
