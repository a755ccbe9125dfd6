//! Formats: display_message cannot freeze or kill the user's tmux.
//!
//! tmux expands a format inside its single-threaded server. Loops inside
//! loops multiply its work (tmux 3.3a froze for 21 s on 24 levels over 2
//! sessions), a pad of 2^31 makes it allocate 4 GB (and die under an
//! address-space limit), `s///` arguments are expanded twice. Each class
//! is sent through `panescan serve` while a separate `tmux display -p x`
//! loop measures how long the server takes to answer anyone else; the
//! private server runs under a 1 GiB address-space limit so that a format
//! that did reach it would kill only it. Every class must be refused with
//! an error naming the construct, the other client must never wait much
//! longer than it did before (its own baseline, measured in the same test),
//! and the server's peak memory must not grow.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use common::{memory_kb, Serve};
use panescan::testing::private_server::PrivateServer;
use panescan::testing::tools::format_guard::{check, LoopSizes};
use serde_json::json;

/// A private server with `sessions` sessions in all, each running `cat`.
fn server_with_sessions(label: &str, sessions: usize) -> (PrivateServer, Serve) {
    let (tmux, s) = Serve::with_tmux(label);
    let mut args: Vec<String> = Vec::new();
    for i in 1..sessions {
        if i > 1 {
            args.push(";".into());
        }
        args.extend(["new-session", "-d", "-s", &format!("s{i}"), "cat"].map(String::from));
    }
    if !args.is_empty() {
        tmux.run_ok(&args).unwrap();
    }
    (tmux, s)
}

/// Caps the tmux server's address space, so an allocation of gigabytes
/// kills this private server instead of straining the machine.
fn limit_address_space(tmux: &PrivateServer, bytes: u64) {
    let pid = tmux.pid().unwrap();
    let ok = Command::new("prlimit")
        .args(["--pid", &pid.to_string(), &format!("--as={bytes}:{bytes}")])
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "prlimit (util-linux) must be able to limit tmux {pid}");
}

/// Another client of the same server: `tmux display -p x` in a loop, each
/// answer timed, until stopped.
struct Probe {
    stop: Arc<AtomicBool>,
    thread: JoinHandle<Vec<Duration>>,
}

impl Probe {
    fn start(tmux: &PrivateServer) -> Probe {
        let mut cmd = tmux.command();
        cmd.args(["display-message", "-p", "x"])
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            let mut waits = Vec::new();
            while !flag.load(Ordering::Relaxed) {
                let t = Instant::now();
                let _ = cmd.status();
                waits.push(t.elapsed());
            }
            waits
        });
        Probe { stop, thread }
    }

    /// Stops the loop; every wait measured.
    fn finish(self) -> Vec<Duration> {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.join().unwrap()
    }
}

fn worst(waits: &[Duration]) -> Duration {
    waits.iter().copied().max().unwrap_or_default()
}

/// CPU time a process has used (user + system), in clock ticks.
fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    // Fields after the command name (which may hold spaces): state is
    // field 3, utime and stime fields 14 and 15.
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap()
}

