//! Budgets: deterministic clamping, exact byte/line accounting, time,
//! cancellation, match caps, and a bounded driver.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use panescan_engine::{
    max_in_flight, search, search_captures, Capture, Incoming, Matcher, PatternOptions,
    SearchBudgets, SearchOutcome,
};
use proptest::prelude::*;

fn in_pool<T: Send>(threads: usize, f: impl FnOnce() -> T + Send) -> T {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap()
        .install(f)
}

fn summary(o: &SearchOutcome) -> impl PartialEq + std::fmt::Debug {
    (
        o.panes.clone(),
        o.failed.clone(),
        o.panes_searched,
        o.bytes_scanned,
        o.lines_scanned,
        o.flags,
        o.cancelled,
    )
}

fn captures_strategy() -> impl Strategy<Value = Vec<Capture>> {
    let line = prop::collection::vec(
        prop::sample::select(vec!["a", "b", "ab", " ", "é", "x"]),
        0..6,
    )
    .prop_map(|p| p.concat());
    prop::collection::vec(prop::collection::vec(line, 0..20), 1..12).prop_map(|cs| {
        cs.into_iter()
            .enumerate()
            .map(|(key, lines)| {
                let mut text = lines.join("\n");
                if key % 2 == 0 {
                    text.push('\n');
                }
                Capture::new(key, -(key as i64) * 100, text)
            })
            .collect()
    })
}

