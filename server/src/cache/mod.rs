//! The pane cache: repeated searches fetch only what changed.
//!
//! # Why
//!
//! A cold deep search is bound by tmux: its single thread spends 1-3 us per
//! scrollback line producing captures. An agent searches the same server
//! again and again, and between two searches most panes print nothing new.
//! History rows above the screen never change once written — except when
//! history is cleared, trimmed at the history limit, rewrapped by a resize or
//! the pane is respawned — so the text fetched last time can be kept and
//! only what is new fetched. A wrong answer is never acceptable, a slower
//! one is: every doubt ends in a full fetch of that pane, which is exactly
//! what the cache-off path does (the Delta rule below says which doubts no
//! check can raise).
//!
//! # How a pane is served
//!
//! The caller's inventory gives every pane's *fingerprint* — process id,
//! history size and limit, size, cursor, alternate-screen and dead flags —
//! and a light `list-panes -a` that tmux runs *after* it (pipelined in the
//! inventory's own round trip by search_panes, see
//! [`Tmux::inventory_and`]) reads the server's pid and start time and each
//! window's last-activity second (tmux
//! stamps it whenever it parses output from any pane of the window). Output
//! after the capture shows in that second; a change that prints nothing
//! (clear, resize, respawn) before the inventory shows in the fingerprint
//! (a resize and back with nothing printed in between rewraps every line
//! as it was); one between the inventory and the activity read leaves the
//! answer the pane's text as the inventory saw it. Then, per pane:
//!
//! 1. **Reuse** — the fingerprint is identical to the one stored with the
//!    entry and the window's last activity is in an earlier second than the
//!    one in which the stored capture was requested: nothing was printed
//!    since, so the stored text *is* the pane's text. No tmux work at all.
//! 2. **Delta** — same server, process, size and history limit, but output
//!    happened: capture from [`RACE_ROWS`] rows above an *anchor* (the last
//!    history-complete lines stored, at least [`ANCHOR_ROWS`] rows) to the
//!    bottom, and the oldest stored lines (at least [`ANCHOR_ROWS`] rows)
//!    again. The anchor must come back at exactly the row it was stored at
//!    (checked with the capture's own history size, so output racing the
//!    fingerprint cannot shift it), byte for byte and line for line, and
//!    the line after it must start at the same row; so must every line
//!    fetched above it, and the oldest lines. When the fetched lines reach
//!    the first stored line, every stored line kept has been compared.
//!    Otherwise the lines in between are kept unseen, on the word of rows
//!    that match where they were stored — and rows that repeat (blank
//!    lines, separators, a line printed over and over) also match where
//!    they were stored after a trim at the history limit, a clear and
//!    refill or a resize's reflow moved every row. So the match must be
//!    the only one:
//!    - no other copy of the anchor in the delta's capture could be the
//!      stored anchor moved: a copy overlapping it (rows repeating within
//!      the anchor: blank lines, a line over and over, a short cycle) is
//!      one when all the rows compared near the anchor repeat the same way,
//!      since such a run matches at any offset; any copy is one when
//!      shifting the stored text by its distance also explains every
//!      other fetched line;
//!    - when the history may have reached its limit (tmux then trims the
//!      oldest tenth at a time, so rows move up by multiples of a tenth),
//!      for every such shift that leaves stored history in place, some
//!      fetched line differs from the stored line that many rows further
//!      down.
//!
//!    The stored lines above the anchor plus the fresh capture are the
//!    pane's text. What no check short of a full fetch can see: text
//!    replaced since (a clear, or a trim of more than was stored) by text
//!    that reproduces, at the same rows, both the oldest stored rows and
//!    the rows compared at the anchor (when these are no run of repeated
//!    rows), and differs in between.
//! 3. **Full** — anything else (no entry, a mismatch, a range the stored
//!    lines cannot reproduce exactly): the caller's own request, passed to
//!    tmux unchanged, and its reply stored.
//!
//! Text is stored per (socket, pane, join_wrapped, escapes) as tmux produced
//! it, with the absolute row (0 = oldest history row) each line starts at;
//! a range is served only from a line start (or from the stored start, which
//! a capture from there reproduces), and joined line numbers are the ones
//! the transport computed and verified for those very lines, so a served
//! capture is the bytes and numbers a cold capture would have returned. A
//! capture the transport could not number (it fell back to unjoined rows) is
//! passed through and never stored.
//!
//! # Memory
//!
//! A ceiling in bytes (text + line tables); the entries of the panes searched
//! least recently are evicted first.

use std::collections::HashMap;
use std::ops::Range;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use crossbeam_channel::{Receiver, Sender};

use crate::tmux::{
    CaptureOptions, CaptureRange, CaptureReply, CaptureRequest, CapturedText, Inventory, Pane,
    PaneId, Tmux, TmuxCommand, TmuxError,
};

/// Default memory ceiling.
pub const DEFAULT_MAX_BYTES: usize = 256 << 20;

/// Rows of history an anchor covers at least (fewer when the pane has
/// fewer stored history rows).
pub const ANCHOR_ROWS: u64 = 32;

/// Rows a delta fetches above its anchor, so that a pane printing up to
/// this many rows between the inventory and the capture still validates.
pub const RACE_ROWS: i64 = 64;

/// Counters of what the cache did, for the bench and tests.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// Panes served without asking tmux for text.
    pub reused: u64,
    /// Panes served from a partial capture spliced onto stored lines.
    pub delta: u64,
    /// Panes captured whole (no entry, or validation failed).
    pub full: u64,
    /// Delta captures whose validation failed (then captured whole).
    pub delta_rejected: u64,
    /// Entries evicted to stay under the ceiling.
    pub evicted: u64,
}

/// Per-pane text kept between searches, bounded in memory.
#[derive(Debug)]
pub struct PaneCache {
    max_bytes: usize,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    entries: HashMap<EntryKey, Entry>,
    bytes: usize,
    tick: u64,
    stats: CacheStats,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct EntryKey {
    socket: PathBuf,
    pane: PaneId,
    join_wrapped: bool,
    escapes: bool,
}

#[derive(Debug, Clone)]
struct Entry {
    print: Fingerprint,
    /// Wall-clock second in which the stored capture was requested.
    captured_at: i64,
    text: Arc<PaneText>,
    last_used: u64,
}

/// What one `list-panes` row says about a pane. Two equal fingerprints with
/// no window activity in between mean the pane's text did not change.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Fingerprint {
    server_pid: String,
    server_start: String,
    pane_pid: String,
    history_size: u64,
    history_limit: u64,
    width: u32,
    height: u32,
    cursor: String,
    alternate_on: String,
    dead: String,
}

/// Up to this many panes, activity is read pane by pane.
const FEW_PANES: usize = 4;

/// The format of an activity row: what the inventory does not say.
const ACTIVITY_FORMAT: &str = "#{pane_id} #{window_activity} #{pid} #{start_time}";

impl Fingerprint {
    fn of(pane: &Pane, server_pid: &str, server_start: &str) -> Fingerprint {
        Fingerprint {
            server_pid: server_pid.to_owned(),
            server_start: server_start.to_owned(),
            pane_pid: pane.pane_pid.map_or_else(String::new, |p| p.to_string()),
            history_size: pane.history_size,
            history_limit: pane.history_limit,
            width: pane.pane_width,
            height: pane.pane_height,
            cursor: format!("{},{}", pane.cursor_x, pane.cursor_y),
            alternate_on: pane.alternate_on.to_string(),
            dead: format!("{}{:?}", pane.pane_dead, pane.pane_dead_status),
        }
    }
}

