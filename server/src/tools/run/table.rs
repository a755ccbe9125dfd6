//! The table of commands run_command typed: what wait_for_command needs to
//! wait on one, and which panes' shells were seen to print OSC 133 marks.
//!
//! Bounded: at most [`MAX_RUNNING`] commands are watched at once (a new one
//! beyond that is refused), at most [`MAX_ENTRIES`] are remembered (the
//! oldest finished go first), and an entry expires [`KEEP`] after its
//! command ended, or after [`WATCH_FOR`] if it never did.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use crate::tmux::PaneId;
use crate::tools::context::{ServerArgs, ToolError};

/// Commands watched at once.
pub const MAX_RUNNING: usize = 32;
/// Entries remembered.
pub const MAX_ENTRIES: usize = 128;
/// How long an ended command can still be asked about.
const KEEP: Duration = Duration::from_secs(15 * 60);
/// How long a command is watched before panescan stops waiting for it.
pub const WATCH_FOR: Duration = Duration::from_secs(60 * 60);
/// Panes remembered as printing OSC 133 marks (and with their prompt's
/// height).
const MAX_OSC_PANES: usize = 1024;
/// The most rows a prompt is taken to have.
pub const MAX_PROMPT_ROWS: usize = 8;

/// How a command's end is recognised.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Completion {
    /// The shell's OSC 133 D mark.
    Osc133,
    /// The marker the call appended: `token` as printed, `key` the second
    /// piece (only the typed line's echo holds it).
    Marker {
        /// The marker as printed, without `:status`.
        token: String,
        /// Its second piece.
        key: String,
        /// The marker command alone (typed again after an interrupt).
        command: String,
    },
}

/// Where a command stands.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Progress {
    /// Still running (as far as panescan saw).
    #[default]
    Running,
    /// Ended, with the status the shell reported (if it did).
    Ended {
        /// The exit status.
        status: Option<i32>,
        /// When the end was seen.
        at: Option<Instant>,
    },
    /// panescan stopped watching: why (the pane closed, too long).
    Lost(ToolError),
}

/// One command run_command typed.
#[derive(Debug)]
pub struct Entry {
    /// Its id.
    pub id: String,
    /// The server as the call named it.
    pub server: ServerArgs,
    /// Its socket path.
    pub socket: PathBuf,
    /// The pane.
    pub pane: PaneId,
    /// What was typed.
    pub typed: String,
    /// How its end is recognised.
    pub completion: Completion,
    /// Absolute row (history rows from 0, then the screen) of the line it
    /// was typed on.
    pub start_abs: i64,
    /// The pane's history size and limit when it was typed.
    pub history: (i64, i64),
    /// The pane's own process (`pane_pid`) and its terminal.
    pub process: (Option<u32>, String),
    /// When it was typed.
    pub started: Instant,
    /// With OSC 133: the output before the D mark left its last line
    /// unfinished (no final newline), as the raw output said.
    pub open_line: AtomicBool,
    /// With OSC 133: that unfinished line's text, as the raw output drew
    /// it (`None`: no such line, or it could not be followed).
    pub open_text: Mutex<Option<String>>,
    /// The session whose call typed it: only that session may wait on it,
    /// and its end ends the watching.
    pub session: u64,
    /// The shell's background jobs (process groups) when it was typed;
    /// `None` when `/proc` could not tell.
    pub jobs_before: Option<BTreeSet<i64>>,
    progress: Mutex<Progress>,
    changed: Condvar,
}

