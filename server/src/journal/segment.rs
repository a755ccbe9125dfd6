//! Segment files: frames appended to the newest, read back in time order,
//! the oldest removed past the journal's bounds.
//!
//! A segment is `<first ms>.pjs` (0600), a run of frames ([`super::frame`]).
//! A new one starts each hour (so age bounds remove whole hours) or past
//! [`SEGMENT_BYTES`]. Must hold: a frame is written whole and synced before
//! the next flush, so a crash tears at most the last frame; opening for
//! append cuts a torn tail and says so; a reader stops at a torn tail (the
//! writer may be inside it) and skips the rest of a segment at a corrupt
//! frame, naming it; earlier frames and segments are never rewritten.
//!
//! Reading ([`read_with`]) walks the frames' headers in order and hands
//! each frame to a task on rayon that reads it, checks its CRC and decodes
//! it, a few frames ahead of the one being visited; frames come back in
//! order, and nothing after a bad frame of a segment is visited.

use std::collections::VecDeque;
use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{FileExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crossbeam_channel::Receiver;

use super::frame::{self, Bad, Decoded, Header, Records};

/// A segment grows to this many bytes at most (then the next starts), so
/// the byte bound removes a small share of the journal at a time.
const SEGMENT_BYTES: u64 = 64 << 20;
/// A segment holds one hour at most: the age bound removes whole hours.
pub const SEGMENT_MS: i64 = 3_600_000;
const EXT: &str = "pjs";

/// A segment on disk.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Segment {
    /// Its file.
    pub path: PathBuf,
    /// The time in its name: when its first frame was written.
    pub first_ms: i64,
    /// Its size.
    pub bytes: u64,
    /// Its last change, in ms.
    pub modified_ms: i64,
}

/// The segments of `dir`, oldest first (other files ignored).
pub fn list(dir: &Path) -> std::io::Result<Vec<Segment>> {
    let mut out = Vec::new();
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        let path = entry.path();
        if path.extension().and_then(|e| e.to_str()) != Some(EXT) {
            continue;
        }
        let Some(first_ms) = path
            .file_stem()
            .and_then(|s| s.to_str())
            .and_then(|s| s.parse::<i64>().ok())
        else {
            continue;
        };
        let Ok(meta) = fs::symlink_metadata(&path) else {
            continue;
        };
        if !meta.is_file() {
            continue;
        }
        out.push(Segment {
            path,
            first_ms,
            bytes: meta.len(),
            modified_ms: meta.mtime() * 1000 + meta.mtime_nsec() / 1_000_000,
        });
    }
    out.sort_by_key(|s| s.first_ms);
    Ok(out)
}

/// What a segment's frames are, as far as they can be read.
#[derive(Debug, Default)]
pub struct Walk {
    /// `(offset, header)` of every whole, checked frame.
    pub frames: Vec<(usize, Header)>,
    /// Where the good frames end.
    pub good_end: usize,
    /// The bytes after them: a torn tail (`Bad::Short`) or corruption.
    pub bad: Option<Bad>,
}

/// Walks the frames of a segment's bytes.
pub fn walk(bytes: &[u8]) -> Walk {
    let mut walk = Walk::default();
    let mut at = 0;
    while at < bytes.len() {
        match frame::check(&bytes[at..]) {
            Ok((header, len)) => {
                walk.frames.push((at, header));
                at += len;
            }
            Err(bad) => {
                walk.bad = Some(bad);
                break;
            }
        }
    }
    walk.good_end = at;
    walk
}

/// The writing end: the newest segment, open for appending.
#[derive(Debug)]
pub struct Appender {
    dir: PathBuf,
    file: Option<(File, Segment)>,
}

