//! search_panes: find text in every pane, scrollback included.
//!
//! The whole flow of a search reads top to bottom in [`search_panes`], one
//! module per stage:
//!
//! 1. [`plan`] — check the arguments against the operator's ceilings and
//!    compile the patterns; nothing has touched tmux yet.
//! 2. [`scope`] — one inventory round trip lists every pane with all its
//!    placements (only the fields a search needs before it captures); the
//!    filters pick the candidates ([`resolve_scope`]); a pane linked into
//!    several windows or sessions is one candidate.
//! 3. [`pipeline`] — every capture is requested at once and handed to the
//!    engine as it arrives, scanned on rayon while later ones are fetched,
//!    the byte and line budgets charged in pane order (a clamped answer is
//!    the same on every run).
//! 4. [`shape`] — matching panes are paged, or their lines folded into
//!    groups ([`group`]); what the page's panes run is asked in one round trip.
//! 5. [`encode`] — the answer's JSON and text, each hit line written once,
//!    cut from the end to fit its response as [`Tool::shrink`] would.
//! 6. [`render`] — the grep-like text ([`render_text`], [`Tool::text`]) that
//!    `panescan search`, the demo and the bench print too.
//!
//! The wire types are in [`types`]. Text is matched in Rust, never in a tmux
//! format: `#(touch /tmp/x)` or `#{pane_id}` is searched for literally and
//! never reaches tmux.

mod across;
mod ahead;
pub(crate) mod cursor;
mod encode;
#[cfg(test)]
pub(crate) mod golden;
mod group;
mod hosts;
pub(crate) mod pane_journal;
mod pipeline;
mod plan;
mod render;
mod scope;
mod shape;
mod since;
mod types;

use std::time::Instant;

pub(crate) use plan::{capped, pattern_list};
pub use render::{
    clamp_names_in_json, pane_place, push_group, push_hit, render_text, summary_line, Style,
};
pub use scope::resolve_scope;
pub use types::{GroupBy, SearchPanesArgs, SearchPanesResult};

use super::context::{ErrorKind, ToolContext, ToolError};
use crate::tmux::spans::Span;
use crate::tools::registry::{Annotations, Tool, ToolOutput};
use plan::Plan;
use scope::{Listing, Scope};
use since::Since;

/// The `search_panes` tool.
#[derive(Debug)]
pub struct SearchPanes;

impl Tool for SearchPanes {
    const NAME: &'static str = "search_panes";
    const TITLE: &'static str = "Search all panes";
    const DESCRIPTION: &'static str = "Find which panes show a text, and on which lines: every pane (or a session, window, pane list), the screen by default, scrollback_lines of history too. Literal or bounded regex, case-insensitive unless match_case. Hit line numbers go straight to capture_pane's start. Budgets (max_scan_bytes, max_scan_lines, timeout_ms, max_matches) bound the work; each *_clamped flag / matches_truncated says what a limit left out. Pass a result's cursor as since to search only lines printed after it. Use instead of capturing panes one by one; to wait for new output use wait_for_text or watch_panes.";
    const ANNOTATIONS: Annotations = Annotations::READ;
    type Args = SearchPanesArgs;
    type Output = SearchPanesResult;

    fn run(ctx: &ToolContext, args: Self::Args) -> Result<Self::Output, ToolError> {
        search_panes(ctx, &args)
    }

    fn text(output: &Self::Output) -> String {
        let text = render_text(output);
        // The summary is the last line (it ends without a newline); the
        // notes go just above it.
        let at = text.rfind('\n').map_or(0, |i| i + 1);
        format!("{}{}{}", &text[..at], text_notes(output), &text[at..])
    }

    fn encode(output: Self::Output, room: usize) -> Result<ToolOutput, usize> {
        encode::encode(output, room)
    }

    fn shrink(output: &mut Self::Output, excess: usize) -> bool {
        shape::cut_to_size(output, excess)
    }
}

/// The lines the text gives just above its closing summary: a client
/// reading only the text needs the cursor to search since, and to know
/// which panes were searched in full.
fn text_notes(output: &SearchPanesResult) -> String {
    let mut notes = String::new();
    for hit in &output.journal_matches {
        let gone = if hit.pane_gone { " (gone)" } else { "" };
        notes.push_str(&format!(
            "journal {} {}{gone} {}:{}: {}\n",
            hit.time, hit.pane_id, hit.session_name, hit.window, hit.text
        ));
    }
    for gap in &output.journal_gaps {
        notes.push_str(&format!(
            "journal gap {} .. {} {}: {}\n",
            gap.from, gap.to, gap.pane_id, gap.reason
        ));
    }
    for skipped in &output.journal_skipped {
        notes.push_str(&format!("journal skipped {skipped}\n"));
    }
    for note in &output.since_panes {
        notes.push_str(&format!(
            "{} {}: searched in full\n",
            note.pane_id, note.reason
        ));
    }
    if output.since_reset {
        notes.push_str("the tmux server restarted since the cursor: searched in full\n");
    }
    notes.push_str(&format!("cursor: {}\n", output.cursor));
    notes
}

/// Runs a search: on one server, or on several hosts at once
/// ([`hosts`]), which names each match's host.
pub fn search_panes(
    ctx: &ToolContext,
    args: &SearchPanesArgs,
) -> Result<SearchPanesResult, ToolError> {
    let across_time = args.journal || args.since_time.is_some() || args.until_time.is_some();
    match hosts::targets(ctx, args)? {
        Some(_) | None if across_time && args.server.host.is_some() => Err(ToolError::invalid(
            "journal, since_time and until_time search this machine's journal: leave out host",
        )),
        Some(list) if across_time && list.iter().any(|h| h != "local") => {
            Err(ToolError::invalid(
                "journal, since_time and until_time search this machine's journal: pass hosts [\"local\"]",
            ))
        }
        Some(list) => hosts::search_many(ctx, args, &list, search_one),
        None => {
            let mut result = search_one(ctx, args)?;
            if !ctx.config.hosts.is_empty() {
                hosts::name(&mut result, &hosts::label(args.server.host.as_deref()));
            }
            Ok(result)
        }
    }
}

