#!/usr/bin/env python3
"""Every tier's tools/list through the model providers' schema converters.

Agents reach MCP tools through a framework that turns each inputSchema
into a provider's function-calling dialect. This runs the real converters,
pinned in requirements.txt, over what `panescan serve --tier T` lists:

  openai-agents   MCPUtil.to_function_tool(..., convert_schemas_to_strict=True):
                  a tool that falls back to non-strict is a finding, and so
                  is an argument that was optional and whose strict schema
                  (every property required) refuses null: a strict model
                  would have to invent a value for it
  pydantic-ai     OpenAIJsonSchemaTransformer(strict=True), which must not
                  raise nor drop a constraint; GoogleJsonSchemaTransformer
                  and GoogleOpenAPISchemaTransformer, whose output must be a
                  valid google-genai Schema
  google-genai    Schema.from_json_schema on the inputSchema as listed

With --calls SOCKET it also calls read tools (through openai-agents' MCP
client) in the shape a strict model sends: every argument present, null for
each one it means to leave out; each call must succeed.

With --sizes it prints the bytes of each tier's tools/list response and
which of them are input schemas, descriptions and output schemas (plain
python3 will do: nothing to install).

usage: convert.py --bin PANESCAN [--tier T]... [--calls SOCKET] [--sizes]
Exit 0 when no converter found anything; the last line counts the checks.
"""
import argparse
import asyncio
import copy
import json
import logging
import os
import subprocess
import sys

TIERS = ["readonly", "mutating", "destructive"]
UNUSED_SOCKET = "panescan-interop-unused"

passed = 0
failed = 0


def result(ok, what, findings):
    global passed, failed
    if ok:
        passed += 1
    else:
        failed += 1
    print(f"{what}: {'ok' if ok else 'FAILED'}, {len(findings)} findings")
    for f in sorted(findings, key=lambda f: "falls back" not in f)[:40]:
        print(f"  {f}")


def rpc_lines(bin_path, tier, socket=UNUSED_SOCKET):
    """The tools/list response lines of one tier, raw, every page."""
    proc = subprocess.Popen(
        [bin_path, "serve", "--tier", tier, "--socket-name", socket],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
    )
    def send(obj):
        proc.stdin.write((json.dumps(obj) + "\n").encode())
        proc.stdin.flush()
    def answer(want_id):
        while True:
            line = proc.stdout.readline()
            if not line:
                raise RuntimeError(f"panescan --tier {tier} closed stdout")
            msg = json.loads(line)
            if msg.get("id") == want_id:
                return line, msg
    send({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "convert.py", "version": "1"}}})
    answer(0)
    send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    lines, cursor, rid = [], None, 1
    while True:
        send({"jsonrpc": "2.0", "id": rid, "method": "tools/list",
              "params": {"cursor": cursor} if cursor else {}})
        line, msg = answer(rid)
        lines.append(line)
        cursor = msg["result"].get("nextCursor")
        rid += 1
        if not cursor or rid > 50:
            break
    proc.stdin.close()
    proc.wait(timeout=10)
    return lines


def tools_of(lines):
    return [t for line in lines for t in json.loads(line)["result"]["tools"]]


def compact(v):
    return len(json.dumps(v, separators=(",", ":"), ensure_ascii=False).encode())


def sizes(bin_path, tiers):
    for tier in tiers:
        lines = rpc_lines(bin_path, tier)
        tools = tools_of(lines)
        total = sum(len(l.rstrip(b"\n")) for l in lines)
        inp = sum(compact(t["inputSchema"]) for t in tools)
        desc = sum(compact(t.get("description", "")) for t in tools)
        out = sum(compact(t.get("outputSchema", {})) for t in tools)
        print(f"tools/list --tier {tier}: {len(tools)} tools, {total} B "
              f"(input schemas {inp} B, descriptions {desc} B, output schemas {out} B, "
              f"the rest {total - inp - desc - out} B)")


# ---- openai-agents -------------------------------------------------------

