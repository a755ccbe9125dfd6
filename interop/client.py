#!/usr/bin/env python3
"""panescan through the official Python MCP SDK (PyPI `mcp`).

Starts a private tmux server (tmux_fixture.sh), runs `panescan serve` on it
through the SDK's stdio client, and checks what a real client relies on:
the negotiated protocol era, tools/list (every schema valid JSON Schema
2020-12), every read tool called as calls.json says with structuredContent
validated against outputSchema by jsonschema, invalid calls and the error
each gives, progress, cancelling a search that cannot finish, prompts, and
resources (list, templates, read, a subscription that sees a pane print). The tmux server is killed at
the end, also on failure or a signal.

usage: client.py --mode legacy|auto --expect-protocol VERSION --bin PANESCAN
Exit 0 when every check passed; prints one line per failure and a summary.
"""

import argparse
import importlib.metadata
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from pathlib import Path

import anyio
import jsonschema
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError

HERE = Path(__file__).resolve().parent


class Checks:
    """Counts checks; remembers what failed."""

    def __init__(self):
        self.passed = 0
        self.failed: list[str] = []

    def check(self, ok, what, detail=None):
        if ok:
            self.passed += 1
        else:
            self.failed.append(what if detail is None else f"{what}: {str(detail)[:400]}")
        return ok


def schema_problems(schema):
    try:
        jsonschema.Draft202012Validator.check_schema(schema)
        return None
    except jsonschema.SchemaError as e:
        return e.message


async def check_listing(client, c, spec):
    tools, cursor = [], None
    for _ in range(100):
        page = await client.list_tools(cursor=cursor, cache_mode="bypass")
        tools.extend(page.tools)
        cursor = page.next_cursor
        if cursor is None:
            break
    names = [t.name for t in tools]
    # A tool that only answers an error here (the command ledger without a
    # journaling daemon) is covered by its entry in errors.
    wanted = {call["tool"] for call in spec["calls"]} | {
        bad["tool"] for bad in spec["errors"] if "tool_error" in bad}
    c.check(set(names) == wanted, "tools/list names exactly the read tools calls.json covers",
            sorted(set(names) ^ wanted))
    c.check(len(set(names)) == len(names), "tool names are unique")
    by_name = {}
    for t in tools:
        d = t.model_dump(by_alias=True, exclude_none=True)
        by_name[t.name] = d
        c.check(bool(d.get("description")), f"{t.name}: has a description")
        for key in ("inputSchema", "outputSchema"):
            schema = d.get(key)
            c.check(isinstance(schema, dict) and schema.get("type") == "object",
                    f"{t.name}: {key} is an object schema")
            problem = schema_problems(schema) if isinstance(schema, dict) else "missing"
            c.check(problem is None, f"{t.name}: {key} is valid JSON Schema 2020-12", problem)
        c.check((d.get("annotations") or {}).get("readOnlyHint") is True,
                f"{t.name}: annotations.readOnlyHint is true")
    return by_name


async def check_other_listings(client, c):
    """Resources and prompts, when the server offers them."""
    caps = client.server_capabilities
    if caps.resources is not None:
        res = await client.list_resources()
        c.check(isinstance(res.resources, list), "resources/list answers a list")
    if caps.prompts is not None:
        res = await client.list_prompts()
        c.check(isinstance(res.prompts, list), "prompts/list answers a list")


def tmux(ns, *args):
    """Runs tmux on the run's private server; its stdout."""
    out = subprocess.run(["tmux", "-L", ns.socket, "-f", "/dev/null", *args],
                         check=True, capture_output=True, text=True)
    return out.stdout.strip()


def notification_of(message):
    """(method, params) of an incoming notification, else (None, None)."""
    m = getattr(message, "root", message)
    method = getattr(m, "method", None)
    return method, getattr(m, "params", None)