/// A pane's stored text: whole lines as tmux produced them, from
/// `first_abs` to the bottom of the screen at capture time.
#[derive(Debug, Clone, PartialEq, Eq)]
struct PaneText {
    /// History size at capture time (absolute row of the screen's top).
    history_size: u64,
    width: u32,
    height: u32,
    bytes: Vec<u8>,
    /// Byte offset of each line's start.
    starts: Vec<usize>,
    /// Absolute row (0 = oldest history row) of each line's start.
    rows: Vec<u64>,
}

impl PaneText {
    fn first_abs(&self) -> Option<u64> {
        self.rows.first().copied()
    }

    fn memory(&self) -> usize {
        self.bytes.len() + self.starts.len() * 8 + self.rows.len() * 8 + 256
    }

    fn line(&self, i: usize) -> &[u8] {
        let end = self.starts.get(i + 1).copied().unwrap_or(self.bytes.len());
        &self.bytes[self.starts[i]..end]
    }

    /// Lines that end above the screen (their rows will never change while
    /// the history is neither cleared, trimmed nor rewrapped).
    fn history_complete(&self) -> usize {
        (0..self.rows.len())
            .take_while(|&i| {
                self.rows
                    .get(i + 1)
                    .is_some_and(|&next| next <= self.history_size)
            })
            .count()
    }

    /// From a capture reply: `None` when the text cannot be placed exactly
    /// (a line count that disagrees).
    fn from_capture(text: &CapturedText) -> Option<PaneText> {
        let hsize = i64::try_from(text.history_size).ok()?;
        let starts = line_starts(&text.bytes);
        let rows: Vec<u64> = match &text.line_numbers {
            Some(numbers) => {
                if numbers.len() != starts.len() {
                    return None;
                }
                numbers
                    .iter()
                    .map(|&n| u64::try_from(hsize + n).ok())
                    .collect::<Option<_>>()?
            }
            None => {
                let first = u64::try_from(hsize + text.first_line).ok()?;
                (0..starts.len() as u64).map(|i| first + i).collect()
            }
        };
        Some(PaneText {
            history_size: text.history_size,
            width: text.pane_width,
            height: text.pane_height,
            bytes: text.bytes.clone(),
            starts,
            rows,
        })
    }

    /// The first row of `range` and the indexes of its first and last
    /// lines, or `None` when the stored lines cannot reproduce it exactly.
    fn locate(&self, range: CaptureRange) -> Option<(u64, usize, usize)> {
        let (start, end) = range_rows(range, self.history_size, self.height);
        if start < self.first_abs()? {
            return None;
        }
        let index = self.rows.binary_search(&start).ok()?;
        // The last line is the one holding row `end`; it must end there
        // (a joined line running past `end` would come back cut).
        let last = match self.rows.binary_search(&end) {
            Ok(i) => i,
            Err(i) => i.checked_sub(1)?,
        };
        let end_ok = match self.rows.get(last + 1) {
            Some(&next) => next == end + 1,
            None => end + 1 == self.history_size + u64::from(self.height.max(1)),
        };
        (end_ok && last >= index).then_some((start, index, last))
    }

    /// The capture a cold request for `range` would return, or `None` when
    /// the stored lines cannot reproduce it exactly.
    fn serve(&self, range: CaptureRange, join_wrapped: bool) -> Option<CapturedText> {
        let (start, index, last) = self.locate(range)?;
        let to = self
            .starts
            .get(last + 1)
            .copied()
            .unwrap_or(self.bytes.len());
        let bytes = self.bytes[self.starts[index]..to].to_vec();
        let first_line = i64::try_from(start).ok()? - i64::try_from(self.history_size).ok()?;
        // Stored rows are the transport's own joined numbers (cumulative
        // rows per line, checked against the rows captured), and a splice
        // keeps them cumulative across the anchor: the numbers a cold
        // capture from this row would compute, without recomputing display
        // widths.
        // Every line one row: no numbers needed (the transport's contract:
        // line number = first_line + index), the same hits either way.
        let one_row_each = self.rows[last] - self.rows[index] == (last - index) as u64;
        let line_numbers = if join_wrapped && !one_row_each {
            let hsize = i64::try_from(self.history_size).ok()?;
            let numbers: Option<Vec<i64>> = self.rows[index..=last]
                .iter()
                .map(|&r| i64::try_from(r).ok().map(|r| r - hsize))
                .collect();
            Some(numbers?)
        } else {
            None
        };
        Some(CapturedText {
            first_line,
            bytes,
            line_numbers,
            history_size: self.history_size,
            pane_height: self.height,
            pane_width: self.width,
            joined: join_wrapped,
        })
    }
}

/// Byte offsets of the lines of `bytes` (a last line without `\n` counts).
fn line_starts(bytes: &[u8]) -> Vec<usize> {
    let mut starts = Vec::with_capacity(bytes.len() / 40 + 1);
    let mut pos = 0;
    while pos < bytes.len() {
        starts.push(pos);
        pos = memchr::memchr(b'\n', &bytes[pos..]).map_or(bytes.len(), |k| pos + k + 1);
    }
    starts
}

/// The absolute first and last row tmux captures for `range`, clamped the
/// way `capture-pane -S/-E` clamps (cmd-capture-pane.c).
fn range_rows(range: CaptureRange, history_size: u64, height: u32) -> (u64, u64) {
    let h = history_size;
    let bottom = h + u64::from(height.max(1)) - 1;
    let at = |n: i64| -> u64 {
        let row = if n < 0 {
            h.saturating_sub(n.unsigned_abs())
        } else {
            h.saturating_add(n.unsigned_abs())
        };
        row.min(bottom)
    };
    match range {
        CaptureRange::Visible | CaptureRange::Scrollback(0) => (h, bottom),
        CaptureRange::Scrollback(n) => (h - n.min(h), bottom),
        CaptureRange::AllHistory => (0, bottom),
        CaptureRange::Lines { start, end } => {
            let (a, b) = (at(start), at(end));
            (a.min(b), a.max(b))
        }
    }
}

/// Whether `range` runs to the bottom of the screen (only such captures
/// are stored: a delta always fetches to the bottom).
fn reaches_bottom(range: CaptureRange, height: u32) -> bool {
    match range {
        CaptureRange::Visible | CaptureRange::Scrollback(_) | CaptureRange::AllHistory => true,
        CaptureRange::Lines { start, end } => start.max(end) >= i64::from(height.max(1)) - 1,
    }
}

fn now_secs() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

/// What a pane needs this time.
#[derive(Debug)]
enum Decision {
    /// Served from these stored lines (copied out on the worker thread,
    /// while the engine scans the panes before).
    Reuse(Arc<PaneText>),
    Delta(DeltaPlan),
    Full,
}

/// A delta fetch: which stored lines anchor it, what to ask tmux.
#[derive(Debug)]
struct DeltaPlan {
    old: Arc<PaneText>,
    /// First anchor line (index into `old`).
    anchor: usize,
    /// The stored lines `0..top_lines` are captured again (up to row
    /// `top_rows`) and must be unchanged; `None` when the anchor is the
    /// first stored line.
    top: Option<(usize, u64)>,
    request: CaptureRequest,
    top_request: Option<CaptureRequest>,
    /// The pane's history limit (a trim moves rows by a tenth of it).
    history_limit: u64,
}

/// One unit of work of a batch, in request order.
#[derive(Debug)]
enum Job {
    Serve(Arc<PaneText>),
    Fetch {
        fetches: usize,
        delta: Option<DeltaPlan>,
    },
}

impl PaneCache {
    /// A cache holding at most `max_bytes` of pane text and line tables.
    pub fn new(max_bytes: usize) -> PaneCache {
        PaneCache {
            max_bytes,
            state: Mutex::new(State::default()),
        }
    }

