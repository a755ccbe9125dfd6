//! The thread that watches one command until it ends: it outlives the
//! run_command call that started it, so wait_for_command finds the end
//! even when nobody was waiting at that moment.
//!
//! It reads the pane's raw output from tmux's event stream
//! ([`OutputMode::Bytes`](crate::tmux::events::OutputMode::Bytes)), or,
//! where the stream does not cover the pane (the control client shows
//! another session, events are off), from the pane's [`Tap`], through the
//! [`Detector`]. Only where neither gives the bytes (the pane already
//! pipes elsewhere, the tap never connected, the stream dropped output) it
//! looks for the marker in captures of the screen instead, 25 ms at first,
//! backing off to 250 ms: a screen the command can draw on, so a marker
//! there counts only once the shell is back at its prompt.
//!
//! An interrupted command (C-c) makes bash drop the rest of the typed line,
//! the marker's printf included. So while no end was seen, the watcher
//! checks every half second whether the pane is back at its prompt (the
//! pane's own shell leads the terminal's foreground process group, so not
//! a nested shell the command started, and the terminal is out of
//! canonical mode: a line editor is reading); seen twice in a row, it types the
//! marker's printf again, once, which prints the status the interrupted
//! command left in `$?` (130 for C-c in bash).
//!
//! A round trip tmux does not answer by its deadline (tmux stopped) is no
//! news: the command stays watched, as a wait's probe does.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::detect::{Detector, LineEnd, Sign};
use super::table::{self, Completion, Entry, Progress, WATCH_FOR};
use super::tap::{self, Tap};
use super::{seat, shell};
use crate::tmux::events::{StreamEvent, Subscription};
use crate::tmux::{CaptureOptions, CaptureRange, CaptureRequest, Tmux, TmuxCommand, TmuxError};
use crate::tools::context::ToolError;

const POLL_FIRST: Duration = Duration::from_millis(25);
const POLL_MAX: Duration = Duration::from_millis(250);
/// How often an unfinished command's pane is checked for a bare prompt.
const PROMPT_CHECK: Duration = Duration::from_millis(500);
/// After the marker, how long OSC 133 marks are listened for (to learn
/// that the pane's shell prints them).
const LEARN_FOR: Duration = Duration::from_millis(1000);

/// One watched command.
pub struct Watcher {
    entry: Arc<Entry>,
    tmux: Tmux,
    sub: Option<Subscription>,
    /// The pane's output through `pipe-pane`, where the stream misses it.
    tap: Option<Tap>,
    detector: Detector,
    /// Whether the output left its last line open, up to the first D mark
    /// (`None` once that mark was seen).
    line: Option<LineEnd>,
    /// The pane's own process and its terminal.
    process: (Option<u32>, String),
    /// The marker was seen in the event stream: OSC 133 marks after it
    /// are the shell's.
    marker_in_stream: bool,
    /// The name of the pane's own process when the command was typed into
    /// it (it led the terminal then).
    own_shell: Option<String>,
    round_trip: Duration,
    poll_every: Duration,
    next_poll: Instant,
    /// Output was lost since the last poll: poll at the next turn.
    lost: bool,
    next_prompt_check: Instant,
    prompt_seen: u32,
    retyped: bool,
}

impl Watcher {
    /// Watches `entry` (typed into its pane after this is made) through
    /// `sub` or `tap`, if any; `round_trip` bounds each tmux request.
    pub fn new(
        entry: Arc<Entry>,
        tmux: Tmux,
        (sub, tap): (Option<Subscription>, Option<Tap>),
        round_trip: Duration,
    ) -> Watcher {
        let process = entry.process.clone();
        let token = match &entry.completion {
            Completion::Marker { token, .. } => token.clone(),
            Completion::Osc133 => String::new(),
        };
        let now = Instant::now();
        let own_shell = process
            .0
            .filter(|&pid| seat::in_foreground(pid) == Some(true))
            .and_then(seat::name_of);
        Watcher {
            entry,
            tmux,
            sub,
            tap,
            detector: Detector::new(&token),
            line: Some(LineEnd::default()),
            process,
            marker_in_stream: false,
            own_shell,
            round_trip,
            poll_every: POLL_FIRST,
            next_poll: now + POLL_FIRST,
            lost: false,
            next_prompt_check: now + PROMPT_CHECK,
            prompt_seen: 0,
            retyped: false,
        }
    }

    /// Runs on its own thread until the command ends or is given up.
    pub fn spawn(self) -> Result<(), ToolError> {
        std::thread::Builder::new()
            .name("run-command-watch".into())
            .spawn(move || self.run())
            .map(drop)
            .map_err(|e| ToolError::internal(format!("cannot start a thread to watch: {e}")))
    }

    fn run(mut self) {
        self.watch();
        if let Some(tap) = self.tap.take() {
            tap.close(&self.tmux, Instant::now() + self.round_trip);
        }
        if matches!(self.entry.progress(), Progress::Ended { .. }) {
            self.learn_osc133();
        }
    }