impl Entry {
    /// A command typed now.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        id: String,
        server: ServerArgs,
        socket: PathBuf,
        pane: PaneId,
        typed: String,
        completion: Completion,
        start: (i64, (i64, i64)),
        process: (Option<u32>, String),
    ) -> Entry {
        Entry {
            id,
            server,
            socket,
            pane,
            typed,
            completion,
            start_abs: start.0,
            history: start.1,
            process,
            started: Instant::now(),
            open_line: AtomicBool::new(false),
            open_text: Mutex::new(None),
            session: 0,
            jobs_before: None,
            progress: Mutex::new(Progress::Running),
            changed: Condvar::new(),
        }
    }

    /// The same command, typed by a call of `session`.
    pub fn of_session(mut self, session: u64) -> Entry {
        self.session = session;
        self
    }

    /// The same command, the shell's background jobs at its start known.
    pub fn with_jobs(mut self, jobs: Option<BTreeSet<i64>>) -> Entry {
        self.jobs_before = jobs;
        self
    }

    fn lock(&self) -> MutexGuard<'_, Progress> {
        crate::sync::lock(&self.progress)
    }

    /// Where it stands.
    pub fn progress(&self) -> Progress {
        self.lock().clone()
    }

    /// Records its end (or that it is lost); the first word stays.
    pub fn finish(&self, progress: Progress) {
        let mut p = self.lock();
        if *p == Progress::Running {
            *p = progress;
            self.changed.notify_all();
        }
    }

    /// Waits until it is no longer running, `until`, or `stop` says so
    /// (checked every `slice`).
    pub fn wait(&self, until: Instant, slice: Duration, stop: impl Fn() -> bool) -> Progress {
        let mut p = self.lock();
        loop {
            let now = Instant::now();
            if *p != Progress::Running || now >= until || stop() {
                return p.clone();
            }
            let step = (until - now).min(slice);
            p = match self.changed.wait_timeout(p, step) {
                Ok((g, _)) => g,
                Err(e) => e.into_inner().0,
            };
        }
    }

    fn expired(&self, now: Instant) -> bool {
        match &*self.lock() {
            Progress::Running => false,
            Progress::Ended { at, .. } => {
                at.unwrap_or(self.started) + KEEP <= now || self.started + WATCH_FOR + KEEP <= now
            }
            Progress::Lost(_) => self.started + WATCH_FOR + KEEP <= now,
        }
    }
}

#[derive(Debug, Default)]
struct Table {
    entries: HashMap<String, Arc<Entry>>,
    osc_panes: HashSet<(PathBuf, PaneId)>,
    /// Rows of each pane's prompt, from the marker to the cursor.
    prompt_rows: HashMap<(PathBuf, PaneId), usize>,
}

/// The one table of this process (the functions below are its doors; the
/// methods of [`Table`] are what they do, on any table, as tests use them).
fn table() -> MutexGuard<'static, Table> {
    static TABLE: OnceLock<Mutex<Table>> = OnceLock::new();
    crate::sync::lock(TABLE.get_or_init(|| Mutex::new(Table::default())))
}

impl Table {
    fn insert(&mut self, entry: Arc<Entry>, now: Instant) -> Result<(), ToolError> {
        self.entries.retain(|_, e| !e.expired(now));
        let running: Vec<&Arc<Entry>> = self
            .entries
            .values()
            .filter(|e| e.progress() == Progress::Running)
            .collect();
        if let Some(e) = running
            .iter()
            .find(|e| e.pane == entry.pane && e.socket == entry.socket)
        {
            return Err(still_runs(e));
        }
        if running.len() >= MAX_RUNNING {
            return Err(ToolError::over_ceiling(format!(
                "{MAX_RUNNING} commands are already running: wait for some to end"
            )));
        }
        while self.entries.len() >= MAX_ENTRIES {
            let oldest = self
                .entries
                .values()
                .filter(|e| e.progress() != Progress::Running)
                .min_by_key(|e| e.started)
                .map(|e| e.id.clone());
            match oldest {
                Some(id) => self.entries.remove(&id),
                None => break,
            };
        }
        self.entries.insert(entry.id.clone(), entry);
        Ok(())
    }

    fn check_free(&self, socket: &std::path::Path, pane: PaneId) -> Result<(), ToolError> {
        let busy = self
            .entries
            .values()
            .find(|e| e.pane == pane && e.socket == socket && e.progress() == Progress::Running);
        busy.map_or(Ok(()), |e| Err(still_runs(e)))
    }

    fn get(&mut self, id: &str, session: u64, now: Instant) -> Result<Arc<Entry>, ToolError> {
        self.entries.retain(|_, e| !e.expired(now));
        let found = self.entries.get(id).filter(|e| e.session == session);
        found.cloned().ok_or_else(|| {
            ToolError::not_found(format!(
                "no command {id:?}: command ids come from run_command and are kept {} minutes after the command ends",
                KEEP.as_secs() / 60
            ))
        })
    }

