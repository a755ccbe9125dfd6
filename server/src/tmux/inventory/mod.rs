//! Every session, window and pane in one round trip.
//!
//! One `list-panes -a -F FORMAT`: tmux walks sessions (by name), their
//! windows (by index) and panes (by index), so a window linked into several
//! sessions shows up once per placement; we fold those into one window and
//! one pane with every placement, the first seen being the primary. The
//! full listing adds a `list-sessions` in the same round trip and reads
//! what the panes run from `/proc` ([`full_listing`]); callers asking at
//! once share a listing ([`super::listing_share`]).
//!
//! Fields are separated by a per-inventory random token and every record is
//! closed by another, so names holding tabs, newlines, `|` or any Unicode
//! cannot shift a field. No user text ever enters the format. Every field is
//! parsed defensively: a value tmux did not give is a default, never a panic.

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
// A wire type: its doc comments would be schema descriptions every client
// reads in tools/list; the tool's description and the field names say it.
#[allow(missing_docs)]
pub struct Session {
    pub session_id: SessionId,
    pub session_name: String,
    pub session_windows: u32,
    /// Number of clients attached (panescan's own control client excluded).
    pub session_attached: u32,
    /// Creation time, seconds since the epoch.
    pub session_created: i64,
    /// Session group name, if the session is grouped.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_group: Option<String>,
    pub session_path: String,
}

/// Where a window is linked: a session and an index in it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
// A wire type: its doc comments would be schema descriptions every client
// reads in tools/list; the tool's description and the field names say it.
#[allow(missing_docs)]
pub struct WindowPlacement {
    pub session_id: SessionId,
    pub session_name: String,
    pub window_index: u32,
}

/// A tmux window (once, even if linked into several sessions).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
// A wire type: its doc comments would be schema descriptions every client
// reads in tools/list; the tool's description and the field names say it.
#[allow(missing_docs)]
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
// A wire type: its doc comments would be schema descriptions every client
// reads in tools/list; the tool's description and the field names say it.
#[allow(missing_docs)]
pub struct PanePlacement {
    pub session_id: SessionId,
    pub session_name: String,
    pub window_id: WindowId,
    pub window_index: u32,
    pub window_name: String,
}

/// A tmux pane (once, even if its window is linked into several sessions).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
// A wire type: its doc comments would be schema descriptions every client
// reads in tools/list; the tool's description and the field names say it.
#[allow(missing_docs)]
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
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pane_pid: Option<u32>,
    pub pane_current_command: String,
    pub pane_current_path: String,
    pub pane_title: String,
    pub pane_active: bool,
    pub pane_dead: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pane_dead_status: Option<i32>,
    pub pane_in_mode: bool,
    /// Mode name (`copy-mode`, ...), empty when not in a mode.
    pub pane_mode: String,
    pub alternate_on: bool,
    pub cursor_x: u32,
    pub cursor_y: u32,
    pub history_size: u64,
    pub history_limit: u64,
    // The second of the last output in the pane's window (listed only with
    // the pane cache's fingerprint: never sent).
    #[serde(skip)]
    pub window_activity: i64,
    pub window_id: WindowId,
    pub window_index: u32,
    pub window_name: String,
    pub session_id: SessionId,
    pub session_name: String,
    /// Every placement (primary first).
    pub placements: Vec<PanePlacement>,
    /// Whether panescan itself runs in this pane; absent outside tmux.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub is_caller: Option<bool>,
}

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

mod full_listing;
use super::caller::CallerPane;
use super::listing_share::ListingShare;
use super::spans::Span;
use super::{Server, TmuxCommand, TmuxError};
use crate::sync::nonce;

/// What the listings keep about one server ([`Server::listings`]): the
/// listings under way, which callers asking for the same fields at once
/// share (listing_share.rs), and how many panes the last one found.
#[derive(Debug, Default)]
pub(crate) struct ServerState {
    share: ListingShare<Fields, Listed>,
    /// Panes the last listing found (0 before any).
    panes: AtomicUsize,
}

impl ServerState {
    /// Panes the last listing found (0 before any): capture sweeps choose
    /// by it how to head their captures and how large a chunk may be.
    pub(crate) fn panes(&self) -> usize {
        self.panes.load(Ordering::Relaxed)
    }
}

