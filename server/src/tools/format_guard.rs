//! Which caller formats may reach tmux: those whose cost is bounded before
//! tmux sees them.
//!
//! tmux expands a format inside its single-threaded server: one format can
//! freeze it (loops inside loops), make it allocate gigabytes
//! (`#{p2147483647:x}`) or run commands (`#()`, `E`/`T`, the arguments of
//! `s/.../.../`). So a format is parsed with tmux's own grammar
//! ([`crate::tmux::format`]) and accepted only when every construct has a
//! known cost:
//!
//! * no `#(...)`, no `E`/`T`, modifier arguments plain text;
//! * no loop (`S`, `W`, `P`, `L`) or name search (`N`) inside a loop;
//! * widths and pads within ±1,000, precision at most 100, repeats 1-100,
//!   all literal numbers;
//! * patterns plain text of at most 256 bytes, regular expressions without
//!   backreferences or counted repetition, globs with at most one `*` before
//!   the last character (`C`: none);
//! * a regular expression only on a text the format bounds to
//!   [`MAX_REGEX_SUBJECT`] bytes ([`subject_bound`]), at most
//!   [`MAX_REGEX_RUNS`] per format; `C` takes none;
//! * at most 16 levels of `#{`, 4,096 bytes, one line.
//!
//! What remains is bounded by an estimate of the bytes tmux builds, with
//! loops over the server's sets ([`LoopSizes`]). Why each rule, in full:
//! NOTES.md.

use std::fmt;

use crate::tmux::format::{self, Expansion, Modifier, Modifiers, Piece};
use crate::tmux::Inventory;

/// Longest format accepted.
pub const MAX_FORMAT_BYTES: usize = 4096;
/// Deepest nesting of `#{` accepted.
const MAX_DEPTH: usize = 16;
/// Largest width or pad (`=`, `p`), either sign.
const MAX_WIDTH: i64 = 1000;
/// Largest precision of an expression (`e|op|f|N`).
const MAX_PRECISION: i64 = 100;
/// Largest repeat count (`R`, tmux 3.4+).
const MAX_REPEAT: i64 = 100;
/// Longest pattern (`s`, `m`, `C`).
pub const MAX_PATTERN_BYTES: usize = 256;
/// Longest regular expression (`s`, `m/r`): glibc builds its automaton
/// as it matches, and a longer one can need many more states.
pub const MAX_REGEX_BYTES: usize = 64;
/// Longest text a regular expression may be matched against. With
/// [`MAX_REGEX_BYTES`], the worst patterns measured cost tmux ~2 ms a
/// match (BENCHMARKS.md, "Format guard").
const MAX_REGEX_SUBJECT: usize = 256;
/// How many regular expressions one format may make tmux run.
const MAX_REGEX_RUNS: f64 = 16.0;

/// The most a format may make tmux build, in bytes.
const MAX_OUTPUT: f64 = 1024.0 * 1024.0;
/// The most a format may make tmux handle (build, copy, scan), in bytes
/// of format work: enough for any format an agent writes for a listing,
/// small enough that tmux's single thread stalls only briefly (the
/// calibration: BENCHMARKS.md, "Format guard").
const MAX_WORK: f64 = 2.0 * 1024.0 * 1024.0;
/// How many copies of one pane-set text may end up in the result.
const MAX_PANE_TEXT_COPIES: f64 = 16.0;
/// How many times tmux may read (copy or scan) one pane-set text: a glob
/// scan counts its pattern's length, so a title is scanned by at most a
/// 30-byte glob (fnmatch: ~7 ns a byte of text and of pattern, measured;
/// BENCHMARKS.md, "Format guard").
const MAX_PANE_TEXT_READS: f64 = 32.0;

/// What a value counts for in bytes.
const VALUE_BYTES: f64 = 64.0;
/// Work of looking a variable up (option tables, format tree, environment).
const LOOKUP_WORK: f64 = 64.0;
/// Work of setting up one loop item (tmux builds a format tree for it,
/// about twice a value's work: BENCHMARKS.md, "Format guard").
const ITEM_WORK: f64 = 128.0;
/// Work of comparing one name in a name search (`N`).
const NAME_WORK: f64 = 64.0;
/// A loop appends each item's text with strlcat, which rescans the text so
/// far: quadratic, but at strlen's speed, far cheaper per byte than
/// building text (BENCHMARKS.md, "Format guard").
const STRLCAT_SHARE: f64 = 1.0 / 32.0;
/// Largest text of a number tmux prints for an expression, before its
/// decimals (a double's 309 digits, sign and point).
const NUMBER_BYTES: f64 = 330.0;

/// Values a program in a pane can set to any text with an escape sequence
/// (tmux keeps up to 1 MiB of it) or that hold its screen's text: the ones
/// an estimate cannot count as small.
const PANE_TEXT: [&str; 11] = [
    "pane_title",
    "pane_path",
    "window_name",
    "copy_cursor_line",
    "copy_cursor_word",
    "copy_cursor_hyperlink",
    "mouse_line",
    "mouse_word",
    "mouse_hyperlink",
    "search_match",
    "pane_search_string",
];

/// Whether a program in a pane can make `name` long: [`PANE_TEXT`], its
/// command line (`exec -a`, up to 128 KiB) and user options (any program
/// in a pane may set one through tmux).
fn is_pane_text(name: &str) -> bool {
    PANE_TEXT.contains(&name)
        || name.starts_with('@')
        || matches!(name, "pane_current_command" | "pane_start_command")
}

/// How many items each kind of loop visits on a server: `S` its sessions,
/// `W` the windows of its largest session, `P` the panes of its largest
/// window, `L` its clients.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LoopSizes {
    /// Sessions on the server.
    pub sessions: u64,
    /// Windows of its largest session.
    pub windows: u64,
    /// Panes of its largest window.
    pub panes: u64,
    /// Clients attached.
    pub clients: u64,
}

impl LoopSizes {
    /// The sizes of the server `inv` lists.
    pub fn of(inv: &Inventory) -> LoopSizes {
        let mut panes_per_window = std::collections::HashMap::new();
        for p in &inv.panes {
            *panes_per_window.entry(p.window_id).or_insert(0u64) += 1;
        }
        LoopSizes {
            sessions: inv.sessions.len() as u64,
            windows: inv
                .sessions
                .iter()
                .map(|s| u64::from(s.session_windows))
                .max()
                .unwrap_or(0),
            panes: panes_per_window.values().copied().max().unwrap_or(0),
            // Attached clients, plus panescan's own and some room for
            // clients attached to nothing (one-shot `tmux` commands).
            clients: inv
                .sessions
                .iter()
                .map(|s| u64::from(s.session_attached))
                .sum::<u64>()
                + 8,
        }
    }

    /// How many items the loop or name search `name` visits, and what.
    fn visited_by(&self, name: &str) -> (f64, &'static str) {
        let (n, what) = match name {
            "S" => (self.sessions, "sessions"),
            "W" => (self.windows, "windows in a session"),
            "P" => (self.panes, "panes in a window"),
            _ => (self.clients, "clients"),
        };
        (n as f64, what)
    }
}

/// What tmux does for a piece of format: bytes it builds (`out`) and
/// handles (`work`), each value counted as [`VALUE_BYTES`]; copies of a
/// pane-set text in the result, and how often tmux reads such a text.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct Cost {
    out: f64,
    work: f64,
    copies: f64,
    reads: f64,
    /// Regular expressions run (each on at most [`MAX_REGEX_SUBJECT`] bytes).
    regex_runs: f64,
}

impl Cost {
    /// Text copied as it is.
    fn text(len: usize) -> Cost {
        let n = len as f64;
        Cost {
            out: n,
            work: n,
            ..Cost::default()
        }
    }

    /// The variable `name`, `copies` times in the result (`q` escapes
    /// double it), plus `extra` bytes (a time tmux prints instead).
    fn lookup(name: &str, copies: f64, extra: f64) -> Cost {
        let out = VALUE_BYTES * copies + extra;
        let pane_text = is_pane_text(name);
        Cost {
            out,
            work: LOOKUP_WORK + VALUE_BYTES + out,
            copies: if pane_text { copies } else { 0.0 },
            reads: if pane_text { 1.0 + copies } else { 0.0 },
            regex_runs: 0.0,
        }
    }

    fn plus(self, o: Cost) -> Cost {
        Cost {
            out: self.out + o.out,
            work: self.work + o.work,
            copies: self.copies + o.copies,
            reads: self.reads + o.reads,
            regex_runs: self.regex_runs + o.regex_runs,
        }
    }

    fn times(self, k: f64) -> Cost {
        Cost {
            out: self.out * k,
            work: self.work * k,
            copies: self.copies * k,
            reads: self.reads * k,
            regex_runs: self.regex_runs * k,
        }
    }

    /// Copied once more, into the text around it.
    fn copied(self) -> Cost {
        Cost {
            work: self.work + self.out,
            reads: self.reads + self.copies,
            ..self
        }
    }

