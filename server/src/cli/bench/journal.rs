//! `panescan bench --journal-only`: the journal's rows, search speed
//! ([`super::journal_scan`]) and keeping up ([`super::journal_load`]),
//! printed as a table or Markdown. Goals beside each row (issue 40): the
//! search >= 2 GB/s of text and >= 1.5x `rg -z -j2`, <= 0.3x the text on
//! disk; no gap at 200 panes x 100 lines/s, tmux's added CPU <= 5% of a
//! core and the daemon's <= 10%; list_panes <= 150 ms while panes print
//! flat out.

use serde::Serialize;

use super::journal_load::{self, KeepUpBench};
use super::journal_scan::{self, ScanBench};

/// The journal section of the bench report.
#[derive(Debug, Clone, Serialize)]
pub struct JournalBench {
    pub scan: ScanBench,
    /// `None` with `--journal-seconds 0`.
    pub keep_up: Option<KeepUpBench>,
}

/// Measures the section: `megabytes` of text searched `runs` times,
/// `seconds` of steady printing per keeping-up run (0: none).
pub fn run(megabytes: u64, seconds: u64, runs: usize) -> Result<JournalBench, String> {
    let scan = journal_scan::run(megabytes, runs)?;
    let keep_up = if seconds == 0 {
        None
    } else {
        Some(journal_load::run(seconds)?)
    };
    Ok(JournalBench { scan, keep_up })
}

/// GB of text per CPU second, in words; none under one clock tick of
/// `/proc`'s CPU times (10 ms), where the quotient means nothing.
fn per_cpu(bytes: u64, cpu_s: f64) -> String {
    if cpu_s < 0.01 {
        return "too little CPU to divide by (under 10 ms)".to_owned();
    }
    format!(
        "{:.2} GB of text per CPU second",
        bytes as f64 / cpu_s / 1e9
    )
}

fn mb(bytes: u64) -> f64 {
    bytes as f64 / 1e6
}

/// The search rows.
fn scan_rows(s: &ScanBench) -> Vec<(String, String)> {
    let mut out = vec![
        (
            format!(
                "search with the frames' indexes, a rare literal over {:.0} MB of journaled text ({} segments, {} frames, cache warm, median of {})",
                mb(s.text_bytes), s.segments, s.frames, s.runs
            ),
            format!(
                "{:.1} ms, {:.2} GB/s of text covered (scanned or skipped by an index; goal >= 2 GB/s), {} hits; {} of {} frames skipped ({:.1}%), {:.0} MB scanned; {:.2} s of CPU",
                s.journal_ms, s.journal_gb_per_s, s.hits, s.frames_skipped,
                s.frames_skipped + s.frames_read,
                100.0 * s.frames_skipped as f64 / (s.frames_skipped + s.frames_read).max(1) as f64,
                mb(s.bytes_scanned), s.journal_cpu_s
            ),
        ),
        (
            "the same search without the indexes (every frame decompressed and scanned)".to_owned(),
            format!(
                "{:.1} ms, {:.2} GB/s of text scanned, {} hits; {:.2} s of CPU, {}",
                s.unindexed_ms, s.unindexed_gb_per_s, s.unindexed_hits, s.unindexed_cpu_s,
                per_cpu(s.text_bytes, s.unindexed_cpu_s)
            ),
        ),
        (
            format!("a common literal (`{}`) with the indexes", s.common),
            format!(
                "{:.1} ms, {} hits; {} of {} frames skipped",
                s.common_ms, s.common_hits, s.common_frames_skipped,
                s.common_frames_skipped + s.common_frames_read
            ),
        ),
        (
            format!(
                "the rare literal with the tails of {} live panes (as search_panes `journal: true` on a live server asks for them), frames holding their lines decompressed only when a tail needs them",
                s.tailed
            ),
            format!(
                "{:.1} ms, {} hits; {} of {} frames decompressed; as before (every frame with a tailed pane's lines decompressed): {:.1} ms, {} frames, {:.1}x the time",
                s.tails_ms, s.tails_hits, s.tails_frames_read, s.frames,
                s.tails_unheld_ms, s.tails_unheld_frames_read,
                s.tails_unheld_ms / s.tails_ms.max(1e-6)
            ),
        ),
        (
            format!("the same frames read and decompressed alone, nothing parsed or scanned ({} threads)", s.threads),
            format!(
                "{:.1} ms, {:.2} GB/s of text: what a search without indexes cannot beat; {:.2} s of CPU, {}",
                s.inflate_ms, s.inflate_gb_per_s, s.inflate_cpu_s, per_cpu(s.text_bytes, s.inflate_cpu_s)
            ),
        ),
        (
            "`rg -z -j2 -F -c` over the same text as .zst files (zstd level 1, one zstd frame per journal frame)".to_owned(),
            match (&s.rg_skipped, s.rg_ms, s.x_rg) {
                (Some(why), _, _) => why.clone(),
                (None, Some(t), Some(x)) => format!(
                    "{t:.1} ms, {} hits; the journal with indexes {x:.2}x as fast (goal >= 1.5x), without {:.2}x",
                    s.rg_hits.unwrap_or(0),
                    s.x_rg_unindexed.unwrap_or(0.0)
                ),
                _ => "not measured".to_owned(),
            },
        ),
        (
            format!("on disk, the demo corpus journaled ({} bytes of text)", s.corpus_text_bytes),
            format!(
                "{} bytes, {:.3}x the text (goal <= 0.3x), its index {} bytes; the {:.0} MB above: {:.3}x, indexes {:.1}% of it",
                s.corpus_disk_bytes, s.corpus_ratio, s.index.corpus_index_bytes, mb(s.text_bytes),
                s.disk_ratio, 100.0 * s.index.share_of_disk
            ),
        ),
        (
            "the frame index: built by the writer with each frame (one thread)".to_owned(),
            format!(
                "{:.2} ms per MB of text; {} of {} frames indexed, {} bytes of index in all",
                s.index.build_ms_per_mb, s.index.frames_indexed, s.index.frames, s.index.index_bytes
            ),
        ),
    ];
    for row in &s.index.sizes {
        out.push((
            format!(
                "filter at {} bits per distinct trigram ({} frames, {:.0} MB of text)",
                row.bits_per_trigram, s.index.samples, mb(s.index.sample_bytes)
            ),
            format!(
                "{:.0} bytes a frame, {:.1}% of its zstd bytes; passes absent strings of 3 bytes {:.1}%, 8 bytes {:.2}%, the needle {:.2}%",
                row.filter_bytes, 100.0 * row.share_of_compressed, 100.0 * row.fp_3,
                100.0 * row.fp_8, 100.0 * row.fp_needle
            ),
        ));
    }
    out
}