    /// The memory ceiling.
    pub fn max_bytes(&self) -> usize {
        self.max_bytes
    }

    /// Bytes held now.
    pub fn memory_bytes(&self) -> usize {
        self.state.lock().map_or(0, |s| s.bytes)
    }

    /// Panes (per capture option set) held now.
    pub fn len(&self) -> usize {
        self.state.lock().map_or(0, |s| s.entries.len())
    }

    /// Whether nothing is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// What the cache did so far.
    pub fn stats(&self) -> CacheStats {
        self.state
            .lock()
            .map_or_else(|_| CacheStats::default(), |s| s.stats)
    }

    /// Forgets everything.
    pub fn clear(&self) {
        if let Ok(mut s) = self.state.lock() {
            s.entries.clear();
            s.bytes = 0;
        }
    }

    /// [`Tmux::capture`] through the cache: the same replies, in the same
    /// order, with the same text a cold capture would return; panes that
    /// did not change cost no capture, panes that printed cost only their
    /// new lines.
    pub fn capture(
        self: &Arc<Self>,
        tmux: &Tmux,
        inventory: &Inventory,
        requests: Vec<CaptureRequest>,
        options: CaptureOptions,
        deadline: Instant,
        cancel: Arc<AtomicBool>,
    ) -> Receiver<CaptureReply> {
        let panes: Vec<PaneId> = requests.iter().map(|r| r.pane).collect();
        let activity = read_activity(tmux, &panes, deadline);
        self.capture_after(
            tmux, inventory, activity, requests, options, deadline, cancel,
        )
    }

    /// The command whose output [`PaneCache::capture_read`] needs, to be
    /// pipelined right after the inventory ([`Tmux::inventory_and`]): one
    /// round trip for both.
    pub fn activity_command() -> TmuxCommand {
        TmuxCommand::new("list-panes")
            .flag("-a")
            .option("-F", ACTIVITY_FORMAT)
    }

    /// [`PaneCache::capture`] with the output of
    /// [`PaneCache::activity_command`] already read, after `inventory`.
    // Tmux::capture's arguments plus what was read before it.
    #[allow(clippy::too_many_arguments)]
    pub fn capture_read(
        self: &Arc<Self>,
        tmux: &Tmux,
        inventory: &Inventory,
        activity_output: Result<String, TmuxError>,
        requests: Vec<CaptureRequest>,
        options: CaptureOptions,
        deadline: Instant,
        cancel: Arc<AtomicBool>,
    ) -> Receiver<CaptureReply> {
        let activity = activity_output.map(|out| out.lines().filter_map(parse_activity).collect());
        self.capture_after(
            tmux, inventory, activity, requests, options, deadline, cancel,
        )
    }

    #[allow(clippy::too_many_arguments)]
    fn capture_after(
        self: &Arc<Self>,
        tmux: &Tmux,
        inventory: &Inventory,
        activity: Result<HashMap<PaneId, Activity>, TmuxError>,
        requests: Vec<CaptureRequest>,
        options: CaptureOptions,
        deadline: Instant,
        cancel: Arc<AtomicBool>,
    ) -> Receiver<CaptureReply> {
        let prints = activity.map(|a| fingerprints(inventory, &a));
        let socket = tmux.socket_path().to_path_buf();
        let mut jobs = Vec::with_capacity(requests.len());
        let mut fetch = Vec::new();
        for request in &requests {
            let decision = match &prints {
                Ok(prints) => self.decide(&socket, request, options, prints),
                Err(_) => Decision::Full,
            };
            match decision {
                Decision::Reuse(text) => jobs.push(Job::Serve(text)),
                Decision::Full => {
                    fetch.push(request.clone());
                    jobs.push(Job::Fetch {
                        fetches: 1,
                        delta: None,
                    });
                }
                Decision::Delta(plan) => {
                    let mut fetches = 1;
                    if let Some(top) = &plan.top_request {
                        fetch.push(top.clone());
                        fetches += 1;
                    }
                    fetch.push(plan.request.clone());
                    jobs.push(Job::Fetch {
                        fetches,
                        delta: Some(plan),
                    });
                }
            }
        }
        let prints = prints.unwrap_or_default();
        let (tx, rx) = crossbeam_channel::bounded(32);
        let captured_at = now_secs();
        let replies = tmux.capture(fetch, options, deadline, cancel.clone());
        let worker = Worker {
            cache: self.clone(),
            tmux: tmux.clone(),
            socket,
            options,
            deadline,
            cancel,
            prints,
            captured_at,
            tx,
        };
        let spawned = std::thread::Builder::new()
            .name("pane-cache".into())
            .spawn(move || worker.run(requests, jobs, replies));
        if let Err(e) = spawned {
            // The receiver sees a closed channel; the caller reports no
            // captures. Say why on stderr.
            eprintln!("panescan: cannot start the cache worker: {e}");
        }
        rx
    }

    fn decide(
        &self,
        socket: &std::path::Path,
        request: &CaptureRequest,
        options: CaptureOptions,
        prints: &HashMap<PaneId, (i64, Fingerprint)>,
    ) -> Decision {
        let Some((activity, print)) = prints.get(&request.pane) else {
            return Decision::Full;
        };
        let key = EntryKey {
            socket: socket.to_path_buf(),
            pane: request.pane,
            join_wrapped: options.join_wrapped,
            escapes: options.escapes,
        };
        let Ok(mut state) = self.state.lock() else {
            return Decision::Full;
        };
        state.tick += 1;
        let tick = state.tick;
        let Some(entry) = state.entries.get_mut(&key) else {
            return Decision::Full;
        };
        entry.last_used = tick;
        let same_pane = entry.print.server_pid == print.server_pid
            && entry.print.server_start == print.server_start
            && entry.print.pane_pid == print.pane_pid
            && entry.print.history_limit == print.history_limit
            && entry.print.width == print.width
            && entry.print.height == print.height
            && entry.text.width == print.width
            && entry.text.height == print.height;
        if !same_pane {
            return Decision::Full;
        }
        if entry.print == *print && *activity < entry.captured_at {
            if entry.text.locate(request.range).is_some() {
                let text = entry.text.clone();
                state.stats.reused += 1;
                return Decision::Reuse(text);
            }
            return Decision::Full;
        }
        match delta_plan(&entry.text, request, print) {
            Some(plan) => Decision::Delta(plan),
            None => Decision::Full,
        }
    }

    fn store(&self, key: EntryKey, print: Fingerprint, captured_at: i64, text: PaneText) {
        let memory = text.memory();
        let Ok(mut state) = self.state.lock() else {
            return;
        };
        if let Some(old) = state.entries.remove(&key) {
            state.bytes -= old.text.memory();
        }
        if memory > self.max_bytes {
            return;
        }
        state.tick += 1;
        let entry = Entry {
            print,
            captured_at,
            text: Arc::new(text),
            last_used: state.tick,
        };
        state.bytes += memory;
        state.entries.insert(key, entry);
        while state.bytes > self.max_bytes {
            let Some(oldest) = state
                .entries
                .iter()
                .min_by_key(|(_, e)| e.last_used)
                .map(|(k, _)| k.clone())
            else {
                break;
            };
            if let Some(e) = state.entries.remove(&oldest) {
                state.bytes -= e.text.memory();
                state.stats.evicted += 1;
            }
        }
    }

    fn count(&self, f: impl FnOnce(&mut CacheStats)) {
        if let Ok(mut s) = self.state.lock() {
            f(&mut s.stats);
        }
    }
}

