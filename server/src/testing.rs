//! What the integration tests, the benches, the example and the fuzz
//! targets may reach inside the crate: not an API, hidden from the docs.
//!
//! The crate's rooms are private (`lib.rs`), so the compiler reports what
//! nothing uses. Code outside the crate names the testbed's modules here
//! (`panescan::testing::private_server::PrivateServer`) and everything
//! else by its own path with `testing::` in front
//! (`panescan::testing::tmux::Tmux`). Each room's list below is what
//! outside code uses of it: a test that needs one more item adds its name
//! to the `pub use` of the module it lives in, at the same path.

// The testbed exists for the code outside the crate: its modules whole.
pub use crate::testbed::{baseline, corpus, far, fixture, fuzz_parsers, fuzzing, private_server};

/// The pane cache.
pub mod cache {
    pub use crate::cache::{CacheStats, PaneCache};
}

/// Limits and tiers.
pub mod config {
    pub use crate::config::{Ceilings, Tier};
}

/// The journal's files, read and written the daemon's way.
pub mod journal {
    pub use crate::journal::JournalConfig;

    /// A frame's gap record.
    pub mod frame {
        pub use crate::journal::frame::Gap;
    }

    /// The command ledger's records.
    pub mod ledger {
        pub use crate::journal::ledger::{read_all, Command};
    }

    /// Segment files.
    pub mod segment {
        pub use crate::journal::segment::{list, read, Read};
    }

    /// Times and spans.
    pub mod when {
        pub use crate::journal::when::{format, now_ms, parse};
    }

    /// The writer thread.
    pub mod writer {
        pub use crate::journal::writer::{start, start_counted};
    }
}

/// The protocol front end.
pub mod mcp {
    /// The `tools/list` answer.
    pub mod listing {
        pub use crate::mcp::listing::tools_listing;
    }
}

/// tmux: connections, captures, listings, events.
pub mod tmux {
    pub use crate::tmux::{
        CaptureOptions, CaptureRange, CaptureReply, CaptureRequest, CapturedText, Fields,
        Inventory, PaneId, ServerSpec, SessionId, Target, Tmux, TmuxCommand, TmuxError, WindowId,
    };

    /// What each pane printed, as session feeds count it.
    pub mod feed_counts {
        pub use crate::tmux::feed_counts::FeedCounts;
    }

    /// Where tmux is looked for.
    pub mod binary {
        pub use crate::tmux::binary::{init, USUAL_DIRS};
    }

    /// Captures.
    pub mod capture {
        pub use crate::tmux::capture::{CaptureOptions, CaptureRange, CaptureRequest, Spare};
    }

    /// The connection's timing.
    pub mod connection {
        pub use crate::tmux::connection::IDLE_DETACH;
    }

    /// Event subscriptions.
    pub mod events {
        pub use crate::tmux::events::{Interest, OutputMode, StreamEvent, Subscription, Watch};
    }

    /// The listing kept ahead of searches.
    pub mod listing_ahead {
        pub use crate::tmux::listing_ahead::KEPT_CLIENT_IDLE;
    }

    /// A pane's process, read from /proc.
    pub mod procfs {
        pub use crate::tmux::procfs::{details, parse_identity, ServerProcess};
    }

    /// Far hosts.
    pub mod ssh {
        /// ssh destinations.
        pub mod dest {
            pub use crate::tmux::ssh::dest::{fuzz_check, parse};
        }
    }
}

/// The tools.
pub mod tools {
    /// The capture tools.
    pub mod capture {
        pub use crate::tools::capture::{CapturePane, CaptureSince};
    }

    /// What a tool call runs with.
    pub mod context {
        pub use crate::tools::context::ToolContext;
    }

    /// tmux format strings a client may send.
    pub mod format_guard {
        pub use crate::tools::format_guard::{check, LoopSizes};
    }

    /// The table of tools.
    pub mod registry {
        pub use crate::tools::registry::{Registry, Tool};
    }

    /// search_panes.
    pub mod search {
        pub use crate::tools::search::{search_panes, SearchPanesArgs, SearchPanesResult};
    }
}

/// The policy file.
pub mod trust {
    /// Rules and the facts they are checked against.
    pub mod policy {
        pub use crate::trust::policy::{Facts, Kind, Policy};
    }
}
