//! `panescan bench --journal-only`, search speed: a rare literal over a
//! journal of `--journal-mb` of text, beside `rg -z -j2` over the same
//! text compressed the same way, and the journal's size on disk.
//!
//! The journal is built in a private temporary directory with the
//! journal's own writer ([`Appender`]): the demo corpus (escapes stripped,
//! as tmux renders it) repeated with its digits varied, so no frame
//! repeats another, in frames of [`FRAME_TEXT`] bytes from 200 panes
//! (about what a flush of a busy server holds). ripgrep cannot read the
//! framed segments, so beside each segment the same text goes to a `.zst`
//! file: the same zstd level, one zstd frame per journal frame. Both are
//! read once before they are timed (the file cache warm); the ratio is
//! rg's median over the journal's, in the same run. Beside them, the
//! journal's frames read and decompressed alone, nothing parsed or
//! scanned, on the same threads: what the search cannot beat. Each also
//! gives the CPU seconds it took (`/proc/self/stat`): text per CPU second
//! holds where the wall clock of a loaded machine does not.
//!
//! The search runs twice: with the frames' indexes (a frame whose trigram
//! filter rules the literal out is not decompressed; its GB/s is the text
//! *covered* per second, scanned or skipped) and without them (every
//! frame decompressed and scanned). A common literal gives the skip rate
//! where little can be skipped; `journal_index` measures the indexes.
//! The rare literal again with the tails of [`TAILED`] panes, as a search
//! across time of a live server asks for them (no time needed: tmux holds
//! no hit): frames holding their lines held compressed until a tail needs
//! them, and decompressed as before holding.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use panescan_engine::{Matcher, PatternOptions, SearchBudgets, SearchOptions};
use serde::Serialize;

use super::journal_load::cpu_seconds;
use super::report::ms;
use crate::journal::frame::{Line, Origin, Records};
use crate::journal::search::{self, Query};
use crate::journal::segment::{self, Appender, Item};
use crate::journal::{dir, frame};
use crate::testbed::baseline::median;

/// The literal searched for: planted once every [`NEEDLE_EVERY`] frames.
const NEEDLE: &str = "journal-bench-needle-q7Zx";
const NEEDLE_EVERY: usize = 97;
/// A literal in every frame (twice in each repetition of the corpus).
const COMMON: &str = "Traceback";
/// Frames whose text is kept for the index measurements.
const SAMPLES: usize = 8;
/// Text bytes per frame.
const FRAME_TEXT: usize = 1 << 20;
/// Panes the lines are spread over.
const PANES: usize = 200;
/// The zstd level journal frames use (frame.rs).
const LEVEL: i32 = 1;
/// Live panes whose tails the tailed search asks for.
const TAILED: usize = 4;