def optional_paths(schema, path=""):
    """The path of every property not in its object's `required`, at any
    depth (`a.b`, `a[]` for items, `a|0` for an anyOf branch)."""
    props = schema.get("properties") or {}
    required = set(schema.get("required") or [])
    for name, sub in props.items():
        here = f"{path}.{name}" if path else name
        if name not in required:
            yield here
        yield from optional_paths(sub, here)
    if isinstance(schema.get("items"), dict):
        yield from optional_paths(schema["items"], f"{path}[]")
    for key in ("anyOf", "oneOf"):
        for i, branch in enumerate(schema.get(key) or []):
            if isinstance(branch, dict):
                yield from optional_paths(branch, f"{path}|{i}")


def accepts_null(schema):
    import jsonschema

    try:
        jsonschema.Draft202012Validator(schema).validate(None)
        return True
    except jsonschema.ValidationError:
        return False


def strict_findings(tool, function_tool):
    found = []
    if not function_tool.strict_json_schema:
        found.append(f"{tool.name}: falls back to non-strict")
        return found
    strict = function_tool.params_json_schema
    original = tool.input_schema
    for path in optional_paths(original):
        # The same property in the strict schema, found by walking the path.
        sub = property_at(strict, path)
        if sub is not None and not accepts_null(sub):
            found.append(f"{tool.name}.{path}: optional, and its strict schema refuses null: "
                         "a strict model must send a value")
    return found


def property_at(schema, path):
    node = schema
    for part in path.replace("[]", ".[]").replace("|", ".|").split("."):
        if not part:
            continue
        if part == "[]":
            node = node.get("items") or {}
        elif part.startswith("|"):
            branches = node.get("anyOf") or node.get("oneOf") or []
            i = int(part[1:])
            node = branches[i] if i < len(branches) else {}
        else:
            node = (node.get("properties") or {}).get(part)
            if node is None:
                return None
    return node


async def openai_agents(bin_path, tier, socket, calls):
    from agents.mcp import MCPServerStdio, MCPUtil

    server = MCPServerStdio(
        params={"command": bin_path, "args": ["serve", "--tier", tier, "--socket-name", socket],
                "env": dict(os.environ)},
        cache_tools_list=False, client_session_timeout_seconds=30,
    )
    findings = []
    async with server:
        tools = await server.list_tools()
        converted = {}
        for tool in tools:
            ft = MCPUtil.to_function_tool(tool, server, True)
            converted[tool.name] = (tool, ft)
            findings += strict_findings(tool, ft)
        result(not findings, f"openai-agents strict --tier {tier} ({len(tools)} tools)", findings)
        if calls is not None:
            await strict_calls(server, converted, calls)


def strict_args(strict_schema, given):
    """Every property present: the call's own value, else null. An object
    where the schema takes a string (filters) is sent as its JSON text."""
    args = {}
    for name, prop in (strict_schema.get("properties") or {}).items():
        value = given.get(name)
        if isinstance(value, (dict, list)) and takes_string_only(prop):
            value = json.dumps(value)
        args[name] = value
    return args


def takes_string_only(prop):
    types = {b.get("type") for b in prop.get("anyOf", [prop])} - {"null"}
    return types == {"string"}


async def strict_calls(server, converted, calls):
    import jsonschema

    findings = []
    done = set()
    for call in calls:
        name = call["tool"]
        if name in done or name not in converted or name in ("wait_for_text", "watch_panes"):
            continue
        done.add(name)
        tool, ft = converted[name]
        args = strict_args(ft.params_json_schema, call["args"])
        if name == "call_read_tools_batch":
            args["operations"] = [
                {"tool": "list_sessions", "arguments": None},
                {"tool": "get_pane_info", "arguments": json.dumps({"pane_id": "%0"})},
            ]
        try:
            jsonschema.Draft202012Validator(ft.params_json_schema).validate(args)
        except jsonschema.ValidationError as e:
            findings.append(f"{name}: the strict shape does not validate against its strict schema: {e.message}")
            continue
        res = await server.call_tool(name, args)
        if res.is_error:
            text = " ".join(c.text for c in res.content if getattr(c, "text", None))
            findings.append(f"{name} {json.dumps(args)}: {text[:300]}")
    result(not findings, f"openai-agents strict calls, null for absent ({len(done)} tools)", findings)


# ---- pydantic-ai ---------------------------------------------------------

