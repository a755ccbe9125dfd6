//! Times the journal's flags and searches take and give: RFC 3339, or a
//! span back from now (`15m`, `2h`, `7d`), as milliseconds since the Unix
//! epoch (pure but for the clock).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Now, in ms since the epoch.
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// `text` as a time: RFC 3339 (`2026-12-06T12:00:00Z`, a numeric offset,
/// fractions) or a span before `now_ms` (`90s`, `15m`, `2h`, `7d`, `1w`).
pub fn parse(text: &str, now_ms: i64) -> Result<i64, String> {
    let text = text.trim();
    if let Ok(span) = humantime::parse_duration(text) {
        return Ok(now_ms.saturating_sub(i64::try_from(span.as_millis()).unwrap_or(i64::MAX)));
    }
    let (base, offset_s) = split_offset(text)?;
    let t = humantime::parse_rfc3339_weak(base).map_err(|e| {
        format!("{text:?} is neither a time (RFC 3339, e.g. 2026-12-06T12:00:00Z) nor a span back from now (15m, 2h, 7d): {e}")
    })?;
    let ms = t
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
    Ok(ms - offset_s * 1000)
}

/// The time without its zone, and the zone's offset east of UTC in s.
fn split_offset(text: &str) -> Result<(&str, i64), String> {
    if let Some(base) = text.strip_suffix(['Z', 'z']) {
        return Ok((base, 0));
    }
    // `+HH:MM` / `-HH:MM` after the time of day.
    let Some(t) = text.find(['T', 't', ' ']) else {
        return Ok((text, 0));
    };
    let Some(at) = text[t..].rfind(['+', '-']).map(|i| i + t) else {
        return Ok((text, 0));
    };
    let zone = &text[at + 1..];
    let bad = || format!("{text:?}: the zone offset must be +HH:MM or -HH:MM");
    let (h, m) = zone.split_once(':').ok_or_else(bad)?;
    let h: i64 = h.parse().map_err(|_| bad())?;
    let m: i64 = m.parse().map_err(|_| bad())?;
    let sign = if text.as_bytes()[at] == b'-' { -1 } else { 1 };
    Ok((&text[..at], sign * (h * 3600 + m * 60)))
}

/// `ms` as RFC 3339 in UTC, with milliseconds.
pub fn format(ms: i64) -> String {
    let t = UNIX_EPOCH + Duration::from_millis(u64::try_from(ms).unwrap_or(0));
    humantime::format_rfc3339_millis(t).to_string()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn spans_and_rfc3339_with_zones() {
        let now = 1_000_000_000_000;
        assert_eq!(parse("15m", now), Ok(now - 900_000));
        assert_eq!(parse("7d", now), Ok(now - 7 * 86_400_000));
        let z = parse("2026-12-06T12:00:00Z", now).unwrap();
        assert_eq!(parse("2026-12-06T14:00:00+02:00", now), Ok(z));
        assert_eq!(parse("2026-12-06T11:30:00.000-00:30", now), Ok(z));
        assert_eq!(format(z), "2026-12-06T12:00:00.000Z");
        assert!(parse("yesterday", now).is_err());
        assert!(parse("2026-12-06T12:00:00+2", now).is_err());
    }
}