/// The search-speed rows of the journal section.
#[derive(Debug, Clone, Serialize)]
pub struct ScanBench {
    /// Text bytes journaled (lines and their newlines).
    pub text_bytes: u64,
    /// The segments' bytes on disk.
    pub disk_bytes: u64,
    /// `disk_bytes / text_bytes`.
    pub disk_ratio: f64,
    /// Segments and frames written.
    pub segments: usize,
    pub frames: usize,
    /// The journal search of the rare literal, frames skipped by their
    /// indexes: median of the runs.
    pub journal_ms: f64,
    /// Text covered per second by it (scanned or skipped by an index;
    /// GB = 1e9 bytes).
    pub journal_gb_per_s: f64,
    /// Bytes the search reports scanned and skipped, and its hits.
    pub bytes_scanned: u64,
    pub bytes_skipped: u64,
    pub hits: usize,
    /// Frames it skipped and decompressed.
    pub frames_skipped: u64,
    pub frames_read: u64,
    /// The same search with every frame decompressed and scanned (no
    /// index): median, text scanned per second, CPU seconds, hits.
    pub unindexed_ms: f64,
    pub unindexed_gb_per_s: f64,
    pub unindexed_cpu_s: f64,
    pub unindexed_hits: usize,
    /// A common literal ([`COMMON`]) with the indexes: median, frames
    /// skipped and decompressed, hits.
    pub common: &'static str,
    pub common_ms: f64,
    pub common_frames_skipped: u64,
    pub common_frames_read: u64,
    pub common_hits: usize,
    /// The rare literal with the tails of [`TAILED`] panes: median, frames
    /// decompressed, hits; then with every frame holding their lines
    /// decompressed (as before frames were held for tails).
    pub tailed: usize,
    pub tails_ms: f64,
    pub tails_frames_read: u64,
    pub tails_hits: usize,
    pub tails_unheld_ms: f64,
    pub tails_unheld_frames_read: u64,
    /// The indexes: their bytes on disk, the filter's share of them.
    pub index: super::journal_index::IndexBench,
    /// The same frames read, checked and decompressed alone (median), and
    /// the text per second that makes; on this many rayon threads.
    pub inflate_ms: f64,
    pub inflate_gb_per_s: f64,
    /// CPU seconds (every thread) of the search and of the decompression
    /// alone: medians.
    pub journal_cpu_s: f64,
    pub inflate_cpu_s: f64,
    pub threads: usize,
    /// `rg -z -j2` over the same text as `.zst` files: median, or why not.
    pub rg_ms: Option<f64>,
    pub rg_hits: Option<usize>,
    pub rg_skipped: Option<String>,
    /// `rg_ms / journal_ms`: above 1, the journal is faster.
    pub x_rg: Option<f64>,
    /// `rg_ms / unindexed_ms`.
    pub x_rg_unindexed: Option<f64>,
    /// The demo corpus alone, journaled as one frame: text and disk bytes.
    pub corpus_text_bytes: u64,
    pub corpus_disk_bytes: u64,
    pub corpus_ratio: f64,
    pub runs: usize,
}