    /// Until the command ends or is given up.
    fn watch(&mut self) {
        let give_up = self.entry.started + WATCH_FOR;
        while self.entry.progress() == Progress::Running {
            let now = Instant::now();
            if now >= give_up {
                self.entry
                    .finish(Progress::Lost(ToolError::timed_out(format!(
                        "panescan stopped watching command {} after {} minutes",
                        self.entry.id,
                        WATCH_FOR.as_secs() / 60
                    ))));
                return;
            }
            if let Err(e) = self.step() {
                self.entry.finish(Progress::Lost(e));
                return;
            }
        }
    }

    /// Whether the pane's raw output reaches this watcher (the stream
    /// covers it, or its tap is connected or still connecting).
    fn covered(&self) -> bool {
        let tapped = self
            .tap
            .as_ref()
            .is_some_and(|t| t.state() != tap::State::Gone);
        tapped
            || self.sub.as_ref().is_some_and(|s| {
                let c = s.coverage();
                c.live && c.panes.contains(&self.entry.pane)
            })
    }

    /// One wake-up: events, a poll when due, a prompt check when due.
    fn step(&mut self) -> Result<(), ToolError> {
        let covered = self.covered();
        let now = Instant::now();
        let mut until = self.next_prompt_check;
        if !covered || self.lost {
            until = until.min(self.next_poll);
        }
        let until = until.max(now).min(now + POLL_MAX);
        let mut events = Vec::new();
        match (&mut self.tap, &self.sub) {
            (Some(tap), _) if tap.state() != tap::State::Gone => {
                let pane = self.entry.pane;
                events.extend(
                    tap.recv(until)
                        .into_iter()
                        .map(|data| StreamEvent::Output { pane, data }),
                );
            }
            (_, Some(sub)) => {
                let mut next = sub.recv_deadline(until);
                while let Some(event) = next {
                    events.push(event);
                    next = sub.try_recv();
                }
            }
            _ => std::thread::sleep(until.saturating_duration_since(now)),
        }
        for event in events {
            self.lost |= self.take(event);
        }
        if self.entry.progress() != Progress::Running {
            return Ok(());
        }
        let now = Instant::now();
        // Lost output (a flooding command overruns the channel) asks for a
        // poll, at the polling pace: not a capture per wake-up.
        if (self.lost || !covered) && now >= self.next_poll {
            self.lost = false;
            self.poll()?;
        }
        if now >= self.next_prompt_check {
            self.next_prompt_check = now + PROMPT_CHECK;
            self.check_replaced()?;
            self.check_prompt()?;
        }
        Ok(())
    }

    /// Takes one event; returns whether a poll is needed (output was lost).
    fn take(&mut self, event: StreamEvent) -> bool {
        match event {
            StreamEvent::Output { pane, data } if pane == self.entry.pane => {
                self.follow_line(&data);
                for sign in self.detector.feed(&data) {
                    self.signed(sign, true);
                }
                false
            }
            StreamEvent::Resync => true,
            _ => false,
        }
    }

    /// With OSC 133: whether the output up to the first D mark (the
    /// shell's, at the command's end) left its last line unfinished.
    fn follow_line(&mut self, data: &[u8]) {
        if self.entry.completion != Completion::Osc133 {
            return;
        }
        let Some(line) = self.line.as_mut() else {
            return;
        };
        const MARK: &[u8] = b"\x1b]133;D";
        match data.windows(MARK.len()).position(|w| w == MARK) {
            Some(at) => {
                line.feed(&data[..at]);
                let open = line.open();
                *crate::sync::lock(&self.entry.open_text) = line.open_text();
                self.entry
                    .open_line
                    .store(open, std::sync::atomic::Ordering::Release);
                self.line = None;
            }
            None => line.feed(data),
        }
    }

    /// Takes a sign found in the event stream (`from_stream`) or in a
    /// capture of the screen.
    fn signed(&mut self, sign: Sign, from_stream: bool) {
        let status = match (&self.entry.completion, sign) {
            (Completion::Marker { .. }, Sign::Marker(s)) => {
                self.marker_in_stream |= from_stream;
                Some(s)
            }
            (Completion::Osc133, Sign::Osc133(s)) => s,
            (Completion::Marker { .. }, Sign::Osc133(_)) => {
                // Only the shell prints after the marker, in the stream's
                // order: then it prints marks. A mark the command printed
                // (before the marker) teaches nothing, even when a capture
                // saw the marker before the stream brought that mark.
                if self.marker_in_stream {
                    table::set_osc133(&self.entry.socket, self.entry.pane, true);
                }
                return;
            }
            _ => return,
        };
        self.entry.finish(Progress::Ended {
            status,
            at: Some(Instant::now()),
        });
    }

