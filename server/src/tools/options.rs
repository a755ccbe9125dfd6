//! Options, environment, hooks, format variables and format expansion.
//!
//! Every name is validated before it reaches tmux; user text never becomes
//! a format except in display_message, whose formats pass
//! [`super::format_guard`] first: nothing that runs a command, nothing
//! whose cost to tmux is unbounded.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::context::{ServerArgs, ToolContext, ToolError};
use super::cut_to_bytes;
use super::format_guard::{self, LoopSizes};
use crate::tmux::{Target, TmuxCommand, TmuxError};
use crate::tools::registry::{Annotations, Tool};

/// Text a single option, variable or message may return.
const VALUE_BYTES: usize = 64 * 1024;
/// Names listed by show_environment / show_hooks.
const MAX_NAMES: usize = 500;

/// A target given as an id (`%N`, `@N`, `$N`) or a session name.
pub(crate) fn parse_target(text: &str) -> Result<Target, ToolError> {
    if text.starts_with(['%', '@', '$']) {
        Target::parse_id(text).map_err(ToolError::from)
    } else if text.is_empty() || text.len() > 256 || text.chars().any(char::is_control) {
        Err(ToolError::invalid(format!(
            "target {text:?} must be a pane (%N), window (@N) or session ($N) id, or a session name"
        )))
    } else {
        Ok(Target::SessionName(text.to_owned()))
    }
}

/// A tmux error for a missing target, with what exists.
pub(crate) fn target_error(ctx: &ToolContext, tmux: &crate::tmux::Tmux, e: TmuxError) -> ToolError {
    let msg = e.to_string();
    if msg.contains("can't find") {
        if let Ok(inv) = ctx.inventory(tmux) {
            return ToolError::not_found(format!(
                "{msg}; panes: {}; windows: {}; sessions: {}",
                super::bounded_list(inv.panes.iter().map(|p| p.pane_id.to_string())),
                super::bounded_list(inv.windows.iter().map(|w| w.window_id.to_string())),
                super::bounded_list(
                    inv.sessions
                        .iter()
                        .map(|s| format!("{} ({})", s.session_id, s.session_name))
                ),
            ));
        }
    }
    ToolError::from(e)
}

/// Fails unless the target exists. tmux's display-message quietly falls
/// back to no target when its target is missing, so tmux cannot be left to
/// say so.
pub(crate) fn ensure_target(
    ctx: &ToolContext,
    tmux: &crate::tmux::Tmux,
    target: &Target,
) -> Result<(), ToolError> {
    let inv = ctx.inventory(tmux)?;
    match target {
        Target::Pane(p) => super::find_pane(&inv, *p).map(|_| ()),
        Target::Window(w) => super::find_window(&inv, *w).map(|_| ()),
        Target::Session(s) => super::find_session(&inv, &s.to_string()).map(|_| ()),
        Target::SessionName(n) => super::find_session(&inv, n).map(|_| ()),
    }
}

fn valid_variable(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && name.len() <= 64
}

// ---------------------------------------------------------------- variables

#[derive(Debug, Deserialize, JsonSchema)]
// A wire type: its doc comments would be schema descriptions every client
// reads in tools/list; the tool's description and the field names say it.
#[allow(missing_docs)]
pub struct GetVariablesArgs {
    /// Format variable names, e.g. ["pane_current_command","session_name"].
    #[schemars(
        length(min = 1, max = 32),
        inner(regex(pattern = r"^[A-Za-z][A-Za-z0-9_]*$"))
    )]
    pub names: Vec<String>,
    /// Pane %N, window @N, session $N or session name. Default: tmux's current pane.
    #[serde(default)]
    pub target: Option<String>,
    #[serde(flatten)]
    pub server: ServerArgs,
}

#[derive(Debug, Serialize, JsonSchema)]
// A wire type: its doc comments would be schema descriptions every client
// reads in tools/list; the tool's description and the field names say it.
#[allow(missing_docs)]
pub struct VariablesResult {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// Each name's expansion (empty when tmux knows no such variable).
    pub values: BTreeMap<String, String>,
    /// Some value was cut to 65536 bytes.
    pub truncated: bool,
}

