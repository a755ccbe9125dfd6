//! The long-lived control-mode connection, and the fallback to one-shot
//! processes.
//!
//! One control client per tmux server: `tmux -S SOCKET -C attach-session -E
//! -f no-output,ignore-size -t $ID` (not read-only: see `attach`), in the client environment of
//! [`super::client_env`] (`-E`: the attach copies nothing into the session's
//! environment). Commands are pipelined: a writer lock keeps the order in which
//! requests are registered with the parser and written to tmux's stdin the
//! same; a reader thread parses replies ([`super::framing`]) and hands each
//! to the channel of its request. A waiter that gives up at its deadline just
//! drops its receiver: the reply is still parsed and discarded, so later
//! replies stay in step. Notification lines go to a `Listener` (the
//! server's event stream, [`super::events`], which may turn output on),
//! which keeps the client attached while anyone listens. The connection
//! holds no feature's state and names no feature: `tmux::Server` holds
//! their state beside it.
//!
//! When the control client exits (its session was killed, the server died)
//! every request in flight fails with `ConnectionLost`; `run_many` then
//! reconnects (to another session if there is one) and retries those once.
//! A server with no sessions has nothing to attach to: commands then run as
//! one-shot `source-file -` processes ([`super::oneshot`]), with the same
//! answers.

use std::collections::VecDeque;
use std::io::{Read, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Weak;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender};

/// An idle control client detaches after this long, so panescan is not an
/// attached client of the user's session (hooks, `session_attached`,
/// `destroy-unattached`) while nobody asks it anything and nobody listens to
/// its events. Re-attaching costs one `list-sessions` process and an attach.
pub const IDLE_DETACH: Duration = Duration::from_secs(10);

use super::framing::{Event, Parser, RawReply};
use super::launch::Endpoint;
use super::{oneshot, ServerInfo, ServerSpec, TmuxCommand, TmuxError};
use crate::sync::{lock, nonce, try_lock};

/// Where a control client's notification lines go: the server's event
/// stream ([`super::events::Hub`]), named here only through this trait so
/// that the connection imports nothing of what is built on it.
pub(crate) trait Listener: Send + Sync + std::fmt::Debug {
    /// Whether anyone listens: the client then stays attached.
    fn listening(&self) -> bool;
    /// Notification lines read by client `pid` (from its reader thread,
    /// which holds no other lock).
    fn on_lines(&self, pid: u32, lines: &[Vec<u8>]);
    /// Client `pid` is gone (`on_purpose`: panescan closed it).
    fn on_closed(&self, pid: u32, on_purpose: bool);
}

type Waiter = Sender<Result<RawReply, TmuxError>>;

/// The server's one control client: silent until output is turned on for
/// a watched pane, and no say in window sizes.
const OWN_FLAGS: &str = "no-output,ignore-size";
/// A session's feed (`feed.rs`): every pane's output from the start. Not
/// read-only either: on tmux 3.7 and later a user's `send-keys` without
/// `-c` goes through its session's best client, which is a feed in a
/// session no terminal attached to, and refuses a read-only one (NOTES.md).
/// A feed never types.
const FEED_FLAGS: &str = "ignore-size";

/// The sessions, one id a line: what the control client attaches to.
const LIST_SESSIONS: [&str; 3] = ["list-sessions", "-F", "#{session_id}"];

/// Parser and waiters, in write order.
#[derive(Debug, Default)]
struct Book {
    parser: Parser,
    waiters: VecDeque<Waiter>,
    dead: Option<String>,
    /// panescan closed the client itself (shut down, idle).
    shut: bool,
}

/// The receiving end of one request's reply.
pub(crate) type ReplyRx = Receiver<Result<RawReply, TmuxError>>;

