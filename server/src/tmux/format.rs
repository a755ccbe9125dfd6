//! tmux's format grammar, parsed the way tmux parses it.
//!
//! This mirrors `format_expand1`, `format_skip`, `format_build_modifiers`
//! and `format_replace` of tmux's format.c (3.2 to 3.6) byte for byte where
//! they decide *what* gets expanded, so that panescan learns what a format
//! would make tmux do before tmux sees it ([`crate::tools::format_guard`]
//! decides whether that is acceptable). It evaluates nothing.
//!
//! * `#{KEY}` expands KEY; the closing `}` is found by counting `#{` up and
//!   any `}` down, skipping the escapes `#,` `##` `#{` `#}` `#:` ([`skip`]).
//! * KEY starts with modifiers separated by `;` and ended by `:`
//!   (`#{=10;s/a/b/:pane_title}`), each one or two characters, optionally
//!   with one bare argument (`p10`, `=-5`) or several between a wrapper
//!   character (`s/a/b/`, `=/5/...`); tmux expands every argument as a
//!   format, and uses the whole KEY when the list cannot be read.
//! * The body is a variable name, or, when it holds `#{`, a format.
//! * `#(...)` runs a shell command; `#D`, `#S`, `#T`... are aliases for
//!   variables; `##`, `#,`, `#}` and `#[` are literal.
//!
//! The modifier set is the union of tmux 3.2-3.6 (3.6 adds `L`, `R`, `!`,
//! `!!` and sort arguments): a modifier an older tmux does not know makes it
//! use the whole key, which expands at most what the newer reading expands,
//! so reading the union never underestimates.

/// Modifiers that take no argument (`l`, `n`, `E`, ...), 3.6's list.
const NO_ARGUMENT: &[u8] = b"labcdnwETSWPL!<>";
/// Two-character modifiers (comparisons and boolean operators).
const TWO_CHARACTERS: [&[u8; 2]; 7] = [b"||", b"&&", b"!!", b"!=", b"==", b"<=", b">="];
/// Modifiers that may take arguments (`s/a/b/`, `=10`, `p-5`, ...).
const WITH_ARGUMENTS: &[u8] = b"mCLNPSst=pReqW";

/// tmux's one-letter aliases (`format_upper` and `format_lower`).
const ALIASES: [(u8, &str); 9] = [
    (b'D', "pane_id"),
    (b'F', "window_flags"),
    (b'H', "host"),
    (b'I', "window_index"),
    (b'P', "pane_index"),
    (b'S', "session_name"),
    (b'T', "pane_title"),
    (b'W', "window_name"),
    (b'h', "host_short"),
];

/// One piece of a format, as `format_expand1` walks it. Offsets are bytes
/// from the start of the whole format given to [`parse`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Piece<'a> {
    /// Text copied as it is (escapes such as `##` and `#,` included).
    Text {
        /// Where it starts (a byte offset).
        at: usize,
        /// The text.
        text: &'a str,
    },
    /// `#(...)`: tmux runs it as a shell command.
    Job {
        /// Where it starts (a byte offset).
        at: usize,
    },
    /// `#D`, `#S`, `#T`...: a one-letter alias for a variable.
    Alias {
        /// Where it starts (a byte offset).
        at: usize,
        /// The variable it stands for (`#S`: `session_name`).
        name: &'static str,
    },
    /// `#{...}`.
    Expansion(Expansion<'a>),
}

/// A `#{...}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expansion<'a> {
    /// Where its `#` is.
    pub at: usize,
    /// Everything between `#{` and `}`.
    pub key: &'a str,
    /// The modifiers before the body's `:`, if any.
    pub modifiers: Modifiers<'a>,
    /// What the modifiers apply to: the key after the modifiers' `:` (the
    /// whole key when there are none).
    pub body: &'a str,
    /// Where the body starts.
    pub body_at: usize,
    /// The body read as a format. tmux reads it so unless it is a plain
    /// variable name (then this is one [`Piece::Text`]); `l` (literal)
    /// bodies are parsed too, which is the cautious reading.
    pub parts: Vec<Piece<'a>>,
}

