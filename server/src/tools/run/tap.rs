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
//!
//! [`Tap`] hands the bytes to one reader through a channel of its own;
//! [`Tap::open_into`] hands them to a caller's sink instead (the journal's
//! taps, many panes into one channel).

use std::fs::File;
use std::io::Read;
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError};

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
pub enum Chunk {
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
    pipe: Pipe,
    rx: Receiver<Chunk>,
    opened: Instant,
    state: State,
}

/// A pane's pipe into this process, read by a thread of its own that
/// hands each chunk to a sink.
pub struct Pipe {
    pane: PaneId,
    /// The write end, until the tmux side holds it.
    writer: Arc<Mutex<Option<File>>>,
    /// The reader saw the pipe end (closed by tmux, or replaced).
    ended: Arc<AtomicBool>,
}

impl Tap {
    /// Taps `pane` (whose own process `pane_pid` this process sees in
    /// `/proc`), answered by `deadline`; `None` when it cannot be tapped
    /// (already piping, tmux refused, no pipe to make).
    pub fn open(tmux: &Tmux, pane: PaneId, deadline: Instant) -> Option<Tap> {
        let (tx, rx) = crossbeam_channel::bounded(CHANNEL);
        let pipe = Tap::open_into(tmux, pane, deadline, move |chunk| tx.send(chunk).is_ok())?;
        Some(Tap {
            pipe,
            rx,
            opened: Instant::now(),
            state: State::Pending,
        })
    }

    /// Taps `pane` as [`Tap::open`] does, its reader thread handing every
    /// chunk to `sink` (which returns `false` to stop reading: the pipe
    /// then fills and tmux drops the pane's output to it).
    pub fn open_into(
        tmux: &Tmux,
        pane: PaneId,
        deadline: Instant,
        mut sink: impl FnMut(Chunk) -> bool + Send + 'static,
    ) -> Option<Pipe> {
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
        let pipe = Pipe {
            pane,
            writer: Arc::new(Mutex::new(Some(writer))),
            ended: Arc::new(AtomicBool::new(false)),
        };
        let (held, ended) = (pipe.writer.clone(), pipe.ended.clone());
        let spawned = std::thread::Builder::new()
            .name("pane-tap".into())
            .spawn(move || {
                if read_pipe(reader, &held, &mut sink) {
                    ended.store(true, Ordering::SeqCst);
                    sink(Chunk::Ended);
                }
            });
        if spawned.is_err() {
            pipe.close(tmux, deadline);
            return None;
        }
        Some(pipe)
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
                    self.pipe.ended.store(true, Ordering::SeqCst);
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
    pub fn close(self, tmux: &Tmux, deadline: Instant) {
        self.pipe.close(tmux, deadline);
    }
}

impl Pipe {
    /// Whether the reader saw the pipe end.
    pub fn ended(&self) -> bool {
        self.ended.load(Ordering::SeqCst)
    }

    /// The command that closes the pane's pipe, unless the reader saw it
    /// end (the pipe closed or replaced by another: not this tap's any
    /// more; a connection that never came may still be, tmux's shell is
    /// slow). Run it, then [`Pipe::let_go`]; [`Pipe::close`] does both.
    pub fn closing(&self) -> Option<TmuxCommand> {
        (!self.ended()).then(|| TmuxCommand::new("pipe-pane").target(self.pane))
    }

    /// Lets the write end go once nothing can open it.
    pub fn let_go(self) {
        if let Some(writer) = crate::sync::lock(&self.writer).take() {
            linger(writer);
        }
    }

