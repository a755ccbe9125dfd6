//! A structure-aware generator for the grammar fuzz check: bytes -> patterns
//! of the bounded grammar and haystacks built from samples of them.
//!
//! Not part of the stable API. `fuzz/fuzz_targets/grammar_structured.rs`,
//! `engine/tests/fuzz_structured.rs` (a property test and the seed replay)
//! call [`check`] or [`generate`].
//!
//! Random bytes are mostly not regular expressions, so the byte-level
//! `grammar` target spends its time in the parser's error paths. Here the
//! bytes are choices, read one at a time ([`Source`]; zeros once they run
//! out, and choice 0 is always a leaf, so every input ends): which node of
//! the grammar comes next (literals and escapes, wide and case-folding
//! characters, Perl, Unicode and POSIX classes, bracketed classes with
//! ranges, negation, nesting, `&&`, `--` and panescan's literal `~`,
//! anchors and word boundaries, groups with names and flags, repetitions
//! up to and just past [`MAX_REPETITION`], alternations, nesting up to and
//! just past [`MAX_NESTING`]). Each line of the haystack is then a sample
//! of one pattern, drawn from its HIR by the same bytes (a branch of each
//! alternation, a count for each repetition, a member of each class), put
//! between decorations (escape sequences, invalid UTF-8, wide characters,
//! word characters next to a boundary), or a blank, repeated or damaged
//! line. The case is encoded in the byte layout of [`crate::fuzzing`], so
//! anything found replays through the `grammar` seed corpus too.

use regex_syntax::hir::{Class, Hir, HirKind};

use crate::fuzzing::{check as check_case, Oracle, Verdict};
use crate::pattern::{MAX_NESTING, MAX_REPETITION};

/// The choices an input makes, read one byte at a time.
#[derive(Debug)]
pub struct Source<'a> {
    data: &'a [u8],
    at: usize,
}

impl<'a> Source<'a> {
    /// Choices read from `data`; zeros after its end.
    pub fn new(data: &'a [u8]) -> Source<'a> {
        Source { data, at: 0 }
    }

    /// The next byte (0 after the end).
    pub fn byte(&mut self) -> u8 {
        let b = self.data.get(self.at).copied().unwrap_or(0);
        self.at += 1;
        b
    }

    /// A number in `0..n` (0 when `n` is 0 or 1).
    pub fn below(&mut self, n: usize) -> usize {
        match n {
            0 | 1 => 0,
            2..=256 => usize::from(self.byte()) % n,
            _ => (usize::from(self.byte()) << 8 | usize::from(self.byte())) % n,
        }
    }

    /// True with probability about `in_256 / 256` (never once the bytes
    /// have run out).
    pub fn chance(&mut self, in_256: u8) -> bool {
        self.byte() >= 255 - in_256 && self.at <= self.data.len()
    }

    /// One of `items` (not empty).
    pub fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len())]
    }

    /// The bytes not read yet.
    pub fn rest(&self) -> &'a [u8] {
        self.data.get(self.at..).unwrap_or_default()
    }
}

/// Literals: plain, case-folding (Kelvin sign, long s, final sigma, dotted
/// I), wide, combining, escaped metacharacters and every escape form.
const LITERALS: &[&str] = &[
    "a",
    "b",
    "k",
    "s",
    "K",
    "S",
    "error",
    "Warn",
    "0",
    "9",
    " ",
    "_",
    "-",
    ":",
    "=",
    "/",
    ",",
    "~",
    "#",
    "&",
    "é",
    "É",
    "ß",
    "ẞ",
    "\u{212A}",
    "ſ",
    "Σ",
    "σ",
    "ς",
    "İ",
    "ı",
    "ǅ",
    "ﬀ",
    "漢",
    "字",
    "😀",
    "Ａ",
    "ａ",
    "e\u{301}",
    "\u{200D}",
    "\t",
    r"\.",
    r"\*",
    r"\+",
    r"\?",
    r"\(",
    r"\)",
    r"\[",
    r"\]",
    r"\{",
    r"\}",
    r"\|",
    r"\\",
    r"\^",
    r"\$",
    r"\#",
    r"\&",
    r"\-",
    r"\~",
    r"\x41",
    r"\x{263A}",
    r"\u00e9",
    r"\U0001F600",
    r"\t",
    r"\x7F",
    r"\x1b",
    r"\r",
    r"\a",
    r"\f",
    r"\v",
    r"\x00",
    r"\u{212A}",
    r"\ ",
];