/// One server's search: plan, scope, fetch and scan, shape (the registry
/// renders the text and fits the response).
fn search_one(ctx: &ToolContext, args: &SearchPanesArgs) -> Result<SearchPanesResult, ToolError> {
    let started = Instant::now();
    let limits = &ctx.ceilings().search;
    let times = across::check(ctx, args)?;
    // Across time, all of tmux's history is searched: a line is found
    // where tmux holds it, whatever the journal kept.
    let widened;
    let args = match &times {
        Some(_) if args.scrollback_lines.is_none() => {
            widened = SearchPanesArgs {
                scrollback_lines: Some(limits.max_scrollback_lines),
                ..args.clone()
            };
            &widened
        }
        _ => args,
    };
    let checked = Plan::check(args, limits)?;
    let checked_timeout = checked.timeout;
    let deadline = started + checked_timeout;
    let tmux = match ctx.tmux(&args.server) {
        Ok(tmux) => tmux,
        // A pattern too big to build is the error, server or no server.
        Err(e) => {
            checked.build()?;
            return Err(e);
        }
    };
    // Each journaled server has its own journal: this one's, or the error
    // that it is not journaled.
    let times = match times {
        Some(t) => Some(across::for_server(t, &tmux)?),
        None => None,
    };

    // A since search with the pane cache fetches only the panes that
    // printed, usually few: their sweep's client starts now, while the
    // listing is under way ([`crate::tmux::capture::Spare`]). A string that is no
    // cursor starts nothing: it is refused below.
    let valid_since = args
        .since
        .as_deref()
        .is_some_and(|s| cursor::Cursor::decode(s).is_ok());
    // Without the pane cache a search sweeps every pane in its scope:
    // the sweep's first client starts now, on the terminal the last one
    // showed tmux ([`crate::tmux::capture::Spare`]).
    let spare = match &ctx.pane_cache {
        Some(_) if valid_since => tmux.spare_sweep(),
        Some(_) => None,
        None => tmux.kept_or_anchored_spare(),
    };
    // A search likely to sweep what the last ones swept starts that sweep
    // now, with its listing at the top of the sweep's first script.
    let (ahead_started, spare) = ahead::start(ctx, &tmux, args, spare, deadline);
    let (listing_ahead, mut sweep_ahead) = match ahead_started {
        Some(s) => (Some(s.listing), Some(s.sweep)),
        None => (None, None),
    };
    // The patterns' automata are built while tmux lists the panes (a
    // regex's take about a millisecond, as long as a listing of 200).
    let (plan, listed) = std::thread::scope(|threads| {
        let building = threads.spawn(move || {
            let _building = Span::new("search.build");
            checked.build()
        });
        let listing = Span::new("search.list");
        let listed = ahead::list(ctx, &tmux, listing_ahead, &mut sweep_ahead, deadline);
        drop(listing);
        let plan = building
            .join()
            .unwrap_or_else(|_| Err(ToolError::internal("building the patterns failed")));
        (plan, listed)
    });
    let plan = plan?;
    let Listing { inventory, server } = match (listed, &times) {
        (Ok(listed), _) => listed,
        // No server: with the journal, its panes are all gone, their
        // lines all in the journal.
        (Err(e), Some(t)) if t.journal && e.kind == ErrorKind::TmuxUnavailable => {
            let mut result = across::gone_only(ctx, t, &tmux, &plan, args, deadline)?;
            result.elapsed_ms = started.elapsed().as_millis() as u64;
            return Ok(result);
        }
        (Err(e), _) => return Err(e),
    };
    let planned = Span::new("search.scope_and_since");
    let scope = Scope::select(&inventory, args, &plan, limits)?;
    let since = Since::new(since::Setup {
        server: since::server_id(tmux.socket_path(), &server),
        joined: plan.join_wrapped,
        since: args.since.as_deref(),
        panes: &scope.panes,
        full_range: plan.capture_range(),
        scrollback: plan.scrollback,
        max_history: limits.max_scrollback_lines,
    })?;
    drop(planned);
    let scanning = Span::new("search.fetch_and_scan");
    let mut scanned = pipeline::fetch_and_scan(
        ctx,
        &tmux,
        &plan,
        &scope,
        &since,
        pipeline::Listed {
            server: &server,
            spare,
            ahead: sweep_ahead,
            noted: ahead::applies(ctx, args),
        },
        deadline,
    )?;
    drop(scanning);
    let live = across::Live {
        tmux: &tmux,
        plan: &plan,
        scope: &scope,
        args,
        server: &server,
    };
    let across = match &times {
        Some(times) => Some(across::Across::run(
            ctx,
            times,
            &live,
            &mut scanned.outcome,
            deadline,
        )?),
        None => None,
    };
    let shaping = Span::new("search.shape");
    let mut result = shape::shape(&tmux, &plan, &scope, scanned, deadline);
    drop(shaping);
    if let Some(across) = across {
        across.finish(&mut result);
    }

    ahead::prepare_next(ctx, &tmux, args, started.elapsed(), checked_timeout);
    let _finishing = Span::new("search.cursor");
    (result.cursor, result.since_panes) = since.finish();
    result.cursor_if_cut = since.cursor_if_cut();
    result.since_reset = since.reset;
    result.elapsed_ms = started.elapsed().as_millis() as u64;
    Ok(result)
}