/// The fields asked for, in order.
const FIELDS: &[&str] = &[
    "session_id",
    "session_name",
    "session_windows",
    "session_attached",
    "session_created",
    "session_grouped",
    "session_group",
    "session_path",
    "window_id",
    "window_index",
    "window_name",
    "window_active",
    "window_width",
    "window_height",
    "window_layout",
    "window_panes",
    "pane_id",
    "pane_index",
    "pane_width",
    "pane_height",
    "pane_left",
    "pane_top",
    "pane_right",
    "pane_bottom",
    "pane_at_top",
    "pane_at_bottom",
    "pane_at_left",
    "pane_at_right",
    "pane_tty",
    "pane_pid",
    "pane_current_command",
    "pane_current_path",
    "pane_title",
    "pane_active",
    "pane_dead",
    "pane_dead_status",
    "pane_in_mode",
    "pane_mode",
    "alternate_on",
    "cursor_x",
    "cursor_y",
    "history_size",
    "history_limit",
];

/// Every field of [`Fields::Full`], in the order a single listing of them
/// asks for them.
pub(super) fn fields_in_order() -> &'static [&'static str] {
    FIELDS
}

/// The fields a search needs before it captures: where each pane is (ids,
/// indexes, names, placements — enough to resolve a scope and order the
/// panes) and how much history it has. tmux spends about 0.75 µs of its
/// single thread per plain field and pane, and far more on
/// `pane_current_command` (~8 µs: it reads `/proc`) and `pane_current_path`
/// (~5 µs): a search asks for those only for the panes it returns
/// ([`commands_and_paths`]). Measured on 200 panes: 1.5 ms for these
/// against 6.6 ms for the 18 fields a search used to list.
const SEARCH_FIELDS: &[&str] = &[
    "session_id",
    "session_name",
    "window_id",
    "window_index",
    "window_name",
    "pane_id",
    "pane_index",
    "history_size",
];

/// What a search's cursor records of each pane besides [`SEARCH_FIELDS`]
/// (its process, width, cursor row and history limit: `since` reads them
/// to tell what each pane printed since). A subset of
/// [`CACHE_FINGERPRINT_FIELDS`].
const CURSOR_FIELDS: &[&str] = &["pane_width", "pane_pid", "history_limit", "cursor_y"];

/// What the pane cache checks, besides [`SEARCH_FIELDS`], before it reuses
/// text (a respawn, trim, resize or screen switch must invalidate it, and
/// output shows in the window's activity second). One listing carries it
/// all: tmux expands a pane's fields in one go, so its fingerprint and its
/// window's activity are one snapshot (a second `list-panes -a` for the
/// activity walked every pane again).
const CACHE_FINGERPRINT_FIELDS: &[&str] = &[
    "pane_width",
    "pane_height",
    "pane_pid",
    "history_limit",
    "cursor_x",
    "cursor_y",
    "alternate_on",
    "pane_dead",
    "window_activity",
];

/// What a pane runs: the costliest fields for tmux (it reads `/proc`).
const RUNNING_FIELDS: &[&str] = &["pane_current_command", "pane_current_path"];

/// Which fields an inventory listing asks tmux for. tmux pays for every
/// field of every pane on its single thread, so a caller asks only for
/// what it reads; a field not asked for is its default (zero, empty,
/// false, `None`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Fields {
    /// Every field of [`Session`], [`Window`] and [`Pane`]: what the
    /// inspection and mutation tools report. [`fetch`] lists it in pieces
    /// ([`full_listing`]): sessions' details never come from `list-panes`.
    Full,
    /// What a search needs before it captures: ids, indexes, names,
    /// placements and `history_size` (and `is_caller`, which costs tmux
    /// nothing). About 5x cheaper for tmux than [`Fields::Full`]; fill in
    /// what the panes run with [`super::Tmux::commands_and_paths`].
    Search,
    /// [`Fields::Search`] plus what a search's cursor records of each pane
    /// (`pane_width`, `pane_pid`, `history_limit`, `cursor_y`): what a
    /// search lists when there is no pane cache to check its text against
    /// (five fields fewer for tmux to expand a pane than
    /// [`Fields::SearchWithFingerprint`]).
    SearchWithCursor,
    /// [`Fields::Search`] plus what the pane cache checks before it reuses
    /// text: `pane_width`, `pane_height`, `pane_pid`, `history_limit`,
    /// `cursor_x`, `cursor_y`, `alternate_on`, `pane_dead` and
    /// `window_activity`.
    SearchWithFingerprint,
    /// [`Fields::SearchWithFingerprint`] plus what the panes run
    /// (`pane_current_command`, `pane_current_path`): what a search of a
    /// server on another host lists, cache or none. Asking the returned
    /// panes afterwards would cost a second round trip to the host (40 ms
    /// on a far one against ~3 ms of its tmux's time for 200 panes).
    SearchFar,
}

