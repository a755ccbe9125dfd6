//! run_command and wait_for_command (mutating tier): type a shell command
//! into a pane at a prompt, learn when it ended and with what status, and
//! return exactly what it printed.
//!
//! - [`shell`] — whether the pane sits at a shell prompt (a refusal saying
//!   what it does instead), the typed line (one `eval` of the command).
//! - [`seat`] — who leads the pane's terminal and whether a shell's line
//!   editor reads there (`/proc` and the terminal).
//! - [`detect`] — the completion detector: OSC 133 D marks and the call's
//!   marker in the pane's raw output (pure).
//! - [`extract`] — which captured lines the command printed (pure).
//! - [`table`] — the bounded table of commands, for wait_for_command.
//! - [`watcher`] — the thread that watches one command until it ends.
//! - [`tap`] — a pane's raw output through `pipe-pane`, where the event
//!   stream does not cover the pane.
//!
//! What must hold: the shell reads the command whole (`eval '...'`, quoted
//! for the shell: a typo is the eval's error with a status, never a
//! continuation prompt); the end and status are the shell's (its next OSC
//! 133 D mark where it was seen printing them after panescan's marker, else
//! the marker `; printf '\n%s%s:%s\n' PIECE1 PIECE2 "$?"`, random per call,
//! whose typed line holds the pieces apart); the output comes from a
//! capture, never from the event stream, between the echoed line and the
//! end. The long form: NOTES.md.

pub(crate) mod detect;
mod extract;
mod jobs;
mod line_text;
mod seat;
mod shell;
mod table;
mod tap;
mod watcher;

/// Ends the commands a session ran (at the session's end).
pub use table::end_session;

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::capture::{capture_one_by, keep_tail_bytes, output_bounds};
use super::context::{ErrorKind, ServerArgs, ToolContext, ToolError, WAIT_GRACE};
use super::find_pane;
use super::wait::wait_timeout;
use crate::config::Tier;
use crate::sync::nonce;
use crate::tmux::events::{Interest, OutputMode, Watch};
use crate::tmux::{CaptureOptions, CaptureRange, CapturedText, PaneId, Tmux, TmuxCommand};
use crate::tools::registry::{Annotations, Tool};
use table::{Completion, Entry, Progress};

/// run_command's timeout when the caller gives none.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
/// Longest command typed.
const MAX_COMMAND_BYTES: usize = 16 * 1024;
/// Rows captured above the cursor beyond max_lines and the pane's height
/// (for the echoed line and rows of lines that wrapped).
const WINDOW_SLACK: i64 = 64;
/// A waiting call looks at its cancel flag this often.
const CANCEL_SLICE: Duration = Duration::from_millis(50);
/// How long the answer to a command that ended waits for its shell's next
/// prompt to be drawn before the output is captured.
const PROMPT_DRAWN: Duration = Duration::from_millis(500);

#[derive(Debug, Deserialize, JsonSchema)]
// A wire type: its doc comments would be schema descriptions every client
// reads in tools/list; the tool's description and the field names say it.
#[allow(missing_docs)]
pub struct RunCommandArgs {
    /// Pane id, e.g. %1; it must sit at a shell prompt.
    pub pane_id: PaneId,
    /// Shell command line, typed as is.
    pub command: String,
    /// Wait this long (default 30000, max as wait_for_text).
    #[serde(default)]
    pub timeout_ms: Option<u64>,
    /// Keep at most this many output lines, the last (default 200, max 10000).
    #[serde(default)]
    pub max_lines: Option<usize>,
    /// Keep at most this many output bytes, the last (max 262144).
    #[serde(default)]
    pub max_bytes: Option<usize>,
    /// Allow newlines in command (each line runs in turn).
    #[serde(default)]
    pub allow_multiline: bool,
    /// Type even if the window synchronizes panes (all get it).
    #[serde(default)]
    pub allow_synchronized: bool,
    #[serde(flatten)]
    pub server: ServerArgs,
}