/// The modifier list of a `#{...}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Modifiers<'a> {
    /// No modifier list: a variable name or a nested format.
    None,
    /// Modifiers up to the `:` that ends them.
    List(Vec<Modifier<'a>>),
    /// The key looks like it has modifiers (a `:` or `;` outside any
    /// nested `#{}`, or a modifier already read) but tmux cannot read
    /// them: tmux forgets what it read and uses the whole key.
    Unreadable {
        /// Where tmux gives up reading the modifiers.
        at: usize,
    },
}

/// One modifier with its arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Modifier<'a> {
    /// Where the modifier starts.
    pub at: usize,
    /// One or two characters: `s`, `=`, `S`, `==`, `!!`...
    pub name: &'a str,
    /// Its arguments (`/from/to/` of `s`, the width of `=`), in order.
    pub args: Vec<Argument<'a>>,
}

/// A modifier argument (tmux expands it as a format before using it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Argument<'a> {
    /// Where the argument starts.
    pub at: usize,
    /// The argument's text, before tmux expands it.
    pub text: &'a str,
}

/// Text tmux cannot read safely or completely.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SyntaxError {
    /// `#{` without its `}`: tmux drops the rest of the format.
    Unclosed {
        /// Where in the format (a byte offset).
        at: usize,
    },
    /// A `#` as the last byte: tmux 3.2-3.5 read past the end of the text.
    LoneHash {
        /// Where in the format (a byte offset).
        at: usize,
    },
    /// A modifier list ending in `;` right at the end of the key: tmux
    /// reads past the end of the key looking for the next modifier.
    TrailingSeparator {
        /// Where in the format (a byte offset).
        at: usize,
    },
    /// `#{` nested deeper than the limit given to [`parse`].
    TooDeep {
        /// Where in the format (a byte offset).
        at: usize,
        /// The nesting limit it passed.
        limit: usize,
    },
}

impl SyntaxError {
    /// Where in the format.
    pub fn at(&self) -> usize {
        match *self {
            SyntaxError::Unclosed { at }
            | SyntaxError::LoneHash { at }
            | SyntaxError::TrailingSeparator { at }
            | SyntaxError::TooDeep { at, .. } => at,
        }
    }

    /// The construct, as a reader would name it.
    pub fn construct(&self) -> String {
        match self {
            SyntaxError::Unclosed { .. } => "an unclosed #{".into(),
            SyntaxError::LoneHash { .. } => "a lone # at the end".into(),
            SyntaxError::TrailingSeparator { .. } => "a modifier list ending in ;".into(),
            SyntaxError::TooDeep { limit, .. } => format!("#{{ nested more than {limit} deep"),
        }
    }

    /// What tmux would do with it.
    pub fn why(&self) -> &'static str {
        match self {
            SyntaxError::Unclosed { .. } => "tmux would drop the rest of the format",
            SyntaxError::LoneHash { .. } => {
                "tmux 3.2-3.5 read past the end of such a format; write ## for a #"
            }
            SyntaxError::TrailingSeparator { .. } => {
                "tmux reads past the end of the key looking for another modifier"
            }
            SyntaxError::TooDeep { .. } => "formats may nest only so deep",
        }
    }
}

impl std::fmt::Display for SyntaxError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} at byte {}: {}",
            self.construct(),
            self.at(),
            self.why()
        )
    }
}

impl std::error::Error for SyntaxError {}

/// Parses a whole format; `#{` may nest at most `max_depth` levels.
pub fn parse(format: &str, max_depth: usize) -> Result<Vec<Piece<'_>>, SyntaxError> {
    parse_at(format, 0, 0, max_depth)
}

/// `format_skip`: the index of the first byte of `end` at or after `from`
/// that is outside every nested `#{...}`, skipping `#` escapes. A bare `}`
/// counts down like tmux's does.
pub fn skip(text: &[u8], from: usize, end: &[u8]) -> Option<usize> {
    let mut depth: i64 = 0;
    let mut i = from;
    while i < text.len() {
        let c = text[i];
        let next = text.get(i + 1).copied();
        if c == b'#' && next == Some(b'{') {
            depth += 1;
        }
        if c == b'#' && matches!(next, Some(b',' | b'#' | b'{' | b'}' | b':')) {
            i += 2;
            continue;
        }
        if c == b'}' {
            depth -= 1;
        }
        if end.contains(&c) && depth == 0 {
            return Some(i);
        }
        i += 1;
    }
    None
}

