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
pub(crate) mod tap;
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
/// prompt to be drawn before the output is captured, and a call for the
/// prompt it types at before it reads where the command goes.
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
    let completion = completion_for(&args.command, covered, &socket, pane.pane_id, sh);
    let marker = match &completion {
        Completion::Marker { command, .. } => Some(command.as_str()),
        Completion::Osc133 => None,
    };
    let leader = pane.pane_pid.and_then(seat::leader_name);
    let history = shell::History::of(leader.as_deref().unwrap_or(&pane.pane_current_command));
    let typed = shell::typed_line(&args.command, marker, sh, history)?;
    let (history, start_abs) = typed_row(ctx, tmux, pane.pane_id, end)?;
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

/// How the command's end is known: by the shell's next OSC 133 D mark
/// where the event stream covers the pane (`covered`) and its shell was
/// seen printing marks, else by a marker of the call's own.
fn completion_for(
    command: &str,
    covered: bool,
    socket: &std::path::Path,
    pane: PaneId,
    shell: shell::Shell,
) -> Completion {
    // Several lines end in several D marks: the marker ends them once.
    if covered && !command.contains(['\n', '\r']) && table::prints_osc133(socket, pane) {
        return Completion::Osc133;
    }
    let key = random_hex(16);
    let first = format!("__ps{}", random_hex(8));
    Completion::Marker {
        token: format!("{first}{key}"),
        command: shell.marker_command(&first, &key),
        key,
    }
}

