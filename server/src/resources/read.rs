//! `resources/list` (paginated), `resources/templates/list` and
//! `resources/read`, answered through the inspect and capture tools'
//! own functions so a resource and its tool can never disagree.

use serde::Serialize;
use serde_json::{json, Value};

use super::uri::{self, Target, SESSIONS, TEMPLATES};
use super::ResourceError;
use crate::tmux::{Fields, Inventory, PaneId};
use crate::tools::capture::{CapturePane, CapturePaneArgs};
use crate::tools::context::{ServerArgs, ToolContext};
use crate::tools::find_pane;
use crate::tools::inspect::{self, ListSessions, ListSessionsArgs};
use crate::tools::registry::Tool;
use crate::tools::search::pane_journal::pane_journal;

/// Pane screens per `resources/list` page: a server with thousands of
/// panes is listed in pages of this many (about 200 bytes each).
const PAGE_PANES: usize = 200;

const CURSOR_PREFIX: &str = "after:";

/// One page of `resources/list`: `tmux://sessions` first, then every live
/// pane's screen in pane-id order. The cursor names the last pane of the
/// previous page, so panes that come or go between pages shift nothing.
pub fn list(ctx: &ToolContext, cursor: Option<&str>) -> Result<Value, ResourceError> {
    let after = match cursor {
        None => None,
        Some(c) => Some(
            c.strip_prefix(CURSOR_PREFIX)
                .and_then(|id| PaneId::parse(id).ok())
                .ok_or_else(|| {
                    ResourceError::malformed(format!(
                        "invalid cursor {c:?}: pass the nextCursor of the previous page, or none for the first"
                    ))
                })?,
        ),
    };
    // Ids, indexes and names are all a listing shows: the search field
    // set costs tmux about a fifth of the full one, which counts on a
    // server with thousands of panes.
    let tmux = ctx.tmux(&ServerArgs::default())?;
    let (handle, deadline) = (tmux.clone(), ctx.tmux_deadline());
    let inv = ctx.cancellable(move || {
        handle
            .inventory(Fields::Search, &[], deadline)
            .map(|(inv, _)| inv)
    })?;
    let mut panes: Vec<_> = inv
        .panes
        .iter()
        .filter(|p| after.is_none_or(|a| p.pane_id > a))
        .collect();
    panes.sort_by_key(|p| p.pane_id);
    let more = panes.len() > PAGE_PANES;
    panes.truncate(PAGE_PANES);
    let mut resources = Vec::with_capacity(panes.len() + 1);
    if after.is_none() {
        resources.push(json!({
            "uri": SESSIONS,
            "name": "sessions",
            "title": "tmux sessions",
            "description": "Every session, as list_sessions returns them.",
            "mimeType": "application/json",
        }));
    }
    for p in &panes {
        resources.push(json!({
            "uri": uri::screen_uri(p.pane_id),
            "name": format!("{} screen", p.pane_id),
            "title": format!("{}:{}.{}", p.session_name, p.window_index, p.pane_index),
            "mimeType": "text/plain",
        }));
    }
    let mut page = json!({ "resources": resources });
    if let (true, Some(last)) = (more, panes.last()) {
        page["nextCursor"] = json!(format!("{CURSOR_PREFIX}{}", last.pane_id));
    }
    Ok(page)
}

/// `resources/templates/list`: every template in one page.
pub fn templates() -> Value {
    let templates: Vec<Value> = TEMPLATES
        .iter()
        .map(|(template, name, mime, description)| {
            json!({"uriTemplate": template, "name": name, "mimeType": mime, "description": description})
        })
        .collect();
    json!({ "resourceTemplates": templates })
}

/// `resources/read`: JSON for sessions, a session, a window or a pane;
/// text for a screen or history.
pub fn read(ctx: &ToolContext, uri_text: &str) -> Result<Value, ResourceError> {
    let target = uri::parse(uri_text)?;
    let (mime, text, meta) = match target {
        Target::Screen(pane) => text_of(ctx, pane, None)?,
        Target::History(pane, lines) => {
            let lines = lines.unwrap_or(ctx.ceilings().capture_default_lines);
            text_of(ctx, pane, Some(lines))?
        }
        Target::Journal(pane, since, until) => {
            let mut out = pane_journal(ctx, pane, since, until)?;
            let text = std::mem::take(&mut out.text);
            let meta = serde_json::to_value(&out).ok();
            (
                "text/plain",
                text,
                meta.map(|m| json!({ "panescan/journal": m })),
            )
        }
        _ => ("application/json", json_of(ctx, target)?, None),
    };
    let mut content = json!({"uri": uri_text, "mimeType": mime, "text": text});
    if let Some(meta) = meta {
        content["_meta"] = match target {
            Target::Journal(..) => meta,
            _ => json!({ "panescan/capture": meta }),
        };
    }
    Ok(json!({ "contents": [content] }))
}

