//! What tells a pane's text unchanged: fingerprints and window activity.

use std::collections::HashMap;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use super::PaneCache;
use crate::tmux::{Inventory, Pane, PaneId, Tmux, TmuxCommand, TmuxError};

/// What one `list-panes` row says about a pane. Two equal fingerprints with
/// no window activity in between mean the pane's text did not change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Fingerprint {
    pub(super) server_pid: String,
    pub(super) server_start: String,
    pub(super) pane_pid: String,
    pub(super) history_size: u64,
    pub(super) history_limit: u64,
    pub(super) width: u32,
    pub(super) height: u32,
    pub(super) cursor: String,
    pub(super) alternate_on: String,
    pub(super) dead: String,
}

/// Up to this many panes, activity is read pane by pane.
pub(super) const FEW_PANES: usize = 4;

/// The format of an activity row: what the inventory does not say.
pub(super) const ACTIVITY_FORMAT: &str = "#{pane_id} #{window_activity} #{pid} #{start_time}";

impl Fingerprint {
    pub(super) fn of(pane: &Pane, server_pid: &str, server_start: &str) -> Fingerprint {
        Fingerprint {
            server_pid: server_pid.to_owned(),
            server_start: server_start.to_owned(),
            pane_pid: pane.pane_pid.map_or_else(String::new, |p| p.to_string()),
            history_size: pane.history_size,
            history_limit: pane.history_limit,
            width: pane.pane_width,
            height: pane.pane_height,
            cursor: format!("{},{}", pane.cursor_x, pane.cursor_y),
            alternate_on: pane.alternate_on.to_string(),
            dead: format!("{}{:?}", pane.pane_dead, pane.pane_dead_status),
        }
    }
}

pub(super) fn now_secs() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

/// Window activity seconds and server identity, read now (after the
/// caller's inventory).
pub(super) fn read_activity(
    tmux: &Tmux,
    panes: &[PaneId],
    deadline: Instant,
) -> Result<HashMap<PaneId, Activity>, TmuxError> {
    // A few panes (capture_pane, capture_since): ask about those alone.
    let activity: HashMap<PaneId, Activity> = if panes.len() <= FEW_PANES {
        let commands: Vec<TmuxCommand> = panes
            .iter()
            .map(|&pane| {
                TmuxCommand::new("display-message")
                    .flag("-p")
                    .target(pane)
                    .format_arg(ACTIVITY_FORMAT)
            })
            .collect();
        let mut rows = HashMap::new();
        for out in tmux.run_many(&commands, deadline) {
            rows.extend(out?.lines().filter_map(parse_activity));
        }
        rows
    } else {
        tmux.run(&PaneCache::activity_command(), deadline)?
            .lines()
            .filter_map(parse_activity)
            .collect()
    };
    Ok(activity)
}

/// Every pane's fingerprint (from the inventory) and window activity second.
pub(super) fn fingerprints(
    inventory: &Inventory,
    activity: &HashMap<PaneId, Activity>,
) -> HashMap<PaneId, (i64, Fingerprint)> {
    let mut prints = HashMap::new();
    for pane in &inventory.panes {
        if let Some(a) = activity.get(&pane.pane_id) {
            let print = Fingerprint::of(pane, &a.server_pid, &a.server_start);
            prints.insert(pane.pane_id, (a.window_activity, print));
        }
    }
    prints
}

/// One row of the activity query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Activity {
    pub(super) window_activity: i64,
    pub(super) server_pid: String,
    pub(super) server_start: String,
}

pub(super) fn parse_activity(line: &str) -> Option<(PaneId, Activity)> {
    let f: Vec<&str> = line.split(' ').collect();
    if f.len() != 4 {
        return None;
    }
    Some((
        PaneId::parse(f[0]).ok()?,
        Activity {
            window_activity: f[1].parse().ok()?,
            server_pid: f[2].to_owned(),
            server_start: f[3].to_owned(),
        },
    ))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn activity_rows_parse() {
        let (pane, a) = parse_activity("%3 1700000000 99 1699999999").unwrap();
        assert_eq!(pane, PaneId::from_number(3));
        assert_eq!(a.window_activity, 1_700_000_000);
        assert_eq!(a.server_pid, "99");
        assert!(parse_activity("%3 x").is_none());
        assert!(parse_activity("%3 x 1 2").is_none());
    }
}
