//! The event stream: pane output and changes to the server's shape, pushed
//! to whoever inside panescan subscribed.
//!
//! A subscriber ([`super::Tmux::subscribe`]) says what it wants in an
//! [`Interest`] — output of some panes ([`Watch::Panes`]) or of every pane,
//! including panes created later ([`Watch::Every`]), as a coalesced "pane
//! printed" trigger ([`OutputMode::Trigger`]) or as the bytes themselves
//! ([`OutputMode::Bytes`]); and/or structure events ([`StructureEvent`]) —
//! and receives [`StreamEvent`]s on a bounded channel. A subscriber that
//! does not keep up loses events but is told so ([`StreamEvent::Resync`]):
//! it must then re-read what it watches. Output is a trigger, never the
//! truth: the text an answer returns comes from a capture.
//!
//! The events come from panescan's one control client per server
//! ([`super::connection`]), never a second one (a second client would fire
//! the user's `client-attached` hooks again: ARCHITECTURE.md, "Events").
//! The client does not idle-detach while anyone listens; once nobody does,
//! it pauses every pane it had on and detaches after its usual idle period.
//!
//! The stages: `hub` takes the client's notification lines and the
//! subscribers, `flows` decides what each `%output`/`%pause` does to a
//! pane (a pane is paused, never turned `off`), `reconcile` brings the
//! client in line with what subscribers want (which session it shows,
//! which panes are on), `subscription` is a subscriber's end.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Instant;

use super::ids::{PaneId, SessionId};
use super::Server;

mod count;
mod flows;
mod hub;
mod reconcile;
mod subscription;

pub use count::Printed;
pub(crate) use hub::Hub;
pub use subscription::Subscription;

pub use super::notification::StructureEvent;

/// Events a subscriber may have waiting; past that it loses events and is
/// sent [`StreamEvent::Resync`].
pub const CHANNEL_CAPACITY: usize = 256;

/// Which panes' output a subscriber wants.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Watch {
    /// None: structure events only.
    #[default]
    Nothing,
    /// These panes.
    Panes(BTreeSet<PaneId>),
    /// Every pane of the covered session, panes created later included.
    Every,
}

impl Watch {
    fn contains(&self, pane: PaneId) -> bool {
        match self {
            Watch::Nothing => false,
            Watch::Panes(set) => set.contains(&pane),
            Watch::Every => true,
        }
    }
}

/// How a subscriber wants output.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum OutputMode {
    /// [`StreamEvent::Printed`], at most one waiting per pane; the pane is
    /// paused until the subscriber [re-arms](Subscription::rearm) it.
    #[default]
    Trigger,
    /// [`StreamEvent::Output`] with the bytes, as they come (for markers
    /// that a capture does not show, such as OSC 133). The pane is never
    /// paused by panescan; if tmux pauses it (the client fell a second
    /// behind) the subscriber gets [`StreamEvent::Resync`].
    Bytes,
    /// [`StreamEvent::Printed`] as with `Trigger` (no re-arming), and
    /// what each pane printed counted ([`Subscription::printed`]): at
    /// most how many rows it pushed into history since an earlier count.
    /// The pane is never paused by panescan (every byte must be counted);
    /// a pause by tmux makes its count unknown.
    Counted,
}

/// What a subscriber wants.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Interest {
    /// Whose output.
    pub watch: Watch,
    /// In which form.
    pub mode: OutputMode,
    /// Also [`StreamEvent::Structure`].
    pub structure: bool,
}

impl Interest {
    /// "Pane printed" triggers for `panes`.
    pub fn printed(panes: impl IntoIterator<Item = PaneId>) -> Interest {
        Interest {
            watch: Watch::Panes(panes.into_iter().collect()),
            mode: OutputMode::Trigger,
            structure: false,
        }
    }

    /// Structure events only.
    pub fn structure() -> Interest {
        Interest {
            structure: true,
            ..Interest::default()
        }
    }

    fn wants_output(&self) -> bool {
        self.watch != Watch::Nothing
    }
}

/// One event for a subscriber.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StreamEvent {
    /// The pane printed (trigger mode). Re-arm it before reading it.
    Printed(PaneId),
    /// Bytes the pane printed (bytes mode), unescaped.
    Output {
        /// The pane.
        pane: PaneId,
        /// What it printed: raw terminal output, escape sequences included.
        data: Vec<u8>,
    },
    /// The server's shape changed.
    Structure(StructureEvent),
    /// Events may have been lost (the channel was full, the client
    /// reconnected or moved, tmux dropped output): re-read everything
    /// watched, and check [`Subscription::coverage`] again.
    Resync,
}

/// Which watched panes the stream reports output for.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Coverage {
    /// The stream is up (false: no control client, e.g. a server without
    /// sessions; poll everything).
    pub live: bool,
    /// The session the client is attached to.
    pub session: Option<SessionId>,
    /// The watched panes (with [`Watch::Every`]: the session's panes) whose
    /// output is reported; others must be polled.
    pub panes: BTreeSet<PaneId>,
}

/// Subscribes to `shared`'s stream (see [`super::Tmux::subscribe`]).
pub(crate) fn subscribe(
    shared: &Arc<Server>,
    interest: Interest,
    deadline: Instant,
) -> Subscription {
    shared.hub().subscribe(shared, interest, deadline)
}