/// A temporary directory removed on drop, also when the bench fails.
struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// Builds a journal of about `megabytes` of text and times the searches.
pub fn run(megabytes: u64, runs: usize) -> Result<ScanBench, String> {
    let scratch = Scratch(
        std::env::temp_dir().join(format!("panescan-bench-journal-{}", std::process::id())),
    );
    let _ = fs::remove_dir_all(&scratch.0);
    let journal = scratch.0.join("journal");
    let plain = scratch.0.join("zst");
    dir::ensure(&journal)?;
    fs::create_dir_all(&plain).map_err(|e| e.to_string())?;
    let corpus = corpus_lines();
    let built = build(&journal, &plain, &corpus, megabytes << 20).map_err(|e| e.to_string())?;
    let (corpus_text, corpus_disk, corpus_index) = corpus_size(&corpus)?;

    let rare = timed(&journal, NEEDLE, Shape::Indexed, runs)?;
    let unindexed = timed(&journal, NEEDLE, Shape::Unindexed, runs)?;
    let common = timed(&journal, COMMON, Shape::Indexed, 1)?;
    let tails = timed(&journal, NEEDLE, Shape::Tails { hold: true }, runs)?;
    let unheld = timed(&journal, NEEDLE, Shape::Tails { hold: false }, runs)?;
    let (outcome, journal_t, journal_cpu) = (&rare.outcome, rare.wall, rare.cpu);
    let (inflate_t, inflate_cpu) = inflate_runs(&journal, runs)?;
    let rg = rg_runs(&plain, runs);
    let journal_ms = ms(journal_t);
    let unindexed_ms = ms(unindexed.wall);
    let (rg_ms, rg_hits, rg_skipped) = match rg {
        Ok((t, hits)) => (Some(ms(t)), Some(hits), None),
        Err(why) => (None, None, Some(why)),
    };
    let index = super::journal_index::run(&journal, &built.samples, NEEDLE, corpus_index)?;
    let covered = outcome.bytes_scanned + outcome.bytes_skipped;
    Ok(ScanBench {
        text_bytes: built.text,
        disk_bytes: built.disk,
        disk_ratio: ratio(built.disk, built.text),
        segments: built.segments,
        frames: built.frames,
        journal_ms,
        journal_gb_per_s: covered as f64 / journal_t.as_secs_f64().max(1e-9) / 1e9,
        bytes_scanned: outcome.bytes_scanned,
        bytes_skipped: outcome.bytes_skipped,
        hits: outcome.hits.len(),
        frames_skipped: outcome.frames_skipped,
        frames_read: outcome.frames_read,
        unindexed_ms,
        unindexed_gb_per_s: unindexed.outcome.bytes_scanned as f64
            / unindexed.wall.as_secs_f64().max(1e-9)
            / 1e9,
        unindexed_cpu_s: unindexed.cpu.as_secs_f64(),
        unindexed_hits: unindexed.outcome.hits.len(),
        common: COMMON,
        common_ms: ms(common.wall),
        common_frames_skipped: common.outcome.frames_skipped,
        common_frames_read: common.outcome.frames_read,
        common_hits: common.outcome.hits.len(),
        tailed: TAILED,
        tails_ms: ms(tails.wall),
        tails_frames_read: tails.outcome.frames_read,
        tails_hits: tails.outcome.hits.len(),
        tails_unheld_ms: ms(unheld.wall),
        tails_unheld_frames_read: unheld.outcome.frames_read,
        index,
        inflate_ms: ms(inflate_t),
        journal_cpu_s: journal_cpu.as_secs_f64(),
        inflate_cpu_s: inflate_cpu.as_secs_f64(),
        inflate_gb_per_s: built.text as f64 / inflate_t.as_secs_f64().max(1e-9) / 1e9,
        threads: rayon::current_num_threads(),
        x_rg: rg_ms.map(|r| r / journal_ms.max(1e-6)),
        x_rg_unindexed: rg_ms.map(|r| r / unindexed_ms.max(1e-6)),
        rg_ms,
        rg_hits,
        rg_skipped,
        corpus_text_bytes: corpus_text,
        corpus_disk_bytes: corpus_disk,
        corpus_ratio: ratio(corpus_disk, corpus_text),
        runs,
    })
}

/// A search timed: medians of `runs` after one that warms the file cache,
/// and the last outcome.
struct Timed {
    wall: Duration,
    cpu: Duration,
    outcome: search::Outcome,
}

/// How a timed search reads the journal.
#[derive(Clone, Copy)]
enum Shape {
    /// Frames skipped by their indexes.
    Indexed,
    /// Every frame decompressed.
    Unindexed,
    /// Indexed, with the tails of [`TAILED`] panes (`hold`: frames holding
    /// their lines left compressed until a tail needs them).
    Tails { hold: bool },
}

/// `literal` searched for over `journal` as `shape` says, unlimited
/// budgets.
fn timed(journal: &Path, literal: &str, shape: Shape, runs: usize) -> Result<Timed, String> {
    let matcher = Matcher::new(&[literal], PatternOptions::default()).map_err(|e| e.to_string())?;
    let options = SearchOptions {
        limits: SearchBudgets::unlimited(),
        ..SearchOptions::default()
    };
    let mut query = Query::new(options, i64::MIN, i64::MAX);
    query.index = !matches!(shape, Shape::Unindexed);
    if let Shape::Tails { hold } = shape {
        query.hold_tails = hold;
        for pane in 0..TAILED {
            let o = origin(pane);
            query.tails.insert((o.server, o.pane), 0);
        }
    }
    let mut times = Vec::new();
    let mut cpu = Vec::new();
    let mut last = None;
    // The first run warms the file cache and is not counted.
    for _ in 0..=runs.max(1) {
        let (started, cpu_started) = (Instant::now(), cpu_seconds(std::process::id()));
        let outcome = search::search(journal, &matcher, &query).map_err(|e| e.to_string())?;
        times.push(started.elapsed());
        cpu.push(Duration::from_secs_f64(
            cpu_seconds(std::process::id()) - cpu_started,
        ));
        last = Some(outcome);
    }
    times.remove(0);
    cpu.remove(0);
    Ok(Timed {
        wall: median(&mut times),
        cpu: median(&mut cpu),
        outcome: last.ok_or("no search ran")?,
    })
}

