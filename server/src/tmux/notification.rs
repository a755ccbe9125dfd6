//! Control-mode notification lines, parsed.
//!
//! Outside command replies a control client receives one line per event:
//! `%output %3 text`, `%window-add @2`, `%layout-change @2 ...`. This
//! module turns one such line into a [`Notification`]; it is pure (bytes in,
//! value out), never panics on any input, and is fuzzed through
//! [`crate::testbed::fuzzing::framing`]. Which lines are notifications at all (and not
//! a reply's content, which a pane can forge) is decided by
//! [`super::framing`].
//!
//! Pane output comes octal-escaped: tmux 3.3a (control.c,
//! `control_append_data`) writes every byte below a space, and `\` itself,
//! as `\ooo`. [`unescape`] reverses that; a backslash not followed by three
//! octal digits is kept as it is, so malformed input degrades to literal
//! text instead of an error.
//!
//! With the `pause-after` flag tmux writes `%extended-output %P AGE ... :
//! DATA` instead of `%output %P DATA` (the fields between the age and the
//! colon are reserved for later use); both give [`Notification::Output`].

use super::ids::{PaneId, SessionId, WindowId};

/// A change to the server's shape, as tmux reports it to a control client.
///
/// Names (of windows and sessions) are not carried: they are free text a
/// subscriber should read from a listing when it needs them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StructureEvent {
    /// A window was linked into a session: `linked` when that is the
    /// session the client is attached to (`%window-add`), else
    /// `%unlinked-window-add`.
    WindowAdd {
        /// The window.
        window: WindowId,
        /// Linked into the client's own session.
        linked: bool,
    },
    /// A window was unlinked or closed (`%window-close`,
    /// `%unlinked-window-close`).
    WindowClose {
        /// The window.
        window: WindowId,
        /// It was linked into the client's own session.
        linked: bool,
    },
    /// A window was renamed (`%window-renamed`, `%unlinked-window-renamed`).
    WindowRenamed {
        /// The window.
        window: WindowId,
        /// Linked into the client's own session.
        linked: bool,
    },
    /// A window's layout changed: a pane was split, closed, resized or
    /// moved (`%layout-change`; tmux reports it only for windows of the
    /// client's own session).
    LayoutChange {
        /// The window.
        window: WindowId,
    },
    /// A window's active pane changed (`%window-pane-changed`).
    WindowPaneChanged {
        /// The window.
        window: WindowId,
        /// Its new active pane.
        pane: PaneId,
    },
    /// A pane entered or left a mode such as copy mode
    /// (`%pane-mode-changed`).
    PaneModeChanged {
        /// The pane.
        pane: PaneId,
    },
    /// A session was created or destroyed (`%sessions-changed`).
    SessionsChanged,
    /// The control client itself now shows another session
    /// (`%session-changed`).
    SessionChanged {
        /// The session it is attached to now.
        session: SessionId,
    },
    /// A session was renamed (`%session-renamed`).
    SessionRenamed {
        /// The session.
        session: SessionId,
    },
    /// A session's current window changed (`%session-window-changed`).
    SessionWindowChanged {
        /// The session.
        session: SessionId,
        /// Its new current window.
        window: WindowId,
    },
}

/// One notification line, parsed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Notification<'a> {
    /// A pane printed; `escaped` is tmux's octal-escaped text (pass it to
    /// [`unescape`] for the bytes).
    Output {
        /// The pane.
        pane: PaneId,
        /// The text as tmux wrote it.
        escaped: &'a [u8],
    },
    /// tmux stopped sending a pane's output (`%pause`): the client fell
    /// behind by more than `pause-after`, or asked for it.
    Pause(PaneId),
    /// tmux resumed a pane's output (`%continue`).
    Continue(PaneId),
    /// The server's shape changed.
    Structure(StructureEvent),
    /// Anything else (client, buffer and subscription notifications,
    /// messages, unknown or malformed lines): not acted on.
    Other,
}

/// Parses one line (without its newline).
pub fn parse(line: &[u8]) -> Notification<'_> {
    parse_line(line).unwrap_or(Notification::Other)
}

fn parse_line(line: &[u8]) -> Option<Notification<'_>> {
    let (name, rest) = split_word(line.strip_prefix(b"%")?);
    let n = match name {
        b"output" => {
            let (pane, text) = split_word(rest);
            Notification::Output {
                pane: pane_id(pane)?,
                escaped: text,
            }
        }
        b"extended-output" => extended_output(rest)?,
        b"pause" => Notification::Pause(pane_id(first(rest))?),
        b"continue" => Notification::Continue(pane_id(first(rest))?),
        _ => Notification::Structure(structure(name, rest)?),
    };
    Some(n)
}