/// The pieces of `text`, which starts at byte `base` of the whole format.
fn parse_at<'a>(
    text: &'a str,
    base: usize,
    depth: usize,
    max_depth: usize,
) -> Result<Vec<Piece<'a>>, SyntaxError> {
    let b = text.as_bytes();
    let mut pieces = Vec::new();
    let mut literal = 0; // start of the pending literal run
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'#' {
            i += 1;
            continue;
        }
        let Some(&ch) = b.get(i + 1) else {
            return Err(SyntaxError::LoneHash { at: base + i });
        };
        let (piece, next) = match ch {
            b'(' => (Some(Piece::Job { at: base + i }), job_end(b, i + 2)),
            b'{' => {
                let close = skip(b, i, b"}").ok_or(SyntaxError::Unclosed { at: base + i })?;
                if depth >= max_depth {
                    return Err(SyntaxError::TooDeep {
                        at: base + i,
                        limit: max_depth,
                    });
                }
                let key = &text[i + 2..close];
                let e = parse_expansion(key, base + i, depth + 1, max_depth)?;
                (Some(Piece::Expansion(e)), Some(close + 1))
            }
            b'#' => {
                // `##...#[` is a style tmux leaves whole; `##` is one `#`.
                let mut j = i + 2;
                while b.get(j) == Some(&b'#') {
                    j += 1;
                }
                let end = if b.get(j) == Some(&b'[') {
                    j + 1
                } else {
                    i + 2
                };
                (None, Some(end))
            }
            c => match ALIASES.iter().find(|(letter, _)| *letter == c) {
                Some((_, name)) => (Some(Piece::Alias { at: base + i, name }), Some(i + 2)),
                // `#,` `#}` and any other `#X` are literal; the byte after
                // the `#` (maybe the start of a multi-byte character) is
                // read as ordinary text next.
                None => (None, Some(i + 1)),
            },
        };
        if let Some(piece) = piece {
            if literal < i {
                pieces.push(Piece::Text {
                    at: base + literal,
                    text: &text[literal..i],
                });
            }
            pieces.push(piece);
            match next {
                Some(n) => literal = n,
                // An unmatched `#(`: tmux stops expanding here.
                None => return Ok(pieces),
            }
        }
        i = next.unwrap_or(b.len());
    }
    if literal < b.len() {
        pieces.push(Piece::Text {
            at: base + literal,
            text: &text[literal..],
        });
    }
    Ok(pieces)
}

/// Just past the `)` matching a `#(` whose text starts at `from`.
fn job_end(b: &[u8], from: usize) -> Option<usize> {
    let mut open = 1;
    for (i, &c) in b.iter().enumerate().skip(from) {
        if c == b'(' {
            open += 1;
        }
        if c == b')' {
            open -= 1;
            if open == 0 {
                return Some(i + 1);
            }
        }
    }
    None
}

fn parse_expansion<'a>(
    key: &'a str,
    at: usize,
    depth: usize,
    max_depth: usize,
) -> Result<Expansion<'a>, SyntaxError> {
    let key_at = at + 2;
    let (modifiers, body_start) = match read_modifiers(key, key_at)? {
        Read::List(list, body) => (Modifiers::List(list), body),
        Read::Nothing => (Modifiers::None, 0),
        Read::Unreadable { at } => (Modifiers::Unreadable { at }, 0),
    };
    let body = &key[body_start..];
    let body_at = key_at + body_start;
    let parts = parse_at(body, body_at, depth, max_depth)?;
    Ok(Expansion {
        at,
        key,
        modifiers,
        body,
        body_at,
        parts,
    })
}

enum Read<'a> {
    /// Modifiers and where the body starts in the key.
    List(Vec<Modifier<'a>>, usize),
    Nothing,
    Unreadable {
        at: usize,
    },
}

fn is_end(c: Option<u8>) -> bool {
    matches!(c, Some(b';' | b':'))
}