    /// Closes the pane's pipe if it is still this tap's, answered by
    /// `deadline`; lets the write end go once nothing can open it.
    pub fn close(self, tmux: &Tmux, deadline: Instant) {
        if let Some(close) = self.closing() {
            let _ = tmux.run(&close, deadline);
        }
        self.let_go();
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
/// it, and the pipe ends when that side does), then the pane's bytes,
/// until the pipe ends (`true`) or `sink` says stop (`false`: the pipe
/// may still be this tap's).
fn read_pipe(
    mut reader: File,
    writer: &Mutex<Option<File>>,
    sink: &mut impl FnMut(Chunk) -> bool,
) -> bool {
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
            if !sink(Chunk::Connected) {
                return false;
            }
            data = &data[1..];
        }
        if !data.is_empty() && !sink(Chunk::Data(data.to_vec())) {
            return false;
        }
    }
    true
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;
    use crate::config::Ceilings;
    use crate::testbed::private_server::PrivateServer;
    use crate::tmux::ServerSpec;
    use crate::tools::context::{ServerArgs, ToolContext};
    use crossbeam_channel::Sender;

    fn in_ms(ms: u64) -> Instant {
        Instant::now() + Duration::from_millis(ms)
    }

    /// A private server whose pane %0 runs `cat` (it prints what it is
    /// sent, twice: the terminal's echo and cat's own).
    fn server() -> (PrivateServer, Tmux) {
        let server = PrivateServer::start("tap", 80, 10).unwrap();
        server
            .run_ok(["respawn-pane", "-k", "-t", "%0", "cat"])
            .unwrap();
        let ctx =
            ToolContext::read_only(ServerSpec::named(server.socket_name()), Ceilings::default());
        let tmux = ctx.tmux(&ServerArgs::default()).unwrap();
        (server, tmux)
    }

    fn pane0() -> PaneId {
        PaneId::parse("%0").unwrap()
    }

    fn piping(server: &PrivateServer) -> bool {
        let pipe = server
            .run_ok(["display-message", "-p", "-t", "%0", "#{pane_pipe}"])
            .unwrap();
        pipe.trim() == "1"
    }

    /// Takes what the tap gives until `text` came (or 20 s passed), and
    /// returns it all.
    fn read_until(tap: &mut Tap, text: &str) -> String {
        let until = in_ms(20_000);
        let mut got = Vec::new();
        while Instant::now() < until && !String::from_utf8_lossy(&got).contains(text) {
            for chunk in tap.recv(in_ms(100)) {
                got.extend(chunk);
            }
        }
        String::from_utf8_lossy(&got).into_owned()
    }

    /// A tap connects, carries what the pane prints after it opened (not
    /// the connection's `.`), and closes the pipe it made.
    #[test]
    fn a_tap_carries_the_panes_output_and_closes_its_pipe() {
        let (server, tmux) = server();
        let mut tap = Tap::open(&tmux, pane0(), in_ms(10_000)).expect("tapped");
        assert_eq!(tap.state(), State::Pending);
        assert!(piping(&server));
        let until = in_ms(20_000);
        while tap.state() == State::Pending && Instant::now() < until {
            assert!(
                tap.recv(in_ms(100)).is_empty(),
                "bytes before any were sent"
            );
        }
        // CONNECT_WITHIN is one second: on a loaded machine the tmux side
        // may take longer, and the tap counts as gone (what the watcher
        // then does is its business); here only a live tap is followed.
        if tap.state() == State::Gone {
            eprintln!("the tap did not connect within {CONNECT_WITHIN:?}: machine too slow");
            tap.close(&tmux, in_ms(10_000));
            return;
        }
        assert_eq!(tap.state(), State::Live);
        server
            .run_ok(["send-keys", "-t", "%0", "tapped-text", "Enter"])
            .unwrap();
        let got = read_until(&mut tap, "tapped-text\r\ntapped-text");
        assert!(got.starts_with("tapped-text\r\n"), "{got:?}");
        assert!(got.contains("tapped-text\r\ntapped-text"), "{got:?}");
        assert_eq!(tap.state(), State::Live);
        tap.close(&tmux, in_ms(10_000));
        assert!(!piping(&server), "the tap's pipe was left open");
    }

