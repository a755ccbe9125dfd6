//! A pattern over the journaled text: each frame's text block is one
//! capture for the engine, decoded on a thread of its own while the engine
//! scans the frames before it; a matching line is given back its pane and
//! time from the frame's tables.
//!
//! Must hold: the engine's budgets (bytes, lines, matches, deadline) apply
//! to journal bytes as to captures; a segment that cannot be read is named
//! in the outcome, never silently left out.

use std::path::Path;

use panescan_engine::{
    max_in_flight, search as engine_search, Capture, ClampFlags, Incoming, LineMatch, Matcher,
    SearchOptions,
};

use super::frame::{Gap, Origin};
use super::segment::{self, Read};

/// What to look for, and where in time.
#[derive(Clone, Debug)]
pub struct Query {
    /// Budgets, context and output shape, as for captures.
    pub options: SearchOptions,
    /// Lines first seen at or after (ms).
    pub since_ms: i64,
    /// Lines first seen at or before (ms).
    pub until_ms: i64,
    /// Only these panes (`%N`), when given.
    pub panes: Option<Vec<String>>,
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
}

/// One frame's tables, kept while its text is scanned.
struct Meta {
    origins: Vec<Origin>,
    lines: Vec<(usize, i64)>,
}

/// Searches the journal in `dir` with `matcher`.
pub fn search(dir: &Path, matcher: &Matcher, query: &Query) -> std::io::Result<Outcome> {
    let (tx, rx) = crossbeam_channel::bounded(max_in_flight());
    let mut out = Outcome::default();
    let (metas, engine) = std::thread::scope(|scope| {
        let producer = scope.spawn(|| {
            let mut metas: Vec<Meta> = Vec::new();
            let mut gaps = Vec::new();
            let mut skipped = Vec::new();
            let read = segment::read(
                dir,
                query.since_ms,
                query.until_ms,
                &mut |read| match read {
                    Read::Frame(d) => {
                        for g in &d.gaps {
                            let origin = d.origins.get(g.origin).cloned().unwrap_or_else(unknown);
                            if g.to_ms >= query.since_ms
                                && g.from_ms <= query.until_ms
                                && wanted(query, &origin)
                            {
                                gaps.push((origin, g.clone()));
                            }
                        }
                        let key = metas.len();
                        metas.push(Meta {
                            origins: d.origins,
                            lines: d.lines,
                        });
                        tx.send(Incoming::Capture(Capture::shared(key, 0, d.text)))
                            .is_ok()
                    }
                    Read::Skipped { segment, why } => {
                        skipped.push(format!("{}: {why}", segment.display()));
                        true
                    }
                },
            );
            drop(tx);
            (read.map(|()| metas), gaps, skipped)
        });
        let engine = engine_search(matcher, &query.options, rx, &|_| {});
        let produced = producer.join().unwrap_or_else(|_| {
            (
                Err(std::io::Error::other("journal reader failed")),
                vec![],
                vec![],
            )
        });
        (produced, engine)
    });
    let (metas, gaps, skipped) = metas;
    let metas = metas?;
    out.gaps = gaps;
    out.skipped = skipped;
    out.bytes_scanned = engine.bytes_scanned;
    out.lines_scanned = engine.lines_scanned;
    out.flags = engine.flags;
    for pane in engine.panes {
        out.truncated |= pane.lines_truncated;
        let Some(meta) = metas.get(pane.key) else {
            continue;
        };
        for line in pane.lines {
            let Some(&(o, time_ms)) = usize::try_from(line.line)
                .ok()
                .and_then(|i| meta.lines.get(i))
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
            });
        }
    }
    Ok(out)
}

fn wanted(query: &Query, origin: &Origin) -> bool {
    query
        .panes
        .as_ref()
        .is_none_or(|p| origin.pane == "*" || p.contains(&origin.pane))
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
        let mut query = Query {
            options: SearchOptions::default(),
            since_ms: i64::MIN,
            until_ms: i64::MAX,
            panes: None,
        };
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