/// The lines a budget of `max_bytes`/`max_lines` admits, charged in key
/// order; the first line that does not fit stops everything.
fn admitted(captures: &[Capture], max_bytes: u64, max_lines: u64) -> Vec<Capture> {
    let (mut bytes, mut lines) = (0u64, 0u64);
    let mut out = Vec::new();
    let mut stop = false;
    for c in captures {
        let mut kept = Vec::new();
        for line in common::lines(&c.bytes) {
            let cost = line.len() as u64 + 1;
            if stop || lines + 1 > max_lines || bytes + cost > max_bytes {
                stop = true;
                break;
            }
            bytes += cost;
            lines += 1;
            kept.push(line);
        }
        let mut text = kept.join(&b'\n');
        if !kept.is_empty() {
            text.push(b'\n');
        }
        out.push(Capture::new(c.key, c.first_line, text));
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Byte and line budgets clamp to exactly the lines that fit in key
    /// order; the result is the same for 1, 2 and 8 threads.
    #[test]
    fn clamped_results_are_deterministic(
        cs in captures_strategy(),
        max_bytes in 0u64..400,
        max_lines in 0u64..80,
        per_pane in 1u64..6,
        total in 1u64..30,
        regex in any::<bool>(),
    ) {
        let pattern = if regex { "a+b?" } else { "ab" };
        let matcher = Matcher::new(&[pattern], PatternOptions { regex, match_case: false }).unwrap();
        let mut options = common::open_options();
        options.limits = SearchBudgets { max_scan_bytes: max_bytes, max_scan_lines: max_lines, deadline: None, max_matches: total, max_matches_per_pane: per_pane };
        let one = in_pool(1, || search_captures(&matcher, &options, cs.clone()));
        let two = in_pool(2, || search_captures(&matcher, &options, cs.clone()));
        let eight = in_pool(8, || search_captures(&matcher, &options, cs.clone()));
        prop_assert_eq!(summary(&one), summary(&two));
        prop_assert_eq!(summary(&one), summary(&eight));

        // Never more than the budget.
        prop_assert!(one.bytes_scanned <= max_bytes);
        prop_assert!(one.lines_scanned <= max_lines);

        // Exactly the admitted lines, then the match caps.
        let fit = admitted(&cs, max_bytes, max_lines);
        let mut want = common::oracle(&[pattern.to_string()], regex, false, &fit);
        let mut left = total;
        let mut truncated = false;
        let mut expect_pane_flags = Vec::new();
        want.retain_mut(|(_, hits)| {
            if truncated { return false; }
            let mut pane_truncated = hits.len() as u64 > per_pane;
            hits.truncate(per_pane as usize);
            if hits.len() as u64 > left {
                hits.truncate(left as usize);
                truncated = true;
                pane_truncated = true;
            }
            left -= hits.len() as u64;
            expect_pane_flags.push(pane_truncated);
            !hits.is_empty()
        });
        // A pane cut to zero by the total cap is dropped, along with its flag.
        let got = common::engine_view(&one);
        prop_assert_eq!(got, want);
        prop_assert_eq!(one.flags.matches_truncated, truncated);
        let all_lines: usize = cs.iter().map(|c| common::lines(&c.bytes).len()).sum();
        let fit_lines: usize = fit.iter().map(|c| common::lines(&c.bytes).len()).sum();
        if !truncated {
            prop_assert_eq!(one.flags.byte_clamped || one.flags.line_clamped, fit_lines < all_lines);
        }
        // A pane stops scanning at its cap; otherwise every admitted line
        // is scanned.
        prop_assert!(one.lines_scanned <= fit_lines as u64);
        if !truncated && !expect_pane_flags.iter().any(|&t| t) {
            prop_assert_eq!(one.lines_scanned, fit_lines as u64);
        }
        let flags: Vec<bool> = one.panes.iter().map(|p| p.lines_truncated).collect();
        let want_flags: Vec<bool> = expect_pane_flags.iter().zip(common::oracle(&[pattern.to_string()], regex, false, &fit)).filter(|(_, (_, h))| !h.is_empty()).map(|(&f, _)| f).take(flags.len()).collect();
        prop_assert_eq!(flags, want_flags);
    }
}

#[test]
fn byte_budget_of_n_never_scans_more_than_n() {
    let text = "error here\nnothing\n".repeat(1000);
    let cs: Vec<Capture> = (0..20).map(|k| Capture::new(k, 0, text.clone())).collect();
    let m = Matcher::new(&["error"], PatternOptions::default()).unwrap();
    for n in [0u64, 1, 10, 11, 12, 1000, 19_000, 123_457] {
        let mut options = common::open_options();
        options.limits.max_scan_bytes = n;
        let o = search_captures(&m, &options, cs.clone());
        assert!(o.bytes_scanned <= n, "{n}: {}", o.bytes_scanned);
        assert!(o.flags.byte_clamped);
        // Every whole line that fits was scanned.
        assert!(n - o.bytes_scanned < 11, "{n}: {}", o.bytes_scanned);
    }
}

#[test]
fn deadline_in_the_past_sets_time_clamped() {
    let cs: Vec<Capture> = (0..50)
        .map(|k| Capture::new(k, 0, "a\n".repeat(10_000)))
        .collect();
    let m = Matcher::new(&["a"], PatternOptions::default()).unwrap();
    let mut options = common::open_options();
    options.limits.deadline = Some(Instant::now() - Duration::from_millis(1));
    let o = search_captures(&m, &options, cs);
    assert!(o.flags.time_clamped);
    assert!(!o.cancelled);
    assert!(o.panes.is_empty());
}

#[test]
fn deadline_stops_waiting_for_slow_captures() {
    let m = Matcher::new(&["a"], PatternOptions::default()).unwrap();
    let mut options = common::open_options();
    options.limits.deadline = Some(Instant::now() + Duration::from_millis(100));
    let (tx, rx) = crossbeam_channel::bounded(1);
    tx.send(Incoming::Capture(Capture::new(0, 0, "a"))).unwrap();
    let started = Instant::now();
    // The sender stays open: the driver must give up at the deadline. One
    // that waited for the channel would never return: the test gives up on
    // it (generously, whatever the machine's load) instead of hanging.
    let (done, finished) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let o = search(&m, &options, rx, &|_| {});
        let _ = done.send((o, started.elapsed()));
    });
    let (o, took) = finished
        .recv_timeout(Duration::from_secs(60))
        .expect("the driver waited for a channel that never closed");
    // Not before the deadline either: it did wait for more captures.
    assert!(took >= Duration::from_millis(100), "{took:?}");
    assert!(o.flags.time_clamped);
    assert_eq!(o.panes.len(), 1);
    drop(tx);
}

/// Once the byte budget cut a capture, no later one can be searched: the
/// driver stops taking captures and returns while the producer still has
/// more to send (it stops fetching when the channel closes).
#[test]
fn byte_budget_stops_taking_captures_while_the_producer_is_open() {
    let m = Matcher::new(&["a"], PatternOptions::default()).unwrap();
    let mut options = common::open_options();
    options.limits.max_scan_bytes = 2;
    let (tx, rx) = crossbeam_channel::bounded(1);
    let (release, released) = crossbeam_channel::bounded::<()>(1);
    let producer = std::thread::spawn(move || {
        tx.send(Incoming::Capture(Capture::new(
            0, 0, "a
a
",
        )))
        .unwrap();
        // Holds the channel open until the search is over; the bound only
        // keeps a broken driver from hanging the test.
        let by_the_test = released.recv_timeout(Duration::from_secs(60)).is_ok();
        drop(tx);
        by_the_test
    });
    let o = search(&m, &options, rx, &|_| {});
    let _ = release.send(());
    assert!(
        producer.join().unwrap(),
        "the search returned only once the producer gave up"
    );
    assert!(o.flags.byte_clamped);
    assert_eq!(o.lines_scanned, 1);
}