    /// A pane that already pipes is not tapped, and its pipe stays.
    #[test]
    fn a_piping_pane_is_left_alone() {
        let (server, tmux) = server();
        server
            .run_ok(["pipe-pane", "-t", "%0", "cat >/dev/null"])
            .unwrap();
        assert!(piping(&server));
        assert!(Tap::open(&tmux, pane0(), in_ms(10_000)).is_none());
        assert!(piping(&server), "the user's pipe was closed");
    }

    /// A pipe closed by someone else ends the tap, whether the end was
    /// read or still waits in the channel; closing the tap then leaves
    /// alone the pipe opened after it.
    #[test]
    fn a_pipe_ended_elsewhere_is_not_closed_again() {
        let (server, tmux) = server();
        for read_the_end in [true, false] {
            let mut tap = Tap::open(&tmux, pane0(), in_ms(10_000)).expect("tapped");
            server.run_ok(["pipe-pane", "-t", "%0"]).unwrap();
            let until = in_ms(20_000);
            if read_the_end {
                while tap.state() != State::Gone && Instant::now() < until {
                    tap.recv(in_ms(100));
                }
                assert_eq!(tap.state(), State::Gone);
            } else {
                // The reader's `Connected` and `Ended`, not taken.
                while tap.rx.len() < 2 && Instant::now() < until {
                    std::thread::sleep(Duration::from_millis(10));
                }
                assert_eq!(tap.rx.len(), 2);
            }
            server
                .run_ok(["pipe-pane", "-t", "%0", "cat >/dev/null"])
                .unwrap();
            tap.close(&tmux, in_ms(10_000));
            assert!(
                piping(&server),
                "the pipe opened after the tap's end was closed (end read: {read_the_end})"
            );
            server.run_ok(["pipe-pane", "-t", "%0"]).unwrap();
        }
    }

