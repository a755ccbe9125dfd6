//! Every session, window and pane in one round trip.

use serde::Serialize;

use super::ids::{PaneId, SessionId, WindowId};

/// Every session, window and pane of a tmux server.
#[derive(Clone, Debug, Default, Serialize, schemars::JsonSchema)]
pub struct Inventory {
    /// Sessions ordered by id.
    pub sessions: Vec<Session>,
    /// Windows ordered by (primary session, window index).
    pub windows: Vec<Window>,
    /// Panes ordered by (primary session, window index, pane index).
    pub panes: Vec<Pane>,
}

/// A tmux session.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Session {
    pub session_id: SessionId,
    pub session_name: String,
    pub session_windows: u32,
    /// Number of clients attached (panescan's own control client excluded).
    pub session_attached: u32,
    /// Creation time, seconds since the epoch.
    pub session_created: i64,
    /// Session group name, if the session is grouped.
    pub session_group: Option<String>,
    pub session_path: String,
}

/// Where a window is linked: a session and an index in it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct WindowPlacement {
    pub session_id: SessionId,
    pub session_name: String,
    pub window_index: u32,
}

/// A tmux window (once, even if linked into several sessions).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Window {
    pub window_id: WindowId,
    pub window_index: u32,
    pub window_name: String,
    pub window_active: bool,
    pub window_width: u32,
    pub window_height: u32,
    pub window_layout: String,
    pub window_panes: u32,
    /// Primary placement's session.
    pub session_id: SessionId,
    pub session_name: String,
    /// Every session and index the window is linked at (primary first).
    pub placements: Vec<WindowPlacement>,
}

/// Where a pane appears: a session, window and index.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct PanePlacement {
    pub session_id: SessionId,
    pub session_name: String,
    pub window_id: WindowId,
    pub window_index: u32,
    pub window_name: String,
}

/// A tmux pane (once, even if its window is linked into several sessions).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Pane {
    pub pane_id: PaneId,
    pub pane_index: u32,
    pub pane_width: u32,
    pub pane_height: u32,
    pub pane_left: u32,
    pub pane_top: u32,
    pub pane_right: u32,
    pub pane_bottom: u32,
    pub pane_at_top: bool,
    pub pane_at_bottom: bool,
    pub pane_at_left: bool,
    pub pane_at_right: bool,
    pub pane_tty: String,
    pub pane_pid: Option<u32>,
    pub pane_current_command: String,
    pub pane_current_path: String,
    pub pane_title: String,
    pub pane_active: bool,
    pub pane_dead: bool,
    pub pane_dead_status: Option<i32>,
    pub pane_in_mode: bool,
    /// Mode name (`copy-mode`, ...), empty when not in a mode.
    pub pane_mode: String,
    pub alternate_on: bool,
    pub cursor_x: u32,
    pub cursor_y: u32,
    pub history_size: u64,
    pub history_limit: u64,
    pub window_id: WindowId,
    pub window_index: u32,
    pub window_name: String,
    pub session_id: SessionId,
    pub session_name: String,
    /// Every placement (primary first).
    pub placements: Vec<PanePlacement>,
    /// Whether panescan itself runs in this pane; `None` outside tmux.
    pub is_caller: Option<bool>,
}

use std::time::Instant;

use super::connection::Shared;
use super::TmuxError;

pub(crate) fn fetch(_shared: &Shared, _deadline: Instant) -> Result<Inventory, TmuxError> {
    Err(TmuxError::ConnectionLost("not connected".into()))
}