    /// Scanned by a pattern costing `factor` per byte.
    fn scanned(self, factor: f64) -> Cost {
        Cost {
            work: self.work + self.out * factor,
            reads: self.reads + self.copies * factor,
            ..self
        }
    }

    /// Read once to compute a result of at most `bytes` (a number, a flag).
    fn reduced(self, bytes: f64) -> Cost {
        Cost {
            out: bytes,
            work: self.work + self.out,
            copies: 0.0,
            reads: self.reads + self.copies,
            regex_runs: self.regex_runs,
        }
    }
}

/// Why a format is refused: the construct, where it starts, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// Where the refused construct starts (a byte offset).
    pub at: usize,
    /// The construct as written (`#(`, `#{S:...}`, ...).
    pub construct: String,
    /// Why it is refused, in words the caller can act on.
    pub why: String,
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} at byte {}: {}", self.construct, self.at, self.why)
    }
}

impl std::error::Error for Refusal {}

fn refuse(at: usize, construct: impl Into<String>, why: impl Into<String>) -> Refusal {
    Refusal {
        at,
        construct: construct.into(),
        why: why.into(),
    }
}

/// Accepts `format` when tmux can expand it, on a server of `sizes`, at a
/// bounded cost and without running anything. With no sizes known
/// ([`LoopSizes::default`]) every rule but the loops' cost applies.
pub fn check(format: &str, sizes: &LoopSizes) -> Result<(), Refusal> {
    check_text(format)?;
    let pieces =
        format::parse(format, MAX_DEPTH).map_err(|e| refuse(e.at(), e.construct(), e.why()))?;
    let scope = Scope {
        sizes,
        within: None,
    };
    format_cost(&pieces, &scope).map(|_| ())
}

/// Whether `format` loops over sessions, windows, panes or clients (or
/// searches their names): its cost depends on [`LoopSizes`].
pub fn visits_sets(format: &str) -> bool {
    fn any(pieces: &[Piece]) -> bool {
        pieces.iter().any(|p| match p {
            Piece::Expansion(e) => {
                let visits = match &e.modifiers {
                    Modifiers::List(l) => l
                        .iter()
                        .any(|m| matches!(m.name, "S" | "W" | "P" | "L" | "N")),
                    _ => false,
                };
                visits || any(&e.parts)
            }
            _ => false,
        })
    }
    format::parse(format, MAX_DEPTH).is_ok_and(|p| any(&p))
}

/// What is refused on sight, before parsing.
fn check_text(format: &str) -> Result<(), Refusal> {
    if format.len() > MAX_FORMAT_BYTES {
        return Err(refuse(
            MAX_FORMAT_BYTES,
            format!("a format of {} bytes", format.len()),
            "formats are limited to 4,096 bytes",
        ));
    }
    if let Some(at) = format.find(['\n', '\r', '\0']) {
        let what = if format.as_bytes()[at] == 0 {
            "a NUL byte"
        } else {
            "a line break"
        };
        return Err(refuse(at, what, "a format is one line of text"));
    }
    if let Some(at) = format.find("#(") {
        return Err(refuse(at, "#(...)", "it runs a shell command"));
    }
    // E and T wherever a modifier could start (after `{` or `;`) and end
    // (`:` or `;`), also where the parser reads no modifier: a tmux newer
    // than the grammar here may read one.
    let b = format.as_bytes();
    if let Some(i) = b.windows(3).position(|w| {
        matches!(w[0], b'{' | b';') && matches!(w[1], b'E' | b'T') && matches!(w[2], b':' | b';')
    }) {
        return Err(re_expansion(i + 1, b[i + 1]));
    }
    Ok(())
}

fn re_expansion(at: usize, letter: u8) -> Refusal {
    refuse(
        at,
        format!("the {}: modifier", letter as char),
        "it expands a value again as a format, which runs any #(...) a pane title or option holds",
    )
}

/// `#{...}` as the caller wrote it, shortened: `#{S:...}`, `#{pane_title}`.
fn describe(e: &Expansion) -> String {
    let head = &e.key[..e.body_at - (e.at + 2)];
    if head.is_empty() {
        format!("#{{{}}}", clip(e.key, 40))
    } else {
        format!("#{{{}...}}", clip(head, 40))
    }
}

fn clip(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_owned();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}...", &s[..end])
}

fn describe_piece(p: &Piece) -> (usize, String) {
    match p {
        Piece::Text { at, .. } => (*at, "the text".to_owned()),
        Piece::Job { at } => (*at, "#(...)".to_owned()),
        Piece::Alias { at, name } => (*at, format!("the alias for {name}")),
        Piece::Expansion(e) => (e.at, describe(e)),
    }
}

/// Where a piece sits: the server's sizes and the loop around it, if any.
struct Scope<'s> {
    sizes: &'s LoopSizes,
    within: Option<usize>,
}

/// The cost of a run of pieces.
fn format_cost(pieces: &[Piece], scope: &Scope) -> Result<Cost, Refusal> {
    let mut total = Cost::default();
    for p in pieces {
        let c = match p {
            Piece::Text { text, .. } => Cost::text(text.len()),
            Piece::Job { at } => return Err(refuse(*at, "#(...)", "it runs a shell command")),
            Piece::Alias { name, .. } => Cost::lookup(name, 1.0, 0.0),
            Piece::Expansion(e) => expansion_cost(e, scope)?,
        };
        // tmux copies every piece's result into the text it builds.
        total = total.plus(c.copied());
        if let Some(why) = over_limit(&total, "") {
            let (at, construct) = describe_piece(p);
            return Err(refuse(at, construct, why));
        }
    }
    Ok(total)
}

/// Why a cost is past the limits, if it is (`over` says on what, for a
/// loop).
fn over_limit(c: &Cost, over: &str) -> Option<String> {
    let checks = [
        (c.out, MAX_OUTPUT, "build about {n} bytes"),
        (c.work, MAX_WORK, "handle about {n} bytes"),
        (
            c.copies,
            MAX_PANE_TEXT_COPIES,
            "copy a pane title (or other text a program in a pane sets) {n} times into the result",
        ),
        (
            c.reads,
            MAX_PANE_TEXT_READS,
            "read a pane title (or other text a program in a pane sets) {n} times",
        ),
        (
            c.regex_runs,
            MAX_REGEX_RUNS,
            "run a regular expression {n} times",
        ),
    ];
    for (n, limit, what) in checks {
        if n > limit {
            let what = what.replace("{n}", &format!("{n:.0}"));
            let over = if over.is_empty() {
                String::new()
            } else {
                format!("over {over}, ")
            };
            return Some(format!(
                "{over}it could make tmux {what} (limit {limit:.0})"
            ));
        }
    }
    None
}

fn expansion_cost(e: &Expansion, scope: &Scope) -> Result<Cost, Refusal> {
    let mods: &[Modifier] = match &e.modifiers {
        Modifiers::List(list) => list,
        Modifiers::None => &[],
        Modifiers::Unreadable { at } => {
            return Err(refuse(
                *at,
                format!("the modifiers of {}", describe(e)),
                "tmux (3.2-3.6) does not read them as modifiers and would expand the whole text instead",
            ))
        }
    };
    for m in mods {
        check_modifier(e, m)?;
    }
    let body = body_cost(e, mods, scope)?;
    let c = finish_cost(mods, body);
    match over_limit(&c, "") {
        Some(why) => Err(refuse(e.at, describe(e), why)),
        None => Ok(c),
    }
}

/// The rules each modifier obeys on its own.
fn check_modifier(e: &Expansion, m: &Modifier) -> Result<(), Refusal> {
    if let Some((a, i)) = m
        .args
        .iter()
        .find_map(|a| unescaped_hash(a.text).map(|i| (a, i)))
    {
        return Err(refuse(
            a.at + i,
            format!("the argument of {} in {}", m.name, describe(e)),
            "tmux expands modifier arguments as formats (those of s/// twice, so a pane title in one would run as a format): arguments must be plain text",
        ));
    }
    let first = m.args.first();
    match m.name {
        "E" | "T" => Err(re_expansion(m.at, m.name.as_bytes()[0])),
        "=" | "p" => match first {
            Some(a) if !in_range(a.text, -MAX_WIDTH, MAX_WIDTH) => Err(refuse(
                a.at,
                format!("the width of {}", describe(e)),
                "widths and pads must be whole numbers from -1000 to 1000 (tmux allocates whatever it is asked for)",
            )),
            _ => Ok(()),
        },
        "e" => match m.args.get(2) {
            Some(a) if !in_range(a.text, 0, MAX_PRECISION) => Err(refuse(
                a.at,
                format!("the precision of {}", describe(e)),
                "an expression's precision must be a whole number from 0 to 100 (tmux prints that many digits)",
            )),
            _ => Ok(()),
        },
        "s" => match first {
            Some(a) => {
                check_regex(a.text, a.at, &describe(e))?;
                check_subject(body_value_bound(e), e.body_at, &describe(e))
            }
            None => Ok(()),
        },
        _ => Ok(()),
    }
}

