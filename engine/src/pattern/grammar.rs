//! The bounded grammar: pattern text -> checked, line-safe [`Hir`].
//!
//! Parsing happens in three steps, each of which can reject the pattern with
//! a byte offset and a reason:
//!
//! 1. **Surface checks.** The pattern must be non-empty and at most
//!    [`MAX_PATTERN_BYTES`] long. Inside a bracketed class, every `~` is made
//!    a literal (`[a~~b]` is the three characters `a`, `~`, `b`, as in
//!    JavaScript) rather than regex-syntax's symmetric-difference operator.
//! 2. **Syntax.** `regex-syntax` parses the text into an AST with a nesting
//!    limit of [`MAX_NESTING`]. The AST is then walked (without recursion) to
//!    reject counted repetitions above [`MAX_REPETITION`] and literal line
//!    breaks.
//! 3. **Translation.** The AST becomes a [`Hir`] (Unicode on, `^`/`$` match at
//!    line boundaries), then is rewritten so no part of it can match a line
//!    break: `\n` is removed from every class, and the text anchors `\A` /
//!    `\z` become line anchors, because every match lies within one line.
//!
//! Compiling the `Hir` into an automaton (with its size caps) is the job of
//! [`super::Matcher`].

use regex_syntax::ast::{self, Ast};
use regex_syntax::hir::{self, Class, Hir, HirKind, Look};

use super::{MAX_NESTING, MAX_PATTERN_BYTES, MAX_REPETITION};

/// A pattern that passed every grammar check.
#[derive(Debug)]
pub(crate) struct Checked {
    /// The line-safe HIR to compile.
    pub(crate) hir: Hir,
    /// The pattern text after the class-tilde rewrite. The regex crate,
    /// applied line by line to this text, matches the same lines as the
    /// engine; the fuzz oracle uses it.
    pub(crate) rewritten: String,
}

/// Formats `n` with thousands separators, as error messages show numbers.
pub(crate) fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

/// Checks the size of any pattern (literal or regex).
pub(crate) fn check_size(text: &str) -> Result<(), (usize, String)> {
    if text.is_empty() {
        return Err((
            0,
            "the pattern is empty; give at least one character".into(),
        ));
    }
    if text.len() > MAX_PATTERN_BYTES {
        return Err((
            MAX_PATTERN_BYTES,
            format!(
                "the pattern is {} bytes long, over the limit of {} bytes",
                thousands(text.len() as u64),
                thousands(MAX_PATTERN_BYTES as u64)
            ),
        ));
    }
    Ok(())
}

/// Parses and checks a regular expression.
///
/// The error is `(byte offset in the original text, reason)`.
pub(crate) fn parse_regex(text: &str, match_case: bool) -> Result<Checked, (usize, String)> {
    check_size(text)?;
    let (rewritten, inserted) = escape_class_tildes(text);
    // Maps an offset in `rewritten` back to the user's text.
    let original = |offset: usize| -> usize {
        let before = inserted.partition_point(|&at| at < offset);
        offset.saturating_sub(before).min(text.len())
    };

    let ast = ast::parse::ParserBuilder::new()
        .nest_limit(MAX_NESTING)
        .octal(false)
        .build()
        .parse(&rewritten)
        .map_err(|err| (original(err.span().start.offset), ast_reason(err.kind())))?;

    ast::visit(&ast, LimitChecker).map_err(|(offset, reason)| (original(offset), reason))?;

    let hir = hir::translate::TranslatorBuilder::new()
        .case_insensitive(!match_case)
        .multi_line(true)
        .unicode(true)
        .utf8(true)
        .line_terminator(b'\n')
        .build()
        .translate(&rewritten, &ast)
        .map_err(|err| (original(err.span().start.offset), hir_reason(err.kind())))?;

    Ok(Checked {
        hir: line_safe(hir),
        rewritten,
    })
}

/// Makes every `~` inside a bracketed class a literal by escaping it.
///
/// Returns the new text and the offsets (in the new text) of each inserted
/// backslash, ascending.
fn escape_class_tildes(text: &str) -> (String, Vec<usize>) {
    if !text.contains('~') || !text.contains('[') {
        return (text.to_owned(), Vec::new());
    }
    let mut out = String::with_capacity(text.len() + 8);
    let mut inserted = Vec::new();
    let mut depth = 0usize;
    let mut chars = text.chars().peekable();
    while let Some(ch) = chars.next() {
        match ch {
            '\\' => {
                out.push(ch);
                if let Some(next) = chars.next() {
                    out.push(next);
                }
            }
            '[' => {
                out.push(ch);
                depth += 1;
                // `[^]...]` and `[]...]`: a `]` right after the opening is a
                // literal.
                if chars.peek() == Some(&'^') {
                    out.push('^');
                    chars.next();
                }
                if chars.peek() == Some(&']') {
                    out.push(']');
                    chars.next();
                }
            }
            ']' if depth > 0 => {
                out.push(ch);
                depth -= 1;
            }
            '~' if depth > 0 => {
                inserted.push(out.len());
                out.push('\\');
                out.push('~');
            }
            _ => out.push(ch),
        }
    }
    (out, inserted)
}

