//! The command line: `panescan serve | search | demo | bench`.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// panescan: search every tmux pane, scrollback included.
#[derive(Debug, Parser)]
#[command(name = "panescan", version, about, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Commands,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Commands {}

/// Parses the command line and runs it.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {}
}