impl Fields {
    fn names(self) -> Vec<&'static str> {
        match self {
            Fields::Full => FIELDS.to_vec(),
            Fields::Search => SEARCH_FIELDS.to_vec(),
            Fields::SearchWithCursor => [SEARCH_FIELDS, CURSOR_FIELDS].concat(),
            Fields::SearchWithFingerprint => [SEARCH_FIELDS, CACHE_FINGERPRINT_FIELDS].concat(),
            Fields::SearchFar => [SEARCH_FIELDS, CACHE_FINGERPRINT_FIELDS, RUNNING_FIELDS].concat(),
        }
    }
}

/// Fields that may hold any text (names, paths, titles, ...). Every other
/// field is a number, an id or a flag and never holds a space.
const TEXT_FIELDS: &[&str] = &[
    "session_name",
    "session_group",
    "session_path",
    "window_name",
    "window_layout",
    "pane_tty",
    "pane_current_command",
    "pane_current_path",
    "pane_title",
    "pane_mode",
];

/// How a record lays `fields` out: the plain ones first, separated by
/// single spaces, then each text field after the separator. tmux copies
/// every literal byte of a format for every pane, so spaces instead of a
/// 15-byte separator between plain fields make a listing cheaper (1,000
/// panes: the search's 8 fields ~15 -> ~13 ms, all 43 fields ~112 -> ~86 ms).
pub(super) fn layout<'a>(fields: &[&'a str]) -> (Vec<&'a str>, Vec<&'a str>) {
    fields.iter().partition(|f| !TEXT_FIELDS.contains(f))
}

/// The `list-panes` format for separator `sep` and record end `end`.
pub(super) fn format(fields: &[&str], sep: &str, end: &str) -> String {
    let (plain, text) = layout(fields);
    let field = |name: &str| format!("#{{{name}}}");
    let mut f = plain.iter().map(|n| field(n)).collect::<Vec<_>>().join(" ");
    for name in text {
        f.push_str(sep);
        f.push_str(&field(name));
    }
    f.push_str(end);
    f
}

/// The values of one record laid out by [`format`](fn@format), plain fields first;
/// `None` for a record that does not have them all.
pub(super) fn record_values<'t>(
    plain_count: usize,
    text_count: usize,
    record: &'t str,
    sep: &str,
) -> Option<Vec<&'t str>> {
    let mut parts = record.split(sep);
    let mut values: Vec<&str> = parts.next()?.split(' ').collect();
    if values.len() != plain_count {
        return None;
    }
    values.extend(parts);
    (values.len() == plain_count + text_count).then_some(values)
}

/// A fresh field separator and record end for one listing. 48 random bits:
/// no pane can guess them, and tmux copies every literal byte of a format
/// for every field and pane (a 128-bit token made listing 200 panes take
/// half again as long).
fn separators() -> (String, String) {
    let full = nonce();
    let token = full.get(..12).unwrap_or(&full);
    (format!("<{token}f>"), format!("<{token}r>"))
}

/// A `list-panes -a` of some fields under fresh separators, and how to
/// read its output: sent over the control client ([`fetch`]) or at the top
/// of a sweep's own script ([`crate::tmux::capture::ListedAhead`]).
#[derive(Debug)]
pub(crate) struct ListingQuery {
    fields: Vec<&'static str>,
    sep: String,
    end: String,
}

impl ListingQuery {
    pub(crate) fn new(fields: Fields) -> ListingQuery {
        ListingQuery::of(fields.names())
    }

