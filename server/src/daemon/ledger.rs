//! The command ledger's follower: a journaling daemon's thread that reads
//! every pane's raw output for OSC 133 marks ([`MarkScanner`]) and records
//! each command in the ledger (`journal/ledger.rs`).
//!
//! Every session of the server has a feed of its own ([`SessionFeed`]: a
//! control client attached to it, since tmux sends a client the output of
//! its own session's panes only), listed at start, on every
//! `%sessions-changed` and every [`SESSIONS_EVERY`]; a pane in several
//! sessions is read from the first feed that brought its bytes. The feeds
//! count each pane's output for the journal's pacing. With
//! `--journal-taps` a pane's bytes come from a pipe of its own instead
//! ([`super::ledger_taps`]).
//!
//! At a prompt (A, then B) the pane stands still: its row is asked of tmux
//! (`history_size + cursor_y`, with the directory and session) on the feed
//! that brought the mark, whose reply follows every `%output` queued
//! before it, so bytes seen before the reply say the row moved on (typed
//! ahead: not exact, and the command says so); a pipe has no such order,
//! so a tapped pane's row is exact only if no line feed came from it until
//! [`TAP_SETTLE_MS`] after the answer. The row goes on the journal's
//! steady scale with the writer's next view of the pane. A command's
//! output is the rows after its command line up to the next prompt's first
//! row, counted once both rows are placed and the journal holds them.
//!
//! Forged marks: C counts only at a prompt; a D counts while a command
//! runs, and a later D before the next C (after output, not an empty
//! Enter) replaces it, the last one counting. Must hold: no byte from a
//! pane panics the follower; a closed feed ends what ran in its panes
//! with a note; an ended command is counted or its record says why not (a
//! row never placed, two epochs, [`MAX_COUNTS`] waiting): never silently.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::journal::ledger::{self as book, Book, Command, Span};
use crate::journal::track::Row;
use crate::journal::view::Views;
use crate::journal::{when, JournalConfig};
use crate::tmux::feed::{FeedEvent, SessionFeed};
use crate::tmux::feed_counts::FeedCounts;
use crate::tmux::{PaneId, ServerSpec, SessionId, Tmux, TmuxCommand, TmuxError};
use crate::tools::run::detect::{LineEnd, Mark, MarkScanner};

use super::ledger_reports::{self, Reports};
use super::ledger_taps::{Switch, Taps};

/// Prompts kept whose rows may still come (a command that ends before
/// the journal read its pane again).
const EARLIER_PROMPTS: usize = 8;
/// One tmux round trip at most.
const ROUND_TRIP: Duration = Duration::from_secs(5);
/// Longest OSC 133 mark read (a C mark may carry its command line).
const MAX_MARK: usize = 8192;
/// A prompt row not placed on the steady scale by then is given up.
const PLACE_WITHIN_MS: i64 = 10_000;
/// How often the sessions are listed, besides at every
/// `%sessions-changed` a feed reads (a server whose sessions are all
/// gone, or not followed yet, sends none).
const SESSIONS_EVERY: Duration = Duration::from_secs(2);
/// How often bounds are enforced.
const BOUNDS_EVERY: Duration = Duration::from_secs(60);
/// An ended command's rows are placed within this of the prompt that ends
/// it, or never: a row is asked within a round trip ([`ROUND_TRIP`]) of its
/// prompt mark and given up [`PLACE_WITHIN_MS`] after tmux answered; a
/// question tmux never answered places nothing and says nothing.
const ROWS_WITHIN_MS: i64 = PLACE_WITHIN_MS + 10_000;
/// Ended commands waiting at once for their rows or their count, at most:
/// past it the oldest is given up, and its record says so.
const MAX_COUNTS: usize = 256;
/// A tapped pane's prompt row is exact when no line feed came from its
/// pipe after the mark until this long after tmux answered (ms): what
/// tmux parsed before answering reaches the pipe within it (a write, and
/// the pipe's `cat`).
const TAP_SETTLE_MS: i64 = 50;