/// The delta fetch for a pane whose entry may still hold, or `None` when
/// only a full fetch can be trusted.
fn delta_plan(
    old: &Arc<PaneText>,
    request: &CaptureRequest,
    print: &Fingerprint,
) -> Option<DeltaPlan> {
    let complete = old.history_complete();
    if complete == 0 {
        return None;
    }
    // The anchor: the last history-complete lines, at least ANCHOR_ROWS rows.
    let end_row = old.rows[complete];
    let anchor = (0..complete)
        .rev()
        .find(|&i| end_row - old.rows[i] >= ANCHOR_ROWS)
        .unwrap_or(0);
    let anchor_row = old.rows[anchor];
    let hsize = print.history_size;
    if anchor_row > hsize {
        return None; // History shrank below the anchor: cleared or resized.
    }
    // The request must start at or below where the stored lines start,
    // else only a full fetch has the lines.
    let first = old.first_abs()?;
    let (wanted, _) = range_rows(request.range, hsize, print.height);
    if wanted < first {
        return None;
    }
    // RACE_ROWS more rows above the anchor, so output racing between the
    // inventory and the capture leaves the anchor inside the capture.
    let start = i64::try_from(anchor_row).ok()? - i64::try_from(hsize).ok()? - RACE_ROWS;
    let delta_request = CaptureRequest {
        pane: request.pane,
        range: CaptureRange::Lines {
            start,
            end: i64::from(print.height.max(1)) - 1,
        },
    };
    if trim_step(print.history_limit, hsize).is_some() && first != 0 {
        return None;
    }
    // The oldest stored lines covering ANCHOR_ROWS rows are captured again
    // (none when the anchor is the first stored line: then no stored line
    // is kept).
    let (top, top_request) = if anchor == 0 {
        (None, None)
    } else {
        let top_end = (first + ANCHOR_ROWS).min(end_row);
        let lines = (1..=complete).find(|&j| old.rows[j] >= top_end)?;
        let rows = old.rows[lines];
        let top_request = CaptureRequest {
            pane: request.pane,
            range: CaptureRange::Lines {
                start: i64::try_from(first).ok()? - i64::try_from(hsize).ok()?,
                end: i64::try_from(rows).ok()? - 1 - i64::try_from(hsize).ok()?,
            },
        };
        (Some((lines, rows)), Some(top_request))
    };
    Some(DeltaPlan {
        old: old.clone(),
        anchor,
        top,
        request: delta_request,
        top_request,
        history_limit: print.history_limit,
    })
}

/// The rows tmux trims at once when a pane with this history limit and
/// size may have reached the limit, or `None` when it cannot have: tmux
/// trims the oldest tenth once history reaches the limit, and afterwards
/// history is at least the limit less a tenth until cleared.
fn trim_step(limit: u64, history_size: u64) -> Option<u64> {
    let tenth = (limit / 10).max(1);
    (limit > 0 && history_size + tenth >= limit).then_some(tenth)
}

/// The stored lines above the anchor plus the fresh capture, or `None`
/// when anything does not match or the match could be at another offset.
fn splice(
    plan: &DeltaPlan,
    top: Option<&CapturedText>,
    fresh: &CapturedText,
    join_wrapped: bool,
) -> Option<PaneText> {
    let old = &plan.old;
    if fresh.joined != join_wrapped
        || fresh.pane_width != old.width
        || fresh.pane_height != old.height
    {
        return None;
    }
    let new = PaneText::from_capture(fresh)?;
    // The anchor came back at the row it was stored at (the capture starts
    // at or above it; the lines before it are dropped)...
    let anchor_row = old.rows[plan.anchor];
    let skip = new.rows.binary_search(&anchor_row).ok()?;
    // ... byte for byte and line for line, and the next line starts where
    // it did.
    let complete = old.history_complete();
    for (k, i) in (plan.anchor..complete).enumerate() {
        if new.rows.get(skip + k) != Some(&old.rows[i]) || new.line(skip + k) != old.line(i) {
            return None;
        }
    }
    if new.rows.get(skip + complete - plan.anchor) != Some(&old.rows[complete]) {
        return None;
    }
    // So did the lines fetched above it. When they reach the first stored
    // line, every stored line kept is the pane's own: nothing to doubt.
    let verified = verified_above(old, plan.anchor, &new, skip)?;
    if verified > 0 {
        // Otherwise stored lines are kept unseen, on the word of rows that
        // match where they were stored: they must match nowhere else.
        let top = checked_top(plan, top, fresh, join_wrapped)?;
        if anchor_ambiguous(old, verified..complete, plan.anchor, &new, skip, &top) {
            return None;
        }
        let history = fresh.history_size.max(top.history_size);
        if let Some(step) = trim_step(plan.history_limit, history) {
            if trim_could_explain(old, complete, &[&top, &new], step) {
                return None;
            }
        }
    }
    let keep_bytes = old.starts[plan.anchor];
    let from = new.starts[skip];
    let mut bytes = Vec::with_capacity(keep_bytes + new.bytes.len() - from);
    bytes.extend_from_slice(&old.bytes[..keep_bytes]);
    bytes.extend_from_slice(&new.bytes[from..]);
    let mut starts = old.starts[..plan.anchor].to_vec();
    starts.extend(new.starts[skip..].iter().map(|s| s - from + keep_bytes));
    let mut rows = old.rows[..plan.anchor].to_vec();
    rows.extend_from_slice(&new.rows[skip..]);
    Some(PaneText {
        history_size: fresh.history_size,
        width: fresh.pane_width,
        height: fresh.pane_height,
        bytes,
        starts,
        rows,
    })
}

/// Compares the lines a delta fetched above the anchor (`new[..skip]`)
/// with the stored lines at the same rows, upwards from the anchor. The
/// index of the first stored line reached (0: all of them), or `None` when
/// one differs.
fn verified_above(old: &PaneText, anchor: usize, new: &PaneText, skip: usize) -> Option<usize> {
    // A capture's first line may be cut (a joined line entered part way)
    // or coloured differently (escapes carry attributes from the line
    // before): it is compared only with a stored first line, which was
    // captured from the same row.
    let from = usize::from(new.rows.first() != old.rows.first());
    let (mut i, mut j) = (anchor, skip);
    while i > 0 && j > from {
        if new.rows[j - 1] != old.rows[i - 1] || new.line(j - 1) != old.line(i - 1) {
            return None;
        }
        i -= 1;
        j -= 1;
    }
    Some(i)
}

/// The oldest stored lines as captured again, when they are unchanged at
/// the same rows.
fn checked_top(
    plan: &DeltaPlan,
    top: Option<&CapturedText>,
    fresh: &CapturedText,
    join_wrapped: bool,
) -> Option<PaneText> {
    let (lines, _rows) = plan.top?;
    let top = top?;
    let old = &plan.old;
    let top_first = i64::try_from(top.history_size).ok()? + top.first_line;
    if top.history_size != fresh.history_size
        || u64::try_from(top_first).ok()? != old.first_abs()?
        || top.joined != join_wrapped
        || top.bytes.as_slice() != &old.bytes[..old.starts[lines]]
    {
        return None;
    }
    let top_text = PaneText::from_capture(top)?;
    (top_text.rows.as_slice() == &old.rows[..lines]).then_some(top_text)
}

