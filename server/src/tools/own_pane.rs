//! The pane panescan's MCP client runs in is not typed into: send_keys,
//! paste_text and run_command aimed at it are refused unless the operator
//! passed `--allow-own-pane`. Typing into one's own input is a loop: the
//! agent's own prompt would receive, and run, what it typed.
//!
//! That pane is found two ways, either enough: the pane `$TMUX_PANE` names
//! on the server `$TMUX` names (`is_caller`), and, for a server on this
//! machine, the pane whose process is the client's side (serve) or one of
//! its parents (a client that cleared its environment still runs under its
//! pane's process). In a daemon session both come from its serve
//! ([`crate::tmux::caller`]).

use std::time::Instant;

use super::context::{ToolContext, ToolError};
use crate::tmux::{PaneId, Tmux, TmuxCommand};

/// Refuses typing into `pane` of `tmux` when it holds this session's
/// client, unless the operator allowed it. `pane_pid` is the pane's
/// process if the caller listed it; else tmux is asked, by `deadline`,
/// when the answer could matter.
pub(crate) fn refuse_own_pane(
    ctx: &ToolContext,
    tmux: &Tmux,
    pane: PaneId,
    pane_pid: Option<u32>,
    deadline: Instant,
) -> Result<(), ToolError> {
    if ctx.config.allow_own_pane {
        return Ok(());
    }
    let caller = tmux.caller();
    let named = caller.on_server(tmux.socket_path()) == Some(Some(pane));
    // A pane's process id means something only on this machine.
    let under = tmux.host().is_none()
        && !caller.processes.is_empty()
        && match pane_pid {
            Some(pid) => caller.runs_under(pid),
            None => pid_of(tmux, pane, deadline)?.is_some_and(|pid| caller.runs_under(pid)),
        };
    if !named && !under {
        return Ok(());
    }
    Err(ToolError::refused(format!(
        "refused: {pane} is the pane panescan's own MCP client runs in, and typing there is typing into the agent's own input; choose another pane (list_panes marks it is_caller), or start panescan with --allow-own-pane"
    )))
}

/// The process of `pane` (`None`: tmux did not say).
fn pid_of(tmux: &Tmux, pane: PaneId, deadline: Instant) -> Result<Option<u32>, ToolError> {
    let c = TmuxCommand::new("display-message")
        .flag("-p")
        .target(pane)
        .format_arg("#{pane_pid}");
    let out = tmux.run(&c, deadline).map_err(ToolError::from)?;
    Ok(out.trim().parse().ok())
}
