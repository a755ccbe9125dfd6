//! One batch's run: chunks launched as the server's gate allows (two in
//! flight, the first alone when a listing heads it), every pane answered
//! once and in request order, and the requests left answered with why the
//! batch stopped.
//!
//! Must hold: a reply nobody takes stops the batch and kills its chunks;
//! a joined capture whose rows do not add up is captured again unjoined
//! before it is answered (`verify`).

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::super::connection::Route;
use super::super::ids::PaneId;
use super::super::spans::Span;
use super::super::{Server, TmuxError};
use super::chunk::{kill_child, ChunkEvent, Flight};
use super::gate::Permit;
use super::split::Split;
use super::{control, Batch, CaptureOptions, CaptureReply, CaptureRequest, CapturedText};

impl Batch {
    pub(super) fn reply(
        &self,
        index: usize,
        pane: PaneId,
        result: Result<CapturedText, TmuxError>,
    ) -> bool {
        self.tx
            .send(CaptureReply {
                index,
                pane,
                result,
            })
            .is_ok()
    }

    /// Answers a small batch over the live control client (`control.rs`);
    /// `false` when sweeps must answer it instead (nothing was answered).
    pub(super) fn run_over_control(&self, shared: &Server, requests: &[CaptureRequest]) -> bool {
        if !shared.capture().over_control()
            || !control::suits(requests)
            || shared.connection().own_client_pid().is_none()
        {
            return false;
        }
        let Ok(Route::Control(client)) = shared.connection().route(self.deadline) else {
            return false;
        };
        let _fetching = Span::new("capture.control");
        let results =
            match control::fetch(&client, requests, self.options, self.deadline, &self.cancel) {
                control::Fetched::Done(results) => results,
                control::Fetched::Unsuited => {
                    shared.capture().refuse_over_control();
                    return false;
                }
            };
        for (index, (r, result)) in requests.iter().zip(results).enumerate() {
            let result = result.and_then(|s| self.verify(r, s));
            if !self.reply(index, r.pane, result) {
                break;
            }
        }
        true
    }

    pub(super) fn run(self, requests: Vec<CaptureRequest>) {
        // Chunks are cut as they are launched, sized by the pane sizes seen
        // so far, so one sweep keeps tmux busy for a bounded time.
        let started = Instant::now();
        let mut next_start = 0usize;
        let (mut seen_lines, mut seen_panes) = (0u64, 0u64);
        let mut flights: std::collections::VecDeque<Flight> = Default::default();
        let mut sent = 0usize;
        let mut failure: Option<TmuxError> = None;
        while sent < requests.len() {
            // Keep two chunks in flight, as the server's gate allows.
            let most = if self.alone_first && sent == 0 { 1 } else { 2 };
            while failure.is_none() && flights.len() < most && next_start < requests.len() {
                failure = self.stopped();
                if failure.is_some() {
                    break;
                }
                let permit = match self.permit(flights.len()) {
                    Ok(permit) => permit,
                    Err(Some(why)) => {
                        failure = Some(why);
                        break;
                    }
                    Err(None) => break,
                };
                let a = next_start;
                let b = self.chunk_end(&requests, a, &started, seen_lines, seen_panes);
                next_start = b;
                let counted = self.counted_flags(&requests[a..b]);
                flights.push_back(self.launch(&requests[a..b], a, self.options, permit, counted));
            }
            let Some(flight) = flights.pop_front() else {
                break;
            };
            let end = flight.start + flight.len;
            let finished = loop {
                if failure.is_none() {
                    failure = self.stopped();
                }
                if failure.is_some() {
                    break false;
                }
                let step = self
                    .deadline
                    .saturating_duration_since(Instant::now())
                    .min(Duration::from_millis(20));
                let event = match flight.events.recv_timeout(step) {
                    Ok(event) => event,
                    Err(crossbeam_channel::RecvTimeoutError::Timeout) => continue,
                    Err(crossbeam_channel::RecvTimeoutError::Disconnected) => ChunkEvent::End(Err(
                        TmuxError::ConnectionLost("capture reader stopped".into()),
                    )),
                };
                match event {
                    ChunkEvent::Pane(k, result) => {
                        let index = flight.start + k;
                        let Some(request) = requests.get(index) else {
                            continue;
                        };
                        let result = result.and_then(|s| self.verify(request, s));
                        if let Ok(t) = &result {
                            seen_lines += t.history_size + u64::from(t.pane_height);
                            seen_panes += 1;
                        }
                        if !self.reply(index, request.pane, result) {
                            self.abort(flights);
                            return;
                        }
                        sent = index + 1;
                    }
                    ChunkEvent::End(outcome) => {
                        let e = outcome.err().unwrap_or_else(|| {
                            TmuxError::ConnectionLost("capture ended early".into())
                        });
                        for (index, r) in requests.iter().enumerate().take(end).skip(sent) {
                            if !self.reply(index, r.pane, Err(e.clone())) {
                                self.abort(flights);
                                return;
                            }
                        }
                        sent = sent.max(end);
                        break true;
                    }
                }
            };
            if !finished {
                flights.push_front(flight);
                break;
            }
        }
        let why = failure.unwrap_or(TmuxError::ConnectionLost("capture stopped".into()));
        self.abort(flights);
        for (index, r) in requests.iter().enumerate().skip(sent) {
            if !self.reply(index, r.pane, Err(why.clone())) {
                return;
            }
        }
    }