impl Appender {
    /// Opens `dir` for appending: the newest segment's torn tail is cut
    /// (and reported in the returned notes), a corrupt one left alone and
    /// a new segment started after it.
    pub fn open(dir: &Path) -> std::io::Result<(Appender, Vec<String>)> {
        let mut notes = Vec::new();
        let mut file = None;
        if let Some(last) = list(dir)?.pop() {
            let bytes = fs::read(&last.path)?;
            let walk = walk(&bytes);
            match walk.bad {
                None => {}
                Some(Bad::Short) => {
                    notes.push(format!(
                        "{}: cut a torn tail of {} bytes (a write the last run did not finish)",
                        last.path.display(),
                        bytes.len() - walk.good_end
                    ));
                    let f = OpenOptions::new().write(true).open(&last.path)?;
                    f.set_len(walk.good_end as u64)?;
                    f.sync_data()?;
                }
                Some(Bad::Corrupt(why)) => notes.push(format!(
                    "{}: corrupt after byte {} ({why}); left as it is, a new segment started",
                    last.path.display(),
                    walk.good_end
                )),
            }
            if notes.iter().all(|n| !n.contains("corrupt")) {
                let f = OpenOptions::new().append(true).open(&last.path)?;
                let seg = Segment {
                    bytes: walk.good_end as u64,
                    ..last
                };
                file = Some((f, seg));
            }
        }
        let appender = Appender {
            dir: dir.to_owned(),
            file,
        };
        Ok((appender, notes))
    }

    /// Writes `records` as one frame and syncs it. A new segment starts
    /// when the current one is from another hour or full.
    pub fn append(&mut self, records: &Records, now_ms: i64) -> std::io::Result<()> {
        let bytes = frame::encode(records)?;
        let fresh = match &self.file {
            Some((_, seg)) => {
                seg.first_ms.div_euclid(SEGMENT_MS) != now_ms.div_euclid(SEGMENT_MS)
                    || seg.bytes + bytes.len() as u64 > SEGMENT_BYTES
            }
            None => true,
        };
        if fresh {
            self.start(now_ms)?;
        }
        let Some((file, seg)) = self.file.as_mut() else {
            return Err(std::io::Error::other("no segment open"));
        };
        if let Err(e) = file.write_all(&bytes).and_then(|()| file.sync_data()) {
            // A partial frame (disk full) is cut, so the next append
            // follows the last whole frame.
            let _ = file.set_len(seg.bytes);
            return Err(e);
        }
        seg.bytes += bytes.len() as u64;
        Ok(())
    }

    fn start(&mut self, now_ms: i64) -> std::io::Result<()> {
        let mut first_ms = now_ms;
        // Names are unique and in order even when two starts share a ms.
        if let Some((_, seg)) = &self.file {
            first_ms = first_ms.max(seg.first_ms + 1);
        }
        let path = self.dir.join(format!("{first_ms:013}.{EXT}"));
        let file = OpenOptions::new()
            .append(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)?;
        // The directory entry too, so the segment survives a power loss.
        if let Ok(d) = File::open(&self.dir) {
            let _ = d.sync_all();
        }
        let seg = Segment {
            path,
            first_ms,
            bytes: 0,
            modified_ms: now_ms,
        };
        self.file = Some((file, seg));
        Ok(())
    }

    /// The segment being written (never removed by [`enforce_bounds`]).
    pub fn current(&self) -> Option<&Path> {
        self.file.as_ref().map(|(_, s)| s.path.as_path())
    }
}

/// Removes segments older than `max_age_ms` (their last change) and then
/// the oldest while the journal is over `max_bytes`, never `keep`. The
/// removed paths.
pub fn enforce_bounds(
    dir: &Path,
    max_bytes: u64,
    max_age_ms: i64,
    now_ms: i64,
    keep: Option<&Path>,
) -> std::io::Result<Vec<PathBuf>> {
    let segments = list(dir)?;
    let mut total: u64 = segments.iter().map(|s| s.bytes).sum();
    let mut removed = Vec::new();
    for seg in segments {
        if Some(seg.path.as_path()) == keep {
            continue;
        }
        let expired = now_ms - seg.modified_ms > max_age_ms;
        if expired || total > max_bytes {
            fs::remove_file(&seg.path)?;
            total -= seg.bytes;
            removed.push(seg.path);
        }
    }
    Ok(removed)
}

/// One frame read back, or the segment that could not be read further.
#[derive(Debug)]
pub enum Item<T> {
    /// A frame, decoded.
    Frame(T),
    /// The rest of this segment was skipped: why.
    Skipped {
        /// The segment.
        segment: PathBuf,
        /// What was wrong and where.
        why: String,
    },
}

/// A frame's records, or a segment skipped ([`read`]).
pub type Read = Item<Box<Decoded>>;

/// The frames of every segment of `dir` that may hold records between
/// `since_ms` and `until_ms`, oldest first, every line's records decoded
/// ([`frame::decode`]) and handed to `visit` (which returns false to stop).
pub fn read(
    dir: &Path,
    since_ms: i64,
    until_ms: i64,
    visit: &mut dyn FnMut(Read) -> bool,
) -> std::io::Result<()> {
    let decode = |bytes: &[u8], header: &Header| frame::decode(bytes, header).map(Box::new);
    read_with(dir, since_ms, until_ms, &decode, visit)
}

