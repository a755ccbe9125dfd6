//! The tails a search across time asks for ([`super::search::Query::tails`]):
//! each pane's lines read from the span's start to the journal's end, the
//! times of its last `keep` lines and the texts of its last
//! [`TAIL_TEXTS`], gathered from frames in order while most of those
//! frames stay compressed.
//!
//! A frame the search could skip but that holds a tailed pane's lines is
//! handed over compressed ([`Tails::held`]): its index's line counts give
//! the pane's `read` at once, and its bytes are held only while fewer
//! than `max(keep, TAIL_TEXTS)` of the pane's lines follow it in the
//! journal. A frame that many newer lines cover is let go unread; the
//! frames still held at the end are decompressed then ([`Tails::finish`]),
//! and so is the oldest held frame whenever the held bytes pass
//! [`HELD_BYTES_MAX`].
//!
//! Must hold: the tails equal those of a search that decompresses every
//! frame (read, times, texts), whichever frames were held or decompressed;
//! a pane with no line read has no tail.

use std::collections::{BTreeMap, HashMap, VecDeque};

use rayon::prelude::*;

use super::frame::{self, Block, Header, Run};
use super::index::{self, Index};
use super::search::PaneKey;

/// The texts of a pane's last lines kept in its [`Tail`].
pub const TAIL_TEXTS: usize = 64;

/// Compressed bytes held for tails at most; past it the oldest held frame
/// is decompressed at once (its pieces then hold only their lines). The
/// unit tests' frames are small: a cap of a few of them makes their
/// searches take that path too.
pub const HELD_BYTES_MAX: usize = if cfg!(test) { 1 << 10 } else { 32 << 20 };

/// A pane's lines from the span's start to the journal's end.
#[derive(Clone, Debug, Default)]
pub struct Tail {
    /// Its lines read (the next line's ordinal).
    pub read: u64,
    /// The times of its last lines, oldest first (at most what was asked).
    pub times: VecDeque<i64>,
    /// The texts of its last [`TAIL_TEXTS`] lines, oldest first.
    pub texts: VecDeque<Vec<u8>>,
}

impl Tail {
    /// Takes in a run of this pane's lines, keeping the last `keep` times
    /// and [`TAIL_TEXTS`] texts.
    fn take(&mut self, b: &Block, starts: &[usize], run: &Run, keep: usize) {
        self.read += run.len as u64;
        for _ in 0..run.len.min(keep) {
            self.times.push_back(run.time_ms);
        }
        while self.times.len() > keep {
            self.times.pop_front();
        }
        let end = run.first + run.len;
        for i in end - run.len.min(TAIL_TEXTS)..end {
            self.texts.push_back(b.line(starts, i).to_vec());
        }
        while self.texts.len() > TAIL_TEXTS {
            self.texts.pop_front();
        }
    }

    /// Appends `later` (the same pane's next lines), trimmed as [`take`]
    /// trims.
    ///
    /// [`take`]: Tail::take
    fn extend(&mut self, later: Tail, keep: usize) {
        self.read += later.read;
        self.times.extend(later.times);
        while self.times.len() > keep {
            self.times.pop_front();
        }
        self.texts.extend(later.texts);
        while self.texts.len() > TAIL_TEXTS {
            self.texts.pop_front();
        }
    }
}

/// One frame's share of a pane's tail.
enum Piece {
    /// Decompressed: the pane's last lines in it.
    Taken(Tail),
    /// Still compressed: the held frame's number.
    Held(u64),
}

/// One tailed pane: its lines read, and the frames that may still hold
/// its last lines, oldest first, each with the pane's lines in it.
struct Queue {
    keep: usize,
    read: u64,
    pieces: VecDeque<(u64, Piece)>,
    /// The lines of `pieces`.
    lines: u64,
}

/// A frame held compressed, and how many queues hold it.
struct Held {
    bytes: Vec<u8>,
    header: Header,
    queues: usize,
}

/// Every tailed pane's queue, and the frames they hold.
#[derive(Default)]
pub struct Tails {
    queues: HashMap<PaneKey, Queue>,
    /// The tailed panes under their index key ([`index::pane_key`]).
    keys: HashMap<u64, PaneKey>,
    held: BTreeMap<u64, Held>,
    held_bytes: usize,
    next: u64,
    /// Held frames decompressed after all.
    decoded: u64,
    /// Held frames that would not decompress, and why.
    failed: Vec<String>,
}

/// The tails gathered ([`Tails::finish`]).
pub struct Done {
    /// Of every tailed pane with a line read.
    pub tails: HashMap<PaneKey, Tail>,
    /// Frames held and then decompressed after all.
    pub decoded: u64,
    /// Held frames that would not decompress, and why.
    pub failed: Vec<String>,
}

impl Tails {
    /// The tails of the panes in `asked`, with how many lines' times each.
    pub fn new(asked: &HashMap<PaneKey, usize>) -> Tails {
        let mut tails = Tails::default();
        for (key, &keep) in asked {
            let queue = Queue {
                keep,
                read: 0,
                pieces: VecDeque::new(),
                lines: 0,
            };
            tails.queues.insert(key.clone(), queue);
            tails
                .keys
                .insert(index::pane_key(&key.0, &key.1), key.clone());
        }
        tails
    }