    /// The gate's leave for one more chunk, the batch holding `held`:
    /// `Ok(None)` for an ungated batch; `Err(None)` when a further chunk
    /// must wait (read the ones in flight first); `Err(Some(why))` when the
    /// batch stopped while waiting for its first.
    pub(super) fn permit(&self, held: usize) -> Result<Option<Permit>, Option<TmuxError>> {
        let Some(member) = &self.member else {
            return Ok(None);
        };
        if held > 0 {
            return member.try_acquire(held).map(Some).ok_or(None);
        }
        let cancel = &self.cancel;
        match member.acquire(self.deadline, || cancel.load(Ordering::Relaxed)) {
            Some(permit) => Ok(Some(permit)),
            None => Err(Some(self.stopped().unwrap_or(TmuxError::Timeout))),
        }
    }

    /// Why the batch must stop now (cancelled, or out of time), if it must.
    pub(super) fn stopped(&self) -> Option<TmuxError> {
        if self.cancel.load(Ordering::Relaxed) {
            Some(TmuxError::Cancelled)
        } else if Instant::now() >= self.deadline {
            Some(TmuxError::Timeout)
        } else {
            None
        }
    }

    pub(super) fn abort(&self, flights: std::collections::VecDeque<Flight>) {
        for f in flights {
            if let Some(c) = &f.child {
                kill_child(c);
            }
        }
    }

    /// Checks joined row numbers; captures again unjoined when they do not
    /// add up (within the batch deadline).
    pub(super) fn verify(
        &self,
        req: &CaptureRequest,
        split: Split,
    ) -> Result<CapturedText, TmuxError> {
        if split.rows_match {
            return Ok(split.text);
        }
        let options = CaptureOptions {
            join_wrapped: false,
            ..self.options
        };
        let flight = self.launch(std::slice::from_ref(req), 0, options, None, None);
        let result = match flight.events.recv_deadline(self.deadline) {
            Ok(ChunkEvent::Pane(_, result)) => result.map(|s| s.text),
            Ok(ChunkEvent::End(Err(e))) => Err(e),
            Ok(ChunkEvent::End(Ok(()))) => Err(TmuxError::ConnectionLost("no reply".into())),
            Err(crossbeam_channel::RecvTimeoutError::Timeout) => Err(TmuxError::Timeout),
            Err(crossbeam_channel::RecvTimeoutError::Disconnected) => {
                Err(TmuxError::ConnectionLost("capture reader stopped".into()))
            }
        };
        if result.is_err() {
            if let Some(c) = &flight.child {
                kill_child(c);
            }
        }
        result
    }
}
