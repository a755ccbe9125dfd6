//! The command ledger's follower: a thread of the journaling daemon that
//! reads every pane's raw output for OSC 133 marks ([`MarkScanner`], the
//! parser run_command's detector uses), and records each command in the
//! ledger (`journal/ledger.rs`).
//!
//! Every session of the server has a feed of its own ([`SessionFeed`]: a
//! control client attached to it, since tmux sends a client the output of
//! its own session's panes only); the sessions are listed at start, on
//! every `%sessions-changed` and every [`SESSIONS_EVERY`], so a session
//! made later is followed from then on. A pane shown by several sessions
//! (a linked window) is read from the first feed that brought its bytes.
//!
//! A prompt (A, then B where the shell prints it) is where the shell waits
//! for input, so the pane stands still: there its row is asked of tmux
//! (`history_size + cursor_y`, with the directory and session) on the feed
//! that brought the mark. The reply comes after every `%output` tmux queued
//! for that client before it, so bytes of the pane seen before the reply
//! say whether the row already moved on (typed ahead): then the row is not
//! exact and the command says so. The row is
//! put on the journal's steady scale with the writer's next view of the
//! pane. A command's output is the rows after its command line (C: the
//! line feeds typed since the prompt's row) up to the next prompt's first
//! row.
//!
//! Forged marks: C counts only at a prompt; a D counts while a command
//! runs, and a later D before the next C (after output, not an empty
//! Enter) replaces it, the last one counting: a command printing `D` can
//! make a command look ended until the shell's own D comes. Must hold: no
//! byte from a pane panics the follower; a closed feed ends what was under
//! way in its panes with a note.

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
use crate::tmux::{PaneId, ServerSpec, SessionId, Tmux, TmuxCommand, TmuxError};
use crate::tools::run::detect::{LineEnd, Mark, MarkScanner};

use super::ledger_reports::{self, Reports};

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

/// Starts following `spec`'s server into the ledger of `config.dir`.
pub fn start(
    config: &JournalConfig,
    spec: &ServerSpec,
    views: Arc<Views>,
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
    let (tx, rx) = crossbeam_channel::unbounded();
    let mut follower = Follower {
        config: config.clone(),
        tmux,
        views,
        book,
        panes: HashMap::new(),
        open: HashMap::new(),
        places: Vec::new(),
        counts: Vec::new(),
        backlog: VecDeque::new(),
        feeds: HashMap::new(),
        owner: HashMap::new(),
        tx,
        rx,
        reports,
    };
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
        }
    }
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
    /// Ended commands whose output is counted once the journal has it.
    counts: Vec<(String, i64)>,
    backlog: VecDeque<FeedEvent>,
    /// One feed per session of the server.
    feeds: HashMap<SessionId, SessionFeed>,
    /// The feed each pane is read from.
    owner: HashMap<PaneId, SessionId>,
    tx: crossbeam_channel::Sender<FeedEvent>,
    rx: crossbeam_channel::Receiver<FeedEvent>,
    /// tmux's own reports of commands' ends (tmux 3.8), where it has them.
    reports: Reports,
}