    /// Takes in a decompressed frame's lines of tailed panes.
    pub fn block(&mut self, b: &Block) {
        if self.queues.is_empty() {
            return;
        }
        // A pane may appear under two origins (renamed within the frame).
        let slots: Vec<Option<&PaneKey>> = b
            .origins
            .iter()
            .map(|o| {
                self.queues
                    .get_key_value(&(o.server.clone(), o.pane.clone()))
                    .map(|(k, _)| k)
            })
            .collect();
        let mut pieces: Vec<(PaneKey, Tail)> = Vec::new();
        let mut starts = None;
        for run in &b.runs {
            let Some(Some(key)) = slots.get(run.origin) else {
                continue;
            };
            let Some(queue) = self.queues.get(*key) else {
                continue;
            };
            let starts = starts.get_or_insert_with(|| b.starts());
            let at = match pieces.iter().position(|(k, _)| k == *key) {
                Some(at) => at,
                None => {
                    pieces.push(((*key).clone(), Tail::default()));
                    pieces.len() - 1
                }
            };
            pieces[at].1.take(b, starts, run, queue.keep);
        }
        for (key, piece) in pieces {
            let lines = piece.read;
            self.push(&key, lines, Piece::Taken(piece));
        }
    }

    /// Takes in a frame the search leaves compressed: its index's line
    /// counts for the tailed panes in it, its bytes held while a tail may
    /// need them.
    pub fn held(&mut self, index: &Index, bytes: Vec<u8>, header: Header) {
        let number = self.next;
        self.next += 1;
        let len = bytes.len();
        self.held.insert(
            number,
            Held {
                bytes,
                header,
                queues: 0,
            },
        );
        self.held_bytes += len;
        for &(k, lines) in &index.panes {
            if let Some(key) = self.keys.get(&k).cloned() {
                if let Some(h) = self.held.get_mut(&number) {
                    h.queues += 1;
                }
                self.push(&key, lines, Piece::Held(number));
            }
        }
        // Held by no queue any more (newer lines in it cover the tail).
        if self.held.get(&number).is_some_and(|h| h.queues == 0) {
            self.release(number);
        }
        while self.held_bytes > HELD_BYTES_MAX {
            let Some((&oldest, _)) = self.held.first_key_value() else {
                break;
            };
            let Some(h) = self.held.remove(&oldest) else {
                break;
            };
            self.held_bytes -= h.bytes.len();
            let decoded = frame::decode_block(&h.bytes, &h.header);
            self.resolve(oldest, decoded);
        }
    }

    /// The tails, the frames still held decompressed for them.
    pub fn finish(mut self) -> Done {
        let held = std::mem::take(&mut self.held);
        let decoded: Vec<(u64, Result<Block, frame::Bad>)> = held
            .into_par_iter()
            .map(|(number, h)| (number, frame::decode_block(&h.bytes, &h.header)))
            .collect();
        for (number, block) in decoded {
            self.resolve(number, block);
        }
        let mut out = HashMap::new();
        for (key, queue) in self.queues {
            if queue.read == 0 {
                continue;
            }
            let mut tail = Tail::default();
            for (_, piece) in queue.pieces {
                if let Piece::Taken(t) = piece {
                    tail.extend(t, queue.keep);
                }
            }
            tail.read = queue.read;
            out.insert(key, tail);
        }
        Done {
            tails: out,
            decoded: self.decoded,
            failed: self.failed,
        }
    }

    /// Adds a frame's `lines` of the pane `key` to its queue, and lets go
    /// of the oldest pieces the newer ones cover.
    fn push(&mut self, key: &PaneKey, lines: u64, piece: Piece) {
        let Some(queue) = self.queues.get_mut(key) else {
            return;
        };
        queue.read += lines;
        queue.lines += lines;
        queue.pieces.push_back((lines, piece));
        let need = queue.keep.max(TAIL_TEXTS) as u64;
        let mut released = Vec::new();
        while let Some((front, _)) = queue.pieces.front() {
            if queue.lines - front < need {
                break;
            }
            queue.lines -= front;
            if let Some((_, Piece::Held(number))) = queue.pieces.pop_front() {
                released.push(number);
            }
        }
        for number in released {
            let last = self.held.get_mut(&number).is_some_and(|h| {
                h.queues -= 1;
                h.queues == 0
            });
            if last {
                self.release(number);
            }
        }
    }

    fn release(&mut self, number: u64) {
        if let Some(h) = self.held.remove(&number) {
            self.held_bytes -= h.bytes.len();
        }
    }

    /// Held frame `number`, decompressed: each queue's piece of it becomes
    /// the pane's lines in it.
    fn resolve(&mut self, number: u64, block: Result<Block, frame::Bad>) {
        let block = match block {
            Ok(b) => b,
            Err(bad) => {
                self.failed.push(format!(
                    "a frame held for a tail would not decompress: {bad:?}"
                ));
                return;
            }
        };
        self.decoded += 1;
        let starts = block.starts();
        for (key, queue) in &mut self.queues {
            for (_, piece) in &mut queue.pieces {
                if !matches!(piece, Piece::Held(n) if *n == number) {
                    continue;
                }
                let mut tail = Tail::default();
                for run in &block.runs {
                    let same = block
                        .origins
                        .get(run.origin)
                        .is_some_and(|o| o.server == key.0 && o.pane == key.1);
                    if same {
                        tail.take(&block, &starts, run, queue.keep);
                    }
                }
                *piece = Piece::Taken(tail);
            }
        }
    }
}
