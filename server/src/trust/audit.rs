//! The audit log (`--audit-log FILE`): one JSON object per line, appended
//! and written through per line, the file 0600, moved to `FILE.1` when it
//! would pass `--audit-max-bytes`; and reading it back for `panescan audit`.
//!
//! What must hold: a log that cannot be opened for appending refuses the
//! start (no unaudited serving); a line is whole on disk when `write`
//! returns (one `write` of the line and its newline, on a file opened
//! `O_APPEND`, so two processes appending never interleave within a line);
//! after a failed write every later audited call is refused.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::Value;
use sha2::{Digest, Sha256};

/// `--audit-max-bytes` unless given: big enough for months of calls.
pub const DEFAULT_MAX_BYTES: u64 = 64 << 20;

/// An open audit log.
#[derive(Debug)]
pub struct AuditLog {
    path: PathBuf,
    max_bytes: u64,
    hash_text: bool,
    /// The open file and its size as we wrote it.
    file: Mutex<(File, u64)>,
    /// A write failed: audited calls are refused from now on.
    broken: AtomicBool,
}

impl AuditLog {
    /// Opens (creates, 0600) `path` for appending; refuses a file others
    /// may read or that cannot be written.
    pub fn open(path: &Path, max_bytes: u64, hash_text: bool) -> Result<AuditLog, String> {
        let path = std::path::absolute(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let file = open_append(&path)?;
        let size = file
            .metadata()
            .map_err(|e| format!("{}: {e}", path.display()))?
            .len();
        let log = AuditLog {
            path,
            max_bytes: max_bytes.max(4096),
            hash_text,
            file: Mutex::new((file, size)),
            broken: AtomicBool::new(false),
        };
        // A first line proves the log takes writes (a file may open for
        // appending and still refuse them: /proc, a full disk).
        let ms = now_ms();
        log.write(&serde_json::json!({
            "time": rfc3339(ms), "ts_ms": ms, "event": "start",
            "pid": std::process::id(), "version": env!("CARGO_PKG_VERSION"),
        }))
        .map_err(|e| format!("cannot write the audit log {}: {e}", log.path.display()))?;
        Ok(log)
    }

    /// Where it is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether a write failed (audited calls are then refused).
    pub fn is_broken(&self) -> bool {
        self.broken.load(Ordering::SeqCst)
    }

    /// Appends one record as one line, rotating first when it would pass
    /// the size limit.
    pub fn write(&self, record: &Value) -> Result<(), String> {
        let mut line = record.to_string();
        line.push('\n');
        let mut guard = crate::sync::lock(&self.file);
        let result = (|| {
            if guard.1 > 0 && guard.1 + line.len() as u64 > self.max_bytes {
                let old = self.path.with_extension(rotated_extension(&self.path));
                std::fs::rename(&self.path, &old).map_err(|e| format!("rotate: {e}"))?;
                *guard = (open_append(&self.path)?, 0);
            }
            guard
                .0
                .write_all(line.as_bytes())
                .map_err(|e| e.to_string())?;
            guard.1 += line.len() as u64;
            Ok(())
        })();
        if let Err(e) = &result {
            self.broken.store(true, Ordering::SeqCst);
            eprintln!(
                "panescan: the audit log {} cannot be written ({e}); audited calls are refused from now on",
                self.path.display()
            );
        }
        result
    }

    /// `text` as the log keeps it: itself, or `sha256:HEX`.
    pub fn text_field(&self, text: &str) -> (&'static str, Value) {
        if self.hash_text {
            ("text_sha256", Value::String(sha256_hex(text)))
        } else {
            ("text", Value::String(text.to_owned()))
        }
    }
}

/// `log.jsonl` rotates to `log.jsonl.1`, `log` to `log.1`.
fn rotated_extension(path: &Path) -> String {
    match path.extension() {
        Some(ext) => format!("{}.1", ext.to_string_lossy()),
        None => "1".into(),
    }
}

fn open_append(path: &Path) -> Result<File, String> {
    let file = OpenOptions::new()
        .append(true)
        .create(true)
        .mode(0o600)
        .open(path)
        .map_err(|e| format!("cannot open the audit log {}: {e}", path.display()))?;
    let meta = file
        .metadata()
        .map_err(|e| format!("{}: {e}", path.display()))?;
    if !meta.is_file() {
        return Err(format!("the audit log {} is not a file", path.display()));
    }
    if meta.permissions().mode() & 0o077 != 0 {
        // A log others can read shows them every command typed.
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
            .map_err(|e| format!("cannot make {} private (0600): {e}", path.display()))?;
    }
    Ok(file)
}

/// Lowercase hex SHA-256 of `text`.
fn sha256_hex(text: &str) -> String {
    Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Milliseconds since the epoch now.
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// `ms` since the epoch as RFC 3339 in UTC, to the millisecond.
pub fn rfc3339(ms: u64) -> String {
    let secs = ms / 1000;
    let days = i64::try_from(secs / 86_400).unwrap_or(0);
    let rem = secs % 86_400;
    // Howard Hinnant's days-to-civil.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        ms % 1000
    )
}

/// A duration such as `90s`, `15m`, `1h`, `2d` (a bare number: seconds).
pub fn parse_since(text: &str) -> Result<u64, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (n, unit) = text.split_at(split);
    let n: u64 = n
        .parse()
        .map_err(|_| format!("{text:?} is not a duration such as 90s, 15m, 1h or 2d"))?;
    let secs = match unit {
        "" | "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        _ => return Err(format!("{text:?}: the unit is s, m, h or d")),
    };
    Ok(n.saturating_mul(secs).saturating_mul(1000))
}

