#!/usr/bin/env python3
"""What tmux spends on each kind of reader of every pane's output.

The journal's steady load without the journal: a private tmux server
(`-L`, an empty config) of PANES panes at history-limit 2,000, ten
70-to-90-byte lines every 100 ms written straight to each pane's terminal
by this process, and tmux's utime+stime over SECONDS, for each reader
named:

- `none`: nothing reads (the baseline);
- `feed`: one control client with output on (`-C attach -f ignore-size`),
  as the ledger's feed of a session;
- `pipes`: a `pipe-pane -O 'exec cat > /dev/null'` per pane;
- `offfeed`: the feed with every pane paused and turned off on it (as
  the daemon leaves it with `--journal-taps`);
- `reads`, `reads2`, `reads4`: the journal's partial reads, every 1, 2 or
  4 s: a listing, then a `capture-pane -p -J` of each pane's rows printed
  since plus 100 (the tail and the screen), as one `source-file` on a
  control client with output off (`-f no-output`);
- `sweeps`, `sweeps2`: the same reads every 1 or 2 s, each a `tmux
  source-file` process of its own (a one-shot client, as the daemon's
  capture sweeps are, since `capture-pane -p` leaks in control mode in
  tmux 3.2 to 3.5a); `sweeps2e`: with `-e` (the escapes: what a
  search asking for them pays; the journal asks none);
- `daemon`, `daemontaps`: the journal itself, `panescan daemon --journal`
  (with `--journal-taps`), the binary `$PANESCAN_BIN` (default
  `panescan` on PATH), on a private runtime and journal directory; its
  CPU is printed too;
- with `READER_COST_FULL` set, every pane's history is filled to its
  limit before the measure (trims from the start, as after a minute);
- with `READER_COST_SERIES=N`, tmux's CPU is printed for every N seconds
  of the measure too;
- with `READER_COST_HOOK` set, that shell command starts as each measure
  does, `TMUX_PID` and `DAEMON_PID` in its environment (e.g. a
  `strace -c -p $TMUX_PID` of its own);
- combinations with `+` (`pipes+reads2`).

Ratios against `none` in the same run are the result (the machine is
shared and noisy: run each kind twice, alternated).

usage: benches/tmux_reader_cost.py SECONDS KIND[,KIND...] [PANES]
e.g.:  benches/tmux_reader_cost.py 20 none,feed+reads,pipes+reads2,none,feed+reads,pipes+reads2
"""

import os
import subprocess
import sys
import tempfile
import threading
import time

SECONDS = int(sys.argv[1])
KINDS = sys.argv[2].split(",")
PANES = int(sys.argv[3]) if len(sys.argv) > 3 else 200
# A server of its own for each measure (a socket name used again races
# with the server that is still going away).
RUN = iter(range(1_000_000))
TMUX = []
WORK = tempfile.mkdtemp(prefix="reader-cost-")


def tmux(*args):
    return subprocess.run(TMUX + list(args), capture_output=True, text=True).stdout


def start_server():
    """A server of PANES idle panes; its pid and (pane id, tty) pairs."""
    subprocess.run(
        TMUX + ["new-session", "-d", "-s", "main", "-x", "120", "-y", "30", "exec sleep 100000"],
        check=True,
    )
    script = os.path.join(WORK, "panes.tmux")
    with open(script, "w") as f:
        f.write("set-option -g history-limit 2000\n")
        f.write("new-window -d 'exec sleep 100000'\n" * (PANES - 1))
    tmux("source-file", script)
    listed = tmux("list-panes", "-a", "-F", "#{pane_id} #{pane_tty}")
    panes = [line.split() for line in listed.splitlines()]
    return int(tmux("display", "-p", "#{pid}").strip()), panes


def cpu_seconds(pid):
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def print_steadily(panes, stop):
    ttys = [os.open(tty, os.O_WRONLY | os.O_NOCTTY) for _, tty in panes]
    n, started = 0, time.time()
    while not stop.is_set():
        for p, fd in enumerate(ttys):
            lines = (f"{p}:{n + i} build output with a path /usr/lib/x86_64/{n + i} and more\n" for i in range(10))
            os.write(fd, "".join(lines).encode())
        n += 10
        time.sleep(max(0, started + n / 100 - time.time()))
    for fd in ttys:
        os.close(fd)


def fill_history(panes):
    """Every pane's history filled to its limit first, so the measure
    sees the steady state of trims (tmux drops a tenth of the limit at a
    time) rather than histories growing."""
    filler = "".join(f"filler line {i} of the history before the measure\n" for i in range(2_100))
    for _, tty in panes:
        fd = os.open(tty, os.O_WRONLY | os.O_NOCTTY)
        os.write(fd, filler.encode())
        os.close(fd)
    while any(int(size) < 1_700 for size in tmux("list-panes", "-a", "-F", "#{history_size}").split()):
        time.sleep(0.2)


def drain(stream):
    """Reads `stream` to its end, so tmux never waits on this client."""
    while stream.read(65536):
        pass


def read_script(name, panes, every, escapes):
    """A read's script: a listing, then each pane's rows printed since
    (`every` seconds of the load) plus 100; its path."""
    script = os.path.join(WORK, name)
    with open(script, "w") as f:
        f.write("list-panes -a -F '#{pane_id} #{history_size} #{cursor_y} #{pane_width} #{pane_height}'\n")
        for pane, _ in panes:
            f.write(f"capture-pane -p -J{escapes} -S -{100 * every + 100} -t {pane}\n")
    return script