/// How a frame is decoded: its bytes (header first) as [`frame::check`]
/// accepted them, and its header.
pub type Decode<'a, T> = dyn Fn(&[u8], &Header) -> Result<T, Bad> + Sync + 'a;

/// [`read`], each frame decoded by `decode`. Frames are read, checked and
/// decoded on rayon, a few ahead of the one visited (none ahead when
/// called on a rayon thread, which must not wait on its own pool).
pub fn read_with<T: Send>(
    dir: &Path,
    since_ms: i64,
    until_ms: i64,
    decode: &Decode<'_, T>,
    visit: &mut dyn FnMut(Item<T>) -> bool,
) -> std::io::Result<()> {
    let segments = list(dir)?;
    let ahead = if rayon::current_thread_index().is_some() {
        0
    } else {
        rayon::current_num_threads() * 2 + 2
    };
    rayon::in_place_scope(|scope| {
        let mut reader = Reader {
            visit,
            pending: VecDeque::new(),
            dead: None,
            stopped: false,
        };
        for (index, seg) in segments.iter().enumerate() {
            // Every record was taken before its frame was written, so a
            // segment last changed before `since_ms` holds nothing after it;
            // a record's own time may be earlier than its segment's name (a
            // gap reaches back), so the name bounds nothing and the frames'
            // headers are checked instead.
            if seg.modified_ms < since_ms {
                continue;
            }
            let file = match File::open(&seg.path) {
                Ok(f) => Arc::new(f),
                Err(e) => {
                    reader.queue(Pending::ready(seg, index, 0, Got::Failed(e.to_string())));
                    continue;
                }
            };
            let len = file.metadata().map_or(0, |m| m.len());
            let mut at = 0u64;
            while at < len && !reader.stopped && reader.dead != Some(index) {
                let header = match read_header(&file, at) {
                    Ok(h) => h,
                    Err(got) => {
                        reader.queue(Pending::ready(seg, index, at, got));
                        break;
                    }
                };
                let wanted = header.last_ms >= since_ms && header.first_ms <= until_ms;
                let (tx, rx) = crossbeam_channel::bounded(1);
                let task_file = Arc::clone(&file);
                let job = move || {
                    // The reader waits on `rx` until this is sent.
                    let _ = tx.send(read_frame(&task_file, at, &header, wanted, decode));
                };
                let pending = Pending {
                    segment: seg.path.clone(),
                    index,
                    at,
                    got: rx,
                };
                if ahead == 0 {
                    job();
                } else {
                    scope.spawn(move |_| job());
                }
                reader.queue(pending);
                while reader.pending.len() > ahead && !reader.stopped {
                    reader.next();
                }
                at += (frame::HEADER + header.compressed) as u64;
            }
        }
        while !reader.pending.is_empty() && !reader.stopped {
            reader.next();
        }
    });
    Ok(())
}

/// What became of one frame.
enum Got<T> {
    /// Decoded.
    Frame(T),
    /// Checked, outside the span.
    Unwanted,
    /// Not a frame: a torn tail (`Short`) or corruption.
    Bad(Bad),
    /// The file could not be read.
    Failed(String),
}

/// A frame being read, in the order frames are visited.
struct Pending<T> {
    segment: PathBuf,
    index: usize,
    at: u64,
    got: Receiver<Got<T>>,
}

impl<T> Pending<T> {
    /// A frame whose fate is already known.
    fn ready(seg: &Segment, index: usize, at: u64, got: Got<T>) -> Pending<T> {
        let (tx, rx) = crossbeam_channel::bounded(1);
        let _ = tx.send(got);
        Pending {
            segment: seg.path.clone(),
            index,
            at,
            got: rx,
        }
    }
}

/// The visiting end: frames in order, nothing of a segment after its
/// first bad frame.
struct Reader<'v, T> {
    visit: &'v mut dyn FnMut(Item<T>) -> bool,
    pending: VecDeque<Pending<T>>,
    /// The segment whose bad frame was met (its later frames are dropped).
    dead: Option<usize>,
    /// `visit` asked to stop.
    stopped: bool,
}