/// The records of the log at `path` (its rotated part first) written at
/// or after `since_ms`; lines that are not JSON are skipped.
pub fn read(path: &Path, since_ms: u64) -> Result<Vec<Value>, String> {
    let rotated = path.with_extension(rotated_extension(path));
    let mut out = Vec::new();
    for (file, required) in [(rotated, false), (path.to_path_buf(), true)] {
        let text = match std::fs::read_to_string(&file) {
            Ok(t) => t,
            Err(e) if !required && e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(format!("{}: {e}", file.display())),
        };
        out.extend(
            text.lines()
                .filter_map(|l| serde_json::from_str::<Value>(l).ok())
                .filter(|v| v["ts_ms"].as_u64().is_some_and(|t| t >= since_ms)),
        );
    }
    Ok(out)
}

/// One record as a line for people: time, decision, tool, target, text.
pub fn human_line(v: &Value) -> String {
    if let Some(event) = v["event"].as_str() {
        return format!(
            "{} {event} pid {}",
            v["time"].as_str().unwrap_or("-"),
            v["pid"]
        );
    }
    let s = |k: &str| v[k].as_str().unwrap_or("-").to_owned();
    let target = v["targets"]["pane_id"]
        .as_str()
        .or(v["targets"]["session"].as_str())
        .unwrap_or("-");
    let text = v["text"]
        .as_str()
        .map(|t| format!("{t:?}"))
        .or(v["text_sha256"].as_str().map(|h| format!("sha256:{h}")))
        .unwrap_or_default();
    format!(
        "{} {:<5} {:<8} {:<16} {:<6} {} {}",
        s("time"),
        s("decision"),
        s("outcome"),
        s("tool"),
        target,
        v["rule"].as_str().unwrap_or(""),
        text
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_and_durations() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(rfc3339(1_709_210_096_789), "2024-02-29T12:34:56.789Z");
        assert_eq!(parse_since("1h").unwrap(), 3_600_000);
        assert_eq!(parse_since("90").unwrap(), 90_000);
        assert!(parse_since("1w").is_err() && parse_since("h").is_err());
    }

    #[test]
    fn rotates_past_the_limit_and_stays_private() {
        let dir = std::env::temp_dir().join(format!("panescan-audit-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("audit.jsonl");
        let log = AuditLog::open(&path, 4096, false).unwrap();
        for i in 0..100 {
            log.write(&serde_json::json!({"ts_ms": i, "pad": "x".repeat(80)}))
                .unwrap();
        }
        let live = std::fs::metadata(&path).unwrap();
        assert!(live.len() <= 4096, "{}", live.len());
        assert_eq!(live.permissions().mode() & 0o777, 0o600);
        assert!(dir.join("audit.jsonl.1").exists());
        let all = read(&path, 0).unwrap();
        assert!(all.len() > 40 && all.last().unwrap()["ts_ms"] == 99);
        assert_eq!(read(&path, 0).unwrap().len(), all.len());
        assert_eq!(sha256_hex("abc").len(), 64);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