def read_every(panes, stop, every):
    client = subprocess.Popen(
        TMUX + ["-C", "attach", "-f", "no-output,ignore-size"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    threading.Thread(target=drain, args=(client.stdout,), daemon=True).start()
    script = read_script("read.tmux", panes, every, "")
    while not stop.is_set():
        t = time.time()
        client.stdin.write(f"source-file {script}\n".encode())
        client.stdin.flush()
        stop.wait(max(0, t + every - time.time()))
    client.kill()


def sweep_every(panes, stop, every, escapes=""):
    script = read_script("sweep.tmux", panes, every, escapes)
    while not stop.is_set():
        t = time.time()
        subprocess.run(TMUX + ["source-file", script], stdout=subprocess.DEVNULL)
        stop.wait(max(0, t + every - time.time()))


def measure(kind):
    TMUX[:] = ["tmux", "-L", f"reader-cost-{os.getpid()}-{next(RUN)}", "-f", "/dev/null"]
    pid, panes = start_server()
    if os.environ.get("READER_COST_FULL"):
        fill_history(panes)
    parts = kind.split("+")
    stop = threading.Event()
    threads = [threading.Thread(target=print_steadily, args=(panes, stop))]
    feed = None
    daemon = None
    try:
        if "pipes" in parts:
            for pane, _ in panes:
                tmux("pipe-pane", "-O", "-t", pane, "exec cat > /dev/null")
        if "feed" in parts or "offfeed" in parts:
            feed = subprocess.Popen(
                TMUX + ["-C", "attach", "-f", "ignore-size"],
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
            )
        if "offfeed" in parts:
            for pane, _ in panes:
                feed.stdin.write(f"refresh-client -A '{pane}:pause'\n".encode())
                feed.stdin.write(f"refresh-client -A '{pane}:off'\n".encode())
            feed.stdin.flush()
        for part, every in (("reads", 1), ("reads2", 2), ("reads4", 4)):
            if part in parts:
                threads.append(threading.Thread(target=read_every, args=(panes, stop, every)))
        for part, every, escapes in (("sweeps", 1, ""), ("sweeps2", 2, ""), ("sweeps2e", 2, " -e")):
            if part in parts:
                threads.append(
                    threading.Thread(target=sweep_every, args=(panes, stop, every, escapes))
                )
        if "daemon" in parts or "daemontaps" in parts:
            daemon = start_daemon("daemontaps" in parts)
        for t in threads:
            t.start()
        time.sleep(2)
        before, t0 = cpu_seconds(pid), time.time()
        daemon_before = cpu_seconds(daemon.pid) if daemon else 0
        if os.environ.get("READER_COST_HOOK"):
            hook_env = dict(os.environ, TMUX_PID=str(pid), DAEMON_PID=str(daemon.pid if daemon else 0))
            subprocess.Popen(["sh", "-c", os.environ["READER_COST_HOOK"]], env=hook_env)
        step = float(os.environ.get("READER_COST_SERIES", SECONDS))
        last, at = before, t0
        while time.time() - t0 < SECONDS - 0.01:
            time.sleep(min(step, SECONDS - (time.time() - t0)))
            now, now_cpu = time.time(), cpu_seconds(pid)
            if step < SECONDS:
                print(f"  {kind} {now - t0:5.1f} s: tmux {(now_cpu - last) / (now - at) * 100:.1f}%", flush=True)
            last, at = now_cpu, now
        spent = time.time() - t0
        if daemon:
            daemon_cpu = (cpu_seconds(daemon.pid) - daemon_before) / spent * 100
            print(f"{kind}: the daemon {daemon_cpu:.1f}% of a core", flush=True)
        return (cpu_seconds(pid) - before) / spent * 100
    finally:
        if daemon:
            daemon.terminate()
            daemon.wait()
        stop.set()
        for t in threads:
            if t.is_alive():
                t.join()
        if feed:
            feed.kill()
        kill_server()


def start_daemon(taps):
    """A journaling daemon on this measure's server, its directories in
    WORK; once it has read every pane the first time."""
    root = tempfile.mkdtemp(dir=WORK)
    args = [os.environ.get("PANESCAN_BIN", "panescan"), "daemon", "--journal", "--idle-exit", "0"]
    args += ["-L", TMUX[2], "--journal-dir", f"{root}/journal", "--runtime-dir", f"{root}/rt"]
    env = {k: v for k, v in os.environ.items() if k not in ("TMUX", "TMUX_PANE")}
    daemon = subprocess.Popen(args + (["--journal-taps"] if taps else []), env=env,
                              stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
    while not os.path.exists(f"{root}/rt/panescan.sock"):
        time.sleep(0.02)
    time.sleep(1)
    return daemon


def kill_server():
    """Kills the server of this measure and removes its socket."""
    socket = tmux("display", "-p", "#{socket_path}").strip()
    subprocess.run(TMUX + ["kill-server"], capture_output=True)
    if socket:
        subprocess.run(["rm", "-f", socket])


try:
    for kind in KINDS:
        print(f"{kind}: tmux {measure(kind):.1f}% of a core", flush=True)
finally:
    if TMUX:
        kill_server()
    subprocess.run(["rm", "-rf", WORK])
