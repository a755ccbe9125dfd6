//! A pane's raw output through tmux's `pipe-pane`, for a pane the event
//! stream does not cover (outside the session the control client shows,
//! or `serve --no-events`): the marker is then read from the bytes the
//! pane printed, as in the stream, never from a screen that the command
//! can draw on.
//!
//! How: a FIFO made and opened here (and unlinked at once), and
//! `pipe-pane` running `exec >/proc/PANESCAN/fd/W && printf . && exec cat`
//! in the tmux server, W being the FIFO's write end here (a name no other
//! process has). The `.` says the pipe is connected; from then on
//! every byte the pane prints follows. tmux sends the pipe what the pane
//! prints after `pipe-pane` ran, so the tap is opened before the command
//! is typed and nothing of it is missed.
//!
//! What must hold:
//! - A pane has one pipe: a pane already piping (the user's `pipe-pane`,
//!   panescan's `pipe_pane` tool) is left alone and not tapped (tmux's
//!   `if-shell -F '#{pane_pipe}'` decides; any `pipe-pane`, even `-o`,
//!   would close that pipe). Panescan closes only its own pipe: not once
//!   it saw the pipe end (someone replaced it).
//! - The write end stays open here until the tmux side opened it (the `.`
//!   came) or long after that side can still try ([`LINGER`]): a closed
//!   descriptor number may be reused by another file, which `/proc/.../fd/W`
//!   would then name.
//! - Only a server on this machine, in this process's view of `/proc`
//!   (run_command reads the pane's processes there too).

use std::fs::File;
use std::io::Read;
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};

use crate::tmux::{PaneId, Tmux, TmuxCommand};

/// How long a tap may stay unconnected before it counts as failed (the
/// screen is then read instead).
const CONNECT_WITHIN: Duration = Duration::from_millis(1000);
/// After a tap that never connected is closed, how long the write end
/// stays open for a tmux-side shell that might still open it.
const LINGER: Duration = Duration::from_secs(2);
/// Chunks waiting for the watcher; the reader blocks beyond (tmux keeps
/// the pane's output meanwhile).
const CHANNEL: usize = 256;

/// What the reader thread passes on.
enum Chunk {
    /// The tmux side opened the pipe.
    Connected,
    /// Bytes the pane printed.
    Data(Vec<u8>),
    /// The pipe ended (closed by tmux, or replaced by another pipe).
    Ended,
}

/// Where a tap stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    /// Opened, not yet connected.
    Pending,
    /// Bytes flow.
    Live,
    /// Ended, or never connected within [`CONNECT_WITHIN`].
    Gone,
}

/// One pane's tapped output.
pub struct Tap {
    pane: PaneId,
    rx: Receiver<Chunk>,
    /// The write end, until the tmux side holds it.
    writer: Arc<Mutex<Option<File>>>,
    opened: Instant,
    state: State,
    /// The reader saw the pipe end.
    ended: bool,
}

impl Tap {
    /// Taps `pane` (whose own process `pane_pid` this process sees in
    /// `/proc`), answered by `deadline`; `None` when it cannot be tapped
    /// (already piping, tmux refused, no pipe to make).
    pub fn open(tmux: &Tmux, pane: PaneId, deadline: Instant) -> Option<Tap> {
        let (reader, writer) = fifo()?;
        let path = format!("/proc/{}/fd/{}", std::process::id(), writer.as_raw_fd());
        // tmux expands formats in the command: literal_arg keeps it as is.
        let pipe = TmuxCommand::new("pipe-pane")
            .target(pane)
            .literal_arg(&format!("exec >{path} && printf . && exec cat"));
        // Only where no pipe is open, decided by tmux in one command: a
        // pipe-pane (even -o) on a piping pane would close that pipe.
        let commands = [
            TmuxCommand::new("display-message")
                .flag("-p")
                .target(pane)
                .format_arg("#{pane_pipe}"),
            TmuxCommand::new("if-shell")
                .flag("-F")
                .target(pane)
                .format_arg("#{pane_pipe}")
                .arg("")
                .arg(pipe.to_line().ok()?),
        ];
        let mut replies = tmux.run_many(&commands, deadline).into_iter();
        let free = matches!(replies.next(), Some(Ok(text)) if text.trim() == "0");
        let piped = matches!(replies.next(), Some(Ok(_)));
        if !free || !piped {
            // Nothing of ours started (or tmux said no): the write end
            // may go at once, unless tmux may still run the pipe.
            if free {
                linger(writer);
            }
            return None;
        }
        let writer = Arc::new(Mutex::new(Some(writer)));
        let (tx, rx) = crossbeam_channel::bounded(CHANNEL);
        let held = writer.clone();
        let spawned = std::thread::Builder::new()
            .name("run-command-tap".into())
            .spawn(move || read_pipe(reader, &held, &tx));
        if spawned.is_err() {
            let tap = Tap {
                pane,
                rx,
                writer,
                opened: Instant::now(),
                state: State::Gone,
                ended: false,
            };
            tap.close(tmux, deadline);
            return None;
        }
        Some(Tap {
            pane,
            rx,
            writer,
            opened: Instant::now(),
            state: State::Pending,
            ended: false,
        })
    }

