//! Control-mode reply framing that pane text cannot forge.
//!
//! tmux frames each command's output in a control client as `%begin T N F`
//! ... `%end T N F` (or `%error T N F`), but the output itself is not
//! escaped: a pane title, window name or captured text can hold a line
//! reading `%end 1700000000 5 1`, and a parser closing on it would be cut
//! short and shift every later reply onto the wrong request.
//!
//! So every request is two lines: the command, then `display-message -p
//! NONCE` with a fresh 128-bit random nonce. A reply closes only when the
//! nonce line arrives inside its own `%begin`/`%end` block; the command's
//! real guard is then the last `%end`/`%error` line with the opening numbers
//! before that block (only notifications sit between them, and they are
//! never guards). Nothing a pane prints can hold a nonce it has never seen.
//!
//! Blocks with flag 0 outside a request (the attach command's own, hooks)
//! are skipped. Notification lines (`%output`, `%window-add`, ...) are handed
//! out as [`Event::Notification`] when they arrive between replies, or, when
//! between a command's guard and its nonce block, once the nonce has shown
//! where the guard was (ahead of that reply, as tmux wrote them); a line
//! inside a reply's content is content, so a pane printing `%window-close
//! @1` into a listing forges no event. Pure: bytes in, replies and
//! notifications out, unit-tested on byte streams.

use std::collections::VecDeque;

/// One command's reply.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RawReply {
    /// Output lines joined with `\n` (each line followed by `\n`).
    pub output: Vec<u8>,
    /// `false` when tmux closed the block with `%error`.
    pub ok: bool,
}

/// What the parser found in the stream.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// The reply of the oldest pending request.
    Reply(RawReply),
    /// `%exit` outside any reply: the client is about to go away.
    Exit(String),
    /// A notification line (`%output %3 ...`, `%window-add @2`), without
    /// its newline; parse it with [`super::notification::parse`].
    Notification(Vec<u8>),
}

#[derive(Debug, Default)]
enum State {
    #[default]
    Idle,
    /// Skipping a block that is not ours (flag 0) until its guard.
    Foreign(Vec<u8>),
    /// Collecting a reply; `lines` includes the opening `%begin`.
    Reply {
        lines: Vec<Vec<u8>>,
        nonce_at: Option<usize>,
    },
}

/// The incremental parser. Push the nonce of every request in write order
/// with [`Parser::expect`], feed bytes with [`Parser::feed`].
#[derive(Debug, Default)]
pub struct Parser {
    partial: Vec<u8>,
    nonces: VecDeque<Vec<u8>>,
    state: State,
}

/// The `T N F` of a guard line, if `line` is `%KIND T N F`.
fn guard<'a>(line: &'a [u8], kind: &[u8]) -> Option<&'a [u8]> {
    let rest = line.strip_prefix(kind)?;
    let mut parts = rest.split(|&b| b == b' ');
    let ok = parts
        .by_ref()
        .take(3)
        .filter(|p| !p.is_empty() && p.iter().all(u8::is_ascii_digit))
        .count()
        == 3;
    (ok && parts.next().is_none()).then_some(rest)
}

impl Parser {
    /// A parser for a fresh connection.
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers the nonce of the next request written.
    pub fn expect(&mut self, nonce: &[u8]) {
        self.nonces.push_back(nonce.to_vec());
    }

    /// Requests whose reply has not been seen yet.
    pub fn pending(&self) -> usize {
        self.nonces.len()
    }

    /// Feeds bytes; returns the events completed by them.
    pub fn feed(&mut self, bytes: &[u8], events: &mut Vec<Event>) {
        let mut rest = bytes;
        while let Some(pos) = memchr::memchr(b'\n', rest) {
            let mut line = std::mem::take(&mut self.partial);
            line.extend_from_slice(&rest[..pos]);
            rest = &rest[pos + 1..];
            self.line(line, events);
        }
        self.partial.extend_from_slice(rest);
    }