/// The running follower.
#[derive(Debug)]
pub struct Handle {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Handle {
    /// Ends the thread (what it recorded is on disk).
    pub fn stop(mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Starts following `spec`'s server into the ledger of `config.dir`; the
/// feeds count each pane's output into `counts` if given.
pub fn start(
    config: &JournalConfig,
    spec: &ServerSpec,
    views: Arc<Views>,
    counts: Option<Arc<FeedCounts>>,
) -> Result<Handle, String> {
    let (book, notes) = Book::open(&config.dir).map_err(|e| {
        format!(
            "cannot open the command ledger in {}: {e}",
            config.dir.display()
        )
    })?;
    for note in notes {
        eprintln!("panescan ledger: {note}");
    }
    let tmux = Tmux::shared(spec).map_err(|e| e.to_string())?;
    let reports = Reports::probe(&tmux, Instant::now() + ROUND_TRIP);
    let mut follower = Follower::new(config, tmux, views, book, reports, counts);
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    let thread = std::thread::Builder::new()
        .name("ledger".into())
        .spawn(move || follower.run(&flag))
        .map_err(|e| format!("cannot start the ledger thread: {e}"))?;
    Ok(Handle {
        stop,
        thread: Some(thread),
    })
}

/// Where a pane stands between marks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Phase {
    /// Nothing seen yet (the daemon started while a command ran).
    #[default]
    Unknown,
    /// At a prompt: A (and B) seen, no C.
    Prompt,
    /// C seen: a command runs.
    Running,
    /// Its D seen; the next prompt ends its output.
    Ended,
}

/// One prompt: its row once placed.
#[derive(Clone, Debug, Default)]
struct Prompt {
    serial: u64,
    /// The command line's row on the steady scale, and whether exact.
    row: Option<(Row, bool)>,
    /// Line feeds from A to B (the prompt's upper lines).
    height: u32,
    session: String,
    cwd: Option<String>,
    /// The command whose output this prompt ends.
    ends: Option<String>,
    /// The command started at this prompt, and the line feeds from the
    /// row asked to its output.
    starts: Option<(String, u32)>,
    /// The row was asked at B (else at A).
    at_b: bool,
}

#[derive(Debug)]
struct PaneState {
    scanner: MarkScanner,
    phase: Phase,
    /// The typed line's text, rendered from B.
    line: LineEnd,
    typed: Option<String>,
    seen_b: bool,
    lf_since_a: u32,
    lf_since_b: u32,
    prompt: Prompt,
    /// Earlier prompts whose rows may still be placed (newest last).
    earlier: VecDeque<Prompt>,
    serials: u64,
    /// The command running or last ended here (until the next C).
    current: Option<String>,
    /// A prompt mark came in this chunk: ask the row after it.
    ask_after: Option<usize>,
    /// The directory the shell last reported by OSC 7.
    reported_cwd: Option<String>,
    /// Line feeds read from the pane's pipe (with taps).
    tap_lf: u64,
}

impl Default for PaneState {
    fn default() -> Self {
        PaneState {
            scanner: MarkScanner::new(MAX_MARK).with_cwd(),
            phase: Phase::Unknown,
            line: LineEnd::default(),
            typed: None,
            seen_b: false,
            lf_since_a: 0,
            lf_since_b: 0,
            prompt: Prompt::default(),
            earlier: VecDeque::new(),
            serials: 0,
            current: None,
            ask_after: None,
            reported_cwd: None,
            tap_lf: 0,
        }
    }
}

/// An ended command whose output is still to be counted.
#[derive(Debug)]
struct Count {
    id: String,
    /// The row the prompt after it starts at, once placed.
    end: Option<Row>,
    /// When the prompt after it came (its rows are placed within
    /// [`ROWS_WITHIN_MS`] of it, or never).
    prompt_ms: Option<i64>,
    /// Its rows are settled (both placed, or one known never to be): it
    /// is counted once the journal on disk holds every line read by then.
    after_ms: Option<i64>,
}

/// A prompt's row asked of tmux, to be put on the steady scale.
#[derive(Debug)]
struct Place {
    pane: PaneId,
    serial: u64,
    /// `history_size + cursor_y` when tmux answered.
    row: u64,
    history_size: u64,
    asked_ms: i64,
    /// The writer's base before the question.
    before: Option<Row>,
    exact: bool,
    /// A tapped pane's: until when line feeds from its pipe still say the
    /// row moved (ms), and its line feeds at the mark.
    settle: Option<(i64, u64)>,
}

struct Follower {
    config: JournalConfig,
    tmux: Tmux,
    views: Arc<Views>,
    book: Book,
    panes: HashMap<PaneId, PaneState>,
    /// Commands not finished with (running, or ended and not counted).
    open: HashMap<String, Command>,
    places: Vec<Place>,
    /// Ended commands whose output is counted once both prompts around it
    /// are placed and the journal has its lines (oldest first, at most
    /// [`MAX_COUNTS`]).
    counts: VecDeque<Count>,
    backlog: VecDeque<FeedEvent>,
    /// One feed per session of the server.
    feeds: HashMap<SessionId, SessionFeed>,
    /// The feed each pane is read from.
    owner: HashMap<PaneId, SessionId>,
    tx: crossbeam_channel::Sender<FeedEvent>,
    rx: crossbeam_channel::Receiver<FeedEvent>,
    /// tmux's own reports of commands' ends (tmux 3.8), where it has them.
    reports: Reports,
    /// Where the feeds count each pane's output (the journal's pacing).
    feed_counts: Option<Arc<FeedCounts>>,
    /// Each pane's own pipe, with `--journal-taps`.
    taps: Option<Taps>,
}

impl Follower {
    fn new(
        config: &JournalConfig,
        tmux: Tmux,
        views: Arc<Views>,
        book: Book,
        reports: Reports,
        feed_counts: Option<Arc<FeedCounts>>,
    ) -> Follower {
        let (tx, rx) = crossbeam_channel::unbounded();
        let taps = config
            .taps
            .then(|| Taps::new(tx.clone(), feed_counts.clone()));
        Follower {
            config: config.clone(),
            tmux,
            views,
            book,
            panes: HashMap::new(),
            open: HashMap::new(),
            places: Vec::new(),
            counts: VecDeque::new(),
            backlog: VecDeque::new(),
            feeds: HashMap::new(),
            owner: HashMap::new(),
            tx,
            rx,
            reports,
            feed_counts,
            taps,
        }
    }

    fn run(&mut self, stop: &AtomicBool) {
        let mut bounds_at = Instant::now();
        let mut list_sessions = true;
        let mut listed_at = Instant::now();
        let reports = self.reports.receiver();
        let feed_rx = self.rx.clone();
        while !stop.load(Ordering::SeqCst) {
            while let Ok(report) = reports.try_recv() {
                self.reported(report);
            }
            if list_sessions || listed_at.elapsed() >= SESSIONS_EVERY {
                list_sessions = false;
                listed_at = Instant::now();
                self.follow_sessions();
            }
            // Events already queued are taken without a `select!` (its
            // registration on both channels costs more than the event).
            let event = match self.backlog.pop_front() {
                Some(e) => Some(e),
                None => match feed_rx.try_recv() {
                    Ok(e) => Some(e),
                    // Nothing queued: a report of tmux's wakes the loop too.
                    Err(_) => crossbeam_channel::select! {
                        recv(feed_rx) -> e => e.ok(),
                        recv(reports) -> r => {
                            if let Ok(r) = r {
                                self.reported(r);
                            }
                            None
                        }
                        default(self.idle_wait()) => None,
                    },
                },
            };
            if let Some(event) = event {
                list_sessions |= self.handle(event);
            }
            self.place_rows();
            self.count_outputs();
            if bounds_at.elapsed() >= BOUNDS_EVERY {
                bounds_at = Instant::now();
                self.book.enforce_bounds(
                    self.config.max_bytes / 16,
                    self.config.max_age_ms,
                    when::now_ms(),
                );
            }
        }
        if let Some(taps) = self.taps.as_mut() {
            taps.close_all(&self.tmux, Instant::now() + ROUND_TRIP);
        }
    }

    /// How long the loop waits for an event: until the next tapped
    /// prompt's row settles, 100 ms at most.
    fn idle_wait(&self) -> Duration {
        let now = when::now_ms();
        let ms = self
            .places
            .iter()
            .filter_map(|p| p.settle.map(|(until, _)| until - now))
            .fold(100, i64::min);
        Duration::from_millis(u64::try_from(ms).unwrap_or(0))
    }

    /// One event from the feeds or the taps; `true` when the sessions are
    /// to be listed again.
    fn handle(&mut self, event: FeedEvent) -> bool {
        match event {
            FeedEvent::Output {
                session,
                pane,
                data,
            } => {
                if !self.tapped(pane) && self.reads(session, pane) {
                    self.chunk(Some(session), pane, &data);
                }
            }
            // A pipe's bytes before the switch came from the feed.
            FeedEvent::Tapped { pane, data } => {
                if self.tapped(pane) {
                    let feeds = memchr::memchr_iter(b'\n', &data).count();
                    let st = self.pane(pane);
                    st.tap_lf = st.tap_lf.wrapping_add(feeds as u64);
                    self.chunk(None, pane, &data);
                }
            }
            FeedEvent::TapConnected { pane } => self.tap_connected(pane),
            FeedEvent::TapLive { pane } => {
                if let Some(taps) = self.taps.as_mut() {
                    taps.set_live(pane);
                }
            }
            FeedEvent::TapEnded { pane } => self.tap_ended(pane),
            FeedEvent::SessionsChanged => return true,
            FeedEvent::Closed { session } => self.feed_closed(session),
        }
        false
    }

    /// A chunk of `pane`'s output, from `session`'s feed or (`None`) its
    /// pipe: its marks taken, its row asked after a prompt mark.
    fn chunk(&mut self, session: Option<SessionId>, pane: PaneId, data: &[u8]) {
        self.output(pane, data);
        if let Some(from) = self.pane(pane).ask_after.take() {
            let after = data.get(from..).unwrap_or_default().to_vec();
            self.ask_row(session, pane, &after);
        }
    }

