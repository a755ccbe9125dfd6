//! Checks shared by the fuzz targets of panescan's small parsers (`uri`,
//! `cursor`, `detect`) and their corpus-replay test
//! (`server/tests/repo/harden_fuzz_parsers.rs`).
//!
//! Not part of the stable API. Each check takes arbitrary bytes, runs the
//! parser on them as they are and on a well-formed input built from them,
//! and returns `Err` with a description when an invariant breaks (a panic
//! is a finding too: libFuzzer aborts on it).

use panescan_engine::fuzz_structured::Source;

use crate::resources::uri::{self, Target, TEMPLATES};
use crate::resources::ResourceErrorKind;
use crate::tmux::{PaneId, SessionId, WindowId};
use crate::tools::run::detect::{Detector, Sign};
use crate::tools::search::cursor::{base64url, Cursor, Entry, ServerId, MAX_ROWS, PREFIX};

// -------------------------------------------------------------------- uri

/// The one way panescan writes the URI of `target`.
fn uri_of(target: Target) -> String {
    target.uri()
}

/// `text` with the leading zeros of every number taken out: ids are read
/// as tmux reads them (`%03` is pane 3 there too), so `tmux://pane/03`
/// names the pane `tmux://pane/3` does.
fn without_leading_zeros(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    let mut in_number = false;
    while let Some(c) = chars.next() {
        let next_is_digit = chars.peek().is_some_and(char::is_ascii_digit);
        if c == '0' && !in_number && next_is_digit {
            continue;
        }
        in_number = c.is_ascii_digit();
        out.push(c);
    }
    out
}

/// URI pieces a structured input is put together from.
const URI_PIECES: &[&str] = &[
    "tmux://",
    "sessions",
    "session/",
    "window/",
    "pane/",
    "$",
    "@",
    "%",
    "/screen",
    "/history",
    "?lines=",
    "/",
    "..",
    ";",
    "%25",
    "?",
    "&x=1",
    "tmux:/",
    "TMUX://",
    " ",
    "\0",
    "é",
    "#{",
    "-",
    "+",
    "0",
    "7",
    "4294967295",
    "4294967296",
    "999999999",
    "1000000000",
    "\n",
];

/// The tmux:// URI parser: the input as a URI, and a URI put together
/// from pieces the input chooses. A URI parses only if it is the one
/// panescan writes for what it names (leading zeros aside), and then to
/// that; every other text is refused as malformed, naming the forms that
/// exist. Every form, built from numbers the input chooses, parses back.
pub fn uri(data: &[u8]) -> Result<(), String> {
    uri_text(&String::from_utf8_lossy(data))?;
    let mut src = Source::new(data);
    let mut built = String::new();
    for _ in 0..1 + src.below(8) {
        built.push_str(src.pick(URI_PIECES));
    }
    uri_text(&built)?;
    let n = u32::from_le_bytes([src.byte(), src.byte(), src.byte(), src.byte()]);
    let lines = usize::try_from(n % 1_000_000_000).unwrap_or(0);
    let pane = PaneId::from_number(n);
    for target in [
        Target::Sessions,
        Target::Session(SessionId::from_number(n)),
        Target::Window(WindowId::from_number(n)),
        Target::Pane(pane),
        Target::Screen(pane),
        Target::History(pane, None),
        Target::History(pane, Some(lines)),
        Target::Journal(pane, None, Some(i64::from(n) * 1000)),
    ] {
        let text = uri_of(target);
        match uri::parse(&text) {
            Ok(t) if t == target => {}
            other => return Err(format!("{text:?} parsed as {other:?}, not {target:?}")),
        }
    }
    Ok(())
}

fn uri_text(text: &str) -> Result<(), String> {
    match uri::parse(text) {
        Ok(target) => {
            let canonical = uri_of(target);
            if without_leading_zeros(text) != canonical {
                return Err(format!(
                    "{text:?} parsed as {target:?}, whose URI is {canonical:?}"
                ));
            }
            Ok(())
        }
        Err(e) => {
            let named = TEMPLATES.iter().all(|t| e.message.contains(t.0));
            if e.kind != ResourceErrorKind::Malformed || !named {
                return Err(format!("{text:?} refused as {:?}: {}", e.kind, e.message));
            }
            Ok(())
        }
    }
}

