//! One pane's journal as text, for the `tmux://pane/N/journal` resource:
//! its journaled lines (this server's socket, the pane's id; a pane closed
//! or trimmed long ago too), each `TIME<tab>line`, the newest first kept.
//!
//! Must hold: the answer is bounded as a capture is (its lines and bytes
//! at most the capture ceilings; what was left out is said), and the
//! reading ends by the call's deadline.

use std::collections::VecDeque;
use std::time::Instant;

use crate::journal::segment::{self, Read};
use crate::journal::when;
use crate::tmux::PaneId;
use crate::tools::context::{ServerArgs, ToolContext, ToolError};

/// A pane's journal between two times.
#[derive(Debug, Default, serde::Serialize)]
pub struct PaneJournal {
    /// `TIME\tline` per line, oldest first.
    #[serde(skip)]
    pub text: String,
    /// Lines in `text`.
    pub lines: usize,
    /// Older lines in the span were left out (the lines or bytes ceiling).
    pub truncated: bool,
    /// The deadline ended the reading: newer lines may be missing.
    pub time_clamped: bool,
    /// The pane's gaps in the span: `FROM .. TO: reason`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub gaps: Vec<String>,
    /// Segments that could not be read.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<String>,
}

/// The journal of `pane` on the served server, between `since_ms` and
/// `until_ms`, its newest lines up to the capture ceilings.
pub fn pane_journal(
    ctx: &ToolContext,
    pane: PaneId,
    since_ms: Option<i64>,
    until_ms: Option<i64>,
) -> Result<PaneJournal, ToolError> {
    let root = super::across::journal_dir(ctx)?;
    let tmux = ctx.tmux(&ServerArgs::default())?;
    let dir =
        crate::journal::servers::find(&root, tmux.socket_path()).map_err(ToolError::invalid)?;
    let socket = format!("@{}", tmux.socket_path().display());
    let (since, until) = (since_ms.unwrap_or(i64::MIN), until_ms.unwrap_or(i64::MAX));
    let ceilings = ctx.ceilings();
    let max_lines = ceilings.capture_default_lines.max(1);
    let max_bytes = ceilings.capture_bytes;
    let deadline = Instant::now() + ceilings.tmux_timeout;
    let id = pane.to_string();
    let mut kept: VecDeque<String> = VecDeque::new();
    let mut bytes = 0usize;
    let mut out = PaneJournal::default();
    let read = segment::read(&dir, since, until, &mut |read| {
        if Instant::now() >= deadline {
            out.time_clamped = true;
            return false;
        }
        match read {
            Read::Frame(d) => {
                let mine = |o: usize| {
                    d.origins
                        .get(o)
                        .is_some_and(|o| o.pane == id && o.server.ends_with(&socket))
                };
                for g in d.gaps.iter().filter(|g| mine(g.origin)) {
                    if g.to_ms >= since && g.from_ms <= until {
                        out.gaps.push(format!(
                            "{} .. {}: {}",
                            when::format(g.from_ms),
                            when::format(g.to_ms),
                            g.reason
                        ));
                    }
                }
                for (i, &(o, t)) in d.lines.iter().enumerate() {
                    if !mine(o) || t < since || t > until {
                        continue;
                    }
                    let line = String::from_utf8_lossy(d.line(i));
                    let line = if ctx.config.redact {
                        panescan_engine::redact(&line).0.into_owned()
                    } else {
                        line.into_owned()
                    };
                    let line = format!("{}\t{line}\n", when::format(t));
                    bytes += line.len();
                    kept.push_back(line);
                    while kept.len() > max_lines || (bytes > max_bytes && kept.len() > 1) {
                        if let Some(old) = kept.pop_front() {
                            bytes -= old.len();
                            out.truncated = true;
                        }
                    }
                }
            }
            Read::Skipped { segment, why } => {
                out.skipped.push(format!("{}: {why}", segment.display()));
            }
        }
        true
    });
    read.map_err(|e| {
        ToolError::internal(format!("cannot read the journal in {}: {e}", dir.display()))
    })?;
    out.gaps.truncate(20);
    out.lines = kept.len();
    out.text = kept.into_iter().collect();
    if out.text.len() > max_bytes {
        // One line longer than the ceiling: cut on a character boundary.
        let mut end = max_bytes;
        while !out.text.is_char_boundary(end) {
            end -= 1;
        }
        out.text.truncate(end);
        out.truncated = true;
    }
    Ok(out)
}
