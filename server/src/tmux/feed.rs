//! A session's raw output: a control client of its own attached to one
//! session with output on for every pane (`attach-session -E -f
//! read-only,ignore-size`), for a reader that must see every byte of every pane of a
//! server, such as the command ledger's follower of OSC 133 marks.
//!
//! Why one client per session: tmux 3.3a sends `%output` to a control
//! client only for panes in windows of the session it is attached to
//! (control.c, `control_write_output`), so the server's one control client
//! (`connection.rs`) sees one session. Each feed is an attached,
//! read-only client of its session: the user's `client-attached` hook
//! runs once when it attaches, `session_attached` counts it, and the
//! window sizes ignore it. Its pid is left out of the clients panescan
//! counts.
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
use super::notification::{self, Notification, StructureEvent};
use super::{PaneId, SessionId, Tmux, TmuxCommand, TmuxError};

/// What the feeds of a reader tell it, on one channel.
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
    /// and the feed's end go to `events`.
    pub fn feed(
        &self,
        session: SessionId,
        events: Sender<FeedEvent>,
        deadline: Instant,
    ) -> Result<SessionFeed, TmuxError> {
        let listener = Arc::new(FeedListener {
            session,
            events,
            closed: AtomicBool::new(false),
        });
        let connection = self.inner.connection().clone();
        let control = connection.attach_feed(&session.to_string(), listener, deadline)?;
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
}

impl FeedListener {
    fn close(&self) {
        if !self.closed.swap(true, Ordering::SeqCst) {
            let _ = self.events.send(FeedEvent::Closed {
                session: self.session,
            });
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
                    let _ = self.events.send(FeedEvent::Output {
                        session: self.session,
                        pane,
                        data,
                    });
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
        };
        (l, rx)
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
