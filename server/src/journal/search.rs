//! A pattern over the journaled text: each frame's text block is one
//! capture for the engine, decoded on a thread of its own while the engine
//! scans the frames before it; a matching line is given back its pane and
//! time from the frame's tables.
//!
//! A search across time (search_panes `journal: true`, `since_time`) also
//! asks for the tails of the panes tmux still shows ([`Query::tails`]):
//! every line of theirs from the span's start on (past its end too), so
//! the caller can find where tmux's history meets the journal.
//!
//! Must hold: the engine's budgets (bytes, lines, matches, deadline) apply
//! to journal bytes as to captures; a segment that cannot be read is named
//! in the outcome, never silently left out; a hit's `ordinal` counts its
//! pane's lines from the same first frame as its tail's `read`.

use std::collections::{HashMap, VecDeque};
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use panescan_engine::{
    max_in_flight, search as engine_search, Capture, ClampFlags, Incoming, LineMatch, Matcher,
    SearchOptions,
};

use super::frame::{Decoded, Gap, Origin};
use super::segment::{self, Read};

/// Which panes' lines a search keeps (`None`: every pane's).
pub type Keep = Arc<dyn Fn(&Origin) -> bool + Send + Sync>;

/// A pane as the journal names it: its server (`pid start_time@socket`)
/// and its id (`%N`).
pub type PaneKey = (String, String);

/// The texts of a pane's last lines kept in its [`Tail`].
pub const TAIL_TEXTS: usize = 64;

/// What to look for, and where in time.
#[derive(Clone)]
pub struct Query {
    /// Budgets, context and output shape, as for captures.
    pub options: SearchOptions,
    /// Lines first seen at or after (ms).
    pub since_ms: i64,
    /// Lines first seen at or before (ms).
    pub until_ms: i64,
    /// Only these panes (`%N`), when given.
    pub panes: Option<Vec<String>>,
    /// Only the panes this says yes to, when given.
    pub keep: Option<Keep>,
    /// Panes whose tails to keep, with how many lines' times each: their
    /// lines are read on past `until_ms`, to the journal's end.
    pub tails: HashMap<PaneKey, usize>,
    /// Reading stops here (tails then stay short: `Outcome::flags`).
    pub deadline: Option<Instant>,
    /// Scan for the pattern (false: only read the tails).
    pub scan: bool,
}

impl std::fmt::Debug for Query {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Query")
            .field("since_ms", &self.since_ms)
            .field("until_ms", &self.until_ms)
            .field("panes", &self.panes)
            .field("tails", &self.tails.len())
            .finish_non_exhaustive()
    }
}

impl Query {
    /// Every pane's lines between `since_ms` and `until_ms`, with these
    /// options.
    pub fn new(options: SearchOptions, since_ms: i64, until_ms: i64) -> Query {
        Query {
            options,
            since_ms,
            until_ms,
            panes: None,
            keep: None,
            tails: HashMap::new(),
            deadline: None,
            scan: true,
        }
    }
}

/// A journaled line that matched.
#[derive(Clone, Debug)]
pub struct Hit {
    /// When the line was first seen (ms).
    pub time_ms: i64,
    /// Its pane.
    pub origin: Origin,
    /// The line as the engine returns it (`line` is its index in its frame).
    pub line: LineMatch,
    /// Its place among its pane's lines read by this search (0: the first).
    pub ordinal: u64,
}

/// A pane's lines from the span's start to the journal's end.
#[derive(Clone, Debug, Default)]
pub struct Tail {
    /// Its lines read (the next line's ordinal).
    pub read: u64,
    /// The times of its last lines, oldest first (at most what was asked).
    pub times: VecDeque<i64>,
    /// The texts of its last [`TAIL_TEXTS`] lines, oldest first.
    pub texts: VecDeque<Vec<u8>>,
}

