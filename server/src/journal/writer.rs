//! The daemon's journal thread: follows every pane of a tmux server, reads
//! the lines each added to its history through the pane cache's delta
//! captures (only new rows cost tmux work), redacts them and appends them
//! to the journal once a second.
//!
//! It follows what every pane printed, counted ([`super::printed`]: from
//! the command ledger's session feeds in the daemon, else from its own
//! event stream) and reads a pane when it is due ([`super::pace`]): about a second after its last
//! read, or at once when what it printed nears a quarter of its
//! history-limit, and those due soon with it, in one listing. A structure
//! event, or a reader waiting for the journal ([`Views::ask_flush`]),
//! makes a read too, and a pane the ledger asks for ([`Views::ask_read`])
//! is read at the next wake, printed or not; so does every wake after a listing that failed (a
//! server not running yet, or gone: it is read once it answers, and
//! subscribed to anew, since the event stream's client went with it).
//! Must hold: records are flushed whole and synced at
//! most [`FLUSH_EVERY`] after they were taken; `synced` never passes a
//! pane that printed and was not read since; a write that fails (disk
//! full) pauses the journal and the next write that succeeds starts with
//! a gap over the pause.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::frame::{Gap, Line, Origin, Records};
use super::pace::{Pacer, Position, Shape};
use super::printed::Source;
use super::segment::{self, Appender, Read};
use super::track::{Row, Snapshot, Step, Track, TAIL};
use super::view::{PaneView, Views};
use super::{dir, when, JournalConfig};
use crate::cache::PaneCache;
use crate::tmux::events::Printed;
use crate::tmux::feed_counts::FeedCounts;
use crate::tmux::{
    CaptureOptions, CaptureRange, CaptureRequest, CapturedText, Fields, Inventory, Pane, PaneId,
    ServerSpec, Tmux, TmuxCommand, TmuxError,
};

/// The thread looks at least this often whether a pane fell due (and
/// whether it must stop).
pub const READ_EVERY: Duration = Duration::from_millis(500);
/// Records are written and synced this long after they were taken at most:
/// what a crash may lose.
pub const FLUSH_EVERY: Duration = Duration::from_secs(1);
/// Frames are written this far apart at least (a read's lines are written
/// right after it otherwise): about one frame per paced read, not one per
/// read of a pane printing flat out.
const FLUSH_SOONEST: Duration = Duration::from_millis(250);
/// Output wakes the writer at most this often while its wakes read
/// nothing: each wake weighs every waiting pane's count, and 200 panes
/// printing woke it thousands of times a second. A pane whose count
/// reached its share of history-limit ([`super::pace::SAFE_SHARE`]) waits
/// this much longer at most for its read.
const WAKE_SPACING: Duration = Duration::from_millis(20);
/// A flush this large is written at once.
const FLUSH_BYTES: usize = 4 << 20;
/// How often the bounds are enforced.
const BOUNDS_EVERY: Duration = Duration::from_secs(60);
/// One read's tmux round trips end by then.
const READ_TIMEOUT: Duration = Duration::from_secs(10);
/// Rows a partial read reaches above what its count says at least: the
/// count is taken before the capture (and a tap's trails tmux by what
/// its pipe holds), so rows printed meanwhile push the tail up; a read
/// that misses its tail captures the whole history again.
const RACE_ROWS_LEAST: u64 = 32;

/// The rows a partial read adds to `printed` for output racing it: a
/// quarter more (a pane printing fast prints more meanwhile), and
/// [`RACE_ROWS_LEAST`] at least.
fn race_rows(printed: u64) -> u64 {
    (printed / 4).max(RACE_ROWS_LEAST)
}

/// Segments read back at start to find where each pane left off.
const RESUME_SEGMENTS: usize = 4;

/// A running journal; stop it to flush and end the thread.
#[derive(Debug)]
pub struct Handle {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
    views: Arc<Views>,
}

impl Handle {
    /// What the writer last saw of each pane (for the command ledger).
    pub fn views(&self) -> Arc<Views> {
        self.views.clone()
    }

