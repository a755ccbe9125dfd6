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

#[cfg(test)]
mod tests {
    //! The stream end to end against a private tmux server: what a subscriber
    //! hears and when (`hub`, `subscription`), the client kept listening while
    //! anyone subscribes, replaced when tmux drops it, and reconciled when a
    //! window joins its session. Each test starts its own server, whose pane
    //! `%0` runs `cat` (each line typed comes back).

    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use std::collections::BTreeSet;
    use std::sync::atomic::Ordering;
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    use super::{Interest, OutputMode, Printed, StreamEvent, StructureEvent, Subscription, Watch};
    use crate::sync::lock;
    use crate::testbed::private_server::PrivateServer;
    use crate::tmux::{PaneId, ServerSpec, Tmux, TmuxCommand};

    struct Bed {
        server: PrivateServer,
        tmux: Tmux,
        pane: PaneId,
    }

    fn bed(label: &str) -> Bed {
        let server = PrivateServer::start(label, 80, 24).unwrap();
        server
            .run_ok(["respawn-pane", "-k", "-t", "%0", "cat"])
            .unwrap();
        let tmux = Tmux::connect(&ServerSpec::named(server.socket_name())).unwrap();
        Bed {
            server,
            tmux,
            pane: PaneId::parse("%0").unwrap(),
        }
    }

    fn soon(secs: u64) -> Instant {
        Instant::now() + Duration::from_secs(secs)
    }