    fn line(&mut self, line: Vec<u8>, events: &mut Vec<Event>) {
        match std::mem::take(&mut self.state) {
            State::Idle => {
                if let Some(tnf) = guard(&line, b"%begin ") {
                    if tnf.ends_with(b" 0") || self.nonces.is_empty() {
                        self.state = State::Foreign(tnf.to_vec());
                    } else {
                        self.state = State::Reply {
                            lines: vec![line],
                            nonce_at: None,
                        };
                    }
                } else if line.starts_with(b"%exit") {
                    let reason = String::from_utf8_lossy(&line[5..]).trim().to_string();
                    events.push(Event::Exit(reason));
                } else if line.starts_with(b"%") {
                    events.push(Event::Notification(line));
                }
                // Anything else outside a block is noise.
            }
            State::Foreign(tnf) => {
                let closes = guard(&line, b"%end ").or_else(|| guard(&line, b"%error "));
                if closes != Some(&tnf[..]) {
                    self.state = State::Foreign(tnf);
                }
            }
            State::Reply {
                mut lines,
                nonce_at,
            } => {
                if let Some(at) = nonce_at {
                    // `at` is the nonce's `%begin`; this line is its `%end`.
                    lines.push(line);
                    let (reply, guard_at) = finish(&lines, at);
                    self.nonces.pop_front();
                    // tmux wrote the gap's notifications before the reply
                    // was complete: they come first, so whoever waited for
                    // the reply finds them already delivered.
                    if let Some(g) = guard_at {
                        gap_notifications(&lines[g + 1..at], events);
                    }
                    events.push(Event::Reply(reply));
                    return;
                }
                let is_nonce = self.nonces.front().is_some_and(|n| *n == line)
                    && lines.last().is_some_and(|l| guard(l, b"%begin ").is_some());
                lines.push(line);
                let nonce_at = is_nonce.then(|| lines.len() - 2);
                self.state = State::Reply { lines, nonce_at };
            }
        }
    }
}

/// Splits a collected reply: `lines[0]` is the command's `%begin`,
/// `lines[at]` the nonce block's `%begin`. Also returns the index of the
/// command's guard (`None` for a malformed reply).
fn finish(lines: &[Vec<u8>], at: usize) -> (RawReply, Option<usize>) {
    let tnf = lines
        .first()
        .and_then(|l| guard(l, b"%begin "))
        .unwrap_or_default();
    let mut i = at;
    while i > 1 {
        i -= 1;
        let l = &lines[i];
        if let Some(g) = guard(l, b"%end ") {
            if g == tnf {
                let reply = RawReply {
                    output: join(&lines[1..i]),
                    ok: true,
                };
                return (reply, Some(i));
            }
        }
        if let Some(g) = guard(l, b"%error ") {
            if g == tnf {
                let reply = RawReply {
                    output: join(&lines[1..i]),
                    ok: false,
                };
                return (reply, Some(i));
            }
        }
        if !l.starts_with(b"%") {
            break;
        }
    }
    let reply = RawReply {
        output: b"panescan: malformed control-mode reply".to_vec(),
        ok: false,
    };
    (reply, None)
}

/// The notifications among the lines between a command's guard and its
/// nonce block: every `%` line but the blocks of other clients' commands
/// (a hook's `%begin`..`%end`) and `%exit` (the reader learns of that from
/// the end of the stream).
fn gap_notifications(gap: &[Vec<u8>], events: &mut Vec<Event>) {
    let mut open: Option<&[u8]> = None;
    for line in gap {
        if let Some(tnf) = open {
            let closes = guard(line, b"%end ").or_else(|| guard(line, b"%error "));
            if closes == Some(tnf) {
                open = None;
            }
        } else if let Some(tnf) = guard(line, b"%begin ") {
            open = Some(tnf);
        } else if line.starts_with(b"%") && !line.starts_with(b"%exit") {
            events.push(Event::Notification(line.clone()));
        }
    }
}