/// Where `text` has a `#` other than the escapes `#,` `#:` `#}`, which
/// expand to themselves or to one character and so stay plain text however
/// often tmux expands them.
fn unescaped_hash(text: &str) -> Option<usize> {
    let b = text.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'#' {
            if !matches!(b.get(i + 1), Some(b',' | b':' | b'}')) {
                return Some(i);
            }
            i += 1;
        }
        i += 1;
    }
    None
}

/// A literal whole number within `lo..=hi`.
fn in_range(text: &str, lo: i64, hi: i64) -> bool {
    literal_number(text).is_some_and(|n| (lo..=hi).contains(&n))
}

fn literal_number(text: &str) -> Option<i64> {
    let digits = text.strip_prefix('-').unwrap_or(text);
    if digits.is_empty() || digits.len() > 9 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

/// A regular expression tmux hands to glibc's regcomp/regexec. Returns its
/// cost per byte matched against.
fn check_regex(pattern: &str, at: usize, construct: &str) -> Result<f64, Refusal> {
    check_length(
        pattern,
        (at, &format!("the regular expression of {construct}")),
        MAX_REGEX_BYTES,
        "regular expressions are limited to {MAX} bytes ({GIVEN} given): glibc's matching states grow with them",
    )?;
    let b = pattern.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'\\' if b.get(i + 1).is_some_and(|c| (b'1'..=b'9').contains(c)) => {
                return Err(refuse(
                    at + i,
                    format!("the backreference in {construct}"),
                    "glibc matches backreferences by backtracking, which can take exponential time",
                ))
            }
            b'\\' => i += 1,
            b'{' => return Err(refuse(
                at + i,
                format!("the counted repetition in {construct}"),
                "glibc compiles {n} by copying the repeated expression n times (nested: n times n)",
            )),
            _ => {}
        }
        i += 1;
    }
    Ok(pattern.len().max(1) as f64)
}

/// An fnmatch pattern; `inner` is how many `*` it may have before its last
/// character (all of them count when `inner` is 0: tmux wraps a pane
/// search's term in `*...*`). Returns its cost per byte matched against.
fn check_glob(pattern: &str, at: usize, construct: &str, inner: usize) -> Result<f64, Refusal> {
    check_length(
        pattern,
        (at, &format!("the pattern of {construct}")),
        MAX_PATTERN_BYTES,
        "patterns are limited to {MAX} bytes ({GIVEN} given)",
    )?;
    let stars = pattern
        .bytes()
        .take(pattern.len().saturating_sub(1))
        .filter(|&c| c == b'*')
        .count()
        + usize::from(inner == 0 && pattern.ends_with('*'));
    if stars > inner {
        return Err(refuse(
            at,
            format!("the pattern of {construct}"),
            format!("fnmatch tries every position once per *, so a pattern here may have at most {inner} * before its last character"),
        ));
    }
    Ok(pattern.len().max(1) as f64)
}

/// Refuses `pattern` past `max` bytes; `why` says so, with `{MAX}` and
/// `{GIVEN}` filled in; `(at, construct)` is where and what it is.
fn check_length(
    pattern: &str,
    (at, construct): (usize, &str),
    max: usize,
    why: &str,
) -> Result<(), Refusal> {
    if pattern.len() <= max {
        return Ok(());
    }
    let why = why
        .replace("{MAX}", &max.to_string())
        .replace("{GIVEN}", &pattern.len().to_string());
    Err(refuse(at, construct, why))
}

/// What the body costs under the modifier that decides how tmux treats it
/// (in tmux's order: literal, character, colour, loop, name search, pane
/// search, repeat, boolean or comparison, conditional, expression, plain).
fn body_cost(e: &Expansion, mods: &[Modifier], scope: &Scope) -> Result<Cost, Refusal> {
    let find = |names: &[&str]| mods.iter().find(|m| names.contains(&m.name));
    if find(&["l"]).is_some() {
        // Literal: copied, not expanded; read as a format all the same, to
        // be safe where an older tmux reads the modifier list differently.
        return Ok(format_cost(&e.parts, scope)?.plus(Cost::text(e.body.len())));
    }
    if find(&["a", "c"]).is_some() {
        return Ok(format_cost(&e.parts, scope)?.reduced(6.0));
    }
    if let Some(m) = find(&["S", "W", "P", "L"]) {
        return loop_cost(e, m, scope);
    }
    if let Some(m) = find(&["N"]) {
        return name_search_cost(e, m, scope);
    }
    if let Some(m) = find(&["C"]) {
        return pane_search_cost(e, m);
    }
    if find(&["R"]).is_some() {
        return repeat_cost(e, scope);
    }
    let body = format_cost(&e.parts, scope)?;
    let bools = ["!", "!!", "&&", "||", "==", "!=", "<", ">", "<=", ">=", "m"];
    if find(&bools).is_some() {
        let scan = match find(&["m"]) {
            Some(m) => match_pattern_factor(e, m)?,
            None => 0.0,
        };
        let mut c = body.scanned(scan).reduced(1.0);
        if find(&["m"]).is_some_and(is_regex) {
            c.regex_runs += 1.0;
        }
        return Ok(c);
    }
    if e.body.starts_with('?') {
        // The condition is looked up (or expanded), then one branch is
        // expanded; both branches count.
        let condition = Cost::lookup("", 1.0, 0.0).reduced(0.0);
        return Ok(body.plus(condition));
    }
    if let Some(m) = find(&["e"]).filter(|m| (1..=3).contains(&m.args.len())) {
        let precision = m.args.get(2).and_then(|a| literal_number(a.text));
        return Ok(body.reduced(NUMBER_BYTES + precision.unwrap_or(2) as f64));
    }
    if e.body.contains("#{") {
        return Ok(body);
    }
    // A variable (none for an empty name): `q` escapes it (at most doubling
    // it), `t` prints a time instead (strftime into 512 bytes).
    let copies = match (e.body.is_empty(), find(&["q"]).is_some()) {
        (true, _) => 0.0,
        (false, true) => 2.0,
        (false, false) => 1.0,
    };
    let time = if find(&["t"]).is_some() { 512.0 } else { 0.0 };
    Ok(Cost::lookup(e.body, copies, time))
}

fn loop_cost(e: &Expansion, m: &Modifier, scope: &Scope) -> Result<Cost, Refusal> {
    if let Some(outer) = scope.within {
        return Err(refuse(
            e.at,
            format!("nested loop {}", describe(e)),
            format!("a loop inside a loop (the one at byte {outer}) multiplies tmux's work"),
        ));
    }
    let inside = Scope {
        sizes: scope.sizes,
        within: Some(e.at),
    };
    let body = format_cost(&e.parts, &inside)?;
    let (n, what) = scope.sizes.visited_by(m.name);
    // Each item's text is built, then appended to all before it. Each item
    // has its own values, so pane texts are not multiplied.
    let c = Cost {
        out: body.out * n,
        work: (body.work + ITEM_WORK) * n + body.out * n * (n + 1.0) / 2.0 * STRLCAT_SHARE,
        regex_runs: body.regex_runs * n,
        ..body
    };
    match over_limit(&c, &format!("this server's {n} {what}")) {
        Some(why) => Err(refuse(e.at, describe(e), why)),
        None => Ok(c),
    }
}

fn name_search_cost(e: &Expansion, m: &Modifier, scope: &Scope) -> Result<Cost, Refusal> {
    if let Some(outer) = scope.within {
        return Err(refuse(
            e.at,
            format!("name search {}", describe(e)),
            format!("it compares every window or session name, so inside a loop (the one at byte {outer}) it multiplies tmux's work"),
        ));
    }
    let sessions = m.args.first().is_some_and(|a| a.text.contains('s'));
    let (n, _) = scope.sizes.visited_by(if sessions { "S" } else { "W" });
    let mut c = format_cost(&e.parts, scope)?.reduced(1.0);
    c.work += n * NAME_WORK;
    Ok(c)
}

/// `C`: tmux searches the pane's visible screen, line by line.
fn pane_search_cost(e: &Expansion, m: &Modifier) -> Result<Cost, Refusal> {
    let construct = format!("pane search {}", describe(e));
    if let Some(i) = unescaped_hash(e.body) {
        return Err(refuse(
            e.body_at + i,
            construct,
            "the search term must be plain text (a value as the term could be any pattern)",
        ));
    }
    if is_regex(m) {
        return Err(refuse(
            m.at,
            construct,
            "a regular expression over the screen (text a program draws, any length a line) can keep tmux busy for seconds; search with search_panes, or drop r for a plain pattern",
        ));
    }
    let factor = check_glob(e.body, e.body_at, &construct, 0)?;
    // The screen is text a program in the pane controls.
    Ok(Cost::lookup("pane_title", 1.0, 0.0)
        .scanned(factor)
        .reduced(10.0))
}