impl<T> Reader<'_, T> {
    fn queue(&mut self, pending: Pending<T>) {
        self.pending.push_back(pending);
    }

    /// Waits for the oldest pending frame and visits it.
    fn next(&mut self) {
        let Some(p) = self.pending.pop_front() else {
            return;
        };
        let got = p
            .got
            .recv()
            .unwrap_or_else(|_| Got::Failed("a reading task failed".into()));
        if self.dead == Some(p.index) {
            return;
        }
        let item = match got {
            Got::Frame(t) => Item::Frame(t),
            Got::Unwanted => return,
            Got::Bad(Bad::Short) => {
                // A torn tail: the writer may be inside it.
                self.dead = Some(p.index);
                return;
            }
            Got::Bad(bad) => {
                self.dead = Some(p.index);
                skipped(&p.segment, p.at, &bad)
            }
            Got::Failed(why) => {
                self.dead = Some(p.index);
                Item::Skipped {
                    segment: p.segment,
                    why,
                }
            }
        };
        if !(self.visit)(item) {
            self.stopped = true;
        }
    }
}

/// The header of the frame at `at`.
fn read_header<T>(file: &File, at: u64) -> Result<Header, Got<T>> {
    let mut bytes = [0u8; frame::HEADER];
    read_at(file, &mut bytes, at)?;
    frame::header(&bytes).map_err(Got::Bad)
}

/// Reads, checks and (when `wanted`) decodes the frame at `at`.
fn read_frame<T>(
    file: &File,
    at: u64,
    header: &Header,
    wanted: bool,
    decode: &Decode<'_, T>,
) -> Got<T> {
    let mut bytes = vec![0u8; frame::HEADER + header.compressed];
    if let Err(got) = read_at(file, &mut bytes, at) {
        return got;
    }
    if let Err(bad) = frame::check(&bytes) {
        return Got::Bad(bad);
    }
    if !wanted {
        return Got::Unwanted;
    }
    match decode(&bytes, header) {
        Ok(t) => Got::Frame(t),
        Err(bad) => Got::Bad(bad),
    }
}

/// Fills `buf` from `at`; the file ending first is a torn tail.
fn read_at<T>(file: &File, buf: &mut [u8], at: u64) -> Result<(), Got<T>> {
    file.read_exact_at(buf, at).map_err(|e| match e.kind() {
        std::io::ErrorKind::UnexpectedEof => Got::Bad(Bad::Short),
        _ => Got::Failed(e.to_string()),
    })
}

