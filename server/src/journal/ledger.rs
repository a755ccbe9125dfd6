//! The command ledger on disk: one record per command (which pane, what
//! was typed, where, when, how it ended, and where its output lies on the
//! pane's steady row scale), and a command's output read back from the
//! journal's lines and the writer's last view of the pane.
//!
//! Files are `<first ms>.pjl` beside the segments (0600, in the journal's
//! 0700 directory), a new one each hour. A record is `PJL1`, its length,
//! a CRC-32 of its bytes, then the command as JSON; a command is written
//! again whole when it changes, the last record of an id counting.
//! Must hold: each record is synced when written, a torn last record is
//! cut at open and reported, a record that fails its CRC ends what is read
//! of its file; files go with the journal's age bound, and past a
//! sixteenth of its byte bound the oldest go first.

use std::collections::{BTreeMap, HashMap};
use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::segment::{self, Read};
use super::view::PaneView;

const MAGIC: [u8; 4] = *b"PJL1";
const HEAD: usize = 12;
const EXT: &str = "pjl";
/// A record's JSON at most (a command line is cut well before).
const MAX_RECORD: usize = 1 << 20;
/// A command line kept at most (bytes; longer ones are cut).
pub const MAX_COMMAND: usize = 16 << 10;

/// Where a command's output lies: rows of its pane on the steady scale
/// ([`super::track::Row`]).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Span {
    /// The epoch the rows belong to.
    pub epoch: u64,
    /// The first row after the command's line.
    pub from_row: u64,
    /// The row the next prompt starts at (`None` while it runs).
    pub to_row: Option<u64>,
}

/// One command.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Command {
    /// Random, 16 hex digits.
    pub command_id: String,
    /// The tmux server, as the journal's origins name it.
    pub server: String,
    /// `%N`.
    pub pane_id: String,
    /// The pane's session when the command started.
    pub session: String,
    /// The command line (redacted unless the journal keeps secrets).
    pub command: Option<String>,
    /// The pane's directory when it started.
    pub cwd: Option<String>,
    /// When its output started (ms).
    pub started_ms: i64,
    /// When its end was seen (ms).
    pub ended_ms: Option<i64>,
    /// The status the shell reported.
    pub exit_status: Option<i32>,
    /// `osc133` (the shell's marks), `tmux` (the marks, its status and
    /// times from tmux's own report, tmux 3.8) or `run_command`.
    pub source: String,
    /// Where the output lies, when the ledger could place it.
    pub output: Option<Span>,
    /// Lines of output, once it ended and was placed.
    pub output_lines: Option<u64>,
    /// What the ledger could not tell about this command.
    pub notes: Vec<String>,
}

/// The writing end: the newest ledger file.
#[derive(Debug)]
pub struct Book {
    dir: PathBuf,
    file: Option<(File, i64)>,
}

impl Book {
    /// Opens the ledger in `dir` (the journal's, already checked): the
    /// newest file's torn tail is cut, and said in the notes.
    pub fn open(dir: &Path) -> std::io::Result<(Book, Vec<String>)> {
        let mut notes = Vec::new();
        let mut file = None;
        if let Some((first_ms, path)) = files(dir)?.pop() {
            let bytes = fs::read(&path)?;
            let (_, good, bad) = walk(&bytes);
            if let Some(why) = bad {
                notes.push(format!(
                    "{}: cut {} bytes after the last whole record ({why})",
                    path.display(),
                    bytes.len() - good
                ));
                let f = OpenOptions::new().write(true).open(&path)?;
                f.set_len(good as u64)?;
                f.sync_data()?;
            }
            let f = OpenOptions::new().append(true).open(&path)?;
            file = Some((f, first_ms));
        }
        Ok((
            Book {
                dir: dir.to_owned(),
                file,
            },
            notes,
        ))
    }