/// Whether the anchor (`old[anchor..compared.end]`, matched at
/// `new[skip]`) also occurs elsewhere in the delta where it could be the
/// stored anchor moved (by a trim, a clear and refill, a resize's reflow).
/// A copy overlapping the matched one is rows repeating within the anchor
/// (blank lines, a line printed over and over, a short cycle); when all
/// the rows compared (`old[compared]`, the anchor and the lines matched
/// above it) repeat the same way, they are a run that matches at any
/// offset and prove nothing. Otherwise a copy is a doubt when shifting the
/// stored text by its distance also explains every other fetched line
/// (the oldest ones, `top`, and the delta).
fn anchor_ambiguous(
    old: &PaneText,
    compared: Range<usize>,
    anchor: usize,
    new: &PaneText,
    skip: usize,
    top: &PaneText,
) -> bool {
    let (Some(&anchor_row), Some(&end)) = (old.rows.get(anchor), old.rows.get(compared.end)) else {
        return true;
    };
    let block = &old.bytes[old.starts[anchor]..old.starts[compared.end]];
    let run = &old.bytes[old.starts[compared.start]..old.starts[compared.end]];
    let at = new.starts[skip];
    // A copy that starts inside a line (an empty first line matches the
    // end of any line) is no row the anchor could have moved to.
    let mut copies = other_copies(&new.bytes, block, at)
        .filter_map(|copy| Some((copy, new.starts.binary_search(&copy).ok()?)));
    copies.any(|(copy, line)| {
        let distance = copy.abs_diff(at);
        if distance < block.len() && run[distance..] == run[..run.len() - distance] {
            return true;
        }
        let shift = i128::from(anchor_row) - i128::from(new.rows[line]);
        consistent_at_shift(old, end, &[top, new], shift)
    })
}

/// The byte offsets at which `block` occurs in `haystack`, overlapping
/// occurrences included, but `at`.
fn other_copies<'a>(
    haystack: &'a [u8],
    block: &'a [u8],
    at: usize,
) -> impl Iterator<Item = usize> + 'a {
    let finder = memchr::memmem::Finder::new(block);
    let mut from = 0;
    std::iter::from_fn(move || {
        let k = haystack.get(from..).and_then(|h| finder.find(h))?;
        let found = from + k;
        from = found + 1;
        Some(found)
    })
    .filter(move |&found| found != at)
}

/// Whether the pane having trimmed its oldest `step`, `2 * step`, ... rows
/// would also explain the lines `seen` (the top and delta captures), so
/// that their matching the stored lines at the stored rows proves nothing.
/// `complete`: the stored lines that were history (the ones a trim shifts
/// unchanged).
fn trim_could_explain(old: &PaneText, complete: usize, seen: &[&PaneText], step: u64) -> bool {
    let (Some(first), Some(&end)) = (old.first_abs(), old.rows.get(complete)) else {
        return true;
    };
    let mut shift = step;
    while shift < end - first {
        if consistent_at_shift(old, end, seen, i128::from(shift)) {
            return true;
        }
        shift += step;
    }
    false
}

/// Whether every line in `seen` that was stored history `shift` rows
/// further down (up when negative; rows before `end`) equals that stored
/// line, and at least one was compared.
fn consistent_at_shift(old: &PaneText, end: u64, seen: &[&PaneText], shift: i128) -> bool {
    let Some(first) = old.first_abs() else {
        return false;
    };
    let mut compared = 0;
    for text in seen {
        // A capture's first line may be cut or coloured differently (see
        // verified_above): not compared.
        for j in 1..text.rows.len() {
            let Ok(row) = u64::try_from(i128::from(text.rows[j]) + shift) else {
                continue; // Above row 0: no stored line to compare.
            };
            if row >= end {
                break;
            }
            match old.rows.binary_search(&row) {
                Ok(i) if old.line(i) == text.line(j) => compared += 1,
                Err(_) if row < first => {}
                // Another line, or a line start where the stored text has
                // none.
                _ => return false,
            }
        }
    }
    compared > 0
}

/// Window activity seconds and server identity, read now (after the
/// caller's inventory).
fn read_activity(
    tmux: &Tmux,
    panes: &[PaneId],
    deadline: Instant,
) -> Result<HashMap<PaneId, Activity>, TmuxError> {
    // A few panes (capture_pane, capture_since): ask about those alone.
    let activity: HashMap<PaneId, Activity> = if panes.len() <= FEW_PANES {
        let commands: Vec<TmuxCommand> = panes
            .iter()
            .map(|&pane| {
                TmuxCommand::new("display-message")
                    .flag("-p")
                    .target(pane)
                    .format_arg(ACTIVITY_FORMAT)
            })
            .collect();
        let mut rows = HashMap::new();
        for out in tmux.run_many(&commands, deadline) {
            rows.extend(out?.lines().filter_map(parse_activity));
        }
        rows
    } else {
        tmux.run(&PaneCache::activity_command(), deadline)?
            .lines()
            .filter_map(parse_activity)
            .collect()
    };
    Ok(activity)
}

/// Every pane's fingerprint (from the inventory) and window activity second.
fn fingerprints(
    inventory: &Inventory,
    activity: &HashMap<PaneId, Activity>,
) -> HashMap<PaneId, (i64, Fingerprint)> {
    let mut prints = HashMap::new();
    for pane in &inventory.panes {
        if let Some(a) = activity.get(&pane.pane_id) {
            let print = Fingerprint::of(pane, &a.server_pid, &a.server_start);
            prints.insert(pane.pane_id, (a.window_activity, print));
        }
    }
    prints
}

/// One row of the activity query.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Activity {
    window_activity: i64,
    server_pid: String,
    server_start: String,
}

fn parse_activity(line: &str) -> Option<(PaneId, Activity)> {
    let f: Vec<&str> = line.split(' ').collect();
    if f.len() != 4 {
        return None;
    }
    Some((
        PaneId::parse(f[0]).ok()?,
        Activity {
            window_activity: f[1].parse().ok()?,
            server_pid: f[2].to_owned(),
            server_start: f[3].to_owned(),
        },
    ))
}

/// The thread that turns tmux replies (and stored text) into the replies
/// of the caller's batch, in order.
struct Worker {
    cache: Arc<PaneCache>,
    tmux: Tmux,
    socket: PathBuf,
    options: CaptureOptions,
    deadline: Instant,
    cancel: Arc<AtomicBool>,
    prints: HashMap<PaneId, (i64, Fingerprint)>,
    captured_at: i64,
    tx: Sender<CaptureReply>,
}

impl Worker {
    fn run(self, requests: Vec<CaptureRequest>, jobs: Vec<Job>, replies: Receiver<CaptureReply>) {
        for (index, (request, job)) in requests.into_iter().zip(jobs).enumerate() {
            let result = match job {
                Job::Serve(text) => match text.serve(request.range, self.options.join_wrapped) {
                    Some(served) => Ok(served),
                    None => self.capture_whole(&request),
                },
                Job::Fetch { fetches, delta } => {
                    let mut got = Vec::with_capacity(fetches);
                    for _ in 0..fetches {
                        match replies.recv() {
                            Ok(reply) => got.push(reply.result),
                            Err(_) => {
                                got.push(Err(TmuxError::ConnectionLost("capture stopped".into())))
                            }
                        }
                    }
                    self.finish(&request, got, delta)
                }
            };
            let reply = CaptureReply {
                index,
                pane: request.pane,
                result,
            };
            if self.tx.send(reply).is_err() {
                return;
            }
        }
    }

