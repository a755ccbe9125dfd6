//! A session's raw output: a control client of its own attached to one
//! session with output on for every pane (`attach-session -E -f
//! ignore-size`: not read-only, since tmux 3.7's `send-keys` without `-c`
//! refuses a read-only best client), for a reader that must see every byte
//! of every pane of a server, such as the command ledger's follower of OSC 133 marks.
//!
//! Why one client per session: tmux 3.3a sends `%output` to a control
//! client only for panes in windows of the session it is attached to
//! (control.c, `control_write_output`), so the server's one control client
//! (`connection.rs`) sees one session. Each feed is an attached client of
//! its session that never types: the user's `client-attached` hook
//! runs once when it attaches, `session_attached` counts it, and the
//! window sizes ignore it. Its pid is left out of the clients panescan
//! counts.
//!
//! A feed given [`FeedCounts`] counts every pane's output there, on its
//! reader thread before the bytes go on (the journal paces its reads by
//! them, so tmux sends each byte to one client, not two).
//!
//! Must hold: a command run on a feed ([`SessionFeed::run`]) is answered
//! after every `%output` tmux queued for that client before it, and those
//! bytes reach the feed's channel before the answer returns; a feed whose
//! client closed or moved to another session says so once
//! ([`FeedEvent::Closed`]).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use crossbeam_channel::Sender;

use super::connection::{self, Control, Listener};
use super::feed_counts::FeedCounts;
use super::notification::{self, Notification, StructureEvent};
use super::{PaneId, SessionId, Tmux, TmuxCommand, TmuxError};

/// What the feeds of a reader tell it, on one channel (and its panes'
/// own pipes, where the reader taps them: the `Tap` variants).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FeedEvent {
    /// A pane of `session` printed `data` (raw bytes, escapes and all).
    Output {
        /// The feed's session.
        session: SessionId,
        /// The pane.
        pane: PaneId,
        /// The bytes, `%output`'s escapes undone.
        data: Vec<u8>,
    },
    /// A session was made or closed on the server (`%sessions-changed`).
    SessionsChanged,
    /// The feed of `session` is closed (the session or server died, its
    /// client was detached or moved to another session).
    Closed {
        /// The session it showed.
        session: SessionId,
    },
    /// A pane's own pipe connected: what it prints from now on comes
    /// through it too.
    TapConnected {
        /// The pane.
        pane: PaneId,
    },
    /// A pane printed `data`, read from its own pipe.
    Tapped {
        /// The pane.
        pane: PaneId,
        /// The raw bytes.
        data: Vec<u8>,
    },
    /// A pane's own pipe ended (the pane closed, or the pipe was closed or
    /// replaced by another).
    TapEnded {
        /// The pane.
        pane: PaneId,
    },
    /// The reader's own mark in its queue: the events before it came from
    /// `pane`'s feed, those after it from its pipe.
    TapLive {
        /// The pane.
        pane: PaneId,
    },
}

/// One session's feed; closed (its client detached) when dropped.
#[derive(Debug)]
pub struct SessionFeed {
    session: SessionId,
    control: Arc<Control>,
    connection: Arc<connection::Shared>,
}

impl SessionFeed {
    /// The session it shows.
    pub fn session(&self) -> SessionId {
        self.session
    }

    /// Its client's name for tmux (`-t` of `refresh-client`): a control
    /// client without a terminal is `client-PID`.
    pub fn client_name(&self) -> String {
        format!("client-{}", self.control.client_pid)
    }

    /// Runs `command` on the feed's own client: its answer comes after
    /// every `%output` queued for this client before it, and those bytes
    /// are on the channel by the time it returns.
    pub fn run(&self, command: &TmuxCommand, deadline: Instant) -> Result<String, TmuxError> {
        let rx = self
            .control
            .send(command)
            .ok_or_else(|| TmuxError::Command("a command with no valid line".into()))?;
        connection::wait_text(&rx, deadline)
    }
}

impl Drop for SessionFeed {
    fn drop(&mut self) {
        self.connection.forget_feed(self.control.client_pid);
    }
}

impl Tmux {
    /// Attaches a feed to `session`: every pane's output, structure news
    /// and the feed's end go to `events`, and each pane's output is
    /// counted into `counts` if given.
    pub fn feed(
        &self,
        session: SessionId,
        events: Sender<FeedEvent>,
        counts: Option<Arc<FeedCounts>>,
        deadline: Instant,
    ) -> Result<SessionFeed, TmuxError> {
        let listener = Arc::new(FeedListener {
            session,
            events,
            closed: AtomicBool::new(false),
            counts,
            counting: AtomicBool::new(false),
        });
        let connection = self.inner.connection().clone();
        let control = connection.attach_feed(&session.to_string(), listener.clone(), deadline)?;
        // tmux answered on the feed: every byte printed from now on is
        // sent to it.
        listener.start_counting();
        Ok(SessionFeed {
            session,
            control,
            connection,
        })
    }
}

/// Turns a feed client's notification lines into [`FeedEvent`]s.
#[derive(Debug)]
struct FeedListener {
    session: SessionId,
    events: Sender<FeedEvent>,
    closed: AtomicBool,
    counts: Option<Arc<FeedCounts>>,
    /// Told `counts` it counts (and not yet that it stopped).
    counting: AtomicBool,
}