async def check_resources(client, c, ns, notes):
    """Resources: list (every page), templates, read JSON and text, a
    malformed URI, then a subscription that sees a pane print: through
    resources/subscribe (handshake era) or subscriptions/listen
    (2026-07-28). Runs last: it adds a window to the fixture."""
    uris, cursor = [], None
    for _ in range(100):
        page = await client.list_resources(cursor=cursor, cache_mode="bypass")
        uris.extend(str(r.uri) for r in page.resources)
        cursor = page.next_cursor
        if cursor is None:
            break
    panes = tmux(ns, "list-panes", "-a", "-F", "#{pane_id}").split()
    c.check(uris == ["tmux://sessions"] + [f"tmux://pane/{p[1:]}/screen" for p in panes],
            "resources/list names tmux://sessions and every pane's screen", uris)
    templates = await client.list_resource_templates(cache_mode="bypass")
    c.check(len(templates.resource_templates) == 6, "resources/templates/list gives 6 templates",
            [t.uri_template for t in templates.resource_templates])
    res = await client.read_resource("tmux://sessions", cache_mode="bypass")
    body = json.loads(res.contents[0].text)
    c.check([s["session_name"] for s in body["sessions"]] == ["main"], "tmux://sessions reads as JSON", body)
    res = await client.read_resource(f"tmux://pane/{panes[1][1:]}/history?lines=3", cache_mode="bypass")
    c.check(res.contents[0].text.rstrip("\n").endswith("interop history line 60000"),
            "a pane's history reads as text", res.contents[0].text[-200:])
    try:
        await client.read_resource("tmux://pane/%1;kill-server/screen", cache_mode="bypass")
        c.check(False, "a malformed URI is an error")
    except MCPError as e:
        c.check(e.error.code == -32602 and "tmux://pane/{pane_number}/screen" in e.error.message,
                "a malformed URI is error -32602 naming the forms", e.error.message)
    pane = tmux(ns, "new-window", "-d", "-P", "-F", "#{pane_id}", "cat")
    uri = f"tmux://pane/{pane[1:]}/screen"

    def type_text():
        tmux(ns, "send-keys", "-t", pane, "-l", "hello resource")
        tmux(ns, "send-keys", "-t", pane, "Enter")

    if ns.mode == "legacy":
        # The SDK warns that 2026-07-28 removed these; this is the 2025-11-25 run.
        warnings.simplefilter("ignore", MCPDeprecationWarning)
        await client.subscribe_resource(uri)
        type_text()
        with anyio.move_on_after(10):
            while ("notifications/resources/updated", uri) not in notes:
                await anyio.sleep(0.02)
        c.check(("notifications/resources/updated", uri) in notes,
                "resources/subscribe: an update arrives when the pane prints", notes[-5:])
        await client.unsubscribe_resource(uri)
    else:
        from mcp.client.subscriptions import ResourceUpdated
        got = []
        async with client.listen(resource_subscriptions=[uri]) as sub:
            c.check(list(sub.honored.resource_subscriptions or []) == [uri],
                    "subscriptions/listen acknowledges the URI", sub.honored)
            type_text()
            with anyio.move_on_after(10):
                async for event in sub:
                    got.append(event)
                    if event == ResourceUpdated(uri=uri):
                        break
        c.check(ResourceUpdated(uri=uri) in got, "subscriptions/listen: an update arrives when the pane prints", got)
    res = await client.read_resource(uri, cache_mode="bypass")
    c.check("hello resource" in res.contents[0].text, "the updated screen holds what was printed",
            res.contents[0].text[:200])


async def check_prompts(client, c):
    listed = await client.list_prompts()
    names = [p.name for p in listed.prompts]
    c.check(names == ["run_and_wait", "diagnose_failing_pane", "triage_panes", "interrupt_gracefully",
                      "build_dev_workspace"], "prompts/list names the five prompts", names)
    got = await client.get_prompt("run_and_wait", {"pane_id": "%1", "command": "make test"})
    text = got.messages[0].content.text
    c.check("run_command" in text and "wait_for_command" in text and "make test" in text,
            "prompts/get fills run_and_wait naming the tools", text[:300])
    try:
        await client.get_prompt("run_and_wait", {"pane_id": "%1"})
        c.check(False, "a missing prompt argument is an error")
    except MCPError as e:
        c.check(e.error.code == -32602 and '"command"' in e.error.message,
                "a missing prompt argument is error -32602 naming it", e.error.message)