    fn of(fields: Vec<&'static str>) -> ListingQuery {
        let (sep, end) = separators();
        ListingQuery { fields, sep, end }
    }

    pub(crate) fn command(&self) -> TmuxCommand {
        TmuxCommand::new("list-panes")
            .flag("-a")
            .option("-F", &format(&self.fields, &self.sep, &self.end))
    }

    /// The inventory in `text` (the command's output), their count kept
    /// for the sweeps. `is_caller` is left unset: the listing may be
    /// shared by callers of several sessions, each marks its own
    /// ([`mark_caller`]).
    pub(crate) fn read(&self, shared: &Server, text: &str) -> Inventory {
        let inv = parse_fields(&self.fields, text, &self.sep, &self.end);
        shared
            .listings()
            .panes
            .store(inv.panes.len(), Ordering::Relaxed);
        inv
    }
}

/// Marks each pane of `inv` (a listing of the server at `socket`) as
/// `caller`'s or not: `None` when the caller runs in no tmux.
pub(crate) fn mark_caller(inv: &mut Inventory, caller: &CallerPane, socket: &std::path::Path) {
    let on = caller.on_server(socket);
    for p in &mut inv.panes {
        p.is_caller = on.map(|c| c == Some(p.pane_id));
    }
}

/// The inventory with `fields`, and the output of `then` commands
/// pipelined right after it in the same round trip: tmux runs them after
/// the inventory's own command, so they see the server no earlier than the
/// inventory did.
pub(crate) fn fetch(
    shared: &Server,
    fields: Fields,
    then: &[TmuxCommand],
    deadline: Instant,
) -> Listed {
    if !then.is_empty() {
        return fetch_now(shared, fields, then, deadline);
    }
    // Callers asking at once share a listing ([`super::listing_share`]).
    shared.listings().share.list(
        fields,
        deadline,
        || fetch_now(shared, fields, &[], deadline),
        || Err(TmuxError::Timeout),
    )
}

/// A listing and the output of the commands after it.
pub(crate) type Listed = Result<(Inventory, Vec<Result<String, TmuxError>>), TmuxError>;

/// [`fetch`], this caller's own round trip.
fn fetch_now(shared: &Server, fields: Fields, then: &[TmuxCommand], deadline: Instant) -> Listed {
    if fields == Fields::Full {
        return fetch_full(shared, then, deadline);
    }
    let query = ListingQuery::new(fields);
    let mut replies = round_trip(shared, vec![query.command()], then, deadline);
    let _parsing = Span::new("inventory.parse");
    let text = listing_text(replies.next())?;
    Ok((query.read(shared, &text), replies.collect()))
}

/// `listings` and then `then` in one round trip over the connection (timed
/// as `inventory.round_trip`): their replies, in that order.
fn round_trip(
    shared: &Server,
    mut listings: Vec<TmuxCommand>,
    then: &[TmuxCommand],
    deadline: Instant,
) -> std::vec::IntoIter<Result<String, TmuxError>> {
    listings.extend_from_slice(then);
    let _round_trip = Span::new("inventory.round_trip");
    shared
        .connection()
        .run_many(&listings, deadline)
        .into_iter()
}

/// [`fetch`] of [`Fields::Full`], in the pieces [`full_listing`] cuts it
/// into: the panes, then the sessions' details in the same round trip,
/// then (for a server on this machine) what each pane runs.
fn fetch_full(shared: &Server, then: &[TmuxCommand], deadline: Instant) -> Listed {
    let local = shared.connection().endpoint().host().is_none();
    let query = ListingQuery::of(full_listing::pane_fields(!local));
    let sessions = full_listing::SessionQuery::new(query.sep.clone(), query.end.clone());
    let listings = vec![query.command(), sessions.command()];
    let mut replies = round_trip(shared, listings, then, deadline);
    let parsing = Span::new("inventory.parse");
    let text = listing_text(replies.next())?;
    let mut inv = query.read(shared, &text);
    let details = listing_text(replies.next())?;
    sessions.fill(
        &mut inv,
        &details,
        shared.connection().own_session().as_deref(),
    );
    drop(parsing);
    if local && !inv.panes.is_empty() {
        let panes: Vec<(PaneId, Option<u32>)> =
            inv.panes.iter().map(|p| (p.pane_id, p.pane_pid)).collect();
        let found = commands_and_paths(shared, &panes, deadline);
        full_listing::fill_running(&mut inv, found);
    }
    Ok((inv, replies.collect()))
}