/// `%P AGE ... : DATA`.
fn extended_output(rest: &[u8]) -> Option<Notification<'_>> {
    let (pane, rest) = split_word(rest);
    let pane = pane_id(pane)?;
    let colon = memchr::memmem::find(rest, b" : ")
        .map(|i| i + 3)
        .or_else(|| {
            // An empty payload may end the line right after the colon.
            rest.ends_with(b" :").then_some(rest.len())
        })?;
    Some(Notification::Output {
        pane,
        escaped: &rest[colon..],
    })
}

fn structure(name: &[u8], rest: &[u8]) -> Option<StructureEvent> {
    let (a, after) = split_word(rest);
    let b = first(after);
    let window = || window_id(a);
    let ev = match name {
        b"window-add" => StructureEvent::WindowAdd {
            window: window()?,
            linked: true,
        },
        b"unlinked-window-add" => StructureEvent::WindowAdd {
            window: window()?,
            linked: false,
        },
        b"window-close" => StructureEvent::WindowClose {
            window: window()?,
            linked: true,
        },
        b"unlinked-window-close" => StructureEvent::WindowClose {
            window: window()?,
            linked: false,
        },
        b"window-renamed" => StructureEvent::WindowRenamed {
            window: window()?,
            linked: true,
        },
        b"unlinked-window-renamed" => StructureEvent::WindowRenamed {
            window: window()?,
            linked: false,
        },
        b"layout-change" => StructureEvent::LayoutChange { window: window()? },
        b"window-pane-changed" => StructureEvent::WindowPaneChanged {
            window: window()?,
            pane: pane_id(b)?,
        },
        b"pane-mode-changed" => StructureEvent::PaneModeChanged { pane: pane_id(a)? },
        b"sessions-changed" => StructureEvent::SessionsChanged,
        b"session-changed" => StructureEvent::SessionChanged {
            session: session_id(a)?,
        },
        b"session-renamed" => StructureEvent::SessionRenamed {
            session: session_id(a)?,
        },
        b"session-window-changed" => StructureEvent::SessionWindowChanged {
            session: session_id(a)?,
            window: window_id(b)?,
        },
        _ => return None,
    };
    Some(ev)
}

/// The first space-separated word and the rest after that space.
fn split_word(text: &[u8]) -> (&[u8], &[u8]) {
    match memchr::memchr(b' ', text) {
        Some(i) => (&text[..i], &text[i + 1..]),
        None => (text, &[]),
    }
}

fn first(text: &[u8]) -> &[u8] {
    split_word(text).0
}

fn pane_id(word: &[u8]) -> Option<PaneId> {
    PaneId::parse(std::str::from_utf8(word).ok()?).ok()
}

fn window_id(word: &[u8]) -> Option<WindowId> {
    WindowId::parse(std::str::from_utf8(word).ok()?).ok()
}

fn session_id(word: &[u8]) -> Option<SessionId> {
    SessionId::parse(std::str::from_utf8(word).ok()?).ok()
}

/// Appends the bytes `escaped` stands for to `out`: `\ooo` (three octal
/// digits, at most `\377`) is one byte; anything else, a stray backslash
/// included, is itself.
pub fn unescape(escaped: &[u8], out: &mut Vec<u8>) {
    let mut rest = escaped;
    while let Some(i) = memchr::memchr(b'\\', rest) {
        out.extend_from_slice(&rest[..i]);
        match octal(&rest[i + 1..]) {
            Some(byte) => {
                out.push(byte);
                rest = &rest[i + 4..];
            }
            None => {
                out.push(b'\\');
                rest = &rest[i + 1..];
            }
        }
    }
    out.extend_from_slice(rest);
}