/// One format of each hostile class, and what its refusal must name.
fn hostile_formats() -> Vec<(String, &'static str)> {
    let nested = format!("#{{n:{}x{}}}", "#{S:".repeat(14), "}".repeat(14));
    let deep = format!("{}x{}", "#{?1,".repeat(40), ",}".repeat(40));
    vec![
        (nested, "nested loop #{S:...} at byte 8"),
        (
            "#{W:#{P:#{pane_id}}}".into(),
            "nested loop #{P:...} at byte 4",
        ),
        (
            "#{S:#{?1,#{S:x},}}".into(),
            "nested loop #{S:...} at byte 9",
        ),
        (
            "#{n:#{p200000000:x}}".into(),
            "the width of #{p200000000:...} at byte 7",
        ),
        (
            "#{n:#{p2147483647:x}}".into(),
            "the width of #{p2147483647:...} at byte 7",
        ),
        (
            "#{n:#{p-2147483647:x}}".into(),
            "the width of #{p-2147483647:...} at byte 7",
        ),
        (
            "#{=2147483647:pane_title}".into(),
            "the width of #{=2147483647:...} at byte 3",
        ),
        (
            "#{n:#{e|+|f|2147483647:1,1}}".into(),
            "the precision of #{e|+|f|2147483647:...}",
        ),
        (
            "#{n:#{R:xxxxxxxx,10000}}".into(),
            "repeat #{R:...} at byte 4",
        ),
        (
            "#{C:#{pane_title}}".into(),
            "pane search #{C:...} at byte 4",
        ),
        (
            "#{C/r:(a*)*\\1}".into(),
            "pane search #{C/r:...} at byte 2: a regular expression over the screen",
        ),
        (
            "#{C:*a*a*a*a*a*b}".into(),
            "the pattern of pane search #{C:...}",
        ),
        (
            "#{m:*a*a*a*a*a*b,#{pane_title}}".into(),
            "the pattern of match #{m:...}",
        ),
        (
            "#{s/(a|aa){1000#}/x/:session_name}".into(),
            "the counted repetition in #{s/(a|aa)",
        ),
        ("#{E:@loop}".into(), "the E: modifier at byte 2"),
        ("#{T:@loop}".into(), "the T: modifier at byte 2"),
        (
            "#{s/#{pane_title}/x/:session_name}".into(),
            "the argument of s in #{s/#{pane_title}/x/:...} at byte 4",
        ),
        (deep, "#{ nested more than 16 deep at byte 80"),
        ("x".repeat(5000), "a format of 5000 bytes"),
    ]
}

#[test]
fn hostile_formats_are_refused_while_tmux_keeps_answering_others() {
    let (tmux, mut s) = server_with_sessions("harden-fmt-hostile", 3);
    limit_address_space(&tmux, 1 << 30);
    // An option that expands to itself: E/T would recurse on it.
    tmux.run_ok(["set-option", "-g", "@loop", "#{E:@loop}"])
        .unwrap();
    s.initialize();
    let pid = tmux.pid().unwrap();
    let (hwm_before, _) = memory_kb(pid);

    let probe = Probe::start(&tmux);
    std::thread::sleep(Duration::from_secs(2));
    let baseline = probe.finish();

    // Every class at least once, for at least as long as the baseline ran.
    let probe = Probe::start(&tmux);
    let started = Instant::now();
    let mut wrong = Vec::new();
    let mut calls = 0;
    while calls == 0 || started.elapsed() < Duration::from_secs(2) {
        for (format, names) in hostile_formats() {
            let r = s.call("display_message", json!({"format": format}));
            calls += 1;
            let text = r["content"][0]["text"].as_str().unwrap_or_default();
            if r["isError"] != true
                || !text.starts_with("display_message refuses")
                || !text.contains(names)
            {
                wrong.push(format!("{}: {text}", &format[..format.len().min(40)]));
            }
        }
        // Paced, so the measure is of tmux, not of two busy cores.
        std::thread::sleep(Duration::from_millis(50));
    }
    let during = probe.finish();

    // A format that reached tmux may have killed it: look before reading
    // its memory.
    let alive = tmux.pid().ok() == Some(pid);
    let (hwm_after, rss_after) = if alive { memory_kb(pid) } else { (0, 0) };
    let (base, hostile) = (worst(&baseline), worst(&during));
    eprintln!(
        "formats: {calls} hostile calls, {} not refused as they should be; other client's worst wait {hostile:?} ({} answers) against {base:?} before ({} answers); tmux alive: {alive}, VmHWM {hwm_before} -> {hwm_after} kB, VmRSS {rss_after} kB",
        wrong.len(),
        during.len(),
        baseline.len()
    );
    assert!(
        wrong.is_empty(),
        "not refused as they should be:\n{}",
        wrong.join("\n")
    );
    assert!(alive, "the tmux server died");
    assert!(
        hostile <= (base * 3).max(base + Duration::from_millis(250)),
        "another client waited {hostile:?} while hostile formats were tried, {base:?} before"
    );
    assert!(
        hwm_after <= hwm_before + 8 * 1024,
        "tmux peak memory grew: {hwm_before} -> {hwm_after} kB"
    );
    assert_eq!(
        tmux.run_ok(["list-sessions", "-F", "#{session_name}"])
            .unwrap()
            .lines()
            .count(),
        3
    );
}