    /// Flushes what was taken and ends the thread.
    pub fn stop(mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Which pane: the server (`pid start_time`) and the pane id.
type Key = (String, PaneId);

/// Where each pane left off in an earlier run: by (server, pane) as the
/// journal names them, its last lines and when the journal last wrote.
type Resumed = HashMap<(String, String), (Vec<Vec<u8>>, i64)>;

/// The writer's state, owned by its thread.
struct Writer {
    config: JournalConfig,
    tmux: Tmux,
    cache: Arc<PaneCache>,
    appender: Appender,
    tracks: HashMap<Key, (Track, Origin)>,
    /// Tails read back from the journal, for panes not seen yet.
    resumed: Resumed,
    pending: Records,
    taken_since: Option<Instant>,
    /// Writes fail since then (ms): the records are dropped.
    paused_since: Option<i64>,
    /// Lines dropped while paused.
    dropped: u64,
    views: Arc<Views>,
    /// When the last listing was asked (ms): the reads' time.
    listed_ms: i64,
    /// When records were last written.
    flushed_at: Instant,
    /// The session feeds' counts, if they count for the writer.
    feeds: Option<Arc<FeedCounts>>,
}

/// Checks the directory, opens the journal (a torn tail cut and reported
/// on stderr) and starts following `spec`'s server, counting each pane's
/// output on its own event stream.
pub fn start(
    config: JournalConfig,
    spec: &ServerSpec,
    cache: Option<Arc<PaneCache>>,
) -> Result<Handle, String> {
    start_counted(config, spec, cache, None)
}

/// [`start`], with each pane's output counted by session feeds
/// (`feeds`, which the command ledger's feeds fill) when given: the
/// writer's own event stream then takes no output.
pub fn start_counted(
    config: JournalConfig,
    spec: &ServerSpec,
    cache: Option<Arc<PaneCache>>,
    feeds: Option<Arc<FeedCounts>>,
) -> Result<Handle, String> {
    dir::ensure(&config.dir)?;
    let (appender, notes) = Appender::open(&config.dir)
        .map_err(|e| format!("cannot open the journal in {}: {e}", config.dir.display()))?;
    for note in notes {
        eprintln!("panescan journal: {note}");
    }
    let resumed = resume(&config.dir);
    let tmux = Tmux::shared(spec).map_err(|e| e.to_string())?;
    let cache = cache.unwrap_or_else(|| Arc::new(PaneCache::new(crate::cache::DEFAULT_MAX_BYTES)));
    let stop = Arc::new(AtomicBool::new(false));
    let views = Arc::new(Views::default());
    let mut writer = Writer {
        views: views.clone(),
        config,
        tmux,
        cache,
        appender,
        tracks: HashMap::new(),
        resumed,
        pending: Records::default(),
        taken_since: None,
        paused_since: None,
        dropped: 0,
        listed_ms: 0,
        flushed_at: Instant::now(),
        feeds,
    };
    let flag = stop.clone();
    let thread = std::thread::Builder::new()
        .name("journal".into())
        .spawn(move || writer.run(&flag))
        .map_err(|e| format!("cannot start the journal thread: {e}"))?;
    Ok(Handle {
        stop,
        thread: Some(thread),
        views,
    })
}

impl Writer {
    fn run(&mut self, stop: &AtomicBool) {
        let mut events = Source::start(
            &self.tmux,
            self.feeds.clone(),
            Instant::now() + READ_TIMEOUT,
        );
        let mut pacer = Pacer::with_pace(if self.config.taps {
            super::pace::TAPPED_PACE
        } else {
            super::pace::PACE
        });
        let mut bounds_at = Instant::now();
        // The first read takes every pane.
        let mut shape_changed = true;
        let mut failed = false;
        let (mut woke_at, mut read_last) = (Instant::now(), true);
        while !stop.load(Ordering::SeqCst) {
            let now = when::now_ms();
            let wake = match pacer.next_due() {
                // tmux did not answer the last read: not again at once.
                _ if failed => READ_EVERY,
                Some(at) => Duration::from_millis(u64::try_from(at - now).unwrap_or(0)),
                None => READ_EVERY,
            };
            // Records held back by the spacing are written once it passed.
            let wake = match self.taken_since {
                Some(taken) => {
                    let left = |since: Instant| FLUSH_SOONEST.saturating_sub(since.elapsed());
                    wake.min(left(taken).max(left(self.flushed_at)))
                }
                None => wake,
            };
            // Wake at the first event (or when a pane falls due), then
            // take what else is waiting; not sooner than WAKE_SPACING after
            // a wake that read nothing.
            let wake = wake.min(READ_EVERY);
            let until = Instant::now() + wake;
            if !read_last {
                std::thread::sleep(WAKE_SPACING.saturating_sub(woke_at.elapsed()).min(wake));
            }
            shape_changed |= events.wait(&mut pacer, until);
            woke_at = Instant::now();
            let asked = self.views.take_flush();
            let waiting = events.printed_many(&pacer.waiting());
            let mut due = pacer.due(&waiting, when::now_ms(), asked);
            // Panes the ledger waits on (a prompt's row), printed or not.
            for pane in self.views.take_reads() {
                if !due.contains(&pane) {
                    due.push(pane);
                }
            }
            let mut read = false;
            // Counted panes never reported since their read are looked at
            // by a listing now and then (their counts may come late).
            let check = pacer.check_due(self.listed_ms, when::now_ms());
            // A read that failed (no server yet, or gone: a server started
            // later has no events to wake this) is tried again each wake.
            if shape_changed || asked || failed || check || !due.is_empty() {
                shape_changed = false;
                read = self.read_once(&events, &mut pacer, &due);
                if failed && read {
                    // The server answers (at last, or again): subscribing
                    // anew puts the event stream on its control client
                    // (none was there to take it, or it went with the
                    // server); what printed meanwhile is read as lost.
                    events = Source::start(
                        &self.tmux,
                        self.feeds.clone(),
                        Instant::now() + READ_TIMEOUT,
                    );
                    pacer.lost(when::now_ms());
                }
                failed = !read;
            }
            read_last = read;
            // A read's lines are written at once, but frames no closer than
            // FLUSH_SOONEST (panes printing flat out are read back to back).
            let taken = self.taken_since.map(|t| t.elapsed());
            let spaced = self.flushed_at.elapsed() >= FLUSH_SOONEST;
            let flush_due =
                taken.is_some_and(|t| t >= FLUSH_EVERY || ((read || t >= FLUSH_SOONEST) && spaced));
            if flush_due || self.pending.raw_len() >= FLUSH_BYTES || asked {
                self.flush();
            }
            if self.pending.is_empty() && self.paused_since.is_none() {
                self.views.synced(pacer.complete_until(self.listed_ms));
            }
            if bounds_at.elapsed() >= BOUNDS_EVERY {
                bounds_at = Instant::now();
                self.enforce_bounds();
            }
        }
        // Every pane is read once more before the last flush (a trigger may
        // still wait in the channel): stopping loses nothing tmux shows.
        let every = pacer.known();
        if !every.is_empty() {
            self.read_once(&events, &mut pacer, &every);
        }
        self.flush();
    }

    /// Lists every pane, captures through the cache those `due` and those
    /// never read, and takes in what is new; panes gone are closed. Whether
    /// the listing answered.
    fn read_once(&mut self, events: &Source, pacer: &mut Pacer, due: &[PaneId]) -> bool {
        let deadline = Instant::now() + READ_TIMEOUT;
        let listed_ms = when::now_ms();
        let then = [TmuxCommand::new("display-message")
            .flag("-p")
            .format_arg("#{pid} #{start_time}")];
        let (inventory, stamp) =
            match self
                .tmux
                .inventory(Fields::SearchWithFingerprint, &then, deadline)
            {
                Ok((inv, mut extra)) => (inv, extra.pop().and_then(Result::ok).unwrap_or_default()),
                Err(TmuxError::NoServer { .. }) => {
                    self.close_gone(&HashSet::new());
                    return false;
                }
                Err(_) => return false,
            };
        let server = stamp.trim().to_owned();
        if server.is_empty() {
            // Without the server's identity a pane cannot be told from
            // another server's pane of the same id: read again later.
            return false;
        }
        // Counts taken after the listing may lag what the captures show
        // (a feed's bytes come on another client): they then count rows
        // the read took already, never fewer.
        self.listed_ms = listed_ms;
        pacer.cover(events.covered(&inventory));
        let due: HashSet<PaneId> = due.iter().copied().collect();
        let wanted: Vec<usize> = (0..inventory.panes.len())
            .filter(|&i| {
                let pane = &inventory.panes[i];
                due.contains(&pane.pane_id)
                    || !pacer.knows(pane.pane_id)
                    || pacer.moved_unseen(pane.pane_id, position(pane), listed_ms)
            })
            .collect();
        let ids: Vec<PaneId> = wanted.iter().map(|&i| inventory.panes[i].pane_id).collect();
        if !ids.is_empty() {
            self.capture(
                events,
                pacer,
                (&inventory, &stamp),
                &wanted,
                &ids,
                listed_ms,
            );
        }
        let live: HashSet<Key> = inventory
            .panes
            .iter()
            .map(|p| (server.clone(), p.pane_id))
            .collect();
        self.close_gone(&live);
        self.views.retain(|p| live.contains(&(server.clone(), *p)));
        pacer.retain(|p| live.contains(&(server.clone(), *p)));
        events.forget(|p| live.contains(&(server.clone(), *p)));
        true
    }

    /// Captures the listed panes at `wanted` through the cache and takes
    /// each in; the pacer learns of each read. A pane whose printed rows
    /// are counted is captured from its tail down only; if its tail is not
    /// found there, it is captured whole.
    fn capture(
        &mut self,
        events: &Source,
        pacer: &mut Pacer,
        listed: (&Inventory, &str),
        wanted: &[usize],
        ids: &[PaneId],
        listed_ms: i64,
    ) {
        let counted: HashMap<PaneId, Printed> = events.printed_many(ids).into_iter().collect();
        let server = listed.1.trim();
        let ranges: Vec<CaptureRange> = wanted
            .iter()
            .filter_map(|&i| listed.0.panes.get(i))
            .map(|pane| self.range_for(server, pane, pacer, counted.get(&pane.pane_id)))
            .collect();
        // A trim since the last read moved every row the cache keeps of the
        // pane: its delta would be refused after its captures, and the pane
        // captured again by a client of its own, one pane after another.
        let trimmed: Vec<PaneId> = ids
            .iter()
            .filter(|p| {
                counted
                    .get(p)
                    .is_some_and(|c| pacer.may_have_trimmed(**p, c))
            })
            .copied()
            .collect();
        self.cache.forget(self.tmux.socket_path(), &trimmed);
        let read = (&counted, listed_ms);
        let whole = self.capture_ranges(pacer, listed, wanted, &ranges, read);
        if !whole.is_empty() {
            let ranges = vec![CaptureRange::AllHistory; whole.len()];
            self.capture_ranges(pacer, listed, &whole, &ranges, read);
        }
    }

    /// What a read of `pane` captures: the rows it printed since its last
    /// read (counted, an upper bound) and those printed racing the read
    /// ([`race_rows`]) above the screen, plus the rows of its tail and a
    /// screen's worth for a line cut at the top; its whole
    /// history when either is unknown.
    fn range_for(
        &self,
        server: &str,
        pane: &Pane,
        pacer: &Pacer,
        count: Option<&Printed>,
    ) -> CaptureRange {
        let key = (server.to_owned(), pane.pane_id);
        let tail = self.tracks.get(&key).and_then(|(t, _)| t.tail_rows());
        let printed = count.and_then(|c| pacer.rows_since_read(pane.pane_id, c));
        let rows = match (tail, printed) {
            (Some(tail), Some(printed)) => {
                printed + race_rows(printed) + tail + u64::from(pane.pane_height.max(1))
            }
            _ => return CaptureRange::AllHistory,
        };
        // Reaching back past the top of history is the whole of it: asked
        // as such (a range tmux clamps would number its lines from where
        // it was asked to start).
        if rows >= pane.history_size {
            return CaptureRange::AllHistory;
        }
        CaptureRange::Scrollback(rows)
    }

    /// Captures the listed panes at `wanted`, each its range, and takes
    /// each in. The panes (indices) a partial capture could not place,
    /// to be captured whole.
    fn capture_ranges(
        &mut self,
        pacer: &mut Pacer,
        (inventory, stamp): (&Inventory, &str),
        wanted: &[usize],
        ranges: &[CaptureRange],
        (counted, listed_ms): (&HashMap<PaneId, Printed>, i64),
    ) -> Vec<usize> {
        let deadline = Instant::now() + READ_TIMEOUT;
        let server = stamp.trim();
        let requests: Vec<CaptureRequest> = wanted
            .iter()
            .zip(ranges)
            .filter_map(|(&i, range)| {
                let pane = inventory.panes.get(i)?.pane_id;
                Some(CaptureRequest {
                    pane,
                    range: *range,
                })
            })
            .collect();
        let options = CaptureOptions {
            join_wrapped: true,
            escapes: false,
        };
        let replies = self.cache.capture_listed(
            &self.tmux,
            inventory,
            stamp,
            requests,
            options,
            deadline,
            Arc::new(AtomicBool::new(false)),
            None,
        );
        let now = when::now_ms();
        let mut whole = Vec::new();
        for reply in replies {
            let Some((&i, pane)) = wanted
                .get(reply.index)
                .and_then(|i| Some((i, inventory.panes.get(*i)?)))
            else {
                continue;
            };
            let Ok(text) = reply.result else { continue };
            let partial = ranges.get(reply.index) != Some(&CaptureRange::AllHistory);
            if !self.take(server, pane, &text, now, partial) {
                whole.push(i);
                continue;
            }
            let shape = Shape {
                width: text.pane_width,
                height: text.pane_height,
                history_limit: pane.history_limit,
                alternate_on: pane.alternate_on,
                position: position(pane),
            };
            let count = counted.get(&pane.pane_id).copied().unwrap_or_default();
            pacer.read(pane.pane_id, listed_ms, count, shape);
        }
        whole
    }

    /// Takes in one pane's capture; a `partial` one (not all history)
    /// only if it places the pane's tail without a gap: whether taken.
    fn take(
        &mut self,
        server: &str,
        pane: &Pane,
        text: &CapturedText,
        now: i64,
        partial: bool,
    ) -> bool {
        let key = (server.to_owned(), pane.pane_id);
        let origin = origin_of(server, self.tmux.socket_path(), pane);
        let resumed = &mut self.resumed;
        let (track, kept_origin) = self.tracks.entry(key).or_insert_with(|| {
            let track = match resumed.remove(&(origin.server.clone(), origin.pane.clone())) {
                Some((tail, last_ms)) => Track::resumed(tail, last_ms),
                None => Track::default(),
            };
            (track, origin.clone())
        });
        *kept_origin = origin;
        let snap = snapshot(text, pane.alternate_on, pane.history_limit);
        let step = if partial {
            // A gap may only say the capture began too low: the whole
            // history tells.
            let mut trial = track.clone();
            let step = trial.advance(&snap, now);
            if !step.gaps.is_empty() {
                return false;
            }
            *track = trial;
            step
        } else {
            track.advance(&snap, now)
        };
        if !snap.alternate_on {
            let screen = snap.screen_rows.iter().map(|&r| track.steady(r));
            self.views.set(
                pane.pane_id,
                PaneView {
                    server: kept_origin.server.clone(),
                    read_ms: now,
                    base: track.steady(0),
                    history_size: text.history_size,
                    screen: screen.zip(snap.screen.iter().cloned()).collect(),
                },
            );
        }
        let origin = kept_origin.clone();
        self.record(&origin, step);
        true
    }

    /// Panes no longer listed: the screen each showed last is journaled
    /// (it can be read nowhere else now), then the pane is forgotten.
    fn close_gone(&mut self, live: &HashSet<Key>) {
        let gone: Vec<Key> = self
            .tracks
            .keys()
            .filter(|k| !live.contains(*k))
            .cloned()
            .collect();
        let now = when::now_ms();
        for key in gone {
            if let Some((track, origin)) = self.tracks.remove(&key) {
                let lines = track.last_screen().into_iter().map(|l| (l, now)).collect();
                let step = Step {
                    lines,
                    gaps: Vec::new(),
                    rows: Vec::new(),
                };
                self.record(&origin, step);
            }
        }
    }

    /// Adds a step's lines (redacted unless the operator keeps secrets)
    /// and gaps to the records not yet written.
    fn record(&mut self, origin: &Origin, step: Step) {
        if step.lines.is_empty() && step.gaps.is_empty() {
            return;
        }
        let o = self.pending.origin(origin);
        let texts = if self.config.keep_secrets {
            step.lines.iter().map(|(t, _)| t.clone()).collect()
        } else {
            redacted(&step.lines)
        };
        for (i, ((_, time_ms), text)) in step.lines.iter().zip(texts).enumerate() {
            self.pending.lines.push(Line {
                origin: o,
                time_ms: *time_ms,
                text,
            });
            // A line without a row (a closed pane's last screen) is epoch 0.
            let row = step.rows.get(i).copied().unwrap_or(Row::default());
            self.pending.rows.push(row);
        }
        for (from_ms, to_ms, reason) in step.gaps {
            self.pending.gaps.push(Gap {
                origin: o,
                from_ms,
                to_ms,
                reason,
            });
        }
        self.taken_since.get_or_insert_with(Instant::now);
    }

    /// Writes the records taken so far as one frame. A failed write drops
    /// them and pauses the journal: the first write after it carries a gap
    /// over every pane for the pause.
    fn flush(&mut self) {
        self.taken_since = None;
        self.flushed_at = Instant::now();
        if self.pending.is_empty() {
            return;
        }
        let mut records = std::mem::take(&mut self.pending);
        let now = when::now_ms();
        if let Some(since) = self.paused_since {
            let o = records.origin(&every_pane(self.tmux.socket_path()));
            records.gaps.push(Gap {
                origin: o,
                from_ms: since,
                to_ms: now,
                reason: format!(
                    "journal writes failed (disk full?): {} lines not kept",
                    self.dropped
                ),
            });
        }
        match self.appender.append(&records, now) {
            Ok(()) => {
                if self.paused_since.take().is_some() {
                    eprintln!("panescan journal: writing again");
                    self.dropped = 0;
                }
            }
            Err(e) => {
                if self.paused_since.is_none() {
                    eprintln!(
                        "panescan journal: cannot write ({e}): journaling paused, searches go on"
                    );
                    let first = records.lines.iter().map(|l| l.time_ms).min();
                    self.paused_since = Some(first.unwrap_or(now));
                }
                self.dropped += records.lines.len() as u64;
            }
        }
    }

    fn enforce_bounds(&self) {
        let removed = segment::enforce_bounds(
            &self.config.dir,
            self.config.max_bytes,
            self.config.max_age_ms,
            when::now_ms(),
            self.appender.current(),
        );
        if let Err(e) = removed {
            eprintln!("panescan journal: cannot remove old segments: {e}");
        }
    }
}

/// What a capture (whole history and screen, wrapped lines joined) shows,
/// as the tracker reads it.
pub fn snapshot(text: &CapturedText, alternate_on: bool, history_limit: u64) -> Snapshot {
    let mut snap = Snapshot {
        width: text.pane_width,
        history_limit,
        alternate_on,
        end_row: text.history_size,
        ..Snapshot::default()
    };
    let lines: Vec<&[u8]> = text
        .bytes
        .split_inclusive(|&b| b == b'\n')
        .map(|l| l.strip_suffix(b"\n").unwrap_or(l))
        .collect();
    let number = |i: usize| match &text.line_numbers {
        Some(numbers) => numbers
            .get(i)
            .copied()
            .unwrap_or_else(|| numbers.last().copied().unwrap_or(text.first_line) + 1),
        None => text.first_line + i as i64,
    };
    let hsize = i64::try_from(text.history_size).unwrap_or(i64::MAX);
    let mut on_screen = false;
    for (i, line) in lines.iter().enumerate() {
        // A line is history's when the next one starts above the screen
        // (row 0) or at it; the last line is always on the screen.
        let next_in_history = i + 1 < lines.len() && number(i + 1) <= 0;
        if !on_screen && number(i) < 0 && next_in_history {
            let row = u64::try_from(number(i) + hsize).unwrap_or(0);
            snap.history.push((row, line.to_vec()));
        } else {
            if !on_screen {
                snap.end_row = u64::try_from(number(i) + hsize).unwrap_or(0);
            }
            on_screen = true;
            snap.screen.push(line.to_vec());
            snap.screen_rows
                .push(u64::try_from(number(i) + hsize).unwrap_or(0));
        }
    }
    snap
}

/// The lines with secrets replaced, redacted together so a private key
/// block across lines is found; one by one if that changed the count.
/// Where a listing shows `pane` (what the pacer compares between reads).
fn position(pane: &Pane) -> Position {
    Position {
        history_size: pane.history_size,
        cursor: (pane.cursor_x, pane.cursor_y),
    }
}

fn redacted(lines: &[(Vec<u8>, i64)]) -> Vec<Vec<u8>> {
    let joined = lines
        .iter()
        .map(|(t, _)| t.as_slice())
        .collect::<Vec<_>>()
        .join(&b'\n');
    let (text, _) = panescan_engine::redact_bytes(&joined);
    let out: Vec<Vec<u8>> = text.split(|&b| b == b'\n').map(<[u8]>::to_vec).collect();
    if out.len() == lines.len() {
        return out;
    }
    lines
        .iter()
        .map(|(t, _)| panescan_engine::redact_bytes(t).0.into_owned())
        .collect()
}

fn origin_of(server: &str, socket: &std::path::Path, pane: &Pane) -> Origin {
    Origin {
        server: format!("{server}@{}", socket.display()),
        pane: pane.pane_id.to_string(),
        session: pane.session_name.clone(),
        window: format!("{}:{}", pane.window_index, pane.window_name),
        title: pane.pane_index.to_string(),
    }
}

/// The origin of a gap over every pane of a server.
fn every_pane(socket: &std::path::Path) -> Origin {
    Origin {
        server: format!("*@{}", socket.display()),
        pane: "*".into(),
        session: String::new(),
        window: String::new(),
        title: String::new(),
    }
}

/// The last lines of every pane in the newest segments, and when the
/// journal last wrote anything: where each pane left off before this run.
fn resume(journal: &std::path::Path) -> Resumed {
    let mut tails = Resumed::new();
    let Ok(segments) = segment::list(journal) else {
        return tails;
    };
    // From the start of the oldest of the newest segments (an hour
    // earlier: a frame's time is its newest record's, about when it was
    // written, and a segment's name is when its first frame was).
    let from = segments
        .get(segments.len().saturating_sub(RESUME_SEGMENTS))
        .map_or(i64::MAX, |s| s.first_ms.saturating_sub(segment::SEGMENT_MS));
    let mut last_ms = i64::MIN;
    let _ = segment::read(journal, from, i64::MAX, &mut |read| {
        if let Read::Frame(d) = read {
            for (i, (o, t)) in d.lines.iter().enumerate() {
                let Some(origin) = d.origins.get(*o) else {
                    continue;
                };
                let tail = &mut tails
                    .entry((origin.server.clone(), origin.pane.clone()))
                    .or_default()
                    .0;
                tail.push(d.line(i).to_vec());
                if tail.len() > 2 * TAIL {
                    tail.drain(..TAIL);
                }
                last_ms = last_ms.max(*t);
            }
        }
        true
    });
    for (_, t) in tails.values_mut() {
        *t = last_ms;
    }
    tails
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use std::os::unix::fs::DirBuilderExt;

    use super::*;
    use crate::testbed::private_server::PrivateServer;
    use crate::tmux::SessionId;

    /// A pane whose output makes nothing due (no line feed: no rows, and
    /// its pace not up) wakes the writer at most once a [`WAKE_SPACING`]
    /// (it woke once for every chunk: a thousand times a second here).
    #[test]
    fn output_that_makes_nothing_due_wakes_the_writer_at_most_once_a_spacing() {
        let server = PrivateServer::start("writer-wakes", 80, 24).unwrap();
        let dir =
            std::env::temp_dir().join(format!("panescan-writer-wakes-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::DirBuilder::new().mode(0o700).create(&dir).unwrap();
        let config = JournalConfig {
            dir: dir.clone(),
            max_bytes: 1 << 30,
            max_age_ms: 1 << 40,
            keep_secrets: true,
            taps: false,
        };
        let counts = Arc::new(FeedCounts::default());
        counts.started(SessionId::from_number(0));
        let spec = ServerSpec::named(server.socket_name());
        let handle = start_counted(config, &spec, None, Some(counts.clone())).unwrap();
        let pane = PaneId::from_number(0);
        // Past the first read (every pane, at once).
        std::thread::sleep(Duration::from_millis(500));
        let (before, start) = (counts.takes(), Instant::now());
        let mut chunks = 0u64;
        while start.elapsed() < Duration::from_secs(1) {
            counts.output(pane, b"x");
            chunks += 1;
            std::thread::sleep(Duration::from_millis(1));
        }
        let (takes, elapsed) = (counts.takes() - before, start.elapsed());
        handle.stop();
        let _ = std::fs::remove_dir_all(&dir);
        // One take a spacing, a few more around the pace's read.
        let spacings = elapsed.as_millis() / WAKE_SPACING.as_millis();
        let bound = u64::try_from(spacings).unwrap() + 10;
        assert!(takes > 0, "never woken by {chunks} chunks");
        assert!(
            takes <= bound,
            "{takes} takes of {chunks} chunks in {elapsed:?}"
        );
    }
}
