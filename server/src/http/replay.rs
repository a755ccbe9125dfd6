//! What a session's SSE streams sent, kept so that a client whose
//! connection dropped can resume a stream with `Last-Event-ID` and get
//! exactly the events it missed (2025-11-25, "Resumability and
//! Redelivery"; the 2026-07-28 era removed resumption, so its stateless
//! sessions keep nothing).
//!
//! An event id is `TAG-STREAM-SEQ`: `TAG` is random per session (an id
//! of another session, or a made-up one, names no stream here),
//! `STREAM` the stream (`h7` a request's, `g3` a GET stream), `SEQ` its
//! place on that stream (0: the priming event, before any message).
//!
//! What must hold: every bound is fixed. A stream keeps its last
//! [`REPLAY_EVENTS`] events, a session [`REPLAY_STREAMS`] streams and
//! [`REPLAY_BYTES`] bytes of them (the oldest go first); a resume from
//! an event older than what is kept is refused, never answered with a
//! gap, and one stream's events are never replayed on another.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

/// Events one stream keeps (as many as its live buffer holds).
pub const REPLAY_EVENTS: usize = super::conn::STREAM_BUFFER;
/// Streams a session keeps events of: a client resumes the stream it
/// just lost, not one of long ago.
const REPLAY_STREAMS: usize = 32;
/// Bytes a session keeps in all: two messages at the line ceiling.
const REPLAY_BYTES: usize = 2 * crate::mcp::jsonrpc::MAX_LINE_BYTES;

/// One kept event.
#[derive(Debug, Clone)]
pub struct Event {
    /// Its id, as sent.
    pub id: String,
    /// Its place on its stream.
    pub seq: u64,
    /// The JSON-RPC message.
    pub json: Arc<str>,
    /// The answer that ended its stream.
    pub last: bool,
}

#[derive(Debug, Default)]
struct Log {
    /// `(seq, event)`, oldest first.
    events: VecDeque<(u64, Event)>,
    /// The next event's seq (the priming event is 0).
    next: u64,
    bytes: usize,
}

/// Why a `Last-Event-ID` gets no replay.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// Not an id this session gave (another session's, or made up).
    Foreign,
    /// The stream's events, or those after the id, are no longer kept.
    Forgotten,
    /// The stream ended and the client had all of it.
    Finished,
}

/// A session's kept events.
#[derive(Debug)]
pub struct Replay {
    tag: String,
    logs: HashMap<String, Log>,
    /// Streams by age, oldest first.
    order: VecDeque<String>,
    bytes: usize,
}

impl Default for Replay {
    fn default() -> Self {
        Replay::new()
    }
}