// ----------------------------------------------------------------- cursor

/// A number of `bytes` bytes (big-endian) from the input.
fn word(src: &mut Source<'_>, bytes: usize) -> u64 {
    (0..bytes).fold(0u64, |v, _| v << 8 | u64::from(src.byte()))
}

/// What a decoded cursor must satisfy: one entry per pane, in order, rows
/// within bounds (the decoder's promises to the search that uses it).
fn cursor_sound(c: &Cursor) -> Result<(), String> {
    for pair in c.entries.windows(2) {
        if pair[0].pane >= pair[1].pane {
            return Err(format!("entries out of order: {pair:?}"));
        }
    }
    for e in &c.entries {
        if e.boundary > MAX_ROWS || e.history > e.boundary || e.anchor_rows > e.boundary {
            return Err(format!("an entry out of bounds: {e:?}"));
        }
    }
    Ok(())
}

/// A cursor from the input's choices: up to 40 entries, in any order,
/// duplicates and rows past the bound now and then.
fn cursor_from(src: &mut Source<'_>) -> Cursor {
    let server = ServerId {
        socket: word(src, 4) as u32,
        pid: word(src, 2) as u32,
        start: word(src, 5),
    };
    let joined = src.chance(128);
    let entries = (0..src.below(41))
        .map(|_| {
            let (h, p, b) = (1 + src.below(6), 1 + src.below(4), 1 + src.below(3));
            let history = word(src, h);
            Entry {
                pane: word(src, p) as u32,
                pid: word(src, 3) as u32,
                width: word(src, 2) as u32,
                history,
                boundary: history.saturating_add(word(src, b)),
                anchor_rows: word(src, 1),
                anchor: word(src, 8),
            }
        })
        .collect();
    Cursor {
        server,
        joined,
        anchors: crate::tmux::rows::HashKind::Fnv64,
        entries,
    }
}

/// The since-cursor decoder: the input as a cursor string, as the body of
/// one (with a correct checksum, so that the body's reader is reached),
/// and a cursor built from the input, encoded. Any text decodes to a sound cursor that
/// encodes and decodes to itself, or is refused saying what to pass; a
/// built cursor comes back as it was (sorted, one entry a pane) when every
/// row is within bounds, and is refused otherwise; a changed character
/// within its body is always refused (the tag).
pub fn cursor(data: &[u8]) -> Result<(), String> {
    cursor_text(&String::from_utf8_lossy(data))?;
    let mut body = data.to_vec();
    // Signed with this process's key, so the body's parser is reached.
    body.extend_from_slice(&crate::tools::cursor_key::tag(data));
    cursor_text(&format!("{PREFIX}{}", base64url(&body)))?;
    let mut src = Source::new(data);
    let mut built = cursor_from(&mut src);
    let text = built.encode();
    built.entries.sort_by_key(|e| e.pane);
    built.entries.dedup_by_key(|e| e.pane);
    let in_bounds = cursor_sound(&built).is_ok();
    match Cursor::decode(&text) {
        Ok(c) if in_bounds && c == built => {}
        Err(_) if !in_bounds => {}
        other => {
            return Err(format!(
                "{built:?} encoded as {text:?} decoded to {other:?}"
            ))
        }
    }
    let body_chars = text.len() - PREFIX.len();
    // Characters whose 6 bits all lie before the tag's bytes.
    let body_bits = (body_chars * 6 / 8).saturating_sub(crate::tools::cursor_key::TAG_BYTES) * 8;
    let at = src.below(body_chars);
    if in_bounds && at * 6 + 6 <= body_bits {
        let mut damaged = text.into_bytes();
        let i = PREFIX.len() + at;
        damaged[i] = if damaged[i] == b'A' { b'B' } else { b'A' };
        let damaged = String::from_utf8_lossy(&damaged).into_owned();
        if let Ok(c) = Cursor::decode(&damaged) {
            return Err(format!("a damaged cursor {damaged:?} decoded to {c:?}"));
        }
    }
    Ok(())
}