/// `format_build_modifiers`.
fn read_modifiers(key: &str, key_at: usize) -> Result<Read<'_>, SyntaxError> {
    let b = key.as_bytes();
    let mut list = Vec::new();
    let mut cp = 0;
    while cp < b.len() && b[cp] != b':' {
        if b[cp] == b';' {
            cp += 1;
            if cp == b.len() {
                return Err(SyntaxError::TrailingSeparator {
                    at: key_at + cp - 1,
                });
            }
        }
        let c0 = b[cp];
        let c1 = b.get(cp + 1).copied();
        if NO_ARGUMENT.contains(&c0) && is_end(c1) {
            list.push(modifier(key, key_at, cp, 1, Vec::new()));
            cp += 1;
            continue;
        }
        if TWO_CHARACTERS.iter().any(|t| b[cp..].starts_with(&t[..]))
            && is_end(b.get(cp + 2).copied())
        {
            list.push(modifier(key, key_at, cp, 2, Vec::new()));
            cp += 2;
            continue;
        }
        if !WITH_ARGUMENTS.contains(&c0) {
            break;
        }
        if is_end(c1) {
            list.push(modifier(key, key_at, cp, 1, Vec::new()));
            cp += 1;
            continue;
        }
        let Some((args, next)) = read_arguments(key, key_at, cp) else {
            break;
        };
        list.push(modifier(key, key_at, cp, 1, args));
        cp = next;
    }
    if b.get(cp) == Some(&b':') {
        return Ok(Read::List(list, cp + 1));
    }
    // tmux uses the whole key. Say so when it looks like a modifier list:
    // something was read, or a `:`/`;` sits outside nested formats (a
    // conditional `?a,b:c,d` has its own commas and colons).
    let looks_modified = !list.is_empty() || (!key.starts_with('?') && skip(b, 0, b":;").is_some());
    Ok(if looks_modified {
        Read::Unreadable { at: key_at + cp }
    } else {
        Read::Nothing
    })
}

fn modifier<'a>(
    key: &'a str,
    key_at: usize,
    cp: usize,
    len: usize,
    args: Vec<Argument<'a>>,
) -> Modifier<'a> {
    Modifier {
        at: key_at + cp,
        name: &key[cp..cp + len],
        args,
    }
}