    /// Looks for the marker on the screen (and the rows just above it).
    fn poll(&mut self) -> Result<(), ToolError> {
        let Completion::Marker { token, .. } = &self.entry.completion else {
            // A capture holds no escapes, so no OSC 133 mark: nothing to
            // look for. The pace still holds: a stream that stops covering
            // the pane (the pane moved to another session) must not make
            // every step a poll that returns at once, a spinning thread.
            self.next_poll = Instant::now() + POLL_MAX;
            return Ok(());
        };
        let token = token.clone();
        let rx = self.tmux.capture_small(
            vec![CaptureRequest {
                pane: self.entry.pane,
                range: CaptureRange::Scrollback(64),
            }],
            CaptureOptions {
                join_wrapped: true,
                escapes: false,
            },
            Instant::now() + self.round_trip,
            Arc::new(AtomicBool::new(false)),
        );
        let reply = match rx.recv_timeout(self.round_trip + Duration::from_secs(1)) {
            Ok(reply) => reply.result,
            Err(_) => Err(TmuxError::Timeout),
        };
        let cap = match reply {
            Ok(cap) => cap,
            // tmux stood still past the round trip's deadline: no news;
            // the command is still watched and looked for again.
            Err(TmuxError::Timeout) => {
                self.next_poll = Instant::now() + self.poll_every;
                return Ok(());
            }
            Err(e) => return Err(self.pane_error(e)),
        };
        let mut fresh = Detector::new(&token);
        // The screen can be drawn by the command (cursor moves, deletes
        // over the echoed line's pieces): a marker seen there counts only
        // once the shell is back at its prompt, and the lowest one, which
        // the shell printed after anything the command drew, gives the
        // status.
        let last = fresh.feed(&cap.bytes).into_iter().last();
        let moved = last.is_some();
        if let Some(sign) = last {
            if seat::at_prompt(self.process.0, &self.process.1) != Some(false) {
                self.signed(sign, false);
            }
        }
        self.poll_every = if moved {
            POLL_FIRST
        } else {
            (self.poll_every * 3 / 2).min(POLL_MAX)
        };
        self.next_poll = Instant::now() + self.poll_every;
        Ok(())
    }

    /// Takes what the pane printed up to now: from its tap when that
    /// is connected, else from a capture of its screen.
    fn look_again(&mut self) -> Result<(), ToolError> {
        let Some(tap) = self.tap.as_mut().filter(|t| t.state() == tap::State::Live) else {
            return self.poll();
        };
        for data in tap.recv(Instant::now()) {
            for sign in self.detector.feed(&data) {
                self.signed(sign, true);
            }
        }
        Ok(())
    }

    fn pane_error(&self, e: TmuxError) -> ToolError {
        match e {
            TmuxError::NotFound(_) => ToolError::not_found(format!(
                "pane {} closed while command {} ran",
                self.entry.pane, self.entry.id
            )),
            e => ToolError::from(e),
        }
    }

    /// Whether the command replaced the pane's shell with another (`exec
    /// dash`): the marker or mark after it will never come, and the other
    /// shell's prompt may not be seen (dash has no line editor). The
    /// command is then released with an error that says so, never held
    /// for [`WATCH_FOR`].
    fn check_replaced(&self) -> Result<(), ToolError> {
        let (Some(pid), Some(was)) = (self.process.0, &self.own_shell) else {
            return Ok(());
        };
        if seat::in_foreground(pid) != Some(true) {
            return Ok(());
        }
        match seat::name_of(pid) {
            Some(now) if &now != was && shell::Shell::of(&now).is_some() => {
                Err(ToolError::refused(format!(
                    "command {} replaced pane {}'s shell ({was}) with {now} (exec): panescan cannot see its end there; the pane is free for run_command again",
                    self.entry.id, self.entry.pane
                )))
            }
            _ => Ok(()),
        }
    }

    /// Whether the pane is back at its prompt without a marker: then types
    /// the marker command again (once, after two sightings).
    fn check_prompt(&mut self) -> Result<(), ToolError> {
        let Completion::Marker { command, .. } = &self.entry.completion else {
            return Ok(());
        };
        let command = command.clone();
        if self.retyped || self.entry.started.elapsed() < PROMPT_CHECK {
            return Ok(());
        }
        let probe = TmuxCommand::new("display-message")
            .flag("-p")
            .target(self.entry.pane)
            .format_arg("#{pane_dead}\t#{pane_current_command}\t#{pane_tty}\t#{pane_pid}");
        let text = match self.tmux.run(&probe, Instant::now() + self.round_trip) {
            Ok(text) => text,
            // No answer is no news (a stopped tmux): the next check looks
            // again, and two sightings in a row are needed anew.
            Err(TmuxError::Timeout) => {
                self.prompt_seen = 0;
                return Ok(());
            }
            Err(e) => return Err(self.pane_error(e)),
        };
        let fields: Vec<&str> = text.trim_end_matches('\n').split('\t').collect();
        let [dead, current, tty, pid] = fields[..] else {
            return Err(ToolError::not_found(format!(
                "pane {} closed while command {} ran",
                self.entry.pane, self.entry.id
            )));
        };
        if dead == "1" {
            return Err(ToolError::not_found(format!(
                "pane {}'s program exited while command {} ran",
                self.entry.pane, self.entry.id
            )));
        }
        // The pane's own shell (not a nested one the command started) in
        // the foreground, its line editor reading.
        let own = pid
            .parse::<u32>()
            .ok()
            .and_then(seat::in_foreground)
            .unwrap_or(false);
        let at_prompt = own
            && shell::Shell::of(current).is_some()
            && seat::line_editor_reading(tty) == Some(true);
        self.prompt_seen = if at_prompt { self.prompt_seen + 1 } else { 0 };
        if self.prompt_seen < 2 {
            return Ok(());
        }
        // The marker may have been printed just now: look once more.
        self.look_again()?;
        if self.entry.progress() != Progress::Running {
            return Ok(());
        }
        self.retyped = true;
        let pane = self.entry.pane;
        // Behind a space, as the first time: out of the history where the
        // shell keeps such lines out.
        let keys = [
            TmuxCommand::new("send-keys")
                .flag("-l")
                .target(pane)
                .arg("--")
                .arg(&format!(" {command}")),
            TmuxCommand::new("send-keys").target(pane).arg("Enter"),
        ];
        for r in self.tmux.run_many(&keys, Instant::now() + self.round_trip) {
            match r {
                // Sent or not, the marker is looked for as before.
                Ok(_) | Err(TmuxError::Timeout) => {}
                Err(e) => return Err(self.pane_error(e)),
            }
        }
        Ok(())
    }