/// The journal's frames read, checked and decompressed, nothing parsed
/// or scanned: medians of `runs`, wall clock and CPU.
fn inflate_runs(journal: &Path, runs: usize) -> Result<(Duration, Duration), String> {
    let mut times = Vec::new();
    let mut cpu = Vec::new();
    let payload =
        |bytes: &[u8], header: &frame::Header| frame::payload(bytes, header).map(|p| p.len());
    for _ in 0..runs.max(1) {
        let (started, cpu_started) = (Instant::now(), cpu_seconds(std::process::id()));
        let mut raw = 0usize;
        segment::read_with(journal, i64::MIN, i64::MAX, &payload, &mut |item| {
            if let Item::Frame(n) = item {
                raw += n;
            }
            true
        })
        .map_err(|e| e.to_string())?;
        times.push(started.elapsed());
        cpu.push(Duration::from_secs_f64(
            cpu_seconds(std::process::id()) - cpu_started,
        ));
        if raw == 0 {
            return Err("the journal's frames decompressed to nothing".into());
        }
    }
    Ok((median(&mut times), median(&mut cpu)))
}

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 / b as f64
    }
}

/// The demo corpus as tmux renders it: escapes stripped, one entry a line.
fn corpus_lines() -> Vec<Vec<u8>> {
    let mut lines = Vec::new();
    for text in crate::testbed::corpus::sources() {
        let plain = panescan_engine::strip_escapes(text.as_bytes()).into_owned();
        for line in plain.split(|&b| b == b'\n') {
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            lines.push(
                line.iter()
                    .map(|&b| if b == b'\r' { b' ' } else { b })
                    .collect(),
            );
        }
    }
    lines
}

/// The corpus journaled once, as one frame: its text, frame and index
/// bytes.
fn corpus_size(corpus: &[Vec<u8>]) -> Result<(u64, u64, u64), String> {
    let mut records = Records::default();
    let o = records.origin(&origin(0));
    let mut text = 0;
    for (i, l) in corpus.iter().enumerate() {
        text += l.len() as u64 + 1;
        records.lines.push(Line {
            origin: o,
            time_ms: 1_700_000_000_000 + i as i64,
            text: l.clone(),
        });
    }
    let bytes = frame::encode(&records).map_err(|e| e.to_string())?;
    let index = frame::check(&bytes)
        .ok()
        .and_then(|(header, _)| frame::index(&bytes, &header))
        .map_or(0, |i| i.encode().len() as u64);
    Ok((text, bytes.len() as u64, index))
}

fn origin(pane: usize) -> Origin {
    Origin {
        server: "4242 1700000000@/tmp/tmux-0/bench".into(),
        pane: format!("%{pane}"),
        session: format!("s{}", pane / 8),
        window: format!("{}:build", pane % 8),
        title: "0".into(),
    }
}

/// What [`build`] wrote.
struct Built {
    text: u64,
    disk: u64,
    segments: usize,
    frames: usize,
    /// The text blocks of the first [`SAMPLES`] frames.
    samples: Vec<Vec<u8>>,
}

