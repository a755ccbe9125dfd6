//! set_option and set_environment (mutating tier): change a setting,
//! within [`super::option_rule`] for options; values always literal.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::context::{ServerArgs, ToolContext, ToolError};
use super::format_guard::{self, LoopSizes};
use super::option_rule;
use super::options::{ensure_target, parse_target, target_error, Scope};
use crate::config::Tier;
use crate::tmux::{Target, TmuxCommand};
use crate::tools::registry::{Annotations, Tool};

/// Longest environment value set_environment stores.
const MAX_ENV_VALUE_BYTES: usize = 16 * 1024;
/// Longest environment variable name.
const MAX_ENV_NAME_BYTES: usize = 256;

#[derive(Debug, Deserialize, JsonSchema)]
// A wire type: its doc comments would be schema descriptions every client
// reads in tools/list; the tool's description and the field names say it.
#[allow(missing_docs)]
pub struct SetOptionArgs {
    /// Option name, e.g. mouse, status-left, @my_option.
    pub name: String,
    /// The value, taken literally. Omit with unset.
    #[serde(default)]
    pub value: Option<String>,
    /// server, session (default), window or pane.
    #[serde(default)]
    pub scope: Option<Scope>,
    /// Session/window/pane id or session name. Without it: the global value.
    #[serde(default)]
    pub target: Option<String>,
    /// Set the global value (the default without target).
    #[serde(default)]
    pub global: bool,
    /// Remove the option (back to the inherited value).
    #[serde(default)]
    pub unset: bool,
    #[serde(flatten)]
    pub server: ServerArgs,
}

#[derive(Debug, Serialize, JsonSchema)]
// A wire type: its doc comments would be schema descriptions every client
// reads in tools/list; the tool's description and the field names say it.
#[allow(missing_docs)]
pub struct SetOptionResult {
    pub name: String,
    pub scope: Scope,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    pub global: bool,
    /// The value stored; absent when unset.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
}

/// The checked value: `None` for unset.
fn checked_value(args: &SetOptionArgs) -> Result<Option<&str>, ToolError> {
    match (&args.value, args.unset) {
        (Some(_), true) => Err(ToolError::invalid("give either value or unset, not both")),
        (None, false) => Err(ToolError::invalid("give a value, or unset: true")),
        (None, true) => Ok(None),
        (Some(v), false) => {
            if let Some(why) = option_rule::refuse_value(v, &LoopSizes::default()) {
                return Err(ToolError::refused(why));
            }
            Ok(Some(v))
        }
    }
}

/// `set-option` with the scope's flag, `-g` or the target, `-u`.
fn set_option_command(
    scope: Scope,
    target: Option<&Target>,
    global: bool,
    name: &str,
    value: Option<&str>,
) -> TmuxCommand {
    let mut c = TmuxCommand::new("set-option");
    c = match scope {
        Scope::Server => c.flag("-s"),
        Scope::Session => c,
        Scope::Window => c.flag("-w"),
        Scope::Pane => c.flag("-p"),
    };
    match (target, scope) {
        (_, Scope::Server) => {}
        (Some(t), _) if !global => c = c.target(t.clone()),
        (Some(t), _) => c = c.flag("-g").target(t.clone()),
        (None, _) => c = c.flag("-g"),
    }
    if value.is_none() {
        c = c.flag("-u");
    }
    // `--`: a value starting with `-` is not a flag. No `-F`: the value is
    // stored as written.
    c = c.arg("--").arg(name);
    match value {
        Some(v) => c.arg(v),
        None => c,
    }
}

/// Options that end sessions, panes or the server (or erase buffers) are
/// set only by a server of the destructive tier.
fn check_tier(ctx: &ToolContext, name: &str, value: Option<&str>) -> Result<(), ToolError> {
    let (needed, why) = option_rule::tier_needed(name, value);
    if needed == Tier::Destructive && ctx.config.tier != Tier::Destructive {
        let what = match value {
            Some(v) => format!("{name} {v:?}"),
            None => format!("unsetting {name}"),
        };
        return Err(ToolError::refused(format!(
            "set_option refuses {what} in the {} tier: {}; it belongs to the destructive tier (`panescan serve --tier destructive`)",
            ctx.config.tier,
            why.unwrap_or("it can end sessions or the server")
        )));
    }
    Ok(())
}