#[derive(Debug, Serialize, JsonSchema)]
// A wire type: its doc comments would be schema descriptions every client
// reads in tools/list; the tool's description and the field names say it.
#[allow(missing_docs)]
pub struct RunCommandResult {
    /// Absent while running, or when the shell gave none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exit_status: Option<i32>,
    pub output: String,
    /// Lines in output.
    pub lines: usize,
    /// Secrets in output replaced with `[REDACTED:KIND]`.
    pub redactions: u64,
    /// Output lost its start (max_lines, max_bytes, or no longer in the pane).
    pub output_truncated: bool,
    /// The last line had no final newline (or ended in a bare CR).
    pub partial_last_line: bool,
    /// Other shell jobs meanwhile: their prints may be in output.
    #[serde(skip_serializing_if = "is_zero")]
    pub background_jobs: usize,
    /// Their end notices, not in output.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub job_notices: Vec<String>,
    pub timed_out: bool,
    pub elapsed_ms: u64,
    /// For wait_for_command.
    pub command_id: String,
    pub pane_id: PaneId,
}

#[derive(Debug)]
/// `run_command` (mutating tier): runs a shell command in a pane and returns its status and output.
pub struct RunCommand;

impl Tool for RunCommand {
    const NAME: &'static str = "run_command";
    const TITLE: &'static str = "Run a shell command";
    const DESCRIPTION: &'static str = "Type a command into a pane at a shell prompt, wait for it to end, and return its exit status and exactly what it printed (bounded). Ends by OSC 133 marks or a random marker. On timeout returns output so far with timed_out; continue with wait_for_command. Refuses panes running something else.";
    const TIER: Tier = Tier::Mutating;
    const ANNOTATIONS: Annotations = Annotations::MUTATE;
    const BATCHABLE: bool = false;
    type Args = RunCommandArgs;
    type Output = RunCommandResult;

    fn run(ctx: &ToolContext, args: Self::Args) -> Result<Self::Output, ToolError> {
        shell::check_command(&args.command, args.allow_multiline, MAX_COMMAND_BYTES)?;
        let timeout = wait_timeout(ctx, args.timeout_ms, DEFAULT_TIMEOUT)?;
        let end = End::after(timeout);
        let bounds = output_bounds(ctx.ceilings(), args.max_lines, args.max_bytes)?;
        let tmux = ctx.tmux(&args.server)?;
        // Whether the pane's shell waits at its prompt is read from the
        // pane's processes and terminal, which are this machine's only.
        if tmux.host().is_some() {
            let host = args.server.host.as_deref().unwrap_or_default();
            return Err(ToolError::refused(format!(
                "run_command works on this machine's panes only (it reads the pane's processes and terminal), not on host {host}: use send_keys and wait_for_text there"
            )));
        }
        let entry = start(ctx, &tmux, &args, &end)?;
        let progress = wait(ctx, &entry, &end)?;
        answer(ctx, &tmux, &entry, progress, bounds, &end)
    }

    fn text(out: &Self::Output) -> String {
        render(out)
    }

