//! The command line: `panescan serve | search | demo | bench`.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

pub mod bench;
pub mod client;
pub mod demo;
pub mod progress;
pub mod search;

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
    /// Search every pane of a tmux server, like grep.
    Search(Box<search::SearchArgs>),
    /// See it work: a private tmux server full of real output, searched.
    Demo(Box<demo::DemoArgs>),
    /// Time searches on a private tmux server of a given shape.
    Bench(Box<bench::BenchArgs>),
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
        Commands::Search(args) => search::run(&args),
        Commands::Demo(args) => match demo::run(&args) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("panescan demo: {e}");
                ExitCode::from(2)
            }
        },
        Commands::Bench(args) => match bench::run(&args) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("panescan bench: {e}");
                ExitCode::from(2)
            }
        },
    }
}