    /// Whether `f` holds within `secs` (looked at every 20 ms).
    fn eventually(secs: u64, mut f: impl FnMut() -> bool) -> bool {
        let until = soon(secs);
        while Instant::now() < until {
            if f() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        f()
    }

    impl Bed {
        fn subscribe(&self, interest: Interest) -> Subscription {
            self.tmux.subscribe(interest, soon(10))
        }

        fn type_line(&self, pane: PaneId, text: &str) {
            let target = pane.to_string();
            self.server
                .run_ok(["send-keys", "-t", &target, "-l", text])
                .unwrap();
            self.server
                .run_ok(["send-keys", "-t", &target, "Enter"])
                .unwrap();
        }

        /// Types a line into `pane` and waits (`recv_deadline`) for its
        /// trigger; other events are passed over.
        fn trigger(&self, sub: &Subscription, pane: PaneId) {
            self.type_line(pane, "first");
            let until = soon(10);
            loop {
                match sub.recv_deadline(until) {
                    Some(StreamEvent::Printed(p)) if p == pane => return,
                    Some(_) => {}
                    None => panic!("no trigger for {pane}"),
                }
            }
        }

        /// Whether `sub` hears `pane`, looked for with `try_recv`: lines are
        /// typed until its trigger comes (a line typed before tmux was told to
        /// report the pane is not reported).
        fn hears(&self, sub: &Subscription, pane: PaneId) -> bool {
            eventually(10, || {
                self.type_line(pane, "again");
                let until = Instant::now() + Duration::from_millis(400);
                while Instant::now() < until {
                    match sub.try_recv() {
                        Some(StreamEvent::Printed(p)) if p == pane => return true,
                        Some(_) => {}
                        None => std::thread::sleep(Duration::from_millis(10)),
                    }
                }
                false
            })
        }

        /// Takes events until a `Resync`.
        fn resyncs(&self, sub: &Subscription) -> bool {
            let until = soon(10);
            while let Some(event) = sub.recv_deadline(until) {
                if event == StreamEvent::Resync {
                    return true;
                }
            }
            false
        }

        /// `#{client_flags}` of the server's one client (panescan's).
        fn client_flags(&self) -> String {
            self.server
                .run_ok(["list-clients", "-F", "#{client_flags}"])
                .unwrap()
        }

        /// A new window in the session, its pane running `cat`.
        fn new_window(&self) -> PaneId {
            let out = self
                .server
                .run_ok(["new-window", "-d", "-P", "-F", "#{pane_id}", "cat"])
                .unwrap();
            PaneId::parse(out.trim()).unwrap()
        }
    }

    fn every_pane() -> Interest {
        Interest {
            watch: Watch::Every,
            mode: OutputMode::Trigger,
            structure: false,
        }
    }

    #[test]
    fn a_trigger_comes_again_once_rearmed_and_the_client_listens_while_anyone_subscribes() {
        let b = bed("events-rearm");
        let hub = b.tmux.inner.hub().clone();
        assert!(!hub.listening());
        let sub = b.subscribe(Interest::printed([b.pane]));
        let second = b.subscribe(Interest::printed([b.pane]));
        assert!(hub.listening());
        let coverage = sub.coverage();
        assert!(coverage.live, "{coverage:?}");
        assert_eq!(coverage.panes, BTreeSet::from([b.pane]));
        b.trigger(&sub, b.pane);
        b.trigger(&second, b.pane);
        // Taken and re-armed: the pane's next output is a trigger again.
        sub.rearm(&[b.pane], soon(10)).unwrap();
        assert!(b.hears(&sub, b.pane), "no trigger after re-arming");
        drop(second);
        assert!(hub.listening());
        drop(sub);
        assert!(!hub.listening());
    }

    /// A pane paused for a trigger another subscriber holds (not taken yet)
    /// is re-armed for a newcomer, whether it watches every pane or that one.
    #[test]
    fn a_newcomer_hears_a_pane_paused_for_a_trigger_another_holds() {
        let b = bed("events-held");
        let hub = b.tmux.inner.hub().clone();
        let holder = b.subscribe(Interest::printed([b.pane]));
        b.type_line(b.pane, "first");
        assert!(
            eventually(10, || lock(&hub.state).disarmed() == vec![b.pane]),
            "the pane was never paused for its trigger"
        );
        let every = b.subscribe(every_pane());
        assert!(b.hears(&every, b.pane), "a watcher of every pane is deaf");
        let one = b.subscribe(Interest::printed([b.pane]));
        assert!(b.hears(&one, b.pane), "a watcher of the pane is deaf");
        // Every subscriber still has its own channel, the holder its trigger.
        every.rearm(&[b.pane], soon(10)).unwrap();
        assert!(
            b.hears(&every, b.pane),
            "the first newcomer lost its channel"
        );
        assert_eq!(holder.try_recv(), Some(StreamEvent::Printed(b.pane)));
    }

    /// `%window-add` makes the hub reconcile on its own thread: the new pane
    /// is reported, the watcher told to re-read, and the thread ends after.
    #[test]
    fn a_window_added_to_the_session_comes_into_an_every_watchers_coverage() {
        let b = bed("events-window-add");
        let sub = b.subscribe(every_pane());
        assert_eq!(sub.coverage().panes, BTreeSet::from([b.pane]));
        let new = b.new_window();
        assert!(b.resyncs(&sub), "no Resync after the coverage changed");
        assert!(
            eventually(10, || sub.coverage().panes == BTreeSet::from([b.pane, new])),
            "{:?}",
            sub.coverage()
        );
        assert!(b.hears(&sub, new));
        // Nothing more to do: the reconcile thread lets the server go.
        drop(sub);
        assert!(
            eventually(10, || Arc::strong_count(&b.tmux.inner) == 1),
            "the reconcile thread never ended"
        );
    }

    /// tmux detaching panescan's client (not panescan shutting it down): every
    /// subscriber re-reads, a counted pane's rows become unknown, and a new
    /// client takes over the stream.
    #[test]
    fn a_client_tmux_detached_is_replaced_and_counts_across_it_are_unknown() {
        let b = bed("events-detached");
        let sub = b.subscribe(Interest {
            watch: Watch::Panes(BTreeSet::from([b.pane])),
            mode: OutputMode::Counted,
            structure: false,
        });
        b.trigger(&sub, b.pane);
        // The line echoed, then `cat`'s copy: all of it printed.
        assert!(
            eventually(10, || sub.printed(b.pane).line_feeds >= 2),
            "{:?}",
            sub.printed(b.pane)
        );
        let counted = sub.printed(b.pane);
        assert_eq!(sub.printed_many(&[b.pane]), vec![(b.pane, counted)]);
        sub.forget_printed(|p| *p != b.pane);
        assert_eq!(sub.printed(b.pane), Printed::default());
        let name = b
            .server
            .run_ok(["list-clients", "-F", "#{client_name}"])
            .unwrap();
        b.server
            .run_ok(["detach-client", "-t", name.trim()])
            .unwrap();
        assert!(b.resyncs(&sub), "no Resync when the client went away");
        assert!(
            eventually(10, || sub.coverage().live),
            "no new client took over"
        );
        assert!(b.hears(&sub, b.pane));
        let since = sub.printed(b.pane).rows_since(&Printed::default(), 80, 24);
        assert_eq!(since, None);
    }

    /// A subscriber of structure events alone hears them with the client's
    /// output left off (as it attached).
    #[test]
    fn structure_events_alone_leave_the_clients_output_off() {
        let b = bed("events-structure");
        let sub = b.subscribe(Interest::structure());
        let flags = b.client_flags();
        assert!(flags.contains("no-output"), "{flags}");
        assert!(!flags.contains("pause-after"), "{flags}");
        b.new_window();
        let until = soon(10);
        let mut heard = Vec::new();
        while let Some(event) = sub.recv_deadline(until) {
            heard.push(event.clone());
            if let StreamEvent::Structure(StructureEvent::WindowAdd { .. }) = event {
                break;
            }
        }
        assert!(
            matches!(
                heard.last(),
                Some(StreamEvent::Structure(StructureEvent::WindowAdd { .. }))
            ),
            "{heard:?}"
        );
        let flags = b.client_flags();
        assert!(!flags.contains("pause-after"), "{flags}");
    }

    /// panescan shutting its client down (at exit) leaves it down, even while
    /// someone subscribes: the subscriber re-reads and polls from then on.
    #[test]
    fn a_client_shut_down_on_purpose_is_not_attached_again() {
        let b = bed("events-shutdown");
        let sub = b.subscribe(Interest::printed([b.pane]));
        assert!(sub.coverage().live);
        b.tmux.shutdown();
        assert!(b.resyncs(&sub), "no Resync when the client was shut down");
        // A client attached again would publish live coverage at once.
        assert!(!eventually(3, || sub.coverage().live), "attached again");
        assert_eq!(b.client_flags(), "");
    }

    /// Output, and structure events that move no pane into or out of the
    /// client's session, make no reconcile (a listing each). Seen in the
    /// flows: a reconcile continues a pane whose trigger was taken and not
    /// re-armed yet, and these leave it paused.
    #[test]
    fn output_and_renames_make_no_reconcile() {
        let b = bed("events-no-reconcile");
        let hub = b.tmux.inner.hub().clone();
        let other = b.new_window();
        let sub = b.subscribe(Interest {
            structure: true,
            ..Interest::printed([b.pane, other])
        });
        // Waits until whatever the client read came to the hub (a reply comes
        // after the notifications ahead of it) and any reconcile it asked for
        // ended.
        let settled = || {
            let ping = TmuxCommand::new("display-message").flag("-p");
            b.tmux.run(&ping, soon(10)).unwrap();
            assert!(eventually(10, || {
                !hub.worker.load(Ordering::Acquire) && !hub.dirty.load(Ordering::Acquire)
            }));
            lock(&hub.state).disarmed()
        };
        b.trigger(&sub, b.pane);
        assert!(settled().contains(&b.pane), "paused, its trigger taken");
        b.trigger(&sub, other);
        assert!(settled().contains(&b.pane), "continued after output");
        b.server
            .run_ok(["rename-window", "-t", &other.to_string(), "renamed"])
            .unwrap();
        // tmux queues the notification apart from the commands of a client:
        // it may come after the ping's reply, but not after its own event.
        let until = soon(10);
        loop {
            match sub.recv_deadline(until) {
                Some(StreamEvent::Structure(StructureEvent::WindowRenamed { .. })) => break,
                Some(_) => {}
                None => panic!("no %window-renamed"),
            }
        }
        assert!(settled().contains(&b.pane), "continued after a rename");
    }
}