#[test]
fn benign_formats_give_what_tmux_gives() {
    let (tmux, mut s) = server_with_sessions("harden-fmt-benign", 3);
    s.initialize();
    tmux.run_ok([
        "select-pane",
        "-t",
        "main:0.0",
        "-T",
        "a pane title, long enough",
    ])
    .unwrap();
    let pane = tmux
        .run_ok(["display-message", "-p", "-t", "main:0.0", "#{pane_id}"])
        .unwrap();
    let pane = pane.trim();
    for format in [
        "#{session_name}",
        "#S:#I.#P #{pane_id}",
        "#{?pane_active,active,inactive}",
        "#{==:#{session_name},main} #{!=:#{pane_index},0} #{||:0,1} #{&&:1,#{pane_active}}",
        "#{=10:pane_title}|#{=/-5/...:pane_title}|#{p8:pane_index}|",
        "#{s/%/pane-/:pane_id} #{m:*title*,#{pane_title}} #{C:zzz-not-there}",
        "#{e|+|:#{pane_index},41} #{n:session_name} #{q:pane_title}",
        "#{S:#{session_name} }",
        "#{W:#{window_index}:#{window_name} }",
        "#{P:#{pane_index}#{?pane_active,*,} }",
        "#{N/s:s2} #{N/s:nope}",
    ] {
        let want = tmux
            .run_ok(["display-message", "-p", "-t", "main:0.0", format])
            .unwrap();
        let got = s.call_ok("display_message", json!({"format": format, "target": pane}));
        assert_eq!(got["value"], want.trim_end_matches('\n'), "{format}");
    }
}

#[test]
fn a_loop_is_judged_on_the_servers_real_size() {
    // 16 KB per session: fine on 3 sessions, too much on 70.
    let format = format!("#{{n:#{{S:{}}}}}", "#{p1000:}".repeat(16));
    let (tmux, mut s) = server_with_sessions("harden-fmt-size", 3);
    s.initialize();
    let v = s.call_ok("display_message", json!({"format": format}));
    assert_eq!(v["value"], "48000");
    let more: Vec<String> = (100..167)
        .flat_map(|i| ["new-session", "-d", "-s", &format!("s{i}"), "cat", ";"].map(String::from))
        .collect();
    tmux.run_ok(&more[..more.len() - 1]).unwrap();
    let e = s.call_err("display_message", json!({"format": format}));
    assert!(
        e.starts_with("display_message refuses #{S:...} at byte 4: over this server's 70 sessions, it could make tmux build about"),
        "{e}"
    );
}