/// One attached control client.
#[derive(Debug)]
pub(crate) struct Control {
    child: Mutex<Child>,
    /// Text for the writer thread; `None` once closed.
    writer: Mutex<Option<Sender<Vec<u8>>>>,
    book: Arc<Mutex<Book>>,
    dead: Arc<AtomicBool>,
    /// The session the client is attached to (`$N`); the event stream may
    /// move it to another.
    session_id: Mutex<String>,
    /// The server's event stream: gets the notifications this client reads,
    /// and keeps it attached while anyone listens.
    hub: Arc<dyn Listener>,
    /// Process id of the control client (to spot it in `list-clients`).
    pub(crate) client_pid: u32,
    /// When a request was last queued.
    last_used: Mutex<Instant>,
    /// Stdin of the guard process (see [`GUARD`]); a line on it stands the
    /// guard down, end of file (our process died) makes it act.
    guard: Mutex<Option<ChildStdin>>,
}

/// A watchdog for the control client, run by `sh`. If panescan dies while
/// the client has output queued, tmux 3.3 keeps the client attached for
/// ever (and a `kill-server` never completes): the guard sees its stdin
/// close without a line, waits a second for a clean exit, and then kills
/// the client — only if that pid is still a control client of this socket.
const GUARD: &str = r#"if read -r _; then exit 0; fi
sleep 1
c=$(tr '\0' ' ' < /proc/$1/cmdline 2>/dev/null)
case "$c" in *"-S $2 -C attach-session "*) kill -KILL "$1" ;; esac"#;

