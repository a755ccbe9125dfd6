//! Scope: one inventory round trip lists every pane with all its
//! placements (only the fields a search needs before it captures: tmux pays
//! for every field of every pane), and the session / window / pane filters
//! pick the candidates. A pane linked into several windows or sessions is
//! one candidate.

use std::time::Instant;

use super::plan::Plan;
use super::types::SearchPanesArgs;
use crate::config::SearchCeilings;
use crate::tmux::{Fields, Inventory, Pane, PaneId, Tmux, TmuxCommand, WindowId};
use crate::tools::context::{ToolContext, ToolError};
use crate::tools::{bounded_list, find_session, find_window};

/// What one round trip told about the server.
#[derive(Debug)]
pub(super) struct Listing {
    /// Every pane with its cache fingerprint and window activity.
    pub(super) inventory: Inventory,
    /// `#{pid} #{start_time}` of the server, for the search cursor and the
    /// pane cache (empty if tmux did not say).
    pub(super) server: String,
}

/// Lists every pane, with what the search cursor records of each (process,
/// width, cursor row, history limit) and, when there is a pane cache, what
/// it checks (those and a few more, and the window's activity second;
/// tmux pays for each field of each pane, so a search without a cache does
/// not ask for them), and the server's pid and start time: one listing and
/// one `display-message`, in one round trip. The listing
/// uses the search's own deadline (a tmux busy with other calls' captures
/// gets the whole budget, and a stopped one cannot hold the call past it).
pub(super) fn list(
    ctx: &ToolContext,
    tmux: &Tmux,
    deadline: Instant,
) -> Result<Listing, ToolError> {
    let then = [TmuxCommand::new("display-message")
        .flag("-p")
        .format_arg("#{pid} #{start_time}")];
    let fields = listing_fields(ctx, tmux);
    let t = tmux.clone();
    let (inventory, mut extra) = ctx.cancellable(move || t.inventory(fields, &then, deadline))?;
    let server = extra.pop().and_then(Result::ok).unwrap_or_default();
    Ok(Listing { inventory, server })
}

/// The fields a search lists: with a pane cache, what it checks too; on
/// another host, also what the panes run (the answer needs no second round
/// trip: [`super::shape`]).
pub(super) fn listing_fields(ctx: &ToolContext, tmux: &Tmux) -> Fields {
    match ctx.pane_cache {
        _ if tmux.host().is_some() => Fields::SearchFar,
        Some(_) => Fields::SearchWithFingerprint,
        None => Fields::SearchWithCursor,
    }
}

/// The panes a search captures, and what the operator's ceilings left out.
#[derive(Debug)]
pub(super) struct Scope<'a> {
    /// The listing the panes come from (the pane cache reads it too).
    pub(super) inventory: &'a Inventory,
    pub(super) panes: Vec<&'a Pane>,
    /// More panes were in scope than the operator allows.
    pub(super) pane_limit_clamped: bool,
    /// The ceiling cut the scrollback asked for, and some pane had more.
    pub(super) scrollback_clamped: bool,
}

impl<'a> Scope<'a> {
    /// The candidates of the arguments' filters, at most the operator's
    /// `max_panes` of them.
    pub(super) fn select(
        inventory: &'a Inventory,
        args: &SearchPanesArgs,
        plan: &Plan,
        limits: &SearchCeilings,
    ) -> Result<Scope<'a>, ToolError> {
        let mut panes = resolve_scope(
            inventory,
            args.session.as_deref(),
            args.window,
            args.pane_ids.as_deref(),
        )?;
        let pane_limit_clamped = panes.len() > limits.max_panes;
        panes.truncate(limits.max_panes);
        let scrollback_clamped = plan.requested_scrollback > plan.scrollback
            && panes.iter().any(|p| p.history_size > plan.scrollback);
        Ok(Scope {
            inventory,
            panes,
            pane_limit_clamped,
            scrollback_clamped,
        })
    }
}

/// The panes the filters select, in inventory order (session, window
/// index, pane index). A filter naming something that does not exist is an
/// error that lists what does.
pub fn resolve_scope<'a>(
    inv: &'a Inventory,
    session: Option<&str>,
    window: Option<WindowId>,
    pane_ids: Option<&[PaneId]>,
) -> Result<Vec<&'a Pane>, ToolError> {
    let session_id = match session {
        Some(key) => Some(find_session(inv, key)?.session_id),
        None => None,
    };
    if let Some(w) = &window {
        find_window(inv, *w)?;
    }
    if let Some(ids) = pane_ids {
        let missing: Vec<String> = ids
            .iter()
            .filter(|id| !inv.panes.iter().any(|p| &p.pane_id == *id))
            .map(ToString::to_string)
            .collect();
        if !missing.is_empty() {
            return Err(ToolError::not_found(format!(
                "no pane {}; panes: {}",
                missing.join(" "),
                bounded_list(inv.panes.iter().map(|p| p.pane_id.to_string()))
            )));
        }
    }
    Ok(inv
        .panes
        .iter()
        .filter(|p| {
            session_id
                .as_ref()
                .is_none_or(|s| p.placements.iter().any(|pl| &pl.session_id == s))
        })
        .filter(|p| {
            window
                .as_ref()
                .is_none_or(|w| p.placements.iter().any(|pl| &pl.window_id == w))
        })
        .filter(|p| pane_ids.is_none_or(|ids| ids.contains(&p.pane_id)))
        .collect())
}