#[test]
fn formats_at_the_limits_cost_tmux_little() {
    let (tmux, mut s) = server_with_sessions("harden-fmt-limits", 60);
    s.initialize();
    // What panescan computes for this server: 60 sessions of one window of
    // one pane, no client but its own.
    let sizes = LoopSizes {
        sessions: 60,
        windows: 1,
        panes: 1,
        clients: 8,
    };
    // The largest format of each shape the guard still accepts.
    let largest = |make: &dyn Fn(usize) -> String| {
        (1..2000)
            .map(make)
            .take_while(|f| check(f, &sizes).is_ok())
            .last()
            .unwrap()
    };
    let formats = [
        largest(&|k| format!("#{{n:#{{S:{}}}}}", "#{p1000:}".repeat(k))),
        largest(&|k| "#{n:#{S:#{session_name}}}".repeat(k)),
        largest(&|k| "#{p1000:}".repeat(k)),
        largest(&|k| format!("#{{n:#{{s/x*/{}/:#{{p256:}}}}}}", "y".repeat(k))),
        largest(&|k| format!("#{{n:#{{m:*{}*,#{{p1000:}}}}}}", "a".repeat(k))),
    ];
    let pid = tmux.pid().unwrap();
    let probe = Probe::start(&tmux);
    std::thread::sleep(Duration::from_secs(2));
    let baseline = probe.finish();

    let probe = Probe::start(&tmux);
    let started = Instant::now();
    let mut ticks = [0u64; 5];
    let mut rounds = 0;
    while rounds == 0 || started.elapsed() < Duration::from_secs(2) {
        for (f, used) in formats.iter().zip(&mut ticks) {
            let before = cpu_ticks(pid);
            s.call_ok("display_message", json!({"format": f}));
            *used += cpu_ticks(pid) - before;
        }
        rounds += 1;
        std::thread::sleep(Duration::from_millis(50));
    }
    let during = probe.finish();
    let (base, worst) = (worst(&baseline), worst(&during));
    // Clock ticks are 10 ms at the usual 100 per second.
    let per_call: Vec<String> = ticks
        .iter()
        .map(|t| format!("{:.1}", *t as f64 * 10.0 / rounds as f64))
        .collect();
    eprintln!(
        "formats at the limits: {rounds} rounds of {} formats, tmux CPU per call (ms): {}; other client's worst wait {worst:?} against {base:?} before",
        formats.len(),
        per_call.join(", ")
    );
    assert!(
        worst <= (base * 3).max(base + Duration::from_millis(250)),
        "another client waited {worst:?} while accepted formats ran, {base:?} before"
    );
}

/// Texts a program in a pane sets to any length: its title (OSC 2), its
/// window's name (`ESC k`), its path (OSC 7), its command line (`exec -a`),
/// and a user option (through tmux, as any program in a pane may).
const PANE_SET: [&str; 5] = [
    "pane_title",
    "window_name",
    "pane_path",
    "pane_current_command",
    "@big_id",
];

/// A server of 16 sessions whose pane `%0` has set every text of
/// [`PANE_SET`] to ~100-256 KiB of `a`.
fn server_with_long_texts(label: &str) -> (PrivateServer, Serve, common::TempDir) {
    let (tmux, s) = server_with_sessions(label, 16);
    tmux.run_ok(["set-option", "-g", "allow-rename", "on"])
        .unwrap();
    let dir = common::TempDir::new(label);
    let script = dir.0.join("long.sh");
    std::fs::write(
        &script,
        "a=$(head -c 262144 /dev/zero | tr '\\0' a)\n\
         printf '\\033]2;%s\\033\\\\' \"$a\"\n\
         printf '\\033k%s\\033\\\\' \"$a\"\n\
         printf '\\033]7;file://localhost/%s\\033\\\\' \"$a\"\n\
         exec -a \"$(head -c 100000 /dev/zero | tr '\\0' a)\" sleep 1000\n",
    )
    .unwrap();
    tmux.run_ok([
        "respawn-pane",
        "-k",
        "-t",
        "%0",
        &format!("bash {}", script.display()),
    ])
    .unwrap();
    // A client's command is limited to 16 KiB; a file tmux reads is not.
    let conf = dir.0.join("big.conf");
    std::fs::write(
        &conf,
        format!("set-option -p -t %0 @big_id {}\n", "a".repeat(100_000)),
    )
    .unwrap();
    tmux.run_ok(["source-file", &conf.display().to_string()])
        .unwrap();
    let long = |var: &str| {
        tmux.run_ok([
            "display-message",
            "-p",
            "-t",
            "%0",
            &format!("#{{n:{var}}}"),
        ])
        .ok()
        .and_then(|n| n.trim().parse::<usize>().ok())
        .is_some_and(|n| n >= 100_000)
    };
    let all = || PANE_SET.iter().all(|v| long(v));
    assert!(
        common::eventually(Duration::from_secs(20), all),
        "lengths: {:?}",
        PANE_SET.map(|v| tmux
            .run_ok(["display-message", "-p", "-t", "%0", &format!("#{{n:{v}}}")])
            .unwrap_or_default())
    );
    (tmux, s, dir)
}

