//! Since: what each pane printed after a cursor, and the next cursor.
//!
//! Every search records where each pane stood ([`super::cursor`]). With `since`,
//! a pane the cursor knows is captured only from its anchor lines above
//! its old boundary down to its terminal cursor (through the pane cache, an
//! unchanged pane costs no tmux work): the anchor must be where
//! [`crate::tmux::rows`] says it vouches for its place (at the very rows it
//! was hashed at, and nothing a trim could have brought there), and then
//! only the complete lines after the boundary are scanned. The line the terminal cursor is on is
//! still being written: it is scanned once it is complete, by the next
//! search. Whatever breaks that promise is said per pane (`since_panes`):
//!
//! - `new`: the pane was not in the cursor: searched in full;
//! - `respawned` (another process) or `resized` (another width: every row
//!   rewrapped): searched in full;
//! - `cleared` or `trimmed` (the anchor is not where it was: history was
//!   cleared, or trimmed at its limit): the pane's history is captured and
//!   the anchor looked for; found once, only what follows it is scanned
//!   (`missed_lines: 0`); not found, or found where it proves nothing, the
//!   pane is searched in full and how much was missed is unknown (no
//!   `missed_lines`).
//!
//! A cursor from before a server restart (same socket, another pid or
//! start time) searches everything in full, flagged `since_reset`; one
//! from another socket, or made with another `join_wrapped`, is an error.

use std::collections::HashMap;
use std::sync::Mutex;

use bytes::Bytes;
use panescan_engine::Capture;
use schemars::JsonSchema;
use serde::Serialize;

use super::cursor::{fnv32, Cursor, Entry, ServerId};
use crate::tmux::rows::{rows_of, trim_step, Anchor, HashKind, Place, Row};
use crate::tmux::{CaptureRange, CapturedText, Pane, PaneId};
use crate::tools::context::ToolError;

/// A pane that was not searched from its cursor boundary, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
// A wire type: its doc comments would be schema descriptions every client
// reads in tools/list; the tool's description and the field names say it.
#[allow(missing_docs)]
pub struct SincePane {
    pub pane_id: PaneId,
    // new, respawned, resized, cleared or trimmed.
    pub reason: &'static str,
    // Lines printed since the cursor and lost: 0 = none; absent = unknown.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub missed_lines: Option<u64>,
}

/// How one pane is searched.
#[derive(Clone, Copy, Debug)]
enum PanePlan {
    /// The whole range a search without `since` scans; with a reason when
    /// a cursor was given.
    Full(Option<&'static str>),
    /// From this entry's boundary.
    Since(Entry),
}

/// A pane as the inventory listed it.
#[derive(Clone, Copy, Debug)]
struct PaneAt {
    id: PaneId,
    pid: u32,
    width: u32,
    history: u64,
    limit: u64,
    cursor_y: u32,
}

impl PaneAt {
    /// Absolute row of the terminal cursor.
    fn cursor_row(&self) -> i64 {
        self.history as i64 + i64::from(self.cursor_y)
    }
}

#[derive(Debug, Default)]
struct State {
    entries: Vec<Option<Entry>>,
    notes: Vec<Option<SincePane>>,
    /// Panes whose anchor was not where it was stored.
    fallback: Vec<usize>,
}

/// The since side of one search.
#[derive(Debug)]
pub(super) struct Since {
    server: ServerId,
    joined: bool,
    /// How the cursor's anchors were hashed.
    anchors: HashKind,
    /// The cursor came from before a server restart.
    pub(super) reset: bool,
    full_range: CaptureRange,
    /// The lowest tmux line a full search of a pane scans.
    full_from: i64,
    max_history: u64,
    panes: Vec<PaneAt>,
    plans: Vec<PanePlan>,
    state: Mutex<State>,
}

/// The server's identity from `#{pid} #{start_time}` and its socket path.
pub(super) fn server_id(socket: &std::path::Path, pid_and_start: &str) -> ServerId {
    let mut words = pid_and_start.split_whitespace();
    ServerId {
        socket: fnv32(socket.as_os_str().as_encoded_bytes()),
        pid: words.next().and_then(|w| w.parse().ok()).unwrap_or(0),
        start: words.next().and_then(|w| w.parse().ok()).unwrap_or(0),
    }
}

/// What a search's scan of one pane needs from [`Since`].
pub(super) struct Setup<'a> {
    pub(super) server: ServerId,
    pub(super) joined: bool,
    pub(super) since: Option<&'a str>,
    pub(super) panes: &'a [&'a Pane],
    pub(super) full_range: CaptureRange,
    pub(super) scrollback: u64,
    pub(super) max_history: u64,
}

