#!/usr/bin/env python3
"""A policy's `ask` through the official Python MCP SDK's elicitation callback.

Starts a private tmux server whose pane %0 is a raw `cat > FILE` sink,
runs `panescan serve --tier mutating --policy P` on it (P asks before any
send_keys of `deploy...`) through the SDK's stdio client with an
elicitation callback, and checks: the question names the tool, pane and
exact text with a one-field approve form; an approval runs the call once;
a decline refuses it; what reached the pane is exactly the approved text.
The tmux server is killed at the end, also on failure.

usage: elicit.py --bin PANESCAN [--mode legacy|auto] [--http]
(--http: over Streamable HTTP, serve --http with a bearer token: the
question comes on the session's GET stream, or the call's own, and the
answer is POSTed back; 2026-07-28 rides on the call as over stdio)
Exit 0 when every check passed.
"""

import argparse
import importlib.metadata
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import anyio
import mcp.types as types
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

POLICY = '[[ask]]\ntools = ["send_keys"]\ncommand = "^deploy"\n'


def start_http(ns, args, env, tmp):
    """serve --http on a free loopback port with a fresh token file: the
    SDK's Streamable HTTP transport, and the server (stopped by the caller)."""
    tokens = Path(tmp) / "tokens"
    proc = subprocess.Popen([ns.bin, *args, "--http", "127.0.0.1:0", "--token-file", str(tokens)],
                            env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    url = None
    for line in proc.stderr:
        if "MCP over HTTP at " in line:
            url = line.split("MCP over HTTP at ", 1)[1].strip()
            break
    if url is None:
        proc.kill()
        raise RuntimeError("serve --http did not say where it listens")
    threading.Thread(target=lambda: [None for _ in proc.stderr], daemon=True).start()
    token = tokens.read_text().split()[-1]
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
    return streamable_http_client(url, http_client=http), proc


async def run(ns, sink, policy, failed):
    env = {k: v for k, v in os.environ.items() if k in ("HOME", "PATH", "TMUX_TMPDIR", "LANG", "LC_ALL")}
    args = ["serve", "--socket-name", ns.socket, "--tier", "mutating", "--policy", str(policy)]
    proc = None
    if ns.http:
        env.update({k: v for k, v in os.environ.items() if k.startswith("PANESCAN_")})
        params, proc = start_http(ns, args, env, policy.parent)
    else:
        params = StdioServerParameters(command=ns.bin, args=args, env=env)
    try:
        await session(ns, sink, params, failed)
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait(10)


async def session(ns, sink, params, failed):
    asked = []
    answers = ["accept", "decline"]

    async def on_elicit(context, p):
        asked.append(p)
        action = answers.pop(0)
        content = {"approve": True} if action == "accept" else None
        return types.ElicitResult(action=action, content=content)

    def check(ok, what):
        if not ok:
            failed.append(what)

    async with Client(params, mode=ns.mode, read_timeout_seconds=60, raise_exceptions=True,
                      elicitation_callback=on_elicit) as client:
        want = "2025-11-25" if ns.mode == "legacy" else "2026-07-28"
        check(client.protocol_version == want, f"negotiates {want}: {client.protocol_version}")
        # 2025-11-25: the call is held while the person is asked
        # (elicitation/create); 2026-07-28: the server answers with an input
        # request and the SDK calls again with the answer.
        call = {"pane_id": "%0", "text": "deploy --prod", "enter": True}
        approved = await client.call_tool("send_keys", call)
        check(not approved.is_error, f"approved call runs: {approved}")
        check(len(asked) == 1, f"one question per call: {len(asked)}")
        if asked:
            msg = asked[0].message
            for part in ("send_keys", "%0", '"deploy --prod"'):
                check(part in msg, f"question names {part}: {msg}")
            schema = asked[0].requested_schema
            if hasattr(schema, "model_dump"):
                schema = schema.model_dump(by_alias=True, exclude_none=True)
            check(schema.get("required") == ["approve"], f"one approve field: {schema}")
        declined = await client.call_tool("send_keys", call)
        text = " ".join(getattr(c, "text", "") for c in declined.content)
        check(declined.is_error and text.startswith("refused"), f"declined call refused: {text}")
    # A mark typed through tmux itself after both calls: tmux keeps a
    # pane's input in order, so once the mark is there, whatever the calls
    # typed is there too (waiting for the approved text alone passed while
    # a declined call's text was still on its way).
    mark = b"<end-of-calls>"
    subprocess.run(["tmux", "-L", ns.socket, "send-keys", "-t", "%0", "-l", mark.decode()],
                   check=True)
    deadline = time.time() + 10
    while time.time() < deadline and not sink.read_bytes().endswith(mark):
        await anyio.sleep(0.05)
    got = sink.read_bytes()
    check(got == b"deploy --prod\r" + mark, f"only the approved text reached the pane: {got!r}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--mode", choices=["legacy", "auto"], default="legacy")
    ap.add_argument("--http", action="store_true", help="over Streamable HTTP (serve --http, a bearer token)")
    ns = ap.parse_args()
    ns.socket = f"panescan-interop-elicit-{os.getpid()}"
    failed = []
    with tempfile.TemporaryDirectory() as tmp:
        sink, policy = Path(tmp) / "typed", Path(tmp) / "policy.toml"
        policy.write_text(POLICY)
        sink.write_bytes(b"")
        t = ["tmux", "-L", ns.socket, "-f", "/dev/null"]
        try:
            subprocess.run(t + ["new-session", "-d", "-s", "main", "-x", "80", "-y", "24",
                                f"stty raw -echo; exec cat > {sink}"], check=True)
            deadline = time.time() + 10
            while time.time() < deadline:
                cur = subprocess.run(t + ["display", "-p", "-t", "%0", "#{pane_current_command}"],
                                     capture_output=True, text=True).stdout.strip()
                if cur == "cat":
                    break
                time.sleep(0.05)
            anyio.run(run, ns, sink, policy, failed)
        except Exception as e:  # a failed session is a failed check, not a traceback
            failed.append(f"the session completes: {e!r}")
        finally:
            subprocess.run(t + ["kill-server"], capture_output=True)
    for f in failed:
        print(f"  FAIL {f[:400]}")
    print(f"python mcp {importlib.metadata.version('mcp')} --mode {ns.mode}{' --http' if ns.http else ''} elicitation: "
          f"{'ok' if not failed else f'{len(failed)} failed'}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