/// An option that ends its session or the server is not set where it
/// would end panescan's own: the server panescan runs in (server scope, or
/// a global value its session inherits), or a target in its session.
fn refuse_own_session(
    ctx: &ToolContext,
    tmux: &crate::tmux::Tmux,
    scope: Scope,
    target: Option<&Target>,
    global: bool,
    name: &str,
) -> Result<(), ToolError> {
    if !tmux.runs_inside(ctx.tmux_deadline()) {
        return Ok(());
    }
    let refused = |what: &str| {
        Err(ToolError::refused(format!(
            "refused: {name} on {what} would end the session or server panescan runs in; set it on another session"
        )))
    };
    if scope == Scope::Server || global {
        return refused("this server (panescan runs inside it)");
    }
    let inv = ctx.inventory(tmux)?;
    let own_sessions: Vec<_> = inv
        .panes
        .iter()
        .filter(|p| p.is_caller == Some(true))
        .flat_map(|p| p.placements.iter().map(|pl| pl.session_id))
        .collect();
    let hit = inv.panes.iter().any(|p| {
        p.placements.iter().any(|pl| {
            own_sessions.contains(&pl.session_id)
                && match target {
                    Some(Target::Session(s)) => pl.session_id == *s,
                    Some(Target::SessionName(n)) => &pl.session_name == n,
                    Some(Target::Window(w)) => pl.window_id == *w,
                    Some(Target::Pane(id)) => p.pane_id == *id,
                    None => true,
                }
        })
    });
    if hit {
        return refused("the session panescan runs in");
    }
    Ok(())
}

#[derive(Debug)]
/// `set_option` (mutating tier): sets or unsets one option, never one that runs commands.
pub struct SetOption;

impl Tool for SetOption {
    const NAME: &'static str = "set_option";
    const TITLE: &'static str = "Set an option";
    const DESCRIPTION: &'static str = "Set or unset one tmux option (server, session, window or pane scope; a target or global), value taken literally. Refused: hooks, options that are commands (default-command, command-alias...), values holding #( or control characters, formats that expand again (E:, T:). Options that end sessions or the server (destroy-unattached, exit-*, remain-on-exit off) or erase buffers need the destructive tier. Check with show_option.";
    const TIER: Tier = Tier::Mutating;
    const ANNOTATIONS: Annotations = Annotations::MUTATE_IDEMPOTENT;
    type Args = SetOptionArgs;
    type Output = SetOptionResult;

    fn run(ctx: &ToolContext, args: Self::Args) -> Result<Self::Output, ToolError> {
        if let Some(why) = option_rule::refuse_name(&args.name) {
            return Err(ToolError::refused(why));
        }
        let value = checked_value(&args)?.map(str::to_owned);
        let value = value.as_deref();
        check_tier(ctx, &args.name, value)?;
        let scope = args.scope.unwrap_or(Scope::Session);
        let target = args.target.as_deref().map(parse_target).transpose()?;
        if scope == Scope::Pane && target.is_none() {
            return Err(ToolError::invalid(
                "scope pane needs a target pane (%N): pane options have no global value",
            ));
        }
        if scope == Scope::Server && target.is_some() {
            return Err(ToolError::invalid(
                "scope server takes no target: server options have one value",
            ));
        }
        let tmux = ctx.tmux(&args.server)?;
        if let Some(t) = &target {
            ensure_target(ctx, &tmux, t)?;
        }
        if let Some(v) = value.filter(|v| format_guard::visits_sets(v)) {
            // A loop's cost is judged on this server's real sizes.
            let sizes = LoopSizes::of(&ctx.inventory(&tmux)?);
            if let Some(why) = option_rule::refuse_value(v, &sizes) {
                return Err(ToolError::refused(why));
            }
        }
        let global = args.global || target.is_none();
        if option_rule::ends_its_target(&args.name, value) {
            refuse_own_session(ctx, &tmux, scope, target.as_ref(), global, &args.name)?;
        }
        let c = set_option_command(scope, target.as_ref(), global, &args.name, value);
        ctx.check_cancelled()?;
        tmux.run(&c, ctx.tmux_deadline())
            .map_err(|e| target_error(ctx, &tmux, e))?;
        Ok(SetOptionResult {
            name: args.name,
            scope,
            target: args.target,
            global,
            value: value.map(str::to_owned),
        })
    }
}

// ---------------------------------------------------------------- environment