impl Since {
    /// Decodes the cursor (if any) and plans every pane.
    pub(super) fn new(setup: Setup) -> Result<Since, ToolError> {
        let previous = match setup.since.filter(|s| !s.is_empty()) {
            Some(text) => Some(Cursor::decode(text)?),
            None => None,
        };
        let mut reset = false;
        if let Some(c) = &previous {
            if c.server.socket != setup.server.socket {
                return Err(ToolError::invalid(
                    "since: this cursor comes from another tmux server: omit since for a full search of this one",
                ));
            }
            if c.joined != setup.joined {
                return Err(ToolError::invalid(format!(
                    "since: this cursor was made with join_wrapped {}: pass the same join_wrapped, or omit since",
                    c.joined
                )));
            }
            reset = c.server != setup.server;
        }
        let anchors = previous.as_ref().map_or(HashKind::Fnv64, |c| c.anchors);
        let known: Option<HashMap<u32, Entry>> = previous
            .filter(|_| !reset)
            .map(|c| c.entries.into_iter().map(|e| (e.pane, e)).collect());
        let panes: Vec<PaneAt> = setup.panes.iter().map(|p| pane_at(p)).collect();
        let plans = panes.iter().map(|p| plan_pane(p, known.as_ref())).collect();
        let n = panes.len();
        Ok(Since {
            server: setup.server,
            joined: setup.joined,
            anchors,
            reset,
            full_range: setup.full_range,
            full_from: -(setup.scrollback.min(i64::MAX as u64) as i64),
            max_history: setup.max_history,
            panes,
            plans,
            state: Mutex::new(State {
                entries: vec![None; n],
                notes: vec![None; n],
                fallback: Vec::new(),
            }),
        })
    }

    /// What to capture of pane `i`.
    pub(super) fn range(&self, i: usize) -> CaptureRange {
        match (self.plans.get(i), self.panes.get(i)) {
            (Some(PanePlan::Since(e)), Some(p)) => {
                let start = e.boundary as i64 - e.anchor_rows as i64 - p.history as i64;
                CaptureRange::Lines {
                    start: start.min(i64::from(p.cursor_y)),
                    end: i64::from(p.cursor_y),
                }
            }
            _ => self.full_range,
        }
    }

    /// Turns pane `i`'s capture into what the engine scans, and records
    /// where the pane stands now. A pane whose anchor moved scans nothing
    /// here and is left for [`Since::refind`].
    pub(super) fn take(&self, i: usize, cap: CapturedText) -> Capture {
        let (Some(plan), Some(pane)) = (self.plans.get(i).copied(), self.panes.get(i).copied())
        else {
            return whole(i, cap);
        };
        let rows = rows_of(&cap);
        let now = stand(&rows, &cap.bytes, pane.cursor_row());
        match plan {
            PanePlan::Full(reason) => {
                self.record(i, &pane, &now, reason.map(|r| (r, None)));
                whole(i, cap)
            }
            PanePlan::Since(e) => match self.place(&e, &pane, &rows, &cap.bytes) {
                Place::At(from) if pane.cursor_row() >= e.boundary as i64 => {
                    self.record(i, &pane, &now, None);
                    slice(i, &cap, rows.get(from..now.pending).unwrap_or_default())
                }
                _ => {
                    self.lock().fallback.push(i);
                    empty(i)
                }
            },
        }
    }

    /// The panes [`Since::take`] left for a second look, and the range to
    /// capture of each: its whole history.
    pub(super) fn fallback(&self) -> Vec<(usize, PaneId, CaptureRange)> {
        let list = self.lock().fallback.clone();
        list.into_iter()
            .filter_map(|i| {
                let p = self.panes.get(i)?;
                let start = -(p.history.min(self.max_history) as i64);
                let end = i64::from(p.cursor_y);
                Some((i, p.id, CaptureRange::Lines { start, end }))
            })
            .collect()
    }

    /// Pane `i`'s history, captured after its anchor moved: what follows
    /// the anchor if it is still there (newest copy), else the pane in
    /// full; said in `since_panes` either way.
    pub(super) fn refind(&self, key: usize, i: usize, cap: CapturedText) -> Capture {
        let (Some(PanePlan::Since(e)), Some(pane)) =
            (self.plans.get(i).copied(), self.panes.get(i).copied())
        else {
            return whole(key, cap);
        };
        let rows = rows_of(&cap);
        let now = stand(&rows, &cap.bytes, pane.cursor_row());
        let shrank = pane.history < e.history;
        let near_limit = pane.limit > 0
            && e.history.max(pane.history).saturating_mul(10) >= pane.limit.saturating_mul(9);
        let reason = if near_limit { "trimmed" } else { "cleared" };
        let found = match self.place(&e, &pane, &rows, &cap.bytes) {
            Place::At(from) | Place::Moved(from) if e.anchor_rows > 0 => Some(from),
            _ => None,
        }
        .filter(|&from| from <= now.pending);
        match found {
            Some(from) => {
                self.record(i, &pane, &now, Some((reason, Some(0))));
                slice(key, &cap, rows.get(from..now.pending).unwrap_or_default())
            }
            None => {
                let reason = if shrank || near_limit {
                    reason
                } else {
                    "cleared"
                };
                self.record(i, &pane, &now, Some((reason, None)));
                let first = rows
                    .iter()
                    .position(|r| r.number >= self.full_from)
                    .unwrap_or(rows.len());
                slice(key, &cap, &rows[first..])
            }
        }
    }

    /// Pane `i` could not be searched (its capture failed, or a budget
    /// stopped the search): the next cursor keeps its old entry, if any.
    pub(super) fn keep_old(&self, i: usize) {
        let old = match self.plans.get(i) {
            Some(PanePlan::Since(e)) => Some(*e),
            _ => None,
        };
        if let Some(slot) = self.lock().entries.get_mut(i) {
            *slot = old;
        }
    }