fn cursor_text(text: &str) -> Result<(), String> {
    match Cursor::decode(text) {
        Ok(c) => {
            cursor_sound(&c)?;
            match Cursor::decode(&c.encode()) {
                Ok(again) if again == c => Ok(()),
                other => Err(format!(
                    "{text:?} decoded to {c:?}, re-encoded to {other:?}"
                )),
            }
        }
        Err(e)
            if e.message.contains("not a search_panes cursor")
                || e.message.contains("not a cursor this panescan made") =>
        {
            Ok(())
        }
        Err(e) => Err(format!(
            "{text:?} refused without saying what to pass: {}",
            e.message
        )),
    }
}

// ----------------------------------------------------------------- detect

/// Marker tokens: the shape run_command uses, and short ones whose
/// prefixes repeat (the hardest case for a match split across chunks).
const TOKENS: &[&str] = &["__psAB12cd34ef56", "aa", "a1a", "_", "__ps__ps"];

/// Feeds `stream` in pieces whose sizes cycle through `sizes` (each 1-256;
/// no sizes: whole), checking the carry stays bounded.
fn detect_chunked(token: &str, stream: &[u8], sizes: &[u8]) -> Result<Vec<Sign>, String> {
    let mut d = Detector::new(token);
    let mut signs = Vec::new();
    let mut at = 0;
    let mut k = 0;
    while at < stream.len() {
        let size = sizes
            .get(k % sizes.len().max(1))
            .map_or(stream.len(), |&s| usize::from(s) + 1);
        let end = (at + size).min(stream.len());
        signs.extend(d.feed(&stream[at..end]));
        if d.carried() > d.max_len() {
            return Err(format!(
                "carry of {} bytes, over {}",
                d.carried(),
                d.max_len()
            ));
        }
        at = end;
        k += 1;
    }
    Ok(signs)
}

/// How often `needle` occurs in `hay`.
fn occurrences(hay: &[u8], needle: &[u8]) -> usize {
    memchr::memmem::find_iter(hay, needle).count()
}

/// The run_command completion detector (marker and OSC 133 D): the input's
/// bytes as pane output, whole, byte by byte and in pieces the input
/// chooses, give the same signs, never more than the stream holds
/// beginnings of, and the carry stays bounded; then one sign planted in the
/// input's bytes (without ESC or the token's first byte, which could begin
/// another) is found exactly, whatever the chunking.
pub fn detect(data: &[u8]) -> Result<(), String> {
    let mut src = Source::new(data);
    let token = src.pick(TOKENS);
    let sizes: Vec<u8> = (0..src.below(8)).map(|_| src.byte()).collect();
    let stream = src.rest();
    let whole = detect_chunked(token, stream, &[])?;
    for sizes in [&[0u8][..], &sizes] {
        let got = detect_chunked(token, stream, sizes)?;
        if got != whole {
            return Err(format!(
                "chunks {sizes:?} found {got:?}, the whole stream {whole:?}, in {:?}",
                String::from_utf8_lossy(stream)
            ));
        }
    }
    let markers = whole
        .iter()
        .filter(|s| matches!(s, Sign::Marker(_)))
        .count();
    let marks = whole.len() - markers;
    let heads = occurrences(stream, format!("{token}:").as_bytes());
    if markers > heads || marks > occurrences(stream, b"\x1b]133;D") {
        return Err(format!(
            "{whole:?} from {:?}",
            String::from_utf8_lossy(stream)
        ));
    }
    planted(token, stream, &sizes)
}

