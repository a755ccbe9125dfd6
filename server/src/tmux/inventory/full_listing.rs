//! [`Fields::Full`](super::Fields::Full) listed in pieces, each where tmux
//! pays least for it.
//!
//! tmux expands a `list-panes -a` format once per pane, so a session's
//! fields are expanded again for every pane it holds, and
//! `pane_current_command` and `pane_current_path` read `/proc` on tmux's
//! single thread. So a full listing is (the figures: BENCHMARKS.md,
//! "Cheap calls off tmux's queue"):
//!
//! - `list-panes -a` of every pane and window field, with each pane's
//!   `session_id` and `session_name` (its placements);
//! - `list-sessions` of the session details, pipelined right after it in
//!   the same write;
//! - what each pane runs read from `/proc` by panescan with tmux's own
//!   rules where the server is on this machine ([`crate::tmux::procfs`];
//!   tmux is asked only where that is not certain), or listed by tmux with
//!   the panes for a server on another host (a second round trip there
//!   would cost more than tmux's time).
//!
//! tmux may run another client's command between the two listings: a
//! session made in between is not reported (no pane of the listing is in
//! it), and one gone in between keeps what the pane listing says of it,
//! its window count taken from the windows listed in it.

use std::collections::HashMap;

use super::{fields_in_order, format, layout, record_values, Inventory, Window};
use crate::tmux::command::TmuxCommand;
use crate::tmux::ids::SessionId;

/// What `list-sessions` adds to a session the pane listing named.
const SESSION_DETAILS: &[&str] = &[
    "session_id",
    "session_windows",
    "session_attached",
    "session_created",
    "session_grouped",
    "session_group",
    "session_path",
];

/// What each pane runs: read from `/proc` for a server on this machine.
const RUNNING: &[&str] = &["pane_current_command", "pane_current_path"];

/// The fields the pane listing of a full inventory asks for: every field
/// but the session details (`session_id` and `session_name` stay: they
/// place each pane), and what the panes run unless `with_running`.
pub(crate) fn pane_fields(with_running: bool) -> Vec<&'static str> {
    fields_in_order()
        .iter()
        .copied()
        .filter(|f| *f == "session_id" || !SESSION_DETAILS.contains(f))
        .filter(|f| with_running || !RUNNING.contains(f))
        .collect()
}

/// The `list-sessions` of the session details under fresh separators.
#[derive(Debug)]
pub(crate) struct SessionQuery {
    sep: String,
    end: String,
}

/// One session's details as `list-sessions` gave them.
struct Details {
    windows: u32,
    attached: u32,
    created: i64,
    group: Option<String>,
    path: String,
}

impl SessionQuery {
    pub(crate) fn new(sep: String, end: String) -> SessionQuery {
        SessionQuery { sep, end }
    }

    pub(crate) fn command(&self) -> TmuxCommand {
        TmuxCommand::new("list-sessions")
            .option("-F", &format(SESSION_DETAILS, &self.sep, &self.end))
    }

    /// Fills the sessions of `inv` from `text` (the command's output);
    /// `own_session` is the session panescan's control client is attached
    /// to (not counted in `session_attached`).
    pub(crate) fn fill(&self, inv: &mut Inventory, text: &str, own_session: Option<&str>) {
        let details = self.parse(text);
        for session in &mut inv.sessions {
            let Some(d) = details.get(&session.session_id) else {
                // Gone since the pane listing: what that listing holds.
                session.session_windows = windows_in(&inv.windows, session.session_id);
                continue;
            };
            session.session_windows = d.windows;
            session.session_attached = d.attached;
            if own_session == Some(session.session_id.to_string().as_str()) {
                session.session_attached = session.session_attached.saturating_sub(1);
            }
            session.session_created = d.created;
            session.session_group.clone_from(&d.group);
            session.session_path.clone_from(&d.path);
        }
    }

    fn parse(&self, text: &str) -> HashMap<SessionId, Details> {
        let (plain, text_fields) = layout(SESSION_DETAILS);
        let mut out = HashMap::new();
        for record in text.split(self.end.as_str()) {
            let record = record.strip_prefix('\n').unwrap_or(record);
            let Some(v) = record_values(plain.len(), text_fields.len(), record, &self.sep) else {
                continue;
            };
            // Laid out as `format` lays SESSION_DETAILS out: the numbers
            // (id, windows, attached, created, grouped), then group, path.
            let [id, windows, attached, created, grouped, group, path] = v.as_slice() else {
                continue;
            };
            let Ok(id) = SessionId::parse(id) else {
                continue;
            };
            out.insert(
                id,
                Details {
                    windows: windows.trim().parse().unwrap_or_default(),
                    attached: attached.trim().parse().unwrap_or_default(),
                    created: created.trim().parse().unwrap_or_default(),
                    group: (*grouped == "1").then(|| (*group).to_owned()),
                    path: (*path).to_owned(),
                },
            );
        }
        out
    }
}