/// Classes written without brackets.
const CLASSES: &[&str] = &[
    ".",
    r"\d",
    r"\D",
    r"\w",
    r"\W",
    r"\s",
    r"\S",
    r"\pL",
    r"\pN",
    r"\p{Lu}",
    r"\p{Ll}",
    r"\p{Greek}",
    r"\p{Han}",
    r"\P{L}",
    r"\p{Cyrillic}",
    r"\p{Zs}",
    r"\p{Nd}",
    r"\p{Emoji}",
    r"\p{Any}",
    r"\p{Lt}",
    r"\P{Greek}",
    r"\p{Script=Latin}",
    r"\p{gc=Sm}",
];

/// Items of a bracketed class.
const CLASS_ITEMS: &[&str] = &[
    "a",
    "k",
    "s",
    "Z",
    "0",
    "é",
    "Σ",
    "\u{212A}",
    "漢",
    "😀",
    "~",
    "-",
    r"\]",
    r"\[",
    r"\^",
    r"\-",
    "&",
    ".",
    "a-f",
    "0-9",
    "A-Z",
    "α-ω",
    r"\x01-\x1f",
    r"\x{80}-\x{10FFFF}",
    "!-/",
    r"\d",
    r"\w",
    r"\s",
    r"\W",
    "[:alpha:]",
    "[:digit:]",
    "[:^space:]",
    "[:punct:]",
    "[:upper:]",
    r"\p{Greek}",
    r"\pN",
    "~~",
    "[xyz]",
    "[^a]",
];

/// Anchors and boundaries.
const LOOKS: &[&str] = &[
    "^",
    "$",
    r"\A",
    r"\z",
    r"\b",
    r"\B",
    r"\b{start}",
    r"\b{end}",
    r"\<",
    r"\>",
    r"\b{start-half}",
    r"\b{end-half}",
];

/// Group openings (a `(?P<` or `(?<` gets a fresh name).
const GROUPS: &[&str] = &[
    "(", "(?:", "(?P<", "(?<", "(?i:", "(?-i:", "(?s:", "(?U:", "(?m:", "(?R:", "(?i-s:", "(?-u:",
    "(?iU:", "(?Rm:",
];

/// Flags set for the rest of a group.
const FLAGS: &[&str] = &["(?i)", "(?-i)", "(?U)", "(?s)", "(?R)", "(?m)"];

/// Text put around a sample in a line.
const DECOR: &[&[u8]] = &[
    b"",
    b"x",
    b" ",
    b"\x1b[31m",
    b"\x1b[0m",
    b"\x1b]0;title\x07",
    b"\xff",
    b"\xc3",
    b"\xe2\x84",
    b"\x00",
    b"\r",
    b"\t",
    "é".as_bytes(),
    "漢字".as_bytes(),
    "😀".as_bytes(),
    "\u{212A}".as_bytes(),
    b"_9",
    b"--",
];

/// How a piece of pattern text joins its neighbours.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Shape {
    /// One thing a repetition applies to whole.
    Atom,
    /// A look, flags, a repetition or a sequence: grouped before repeating.
    Other,
    /// An alternation: grouped inside a sequence too.
    Alternation,
}

/// Builds one pattern. `text` is what the engine gets; `twin` the same
/// with each class `~` escaped, as regex-syntax reads it (the engine makes
/// that rewrite itself; samples come from `twin`).
struct Builder<'s, 'a> {
    src: &'s mut Source<'a>,
    text: String,
    twin: String,
    /// Nodes still allowed.
    budget: usize,
    names: usize,
}

impl Builder<'_, '_> {
    fn push(&mut self, s: &str) {
        self.text.push_str(s);
        self.twin.push_str(s);
    }