def pydantic_ai(tier, tools):
    from google.genai import types as gtypes
    from pydantic_ai.profiles.google import GoogleJsonSchemaTransformer, GoogleOpenAPISchemaTransformer
    from pydantic_ai.profiles.openai import OpenAIJsonSchemaTransformer

    findings = []
    for tool in tools:
        schema = tool["inputSchema"]
        t = OpenAIJsonSchemaTransformer(copy.deepcopy(schema), strict=True)
        try:
            out = t.walk()
            dropped = dropped_constraints(out)
            if dropped:
                findings.append(f"{tool['name']}: strict drops {', '.join(dropped)}")
        except Exception as e:  # noqa: BLE001 - any refusal is the finding
            findings.append(f"{tool['name']}: {type(e).__name__}: {e}")
    result(not findings, f"pydantic-ai OpenAIJsonSchemaTransformer strict --tier {tier}", findings)

    findings = []
    for tool in tools:
        for cls in (GoogleJsonSchemaTransformer, GoogleOpenAPISchemaTransformer):
            try:
                out = cls(copy.deepcopy(tool["inputSchema"])).walk()
                if cls is GoogleOpenAPISchemaTransformer:
                    gtypes.Schema.model_validate(out)
            except Exception as e:  # noqa: BLE001
                findings.append(f"{tool['name']} {cls.__name__}: {type(e).__name__}: {str(e)[:300]}")
    result(not findings, f"pydantic-ai Google transformers --tier {tier}", findings)


def dropped_constraints(schema, path=""):
    """pydantic-ai's strict mode moves what OpenAI cannot enforce into the
    description as `(key=value)`; each such note is a constraint lost."""
    from pydantic_ai.profiles.openai import _STRICT_INCOMPATIBLE_KEYS
    out = []
    if isinstance(schema, dict):
        desc = schema.get("description") or ""
        for key in _STRICT_INCOMPATIBLE_KEYS + ["format"]:
            if f"{key}=" in desc and f"({key}=" in desc or desc.startswith(f"{key}="):
                out.append(f"{path or '/'} {key}")
        for k, v in schema.items():
            if k in ("properties",) and isinstance(v, dict):
                for n, s in v.items():
                    out += dropped_constraints(s, f"{path}.{n}")
            elif isinstance(v, (dict, list)) and k != "enum":
                out += dropped_constraints(v, f"{path}.{k}")
    elif isinstance(schema, list):
        for i, s in enumerate(schema):
            out += dropped_constraints(s, f"{path}[{i}]")
    return out


# ---- google-genai --------------------------------------------------------

def google_genai(tier, tools):
    from google.genai import types as gtypes

    findings = []
    for tool in tools:
        try:
            gtypes.Schema.from_json_schema(
                json_schema=gtypes.JSONSchema.model_validate(tool["inputSchema"]),
                api_option="GEMINI_API",
            )
        except Exception as e:  # noqa: BLE001
            findings.append(f"{tool['name']}: {type(e).__name__}: {first_lines(str(e))}")
    result(not findings, f"google-genai Schema.from_json_schema --tier {tier}", findings)


def first_lines(text):
    return " | ".join(text.splitlines()[:3])[:300]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--tier", action="append", choices=TIERS)
    ap.add_argument("--calls", metavar="SOCKET", help="call read tools on this tmux socket (-L)")
    ap.add_argument("--sizes", action="store_true")
    ns = ap.parse_args()
    logging.basicConfig(level=logging.ERROR)
    tiers = ns.tier or TIERS
    if ns.sizes:
        sizes(ns.bin, tiers)
        return 0
    calls = None
    if ns.calls:
        here = os.path.dirname(os.path.abspath(__file__))
        with open(os.path.join(here, "calls.json")) as f:
            calls = json.load(f)["calls"]
    for tier in tiers:
        tools = tools_of(rpc_lines(ns.bin, tier))
        asyncio.run(openai_agents(ns.bin, tier, ns.calls if (ns.calls and tier == "readonly") else UNUSED_SOCKET,
                                  calls if tier == "readonly" else None))
        pydantic_ai(tier, tools)
        google_genai(tier, tools)
    print(f"converters: {passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