/// What a journal search found.
#[derive(Clone, Debug, Default)]
pub struct Outcome {
    /// Oldest first.
    pub hits: Vec<Hit>,
    /// Gaps in the span searched, with their panes.
    pub gaps: Vec<(Origin, Gap)>,
    /// Segments (or their ends) that could not be read, and why.
    pub skipped: Vec<String>,
    /// Journal bytes scanned.
    pub bytes_scanned: u64,
    /// Journal lines scanned.
    pub lines_scanned: u64,
    /// Which budgets stopped the search.
    pub flags: ClampFlags,
    /// More lines of a frame matched than the per-capture cap kept.
    pub truncated: bool,
    /// The tails asked for (a pane with no line read has none).
    pub tails: HashMap<PaneKey, Tail>,
}

/// One frame's tables, kept while its text is scanned.
struct Meta {
    origins: Vec<Origin>,
    lines: Vec<(usize, i64)>,
    /// Each line's ordinal among its pane's lines.
    ordinals: Vec<u64>,
}

/// What the reading thread gathers besides the frames it hands the engine.
#[derive(Default)]
struct Gathered {
    metas: Vec<Meta>,
    gaps: Vec<(Origin, Gap)>,
    skipped: Vec<String>,
    /// Lines read per pane (the next one's ordinal).
    counts: HashMap<PaneKey, u64>,
    tails: HashMap<PaneKey, Tail>,
    /// The deadline passed before the journal's end.
    late: bool,
}

impl Gathered {
    /// Takes in one frame: its gaps, its panes' ordinals and tails; the
    /// ordinals of its lines, and whether any of them is in the span.
    fn frame(&mut self, query: &Query, d: &Decoded) -> (Vec<u64>, bool) {
        for g in &d.gaps {
            let origin = d.origins.get(g.origin).cloned().unwrap_or_else(unknown);
            if g.to_ms >= query.since_ms && g.from_ms <= query.until_ms && wanted(query, &origin) {
                self.gaps.push((origin, g.clone()));
            }
        }
        let keys: Vec<PaneKey> = d
            .origins
            .iter()
            .map(|o| (o.server.clone(), o.pane.clone()))
            .collect();
        let mut ordinals = Vec::with_capacity(d.lines.len());
        for (i, &(o, time_ms)) in d.lines.iter().enumerate() {
            let Some(key) = keys.get(o) else {
                ordinals.push(0);
                continue;
            };
            let count = self.counts.entry(key.clone()).or_default();
            ordinals.push(*count);
            *count += 1;
            let Some(&keep) = query.tails.get(key) else {
                continue;
            };
            let tail = self.tails.entry(key.clone()).or_default();
            tail.read += 1;
            tail.times.push_back(time_ms);
            if tail.times.len() > keep {
                tail.times.pop_front();
            }
            tail.texts.push_back(d.line(i).to_vec());
            if tail.texts.len() > TAIL_TEXTS {
                tail.texts.pop_front();
            }
        }
        let in_span = d
            .lines
            .iter()
            .any(|&(_, t)| t >= query.since_ms && t <= query.until_ms);
        (ordinals, in_span)
    }
}

