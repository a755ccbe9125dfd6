//! Decoding `show-buffer` output as tmux 3.2-3.3a sends it to a control
//! client.
//!
//! cmd-save-buffer.c (3.2, 3.3, 3.3a) prints a buffer to a control client
//! through `utf8_stravisx(VIS_OCTAL|VIS_CSTYLE|VIS_TAB)` (utf8.c,
//! compat/vis.c): complete UTF-8 characters and printable ASCII pass as
//! they are, and so do spaces and newlines (no `VIS_SP`, no `VIS_NL`); a
//! backslash doubles; `$` followed by a letter, `_` or `{` gains a
//! backslash; tab, CR, BS, BEL, VT, FF become `\t \r \b \a \v \f`; NUL
//! becomes `\0`, or `\000` when an octal digit follows; every other byte
//! (controls, DEL, bytes of invalid UTF-8) becomes three octal digits.
//! Every escape starts with a backslash and a backslash is always escaped,
//! so the decoding is exact. An escape this table does not hold (another
//! tmux, another `vis`) is refused, never guessed.

/// The bytes `encoded` stands for; `None` if it holds an escape that is
/// not one of the table's.
pub(super) fn unvis(encoded: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(encoded.len());
    let mut rest = encoded;
    while let Some(at) = memchr::memchr(b'\\', rest) {
        out.extend_from_slice(&rest[..at]);
        let escape = &rest[at + 1..];
        let (byte, used) = decode_escape(escape)?;
        out.push(byte);
        rest = &escape[used..];
    }
    out.extend_from_slice(rest);
    Some(out)
}

/// The byte an escape (what follows its backslash) stands for, and how
/// many bytes after the backslash it took.
fn decode_escape(escape: &[u8]) -> Option<(u8, usize)> {
    let octal = |b: u8| (b'0'..=b'7').contains(&b);
    let first = *escape.first()?;
    let byte = match first {
        b'\\' => b'\\',
        b'$' => b'$',
        b't' => b'\t',
        b'n' => b'\n',
        b'r' => b'\r',
        b'b' => 0x08,
        b'a' => 0x07,
        b'v' => 0x0b,
        b'f' => 0x0c,
        b's' => b' ',
        b'0'..=b'3' => {
            return match escape.get(1..3) {
                Some(&[a, b]) if octal(a) && octal(b) => {
                    Some(((first - b'0') << 6 | (a - b'0') << 3 | (b - b'0'), 3))
                }
                // NUL before a byte that is no octal digit.
                _ if first == b'0' && !escape.get(1).is_some_and(|&b| octal(b)) => Some((0, 1)),
                _ => None,
            };
        }
        _ => return None,
    };
    Some((byte, 1))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn every_escape_of_the_table_decodes() {
        let cases: &[(&[u8], &[u8])] = &[
            (b"plain text $HOME\n", b"plain text $HOME\n"),
            (br"a\\b \$HOME \${x} $1 $", b"a\\b $HOME ${x} $1 $"),
            (br"\t\r\b\a\v\f\s", b"\t\r\x08\x07\x0b\x0c "),
            (br"\033[1m\177\377\200", b"\x1b[1m\x7f\xff\x80"),
            (br"\0a\0005\000", b"\0a\x005\0"),
            ("wide 漢字 ✓\n".as_bytes(), "wide 漢字 ✓\n".as_bytes()),
            (br"\\101", b"\\101"),
        ];
        for (encoded, plain) in cases {
            assert_eq!(unvis(encoded).as_deref(), Some(*plain), "{encoded:?}");
        }
    }

    #[test]
    fn unknown_escapes_are_refused() {
        for bad in [
            &b"\\"[..],
            b"x\\",
            b"\\q",
            b"\\M-a",
            b"\\^A",
            b"\\400",
            b"\\07",
            b"\\1",
        ] {
            assert_eq!(unvis(bad), None, "{bad:?}");
        }
    }
}