#[test]
fn cancel_stops_the_search() {
    let m = Matcher::new(&["a"], PatternOptions::default()).unwrap();
    let cancel = Arc::new(AtomicBool::new(false));
    let mut options = common::open_options();
    options.cancel = Some(cancel.clone());
    let (tx, rx) = crossbeam_channel::bounded(1);
    let producer = std::thread::spawn(move || {
        for k in 0..1_000_000 {
            if tx
                .send(Incoming::Capture(Capture::new(k, 0, "a\nb\n")))
                .is_err()
            {
                return k;
            }
            if k == 100 {
                cancel.store(true, Ordering::SeqCst);
            }
        }
        1_000_000
    });
    let o = search(&m, &options, rx, &|_| {});
    assert!(o.cancelled);
    assert!(!o.flags.time_clamped);
    assert!(producer.join().unwrap() < 1_000_000);
}

#[test]
fn failures_and_out_of_order_arrivals_come_back_in_key_order() {
    let m = Matcher::new(&["x"], PatternOptions::default()).unwrap();
    let (tx, rx) = crossbeam_channel::unbounded();
    for k in [3usize, 1, 4, 0] {
        tx.send(Incoming::Capture(Capture::new(k, 0, "x"))).unwrap();
    }
    tx.send(Incoming::Failed {
        key: 2,
        reason: "pane vanished".into(),
    })
    .unwrap();
    drop(tx);
    let mut options = common::open_options();
    // Budget of 3 lines: admitted in key order, so keys 0, 1, 3 (2 failed).
    options.limits.max_scan_lines = 3;
    let o = search(&m, &options, rx, &|_| {});
    assert_eq!(
        o.panes.iter().map(|p| p.key).collect::<Vec<_>>(),
        vec![0, 1, 3]
    );
    assert_eq!(o.failed, vec![(2, "pane vanished".to_string())]);
    assert!(o.flags.line_clamped);
}

#[test]
fn per_pane_cap_keeps_first_hits() {
    let m = Matcher::new(&["hit"], PatternOptions::default()).unwrap();
    let mut options = common::open_options();
    options.limits.max_matches_per_pane = 2;
    let o = search_captures(
        &m,
        &options,
        vec![
            Capture::new(0, 10, "hit1\nhit2\nhit3\n"),
            Capture::new(1, 0, "hit\n"),
        ],
    );
    assert_eq!(
        o.panes[0].lines.iter().map(|l| l.line).collect::<Vec<_>>(),
        vec![10, 11]
    );
    assert!(o.panes[0].lines_truncated);
    assert!(!o.panes[1].lines_truncated);
    assert!(!o.flags.matches_truncated);
}

/// The driver holds back a producer that is faster than the scanners.
#[test]
fn driver_does_not_buffer_every_capture() {
    let m = Matcher::new(
        &[r"\w+\d{3}z"],
        PatternOptions {
            regex: true,
            match_case: false,
        },
    )
    .unwrap();
    let sent = Arc::new(AtomicUsize::new(0));
    let big = "some words 123 and more 456 text\n".repeat(30_000);
    let (tx, rx) = crossbeam_channel::bounded(1);
    let sent2 = sent.clone();
    let producer = std::thread::spawn(move || {
        for k in 0..60 {
            if tx
                .send(Incoming::Capture(Capture::new(k, 0, big.clone())))
                .is_err()
            {
                return;
            }
            sent2.fetch_add(1, Ordering::SeqCst);
        }
    });
    let worst = AtomicUsize::new(0);
    let o = search(&m, &common::open_options(), rx, &|p| {
        let ahead = sent.load(Ordering::SeqCst).saturating_sub(p.panes_done);
        worst.fetch_max(ahead, Ordering::SeqCst);
    });
    producer.join().unwrap();
    assert_eq!(o.panes_searched, 60);
    // In flight, plus one in the channel, plus one being sent.
    assert!(
        worst.load(Ordering::SeqCst) <= max_in_flight() + 2,
        "{} ahead",
        worst.load(Ordering::SeqCst)
    );
}