    /// The reply for one request from what tmux sent for it.
    fn finish(
        &self,
        request: &CaptureRequest,
        mut got: Vec<Result<CapturedText, TmuxError>>,
        delta: Option<DeltaPlan>,
    ) -> Result<CapturedText, TmuxError> {
        let fresh = got
            .pop()
            .unwrap_or(Err(TmuxError::ConnectionLost("capture stopped".into())));
        let Some(plan) = delta else {
            self.cache.count(|s| s.full += 1);
            let text = fresh?;
            self.keep(request, &text, self.captured_at);
            return Ok(text);
        };
        // Out of time or cancelled: say so, as a cold capture would.
        let fresh = match fresh {
            Err(e @ (TmuxError::Timeout | TmuxError::Cancelled)) => return Err(e),
            other => other,
        };
        let top = got.pop().and_then(Result::ok);
        let spliced = fresh
            .ok()
            .and_then(|fresh| splice(&plan, top.as_ref(), &fresh, self.options.join_wrapped));
        if let Some(text) = spliced {
            if let Some(served) = text.serve(request.range, self.options.join_wrapped) {
                self.cache.count(|s| s.delta += 1);
                if let Some((_, print)) = self.prints.get(&request.pane) {
                    let mut print = print.clone();
                    print.history_size = text.history_size;
                    self.cache
                        .store(self.key(request.pane), print, self.captured_at, text);
                }
                return Ok(served);
            }
        }
        // Validation failed: capture this pane whole, as the cache-off path
        // does.
        self.cache.count(|s| {
            s.delta_rejected += 1;
            s.full += 1;
        });
        self.capture_whole(request)
    }

    /// One pane captured whole, as the cache-off path does, and stored.
    fn capture_whole(&self, request: &CaptureRequest) -> Result<CapturedText, TmuxError> {
        let captured_at = now_secs();
        let replies = self.tmux.capture(
            vec![request.clone()],
            self.options,
            self.deadline,
            self.cancel.clone(),
        );
        let text = replies
            .recv()
            .map_err(|_| TmuxError::ConnectionLost("capture stopped".into()))
            .and_then(|r| r.result)?;
        self.keep(request, &text, captured_at);
        Ok(text)
    }

    fn key(&self, pane: PaneId) -> EntryKey {
        EntryKey {
            socket: self.socket.clone(),
            pane,
            join_wrapped: self.options.join_wrapped,
            escapes: self.options.escapes,
        }
    }