    /// Whether `pane`'s bytes come from its pipe.
    fn tapped(&self, pane: PaneId) -> bool {
        self.taps.as_ref().is_some_and(|t| t.live(pane))
    }

    /// Taps the panes of the server not tapped yet (with taps).
    fn follow_taps(&mut self) {
        let Some(taps) = self.taps.as_mut() else {
            return;
        };
        let list = TmuxCommand::new("list-panes")
            .flag("-a")
            .option("-F", "#{pane_id}\t#{session_id}\t#{pane_pipe}");
        let deadline = Instant::now() + ROUND_TRIP;
        let Ok(text) = self.tmux.run(&list, deadline) else {
            return;
        };
        let listed: Vec<(PaneId, SessionId, bool)> = text
            .lines()
            .filter_map(|l| {
                let mut f = l.split('\t');
                let pane = PaneId::parse(f.next()?).ok()?;
                let session = SessionId::parse(f.next()?).ok()?;
                Some((pane, session, f.next()? != "0"))
            })
            .collect();
        taps.follow(&self.tmux, &listed, &self.feeds, deadline);
    }

    /// `pane`'s pipe connected: its output is turned off on the feed it
    /// is read from, and a mark queued behind what came before the
    /// feed's answer switches it to the pipe.
    fn tap_connected(&mut self, pane: PaneId) {
        let Some(taps) = self.taps.as_mut() else {
            return;
        };
        let Some(session) = self
            .owner
            .get(&pane)
            .copied()
            .filter(|s| self.feeds.contains_key(s))
            .or_else(|| taps.session(pane))
        else {
            return;
        };
        let deadline = Instant::now() + ROUND_TRIP;
        match taps.connected(&self.tmux, pane, session, &self.feeds, deadline) {
            Switch::Failed => {}
            Switch::Ordered => {
                self.owner.entry(pane).or_insert(session);
                self.backlog.extend(self.rx.try_iter());
                self.backlog.push_back(FeedEvent::TapLive { pane });
            }
            // What the feed still held is lost: a pane at its prompt stays
            // there, what ran starts over.
            Switch::Unordered => {
                self.owner.entry(pane).or_insert(session);
                if !self.at_prompt(pane) {
                    self.lost(&[pane], Lost::Switch);
                }
            }
        }
    }

    fn at_prompt(&self, pane: PaneId) -> bool {
        self.panes
            .get(&pane)
            .is_some_and(|st| st.phase == Phase::Prompt)
    }

    /// `pane`'s pipe ended: back on its feed. If its bytes came from the
    /// pipe, marks may have been missed in between: a pane at its prompt
    /// stays there (a command typed in that moment goes uncounted, as any
    /// whose C was missed), what ran starts over.
    fn tap_ended(&mut self, pane: PaneId) {
        let Some(taps) = self.taps.as_mut() else {
            return;
        };
        let was_live = taps.ended(&self.tmux, pane, &self.feeds, Instant::now() + ROUND_TRIP);
        if was_live && !self.at_prompt(pane) {
            self.lost(&[pane], Lost::Tap);
        }
    }

    /// A report of tmux's: taken into the command it ends.
    fn reported(&mut self, report: crate::tmux::command_reports::CommandReport) {
        if let Some(id) = self.reports.reported(report, &mut self.open) {
            if let Some(c) = self.open.get(&id).cloned() {
                self.save(&c);
            }
        }
    }

    /// A feed for every session of the server, and none for a session
    /// gone.
    fn follow_sessions(&mut self) {
        let list = TmuxCommand::new("list-sessions").option("-F", "#{session_id}");
        let listed: Vec<SessionId> = match self.tmux.run(&list, Instant::now() + ROUND_TRIP) {
            Ok(text) => text
                .lines()
                .filter_map(|l| SessionId::parse(l.trim()).ok())
                .collect(),
            // No sessions, or no server (yet): nothing to follow.
            Err(TmuxError::NoServer { .. }) => Vec::new(),
            Err(TmuxError::Command(m))
                if m.contains("no sessions") || m.contains("no server running") =>
            {
                Vec::new()
            }
            // A timeout or a lost connection says nothing of the sessions:
            // the feeds stay, the next listing decides.
            Err(_) => return,
        };
        self.feeds.retain(|s, _| listed.contains(s));
        for session in listed {
            if self.feeds.contains_key(&session) {
                continue;
            }
            let counts = self.feed_counts.clone();
            match self.tmux.feed(
                session,
                self.tx.clone(),
                counts,
                Instant::now() + ROUND_TRIP,
            ) {
                Ok(feed) => {
                    self.feeds.insert(session, feed);
                    self.adopt(session);
                }
                // It may have closed since the listing: the next one says.
                Err(e) => eprintln!("panescan ledger: cannot follow session {session}: {e}"),
            }
        }
        self.follow_taps();
    }

    /// The panes of a session just followed whose shells may already sit
    /// at a prompt printed before (a session made a moment ago, or the
    /// daemon started after the shell): each is taken as at a prompt at
    /// its cursor's row, so the first command typed there counts. A pane
    /// that was not at a prompt prints its own A before any C counts.
    fn adopt(&mut self, session: SessionId) {
        let list = TmuxCommand::new("list-panes")
            .flag("-s")
            .option("-t", &session.to_string())
            .option("-F", "#{pane_id}");
        let Some(Ok(text)) = self
            .feeds
            .get(&session)
            .map(|f| f.run(&list, Instant::now() + ROUND_TRIP))
        else {
            return;
        };
        for pane in text.lines().filter_map(|l| PaneId::parse(l.trim()).ok()) {
            if self.owner.contains_key(&pane) {
                continue;
            }
            self.owner.insert(pane, session);
            let st = self.pane(pane);
            if st.phase != Phase::Unknown {
                continue;
            }
            st.phase = Phase::Prompt;
            st.serials += 1;
            st.prompt = Prompt {
                serial: st.serials,
                ..Prompt::default()
            };
            self.ask_row(Some(session), pane, &[]);
        }
    }

    /// Whether output of `pane` from `session`'s feed is read: from the
    /// first live feed that brought the pane's bytes.
    fn reads(&mut self, session: SessionId, pane: PaneId) -> bool {
        match self.owner.get(&pane) {
            Some(s) if *s == session => true,
            Some(s) if self.feeds.contains_key(s) => false,
            _ => {
                self.owner.insert(pane, session);
                true
            }
        }
    }

    /// `session`'s feed closed: its panes start over, what ran in them
    /// says its end was not seen.
    fn feed_closed(&mut self, session: SessionId) {
        self.feeds.remove(&session);
        let panes: Vec<PaneId> = self
            .owner
            .iter()
            .filter(|(_, s)| **s == session)
            .map(|(p, _)| *p)
            .collect();
        for pane in &panes {
            self.owner.remove(pane);
        }
        self.lost(&panes, Lost::Feed);
    }

    fn pane(&mut self, pane: PaneId) -> &mut PaneState {
        self.panes.entry(pane).or_default()
    }