/// Walks the AST (regex-syntax's visitor uses a heap stack, not recursion).
struct LimitChecker;

impl ast::Visitor for LimitChecker {
    type Output = ();
    type Err = (usize, String);

    fn finish(self) -> Result<(), Self::Err> {
        Ok(())
    }

    fn visit_pre(&mut self, node: &Ast) -> Result<(), Self::Err> {
        match node {
            Ast::Repetition(rep) => {
                if let ast::RepetitionKind::Range(range) = &rep.op.kind {
                    let (shown, biggest) = match *range {
                        ast::RepetitionRange::Exactly(n) => (format!("{{{n}}}"), n),
                        ast::RepetitionRange::AtLeast(n) => (format!("{{{n},}}"), n),
                        ast::RepetitionRange::Bounded(m, n) => (format!("{{{m},{n}}}"), m.max(n)),
                    };
                    if biggest > MAX_REPETITION {
                        return Err((
                            rep.op.span.start.offset,
                            format!(
                                "counted repetition {shown} exceeds the limit of {}",
                                thousands(u64::from(MAX_REPETITION))
                            ),
                        ));
                    }
                }
                Ok(())
            }
            Ast::Literal(lit) => literal_ok(lit),
            _ => Ok(()),
        }
    }

    fn visit_class_set_item_pre(&mut self, item: &ast::ClassSetItem) -> Result<(), Self::Err> {
        match item {
            ast::ClassSetItem::Literal(lit) => literal_ok(lit),
            _ => Ok(()),
        }
    }
}

fn literal_ok(lit: &ast::Literal) -> Result<(), (usize, String)> {
    if lit.c == '\n' {
        return Err((
            lit.span.start.offset,
            "a match lies within one line, so a pattern cannot contain a line break (\\n)".into(),
        ));
    }
    Ok(())
}

/// Rewrites the HIR so that nothing in it can match across a line end.
///
/// Recursion depth is bounded by the parser's nesting limit.
fn line_safe(hir: Hir) -> Hir {
    match hir.into_kind() {
        HirKind::Empty => Hir::empty(),
        HirKind::Literal(hir::Literal(bytes)) => {
            if bytes.contains(&b'\n') {
                Hir::fail()
            } else {
                Hir::literal(bytes)
            }
        }
        HirKind::Class(Class::Unicode(mut class)) => {
            class.difference(&hir::ClassUnicode::new([hir::ClassUnicodeRange::new(
                '\n', '\n',
            )]));
            Hir::class(Class::Unicode(class))
        }
        HirKind::Class(Class::Bytes(mut class)) => {
            class.difference(&hir::ClassBytes::new([hir::ClassBytesRange::new(
                b'\n', b'\n',
            )]));
            Hir::class(Class::Bytes(class))
        }
        HirKind::Look(look) => Hir::look(match look {
            Look::Start => Look::StartLF,
            Look::End => Look::EndLF,
            other => other,
        }),
        HirKind::Repetition(rep) => Hir::repetition(hir::Repetition {
            sub: Box::new(line_safe(*rep.sub)),
            ..rep
        }),
        HirKind::Capture(cap) => Hir::capture(hir::Capture {
            sub: Box::new(line_safe(*cap.sub)),
            ..cap
        }),
        HirKind::Concat(subs) => Hir::concat(subs.into_iter().map(line_safe).collect()),
        HirKind::Alternation(subs) => Hir::alternation(subs.into_iter().map(line_safe).collect()),
    }
}

/// Words for a syntax error, for a person rather than a debugger.
fn ast_reason(kind: &ast::ErrorKind) -> String {
    use ast::ErrorKind as K;
    match kind {
        K::NestLimitExceeded(limit) => format!(
            "the pattern nests groups, classes or repetitions deeper than the limit of {}",
            thousands(u64::from(*limit))
        ),
        K::UnsupportedBackreference => {
            "backreferences (\\1, \\k<name>) are not supported: they cannot be matched in linear time".into()
        }
        K::UnsupportedLookAround => {
            "look-around ((?=, (?!, (?<=, (?<!) is not supported: it cannot be matched in linear time".into()
        }
        K::RepetitionMissing => "a repetition operator (*, +, ?, {n}) follows nothing to repeat".into(),
        K::GroupUnclosed => "this group is never closed with `)`".into(),
        K::GroupUnopened => "this `)` closes a group that was never opened".into(),
        K::ClassUnclosed => "this character class is never closed with `]`".into(),
        K::EscapeUnexpectedEof => "a trailing backslash escapes nothing".into(),
        K::RepetitionCountUnclosed => {
            "a counted repetition is never closed; write {n}, {n,} or {n,m}, or \\{ for a literal brace".into()
        }
        // regex-syntax's own wording is already plain prose for the rest.
        other => other.to_string(),
    }
}

fn hir_reason(kind: &hir::ErrorKind) -> String {
    use hir::ErrorKind as K;
    match kind {
        K::InvalidUtf8 => "this part of the pattern could match bytes that are not UTF-8".into(),
        other => other.to_string(),
    }
}