async def check_calls(client, c, spec, by_name):
    for call in spec["calls"]:
        name, args = call["tool"], call["args"]
        label = f"{name} {json.dumps(args)[:80]}"
        try:
            res = await client.call_tool(name, args)
        except MCPError as e:
            c.check(False, f"{label}: answers", repr(e))
            continue
        d = res.model_dump(by_alias=True, exclude_none=True)
        text = " ".join(x.get("text", "") for x in d.get("content", []))
        if not c.check(not d.get("isError"), f"{label}: succeeds", text):
            continue
        sc = d.get("structuredContent")
        if not c.check(isinstance(sc, dict), f"{label}: has structuredContent"):
            continue
        validator = jsonschema.Draft202012Validator(by_name[name]["outputSchema"])
        errors = [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(sc)]
        c.check(not errors, f"{label}: structuredContent validates against outputSchema", errors[:3])
        c.check(call["contains"] in json.dumps(sc), f"{label}: result holds {call['contains']!r}")


async def check_errors(client, c, spec):
    for bad in spec["errors"]:
        name, args = bad["tool"], bad["args"]
        label = f"{name} {json.dumps(args)[:80]}"
        try:
            res = await client.call_tool(name, args)
        except MCPError as e:
            want = bad.get("rpc_error")
            c.check(want is not None and e.error.code == want,
                    f"{label}: JSON-RPC error {want}", f"got {e.error.code} {e.error.message}")
            continue
        d = res.model_dump(by_alias=True, exclude_none=True)
        text = " ".join(x.get("text", "") for x in d.get("content", []) if x.get("type") == "text")
        if "rpc_error" in bad:
            c.check(False, f"{label}: JSON-RPC error {bad['rpc_error']}", d)
            continue
        c.check(d.get("isError") is True, f"{label}: isError is true", d)
        c.check("structuredContent" not in d, f"{label}: an error carries no structuredContent")
        c.check(bad["tool_error"] in text, f"{label}: the error names {bad['tool_error']!r}", text)


async def check_progress(client, c, spec):
    seen = []

    async def on_progress(progress, total, message):
        seen.append((progress, total, message))

    p = spec["progress"]
    res = await client.call_tool(p["tool"], p["args"], progress_callback=on_progress)
    c.check(not res.is_error, "progress call succeeds")
    c.check(len(seen) > 0, f"{p['tool']} sends progress notifications")
    c.check(all(b[0] > a[0] for a, b in zip(seen, seen[1:])), "progress strictly increases", seen)
    c.check(all(t is None or pr <= t for pr, t, _ in seen), "progress never passes total", seen)


async def check_cancel(client, c, spec, fixture):
    """Cancels a search that cannot finish: its tmux server is frozen
    (SIGSTOP) first. The call ends cancelled, and once tmux goes on the
    server answers the same search normally."""
    q = spec["cancel"]
    outcome = {}

    async def search(scope):
        with scope:
            outcome["result"] = await client.call_tool(q["tool"], q["args"])

    scope = anyio.CancelScope()
    fixture("freeze")
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(search, scope)
            # The SDK exposes no "request written" event; a moment lets the
            # request reach the server. Were it not there yet, the checks
            # below still hold (they would test less, never pass wrongly).
            await anyio.sleep(0.2)
            scope.cancel()
    finally:
        fixture("thaw")
    c.check(scope.cancelled_caught and "result" not in outcome,
            "a search cancelled while tmux is frozen ends cancelled, without a result")
    res = await client.call_tool(q["tool"], q["args"])
    c.check(not res.is_error and (res.structured_content or {}).get("panes_searched", 0) > 0,
            "the server answers the same search after the cancel")


