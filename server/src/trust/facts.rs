//! What one call targets and types, found at call time: the pane, window
//! or session its arguments name, resolved to session names and the
//! pane's current path through one listing of the call's server; the
//! strokes it would type; the pane's input line as the screen shows it.
//!
//! What must hold: a target is resolved on the server the call names
//! (its `socket_name`, `socket_path`, `host`), so a rule on session names
//! cannot be stepped around by naming the same pane another way; what
//! cannot be read is left empty, never guessed.

use serde_json::Value;

use super::typed::{self, Stroke};
use crate::tmux::inventory::Inventory;
use crate::tmux::TmuxCommand;
use crate::tools::context::{ServerArgs, ToolContext};

/// Rows above the cursor read to find the start of its (wrapped) line.
const SCREEN_ROWS_BACK: u32 = 20;

/// The call's target, resolved.
#[derive(Debug, Default, Clone)]
pub struct Place {
    /// The pane the call types into or acts on (`%N`).
    pub pane: Option<String>,
    /// The window (`@N`).
    pub window: Option<String>,
    /// The session as the call named it (`$N` or a name).
    pub session: Option<String>,
    /// The names of every session the target is in.
    pub sessions: Vec<String>,
    /// The pane's current path.
    pub cwd: Option<String>,
    /// The pane's cursor row (for reading its input line).
    cursor_y: Option<u32>,
    /// Which server: the key pending text is kept under.
    pub server: String,
}

impl Place {
    /// The key a pane's pending text is kept under.
    pub fn pane_key(&self) -> Option<String> {
        self.pane.as_ref().map(|p| format!("{}|{p}", self.server))
    }
}

/// Whether `tool` types into its pane's input line (what it types then
/// follows what the line holds; the others start a new process).
pub fn types_into_line(tool: &str) -> bool {
    matches!(tool, "send_keys" | "paste_text" | "run_command")
}

/// The strokes `tool` would type with `args` (`None`: it types nothing
/// a shell reads as a command).
pub fn strokes(tool: &str, args: &Value) -> Option<Vec<Stroke>> {
    let s = |k: &str| args.get(k).and_then(Value::as_str);
    match tool {
        "send_keys" => {
            let mut out = typed::strokes_of_text(s("text").unwrap_or_default());
            if let Some(keys) = args.get("keys").and_then(Value::as_array) {
                out.extend(
                    keys.iter()
                        .filter_map(Value::as_str)
                        .map(typed::stroke_of_key),
                );
            }
            if args.get("enter").and_then(Value::as_bool) == Some(true) {
                out.push(Stroke::Submit);
            }
            Some(out)
        }
        "paste_text" => Some(typed::strokes_of_text(s("text").unwrap_or_default())),
        "run_command" => {
            // Typed after whatever the line already holds.
            let mut out = typed::strokes_of_text(s("command").unwrap_or_default());
            out.push(Stroke::Submit);
            Some(out)
        }
        // A command a new pane runs instead of its shell.
        "create_session" | "create_window" | "split_window" | "respawn_pane" => {
            let command = s("command")?;
            let mut out = vec![Stroke::Clear];
            out.extend(typed::strokes_of_text(command));
            out.push(Stroke::Submit);
            Some(out)
        }
        _ => None,
    }
}

/// Resolves what `args` name on the server they name. `Err`: the server
/// could not be reached (the tool would fail the same way).
pub fn place(ctx: &ToolContext, args: &Value) -> Result<Place, String> {
    let server: ServerArgs = serde_json::from_value(args.clone()).unwrap_or_default();
    let tmux = ctx.tmux(&server).map_err(|e| e.message)?;
    let mut place = Place {
        server: format!("{:?}", tmux.spec()),
        ..Place::default()
    };
    let s = |k: &str| args.get(k).and_then(Value::as_str).map(str::to_owned);
    place.pane = s("pane_id");
    place.window = s("window_id");
    place.session = s("session_id").or_else(|| s("session"));
    let target = s("target");
    if place.pane.is_none() && place.window.is_none() && place.session.is_none() {
        // set_option/set_environment: an id or a session name.
        match target.as_deref() {
            Some(t) if t.starts_with('%') => place.pane = target,
            Some(t) if t.starts_with('@') => place.window = target,
            Some(_) => place.session = target,
            None => {}
        }
    }
    if place.pane.is_none() && place.window.is_none() && place.session.is_none() {
        return Ok(place);
    }
    let inv = ctx.inventory(&tmux).map_err(|e| e.message)?;
    resolve(&inv, &mut place);
    // swap_pane's other pane counts too: both are touched.
    if let Some(other) = s("target_pane_id") {
        let mut second = Place {
            pane: Some(other),
            ..Place::default()
        };
        resolve(&inv, &mut second);
        place.sessions.extend(second.sessions);
    }
    place.sessions.sort();
    place.sessions.dedup();
    Ok(place)
}

fn resolve(inv: &Inventory, place: &mut Place) {
    if let Some(pane) = place.pane.as_deref() {
        if let Some(p) = inv.panes.iter().find(|p| p.pane_id.to_string() == pane) {
            place.sessions = p
                .placements
                .iter()
                .map(|x| x.session_name.clone())
                .collect();
            place.cwd = Some(p.pane_current_path.clone());
            place.window = Some(p.window_id.to_string());
            place.cursor_y = Some(p.cursor_y);
        }
    } else if let Some(window) = place.window.as_deref() {
        if let Some(w) = inv
            .windows
            .iter()
            .find(|w| w.window_id.to_string() == window)
        {
            place.sessions = w
                .placements
                .iter()
                .map(|x| x.session_name.clone())
                .collect();
        }
    } else if let Some(session) = place.session.as_deref() {
        if let Some(s) = inv
            .sessions
            .iter()
            .find(|s| s.session_id.to_string() == session || s.session_name == session)
        {
            place.sessions = vec![s.session_name.clone()];
            place.cwd = Some(s.session_path.clone());
        }
    }
}

/// The pane's input line as its screen shows it now (the cursor's line,
/// wrapped rows joined, trailing blanks cut), or `None` where it cannot be
/// read.
pub fn screen_line(ctx: &ToolContext, args: &Value, place: &Place) -> Option<String> {
    let (pane, cy) = (place.pane.as_deref()?, place.cursor_y?);
    let server: ServerArgs = serde_json::from_value(args.clone()).unwrap_or_default();
    let tmux = ctx.tmux(&server).ok()?;
    let start = cy.saturating_sub(SCREEN_ROWS_BACK);
    let c = TmuxCommand::new("capture-pane")
        .flag("-p")
        .flag("-J")
        .option("-t", pane)
        .option("-S", &start.to_string())
        .option("-E", &cy.to_string());
    let text = tmux.run(&c, ctx.tmux_deadline()).ok()?;
    Some(
        text.lines()
            .last()
            .unwrap_or_default()
            .trim_end()
            .to_owned(),
    )
}
