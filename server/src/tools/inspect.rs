//! The inventory tools: list and get sessions, windows and panes, the
//! server, and the pane at a window corner. All of them answer from one
//! `Tmux::inventory` round trip.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::context::{ServerArgs, ToolContext, ToolError};
use super::filters::Filters;
use super::{find_pane, find_session, find_window};
use crate::tmux::{Inventory, Pane, PaneId, ServerInfo, Session, SessionId, Window, WindowId};
use crate::tools::registry::Tool;
use crate::tools::schema;

/// Filters as `{field__op: value}` on any returned field: the object as a
/// JSON string, or (from clients that send one) the object itself.
type FilterArg = Option<Value>;

/// The schema says string: an open object (any `field__op` key) has no
/// strict-mode form, and a string carries the same object to every model.
fn filters_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({"type": "string"})
}

#[derive(Debug, Deserialize, JsonSchema)]
// A wire type: its doc comments would be schema descriptions every client
// reads in tools/list; the tool's description and the field names say it.
#[allow(missing_docs)]
pub struct ListSessionsArgs {
    /// A JSON object {field__op: value}, as a string, on any returned field, e.g. {"session_name__icontains": "dev"}. Ops: exact iexact contains icontains startswith istartswith endswith iendswith in nin regex iregex gt gte lt lte.
    #[serde(default)]
    #[schemars(schema_with = "filters_schema")]
    pub filters: FilterArg,
    #[serde(flatten)]
    pub server: ServerArgs,
}

#[derive(Debug, Serialize, JsonSchema)]
// A wire type: its doc comments would be schema descriptions every client
// reads in tools/list; the tool's description and the field names say it.
#[allow(missing_docs)]
pub struct SessionList {
    pub sessions: Vec<Session>,
    /// Rows matching before the row ceiling.
    pub total: usize,
    /// True when rows were cut to the ceiling.
    pub truncated: bool,
}

/// Keeps the rows that pass `filters`, at most `max`.
fn filter_rows<T: Serialize + JsonSchema + Clone>(
    rows: &[T],
    filters: &FilterArg,
    max: usize,
) -> Result<(Vec<T>, usize, bool), ToolError> {
    let fields = schema::property_names(&schema::schema_for::<T>());
    let filters = Filters::compile(filters.as_ref(), &fields)?;
    let mut kept = Vec::new();
    let mut total = 0;
    for row in rows {
        let pass = filters.is_empty()
            || serde_json::to_value(row)
                .map(|v| filters.matches(&v))
                .unwrap_or(false);
        if pass {
            total += 1;
            if kept.len() < max {
                kept.push(row.clone());
            }
        }
    }
    let truncated = total > kept.len();
    Ok((kept, total, truncated))
}

fn cut_note(total: usize, shown: usize) -> String {
    if total > shown {
        format!("\n({shown} of {total} shown; narrow with filters)")
    } else {
        String::new()
    }
}

#[derive(Debug)]
/// `list_sessions`: every session with its windows count and attach state.
pub struct ListSessions;

impl Tool for ListSessions {
    const NAME: &'static str = "list_sessions";
    const TITLE: &'static str = "List sessions";
    const DESCRIPTION: &'static str = "List tmux sessions with their ids, names, window counts and attached clients. Use first to learn what exists; filter with {field__op: value}. For windows or panes use list_windows / list_panes.";
    type Args = ListSessionsArgs;
    type Output = SessionList;

    fn run(ctx: &ToolContext, args: Self::Args) -> Result<Self::Output, ToolError> {
        let tmux = ctx.tmux(&args.server)?;
        let inv = ctx.inventory(&tmux)?;
        let (sessions, total, truncated) =
            filter_rows(&inv.sessions, &args.filters, ctx.ceilings().list_rows)?;
        Ok(SessionList {
            sessions,
            total,
            truncated,
        })
    }

