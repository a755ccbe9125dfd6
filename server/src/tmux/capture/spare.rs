//! A sweep client started before its script is known.
//!
//! Starting a `tmux source-file` process is a large share of what a sweep
//! costs besides the captures. A caller that will sweep once its listing is
//! back starts a spare first, so the process starts while the listing's
//! round trip is under way; the batch's first chunk then hands its script to
//! the spare. Two kinds, as a chunk's client is fed:
//!
//! - **Pipe**: `tmux source-file -`, the script on its standard input, for
//!   a small batch with no anchor (a since search's few deltas).
//! - **Anchored**: `tmux source-file FIFO` on the kept anchor's terminal
//!   ([`super::anchor`]), for a whole sweep: the client waits on a FIFO no
//!   writer has opened yet, and feeding writes the script and closes it.
//!   The FIFO is 0600 beside the socket under the chunk's random name, and
//!   removed when the chunk ends.
//!
//! What must hold: either runs its script as any sweep's (read whole, run
//! without yielding); a spare not used is given an empty script, or killed
//! when it has not opened its FIFO yet, and reaped on a thread of its own; a
//! client left waiting on a FIFO by a panescan that died is ended by the
//! next sweep of that server; a spare whose client already exited is not
//! used. Why, in full: NOTES.md.

use std::io::Write as _;
use std::path::Path;
use std::process::{Child, ChildStdin, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::super::launch::Endpoint;
use super::super::oneshot;
use super::anchor::{open_for_writing, Anchor, ScriptFile, FIFO_POLL};

/// How long a fed anchored spare may take to open its FIFO: it started
/// before the listing's round trip and opens it as soon as tmux asks,
/// so this only bounds a client that died or hung on the way.
const FIFO_OPEN_WAIT: Duration = Duration::from_secs(10);

/// A `tmux source-file` client waiting for its script.
#[derive(Debug)]
pub struct Spare {
    child: Option<Child>,
    input: Input,
}

/// Where a spare's script goes.
#[derive(Debug)]
enum Input {
    /// The client's standard input.
    Pipe(Option<ChildStdin>),
    /// A FIFO the client reads the script from, on `anchor`'s terminal.
    Fifo {
        fifo: Option<ScriptFile>,
        anchor: Arc<Anchor>,
        /// The FIFO's write end, once held ([`Spare::hold`]).
        writer: Option<std::fs::File>,
    },
}

/// A spare's client with its script on the way, and the FIFO to remove
/// when its chunk ends (anchored spares).
pub(crate) type Fed = (Child, Option<ScriptFile>);

impl Spare {
    /// Starts a pipe-fed spare client for the server at `at` (here or on a
    /// host); `None` if it cannot be started (the batch then starts its own).
    pub(crate) fn start(at: &Endpoint) -> Option<Spare> {
        let mut child = at
            .tmux(&["source-file", "-"])
            .ok()?
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .ok()?;
        let stdin = child.stdin.take();
        Some(Spare {
            child: Some(child),
            input: Input::Pipe(stdin),
        })
    }

    /// Starts a spare client on `anchor`'s terminal, reading its script
    /// from a FIFO named with `token`; `None` where FIFOs do not behave as
    /// described above (not Linux) or it cannot be started.
    pub(crate) fn start_anchored(at: &Endpoint, anchor: Arc<Anchor>, token: &str) -> Option<Spare> {
        if !cfg!(target_os = "linux") {
            return None;
        }
        let fifo = anchor.fifo(token)?;
        let child = oneshot::spawn_source_path(at, fifo.path(), anchor.stdin()?).ok()?;
        Some(Spare {
            child: Some(child),
            input: Input::Fifo {
                fifo: Some(fifo),
                anchor,
                writer: None,
            },
        })
    }

    /// Holds the write end of an anchored spare's FIFO once its client has
    /// opened it (waiting until `until`): a spare kept between searches
    /// ([`crate::tmux::listing_ahead`]) then ends with panescan, however panescan
    /// ends, since the kernel closes the write end, and the client reads
    /// an empty script and exits (a client left waiting would keep tmux
    /// from exiting after its last session). `false` if it could not be
    /// held (a pipe-fed spare, or the client did not open its FIFO).
    pub(crate) fn hold(&mut self, until: Instant) -> bool {
        let Input::Fifo {
            fifo: Some(fifo),
            writer,
            ..
        } = &mut self.input
        else {
            return false;
        };
        if writer.is_none() {
            *writer = open_for_writing(fifo.path(), until);
            if writer.is_some() {
                // Both ends are open: the name is no longer needed, and
                // gone it cannot be left behind by a killed panescan.
                let _ = std::fs::remove_file(fifo.path());
            }
        }
        writer.is_some()
    }

    /// Whether this spare can run a chunk whose clients show tmux `anchor`
    /// (`None`: a pipe-fed chunk).
    pub(crate) fn serves(&self, anchor: Option<&Arc<Anchor>>) -> bool {
        match (&self.input, anchor) {
            (Input::Pipe(_), None) => true,
            (Input::Fifo { anchor: own, .. }, Some(wanted)) => Arc::ptr_eq(own, wanted),
            _ => false,
        }
    }

    /// The client with `script` on its way to it, if it is still running;
    /// the script is written on a thread, as a freshly started sweep's is
    /// (the caller reads the output while the script is still going in),
    /// and not after `deadline`.
    pub(crate) fn feed(mut self, script: String, deadline: Instant) -> Option<Fed> {
        let alive = self
            .child
            .as_mut()
            .is_some_and(|c| matches!(c.try_wait(), Ok(None)));
        if !alive {
            return None;
        }
        let child = self.child.take()?;
        match &mut self.input {
            Input::Pipe(stdin) => {
                let mut stdin = stdin.take()?;
                std::thread::spawn(move || {
                    let _ = stdin.write_all(script.as_bytes());
                });
                Some((child, None))
            }
            Input::Fifo { fifo, writer, .. } => {
                let fifo = fifo.take()?;
                let path = fifo.path().to_path_buf();
                let held = writer.take();
                std::thread::spawn(move || match held {
                    Some(file) => write_all(file, script.as_bytes(), deadline),
                    None => write_fifo(&path, script.as_bytes(), deadline),
                });
                Some((child, Some(fifo)))
            }
        }
    }
}

/// Writes `script` into the FIFO at `path` once its reader has opened it,
/// then closes it (the reader's end of file). Gives up at `deadline` (or
/// after [`FIFO_OPEN_WAIT`]) or when the FIFO is removed (its chunk ended):
/// the chunk's reader then reports the client's failure.
fn write_fifo(path: &Path, script: &[u8], deadline: Instant) {
    let until = deadline.min(Instant::now() + FIFO_OPEN_WAIT);
    if let Some(fifo) = open_for_writing(path, until) {
        write_all(fifo, script, until);
    }
}

/// Writes `script` into the open, non-blocking `fifo` (until `until`),
/// then closes it: the reader's end of file.
fn write_all(mut fifo: std::fs::File, script: &[u8], until: Instant) {
    let mut left = script;
    while !left.is_empty() {
        match fifo.write(left) {
            Ok(0) => return,
            Ok(n) => left = &left[n..],
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                if Instant::now() >= until {
                    return;
                }
                std::thread::sleep(FIFO_POLL);
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            // The client went away (EPIPE): nothing left to feed.
            Err(_) => return,
        }
    }
}

impl Drop for Spare {
    fn drop(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        match &mut self.input {
            // End of input: an empty script, which tmux runs as nothing.
            Input::Pipe(stdin) => drop(stdin.take()),
            Input::Fifo { fifo, writer, .. } => {
                let fifo = fifo.take();
                // A held write end closing is the client's end of file.
                let opened = writer.take().is_some()
                    || fifo
                        .as_ref()
                        .is_some_and(|f| open_for_writing(f.path(), Instant::now()).is_some());
                // Opened and closed again: the client read an empty script
                // and ends. Not opened by the client yet: it would wait for
                // a writer forever, so it is stopped.
                if !opened {
                    let _ = child.kill();
                }
                drop(fifo);
            }
        }
        std::thread::spawn(move || {
            let _ = child.wait();
        });
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use std::os::unix::fs::FileTypeExt as _;

    use super::super::super::ids::PaneId;
    use super::super::super::{inventory, Fields, Server, ServerSpec};
    use super::super::{anchor, anchored_spare, CaptureRange, CaptureRequest};
    use super::*;
    use crate::testbed::private_server::{process_state, PrivateServer};

    /// A private server of 20 panes under a directory of its own, and the
    /// server's handle with an anchor kept on its lowest pane.
    fn anchored(label: &str) -> (PrivateServer, std::path::PathBuf, Server) {
        let dir = std::env::temp_dir().join(format!("panescan-{label}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let server = PrivateServer::start_under(label, 80, 10, Some(&dir)).unwrap();
        server
            .source(&"new-window -d 'exec sleep 100000'\n".repeat(19))
            .unwrap();
        let socket = server.socket_path().unwrap();
        let shared = Server::new(ServerSpec {
            socket_path: Some(socket.clone()),
            ..ServerSpec::default()
        })
        .unwrap();
        let deadline = Instant::now() + Duration::from_secs(30);
        // The server's pane count, which anchored spares go by, is what
        // its last listing found.
        let (listed, _) = inventory::fetch(&shared, Fields::Search, &[], deadline).unwrap();
        assert_eq!(listed.panes.len(), 20);
        assert_eq!(shared.listings().panes(), 20);
        let requests: Vec<CaptureRequest> = (0..20)
            .map(|n| CaptureRequest {
                pane: PaneId::from_number(n),
                range: CaptureRange::Visible,
            })
            .collect();
        assert!(anchor::find(&shared, &requests, deadline).is_some());
        (server, socket.parent().unwrap().to_path_buf(), shared)
    }

    fn fifos(dir: &Path) -> Vec<std::path::PathBuf> {
        std::fs::read_dir(dir)
            .unwrap()
            .flatten()
            .filter(|e| e.file_type().is_ok_and(|t| t.is_fifo()))
            .map(|e| e.path())
            .collect()
    }

    /// Whether process `pid` ends (exits, reaped or not) within 30 s.
    fn gone(pid: u32) -> bool {
        let until = Instant::now() + Duration::from_secs(30);
        while Instant::now() < until {
            if process_state(pid).is_none_or(|state| state == 'Z') {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    }

    #[test]
    fn an_anchored_spare_runs_the_script_it_is_fed_from_its_fifo() {
        let (server, dir, shared) = anchored("spare-fed");
        let spare = anchored_spare(&shared).expect("a kept anchor starts a spare");
        let kept = anchor::kept(&shared).unwrap();
        assert!(spare.serves(Some(&kept)), "its own anchor's chunks");
        assert!(!spare.serves(None), "not a pipe-fed chunk");
        let fifo = fifos(&dir);
        assert_eq!(fifo.len(), 1, "one FIFO beside the socket");
        // The client is waiting on its FIFO well before it is fed.
        std::thread::sleep(Duration::from_millis(300));
        let deadline = Instant::now() + Duration::from_secs(30);
        let (child, guard) = spare
            .feed("display-message -p fed-through-the-fifo\n".into(), deadline)
            .unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success());
        assert_eq!(out.stdout, b"fed-through-the-fifo\n");
        drop(guard);
        assert!(fifos(&dir).is_empty(), "the FIFO is removed with its chunk");
        drop(server);
        let _ = std::fs::remove_dir_all(dir.parent().unwrap_or(&dir));
    }

    #[test]
    fn an_unused_anchored_spare_ends_and_leaves_nothing() {
        let (server, dir, shared) = anchored("spare-unused");
        // Dropped at once (its client may not have opened the FIFO yet)
        // and after its client waits on it: both end, FIFOs removed.
        for wait in [Duration::ZERO, Duration::from_millis(300)] {
            let spare = anchored_spare(&shared).unwrap();
            let pid = spare.child.as_ref().unwrap().id();
            std::thread::sleep(wait);
            drop(spare);
            assert!(gone(pid), "the spare's client ended ({wait:?})");
            assert!(fifos(&dir).is_empty(), "no FIFO left ({wait:?})");
        }
        // Another anchor's spare does not serve: the anchor is compared,
        // not just its pane.
        let spare = anchored_spare(&shared).unwrap();
        *crate::sync::lock(&shared.capture().anchor) = None;
        let requests = [CaptureRequest {
            pane: PaneId::from_number(0),
            range: CaptureRange::Visible,
        }];
        let other = anchor::find(&shared, &requests, Instant::now() + Duration::from_secs(30));
        assert!(!spare.serves(other.as_ref()));
        drop(spare);
        drop(server);
        let _ = std::fs::remove_dir_all(dir.parent().unwrap_or(&dir));
    }

    #[test]
    fn a_spare_left_waiting_by_a_dead_panescan_is_released_by_the_next() {
        let (server, dir, shared) = anchored("spare-left");
        let spare = anchored_spare(&shared).unwrap();
        let pid = spare.child.as_ref().unwrap().id();
        // As if panescan died before feeding it: nothing ends the client,
        // which opens its FIFO and waits for a writer.
        std::mem::forget(spare);
        std::thread::sleep(Duration::from_millis(300));
        anchor::remove_stale_scripts(&dir, std::time::SystemTime::now());
        assert_eq!(fifos(&dir).len(), 1, "a fresh FIFO is left alone");
        let later = std::time::SystemTime::now() + Duration::from_secs(120);
        anchor::remove_stale_scripts(&dir, later);
        assert!(gone(pid), "the waiting client ended");
        assert!(fifos(&dir).is_empty(), "the stale FIFO is removed");
        drop(server);
        let _ = std::fs::remove_dir_all(dir.parent().unwrap_or(&dir));
    }

    /// A batch with `anchor` and `spare`, for `Batch::spawn`.
    fn batch(shared: &Server, anchor: Option<Arc<Anchor>>, spare: Spare) -> super::super::Batch {
        let (tx, _rx) = crossbeam_channel::bounded(1);
        super::super::Batch {
            socket: shared.connection().endpoint().clone(),
            server_panes: 20,
            options: super::super::CaptureOptions::default(),
            deadline: Instant::now() + Duration::from_secs(30),
            cancel: Arc::default(),
            tx,
            member: None,
            anchor,
            spare: std::sync::Mutex::new(Some(spare)),
            counting: Arc::default(),
            preamble: std::sync::Mutex::new(None),
            alone_first: false,
        }
    }

    #[test]
    fn a_chunk_runs_on_the_spare_of_its_own_kind_only() {
        let (server, dir, shared) = anchored("spare-chunk");
        let script = || "display-message -p chunk\n".to_owned();
        let run = |child: Child| child.wait_with_output().unwrap().stdout;
        // The batch's anchor is the spare's: its first chunk runs there.
        let spare = anchored_spare(&shared).unwrap();
        let pid = spare.child.as_ref().unwrap().id();
        let anchored = batch(&shared, anchor::kept(&shared), spare);
        let (child, fifo) = anchored.spawn("token", script());
        let child = child.unwrap();
        assert_eq!(child.id(), pid, "the spare ran the chunk");
        assert!(fifo.is_some(), "its FIFO lives as long as the chunk");
        assert_eq!(run(child), b"chunk\n");
        drop(fifo);
        // A pipe-fed batch starts its own client and leaves the spare.
        let spare = anchored_spare(&shared).unwrap();
        let pid = spare.child.as_ref().unwrap().id();
        let piped = batch(&shared, None, spare);
        let (child, fifo) = piped.spawn("token", script());
        let child = child.unwrap();
        assert_ne!(child.id(), pid, "not the anchored spare");
        assert!(fifo.is_none());
        assert_eq!(run(child), b"chunk\n");
        assert!(
            crate::sync::lock(&piped.spare).is_some(),
            "the spare is left"
        );
        drop(piped);
        drop(anchored);
        drop(server);
        let _ = std::fs::remove_dir_all(dir.parent().unwrap_or(&dir));
    }
}