impl Follower {
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
            let event = match self.backlog.pop_front() {
                Some(e) => Some(e),
                // A report of tmux's wakes the loop too.
                None => crossbeam_channel::select! {
                    recv(feed_rx) -> e => e.ok(),
                    recv(reports) -> r => {
                        if let Ok(r) = r {
                            self.reported(r);
                        }
                        None
                    }
                    default(Duration::from_millis(100)) => None,
                },
            };
            match event {
                Some(FeedEvent::Output {
                    session,
                    pane,
                    data,
                }) if self.reads(session, pane) => {
                    self.output(pane, &data);
                    if let Some(from) = self.pane(pane).ask_after.take() {
                        let after = data.get(from..).unwrap_or_default().to_vec();
                        self.ask_row(session, pane, &after);
                    }
                }
                Some(FeedEvent::SessionsChanged) => list_sessions = true,
                Some(FeedEvent::Closed { session }) => self.feed_closed(session),
                _ => {}
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
            match self
                .tmux
                .feed(session, self.tx.clone(), Instant::now() + ROUND_TRIP)
            {
                Ok(feed) => {
                    self.feeds.insert(session, feed);
                    self.adopt(session);
                }
                // It may have closed since the listing: the next one says.
                Err(e) => eprintln!("panescan ledger: cannot follow session {session}: {e}"),
            }
        }
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
            self.ask_row(session, pane, &[]);
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
        self.lost(&panes);
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
        // An earlier end's count would write the earlier output's end.
        self.counts.retain(|(i, _)| *i != id);
        self.reports.ended(pane, &mut c);
        self.save(&c);
        self.open.insert(id, c);
    }

    /// Asks tmux where the pane's cursor is (after a prompt mark), and
    /// whether output came after the mark before the answer.
    fn ask_row(&mut self, session: SessionId, pane: PaneId, after: &[u8]) {
        let before = self.views.get(pane).map(|v| v.base);
        let probe = TmuxCommand::new("display-message")
            .flag("-p")
            .target(pane)
            .format_arg(&format!(
                "{}\t#{{history_size}}\t#{{cursor_y}}\t#{{session_name}}\t#{{pane_current_path}}",
                ledger_reports::FORMATS
            ));
        let Some(feed) = self.feeds.get(&session) else {
            return;
        };
        let Ok(reply) = feed.run(&probe, Instant::now() + ROUND_TRIP) else {
            return;
        };
        // Everything tmux queued for this feed before its answer is here.
        let mut moved = after.contains(&b'\n');
        while let Ok(e) = self.rx.try_recv() {
            if let FeedEvent::Output {
                session: s,
                pane: p,
                data,
            } = &e
            {
                moved |= *s == session && *p == pane && data.contains(&b'\n');
            }
            self.backlog.push_back(e);
        }
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
        });
    }

    /// Puts asked rows on the steady scale once the writer read the pane
    /// after the question.
    fn place_rows(&mut self) {
        let now = when::now_ms();
        let places = std::mem::take(&mut self.places);
        for p in places {
            let Some(view) = self.views.get(p.pane).filter(|v| v.read_ms > p.asked_ms) else {
                if now - p.asked_ms < PLACE_WITHIN_MS {
                    self.places.push(p);
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
                    c.notes.push(NOT_EXACT.into());
                }
                self.save(&c);
                self.open.insert(id.clone(), c);
            }
        }
        if let Some(id) = &prompt.ends {
            if let Some(mut c) = self.open.remove(id) {
                let top = row.row.saturating_sub(u64::from(prompt.height));
                match &mut c.output {
                    Some(span) if span.epoch == row.epoch && top >= span.from_row => {
                        span.to_row = Some(top);
                    }
                    _ => c.notes.push(NOT_PLACED.into()),
                }
                if !exact && !c.notes.iter().any(|n| n == NOT_EXACT) {
                    c.notes.push(NOT_EXACT.into());
                }
                self.views.ask_flush();
                self.counts.push((id.clone(), when::now_ms()));
                self.open.insert(id.clone(), c);
            }
        }
    }

    /// Counts the output of ended commands once the journal on disk holds
    /// every line read before they ended, and writes them a last time.
    fn count_outputs(&mut self) {
        let synced = self.views.synced_ms();
        let due: Vec<(String, i64)> = self
            .counts
            .iter()
            .filter(|(_, t)| synced > *t)
            .cloned()
            .collect();
        if due.is_empty() {
            return;
        }
        self.counts.retain(|(_, t)| synced <= *t);
        for (id, _) in due {
            let Some(mut c) = self.open.remove(&id) else {
                continue;
            };
            if c.output.as_ref().is_some_and(|s| s.to_row.is_some()) {
                let pane = PaneId::parse(&c.pane_id).ok();
                let view = pane.and_then(|p| self.views.get(p));
                if let Ok(out) = book::output(&self.config.dir, &c, view.as_ref()) {
                    c.output_lines = Some(out.lines.len() as u64);
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
    }

    /// The feed of `panes` closed: marks may be missing, so each starts
    /// over and what was running there says so.
    fn lost(&mut self, panes: &[PaneId]) {
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
        for id in ids {
            if let Some(mut c) = self.open.remove(&id) {
                if c.ended_ms.is_none() {
                    c.notes.push(
                        "its session's feed closed while it ran: its end was not seen".into(),
                    );
                    self.save(&c);
                }
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

/// Output starts `lf` rows below the command line's row.
fn output_from(row: Row, lf: u32) -> Span {
    Span {
        epoch: row.epoch,
        from_row: row.row + u64::from(lf),
        to_row: None,
    }
}

/// Takes bytes between marks: line feeds counted, the typed line rendered
/// up to its first line feed.
fn text(st: &mut PaneState, bytes: &[u8]) {
    let mut rest = bytes;
    while let Some(i) = memchr::memchr(b'\n', rest) {
        st.line.feed(&rest[..i]);
        if st.phase == Phase::Prompt && st.typed.is_none() {
            st.typed = Some(st.line.open_text().unwrap_or_default());
        }
        st.line.feed(b"\n");
        st.lf_since_a = st.lf_since_a.saturating_add(1);
        st.lf_since_b = st.lf_since_b.saturating_add(1);
        rest = &rest[i + 1..];
    }
    st.line.feed(rest);
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