/// Windows of `windows` placed in `session`.
fn windows_in(windows: &[Window], session: SessionId) -> u32 {
    let n = windows
        .iter()
        .filter(|w| w.placements.iter().any(|p| p.session_id == session))
        .count();
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// Puts what each pane runs (`found`, in the order of `inv.panes`) into
/// `inv`; a pane with no answer (gone since) keeps empty fields, as tmux
/// lists a pane whose process it cannot read.
pub(crate) fn fill_running(inv: &mut Inventory, found: Vec<Option<(String, String)>>) {
    for (pane, details) in inv.panes.iter_mut().zip(found) {
        if let Some((command, path)) = details {
            pane.pane_current_command = command;
            pane.pane_current_path = path;
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use crate::tmux::ids::WindowId;
    use crate::tmux::inventory::{Session, WindowPlacement};

    fn session(id: u32) -> Session {
        Session {
            session_id: SessionId::parse(&format!("${id}")).unwrap(),
            session_name: format!("s{id}"),
            session_windows: 0,
            session_attached: 0,
            session_created: 0,
            session_group: None,
            session_path: String::new(),
        }
    }

    fn window(id: u32, sessions: &[u32]) -> Window {
        let placements: Vec<WindowPlacement> = sessions
            .iter()
            .map(|s| WindowPlacement {
                session_id: SessionId::parse(&format!("${s}")).unwrap(),
                session_name: format!("s{s}"),
                window_index: id,
            })
            .collect();
        Window {
            window_id: WindowId::parse(&format!("@{id}")).unwrap(),
            window_index: id,
            window_name: String::new(),
            window_active: false,
            window_width: 0,
            window_height: 0,
            window_layout: String::new(),
            window_panes: 1,
            session_id: placements[0].session_id,
            session_name: placements[0].session_name.clone(),
            placements,
        }
    }

    #[test]
    fn sessions_take_their_details_and_a_gone_one_keeps_what_was_listed() {
        let q = SessionQuery::new("<s>".into(), "<e>".into());
        let mut inv = Inventory {
            sessions: vec![session(0), session(1), session(2)],
            windows: vec![window(1, &[0, 2]), window(2, &[2]), window(3, &[2])],
            panes: Vec::new(),
        };
        // As tmux prints `q.command()`'s format; session $2 is gone, $9
        // came after the pane listing; garbage between records is skipped.
        let text = "$0 4 2 1700000000 1<s>grp<s>/a b\tc<e>\n\
                    garbage<s><e>\n\
                    $1 1 0 1700000001 0<s><s>/tmp<e>\n\
                    $9 1 0 1700000002 0<s><s>/new<e>\n";
        q.fill(&mut inv, text, Some("$0"));
        let s = &inv.sessions;
        assert_eq!(
            (
                s[0].session_windows,
                s[0].session_attached,
                s[0].session_created
            ),
            (4, 1, 1_700_000_000),
            "its own client is not counted"
        );
        assert_eq!(s[0].session_group.as_deref(), Some("grp"));
        assert_eq!(s[0].session_path, "/a b\tc");
        assert_eq!(s[1].session_group, None);
        assert_eq!(
            (s[1].session_attached, s[1].session_path.as_str()),
            (0, "/tmp")
        );
        assert_eq!(s[2].session_windows, 3, "counted from the windows listed");
        assert_eq!(s.len(), 3, "a session with no listed pane is not added");
    }

    #[test]
    fn the_pane_listing_leaves_out_what_others_list() {
        let local = pane_fields(false);
        let remote = pane_fields(true);
        assert!(local.contains(&"session_id") && local.contains(&"session_name"));
        for f in SESSION_DETAILS.iter().filter(|f| **f != "session_id") {
            assert!(!local.contains(f) && !remote.contains(f), "{f}");
        }
        assert!(RUNNING
            .iter()
            .all(|f| !local.contains(f) && remote.contains(f)));
        assert_eq!(remote.len(), local.len() + RUNNING.len());
    }
}