/// `m`: the left side is the pattern, matched against the right side.
/// Returns its cost per byte matched against.
fn match_pattern_factor(e: &Expansion, m: &Modifier) -> Result<f64, Refusal> {
    let Some(comma) = format::skip(e.body.as_bytes(), 0, b",") else {
        return Ok(1.0); // tmux refuses a match without two sides
    };
    let pattern = &e.body[..comma];
    let construct = format!("match {}", describe(e));
    if let Some(i) = unescaped_hash(pattern) {
        return Err(refuse(
            e.body_at + i,
            construct,
            "the pattern (left of the comma) must be plain text (a value as the pattern could be any pattern)",
        ));
    }
    if is_regex(m) {
        let factor = check_regex(pattern, e.body_at, &construct)?;
        let subject = subject_bound(&right_of(&e.parts, e.body_at + comma));
        check_subject(subject, e.body_at + comma + 1, &construct)?;
        Ok(factor)
    } else {
        check_glob(pattern, e.body_at, &construct, 1)
    }
}

/// `m` with the `r` flag, or `C` with it: a regular expression.
fn is_regex(m: &Modifier) -> bool {
    m.args.first().is_some_and(|a| a.text.contains('r'))
}

/// The pieces of a body that lie after the byte `comma`: its right side
/// (a text piece across the comma keeps its part after it).
fn right_of<'a>(parts: &[Piece<'a>], comma: usize) -> Vec<Piece<'a>> {
    parts
        .iter()
        .filter_map(|p| match p {
            Piece::Text { at, text } if at + text.len() > comma => {
                let from = (comma + 1).saturating_sub(*at).min(text.len());
                text.get(from..).map(|t| Piece::Text {
                    at: at + from,
                    text: t,
                })
            }
            Piece::Text { .. } => None,
            other => {
                let (at, _) = describe_piece(other);
                (at > comma).then(|| other.clone())
            }
        })
        .collect()
}

/// Refuses a regular expression over a text of unbounded or too great a
/// length (`bound`: [`subject_bound`]).
fn check_subject(bound: Option<usize>, at: usize, construct: &str) -> Result<(), Refusal> {
    match bound {
        Some(n) if n <= MAX_REGEX_SUBJECT => Ok(()),
        Some(n) => Err(refuse(
            at,
            format!("the text {construct} matches a regular expression against"),
            format!("it may be {n} bytes; a regular expression runs in tmux on at most {MAX_REGEX_SUBJECT} (glibc's search time grows faster than the text): match in panescan instead (list_panes filters with regex, search_panes)"),
        )),
        None => Err(refuse(
            at,
            format!("the text {construct} matches a regular expression against"),
            format!("its length has no bound (a program in a pane sets titles, paths, names and its command line to any length, and user options hold anything), and glibc's search time grows faster than the text; a regular expression runs in tmux only on ids, numbers, flags and literal text of at most {MAX_REGEX_SUBJECT} bytes: match in panescan instead (list_panes filters with regex, search_panes) or use a glob (m without r)"),
        )),
    }
}

/// The most bytes `pieces` can expand to, when the format itself bounds
/// it whatever the server holds; `None` when a value of unbounded length
/// (anything a program or a tmux command can set: names, titles, paths,
/// commands, user options) may end up in it.
fn subject_bound(pieces: &[Piece]) -> Option<usize> {
    pieces.iter().try_fold(0usize, |total, p| {
        let n = match p {
            Piece::Text { text, .. } => Some(text.len()),
            Piece::Job { .. } => None,
            Piece::Alias { name, .. } => bounded_variable(name),
            Piece::Expansion(e) => expansion_bound(e),
        }?;
        total.checked_add(n)
    })
}

/// [`subject_bound`] of one `#{...}`.
fn expansion_bound(e: &Expansion) -> Option<usize> {
    let mods: &[Modifier] = match &e.modifiers {
        Modifiers::List(list) => list,
        Modifiers::None => &[],
        Modifiers::Unreadable { .. } => return None,
    };
    let has = |names: &[&str]| mods.iter().any(|m| names.contains(&m.name));
    let numbers = [
        "n", "w", "==", "!=", "<", ">", "<=", ">=", "&&", "||", "!", "!!", "m", "C",
    ];
    if has(&numbers) {
        return Some(20);
    }
    if let Some(m) = mods.iter().find(|m| m.name == "e") {
        let precision = m.args.get(2).and_then(|a| literal_number(a.text));
        return Some(NUMBER_BYTES as usize + precision.unwrap_or(2).unsigned_abs() as usize);
    }
    if has(&["l"]) {
        return Some(e.body.len());
    }
    // What a value becomes: kept or shortened (`=`, `b`, `d`), doubled
    // (`q`), padded (`p`), a time (`t`); anything else may grow it.
    let mut factor = 1usize;
    let mut extra = 0usize;
    for m in mods {
        match m.name {
            "=" => extra += m.args.get(1).map_or(0, |a| a.text.len()),
            "b" | "d" => {}
            "q" => factor *= 2,
            "t" => return Some(512),
            "p" => {
                extra += m
                    .args
                    .first()
                    .and_then(|a| literal_number(a.text))?
                    .unsigned_abs() as usize
            }
            _ => return None,
        }
    }
    body_value_bound(e)?.checked_mul(factor)?.checked_add(extra)
}

/// [`subject_bound`] of the value a `#{...}`'s body gives before its
/// modifiers act: literal text (`l`), a conditional's branches, a variable.
fn body_value_bound(e: &Expansion) -> Option<usize> {
    let literal = matches!(&e.modifiers, Modifiers::List(l) if l.iter().any(|m| m.name == "l"));
    if literal {
        Some(e.body.len())
    } else if e.body.starts_with('?') || e.body.contains("#{") {
        // A conditional's branches, or an inner format (tmux expands a
        // body holding `#{` as a format): at most all its pieces.
        subject_bound(&e.parts)
    } else {
        bounded_variable(e.body)
    }
}

/// Variables whose values tmux writes itself and keeps short: ids,
/// numbers, flags, sizes and times. Every other value (a name, a title, a
/// path, a command, a user option) may be of any length.
fn bounded_variable(name: &str) -> Option<usize> {
    if name.is_empty() {
        return Some(0);
    }
    // A user option holds whatever was set, whatever its name ends with
    // (`@x_id` is not an id).
    if name.starts_with('@') {
        return None;
    }
    const EXACT: [&str; 7] = [
        "pid",
        "version",
        "start_time",
        "host",
        "host_short",
        "uid",
        "user",
    ];
    const SUFFIXES: [&str; 27] = [
        "_id",
        "_index",
        "_pid",
        "_width",
        "_height",
        "_left",
        "_right",
        "_top",
        "_bottom",
        "_x",
        "_y",
        "_size",
        "_limit",
        "_panes",
        "_windows",
        "_attached",
        "_created",
        "_activity",
        "_active",
        "_dead",
        "_status",
        "_flag",
        "_flags",
        "_count",
        "_bytes",
        "_tty",
        "_on",
    ];
    let bounded = EXACT.contains(&name)
        || SUFFIXES.iter().any(|s| name.ends_with(s))
        || name.starts_with("pane_at_")
        || name.starts_with("window_at_");
    bounded.then_some(VALUE_BYTES as usize)
}

/// `R` (tmux 3.4+): `#{R:text,count}` repeats text; tmux rebuilds the
/// whole result on every repetition.
fn repeat_cost(e: &Expansion, scope: &Scope) -> Result<Cost, Refusal> {
    let count = format::skip(e.body.as_bytes(), 0, b",")
        .and_then(|comma| literal_number(&e.body[comma + 1..]))
        .filter(|n| (1..=MAX_REPEAT).contains(n));
    let Some(n) = count else {
        return Err(refuse(
            e.at,
            format!("repeat {}", describe(e)),
            "the count (after the comma) must be a whole number from 1 to 100",
        ));
    };
    let text = format_cost(&e.parts, scope)?;
    let n = n as f64;
    let rebuilt = text.times(n * (n + 1.0) / 2.0);
    Ok(Cost {
        out: text.out * n,
        work: text.work + rebuilt.out,
        copies: text.copies * n,
        reads: text.reads + rebuilt.copies,
        regex_runs: text.regex_runs,
    })
}

