//! Trust: what the operator lets an agent do, decided before a tool call
//! runs, asked of a person when the policy says so, and recorded.
//!
//! - [`policy`] — the policy file's rules and the decision for one call
//!   (pure, fuzzed).
//! - [`typed`] — what typing does to a shell's input line: submit keys,
//!   text typed over several calls before an Enter (pure).
//! - [`facts`] — what a call targets and types, read from tmux at call
//!   time (sessions, cwd, the pane's input line on screen).
//! - [`gate`] — one call admitted, refused or asked, then its audit line.
//! - [`audit`] — the audit log: append, rotate, read back.
//! - [`approval`] — an approval across requests (2026-07-28): a
//!   `requestState` bound to one call, good once.
//!
//! What must hold: mcp's dispatcher sends every `tools/call` of every
//! session (stdio, the daemon's) through [`Trust::admit`] and
//! [`Trust::finish`]; with no policy, no scope, no confirmation and no
//! audit log, admit passes every call untouched. A policy that fails to
//! load at start refuses the start; one that fails on SIGHUP leaves the
//! old one in force and says why on stderr.

pub(crate) mod approval;
pub(crate) mod audit;
pub(crate) mod facts;
pub(crate) mod gate;
pub(crate) mod policy;
pub(crate) mod typed;

use std::path::PathBuf;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use globset::{Glob, GlobSet, GlobSetBuilder};

pub use gate::{Approval, Asker, Question};

/// How long a person has to answer an `ask` unless `--ask-timeout` says.
pub const DEFAULT_ASK_TIMEOUT: Duration = Duration::from_secs(120);

/// What the operator started panescan with.
#[derive(Debug, Clone, Default)]
pub struct Settings {
    /// `--policy FILE`.
    pub policy: Option<PathBuf>,
    /// `--scope-sessions GLOB`...
    pub scope_sessions: Vec<String>,
    /// `--confirm-destructive`.
    pub confirm_destructive: bool,
    /// `--audit-log FILE`.
    pub audit_log: Option<PathBuf>,
    /// `--audit-max-bytes`.
    pub audit_max_bytes: u64,
    /// `--audit-hash-text`.
    pub audit_hash_text: bool,
    /// `--ask-timeout`.
    pub ask_timeout: Duration,
}

impl Settings {
    /// Whether any of it is set (a session with its own is served in-process).
    pub fn any(&self) -> bool {
        self.policy.is_some()
            || !self.scope_sessions.is_empty()
            || self.confirm_destructive
            || self.audit_log.is_some()
    }
}

/// The trust settings in force, shared by every session of a process.
#[derive(Debug)]
pub struct Trust {
    policy_path: Option<PathBuf>,
    policy: RwLock<Option<Arc<policy::Policy>>>,
    scope: Option<(GlobSet, Vec<String>)>,
    confirm_destructive: bool,
    audit: Option<audit::AuditLog>,
    ask_timeout: Duration,
    pending: Mutex<typed::Pending>,
}

impl Default for Trust {
    fn default() -> Self {
        Trust::none()
    }
}

impl Trust {
    /// Nothing set: every call passes as the tier decides.
    pub fn none() -> Trust {
        Trust {
            policy_path: None,
            policy: RwLock::new(None),
            scope: None,
            confirm_destructive: false,
            audit: None,
            ask_timeout: DEFAULT_ASK_TIMEOUT,
            pending: Mutex::new(typed::Pending::default()),
        }
    }

    /// Loads the policy and opens the audit log; an error refuses the start.
    pub fn start(settings: &Settings) -> Result<Trust, String> {
        let policy = match &settings.policy {
            Some(path) => Some(Arc::new(load(path)?)),
            None => None,
        };
        let scope = if settings.scope_sessions.is_empty() {
            None
        } else {
            let mut set = GlobSetBuilder::new();
            for g in &settings.scope_sessions {
                set.add(Glob::new(g).map_err(|e| format!("--scope-sessions {g:?}: {e}"))?);
            }
            let set = set.build().map_err(|e| format!("--scope-sessions: {e}"))?;
            Some((set, settings.scope_sessions.clone()))
        };
        let audit = match &settings.audit_log {
            Some(path) => Some(audit::AuditLog::open(
                path,
                settings.audit_max_bytes,
                settings.audit_hash_text,
            )?),
            None => None,
        };
        Ok(Trust {
            policy_path: settings
                .policy
                .as_ref()
                .map(|p| std::path::absolute(p).unwrap_or_else(|_| p.clone())),
            policy: RwLock::new(policy),
            scope,
            confirm_destructive: settings.confirm_destructive,
            audit,
            ask_timeout: settings.ask_timeout,
            pending: Mutex::new(typed::Pending::default()),
        })
    }

    /// Whether anything is set (else [`Trust::admit`] passes every call).
    pub fn is_active(&self) -> bool {
        self.policy_path.is_some()
            || self.scope.is_some()
            || self.confirm_destructive
            || self.audit.is_some()
    }

    /// Whether a policy file is in use (SIGHUP then reloads it).
    pub fn has_policy_file(&self) -> bool {
        self.policy_path.is_some()
    }

    /// Reads the policy file again (SIGHUP). A broken file leaves the old
    /// policy in force; either way stderr says what happened.
    pub fn reload(&self) {
        let Some(path) = &self.policy_path else {
            return;
        };
        match load(path) {
            Ok(p) => {
                let rules = p.rule_count();
                // In force before it is said to be: a caller reading the
                // line may act on it at once.
                *crate::sync::write(&self.policy) = Some(Arc::new(p));
                eprintln!(
                    "panescan: policy {} reloaded: {rules} rules",
                    path.display()
                );
            }
            Err(e) => eprintln!(
                "panescan: policy {} not reloaded, the previous one stays in force: {e}",
                path.display()
            ),
        }
    }

    fn current_policy(&self) -> Option<Arc<policy::Policy>> {
        crate::sync::read(&self.policy).clone()
    }
}

fn load(path: &std::path::Path) -> Result<policy::Policy, String> {
    use std::io::Read;
    let file = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut text = String::new();
    // One byte past the limit is enough to say it is too big.
    file.take(policy::MAX_POLICY_BYTES as u64 + 1)
        .read_to_string(&mut text)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    policy::Policy::parse(&text).map_err(|e| format!("{}: {e}", path.display()))
}
