//! Replays the seed corpora of the `jsonrpc`, `framing` and `ssh_dest` fuzz targets
//! (fuzz/corpus/<target>) through the same checks the targets run, so CI
//! needs no nightly toolchain. Any corpus file added by a fuzzing run
//! (a minimized crash, say) is replayed too.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use panescan::testing::fuzzing::{framing, jsonrpc, FramingStats, JsonRpcStats};

#[test]
fn jsonrpc_seed_corpus_replays_clean() {
    let seeds = common::seed_corpus("jsonrpc");
    assert!(seeds.len() >= 30, "seed corpus too small: {}", seeds.len());
    let mut total = JsonRpcStats::default();
    for (path, data) in &seeds {
        let s = jsonrpc(data).unwrap_or_else(|p| panic!("{}: {p}", path.display()));
        total.lines += s.lines;
        total.responses += s.responses;
        total.errors += s.errors;
        total.tool_calls += s.tool_calls;
    }
    eprintln!("jsonrpc corpus: {} inputs, {total:?}", seeds.len());
    // The seeds reach every kind of answer: protocol errors, tool results.
    assert!(total.errors >= 30, "{total:?}");
    assert!(total.tool_calls >= 40, "{total:?}");
}

#[test]
fn framing_seed_corpus_replays_clean() {
    let seeds = common::seed_corpus("framing");
    assert!(seeds.len() >= 10, "seed corpus too small: {}", seeds.len());
    let mut total = FramingStats::default();
    for (path, data) in &seeds {
        let s = framing(data).unwrap_or_else(|p| panic!("{}: {p}", path.display()));
        total.raw_replies += s.raw_replies;
        total.framed_replies += s.framed_replies;
        total.forged_lines += s.forged_lines;
        total.notifications += s.notifications;
    }
    eprintln!("framing corpus: {} inputs, {total:?}", seeds.len());
    assert!(total.framed_replies >= 50, "{total:?}");
    assert!(total.forged_lines >= 45, "{total:?}");
    // Every input's own session-changed at least, and the real ones between
    // replies: handed out and parsed.
    assert!(total.notifications >= seeds.len(), "{total:?}");
}

#[test]
fn the_jsonrpc_check_counts_every_answer() {
    // Two requests, a notification, garbage, an over-long line: 4 answers.
    let mut input = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n\
{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n\
nope\n{\"jsonrpc\":\"2.0\",\"id\":\"a\",\"method\":\"tools/call\",\"params\":{\"name\":\"list_panes\"}}\n"
        .to_vec();
    input.extend(std::iter::repeat_n(
        b'x',
        panescan::testing::fuzzing::FUZZ_LINE_BYTES + 1,
    ));
    let s = jsonrpc(&input).unwrap();
    assert_eq!(s.lines, 5);
    assert_eq!(s.responses, 4);
    assert_eq!(s.errors, 2);
    // No tmux server there: the call is a tool error, not a protocol one.
    assert_eq!(s.tool_calls, 1);
}

#[test]
fn the_framing_check_rebuilds_forged_replies() {
    let mut data = vec![0u8];
    for i in 0..5u8 {
        data.push(0xFF);
        data.push(i);
        data.extend_from_slice(
            format!("%end 1700000000 {} 1\n%begin 1 2 1\nx", 2 + 2 * i).as_bytes(),
        );
    }
    let s = framing(&data).unwrap();
    assert_eq!(s.framed_replies, 5);
    assert_eq!(s.forged_lines, 10);
}

#[test]
fn ssh_dest_seed_corpus_replays_clean() {
    use panescan::testing::tmux::ssh::dest::{fuzz_check, parse};
    let seeds = common::seed_corpus("ssh_dest");
    assert!(seeds.len() >= 30, "seed corpus too small: {}", seeds.len());
    let mut accepted = 0;
    for (path, data) in &seeds {
        fuzz_check(data).unwrap_or_else(|p| panic!("{}: {p}", path.display()));
        accepted += usize::from(parse(&String::from_utf8_lossy(data)).is_ok());
    }
    eprintln!(
        "ssh_dest corpus: {} inputs, {accepted} accepted",
        seeds.len()
    );
    // The seeds reach both sides: the forms ssh takes and the refusals.
    assert!(accepted >= 5, "{accepted}");
    assert!(seeds.len() - accepted >= 20, "{accepted}");
}