/// A listing's output; a server with no session lists nothing.
fn listing_text(reply: Option<Result<String, TmuxError>>) -> Result<String, TmuxError> {
    match reply {
        Some(Ok(t)) => Ok(t),
        Some(Err(TmuxError::Command(m)))
            if m.contains("no sessions") || m.contains("no current") =>
        {
            Ok(String::new())
        }
        Some(Err(e)) => Err(e),
        None => Err(TmuxError::ConnectionLost("no reply".into())),
    }
}

/// `pane_current_command` and `pane_current_path` of `panes` (each with its
/// `pane_pid`, if listed); `None` for a pane that is gone (or if tmux did
/// not answer).
///
/// These two fields are the costliest a listing has: tmux reads `/proc`
/// for them, ~25 µs a pane on its single thread. For a server on this
/// machine panescan reads them itself where it can be certain of tmux's
/// answer ([`procfs`](super::procfs)), and asks tmux for the rest.
pub(crate) fn commands_and_paths(
    shared: &Server,
    panes: &[(PaneId, Option<u32>)],
    deadline: Instant,
) -> Vec<Option<(String, String)>> {
    let mut found = if shared.connection().endpoint().host().is_none() {
        let _span = Span::new("details.procfs");
        let ask = || {
            let identity = TmuxCommand::new("display-message")
                .flag("-p")
                .format_arg("#{pid} #{start_time}");
            let text = shared
                .connection()
                .run_many(&[identity], deadline)
                .pop()?
                .ok()?;
            super::procfs::parse_identity(&text)
        };
        shared.processes().details(panes, ask)
    } else {
        vec![None; panes.len()]
    };
    let rest: Vec<usize> = found
        .iter()
        .enumerate()
        .filter_map(|(i, d)| d.is_none().then_some(i))
        .collect();
    if rest.is_empty() {
        return found;
    }
    let _span = Span::new("details.tmux");
    let ids: Vec<PaneId> = rest
        .iter()
        .filter_map(|&i| panes.get(i))
        .map(|p| p.0)
        .collect();
    for (i, answer) in rest.into_iter().zip(ask_tmux(shared, &ids, deadline)) {
        if let Some(slot) = found.get_mut(i) {
            *slot = answer;
        }
    }
    found
}

/// tmux's own answer for `panes`, in one round trip.
///
/// Asking pane by pane costs a command each (~80 µs here): for more than a
/// fifth of the server's panes, one listing of every pane is cheaper.
fn ask_tmux(shared: &Server, panes: &[PaneId], deadline: Instant) -> Vec<Option<(String, String)>> {
    if panes.is_empty() {
        return Vec::new();
    }
    let (sep, end) = separators();
    // tmux answers for a pane that is gone with empty fields rather than an
    // error: the pane id says whose answer it is.
    let format = format!("#{{pane_id}}{sep}#{{pane_current_command}}{sep}#{{pane_current_path}}");
    let parse = |record: &str| -> Option<(String, (String, String))> {
        let mut f = record.splitn(3, sep.as_str());
        let (id, command, path) = (f.next()?, f.next()?, f.next()?);
        Some((id.to_owned(), (command.to_owned(), path.to_owned())))
    };
    let server_panes = shared.listings().panes();
    if panes.len() * 5 >= server_panes {
        let listing = TmuxCommand::new("list-panes")
            .flag("-a")
            .option("-F", &format!("{format}{end}"));
        let text = shared
            .connection()
            .run_many(&[listing], deadline)
            .pop()
            .and_then(Result::ok);
        let found: HashMap<String, (String, String)> = text
            .as_deref()
            .unwrap_or("")
            .split(end.as_str())
            .filter_map(|r| parse(r.strip_prefix('\n').unwrap_or(r)))
            .collect();
        return panes
            .iter()
            .map(|p| found.get(&p.to_string()).cloned())
            .collect();
    }
    let commands: Vec<TmuxCommand> = panes
        .iter()
        .map(|p| {
            TmuxCommand::new("display-message")
                .flag("-p")
                .option("-t", &p.to_string())
                .arg(&format)
        })
        .collect();
    shared
        .connection()
        .run_many(&commands, deadline)
        .into_iter()
        .zip(panes)
        .map(|(reply, pane)| {
            let text = reply.ok()?;
            let (id, details) = parse(text.strip_suffix('\n').unwrap_or(&text))?;
            (id == pane.to_string()).then_some(details)
        })
        .collect()
}