    /// One chunk of a pane's output: the bytes between marks, then each
    /// mark.
    fn output(&mut self, pane: PaneId, data: &[u8]) {
        let marks = self.pane(pane).scanner.feed(data);
        let mut at = 0;
        for (end, mark) in marks {
            let end = end.min(data.len());
            text(self.pane(pane), &data[at..end]);
            at = end;
            self.mark(pane, &mark, end);
        }
        text(self.pane(pane), &data[at..]);
    }

    fn mark(&mut self, pane: PaneId, mark: &Mark, end: usize) {
        let now = when::now_ms();
        match mark.kind {
            b'A' => {
                let st = self.pane(pane);
                let ends = match st.phase {
                    Phase::Ended => st.current.clone(),
                    _ => None,
                };
                st.serials += 1;
                let next = Prompt {
                    serial: st.serials,
                    ends,
                    ..Prompt::default()
                };
                let old = std::mem::replace(&mut st.prompt, next);
                st.earlier.push_back(old);
                if st.earlier.len() > EARLIER_PROMPTS {
                    st.earlier.pop_front();
                }
                st.phase = Phase::Prompt;
                st.lf_since_a = 0;
                st.seen_b = false;
                st.line = LineEnd::default();
                st.typed = None;
                st.ask_after = Some(end);
                self.prompt_came(pane, now);
            }
            b'B' => {
                let st = self.pane(pane);
                st.prompt.height = st.lf_since_a;
                st.prompt.at_b = true;
                st.seen_b = true;
                st.lf_since_b = 0;
                st.line = LineEnd::default();
                st.typed = None;
                st.ask_after = Some(end);
                self.prompt_came(pane, now);
            }
            b'7' => {
                if let Some(path) = file_url_path(&mark.params) {
                    self.pane(pane).reported_cwd = Some(path);
                }
            }
            b'C' => self.started(pane, mark, now),
            b'D' => self.ended(pane, mark.status(), now),
            _ => {}
        }
    }

    /// A C mark: a command starts, if the pane is at a prompt.
    fn started(&mut self, pane: PaneId, mark: &Mark, now: i64) {
        let st = self.pane(pane);
        if st.phase != Phase::Prompt {
            return;
        }
        st.phase = Phase::Running;
        self.reports.started(pane);
        let st = self.pane(pane);
        let from_mark = mark.param("cmdline_url").map(percent_decoded).or_else(|| {
            mark.param("cmdline")
                .map(|c| String::from_utf8_lossy(c).into_owned())
        });
        let typed = from_mark.or_else(|| st.typed.clone().or_else(|| st.line.open_text()));
        let lf = if st.prompt.at_b {
            st.lf_since_b
        } else {
            st.lf_since_a
        };
        let id = crate::sync::nonce()[..16].to_owned();
        st.prompt.starts = Some((id.clone(), lf.max(1)));
        st.current = Some(id.clone());
        let prompt = st.prompt.clone();
        // What the shell says beats where tmux sees its process (wrong
        // over ssh, in a subshell or a container).
        let cwd = st.reported_cwd.clone().or_else(|| prompt.cwd.clone());
        let command = typed
            .map(|t| unwrap_eval(t.trim()))
            .map(|t| self.redacted(&t));
        let mut c = Command {
            command_id: id.clone(),
            server: self.views.get(pane).map(|v| v.server).unwrap_or_default(),
            pane_id: pane.to_string(),
            session: prompt.session.clone(),
            command,
            cwd,
            started_ms: now,
            source: "osc133".into(),
            ..Command::default()
        };
        if let Some((row, exact)) = prompt.row {
            c.output = Some(output_from(row, lf.max(1)));
            if !exact {
                c.notes.push(NOT_EXACT.into());
            }
        }
        self.save(&c);
        self.open.insert(id, c);
    }

    /// A D mark: the running command ended, or (after its output, never
    /// after an empty Enter) a later D replaces its end.
    fn ended(&mut self, pane: PaneId, status: Option<i32>, now: i64) {
        let st = self.pane(pane);
        let counts = match st.phase {
            Phase::Running => true,
            Phase::Ended => true,
            // At a prompt with no C: an empty Enter (nothing typed, one
            // line feed), or a prompt the command printed itself.
            Phase::Prompt => {
                st.typed.as_deref().is_some_and(|t| !t.trim().is_empty()) || st.lf_since_b > 1
            }
            Phase::Unknown => false,
        };
        let again = st.phase != Phase::Running;
        if !counts {
            return;
        }
        st.phase = Phase::Ended;
        let Some(id) = st.current.clone() else { return };
        let Some(mut c) = self.open.remove(&id) else {
            return;
        };
        if again && !c.notes.iter().any(|n| n == ENDED_TWICE) {
            c.notes.push(ENDED_TWICE.into());
        }
        c.ended_ms = Some(now);
        c.exit_status = status;
        c.output_lines = None;
        // An earlier end's row and count are of the earlier output's end.
        if let Some(span) = &mut c.output {
            span.to_row = None;
        }
        self.counts.retain(|k| k.id != id);
        if again {
            // tmux's report is of the first D it parsed, and the marks
            // count the last: a D the command printed fools tmux's report,
            // so the marks' account stands.
            self.reports.superseded(pane);
            c.source = "osc133".into();
        } else {
            self.reports.ended(pane, &mut c);
        }
        self.save(&c);
        self.open.insert(id.clone(), c);
        self.wait_count(id);
    }

    /// `id` ended: its output waits for its rows. Past [`MAX_COUNTS`]
    /// waiting, the oldest is given up with a note and forgotten.
    fn wait_count(&mut self, id: String) {
        self.push_count(Count {
            id,
            end: None,
            prompt_ms: None,
            after_ms: None,
        });
    }

    fn push_count(&mut self, k: Count) {
        self.counts.push_back(k);
        while self.counts.len() > MAX_COUNTS {
            let Some(k) = self.counts.pop_front() else {
                break;
            };
            if let Some(mut c) = self.open.remove(&k.id) {
                let why = format!("more than {MAX_COUNTS} ended commands waited at once for their rows: its output was not counted");
                note(&mut c, &why);
                self.save(&c);
            }
        }
    }

    /// A prompt mark in `pane`: the rows of the command it ends are
    /// placed within [`ROWS_WITHIN_MS`] from now, or never.
    fn prompt_came(&mut self, pane: PaneId, now: i64) {
        let Some(id) = self.pane(pane).prompt.ends.clone() else {
            return;
        };
        if let Some(k) = self.counts.iter_mut().find(|k| k.id == id) {
            k.prompt_ms = Some(now);
        }
    }