impl FeedListener {
    fn close(&self) {
        if !self.closed.swap(true, Ordering::SeqCst) {
            self.stop_counting();
            let _ = self.events.send(FeedEvent::Closed {
                session: self.session,
            });
        }
    }

    /// Tells the counts this feed counts its session; a feed closed
    /// meanwhile (on the reader thread) stops again at once.
    fn start_counting(&self) {
        let Some(counts) = &self.counts else { return };
        counts.started(self.session);
        self.counting.store(true, Ordering::SeqCst);
        if self.closed.load(Ordering::SeqCst) {
            self.stop_counting();
        }
    }

    /// Once per feed that started counting.
    fn stop_counting(&self) {
        if let Some(counts) = &self.counts {
            if self.counting.swap(false, Ordering::SeqCst) {
                counts.stopped(self.session);
            }
        }
    }
}

impl Listener for FeedListener {
    fn listening(&self) -> bool {
        // A feed stays attached until its reader drops it.
        true
    }

    fn on_lines(&self, _pid: u32, lines: &[Vec<u8>]) {
        if self.closed.load(Ordering::SeqCst) {
            return;
        }
        for line in lines {
            match notification::parse(line) {
                Notification::Output { pane, escaped } => {
                    let mut data = Vec::with_capacity(escaped.len());
                    notification::unescape(escaped, &mut data);
                    if let Some(counts) = &self.counts {
                        counts.output(pane, &data);
                    }
                    let _ = self.events.send(FeedEvent::Output {
                        session: self.session,
                        pane,
                        data,
                    });
                }
                // Output tmux dropped (the feed fell behind): uncounted.
                Notification::Pause(pane) => {
                    if let Some(counts) = &self.counts {
                        counts.lost(pane);
                    }
                }
                Notification::Structure(StructureEvent::SessionsChanged) => {
                    let _ = self.events.send(FeedEvent::SessionsChanged);
                }
                // tmux moved the client (its session died with
                // detach-on-destroy off): it no longer shows this session.
                Notification::Structure(StructureEvent::SessionChanged { session })
                    if session != self.session =>
                {
                    self.close();
                    return;
                }
                _ => {}
            }
        }
    }

    fn on_closed(&self, _pid: u32, _on_purpose: bool) {
        self.close();
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    fn listener() -> (FeedListener, crossbeam_channel::Receiver<FeedEvent>) {
        let (tx, rx) = crossbeam_channel::unbounded();
        let l = FeedListener {
            session: SessionId::from_number(3),
            events: tx,
            closed: AtomicBool::new(false),
            counts: None,
            counting: AtomicBool::new(false),
        };
        (l, rx)
    }

    #[test]
    fn a_counting_feed_counts_each_pane_and_a_pause_or_its_end_makes_counts_unknown() {
        let (mut l, _rx) = listener();
        let counts = Arc::new(FeedCounts::default());
        l.counts = Some(counts.clone());
        let pane = PaneId::from_number(4);
        l.start_counting();
        let start = counts.printed_many(&[pane])[0].1;
        l.on_lines(1, &[b"%output %4 a\\015\\012b\\015\\012".to_vec()]);
        let two = counts.printed_many(&[pane])[0].1;
        assert_eq!(two.rows_since(&start, 80, 24), Some(3));
        assert_eq!(counts.take_printed(), (vec![pane], true));
        // tmux dropped its output for this client.
        l.on_lines(1, &[b"%pause %4".to_vec()]);
        let paused = counts.printed_many(&[pane])[0].1;
        assert_eq!(paused.rows_since(&two, 80, 24), None);
        // The feed's end: unknown from then on, told once.
        l.on_closed(1, false);
        l.on_closed(1, false);
        let ended = counts.printed_many(&[pane])[0].1;
        assert_eq!(ended.lost, paused.lost + 1);
        // Closed before it could start: started and stopped, nothing left.
        let (mut late, _rx) = listener();
        late.counts = Some(counts.clone());
        late.on_closed(2, false);
        late.start_counting();
        assert_eq!(counts.printed_many(&[pane])[0].1.lost, ended.lost + 2);
    }

    #[test]
    fn output_is_unescaped_and_a_move_or_an_end_closes_once() {
        let (l, rx) = listener();
        l.on_lines(
            1,
            &[
                b"%output %4 a\\033]133;A\\007b".to_vec(),
                b"%sessions-changed".to_vec(),
                b"%session-changed $3 s".to_vec(),
                b"%session-changed $5 t".to_vec(),
                b"%output %4 late".to_vec(),
            ],
        );
        l.on_closed(1, false);
        let got: Vec<FeedEvent> = rx.try_iter().collect();
        let session = SessionId::from_number(3);
        assert_eq!(
            got,
            vec![
                FeedEvent::Output {
                    session,
                    pane: PaneId::from_number(4),
                    data: b"a\x1b]133;A\x07b".to_vec(),
                },
                FeedEvent::SessionsChanged,
                FeedEvent::Closed { session },
            ]
        );
    }
}
