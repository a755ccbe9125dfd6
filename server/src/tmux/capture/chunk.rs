//! One chunk: its client started (on a spare started ahead, on the kept
//! anchor's terminal with the script in a file, or with the script on a
//! pipe), and its output read as it arrives, each pane handed out the
//! moment the next header shows it complete.
//!
//! Must hold: every request of a chunk is handed out once, in order (panes
//! a counted chunk could not place are captured again with headers first);
//! a client nobody listens to any more is killed, through std so a reaped
//! pid is never signalled.

use std::io::Read;
use std::process::Child;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crossbeam_channel::{Receiver, Sender};

use super::super::launch::Endpoint;
use super::super::oneshot;
use super::super::TmuxError;
use super::gate::Permit;
use super::script::{script, sweep_token};
use super::split::{Split, Splitter};
use super::Batch;
use super::{anchor, counted, preamble, CaptureOptions, CaptureRequest, Spare};

/// A chunk in flight: its process and the thread reading it.
pub(super) struct Flight {
    pub(super) start: usize,
    pub(super) len: usize,
    /// The `source-file` client, shared with its reader (which reaps it);
    /// killed through std so a reaped pid is never signalled.
    pub(super) child: Option<SharedChild>,
    pub(super) events: Receiver<ChunkEvent>,
}

/// What a chunk's reader sends, in order.
pub(super) enum ChunkEvent {
    /// Request `i` of the chunk: every request once, in order, each as soon
    /// as its text is complete.
    Pane(usize, Result<Split, TmuxError>),
    /// The sweep is over: `Ok` once its end marker was read (every request
    /// was handed out), else why not (the requests not handed out yet get
    /// this error).
    End(Result<(), TmuxError>),
}

/// Events a chunk's reader may send ahead of the batch.
const EVENTS_AHEAD: usize = 16;

impl Batch {
    /// The flags of a counted chunk (`counted.rs`) for `chunk`, if it may
    /// be one: a chunk of visible or of deep captures (`counted::rows_for`)
    /// holding a large share of the server's panes (so its listing is
    /// worth it), on a server whose version the anchor read, while
    /// counting pays in this batch.
    pub(super) fn counted_flags(&self, chunk: &[CaptureRequest]) -> Option<&'static str> {
        let listed = self.server_panes > 0 && chunk.len() * 4 >= self.server_panes;
        if !listed || !self.counting.load(Ordering::Relaxed) {
            return None;
        }
        counted::rows_for(chunk, self.options)?;
        self.anchor.as_ref()?.counted_flags()
    }

    /// Starts a chunk; `permit` (the gate's leave) is held until its
    /// process has ended. `counted`: the flags of a counted chunk.
    pub(super) fn launch(
        &self,
        chunk: &[CaptureRequest],
        start: usize,
        options: CaptureOptions,
        permit: Option<Permit>,
        counted: Option<&'static str>,
    ) -> Flight {
        let (tx, rx) = crossbeam_channel::bounded(EVENTS_AHEAD);
        let token = sweep_token();
        let own = match counted {
            Some(flags) => counted::script(&token, chunk, options, flags),
            None => script(&token, chunk, options, self.server_panes),
        };
        let preamble = crate::sync::lock(&self.preamble)
            .take()
            .and_then(|p| p.head(&token).ok());
        let (script, mut preamble) = match preamble {
            Some((head, reader)) => (head + &own, Some(reader)),
            None => (own, None),
        };
        let meta: Vec<CaptureRequest> = chunk.to_vec();
        let (child, script_file) = self.spawn(&token, script);
        let child: Result<SharedChild, TmuxError> =
            child.map(|c| Arc::new(std::sync::Mutex::new(c)));
        let shared_child = child.as_ref().ok().cloned();
        let socket = self.socket.clone();
        let counting = Arc::clone(&self.counting);
        let spawned = std::thread::Builder::new()
            .name("tmux-capture-chunk".into())
            .spawn(move || {
                let chunk = Chunk {
                    socket: &socket,
                    token: &token,
                    requests: &meta,
                    options,
                    counted: counted.is_some(),
                };
                let outcome = child.and_then(|c| chunk.read(&c, preamble.as_mut(), &counting, &tx));
                drop((permit, script_file));
                let _ = tx.send(ChunkEvent::End(outcome));
            });
        if let Err(e) = spawned {
            if let Some(c) = &shared_child {
                kill_child(c);
            }
            let (tx, rx2) = crossbeam_channel::bounded(1);
            let _ = tx.send(ChunkEvent::End(Err(TmuxError::spawn("", e))));
            return Flight {
                start,
                len: chunk.len(),
                child: None,
                events: rx2,
            };
        }
        Flight {
            start,
            len: chunk.len(),
            child: shared_child,
            events: rx,
        }
    }

    /// Starts a chunk's client: the spare started ahead for this kind of
    /// chunk when there is one (`spare.rs`); else on the anchor's terminal
    /// with the script in a file when the batch has one (the file lives
    /// until the chunk ends), else with the script on a pipe.
    pub(super) fn spawn(
        &self,
        token: &str,
        script: String,
    ) -> (Result<Child, TmuxError>, Option<anchor::ScriptFile>) {
        if let Some((child, fifo)) = self
            .take_spare()
            .and_then(|spare| spare.feed(script.clone(), self.deadline))
        {
            return (Ok(child), fifo);
        }
        if let Some(anchor) = &self.anchor {
            if let (Some(file), Some(stdin)) = (anchor.script_file(token, &script), anchor.stdin())
            {
                if let Ok(child) = oneshot::spawn_source_path(&self.socket, file.path(), stdin) {
                    return (Ok(child), Some(file));
                }
            }
        }
        (oneshot::spawn_source(&self.socket, script), None)
    }

    /// The spare started ahead, if it can run this batch's chunks: an
    /// anchored one on the batch's own anchor, a pipe-fed one when the
    /// batch has none.
    fn take_spare(&self) -> Option<Spare> {
        let mut spare = self.spare.lock().ok()?;
        if spare.as_ref()?.serves(self.anchor.as_ref()) {
            spare.take()
        } else {
            None
        }
    }
}

