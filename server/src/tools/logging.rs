//! pipe_pane (mutating tier): a pane's output appended to a file in the
//! directory the operator allowed (`panescan serve --log-dir DIR`).
//!
//! tmux's `pipe-pane` runs a shell command, so the caller never chooses
//! one: the caller names a plain file (`[A-Za-z0-9._-]`, no `..`), the path
//! is resolved and must stay inside the directory (a symlink leading out
//! is refused), and panescan writes the command itself, `exec cat >>
//! 'PATH'`, with the path quoted for sh and `#`-escaped for tmux's format
//! expansion of that command. Left to the operator: whoever may write
//! into the directory could swap the file for a link between the check
//! and tmux's shell opening it, so the directory should be the user's.

use std::path::{Path, PathBuf};

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
        let path = match &args.file {
            Some(file) => Some(log_path(dir, file)?),
            None => None,
        };
        let tmux = ctx.tmux(&args.server)?;
        let mut pipe = TmuxCommand::new("pipe-pane").target(args.pane_id);
        if let Some(path) = &path {
            // tmux expands formats in the command: literal_arg keeps `#`.
            pipe = pipe.literal_arg(&format!("exec cat >> {}", sh_quote(path)));
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
        Ok(PipePaneResult {
            pane_id: args.pane_id,
            path: path.map(|p| p.display().to_string()),
            piping,
        })
    }
}

/// The file `file` names in `dir`, resolved and checked: a plain name, the
/// resolved path inside the resolved directory, a regular file if it
/// exists.
fn log_path(dir: &Path, file: &str) -> Result<PathBuf, ToolError> {
    let plain = !file.is_empty()
        && file.len() <= MAX_FILE_BYTES
        && file
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
        && !file.contains("..")
        && file != ".";
    if !plain {
        return Err(ToolError::refused(format!(
            "file {file:?} refused: give a plain file name of 1-{MAX_FILE_BYTES} characters from A-Z a-z 0-9 . _ - without `..`; it is created in the operator's log directory"
        )));
    }
    let real_dir = std::fs::canonicalize(dir)
        .ok()
        .filter(|d| d.is_dir())
        .ok_or_else(|| {
            ToolError::refused(format!(
                "the log directory {} is not a directory panescan can use; the operator must create it",
                dir.display()
            ))
        })?;
    let wanted = real_dir.join(file);
    let real = match std::fs::symlink_metadata(&wanted) {
        Err(_) => return Ok(wanted),
        Ok(m) if m.file_type().is_symlink() => std::fs::canonicalize(&wanted).map_err(|_| {
            ToolError::refused(format!("file {file:?} refused: it is a link to nowhere"))
        })?,
        Ok(_) => wanted.clone(),
    };
    if real.parent() != Some(real_dir.as_path()) {
        return Err(ToolError::refused(format!(
            "file {file:?} refused: it leads to {}, outside the log directory {}",
            real.display(),
            real_dir.display()
        )));
    }
    if !std::fs::metadata(&real).is_ok_and(|m| m.is_file()) {
        return Err(ToolError::refused(format!(
            "file {file:?} refused: it exists and is not a regular file"
        )));
    }
    Ok(real)
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
            let e = log_path(dir, bad).unwrap_err();
            assert!(e.message.contains("plain file name"), "{bad:?}: {e}");
        }
        // A good name gets as far as the directory check.
        let e = log_path(dir, "build.log").unwrap_err();
        assert!(e.message.contains("log directory"), "{e}");
    }

    #[test]
    fn quoting_keeps_the_path_one_word() {
        assert_eq!(sh_quote(Path::new("/a b/it's")), r"'/a b/it'\''s'");
    }
}