fn flag(v: &str) -> bool {
    v == "1"
}
fn num<T: std::str::FromStr + Default>(v: &str) -> T {
    v.trim().parse().unwrap_or_default()
}

/// Parses `list-panes -a` output of every field.
#[cfg(test)]
pub(crate) fn parse(text: &str, sep: &str, end: &str) -> Inventory {
    parse_fields(FIELDS, text, sep, end)
}

/// Parses records of `fields`; a field not in the list reads as empty (its
/// default). A session gets its id and name here; its details come from
/// `list-sessions` in a full listing ([`full_listing`]).
fn parse_fields(fields: &[&str], text: &str, sep: &str, end: &str) -> Inventory {
    let (plain, text_fields) = layout(fields);
    // Where each field's value sits in a record: plain fields, then text.
    let at: HashMap<&str, usize> = plain
        .iter()
        .chain(&text_fields)
        .enumerate()
        .map(|(i, f)| (*f, i))
        .collect();
    let mut builder = Builder::default();
    for record in text.split(end) {
        let record = record.strip_prefix('\n').unwrap_or(record);
        let Some(values) = record_values(plain.len(), text_fields.len(), record, sep) else {
            continue;
        };
        builder.add(&Record {
            at: &at,
            values: &values,
        });
    }
    builder.inv
}

/// One record's values, by field name.
struct Record<'r> {
    at: &'r HashMap<&'r str, usize>,
    values: &'r [&'r str],
}

impl<'r> Record<'r> {
    /// The value of `name`; empty when the listing did not ask for it.
    fn get(&self, name: &str) -> &'r str {
        self.at
            .get(name)
            .and_then(|&i| self.values.get(i))
            .copied()
            .unwrap_or("")
    }
}

/// An inventory built one record (one pane placement) at a time: a
/// session, window or pane met again, through a link, gains a placement.
#[derive(Default)]
struct Builder {
    inv: Inventory,
    sessions: HashMap<SessionId, usize>,
    windows: HashMap<WindowId, usize>,
    panes: HashMap<PaneId, usize>,
}

impl Builder {
    /// Adds a record; one without valid ids is skipped.
    fn add(&mut self, r: &Record) {
        let (Ok(session_id), Ok(window_id), Ok(pane_id)) = (
            SessionId::parse(r.get("session_id")),
            WindowId::parse(r.get("window_id")),
            PaneId::parse(r.get("pane_id")),
        ) else {
            return;
        };
        let placement = PanePlacement {
            session_id,
            session_name: r.get("session_name").to_string(),
            window_id,
            window_index: num(r.get("window_index")),
            window_name: r.get("window_name").to_string(),
        };
        self.add_session(&placement);
        self.add_window(r, &placement);
        self.add_pane(r, pane_id, placement);
    }

    /// A session first met: its id and name (no pane listing carries its
    /// details: [`full_listing::SessionQuery::fill`] adds them).
    fn add_session(&mut self, at: &PanePlacement) {
        let std::collections::hash_map::Entry::Vacant(slot) = self.sessions.entry(at.session_id)
        else {
            return;
        };
        slot.insert(self.inv.sessions.len());
        self.inv.sessions.push(Session {
            session_id: at.session_id,
            session_name: at.session_name.clone(),
            session_windows: 0,
            session_attached: 0,
            session_created: 0,
            session_group: None,
            session_path: String::new(),
        });
    }