impl Control {
    /// Attaches a control client to session `session_id` with client
    /// flags `flags` (`no-output,ignore-size` for the server's one client).
    fn attach(
        at: &Endpoint,
        session_id: &str,
        flags: &str,
        hub: &Arc<dyn Listener>,
    ) -> Result<Arc<Control>, TmuxError> {
        let mut child = at
            .tmux(&[
                "-C",
                "attach-session",
                // -E: attaching copies nothing into the session's
                // environment (see `client_env`). Not -r: since tmux 3.7
                // `send-keys` refuses to type through a read-only client,
                // ours (our own keys) or the best client of the session (a
                // user's `send-keys` without -c); a feed attaches the same
                // way (`FEED_FLAGS`).
                "-E",
                "-f",
                flags,
                "-t",
                session_id,
            ])?
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| TmuxError::spawn("", e))?;
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| TmuxError::spawn_without("no stdout"))?;
        let stdin = child
            .stdin
            .take()
            .ok_or_else(|| TmuxError::spawn_without("no stdin"))?;
        let book = Arc::new(Mutex::new(Book::default()));
        let dead = Arc::new(AtomicBool::new(false));
        let client_pid = child.id();
        let (wtx, wrx) = crossbeam_channel::unbounded::<Vec<u8>>();
        // A remote client is ssh here: when panescan dies its stdin closes,
        // ssh closes the channel and the remote client gets end of file;
        // there is no local tmux client to guard.
        let guard = match at.host() {
            Some(_) => None,
            None => std::process::Command::new("sh")
                .arg("-c")
                .arg(GUARD)
                .arg("sh")
                .arg(client_pid.to_string())
                .arg(at.path())
                .stdin(Stdio::piped())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .ok(),
        };
        let guard_stdin = match guard {
            Some(mut g) => {
                let stdin = g.stdin.take();
                // Reap the guard whenever it ends.
                std::thread::spawn(move || {
                    let _ = g.wait();
                });
                stdin
            }
            None => None,
        };
        let control = Arc::new(Control {
            child: Mutex::new(child),
            writer: Mutex::new(Some(wtx)),
            book: book.clone(),
            dead: dead.clone(),
            session_id: Mutex::new(session_id.to_string()),
            hub: hub.clone(),
            client_pid,
            last_used: Mutex::new(Instant::now()),
            guard: Mutex::new(guard_stdin),
        });
        {
            let weak = Arc::downgrade(&control);
            std::thread::Builder::new()
                .name("tmux-control-idle".into())
                .spawn(move || idle_watch(&weak))
                .map_err(|e| TmuxError::spawn("", e))?;
        }
        {
            let book = book.clone();
            let dead = dead.clone();
            std::thread::Builder::new()
                .name("tmux-control-writer".into())
                .spawn(move || writer(stdin, &wrx, &book, &dead))
                .map_err(|e| TmuxError::spawn("", e))?;
        }
        {
            let hub = hub.clone();
            std::thread::Builder::new()
                .name("tmux-control-reader".into())
                .spawn(move || {
                    let on_purpose = reader(stdout, &book, &dead, &*hub, client_pid);
                    hub.on_closed(client_pid, on_purpose);
                })
                .map_err(|e| TmuxError::spawn("", e))?;
        }
        Ok(control)
    }

    /// The session the client is attached to (`$N`).
    pub(crate) fn session_id(&self) -> String {
        lock(&self.session_id).clone()
    }

    /// Records that the client now shows session `id`.
    pub(crate) fn set_session(&self, id: &str) {
        *lock(&self.session_id) = id.to_string();
    }

    /// Queues one command without waiting; `None` if it has no valid line.
    /// The reply (or its failure) arrives on the receiver, which may be
    /// dropped unread.
    pub(crate) fn send(&self, command: &TmuxCommand) -> Option<ReplyRx> {
        let line = command.to_line().ok()?;
        self.submit(&[line]).into_iter().next()
    }

    /// Queues `commands` as pipelined requests written together, so tmux
    /// reads them in one go rather than one round trip each; `None` (and
    /// nothing sent) when one of them has no valid line.
    pub(crate) fn send_all(&self, commands: &[TmuxCommand]) -> Option<Vec<ReplyRx>> {
        let lines: Vec<&str> = commands
            .iter()
            .map(|c| c.to_line().ok())
            .collect::<Option<_>>()?;
        Some(self.submit(&lines))
    }

    fn is_dead(&self) -> bool {
        self.dead.load(Ordering::Acquire)
    }

    /// Queues `lines` as pipelined requests; one receiver per line. Never
    /// blocks on tmux: a writer thread feeds its stdin, so a stuck or dying
    /// client cannot hold a caller past its deadline.
    fn submit(&self, lines: &[&str]) -> Vec<Receiver<Result<RawReply, TmuxError>>> {
        let mut out = Vec::with_capacity(lines.len());
        let mut text = String::new();
        // The book lock orders registration and queueing alike.
        let mut book = lock(&self.book);
        *lock(&self.last_used) = Instant::now();
        for line in lines {
            let (tx, rx) = crossbeam_channel::bounded(1);
            if let Some(why) = &book.dead {
                let _ = tx.send(Err(TmuxError::ConnectionLost(why.clone())));
            } else {
                let n = nonce();
                book.parser.expect(n.as_bytes());
                book.waiters.push_back(tx);
                text.push_str(line);
                text.push_str("\ndisplay-message -p ");
                text.push_str(&n);
                text.push('\n');
            }
            out.push(rx);
        }
        if !text.is_empty() {
            let queued = lock(&self.writer)
                .as_ref()
                .is_some_and(|w| w.send(text.into_bytes()).is_ok());
            if !queued {
                fail_all(&mut book, &self.dead, "the tmux control client is closed");
            }
        }
        out
    }

    fn kill(&self, why: &str) {
        {
            let mut book = lock(&self.book);
            book.shut = true;
            fail_all(&mut book, &self.dead, why);
        }
        // Closing stdin detaches the client cleanly; kill it if it lingers.
        *lock(&self.writer) = None;
        let mut child = lock(&self.child);
        let until = Instant::now() + Duration::from_millis(300);
        while matches!(child.try_wait(), Ok(None)) && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(5));
        }
        if matches!(child.try_wait(), Ok(None)) {
            let _ = child.kill();
        }
        let _ = child.wait();
        self.stand_guard_down();
    }

    fn stand_guard_down(&self) {
        if let Some(mut g) = lock(&self.guard).take() {
            let _ = g.write_all(b"done\n");
        }
    }
}

/// Detaches the client once it has been idle for [`IDLE_DETACH`].
fn idle_watch(control: &Weak<Control>) {
    loop {
        std::thread::sleep(Duration::from_millis(500));
        let Some(c) = control.upgrade() else { return };
        if c.is_dead() {
            return;
        }
        let detach = {
            // Decided under the book lock, which `submit` also holds: a
            // request either came before (and keeps the client) or finds
            // the client closed and reconnects.
            let mut book = lock(&c.book);
            let idle = lock(&c.last_used).elapsed() >= IDLE_DETACH && !c.hub.listening();
            if idle && book.waiters.is_empty() && book.dead.is_none() {
                fail_all(&mut book, &c.dead, "detached after being idle");
                true
            } else {
                false
            }
        };
        if detach {
            c.kill("detached after being idle");
            return;
        }
    }
}

