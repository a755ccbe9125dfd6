#!/usr/bin/env python3
"""What the daemon saves a new session, measured on the real binary.

On a private tmux server of PANES panes x LINES lines of history and a
private runtime directory:

- a deep search (every line, a pattern found nowhere) in the first session
  of a fresh in-process serve (`--no-daemon`: cold), in the first session
  of a daemon (cold), and in a second session of that daemon (warm: served
  from the pane text the first session fetched);
- serve start to the `initialize` answer: in-process, and through a
  running daemon (the median of RUNS).

Ratios within one run are the result; the absolute times depend on the
machine. The daemon's counters (`panescan status`) say whether the warm
search fetched any pane whole.

usage: benches/daemon_sessions.py PANESCAN [PANES] [LINES] [RUNS]
"""

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

BIN = sys.argv[1]
PANES = int(sys.argv[2]) if len(sys.argv) > 2 else 200
LINES = int(sys.argv[3]) if len(sys.argv) > 3 else 2000
RUNS = int(sys.argv[4]) if len(sys.argv) > 4 else 10
SOCK = f"panescan-bench-daemon-{os.getpid()}"
RT = tempfile.mkdtemp(prefix="panescan-bench-rt-")
os.rmdir(RT)  # the daemon makes it, 0700


def tmux(*args):
    subprocess.run(["tmux", "-L", SOCK, *args], check=True, capture_output=True)


def serve(*extra):
    env = dict(os.environ, PANESCAN_RUNTIME_DIR=RT)
    env.pop("TMUX", None)
    env.pop("PANESCAN_NO_DAEMON", None)
    return subprocess.Popen(
        [BIN, "serve", "--socket-name", SOCK, *extra],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
    )


def ask(p, id_, method, params):
    line = json.dumps({"jsonrpc": "2.0", "id": id_, "method": method, "params": params})
    p.stdin.write(line.encode() + b"\n")
    p.stdin.flush()
    while True:
        msg = json.loads(p.stdout.readline())
        if msg.get("id") == id_:
            return msg


INIT = {"protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "bench", "version": "0"}}
SEARCH = {"name": "search_panes",
          "arguments": {"pattern": "found nowhere at all", "scrollback_lines": LINES,
                        "max_scan_bytes": 1 << 34}}


def first_search(*extra):
    p = serve(*extra)
    ask(p, 1, "initialize", INIT)
    t = time.perf_counter()
    r = ask(p, 2, "tools/call", SEARCH)
    took = time.perf_counter() - t
    assert not r["result"].get("isError"), r
    p.stdin.close()
    p.wait()
    return took


def to_initialize(*extra):
    t = time.perf_counter()
    p = serve(*extra)
    ask(p, 1, "initialize", INIT)
    took = time.perf_counter() - t
    p.stdin.close()
    p.wait()
    return took


def status():
    out = subprocess.run([BIN, "status", "--runtime-dir", RT], capture_output=True, check=True)
    return json.loads(out.stdout)


try:
    tmux("-f", "/dev/null", "new-session", "-d", "-s", "main", "-x", "80", "-y", "24")
    tmux("set", "-g", "history-limit", str(LINES + 100))
    fill = f"seq -f 'bench pane text, line %g of the history' 1 {LINES}; sleep 100000"
    tmux("respawn-pane", "-k", "-t", "main", fill)
    for _ in range(PANES - 1):
        tmux("new-window", "-d", fill)
    time.sleep(2 + PANES * LINES / 400_000)
    in_process = first_search("--no-daemon")
    cold = first_search()
    before = status()
    warm = first_search()
    after = status()
    init_here = statistics.median(to_initialize("--no-daemon") for _ in range(RUNS))
    to_initialize()
    init_daemon = statistics.median(to_initialize() for _ in range(RUNS))
    print(f"{PANES} panes x {LINES} lines, deep search, first call of a session:")
    print(f"  in-process (--no-daemon), cold: {in_process * 1000:8.1f} ms")
    print(f"  daemon, first session (cold):   {cold * 1000:8.1f} ms")
    print(f"  daemon, second session (warm):  {warm * 1000:8.1f} ms"
          f"  = {warm / cold:.2f}x cold")
    print(f"  panes fetched whole by the warm search: {after['cache_full'] - before['cache_full']}"
          f" (reused {after['cache_reused'] - before['cache_reused']},"
          f" delta {after['cache_delta'] - before['cache_delta']})")
    print(f"serve start to initialize answer (median of {RUNS}):")
    print(f"  in-process: {init_here * 1000:6.1f} ms, through a running daemon:"
          f" {init_daemon * 1000:6.1f} ms")
    print(f"daemon RSS {after['rss_bytes'] >> 20} MiB, cache {after['cache_bytes'] >> 20} MiB")
finally:
    subprocess.run([BIN, "stop", "--runtime-dir", RT], capture_output=True)
    subprocess.run(["tmux", "-L", SOCK, "kill-server"], capture_output=True)
    time.sleep(0.3)
    shutil.rmtree(RT, ignore_errors=True)