    fn add_window(&mut self, r: &Record, at: &PanePlacement) {
        let placement = WindowPlacement {
            session_id: at.session_id,
            session_name: at.session_name.clone(),
            window_index: at.window_index,
        };
        if let Some(&i) = self.windows.get(&at.window_id) {
            let w = &mut self.inv.windows[i];
            if !w.placements.contains(&placement) {
                w.placements.push(placement);
            }
            return;
        }
        self.windows.insert(at.window_id, self.inv.windows.len());
        self.inv.windows.push(Window {
            window_id: at.window_id,
            window_index: at.window_index,
            window_name: at.window_name.clone(),
            window_active: flag(r.get("window_active")),
            window_width: num(r.get("window_width")),
            window_height: num(r.get("window_height")),
            window_layout: r.get("window_layout").to_string(),
            window_panes: num(r.get("window_panes")),
            session_id: at.session_id,
            session_name: at.session_name.clone(),
            placements: vec![placement],
        });
    }

    fn add_pane(&mut self, r: &Record, pane_id: PaneId, placement: PanePlacement) {
        if let Some(&i) = self.panes.get(&pane_id) {
            let p = &mut self.inv.panes[i];
            if !p.placements.contains(&placement) {
                p.placements.push(placement);
            }
            return;
        }
        self.panes.insert(pane_id, self.inv.panes.len());
        self.inv.panes.push(pane_of(r, pane_id, placement));
    }
}

/// A pane first met in `placement` (its primary one).
fn pane_of(r: &Record, pane_id: PaneId, placement: PanePlacement) -> Pane {
    let dead = flag(r.get("pane_dead"));
    Pane {
        pane_id,
        pane_index: num(r.get("pane_index")),
        pane_width: num(r.get("pane_width")),
        pane_height: num(r.get("pane_height")),
        pane_left: num(r.get("pane_left")),
        pane_top: num(r.get("pane_top")),
        pane_right: num(r.get("pane_right")),
        pane_bottom: num(r.get("pane_bottom")),
        pane_at_top: flag(r.get("pane_at_top")),
        pane_at_bottom: flag(r.get("pane_at_bottom")),
        pane_at_left: flag(r.get("pane_at_left")),
        pane_at_right: flag(r.get("pane_at_right")),
        pane_tty: r.get("pane_tty").to_string(),
        pane_pid: r.get("pane_pid").trim().parse().ok(),
        pane_current_command: r.get("pane_current_command").to_string(),
        pane_current_path: r.get("pane_current_path").to_string(),
        pane_title: r.get("pane_title").to_string(),
        pane_active: flag(r.get("pane_active")),
        pane_dead: dead,
        pane_dead_status: if dead {
            r.get("pane_dead_status").trim().parse().ok()
        } else {
            None
        },
        pane_in_mode: flag(r.get("pane_in_mode")),
        pane_mode: r.get("pane_mode").to_string(),
        alternate_on: flag(r.get("alternate_on")),
        cursor_x: num(r.get("cursor_x")),
        cursor_y: num(r.get("cursor_y")),
        history_size: num(r.get("history_size")),
        history_limit: num(r.get("history_limit")),
        window_activity: num(r.get("window_activity")),
        window_id: placement.window_id,
        window_index: placement.window_index,
        window_name: placement.window_name.clone(),
        session_id: placement.session_id,
        session_name: placement.session_name.clone(),
        placements: vec![placement],
        is_caller: None,
    }
}

