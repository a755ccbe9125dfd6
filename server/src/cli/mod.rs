//! The command line: `panescan serve | search | demo | bench`.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

use crate::mcp::registry::Tier;
use crate::tmux::ServerSpec;
use crate::tools::context::{Limits, ServeConfig};

/// panescan: search every tmux pane, scrollback included.
#[derive(Debug, Parser)]
#[command(name = "panescan", version, about, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Commands,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Commands {
    /// Serve MCP on stdin/stdout (JSON-RPC 2.0, one message per line).
    Serve(ServeArgs),
}

/// `panescan serve` options.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// The default tmux server, by socket name (as `tmux -L NAME`).
    #[arg(long, short = 'L', conflicts_with = "socket_path")]
    pub socket_name: Option<String>,
    /// The default tmux server, by socket path (as `tmux -S PATH`).
    #[arg(long, short = 'S')]
    pub socket_path: Option<PathBuf>,
    /// Which tools exist: readonly (default), mutating, destructive.
    #[arg(long, env = "PANESCAN_TIER", value_enum, default_value_t = Tier::Readonly)]
    pub tier: Tier,
}

/// Parses the command line and runs it.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Commands::Serve(args) => {
            let config = ServeConfig {
                server: ServerSpec {
                    socket_name: args.socket_name,
                    socket_path: args.socket_path,
                },
                tier: args.tier,
                limits: Limits::default(),
            };
            let code = crate::mcp::server::serve(config);
            ExitCode::from(u8::try_from(code).unwrap_or(1))
        }
    }
}