    /// The cursor to return, and the per-pane notes.
    pub(super) fn finish(&self) -> (String, Vec<SincePane>) {
        let state = self.lock();
        let cursor = Cursor {
            server: self.server,
            joined: self.joined,
            anchors: HashKind::Fnv64,
            entries: state.entries.iter().flatten().copied().collect(),
        };
        let notes = state.notes.iter().flatten().cloned().collect();
        (cursor.encode(), notes)
    }

    /// Where pane `pane`'s anchor of entry `e` is in a capture of it.
    fn place(&self, e: &Entry, pane: &PaneAt, rows: &[Row], bytes: &[u8]) -> Place {
        let anchor = Anchor {
            rows: e.anchor_rows,
            hash: e.anchor,
            kind: self.anchors,
        };
        let trim = trim_step(pane.limit, pane.history);
        anchor.place(rows, bytes, e.boundary as i64, trim)
    }

    /// The cursor for an answer cut to fit its response, after the scan:
    /// every pane keeps its old place, as when a budget cut the search
    /// (`pipeline::settle_cursor`), so the lines the answer had no room
    /// for are found by the next since search.
    pub(super) fn cursor_if_cut(&self) -> String {
        let entries = self
            .plans
            .iter()
            .filter_map(|plan| match plan {
                PanePlan::Since(e) => Some(*e),
                PanePlan::Full(_) => None,
            })
            .collect();
        // Old entries keep the hash they were made with.
        let cursor = Cursor {
            server: self.server,
            joined: self.joined,
            anchors: self.anchors,
            entries,
        };
        cursor.encode()
    }