pub(super) type SharedChild = Arc<std::sync::Mutex<Child>>;

/// Kills a `tmux source-file` client this module started. std's `kill` does
/// nothing once the child has been reaped, so no other process is hit.
pub(super) fn kill_child(child: &SharedChild) {
    let mut c = crate::sync::lock(child);
    let _ = c.kill();
}

/// How a chunk's output is cut: a header per pane, or counted.
enum Cutter<'a> {
    Headed(Splitter<'a>),
    Counted(counted::Counted<'a>),
}

impl Cutter<'_> {
    fn push(&mut self, data: &[u8], emit: &mut dyn FnMut(usize, Result<Split, TmuxError>)) {
        match self {
            Cutter::Headed(s) => s.push(data, emit),
            Cutter::Counted(c) => c.push(data, emit),
        }
    }

    fn ended(&self) -> bool {
        match self {
            Cutter::Headed(s) => s.ended(),
            Cutter::Counted(c) => c.ended(),
        }
    }
}

/// Whether a cut pane must be captured again with a header (`counted.rs`).
fn is_again(result: &Result<Split, TmuxError>) -> bool {
    matches!(result, Ok(s) if s.again)
}

/// A chunk as its reader sees it.
struct Chunk<'a> {
    socket: &'a Endpoint,
    token: &'a str,
    requests: &'a [CaptureRequest],
    options: CaptureOptions,
    /// Cut by counting (`counted.rs`), not by a header per pane.
    counted: bool,
}