    /// Asks tmux where the pane's cursor is (after a prompt mark), and
    /// whether output came after the mark before the answer: on `session`'s
    /// feed (its answer comes after the bytes tmux queued for the feed
    /// before it), or for a tapped pane (`None`) on the server's connection,
    /// the row's exactness settled [`TAP_SETTLE_MS`] after the answer.
    fn ask_row(&mut self, session: Option<SessionId>, pane: PaneId, after: &[u8]) {
        let before = self.views.get(pane).map(|v| v.base);
        let probe = TmuxCommand::new("display-message")
            .flag("-p")
            .target(pane)
            .format_arg(&format!(
                "{}\t#{{history_size}}\t#{{cursor_y}}\t#{{session_name}}\t#{{pane_current_path}}",
                ledger_reports::FORMATS
            ));
        let deadline = Instant::now() + ROUND_TRIP;
        let reply = match session {
            Some(session) => match self.feeds.get(&session) {
                Some(feed) => feed.run(&probe, deadline),
                None => return,
            },
            None => self.tmux.run(&probe, deadline),
        };
        let Ok(reply) = reply else {
            return;
        };
        // Everything tmux queued for this feed before its answer is here
        // (a pipe's bytes may be too).
        let mut moved = after.contains(&b'\n');
        while let Ok(e) = self.rx.try_recv() {
            let from_pane = match &e {
                FeedEvent::Output {
                    session: s,
                    pane: p,
                    data,
                } if Some(*s) == session && *p == pane => Some(data),
                FeedEvent::Tapped { pane: p, data } if session.is_none() && *p == pane => {
                    Some(data)
                }
                _ => None,
            };
            moved |= from_pane.is_some_and(|d| d.contains(&b'\n'));
            self.backlog.push_back(e);
        }
        let settle = session.is_none().then(|| {
            let at_mark = self.pane(pane).tap_lf;
            let since = memchr::memchr_iter(b'\n', after).count() as u64;
            (when::now_ms() + TAP_SETTLE_MS, at_mark.wrapping_sub(since))
        });
        let mut f = reply.trim_end_matches('\n').splitn(8, '\t');
        let told: Vec<&str> = f.by_ref().take(4).collect();
        // tmux 3.8's own account of the command the prompt ends (tmux
        // 3.3a expands these to nothing), for a report its event missed.
        if let Some(r) = ledger_reports::from_formats(pane, &told) {
            self.reported(r);
        }
        let (Some(h), Some(y), Some(session), Some(cwd)) = (f.next(), f.next(), f.next(), f.next())
        else {
            return;
        };
        let (Ok(h), Ok(y)) = (h.parse::<u64>(), y.parse::<u64>()) else {
            return;
        };
        let serial = {
            let st = self.pane(pane);
            st.prompt.session = session.to_owned();
            st.prompt.cwd = (!cwd.is_empty()).then(|| cwd.to_owned());
            st.prompt.serial
        };
        self.places.push(Place {
            pane,
            serial,
            row: h + y,
            history_size: h,
            asked_ms: when::now_ms(),
            before,
            exact: !moved,
            settle,
        });
    }

    /// Puts asked rows on the steady scale once the writer read the pane
    /// after the question.
    fn place_rows(&mut self) {
        let now = when::now_ms();
        let places = std::mem::take(&mut self.places);
        let mut given_up = Vec::new();
        for mut p in places {
            if let Some((until, at_mark)) = p.settle {
                if now < until {
                    self.places.push(p);
                    continue;
                }
                // A line feed from the pipe since the mark: tmux may have
                // parsed it before answering.
                p.exact &= self
                    .panes
                    .get(&p.pane)
                    .is_some_and(|st| st.tap_lf == at_mark);
                p.settle = None;
            }
            let Some(view) = self.views.get(p.pane).filter(|v| v.read_ms > p.asked_ms) else {
                if now - p.asked_ms < PLACE_WITHIN_MS {
                    // The writer may have read the pane before the answer,
                    // and a pane at its prompt prints nothing to make it
                    // read again: asked at each turn, since a read in the
                    // very millisecond of the answer does not count.
                    self.views.ask_read(p.pane);
                    self.places.push(p);
                } else {
                    given_up.push((p.pane, p.serial));
                }
                continue;
            };
            // No trim between the question and the read: the base held, or
            // (first read) the history is as tmux said.
            let held = p
                .before
                .map_or(view.history_size == p.history_size, |b| b == view.base);
            let row = Row {
                epoch: view.base.epoch,
                row: view.base.row + p.row,
            };
            self.placed(p.pane, p.serial, (row, &view.server), p.exact && held);
        }
        for (pane, serial) in given_up {
            // The same prompt asked again (at B) may still be placed.
            if !self
                .places
                .iter()
                .any(|p| p.pane == pane && p.serial == serial)
            {
                self.unplaced(pane, serial);
            }
        }
    }

    /// A prompt's row will never be placed: the commands it starts and
    /// ends are settled uncounted, with a note saying why.
    fn unplaced(&mut self, pane: PaneId, serial: u64) {
        let st = self.pane(pane);
        let prompt = if st.prompt.serial == serial {
            &st.prompt
        } else {
            match st.earlier.iter().find(|p| p.serial == serial) {
                Some(p) => p,
                None => return,
            }
        };
        if prompt.row.is_some() {
            return;
        }
        let (starts, ends) = (prompt.starts.clone(), prompt.ends.clone());
        if let Some((id, _)) = starts {
            if let Some(c) = self.open.get_mut(&id).filter(|c| c.output.is_none()) {
                note(c, NO_START_ROW);
            }
            self.settle(&id);
        }
        if let Some(id) = ends {
            let now = when::now_ms();
            let waiting = self
                .counts
                .iter_mut()
                .find(|k| k.id == id && k.end.is_none() && k.after_ms.is_none());
            if let (Some(k), Some(c)) = (waiting, self.open.get_mut(&id)) {
                note(c, NO_END_ROW);
                k.after_ms = Some(now);
            }
        }
    }

    /// A prompt's row is known: the commands it starts and ends get it.
    fn placed(&mut self, pane: PaneId, serial: u64, (row, server): (Row, &str), exact: bool) {
        let st = self.pane(pane);
        let prompt = if st.prompt.serial == serial {
            &mut st.prompt
        } else {
            match st.earlier.iter_mut().find(|p| p.serial == serial) {
                Some(p) => p,
                None => return,
            }
        };
        prompt.row = Some((row, exact));
        let prompt = prompt.clone();
        if let Some((id, lf)) = &prompt.starts {
            if let Some(mut c) = self.open.remove(id) {
                c.output = Some(output_from(row, *lf));
                if c.server.is_empty() {
                    c.server = server.to_owned();
                }
                if !exact {
                    note(&mut c, NOT_EXACT);
                }
                c.notes.retain(|n| n != NO_START_ROW);
                self.save(&c);
                self.open.insert(id.clone(), c);
                // The prompt after it may have been placed first.
                self.settle(id);
            }
        }
        if let Some(id) = &prompt.ends {
            let top = Row {
                epoch: row.epoch,
                row: row.row.saturating_sub(u64::from(prompt.height)),
            };
            let Some(c) = self.open.get_mut(id) else {
                return;
            };
            if !exact {
                note(c, NOT_EXACT);
            }
            c.notes.retain(|n| n != NO_END_ROW);
            let ended = c.ended_ms.is_some();
            match self.counts.iter_mut().find(|k| k.id == *id) {
                Some(k) => {
                    k.end = Some(top);
                    k.after_ms = None;
                }
                // Counted already and still its pane's current command:
                // its prompt's row asked again (at B) counts it again.
                None if ended => {
                    let k = Count {
                        id: id.clone(),
                        end: Some(top),
                        prompt_ms: Some(when::now_ms()),
                        after_ms: None,
                    };
                    self.push_count(k);
                }
                None => return,
            }
            self.settle(id);
        }
    }