fn skipped<T>(segment: &Path, at: u64, bad: &Bad) -> Item<T> {
    let why = match bad {
        Bad::Short => "cut short".to_owned(),
        Bad::Corrupt(w) => w.clone(),
    };
    Item::Skipped {
        segment: segment.to_owned(),
        why: format!("corrupt at byte {at}: {why}"),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::super::frame::{Line, Origin};
    use super::*;

    fn dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("pj-seg-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        super::super::dir::ensure(&d).unwrap();
        d
    }

    fn records(texts: &[&str], t: i64) -> Records {
        let mut r = Records::default();
        let o = r.origin(&Origin {
            server: "s".into(),
            pane: "%1".into(),
            session: "m".into(),
            window: "w".into(),
            title: "t".into(),
        });
        for s in texts {
            r.lines.push(Line {
                origin: o,
                time_ms: t,
                text: s.as_bytes().to_vec(),
            });
        }
        r
    }

    fn lines(dir: &Path) -> (Vec<String>, Vec<String>) {
        let mut lines = Vec::new();
        let mut skipped = Vec::new();
        read(dir, i64::MIN, i64::MAX, &mut |r| {
            match r {
                Read::Frame(d) => {
                    for i in 0..d.lines.len() {
                        lines.push(String::from_utf8_lossy(d.line(i)).into_owned());
                    }
                }
                Read::Skipped { segment, why } => {
                    skipped.push(format!("{} {why}", segment.display()))
                }
            }
            true
        })
        .unwrap();
        (lines, skipped)
    }

    #[test]
    fn a_torn_tail_is_cut_at_open_and_reported() {
        let d = dir("torn");
        let (mut a, notes) = Appender::open(&d).unwrap();
        assert!(notes.is_empty());
        a.append(&records(&["one", "two"], 1_000), 1_000).unwrap();
        a.append(&records(&["three"], 1_001), 1_001).unwrap();
        let path = a.current().unwrap().to_owned();
        drop(a);
        let mode = fs::metadata(&path).unwrap().mode() & 0o777;
        assert_eq!(mode, 0o600);
        // Half a frame, as a crash leaves it.
        let half = frame::encode(&records(&["four"], 1_002)).unwrap();
        let mut f = OpenOptions::new().append(true).open(&path).unwrap();
        f.write_all(&half[..half.len() / 2]).unwrap();
        assert_eq!(lines(&d).0, ["one", "two", "three"]);
        let (mut a, notes) = Appender::open(&d).unwrap();
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(notes[0].contains("torn tail"), "{notes:?}");
        a.append(&records(&["five"], 1_003), 1_003).unwrap();
        assert_eq!(
            lines(&d),
            (
                vec!["one".into(), "two".into(), "three".into(), "five".into()],
                vec![]
            )
        );
        fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_corrupt_segment_is_skipped_and_named() {
        let d = dir("corrupt");
        let (mut a, _) = Appender::open(&d).unwrap();
        a.append(&records(&["old"], 1_000), 1_000).unwrap();
        let first = a.current().unwrap().to_owned();
        a.append(&records(&["kept"], 1_001), 1_001).unwrap();
        // The next hour: a second segment.
        a.append(&records(&["new"], SEGMENT_MS + 5), SEGMENT_MS + 5)
            .unwrap();
        assert_ne!(a.current().unwrap(), first);
        drop(a);
        let mut bytes = fs::read(&first).unwrap();
        let second_frame = walk(&bytes).frames[1].0;
        bytes[second_frame + frame::HEADER + 2] ^= 0xff;
        fs::write(&first, &bytes).unwrap();
        let (lines, skipped) = lines(&d);
        assert_eq!(lines, ["old", "new"]);
        assert_eq!(skipped.len(), 1);
        assert!(
            skipped[0].contains(&*first.to_string_lossy()),
            "{skipped:?}"
        );
        assert!(skipped[0].contains("checksum"), "{skipped:?}");
        fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_bad_frame_among_frames_read_ahead_ends_its_segment_only() {
        // More frames than are read ahead, the bad one in the middle: its
        // own CRC, then (another run) its header's magic.
        for (name, flip) in [("crc", frame::HEADER + 1), ("magic", 0)] {
            let d = dir(&format!("ahead-{name}"));
            let (mut a, _) = Appender::open(&d).unwrap();
            for i in 0..30 {
                a.append(
                    &records(&[format!("first {i}").as_str()], 1_000 + i),
                    1_000 + i,
                )
                .unwrap();
            }
            let first = a.current().unwrap().to_owned();
            a.append(&records(&["next hour"], SEGMENT_MS), SEGMENT_MS)
                .unwrap();
            drop(a);
            let mut bytes = fs::read(&first).unwrap();
            let bad = walk(&bytes).frames[17].0;
            bytes[bad + flip] ^= 0x55;
            fs::write(&first, &bytes).unwrap();
            let (lines, skipped) = lines(&d);
            let mut want: Vec<String> = (0..17).map(|i| format!("first {i}")).collect();
            want.push("next hour".into());
            assert_eq!(lines, want, "{name}");
            assert_eq!(skipped.len(), 1, "{name}: {skipped:?}");
            assert!(
                skipped[0].contains(&format!("corrupt at byte {bad}")),
                "{name}: {skipped:?}"
            );
            fs::remove_dir_all(&d).unwrap();
        }
    }

    #[test]
    fn bounds_remove_the_oldest_first_never_the_current() {
        let d = dir("bounds");
        let (mut a, _) = Appender::open(&d).unwrap();
        for h in 0..4 {
            let t = h * SEGMENT_MS + 1;
            a.append(&records(&["x"; 100], t), t).unwrap();
        }
        let all = list(&d).unwrap();
        assert_eq!(all.len(), 4);
        let now = all[3].modified_ms;
        let two = all[2].bytes + all[3].bytes;
        let removed = enforce_bounds(&d, two, i64::MAX / 2, now, a.current()).unwrap();
        assert_eq!(removed, [all[0].path.clone(), all[1].path.clone()]);
        let removed = enforce_bounds(&d, 0, i64::MAX / 2, now, a.current()).unwrap();
        assert_eq!(removed, [all[2].path.clone()]);
        assert_eq!(list(&d).unwrap().len(), 1);
        fs::remove_dir_all(&d).unwrap();
    }
}