    /// One node; returns its shape.
    fn node(&mut self, depth: u32) -> Shape {
        let kinds = if depth >= 8 || self.budget == 0 {
            4
        } else {
            11
        };
        self.budget = self.budget.saturating_sub(1);
        match self.src.below(kinds) {
            0 => {
                let lit = self.src.pick(LITERALS);
                self.push(lit);
                // A backslash escape or one character is one atom.
                if lit.starts_with('\\') || lit.chars().count() == 1 {
                    Shape::Atom
                } else {
                    Shape::Other
                }
            }
            1 => {
                let class = self.src.pick(CLASSES);
                self.push(class);
                Shape::Atom
            }
            2 => self.bracket(0),
            3 => {
                let look = self.src.pick(LOOKS);
                self.push(look);
                Shape::Other
            }
            4 | 5 => self.sequence(depth),
            6 => self.alternation(depth),
            7 => self.group(depth),
            8 | 9 => self.repetition(depth),
            _ => {
                let flags = self.src.pick(FLAGS);
                self.push(flags);
                Shape::Other
            }
        }
    }

    /// A bracketed class: 1-4 items, maybe negated, maybe `&&` or `--`
    /// another class.
    fn bracket(&mut self, nested: u32) -> Shape {
        let open = if self.src.chance(48) { "[^" } else { "[" };
        self.push(open);
        for _ in 0..=self.src.below(4) {
            match self.src.pick(CLASS_ITEMS) {
                "~" => self.tilde(),
                "~~" => {
                    self.tilde();
                    self.tilde();
                }
                item => self.push(item),
            }
        }
        if nested < 2 && self.src.chance(40) {
            let op = if self.src.chance(128) { "&&" } else { "--" };
            self.push(op);
            self.bracket(nested + 1);
        }
        self.push("]");
        Shape::Atom
    }

    /// A `~` inside a class: a literal for the engine, escaped for
    /// regex-syntax (where `~~` is symmetric difference).
    fn tilde(&mut self) {
        self.text.push('~');
        self.twin.push_str(r"\~");
    }

    fn sequence(&mut self, depth: u32) -> Shape {
        for _ in 0..2 + self.src.below(3) {
            let start = (self.text.len(), self.twin.len());
            if self.node(depth + 1) == Shape::Alternation {
                self.wrap(start);
            }
        }
        Shape::Other
    }

    fn alternation(&mut self, depth: u32) -> Shape {
        for i in 0..2 + self.src.below(3) {
            if i > 0 {
                self.push("|");
            }
            // An empty branch now and then.
            if !self.src.chance(16) {
                self.node(depth + 1);
            }
        }
        Shape::Alternation
    }

    fn group(&mut self, depth: u32) -> Shape {
        let open = self.src.pick(GROUPS);
        self.push(open);
        if open.ends_with('<') {
            self.names += 1;
            let name = format!("g{}>", self.names);
            self.push(&name);
        }
        self.node(depth + 1);
        self.push(")");
        Shape::Atom
    }

    /// A repetition: `*`, `+`, `?` or counted, near the limit now and then
    /// (just past it rarely: a rejection), lazy sometimes.
    fn repetition(&mut self, depth: u32) -> Shape {
        let start = (self.text.len(), self.twin.len());
        if self.node(depth + 1) != Shape::Atom {
            self.wrap(start);
        }
        let count = |src: &mut Source<'_>| -> u32 {
            match src.below(16) {
                0 => MAX_REPETITION - src.below(12) as u32,
                1 if src.chance(64) => MAX_REPETITION + 1 + src.below(4) as u32,
                _ => src.below(6) as u32,
            }
        };
        let op = match self.src.below(6) {
            0 => "*".to_owned(),
            1 => "+".to_owned(),
            2 => "?".to_owned(),
            3 => format!("{{{}}}", count(self.src)),
            4 => format!("{{{},}}", count(self.src)),
            _ => {
                let (a, b) = (count(self.src), count(self.src));
                format!("{{{},{}}}", a.min(b), a.max(b))
            }
        };
        self.push(&op);
        if self.src.chance(48) {
            self.push("?");
        }
        Shape::Other
    }

    /// Puts the text written since `start` in a non-capturing group.
    fn wrap(&mut self, start: (usize, usize)) {
        self.text.insert_str(start.0, "(?:");
        self.twin.insert_str(start.1, "(?:");
        self.push(")");
    }

    /// Now and then, the whole pattern nested in groups up to or just past
    /// the nesting limit.
    fn deep(&mut self) {
        if !self.src.chance(12) {
            return;
        }
        let levels = match self.src.below(3) {
            0 => self.src.below(40),
            _ => MAX_NESTING as usize - 12 + self.src.below(16),
        };
        let open = if self.src.chance(128) { "(" } else { "(?:" };
        let opens = open.repeat(levels);
        self.text.insert_str(0, &opens);
        self.twin.insert_str(0, &opens);
        self.push(&")".repeat(levels));
    }
}