/// The byte of three leading octal digits, if `text` starts with them and
/// they fit a byte.
fn octal(text: &[u8]) -> Option<u8> {
    let digits = text.get(..3)?;
    let mut value: u32 = 0;
    for &d in digits {
        if !(b'0'..=b'7').contains(&d) {
            return None;
        }
        value = value * 8 + u32::from(d - b'0');
    }
    u8::try_from(value).ok()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    fn pane(n: u32) -> PaneId {
        PaneId::from_number(n)
    }

    fn window(n: u32) -> WindowId {
        WindowId::from_number(n)
    }

    fn bytes(escaped: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        unescape(escaped, &mut out);
        out
    }

    #[test]
    fn output_in_both_forms() {
        assert_eq!(
            parse(br"%output %3 ls\015\012"),
            Notification::Output {
                pane: pane(3),
                escaped: br"ls\015\012"
            }
        );
        assert_eq!(
            parse(br"%extended-output %12 1500 : a : b\134"),
            Notification::Output {
                pane: pane(12),
                escaped: br"a : b\134"
            }
        );
        assert_eq!(
            parse(b"%extended-output %1 0 future fields : x"),
            Notification::Output {
                pane: pane(1),
                escaped: b"x"
            }
        );
        assert_eq!(
            parse(b"%extended-output %1 0 :"),
            Notification::Output {
                pane: pane(1),
                escaped: b""
            }
        );
        assert_eq!(
            parse(b"%output %4"),
            Notification::Output {
                pane: pane(4),
                escaped: b""
            }
        );
        assert_eq!(parse(b"%pause %7"), Notification::Pause(pane(7)));
        assert_eq!(parse(b"%continue %7"), Notification::Continue(pane(7)));
    }

    #[test]
    fn structure_events() {
        let s = |line: &[u8]| match parse(line) {
            Notification::Structure(e) => Some(e),
            _ => None,
        };
        assert_eq!(
            s(b"%window-add @4"),
            Some(StructureEvent::WindowAdd {
                window: window(4),
                linked: true
            })
        );
        assert_eq!(
            s(b"%unlinked-window-close @4"),
            Some(StructureEvent::WindowClose {
                window: window(4),
                linked: false
            })
        );
        assert_eq!(
            s(b"%window-renamed @4 new name with spaces"),
            Some(StructureEvent::WindowRenamed {
                window: window(4),
                linked: true
            })
        );
        assert_eq!(
            s(b"%layout-change @2 b25d,80x24,0,0,2 b25d,80x24,0,0,2 *"),
            Some(StructureEvent::LayoutChange { window: window(2) })
        );
        assert_eq!(
            s(b"%window-pane-changed @2 %5"),
            Some(StructureEvent::WindowPaneChanged {
                window: window(2),
                pane: pane(5)
            })
        );
        assert_eq!(
            s(b"%pane-mode-changed %5"),
            Some(StructureEvent::PaneModeChanged { pane: pane(5) })
        );
        assert_eq!(
            s(b"%sessions-changed"),
            Some(StructureEvent::SessionsChanged)
        );
        assert_eq!(
            s(b"%session-changed $1 work"),
            Some(StructureEvent::SessionChanged {
                session: SessionId::from_number(1)
            })
        );
        assert_eq!(
            s(b"%session-window-changed $1 @9"),
            Some(StructureEvent::SessionWindowChanged {
                session: SessionId::from_number(1),
                window: window(9)
            })
        );
    }

    #[test]
    fn malformed_and_unknown_lines_are_other() {
        for line in [
            &b""[..],
            b"%",
            b"output %3 x",
            b"%output 3 x",
            b"%output %x y",
            b"%output %99999999999 y",
            b"%extended-output %1 5 no colon",
            b"%pause",
            b"%window-add",
            b"%window-add %3",
            b"%window-pane-changed @2",
            b"%session-window-changed $1",
            b"%client-detached /dev/pts/3",
            b"%subscription-changed x $1 - - - : v",
            b"%message hello",
            b"%\xff\xfe",
        ] {
            assert_eq!(parse(line), Notification::Other, "{line:?}");
        }
    }

    #[test]
    fn unescape_reverses_tmux_escaping() {
        assert_eq!(bytes(br"a\015\012b"), b"a\r\nb");
        assert_eq!(bytes(br"\134\033[1m"), b"\\\x1b[1m");
        assert_eq!(bytes(br"\377\000"), b"\xff\0");
        // Not three octal digits, or too large: kept as written.
        assert_eq!(bytes(br"\09x"), br"\09x");
        assert_eq!(bytes(br"\400"), br"\400");
        assert_eq!(bytes(br"end\01"), br"end\01");
        assert_eq!(bytes(br"end\"), br"end\");
        assert_eq!(bytes("ünï".as_bytes()), "ünï".as_bytes());
    }

    /// How tmux escapes (control.c, `control_append_data`).
    fn escape(data: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        for &b in data {
            if b < b' ' || b == b'\\' {
                out.extend_from_slice(format!("\\{b:03o}").as_bytes());
            } else {
                out.push(b);
            }
        }
        out
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(300))]
        /// Whatever a pane prints, escaped as tmux does and framed as a
        /// notification, comes back byte for byte.
        #[test]
        fn any_output_round_trips(data in proptest::collection::vec(proptest::num::u8::ANY, 0..200), n in 0u32..100_000) {
            let mut line = format!("%output %{n} ").into_bytes();
            line.extend_from_slice(&escape(&data));
            match parse(&line) {
                Notification::Output { pane: p, escaped } => {
                    proptest::prop_assert_eq!(p, pane(n));
                    proptest::prop_assert_eq!(bytes(escaped), data);
                }
                other => proptest::prop_assert!(false, "{:?}", other),
            }
        }

        /// Any bytes at all: no panic, and unescaping never grows the text.
        #[test]
        fn any_line_is_safe(line in proptest::collection::vec(proptest::num::u8::ANY, 0..120)) {
            let _ = parse(&line);
            proptest::prop_assert!(bytes(&line).len() <= line.len());
        }
    }
}