/// The rows as lines of text, shared by the table and the Markdown.
fn rows(j: &JournalBench) -> Vec<(String, String)> {
    let mut out = scan_rows(&j.scan);
    if let Some(k) = &j.keep_up {
        let load = format!(
            "{} panes x {} lines/s for {} s, history-limit {} ({} lines)",
            k.panes, k.lines_per_second, k.seconds, k.history_limit, k.lines_printed
        );
        for (how, r) in [("", &k.feeds), (", --journal-taps", &k.taps)] {
            out.push((
                format!("{load}{how}"),
                format!(
                    "{} gaps (goal none){}; {} lines journaled",
                    r.gaps,
                    if r.gap_reasons.is_empty() {
                        String::new()
                    } else {
                        format!(": {}", r.gap_reasons.join("; "))
                    },
                    r.lines_journaled
                ),
            ));
            out.push((
                format!("CPU, % of one core (from /proc utime+stime){how}"),
                format!(
                    "tmux {:.1}% without the journal, {:.1}% with: +{:.1} (goal <= 5); the daemon {:.1}% (goal <= 10)",
                    k.tmux_cpu_without, r.tmux_cpu, r.tmux_added, r.daemon_cpu
                ),
            ));
        }
        for (how, f) in [("", &k.flat), (", --journal-taps", &k.flat_taps)] {
            out.extend(flat_rows(f, how));
        }
    }
    out
}

/// The section as a table.
pub fn print(j: &JournalBench) {
    println!();
    println!("journal:");
    for (what, figure) in rows(j) {
        println!("  {what}");
        println!("      {figure}");
    }
}

/// The section as Markdown.
pub fn markdown(j: &JournalBench) -> String {
    let mut out = String::from("| journal | measured |\n|---|---|\n");
    for (what, figure) in rows(j) {
        out.push_str(&format!("| {what} | {figure} |\n"));
    }
    out
}

/// The flat-out rows (`how`: how the daemon journaled).
fn flat_rows(f: &journal_load::FlatOut, how: &str) -> [(String, String); 2] {
    [
        (
            format!(
                "{} panes printing flat out (`seq`) for {} s ({} lines printed){how}",
                f.panes, f.seconds, f.lines_printed
            ),
            format!(
                "{} gaps, {:.1} s of spans in all, the longest {} ms; {} lines journaled{}",
                f.gaps,
                f.gap_total_ms as f64 / 1e3,
                f.gap_longest_ms,
                f.lines_journaled,
                f.gap_examples
                    .first()
                    .map(|g| format!("; e.g. {} ms to {} ms after the start: {}", g.0, g.1, g.2))
                    .unwrap_or_default()
            ),
        ),
        (
            format!("list_panes through the journaling daemon meanwhile{how}"),
            format!(
                "median {:.1} ms, worst {:.1} ms of {} calls (goal <= 150 ms)",
                f.list_ms, f.list_max_ms, f.lists
            ),
        ),
    ]
}