#[derive(Debug)]
/// `get_tmux_variables`: format variables of a target, by name.
pub struct GetTmuxVariables;

impl Tool for GetTmuxVariables {
    const NAME: &'static str = "get_tmux_variables";
    const TITLE: &'static str = "Read format variables";
    const DESCRIPTION: &'static str = "Values of 1-32 tmux format variables (pane_pid, window_zoomed_flag, client_width...) for a target, in one call. Use for a field the list/get tools do not return; for a whole format string use display_message.";
    type Args = GetVariablesArgs;
    type Output = VariablesResult;

    fn run(ctx: &ToolContext, args: Self::Args) -> Result<Self::Output, ToolError> {
        if args.names.is_empty() || args.names.len() > 32 {
            return Err(ToolError::invalid(format!(
                "names must hold 1 to 32 variable names (got {})",
                args.names.len()
            )));
        }
        if let Some(bad) = args.names.iter().find(|n| !valid_variable(n)) {
            return Err(ToolError::invalid(format!(
                "{bad:?} is not a variable name: use letters, digits and _ , starting with a letter (e.g. pane_current_command)"
            )));
        }
        let target = args.target.as_deref().map(parse_target).transpose()?;
        let tmux = ctx.tmux(&args.server)?;
        if let Some(t) = &target {
            ensure_target(ctx, &tmux, t)?;
        }
        let commands: Vec<TmuxCommand> = args
            .names
            .iter()
            .map(|n| {
                let mut c = TmuxCommand::new("display-message").flag("-p");
                if let Some(t) = &target {
                    c = c.target(t.clone());
                }
                // Safe: the name is validated to [A-Za-z][A-Za-z0-9_]*.
                c.format_arg(&format!("#{{{n}}}"))
            })
            .collect();
        ctx.check_cancelled()?;
        let replies = tmux.run_many(&commands, ctx.tmux_deadline());
        let mut values = BTreeMap::new();
        let mut truncated = false;
        for (name, reply) in args.names.iter().zip(replies) {
            let mut v = reply.map_err(|e| target_error(ctx, &tmux, e))?;
            if v.ends_with('\n') {
                v.pop();
            }
            truncated |= cut_to_bytes(&mut v, VALUE_BYTES);
            values.insert(name.clone(), v);
        }
        Ok(VariablesResult {
            target: args.target,
            values,
            truncated,
        })
    }

    fn text(out: &Self::Output) -> String {
        out.values
            .iter()
            .map(|(k, v)| format!("{k}={v}\n"))
            .collect()
    }
}

// ---------------------------------------------------------------- options

/// Where an option lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
// A wire type: its doc comments would be schema descriptions every client
// reads in tools/list; the tool's description and the field names say it.
#[allow(missing_docs)]
pub enum Scope {
    Server,
    Session,
    Window,
    Pane,
}

#[derive(Debug, Deserialize, JsonSchema)]
// A wire type: its doc comments would be schema descriptions every client
// reads in tools/list; the tool's description and the field names say it.
#[allow(missing_docs)]
pub struct ShowOptionArgs {
    /// Option name, e.g. history-limit, mode-keys, @my_option.
    pub name: String,
    /// server, session (default), window or pane.
    #[serde(default)]
    pub scope: Option<Scope>,
    /// Session/window/pane to read it for (id or session name). Default: the global value.
    #[serde(default)]
    pub target: Option<String>,
    #[serde(flatten)]
    pub server: ServerArgs,
}

#[derive(Debug, Serialize, JsonSchema)]
// A wire type: its doc comments would be schema descriptions every client
// reads in tools/list; the tool's description and the field names say it.
#[allow(missing_docs)]
pub struct ShowOptionResult {
    pub name: String,
    pub scope: Scope,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// The value in effect (own or inherited); absent when unset.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    /// The value comes from a parent (global) rather than the target itself.
    pub inherited: bool,
    /// The value was cut to 65536 bytes.
    pub truncated: bool,
}