impl Replay {
    /// An empty store with a fresh random tag.
    pub fn new() -> Replay {
        let mut bytes = [0u8; 8];
        if getrandom::fill(&mut bytes).is_err() {
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos());
            bytes = (nanos as u64).to_le_bytes();
        }
        Replay {
            tag: bytes.iter().map(|b| format!("{b:02x}")).collect(),
            logs: HashMap::new(),
            order: VecDeque::new(),
            bytes: 0,
        }
    }

    fn id(&self, stream: &str, seq: u64) -> String {
        format!("{}-{stream}-{seq}", self.tag)
    }

    /// Starts keeping `stream`'s events; the priming event's id. The
    /// streams forgotten to make room are returned.
    pub fn open(&mut self, stream: &str) -> (String, Vec<String>) {
        let mut forgotten = Vec::new();
        if !self.logs.contains_key(stream) {
            while self.order.len() >= REPLAY_STREAMS {
                match self.order.pop_front() {
                    Some(old) => {
                        self.drop_log(&old);
                        forgotten.push(old);
                    }
                    None => break,
                }
            }
            self.logs.insert(
                stream.to_owned(),
                Log {
                    next: 1,
                    ..Log::default()
                },
            );
            self.order.push_back(stream.to_owned());
        }
        (self.id(stream, 0), forgotten)
    }

    /// Keeps one event of `stream` (opened first if it was not); the
    /// event, and the streams that lost events to make room (with the
    /// newest seq each lost).
    pub fn record(
        &mut self,
        stream: &str,
        json: Arc<str>,
        last: bool,
    ) -> (Event, Vec<(String, u64)>) {
        let (_, forgotten) = self.open(stream);
        let mut lost: Vec<(String, u64)> = forgotten.into_iter().map(|s| (s, u64::MAX)).collect();
        let size = json.len();
        let Some(log) = self.logs.get_mut(stream) else {
            // open() just made it; unreachable, but never a panic.
            let event = Event {
                id: String::new(),
                seq: 0,
                json,
                last,
            };
            return (event, lost);
        };
        let seq = log.next;
        log.next += 1;
        let event = Event {
            id: format!("{}-{stream}-{seq}", self.tag),
            seq,
            json,
            last,
        };
        log.events.push_back((seq, event.clone()));
        log.bytes += size;
        self.bytes += size;
        if log.events.len() > REPLAY_EVENTS {
            if let Some((old, e)) = log.events.pop_front() {
                log.bytes -= e.json.len();
                self.bytes -= e.json.len();
                lost.push((stream.to_owned(), old));
            }
        }
        self.trim_bytes(stream, &mut lost);
        (event, lost)
    }

    /// Sheds the oldest streams' events (then the oldest of `current`)
    /// until the session is within [`REPLAY_BYTES`].
    fn trim_bytes(&mut self, current: &str, lost: &mut Vec<(String, u64)>) {
        while self.bytes > REPLAY_BYTES {
            let oldest = self.order.iter().find(|s| *s != current).cloned();
            match oldest {
                Some(old) => {
                    self.drop_log(&old);
                    self.order.retain(|s| *s != old);
                    lost.push((old, u64::MAX));
                }
                None => {
                    let Some(log) = self.logs.get_mut(current) else {
                        return;
                    };
                    // The newest event stays, whatever its size.
                    if log.events.len() <= 1 {
                        return;
                    }
                    if let Some((seq, e)) = log.events.pop_front() {
                        log.bytes -= e.json.len();
                        self.bytes -= e.json.len();
                        lost.push((current.to_owned(), seq));
                    }
                }
            }
        }
    }

    fn drop_log(&mut self, stream: &str) {
        if let Some(log) = self.logs.remove(stream) {
            self.bytes -= log.bytes;
        }
    }

    /// Stops keeping `stream` (its answer went out whole as JSON).
    pub fn forget(&mut self, stream: &str) {
        self.drop_log(stream);
        self.order.retain(|s| s != stream);
    }

    /// The stream `last_event_id` belongs to and the events after it.
    pub fn resume(&self, last_event_id: &str) -> Result<(String, Vec<Event>), Refusal> {
        let (stream, seq) = self.parse(last_event_id).ok_or(Refusal::Foreign)?;
        let log = self.logs.get(stream).ok_or(Refusal::Forgotten)?;
        if seq >= log.next {
            // An id this stream never gave.
            return Err(Refusal::Foreign);
        }
        let first = log.events.front().map_or(log.next, |(s, _)| *s);
        if seq + 1 < first {
            return Err(Refusal::Forgotten);
        }
        let after: Vec<Event> = log
            .events
            .iter()
            .filter(|(s, _)| *s > seq)
            .map(|(_, e)| e.clone())
            .collect();
        let finished = log.events.back().is_some_and(|(_, e)| e.last);
        if after.is_empty() && finished {
            return Err(Refusal::Finished);
        }
        Ok((stream.to_owned(), after))
    }

    /// `TAG-STREAM-SEQ` of this session: the stream and seq.
    fn parse<'a>(&self, id: &'a str) -> Option<(&'a str, u64)> {
        let rest = id.strip_prefix(self.tag.as_str())?.strip_prefix('-')?;
        let (stream, seq) = rest.rsplit_once('-')?;
        let seq = seq.parse().ok()?;
        Some((stream, seq))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn json(n: usize) -> Arc<str> {
        Arc::from(format!("{{\"n\":{n}}}"))
    }

    #[test]
    fn a_resume_gets_what_came_after_its_id_and_nothing_else() {
        let mut r = Replay::new();
        let (prime, _) = r.open("h1");
        let ids: Vec<String> = (0..5)
            .map(|n| r.record("h1", json(n), n == 4).0.id)
            .collect();
        r.record("h2", json(99), false);
        let (stream, after) = r.resume(&ids[1]).unwrap();
        assert_eq!(stream, "h1");
        let got: Vec<&str> = after.iter().map(|e| &*e.json).collect();
        assert_eq!(got, ["{\"n\":2}", "{\"n\":3}", "{\"n\":4}"]);
        assert_eq!(r.resume(&prime).unwrap().1.len(), 5);
        assert_eq!(r.resume(&ids[4]).err(), Some(Refusal::Finished));
    }

    #[test]
    fn foreign_forged_and_too_old_ids_are_refused() {
        let mut r = Replay::new();
        let other = Replay::new();
        r.open("h1");
        let first = r.record("h1", json(0), false).0.id;
        let foreign = first.replacen(&r.tag, &other.tag, 1);
        assert_eq!(r.resume(&foreign).err(), Some(Refusal::Foreign));
        assert_eq!(r.resume("x").err(), Some(Refusal::Foreign));
        assert_eq!(
            r.resume(&format!("{}-h1-99", r.tag)).err(),
            Some(Refusal::Foreign)
        );
        assert_eq!(
            r.resume(&format!("{}-h9-0", r.tag)).err(),
            Some(Refusal::Forgotten)
        );
        let mut lost = Vec::new();
        for n in 0..REPLAY_EVENTS + 1 {
            lost.extend(r.record("h1", json(n), false).1);
        }
        assert_eq!(lost, [("h1".to_owned(), 1), ("h1".to_owned(), 2)]);
        assert_eq!(r.resume(&first).err(), Some(Refusal::Forgotten));
    }

    #[test]
    fn the_oldest_streams_go_first_past_the_bounds() {
        let mut r = Replay::new();
        for n in 0..REPLAY_STREAMS + 3 {
            r.record(&format!("h{n}"), json(n), false);
        }
        assert_eq!(r.logs.len(), REPLAY_STREAMS);
        assert!(!r.logs.contains_key("h0"));
        let big: Arc<str> = Arc::from("x".repeat(REPLAY_BYTES / 2 + 1));
        r.record("big1", big.clone(), false);
        let (_, lost) = r.record("big2", big, false);
        assert!(lost.iter().any(|(s, _)| s == "big1"), "{lost:?}");
        assert!(r.bytes <= REPLAY_BYTES);
    }
}