    /// After a marker ended the command, an OSC 133 D mark soon after
    /// means the shell prints them: the next command in this pane is typed
    /// bare and ended by the mark.
    fn learn_osc133(mut self) {
        if !matches!(self.entry.completion, Completion::Marker { .. }) {
            return;
        }
        let Some(sub) = self.sub.take() else {
            return;
        };
        let until = Instant::now() + LEARN_FOR;
        while !table::prints_osc133(&self.entry.socket, self.entry.pane) {
            let Some(event) = sub.recv_deadline(until) else {
                return;
            };
            if let StreamEvent::Output { pane, data } = event {
                if pane == self.entry.pane {
                    for sign in self.detector.feed(&data) {
                        self.signed(sign, true);
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use crate::config::Ceilings;
    use crate::testbed::private_server::PrivateServer;
    use crate::tmux::{PaneId, ServerSpec};
    use crate::tools::context::{ErrorKind, ServerArgs, ToolContext};
    use std::path::{Path, PathBuf};

    const TOKEN: &str = "__psAB12cd34ef56";
    const PANE: u32 = 7;

    /// A watcher of a command in pane %7 of a server that is not there
    /// (a socket path of the test's own: nothing reaches a tmux, and the
    /// table's panes that print marks are the test's alone).
    fn watcher(socket: &str, completion: Completion) -> Watcher {
        let path = PathBuf::from(socket);
        let entry = entry(
            "w",
            path.clone(),
            PaneId::from_number(PANE),
            completion,
            (None, String::new()),
        );
        let spec = ServerSpec {
            socket_path: Some(path),
            ..ServerSpec::default()
        };
        let tmux = Tmux::connect(&spec).unwrap();
        Watcher::new(entry, tmux, (None, None), Duration::from_secs(2))
    }

    fn marker() -> Completion {
        Completion::Marker {
            token: TOKEN.into(),
            key: "cd34ef56".into(),
            command: "printf '%s%s:%s\\n' __psAB12 cd34ef56 \"$?\"".into(),
        }
    }

    fn output(pane: u32, data: &[u8]) -> StreamEvent {
        StreamEvent::Output {
            pane: PaneId::from_number(pane),
            data: data.to_vec(),
        }
    }

    fn status(w: &Watcher) -> Option<Option<i32>> {
        match w.entry.progress() {
            Progress::Ended { status, .. } => Some(status),
            _ => None,
        }
    }

    /// The marker ends the command with the status it carries, in its own
    /// pane's output only; a resync (output lost) asks for a poll.
    #[test]
    fn the_marker_in_its_panes_output_ends_the_command() {
        let mut w = watcher("/tmp/watcher-test-marker", marker());
        assert!(!w.covered(), "neither a stream nor a tap");
        let line = format!("out\r\n{TOKEN}:3\r\n");
        assert!(!w.take(output(PANE + 1, line.as_bytes())));
        assert_eq!(status(&w), None, "another pane's marker");
        assert!(!w.take(output(PANE, line.as_bytes())));
        assert_eq!(status(&w), Some(Some(3)));
        assert!(w.take(StreamEvent::Resync));
    }

    /// The forged mark: a command that prints an OSC 133 D mark itself
    /// (before its marker) does not teach that the pane's shell prints
    /// them, nor does a mark after a marker only a capture saw (the stream
    /// may still bring the command's own output). A mark after the marker
    /// in the stream is the shell's.
    #[test]
    fn only_a_mark_after_the_marker_in_the_stream_is_the_shells() {
        let mark = b"\x1b]133;D;0\x07";
        let end = format!("{TOKEN}:0\r\n");
        let socket = "/tmp/watcher-test-forged";
        let mut w = watcher(socket, marker());
        w.take(output(PANE, mark));
        assert_eq!(status(&w), None, "a mark does not end a marker's command");
        w.take(output(PANE, end.as_bytes()));
        assert_eq!(status(&w), Some(Some(0)));
        assert!(!table::prints_osc133(
            Path::new(socket),
            PaneId::from_number(PANE)
        ));
        w.take(output(PANE, mark));
        assert!(table::prints_osc133(
            Path::new(socket),
            PaneId::from_number(PANE)
        ));

        let socket = "/tmp/watcher-test-captured";
        let mut w = watcher(socket, marker());
        w.signed(Sign::Marker(0), false);
        assert_eq!(status(&w), Some(Some(0)));
        w.take(output(PANE, mark));
        assert!(!table::prints_osc133(
            Path::new(socket),
            PaneId::from_number(PANE)
        ));
    }

    /// With OSC 133 the shell's D mark ends the command (a marker does
    /// not), and whether the output left its last line open, and its
    /// text, are kept from what came before the mark.
    #[test]
    fn with_osc133_the_mark_ends_it_and_the_open_line_is_kept() {
        let mut w = watcher("/tmp/watcher-test-osc", Completion::Osc133);
        w.take(output(PANE, format!("{TOKEN}:0\r\npartial").as_bytes()));
        assert_eq!(status(&w), None, "a marker does not end an OSC 133 command");
        w.take(output(PANE, b" line\x1b]133;D;2\x07\r\n$ "));
        assert_eq!(status(&w), Some(Some(2)));
        assert!(w.entry.open_line.load(std::sync::atomic::Ordering::Acquire));
        assert_eq!(
            crate::sync::lock(&w.entry.open_text).as_deref(),
            Some("partial line")
        );

        let mut w = watcher("/tmp/watcher-test-osc", Completion::Osc133);
        w.take(output(PANE, b"done\r\n\x1b]133;D\x07"));
        assert_eq!(status(&w), Some(None));
        assert!(!w.entry.open_line.load(std::sync::atomic::Ordering::Acquire));
        assert_eq!(*crate::sync::lock(&w.entry.open_text), None);
    }

    /// An OSC 133 command whose pane the stream does not cover (here:
    /// neither a stream nor a tap) has nothing to poll for, and is watched
    /// at the polling pace, not in a loop that never sleeps: each step
    /// waits (a lower bound, which load cannot break).
    #[test]
    fn an_uncovered_osc133_command_is_watched_at_a_pace() {
        let mut w = watcher("/tmp/watcher-test-pace", Completion::Osc133);
        w.step().unwrap();
        let t0 = Instant::now();
        for _ in 0..4 {
            w.step().unwrap();
        }
        assert_eq!(status(&w), None);
        assert!(
            t0.elapsed() >= 4 * POLL_FIRST,
            "4 steps in {:?}: the watcher spins",
            t0.elapsed()
        );
    }

    /// A command whose server is gone is given up with tmux's error (not
    /// held until the hour is out, nor called too long).
    #[test]
    fn a_command_on_a_server_that_is_gone_is_given_up() {
        let mut w = watcher("/tmp/watcher-test-gone/no-socket", marker());
        let t0 = Instant::now();
        w.watch();
        let Progress::Lost(e) = w.entry.progress() else {
            panic!("{:?}", w.entry.progress());
        };
        assert_ne!(e.kind, ErrorKind::TimedOut, "{e}");
        assert!(t0.elapsed() < Duration::from_secs(60), "{:?}", t0.elapsed());
    }

    /// A table entry `id` for the command `true` in `pane` of the server
    /// at `path`, its shell `shell` (pid, tty).
    fn entry(
        id: &str,
        path: std::path::PathBuf,
        pane: PaneId,
        completion: Completion,
        shell: (Option<u32>, String),
    ) -> Arc<Entry> {
        Arc::new(Entry::new(
            id.into(),
            ServerArgs::default(),
            path,
            pane,
            "true".into(),
            completion,
            (0, (0, 0)),
            shell,
        ))
    }

    /// A private server whose pane %0 runs `cat` (what it is sent shows
    /// on the screen), and a watcher of a command in that pane with
    /// neither a stream nor a tap: it polls. The round trip is under a
    /// second (the capture's reply is awaited a second longer).
    fn polled(label: &str, completion: Completion) -> (PrivateServer, Watcher) {
        let (server, tmux) = cat_server(label);
        let entry = entry(
            "p",
            server.socket_path().unwrap(),
            PaneId::parse("%0").unwrap(),
            completion,
            (None, String::new()),
        );
        let w = Watcher::new(entry, tmux, (None, None), Duration::from_millis(900));
        (server, w)
    }

    /// A private server whose pane %0 runs `cat` (what it is sent shows
    /// on the screen), and a handle on it.
    fn cat_server(label: &str) -> (PrivateServer, Tmux) {
        let server = PrivateServer::start(label, 80, 10).unwrap();
        server
            .run_ok(["respawn-pane", "-k", "-t", "%0", "cat"])
            .unwrap();
        let ctx =
            ToolContext::read_only(ServerSpec::named(server.socket_name()), Ceilings::default());
        let tmux = ctx.tmux(&ServerArgs::default()).unwrap();
        (server, tmux)
    }

    /// A subscription to `pane`'s raw output on `tmux`, once its stream is
    /// live.
    fn live_stream(tmux: &Tmux, pane: PaneId) -> Subscription {
        use crate::tmux::events::{Interest, OutputMode, Watch};
        let sub = tmux.subscribe(
            Interest {
                watch: Watch::Panes([pane].into_iter().collect()),
                mode: OutputMode::Bytes,
                structure: false,
            },
            Instant::now() + Duration::from_secs(5),
        );
        let until = Instant::now() + Duration::from_secs(10);
        while !sub.coverage().live && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(sub.coverage().live, "the stream never came up");
        sub
    }

    /// Polls (neither a stream nor a tap): a screen without the marker
    /// slows the pace by half each time (25 ms, 37.5, 56.25, up to 250)
    /// and sets the next poll that far ahead; the marker on the screen
    /// ends the command with its status (no pane process known: not
    /// certainly away from the prompt) and brings the pace back to 25 ms.
    #[test]
    fn a_polled_screen_paces_the_polls_and_its_marker_ends_the_command() {
        let (server, mut w) = polled("watcher-poll", marker());
        for pace in [POLL_FIRST * 3 / 2, POLL_FIRST * 9 / 4] {
            let t0 = Instant::now();
            w.poll().unwrap();
            assert_eq!(status(&w), None);
            assert_eq!(w.poll_every, pace);
            assert!(w.next_poll >= t0 + pace, "the next poll is not ahead");
        }
        server
            .run_ok(["send-keys", "-t", "%0", "-l", &format!("{TOKEN}:5")])
            .unwrap();
        server.run_ok(["send-keys", "-t", "%0", "Enter"]).unwrap();
        let until = Instant::now() + Duration::from_secs(20);
        while status(&w).is_none() && Instant::now() < until {
            w.poll().unwrap();
            std::thread::sleep(POLL_FIRST);
        }
        assert_eq!(status(&w), Some(Some(5)));
        assert_eq!(w.poll_every, POLL_FIRST);
    }

    /// A command's end seen in the stream, then an OSC 133 D mark in the
    /// same pane within [`LEARN_FOR`]: the spawned watcher (`run`) ends
    /// the command and learns that the pane's shell prints marks. `cat`
    /// writes the mark's bytes back raw (the terminal echoes them as
    /// `^[`, which is no mark).
    #[test]
    fn a_mark_after_the_marker_in_the_stream_teaches_the_pane_marks() {
        let (server, tmux) = cat_server("watcher-learn");
        let pane = PaneId::parse("%0").unwrap();
        let socket = server.socket_path().unwrap();
        let sub = live_stream(&tmux, pane);
        let entry = entry("l", socket.clone(), pane, marker(), (None, String::new()));
        let w = Watcher::new(
            entry.clone(),
            tmux,
            (Some(sub), None),
            Duration::from_secs(2),
        );
        w.spawn().unwrap();
        assert!(!table::prints_osc133(&socket, pane));
        for keys in [format!("{TOKEN}:4"), "\x1b]133;D;0\x07".to_string()] {
            server
                .run_ok(["send-keys", "-t", "%0", "-l", &keys])
                .unwrap();
            server.run_ok(["send-keys", "-t", "%0", "Enter"]).unwrap();
        }
        let until = Instant::now() + Duration::from_secs(10);
        while !table::prints_osc133(&socket, pane) && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(matches!(
            entry.progress(),
            Progress::Ended {
                status: Some(4),
                ..
            }
        ));
        assert!(
            table::prints_osc133(&socket, pane),
            "the mark taught nothing"
        );
    }

    /// A live stream covers only the panes it reports: a watcher of a
    /// pane the stream was not asked for is not covered (it polls), one
    /// of the pane it reports is.
    #[test]
    fn a_live_stream_covers_only_the_panes_it_reports() {
        let (server, tmux) = cat_server("watcher-cover");
        let socket = server.socket_path().unwrap();
        let watching = |pane: &str| {
            let pane = PaneId::parse(pane).unwrap();
            let sub = live_stream(&tmux, PaneId::parse("%0").unwrap());
            let entry = entry("c", socket.clone(), pane, marker(), (None, String::new()));
            Watcher::new(
                entry,
                tmux.clone(),
                (Some(sub), None),
                Duration::from_secs(2),
            )
        };
        assert!(watching("%0").covered());
        assert!(
            !watching("%9").covered(),
            "a pane the stream does not report"
        );
    }

    /// A flood overruns the stream's channel while the watcher is away:
    /// the marker printed after it is lost from the stream, the resync
    /// asks for a poll, and the poll finds the marker on the screen.
    #[test]
    fn a_marker_lost_in_a_flood_is_found_by_the_poll_the_resync_asks_for() {
        let (server, tmux) = cat_server("watcher-flood");
        let pane = PaneId::parse("%0").unwrap();
        let sub = live_stream(&tmux, pane);
        let socket = server.socket_path().unwrap();
        let entry = entry("f", socket, pane, marker(), (None, String::new()));
        let mut w = Watcher::new(entry, tmux, (Some(sub), None), Duration::from_secs(2));
        assert!(w.covered());
        let flood = format!("seq 1 200000; echo {TOKEN}:3; exec cat");
        server
            .run_ok(["respawn-pane", "-k", "-t", "%0", &flood])
            .unwrap();
        let shown = Instant::now() + Duration::from_secs(20);
        let screen = || server.run_ok(["capture-pane", "-p", "-t", "%0"]).unwrap();
        while !screen().contains(TOKEN) {
            assert!(Instant::now() < shown, "the marker never showed");
            std::thread::sleep(Duration::from_millis(50));
        }
        let until = Instant::now() + Duration::from_secs(10);
        while status(&w).is_none() && Instant::now() < until {
            w.step().unwrap();
        }
        assert_eq!(status(&w), Some(Some(3)));
    }

    /// A private server whose pane %0 runs bash at its prompt (no rc
    /// files, its prompt `ps> `), and a watcher of a command in it whose
    /// marker command is `marker` (a capture of the screen is its only
    /// view), made longer than a prompt check ago: the check looks.
    fn at_bash(label: &str, marker: &str) -> (PrivateServer, Watcher) {
        let server = PrivateServer::start(label, 80, 10).unwrap();
        let bash = "env PS1='ps> ' HISTFILE=/dev/null bash --norc --noprofile";
        server
            .run_ok(["respawn-pane", "-k", "-t", "%0", bash])
            .unwrap();
        let found = server
            .run_ok([
                "display-message",
                "-p",
                "-t",
                "%0",
                "#{pane_pid} #{pane_tty}",
            ])
            .unwrap();
        let (pid, tty) = found.trim().split_once(' ').unwrap();
        let until = Instant::now() + Duration::from_secs(20);
        while seat::line_editor_reading(tty) != Some(true) && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(20));
        }
        let ctx =
            ToolContext::read_only(ServerSpec::named(server.socket_name()), Ceilings::default());
        let tmux = ctx.tmux(&ServerArgs::default()).unwrap();
        let completion = Completion::Marker {
            token: TOKEN.into(),
            key: "cd34ef56".into(),
            command: marker.into(),
        };
        let entry = entry(
            "b",
            server.socket_path().unwrap(),
            PaneId::parse("%0").unwrap(),
            completion,
            (pid.parse().ok(), tty.to_owned()),
        );
        let w = Watcher::new(entry, tmux, (None, None), Duration::from_secs(5));
        std::thread::sleep(PROMPT_CHECK);
        (server, w)
    }

    /// The screen's lines, trailing blanks dropped, once `line` is on it
    /// and the prompt is the last line that is not blank (or 20 s passed).
    fn lines_after(server: &PrivateServer, line: &str) -> Vec<String> {
        let until = Instant::now() + Duration::from_secs(20);
        loop {
            let screen = server.run_ok(["capture-pane", "-p", "-t", "%0"]).unwrap();
            let lines: Vec<String> = screen.lines().map(|l| l.trim_end().to_owned()).collect();
            let last = lines.iter().rev().find(|l| !l.is_empty());
            let shown = lines.iter().any(|l| l == line) && last.is_some_and(|l| l == "ps>");
            if shown || Instant::now() >= until {
                return lines;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// A pane back at its prompt without a marker: the second sighting in
    /// a row (not the first) types the marker command again, behind a
    /// space, once: later sightings type nothing more. (Here the marker
    /// command prints no marker, so the command stays running; the keys
    /// typed after the checks come after anything they typed.)
    #[test]
    fn a_bare_prompt_seen_twice_types_the_marker_again_once() {
        let (server, mut w) = at_bash("watcher-retype", "echo typed'-'again");
        w.check_prompt().unwrap();
        assert!(!w.retyped, "typed again at the first sighting");
        w.check_prompt().unwrap();
        assert!(w.retyped, "not typed again at the second sighting");
        for _ in 0..3 {
            w.check_prompt().unwrap();
        }
        assert_eq!(status(&w), None);
        server
            .run_ok(["send-keys", "-t", "%0", "echo checked'-'out", "Enter"])
            .unwrap();
        let lines = lines_after(&server, "checked-out");
        let typed: Vec<&String> = lines.iter().filter(|l| *l == "typed-again").collect();
        assert_eq!(typed.len(), 1, "{lines:#?}");
        assert!(
            lines.contains(&"ps>  echo typed'-'again".to_owned()),
            "{lines:#?}"
        );
    }

    /// Waits (up to 20 s) until bash's own process leads the terminal
    /// (`own`) and the line editor reads (`reading`) as asked.
    fn seat_is(w: &Watcher, own: bool, reading: bool) {
        let (pid, tty) = (w.process.0.unwrap(), &w.process.1);
        let until = Instant::now() + Duration::from_secs(20);
        while (seat::in_foreground(pid) != Some(own)
            || seat::line_editor_reading(tty) != Some(reading))
            && Instant::now() < until
        {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert_eq!(seat::in_foreground(pid), Some(own));
        assert_eq!(seat::line_editor_reading(tty), Some(reading));
    }

    /// Not at its prompt, however often seen, nothing is typed: bash's own
    /// process reading a line of its own (`read`, the terminal canonical),
    /// nor a program that leads with the terminal out of canonical mode.
    #[test]
    fn a_pane_away_from_its_prompt_is_not_typed_into() {
        let (server, mut w) = at_bash("watcher-away", "echo typed'-'again");
        let keys = |k: &[&str]| {
            let mut cmd = vec!["send-keys", "-t", "%0"];
            cmd.extend(k);
            server.run_ok(cmd).unwrap();
        };
        keys(&["read x", "Enter"]);
        seat_is(&w, true, false);
        for _ in 0..3 {
            w.check_prompt().unwrap();
        }
        assert!(!w.retyped, "typed into the shell's read");
        keys(&["x", "Enter", "stty -icanon; sleep 30", "Enter"]);
        seat_is(&w, false, true);
        for _ in 0..3 {
            w.check_prompt().unwrap();
        }
        assert!(!w.retyped, "typed into a program");
        keys(&["C-c"]);
    }

    /// A pane whose shell the command replaced (`exec sh`) is released
    /// with a refusal that says so; the pane's own bash at its prompt, or
    /// running a program, is not.
    #[test]
    fn a_shell_replaced_by_exec_is_refused_and_its_own_is_not() {
        let (server, w) = at_bash("watcher-exec", "echo typed'-'again");
        assert_eq!(w.own_shell.as_deref(), Some("bash"));
        w.check_replaced().unwrap();
        server
            .run_ok(["send-keys", "-t", "%0", "sleep 30", "Enter"])
            .unwrap();
        seat_is(&w, false, false);
        w.check_replaced().unwrap();
        server
            .run_ok(["send-keys", "-t", "%0", "C-c", "exec sh", "Enter"])
            .unwrap();
        let pid = w.process.0.unwrap();
        let until = Instant::now() + Duration::from_secs(20);
        while seat::name_of(pid).as_deref() != Some("sh") && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(20));
        }
        seat_is(&w, true, false);
        let e = w.check_replaced().unwrap_err();
        assert_eq!(e.kind, ErrorKind::Refused, "{e}");
        assert!(e.message.contains("(bash) with sh (exec)"), "{e}");
    }

    /// The last look before typing the marker again: a marker printed
    /// just before the second sighting ends the command with its status,
    /// and nothing is typed.
    #[test]
    fn a_marker_found_at_the_last_look_is_not_typed_again() {
        let (server, mut w) = at_bash("watcher-last-look", "echo typed'-'again");
        w.check_prompt().unwrap();
        let print = format!("printf '%s:7\\n' {TOKEN}");
        server
            .run_ok(["send-keys", "-t", "%0", &print, "Enter"])
            .unwrap();
        lines_after(&server, &format!("{TOKEN}:7"));
        w.check_prompt().unwrap();
        assert_eq!(status(&w), Some(Some(7)));
        assert!(!w.retyped);
    }

    /// A live tap is where the pane's output is read, not its screen: a
    /// marker the pane printed and then wiped off its screen and history
    /// still ends the command (read from the screen, it never would).
    #[test]
    fn a_live_taps_bytes_are_read_though_the_screen_was_wiped() {
        let (server, tmux) = cat_server("watcher-tap");
        let pane = PaneId::parse("%0").unwrap();
        let soon = || Instant::now() + Duration::from_secs(10);
        let mut tap = Tap::open(&tmux, pane, soon()).expect("tapped");
        while tap.state() == tap::State::Pending {
            assert!(tap
                .recv(Instant::now() + Duration::from_millis(100))
                .is_empty());
        }
        assert_eq!(tap.state(), tap::State::Live);
        let entry = entry(
            "t",
            server.socket_path().unwrap(),
            pane,
            marker(),
            (None, String::new()),
        );
        let mut w = Watcher::new(entry, tmux, (None, Some(tap)), Duration::from_millis(900));
        server
            .run_ok(["send-keys", "-t", "%0", "-l", &format!("{TOKEN}:4")])
            .unwrap();
        server.run_ok(["send-keys", "-t", "%0", "Enter"]).unwrap();
        // The echo and cat's copy: both went through the pane, and so
        // to its pipe.
        let shown = |n: usize| {
            let screen = server.run_ok(["capture-pane", "-p", "-t", "%0"]).unwrap();
            screen.matches(TOKEN).count() >= n
        };
        let until = soon();
        while !shown(2) && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(shown(2));
        server.run_ok(["send-keys", "-R", "-t", "%0"]).unwrap();
        server.run_ok(["clear-history", "-t", "%0"]).unwrap();
        let screen = server
            .run_ok(["capture-pane", "-p", "-S", "-", "-t", "%0"])
            .unwrap();
        assert!(!screen.contains(TOKEN), "not wiped: {screen:?}");
        let until = soon();
        while status(&w).is_none() && Instant::now() < until {
            w.look_again().unwrap();
            std::thread::sleep(Duration::from_millis(20));
        }
        assert_eq!(status(&w), Some(Some(4)));
    }

    /// A poll tmux does not answer in time (the server stopped) is no
    /// news: the command is still watched, and looked for again at the
    /// same pace, not at once. (The pace is set to a minute here, so no
    /// stall of the machine makes the next poll look due.)
    #[test]
    fn a_poll_tmux_does_not_answer_is_no_news() {
        let (server, mut w) = polled("watcher-poll-stopped", marker());
        w.poll().unwrap();
        let pace = Duration::from_secs(60);
        w.poll_every = pace;
        let stopped = server.stop().unwrap();
        w.poll().unwrap();
        stopped.resume();
        assert_eq!(status(&w), None);
        assert_eq!(w.poll_every, pace);
        assert!(w.next_poll > Instant::now(), "the next poll is due at once");
    }
}