    fn shrink(out: &mut Self::Output, excess: usize) -> bool {
        shrink_output(out, excess)
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
// A wire type: its doc comments would be schema descriptions every client
// reads in tools/list; the tool's description and the field names say it.
#[allow(missing_docs)]
pub struct WaitForCommandArgs {
    /// From run_command.
    pub command_id: String,
    /// Wait this long (default 30000, max as wait_for_text).
    #[serde(default)]
    pub timeout_ms: Option<u64>,
    /// As run_command.
    #[serde(default)]
    pub max_lines: Option<usize>,
    /// As run_command.
    #[serde(default)]
    pub max_bytes: Option<usize>,
}

#[derive(Debug)]
/// `wait_for_command` (mutating tier): waits on a command run_command started.
pub struct WaitForCommand;

impl Tool for WaitForCommand {
    const NAME: &'static str = "wait_for_command";
    const TITLE: &'static str = "Wait for a command";
    const DESCRIPTION: &'static str = "Wait on a command run_command started (after its timeout) until it ends or timeout_ms; returns the same fields as run_command, output from the command's start.";
    const TIER: Tier = Tier::Mutating;
    const ANNOTATIONS: Annotations = Annotations::READ_VOLATILE;
    const BATCHABLE: bool = false;
    type Args = WaitForCommandArgs;
    type Output = RunCommandResult;

    fn run(ctx: &ToolContext, args: Self::Args) -> Result<Self::Output, ToolError> {
        let timeout = wait_timeout(ctx, args.timeout_ms, DEFAULT_TIMEOUT)?;
        let end = End::after(timeout);
        let bounds = output_bounds(ctx.ceilings(), args.max_lines, args.max_bytes)?;
        let entry = table::get(&args.command_id, ctx.session)?;
        let tmux = ctx.tmux(&entry.server)?;
        let progress = wait(ctx, &entry, &end)?;
        answer(ctx, &tmux, &entry, progress, bounds, &end)
    }

    fn text(out: &Self::Output) -> String {
        render(out)
    }

    fn shrink(out: &mut Self::Output, excess: usize) -> bool {
        shrink_output(out, excess)
    }
}

/// When a call's time (`timeout_ms`, from the call's start) is up. Its
/// round trips to tmux (listing, typing, the capture of the output) end by
/// then plus [`WAIT_GRACE`], so a tmux that stands still costs the call
/// its own time, not tmux's round-trip deadline.
struct End {
    at: Instant,
    timeout: Duration,
}

impl End {
    fn after(timeout: Duration) -> End {
        End {
            at: Instant::now() + timeout,
            timeout,
        }
    }

    /// The deadline of a round trip started now.
    fn deadline(&self, ctx: &ToolContext) -> Instant {
        ctx.tmux_deadline_by(self.at + WAIT_GRACE)
    }

    /// Whether `e` says tmux did not answer within the call's time.
    fn ran_out(&self, e: &ToolError) -> bool {
        e.kind == ErrorKind::TimedOut && Instant::now() >= self.at
    }

    /// `e`, said as the call's time running out when it did.
    fn said(&self, e: ToolError, what: &str) -> ToolError {
        if self.ran_out(&e) {
            ToolError::timed_out(format!(
                "tmux did not answer within timeout_ms ({} ms) {what}",
                self.timeout.as_millis()
            ))
        } else {
            e
        }
    }
}

/// `len` random hex digits (at most 32), from the nonce every tmux token
/// of panescan's comes from.
fn random_hex(len: usize) -> String {
    let n = nonce();
    n.get(..len).unwrap_or(&n).to_owned()
}

/// Checks the pane, records the command, starts its watcher and types it.
fn start(
    ctx: &ToolContext,
    tmux: &Tmux,
    args: &RunCommandArgs,
    end: &End,
) -> Result<Arc<Entry>, ToolError> {
    let inv = ctx
        .inventory_by(tmux, end.deadline(ctx))
        .map_err(|e| end.said(e, "while listing panes: the command was not typed"))?;
    let pane = find_pane(&inv, args.pane_id)?;
    super::own_pane::refuse_own_pane(ctx, tmux, pane.pane_id, pane.pane_pid, end.deadline(ctx))
        .map_err(|e| end.said(e, "while reading the pane: the command was not typed"))?;
    let socket = tmux.socket_path().to_path_buf();
    table::check_free(&socket, pane.pane_id)?;
    // A shell drawing its prompt (hooks, its line editor starting) is
    // waited for, within the call's time.
    let sh = shell::ready(pane, end.at)?;
    super::mutate::refuse_synchronized(
        tmux,
        pane.pane_id,
        args.allow_synchronized,
        end.deadline(ctx),
    )
    .map_err(|e| {
        end.said(
            e,
            "while reading the pane's window: the command was not typed",
        )
    })?;
    let mut sub = ctx.config.wait_events.then(|| {
        let interest = Interest {
            watch: Watch::Panes([pane.pane_id].into_iter().collect()),
            mode: OutputMode::Bytes,
            structure: false,
        };
        tmux.subscribe(interest, end.deadline(ctx))
    });
    let covered = sub.as_ref().is_some_and(|s| {
        let c = s.coverage();
        c.live && c.panes.contains(&pane.pane_id)
    });
    // Several lines end in several D marks: the marker ends them once.
    let completion = if covered
        && !args.command.contains(['\n', '\r'])
        && table::prints_osc133(&socket, pane.pane_id)
    {
        Completion::Osc133
    } else {
        let key = random_hex(16);
        let first = format!("__ps{}", random_hex(8));
        Completion::Marker {
            token: format!("{first}{key}"),
            command: sh.marker_command(&first, &key),
            key,
        }
    };
    let marker = match &completion {
        Completion::Marker { command, .. } => Some(command.as_str()),
        Completion::Osc133 => None,
    };
    let leader = pane.pane_pid.and_then(seat::leader_name);
    let history = shell::History::of(leader.as_deref().unwrap_or(&pane.pane_current_command));
    let typed = shell::typed_line(&args.command, marker, sh, history)?;
    let history = i64::try_from(pane.history_size).unwrap_or(i64::MAX / 4);
    let start_abs = history + i64::from(pane.cursor_y);
    let limit = i64::try_from(pane.history_limit).unwrap_or(i64::MAX / 4);
    let entry = Arc::new(
        Entry::new(
            format!("cmd-{}", random_hex(16)),
            args.server.clone(),
            socket,
            pane.pane_id,
            typed,
            completion,
            (start_abs, (history, limit)),
            (pane.pane_pid, pane.pane_tty.clone()),
        )
        .of_session(ctx.session)
        // Read at the prompt, just before typing: a job the command starts
        // is its own.
        .with_jobs(pane.pane_pid.and_then(jobs::running)),
    );
    table::insert(entry.clone())?;
    let tap = (!covered)
        .then(|| tap_for(tmux, pane, &entry.completion, end.deadline(ctx)))
        .flatten();
    if tap.is_some() {
        sub = None;
    }
    let typing = watcher::Watcher::new(
        entry.clone(),
        tmux.clone(),
        (sub, tap),
        ctx.ceilings().tmux_timeout,
    )
    .spawn()
    .and_then(|()| type_line(ctx, tmux, entry.pane, &entry.typed, end.deadline(ctx)))
    .map_err(|e| {
        // Sent, tmux may still type it when it runs again.
        end.said(
            e,
            "while the command was typed: tmux may still type it once it answers, and it is not watched; look at the pane before running it again",
        )
    });
    if let Err(e) = typing {
        entry.finish(Progress::Lost(e.clone()));
        return Err(e);
    }
    Ok(entry)
}

/// Outside the event stream a marker's pane is read through a tap, opened
/// before typing: a screen the command draws on is no proof of its end.
/// Only for a pane whose process this machine's `/proc` shows.
fn tap_for(
    tmux: &Tmux,
    pane: &crate::tmux::Pane,
    completion: &Completion,
    deadline: Instant,
) -> Option<tap::Tap> {
    if !matches!(completion, Completion::Marker { .. }) {
        return None;
    }
    pane.pane_pid.and_then(seat::in_foreground)?;
    tap::Tap::open(tmux, pane.pane_id, deadline)
}

/// Types `line` literally, then Enter, answered by `deadline`.
fn type_line(
    ctx: &ToolContext,
    tmux: &Tmux,
    pane: PaneId,
    line: &str,
    deadline: Instant,
) -> Result<(), ToolError> {
    ctx.check_cancelled()?;
    // `--`: a command starting with `-` is not a flag; -l: no key names.
    let keys = [
        TmuxCommand::new("send-keys")
            .flag("-l")
            .target(pane)
            .arg("--")
            .arg(line),
        TmuxCommand::new("send-keys").target(pane).arg("Enter"),
    ];
    for r in tmux.run_many(&keys, deadline) {
        r.map_err(ToolError::from)?;
    }
    Ok(())
}

/// Waits for the command's end until `end` (or the call's cancel).
fn wait(ctx: &ToolContext, entry: &Entry, end: &End) -> Result<Progress, ToolError> {
    let progress = entry.wait(end.at, CANCEL_SLICE, || ctx.is_cancelled());
    ctx.check_cancelled()?;
    match progress {
        Progress::Lost(e) => Err(e),
        p => Ok(p),
    }
}

/// The answer: status, and the output captured now.
fn answer(
    ctx: &ToolContext,
    tmux: &Tmux,
    entry: &Entry,
    progress: Progress,
    (max_lines, max_bytes): (usize, usize),
    end: &End,
) -> Result<RunCommandResult, ToolError> {
    let (ended, status) = match progress {
        Progress::Ended { status, .. } => (true, status),
        _ => (false, None),
    };
    // The next prompt drawn whole: it is left out by its rows.
    let drawn = ended && await_prompt(entry, end.deadline(ctx));
    let read = match capture_command(ctx, tmux, entry, max_lines, end, ended) {
        Ok(read) => read,
        Err(e) if end.ran_out(&e) => return unread(entry, ended.then_some(status), end),
        Err(e) => return Err(e),
    };
    let Some(cap) = read.cap else {
        // On the alternate screen: nothing of what it printed can be read.
        return Ok(RunCommandResult {
            exit_status: status,
            output: String::new(),
            lines: 0,
            redactions: 0,
            output_truncated: true,
            partial_last_line: false,
            background_jobs: 0,
            job_notices: Vec::new(),
            timed_out: !ended,
            elapsed_ms: entry.started.elapsed().as_millis() as u64,
            command_id: entry.id.clone(),
            pane_id: entry.pane,
        });
    };
    let lines = caption_lines(&cap);
    let (token, key) = match &entry.completion {
        Completion::Marker { token, key, .. } => (Some(token.as_str()), Some(key.as_str())),
        Completion::Osc133 => (None, None),
    };
    let marks = extract::Marks {
        token,
        key,
        typed: &entry.typed,
        ended,
        placed: read.earliest.is_some(),
        prompt_rows: table::prompt_rows(&entry.socket, entry.pane),
        // zsh moves to a row of its own after an echo that filled its
        // last row, leaving that row empty; readline (bash) writes into
        // the next row, which tmux then joins to the echo.
        full_row: match entry.process.0.and_then(seat::name_of).as_deref() {
            Some("zsh") => Some(extract::FullRow::Gap(read.width)),
            Some("bash") => Some(extract::FullRow::Joined(read.width)),
            _ => None,
        },
    };
    let found = extract::extract(&lines, read.earliest.unwrap_or(0), &marks);
    if let Some(rows) = found.prompt_rows.filter(|_| drawn && read.drawn) {
        table::set_prompt_rows(&entry.socket, entry.pane, rows);
    }
    let mut out = found.lines;
    let partial = match entry.completion {
        Completion::Marker { .. } => found.partial_last_line,
        Completion::Osc133 => ended && entry.open_line.load(Ordering::Acquire),
    };
    if partial && entry.completion == Completion::Osc133 {
        drop_eol_mark(entry, &mut out);
        restore_open_line(entry, &mut out);
    }
    let (background_jobs, notices) = take_job_notices(entry, &mut out);
    let mut job_notices = notices.join("\n");
    ctx.redact(&mut job_notices);
    let mut truncated = !found.start_found;
    if out.len() > max_lines {
        out.drain(..out.len() - max_lines);
        truncated = true;
    }
    let (from, omitted) = keep_tail_bytes(&mut out, max_bytes);
    truncated |= from > 0 || omitted > 0;
    let out = &out[from..];
    // Redacted as a whole: a private key block spans lines.
    let mut output: String = out.iter().map(|l| format!("{l}\n")).collect();
    let redactions = ctx.redact(&mut output);
    Ok(RunCommandResult {
        exit_status: status,
        output,
        lines: out.len(),
        redactions,
        output_truncated: truncated,
        partial_last_line: partial,
        background_jobs,
        job_notices: job_notices.lines().map(String::from).collect(),
        timed_out: !ended,
        elapsed_ms: entry.started.elapsed().as_millis() as u64,
        command_id: entry.id.clone(),
        pane_id: entry.pane,
    })
}

/// The shell's background jobs that ran alongside the command, and the
/// notices of those that ended, taken out of `out`.
fn take_job_notices(entry: &Entry, out: &mut Vec<String>) -> (usize, Vec<String>) {
    let Some(before) = &entry.jobs_before else {
        return (0, Vec::new());
    };
    let now = entry.process.0.and_then(jobs::running).unwrap_or_default();
    let notices = jobs::take_notices(out, jobs::ended(before, &now));
    (before.len(), notices)
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// With OSC 133, the unfinished last line as the raw output drew it,
/// where the screen lost it: bash draws its next prompt over it; zsh's and
/// fish's end-of-line marks overwrite a line ended by a bare CR. A line
/// that could not be followed stays as the screen shows it.
fn restore_open_line(entry: &Entry, out: &mut Vec<String>) {
    let Some(text) = crate::sync::lock(&entry.open_text).clone() else {
        return;
    };
    match entry.process.0.and_then(seat::leader_name).as_deref() {
        // The row holding the mark, the mark dropped above.
        Some("zsh" | "fish") => match out.last_mut() {
            Some(last) => *last = text,
            None => out.push(text),
        },
        // A prompt starting with a newline leaves the line on its row.
        Some("bash") if out.last() != Some(&text) => out.push(text),
        _ => {}
    }
}

/// With OSC 133, output that ended without a newline shares its row with
/// the mark zsh (`%`, `#` as root: PROMPT_EOL_MARK) or fish (`⏎`) prints
/// there before moving its prompt to a row of its own: not output.
fn drop_eol_mark(entry: &Entry, out: &mut [String]) {
    let mark: &[char] = match entry.process.0.and_then(seat::leader_name).as_deref() {
        Some("zsh") => &['%', '#'],
        Some("fish") => &['⏎'],
        _ => return,
    };
    if let Some(last) = out.last_mut() {
        if let Some(kept) = last.strip_suffix(mark) {
            *last = kept.trim_end().to_owned();
        }
    }
}

/// Waits (at most [`PROMPT_DRAWN`], and until `deadline`) until the shell
/// of a command that ended reads its next line: its prompt is then drawn
/// whole. Whether it was seen so (false: a shell without a line editor, or
/// the prompt still being drawn).
fn await_prompt(entry: &Entry, deadline: Instant) -> bool {
    let until = deadline.min(Instant::now() + PROMPT_DRAWN);
    loop {
        match seat::at_prompt(entry.process.0, &entry.process.1) {
            Some(true) => return true,
            Some(false) if Instant::now() < until => {
                std::thread::sleep(Duration::from_millis(2));
            }
            _ => return false,
        }
    }
}

/// The answer when tmux did not answer the capture of the output within
/// the call's time: for a command still running, the timed-out answer with
/// nothing read (flagged as cut); for one that ended (`Some(status)`), an
/// error, since its output is what was asked for and can still be read.
fn unread(
    entry: &Entry,
    ended: Option<Option<i32>>,
    end: &End,
) -> Result<RunCommandResult, ToolError> {
    if let Some(status) = ended {
        let status = status.map_or_else(String::new, |s| format!(" with status {s}"));
        return Err(ToolError::timed_out(format!(
            "command {id} ended{status}, but tmux did not answer the capture of its output within timeout_ms ({} ms): wait_for_command {id} reads it once tmux answers",
            end.timeout.as_millis(),
            id = entry.id,
        )));
    }
    Ok(RunCommandResult {
        exit_status: None,
        output: String::new(),
        lines: 0,
        redactions: 0,
        output_truncated: true,
        partial_last_line: false,
        background_jobs: 0,
        job_notices: Vec::new(),
        timed_out: true,
        elapsed_ms: entry.started.elapsed().as_millis() as u64,
        command_id: entry.id.clone(),
        pane_id: entry.pane,
    })
}

/// The captured lines (each without its newline).
fn caption_lines(cap: &CapturedText) -> Vec<String> {
    let text = String::from_utf8_lossy(&cap.bytes);
    let mut lines: Vec<String> = text.split('\n').map(str::to_owned).collect();
    if lines.last().is_some_and(String::is_empty) {
        lines.pop();
    }
    lines
}

/// What [`capture_command`] read.
struct Captured {
    /// The capture (`None`: the pane shows the alternate screen).
    cap: Option<CapturedText>,
    /// The index of its first line typed at or after the command (`None`:
    /// the place is unknown).
    earliest: Option<usize>,
    /// The next prompt was seen drawn.
    drawn: bool,
    /// The pane's width.
    width: usize,
}

/// Captures from the command's line (or a window of `max_lines` and the
/// pane's height above the cursor, when its line is further up or its
/// place is unknown) to the cursor's row, wrapped rows joined.
///
/// Where the command's line is: its absolute row (history rows, then the
/// screen) less the history size now, in tmux's line scale. That holds
/// while the history only grew. Once it reaches its limit tmux drops the
/// oldest tenth at once (and keeps at least nine tenths from then on), and
/// `clear` (E3) or clear-history empties it: so when the history shrank, or
/// is now within a tenth of its limit, the place is unknown and the echo is
/// looked for by its text in the window.
fn capture_command(
    ctx: &ToolContext,
    tmux: &Tmux,
    entry: &Entry,
    max_lines: usize,
    end: &End,
    ended: bool,
) -> Result<Captured, ToolError> {
    let ([history, cursor_y, height, width, alternate], drawn) =
        cursor(ctx, tmux, entry, end, ended)?;
    let width = usize::try_from(width).unwrap_or(0);
    if alternate == 1 {
        // A full-screen program the command runs (vim, less) draws there:
        // its screen is not what the command printed, and the rows below
        // it are not the command's either.
        return Ok(Captured {
            cap: None,
            earliest: None,
            drawn,
            width,
        });
    }
    let window = i64::try_from(max_lines).unwrap_or(i64::MAX / 4) + height + WINDOW_SLACK;
    let lowest = (cursor_y - window).max(-history);
    let typed_at = entry.start_abs - history;
    let (before, limit) = entry.history;
    let known = history >= before && history < limit - limit / 10 - 1 && typed_at <= cursor_y;
    // A few rows above: a prompt of several lines, as it stood.
    let above = i64::try_from(table::MAX_PROMPT_ROWS).unwrap_or(0);
    let start = if known {
        (typed_at - above).max(lowest)
    } else {
        lowest
    };
    let cap = capture_one_by(
        ctx,
        tmux,
        entry.pane,
        CaptureRange::Lines {
            start,
            end: cursor_y,
        },
        CaptureOptions {
            join_wrapped: true,
            escapes: false,
        },
        end.deadline(ctx),
    )
    .map_err(|e| match e.kind {
        ErrorKind::NotFound => ToolError::not_found(format!(
            "pane {} closed: its output cannot be read",
            entry.pane
        )),
        _ => e,
    })?;
    let earliest = known.then(|| first_at_or_after(&cap, typed_at));
    Ok(Captured {
        cap: Some(cap),
        earliest,
        drawn,
        width,
    })
}

/// The pane's history size, cursor row, height, width and whether it
/// shows the alternate screen; for a command that
/// `ended`, once the next prompt's last row is drawn (the cursor off the
/// row's start: a prompt ends in text, `$ `), waiting at most
/// [`PROMPT_DRAWN`]: whether it was seen drawn.
fn cursor(
    ctx: &ToolContext,
    tmux: &Tmux,
    entry: &Entry,
    end: &End,
    ended: bool,
) -> Result<([i64; 5], bool), ToolError> {
    let probe = TmuxCommand::new("display-message")
        .flag("-p")
        .target(entry.pane)
        .format_arg(
            "#{history_size} #{cursor_y} #{pane_height} #{pane_width} #{cursor_x} #{alternate_on}",
        );
    let until = Instant::now() + PROMPT_DRAWN;
    loop {
        let text = tmux
            .run(&probe, end.deadline(ctx))
            .map_err(ToolError::from)?;
        let nums: Vec<i64> = text
            .split_whitespace()
            .filter_map(|n| n.parse().ok())
            .collect();
        let [history, cursor_y, height, width, cursor_x, alternate] = nums[..] else {
            return Err(ToolError::not_found(format!(
                "pane {} closed: its output cannot be read",
                entry.pane
            )));
        };
        let drawn = cursor_x > 0;
        if !ended || drawn || Instant::now() >= until.min(end.at) {
            return Ok(([history, cursor_y, height, width, alternate], drawn));
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// The index of the first line of `cap` numbered `line` or later.
fn first_at_or_after(cap: &CapturedText, line: i64) -> usize {
    match &cap.line_numbers {
        Some(numbers) => numbers.iter().take_while(|&&n| n < line).count(),
        None => usize::try_from(line - cap.first_line).unwrap_or(0),
    }
}

fn render(out: &RunCommandResult) -> String {
    let state = if out.timed_out {
        format!("still running after {} ms", out.elapsed_ms)
    } else {
        match out.exit_status {
            Some(s) => format!("exit {s} after {} ms", out.elapsed_ms),
            None => format!("ended after {} ms (no status)", out.elapsed_ms),
        }
    };
    let cut = if out.output_truncated {
        ", start cut"
    } else {
        ""
    };
    let open = if out.partial_last_line {
        ", last line without newline"
    } else {
        ""
    };
    format!(
        "{} in {}: {state}, {} lines{cut}{open}\n{}",
        out.command_id, out.pane_id, out.lines, out.output
    )
}

/// Drops the oldest output lines to save about `excess` bytes.
fn shrink_output(out: &mut RunCommandResult, excess: usize) -> bool {
    if out.output.is_empty() {
        return false;
    }
    // Output is carried twice (structured and text), escaped.
    let mut saved = 0;
    let mut cut = 0;
    for line in out.output.split_inclusive('\n') {
        if saved >= excess {
            break;
        }
        saved += 2 * super::json_str_len(line);
        cut += line.len();
        out.lines = out.lines.saturating_sub(1);
    }
    out.output.drain(..cut.min(out.output.len()));
    out.output_truncated = true;
    true
}