fn join(lines: &[Vec<u8>]) -> Vec<u8> {
    let mut out = Vec::with_capacity(lines.iter().map(|l| l.len() + 1).sum());
    for l in lines {
        out.extend_from_slice(l);
        out.push(b'\n');
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    fn run(parser: &mut Parser, stream: &[u8]) -> Vec<Event> {
        let mut ev = Vec::new();
        // Feed in awkward pieces to exercise partial lines.
        for chunk in stream.chunks(7) {
            parser.feed(chunk, &mut ev);
        }
        ev
    }

    fn reply(out: &str, ok: bool) -> Event {
        Event::Reply(RawReply {
            output: out.as_bytes().to_vec(),
            ok,
        })
    }

    #[test]
    fn plain_replies_and_foreign_blocks() {
        let mut p = Parser::new();
        p.expect(b"N1");
        p.expect(b"N2");
        let s = b"%begin 1 1 0\n%end 1 1 0\n%session-changed $0 main\n\
%begin 1 2 1\nhello\n%end 1 2 1\n%begin 1 3 1\nN1\n%end 1 3 1\n\
%begin 1 4 1\ncan't find pane: %99\n%error 1 4 1\n%window-add @3\n%begin 1 5 1\nN2\n%end 1 5 1\n%exit\n";
        let ev = run(&mut p, s);
        assert_eq!(
            ev,
            vec![
                note("%session-changed $0 main"),
                reply("hello\n", true),
                note("%window-add @3"),
                reply("can't find pane: %99\n", false),
                Event::Exit(String::new())
            ]
        );
        assert_eq!(p.pending(), 0);
    }

    fn note(line: &str) -> Event {
        Event::Notification(line.as_bytes().to_vec())
    }

    #[test]
    fn notifications_in_content_are_content() {
        let mut p = Parser::new();
        p.expect(b"N1");
        // A listing whose text forges notifications and a guard with the
        // real numbers; real notifications sit before, in the gap between
        // guard and nonce (with a hook's block), and after.
        let s = b"%output %1 before\n%begin 7 2 1\n%window-close @1\n%output %2 forged\n\
%end 7 2 1\n%sessions-changed\n%end 7 2 1\n%layout-change @4 x y *\n%begin 7 9 0\n\
%window-add @8\n%end 7 9 0\n%begin 7 3 1\nN1\n%end 7 3 1\n%pause %1\n";
        let ev = run(&mut p, s);
        assert_eq!(
            ev,
            vec![
                note("%output %1 before"),
                note("%layout-change @4 x y *"),
                reply(
                    "%window-close @1\n%output %2 forged\n%end 7 2 1\n%sessions-changed\n",
                    true
                ),
                note("%pause %1"),
            ]
        );
    }

    #[test]
    fn forged_guards_are_content() {
        let mut p = Parser::new();
        p.expect(b"NONCE-A");
        p.expect(b"NONCE-B");
        let mut s = b"%begin 10 7 1\n".to_vec();
        let mut content = String::new();
        for t in 9..12 {
            for n in 5..10 {
                for f in 0..2 {
                    content.push_str(&format!(
                        "%end {t} {n} {f}\n%error {t} {n} {f}\n%begin {t} {n} {f}\nNONCE-X\n"
                    ));
                }
            }
        }
        content.push_str("%end 10 7 1\n%begin 10 8 1\nNONCE-B\n%end 10 8 1\n%exit\n");
        s.extend_from_slice(content.as_bytes());
        s.extend_from_slice(b"%end 10 7 1\n%begin 10 8 1\nNONCE-A\n%end 10 8 1\n");
        s.extend_from_slice(
            b"%begin 10 9 1\nsecond\n%end 10 9 1\n%begin 10 10 1\nNONCE-B\n%end 10 10 1\n",
        );
        let ev = run(&mut p, &s);
        assert_eq!(ev, vec![reply(&content, true), reply("second\n", true)]);
    }

    #[test]
    fn empty_and_unterminated_output() {
        let mut p = Parser::new();
        p.expect(b"N");
        let ev = run(
            &mut p,
            b"%begin 1 2 1\n%end 1 2 1\n%begin 1 3 1\nN\n%end 1 3 1\n",
        );
        assert_eq!(ev, vec![reply("", true)]);
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(200))]
        /// Any output, cut anywhere, with notifications between blocks:
        /// every reply comes back whole and in order.
        #[test]
        fn any_output_any_cut(
            outputs in proptest::collection::vec(
                proptest::collection::vec(
                    proptest::prop_oneof![
                        "[ -~]{0,12}",
                        proptest::strategy::Just("%end 5 10 1".to_string()),
                        proptest::strategy::Just("%error 5 11 1".to_string()),
                        proptest::strategy::Just("%begin 5 11 1".to_string()),
                        proptest::strategy::Just("%exit".to_string()),
                        proptest::strategy::Just("n1".to_string()),
                    ],
                    0..6,
                ),
                1..6,
            ),
            cut in 1usize..40,
            noise in proptest::bool::ANY,
        ) {
            let mut p = Parser::new();
            let mut stream = Vec::new();
            let mut expected = Vec::new();
            for (i, lines) in outputs.iter().enumerate() {
                let nonce = format!("nonce-{i}-x");
                p.expect(nonce.as_bytes());
                let (n, m) = (10 + 2 * i, 11 + 2 * i);
                let ok = i % 3 != 2;
                stream.extend_from_slice(format!("%begin 5 {n} 1\n").as_bytes());
                let mut out = String::new();
                for l in lines {
                    out.push_str(l);
                    out.push('\n');
                }
                stream.extend_from_slice(out.as_bytes());
                let close = if ok { "end" } else { "error" };
                stream.extend_from_slice(format!("%{close} 5 {n} 1\n").as_bytes());
                if noise {
                    stream.extend_from_slice(b"%window-add @1\n%sessions-changed\n");
                }
                stream.extend_from_slice(format!("%begin 5 {m} 1\n{nonce}\n%end 5 {m} 1\n").as_bytes());
                if noise {
                    expected.push(Event::Notification(b"%window-add @1".to_vec()));
                    expected.push(Event::Notification(b"%sessions-changed".to_vec()));
                }
                expected.push(Event::Reply(RawReply { output: out.into_bytes(), ok }));
            }
            let mut ev = Vec::new();
            for chunk in stream.chunks(cut) {
                p.feed(chunk, &mut ev);
            }
            proptest::prop_assert_eq!(ev, expected);
        }
    }
}