impl Drop for Control {
    fn drop(&mut self) {
        lock(&self.book).shut = true;
        // Closing stdin makes tmux detach the client; kill it if it lingers.
        *lock(&self.writer) = None;
        let mut child = lock(&self.child);
        if !matches!(child.try_wait(), Ok(Some(_))) {
            let _ = child.kill();
        }
        let _ = child.wait();
        drop(child);
        self.stand_guard_down();
    }
}

/// Marks the client dead, then fails every waiter — in that order: a woken
/// waiter retries at once, and must not be routed to this client again.
fn fail_all(book: &mut Book, dead: &AtomicBool, why: &str) {
    dead.store(true, Ordering::Release);
    if book.dead.is_none() {
        book.dead = Some(why.to_string());
    }
    for w in book.waiters.drain(..) {
        let _ = w.send(Err(TmuxError::ConnectionLost(why.to_string())));
    }
}

fn writer(mut stdin: ChildStdin, rx: &Receiver<Vec<u8>>, book: &Mutex<Book>, dead: &AtomicBool) {
    for text in rx {
        if stdin.write_all(&text).and_then(|_| stdin.flush()).is_err() {
            let mut b = lock(book);
            fail_all(&mut b, dead, "cannot write to the tmux control client");
            return;
        }
    }
}

/// Reads the client's output until it ends: replies to their waiters,
/// notifications to the event stream (outside the book's lock: the stream
/// may queue commands). Returns whether panescan closed the client itself.
fn reader(
    mut stdout: impl Read,
    book: &Mutex<Book>,
    dead: &AtomicBool,
    hub: &dyn Listener,
    pid: u32,
) -> bool {
    let mut buf = vec![0u8; 1 << 16];
    let mut events = Vec::new();
    let mut notes = Vec::new();
    let mut exit_reason = String::new();
    loop {
        let n = match stdout.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        lock(book).parser.feed(&buf[..n], &mut events);
        for ev in events.drain(..) {
            match ev {
                Event::Reply(r) => {
                    // What tmux wrote before a reply reaches the stream
                    // before the reply's waiter wakes: a caller that
                    // waited for a command has every event that came
                    // ahead of its answer.
                    if !notes.is_empty() {
                        hub.on_lines(pid, &notes);
                        notes.clear();
                    }
                    if let Some(w) = lock(book).waiters.pop_front() {
                        let _ = w.send(Ok(r));
                    }
                }
                Event::Exit(why) => exit_reason = why,
                Event::Notification(line) => notes.push(line),
            }
        }
        if !notes.is_empty() {
            hub.on_lines(pid, &notes);
            notes.clear();
        }
    }
    let why = if exit_reason.is_empty() {
        "the tmux control client exited (session or server gone)".to_string()
    } else {
        format!("the tmux control client exited: {exit_reason}")
    };
    let mut b = lock(book);
    fail_all(&mut b, dead, &why);
    b.shut
}

/// How commands currently reach the server.
#[derive(Debug, Clone)]
pub(crate) enum Route {
    Control(Arc<Control>),
    /// No session to attach to: one process per command.
    OneShot,
}

/// The connection to one tmux server: where its clients run, the control
/// client (or one-shot processes), and where notifications go. Held by
/// the server's state (`tmux::Server`), beside each feature's own.
#[derive(Debug)]
pub struct Shared {
    spec: ServerSpec,
    at: Endpoint,
    /// A remote host's tmux version was found good enough.
    version_checked: AtomicBool,
    control: Mutex<Option<Arc<Control>>>,
    /// Never attach: answer every command with one-shot processes.
    oneshot_only: AtomicBool,
    /// The server's event stream.
    hub: Arc<dyn Listener>,
    /// The pids of the feeds' control clients (`feed.rs`), left out
    /// of the clients we count like our own.
    feeds: Mutex<std::collections::HashSet<u32>>,
}