#[derive(Debug, Deserialize, JsonSchema)]
// A wire type: its doc comments would be schema descriptions every client
// reads in tools/list; the tool's description and the field names say it.
#[allow(missing_docs)]
pub struct SetEnvironmentArgs {
    /// Variable name: [A-Za-z_][A-Za-z0-9_]*.
    // A schema description, sent as written: rustdoc must not read a link.
    #[allow(rustdoc::broken_intra_doc_links)]
    pub name: String,
    /// The value, taken literally. Omit with unset.
    #[serde(default)]
    pub value: Option<String>,
    /// Session id ($N) or name. Default: the global environment.
    #[serde(default)]
    pub session: Option<String>,
    /// Remove the variable.
    #[serde(default)]
    pub unset: bool,
    #[serde(flatten)]
    pub server: ServerArgs,
}

#[derive(Debug, Serialize, JsonSchema)]
// A wire type: its doc comments would be schema descriptions every client
// reads in tools/list; the tool's description and the field names say it.
#[allow(missing_docs)]
pub struct SetEnvironmentResult {
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// Bytes stored; absent when unset.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value_bytes: Option<usize>,
}

fn valid_env_name(name: &str) -> bool {
    let mut bytes = name.bytes();
    bytes
        .next()
        .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_')
        && name.len() <= MAX_ENV_NAME_BYTES
}

fn checked_env_value(args: &SetEnvironmentArgs) -> Result<Option<&str>, ToolError> {
    match (&args.value, args.unset) {
        (Some(_), true) => Err(ToolError::invalid("give either value or unset, not both")),
        (None, false) => Err(ToolError::invalid("give a value, or unset: true")),
        (None, true) => Ok(None),
        (Some(v), false) if v.contains('\0') => Err(ToolError::invalid(
            "value contains a NUL character, which an environment cannot hold; remove it",
        )),
        (Some(v), false) if v.len() > MAX_ENV_VALUE_BYTES => Err(ToolError::invalid(format!(
            "value is {} bytes; at most {MAX_ENV_VALUE_BYTES}",
            v.len()
        ))),
        (Some(v), false) => Ok(Some(v)),
    }
}

#[derive(Debug)]
/// `set_environment` (mutating tier): sets or unsets one variable of the global or a session environment.
pub struct SetEnvironment;

impl Tool for SetEnvironment {
    const NAME: &'static str = "set_environment";
    const TITLE: &'static str = "Set an environment variable";
    const DESCRIPTION: &'static str = "Set or unset one variable in a session's environment or the global one (value taken literally); processes started afterwards in new panes inherit it. Check with show_environment.";
    const TIER: Tier = Tier::Mutating;
    const ANNOTATIONS: Annotations = Annotations::MUTATE_IDEMPOTENT;
    type Args = SetEnvironmentArgs;
    type Output = SetEnvironmentResult;

    fn run(ctx: &ToolContext, args: Self::Args) -> Result<Self::Output, ToolError> {
        if !valid_env_name(&args.name) {
            return Err(ToolError::invalid(format!(
                "{:?} is not a variable name: letters, digits and _, not starting with a digit, at most {MAX_ENV_NAME_BYTES} bytes",
                args.name
            )));
        }
        let value = checked_env_value(&args)?.map(str::to_owned);
        let value = value.as_deref();
        let target = match args.session.as_deref() {
            Some(s) if s.starts_with(['%', '@']) => {
                return Err(ToolError::invalid(format!(
                    "session {s:?} must be a session id ($N) or name"
                )))
            }
            Some(s) => Some(parse_target(s)?),
            None => None,
        };
        let tmux = ctx.tmux(&args.server)?;
        if let Some(t) = &target {
            ensure_target(ctx, &tmux, t)?;
        }
        let mut c = TmuxCommand::new("set-environment");
        c = match &target {
            Some(t) => c.target(t.clone()),
            None => c.flag("-g"),
        };
        if value.is_none() {
            c = c.flag("-u");
        }
        // No `-F`: the value is stored as written.
        c = c.arg("--").arg(&args.name);
        if let Some(v) = value {
            c = c.arg(v);
        }
        ctx.check_cancelled()?;
        tmux.run(&c, ctx.tmux_deadline())
            .map_err(|e| target_error(ctx, &tmux, e))?;
        Ok(SetEnvironmentResult {
            name: args.name,
            session: args.session,
            value_bytes: value.map(str::len),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_names() {
        for ok in ["PATH", "_x", "a1_B"] {
            assert!(valid_env_name(ok), "{ok}");
        }
        for bad in ["", "1A", "A-B", "A=B", "A B", "-u", "É"] {
            assert!(!valid_env_name(bad), "{bad}");
        }
    }
}