    fn record(
        &self,
        i: usize,
        pane: &PaneAt,
        now: &Stand,
        note: Option<(&'static str, Option<u64>)>,
    ) {
        let entry = Entry {
            pane: pane.id.number(),
            pid: pane.pid,
            width: pane.width,
            history: pane.history,
            boundary: now.boundary.max(0) as u64,
            anchor_rows: now.anchor_rows,
            anchor: now.anchor,
        };
        let mut state = self.lock();
        if let Some(slot) = state.entries.get_mut(i) {
            *slot = Some(entry);
        }
        if let (Some(slot), Some((reason, missed_lines))) = (state.notes.get_mut(i), note) {
            *slot = Some(SincePane {
                pane_id: pane.id,
                reason,
                missed_lines,
            });
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // A poisoned lock only means another scan thread panicked; the
        // state it guards is still whole (every write is one assignment).
        crate::sync::lock(&self.state)
    }
}

fn pane_at(p: &Pane) -> PaneAt {
    PaneAt {
        id: p.pane_id,
        pid: p.pane_pid.unwrap_or(0),
        width: p.pane_width,
        history: p.history_size,
        limit: p.history_limit,
        cursor_y: p.cursor_y,
    }
}

fn plan_pane(p: &PaneAt, known: Option<&HashMap<u32, Entry>>) -> PanePlan {
    let Some(known) = known else {
        return PanePlan::Full(None);
    };
    match known.get(&p.id.number()) {
        None => PanePlan::Full(Some("new")),
        Some(e) if e.pid != p.pid => PanePlan::Full(Some("respawned")),
        Some(e) if e.width != p.width => PanePlan::Full(Some("resized")),
        Some(e) => PanePlan::Since(*e),
    }
}

/// Where a pane stands in a capture: the line holding the terminal cursor
/// (`pending`, an index; 0 when nothing was captured), the row it starts at (the next boundary) and the anchor above it.
struct Stand {
    pending: usize,
    boundary: i64,
    anchor_rows: u64,
    anchor: u64,
}

fn stand(rows: &[Row], bytes: &[u8], cursor_row: i64) -> Stand {
    // The last line starting at or above the cursor's row holds it: every
    // range a search captures ends at or below that row, so even the last
    // line captured does when it starts rows above (a joined line that
    // wrapped onto the cursor's row is still being written).
    let pending = rows.iter().rposition(|r| r.abs <= cursor_row).unwrap_or(0);
    let boundary = rows.get(pending).map_or(cursor_row, |r| r.abs);
    let anchor = Anchor::above(rows, bytes, pending, boundary);
    Stand {
        pending,
        boundary,
        anchor_rows: anchor.rows,
        anchor: anchor.hash,
    }
}

/// The engine's input for a whole capture.
fn whole(key: usize, cap: CapturedText) -> Capture {
    Capture {
        key,
        first_line: cap.first_line,
        bytes: cap.bytes,
        line_numbers: cap.line_numbers,
    }
}

fn empty(key: usize) -> Capture {
    Capture::shared(key, 0, Bytes::new())
}

/// The engine's input for some lines of a capture: a view of its text
/// (the rows of a capture follow each other, each ending in `\n`).
fn slice(key: usize, cap: &CapturedText, rows: &[Row]) -> Capture {
    let (bytes, first_line) = match (rows.first(), rows.last()) {
        (Some(first), Some(last)) => (cap.bytes.slice(first.start..=last.end), first.number),
        _ => (Bytes::new(), 0),
    };
    Capture {
        key,
        first_line,
        bytes,
        line_numbers: Some(rows.iter().map(|r| r.number).collect()),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    use crate::tmux::rows::tests::cap;

    /// A pane as the inventory lists it (what a since search reads of
    /// it is set by the caller).
    fn pane(id: u32) -> Pane {
        crate::tmux::inventory::pane_for_tests(id, 1)
    }

    /// One row of a simulated pane.
    #[derive(Clone, Debug, Default)]
    struct SimRow {
        text: String,
        cells: u32,
        /// The line goes on in the next row (tmux's wrapped flag).
        wrapped: bool,
        /// Never reused: which rows a search should have scanned, whatever
        /// trims and clears did to their places.
        serial: u64,
    }

    /// A pane as tmux keeps it: rows of `width` cells (a wide character
    /// takes two, and one that does not fit is pushed to the next row),
    /// `height` of them on screen and the rest history, trimmed by a tenth
    /// of `limit` once past it; the last line is being written, the
    /// cursor at its end.
    struct Sim {
        id: u32,
        pid: u32,
        width: u32,
        height: usize,
        limit: u64,
        rows: Vec<SimRow>,
        /// Index of the row the line being written starts at.
        pending: usize,
        serials: u64,
        /// Rows the cursor was moved up from the last (a full-screen
        /// program drawing).
        up: usize,
    }

    fn cells(c: char) -> u32 {
        if u32::from(c) >= 0x1100 {
            2
        } else {
            1
        }
    }

    impl Sim {
        fn new(id: u32, width: u32, height: usize, limit: u64) -> Sim {
            let mut sim = Sim {
                id,
                pid: 100 + id,
                width,
                height,
                limit,
                rows: Vec::new(),
                pending: 0,
                serials: 0,
                up: 0,
            };
            sim.push_row();
            sim
        }

        fn push_row(&mut self) {
            self.serials += 1;
            self.rows.push(SimRow {
                serial: self.serials,
                ..SimRow::default()
            });
            let tenth = (self.limit / 10).max(1) as usize;
            while self.limit > 0 && self.history() > self.limit {
                self.rows.drain(..tenth);
                self.pending = self.pending.saturating_sub(tenth);
            }
        }

        /// Writes `text` on the line being written.
        fn write(&mut self, text: &str) {
            for c in text.chars() {
                let full = self
                    .rows
                    .last()
                    .is_some_and(|r| r.cells + cells(c) > self.width);
                if full {
                    if let Some(r) = self.rows.last_mut() {
                        r.wrapped = true;
                    }
                    self.push_row();
                }
                if let Some(r) = self.rows.last_mut() {
                    r.text.push(c);
                    r.cells += cells(c);
                }
            }
        }

        /// Ends the line being written (CR LF).
        fn enter(&mut self) {
            self.push_row();
            self.pending = self.rows.len() - 1;
        }

        fn print(&mut self, line: &str) {
            self.write(line);
            self.enter();
        }

        fn history(&self) -> u64 {
            self.rows.len().saturating_sub(self.height) as u64
        }

        fn cursor_y(&self) -> u32 {
            (self.rows.len() - 1 - self.history() as usize - self.up) as u32
        }

        fn clear_history(&mut self) {
            let h = self.history() as usize;
            self.rows.drain(..h);
            self.pending = self.pending.saturating_sub(h);
        }

        fn pane(&self) -> Pane {
            let mut p = pane(self.id);
            p.pane_pid = Some(self.pid);
            p.pane_width = self.width;
            p.cursor_y = self.cursor_y();
            p.history_size = self.history();
            p.history_limit = self.limit;
            p
        }

        /// Where a since search of this pane starts now: the first row of
        /// the line being written (a joined search), or the cursor's row.
        fn boundary(&self, joined: bool) -> u64 {
            let at = if joined {
                self.pending
            } else {
                self.rows.len() - 1
            };
            self.rows[at].serial
        }

        /// `rows` as lines: each row, or (joined) rows a line wrapped over
        /// as one. The line number of each is its first row's.
        fn lines(rows: &[(i64, SimRow)], joined: bool) -> Vec<(i64, String)> {
            let mut lines: Vec<(i64, String)> = Vec::new();
            let mut joins = false;
            for (number, row) in rows {
                match lines.last_mut() {
                    Some(last) if joined && joins => last.1.push_str(&row.text),
                    _ => lines.push((*number, row.text.clone())),
                }
                joins = row.wrapped;
            }
            lines
        }

        /// capture-pane of `range`, with `-J` when `joined`.
        fn capture(&self, range: CaptureRange, joined: bool) -> CapturedText {
            let hist = self.history() as i64;
            let bottom = self.height as i64 - 1;
            let (start, end) = match range {
                CaptureRange::Visible => (0, bottom),
                CaptureRange::Scrollback(n) => (-(n.min(hist as u64) as i64), bottom),
                CaptureRange::AllHistory => (-hist, bottom),
                CaptureRange::Lines { start, end } => (start.max(-hist), end.min(bottom)),
            };
            let rows: Vec<(i64, SimRow)> = (start..=end)
                .map(|n| {
                    let row = usize::try_from(n + hist)
                        .ok()
                        .and_then(|abs| self.rows.get(abs).cloned())
                        .unwrap_or_default();
                    (n, row)
                })
                .collect();
            let lines = Sim::lines(&rows, joined);
            let mut bytes = Vec::new();
            for (_, l) in &lines {
                bytes.extend_from_slice(l.as_bytes());
                bytes.push(b'\n');
            }
            let one_each = lines.len() == rows.len();
            CapturedText {
                first_line: start,
                bytes: bytes.into(),
                line_numbers: (!one_each).then(|| lines.iter().map(|l| l.0).collect()),
                history_size: self.history(),
                pane_height: self.height as u32,
                pane_width: self.width,
                joined,
            }
        }

        /// The lines of the rows from serial `from` up to `to`, those
        /// still kept.
        fn between(&self, from: u64, to: u64, joined: bool) -> Vec<(i64, String)> {
            let hist = self.history() as i64;
            let rows: Vec<(i64, SimRow)> = (self.rows.iter().enumerate())
                .filter(|(_, r)| (from..to).contains(&r.serial))
                .map(|(abs, r)| (abs as i64 - hist, r.clone()))
                .collect();
            Sim::lines(&rows, joined)
        }
    }

    const SERVER: ServerId = ServerId {
        socket: 7,
        pid: 70,
        start: 700,
    };

    /// What one search of some panes scanned: per pane, its lines.
    struct Found {
        /// What was asked of each pane first.
        ranges: Vec<CaptureRange>,
        lines: Vec<Vec<(i64, String)>>,
        cursor: String,
        notes: Vec<SincePane>,
    }

    fn lines_of(c: &Capture) -> Vec<(i64, String)> {
        let text = String::from_utf8(c.bytes.to_vec()).unwrap();
        text.lines()
            .enumerate()
            .map(|(k, l)| {
                let n = match &c.line_numbers {
                    Some(n) => n[k],
                    None => c.first_line + k as i64,
                };
                (n, l.to_owned())
            })
            .collect()
    }

    /// A search of `sims` as the pipeline runs it: each pane's range
    /// captured and taken, then the panes left for a second look.
    fn search(sims: &[&Sim], joined: bool, since: Option<&str>) -> Result<Found, ToolError> {
        search_back(sims, joined, since, None)
    }

    /// [`search`] of the last `scrollback` history lines and the screen
    /// (all history: `None`).
    fn search_back(
        sims: &[&Sim],
        joined: bool,
        since: Option<&str>,
        scrollback: Option<u64>,
    ) -> Result<Found, ToolError> {
        let panes: Vec<Pane> = sims.iter().map(|s| s.pane()).collect();
        let refs: Vec<&Pane> = panes.iter().collect();
        let since = Since::new(Setup {
            server: SERVER,
            joined,
            since,
            panes: &refs,
            full_range: scrollback.map_or(CaptureRange::AllHistory, CaptureRange::Scrollback),
            scrollback: scrollback.unwrap_or(1 << 20),
            max_history: 1 << 20,
        })?;
        let mut lines = vec![Vec::new(); sims.len()];
        let mut ranges = Vec::new();
        for (i, sim) in sims.iter().enumerate() {
            ranges.push(since.range(i));
            let c = since.take(i, sim.capture(since.range(i), joined));
            assert_eq!(c.key, i);
            lines[i] = lines_of(&c);
        }
        for (key, (i, id, range)) in since.fallback().into_iter().enumerate() {
            assert_eq!(id, panes[i].pane_id);
            let c = since.refind(key, i, sims[i].capture(range, joined));
            assert_eq!(c.key, key);
            lines[i] = lines_of(&c);
        }
        let (cursor, notes) = since.finish();
        Ok(Found {
            ranges,
            lines,
            cursor,
            notes,
        })
    }

    /// A small generator of its own: the cases are the same on every run.
    struct Lcg(u64);

    impl Lcg {
        fn below(&mut self, n: u64) -> u64 {
            self.0 = (self.0)
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (self.0 >> 33) % n.max(1)
        }
    }

    /// Lines that make anchors hard: repeated, blank, bare prompts, wide
    /// characters, lines that wrap, fill a row exactly, or push a wide
    /// character to the next row.
    fn a_line(g: &mut Lcg, width: u32) -> String {
        const SAID: [&str; 10] = [
            "",
            "$ ",
            "tick",
            "tick",
            "ERR x",
            "ok 1",
            "中文 wide 中",
            "$ make all",
            "-----",
            "a long line that wraps over rows",
        ];
        let w = width as usize;
        match g.below(14) {
            10 => "y".repeat(w),
            11 => format!("{}中", "z".repeat(w - 1)),
            12 => "中".repeat(w),
            13 => format!("line {}", g.below(1000)),
            k => SAID[k as usize].to_owned(),
        }
    }

    /// Prints a line, or writes part of one (the line being written).
    fn step(sim: &mut Sim, g: &mut Lcg) {
        let line = a_line(g, sim.width);
        if g.below(5) == 0 {
            sim.write(&line);
        } else {
            sim.print(&line);
        }
    }

    /// Every since search scans exactly the lines completed since the
    /// last search, with their line numbers: none skipped, none twice, the
    /// line still being written not yet. No trims (no history limit), no
    /// clears: nothing is said per pane.
    #[test]
    fn since_searches_scan_every_completed_line_once() {
        for seed in 0..400 {
            let mut g = Lcg(seed);
            let joined = seed % 2 == 0;
            let (width, height) = (8 + g.below(12) as u32, 2 + g.below(7) as usize);
            let mut sim = Sim::new(1, width, height, 0);
            for _ in 0..g.below(40) {
                step(&mut sim, &mut g);
            }
            let first = search(&[&sim], joined, None).unwrap();
            let whole = lines_of(&whole(0, sim.capture(CaptureRange::AllHistory, joined)));
            assert_eq!(
                first.lines[0], whole,
                "seed {seed}: a first search scans all"
            );
            assert_eq!(first.notes, vec![]);
            let (mut cursor, mut from) = (first.cursor, sim.boundary(joined));
            for round in 0..6 {
                for _ in 0..g.below(10) {
                    step(&mut sim, &mut g);
                }
                // The place is where the line being written began, and a
                // since search reads from the anchor above it to the
                // cursor's row, no more.
                let e = Cursor::decode(&cursor).unwrap().entries[0];
                let at = sim.rows.iter().position(|r| r.serial == from).unwrap();
                assert_eq!(e.boundary, at as u64, "seed {seed} round {round}");
                let found = search(&[&sim], joined, Some(&cursor)).unwrap();
                let to = sim.boundary(joined);
                let case = format!("seed {seed} round {round} (joined {joined}, {width}x{height})");
                let start = e.boundary as i64 - e.anchor_rows as i64 - sim.history() as i64;
                let end = i64::from(sim.cursor_y());
                assert_eq!(
                    found.ranges[0],
                    CaptureRange::Lines { start, end },
                    "{case}"
                );
                assert_eq!(found.lines[0], sim.between(from, to, joined), "{case}");
                assert_eq!(found.notes, vec![], "{case}");
                (cursor, from) = (found.cursor, to);
            }
        }
    }

    fn text(c: &Capture) -> String {
        String::from_utf8(c.bytes.to_vec()).unwrap()
    }

    fn anchor(e: &Entry) -> Anchor {
        Anchor {
            rows: e.anchor_rows,
            hash: e.anchor,
            kind: HashKind::Fnv64,
        }
    }

    fn texts(lines: &[(i64, String)]) -> Vec<String> {
        lines.iter().map(|l| l.1.clone()).collect()
    }

    fn full(sim: &Sim, joined: bool) -> Vec<(i64, String)> {
        lines_of(&whole(0, sim.capture(CaptureRange::AllHistory, joined)))
    }

    fn note(pane: u32, reason: &'static str, missed_lines: Option<u64>) -> SincePane {
        SincePane {
            pane_id: PaneId::parse(&format!("%{pane}")).unwrap(),
            reason,
            missed_lines,
        }
    }

    /// `count` numbered lines: a pane's output before the cursor.
    fn print_lines(sim: &mut Sim, tag: &str, count: usize) {
        for k in 0..count {
            sim.print(&format!("{tag} {k}"));
        }
    }

    #[test]
    fn the_server_is_its_socket_pid_and_start_time() {
        let socket = std::path::Path::new("/tmp/tmux-1000/default");
        let id = server_id(socket, "4242 1764000000");
        let hash = fnv32(b"/tmp/tmux-1000/default");
        assert_eq!((id.socket, id.pid, id.start), (hash, 4242, 1_764_000_000));
        let id = server_id(socket, "junk");
        assert_eq!((id.socket, id.pid, id.start), (hash, 0, 0));
    }

    /// Panes the cursor does not know, whose process changed or whose
    /// width did, are searched in full and said; the one unchanged only
    /// from its place.
    #[test]
    fn new_respawned_and_resized_panes_are_searched_in_full_and_said() {
        let mut sims: Vec<Sim> = (1..=4).map(|id| Sim::new(id, 20, 5, 0)).collect();
        for sim in &mut sims {
            print_lines(sim, "old", 8);
        }
        let first = search(&[&sims[0], &sims[1], &sims[2]], true, None).unwrap();
        for sim in &mut sims {
            print_lines(sim, "new", 2);
        }
        sims[1].pid += 1;
        sims[2].width += 1;
        let all: Vec<&Sim> = sims.iter().collect();
        let found = search(&all, true, Some(&first.cursor)).unwrap();
        assert_eq!(texts(&found.lines[0]), ["new 0", "new 1"]);
        for (k, sim) in sims.iter().enumerate().skip(1) {
            assert_eq!(found.lines[k], full(sim, true), "pane {k}");
        }
        let said = [
            note(2, "respawned", None),
            note(3, "resized", None),
            note(4, "new", None),
        ];
        assert_eq!(found.notes, said);
        // Known to the next cursor: nothing new anywhere.
        let again = search(&all, true, Some(&found.cursor)).unwrap();
        assert!(again.lines.iter().all(Vec::is_empty), "{:?}", again.lines);
        assert_eq!(again.notes, vec![]);
    }

    /// History cleared under the anchor: where the anchor is still on the
    /// screen, what follows it is found (`missed_lines: 0`); where it is
    /// gone, the pane is searched in full, as far as a full search reads.
    #[test]
    fn a_cleared_history_is_said_and_the_anchor_looked_for_again() {
        let mut sims: Vec<Sim> = (1..=3).map(|id| Sim::new(id, 20, 6, 0)).collect();
        for sim in &mut sims {
            print_lines(sim, "old", 15);
        }
        let first = search(&[&sims[0], &sims[1], &sims[2]], true, None).unwrap();
        // Pane 2: two lines, cleared (the anchor stays on the screen),
        // eight more (history again). Pane 3: fifteen lines, cleared.
        print_lines(&mut sims[1], "new", 2);
        sims[1].clear_history();
        print_lines(&mut sims[1], "more", 8);
        print_lines(&mut sims[2], "gone", 15);
        sims[2].clear_history();
        print_lines(&mut sims[2], "after", 3);
        let now = &sims;
        let found = search(&[&now[0], &now[1], &now[2]], true, Some(&first.cursor)).unwrap();
        assert_eq!(found.lines[0], vec![]);
        let want: Vec<String> = ["new 0", "new 1"]
            .into_iter()
            .map(String::from)
            .chain((0..8).map(|k| format!("more {k}")))
            .collect();
        assert_eq!(texts(&found.lines[1]), want);
        assert_eq!(found.lines[1][0].0, -5, "line numbers of the pane now");
        assert_eq!(found.lines[2], full(&sims[2], true));
        let said = [note(2, "cleared", Some(0)), note(3, "cleared", None)];
        assert_eq!(found.notes, said);
        // A full search of the last 2 history lines reads no more of it.
        let back = search_back(
            &[&now[0], &now[1], &now[2]],
            true,
            Some(&first.cursor),
            Some(2),
        );
        let back = back.unwrap();
        let all = full(&sims[2], true);
        assert!(all[0].0 < -2, "{all:?}");
        let last_2: Vec<_> = all.into_iter().filter(|l| l.0 >= -2).collect();
        assert_eq!(back.lines[2], last_2);
    }

    /// A lost anchor is `trimmed` when history was at 90% of its limit or
    /// more (before or now), else `cleared`: no limit, far below it.
    #[test]
    fn a_lost_anchor_is_trimmed_near_the_history_limit_else_cleared() {
        for (limit, history, reason) in [
            (100, 90, "trimmed"),
            (100, 89, "cleared"),
            (0, 90, "cleared"),
            (1000, 90, "cleared"),
            (20, 20, "trimmed"),
        ] {
            let mut sim = Sim::new(1, 20, 5, limit);
            print_lines(&mut sim, "old", history as usize + 4);
            assert_eq!(sim.history(), history);
            let first = search(&[&sim], true, None).unwrap();
            print_lines(&mut sim, "gone", 8);
            sim.clear_history();
            print_lines(&mut sim, "new", 4);
            let found = search(&[&sim], true, Some(&first.cursor)).unwrap();
            let case = format!("limit {limit}, history {history}");
            assert_eq!(found.notes, [note(1, reason, None)], "{case}");
            assert_eq!(found.lines[0], full(&sim, true), "{case}");
        }
    }

    /// History trimmed past the anchor, its size back where it was (no
    /// clear): `trimmed`, and the pane searched in full.
    #[test]
    fn an_anchor_trimmed_away_is_said_trimmed() {
        let mut sim = Sim::new(1, 20, 5, 20);
        print_lines(&mut sim, "old", 24);
        let first = search(&[&sim], true, None).unwrap();
        print_lines(&mut sim, "new", 30);
        while sim.history() != 20 {
            sim.print("more");
        }
        let found = search(&[&sim], true, Some(&first.cursor)).unwrap();
        assert_eq!(found.notes, [note(1, "trimmed", None)]);
        assert_eq!(found.lines[0], full(&sim, true));
    }

    /// The terminal cursor moved above the place (a full-screen program
    /// drew over the screen): the lines above it are no new lines, and the
    /// pane is searched in full.
    #[test]
    fn a_cursor_moved_above_its_place_searches_the_pane_in_full() {
        let mut sim = Sim::new(1, 20, 6, 0);
        print_lines(&mut sim, "old", 9);
        let first = search(&[&sim], true, None).unwrap();
        sim.up = 2;
        let found = search(&[&sim], true, Some(&first.cursor)).unwrap();
        assert_eq!(found.notes, [note(1, "cleared", None)]);
        let y = i64::from(sim.cursor_y());
        let to_cursor: Vec<_> = full(&sim, true).into_iter().filter(|l| l.0 <= y).collect();
        assert_eq!(found.lines[0], to_cursor);
    }

    /// A place with no line above it (a full search of the screen alone,
    /// the cursor on its top row) says only its row: once the cursor is
    /// above that row (history cleared), no line there is new, and the
    /// pane is searched in full and said.
    #[test]
    fn a_place_with_no_anchor_is_lost_once_the_cursor_is_above_it() {
        let mut sim = Sim::new(1, 20, 1, 0);
        print_lines(&mut sim, "old", 5);
        let first = search_back(&[&sim], true, None, Some(0)).unwrap();
        let e = Cursor::decode(&first.cursor).unwrap().entries[0];
        assert_eq!((e.boundary, e.anchor_rows), (5, 0));
        sim.clear_history();
        print_lines(&mut sim, "new", 1);
        let found = search_back(&[&sim], true, Some(&first.cursor), Some(0)).unwrap();
        assert_eq!(found.notes, [note(1, "cleared", None)]);
        assert_eq!(found.lines[0], [(0, String::new())]);
    }

    /// A pane not searched to its end keeps its old place (a since pane)
    /// or none (a new one), and so does every pane in the cursor for an
    /// answer cut to fit: the next search finds the same lines again.
    #[test]
    fn panes_not_searched_to_their_end_keep_their_old_place() {
        let mut a = Sim::new(1, 20, 5, 0);
        print_lines(&mut a, "old", 8);
        let first = search(&[&a], true, None).unwrap();
        let old = Cursor::decode(&first.cursor).unwrap();
        print_lines(&mut a, "new", 3);
        let b = Sim::new(2, 20, 5, 0);
        let panes = [a.pane(), b.pane()];
        let refs: Vec<&Pane> = panes.iter().collect();
        let since = Since::new(Setup {
            server: SERVER,
            joined: true,
            since: Some(&first.cursor),
            panes: &refs,
            full_range: CaptureRange::AllHistory,
            scrollback: 1 << 20,
            max_history: 1 << 20,
        })
        .unwrap();
        for (i, sim) in [&a, &b].into_iter().enumerate() {
            let c = since.take(i, sim.capture(since.range(i), true));
            assert!(!c.bytes.is_empty());
        }
        let cut = Cursor::decode(&since.cursor_if_cut()).unwrap();
        assert_eq!(cut.entries, old.entries);
        assert_eq!((cut.joined, cut.anchors), (true, HashKind::Fnv64));
        let (advanced, _) = since.finish();
        assert_eq!(Cursor::decode(&advanced).unwrap().entries.len(), 2);
        since.keep_old(0);
        since.keep_old(1);
        let (kept, notes) = since.finish();
        assert_eq!(Cursor::decode(&kept).unwrap().entries, old.entries);
        assert_eq!(notes, [note(2, "new", None)]);
        let again = search(&[&a], true, Some(&kept)).unwrap();
        assert_eq!(texts(&again.lines[0]), ["new 0", "new 1", "new 2"]);
    }

    #[test]
    fn new_lines_start_after_the_anchor_and_stop_before_the_cursor_line() {
        // The first search: screen of 6 rows, no history, cursor on row 3.
        let first = cap(0, 0, &["aaa", "bbb", "ccc", "$ ", "", ""]);
        let rows = rows_of(&first);
        let s = stand(&rows, &first.bytes, 3);
        assert_eq!((s.pending, s.boundary, s.anchor_rows), (3, 3, 3));
        let e = Entry {
            pane: 1,
            pid: 1,
            width: 80,
            history: 0,
            boundary: 3,
            anchor_rows: 3,
            anchor: s.anchor,
        };
        // Later: two lines printed; the capture starts at the anchor.
        let later = cap(0, 0, &["aaa", "bbb", "ccc", "$ run", "ERR x", "$ "]);
        let rows = rows_of(&later);
        let Place::At(from) = anchor(&e).place(&rows, &later.bytes, 3, None) else {
            panic!("anchor not at its row");
        };
        let now = stand(&rows, &later.bytes, 5);
        let c = slice(0, &later, &rows[from..now.pending]);
        assert_eq!(text(&c), "$ run\nERR x\n");
        assert_eq!(c.line_numbers, Some(vec![3, 4]));
        // The anchor replaced (cleared and refilled): not found.
        let cleared = cap(0, 0, &["xxx", "yyy", "zzz", "$ ", "", ""]);
        let rows = rows_of(&cleared);
        assert_eq!(
            anchor(&e).place(&rows, &cleared.bytes, 3, None),
            Place::Lost
        );
    }

    /// The anchor of a pane whose last lines repeat grows past them: a
    /// three-line anchor of `tick` would be found at its row after a trim
    /// brought other `tick` lines there, and the `ERR` printed before
    /// them would be skipped.
    #[test]
    fn an_anchor_of_repeated_lines_is_not_taken_at_its_row_after_a_trim() {
        let mut before = vec!["start"];
        before.extend(["tick"; 6]);
        before.push("$ ");
        let first = cap(-7, 7, &before);
        let s = stand(&rows_of(&first), &first.bytes, 7);
        assert_eq!(s.anchor_rows, 7);
        let e = Entry {
            pane: 1,
            pid: 1,
            width: 80,
            history: 7,
            boundary: 7,
            anchor_rows: s.anchor_rows,
            anchor: s.anchor,
        };
        // Trimmed by 4 rows, then ERR and more ticks printed.
        let mut after = vec!["tick"; 3];
        after.extend(["ERR x", "tick", "tick", "tick", "tick", "$ "]);
        let later = cap(-8, 8, &after);
        let rows = rows_of(&later);
        let place = anchor(&e).place(&rows, &later.bytes, 7, Some(4));
        assert_eq!(place, Place::Lost);
    }
}