/// One generated pattern: the text given to the engine and the text
/// regex-syntax reads the same way.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Generated {
    /// The pattern as a user would write it.
    pub text: String,
    /// The same with each class `~` escaped.
    pub twin: String,
}

/// A regular expression of the bounded grammar (or, rarely, just past one
/// of its limits), chosen by `src`.
pub fn pattern(src: &mut Source<'_>) -> Generated {
    let budget = 1 + src.below(24);
    let mut b = Builder {
        src,
        text: String::new(),
        twin: String::new(),
        budget,
        names: 0,
    };
    b.node(0);
    b.deep();
    if b.text.is_empty() {
        b.push("a");
    }
    // A pattern that matches the empty string matches every line, and a
    // case where every line matches tells little: most such patterns get
    // a literal after them (their samples then hold it; a blank or a
    // decoy line does not).
    if matches_empty(&b.twin) && !b.src.chance(32) {
        b.text = format!("(?:{})q", b.text);
        b.twin = format!("(?:{})q", b.twin);
    }
    Generated {
        text: b.text,
        twin: b.twin,
    }
}

/// Whether `twin` (as regex-syntax reads it) matches the empty string.
fn matches_empty(twin: &str) -> bool {
    regex_syntax::ParserBuilder::new()
        .nest_limit(MAX_NESTING)
        .octal(false)
        .build()
        .parse(twin)
        .is_ok_and(|hir| hir.properties().minimum_len() == Some(0))
}

/// Longest sample drawn (a `{1000}` of a wide class would pass the
/// haystack's 4 KiB alone).
const MAX_SAMPLE_BYTES: usize = 1024;

/// A string `twin` matches within a line, drawn by `src` from its HIR (a
/// branch of each alternation, a count of each repetition, at most 3 over
/// its minimum, a member of each class, never a line break). Looks are not
/// arranged for, so a sample may not match where it is put. `None` when
/// regex-syntax does not read the pattern.
pub fn sample(twin: &str, match_case: bool, src: &mut Source<'_>) -> Option<Vec<u8>> {
    let hir = regex_syntax::ParserBuilder::new()
        .nest_limit(MAX_NESTING)
        .octal(false)
        .case_insensitive(!match_case)
        .build()
        .parse(twin)
        .ok()?;
    let mut out = Vec::new();
    walk(&hir, src, &mut out);
    out.truncate(MAX_SAMPLE_BYTES);
    Some(out)
}

/// Appends a sample of `hir` to `out`. Recursion is bounded by the nesting
/// limit the parser applied.
fn walk(hir: &Hir, src: &mut Source<'_>, out: &mut Vec<u8>) {
    if out.len() > MAX_SAMPLE_BYTES {
        return;
    }
    match hir.kind() {
        HirKind::Empty | HirKind::Look(_) => {}
        HirKind::Literal(lit) => out.extend_from_slice(&lit.0),
        HirKind::Class(Class::Unicode(class)) => {
            // An empty class (`[a&&b]`) matches nothing: no sample.
            let Some(&r) = class.ranges().get(src.below(class.ranges().len())) else {
                return;
            };
            let span = r.end() as usize - r.start() as usize + 1;
            let offset = if src.chance(128) { 0 } else { src.below(span) };
            let c = char::from_u32(r.start() as u32 + offset as u32).unwrap_or(r.start());
            if c != '\n' {
                let mut buf = [0; 4];
                out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
            }
        }
        HirKind::Class(Class::Bytes(class)) => {
            let Some(&r) = class.ranges().get(src.below(class.ranges().len())) else {
                return;
            };
            let b = r.start() + src.below(usize::from(r.end() - r.start()) + 1) as u8;
            if b != b'\n' {
                out.push(b);
            }
        }
        HirKind::Repetition(rep) => {
            let most = rep.max.unwrap_or(u32::MAX).min(rep.min.saturating_add(3));
            let n = rep.min + src.below((most - rep.min) as usize + 1) as u32;
            for _ in 0..n {
                walk(&rep.sub, src, out);
            }
        }
        HirKind::Capture(cap) => walk(&cap.sub, src, out),
        HirKind::Concat(subs) => subs.iter().for_each(|s| walk(s, src, out)),
        HirKind::Alternation(subs) => walk(&subs[src.below(subs.len())], src, out),
    }
}