    /// Closes `id`'s output at the prompt after it once that prompt and
    /// its own are both placed, and schedules its count; settles it
    /// uncounted when its own prompt's row will never come. While that
    /// row may still come, it waits.
    fn settle(&mut self, id: &str) {
        let Some(k) = self.counts.iter_mut().find(|k| k.id == id) else {
            return;
        };
        let Some(c) = self.open.get_mut(id) else {
            return;
        };
        let never = c.notes.iter().any(|n| n == NO_START_ROW);
        let Some(top) = k.end.filter(|_| c.output.is_some() || never) else {
            return;
        };
        let placed = match &mut c.output {
            Some(span) if span.epoch == top.epoch && top.row >= span.from_row => {
                span.to_row = Some(top.row);
                true
            }
            Some(span) => {
                span.to_row = None;
                false
            }
            None => true,
        };
        if placed {
            c.notes.retain(|n| n != NOT_PLACED);
        } else {
            note(c, NOT_PLACED);
        }
        k.after_ms = Some(when::now_ms());
        self.views.ask_flush();
    }

    /// Counts the output of ended commands once the journal on disk holds
    /// every line read before they ended, and writes them a last time.
    fn count_outputs(&mut self) {
        let now = when::now_ms();
        // A question tmux never answered places nothing: past the time
        // any row could come, the command is settled uncounted.
        for k in self.counts.iter_mut().filter(|k| k.after_ms.is_none()) {
            if k.prompt_ms.is_some_and(|at| now - at > ROWS_WITHIN_MS) {
                if let Some(c) = self.open.get_mut(&k.id) {
                    note(
                        c,
                        if k.end.is_none() {
                            NO_END_ROW
                        } else {
                            NO_START_ROW
                        },
                    );
                }
                k.after_ms = Some(now);
            }
        }
        let synced = self.views.synced_ms();
        let due = |k: &Count| k.after_ms.is_some_and(|t| synced > t);
        if self.counts.iter().any(|k| k.after_ms.is_some() && !due(k)) {
            // The journal must be listed after `t` (a listing in the same
            // millisecond does not count), and a quiet server lists only
            // when asked.
            self.views.ask_flush();
        }
        let ids: Vec<String> = self
            .counts
            .iter()
            .filter(|k| due(k))
            .map(|k| k.id.clone())
            .collect();
        if ids.is_empty() {
            return;
        }
        self.counts.retain(|k| !due(k));
        for id in ids {
            self.count(id);
        }
    }

    /// Counts `id`'s output in the journal (when both its rows are
    /// placed) and writes it a last time.
    fn count(&mut self, id: String) {
        let Some(mut c) = self.open.remove(&id) else {
            return;
        };
        if c.output.as_ref().is_some_and(|s| s.to_row.is_some()) {
            let pane = PaneId::parse(&c.pane_id).ok();
            let view = pane.and_then(|p| self.views.get(p));
            match book::output(&self.config.dir, &c, view.as_ref()) {
                Ok(out) => c.output_lines = Some(out.lines.len() as u64),
                Err(e) => note(
                    &mut c,
                    &format!("its output could not be read from the journal ({e}): not counted"),
                ),
            }
        }
        self.save(&c);
        // Still the pane's current command: a later D may end it again.
        if self
            .panes
            .values()
            .any(|s| s.current.as_deref() == Some(id.as_str()))
        {
            self.open.insert(id, c);
        }
    }

    /// The feed (or pipe) of `panes` closed: marks may be missing, so each
    /// starts over and what was running there says so.
    fn lost(&mut self, panes: &[PaneId], why: Lost) {
        for pane in panes {
            self.panes.remove(pane);
        }
        let names: Vec<String> = panes.iter().map(ToString::to_string).collect();
        let ids: Vec<String> = self
            .open
            .iter()
            .filter(|(_, c)| names.contains(&c.pane_id))
            .map(|(id, _)| id.clone())
            .collect();
        let now = when::now_ms();
        for id in ids {
            let Some(mut c) = self.open.remove(&id) else {
                continue;
            };
            if c.ended_ms.is_none() {
                c.notes.push(why.running().into());
                self.save(&c);
                continue;
            }
            // Ended: counted as the others once its rows are settled, and
            // a row still to come never will (the pane starts over).
            if let Some(k) = self.counts.iter_mut().find(|k| k.id == id) {
                if k.after_ms.is_none() {
                    note(&mut c, why.ended());
                    k.after_ms = Some(now);
                }
                self.open.insert(id, c);
            }
        }
    }

    fn redacted(&self, text: &str) -> String {
        let mut t = text.to_owned();
        if t.len() > book::MAX_COMMAND {
            let mut cut = book::MAX_COMMAND;
            while !t.is_char_boundary(cut) {
                cut -= 1;
            }
            t.truncate(cut);
        }
        if self.config.keep_secrets {
            return t;
        }
        panescan_engine::redact(&t).0.into_owned()
    }

    fn save(&mut self, c: &Command) {
        if let Err(e) = self.book.write(c, when::now_ms()) {
            eprintln!("panescan ledger: cannot write: {e}");
        }
    }
}

const NOT_EXACT: &str = "output typed ahead of the prompt or tmux trimmed meanwhile: its first or last lines may be off";
const NOT_PLACED: &str = "the journal lost track of the pane's rows while it ran (a gap, a resize): its output cannot be placed";
const ENDED_TWICE: &str =
    "ended more than once (its output printed an OSC 133 mark?): the last end counts";
const NO_START_ROW: &str = "the row its command line was typed at was never placed (tmux did not answer, or the journal did not read the pane in time): its output cannot be counted";
const NO_END_ROW: &str = "the row of the prompt after it was never placed (tmux did not answer, or the journal did not read the pane in time): its output cannot be counted";
const FEED_CLOSED: &str =
    "its session's feed closed before the prompt after it was placed: its output cannot be counted";

/// What closed on panes whose marks may have been missed.
#[derive(Clone, Copy, Debug)]
enum Lost {
    /// Their session's feed.
    Feed,
    /// The pane's own pipe (the pane closed, or a user's `pipe-pane`
    /// closed or replaced it).
    Tap,
    /// The feed, far behind, when the pane moved to its pipe.
    Switch,
}

impl Lost {
    /// The note of a command that ran then.
    fn running(self) -> &'static str {
        match self {
            Lost::Feed => "its session's feed closed while it ran: its end was not seen",
            Lost::Tap => "its pane's pipe ended while it ran (the pane closed, or another pipe-pane replaced it): its end was not seen",
            Lost::Switch => "its pane moved to a pipe of its own while its session's feed was far behind: its end was not seen",
        }
    }

    /// The note of a command ended, its output not counted yet.
    fn ended(self) -> &'static str {
        match self {
            Lost::Feed => FEED_CLOSED,
            Lost::Tap => "its pane's pipe ended before the prompt after it was placed: its output cannot be counted",
            Lost::Switch => "its pane moved to a pipe of its own while its session's feed was far behind, before the prompt after it was placed: its output cannot be counted",
        }
    }
}