/// A listed pane `%id` of window `@window` in session `$0` (80x24, every
/// other field empty), for unit tests that need an inventory's pane.
#[cfg(test)]
pub(crate) fn pane_for_tests(id: u32, window: u32) -> Pane {
    use crate::tmux::PaneId;
    use crate::tmux::{PanePlacement, SessionId, WindowId};
    let placement = PanePlacement {
        session_id: SessionId::parse("$0").expect("an id"),
        session_name: "s".into(),
        window_id: WindowId::parse(&format!("@{window}")).expect("an id"),
        window_index: window,
        window_name: String::new(),
    };
    Pane {
        pane_id: PaneId::parse(&format!("%{id}")).expect("an id"),
        pane_index: 0,
        pane_width: 80,
        pane_height: 24,
        pane_left: 0,
        pane_top: 0,
        pane_right: 79,
        pane_bottom: 23,
        pane_at_top: true,
        pane_at_bottom: true,
        pane_at_left: true,
        pane_at_right: true,
        pane_tty: String::new(),
        pane_pid: None,
        pane_current_command: String::new(),
        pane_current_path: String::new(),
        pane_title: String::new(),
        pane_active: false,
        pane_dead: false,
        pane_dead_status: None,
        pane_in_mode: false,
        pane_mode: String::new(),
        alternate_on: false,
        cursor_x: 0,
        cursor_y: 0,
        history_size: 0,
        history_limit: 0,
        window_activity: 0,
        window_id: placement.window_id,
        window_index: window,
        window_name: String::new(),
        session_id: placement.session_id,
        session_name: placement.session_name.clone(),
        placements: vec![placement],
        is_caller: None,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn garbage_never_panics_and_linked_panes_fold() {
        let (sep, end) = ("<s>", "<e>");
        // A record as tmux would print `format(FIELDS, sep, end)`.
        let rec = |s: &str, sname: &str, w: &str, idx: &str, p: &str| {
            let value = |name: &str| match name {
                "session_id" => s.to_string(),
                "session_name" => sname.to_string(),
                "window_id" => w.to_string(),
                "window_index" => idx.to_string(),
                "window_name" => "name\twith\nnewline and spaces".to_string(),
                "pane_id" => p.to_string(),
                "pane_title" => "a title with spaces".to_string(),
                _ => String::new(),
            };
            let template = format(FIELDS, sep, end);
            FIELDS.iter().fold(template, |t, name| {
                t.replace(&format!("#{{{name}}}"), &value(name))
            }) + "\n"
        };
        let text = rec("$0", "a;b", "@1", "0", "%1")
            + &rec("$1", "z", "@1", "5", "%1")
            + &rec("$1", "z", "@2", "6", "%2")
            + "garbage<s><e>\n%end 1 2 3\n";
        let inv = parse(&text, sep, end);
        assert_eq!(inv.sessions.len(), 2);
        assert_eq!(inv.windows.len(), 2);
        assert_eq!(inv.panes.len(), 2);
        assert_eq!(inv.panes[0].placements.len(), 2);
        assert_eq!(inv.panes[0].placements[1].window_index, 5);
        assert_eq!(inv.panes[0].window_name, "name\twith\nnewline and spaces");
        assert_eq!(inv.panes[0].pane_title, "a title with spaces");
        let _ = parse("\u{0}\n<e><s>", sep, end);
    }

    /// The bytes each field set sends tmux: a listing costs tmux per byte
    /// and per field, so a change here is a change in what every search or
    /// tool pays.
    #[test]
    fn each_field_set_sends_its_own_format() {
        let sent = |fields: Fields| format(&fields.names(), "<s>", "<e>");
        assert_eq!(
            sent(Fields::Search),
            "#{session_id} #{window_id} #{window_index} #{pane_id} #{pane_index} \
             #{history_size}<s>#{session_name}<s>#{window_name}<e>"
        );
        assert_eq!(
            sent(Fields::SearchWithFingerprint),
            "#{session_id} #{window_id} #{window_index} #{pane_id} #{pane_index} \
             #{history_size} #{pane_width} #{pane_height} #{pane_pid} #{history_limit} \
             #{cursor_x} #{cursor_y} #{alternate_on} #{pane_dead} #{window_activity}\
             <s>#{session_name}<s>#{window_name}<e>"
        );
        assert_eq!(
            sent(Fields::SearchWithCursor),
            "#{session_id} #{window_id} #{window_index} #{pane_id} #{pane_index} \
             #{history_size} #{pane_width} #{pane_pid} #{history_limit} #{cursor_y}\
             <s>#{session_name}<s>#{window_name}<e>"
        );
        let with_cache = Fields::SearchWithFingerprint.names();
        assert!(CURSOR_FIELDS.iter().all(|f| with_cache.contains(f)));
        assert_eq!(
            sent(Fields::SearchFar),
            sent(Fields::SearchWithFingerprint).replace(
                "<e>",
                "<s>#{pane_current_command}<s>#{pane_current_path}<e>"
            )
        );
        let full = sent(Fields::Full);
        assert_eq!(full.matches("#{").count(), FIELDS.len());
        assert_eq!(full.matches("<s>").count(), TEXT_FIELDS.len());
        assert!(full.starts_with("#{session_id} #{session_windows} "));
        assert!(full.ends_with("<s>#{pane_mode}<e>"));
    }
}