/// The arguments of the modifier at `cp` (whose next byte is not `;`/`:`)
/// and where the next modifier starts; `None` where tmux gives up.
fn read_arguments<'a>(
    key: &'a str,
    key_at: usize,
    cp: usize,
) -> Option<(Vec<Argument<'a>>, usize)> {
    let b = key.as_bytes();
    let arg = |from: usize, to: usize| Argument {
        at: key_at + from,
        text: &key[from..to],
    };
    let c1 = b.get(cp + 1).copied();
    // One argument with no wrapper: `p10`, `=-5`.
    if !c1.is_some_and(|c| c.is_ascii_punctuation()) || c1 == Some(b'-') {
        let end = skip(b, cp + 1, b":;")?;
        return Some((vec![arg(cp + 1, end)], end));
    }
    // Arguments between a wrapper character: `s/a/b/`, `=/5/.../`.
    let wrapper = b[cp + 1];
    let ends = [wrapper, b';', b':'];
    let mut args = Vec::new();
    let mut at = cp + 1;
    loop {
        if b.get(at) == Some(&wrapper) && is_end(b.get(at + 1).copied()) {
            at += 1;
            break;
        }
        let Some(end) = skip(b, at + 1, &ends) else {
            // tmux keeps what it read and stops at the wrapper, which no
            // modifier starts with: the list is unreadable.
            return Some((args, at));
        };
        args.push(arg(at + 1, end));
        at = end;
        if is_end(b.get(at).copied()) {
            break;
        }
    }
    Some((args, at))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn expansion<'a>(pieces: &'a [Piece<'a>], n: usize) -> &'a Expansion<'a> {
        let found: Vec<&Expansion> = pieces
            .iter()
            .filter_map(|p| match p {
                Piece::Expansion(e) => Some(e),
                _ => None,
            })
            .collect();
        found[n]
    }

    fn names<'a>(e: &'a Expansion<'a>) -> Vec<&'a str> {
        match &e.modifiers {
            Modifiers::List(l) => l.iter().map(|m| m.name).collect(),
            _ => Vec::new(),
        }
    }

    #[test]
    fn skip_counts_nested_formats_and_escapes() {
        assert_eq!(skip(b"#{a}}", 0, b"}"), Some(3));
        assert_eq!(skip(b"#{a#}b}", 0, b"}"), Some(6));
        assert_eq!(skip(b"#{#{a}}x", 0, b"}"), Some(6));
        assert_eq!(skip(b"a#,b,c", 0, b","), Some(4));
        assert_eq!(skip(b"#{a,b},c", 0, b","), Some(6));
        assert_eq!(skip(b"#{a", 0, b"}"), None);
        // A `#` before anything else is not an escape.
        assert_eq!(skip(b"5#;x", 0, b";"), Some(2));
    }

    #[test]
    fn pieces_of_a_plain_format() {
        let p = parse("#S:#I.#P ##x #[fg=red]#{pane_id}", 16).unwrap();
        assert!(matches!(
            p[0],
            Piece::Alias {
                at: 0,
                name: "session_name"
            }
        ));
        assert!(matches!(p[1], Piece::Text { at: 2, text: ":" }));
        assert!(matches!(
            p[2],
            Piece::Alias {
                at: 3,
                name: "window_index"
            }
        ));
        let e = expansion(&p, 0);
        assert_eq!((e.at, e.key, e.body), (22, "pane_id", "pane_id"));
        assert_eq!(e.modifiers, Modifiers::None);
    }

    #[test]
    fn modifiers_and_arguments() {
        let p = parse("#{=10;s/a/b/;p-5:pane_title}", 16).unwrap();
        let e = expansion(&p, 0);
        assert_eq!(names(e), ["=", "s", "p"]);
        let Modifiers::List(list) = &e.modifiers else {
            panic!()
        };
        assert_eq!(list[0].args[0].text, "10");
        assert_eq!(list[0].args[0].at, 3);
        let s: Vec<&str> = list[1].args.iter().map(|a| a.text).collect();
        assert_eq!(s, ["a", "b"]);
        assert_eq!(list[2].args[0].text, "-5");
        assert_eq!((e.body, e.body_at), ("pane_title", 17));
    }

    #[test]
    fn comparisons_loops_and_conditionals() {
        let p = parse("#{==:#{a},b}#{S/nr:#{W:x}}#{?c,d:e,f}#{!!:1}", 16).unwrap();
        assert_eq!(names(expansion(&p, 0)), ["=="]);
        let s = expansion(&p, 1);
        assert_eq!(names(s), ["S"]);
        assert_eq!(names(expansion(&s.parts, 0)), ["W"]);
        assert_eq!(expansion(&p, 2).modifiers, Modifiers::None);
        assert_eq!(names(expansion(&p, 3)), ["!!"]);
    }

    #[test]
    fn unreadable_modifiers_fall_back_to_the_key() {
        let p = parse("#{x:y}#{p5;zz:y}#{session_name}#{#{a}:b}", 16).unwrap();
        assert_eq!(expansion(&p, 0).modifiers, Modifiers::Unreadable { at: 2 });
        assert_eq!(expansion(&p, 1).modifiers, Modifiers::Unreadable { at: 11 });
        assert_eq!(expansion(&p, 1).body, "p5;zz:y");
        assert_eq!(expansion(&p, 2).modifiers, Modifiers::None);
        assert!(matches!(
            expansion(&p, 3).modifiers,
            Modifiers::Unreadable { .. }
        ));
    }

    #[test]
    fn jobs_and_syntax_errors() {
        let p = parse("a#(echo (x))b", 16).unwrap();
        assert!(matches!(p[1], Piece::Job { at: 1 }));
        assert!(matches!(p[2], Piece::Text { text: "b", .. }));
        assert_eq!(parse("a#", 16), Err(SyntaxError::LoneHash { at: 1 }));
        assert_eq!(parse("a##", 16).map(|p| p.len()), Ok(1));
        assert_eq!(parse("x#{a", 16), Err(SyntaxError::Unclosed { at: 1 }));
        assert_eq!(
            parse("#{l;}", 16),
            Err(SyntaxError::TrailingSeparator { at: 3 })
        );
        assert_eq!(
            parse("#{#{#{x}}}", 2),
            Err(SyntaxError::TooDeep { at: 4, limit: 2 })
        );
        assert!(parse("#{#{x}}", 2).is_ok());
    }

    #[test]
    fn non_ascii_text_is_kept_whole() {
        let p = parse("é#{=3:ü}€#", 16);
        assert_eq!(p, Err(SyntaxError::LoneHash { at: 13 }));
        let p = parse("é#{=/3/…/:ü}€", 16).unwrap();
        let Modifiers::List(l) = &expansion(&p, 0).modifiers else {
            panic!()
        };
        assert_eq!(l[0].args[1].text, "…");
    }
}