/// Captures that arrive in reverse key order all wait for key 0, which
/// comes last: many more than the in-flight limit wait at once, and the
/// driver must keep taking input until key 0 arrives.
#[test]
fn captures_waiting_for_a_missing_predecessor_do_not_stop_the_input() {
    let count = 4 * max_in_flight() + 3;
    let (tx, rx) = crossbeam_channel::bounded(1);
    let producer = std::thread::spawn(move || {
        for k in (0..count).rev() {
            let text = format!("line {k}\nhit {k}\n");
            if tx
                .send(Incoming::Capture(Capture::new(k, 0, text)))
                .is_err()
            {
                return;
            }
        }
    });
    let (result_tx, result_rx) = crossbeam_channel::bounded(1);
    std::thread::spawn(move || {
        let m = Matcher::new(&["hit"], PatternOptions::default()).unwrap();
        let _ = result_tx.send(search(&m, &common::open_options(), rx, &|_| {}));
    });
    // A driver that stopped taking input would wait for ever: give it far
    // more time than the search takes, then fail.
    let o = result_rx
        .recv_timeout(Duration::from_secs(60))
        .expect("the search never ended: the driver stopped taking input");
    producer.join().unwrap();
    assert_eq!(o.panes_searched, count);
    let keys: Vec<usize> = o.panes.iter().map(|p| p.key).collect();
    assert_eq!(keys, (0..count).collect::<Vec<_>>());
    assert!(o
        .panes
        .iter()
        .all(|p| p.lines[0].text == format!("hit {}", p.key)));
}

/// Small captures are scanned on the driver's thread and big ones on
/// rayon: arriving in any order, mixed, under a byte budget that cuts one
/// of them, they give what the same captures searched in order give.
#[test]
fn small_and_big_captures_in_any_order_give_the_in_order_answer() {
    let m = Matcher::new(&["hit"], PatternOptions::default()).unwrap();
    // Big captures (over 16 KiB) are repeated lines with one hit near the
    // end; small ones a hit between blank lines.
    let text = |k: usize| {
        if k % 3 == 0 {
            format!("{}hit {k}\nafter\n", "filler line\n".repeat(8_000))
        } else {
            format!("\nhit {k}\n\n\u{4e2d}\n")
        }
    };
    let captures: Vec<Capture> = (0..24).map(|k| Capture::new(k, 0, text(k))).collect();
    for max_scan_bytes in [u64::MAX, 600_000] {
        let mut options = common::open_options();
        options.limits.max_scan_bytes = max_scan_bytes;
        let in_order = search_captures(&m, &options, captures.clone());
        if max_scan_bytes == u64::MAX {
            // What each capture holds, checked against the text itself.
            let hits: Vec<(usize, i64, String)> = in_order
                .panes
                .iter()
                .map(|p| (p.key, p.lines[0].line, p.lines[0].text.to_string()))
                .collect();
            let expected: Vec<(usize, i64, String)> = (0..24)
                .map(|k| (k, if k % 3 == 0 { 8_000 } else { 1 }, format!("hit {k}")))
                .collect();
            assert_eq!(hits, expected);
        }
        for order in [
            (0..24).rev().collect::<Vec<_>>(),
            (0..24).map(|k| (k * 7) % 24).collect(),
        ] {
            // Queued all at once (scanned on rayon), and handed over one at
            // a time with nothing queued behind (small ones scanned on the
            // driver's thread).
            for one_at_a_time in [false, true] {
                let (tx, rx) = if one_at_a_time {
                    crossbeam_channel::bounded(0)
                } else {
                    crossbeam_channel::unbounded()
                };
                let sent: Vec<Capture> = order.iter().map(|&k| captures[k].clone()).collect();
                let producer = std::thread::spawn(move || {
                    for c in sent {
                        if tx.send(Incoming::Capture(c)).is_err() {
                            return;
                        }
                    }
                });
                let o = in_pool(2, || search(&m, &options, rx, &|_| {}));
                producer.join().unwrap();
                assert_eq!(summary(&o), summary(&in_order), "{order:?} {one_at_a_time}");
            }
        }
        if max_scan_bytes != u64::MAX {
            assert!(in_order.flags.byte_clamped, "{:?}", in_order.flags);
        }
    }
}