    /// Stores a whole capture when it can be placed exactly.
    fn keep(&self, request: &CaptureRequest, text: &CapturedText, captured_at: i64) {
        if text.joined != self.options.join_wrapped
            || !reaches_bottom(request.range, text.pane_height)
        {
            return;
        }
        let Some((_, print)) = self.prints.get(&request.pane) else {
            return;
        };
        let Some(stored) = PaneText::from_capture(text) else {
            return;
        };
        let mut print = print.clone();
        print.history_size = text.history_size;
        self.cache
            .store(self.key(request.pane), print, captured_at, stored);
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    fn text(hsize: u64, first_line: i64, bytes: &[u8]) -> CapturedText {
        CapturedText {
            first_line,
            bytes: bytes.to_vec(),
            line_numbers: None,
            history_size: hsize,
            pane_height: 2,
            pane_width: 10,
            joined: false,
        }
    }

    #[test]
    fn serves_ranges_from_line_starts_only() {
        let stored = PaneText::from_capture(&text(3, -3, b"a\nb\nc\nd\ne\n")).unwrap();
        assert_eq!(stored.rows, vec![0, 1, 2, 3, 4]);
        assert_eq!(stored.history_complete(), 3);
        let all = stored.serve(CaptureRange::AllHistory, false).unwrap();
        assert_eq!(all.bytes, b"a\nb\nc\nd\ne\n");
        assert_eq!(all.first_line, -3);
        let one = stored.serve(CaptureRange::Scrollback(1), false).unwrap();
        assert_eq!(one.bytes, b"c\nd\ne\n");
        assert_eq!(one.first_line, -1);
        let screen = stored.serve(CaptureRange::Visible, false).unwrap();
        assert_eq!(screen.bytes, b"d\ne\n");
        // A stored capture from row 1 cannot serve row 0.
        let partial = PaneText::from_capture(&text(3, -2, b"b\nc\nd\ne\n")).unwrap();
        assert!(partial.serve(CaptureRange::AllHistory, false).is_none());
    }

    #[test]
    fn line_ranges_are_clamped_like_tmux_and_cut_on_line_ends() {
        let stored = PaneText::from_capture(&text(3, -3, b"a\nb\nc\nd\ne\n")).unwrap();
        let lines = |start, end| CaptureRange::Lines { start, end };
        let got = stored.serve(lines(-2, -1), false).unwrap();
        assert_eq!(got.bytes, b"b\nc\n");
        assert_eq!(got.first_line, -2);
        assert_eq!(
            stored.serve(lines(-50, 0), false).unwrap().bytes,
            b"a\nb\nc\nd\n"
        );
        assert_eq!(
            stored.serve(lines(1, -1), false).unwrap().bytes,
            b"c\nd\ne\n"
        );
        assert_eq!(stored.serve(lines(0, 99), false).unwrap().bytes, b"d\ne\n");
        assert!(reaches_bottom(lines(-5, 1), 2));
        assert!(!reaches_bottom(lines(-5, 0), 2));
        // A joined line spanning rows 0-1 cannot end a range at row 0.
        let mut t = text(3, -3, b"aaaaaaaaaaaaaaa\nb\nc\nd\n");
        t.joined = true;
        t.line_numbers = Some(vec![-3, -1, 0, 1]);
        let joined = PaneText::from_capture(&t).unwrap();
        assert!(joined.serve(lines(-3, -3), true).is_none());
        assert_eq!(
            joined.serve(lines(-3, -2), true).unwrap().bytes,
            b"aaaaaaaaaaaaaaa\n"
        );
        assert_eq!(
            joined.serve(lines(-3, -1), true).unwrap().bytes,
            b"aaaaaaaaaaaaaaa\nb\n"
        );
    }

    #[test]
    fn joined_lines_are_served_only_from_their_first_row() {
        let mut t = text(3, -3, b"aaaaaaaaaaaaaaa\nb\nc\nd\n");
        t.joined = true;
        t.line_numbers = Some(vec![-3, -1, 0, 1]);
        let stored = PaneText::from_capture(&t).unwrap();
        assert_eq!(stored.rows, vec![0, 2, 3, 4]);
        assert!(stored.serve(CaptureRange::Scrollback(2), true).is_none());
        let one = stored.serve(CaptureRange::Scrollback(1), true).unwrap();
        // Rows 2, 3, 4: one row each, numbered by first_line.
        assert_eq!(one.line_numbers, None);
        assert_eq!(one.first_line, -1);
        let all = stored.serve(CaptureRange::AllHistory, true).unwrap();
        assert_eq!(all.line_numbers, Some(vec![-3, -1, 0, 1]));
    }

    fn print(hsize: u64, limit: u64) -> Fingerprint {
        Fingerprint {
            server_pid: "1".into(),
            server_start: "2".into(),
            pane_pid: "3".into(),
            history_size: hsize,
            history_limit: limit,
            width: 10,
            height: 2,
            cursor: "0,0".into(),
            alternate_on: "0".into(),
            dead: "0".into(),
        }
    }

    fn numbered(from: usize, to: usize) -> Vec<u8> {
        (from..to)
            .flat_map(|i| format!("{i}\n").into_bytes())
            .collect()
    }

    #[test]
    fn a_delta_splices_new_lines_after_a_matching_anchor() {
        // 40 history rows + 2 screen rows stored.
        let old = Arc::new(PaneText::from_capture(&text(40, -40, &numbered(0, 42))).unwrap());
        let request = CaptureRequest {
            pane: PaneId::from_number(1),
            range: CaptureRange::AllHistory,
        };
        // 5 more lines printed: history 45.
        let plan = delta_plan(&old, &request, &print(45, 10_000)).unwrap();
        assert_eq!(old.rows[plan.anchor], 8);
        assert_eq!(
            plan.request.range,
            CaptureRange::Lines {
                start: -37 - RACE_ROWS,
                end: 1
            }
        );
        // The oldest stored lines are captured again.
        assert_eq!(
            plan.top_request.clone().unwrap().range,
            CaptureRange::Lines {
                start: -45,
                end: -14
            }
        );
        let top = text(45, -45, &numbered(0, 32));
        let fresh = text(45, -37, &numbered(8, 47));
        let spliced = splice(&plan, Some(&top), &fresh, false).unwrap();
        assert_eq!(spliced.bytes, numbered(0, 47));
        assert_eq!(
            spliced
                .serve(CaptureRange::AllHistory, false)
                .unwrap()
                .bytes,
            numbered(0, 47)
        );
        // A changed anchor row, or one found at another row, is refused.
        let mut bad = numbered(8, 47);
        bad[0] = b'x';
        assert!(splice(&plan, Some(&top), &text(45, -37, &bad), false).is_none());
        let moved = text(46, -37, &numbered(8, 47));
        assert!(splice(&plan, Some(&text(46, -46, &numbered(0, 32))), &moved, false).is_none());
        // Captured from above the anchor (as with RACE_ROWS), with 3 more
        // lines printed since the inventory: still spliced exactly.
        let top = text(48, -48, &numbered(0, 32));
        let raced = splice(&plan, Some(&top), &text(48, -45, &numbered(3, 50)), false).unwrap();
        assert_eq!(raced.bytes, numbered(0, 50));
        assert_eq!(raced.rows, (0..50).collect::<Vec<u64>>());
        assert_eq!(raced.history_size, 48);
        // A line above the anchor that changed is refused.
        let mut bad = numbered(3, 50);
        bad[2] = b'x';
        assert!(splice(&plan, Some(&top), &text(48, -45, &bad), false).is_none());
    }

    #[test]
    fn the_oldest_lines_are_checked_unless_the_delta_reaches_them() {
        let old = Arc::new(PaneText::from_capture(&text(40, -40, &numbered(0, 42))).unwrap());
        let request = CaptureRequest {
            pane: PaneId::from_number(1),
            range: CaptureRange::AllHistory,
        };
        let plan = delta_plan(&old, &request, &print(45, 50)).unwrap();
        let fresh = text(45, -37, &numbered(8, 47));
        let top = text(45, -45, &numbered(0, 32));
        assert!(splice(&plan, Some(&top), &fresh, false).is_some());
        let shifted = text(45, -45, &numbered(5, 37));
        assert!(splice(&plan, Some(&shifted), &fresh, false).is_none());
        assert!(splice(&plan, None, &fresh, false).is_none());
        // A delta that fetched every stored row needs no other check.
        let whole = text(45, -45, &numbered(0, 47));
        assert_eq!(
            splice(&plan, None, &whole, false).unwrap().bytes,
            numbered(0, 47)
        );
    }

    /// Stored text of one row per line, `hsize` history rows.
    fn rows_of(hsize: u64, lines: &[String]) -> PaneText {
        let bytes: Vec<u8> = lines
            .iter()
            .flat_map(|l| format!("{l}\n").into_bytes())
            .collect();
        let mut t = text(hsize, -i64::try_from(hsize).unwrap(), &bytes);
        t.pane_height = u32::try_from(lines.len() as u64 - hsize).unwrap();
        PaneText::from_capture(&t).unwrap()
    }

    /// The capture of `text` from absolute row `from`.
    fn captured(text: &PaneText, from: usize, to: usize) -> CapturedText {
        let end = text.starts.get(to).copied().unwrap_or(text.bytes.len());
        CapturedText {
            first_line: from as i64 - text.history_size as i64,
            bytes: text.bytes[text.starts[from]..end].to_vec(),
            line_numbers: None,
            history_size: text.history_size,
            pane_height: text.height,
            pane_width: text.width,
            joined: false,
        }
    }

    /// Plans a delta of `old` for a pane now holding `now` (limit `limit`)
    /// and answers it from `now`, as tmux would.
    fn delta_against(old: PaneText, now: &PaneText, limit: u64) -> Option<PaneText> {
        let old = Arc::new(old);
        let request = CaptureRequest {
            pane: PaneId::from_number(1),
            range: CaptureRange::AllHistory,
        };
        let mut print = print(now.history_size, limit);
        print.height = now.height;
        let plan = delta_plan(&old, &request, &print)?;
        let at = |range| match range {
            CaptureRange::Lines { start, end } => {
                let row = |n: i64| (n + now.history_size as i64).max(0) as usize;
                (row(start), row(end) + 1)
            }
            other => panic!("{other:?}"),
        };
        let (from, to) = at(plan.request.range);
        let fresh = captured(now, from, to);
        let top = plan.top_request.as_ref().map(|r| {
            let (from, to) = at(r.range);
            captured(now, from, to)
        });
        splice(&plan, top.as_ref(), &fresh, false)
    }

    fn lines(f: impl Fn(usize) -> String, n: usize) -> Vec<String> {
        (0..n).map(f).collect()
    }

    #[test]
    fn repeated_rows_trimmed_within_reach_of_the_delta_are_refused() {
        // The recipe of a wrong answer once given: 40x10, limit 100;
        // 42 `z`, U01..U21, 41 `z`; then 10 `z` more, and tmux trimmed the
        // 10 oldest rows: history 95 again, every row 10 rows up.
        let z_u_z = |shift: usize| {
            lines(
                |r| match r + shift {
                    42..=62 => format!("U{:02}", r + shift - 41),
                    _ => "z".into(),
                },
                105,
            )
        };
        let old = rows_of(95, &z_u_z(0));
        let now = rows_of(95, &z_u_z(10));
        assert!(delta_against(old.clone(), &now, 100).is_none());
        // Nothing trimmed, nothing changed: the delta holds.
        assert_eq!(
            delta_against(old.clone(), &old, 100).unwrap().bytes,
            old.bytes
        );
    }

    #[test]
    fn a_trim_further_than_the_delta_reaches_is_refused() {
        // Limit 1,000 (trims of 100 rows): rows repeating every 100 rows
        // around the anchor and at the top, unique rows in between. A trim
        // of 100 moves everything up 100 rows; the anchor and the oldest
        // rows still match where they were stored, the delta cannot see the
        // unique rows, and the anchor's other copies are out of its reach.
        let pane = |shift: usize| {
            lines(
                |r| match r + shift {
                    300..=320 => format!("U{}", r + shift),
                    n => format!("p{}", n % 100),
                },
                1_000,
            )
        };
        let old = rows_of(990, &pane(0));
        let now = rows_of(990, &pane(100));
        assert!(delta_against(old.clone(), &now, 1_000).is_none());
        // Far from the limit no trim is assumed (and the repeated anchor
        // alone does not show).
        assert!(delta_against(old.clone(), &now, 100_000).is_some());
        // Unique rows trimmed by 100 are refused by the anchor itself;
        // printed without a trim they are spliced.
        let unique = |n| lines(|r| format!("u{r}"), n);
        let old = rows_of(990, &unique(1_000));
        let trimmed = rows_of(990, &lines(|r| format!("u{}", r + 100), 1_000));
        assert!(delta_against(old.clone(), &trimmed, 1_000).is_none());
        let more = rows_of(995, &unique(1_005));
        assert_eq!(delta_against(old, &more, 1_000).unwrap().bytes, more.bytes);
    }

    #[test]
    fn an_anchor_repeated_in_the_delta_is_refused() {
        // History cleared and refilled with `z` (no trim: limit 100,000).
        // The oldest rows and the anchor match where they were stored; the
        // U rows between were never fetched. The anchor's rows occur again
        // in the delta, so they cannot vouch for the rows kept.
        let old = rows_of(
            611,
            &lines(
                |r| match r {
                    300..=320 => format!("U{r}"),
                    _ => "z".into(),
                },
                621,
            ),
        );
        let now = rows_of(700, &lines(|_| "z".into(), 710));
        assert!(delta_against(old, &now, 100_000).is_none());
        // Cleared and the same program run again: the same first rows, other
        // rows in the middle, then `z` over the anchor's rows. Only the
        // anchor's repeating within itself gives it away.
        let run = |middle: &'static str| {
            move |r: usize| match r {
                0..=39 => format!("t{r}"),
                300..=320 => format!("{middle}{r}"),
                _ => "z".into(),
            }
        };
        let old = rows_of(611, &lines(run("U"), 621));
        let now = rows_of(620, &lines(run("V"), 630));
        assert!(delta_against(old, &now, 100_000).is_none());
    }