/// The JSON of an inventory-backed resource.
fn json_of(ctx: &ToolContext, target: Target) -> Result<String, ResourceError> {
    if target == Target::Sessions {
        let args = ListSessionsArgs {
            filters: None,
            server: ServerArgs::default(),
        };
        return encode(&ListSessions::run(ctx, args)?);
    }
    let inv = inventory(ctx)?;
    snapshot(&inv, target).map_err(ResourceError::from)
}

/// What `target` reads as, from an inventory already fetched (the
/// watcher compares these to tell a session, window or pane changed).
/// `Err` with the tools' "no such ...; these exist" sentence when it is gone.
pub fn snapshot(
    inv: &Inventory,
    target: Target,
) -> Result<String, crate::tools::context::ToolError> {
    let encoded = match target {
        Target::Session(id) => serde_json::to_string(&inspect::session_info(inv, id)?),
        Target::Window(id) => serde_json::to_string(&inspect::window_info(inv, id)?),
        Target::Pane(id) => serde_json::to_string(find_pane(inv, id)?),
        Target::Sessions | Target::Screen(_) | Target::History(..) | Target::Journal(..) => {
            return Err(crate::tools::context::ToolError::internal(
                "only sessions, windows and panes have a snapshot",
            ))
        }
    };
    encoded.map_err(|e| crate::tools::context::ToolError::internal(format!("cannot encode: {e}")))
}

fn encode<T: Serialize>(value: &T) -> Result<String, ResourceError> {
    serde_json::to_string(value).map_err(|e| ResourceError {
        kind: super::ResourceErrorKind::Failed,
        message: format!("cannot encode the resource: {e}"),
    })
}

/// A pane's screen (`lines` None) or its newest `lines` lines, through
/// capture_pane (its bounds, its pane cache), with what was cut.
fn text_of(
    ctx: &ToolContext,
    pane: PaneId,
    lines: Option<usize>,
) -> Result<(&'static str, String, Option<Value>), ResourceError> {
    if lines == Some(0) {
        return Err(ResourceError::malformed(
            "history ?lines= must be at least 1",
        ));
    }
    let args = CapturePaneArgs {
        pane_id: pane,
        start: lines.map(|n| -(n.min(i64::MAX as usize) as i64)),
        end: None,
        join_wrapped: false,
        escapes: false,
        max_lines: lines,
        max_bytes: None,
        server: ServerArgs::default(),
    };
    let mut out = CapturePane::run(ctx, args).map_err(|e| {
        // capture_pane names its argument; a resource names its parameter.
        let mut e = ResourceError::from(e);
        e.message = e.message.replace("max_lines", "?lines=");
        e
    })?;
    let text = std::mem::take(&mut out.text);
    let mut meta = serde_json::to_value(&out).unwrap_or(Value::Null);
    if let Value::Object(m) = &mut meta {
        m.remove("text");
    }
    Ok(("text/plain", text, Some(meta)))
}

fn inventory(ctx: &ToolContext) -> Result<Inventory, ResourceError> {
    let tmux = ctx.tmux(&ServerArgs::default())?;
    Ok(ctx.inventory(&tmux)?)
}

/// Whether what `target` names exists now (one inventory read); the error
/// names what does.
pub fn exists(ctx: &ToolContext, target: Target) -> Result<(), ResourceError> {
    let inv = inventory(ctx)?;
    exists_in(&inv, target)
}

/// [`exists`] on an inventory already read.
pub fn exists_in(inv: &Inventory, target: Target) -> Result<(), ResourceError> {
    match target {
        // A pane's journal outlives the pane.
        Target::Sessions | Target::Journal(..) => Ok(()),
        Target::Screen(pane) | Target::History(pane, _) => find_pane(inv, pane)
            .map(|_| ())
            .map_err(ResourceError::from),
        _ => snapshot(inv, target)
            .map(|_| ())
            .map_err(ResourceError::from),
    }
}

/// The inventory of the server panescan serves, for callers checking many
/// targets at once.
pub fn current_inventory(ctx: &ToolContext) -> Result<Inventory, ResourceError> {
    inventory(ctx)
}