def start_http(ns, env):
    """`panescan serve --http` on a free loopback port with a fresh token
    file: the SDK's Streamable HTTP transport with the Authorization header,
    and the server process (stopped by the caller)."""
    token_file = Path(tempfile.mkdtemp(prefix="panescan-interop-")) / "tokens"
    proc = subprocess.Popen(
        [ns.bin, "serve", "--socket-name", ns.socket, "--http", "127.0.0.1:0", "--token-file", str(token_file)],
        env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    url = None
    for line in proc.stderr:
        if "MCP over HTTP at " in line:
            url = line.split("MCP over HTTP at ", 1)[1].strip()
            break
    if url is None:
        raise RuntimeError("serve --http did not say where it listens")
    threading.Thread(target=lambda: [None for _ in proc.stderr], daemon=True).start()
    token = token_file.read_text().split()[-1]
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
    return streamable_http_client(url, http_client=http), proc


async def run(ns, c, spec, fixture):
    # The SDK passes only a few variables on; the server must find the
    # fixture's socket where tmux put it.
    env = {k: v for k, v in os.environ.items() if k in ("HOME", "PATH", "TMUX_TMPDIR", "LANG", "LC_ALL")}
    proc = None
    if ns.http:
        env.update({k: v for k, v in os.environ.items() if k.startswith("PANESCAN_")})
        params, proc = start_http(ns, env)
    else:
        params = StdioServerParameters(command=ns.bin, args=["serve", "--socket-name", ns.socket], env=env)
    try:
        return await run_client(ns, c, spec, fixture, params)
    finally:
        if proc is not None:
            proc.terminate()
            proc.wait(10)


async def run_client(ns, c, spec, fixture, params):
    notes = []

    async def on_message(message):
        method, p = notification_of(message)
        if method is not None:
            notes.append((method, str(getattr(p, "uri", "")) or None))

    t0 = time.perf_counter()
    async with Client(params, mode=ns.mode, read_timeout_seconds=60, raise_exceptions=True,
                      message_handler=on_message) as client:
        connect_ms = (time.perf_counter() - t0) * 1000
        c.check(client.protocol_version == ns.expect_protocol,
                f"negotiates protocol {ns.expect_protocol}", client.protocol_version)
        info = client.server_info
        c.check(info is not None and info.name == "panescan", "server names itself panescan", info)
        c.check(client.server_capabilities.tools is not None, "server declares tools")
        by_name = await check_listing(client, c, spec)
        await check_other_listings(client, c)
        await check_calls(client, c, spec, by_name)
        await check_errors(client, c, spec)
        await check_progress(client, c, spec)
        await check_cancel(client, c, spec, fixture)
        await check_prompts(client, c)
        await check_resources(client, c, ns, notes)
        return client.protocol_version, connect_ms


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mode", choices=["legacy", "auto"], required=True)
    ap.add_argument("--expect-protocol", required=True)
    ap.add_argument("--bin", required=True)
    ap.add_argument("--http", action="store_true",
                    help="over Streamable HTTP (serve --http, a bearer token) instead of stdio")
    ns = ap.parse_args()
    ns.socket = f"panescan-interop-py-{ns.mode}-{os.getpid()}"
    spec = json.loads((HERE / "calls.json").read_text())
    script = str(HERE / "tmux_fixture.sh")

    def fixture(what, check=True):
        subprocess.run([script, what, ns.socket], check=check)

    c = Checks()
    # A signal ends the run through the `finally` below, which kills tmux.
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, lambda *_: sys.exit(1))
    protocol, connect_ms = "-", 0.0
    try:
        fixture("up")
        protocol, connect_ms = anyio.run(run, ns, c, spec, fixture)
    except Exception as e:  # a failed connection is a failed check, not a traceback
        c.check(False, "the session completes", repr(e))
    finally:
        fixture("down", check=False)
    for f in c.failed:
        print(f"  FAIL {f}")
    sdk = f"mcp {importlib.metadata.version('mcp')}"
    print(f"python {sdk} --mode {ns.mode}{' --http' if ns.http else ''}: protocol {protocol}, connect {connect_ms:.0f} ms, "
          f"{c.passed} passed, {len(c.failed)} failed")
    sys.exit(1 if c.failed else 0)


if __name__ == "__main__":
    main()
