//! Soak: a private 200-pane tmux server churning (every pane printing,
//! panes killed and created again, resized, their history cleared) while one `panescan serve` searches, captures, waits
//! (wait_for_text, watch_panes), reads and follows resources and runs
//! commands without pause. Every answer is checked against tmux itself:
//! each pane prints lines naming its slot and generation and a counter
//! (`tick SLOT GEN N`), so a line can only be right in its own pane, and a
//! counter only in order. A quarter of the panes are never churned and get
//! exact checks; the others may vanish mid-call, which allows only the
//! documented outcomes (a `failures` row, or "not found").
//!
//! Then: panescan's and tmux's peak memory (VmHWM) after warm-up grew
//! under 10%, the same panescan process answered throughout, no tmux
//! client or paste buffer is left once it exits.
//!
//! `cargo test -p panescan --test soak` runs 60 s; the long run:
//! `PANESCAN_SOAK_SECS=600 cargo test --release -p panescan --test soak -- --ignored --nocapture`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

#[path = "soak/checks.rs"]
mod checks;
#[path = "soak/churn.rs"]
mod churn;

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use churn::World;
use common::{memory_kb, Serve};

/// Panes of the churning server (4 sessions of 50 one-pane windows).
const PANES: usize = 200;

/// Rounds the warm-up must hold before panescan's memory is judged
/// (twice the 5 its level took here).
const WARM_ROUNDS: usize = 10;

#[test]
fn soak_one_minute_under_churn() {
    // One minute reports panescan's memory and the long run holds it to
    // 10%: its level comes within seconds here (25 MB by round 5), but a
    // slow machine's few rounds could leave a minute inside the warm-up.
    soak(Duration::from_secs(60), false);
}

#[test]
#[ignore = "about ten minutes: PANESCAN_SOAK_SECS=600 cargo test -p panescan --test soak -- --ignored"]
fn soak_long_under_churn() {
    let secs = std::env::var("PANESCAN_SOAK_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(600);
    soak(Duration::from_secs(secs), true);
}

/// Peak and resident memory of panescan and tmux at one moment, in kB.
#[derive(Debug, Clone, Copy)]
struct Memory {
    serve: (u64, u64),
    tmux: (u64, u64),
}

fn memory(serve: u32, tmux: u32) -> Memory {
    Memory {
        serve: memory_kb(serve),
        tmux: memory_kb(tmux),
    }
}

fn soak(duration: Duration, panescan_flat: bool) {
    let world = World::start("soak", PANES);
    let mut s = Serve::spawn_with(
        &[
            "serve",
            "--socket-name",
            world.tmux.socket_name(),
            "--tier",
            "mutating",
        ],
        &[],
    );
    s.initialize();
    let serve_pid = s.pid();
    // Answered by now, so this is the environment after any restart.
    eprintln!("panescan's malloc arenas: {}", arenas(serve_pid));
    let tmux_pid = world.tmux.pid().unwrap();
    let mut client = checks::Client::new(&world, &mut s);
    client.subscribe();
    let stop = AtomicBool::new(false);
    // panescan's memory climbs for its first rounds, not seconds (the
    // pane cache and its 2 malloc arenas filling: 24 MB by round 4 here;
    // with glibc's 8 arenas per core, one arena at a time for ~40
    // rounds: HARDENING.md, Soak). The long run judges it only after a
    // warm-up of enough rounds.
    let warm_up = (duration / 4).max(Duration::from_secs(30));
    let started = Instant::now();
    let (tally, warm, end, faults) = std::thread::scope(|scope| {
        let churner = scope.spawn(|| world.churn(&stop));
        let mut warm = None;
        let mut trace = Vec::new();
        while started.elapsed() < duration {
            client.round();
            let now = memory(serve_pid, tmux_pid);
            let secs = started.elapsed().as_secs();
            trace.push(format!(
                "{secs}s:{}/{}",
                now.serve.1 / 1024,
                now.tmux.1 / 1024
            ));
            if warm.is_none() && started.elapsed() >= warm_up {
                warm = Some((now, trace.len()));
            }
        }
        eprintln!("VmRSS MB by round (panescan/tmux): {}", trace.join(" "));
        let end = memory(serve_pid, tmux_pid);
        stop.store(true, Ordering::Relaxed);
        let faults = churner.join().unwrap();
        let warm = warm.expect("the run ended inside its warm-up (30 s at least)");
        (client.finish(), warm, end, faults)
    });
    let (warm, warm_rounds) = warm;
    let elapsed = started.elapsed();
    report(elapsed, &tally, &faults, warm, end);
    assert!(
        tally.missed.is_empty(),
        "waits that missed printed lines: {:#?}",
        tally.missed
    );
    assert_eq!(s.pid(), serve_pid);
    eprintln!("warm-up: {warm_up:?}, {warm_rounds} rounds");
    if panescan_flat {
        assert!(
            warm_rounds >= WARM_ROUNDS,
            "{warm_rounds} rounds in the warm-up: too few to judge panescan's memory"
        );
        assert_flat("panescan", warm.serve.0, end.serve.0);
    }
    assert_flat("tmux", warm.tmux.0, end.tmux.0);
    // Exits on end of input; nothing of it is left in tmux.
    s.close_stdin();
    let status = s
        .wait_exit(Duration::from_secs(15))
        .expect("panescan exits");
    assert!(status.success(), "{status}");
    world.assert_nothing_left();
}

fn assert_flat(what: &str, warm: u64, end: u64) {
    assert!(
        end * 10 < warm * 11,
        "{what} VmHWM grew {warm} -> {end} kB after warm-up (10% allowed)"
    );
}

/// The arena setting panescan runs with, from the environment it was
/// (re)started with: the figures depend on it.
fn arenas(pid: u32) -> String {
    let env = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
    let vars: Vec<String> = env
        .split(|b| *b == 0)
        .map(String::from_utf8_lossy)
        .filter(|v| v.starts_with("MALLOC_ARENA_MAX=") || v.contains("arena_max="))
        .map(|v| v.into_owned())
        .collect();
    if vars.is_empty() {
        "glibc's default (8 per core)".into()
    } else {
        vars.join(" ")
    }
}

fn report(
    elapsed: Duration,
    tally: &checks::Tally,
    faults: &churn::Faults,
    warm: Memory,
    end: Memory,
) {
    eprintln!(
        "soak: {:.0} s, {} rounds, {} calls checked ({}), {} updates, {} list changes",
        elapsed.as_secs_f64(),
        tally.rounds,
        tally.calls,
        tally.by_tool(),
        tally.updates,
        tally.list_changed
    );
    eprintln!(
        "churn: {} killed and created, {} resized, {} cleared; documented outcomes on churned panes: {}",
        faults.recreated, faults.resized, faults.cleared, tally.churn_outcomes()
    );
    eprintln!(
        "memory kB (VmHWM/VmRSS) after warm-up -> end: panescan {}/{} -> {}/{}, tmux {}/{} -> {}/{}",
        warm.serve.0,
        warm.serve.1,
        end.serve.0,
        end.serve.1,
        warm.tmux.0,
        warm.tmux.1,
        end.tmux.0,
        end.tmux.1
    );
    eprintln!(
        "slowest answer {:?} ({}), pings worst {:?}",
        tally.slowest.0, tally.slowest.1, tally.worst_ping
    );
}
