//! What the capture sweeps keep about one server between batches: the
//! gate its concurrent sweeps share (`gate.rs`), the terminal the last
//! sweep showed tmux (`anchor.rs`), and whether small captures may go over
//! the control client (`control.rs`). [`super::super::Server`] holds it;
//! only `capture/` reads or changes its fields.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use super::anchor::Anchor;
use super::gate::Gate;

/// One server's capture state (see the module doc).
#[derive(Debug)]
pub(crate) struct ServerState {
    /// How the server's sweeps share it.
    pub(super) gate: Arc<Gate>,
    /// The terminal the last sweep showed tmux, kept for the next while
    /// it stays live.
    pub(super) anchor: Mutex<Option<Arc<Anchor>>>,
    /// Small captures may go over the control client; cleared once this
    /// server's replies prove not decodable.
    over_control: AtomicBool,
}

impl Default for ServerState {
    fn default() -> Self {
        ServerState {
            gate: Arc::default(),
            anchor: Mutex::new(None),
            over_control: AtomicBool::new(true),
        }
    }
}

impl ServerState {
    /// Whether a small batch may go over the control client.
    pub(crate) fn over_control(&self) -> bool {
        self.over_control.load(Ordering::Relaxed)
    }

    /// This server's replies over the control client cannot be decoded:
    /// its captures sweep from now on.
    pub(super) fn refuse_over_control(&self) {
        self.over_control.store(false, Ordering::Relaxed);
    }
}