/// Adds `text` to `c`'s notes once.
fn note(c: &mut Command, text: &str) {
    if !c.notes.iter().any(|n| n == text) {
        c.notes.push(text.into());
    }
}

/// Output starts `lf` rows below the command line's row.
fn output_from(row: Row, lf: u32) -> Span {
    Span {
        epoch: row.epoch,
        from_row: row.row + u64::from(lf),
        to_row: None,
    }
}

/// Takes bytes between marks: line feeds counted, the typed line rendered
/// up to its first line feed. Only a prompt still waiting for its typed
/// line reads `st.line` (A and B start it afresh), so output is not
/// rendered: most bytes a pane prints are a command's output, or a pane's
/// whose shell sends no marks.
fn text(st: &mut PaneState, bytes: &[u8]) {
    let mut rest = bytes;
    while st.phase == Phase::Prompt && st.typed.is_none() {
        let Some(i) = memchr::memchr(b'\n', rest) else {
            st.line.feed(rest);
            return;
        };
        st.line.feed(&rest[..i]);
        st.typed = Some(st.line.open_text().unwrap_or_default());
        st.line.feed(b"\n");
        count_line_feeds(st, 1);
        rest = &rest[i + 1..];
    }
    let feeds = memchr::memchr_iter(b'\n', rest).count();
    count_line_feeds(st, u32::try_from(feeds).unwrap_or(u32::MAX));
}

fn count_line_feeds(st: &mut PaneState, n: u32) {
    st.lf_since_a = st.lf_since_a.saturating_add(n);
    st.lf_since_b = st.lf_since_b.saturating_add(n);
}

/// `eval 'X'` as run_command types it: X, its quotes undone.
fn unwrap_eval(line: &str) -> String {
    let Some(body) = line.strip_prefix("eval '") else {
        return line.to_owned();
    };
    let Some(end) = body.rfind('\'') else {
        return line.to_owned();
    };
    body[..end].replace("'\\''", "'")
}

/// The path of an OSC 7 report's `file://host/path` URL, `%XX` undone.
fn file_url_path(url: &[u8]) -> Option<String> {
    let rest = url.strip_prefix(b"file://")?;
    let slash = memchr::memchr(b'/', rest)?;
    Some(percent_decoded(&rest[slash..]))
}