    #[test]
    fn a_repeating_anchor_under_other_compared_rows_is_spliced() {
        // 40 blank rows end the history, unique rows above them: the blank
        // anchor matches at any offset within the blank rows, but the rows
        // compared above it pin it down. Printing 5 lines is a delta.
        let text = |r: usize| match r {
            950..=989 => String::new(),
            _ => format!("u{r}"),
        };
        let old = rows_of(990, &lines(text, 1_000));
        let more = rows_of(995, &lines(text, 1_005));
        assert_eq!(
            delta_against(old.clone(), &more, 100_000).unwrap().bytes,
            more.bytes
        );
        // Blank rows all through the delta pin nothing down.
        let blank = |r: usize| {
            if r < 600 {
                format!("u{r}")
            } else {
                String::new()
            }
        };
        let old = rows_of(990, &lines(blank, 1_000));
        let more = rows_of(995, &lines(blank, 1_005));
        assert!(delta_against(old, &more, 100_000).is_none());
    }

    #[test]
    fn copies_are_found_anywhere_but_where_they_are_expected() {
        let copies =
            |hay: &[u8], block: &[u8], at| other_copies(hay, block, at).collect::<Vec<_>>();
        assert_eq!(copies(b"a\nb\nc\n", b"b\n", 2), Vec::<usize>::new());
        assert_eq!(copies(b"a\nb\nb\n", b"b\n", 2), vec![4]);
        assert_eq!(copies(b"b\na\nb\n", b"b\n", 4), vec![0]);
        // Overlapping the expected one, after it.
        assert_eq!(copies(b"z\nz\nz\n", b"z\nz\n", 0), vec![2]);
        // Inside a longer line.
        assert_eq!(copies(b"zz\nz\nx\nz\nz\n", b"z\nz\n", 7), vec![1]);
        assert_eq!(copies(b"x\nz\nz\n", b"z\nz\n", 2), Vec::<usize>::new());
    }

    #[test]
    fn an_anchor_printed_twice_is_refused_only_if_the_shift_explains_the_rest() {
        // A 40-line block printed over and over, the last copy holding
        // the anchor: the delta holds whole copies 40 and 80 rows up, and
        // the rows it fetched repeat every 40 rows. Shifting the stored
        // text by 40 rows is no explanation when the oldest rows differ
        // from the rows 40 further down: the delta holds.
        let text = |r: usize| match r {
            850..=979 => format!("e{}", (r - 850) % 40),
            _ => format!("u{r}"),
        };
        let old = rows_of(980, &lines(text, 990));
        let more = rows_of(
            985,
            &lines(|r| if r < 990 { text(r) } else { format!("n{r}") }, 995),
        );
        assert_eq!(
            delta_against(old, &more, 100_000).unwrap().bytes,
            more.bytes
        );
        // When the oldest rows repeat every 40 rows too, it could be one.
        let periodic = |r: usize| match r {
            0..=99 => format!("p{}", r % 40),
            _ => text(r),
        };
        let old = rows_of(980, &lines(periodic, 990));
        let more = rows_of(
            985,
            &lines(
                |r| {
                    if r < 990 {
                        periodic(r)
                    } else {
                        format!("n{r}")
                    }
                },
                995,
            ),
        );
        assert!(delta_against(old, &more, 100_000).is_none());
    }

    #[test]
    fn rows_above_the_anchor_are_compared_up_to_the_first_stored_line() {
        let old = rows_of(8, &lines(|r| format!("r{r}"), 10));
        // Fetched from row 2: lines 3..6 compared (the first fetched line
        // may be cut), line 2 and above kept unseen.
        let new = PaneText::from_capture(&captured(&old, 2, 10)).unwrap();
        assert_eq!(verified_above(&old, 6, &new, 4), Some(3));
        // Fetched from the first stored row: every line compared.
        let new = PaneText::from_capture(&captured(&old, 0, 10)).unwrap();
        assert_eq!(verified_above(&old, 6, &new, 6), Some(0));
        let changed = rows_of(8, &lines(|r| format!("r{}", r.min(4)), 10));
        let new = PaneText::from_capture(&captured(&changed, 0, 10)).unwrap();
        assert_eq!(verified_above(&old, 6, &new, 6), None);
    }

    #[test]
    fn trims_are_told_apart_only_by_rows_that_differ() {
        // Rows repeating every 3: a trim of 3 or 6 looks like none.
        let periodic = rows_of(40, &lines(|r| format!("p{}", r % 3), 45));
        let top = PaneText::from_capture(&captured(&periodic, 0, 8)).unwrap();
        let end = periodic.rows[periodic.history_complete()];
        assert!(consistent_at_shift(&periodic, end, &[&top], 3));
        assert!(!consistent_at_shift(&periodic, end, &[&top], 2));
        assert!(!consistent_at_shift(&periodic, end, &[&top], 4));
        assert!(trim_could_explain(
            &periodic,
            periodic.history_complete(),
            &[&top],
            3
        ));
        // Several trims of 4 make 12.
        assert!(trim_could_explain(
            &periodic,
            periodic.history_complete(),
            &[&top],
            4
        ));
        // A shift past every stored row compares nothing: no evidence.
        assert!(!consistent_at_shift(&periodic, end, &[&top], 60));
        let unique = rows_of(40, &lines(|r| format!("u{r}"), 45));
        let top = PaneText::from_capture(&captured(&unique, 0, 8)).unwrap();
        assert!(!trim_could_explain(
            &unique,
            unique.history_complete(),
            &[&top],
            1
        ));
    }

    #[test]
    fn eviction_drops_the_least_recently_used() {
        let cache = PaneCache::new(1_000);
        let stored = PaneText::from_capture(&text(3, -3, &[b'x'; 300])).unwrap();
        let key = |n| EntryKey {
            socket: PathBuf::from("/s"),
            pane: PaneId::from_number(n),
            join_wrapped: false,
            escapes: false,
        };
        cache.store(key(1), print(3, 10), 0, stored.clone());
        cache.store(key(2), print(3, 10), 0, stored.clone());
        assert_eq!(cache.len(), 1);
        assert!(cache.memory_bytes() <= 1_000);
        assert_eq!(cache.stats().evicted, 1);
        let state = cache.state.lock().unwrap();
        assert!(state.entries.contains_key(&key(2)));
    }

    #[test]
    fn activity_rows_parse() {
        let (pane, a) = parse_activity("%3 1700000000 99 1699999999").unwrap();
        assert_eq!(pane, PaneId::from_number(3));
        assert_eq!(a.window_activity, 1_700_000_000);
        assert_eq!(a.server_pid, "99");
        assert!(parse_activity("%3 x").is_none());
        assert!(parse_activity("%3 x 1 2").is_none());
    }
}