    /// Writes `command` and syncs it.
    pub fn write(&mut self, command: &Command, now_ms: i64) -> std::io::Result<()> {
        let json = serde_json::to_vec(command).map_err(std::io::Error::other)?;
        let mut rec = Vec::with_capacity(HEAD + json.len());
        rec.extend_from_slice(&MAGIC);
        rec.extend_from_slice(&u32::try_from(json.len()).unwrap_or(u32::MAX).to_le_bytes());
        rec.extend_from_slice(&crc32fast::hash(&json).to_le_bytes());
        rec.extend_from_slice(&json);
        let hour = |ms: i64| ms.div_euclid(segment::SEGMENT_MS);
        if self
            .file
            .as_ref()
            .is_none_or(|(_, first)| hour(*first) != hour(now_ms))
        {
            let first = self
                .file
                .as_ref()
                .map_or(now_ms, |(_, f)| now_ms.max(f + 1));
            let path = self.dir.join(format!("{first:013}.{EXT}"));
            let f = OpenOptions::new()
                .append(true)
                .create_new(true)
                .mode(0o600)
                .open(&path)?;
            if let Ok(d) = File::open(&self.dir) {
                let _ = d.sync_all();
            }
            self.file = Some((f, first));
        }
        let Some((f, _)) = self.file.as_mut() else {
            return Err(std::io::Error::other("no ledger file open"));
        };
        let len = f.metadata()?.len();
        if let Err(e) = f.write_all(&rec).and_then(|()| f.sync_data()) {
            let _ = f.set_len(len);
            return Err(e);
        }
        Ok(())
    }

    /// Removes files unchanged for `max_age_ms`, then the oldest while the
    /// ledger is over `max_bytes`, never the one being written.
    pub fn enforce_bounds(&self, max_bytes: u64, max_age_ms: i64, now_ms: i64) {
        let Ok(all) = files(&self.dir) else { return };
        let current = self.file.as_ref().map(|(_, first)| *first);
        let sized: Vec<(i64, PathBuf, u64, i64)> = all
            .into_iter()
            .filter_map(|(first, path)| {
                let m = fs::symlink_metadata(&path).ok()?;
                Some((first, path, m.len(), m.mtime() * 1000))
            })
            .collect();
        let mut total: u64 = sized.iter().map(|s| s.2).sum();
        for (first, path, bytes, modified) in sized {
            if Some(first) == current {
                continue;
            }
            let over = now_ms - modified > max_age_ms || total > max_bytes;
            if over && fs::remove_file(&path).is_ok() {
                total -= bytes;
            }
        }
    }
}

/// The ledger's files in `dir`, oldest first.
pub fn files(dir: &Path) -> std::io::Result<Vec<(i64, PathBuf)>> {
    let mut out = Vec::new();
    for entry in fs::read_dir(dir)? {
        let path = entry?.path();
        if path.extension().and_then(|e| e.to_str()) != Some(EXT) {
            continue;
        }
        let first = path
            .file_stem()
            .and_then(|s| s.to_str()?.parse::<i64>().ok());
        let is_file = fs::symlink_metadata(&path).is_ok_and(|m| m.is_file());
        if let (Some(first), true) = (first, is_file) {
            out.push((first, path));
        }
    }
    out.sort();
    Ok(out)
}

/// The records of a file's bytes, where the whole ones end, and why the
/// rest is not one.
fn walk(bytes: &[u8]) -> (Vec<Command>, usize, Option<String>) {
    let mut out = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        let Some(head) = bytes.get(at..at + HEAD) else {
            return (out, at, Some("a torn record".into()));
        };
        if head[..4] != MAGIC {
            return (out, at, Some("no record magic".into()));
        }
        let len = u32::from_le_bytes([head[4], head[5], head[6], head[7]]) as usize;
        let crc = u32::from_le_bytes([head[8], head[9], head[10], head[11]]);
        if len > MAX_RECORD {
            return (out, at, Some("a length past the limit".into()));
        }
        let Some(body) = bytes.get(at + HEAD..at + HEAD + len) else {
            return (out, at, Some("a torn record".into()));
        };
        if crc32fast::hash(body) != crc {
            return (out, at, Some("checksum mismatch".into()));
        }
        match serde_json::from_slice::<Command>(body) {
            Ok(c) => out.push(c),
            Err(e) => return (out, at, Some(format!("not a record: {e}"))),
        }
        at += HEAD + len;
    }
    (out, at, None)
}