/// Writes frames until `target` text bytes: each through the journal's
/// appender, and its text as one zstd frame to the `.zst` file beside the
/// segment it went to.
fn build(journal: &Path, plain: &Path, corpus: &[Vec<u8>], target: u64) -> std::io::Result<Built> {
    let (mut appender, _) = Appender::open(journal)?;
    let mut vary = Vary::default();
    let mut built = Built {
        text: 0,
        disk: 0,
        segments: 0,
        frames: 0,
        samples: Vec::new(),
    };
    let mut zst: Option<(PathBuf, fs::File)> = None;
    let mut at = 0usize;
    let mut now = 1_700_000_000_000i64;
    while built.text < target {
        let mut records = Records::default();
        let mut text = Vec::with_capacity(FRAME_TEXT + 4096);
        let mut pane = built.frames % PANES;
        let mut o = records.origin(&origin(pane));
        let needle_at = (built.frames % NEEDLE_EVERY == 0).then_some(FRAME_TEXT / 2);
        while text.len() < FRAME_TEXT {
            // A pane prints a run of lines, then the next pane.
            if at % 40 == 0 {
                pane = (pane + 7) % PANES;
                o = records.origin(&origin(pane));
            }
            let mut line = vary.line(&corpus[at % corpus.len()]);
            at += 1;
            if needle_at.is_some_and(|n| text.len() < n && text.len() + line.len() >= n) {
                line.extend_from_slice(format!(" {NEEDLE}").as_bytes());
            }
            text.extend_from_slice(&line);
            text.push(b'\n');
            records.lines.push(Line {
                origin: o,
                time_ms: now,
                text: line,
            });
        }
        now += 1_000;
        appender.append(&records, now)?;
        let segment = appender.current().map(Path::to_owned).unwrap_or_default();
        if zst.as_ref().is_none_or(|(p, _)| *p != segment) {
            built.segments += 1;
            let name = plain.join(format!("{}.zst", built.segments));
            zst = Some((segment, fs::File::create(name)?));
        }
        if let Some((_, f)) = zst.as_mut() {
            f.write_all(&zstd::bulk::compress(&text, LEVEL)?)?;
        }
        built.text += text.len() as u64;
        built.frames += 1;
        if built.samples.len() < SAMPLES {
            built.samples.push(text);
        }
    }
    built.disk = crate::journal::segment::list(journal)?
        .iter()
        .map(|s| s.bytes)
        .sum();
    Ok(built)
}

/// Varies the corpus's digits from one repetition to the next (xorshift),
/// so the text repeats as logs do, never byte for byte.
struct Vary(u64);

impl Default for Vary {
    fn default() -> Vary {
        Vary(0x9e37_79b9_7f4a_7c15)
    }
}

impl Vary {
    fn line(&mut self, line: &[u8]) -> Vec<u8> {
        line.iter()
            .map(|&b| {
                if b.is_ascii_digit() {
                    self.0 ^= self.0 << 13;
                    self.0 ^= self.0 >> 7;
                    self.0 ^= self.0 << 17;
                    b'0' + (self.0 % 10) as u8
                } else {
                    b
                }
            })
            .collect()
    }
}

/// `rg -z -j2` over the `.zst` files: median of `runs` after one to warm
/// the cache, and the lines it found; why not, when rg is missing.
fn rg_runs(plain: &Path, runs: usize) -> Result<(Duration, usize), String> {
    let probe = Command::new("rg")
        .arg("--version")
        .stdout(Stdio::null())
        .status();
    if !probe.is_ok_and(|s| s.success()) {
        return Err("skipped: rg not installed".into());
    }
    let zstd = Command::new("zstd")
        .arg("--version")
        .stdout(Stdio::null())
        .status();
    if !zstd.is_ok_and(|s| s.success()) {
        return Err("skipped: zstd not installed (rg -z needs it)".into());
    }
    let mut times = Vec::new();
    let mut hits = 0;
    for i in 0..=runs {
        let started = Instant::now();
        let out = Command::new("rg")
            .args([
                "--no-config",
                "-z",
                "-j2",
                "-F",
                "-c",
                "--no-ignore",
                "--",
                NEEDLE,
            ])
            .arg(plain)
            .stderr(Stdio::piped())
            .output()
            .map_err(|e| format!("rg: {e}"))?;
        if i > 0 {
            times.push(started.elapsed());
        }
        if !out.status.success() {
            return Err(format!(
                "rg failed: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        hits = String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| l.rsplit(':').next()?.parse::<usize>().ok())
            .sum();
    }
    Ok((median(&mut times), hits))
}
