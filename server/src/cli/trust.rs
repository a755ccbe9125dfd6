//! The trust flags of `serve` and `daemon` (`--policy`, `--scope-sessions`,
//! `--confirm-destructive`, `--audit-log`...) and `panescan audit`, which
//! prints the audit log.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::Args;

use crate::trust::{audit, Settings, Trust, DEFAULT_ASK_TIMEOUT};

/// What the operator lets an agent do, and the record of what it did.
#[derive(Debug, Args, Default, Clone)]
pub struct TrustArgs {
    /// A policy file (TOML: deny, ask and allow rules on tools,
    /// sessions, the command typed and the pane's cwd); SIGHUP reloads it.
    #[arg(long, env = "PANESCAN_POLICY", value_name = "FILE")]
    pub policy: Option<PathBuf>,
    /// Mutating and destructive calls act only on panes of sessions whose
    /// name matches GLOB (repeatable), and create_session names must
    /// match; reads are unchanged.
    #[arg(
        long = "scope-sessions",
        env = "PANESCAN_SCOPE_SESSIONS",
        value_name = "GLOB",
        value_delimiter = ','
    )]
    pub scope_sessions: Vec<String>,
    /// Every destructive-tier call asks a person first (through the
    /// client's elicitation; refused when the client cannot ask).
    #[arg(long, env = "PANESCAN_CONFIRM_DESTRUCTIVE")]
    pub confirm_destructive: bool,
    /// How long a person has to answer an ask.
    #[arg(long, value_name = "SECS", default_value_t = DEFAULT_ASK_TIMEOUT.as_secs())]
    pub ask_timeout: u64,
    /// Append a JSON line per mutating, destructive, denied or asked call
    /// to FILE (0600); a log that cannot be written refuses the start.
    #[arg(long, env = "PANESCAN_AUDIT_LOG", value_name = "FILE")]
    pub audit_log: Option<PathBuf>,
    /// Move the audit log to FILE.1 when it would pass BYTES.
    #[arg(long, value_name = "BYTES", default_value_t = audit::DEFAULT_MAX_BYTES)]
    pub audit_max_bytes: u64,
    /// Log the SHA-256 of typed text instead of the text.
    #[arg(long)]
    pub audit_hash_text: bool,
}

impl TrustArgs {
    /// The settings these flags ask for.
    pub fn settings(&self) -> Settings {
        Settings {
            policy: self.policy.clone(),
            scope_sessions: self
                .scope_sessions
                .iter()
                .filter(|g| !g.is_empty())
                .cloned()
                .collect(),
            confirm_destructive: self.confirm_destructive,
            audit_log: self.audit_log.clone(),
            audit_max_bytes: self.audit_max_bytes,
            audit_hash_text: self.audit_hash_text,
            ask_timeout: Duration::from_secs(self.ask_timeout.max(1)),
        }
    }

    /// The trust in force, or why panescan must not start.
    pub fn start(&self) -> Result<Arc<Trust>, String> {
        Trust::start(&self.settings()).map(Arc::new)
    }
}

/// `panescan audit` options.
#[derive(Debug, Args)]
pub struct AuditArgs {
    /// The audit log (as given to serve --audit-log).
    #[arg(long, env = "PANESCAN_AUDIT_LOG", value_name = "FILE")]
    pub audit_log: PathBuf,
    /// Only what was written in the last DURATION (90s, 15m, 1h, 2d).
    #[arg(long, value_name = "DURATION")]
    pub since: Option<String>,
    /// One JSON object per line, as logged.
    #[arg(long)]
    pub json: bool,
}

/// Runs `panescan audit`.
pub fn run_audit(args: &AuditArgs) -> ExitCode {
    let since = match args.since.as_deref().map(audit::parse_since).transpose() {
        Ok(back) => back.map_or(0, |b| audit::now_ms().saturating_sub(b)),
        Err(e) => {
            eprintln!("panescan audit: --since {e}");
            return ExitCode::from(2);
        }
    };
    let records = match audit::read(&args.audit_log, since) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("panescan audit: {e}");
            return ExitCode::from(1);
        }
    };
    let mut out = String::new();
    for r in &records {
        if args.json {
            out.push_str(&r.to_string());
        } else {
            out.push_str(&audit::human_line(r));
        }
        out.push('\n');
    }
    match std::io::Write::write_all(&mut std::io::stdout().lock(), out.as_bytes()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            eprintln!("panescan audit: {e}");
            ExitCode::from(1)
        }
        _ => ExitCode::SUCCESS,
    }
}