/// Every command in the ledger of `dir` as last written, oldest start
/// first, and notes on files that could not be read whole.
pub fn read_all(dir: &Path) -> std::io::Result<(Vec<Command>, Vec<String>)> {
    let mut by_id: HashMap<String, Command> = HashMap::new();
    let mut notes = Vec::new();
    for (_, path) in files(dir)? {
        let bytes = match fs::read(&path) {
            Ok(b) => b,
            Err(e) => {
                notes.push(format!("{}: {e}", path.display()));
                continue;
            }
        };
        let (records, _, bad) = walk(&bytes);
        if let Some(why) = bad {
            notes.push(format!(
                "{}: read up to a bad record ({why})",
                path.display()
            ));
        }
        for c in records {
            by_id.insert(c.command_id.clone(), c);
        }
    }
    let mut all: Vec<Command> = by_id.into_values().collect();
    all.sort_by(|a, b| (a.started_ms, &a.command_id).cmp(&(b.started_ms, &b.command_id)));
    Ok((all, notes))
}

/// A command's output lines, oldest first, read back.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Output {
    /// The lines, in row order.
    pub lines: Vec<Vec<u8>>,
    /// The journal's gaps over the pane while the command ran: lines of
    /// it may be missing.
    pub gaps: Vec<String>,
    /// Segments that could not be read.
    pub skipped: Vec<String>,
}

/// The span `command`'s output is read from. An ended command whose end
/// row was never placed (`to_row` none) would read on to the pane's newest
/// row, through every later command: it stops where the next command of
/// its pane and epoch starts its output, and a note says what that bound
/// includes. `all` is the ledger of the command's server.
pub fn bounded_span(all: &[Command], command: &Command) -> (Option<Span>, Option<String>) {
    let Some(span) = command.output.clone() else {
        return (None, None);
    };
    if span.to_row.is_some() || command.ended_ms.is_none() {
        return (Some(span), None);
    }
    let next = all
        .iter()
        .filter(|c| c.pane_id == command.pane_id && c.server == command.server)
        .filter_map(|c| c.output.as_ref())
        .filter(|o| o.epoch == span.epoch && o.from_row > span.from_row)
        .map(|o| o.from_row)
        .min();
    let note = match next {
        Some(_) => "its end's row was not placed: its output is read up to the next command's, and may end with that command's prompt and command line",
        None => "its end's row was not placed: its output is read up to the pane's newest row, and may hold what the pane printed after it",
    };
    let bounded = Span {
        to_row: next,
        ..span
    };
    (Some(bounded), Some(note.into()))
}

