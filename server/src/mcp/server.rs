//! The in-process server of `serve --no-daemon`: one session on
//! stdin/stdout ([`super::session`]), stopped by end of input or by
//! SIGINT/SIGTERM/SIGHUP, then the tmux connections closed. With a policy
//! file, SIGHUP reloads it instead of stopping.

use std::io;
use std::sync::Arc;

use crossbeam_channel::{bounded, Receiver};

use super::session::{self, Shared};
use crate::config::ServeConfig;
use crate::trust::Trust;

/// Serves MCP on stdin/stdout until EOF or a signal, every call through
/// `trust`. Returns the exit code.
pub fn serve(config: ServeConfig, trust: Arc<Trust>) -> i32 {
    let mut shared = Shared::new(config.cache_bytes);
    shared.trust = trust.clone();
    // SIGHUP too: a closed terminal must not leave a control client behind.
    let stop_rx = stop_on_signals(Some(trust), "shutting down");
    let code = match session::run(
        Arc::new(config),
        &shared,
        (io::stdin(), io::stdout()),
        &stop_rx,
        ["stdin", "stdout"],
    ) {
        Ok(_) => 0,
        Err(e) => {
            eprintln!("panescan: {e}");
            1
        }
    };
    crate::tools::shutdown_connections();
    code
}

/// A stop on SIGINT, SIGTERM or SIGHUP for a serve in this process (stdio,
/// or `serve --http`), saying `stopping` on stderr; SIGHUP reloads
/// `trust`'s policy file instead when there is one.
pub fn stop_on_signals(trust: Option<Arc<Trust>>, stopping: &'static str) -> Receiver<()> {
    let (stop_tx, stop_rx) = bounded::<()>(1);
    match signal_hook::iterator::Signals::new([
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGHUP,
    ]) {
        Ok(mut signals) => {
            let _ = std::thread::Builder::new()
                .name("signals".into())
                .spawn(move || {
                    for sig in signals.forever() {
                        let policy = trust.as_ref().filter(|t| t.has_policy_file());
                        if let (signal_hook::consts::SIGHUP, Some(t)) = (sig, policy) {
                            t.reload();
                            continue;
                        }
                        eprintln!("panescan: signal {sig}, {stopping}");
                        let _ = stop_tx.send(());
                        break;
                    }
                });
        }
        Err(e) => eprintln!("panescan: cannot watch SIGINT/SIGTERM/SIGHUP: {e}"),
    }
    stop_rx
}