impl Shared {
    /// A connection to the server `spec` names, telling `hub` what its
    /// control client reads. Nothing is started.
    pub(crate) fn new(spec: ServerSpec, hub: Arc<dyn Listener>) -> Result<Self, TmuxError> {
        let at = Endpoint::for_spec(&spec)?;
        Ok(Shared {
            spec,
            at,
            version_checked: AtomicBool::new(false),
            control: Mutex::new(None),
            oneshot_only: AtomicBool::new(false),
            hub,
            feeds: Mutex::default(),
        })
    }

    /// Never attach (`true`): every command then runs as a one-shot
    /// process; a control client attached is closed.
    pub(crate) fn set_oneshot_only(&self, oneshot_only: bool) {
        self.oneshot_only.store(oneshot_only, Ordering::Relaxed);
        if oneshot_only {
            self.shutdown();
        }
    }

    pub(crate) fn spec(&self) -> &ServerSpec {
        &self.spec
    }

    pub(crate) fn socket_path(&self) -> &Path {
        self.at.path()
    }

    /// Where this server's clients run.
    pub(crate) fn endpoint(&self) -> &Endpoint {
        &self.at
    }

    /// On a remote host, checks once that tmux is there and recent enough
    /// (the error names the host and what it found), and lists the
    /// sessions in the same exchange ([`LIST_SESSIONS`]): their listing
    /// when it ran (a far host's first call saves a channel's round trips).
    fn check_remote(
        &self,
        deadline: Instant,
    ) -> Result<Option<Result<String, TmuxError>>, TmuxError> {
        if self.at.host().is_none() || self.version_checked.load(Ordering::Acquire) {
            return Ok(None);
        }
        let Some(checked) = self.at.check_version_then(&LIST_SESSIONS, deadline) else {
            return Ok(None);
        };
        let sessions = checked?;
        self.version_checked.store(true, Ordering::Release);
        Ok(Some(sessions))
    }

    /// Connects the control client if it is not, and counts this as a use
    /// of it (it detaches after [`IDLE_DETACH`] unused); `false` when
    /// commands go through one-shot processes instead, or nothing answers.
    pub(crate) fn keep_control(&self, deadline: Instant) -> bool {
        match self.route(deadline) {
            Ok(Route::Control(c)) => {
                *lock(&c.last_used) = Instant::now();
                true
            }
            _ => false,
        }
    }

    /// The live control client, connecting if needed; `OneShot` when the
    /// server has no session to attach to.
    pub(crate) fn route(&self, deadline: Instant) -> Result<Route, TmuxError> {
        // Another thread may be connecting; wait for it only until our own
        // deadline.
        let mut slot = loop {
            if let Some(g) = try_lock(&self.control) {
                break g;
            }
            if Instant::now() >= deadline {
                return Err(TmuxError::Timeout);
            }
            std::thread::sleep(Duration::from_micros(200));
        };
        if let Some(c) = slot.as_ref() {
            if !c.is_dead() {
                return Ok(Route::Control(c.clone()));
            }
        }
        *slot = None;
        let mut listed = self.check_remote(deadline)?;
        if self.oneshot_only.load(Ordering::Relaxed) {
            return Ok(Route::OneShot);
        }
        if self.at.host().is_none() && !self.at.path().exists() {
            return Err(TmuxError::NoServer {
                socket: self.at.label(),
            });
        }
        for _attempt in 0..3 {
            let sessions = match listed.take() {
                Some(s) => s,
                None => oneshot::run_line(&self.at, "list-sessions -F \"#{session_id}\"", deadline),
            };
            let sessions = match sessions {
                Ok(s) => s,
                Err(TmuxError::Command(m)) if m.contains("no sessions") => String::new(),
                Err(e) => return Err(e),
            };
            let Some(id) = sessions
                .lines()
                .find(|l| super::SessionId::parse(l).is_ok())
            else {
                return Ok(Route::OneShot);
            };
            let control = Control::attach(&self.at, id, OWN_FLAGS, &self.hub)?;
            // Handshake: the first reply proves the client is attached.
            let rx = control.submit(&["display-message -p ok"]);
            let ok = rx.into_iter().next().map(|rx| wait(&rx, deadline));
            match ok {
                Some(Ok(r)) if r.ok => {
                    *slot = Some(control.clone());
                    return Ok(Route::Control(control));
                }
                Some(Err(TmuxError::Timeout)) => return Err(TmuxError::Timeout),
                _ => continue, // the session died under us: try another
            }
        }
        // No control client would attach (sessions dying as we try, or a
        // tmux too old for `-f no-output,ignore-size`): one-shot processes
        // give the same answers.
        Ok(Route::OneShot)
    }