pub(crate) fn valid_option_name(name: &str) -> bool {
    let core = name.strip_prefix('@').unwrap_or(name);
    // An array option may carry an index: status-format[1].
    let core = match core.split_once('[') {
        Some((base, rest)) => {
            if !(rest.ends_with(']')
                && rest.len() > 1
                && rest[..rest.len() - 1].bytes().all(|b| b.is_ascii_digit()))
            {
                return false;
            }
            base
        }
        None => core,
    };
    !core.is_empty()
        && core.len() <= 128
        && core
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

#[derive(Debug)]
/// `show_option`: server, session, window or pane options.
pub struct ShowOption;

impl Tool for ShowOption {
    const NAME: &'static str = "show_option";
    const TITLE: &'static str = "Read an option";
    const DESCRIPTION: &'static str = "The value of one tmux option in a scope (server, session, window, pane) for a target or globally, including an inherited value and whether it was inherited. Use to check settings such as history-limit or mode-keys.";
    type Args = ShowOptionArgs;
    type Output = ShowOptionResult;

    fn run(ctx: &ToolContext, args: Self::Args) -> Result<Self::Output, ToolError> {
        if !valid_option_name(&args.name) {
            return Err(ToolError::invalid(format!(
                "{:?} is not an option name (letters, digits, - and _, optional leading @ and [index])",
                args.name
            )));
        }
        let scope = args.scope.unwrap_or(Scope::Session);
        let target = args.target.as_deref().map(parse_target).transpose()?;
        if scope == Scope::Pane && target.is_none() {
            return Err(ToolError::invalid(
                "scope pane needs a target pane (%N): pane options have no global value",
            ));
        }
        let tmux = ctx.tmux(&args.server)?;
        if let Some(t) = &target {
            ensure_target(ctx, &tmux, t)?;
        }
        let build = |inherit: bool| {
            let mut c = TmuxCommand::new("show-options").flag("-v");
            c = match scope {
                Scope::Server => c.flag("-s"),
                Scope::Session => c,
                Scope::Window => c.flag("-w"),
                Scope::Pane => c.flag("-p"),
            };
            if inherit {
                c = c.flag("-A");
            } else {
                c = c.flag("-q");
            }
            match (&target, scope) {
                (_, Scope::Server) => {}
                (Some(t), _) => c = c.target(t.clone()),
                (None, _) => c = c.flag("-g"),
            }
            c.arg(&args.name)
        };
        ctx.check_cancelled()?;
        let mut replies = tmux
            .run_many(&[build(false), build(true)], ctx.tmux_deadline())
            .into_iter();
        let own = replies
            .next()
            .unwrap_or_else(|| Err(TmuxError::ConnectionLost("no reply".into())))
            .map_err(|e| target_error(ctx, &tmux, e))?;
        let effective = match replies
            .next()
            .unwrap_or_else(|| Err(TmuxError::ConnectionLost("no reply".into())))
        {
            // A user option (@name) nobody set is simply unset; tmux calls
            // it invalid.
            Err(TmuxError::Command(m))
                if args.name.starts_with('@') && m.contains("invalid option") =>
            {
                String::new()
            }
            other => other.map_err(|e| target_error(ctx, &tmux, e))?,
        };
        let clean = |mut s: String| {
            while s.ends_with('\n') {
                s.pop();
            }
            let cut = cut_to_bytes(&mut s, VALUE_BYTES);
            (s, cut)
        };
        let (own, _) = clean(own);
        let (effective, truncated) = clean(effective);
        let value = if !effective.is_empty() {
            Some(effective)
        } else if !own.is_empty() {
            Some(own.clone())
        } else {
            None
        };
        Ok(ShowOptionResult {
            name: args.name,
            scope,
            target: args.target,
            inherited: own.is_empty() && value.is_some() && target.is_some(),
            value,
            truncated,
        })
    }

    fn text(out: &Self::Output) -> String {
        format!(
            "{} = {}{}",
            out.name,
            out.value.as_deref().unwrap_or("(unset)"),
            if out.inherited { " (inherited)" } else { "" }
        )
    }
}

// ---------------------------------------------------------------- environment

#[derive(Debug, Deserialize, JsonSchema)]
// A wire type: its doc comments would be schema descriptions every client
// reads in tools/list; the tool's description and the field names say it.
#[allow(missing_docs)]
pub struct ShowEnvironmentArgs {
    /// Session id ($N) or name. Default: the global environment.
    #[serde(default)]
    pub session: Option<String>,
    /// One variable to read. Without it only names are listed: environments hold secrets.
    #[serde(default)]
    pub name: Option<String>,
    #[serde(flatten)]
    pub server: ServerArgs,
}

#[derive(Debug, Serialize, JsonSchema)]
// A wire type: its doc comments would be schema descriptions every client
// reads in tools/list; the tool's description and the field names say it.
#[allow(missing_docs)]
pub struct EnvironmentResult {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// Variable names (values withheld), when no name was asked for.
    pub names: Vec<String>,
    /// Names marked for removal from new processes (-NAME).
    pub removed: Vec<String>,
    pub truncated: bool,
    /// The variable asked for, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Its value; absent when unset or removed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
}

#[derive(Debug)]
/// `show_environment`: global or session environment, values of secret-looking names hidden.
pub struct ShowEnvironment;

impl Tool for ShowEnvironment {
    const NAME: &'static str = "show_environment";
    const TITLE: &'static str = "Read tmux environment";
    const DESCRIPTION: &'static str = "tmux's global or per-session environment (what new panes inherit). Lists names only unless one name is asked for, since environments hold secrets. Use to check e.g. DISPLAY or SSH_AUTH_SOCK in a session.";
    type Args = ShowEnvironmentArgs;
    type Output = EnvironmentResult;

    fn run(ctx: &ToolContext, args: Self::Args) -> Result<Self::Output, ToolError> {
        if let Some(n) = &args.name {
            let ok = n
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                && n.len() <= 256;
            if !ok {
                return Err(ToolError::invalid(format!(
                    "{n:?} is not an environment variable name"
                )));
            }
        }
        let tmux = ctx.tmux(&args.server)?;
        let mut c = TmuxCommand::new("show-environment");
        match &args.session {
            Some(s) => {
                let inv = ctx.inventory(&tmux)?;
                let id = super::find_session(&inv, s)?.session_id;
                c = c.target(id);
            }
            None => c = c.flag("-g"),
        }
        if let Some(n) = &args.name {
            c = c.arg(n);
        }
        ctx.check_cancelled()?;
        let out = match tmux.run(&c, ctx.tmux_deadline()) {
            Ok(out) => out,
            Err(TmuxError::Command(m)) if m.contains("unknown variable") => String::new(),
            Err(e) => return Err(ToolError::from(e)),
        };
        let mut result = EnvironmentResult {
            session: args.session,
            names: Vec::new(),
            removed: Vec::new(),
            truncated: false,
            name: args.name.clone(),
            value: None,
        };
        for line in out.lines() {
            if let Some(removed) = line.strip_prefix('-') {
                if args.name.is_none() {
                    result.removed.push(removed.to_owned());
                }
            } else if let Some((k, v)) = line.split_once('=') {
                if args.name.as_deref() == Some(k) {
                    let mut v = v.to_owned();
                    cut_to_bytes(&mut v, VALUE_BYTES);
                    result.value = Some(v);
                } else if args.name.is_none() {
                    result.names.push(k.to_owned());
                }
            }
        }
        result.truncated = result.names.len() + result.removed.len() > MAX_NAMES;
        result.names.truncate(MAX_NAMES);
        result
            .removed
            .truncate(MAX_NAMES - result.names.len().min(MAX_NAMES));
        Ok(result)
    }

    fn text(out: &Self::Output) -> String {
        match &out.name {
            Some(n) => format!("{n}={}", out.value.as_deref().unwrap_or("(unset)")),
            None => format!(
                "{} variables (values withheld; ask for one by name): {}{}",
                out.names.len(),
                out.names.join(" "),
                if out.truncated { " ..." } else { "" }
            ),
        }
    }
}

// ---------------------------------------------------------------- hooks

#[derive(Debug, Deserialize, JsonSchema)]
// A wire type: its doc comments would be schema descriptions every client
// reads in tools/list; the tool's description and the field names say it.
#[allow(missing_docs)]
pub struct ShowHooksArgs {
    /// One hook, e.g. after-new-window. Default: every hook that is set.
    #[serde(default)]
    pub name: Option<String>,
    /// session (default), window or pane; server is treated as global.
    #[serde(default)]
    pub scope: Option<Scope>,
    /// Session/window/pane (id or session name). Default: global hooks.
    #[serde(default)]
    pub target: Option<String>,
    #[serde(flatten)]
    pub server: ServerArgs,
}

/// One command of a hook.
#[derive(Debug, Clone, Serialize, JsonSchema)]
// A wire type: its doc comments would be schema descriptions every client
// reads in tools/list; the tool's description and the field names say it.
#[allow(missing_docs)]
pub struct Hook {
    pub name: String,
    pub index: u32,
    pub command: String,
}

#[derive(Debug, Serialize, JsonSchema)]
// A wire type: its doc comments would be schema descriptions every client
// reads in tools/list; the tool's description and the field names say it.
#[allow(missing_docs)]
pub struct HooksResult {
    pub hooks: Vec<Hook>,
    pub truncated: bool,
}

#[derive(Debug)]
/// `show_hooks`: the hooks set on the server or a session.
pub struct ShowHooks;

impl Tool for ShowHooks {
    const NAME: &'static str = "show_hooks";
    const TITLE: &'static str = "Read hooks";
    const DESCRIPTION: &'static str = "The tmux hooks that are set (commands run on events such as after-new-window or pane-died), globally or for a target. Use when tmux does something unexpected on an event.";
    type Args = ShowHooksArgs;
    type Output = HooksResult;

    fn run(ctx: &ToolContext, args: Self::Args) -> Result<Self::Output, ToolError> {
        if let Some(n) = &args.name {
            if !valid_option_name(n) {
                return Err(ToolError::invalid(format!("{n:?} is not a hook name")));
            }
        }
        let target = args.target.as_deref().map(parse_target).transpose()?;
        let tmux = ctx.tmux(&args.server)?;
        if let Some(t) = &target {
            ensure_target(ctx, &tmux, t)?;
        }
        let mut c = TmuxCommand::new("show-hooks");
        c = match args.scope {
            Some(Scope::Window) => c.flag("-w"),
            Some(Scope::Pane) => c.flag("-p"),
            _ => c,
        };
        c = match &target {
            Some(t) => c.target(t.clone()),
            None => c.flag("-g"),
        };
        ctx.check_cancelled()?;
        let out = tmux
            .run(&c, ctx.tmux_deadline())
            .map_err(|e| target_error(ctx, &tmux, e))?;
        let mut hooks = Vec::new();
        let mut truncated = false;
        for line in out.lines() {
            // Set hooks print as `name[i] command`; unset ones as a bare name.
            let Some((head, command)) = line.split_once(' ') else {
                continue;
            };
            let (name, index) = match head.split_once('[') {
                Some((n, i)) => (n, i.trim_end_matches(']').parse().unwrap_or(0)),
                None => (head, 0),
            };
            if args.name.as_deref().is_some_and(|want| want != name) {
                continue;
            }
            if hooks.len() >= MAX_NAMES {
                truncated = true;
                break;
            }
            let mut command = command.to_owned();
            cut_to_bytes(&mut command, 4096);
            hooks.push(Hook {
                name: name.to_owned(),
                index,
                command,
            });
        }
        Ok(HooksResult { hooks, truncated })
    }

    fn text(out: &Self::Output) -> String {
        if out.hooks.is_empty() {
            return "no hooks set".into();
        }
        out.hooks
            .iter()
            .map(|h| format!("{}[{}] {}\n", h.name, h.index, h.command))
            .collect()
    }
}

// ---------------------------------------------------------------- display

#[derive(Debug, Deserialize, JsonSchema)]
// A wire type: its doc comments would be schema descriptions every client
// reads in tools/list; the tool's description and the field names say it.
#[allow(missing_docs)]
pub struct DisplayMessageArgs {
    /// A tmux format, e.g. "#{session_name}:#{window_index} #{pane_current_command}". Refused, with the construct and its byte offset: #(), the E:/T: modifiers, a loop inside a loop, widths over 1000, and other constructs whose cost tmux could not bound.
    pub format: String,
    /// Pane %N, window @N, session $N or session name. Default: tmux's current pane.
    #[serde(default)]
    pub target: Option<String>,
    #[serde(flatten)]
    pub server: ServerArgs,
}

#[derive(Debug, Serialize, JsonSchema)]
// A wire type: its doc comments would be schema descriptions every client
// reads in tools/list; the tool's description and the field names say it.
#[allow(missing_docs)]
pub struct DisplayMessageResult {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    pub value: String,
    pub truncated: bool,
}

#[derive(Debug)]
/// `display_message`: a caller's format expanded against a target, after the format guard judged it.
pub struct DisplayMessage;

impl Tool for DisplayMessage {
    const NAME: &'static str = "display_message";
    const TITLE: &'static str = "Expand a tmux format";
    const DESCRIPTION: &'static str = "Expand a tmux format string (#{...} variables, conditionals, comparisons, one level of loops) for a target, as `tmux display-message -p` does; formats that run commands or cost tmux unbounded work are refused. Use to compose several fields in one string; for plain variables get_tmux_variables is simpler.";
    const ANNOTATIONS: Annotations = Annotations::READ_VOLATILE;
    type Args = DisplayMessageArgs;
    type Output = DisplayMessageResult;

    fn run(ctx: &ToolContext, args: Self::Args) -> Result<Self::Output, ToolError> {
        // Everything but the cost of loops is judged before any tmux is
        // reached; loops are then judged on the server's real sizes.
        let guard = |sizes: &LoopSizes| {
            format_guard::check(&args.format, sizes)
                .map_err(|r| ToolError::refused(format!("display_message refuses {r}")))
        };
        guard(&LoopSizes::default())?;
        let target = args.target.as_deref().map(parse_target).transpose()?;
        let tmux = ctx.tmux(&args.server)?;
        if let Some(t) = &target {
            ensure_target(ctx, &tmux, t)?;
        }
        if format_guard::visits_sets(&args.format) {
            guard(&LoopSizes::of(&ctx.inventory(&tmux)?))?;
        }
        let mut c = TmuxCommand::new("display-message").flag("-p");
        if let Some(t) = &target {
            c = c.target(t.clone());
        }
        // Deliberately expanded by tmux: the guard accepted the format. `--`:
        // a format starting with `-` is not a flag.
        c = c.arg("--").arg(&args.format);
        ctx.check_cancelled()?;
        let mut value = tmux
            .run(&c, ctx.tmux_deadline())
            .map_err(|e| target_error(ctx, &tmux, e))?;
        if value.ends_with('\n') {
            value.pop();
        }
        let truncated = cut_to_bytes(&mut value, VALUE_BYTES);
        Ok(DisplayMessageResult {
            target: args.target,
            value,
            truncated,
        })
    }

    fn text(out: &Self::Output) -> String {
        out.value.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert!(valid_variable("pane_id"));
        assert!(!valid_variable("1x"));
        assert!(!valid_variable("a}b"));
        assert!(valid_option_name("status-format[1]"));
        assert!(valid_option_name("@my_opt"));
        assert!(!valid_option_name("a b"));
        assert!(!valid_option_name("x[]"));
    }
}