impl Chunk<'_> {
    /// Reads the chunk's output, handing out each pane on `tx` as soon as
    /// it is complete. `Ok` once the end marker was read.
    ///
    /// Panes a counted chunk could not place (`Split::again`) are captured
    /// again in one headed script once the chunk is read; the panes after
    /// the first of them wait for it, so `tx` still gets every request in
    /// order. A chunk that needed that for more than a quarter of its panes
    /// turns counting off (`counting`) for the rest of the batch.
    fn read(
        &self,
        child: &SharedChild,
        preamble: Option<&mut preamble::Reader>,
        counting: &AtomicBool,
        tx: &Sender<ChunkEvent>,
    ) -> Result<(), TmuxError> {
        let mut cutter = if self.counted {
            Cutter::Counted(counted::Counted::new(
                self.token,
                self.requests,
                self.options,
            ))
        } else {
            Cutter::Headed(Splitter::new(self.token, self.requests, self.options))
        };
        let mut held: Vec<(usize, Result<Split, TmuxError>)> = Vec::new();
        let outcome = read_output(
            child,
            self.socket,
            preamble,
            &mut cutter,
            &mut |i, result| {
                if held.is_empty() && !is_again(&result) {
                    tx.send(ChunkEvent::Pane(i, result)).is_ok()
                } else {
                    held.push((i, result));
                    true
                }
            },
        );
        if held.is_empty() {
            return outcome;
        }
        let agains = held.iter().filter(|(_, r)| is_again(r)).count();
        if agains * 4 > self.requests.len() {
            counting.store(false, Ordering::Relaxed);
        }
        // A chunk that did not end (killed: cancelled or out of time; tmux
        // gone) starts nothing more: its panes to be seen again fail with it.
        let mut fresh = match &outcome {
            Ok(()) => self.capture_again(child, &held),
            Err(e) => held
                .iter()
                .filter(|(_, r)| is_again(r))
                .map(|(i, _)| (*i, Err(e.clone())))
                .collect(),
        };
        for (i, result) in held {
            let result = if is_again(&result) {
                fresh
                    .remove(&i)
                    .unwrap_or_else(|| Err(TmuxError::ConnectionLost("no reply".into())))
            } else {
                result
            };
            if tx.send(ChunkEvent::Pane(i, result)).is_err() {
                break;
            }
        }
        outcome
    }

    /// Captures the panes of `held` marked `again`, each with a header, on
    /// a client of its own that takes the chunk's place in `child` (so the
    /// batch's cancel reaches it). Results by request index.
    fn capture_again(
        &self,
        child: &SharedChild,
        held: &[(usize, Result<Split, TmuxError>)],
    ) -> std::collections::HashMap<usize, Result<Split, TmuxError>> {
        let indexes: Vec<usize> = held
            .iter()
            .filter(|(_, r)| is_again(r))
            .map(|(i, _)| *i)
            .collect();
        let requests: Vec<CaptureRequest> = indexes
            .iter()
            .filter_map(|&i| self.requests.get(i).cloned())
            .collect();
        let token = sweep_token();
        let mut fresh = std::collections::HashMap::new();
        let outcome =
            oneshot::spawn_source(self.socket, script(&token, &requests, self.options, 0))
                .and_then(|c| {
                    *crate::sync::lock(child) = c;
                    let mut cutter = Cutter::Headed(Splitter::new(&token, &requests, self.options));
                    read_output(child, self.socket, None, &mut cutter, &mut |k, result| {
                        if let Some(&i) = indexes.get(k) {
                            fresh.insert(i, result);
                        }
                        true
                    })
                });
        if let Err(e) = outcome {
            for &i in &indexes {
                fresh.entry(i).or_insert_with(|| Err(e.clone()));
            }
        }
        fresh
    }
}

/// Reads a client's output through `cutter`, which calls `emit` for each
/// request it completes; `emit` returns whether anyone still listens (if
/// not, the client is killed). `Ok` once the end marker was read.
fn read_output(
    child: &SharedChild,
    socket: &Endpoint,
    mut preamble: Option<&mut preamble::Reader>,
    cutter: &mut Cutter<'_>,
    emit: &mut dyn FnMut(usize, Result<Split, TmuxError>) -> bool,
) -> Result<(), TmuxError> {
    let (stdout, stderr) = {
        let mut c = crate::sync::lock(child);
        (c.stdout.take(), c.stderr.take())
    };
    let err_reader = std::thread::spawn(move || {
        let mut err = String::new();
        if let Some(mut e) = stderr {
            let _ = e.read_to_string(&mut err);
        }
        err
    });
    let mut listening = true;
    if let Some(mut stdout) = stdout {
        let mut piece = vec![0u8; READ_SIZE];
        while listening {
            let n = match stdout.read(&mut piece) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(_) => break,
            };
            let after;
            let mut data = &piece[..n];
            if let Some(reader) = preamble.as_deref_mut().filter(|r| !r.done()) {
                match reader.push(data) {
                    Some(rest) => after = rest,
                    None => continue,
                }
                data = &after;
            }
            cutter.push(data, &mut |i, result| {
                listening = listening && emit(i, result);
            });
        }
    }
    if !listening {
        // Nobody wants the rest: do not let tmux go on writing it.
        kill_child(child);
    }
    let status = crate::sync::lock(child).wait();
    let err = err_reader.join().unwrap_or_default();
    if cutter.ended() {
        return Ok(());
    }
    let code = status.ok().and_then(|s| s.code());
    Err(match socket.client_error(&err, code) {
        TmuxError::Command(m) if m.is_empty() => {
            TmuxError::ConnectionLost("tmux stopped before the capture finished".into())
        }
        TmuxError::Command(m) => TmuxError::ConnectionLost(m),
        e => e,
    })
}

/// Bytes read from a sweep's pipe at a time.
const READ_SIZE: usize = 256 * 1024;
