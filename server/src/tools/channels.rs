//! wait_for_channel and signal_channel (mutating tier): tmux wait channels
//! (`wait-for`), for waiting on a script in a pane that ends with
//! `tmux wait-for -S NAME`. The wait blocks a tmux client of its own
//! ([`crate::tmux::channel`]), never panescan's control client, so every
//! other tool answers while it lasts.

use std::time::{Duration, Instant};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::context::{ServerArgs, ToolContext, ToolError};
use crate::config::Tier;
use crate::tmux::channel::{check_channel, WaitEnd};
use crate::tmux::TmuxCommand;
use crate::tools::registry::{Annotations, Tool};
use crate::tools::wait::wait_timeout;

/// Default wait (within the operator's wait ceiling, like every wait).
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

#[derive(Debug, Deserialize, JsonSchema)]
// A wire type: its doc comments would be schema descriptions every client
// reads in tools/list; the tool's description and the field names say it.
#[allow(missing_docs)]
pub struct WaitForChannelArgs {
    /// Channel name: letters, digits, . _ - (at most 128).
    pub channel: String,
    /// Give up after this long (default 30000, at most 120000).
    #[serde(default)]
    pub timeout_ms: Option<u64>,
    #[serde(flatten)]
    pub server: ServerArgs,
}

#[derive(Debug, Serialize, JsonSchema)]
// A wire type: its doc comments would be schema descriptions every client
// reads in tools/list; the tool's description and the field names say it.
#[allow(missing_docs)]
pub struct WaitForChannelResult {
    pub channel: String,
    /// Someone signalled the channel.
    pub signalled: bool,
    /// The timeout passed first.
    pub timed_out: bool,
    pub elapsed_ms: u64,
}

#[derive(Debug)]
/// `wait_for_channel` (mutating tier): blocks until a channel is signalled or the timeout passes.
pub struct WaitForChannel;

impl Tool for WaitForChannel {
    const NAME: &'static str = "wait_for_channel";
    const TITLE: &'static str = "Wait on a channel";
    const DESCRIPTION: &'static str = "Block until tmux wait channel `channel` is signalled (`tmux wait-for -S NAME` in a pane, or signal_channel) or timeout_ms passes; says which. Use to wait for a script that signals when done.";
    const TIER: Tier = Tier::Mutating;
    const ANNOTATIONS: Annotations = Annotations::MUTATE;
    const BATCHABLE: bool = false;
    type Args = WaitForChannelArgs;
    type Output = WaitForChannelResult;

    fn run(ctx: &ToolContext, args: Self::Args) -> Result<Self::Output, ToolError> {
        check_channel(&args.channel).map_err(ToolError::from)?;
        let timeout = wait_timeout(ctx, args.timeout_ms, DEFAULT_TIMEOUT)?;
        let tmux = ctx.tmux(&args.server)?;
        let started = Instant::now();
        let end = tmux
            .wait_channel(&args.channel, started + timeout, &ctx.cancel)
            .map_err(ToolError::from)?;
        Ok(WaitForChannelResult {
            channel: args.channel,
            signalled: end == WaitEnd::Signalled,
            timed_out: end == WaitEnd::TimedOut,
            elapsed_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        })
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
// A wire type: its doc comments would be schema descriptions every client
// reads in tools/list; the tool's description and the field names say it.
#[allow(missing_docs)]
pub struct SignalChannelArgs {
    /// Channel name: letters, digits, . _ - (at most 128).
    pub channel: String,
    #[serde(flatten)]
    pub server: ServerArgs,
}

#[derive(Debug, Serialize, JsonSchema)]
// A wire type: its doc comments would be schema descriptions every client
// reads in tools/list; the tool's description and the field names say it.
#[allow(missing_docs)]
pub struct SignalChannelResult {
    pub channel: String,
}

#[derive(Debug)]
/// `signal_channel` (mutating tier): wakes every waiter on a channel.
pub struct SignalChannel;

impl Tool for SignalChannel {
    const NAME: &'static str = "signal_channel";
    const TITLE: &'static str = "Signal a channel";
    const DESCRIPTION: &'static str = "Signal tmux wait channel `channel` (`tmux wait-for -S`): wakes everyone waiting on it; with nobody waiting, the next wait returns at once.";
    const TIER: Tier = Tier::Mutating;
    const ANNOTATIONS: Annotations = Annotations::MUTATE;
    type Args = SignalChannelArgs;
    type Output = SignalChannelResult;

    fn run(ctx: &ToolContext, args: Self::Args) -> Result<Self::Output, ToolError> {
        check_channel(&args.channel).map_err(ToolError::from)?;
        let tmux = ctx.tmux(&args.server)?;
        let c = TmuxCommand::new("wait-for").flag("-S").arg(&args.channel);
        tmux.run(&c, ctx.tmux_deadline()).map_err(ToolError::from)?;
        Ok(SignalChannelResult {
            channel: args.channel,
        })
    }
}
