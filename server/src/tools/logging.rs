//! pipe_pane (mutating tier): a pane's output appended to a file in the
//! directory the operator allowed (`panescan serve --log-dir DIR`).
//!
//! tmux's `pipe-pane` runs a shell command, so the caller never chooses
//! one: the caller names a plain file (`[A-Za-z0-9._-]`, no `..`), and
//! panescan opens it itself, inside the directory, without following a
//! link (`O_NOFOLLOW`), and checks the file it opened: a regular file of
//! this user with one link (a hard link would carry pane output to a file
//! outside). tmux's shell is then told to append to that open file, as
//! `/proc/PID/fd/N` of panescan ([`OpenLogs`] keeps it open), never to a
//! path someone could swap between the check and the shell's `open`.
//! The log directory is this machine's: a pane on another host is refused.

use std::collections::HashMap;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use rustix::fs::{FileType, Mode, OFlags};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::context::{ServerArgs, ToolContext, ToolError};
use crate::config::Tier;
use crate::tmux::{PaneId, TmuxCommand};
use crate::tools::registry::{Annotations, Tool};

/// Longest file name pipe_pane accepts.
const MAX_FILE_BYTES: usize = 128;

#[derive(Debug, Deserialize, JsonSchema)]
// A wire type: its doc comments would be schema descriptions every client
// reads in tools/list; the tool's description and the field names say it.
#[allow(missing_docs)]
pub struct PipePaneArgs {
    /// Pane id, e.g. %1.
    pub pane_id: PaneId,
    /// A plain file name ([A-Za-z0-9._-]) in the operator's log directory; omit to stop piping.
    #[serde(default)]
    pub file: Option<String>,
    #[serde(flatten)]
    pub server: ServerArgs,
}

#[derive(Debug, Serialize, JsonSchema)]
// A wire type: its doc comments would be schema descriptions every client
// reads in tools/list; the tool's description and the field names say it.
#[allow(missing_docs)]
pub struct PipePaneResult {
    pub pane_id: PaneId,
    /// The file output is appended to; absent when piping stopped.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// tmux says the pane is being piped.
    pub piping: bool,
}

#[derive(Debug)]
/// `pipe_pane` (mutating tier).
pub struct PipePane;

impl Tool for PipePane {
    const NAME: &'static str = "pipe_pane";
    const TITLE: &'static str = "Log a pane's output to a file";
    const DESCRIPTION: &'static str = "Append everything a pane prints from now on to a file in the log directory the operator allowed (--log-dir); omit file to stop. Use to keep a full record of a long job.";
    const TIER: Tier = Tier::Mutating;
    const ANNOTATIONS: Annotations = Annotations::MUTATE_IDEMPOTENT;
    type Args = PipePaneArgs;
    type Output = PipePaneResult;

    fn run(ctx: &ToolContext, args: Self::Args) -> Result<Self::Output, ToolError> {
        let Some(dir) = &ctx.config.log_dir else {
            return Err(ToolError::refused(
                "pipe_pane is off: the operator turns it on with `panescan serve --log-dir DIR` (or PANESCAN_LOG_DIR), naming the directory it may write to",
            ));
        };
        if let Some(host) = &args
            .server
            .host
            .as_deref()
            .filter(|h| *h != crate::tmux::ssh::LOCAL)
        {
            return Err(ToolError::refused(format!(
                "pipe_pane works on this machine's panes only: the log directory is here, the pane on {host}"
            )));
        }
        let opened = match &args.file {
            Some(file) => Some(open_log(dir, file)?),
            None => None,
        };
        let tmux = ctx.tmux(&args.server)?;
        let key = (tmux.socket_path().to_path_buf(), args.pane_id);
        let mut pipe = TmuxCommand::new("pipe-pane").target(args.pane_id);
        if let Some(log) = &opened {
            // tmux expands formats in the command: literal_arg keeps `#`.
            pipe = pipe.literal_arg(&format!("exec cat >> {}", sh_quote(&log.through_proc())));
        }
        let commands = [
            pipe,
            TmuxCommand::new("display-message")
                .flag("-p")
                .target(args.pane_id)
                .format_arg("#{pane_pipe}"),
        ];
        let deadline = ctx.tmux_deadline();
        let replies = ctx.cancellable(move || Ok(tmux.run_many(&commands, deadline)))?;
        let mut piping = false;
        for (i, reply) in replies.into_iter().enumerate() {
            let out = reply.map_err(ToolError::from)?;
            if i == 1 {
                piping = out.trim() == "1";
            }
        }
        let path = opened.as_ref().map(|l| l.path.display().to_string());
        // Kept open until the pane's next pipe_pane: tmux's shell opens it
        // through /proc after this call has answered.
        OpenLogs::keep(key, opened);
        Ok(PipePaneResult {
            pane_id: args.pane_id,
            path,
            piping,
        })
    }
}