#[test]
fn texts_a_pane_sets_cannot_make_an_accepted_format_stall_tmux() {
    let (tmux, mut s, _dir) = server_with_long_texts("harden-fmt-pane-set");
    s.initialize();
    // Regular expressions on those texts: refused, however wrapped.
    let mut wrong = Vec::new();
    for var in PANE_SET {
        for f in [
            format!("#{{m/r:(a|aa)*b,#{{{var}}}}}"),
            format!("#{{s/(a|aa)*b/x/:{var}}}"),
            format!("#{{s/a/x/:{var}}}"),
            format!("#{{m/r:(a|b)*a(a|b)(a|b)(a|b)c,#{{=10:{var}}}}}"),
        ] {
            let r = s.call("display_message", json!({"target": "%0", "format": f}));
            if r["isError"] != true {
                wrong.push(f);
            }
        }
    }
    assert!(wrong.is_empty(), "accepted: {wrong:?}");
    assert_eq!(
        s.call("display_message", json!({"format": "#{C/r:(a|aa)*b}"}))["isError"],
        true
    );
    // The worst the guard accepts: the costliest regular expression
    // measured (a 64-byte one whose automaton grows with every byte) on
    // the longest text it allows, once per session (16: the limit); the
    // longest glob over each long text; a glob in a loop.
    let subject: String = (0..256)
        .map(|i| if i % 3 == 0 { 'b' } else { 'a' })
        .collect();
    let regex = format!("(a|b)*a{}c", "(a|b)".repeat(11));
    let sizes = LoopSizes {
        sessions: 16,
        windows: 1,
        panes: 1,
        clients: 8,
    };
    let largest_glob = |var: &str| {
        (1..300)
            .map(|k| format!("#{{m:*{}b,#{{{var}}}}}", "a".repeat(k)))
            .take_while(|f| check(f, &sizes).is_ok())
            .last()
    };
    let mut worst_formats = vec![format!("#{{S:#{{m/r:{regex},{subject}}}}}")];
    worst_formats.extend(PANE_SET.iter().filter_map(|v| largest_glob(v)));
    for f in &worst_formats {
        assert!(check(f, &sizes).is_ok(), "the guard refuses {f}");
    }
    for f in &worst_formats {
        let t = Instant::now();
        s.call_ok("display_message", json!({"target": "%0", "format": f}));
        eprintln!("{:?} {}", t.elapsed(), &f[..f.len().min(60)]);
    }
    let probe = Probe::start(&tmux);
    std::thread::sleep(Duration::from_secs(2));
    let baseline = probe.finish();
    let probe = Probe::start(&tmux);
    let started = Instant::now();
    let mut calls = 0;
    while calls == 0 || started.elapsed() < Duration::from_secs(2) {
        for f in &worst_formats {
            s.call_ok("display_message", json!({"target": "%0", "format": f}));
            calls += 1;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let during = probe.finish();
    let (base, worst) = (worst(&baseline), worst(&during));
    eprintln!(
        "pane-set texts: {calls} calls of the {} worst accepted formats; other client's worst wait {worst:?} against {base:?} before",
        worst_formats.len()
    );
    assert!(
        worst <= (base * 3).max(base + Duration::from_millis(250)),
        "another client waited {worst:?} while accepted formats ran on long pane texts, {base:?} before"
    );
}