/// Searches the journal in `dir` with `matcher`.
pub fn search(dir: &Path, matcher: &Matcher, query: &Query) -> std::io::Result<Outcome> {
    let (tx, rx) = crossbeam_channel::bounded(max_in_flight());
    let read_until = if query.tails.is_empty() {
        query.until_ms
    } else {
        i64::MAX
    };
    let (gathered, engine) = std::thread::scope(|scope| {
        let producer = scope.spawn(move || {
            let mut g = Gathered::default();
            let mut engine_listens = true;
            let read = segment::read(dir, query.since_ms, read_until, &mut |read| {
                let cancelled = query
                    .options
                    .cancel
                    .as_ref()
                    .is_some_and(|c| c.load(std::sync::atomic::Ordering::Relaxed));
                if cancelled || query.deadline.is_some_and(|d| Instant::now() >= d) {
                    g.late = true;
                    return false;
                }
                match read {
                    Read::Frame(d) => {
                        let (ordinals, in_span) = g.frame(query, &d);
                        if in_span && engine_listens && query.scan {
                            let key = g.metas.len();
                            g.metas.push(Meta {
                                origins: d.origins,
                                lines: d.lines,
                                ordinals,
                            });
                            let capture = Capture::shared(key, 0, d.text);
                            engine_listens = tx.send(Incoming::Capture(capture)).is_ok();
                        }
                        // Tails are read to the end even when a budget
                        // stopped the scan (the deadline still bounds it).
                        engine_listens || !query.tails.is_empty()
                    }
                    Read::Skipped { segment, why } => {
                        g.skipped.push(format!("{}: {why}", segment.display()));
                        true
                    }
                }
            });
            drop(tx);
            read.map(|()| g)
        });
        let engine = engine_search(matcher, &query.options, rx, &|_| {});
        let gathered = producer
            .join()
            .unwrap_or_else(|_| Err(std::io::Error::other("journal reader failed")));
        (gathered, engine)
    });
    let g = gathered?;
    let mut out = Outcome {
        gaps: g.gaps,
        skipped: g.skipped,
        bytes_scanned: engine.bytes_scanned,
        lines_scanned: engine.lines_scanned,
        flags: engine.flags,
        tails: g.tails,
        ..Outcome::default()
    };
    out.flags.time_clamped |= g.late;
    for pane in engine.panes {
        out.truncated |= pane.lines_truncated;
        let Some(meta) = g.metas.get(pane.key) else {
            continue;
        };
        for line in pane.lines {
            let Some(i) = usize::try_from(line.line).ok() else {
                continue;
            };
            let (Some(&(o, time_ms)), Some(&ordinal)) = (meta.lines.get(i), meta.ordinals.get(i))
            else {
                continue;
            };
            let origin = meta.origins.get(o).cloned().unwrap_or_else(unknown);
            if time_ms < query.since_ms || time_ms > query.until_ms || !wanted(query, &origin) {
                continue;
            }
            out.hits.push(Hit {
                time_ms,
                origin,
                line,
                ordinal,
            });
        }
    }
    Ok(out)
}

fn wanted(query: &Query, origin: &Origin) -> bool {
    let listed = query
        .panes
        .as_ref()
        .is_none_or(|p| origin.pane == "*" || p.contains(&origin.pane));
    listed && query.keep.as_ref().is_none_or(|keep| keep(origin))
}

fn unknown() -> Origin {
    Origin {
        server: String::new(),
        pane: "?".into(),
        session: String::new(),
        window: String::new(),
        title: String::new(),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::super::frame::{Line, Records};
    use super::super::segment::Appender;
    use super::*;
    use panescan_engine::PatternOptions;

    #[test]
    fn hits_carry_their_pane_and_time_and_respect_the_span() {
        let d = std::env::temp_dir().join(format!("pj-search-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        super::super::dir::ensure(&d).unwrap();
        let (mut a, _) = Appender::open(&d).unwrap();
        for (pane, t, text) in [
            ("%1", 10, "error: one"),
            ("%2", 20, "fine"),
            ("%2", 30, "error: two"),
        ] {
            let mut r = Records::default();
            let o = r.origin(&Origin {
                server: "s".into(),
                pane: pane.into(),
                session: "m".into(),
                window: "0:w".into(),
                title: "0".into(),
            });
            r.lines.push(Line {
                origin: o,
                time_ms: t,
                text: text.into(),
            });
            a.append(&r, t).unwrap();
        }
        let matcher = Matcher::new(&["error"], PatternOptions::default()).unwrap();
        let mut query = Query::new(SearchOptions::default(), i64::MIN, i64::MAX);
        let all = search(&d, &matcher, &query).unwrap();
        let got: Vec<(i64, &str, &str)> = all
            .hits
            .iter()
            .map(|h| (h.time_ms, h.origin.pane.as_str(), h.line.text.as_str()))
            .collect();
        assert_eq!(got, [(10, "%1", "error: one"), (30, "%2", "error: two")]);
        query.since_ms = 15;
        assert_eq!(search(&d, &matcher, &query).unwrap().hits.len(), 1);
        query.since_ms = i64::MIN;
        query.panes = Some(vec!["%1".into()]);
        assert_eq!(search(&d, &matcher, &query).unwrap().hits[0].time_ms, 10);
        std::fs::remove_dir_all(&d).unwrap();
    }
}