    /// A write end let go lingers: the FIFO's reader sees no end until
    /// LINGER has passed.
    #[test]
    fn a_write_end_let_go_stays_open_a_while() {
        let (mut reader, writer) = fifo().expect("a fifo");
        rustix::fs::fcntl_setfl(&reader, rustix::fs::OFlags::NONBLOCK).unwrap();
        let let_go = Instant::now();
        linger(writer);
        let mut buf = [0u8; 8];
        let first = reader.read(&mut buf);
        assert!(
            matches!(&first, Err(e) if e.kind() == std::io::ErrorKind::WouldBlock),
            "the write end went at once: {first:?}"
        );
        let until = in_ms(30_000);
        while !matches!(reader.read(&mut buf), Ok(0)) {
            assert!(Instant::now() < until, "the write end never went");
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(let_go.elapsed() >= LINGER, "{:?}", let_go.elapsed());
    }

    /// A tap of the test's own making, fed by `tx`, opened `ago`.
    fn fed(ago: Duration) -> (Tap, Sender<Chunk>) {
        let (tx, rx) = crossbeam_channel::bounded(CHANNEL);
        let tap = Tap {
            pipe: Pipe {
                pane: pane0(),
                writer: Arc::new(Mutex::new(None)),
                ended: Arc::new(AtomicBool::new(false)),
            },
            rx,
            opened: Instant::now() - ago,
            state: State::Pending,
        };
        (tap, tx)
    }

    /// The states: pending until the connection, gone when it does not
    /// come within CONNECT_WITHIN, or at the end; gone gives nothing and
    /// waits out the time asked.
    #[test]
    fn a_tap_is_pending_then_live_then_gone() {
        // Opened just now: the time asked is waited, nothing comes.
        let (mut tap, tx) = fed(Duration::ZERO);
        let asked = Instant::now();
        assert!(tap.recv(in_ms(150)).is_empty());
        assert!(asked.elapsed() >= Duration::from_millis(150));
        assert_eq!(tap.state(), State::Pending);
        tx.send(Chunk::Connected).unwrap();
        tx.send(Chunk::Data(b"ab".to_vec())).unwrap();
        tx.send(Chunk::Data(b"c".to_vec())).unwrap();
        assert_eq!(tap.recv(in_ms(5_000)), [b"ab".to_vec(), b"c".to_vec()]);
        assert_eq!(tap.state(), State::Live);
        // Live, it waits the whole time asked, however long ago it opened.
        let asked = Instant::now();
        assert!(tap.recv(in_ms(150)).is_empty());
        assert!(asked.elapsed() >= Duration::from_millis(150));
        tx.send(Chunk::Data(b"d".to_vec())).unwrap();
        tx.send(Chunk::Ended).unwrap();
        tx.send(Chunk::Data(b"never".to_vec())).unwrap();
        assert_eq!(tap.recv(in_ms(5_000)), [b"d".to_vec()]);
        assert_eq!(tap.state(), State::Gone);
        assert!(tap.pipe.ended());
        // Gone: nothing more, and the time asked is slept.
        let asked = Instant::now();
        assert!(tap.recv(in_ms(150)).is_empty());
        assert!(asked.elapsed() >= Duration::from_millis(150));

        // Never connected within CONNECT_WITHIN: gone at once, not ended.
        let (mut late, _tx) = fed(CONNECT_WITHIN + Duration::from_millis(10));
        let asked = Instant::now();
        assert!(late.recv(in_ms(10_000)).is_empty());
        assert!(asked.elapsed() < Duration::from_secs(5));
        assert_eq!(late.state(), State::Gone);
        assert!(!late.pipe.ended());

        // A connection that came late still counts.
        let (mut slow, tx) = fed(CONNECT_WITHIN * 2);
        tx.send(Chunk::Connected).unwrap();
        assert!(slow.recv(in_ms(100)).is_empty());
        assert_eq!(slow.state(), State::Live);

        // Pending, the wait is cut at CONNECT_WITHIN from the opening.
        let (mut pending, _tx) = fed(CONNECT_WITHIN - Duration::from_millis(300));
        let asked = Instant::now();
        pending.recv(in_ms(10_000));
        assert!(asked.elapsed() < Duration::from_secs(5));
        assert_eq!(pending.state(), State::Gone);

        // The reader gone without a word: gone, ended.
        let (mut dropped, tx) = fed(Duration::ZERO);
        drop(tx);
        assert!(dropped.recv(in_ms(10_000)).is_empty());
        assert_eq!(dropped.state(), State::Gone);
        assert!(dropped.pipe.ended());
    }

    /// The reader: the first byte (the tmux side's `.`) says connected and
    /// lets the write end go; the rest is the pane's; the end is said.
    #[test]
    fn the_reader_drops_the_dot_and_the_write_end() {
        use std::io::Write;
        let (reader, writer) = fifo().expect("a fifo");
        let mut other = writer.try_clone().unwrap();
        let held = Arc::new(Mutex::new(Some(writer)));
        let (tx, rx) = crossbeam_channel::bounded(CHANNEL);
        // Not joined: a reader that keeps the write end would block for
        // good, and the test fails rather than hangs.
        let reading = held.clone();
        std::thread::spawn(move || {
            read_pipe(reader, &reading, &mut |c| tx.send(c).is_ok());
            let _ = tx.send(Chunk::Ended);
        });
        let next = || rx.recv_timeout(Duration::from_secs(10));
        other.write_all(b".").unwrap();
        assert!(matches!(next(), Ok(Chunk::Connected)));
        other.write_all(b"x.y").unwrap();
        match next() {
            Ok(Chunk::Data(d)) => assert_eq!(d, b"x.y"),
            _ => panic!("no data"),
        }
        assert!(crate::sync::lock(&held).is_none(), "the write end was kept");
        drop(other);
        assert!(matches!(next(), Ok(Chunk::Ended)));
    }
}