    fn end_session(&mut self, session: u64) {
        self.entries.retain(|_, e| {
            if e.session != session {
                return true;
            }
            e.finish(Progress::Lost(ToolError::refused(format!(
                "the session that ran command {} ended",
                e.id
            ))));
            false
        });
    }

    fn prints_osc133(&self, socket: &std::path::Path, pane: PaneId) -> bool {
        self.osc_panes.contains(&(socket.to_path_buf(), pane))
    }

    fn set_osc133(&mut self, socket: &std::path::Path, pane: PaneId, prints: bool) {
        let key = (socket.to_path_buf(), pane);
        if !prints {
            self.osc_panes.remove(&key);
        } else if self.osc_panes.len() < MAX_OSC_PANES {
            self.osc_panes.insert(key);
        }
    }

    fn prompt_rows(&self, socket: &std::path::Path, pane: PaneId) -> usize {
        let key = (socket.to_path_buf(), pane);
        self.prompt_rows.get(&key).copied().unwrap_or(1)
    }

    fn set_prompt_rows(&mut self, socket: &std::path::Path, pane: PaneId, rows: usize) {
        let key = (socket.to_path_buf(), pane);
        if !(1..=MAX_PROMPT_ROWS).contains(&rows) {
            return;
        }
        if self.prompt_rows.len() < MAX_OSC_PANES || self.prompt_rows.contains_key(&key) {
            self.prompt_rows.insert(key, rows);
        }
    }
}

/// Adds `entry`, after dropping expired ones; refuses when too many
/// commands run, or when its pane still runs one panescan typed.
pub fn insert(entry: Arc<Entry>) -> Result<(), ToolError> {
    table().insert(entry, Instant::now())
}

/// Refuses `pane` when it still runs a command run_command typed (before
/// anything waits on the pane's prompt).
pub fn check_free(socket: &std::path::Path, pane: PaneId) -> Result<(), ToolError> {
    table().check_free(socket, pane)
}

fn still_runs(e: &Entry) -> ToolError {
    ToolError::refused(format!(
        "pane {} still runs command {} that run_command typed: wait_for_command on it, or interrupt it (send_keys C-c)",
        e.pane, e.id
    ))
}

/// The entry of `id` typed in `session`, or a not_found error (another
/// session's command is not this one's to know of).
pub fn get(id: &str, session: u64) -> Result<Arc<Entry>, ToolError> {
    table().get(id, session, Instant::now())
}

/// Ends what `session` started: its running commands are no longer
/// watched (their watchers stop at their next step) and its entries are
/// forgotten, so their panes are free again.
pub fn end_session(session: u64) {
    table().end_session(session);
}

/// Whether `pane`'s shell was seen to print OSC 133 D marks.
pub fn prints_osc133(socket: &std::path::Path, pane: PaneId) -> bool {
    table().prints_osc133(socket, pane)
}

/// Remembers that `pane`'s shell prints OSC 133 D marks (or forgets it).
pub fn set_osc133(socket: &std::path::Path, pane: PaneId, prints: bool) {
    table().set_osc133(socket, pane, prints);
}

/// Rows `pane`'s prompt takes, as last seen after a marker (1 if never).
pub fn prompt_rows(socket: &std::path::Path, pane: PaneId) -> usize {
    table().prompt_rows(socket, pane)
}