/// A log file panescan opened and checked.
#[derive(Debug)]
struct OpenLog {
    /// Where it is, for the answer.
    path: PathBuf,
    fd: OwnedFd,
}

impl OpenLog {
    /// The open file as another process of this user opens it: the same
    /// file whatever its name points to by then.
    fn through_proc(&self) -> PathBuf {
        PathBuf::from(format!(
            "/proc/{}/fd/{}",
            std::process::id(),
            self.fd.as_raw_fd()
        ))
    }
}

/// The log files handed to tmux, one per pane, open until the pane's next
/// pipe_pane (or panescan's exit).
struct OpenLogs;

impl OpenLogs {
    fn keep(key: (PathBuf, PaneId), log: Option<OpenLog>) {
        static OPEN: OnceLock<Mutex<HashMap<(PathBuf, PaneId), OpenLog>>> = OnceLock::new();
        let mut open = crate::sync::lock(OPEN.get_or_init(|| Mutex::new(HashMap::new())));
        match log {
            Some(log) => open.insert(key, log),
            None => open.remove(&key),
        };
    }
}

/// Opens (creating, 0600) the file `file` names in `dir` for appending:
/// a plain name, opened relative to the resolved directory without
/// following a link, then checked as opened: a regular file of this user
/// with one link.
fn open_log(dir: &Path, file: &str) -> Result<OpenLog, ToolError> {
    check_file_name(file)?;
    let real_dir = std::fs::canonicalize(dir)
        .ok()
        .filter(|d| d.is_dir())
        .ok_or_else(|| unusable_dir(dir))?;
    let dir_fd = rustix::fs::open(
        &real_dir,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|_| unusable_dir(dir))?;
    let refused = |why: String| ToolError::refused(format!("file {file:?} refused: {why}"));
    let fd = rustix::fs::openat(
        &dir_fd,
        file,
        OFlags::WRONLY
            | OFlags::APPEND
            | OFlags::CREATE
            | OFlags::NOFOLLOW
            | OFlags::NOCTTY
            | OFlags::NONBLOCK
            | OFlags::CLOEXEC,
        Mode::from_raw_mode(0o600),
    )
    .map_err(|e| match e {
        rustix::io::Errno::LOOP => refused("it is a symbolic link".into()),
        rustix::io::Errno::NXIO => refused("it is not a regular file".into()),
        e => refused(format!("it cannot be opened for appending ({e})")),
    })?;
    let st = rustix::fs::fstat(&fd).map_err(|e| refused(format!("it cannot be examined ({e})")))?;
    if FileType::from_raw_mode(st.st_mode) != FileType::RegularFile {
        return Err(refused("it exists and is not a regular file".into()));
    }
    if st.st_nlink != 1 {
        return Err(refused(format!(
            "it has {} links: a hard link would carry pane output to a file outside the log directory",
            st.st_nlink
        )));
    }
    if crate::tmux::paths::current_uid().is_some_and(|uid| uid != st.st_uid) {
        return Err(refused(format!(
            "it is owned by uid {}, not by this user",
            st.st_uid
        )));
    }
    Ok(OpenLog {
        path: real_dir.join(file),
        fd,
    })
}

fn unusable_dir(dir: &Path) -> ToolError {
    ToolError::refused(format!(
        "the log directory {} is not a directory panescan can use; the operator must create it",
        dir.display()
    ))
}

/// A plain name: `[A-Za-z0-9._-]`, no `..`.
fn check_file_name(file: &str) -> Result<(), ToolError> {
    let plain = !file.is_empty()
        && file.len() <= MAX_FILE_BYTES
        && file
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
        && !file.contains("..")
        && file != ".";
    if plain {
        return Ok(());
    }
    Err(ToolError::refused(format!(
        "file {file:?} refused: give a plain file name of 1-{MAX_FILE_BYTES} characters from A-Z a-z 0-9 . _ - without `..`; it is created in the operator's log directory"
    )))
}

/// `path` as one sh word: single-quoted, each `'` written `'\''`.
fn sh_quote(path: &Path) -> String {
    format!("'{}'", path.display().to_string().replace('\'', r"'\''"))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn names_that_leave_the_directory_are_refused_before_any_lookup() {
        let dir = Path::new("/nonexistent-log-dir");
        for bad in [
            "",
            ".",
            "..",
            "../x",
            "/etc/x",
            "a/b",
            "$(touch X)",
            "a..b",
            "a b",
            "x\n",
        ] {
            let e = open_log(dir, bad).unwrap_err();
            assert!(e.message.contains("plain file name"), "{bad:?}: {e}");
        }
        // A good name gets as far as the directory check.
        let e = open_log(dir, "build.log").unwrap_err();
        assert!(e.message.contains("log directory"), "{e}");
    }

    #[test]
    fn quoting_keeps_the_path_one_word() {
        assert_eq!(sh_quote(Path::new("/a b/it's")), r"'/a b/it'\''s'");
    }
}