    pub(crate) fn run_many(
        &self,
        commands: &[TmuxCommand],
        deadline: Instant,
    ) -> Vec<Result<String, TmuxError>> {
        let lines: Vec<Result<&str, TmuxError>> = commands.iter().map(|c| c.to_line()).collect();
        let mut results: Vec<Result<String, TmuxError>> = lines
            .iter()
            .map(|l| match l {
                Ok(_) => Err(TmuxError::ConnectionLost("not sent".into())),
                Err(e) => Err(e.clone()),
            })
            .collect();
        let mut todo: Vec<usize> = (0..lines.len()).filter(|&i| lines[i].is_ok()).collect();
        for attempt in 0..2 {
            if todo.is_empty() {
                break;
            }
            // Nothing is sent once its deadline has passed: a reply already
            // queued would otherwise answer a call that ran out of time.
            if Instant::now() >= deadline {
                for &i in &todo {
                    results[i] = Err(TmuxError::Timeout);
                }
                break;
            }
            let route = match self.route(deadline) {
                Ok(r) => r,
                Err(e) => {
                    for &i in &todo {
                        results[i] = Err(e.clone());
                    }
                    break;
                }
            };
            let batch: Vec<&str> = todo
                .iter()
                .filter_map(|&i| lines[i].as_ref().ok().copied())
                .collect();
            let mut retry = Vec::new();
            match route {
                Route::OneShot => {
                    for (&i, line) in todo.iter().zip(&batch) {
                        results[i] = oneshot::run_line(&self.at, line, deadline);
                    }
                }
                Route::Control(control) => {
                    let rxs = control.submit(&batch);
                    for (&i, rx) in todo.iter().zip(rxs) {
                        results[i] = match wait(&rx, deadline) {
                            Ok(r) => reply_text(r),
                            Err(TmuxError::ConnectionLost(why)) => {
                                if attempt == 0 {
                                    retry.push(i);
                                }
                                Err(TmuxError::ConnectionLost(why))
                            }
                            Err(e) => Err(e),
                        };
                    }
                }
            }
            todo = retry;
        }
        results
    }

    pub(crate) fn server_info(&self, deadline: Instant) -> Result<ServerInfo, TmuxError> {
        let sep = nonce();
        let fmt = format!("#{{pid}}{sep}#{{version}}{sep}#{{socket_path}}{sep}#{{start_time}}");
        let cmds = [
            TmuxCommand::new("display-message")
                .flag("-p")
                .format_arg(&fmt),
            TmuxCommand::new("list-sessions").option("-F", "#{session_id}"),
            TmuxCommand::new("list-clients").option("-F", "#{client_pid}"),
        ];
        let mut res = self.run_many(&cmds, deadline).into_iter();
        let info = res
            .next()
            .unwrap_or(Err(TmuxError::ConnectionLost("no reply".into())))?;
        let sessions = match res.next() {
            Some(Ok(s)) => s,
            Some(Err(TmuxError::Command(m))) if m.contains("no sessions") => String::new(),
            Some(Err(e)) => return Err(e),
            None => String::new(),
        };
        let clients = res.next().and_then(Result::ok).unwrap_or_default();
        let mine = self.own_client_pid().map(|p| p.to_string());
        let feeds: std::collections::HashSet<String> =
            lock(&self.feeds).iter().map(u32::to_string).collect();
        let fields: Vec<&str> = info.trim_end_matches('\n').split(sep.as_str()).collect();
        let field = |i: usize| fields.get(i).copied().unwrap_or("");
        Ok(ServerInfo {
            pid: field(0).parse().unwrap_or(0),
            version: field(1).to_string(),
            socket_path: if field(2).is_empty() {
                self.at.path().display().to_string()
            } else {
                field(2).to_string()
            },
            start_time: field(3).parse().unwrap_or(0),
            session_count: u32::try_from(sessions.lines().filter(|l| !l.is_empty()).count())
                .unwrap_or(u32::MAX),
            client_count: u32::try_from(
                clients
                    .lines()
                    .filter(|l| !l.is_empty() && Some(*l) != mine.as_deref() && !feeds.contains(*l))
                    .count(),
            )
            .unwrap_or(u32::MAX),
            transport: if mine.is_some() { "control" } else { "oneshot" }.to_string(),
        })
    }