/// `%XX` decoded (fish's `cmdline_url`).
fn percent_decoded(s: &[u8]) -> String {
    let mut out = Vec::with_capacity(s.len());
    let mut i = 0;
    while i < s.len() {
        let hex = s
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok());
        match (s[i], hex.and_then(|h| u8::from_str_radix(h, 16).ok())) {
            (b'%', Some(b)) => {
                out.push(b);
                i += 3;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::journal::view::PaneView;
    use crate::tmux::ServerSpec;
    use std::path::{Path, PathBuf};

    /// A prompt as bash with GUIDE.md's snippet prints it.
    const PROMPT: &[u8] = b"\x1b]133;A\x07$ \x1b]133;B\x07";

    /// A follower of a tmux server never started (nothing here asks it),
    /// its ledger in a fresh directory.
    fn follower(name: &str) -> (Follower, PathBuf, PaneId) {
        let dir =
            std::env::temp_dir().join(format!("panescan-follower-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let config = JournalConfig {
            dir: dir.clone(),
            max_bytes: 1 << 30,
            max_age_ms: 1 << 40,
            keep_secrets: true,
            taps: false,
        };
        let tmux = Tmux::shared(&ServerSpec::named("panescan-follower-unit-none")).unwrap();
        let (book, _) = Book::open(&dir).unwrap();
        let views = Arc::new(Views::default());
        let f = Follower::new(&config, tmux, views, book, Reports::none(), None);
        let pane = PaneId::parse("%1").unwrap();
        // The writer read the pane long ago: rows 9.. of epoch 7 hold the
        // prompt, `seq 2`'s two lines and the next prompt.
        let screen = ["$ seq 2", "1", "2", "$ "]
            .iter()
            .zip(9..)
            .map(|(l, row)| (Row { epoch: 7, row }, l.as_bytes().to_vec()))
            .collect();
        f.views.set(
            pane,
            PaneView {
                server: "srv".into(),
                read_ms: 0,
                base: Row { epoch: 7, row: 0 },
                history_size: 0,
                screen,
            },
        );
        // Every line the writer read is on disk.
        f.views.synced(i64::MAX);
        (f, dir, pane)
    }

    /// A prompt, `seq 2` typed and run, its two lines and the next prompt
    /// (rows 9 to 12), none placed yet: the two prompts' serials.
    fn seq_two(f: &mut Follower, pane: PaneId) -> (u64, u64) {
        f.output(pane, PROMPT);
        let first = f.pane(pane).prompt.serial;
        f.output(pane, b"seq 2\r\n\x1b]133;C\x07");
        f.output(pane, b"1\r\n2\r\n\x1b]133;D;0\x07");
        f.output(pane, PROMPT);
        (first, f.pane(pane).prompt.serial)
    }

    fn at(row: u64) -> Row {
        Row { epoch: 7, row }
    }

    /// A question about `serial`'s row answered longer ago than a row is
    /// waited for, and no read of the pane since.
    fn stale_place(pane: PaneId, serial: u64) -> Place {
        Place {
            pane,
            serial,
            row: 12,
            history_size: 0,
            asked_ms: when::now_ms() - PLACE_WITHIN_MS - 1,
            before: None,
            exact: true,
            settle: None,
        }
    }

    fn records(dir: &Path) -> Vec<Command> {
        let (all, notes) = book::read_all(dir).unwrap();
        assert!(notes.is_empty(), "{notes:?}");
        let _ = std::fs::remove_dir_all(dir);
        all
    }

    #[test]
    fn a_command_is_counted_once_both_its_prompts_are_placed() {
        let (mut f, dir, pane) = follower("in-order");
        let (first, next) = seq_two(&mut f, pane);
        f.placed(pane, first, (at(9), "srv"), true);
        f.count_outputs();
        f.placed(pane, next, (at(12), "srv"), true);
        f.count_outputs();
        let all = records(&dir);
        assert_eq!(all.len(), 1, "{all:?}");
        assert_eq!(all[0].command.as_deref(), Some("seq 2"));
        assert_eq!(
            all[0].output,
            Some(Span {
                epoch: 7,
                from_row: 10,
                to_row: Some(12)
            })
        );
        assert_eq!(all[0].output_lines, Some(2), "{all:?}");
        assert!(f.counts.is_empty());
    }

    /// A tapped pane's prompt row waits until it settles, and is exact
    /// only if no line feed came from the pane's pipe since the mark.
    #[test]
    fn a_tapped_prompts_row_settles_first_and_a_line_feed_since_makes_it_inexact() {
        for (feeds, exact) in [(0, true), (1, false)] {
            let (mut f, dir, pane) = follower(&format!("settle-{feeds}"));
            let (_, next) = seq_two(&mut f, pane);
            f.pane(pane).tap_lf = 5;
            let place = |until| Place {
                settle: Some((until, 5)),
                ..stale_place(pane, next)
            };
            f.places.push(Place {
                asked_ms: -1,
                ..place(when::now_ms() + 60_000)
            });
            f.place_rows();
            assert_eq!(f.places.len(), 1, "placed before it settled");
            assert!(f.pane(pane).prompt.row.is_none());
            f.places.clear();
            f.pane(pane).tap_lf += feeds;
            f.places.push(Place {
                asked_ms: -1,
                ..place(when::now_ms() - 1)
            });
            f.place_rows();
            assert!(f.places.is_empty());
            assert_eq!(f.pane(pane).prompt.row.map(|(_, e)| e), Some(exact));
            let _ = std::fs::remove_dir_all(dir);
        }
    }

    #[test]
    fn the_prompt_after_a_command_placed_before_its_own_still_counts_it() {
        let (mut f, dir, pane) = follower("end-first");
        let (first, next) = seq_two(&mut f, pane);
        // The ending prompt's row comes first, and the journal is synced:
        // the count must wait for the command line's row.
        f.placed(pane, next, (at(12), "srv"), true);
        f.count_outputs();
        f.placed(pane, first, (at(9), "srv"), true);
        f.count_outputs();
        let all = records(&dir);
        assert_eq!(all.len(), 1, "{all:?}");
        assert_eq!(all[0].output_lines, Some(2), "{all:?}");
        assert!(all[0].notes.is_empty(), "{all:?}");
        assert!(f.counts.is_empty());
    }

    #[test]
    fn a_prompt_row_given_up_leaves_a_note_never_a_silent_null() {
        // The prompt after the command is never placed.
        let (mut f, dir, pane) = follower("end-lost");
        let (first, next) = seq_two(&mut f, pane);
        f.placed(pane, first, (at(9), "srv"), true);
        f.places.push(stale_place(pane, next));
        f.place_rows();
        f.count_outputs();
        let all = records(&dir);
        assert_eq!(all[0].output_lines, None, "{all:?}");
        assert!(all[0].notes.iter().any(|n| n == NO_END_ROW), "{:?}", all[0]);
        assert!(f.counts.is_empty() && f.places.is_empty());
        // Its command line's row is never placed.
        let (mut f, dir, pane) = follower("start-lost");
        let (first, next) = seq_two(&mut f, pane);
        f.places.push(stale_place(pane, first));
        f.place_rows();
        f.placed(pane, next, (at(12), "srv"), true);
        f.count_outputs();
        let all = records(&dir);
        assert_eq!(all[0].output_lines, None, "{all:?}");
        assert_eq!(all[0].notes, vec![NO_START_ROW.to_owned()], "{:?}", all[0]);
        assert!(f.counts.is_empty());
    }

    #[test]
    fn a_question_never_answered_is_given_up_in_time_with_a_note() {
        let (mut f, dir, pane) = follower("unasked");
        let (first, _) = seq_two(&mut f, pane);
        f.placed(pane, first, (at(9), "srv"), true);
        f.count_outputs();
        assert_eq!(f.counts.len(), 1, "waits for the next prompt's row");
        let k = f.counts.front_mut().unwrap();
        k.prompt_ms = k.prompt_ms.map(|t| t - ROWS_WITHIN_MS - 1);
        f.count_outputs();
        let all = records(&dir);
        assert_eq!(all[0].notes, vec![NO_END_ROW.to_owned()], "{:?}", all[0]);
        assert!(f.counts.is_empty());
    }

    #[test]
    fn rows_of_two_epochs_and_a_closed_feed_say_why_nothing_was_counted() {
        let (mut f, dir, pane) = follower("epochs");
        let (first, next) = seq_two(&mut f, pane);
        f.placed(pane, first, (at(9), "srv"), true);
        let after_gap = Row { epoch: 8, row: 3 };
        f.placed(pane, next, (after_gap, "srv"), true);
        f.count_outputs();
        let all = records(&dir);
        assert_eq!(all[0].output_lines, None);
        assert_eq!(all[0].notes, vec![NOT_PLACED.to_owned()], "{:?}", all[0]);
        let (mut f, dir, pane) = follower("closed");
        let (first, _) = seq_two(&mut f, pane);
        f.placed(pane, first, (at(9), "srv"), true);
        f.lost(&[pane], Lost::Feed);
        f.count_outputs();
        let all = records(&dir);
        assert_eq!(all[0].notes, vec![FEED_CLOSED.to_owned()], "{:?}", all[0]);
        assert!(f.counts.is_empty() && f.open.is_empty());
    }

    #[test]
    fn a_later_end_forgets_the_earlier_count_and_waits_for_its_own_rows() {
        let (mut f, dir, pane) = follower("again");
        let (first, next) = seq_two(&mut f, pane);
        f.placed(pane, first, (at(9), "srv"), true);
        f.placed(pane, next, (at(12), "srv"), true);
        f.count_outputs();
        // More output and a D of its own at the prompt, then a prompt
        // whose row never comes.
        f.output(pane, b"more\r\n\r\n\x1b]133;D;1\x07");
        f.output(pane, PROMPT);
        let last = f.pane(pane).prompt.serial;
        f.places.push(stale_place(pane, last));
        f.place_rows();
        f.count_outputs();
        let all = records(&dir);
        let c = &all[0];
        assert_eq!((c.exit_status, c.output_lines), (Some(1), None), "{c:?}");
        assert_eq!(c.output.as_ref().and_then(|s| s.to_row), None, "{c:?}");
        assert!(c.notes.iter().any(|n| n == NO_END_ROW), "{c:?}");
    }

    #[test]
    fn ended_commands_waiting_for_rows_are_bounded() {
        let (mut f, dir, pane) = follower("bounded");
        for _ in 0..=MAX_COUNTS {
            f.output(pane, PROMPT);
            f.output(pane, b"true\r\n\x1b]133;C\x07\x1b]133;D;0\x07");
        }
        assert_eq!(f.counts.len(), MAX_COUNTS);
        assert!(f.open.len() <= MAX_COUNTS, "{}", f.open.len());
        let all = records(&dir);
        let dropped: Vec<&Command> = all
            .iter()
            .filter(|c| c.notes.iter().any(|n| n.contains("waited at once")))
            .collect();
        assert_eq!(dropped.len(), 1, "{dropped:?}");
        assert_eq!(dropped[0].started_ms, all[0].started_ms);
    }

    #[test]
    fn eval_and_url_forms_are_undone() {
        assert_eq!(unwrap_eval("eval 'echo '\\''hi'\\'''"), "echo 'hi'");
        assert_eq!(unwrap_eval("ls -l"), "ls -l");
        assert_eq!(percent_decoded(b"echo%20hi%3B%zz"), "echo hi;%zz");
        assert_eq!(
            file_url_path(b"file://far.host/srv/a%20b").as_deref(),
            Some("/srv/a b")
        );
        assert_eq!(file_url_path(b"file:///tmp").as_deref(), Some("/tmp"));
        assert_eq!(file_url_path(b"http://h/x"), None);
        assert_eq!(file_url_path(b"file://nohost"), None);
    }
}