/// Where the command is typed, read just before typing: the pane's history
/// size and its cursor's absolute row (history rows, then the screen),
/// once the prompt's last row is drawn (the cursor off the row's start: a
/// prompt ends in text, `$ `, as the answer's [`cursor`] takes it),
/// waiting at most [`PROMPT_DRAWN`] and within the call's time.
///
/// Not the listing's row: that was read before [`shell::ready`] waited
/// for the prompt, and a prompt hook may have printed rows since, with
/// the prompt (of one row or several) drawn below them: the command's
/// place would be above its echo. Nor at once: a shell found at its prompt
/// may not have drawn it yet (its line editor reads before it draws, and
/// fish runs its `fish_prompt` event handlers with its terminal set for
/// the editor). A prompt that leaves the cursor at its row's start (an
/// empty one) costs the call that wait.
fn typed_row(
    ctx: &ToolContext,
    tmux: &Tmux,
    pane: PaneId,
    end: &End,
) -> Result<(i64, i64), ToolError> {
    let probe = TmuxCommand::new("display-message")
        .flag("-p")
        .target(pane)
        .format_arg("#{history_size} #{cursor_y} #{cursor_x}");
    let until = Instant::now() + PROMPT_DRAWN;
    loop {
        let text = tmux.run(&probe, end.deadline(ctx)).map_err(|e| {
            end.said(
                e.into(),
                "while reading the pane: the command was not typed",
            )
        })?;
        let nums: Vec<i64> = text
            .split_whitespace()
            .filter_map(|n| n.parse().ok())
            .collect();
        let [history, cursor_y, cursor_x] = nums[..] else {
            return Err(ToolError::not_found(format!(
                "pane {pane} closed before the command was typed"
            )));
        };
        if cursor_x > 0 || Instant::now() >= until.min(end.at) {
            return Ok((history, history + cursor_y));
        }
        std::thread::sleep(Duration::from_millis(2));
    }
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

#[cfg(test)]
mod tests {
    //! run_command and wait_for_command called in-process on a private tmux
    //! server's bash panes: the status, the output and its bounds, the pane
    //! answered for, a timeout then wait_for_command, the alternate screen,
    //! the refusals, a tmux that stops answering, a full history, prompts
    //! drawn late (a prompt hook held on a file, and dash's PS1), a pane
    //! closed before its output is read; and the pure parts (the text
    //! answer, its shrinking, the captured lines).

    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;
    use crate::config::{Ceilings, ServeConfig};
    use crate::testbed::private_server::PrivateServer;
    use crate::tmux::ServerSpec;
    use bytes::Bytes;
    use serde_json::{json, Value};

    /// A bash without rc files, prompt `$ `.
    const BASH: &str = "env PS1='$ ' bash --norc --noprofile";

    /// The same, printing an OSC 133 D mark with the status before each prompt.
    const BASH_133: &str =
        "env PS1='$ ' PROMPT_COMMAND='printf \"\\033]133;D;%s\\007\" $?' bash --norc --noprofile";

    /// A private server and a mutating-tier context on it.
    struct Bed {
        server: PrivateServer,
        ctx: ToolContext,
    }

    impl Bed {
        fn new(label: &str) -> Bed {
            Bed::with(label, Ceilings::default())
        }

        fn with(label: &str, ceilings: Ceilings) -> Bed {
            let server = PrivateServer::start(label, 80, 24).unwrap();
            let config = ServeConfig {
                server: ServerSpec::named(server.socket_name()),
                tier: Tier::Mutating,
                ceilings,
                ..ServeConfig::default()
            };
            let ctx = ToolContext::new(
                Arc::new(config),
                Arc::new(crate::tools::registry::Registry::for_tier(Tier::Mutating)),
            );
            Bed { server, ctx }
        }

        /// A new window running `command`, once tmux shows `ready` in it.
        fn window(&self, command: &str, ready: &str) -> PaneId {
            let out = self
                .server
                .run_ok(["new-window", "-d", "-P", "-F", "#{pane_id}", command])
                .unwrap();
            let pane = PaneId::parse(out.trim()).unwrap();
            self.shows(pane, ready);
            pane
        }

        /// A bash at its prompt.
        fn bash(&self) -> PaneId {
            self.window(BASH, "$")
        }

        fn screen(&self, pane: PaneId) -> String {
            let target = pane.to_string();
            self.server
                .run_ok(["capture-pane", "-p", "-J", "-t", &target])
                .unwrap_or_default()
        }

        /// Returns once a line of `pane` holds `text`.
        fn shows(&self, pane: PaneId, text: &str) {
            let until = Instant::now() + Duration::from_secs(10);
            while Instant::now() < until {
                if self.screen(pane).lines().any(|l| l.contains(text)) {
                    return;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            panic!("{pane} never showed {text:?}: {}", self.screen(pane));
        }

        fn run(
            &self,
            pane: PaneId,
            command: &str,
            more: Value,
        ) -> Result<RunCommandResult, ToolError> {
            run_on(&self.ctx, pane, command, more)
        }

        fn run_ok(&self, pane: PaneId, command: &str, more: Value) -> RunCommandResult {
            self.run(pane, command, more)
                .unwrap_or_else(|e| panic!("run_command {command:?} failed: {e}"))
        }
    }

    fn run_on(
        ctx: &ToolContext,
        pane: PaneId,
        command: &str,
        more: Value,
    ) -> Result<RunCommandResult, ToolError> {
        let mut args = json!({"pane_id": pane.to_string(), "command": command});
        for (k, v) in more.as_object().unwrap() {
            args[k] = v.clone();
        }
        RunCommand::run(ctx, serde_json::from_value(args).unwrap())
    }

    /// The answer's fields that say what the command did.
    fn said(r: &RunCommandResult) -> (Option<i32>, &str, usize, bool, bool, bool) {
        (
            r.exit_status,
            r.output.as_str(),
            r.lines,
            r.output_truncated,
            r.partial_last_line,
            r.timed_out,
        )
    }

    /// The row a command is typed at is read once the prompt's last row
    /// is drawn (the cursor off its row's start), at once when it is, and
    /// after `PROMPT_DRAWN` at most when it is not.
    #[test]
    fn the_typed_row_waits_for_the_prompts_last_row_and_no_longer() {
        let bed = Bed::new("run-unit-typed-row");
        let tmux = bed
            .ctx
            .tmux(&crate::tools::context::ServerArgs::default())
            .unwrap();
        let end = End::after(Duration::from_secs(10));
        // Drawn 300 ms after `top`: the row is the prompt's, not `top`'s.
        let late = bed.window(
            "sh -c 'printf \"top\\n\"; sleep 0.3; printf \"\\n$ \"; exec cat'",
            "top",
        );
        let row = typed_row(&bed.ctx, &tmux, late, &end).unwrap();
        assert_eq!(row, (0, 2), "{}", bed.screen(late));
        // Drawn at once, the pane moving on 400 ms later: read at once.
        let early = bed.window(
            "sh -c 'printf \"$ \"; sleep 0.4; printf \"\\nmoved\"; exec cat'",
            "$",
        );
        let row = typed_row(&bed.ctx, &tmux, early, &end).unwrap();
        assert_eq!(row, (0, 0), "{}", bed.screen(early));
        // Never drawn (the cursor stays at its row's start): given up
        // after PROMPT_DRAWN.
        let never = bed.window("sh -c 'printf \"x\\n\"; exec cat'", "x");
        let asked = Instant::now();
        let row = typed_row(&bed.ctx, &tmux, never, &end).unwrap();
        assert_eq!(row, (0, 1));
        assert!(asked.elapsed() >= PROMPT_DRAWN, "{:?}", asked.elapsed());
    }

    #[test]
    fn the_status_and_output_are_the_commands_in_its_own_pane() {
        let bed = Bed::new("run-unit-exact");
        let other = bed.bash();
        let pane = bed.bash();

        let r = bed.run_ok(pane, "printf 'a\\nb\\n'; (exit 3)", json!({}));
        assert_eq!(
            said(&r),
            (Some(3), "a\nb\n", 2, false, false, false),
            "{r:?}"
        );
        assert_eq!(r.pane_id, pane);
        assert_eq!((r.background_jobs, r.redactions), (0, 0), "{r:?}");
        assert!(r.job_notices.is_empty(), "{r:?}");
        assert!(
            r.command_id.starts_with("cmd-") && r.command_id.len() == 20,
            "{r:?}"
        );
        let text = format!(
            "{} in {pane}: exit 3 after {} ms, 2 lines\na\nb\n",
            r.command_id, r.elapsed_ms
        );
        assert_eq!(RunCommand::text(&r), text);
        assert_eq!(WaitForCommand::text(&r), text);
        assert!(
            !bed.screen(other).contains("(exit 3)"),
            "typed into the other pane: {}",
            bed.screen(other)
        );

        let r = bed.run_ok(pane, "true", json!({}));
        assert_eq!(said(&r), (Some(0), "", 0, false, false, false), "{r:?}");
        let r = bed.run_ok(pane, "printf abc", json!({}));
        assert_eq!(said(&r), (Some(0), "abc\n", 1, false, true, false), "{r:?}");
        assert!(RunCommand::text(&r).contains(": exit 0 after "), "{r:?}");
        assert!(RunCommand::text(&r).contains(", 1 lines, last line without newline\n"));
    }

    #[test]
    fn a_command_typed_again_is_read_from_its_own_echo_not_the_last_ones() {
        let bed = Bed::new("run-unit-again");
        let pane = bed.window(BASH_133, "$");
        let socket = bed.server.socket_path().unwrap();
        // The first call learns the marks; the next ones end by them, so their
        // typed lines (no marker) are alike: each is found where it was typed.
        for _ in 0..3 {
            let r = bed.run_ok(pane, "echo hi", json!({}));
            assert_eq!(said(&r), (Some(0), "hi\n", 1, false, false, false), "{r:?}");
        }
        assert!(table::prints_osc133(&socket, pane));
        let r = bed.run_ok(pane, "echo hi; (exit 3)", json!({}));
        assert_eq!(said(&r), (Some(3), "hi\n", 1, false, false, false), "{r:?}");
    }

    #[test]
    fn a_prompt_of_two_lines_is_never_output() {
        let bed = Bed::new("run-unit-twoline");
        let pane = bed.window("env PS1='top line\\n$ ' bash --norc --noprofile", "$");
        // The first answer learns the prompt's height; the next ones leave its
        // first line out, also above the marker typed again after an interrupt.
        let r = bed.run_ok(pane, "false", json!({}));
        assert_eq!(said(&r), (Some(1), "", 0, false, false, false), "{r:?}");
        for k in 0..3 {
            let r = bed.run_ok(pane, &format!("echo one {k}"), json!({}));
            assert_eq!(r.output, format!("one {k}\n"), "{r:?}");
        }
        let r = bed.run_ok(pane, "echo waiting; sleep 100", json!({"timeout_ms": 300}));
        assert!(r.timed_out, "{r:?}");
        bed.shows(pane, "waiting");
        let target = pane.to_string();
        bed.server
            .run_ok(["send-keys", "-t", &target, "C-c"])
            .unwrap();
        let args = json!({"command_id": r.command_id, "timeout_ms": 15_000});
        let w = WaitForCommand::run(&bed.ctx, serde_json::from_value(args).unwrap()).unwrap();
        assert_eq!(w.exit_status, Some(130), "{w:?}");
        assert!(
            w.output.starts_with("waiting\n") && !w.output.contains("top line"),
            "{w:?}\n{}",
            bed.screen(pane)
        );
    }

    #[test]
    fn output_is_bounded_by_lines_and_bytes_and_flagged_when_cut() {
        let bed = Bed::new("run-unit-bounds");
        let pane = bed.bash();

        let r = bed.run_ok(pane, "seq 5", json!({"max_lines": 2}));
        assert_eq!(
            said(&r),
            (Some(0), "4\n5\n", 2, true, false, false),
            "{r:?}"
        );
        assert!(RunCommand::text(&r).contains(": exit 0 after "));
        assert!(RunCommand::text(&r).contains(", 2 lines, start cut\n4\n5\n"));
        // At the bound: whole.
        let r = bed.run_ok(pane, "seq 5", json!({"max_lines": 5}));
        assert_eq!(
            said(&r),
            (Some(0), "1\n2\n3\n4\n5\n", 5, false, false, false)
        );

        let r = bed.run_ok(pane, "seq 2", json!({"max_bytes": 4}));
        assert_eq!(
            said(&r),
            (Some(0), "1\n2\n", 2, false, false, false),
            "{r:?}"
        );
        let r = bed.run_ok(pane, "seq 2", json!({"max_bytes": 3}));
        assert_eq!(said(&r), (Some(0), "2\n", 1, true, false, false), "{r:?}");
        // Not even the one line fits: its end, flagged.
        let r = bed.run_ok(pane, "echo abcdef", json!({"max_bytes": 4}));
        assert_eq!(said(&r), (Some(0), "def\n", 1, true, false, false), "{r:?}");
    }

    #[test]
    fn lines_wider_than_the_pane_are_read_whole_from_the_echo_scrolled_away() {
        let bed = Bed::new("run-unit-wide");
        let pane = bed.bash();
        // 30 lines of 200 digits: 90 rows of an 80-column pane, the echo far
        // above the screen's top, yet within max_lines lines of the end.
        let r = bed.run_ok(
            pane,
            "printf '%0200d\\n' $(seq 30)",
            json!({"max_lines": 30}),
        );
        let want: String = (1..=30).map(|n| format!("{n:0200}\n")).collect();
        assert_eq!(said(&r), (Some(0), want.as_str(), 30, false, false, false));
    }

    /// In a pane whose history keeps `limit` rows, `seq {before}` then
    /// `seq {count}`: the second's output is every line of it the pane still
    /// holds, from the first, and flagged as cut.
    fn overrun_history(label: &str, limit: u32, before: u32, count: u32) {
        let bed = Bed::new(label);
        bed.server
            .run_ok(["set-option", "-g", "history-limit", &limit.to_string()])
            .unwrap();
        let pane = bed.bash();
        bed.run_ok(pane, &format!("seq {before}"), json!({}));
        let r = bed.run_ok(pane, &format!("seq {count}"), json!({"max_lines": 1000}));
        let target = pane.to_string();
        let all = bed
            .server
            .run_ok(["capture-pane", "-p", "-S", "-", "-t", &target])
            .unwrap();
        let first: u32 = all.lines().find_map(|l| l.parse().ok()).unwrap();
        let want: String = (first..=count).map(|n| format!("{n}\n")).collect();
        assert!(first > 1 && first + 20 < count, "{all}");
        assert_eq!(
            (r.exit_status, r.output.as_str()),
            (Some(0), want.as_str()),
            "{r:?}"
        );
        assert!(r.output_truncated, "{r:?}");
    }

    #[test]
    fn once_the_history_is_full_the_output_is_what_the_pane_still_holds() {
        // Typed below a history of about 40 rows; its 150 lines overrun the
        // 100 the history keeps: tmux drops its oldest tenth at a time, so the
        // row it was typed on, counted from the history's start, is no longer
        // where it was (about 55 rows lower: a place taken as known would lose
        // those).
        overrun_history("run-unit-full", 100, 60, 150);
    }

    #[test]
    fn a_history_of_fewer_than_ten_rows_is_full_at_its_limit() {
        // A tenth of 5 rows is none: tmux drops one row at a time, and the
        // full history stays at its limit, 5 rows (never 4 again). Typed 13
        // rows down, the place taken as known there would lose 13 lines.
        overrun_history("run-unit-full5", 5, 10, 60);
    }

    /// A directory of the test's own, removed at the end.
    struct Dir(std::path::PathBuf);

    impl Dir {
        fn new(label: &str) -> Dir {
            let d = std::env::temp_dir().join(format!("{label}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&d);
            std::fs::create_dir_all(&d).unwrap();
            Dir(d)
        }

        fn path(&self, name: &str) -> String {
            self.0.join(name).to_str().unwrap().to_owned()
        }
    }

    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    /// Returns once a row of `pane` is `row` (trailing blanks aside) or
    /// `starts` with it.
    fn await_row(bed: &Bed, pane: PaneId, row: &str, starts: bool) {
        let until = Instant::now() + Duration::from_secs(10);
        while Instant::now() < until {
            let screen = bed.screen(pane);
            let mut rows = screen.lines().map(str::trim_end);
            if rows.any(|l| l == row || (starts && l.starts_with(row))) {
                return;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        panic!("{pane} never showed {row:?}: {}", bed.screen(pane));
    }

    /// A pane whose prompt, `top line` then `$ `, is held while the file
    /// `hold` exists (the shell looks every 10 ms): in bash (PROMPT_COMMAND
    /// prints a D mark, then `x`, then holds, before the prompt is drawn),
    /// or in dash (held while PS1 is expanded: nothing drawn, while dash,
    /// without a line editor, is taken as at its prompt; `armed` made).
    fn late_prompt(bed: &Bed, dir: &Dir, dash: bool) -> PaneId {
        let (hold, armed) = (dir.path("hold"), dir.path("armed"));
        let wait = format!("while [ -e {hold} ]; do sleep 0.01; done");
        let rc = dir.path("rc");
        let command = if dash {
            let held = format!("if [ -e {hold} ]; then touch {armed}; {wait}; fi");
            std::fs::write(&rc, format!("PS1='top line\n$({held})$ '\n")).unwrap();
            format!("env ENV={rc} dash -i")
        } else {
            let rc_text = format!(
                "PS1='top line\\n$ '\nPROMPT_COMMAND='printf \"\\033]133;D;%s\\007\" $?; printf x; {wait}'\n"
            );
            std::fs::write(&rc, rc_text).unwrap();
            format!("bash --rcfile {rc} --noprofile")
        };
        bed.window(&command, "$")
    }

    #[test]
    fn a_prompts_height_is_learnt_only_once_it_is_drawn() {
        let bed = Bed::new("run-unit-late");
        let socket = bed.server.socket_path().unwrap();
        let dir = Dir::new("run-unit-late");
        let pane = late_prompt(&bed, &dir, false);
        let hold = dir.path("hold");
        // Held once the command ended (its marker shown, then the hook's
        // `x`), and let go: the answer waits for the prompt, and learns its
        // two rows (and that the shell prints marks).
        std::fs::write(&hold, "").unwrap();
        let ctx = bed.ctx.clone();
        let call = std::thread::spawn(move || run_on(&ctx, pane, "false", json!({})));
        await_row(&bed, pane, "x", false);
        std::fs::remove_file(&hold).unwrap();
        let r = call.join().unwrap().unwrap();
        assert_eq!(said(&r), (Some(1), "", 0, false, false, false), "{r:?}");
        assert_eq!(table::prompt_rows(&socket, pane), 2);
        assert!(table::prints_osc133(&socket, pane));
        // Held past the answer (a command of two lines ends by its marker):
        // the rows seen, the marker's and `x`, are no prompt's height.
        std::fs::write(&hold, "").unwrap();
        let r = bed.run_ok(
            pane,
            "echo two\necho lines",
            json!({"allow_multiline": true}),
        );
        std::fs::remove_file(&hold).unwrap();
        assert_eq!(said(&r), (Some(0), "two\nlines\n", 2, false, false, false));
        assert_eq!(table::prompt_rows(&socket, pane), 2);
        // Ended by the D mark: the prompt's top row, `xtop line`, left out.
        // (Typed once the prompt is drawn: the hook's `x` alone puts the
        // cursor off its row's start, which `typed_row` takes for a prompt
        // drawn. A hook that prints whole lines is waited past:
        // run_command_shells' `a_call_while_a_prompt_hook_prints_...`.)
        let until = Instant::now() + Duration::from_secs(10);
        while Instant::now() < until {
            let screen = bed.screen(pane);
            let rows: Vec<&str> = screen
                .lines()
                .map(str::trim_end)
                .filter(|l| !l.is_empty())
                .collect();
            if rows.ends_with(&["xtop line", "$"]) {
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        let r = bed.run_ok(pane, "echo one", json!({}));
        assert_eq!(
            said(&r),
            (Some(0), "one\n", 1, false, false, false),
            "{r:?}"
        );
    }

    #[test]
    fn a_prompt_drawn_after_its_shell_is_taken_as_at_it_is_waited_for() {
        let bed = Bed::new("run-unit-dash");
        let socket = bed.server.socket_path().unwrap();
        let dir = Dir::new("run-unit-dash");
        let pane = late_prompt(&bed, &dir, true);
        // Held once the command ended, until the answer first looks at the
        // cursor (a hook after tmux's display-message), which sees no
        // prompt drawn yet.
        let (hold, armed) = (dir.path("hold"), dir.path("armed"));
        let release = format!("run-shell 'if [ -e {armed} ]; then rm -f {hold}; fi'");
        bed.server
            .run_ok(["set-hook", "-g", "after-display-message", &release])
            .unwrap();
        std::fs::write(&hold, "").unwrap();
        let r = bed.run_ok(pane, "false", json!({}));
        assert!(std::fs::metadata(&armed).is_ok());
        assert_eq!(said(&r), (Some(1), "", 0, false, false, false), "{r:?}");
        assert_eq!(table::prompt_rows(&socket, pane), 2);
    }

    #[test]
    fn a_prompt_that_leaves_the_cursor_at_its_rows_start_is_answered() {
        // An empty prompt: the cursor never leaves the row's start, and the
        // answer stops waiting for it to.
        let bed = Bed::new("run-unit-empty-prompt");
        let pane = bed.bash();
        bed.run_ok(pane, "PS1=", json!({"timeout_ms": 3000}));
        let r = bed.run_ok(pane, "echo hi", json!({"timeout_ms": 3000}));
        assert_eq!(said(&r), (Some(0), "hi\n", 1, false, false, false), "{r:?}");
    }

    #[test]
    fn a_line_a_prompt_starting_with_a_newline_leaves_on_its_row_is_output_once() {
        // With OSC 133 (learnt by the first call), `printf abc`'s line stays
        // on its row: the prompt's newline moves it below.
        let bed = Bed::new("run-unit-newline-prompt");
        let pane = bed.window(
            "env PS1='\\n$ ' PROMPT_COMMAND='printf \"\\033]133;D;%s\\007\" $?' bash --norc --noprofile",
            "$",
        );
        let socket = bed.server.socket_path().unwrap();
        bed.run_ok(pane, "true", json!({}));
        assert!(table::prints_osc133(&socket, pane));
        let r = bed.run_ok(pane, "printf abc", json!({}));
        assert_eq!(said(&r), (Some(0), "abc\n", 1, false, true, false), "{r:?}");
    }

    #[test]
    fn a_pane_closed_before_its_output_is_read_says_so() {
        let bed = Bed::new("run-unit-closed");
        // Closed before the answer looks at the pane, then between that look
        // and the capture (by a hook after tmux's display-message).
        for hooked in [false, true] {
            let pane = bed.bash();
            let target = pane.to_string();
            let r = bed.run_ok(pane, "read -r line", json!({"timeout_ms": 300}));
            assert!(r.timed_out, "{r:?}");
            bed.server
                .run_ok(["send-keys", "-t", &target, "-l", "x"])
                .unwrap();
            bed.server
                .run_ok(["send-keys", "-t", &target, "Enter"])
                .unwrap();
            let entry = table::get(&r.command_id, bed.ctx.session).unwrap();
            let ended = entry.wait(
                Instant::now() + Duration::from_secs(10),
                CANCEL_SLICE,
                || false,
            );
            assert!(matches!(ended, Progress::Ended { .. }), "{ended:?}");
            if hooked {
                let kill = format!("kill-pane -t {target}");
                bed.server
                    .run_ok(["set-hook", "-g", "after-display-message", &kill])
                    .unwrap();
            } else {
                bed.server.run_ok(["kill-pane", "-t", &target]).unwrap();
            }
            let args = json!({"command_id": r.command_id, "timeout_ms": 5000});
            let e =
                WaitForCommand::run(&bed.ctx, serde_json::from_value(args).unwrap()).unwrap_err();
            assert_eq!(e.kind, ErrorKind::NotFound, "{e}");
            if hooked {
                let closed = format!("pane {pane} closed: its output cannot be read");
                assert_eq!(e.message, closed);
                bed.server
                    .run_ok(["set-hook", "-gu", "after-display-message"])
                    .unwrap();
            }
        }
    }

    #[test]
    fn a_timeout_answers_running_then_wait_for_command_gives_the_end() {
        let bed = Bed::new("run-unit-timeout");
        let pane = bed.bash();

        let r = bed.run_ok(pane, "sleep 1.5; echo done", json!({"timeout_ms": 300}));
        assert_eq!((r.exit_status, r.timed_out), (None, true), "{r:?}");
        assert_eq!(r.pane_id, pane);
        let text = RunCommand::text(&r);
        assert!(text.contains(": still running after "), "{text}");

        // The pane is busy with it.
        let e = bed.run(pane, "true", json!({})).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Refused, "{e}");
        assert!(e.message.contains(&r.command_id), "{e}");

        let args = json!({"command_id": r.command_id, "timeout_ms": 10_000});
        let w = WaitForCommand::run(&bed.ctx, serde_json::from_value(args).unwrap()).unwrap();
        assert_eq!(
            said(&w),
            (Some(0), "done\n", 1, false, false, false),
            "{w:?}"
        );
        assert_eq!((w.command_id, w.pane_id), (r.command_id, pane));
    }

    #[test]
    fn a_command_left_on_the_alternate_screen_has_its_status_and_no_output() {
        let bed = Bed::new("run-unit-alternate");
        let pane = bed.bash();
        let r = bed.run_ok(
            pane,
            "printf '\\033[?1049h'; echo hidden; (exit 4)",
            json!({}),
        );
        assert_eq!(said(&r), (Some(4), "", 0, true, false, false), "{r:?}");
    }

    #[test]
    fn jobs_the_shell_ran_before_are_counted() {
        let bed = Bed::new("run-unit-jobs");
        let pane = bed.bash();
        let r = bed.run_ok(pane, "sleep 30 &", json!({}));
        assert_eq!((r.exit_status, r.background_jobs), (Some(0), 0), "{r:?}");
        let r = bed.run_ok(pane, "echo x", json!({}));
        assert_eq!(said(&r), (Some(0), "x\n", 1, false, false, false), "{r:?}");
        assert_eq!(r.background_jobs, 1, "{r:?}");
        assert!(r.job_notices.is_empty(), "{r:?}");
    }

    #[test]
    fn a_pane_not_at_a_shell_prompt_is_refused_and_nothing_typed() {
        let bed = Bed::new("run-unit-refused");
        let pane = bed.window("cat", "");
        std::thread::sleep(Duration::from_millis(200));
        let e = bed.run(pane, "echo typed", json!({})).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Refused, "{e}");
        assert!(!bed.screen(pane).contains("typed"), "{}", bed.screen(pane));
    }

    #[test]
    fn a_tmux_that_stops_answering_costs_the_calls_time_and_says_so() {
        let bed = Bed::new("run-unit-stopped");
        let pane = bed.bash();
        let stopped = bed.server.stop().unwrap();
        // The call's time runs out first: said as its timeout_ms.
        let e = bed
            .run(pane, "true", json!({"timeout_ms": 300}))
            .unwrap_err();
        assert_eq!(e.kind, ErrorKind::TimedOut, "{e}");
        assert!(
            e.message
                .contains("within timeout_ms (300 ms) while listing panes"),
            "{e}"
        );
        drop(stopped);

        // tmux's own deadline first: said as tmux's.
        let short = Ceilings {
            tmux_timeout: Duration::from_millis(200),
            ..Ceilings::default()
        };
        let config = ServeConfig {
            ceilings: short,
            ..(*bed.ctx.config).clone()
        };
        let ctx = ToolContext::new(Arc::new(config), bed.ctx.registry.clone());
        let stopped = bed.server.stop().unwrap();
        let e = run_on(&ctx, pane, "true", json!({"timeout_ms": 5000})).unwrap_err();
        assert_eq!(e.kind, ErrorKind::TimedOut, "{e}");
        assert!(!e.message.contains("timeout_ms (5000 ms)"), "{e}");
        drop(stopped);
    }

    #[test]
    fn a_tmux_stopped_while_the_command_runs_gives_the_timed_out_answer_unread() {
        let bed = Bed::new("run-unit-unread");
        let pane = bed.bash();
        let ctx = bed.ctx.clone();
        let call =
            std::thread::spawn(move || run_on(&ctx, pane, "sleep 30", json!({"timeout_ms": 1500})));
        bed.shows(pane, "eval");
        let stopped = bed.server.stop().unwrap();
        let r = call.join().unwrap();
        drop(stopped);
        let r = r.unwrap();
        assert_eq!(said(&r), (None, "", 0, true, false, true), "{r:?}");
        assert_eq!(r.pane_id, pane);
    }

    #[test]
    fn commands_longer_than_16_kib_are_refused() {
        let at = "x".repeat(MAX_COMMAND_BYTES);
        assert_eq!(MAX_COMMAND_BYTES, 16_384);
        assert!(shell::check_command(&at, false, MAX_COMMAND_BYTES).is_ok());
        let over = format!("{at}x");
        let e = shell::check_command(&over, false, MAX_COMMAND_BYTES).unwrap_err();
        assert_eq!(e.kind, ErrorKind::InvalidArgument, "{e}");
    }

    fn result(output: &str, lines: usize) -> RunCommandResult {
        RunCommandResult {
            exit_status: None,
            output: output.into(),
            lines,
            redactions: 0,
            output_truncated: false,
            partial_last_line: false,
            background_jobs: 0,
            job_notices: Vec::new(),
            timed_out: false,
            elapsed_ms: 12,
            command_id: "cmd-1".into(),
            pane_id: PaneId::parse("%4").unwrap(),
        }
    }

    #[test]
    fn the_text_answer_says_the_state_and_the_flags() {
        let mut r = result("a\n", 1);
        assert_eq!(
            render(&r),
            "cmd-1 in %4: ended after 12 ms (no status), 1 lines\na\n"
        );
        r.exit_status = Some(2);
        r.output_truncated = true;
        assert_eq!(
            render(&r),
            "cmd-1 in %4: exit 2 after 12 ms, 1 lines, start cut\na\n"
        );
        r.timed_out = true;
        r.partial_last_line = true;
        assert_eq!(
            render(&r),
            "cmd-1 in %4: still running after 12 ms, 1 lines, start cut, last line without newline\na\n"
        );
        assert!(is_zero(&0) && !is_zero(&1));
        let json = serde_json::to_value(&r).unwrap();
        assert!(json.get("background_jobs").is_none(), "{json}");
    }

    #[test]
    fn shrinking_drops_the_oldest_lines_for_twice_their_size() {
        // Each line counts twice (structured and text), escaped: "aa\n" is 4+4.
        let mut r = result("aa\nbb\ncc\n", 3);
        assert!(RunCommand::shrink(&mut r, 9));
        assert_eq!(
            (r.output.as_str(), r.lines, r.output_truncated),
            ("cc\n", 1, true)
        );
        let mut r = result("aa\nbb\ncc\n", 3);
        assert!(WaitForCommand::shrink(&mut r, 8));
        assert_eq!((r.output.as_str(), r.lines), ("bb\ncc\n", 2));
        let mut r = result("", 0);
        assert!(!shrink_output(&mut r, 8));
        assert!(!r.output_truncated);
    }

    fn captured(text: &str, first_line: i64, numbers: Option<Vec<i64>>) -> CapturedText {
        CapturedText {
            first_line,
            bytes: Bytes::from(text.to_owned()),
            line_numbers: numbers,
            history_size: 0,
            pane_height: 24,
            pane_width: 80,
            joined: true,
        }
    }

    #[test]
    fn captured_lines_and_where_the_command_starts_in_them() {
        let cap = captured("a\n\nb\n", -3, None);
        assert_eq!(caption_lines(&cap), ["a", "", "b"]);
        assert_eq!(caption_lines(&captured("a\nb", 0, None)), ["a", "b"]);
        assert_eq!(first_at_or_after(&cap, -3), 0);
        assert_eq!(first_at_or_after(&cap, -1), 2);
        assert_eq!(first_at_or_after(&cap, -9), 0);
        // Joined lines: the first numbered at or after.
        let joined = captured("a\nb\nc\n", 5, Some(vec![5, 7, 9]));
        assert_eq!(first_at_or_after(&joined, 7), 1);
        assert_eq!(first_at_or_after(&joined, 8), 2);
        assert_eq!(first_at_or_after(&joined, 10), 3);
        let hex = random_hex(16);
        assert_eq!(hex.len(), 16);
        assert!(hex.bytes().all(|b| b.is_ascii_hexdigit()), "{hex}");
        assert_ne!(random_hex(16), hex);
    }
}