/// `command`'s output: the journal's lines of its pane in its span, then
/// the lines the writer last saw below history (`view`, when the pane is
/// still there), each row once.
pub fn output(dir: &Path, command: &Command, view: Option<&PaneView>) -> std::io::Result<Output> {
    let mut out = Output::default();
    let Some(span) = &command.output else {
        return Ok(out);
    };
    let to = span.to_row.unwrap_or(u64::MAX);
    let within = |epoch: u64, row: u64| epoch == span.epoch && row >= span.from_row && row < to;
    let mut rows: BTreeMap<u64, Vec<u8>> = BTreeMap::new();
    segment::read(dir, command.started_ms, i64::MAX, &mut |read| {
        match read {
            Read::Frame(d) => {
                let end = command.ended_ms.unwrap_or(i64::MAX);
                for g in &d.gaps {
                    let pane = d.origins.get(g.origin).map(|o| o.pane.as_str());
                    let ours = pane == Some(command.pane_id.as_str()) || pane == Some("*");
                    if ours && g.to_ms >= command.started_ms && g.from_ms <= end {
                        out.gaps.push(g.reason.clone());
                    }
                }
                for (i, row) in d.rows.iter().enumerate() {
                    let Some((o, _)) = d.lines.get(i) else {
                        continue;
                    };
                    let Some(origin) = d.origins.get(*o) else {
                        continue;
                    };
                    if origin.pane == command.pane_id
                        && origin.server == command.server
                        && within(row.epoch, row.row)
                    {
                        rows.entry(row.row).or_insert_with(|| d.line(i).to_vec());
                    }
                }
            }
            Read::Skipped { segment, why } => {
                out.skipped.push(format!("{}: {why}", segment.display()));
            }
        }
        true
    })?;
    if let Some(v) = view.filter(|v| v.server == command.server) {
        for (row, text) in &v.screen {
            if within(row.epoch, row.row) {
                rows.entry(row.row).or_insert_with(|| text.clone());
            }
        }
    }
    out.lines = rows.into_values().collect();
    Ok(out)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    fn dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("panescan-ledger-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        fs::create_dir_all(&d).unwrap();
        d
    }

    fn cmd(id: &str, status: Option<i32>) -> Command {
        Command {
            command_id: id.into(),
            pane_id: "%1".into(),
            started_ms: 5,
            exit_status: status,
            ..Command::default()
        }
    }

    /// An ended command with no end row stops at the next command of its
    /// pane and epoch (not another pane's, not another epoch's, not an
    /// earlier one), and says so; a placed end or a running command is
    /// left as it is.
    #[test]
    fn an_unplaced_end_is_bounded_by_the_next_command_of_its_pane() {
        let with = |id: &str, pane: &str, epoch, from_row, to_row, ended| Command {
            pane_id: pane.into(),
            ended_ms: ended,
            output: Some(Span {
                epoch,
                from_row,
                to_row,
            }),
            ..cmd(id, None)
        };
        let open = with("a", "%1", 7, 10, None, Some(9));
        let all = vec![
            with("old", "%1", 7, 2, Some(8), Some(1)),
            open.clone(),
            with("other-pane", "%2", 7, 12, None, None),
            with("other-epoch", "%1", 8, 11, None, None),
            with("far", "%1", 7, 40, None, None),
            with("next", "%1", 7, 30, Some(35), Some(20)),
        ];
        let (span, note) = bounded_span(&all, &open);
        assert_eq!(span.unwrap().to_row, Some(30));
        assert!(note.unwrap().contains("next command"));
        let (span, note) = bounded_span(&all[..4], &open);
        assert_eq!(span.unwrap().to_row, None);
        assert!(note.unwrap().contains("newest row"));
        let running = with("r", "%1", 7, 10, None, None);
        assert_eq!(bounded_span(&all, &running), (running.output.clone(), None));
        let placed = with("p", "%1", 7, 10, Some(12), Some(3));
        assert_eq!(bounded_span(&all, &placed), (placed.output.clone(), None));
        assert_eq!(bounded_span(&all, &cmd("none", Some(0))), (None, None));
    }

    #[test]
    fn the_last_record_of_a_command_counts_and_a_torn_tail_is_cut() {
        let d = dir("torn");
        let (mut book, notes) = Book::open(&d).unwrap();
        assert!(notes.is_empty());
        book.write(&cmd("a", None), 1000).unwrap();
        book.write(&cmd("b", Some(1)), 1000).unwrap();
        book.write(&cmd("a", Some(0)), 1000).unwrap();
        let (all, notes) = read_all(&d).unwrap();
        assert!(notes.is_empty());
        assert_eq!(
            all.iter().map(|c| c.exit_status).collect::<Vec<_>>(),
            vec![Some(0), Some(1)]
        );
        let (_, path) = files(&d).unwrap().pop().unwrap();
        let mode = fs::metadata(&path).unwrap().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let len = fs::metadata(&path).unwrap().len();
        OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap()
            .write_all(b"PJL1\x05\0")
            .unwrap();
        let (all, notes) = read_all(&d).unwrap();
        assert_eq!((all.len(), notes.len()), (2, 1));
        let (_, notes) = Book::open(&d).unwrap();
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert_eq!(fs::metadata(&path).unwrap().len(), len);
        // A flipped byte ends what is read of the file, never a panic.
        let bytes = fs::read(&path).unwrap();
        for i in 0..bytes.len() {
            let mut b = bytes.clone();
            b[i] ^= 0x41;
            let (recs, _, bad) = walk(&b);
            assert!(bad.is_some() || recs.len() == 3, "byte {i}");
        }
        let _ = fs::remove_dir_all(&d);
    }
}