/// Remembers that `pane`'s prompt takes `rows` rows (ignored beyond
/// [`MAX_PROMPT_ROWS`]: job notices or other text before the prompt).
pub fn set_prompt_rows(socket: &std::path::Path, pane: PaneId, rows: usize) {
    table().set_prompt_rows(socket, pane, rows);
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use std::path::Path;

    fn entry(id: &str, pane: u32) -> Arc<Entry> {
        Arc::new(Entry::new(
            id.into(),
            ServerArgs::default(),
            PathBuf::from("/tmp/table-test"),
            PaneId::from_number(pane),
            "true".into(),
            Completion::Osc133,
            (0, (0, 0)),
            (None, String::new()),
        ))
    }

    #[test]
    fn one_command_per_pane_and_unknown_ids_are_not_found() {
        insert(entry("t-a", 9001)).unwrap();
        let err = insert(entry("t-b", 9001)).unwrap_err();
        assert!(err.message.contains("t-a"), "{err}");
        get("t-a", 0).unwrap().finish(Progress::Ended {
            status: Some(0),
            at: Some(Instant::now()),
        });
        insert(entry("t-b", 9001)).unwrap();
        let e = get("t-nope", 0).unwrap_err();
        assert_eq!(e.kind, crate::tools::context::ErrorKind::NotFound);
    }

    /// An ended command is kept 15 minutes after its end (the promise
    /// not_found's message makes), one never seen to end an hour and 15
    /// minutes after its start: the clock is the end time and start the
    /// entry carries, set in the past here (an `Instant` before boot is
    /// fine on Linux: it is signed seconds).
    #[test]
    fn ended_and_lost_commands_expire_after_their_time() {
        let ago = |d: Duration| Instant::now().checked_sub(d).unwrap();
        let minute = Duration::from_secs(60);
        const KEEP: Duration = Duration::from_secs(15 * 60);
        const WATCH_FOR: Duration = Duration::from_secs(60 * 60);
        for (id, at, kept) in [
            ("t-exp-old", ago(KEEP + minute), false),
            ("t-exp-new", ago(KEEP - minute), true),
        ] {
            let e = entry(id, 9003);
            e.finish(Progress::Ended {
                status: Some(0),
                at: Some(at),
            });
            insert(e).unwrap();
            assert_eq!(get(id, 0).is_ok(), kept, "{id}");
        }
        for (id, started, kept) in [
            ("t-lost-old", ago(WATCH_FOR + KEEP + minute), false),
            ("t-lost-new", ago(WATCH_FOR + KEEP - minute), true),
        ] {
            let mut e = Entry::new(
                id.into(),
                ServerArgs::default(),
                PathBuf::from("/tmp/table-test"),
                PaneId::from_number(9004),
                "true".into(),
                Completion::Osc133,
                (0, (0, 0)),
                (None, String::new()),
            );
            e.started = started;
            e.finish(Progress::Lost(ToolError::invalid("gone")));
            insert(Arc::new(e)).unwrap();
            assert_eq!(get(id, 0).is_ok(), kept, "{id}");
        }
    }

    fn at(id: &str, socket: &str, pane: u32) -> Entry {
        Entry::new(
            id.into(),
            ServerArgs::default(),
            PathBuf::from(socket),
            PaneId::from_number(pane),
            "true".into(),
            Completion::Osc133,
            (0, (0, 0)),
            (None, String::new()),
        )
    }

    fn ended(e: &Entry) {
        e.finish(Progress::Ended {
            status: Some(0),
            at: Some(Instant::now()),
        });
    }

    /// 32 commands run at once, on any panes but one a pane; the 33rd
    /// waits for one to end. 128 are remembered: the one beyond forgets
    /// the oldest that ended, never one still running.
    #[test]
    fn running_commands_are_bounded_and_the_oldest_ended_is_forgotten() {
        let mut t = Table::default();
        let now = Instant::now();
        for pane in 0..MAX_RUNNING as u32 {
            t.insert(Arc::new(at(&format!("r{pane}"), "/s", pane)), now)
                .unwrap();
        }
        let err = t
            .insert(Arc::new(at("r-over", "/s", 100)), now)
            .unwrap_err();
        assert_eq!(
            err.kind,
            crate::tools::context::ErrorKind::OverCeiling,
            "{err}"
        );
        // The same pane number on another server is another pane, but the
        // limit counts every server's commands.
        let err = t.insert(Arc::new(at("r-other", "/t", 0)), now).unwrap_err();
        assert_eq!(
            err.kind,
            crate::tools::context::ErrorKind::OverCeiling,
            "{err}"
        );
        ended(&t.entries["r0"]);
        t.insert(Arc::new(at("r-other", "/t", 0)), now).unwrap();
        assert_eq!(t.entries.len(), MAX_RUNNING + 1);
        ended(&t.entries["r1"]);

        // Ended entries up to the bound, each started a second before the
        // next ("r0" first of all): none is forgotten before the bound.
        let base = now.checked_sub(Duration::from_secs(1000)).unwrap();
        let mut old = at("r-oldest", "/s", 500);
        old.started = base;
        ended(&old);
        t.insert(Arc::new(old), now).unwrap();
        let mut i = 0;
        while t.entries.len() < MAX_ENTRIES && i < 2 * MAX_ENTRIES as u32 {
            i += 1;
            let mut e = at(&format!("e{i}"), "/s", 500 + i);
            e.started = base + Duration::from_secs(u64::from(i));
            ended(&e);
            t.insert(Arc::new(e), now).unwrap();
        }
        assert!(t.entries.contains_key("r-oldest") && t.entries.contains_key("e1"));
        // One more: the oldest ended goes, and only it.
        let mut last = at("e-last", "/s", 900);
        last.started = base + Duration::from_secs(900);
        ended(&last);
        t.insert(Arc::new(last), now).unwrap();
        assert_eq!(t.entries.len(), MAX_ENTRIES);
        assert!(!t.entries.contains_key("r-oldest"));
        assert!(t.entries.contains_key("e1") && t.entries.contains_key("e-last"));
        let running = t
            .entries
            .values()
            .filter(|e| e.progress() == Progress::Running)
            .count();
        assert_eq!(running, MAX_RUNNING - 1, "a running command was forgotten");
    }

    /// Only a command still running on that very pane (of that server)
    /// keeps a pane busy.
    #[test]
    fn a_pane_is_busy_only_while_its_own_command_runs() {
        let mut t = Table::default();
        let now = Instant::now();
        t.insert(Arc::new(at("b1", "/s", 1)), now).unwrap();
        let err = t
            .check_free(Path::new("/s"), PaneId::from_number(1))
            .unwrap_err();
        assert_eq!(err.kind, crate::tools::context::ErrorKind::Refused);
        assert!(err.message.contains("b1"), "{err}");
        t.check_free(Path::new("/s"), PaneId::from_number(2))
            .unwrap();
        t.check_free(Path::new("/t"), PaneId::from_number(1))
            .unwrap();
        // Two panes of one server, and one pane number on two servers, run
        // at once.
        t.insert(Arc::new(at("b2", "/s", 2)), now).unwrap();
        t.insert(Arc::new(at("b3", "/t", 1)), now).unwrap();
        ended(&t.entries["b1"]);
        t.check_free(Path::new("/s"), PaneId::from_number(1))
            .unwrap();
        assert!(t
            .check_free(Path::new("/s"), PaneId::from_number(2))
            .is_err());
    }

    /// An ended command is kept 15 minutes after its end, however long it
    /// ran (up to the hour it is watched); one whose end time is unknown,
    /// 15 minutes after its start.
    #[test]
    fn an_ended_command_is_kept_from_its_end() {
        let now = Instant::now();
        let ago = |m: u64| now.checked_sub(Duration::from_secs(m * 60)).unwrap();
        for (started, end, expired) in [
            (50, Some(1), false),
            (59, Some(14), false),
            (59, Some(16), true),
            (14, None, false),
            (16, None, true),
        ] {
            let mut e = at("k", "/s", 1);
            e.started = ago(started);
            e.finish(Progress::Ended {
                status: Some(0),
                at: end.map(ago),
            });
            assert_eq!(
                e.expired(now),
                expired,
                "started {started} min ago, ended {end:?} min ago"
            );
        }
        assert!(!at("k", "/s", 1).expired(now + KEEP + WATCH_FOR), "running");
    }

    /// A wait ends at the end, at its deadline, or when told to stop,
    /// whichever comes first, and not before.
    #[test]
    fn a_wait_ends_at_the_end_the_deadline_or_a_stop() {
        let far = Duration::from_secs(20);
        let slice = Duration::from_millis(20);
        let e = at("w", "/s", 1);
        let t0 = Instant::now();
        let short = Duration::from_millis(150);
        assert_eq!(e.wait(t0 + short, slice, || false), Progress::Running);
        assert!(t0.elapsed() >= short, "returned before its deadline");
        let t0 = Instant::now();
        assert_eq!(e.wait(t0 + far, slice, || true), Progress::Running);
        assert!(t0.elapsed() < far / 2, "a stop was not seen");
        ended(&e);
        let t0 = Instant::now();
        assert!(matches!(
            e.wait(t0 + far, slice, || false),
            Progress::Ended { .. }
        ));
        assert!(t0.elapsed() < far / 2, "an end was not seen");
    }

    /// Ending a session forgets its commands (their panes free again,
    /// their watchers told), and only its own.
    #[test]
    fn ending_a_session_forgets_its_commands_only() {
        let mut t = Table::default();
        let now = Instant::now();
        let mine = Arc::new(at("s1", "/s", 1).of_session(7));
        t.insert(mine.clone(), now).unwrap();
        t.insert(Arc::new(at("s2", "/s", 2).of_session(8)), now)
            .unwrap();
        t.end_session(7);
        assert!(matches!(mine.progress(), Progress::Lost(_)));
        t.check_free(Path::new("/s"), PaneId::from_number(1))
            .unwrap();
        assert!(t.get("s1", 7, now).is_err());
        assert_eq!(t.get("s2", 8, now).unwrap().progress(), Progress::Running);
        assert!(t.get("s2", 7, now).is_err(), "another session's command");
    }

    /// Which panes print OSC 133 marks, and their prompts' heights: per
    /// pane of each server, both bounded.
    #[test]
    fn panes_that_print_marks_and_prompt_heights_are_bounded() {
        let mut t = Table::default();
        let (s, p) = (Path::new("/s"), PaneId::from_number);
        t.set_osc133(s, p(1), true);
        assert!(t.prints_osc133(s, p(1)));
        assert!(!t.prints_osc133(s, p(2)) && !t.prints_osc133(Path::new("/t"), p(1)));
        t.set_osc133(s, p(1), false);
        assert!(!t.prints_osc133(s, p(1)));
        for n in 0..MAX_OSC_PANES as u32 {
            t.set_osc133(s, p(n), true);
        }
        t.set_osc133(s, p(5000), true);
        assert!(t.prints_osc133(s, p(MAX_OSC_PANES as u32 - 1)));
        assert!(!t.prints_osc133(s, p(5000)), "past the bound");

        assert_eq!(t.prompt_rows(s, p(1)), 1, "never seen");
        t.set_prompt_rows(s, p(1), 3);
        assert_eq!(t.prompt_rows(s, p(1)), 3);
        t.set_prompt_rows(s, p(1), 0);
        t.set_prompt_rows(s, p(1), MAX_PROMPT_ROWS + 1);
        assert_eq!(t.prompt_rows(s, p(1)), 3, "0 and 9 rows are not a prompt's");
        t.set_prompt_rows(s, p(1), MAX_PROMPT_ROWS);
        assert_eq!(t.prompt_rows(s, p(1)), MAX_PROMPT_ROWS);
        for n in 2..=MAX_OSC_PANES as u32 {
            t.set_prompt_rows(s, p(n), 2);
        }
        t.set_prompt_rows(s, p(5000), 2);
        assert_eq!(t.prompt_rows(s, p(5000)), 1, "past the bound");
        t.set_prompt_rows(s, p(1), 4);
        assert_eq!(
            t.prompt_rows(s, p(1)),
            4,
            "a known pane is updated at the bound"
        );
    }

    /// The doors of the process's table reach it (a socket of this test's
    /// own, so no other test sees its panes).
    #[test]
    fn the_process_table_is_reached_through_its_functions() {
        let s = Path::new("/tmp/table-test-doors");
        let p = PaneId::from_number(1);
        assert!(!prints_osc133(s, p));
        set_osc133(s, p, true);
        assert!(prints_osc133(s, p));
        assert_eq!(prompt_rows(s, p), 1);
        set_prompt_rows(s, p, 2);
        assert_eq!(prompt_rows(s, p), 2);
        let e = Arc::new(at("t-doors", "/tmp/table-test-doors", 1).of_session(0xd0));
        insert(e.clone()).unwrap();
        assert!(check_free(s, p).is_err());
        assert!(get("t-doors", 0xd0).is_ok());
        end_session(0xd0);
        check_free(s, p).unwrap();
        assert!(matches!(e.progress(), Progress::Lost(_)));
    }

    #[test]
    fn the_first_end_stays_and_wakes_a_waiter() {
        let e = entry("t-c", 9002);
        let e2 = e.clone();
        let t = std::thread::spawn(move || {
            e2.wait(
                Instant::now() + Duration::from_secs(30),
                Duration::from_millis(50),
                || false,
            )
        });
        e.finish(Progress::Ended {
            status: Some(3),
            at: None,
        });
        e.finish(Progress::Lost(ToolError::invalid("late")));
        assert!(matches!(
            t.join().unwrap(),
            Progress::Ended {
                status: Some(3),
                ..
            }
        ));
    }
}
