//! What tells a pane's text unchanged: fingerprints and window activity.

use std::collections::HashMap;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use crate::tmux::{Inventory, Pane, PaneId, Tmux, TmuxCommand, TmuxError};

/// What one `list-panes` row says about a pane. Two equal fingerprints with
/// no window activity in between mean the pane's text did not change.
/// Numbers and flags only: building one per pane per search allocates
/// nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Fingerprint {
    pub(super) server: ServerStamp,
    pub(super) pane_pid: Option<u32>,
    pub(super) history_size: u64,
    pub(super) history_limit: u64,
    pub(super) width: u32,
    pub(super) height: u32,
    pub(super) cursor: (u32, u32),
    pub(super) alternate_on: bool,
    pub(super) dead: (bool, Option<i32>),
}

/// Which server process: its pid and start time (`#{pid} #{start_time}`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct ServerStamp {
    pub(super) pid: u32,
    pub(super) start: u64,
}

impl ServerStamp {
    /// From `#{pid} #{start_time}`; `None` unless both are numbers.
    pub(super) fn parse(text: &str) -> Option<ServerStamp> {
        let mut words = text.split_whitespace();
        let stamp = ServerStamp {
            pid: words.next()?.parse().ok()?,
            start: words.next()?.parse().ok()?,
        };
        words.next().is_none().then_some(stamp)
    }
}

/// Up to this many panes, activity is read pane by pane.
pub(super) const FEW_PANES: usize = 4;

/// The format of an activity row: what a listing without the fingerprint
/// fields does not say.
pub(super) const ACTIVITY_FORMAT: &str = "#{pane_id} #{window_activity} #{pid} #{start_time}";

impl Fingerprint {
    pub(super) fn of(pane: &Pane, server: ServerStamp) -> Fingerprint {
        Fingerprint {
            server,
            pane_pid: pane.pane_pid,
            history_size: pane.history_size,
            history_limit: pane.history_limit,
            width: pane.pane_width,
            height: pane.pane_height,
            cursor: (pane.cursor_x, pane.cursor_y),
            alternate_on: pane.alternate_on,
            dead: (pane.pane_dead, pane.pane_dead_status),
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
        let listing = TmuxCommand::new("list-panes")
            .flag("-a")
            .option("-F", ACTIVITY_FORMAT);
        tmux.run(&listing, deadline)?
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
    let mut prints = HashMap::with_capacity(activity.len());
    for pane in &inventory.panes {
        if let Some(a) = activity.get(&pane.pane_id) {
            let print = Fingerprint::of(pane, a.server);
            prints.insert(pane.pane_id, (a.window_activity, print));
        }
    }
    prints
}

/// Every pane's fingerprint and window activity second from one listing
/// with [`Fields::SearchWithFingerprint`](crate::tmux::Fields::SearchWithFingerprint),
/// which carries them all, and the server's stamp read in the same round
/// trip.
pub(super) fn fingerprints_listed(
    inventory: &Inventory,
    server: ServerStamp,
) -> HashMap<PaneId, (i64, Fingerprint)> {
    inventory
        .panes
        .iter()
        .map(|p| (p.pane_id, (p.window_activity, Fingerprint::of(p, server))))
        .collect()
}

/// One row of the activity query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Activity {
    pub(super) window_activity: i64,
    pub(super) server: ServerStamp,
}

pub(super) fn parse_activity(line: &str) -> Option<(PaneId, Activity)> {
    let (pane, rest) = line.split_once(' ')?;
    let (activity, server) = rest.split_once(' ')?;
    Some((
        PaneId::parse(pane).ok()?,
        Activity {
            window_activity: activity.parse().ok()?,
            server: ServerStamp::parse(server)?,
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
        assert_eq!(
            a.server,
            ServerStamp {
                pid: 99,
                start: 1_699_999_999
            }
        );
        assert!(parse_activity("%3 x").is_none());
        assert!(parse_activity("%3 x 1 2").is_none());
        assert!(parse_activity("%3 1 1 2 3").is_none());
        assert!(ServerStamp::parse("99").is_none());
    }
}