    /// Where it stands.
    pub fn state(&self) -> State {
        self.state
    }

    /// Bytes the pane printed, waiting until `until` for the first; empty
    /// when none came. Moves the state along.
    pub fn recv(&mut self, until: Instant) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        if self.state == State::Gone {
            std::thread::sleep(until.saturating_duration_since(Instant::now()));
            return out;
        }
        let until = match self.state {
            State::Pending => until.min(self.opened + CONNECT_WITHIN),
            _ => until,
        };
        let mut next = self
            .rx
            .recv_deadline(until)
            .map_err(|e| e == RecvTimeoutError::Disconnected);
        loop {
            match next {
                Ok(Chunk::Connected) => self.state = State::Live,
                Ok(Chunk::Data(data)) => out.push(data),
                Ok(Chunk::Ended) | Err(true) => {
                    self.state = State::Gone;
                    self.ended = true;
                    break;
                }
                Err(false) => break,
            }
            next = self.rx.try_recv().map_err(|e| e.is_disconnected());
        }
        if self.state == State::Pending && Instant::now() >= self.opened + CONNECT_WITHIN {
            self.state = State::Gone;
        }
        out
    }

    /// Closes the pane's pipe if it is still this tap's, answered by
    /// `deadline`; lets the write end go once nothing can open it.
    pub fn close(mut self, tmux: &Tmux, deadline: Instant) {
        // An end the reader saw (the pipe closed or replaced by another)
        // means the pane's pipe is not this tap's any more. A connection
        // that never came may still be: tmux's shell is slow.
        while let Ok(chunk) = self.rx.try_recv() {
            self.ended |= matches!(chunk, Chunk::Ended);
        }
        if !self.ended {
            let close = TmuxCommand::new("pipe-pane").target(self.pane);
            let _ = tmux.run(&close, deadline);
        }
        if let Some(writer) = crate::sync::lock(&self.writer).take() {
            linger(writer);
        }
    }
}

/// A FIFO's read and write ends, its name already gone: made 0600 in the
/// temporary directory under a random name, the write end opened
/// read-write (which never waits for a reader), then the read end.
fn fifo() -> Option<(File, File)> {
    let path = std::env::temp_dir().join(format!(
        ".panescan-tap-{}-{}",
        std::process::id(),
        super::random_hex(16)
    ));
    rustix::fs::mkfifoat(
        rustix::fs::CWD,
        &path,
        rustix::fs::Mode::from_raw_mode(0o600),
    )
    .ok()?;
    let open = |write: bool| {
        std::fs::OpenOptions::new()
            .read(true)
            .write(write)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&path)
    };
    let ends = open(true).and_then(|w| Ok((open(false)?, w)));
    let _ = std::fs::remove_file(&path);
    ends.ok()
}

/// Lets `writer` go after [`LINGER`], on a thread of its own: a shell tmux
/// started may still open it by its `/proc` name.
fn linger(writer: File) {
    // Without a thread (none can be made) it goes at once: a shell that
    // late is improbable.
    let _ = std::thread::Builder::new()
        .name("run-command-tap-linger".into())
        .spawn(move || {
            std::thread::sleep(LINGER);
            drop(writer);
        });
}

/// The reader: the `.` first (then the write end goes: the tmux side holds
/// it, and the pipe ends when that side does), then the pane's bytes.
fn read_pipe(mut reader: File, writer: &Mutex<Option<File>>, tx: &Sender<Chunk>) {
    let mut buf = vec![0u8; 64 * 1024];
    let mut connected = false;
    loop {
        let n = match reader.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        };
        let mut data = &buf[..n];
        if !connected {
            connected = true;
            drop(crate::sync::lock(writer).take());
            if tx.send(Chunk::Connected).is_err() {
                return;
            }
            data = &data[1..];
        }
        if !data.is_empty() && tx.send(Chunk::Data(data.to_vec())).is_err() {
            return;
        }
    }
    let _ = tx.send(Chunk::Ended);
}