/// What tmux does to every result afterwards: substitutions, trimming,
/// padding, length.
fn finish_cost(mods: &[Modifier], mut c: Cost) -> Cost {
    for m in mods {
        match m.name {
            "s" if m.args.len() >= 2 => {
                // Every match (at most one per byte) becomes the
                // replacement, whose \N copies the match.
                let with = m.args[1].text.len() as f64;
                let scan = m.args[0].text.len().max(1) as f64;
                let scanned = c.scanned(scan);
                let grown = c.times(with + 1.0);
                c = Cost {
                    out: grown.out + with,
                    work: scanned.work + grown.out + with,
                    copies: grown.copies,
                    reads: scanned.reads + grown.copies,
                    regex_runs: c.regex_runs + 1.0,
                };
            }
            "=" => {
                let marker = m.args.get(1).map_or(0, |a| a.text.len()) as f64;
                c = c.copied();
                c.out += marker;
            }
            "p" => {
                let width = m.args.first().and_then(|a| literal_number(a.text));
                c.out += width.unwrap_or(0).abs() as f64;
                c = c.copied();
            }
            "n" | "w" => c = c.reduced(20.0),
            _ => {}
        }
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A modest server: 20 sessions of 20 windows of 20 panes.
    const SIZES: LoopSizes = LoopSizes {
        sessions: 20,
        windows: 20,
        panes: 20,
        clients: 10,
    };

    fn refused(format: &str) -> Refusal {
        match check(format, &SIZES) {
            Err(r) => r,
            Ok(()) => panic!("{format:?} was accepted"),
        }
    }

    fn accepted(format: &str) {
        if let Err(r) = check(format, &SIZES) {
            panic!("{format:?} refused: {r}");
        }
    }

    #[test]
    fn benign_formats_pass() {
        for f in [
            "",
            "plain text, no format",
            "#{session_name}:#{window_index}.#{pane_index} #{pane_current_command}",
            "#S:#I.#P #T ##{not_expanded} #[fg=red]x#[default]",
            "#{?pane_active,yes,no}",
            "#{?#{==:#{pane_mode},copy-mode},copying,#{pane_current_command}}",
            "#{=10:pane_title}",
            "#{=/-20/.../:pane_current_path}",
            "#{p-8:pane_index}|#{p8:window_name}",
            "#{s/%/pane-/:pane_id}",
            "#{m/r:^[0-9]+$,#{window_index}}",
            "#{s/^([0-9]+)$/w\\1/i:window_index}",
            "#{m:*vim*,#{pane_current_command}}",
            "#{m/ri:^(n?vim|emacs)$,#{l:nvim}}",
            "#{C:error}#{C/i:failed}",
            "#{e|+|:#{pane_index},1} #{e|/|f|4:#{pane_width},3}",
            "#{||:#{pane_dead},#{pane_in_mode}} #{&&:1,#{pane_active}}",
            "#{!=:#{pane_title},} #{<=:a,b}",
            "#{t:window_activity} #{t/f/%H#:%M:session_created} #{t/p:session_created}",
            "#{q:pane_current_path} #{b:pane_current_path} #{d:pane_current_path}",
            "#{n:pane_title} #{w:pane_title} #{a:65} #{c:red}",
            "#{l:#{literal}}",
            "#{S:#{session_name} }",
            "#{W:#{window_index}:#{window_name}#{?window_active,*,} ,}",
            "#{P:#{p4:pane_index} #{=20:pane_title} #{pane_current_command}\\n,[active] }",
            "#{S/nr:#{session_name},}#{W/t:x}#{L:#{client_name}}",
            "#{N/s:main} #{N/w:editor}",
            "#{R:-,40} #{!:#{pane_dead}} #{!!:1}",
            "#{status-left} #{@user_option} #{status-format[0]}",
        ] {
            // The guard takes them (tmux leaves the value as it is).
            accepted(f);
        }
    }

    #[test]
    fn the_default_status_line_without_re_expansion_passes() {
        // tmux 3.3a's default status-format[0] with its E:/T: modifiers
        // and computed widths taken out: a realistic, busy format.
        let f = "#[align=left range=left]#[push-default]#{=/20:status-left}#[pop-default]#[norange default]#[list=on align=left]#[list=left-marker]<#[list=right-marker]>#[list=on]#{W:#[range=window|#{window_index}]#{?#{&&:#{window_last_flag},#{!=:default,default}}, default,}#{?#{&&:#{window_bell_flag},#{!=:x,default}}, x,#{?#{&&:#{||:#{window_activity_flag},#{window_silence_flag}},#{!=:y,default}}, y,}}]#[push-default]#{window-status-format}#[pop-default]#[norange default]#{?window_end_flag,,#{window-status-separator}},#[range=window|#{window_index} list=focus]#{window-status-current-format}#[norange list=on default]#{?window_end_flag,,#{window-status-separator}}}#[nolist align=right range=right]#[push-default]#{=/40:status-right}#[pop-default]#[norange default]";
        accepted(f);
    }

    #[test]
    fn commands_and_re_expansion_are_refused() {
        assert_eq!(refused("x #(id)").at, 2);
        assert_eq!(refused("##(id)").construct, "#(...)");
        for f in [
            "x #{E:status-right}",
            "#{T;=10:status-left}",
            "#{s/#{l:a}/y/;E:pane_title}",
            "#{=#{l:5};T:status-left}",
            "#{;E:@evil}",
            "#{E;zz:@evil}",
        ] {
            let r = refused(f);
            assert!(
                r.why.contains("expand") || r.why.contains("plain text"),
                "{f}: {r}"
            );
        }
        assert!(refused("#{E:@evil}").construct.contains("E:"));
    }

    #[test]
    fn substitution_arguments_are_plain_text() {
        // tmux expands s/// arguments twice: a title holding #(...) would
        // run.
        let r = refused("#{s/#{pane_title}/x/:session_name}");
        assert_eq!(r.at, 4);
        assert!(r.why.contains("twice"), "{r}");
        assert_eq!(refused("#{s/m/#{pane_title}/:session_name}").at, 6);
        // Where the `#` is, not where its argument starts.
        assert_eq!(refused("#{s/ab#{pane_title}/x/:session_name}").at, 6);
        assert_eq!(refused("#{=#{pane_width}:pane_title}").at, 3);
    }

    #[test]
    fn nested_loops_are_refused_where_the_inner_loop_starts() {
        let r = refused("#{n:#{S:#{S:x}}}");
        assert_eq!(r.to_string(), "nested loop #{S:...} at byte 8: a loop inside a loop (the one at byte 4) multiplies tmux's work");
        assert_eq!(refused("#{W:#{?1,#{P:x},}}").at, 9);
        assert_eq!(refused("#{S:#{l:#{W:x}}}").at, 8);
        assert_eq!(refused("#{P:#{N/w:x}}").at, 4);
        let deep = format!("#{{n:{}x{}}}", "#{S:".repeat(8), "}".repeat(8));
        assert!(refused(&deep).construct.starts_with("nested loop"));
        let deeper = format!("#{{n:{}x{}}}", "#{S:".repeat(24), "}".repeat(24));
        assert!(refused(&deeper).construct.contains("nested more than 16"));
    }

    #[test]
    fn widths_pads_precisions_and_repeats_are_bounded() {
        let r = refused("#{n:#{p2147483647:x}}");
        assert_eq!(
            (r.at, r.construct.as_str()),
            (7, "the width of #{p2147483647:...}")
        );
        assert_eq!(refused("#{=1001:pane_title}").at, 3);
        assert_eq!(refused("#{=/-99999/x/:pane_title}").at, 4);
        assert_eq!(refused("#{p/-5000/:x}").at, 4);
        accepted("#{p+5:x}");
        assert_eq!(refused("#{pabc:x}").at, 3);
        accepted("#{p1000:x}#{p-1000:x}#{=-1000:x}");
        assert!(refused("#{e|*|f|2147483647:1,1}")
            .construct
            .contains("precision"));
        accepted("#{e|*|f|100:1,1}");
        assert!(refused("#{R:x,101}").construct.starts_with("repeat"));
        assert!(refused("#{R:x,#{pane_index}}")
            .construct
            .starts_with("repeat"));
        assert!(refused("#{R:x}").construct.starts_with("repeat"));
    }

    #[test]
    fn patterns_are_bounded() {
        assert!(refused("#{C:#{pane_title}}")
            .construct
            .starts_with("pane search"));
        assert!(refused("#{C:a*b}").why.contains("fnmatch"));
        assert!(refused("#{C/r:(a)\\1}").why.contains("regular expression"));
        assert!(refused(&format!("#{{C:{}}}", "a".repeat(257)))
            .why
            .contains("256"));
        assert!(refused("#{m:#{pane_title},x}")
            .construct
            .starts_with("match"));
        assert!(refused("#{m:*a*b*,x}").why.contains("fnmatch"));
        accepted("#{m:*a*,x}#{m:a*b*,x}");
        assert!(refused("#{m/r:(a*)*\\1,x}")
            .construct
            .contains("backreference"));
        assert!(refused("#{m/r:a{1000#},x}")
            .construct
            .contains("counted repetition"));
        assert!(refused("#{s/(ab)\\1/x/:y}")
            .construct
            .contains("backreference"));
        assert!(refused("#{m:a##b,x}").construct.starts_with("match"));
        accepted("#{m:a#,b#:c#}d,x}");
    }

    #[test]
    fn amplification_is_bounded() {
        // Pads in a loop body, on a server big enough.
        let body = "#{p1000:}".repeat(4);
        accepted(&format!("#{{S:{body}}}"));
        let big = LoopSizes {
            sessions: 2000,
            ..SIZES
        };
        let r = check(&format!("#{{S:{body}}}"), &big).unwrap_err();
        assert!(
            r.why
                .starts_with("over this server's 2000 sessions, it could make tmux build"),
            "{r}"
        );
        // A substitution that turns every byte into 100: multiplies.
        let r = refused(&format!(
            "#{{s/x*/{}/;s/x*/{}/:#{{l:{}}}}}",
            "y".repeat(100),
            "y".repeat(100),
            "x".repeat(100)
        ));
        assert!(r.why.contains("bytes"), "{r}");
        // Chained repeats.
        let r = refused("#{R:#{R:#{R:#{l:x},100},100},100}");
        assert!(r.why.contains("bytes"), "{r}");
        // Loops one after another: the work adds up.
        let many = "#{n:#{S:x}}".repeat(200);
        let r = check(&many, &big).unwrap_err();
        assert!(r.why.contains("handle"), "{r}");
        // A pane title read or copied over and over: it may hold 1 MiB.
        let r = refused(&"#{pane_title}".repeat(17));
        assert!(
            r.why.contains("times into the result") || r.why.contains("read a pane title"),
            "{r}"
        );
        assert!(refused(&"#{n:#{pane_title}}".repeat(40))
            .why
            .contains("read a pane title"));
        accepted(&"#{pane_index}".repeat(100));
        let r = refused("#{s/x*/yyyyyyyyyyyyyyyy/:pane_title}");
        assert!(r.why.contains("no bound"), "{r}");
    }

    #[test]
    fn regular_expressions_run_only_on_texts_of_bounded_length() {
        // Every text a program in a pane (or a tmux command) can make long.
        for var in [
            "pane_title",
            "window_name",
            "pane_path",
            "pane_current_path",
            "pane_current_command",
            "pane_start_command",
            "session_name",
            "@user_option",
            // A user option holds anything, whatever its name says.
            "@user_option_id",
            "@a_count",
            "buffer_sample",
            "client_termname",
        ] {
            for f in [
                format!("#{{m/r:(a|aa)*b,#{{{var}}}}}"),
                format!("#{{m/ri:x,#{{{var}}}}}"),
                format!("#{{s/a/b/:{var}}}"),
                format!("#{{s/a/b/:#{{{var}}}}}"),
                // Truncation bounds width, not bytes (zero-width
                // characters), and a quoted value is still the value.
                format!("#{{m/r:x,#{{=5:{var}}}}}"),
                format!("#{{m/r:x,#{{q:{var}}}}}"),
                format!("#{{m/r:x,#{{?1,#{{{var}}},y}}}}"),
                format!("#{{m/r:x,a#{{{var}}}}}"),
                format!("#{{s/a/b/:#{{?1,#{{{var}}},}}}}"),
            ] {
                let r = refused(&f);
                assert!(r.why.contains("no bound"), "{f}: {r}");
            }
        }
        // A body holding `#{` is a format: its text, not a variable.
        accepted("#{s/a/b/:#{l:pane_title}}#{s/a/b/:#{?1,pane_title,}}");
        // Ids, numbers, flags and literal text are short.
        accepted("#{m/r:^[0-9]+$,#{pane_id}}#{s/%//:pane_id}#{m/r:1,#{pane_active}}");
        accepted(&format!("#{{m/r:(a|aa)*b,{}}}", "a".repeat(256)));
        accepted("#{m/r:x,#{n:pane_title}}#{m/r:x,#{?pane_active,yes,no}}");
        let r = refused(&format!("#{{m/r:(a|aa)*b,{}}}", "a".repeat(257)));
        assert!(r.why.contains("257 bytes"), "{r}");
        // Screens are text a program draws.
        assert!(refused("#{C/r:x}")
            .why
            .contains("regular expression over the screen"));
        accepted("#{C:x}");
        // Globs keep their own (linear) rule.
        accepted("#{m:*vim*,#{pane_current_command}}");
    }

    #[test]
    fn regular_expressions_are_counted_in_loops() {
        let one = "#{m/r:(a|aa)*b,#{pane_id}}";
        accepted(&one.repeat(16));
        assert!(refused(&one.repeat(17))
            .why
            .contains("regular expression 17 times"));
        // SIZES has 20 panes a window: 20 runs.
        let r = refused(&format!("#{{P:{one}}}"));
        assert!(r.why.contains("regular expression 20 times"), "{r}");
        let small = LoopSizes { panes: 8, ..SIZES };
        assert!(check(&format!("#{{P:{one}{one}}}"), &small).is_ok());
        assert!(check(&format!("#{{P:{one}{one}{one}}}"), &small).is_err());
        // Long expressions need many states.
        accepted(&format!("#{{m/r:{},x}}", "a".repeat(64)));
        let r = refused(&format!("#{{m/r:{},x}}", "a".repeat(65)));
        assert!(r.why.contains("limited to 64 bytes"), "{r}");
    }

    #[test]
    fn loop_sizes_come_from_the_listing() {
        assert!(visits_sets("#{?1,#{S:x},}"));
        assert!(visits_sets("#{N/s:x}"));
        assert!(!visits_sets("#{session_name}#{l:S:x}"));
        assert!(!visits_sets("#{S:"));
        assert_eq!(LoopSizes::of(&Inventory::default()).sessions, 0);
    }

    #[test]
    fn syntax_limits() {
        assert_eq!(refused("a#").construct, "a lone # at the end");
        assert_eq!(refused("x#{pane_id").at, 1);
        assert!(refused("#{l;}").why.contains("past the end"));
        let deep = format!("{}x{}", "#{?1,".repeat(17), ",}".repeat(17));
        assert!(refused(&deep).construct.contains("nested more than 16"));
        let ok = format!("{}x{}", "#{?1,".repeat(16), ",}".repeat(16));
        accepted(&ok);
        assert!(refused(&"x".repeat(4097)).construct.contains("4097 bytes"));
        assert_eq!(refused("a\nb").at, 1);
        assert_eq!(refused("a\0b").construct, "a NUL byte");
        assert!(refused("#{x:y}").construct.starts_with("the modifiers"));
    }

    #[test]
    fn refusals_say_where_and_why() {
        let r = refused("ab#{=5:x}#{S:#{W:y}}");
        assert_eq!(r.at, 13);
        assert!(r
            .to_string()
            .starts_with("nested loop #{W:...} at byte 13: "));
        let r = refused(&format!("é#{{p{}:x}}", "9".repeat(60)));
        assert!(r.construct.ends_with("...}"), "{r}");
    }

    /// Sizes that tell the four loops apart.
    const SMALL: LoopSizes = LoopSizes {
        sessions: 3,
        windows: 5,
        panes: 7,
        clients: 11,
    };

    /// What `format` costs on a server of [`SMALL`], as `check` counts it.
    fn cost(format: &str) -> Cost {
        let pieces = format::parse(format, MAX_DEPTH).expect("a format that parses");
        let scope = Scope {
            sizes: &SMALL,
            within: None,
        };
        format_cost(&pieces, &scope).expect("a format within the limits")
    }

    fn c(out: f64, work: f64, copies: f64, reads: f64, regex_runs: f64) -> Cost {
        Cost {
            out,
            work,
            copies,
            reads,
            regex_runs,
        }
    }

    /// The arithmetic every estimate is made of, on values that tell each
    /// operation apart (a `+` for a `*` or a `-` gives another number).
    #[test]
    fn costs_add_copy_scan_and_reduce() {
        let a = c(3.0, 5.0, 2.0, 7.0, 1.0);
        let b = c(11.0, 13.0, 17.0, 19.0, 23.0);
        assert_eq!(a.plus(b), c(14.0, 18.0, 19.0, 26.0, 24.0));
        assert_eq!(a.times(3.0), c(9.0, 15.0, 6.0, 21.0, 3.0));
        // Copied: its bytes handled once more, its pane texts read again.
        assert_eq!(a.copied(), c(3.0, 8.0, 2.0, 9.0, 1.0));
        assert_eq!(a.scanned(4.0), c(3.0, 17.0, 2.0, 15.0, 1.0));
        assert_eq!(a.reduced(6.0), c(6.0, 8.0, 0.0, 9.0, 1.0));
        assert_eq!(Cost::text(4), c(4.0, 4.0, 0.0, 0.0, 0.0));
        // A pane text twice and a 512-byte time: 64 * 2 + 512 built; the
        // lookup, the value and what is built handled; read once, then
        // once a copy.
        assert_eq!(
            Cost::lookup("pane_title", 2.0, 512.0),
            c(640.0, 768.0, 2.0, 3.0, 0.0)
        );
        assert_eq!(
            Cost::lookup("window_index", 2.0, 0.0),
            c(128.0, 256.0, 0.0, 0.0, 0.0)
        );
    }

    #[test]
    fn texts_a_pane_sets_are_told_from_the_ones_tmux_writes() {
        for name in [
            "pane_title",
            "window_name",
            "@any",
            "pane_current_command",
            "pane_start_command",
        ] {
            assert!(is_pane_text(name), "{name}");
        }
        for name in [
            "window_index",
            "pane_id",
            "session_id",
            "",
            "pane_current_commands",
        ] {
            assert!(!is_pane_text(name), "{name}");
        }
    }

    /// Each piece of a format, costed by hand from the model in `Cost`'s
    /// docs (64 bytes a value, 64 a lookup, 128 a loop item, a strlcat
    /// pass at 1/32) on [`SMALL`]: every piece's result is copied once more
    /// into the text around it.
    #[test]
    fn each_construct_costs_what_the_model_says() {
        // Text: 3 built, 3 handled, 3 copied.
        assert_eq!(cost("abc"), c(3.0, 6.0, 0.0, 0.0, 0.0));
        // A pane title: read, then read again as it is copied.
        assert_eq!(cost("#{pane_title}"), c(64.0, 256.0, 1.0, 3.0, 0.0));
        assert_eq!(cost("#T"), c(64.0, 256.0, 1.0, 3.0, 0.0));
        // q doubles a value, t prints 512 bytes more.
        assert_eq!(cost("#{q:window_index}"), c(128.0, 384.0, 0.0, 0.0, 0.0));
        assert_eq!(
            cost("#{t:window_activity}"),
            c(576.0, 1280.0, 0.0, 0.0, 0.0)
        );
        // Literal: its pieces, and its text copied as it is.
        assert_eq!(cost("#{l:ab}"), c(4.0, 10.0, 0.0, 0.0, 0.0));
        // A character: reduced to at most 6 bytes.
        assert_eq!(cost("#{a:65}"), c(6.0, 12.0, 0.0, 0.0, 0.0));
        // Truncation with a 2-byte marker, pad to 7, length.
        assert_eq!(
            cost("#{=/5/ab:window_index}"),
            c(66.0, 322.0, 0.0, 0.0, 0.0)
        );
        assert_eq!(cost("#{p7:pane_title}"), c(71.0, 334.0, 1.0, 4.0, 0.0));
        assert_eq!(cost("#{p-7:pane_title}"), c(71.0, 334.0, 1.0, 4.0, 0.0));
        assert_eq!(cost("#{n:pane_title}"), c(20.0, 276.0, 0.0, 3.0, 0.0));
        // A substitution: scanned by its 2-byte pattern, every byte may
        // become the 3-byte replacement, one regex run.
        assert_eq!(
            cost("#{s/ab/xyz/:window_index}"),
            c(259.0, 838.0, 0.0, 0.0, 1.0)
        );
        // An expression: its text read, a number of 330 bytes and its
        // precision (2 unless given).
        assert_eq!(cost("#{e|+|f|3:1,2}"), c(333.0, 342.0, 0.0, 0.0, 0.0));
        assert_eq!(cost("#{e|+|:1,2}"), c(332.0, 341.0, 0.0, 0.0, 0.0));
        // A comparison: its sides read, one byte out.
        assert_eq!(cost("#{==:ab,cd}"), c(1.0, 16.0, 0.0, 0.0, 0.0));
        // A glob match: the right side scanned by the 2-byte pattern.
        assert_eq!(cost("#{m:*b,ab}"), c(1.0, 26.0, 0.0, 0.0, 0.0));
        assert_eq!(cost("#{m:*b,#{pane_title}}"), c(1.0, 464.0, 0.0, 6.0, 0.0));
        // A pane search: the screen (a pane text) scanned by the pattern.
        assert_eq!(cost("#{C:ab}"), c(10.0, 394.0, 0.0, 5.0, 0.0));
    }

    #[test]
    fn loops_and_name_searches_cost_per_item_of_their_own_set() {
        // 3 sessions: 2 bytes each; each item's work (4) and set-up (128),
        // and the strlcat passes: 2 * (1 + 2 + 3) / 32.
        assert_eq!(cost("#{S:ab}"), c(6.0, 402.375, 0.0, 0.0, 0.0));
        // 11 clients: 22 bytes; 132 * 11 + 2 * 66 / 32, copied.
        assert_eq!(cost("#{L:ab}"), c(22.0, 1478.125, 0.0, 0.0, 0.0));
        // 5 windows of a pane title: its copies are not multiplied.
        assert_eq!(cost("#{W:#{pane_title}}"), c(320.0, 2270.0, 1.0, 4.0, 0.0));
        // 7 panes, one regular expression each.
        assert_eq!(cost("#{P:#{m/r:a,1}}"), c(7.0, 994.875, 0.0, 0.0, 7.0));
        // A name search compares every session's (3) or window's (5) name.
        assert_eq!(cost("#{N/s:ab}"), c(1.0, 199.0, 0.0, 0.0, 0.0));
        assert_eq!(cost("#{N/w:ab}"), c(1.0, 327.0, 0.0, 0.0, 0.0));
        assert_eq!(cost("#{N:ab}"), c(1.0, 327.0, 0.0, 0.0, 0.0));
    }

    #[test]
    fn visited_sets_are_each_loops_own() {
        assert_eq!(SMALL.visited_by("S"), (3.0, "sessions"));
        assert_eq!(SMALL.visited_by("W"), (5.0, "windows in a session"));
        assert_eq!(SMALL.visited_by("P"), (7.0, "panes in a window"));
        assert_eq!(SMALL.visited_by("L"), (11.0, "clients"));
    }

    /// Every limit a refusal names is the documented one.
    #[test]
    fn refusals_name_the_limit_they_passed() {
        let huge = LoopSizes {
            sessions: 2000,
            ..SIZES
        };
        let out = check(&format!("#{{S:{}}}", "#{p1000:}".repeat(4)), &huge).unwrap_err();
        assert!(out.why.ends_with("(limit 1048576)"), "{out}");
        let work = check(&"#{n:#{S:x}}".repeat(200), &huge).unwrap_err();
        assert!(work.why.ends_with("(limit 2097152)"), "{work}");
        let copies = refused(&"#{pane_title}".repeat(17));
        assert!(
            copies.why.ends_with("(limit 16)") || copies.why.ends_with("(limit 32)"),
            "{copies}"
        );
        let reads = refused(&"#{n:#{pane_title}}".repeat(40));
        assert!(reads.why.ends_with("(limit 32)"), "{reads}");
        let runs = refused(&"#{m/r:a,#{pane_id}}".repeat(17));
        assert!(runs.why.ends_with("(limit 16)"), "{runs}");
    }

    /// A pane of window `@window`: only its window counts for the sizes.
    fn pane(id: u32, window: u32) -> crate::tmux::Pane {
        crate::tmux::inventory::pane_for_tests(id, window)
    }

    fn session(id: u32, windows: u32, attached: u32) -> crate::tmux::Session {
        crate::tmux::Session {
            session_id: crate::tmux::SessionId::parse(&format!("${id}")).expect("an id"),
            session_name: format!("s{id}"),
            session_windows: windows,
            session_attached: attached,
            session_created: 0,
            session_group: None,
            session_path: String::new(),
        }
    }

    #[test]
    fn loop_sizes_are_the_largest_of_each_set_and_the_clients_attached() {
        // Windows @1 (3 panes), @2 (1), @3 (2); sessions of 4, 6 and 2
        // windows with 1, 0 and 2 clients attached.
        let inv = Inventory {
            sessions: vec![session(0, 4, 1), session(1, 6, 0), session(2, 2, 2)],
            windows: Vec::new(),
            panes: [(1, 1), (2, 2), (3, 1), (4, 3), (5, 1), (6, 3)]
                .iter()
                .map(|&(id, w)| pane(id, w))
                .collect(),
        };
        let sizes = LoopSizes::of(&inv);
        assert_eq!(
            sizes,
            LoopSizes {
                sessions: 3,
                windows: 6,
                panes: 3,
                // 3 attached, and 8 for panescan's own and one-shot ones.
                clients: 11,
            }
        );
    }

    /// Each limit accepts its own value and refuses one more, and says
    /// where.
    #[test]
    fn limits_hold_at_their_edges() {
        accepted(&"x".repeat(MAX_FORMAT_BYTES));
        assert_eq!(refused(&"x".repeat(MAX_FORMAT_BYTES + 1)).at, 4096);
        // E and T are found where they start, whatever comes before.
        let r = refused("ab#{E:x}");
        assert_eq!((r.at, r.construct.as_str()), (4, "the E: modifier"));
        let r = refused("ab#{=5;T:x}");
        assert_eq!((r.at, r.construct.as_str()), (7, "the T: modifier"));
    }

    /// A literal number has at most 9 digits, leading zeros counted: one
    /// more is refused before it is read.
    #[test]
    fn literal_numbers_have_at_most_nine_digits() {
        accepted("#{p000000005:x}#{=-000000005:x}");
        assert!(refused("#{p0000000005:x}")
            .construct
            .starts_with("the width"));
        assert!(refused("#{=-0000000005:x}")
            .construct
            .starts_with("the width"));
        assert!(refused("#{p-:x}").construct.starts_with("the width"));
        assert_eq!(literal_number("-123456789"), Some(-123_456_789));
        assert_eq!(literal_number("1234567890"), None);
    }

    /// An escaped character in a regular expression is plain; a refusal
    /// points at the backreference or the `{`, not at the pattern's start;
    /// a star at a pane search's end counts (tmux wraps the term in `*`).
    #[test]
    fn regular_expressions_are_read_escape_by_escape() {
        accepted("#{m/r:a\\.b\\{\\\\,x}");
        assert_eq!(refused("#{m/r:ab\\1,x}").at, 8);
        assert_eq!(refused("#{m/r:ab{2#},x}").at, 8);
        assert!(refused("#{C:ab*}").why.contains("at most 0 *"));
    }

    /// A construct is shown cut at 40 bytes, at a character's start.
    #[test]
    fn constructs_are_cut_between_characters() {
        // `=/99999/` and 31 bytes: the 40th byte is inside the `é`.
        let f = format!("#{{=/99999/{}é{}/:x}}", "a".repeat(31), "b".repeat(20));
        let shown = refused(&f).construct;
        let kept = format!("the width of #{{=/99999/{}...", "a".repeat(31));
        assert!(shown.starts_with(&kept) && !shown.contains('é'), "{shown}");
    }

    /// The most bytes a format's pieces can expand to, as a regular
    /// expression's subject: worked out by hand (a short value 64 bytes).
    fn bound(format: &str) -> Option<usize> {
        let pieces = format::parse(format, MAX_DEPTH).expect("a format that parses");
        subject_bound(&pieces)
    }

    /// Each modifier's effect on a value's length: kept or cut (`=`, `b`,
    /// `d`, plus `=`'s marker), doubled (`q`), padded (`p`), a time (`t`),
    /// a number (`n`, a comparison, `e` with its precision), literal (`l`).
    #[test]
    fn subject_bounds_follow_each_modifier() {
        assert_eq!(bound("#{pane_id}"), Some(64));
        assert_eq!(bound("abc#{pane_id}#I"), Some(3 + 64 + 64));
        assert_eq!(bound("#{=5:pane_id}"), Some(64));
        assert_eq!(bound("#{=/5/ab:pane_id}"), Some(66));
        assert_eq!(bound("#{b:pane_id}#{d:pane_id}"), Some(128));
        assert_eq!(bound("#{q:pane_id}"), Some(128));
        assert_eq!(bound("#{=/5/ab;q:pane_id}"), Some(130));
        assert_eq!(bound("#{t:pane_id}"), Some(512));
        assert_eq!(bound("#{p7:pane_id}"), Some(71));
        assert_eq!(bound("#{p-7:pane_id}"), Some(71));
        assert_eq!(bound("#{n:pane_title}#{==:a,b}"), Some(40));
        assert_eq!(bound("#{e|+|f|3:1,2}"), Some(333));
        assert_eq!(bound("#{e|+|:1,2}"), Some(332));
        assert_eq!(bound("#{l:abc}"), Some(3));
        // A conditional: its whole body, branches and condition.
        assert_eq!(bound("#{?1,a,bc}"), Some(7));
        assert_eq!(bound("#{?1,#{pane_id},bc}"), Some(70));
        assert_eq!(bound("#{pane_title}"), None);
        assert_eq!(bound("#{p:pane_id}"), None);
        assert_eq!(bound("#{a:pane_id}"), None);
        // Through the guard: each within the 256 bytes a subject may have.
        accepted("#{m/r:x,#{q:pane_id}#{b:pane_id}#{d:pane_id}}");
        let r = refused("#{m/r:x,#{=/5/ab;q:pane_id}#{b:pane_id}#{d:pane_id}}");
        assert!(r.why.contains("258 bytes"), "{r}");
        assert!(refused("#{m/r:x,#{t:pane_id}}").why.contains("512 bytes"));
        accepted("#{m/r:x,#{p7:pane_id}}");
    }

    /// Ids, numbers, flags, sizes and times are short; anything else, and
    /// any user option, may be of any length.
    #[test]
    fn short_values_are_told_by_their_names() {
        for name in [
            "pid",
            "host",
            "pane_id",
            "window_index",
            "pane_at_top",
            "window_at_anything",
            "client_tty",
        ] {
            assert_eq!(bounded_variable(name), Some(64), "{name}");
        }
        assert_eq!(bounded_variable(""), Some(0));
        for name in [
            "pane_title",
            "@pane_id",
            "pane_ids",
            "hostname",
            "window_atx",
        ] {
            assert_eq!(bounded_variable(name), None, "{name}");
        }
    }

    /// `R` builds its text n times and rebuilds the result on every
    /// repetition: 1 + 2 + ... + n copies of the text.
    #[test]
    fn a_repeat_costs_its_text_rebuilt_each_time() {
        let pieces = format::parse("#{R:#{pane_title},3}", MAX_DEPTH).expect("parses");
        let Some(Piece::Expansion(e)) = pieces.first() else {
            panic!("{pieces:?}")
        };
        let scope = Scope {
            sizes: &SMALL,
            within: None,
        };
        let text = format_cost(&e.parts, &scope).expect("within the limits");
        // The title, copied, and `,3` (its count, read as text).
        assert_eq!(text, c(66.0, 260.0, 1.0, 3.0, 0.0));
        // Out: 3 texts; work: the text once, then 1 + 2 + 3 = 6 texts
        // rebuilt; the title copied 3 times, read 3 + 6 times.
        let r = repeat_cost(e, &scope).expect("within the limits");
        assert_eq!(r, c(198.0, 260.0 + 6.0 * 66.0, 3.0, 9.0, 0.0));
    }

    /// A substitution: the text scanned by its pattern, every byte may
    /// become the replacement, its pane texts copied and read that many
    /// times more, one regex run; one without a replacement costs nothing
    /// more (tmux leaves the value as it is).
    #[test]
    fn substitutions_cost_the_text_grown_by_the_replacement() {
        let pieces = format::parse("#{s/ab/xyz/:x}", MAX_DEPTH).expect("parses");
        let Some(Piece::Expansion(e)) = pieces.first() else {
            panic!("{pieces:?}")
        };
        let Modifiers::List(mods) = &e.modifiers else {
            panic!("{e:?}")
        };
        // Scanned by 2 bytes: work 5 + 3 * 2, reads 7 + 2 * 2. Grown 4
        // times: 12 out, 8 copies. Then 3 bytes of replacement.
        let a = c(3.0, 5.0, 2.0, 7.0, 1.0);
        assert_eq!(finish_cost(mods, a), c(15.0, 26.0, 8.0, 19.0, 2.0));
        for f in ["#{s:pane_id}", "#{s/ab:pane_id}"] {
            let pieces = format::parse(f, MAX_DEPTH).expect("parses");
            let Some(Piece::Expansion(e)) = pieces.first() else {
                panic!("{pieces:?}")
            };
            let Modifiers::List(mods) = &e.modifiers else {
                panic!("{e:?}")
            };
            assert!(mods[0].args.len() < 2, "{f}: {mods:?}");
            assert_eq!(finish_cost(mods, a), a, "{f}");
            // The guard takes them (tmux leaves the value as it is).
            accepted(f);
        }
        // In a format: a title's length (20 bytes, read 3 times, no
        // copy) scanned, grown 4 times, 3 bytes more, then copied.
        assert_eq!(
            cost("#{s/ab/xyz/:#{n:pane_title}}"),
            c(83.0, 482.0, 0.0, 3.0, 1.0)
        );
    }

    /// A value where plain text belongs, or a subject of unbounded length,
    /// is refused where it starts.
    #[test]
    fn patterns_and_subjects_are_refused_where_they_start() {
        // `#{C:` and `#{m:` are 4 bytes, `ab` 2 more.
        assert_eq!(refused("#{C:ab#{pane_id}}").at, 6);
        assert_eq!(refused("#{m:ab#{pane_id},x}").at, 6);
        // The subject starts after `#{m/r:ab,`: at byte 9.
        assert_eq!(refused("#{m/r:ab,#{pane_title}}").at, 9);
    }

    mod never_panics {
        use super::super::{check, visits_sets};
        use super::SIZES;
        use proptest::prelude::*;

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(4000))]

            #[test]
            fn on_format_like_text(s in "([#{}:;,/=?()SWPLNCREmspel0-9xé\\\\*|!<>-]|#\\{|#,|##){0,80}") {
                let _ = check(&s, &SIZES);
                let _ = visits_sets(&s);
            }

            #[test]
            fn on_any_text(s in "\\PC{0,200}") {
                let _ = check(&s, &SIZES);
            }
        }
    }
}