/// One line of a haystack: a sample of one of the patterns between two
/// decorations, a blank line, the previous line again, a sample cut short,
/// the sample with its ASCII case swapped, or decorations alone.
fn line(samples: &[Vec<u8>], previous: &[u8], src: &mut Source<'_>) -> Vec<u8> {
    let sample = samples[src.below(samples.len())].as_slice();
    let mut out = Vec::new();
    match src.below(9) {
        // A decoy: decorations and no sample.
        8 => {
            out.extend_from_slice(src.pick(DECOR));
            out.extend_from_slice(src.pick(DECOR));
        }
        0..=3 => {
            out.extend_from_slice(src.pick(DECOR));
            out.extend_from_slice(sample);
            out.extend_from_slice(src.pick(DECOR));
        }
        4 => {}
        5 => out.extend_from_slice(previous),
        6 => out.extend_from_slice(&sample[..src.below(sample.len() + 1)]),
        _ => out.extend(sample.iter().map(|b| match b {
            b'a'..=b'z' => b.to_ascii_uppercase(),
            _ => b.to_ascii_lowercase(),
        })),
    }
    // A line break inside a decoration cannot happen (none holds one), and
    // samples hold none: each piece stays one line.
    out
}

/// Decodes `data` into a case in the byte layout of
/// [`crate::fuzzing::decode`]: 1-4 patterns (regular expressions, or now
/// and then literal text: a sample of one), either case mode, and up to 12
/// lines of samples ended by LF or CRLF (the last maybe by nothing).
pub fn generate(data: &[u8]) -> Vec<u8> {
    let mut src = Source::new(data);
    let count = 1 + src.below(4);
    let regex = !src.chance(40);
    let match_case = src.chance(100);
    let generated: Vec<Generated> = (0..count).map(|_| pattern(&mut src)).collect();
    let samples: Vec<Vec<u8>> = generated
        .iter()
        .map(|g| sample(&g.twin, match_case, &mut src).unwrap_or_else(|| g.text.clone().into()))
        .collect();
    let patterns: Vec<String> = if regex {
        generated.into_iter().map(|g| g.text).collect()
    } else {
        samples.iter().map(|s| literal_text(s)).collect()
    };
    let mut out = vec![u8::from(regex) | u8::from(match_case) << 1 | ((count - 1) as u8) << 2];
    for p in &patterns {
        out.extend_from_slice(p.as_bytes());
        out.push(0);
    }
    let mut previous = Vec::new();
    for i in 0..1 + src.below(12) {
        let l = line(&samples, &previous, &mut src);
        if i > 0 {
            out.extend_from_slice(if src.chance(64) { b"\r\n" } else { b"\n" });
        }
        out.extend_from_slice(&l);
        previous = l;
    }
    if src.chance(200) {
        out.push(b'\n');
    }
    out
}

/// A sample as literal text: lossy UTF-8, NUL (the layout's separator)
/// replaced, never empty.
fn literal_text(sample: &[u8]) -> String {
    let text = String::from_utf8_lossy(sample).replace('\0', "0");
    if text.is_empty() {
        "a".into()
    } else {
        text
    }
}

/// Generates a case from `data` and checks it as the `grammar` target
/// does: no panic, well-formed rejections, automata within their caps,
/// and the same lines, pattern index and context as the oracle.
pub fn check(data: &[u8], oracle: Oracle<'_>) -> Result<Verdict, String> {
    check_case(&generate(data), oracle)
}