    fn text(out: &Self::Output) -> String {
        let mut s = String::new();
        for x in &out.sessions {
            s.push_str(&format!(
                "{} {} windows={} attached={}\n",
                x.session_id, x.session_name, x.session_windows, x.session_attached
            ));
        }
        if out.sessions.is_empty() {
            s.push_str("no sessions\n");
        }
        s.push_str(&cut_note(out.total, out.sessions.len()));
        s
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
// A wire type: its doc comments would be schema descriptions every client
// reads in tools/list; the tool's description and the field names say it.
#[allow(missing_docs)]
pub struct ListWindowsArgs {
    /// Only windows of this session (id $N or exact name).
    #[serde(default)]
    pub session: Option<String>,
    /// A JSON object {field__op: value}, as a string, on any returned field, e.g. {"window_name__contains": "log"}. Same ops as list_sessions.
    #[serde(default)]
    #[schemars(schema_with = "filters_schema")]
    pub filters: FilterArg,
    #[serde(flatten)]
    pub server: ServerArgs,
}

#[derive(Debug, Serialize, JsonSchema)]
// A wire type: its doc comments would be schema descriptions every client
// reads in tools/list; the tool's description and the field names say it.
#[allow(missing_docs)]
pub struct WindowList {
    pub windows: Vec<Window>,
    pub total: usize,
    pub truncated: bool,
}

#[derive(Debug)]
/// `list_windows`: the windows of one session or of all.
pub struct ListWindows;

impl Tool for ListWindows {
    const NAME: &'static str = "list_windows";
    const TITLE: &'static str = "List windows";
    const DESCRIPTION: &'static str = "List tmux windows (all, or one session's) with ids, index, name, size, layout and every session they are linked into. Filter with {field__op: value}. For the panes inside use list_panes.";
    type Args = ListWindowsArgs;
    type Output = WindowList;

    fn run(ctx: &ToolContext, args: Self::Args) -> Result<Self::Output, ToolError> {
        let tmux = ctx.tmux(&args.server)?;
        let inv = ctx.inventory(&tmux)?;
        let rows: Vec<Window> = match &args.session {
            Some(key) => {
                let s = find_session(&inv, key)?.session_id;
                inv.windows
                    .iter()
                    .filter(|w| w.placements.iter().any(|p| p.session_id == s))
                    .cloned()
                    .collect()
            }
            None => inv.windows.clone(),
        };
        let (windows, total, truncated) =
            filter_rows(&rows, &args.filters, ctx.ceilings().list_rows)?;
        Ok(WindowList {
            windows,
            total,
            truncated,
        })
    }

    fn text(out: &Self::Output) -> String {
        let mut s = String::new();
        for w in &out.windows {
            s.push_str(&format!(
                "{} {}:{} {} {}x{} panes={}{}\n",
                w.window_id,
                w.session_name,
                w.window_index,
                w.window_name,
                w.window_width,
                w.window_height,
                w.window_panes,
                if w.window_active { " active" } else { "" }
            ));
        }
        if out.windows.is_empty() {
            s.push_str("no windows\n");
        }
        s.push_str(&cut_note(out.total, out.windows.len()));
        s
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
// A wire type: its doc comments would be schema descriptions every client
// reads in tools/list; the tool's description and the field names say it.
#[allow(missing_docs)]
pub struct ListPanesArgs {
    /// Only panes of this session ($N).
    #[serde(default)]
    pub session_id: Option<SessionId>,
    /// Only panes of this window (@N).
    #[serde(default)]
    pub window_id: Option<WindowId>,
    /// A JSON object {field__op: value}, as a string, on any returned field, e.g. {"pane_current_command__in": ["vim","nvim"]}. Same ops as list_sessions.
    #[serde(default)]
    #[schemars(schema_with = "filters_schema")]
    pub filters: FilterArg,
    #[serde(flatten)]
    pub server: ServerArgs,
}

#[derive(Debug, Serialize, JsonSchema)]
// A wire type: its doc comments would be schema descriptions every client
// reads in tools/list; the tool's description and the field names say it.
#[allow(missing_docs)]
pub struct PaneList {
    pub panes: Vec<Pane>,
    pub total: usize,
    pub truncated: bool,
}

#[derive(Debug)]
/// `list_panes`: panes with what they run and where, filtered and bounded.
pub struct ListPanes;

impl Tool for ListPanes {
    const NAME: &'static str = "list_panes";
    const TITLE: &'static str = "List panes";
    const DESCRIPTION: &'static str = "List tmux panes (all, or one session's or window's) with id, geometry, command, path, title, mode, cursor, history size and is_caller. To find text in panes use search_panes; to read one, capture_pane.";
    type Args = ListPanesArgs;
    type Output = PaneList;

    fn run(ctx: &ToolContext, args: Self::Args) -> Result<Self::Output, ToolError> {
        let tmux = ctx.tmux(&args.server)?;
        let inv = ctx.inventory(&tmux)?;
        if let Some(s) = args.session_id {
            find_session(&inv, &s.to_string())?;
        }
        if let Some(w) = args.window_id {
            find_window(&inv, w)?;
        }
        let rows: Vec<Pane> = inv
            .panes
            .iter()
            .filter(|p| {
                args.session_id
                    .is_none_or(|s| p.placements.iter().any(|pl| pl.session_id == s))
                    && args.window_id.is_none_or(|w| p.window_id == w)
            })
            .cloned()
            .collect();
        let (panes, total, truncated) =
            filter_rows(&rows, &args.filters, ctx.ceilings().list_rows)?;
        Ok(PaneList {
            panes,
            total,
            truncated,
        })
    }

    fn text(out: &Self::Output) -> String {
        let mut s = String::new();
        for p in &out.panes {
            s.push_str(&pane_line(p));
        }
        if out.panes.is_empty() {
            s.push_str("no panes\n");
        }
        s.push_str(&cut_note(out.total, out.panes.len()));
        s
    }
}

fn pane_line(p: &Pane) -> String {
    format!(
        "{} {}:{}.{} {}x{} {} {}{}{}{}\n",
        p.pane_id,
        p.session_name,
        p.window_index,
        p.pane_index,
        p.pane_width,
        p.pane_height,
        p.pane_current_command,
        p.pane_current_path,
        if p.pane_active { " active" } else { "" },
        if p.pane_dead { " dead" } else { "" },
        if p.is_caller == Some(true) {
            " (caller)"
        } else {
            ""
        }
    )
}

#[derive(Debug, Deserialize, JsonSchema)]
// A wire type: its doc comments would be schema descriptions every client
// reads in tools/list; the tool's description and the field names say it.
#[allow(missing_docs)]
pub struct ServerOnlyArgs {
    #[serde(flatten)]
    pub server: ServerArgs,
}

#[derive(Debug)]
/// `get_server_info`: version, pid, socket and counts of one tmux server.
pub struct GetServerInfo;

impl Tool for GetServerInfo {
    const NAME: &'static str = "get_server_info";
    const TITLE: &'static str = "tmux server info";
    const DESCRIPTION: &'static str = "The tmux server's pid, version, socket path, start time and session/client counts. Use to check which server panescan talks to.";
    type Args = ServerOnlyArgs;
    type Output = ServerInfo;

    fn run(ctx: &ToolContext, args: Self::Args) -> Result<Self::Output, ToolError> {
        let tmux = ctx.tmux(&args.server)?;
        ctx.check_cancelled()?;
        tmux.server_info(ctx.tmux_deadline())
            .map_err(ToolError::from)
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
// A wire type: its doc comments would be schema descriptions every client
// reads in tools/list; the tool's description and the field names say it.
#[allow(missing_docs)]
pub struct SessionIdArgs {
    /// Session id, e.g. $1.
    pub session_id: SessionId,
    #[serde(flatten)]
    pub server: ServerArgs,
}

/// A window in a summary.
#[derive(Debug, Clone, Serialize, JsonSchema)]
// A wire type: its doc comments would be schema descriptions every client
// reads in tools/list; the tool's description and the field names say it.
#[allow(missing_docs)]
pub struct WindowBrief {
    pub window_id: WindowId,
    pub window_index: u32,
    pub window_name: String,
    pub window_active: bool,
    pub window_panes: u32,
}

#[derive(Debug, Serialize, JsonSchema)]
// A wire type: its doc comments would be schema descriptions every client
// reads in tools/list; the tool's description and the field names say it.
#[allow(missing_docs)]
pub struct SessionInfo {
    #[serde(flatten)]
    pub session: Session,
    /// The session's windows in index order.
    pub windows: Vec<WindowBrief>,
}

#[derive(Debug)]
/// `get_session_info`: one session and its windows.
pub struct GetSessionInfo;

impl Tool for GetSessionInfo {
    const NAME: &'static str = "get_session_info";
    const TITLE: &'static str = "Session info";
    const DESCRIPTION: &'static str = "One session by id: name, times, attached clients, path, and its windows. Use when you hold a $N id; to browse, use list_sessions.";
    type Args = SessionIdArgs;
    type Output = SessionInfo;

    fn run(ctx: &ToolContext, args: Self::Args) -> Result<Self::Output, ToolError> {
        let tmux = ctx.tmux(&args.server)?;
        let inv = ctx.inventory(&tmux)?;
        session_info(&inv, args.session_id)
    }
}

/// One session and its windows, from an inventory (get_session_info and
/// the `tmux://session/{id}` resource).
pub fn session_info(inv: &Inventory, id: SessionId) -> Result<SessionInfo, ToolError> {
    let session = find_session(inv, &id.to_string())?.clone();
    let mut windows: Vec<(u32, WindowBrief)> = inv
        .windows
        .iter()
        .filter_map(|w| {
            let at = w
                .placements
                .iter()
                .find(|p| p.session_id == session.session_id)?;
            Some((
                at.window_index,
                WindowBrief {
                    window_id: w.window_id,
                    window_index: at.window_index,
                    window_name: w.window_name.clone(),
                    window_active: w.window_active,
                    window_panes: w.window_panes,
                },
            ))
        })
        .collect();
    windows.sort_by_key(|(i, _)| *i);
    Ok(SessionInfo {
        session,
        windows: windows.into_iter().map(|(_, w)| w).collect(),
    })
}

#[derive(Debug, Deserialize, JsonSchema)]
// A wire type: its doc comments would be schema descriptions every client
// reads in tools/list; the tool's description and the field names say it.
#[allow(missing_docs)]
pub struct WindowIdArgs {
    /// Window id, e.g. @1.
    pub window_id: WindowId,
    #[serde(flatten)]
    pub server: ServerArgs,
}

/// A pane in a summary.
#[derive(Debug, Clone, Serialize, JsonSchema)]
// A wire type: its doc comments would be schema descriptions every client
// reads in tools/list; the tool's description and the field names say it.
#[allow(missing_docs)]
pub struct PaneBrief {
    pub pane_id: PaneId,
    pub pane_index: u32,
    pub pane_active: bool,
    pub pane_current_command: String,
    pub pane_width: u32,
    pub pane_height: u32,
}

#[derive(Debug, Serialize, JsonSchema)]
// A wire type: its doc comments would be schema descriptions every client
// reads in tools/list; the tool's description and the field names say it.
#[allow(missing_docs)]
pub struct WindowInfo {
    #[serde(flatten)]
    pub window: Window,
    /// The window's panes in index order.
    pub panes: Vec<PaneBrief>,
}

#[derive(Debug)]
/// `get_window_info`: one window, its layout and panes.
pub struct GetWindowInfo;

impl Tool for GetWindowInfo {
    const NAME: &'static str = "get_window_info";
    const TITLE: &'static str = "Window info";
    const DESCRIPTION: &'static str = "One window by id: name, size, layout, placements, and its panes. Use when you hold a @N id; to browse, use list_windows.";
    type Args = WindowIdArgs;
    type Output = WindowInfo;

    fn run(ctx: &ToolContext, args: Self::Args) -> Result<Self::Output, ToolError> {
        let tmux = ctx.tmux(&args.server)?;
        let inv = ctx.inventory(&tmux)?;
        window_info(&inv, args.window_id)
    }
}

/// One window and its panes, from an inventory (get_window_info and the
/// `tmux://window/{id}` resource).
pub fn window_info(inv: &Inventory, id: WindowId) -> Result<WindowInfo, ToolError> {
    let window = find_window(inv, id)?.clone();
    let mut panes: Vec<PaneBrief> = inv
        .panes
        .iter()
        .filter(|p| p.window_id == window.window_id)
        .map(|p| PaneBrief {
            pane_id: p.pane_id,
            pane_index: p.pane_index,
            pane_active: p.pane_active,
            pane_current_command: p.pane_current_command.clone(),
            pane_width: p.pane_width,
            pane_height: p.pane_height,
        })
        .collect();
    panes.sort_by_key(|p| p.pane_index);
    Ok(WindowInfo { window, panes })
}

#[derive(Debug, Deserialize, JsonSchema)]
// A wire type: its doc comments would be schema descriptions every client
// reads in tools/list; the tool's description and the field names say it.
#[allow(missing_docs)]
pub struct PaneIdArgs {
    /// Pane id, e.g. %1.
    pub pane_id: PaneId,
    #[serde(flatten)]
    pub server: ServerArgs,
}

#[derive(Debug)]
/// `get_pane_info`: every field of one pane.
pub struct GetPaneInfo;

impl Tool for GetPaneInfo {
    const NAME: &'static str = "get_pane_info";
    const TITLE: &'static str = "Pane info";
    const DESCRIPTION: &'static str = "One pane by id: geometry, command, path, pid, tty, title, mode, cursor, history, dead status and every placement. Use when you hold a %N id; for its text use capture_pane.";
    type Args = PaneIdArgs;
    type Output = Pane;

    fn run(ctx: &ToolContext, args: Self::Args) -> Result<Self::Output, ToolError> {
        let tmux = ctx.tmux(&args.server)?;
        let inv = ctx.inventory(&tmux)?;
        find_pane(&inv, args.pane_id).cloned()
    }

    fn text(p: &Self::Output) -> String {
        pane_line(p)
    }
}

/// A corner of a window.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
// A wire type: its doc comments would be schema descriptions every client
// reads in tools/list; the tool's description and the field names say it.
#[allow(missing_docs)]
pub enum Corner {
    TopLeft,
    TopRight,
    BottomLeft,
    BottomRight,
}

#[derive(Debug, Deserialize, JsonSchema)]
// A wire type: its doc comments would be schema descriptions every client
// reads in tools/list; the tool's description and the field names say it.
#[allow(missing_docs)]
pub struct FindPaneArgs {
    /// Window id, e.g. @1.
    pub window_id: WindowId,
    /// Which corner of the window.
    pub position: Corner,
    #[serde(flatten)]
    pub server: ServerArgs,
}

#[derive(Debug)]
/// `find_pane_by_position`: which pane of a window covers a cell or lies on a side.
pub struct FindPaneByPosition;

impl Tool for FindPaneByPosition {
    const NAME: &'static str = "find_pane_by_position";
    const TITLE: &'static str = "Pane at a window corner";
    const DESCRIPTION: &'static str = "The pane occupying a corner (top-left, top-right, bottom-left, bottom-right) of a window. Use for requests like 'the bottom-right pane'.";
    type Args = FindPaneArgs;
    type Output = Pane;

    fn run(ctx: &ToolContext, args: Self::Args) -> Result<Self::Output, ToolError> {
        let tmux = ctx.tmux(&args.server)?;
        let inv = ctx.inventory(&tmux)?;
        let window = find_window(&inv, args.window_id)?;
        let in_window = || inv.panes.iter().filter(|p| p.window_id == window.window_id);
        // The corner pane touches both edges; among several (never in a
        // tiled layout, but be safe) take the one nearest the corner.
        let found = match args.position {
            Corner::TopLeft => in_window()
                .filter(|p| p.pane_at_top && p.pane_at_left)
                .min_by_key(|p| (p.pane_top, p.pane_left)),
            Corner::TopRight => in_window()
                .filter(|p| p.pane_at_top && p.pane_at_right)
                .min_by_key(|p| (p.pane_top, u32::MAX - p.pane_right)),
            Corner::BottomLeft => in_window()
                .filter(|p| p.pane_at_bottom && p.pane_at_left)
                .min_by_key(|p| (u32::MAX - p.pane_bottom, p.pane_left)),
            Corner::BottomRight => in_window()
                .filter(|p| p.pane_at_bottom && p.pane_at_right)
                .min_by_key(|p| (u32::MAX - p.pane_bottom, u32::MAX - p.pane_right)),
        };
        found.cloned().ok_or_else(|| {
            ToolError::not_found(format!(
                "window {} reports no pane at its {:?} corner (zoomed or changing layout?); its panes: {}",
                window.window_id,
                args.position,
                super::bounded_list(in_window().map(|p| p.pane_id.to_string()))
            ))
        })
    }

    fn text(p: &Self::Output) -> String {
        pane_line(p)
    }
}