    /// A control client of its own attached to session `session_id` with
    /// output on for every pane (`feed.rs`), its lines to `listener`;
    /// answered one command before it is handed out.
    pub(crate) fn attach_feed(
        &self,
        session_id: &str,
        listener: Arc<dyn Listener>,
        deadline: Instant,
    ) -> Result<Arc<Control>, TmuxError> {
        if self.at.host().is_none() && !self.at.path().exists() {
            return Err(TmuxError::NoServer {
                socket: self.at.label(),
            });
        }
        let control = Control::attach(&self.at, session_id, FEED_FLAGS, &listener)?;
        lock(&self.feeds).insert(control.client_pid);
        let rx = control.submit(&["display-message -p ok"]);
        let refused = match rx.into_iter().next().map(|rx| wait(&rx, deadline)) {
            Some(Ok(r)) if r.ok => return Ok(control),
            Some(Err(e)) => e,
            _ => TmuxError::ConnectionLost(format!(
                "no control client would attach to session {session_id}"
            )),
        };
        // No SessionFeed will own this client, so nothing else forgets it.
        self.forget_feed(control.client_pid);
        Err(refused)
    }

    /// A feed's client `pid` is closed: it is no longer left out.
    pub(crate) fn forget_feed(&self, pid: u32) {
        lock(&self.feeds).remove(&pid);
    }

    /// The pid of our live control client, if any.
    pub(crate) fn own_client_pid(&self) -> Option<u32> {
        lock(&self.control)
            .as_ref()
            .filter(|c| !c.is_dead())
            .map(|c| c.client_pid)
    }

    /// The session our live control client is attached to, if any.
    pub(crate) fn own_session(&self) -> Option<String> {
        lock(&self.control)
            .as_ref()
            .filter(|c| !c.is_dead())
            .map(|c| c.session_id())
    }

    pub(crate) fn shutdown(&self) {
        let c = lock(&self.control).take();
        if let Some(c) = c {
            c.kill("shut down");
        }
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        self.shutdown();
    }
}

fn wait(
    rx: &Receiver<Result<RawReply, TmuxError>>,
    deadline: Instant,
) -> Result<RawReply, TmuxError> {
    match rx.recv_deadline(deadline) {
        Ok(r) => r,
        Err(crossbeam_channel::RecvTimeoutError::Timeout) => Err(TmuxError::Timeout),
        Err(crossbeam_channel::RecvTimeoutError::Disconnected) => {
            Err(TmuxError::ConnectionLost("reply channel closed".into()))
        }
    }
}

/// Waits for one reply and turns it into text (or tmux's error).
pub(crate) fn wait_text(rx: &ReplyRx, deadline: Instant) -> Result<String, TmuxError> {
    wait(rx, deadline).and_then(reply_text)
}

fn reply_text(r: RawReply) -> Result<String, TmuxError> {
    let text = String::from_utf8_lossy(&r.output).into_owned();
    if r.ok {
        Ok(text)
    } else {
        // "parse error: unknown command: x" -> "unknown command: x", as
        // the one-shot path reports it.
        let msg = text.trim_end();
        let msg = msg.strip_prefix("parse error: ").unwrap_or(msg).to_string();
        if msg.starts_with("can't find") {
            Err(TmuxError::NotFound(msg))
        } else {
            Err(TmuxError::Command(msg))
        }
    }
}
