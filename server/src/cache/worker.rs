//! The thread that talks to tmux for a batch and stores what it fetched.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Instant;

use crossbeam_channel::{Receiver, Sender};

use super::delta::{splice, DeltaPlan};
use super::freshness::{now_secs, Fingerprint};
use super::store::EntryKey;
use super::text::{reaches_bottom, PaneText};
use super::PaneCache;
use crate::tmux::{
    CaptureOptions, CaptureReply, CaptureRequest, CapturedText, PaneId, Tmux, TmuxError,
};

/// One unit of work of a batch, in request order.
#[derive(Debug)]
pub(super) enum Job {
    Serve(Arc<PaneText>),
    Fetch {
        fetches: usize,
        delta: Option<DeltaPlan>,
    },
}

/// The thread that turns tmux replies (and stored text) into the replies
/// of the caller's batch, in order.
pub(super) struct Worker {
    pub(super) cache: Arc<PaneCache>,
    pub(super) tmux: Tmux,
    pub(super) socket: PathBuf,
    pub(super) options: CaptureOptions,
    pub(super) deadline: Instant,
    pub(super) cancel: Arc<AtomicBool>,
    pub(super) prints: HashMap<PaneId, (i64, Fingerprint)>,
    pub(super) captured_at: i64,
    pub(super) tx: Sender<CaptureReply>,
}

impl Worker {
    pub(super) fn run(
        self,
        requests: Vec<CaptureRequest>,
        jobs: Vec<Job>,
        replies: Receiver<CaptureReply>,
    ) {
        for (index, (request, job)) in requests.into_iter().zip(jobs).enumerate() {
            let result = match job {
                Job::Serve(text) => match text.serve(request.range, self.options.join_wrapped) {
                    Some(served) => Ok(served),
                    None => self.capture_whole(&request),
                },
                Job::Fetch { fetches, delta } => {
                    let mut got = Vec::with_capacity(fetches);
                    for _ in 0..fetches {
                        match replies.recv() {
                            Ok(reply) => got.push(reply.result),
                            Err(_) => {
                                got.push(Err(TmuxError::ConnectionLost("capture stopped".into())))
                            }
                        }
                    }
                    self.finish(&request, got, delta)
                }
            };
            let reply = CaptureReply {
                index,
                pane: request.pane,
                result,
            };
            if self.tx.send(reply).is_err() {
                return;
            }
        }
    }

    /// The reply for one request from what tmux sent for it.
    pub(super) fn finish(
        &self,
        request: &CaptureRequest,
        mut got: Vec<Result<CapturedText, TmuxError>>,
        delta: Option<DeltaPlan>,
    ) -> Result<CapturedText, TmuxError> {
        let fresh = got
            .pop()
            .unwrap_or(Err(TmuxError::ConnectionLost("capture stopped".into())));
        let Some(plan) = delta else {
            self.cache.count(|s| s.full += 1);
            let text = fresh?;
            self.keep(request, &text, self.captured_at);
            return Ok(text);
        };
        // Out of time or cancelled: say so, as a cold capture would.
        let fresh = match fresh {
            Err(e @ (TmuxError::Timeout | TmuxError::Cancelled)) => return Err(e),
            other => other,
        };
        let top = got.pop().and_then(Result::ok);
        let spliced = fresh
            .ok()
            .and_then(|fresh| splice(&plan, top.as_ref(), &fresh, self.options.join_wrapped));
        if let Some(text) = spliced {
            if let Some(served) = text.serve(request.range, self.options.join_wrapped) {
                self.cache.count(|s| s.delta += 1);
                if let Some((_, print)) = self.prints.get(&request.pane) {
                    let mut print = print.clone();
                    print.history_size = text.history_size;
                    self.cache
                        .store(self.key(request.pane), print, self.captured_at, text);
                }
                return Ok(served);
            }
        }
        // Validation failed: capture this pane whole, as the cache-off path
        // does.
        self.cache.count(|s| {
            s.delta_rejected += 1;
            s.full += 1;
        });
        self.capture_whole(request)
    }

    /// One pane captured whole, as the cache-off path does, and stored.
    pub(super) fn capture_whole(
        &self,
        request: &CaptureRequest,
    ) -> Result<CapturedText, TmuxError> {
        let captured_at = now_secs();
        let replies = self.tmux.capture(
            vec![request.clone()],
            self.options,
            self.deadline,
            self.cancel.clone(),
        );
        let text = replies
            .recv()
            .map_err(|_| TmuxError::ConnectionLost("capture stopped".into()))
            .and_then(|r| r.result)?;
        self.keep(request, &text, captured_at);
        Ok(text)
    }

    pub(super) fn key(&self, pane: PaneId) -> EntryKey {
        EntryKey {
            socket: self.socket.clone(),
            pane,
            join_wrapped: self.options.join_wrapped,
            escapes: self.options.escapes,
        }
    }

    /// Stores a whole capture when it can be placed exactly.
    pub(super) fn keep(&self, request: &CaptureRequest, text: &CapturedText, captured_at: i64) {
        if text.joined != self.options.join_wrapped
            || !reaches_bottom(request.range, text.pane_height)
        {
            return;
        }
        let Some((_, print)) = self.prints.get(&request.pane) else {
            return;
        };
        let Some(stored) = PaneText::from_capture(text) else {
            return;
        };
        let mut print = print.clone();
        print.history_size = text.history_size;
        self.cache
            .store(self.key(request.pane), print, captured_at, stored);
    }
}