/// One sign, built from the end of the input, planted in its middle.
fn planted(token: &str, stream: &[u8], sizes: &[u8]) -> Result<(), String> {
    let first = token.as_bytes().first().copied().unwrap_or(b'_');
    let noise: Vec<u8> = stream
        .iter()
        .copied()
        .filter(|&b| b != 0x1b && b != first)
        .collect();
    let tail = stream
        .get(stream.len().saturating_sub(5)..)
        .unwrap_or_default();
    let choice = tail.first().copied().unwrap_or(0);
    let status = tail
        .get(1..5)
        .and_then(|b| <[u8; 4]>::try_from(b).ok())
        .map_or(0, i32::from_le_bytes);
    let (sign, text) = match choice % 5 {
        0 => (Sign::Marker(status), format!("{token}:{status}\r\n")),
        1 => (Sign::Marker(status), format!("{token}:{status}\n")),
        2 => (
            Sign::Osc133(Some(status)),
            format!("\x1b]133;D;{status}\x07"),
        ),
        3 => (
            Sign::Osc133(Some(status)),
            format!("\x1b]133;D;{status};aid=7\x1b\\"),
        ),
        _ => (Sign::Osc133(None), "\x1b]133;D\x07".to_owned()),
    };
    let half = noise.len() / 2;
    let mut planted = noise[..half].to_vec();
    planted.extend_from_slice(text.as_bytes());
    planted.extend_from_slice(&noise[half..]);
    for sizes in [&[][..], &[0u8][..], sizes] {
        let got = detect_chunked(token, &planted, sizes)?;
        if got != [sign] {
            return Err(format!(
                "{sign:?} planted, {got:?} found (chunks {sizes:?}) in {:?}",
                String::from_utf8_lossy(&planted)
            ));
        }
    }
    Ok(())
}

// ----------------------------------------------------------------- policy

/// The policy file and the judging of one call (`trust::policy`,
/// `trust::typed`): `data` is a policy's text, a NUL, then what a call
/// types. Whatever the bytes: parsing and judging never panic; judging
/// is deterministic; a deny rule naming every tool decides deny for every
/// call, whatever else the file holds (deny beats ask beats allow); what
/// stays typed is bounded.
pub fn policy(data: &[u8]) -> Result<(), String> {
    use crate::config::Tier;
    use crate::trust::policy::{Facts, Kind, Policy};
    use crate::trust::typed;

    let split = data.iter().position(|b| *b == 0).unwrap_or(data.len());
    let text = String::from_utf8_lossy(&data[..split]).into_owned();
    let typed_text = String::from_utf8_lossy(data.get(split + 1..).unwrap_or_default());
    let strokes = typed::strokes_of_text(&typed_text);
    let t = typed::apply(&typed::Line::default(), &strokes);
    if t.pending.text.len() > typed::MAX_PENDING_BYTES {
        return Err(format!("pending line of {} bytes", t.pending.text.len()));
    }
    let lines: Vec<String> = t.submitted.into_iter().map(|l| l.text).collect();
    let facts = Facts {
        tool: "send_keys".into(),
        tier: Tier::Mutating,
        sessions: vec!["main".into()],
        cwd: Some("/tmp".into()),
        lines: Some(lines),
        seen: vec![typed_text.to_string()],
        text_unknown: false,
    };
    let Ok(p) = Policy::parse(&text) else {
        return Ok(());
    };
    let (a, b) = (p.judge(&facts), p.judge(&facts));
    if a != b {
        return Err(format!("judged twice: {a:?} then {b:?}"));
    }
    // The same file with a deny-all rule added where TOML allows it.
    if text.len() + 64 <= crate::trust::policy::MAX_POLICY_BYTES
        && p.rule_count() < crate::trust::policy::MAX_RULES
    {
        let with_deny = format!("{text}\n[[deny]]\ntools = [\"*\"]\n");
        if let Ok(strict) = Policy::parse(&with_deny) {
            let d = strict.judge(&facts);
            if d.kind != Some(Kind::Deny) {
                return Err(format!("a deny-all rule was beaten: {d:?}"));
            }
        }
    }
    Ok(())
}
