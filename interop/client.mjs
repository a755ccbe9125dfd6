#!/usr/bin/env node
// panescan through the official TypeScript MCP SDK: 1.x
// (@modelcontextprotocol/sdk, what most desktop clients ship) or 2.x
// (@modelcontextprotocol/client, which also speaks 2026-07-28).
//
// Starts a private tmux server (tmux_fixture.sh), runs `panescan serve` on
// it through the SDK's stdio transport (which, like desktop clients, passes
// the server only HOME, PATH, SHELL, TERM, USER, LOGNAME), and checks: the
// negotiated protocol era, tools/list, every read tool called as calls.json
// says with structuredContent validated against outputSchema (by the SDK
// itself and independently by ajv), invalid calls and their errors,
// progress, cancelling a search (no answer for it on the wire), resources
// and prompts (with 1.x, a subscription that sees a pane print). The
// tmux server is killed at the end, also on failure or a signal.
//
// usage: node client.mjs --sdk 1|2 --mode legacy|auto --expect-protocol V --bin PANESCAN --npm DIR/npm [--http]
// (--http: over Streamable HTTP, serve --http with a bearer token, instead of stdio)
// Exit 0 when every check passed; prints one line per failure and a summary.

import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';

const HERE = dirname(fileURLToPath(import.meta.url));
// The packages live where setup.sh installed them (--npm DIR), not beside
// this file, so they are resolved from there.
let require;
const load = async (name) => import(pathToFileURL(require.resolve(name)).href);

class Checks {
  constructor() {
    this.passed = 0;
    this.failed = [];
  }
  check(ok, what, detail) {
    if (ok) this.passed += 1;
    else this.failed.push(detail === undefined ? what : `${what}: ${JSON.stringify(detail).slice(0, 400)}`);
    return ok;
  }
}

// The installed version of a package: its package.json, found above one of
// its files.
function versionOf(name, entry) {
  for (let dir = dirname(require.resolve(entry)); dir !== dirname(dir); dir = dirname(dir)) {
    try {
      const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
      if (pkg.name === name) return pkg.version;
    } catch {
      // no package.json at this level
    }
  }
  return '?';
}

async function loadSdk(major) {
  if (major === '1') {
    const { Client } = await load('@modelcontextprotocol/sdk/client/index.js');
    const { StdioClientTransport } = await load('@modelcontextprotocol/sdk/client/stdio.js');
    const { StreamableHTTPClientTransport } = await load('@modelcontextprotocol/sdk/client/streamableHttp.js');
    return {
      StreamableHTTPClientTransport,
      name: `@modelcontextprotocol/sdk ${versionOf('@modelcontextprotocol/sdk', '@modelcontextprotocol/sdk/client/index.js')}`,
      Client,
      StdioClientTransport,
      options: () => ({}),
      callTool: (client, params, options) => client.callTool(params, undefined, options),
      // 1.x keeps no record of it: read the initialize answer off the wire.
      protocol: (client, wire) => wire.received.find((m) => m.result?.protocolVersion)?.result.protocolVersion,
    };
  }
  const { Client, StreamableHTTPClientTransport } = await load('@modelcontextprotocol/client');
  const { StdioClientTransport } = await load('@modelcontextprotocol/client/stdio');
  return {
    StreamableHTTPClientTransport,
    name: `@modelcontextprotocol/client ${versionOf('@modelcontextprotocol/client', '@modelcontextprotocol/client')}`,
    Client,
    StdioClientTransport,
    options: (mode) => ({ versionNegotiation: { mode } }),
    callTool: (client, params, options) => client.callTool(params, options),
    protocol: (client) => client.getNegotiatedProtocolVersion(),
  };
}

const textOf = (res) => (res.content ?? []).filter((c) => c.type === 'text').map((c) => c.text).join(' ');

async function checkListing(client, c, spec) {
  const Ajv2020 = (await load('ajv/dist/2020.js')).default;
  const tools = [];
  let cursor;
  for (let page = 0; page < 100; page += 1) {
    const res = await client.listTools(cursor ? { cursor } : undefined);
    tools.push(...res.tools);
    cursor = res.nextCursor;
    if (!cursor) break;
  }
  const names = tools.map((t) => t.name);
  // A tool that only answers an error here (the command ledger without a
  // journaling daemon) is covered by its entry in errors.
  const wanted = new Set([
    ...spec.calls.map((call) => call.tool),
    ...spec.errors.filter((bad) => 'tool_error' in bad).map((bad) => bad.tool),
  ]);
  const diff = [...new Set([...names, ...wanted])].filter((n) => !(names.includes(n) && wanted.has(n)));
  c.check(diff.length === 0, 'tools/list names exactly the read tools calls.json covers', diff);
  c.check(new Set(names).size === names.length, 'tool names are unique');
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  const validators = {};
  for (const t of tools) {
    c.check(Boolean(t.description), `${t.name}: has a description`);
    for (const key of ['inputSchema', 'outputSchema']) {
      const schema = t[key];
      c.check(schema?.type === 'object', `${t.name}: ${key} is an object schema`);
      let compiled = null;
      try {
        compiled = ajv.compile(schema);
      } catch (e) {
        c.check(false, `${t.name}: ${key} compiles under ajv (JSON Schema 2020-12)`, String(e));
      }
      if (compiled && key === 'outputSchema') validators[t.name] = compiled;
    }
    c.check(t.annotations?.readOnlyHint === true, `${t.name}: annotations.readOnlyHint is true`);
  }
  return validators;
}

async function checkOtherListings(client, c) {
  const caps = client.getServerCapabilities() ?? {};
  if (caps.resources) c.check(Array.isArray((await client.listResources()).resources), 'resources/list answers a list');
  if (caps.prompts) c.check(Array.isArray((await client.listPrompts()).prompts), 'prompts/list answers a list');
}

// Resources (list, read, a malformed URI) and prompts (list, get, a
// missing argument) in both eras; with SDK 1.x (the handshake era) also a
// subscription that sees a pane print. Runs last: it adds a window.
async function checkResourcesAndPrompts(sdk, client, c, opts) {
  const uris = [];
  let cursor;
  for (let page = 0; page < 100; page += 1) {
    const res = await client.listResources(cursor ? { cursor } : undefined);
    uris.push(...res.resources.map((r) => r.uri));
    cursor = res.nextCursor;
    if (!cursor) break;
  }
  const t = (...args) => execFileSync('tmux', ['-L', opts.socket, '-f', '/dev/null', ...args], { encoding: 'utf8' }).trim();
  const panes = t('list-panes', '-a', '-F', '#{pane_id}').split('\n');
  const want = ['tmux://sessions', ...panes.map((p) => `tmux://pane/${p.slice(1)}/screen`)];
  c.check(JSON.stringify(uris) === JSON.stringify(want), "resources/list names tmux://sessions and every pane's screen", uris);
  const sessions = JSON.parse((await client.readResource({ uri: 'tmux://sessions' })).contents[0].text);
  c.check(sessions.sessions?.[0]?.session_name === 'main', 'tmux://sessions reads as JSON', sessions);
  try {
    await client.readResource({ uri: 'tmux://../etc' });
    c.check(false, 'a malformed URI is an error');
  } catch (e) {
    c.check(e.code === -32602 && String(e.message).includes('tmux://pane/{pane_number}/screen'), 'a malformed URI is error -32602 naming the forms', String(e));
  }
  const prompts = (await client.listPrompts()).prompts.map((p) => p.name);
  c.check(prompts.length === 5 && prompts[0] === 'run_and_wait', 'prompts/list names the five prompts', prompts);
  const got = await client.getPrompt({ name: 'run_and_wait', arguments: { pane_id: '%1', command: 'make test' } });
  c.check(got.messages[0].content.text.includes('run_command'), 'prompts/get fills run_and_wait naming the tools', got);
  try {
    await client.getPrompt({ name: 'run_and_wait', arguments: { pane_id: '%1' } });
    c.check(false, 'a missing prompt argument is an error');
  } catch (e) {
    c.check(e.code === -32602 && String(e.message).includes('"command"'), 'a missing prompt argument is error -32602 naming it', String(e));
  }
  if (opts.sdk !== '1') return;
  const { ResourceUpdatedNotificationSchema } = await load('@modelcontextprotocol/sdk/types.js');
  const updated = [];
  client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => {
    updated.push(n.params.uri);
  });
  const pane = t('new-window', '-d', '-P', '-F', '#{pane_id}', 'cat');
  const uri = `tmux://pane/${pane.slice(1)}/screen`;
  await client.subscribeResource({ uri });
  t('send-keys', '-t', pane, '-l', 'hello resource');
  t('send-keys', '-t', pane, 'Enter');
  for (let i = 0; i < 500 && !updated.includes(uri); i += 1) await new Promise((r) => setTimeout(r, 20));
  c.check(updated.includes(uri), 'resources/subscribe: an update arrives when the pane prints', updated);
  await client.unsubscribeResource({ uri });
}

async function checkCalls(sdk, client, c, spec, validators) {
  for (const call of spec.calls) {
    const label = `${call.tool} ${JSON.stringify(call.args).slice(0, 80)}`;
    let res;
    try {
      res = await sdk.callTool(client, { name: call.tool, arguments: call.args });
    } catch (e) {
      c.check(false, `${label}: answers`, String(e));
      continue;
    }
    if (!c.check(!res.isError, `${label}: succeeds`, textOf(res))) continue;
    const sc = res.structuredContent;
    if (!c.check(sc && typeof sc === 'object', `${label}: has structuredContent`)) continue;
    const validate = validators[call.tool];
    const ok = validate ? validate(sc) : false;
    c.check(ok, `${label}: structuredContent validates against outputSchema (ajv)`, validate?.errors?.slice(0, 3));
    c.check(JSON.stringify(sc, null, 1).includes(call.contains), `${label}: result holds ${JSON.stringify(call.contains)}`);
  }
}

async function checkErrors(sdk, client, c, spec) {
  for (const bad of spec.errors) {
    const label = `${bad.tool} ${JSON.stringify(bad.args).slice(0, 80)}`;
    let res;
    try {
      res = await sdk.callTool(client, { name: bad.tool, arguments: bad.args });
    } catch (e) {
      c.check(bad.rpc_error !== undefined && e.code === bad.rpc_error, `${label}: JSON-RPC error ${bad.rpc_error}`, `got ${e.code} ${e.message}`);
      continue;
    }
    if (bad.rpc_error !== undefined) {
      c.check(false, `${label}: JSON-RPC error ${bad.rpc_error}`, res);
      continue;
    }
    c.check(res.isError === true, `${label}: isError is true`, res);
    c.check(res.structuredContent === undefined, `${label}: an error carries no structuredContent`);
    c.check(textOf(res).includes(bad.tool_error), `${label}: the error names ${JSON.stringify(bad.tool_error)}`, textOf(res));
  }
}

// What the server sends is read off the wire: the 2.x client runs a
// notification's handler a microtask later but forgets a call's progress
// handler as soon as it reads the call's response, so a last progress
// notification read in the same chunk as the response (a quick search)
// never reaches `onprogress`. What does reach it must agree with the wire.
async function checkProgress(sdk, client, wire, c, spec) {
  const seen = [];
  const p = spec.progress;
  const first = wire.received.length;
  const res = await sdk.callTool(client, { name: p.tool, arguments: p.args }, { onprogress: (n) => seen.push(n) });
  c.check(!res.isError, 'progress call succeeds');
  const got = wire.received.slice(first);
  const answered = got.findIndex((m) => !('method' in m));
  const sent = got.slice(0, answered < 0 ? got.length : answered)
    .filter((m) => m.method === 'notifications/progress')
    .map((m) => m.params);
  c.check(sent.length > 0, `${p.tool} sends progress notifications before its answer`, got.slice(0, 3));
  c.check(sent.every((n, i) => i === 0 || n.progress > sent[i - 1].progress), 'progress strictly increases', sent);
  c.check(sent.every((n) => n.total === undefined || n.progress <= n.total), 'progress never passes total', sent);
  c.check(seen.every((n) => sent.some((m) => m.progress === n.progress)), 'the client got only what was sent', seen);
}

// Cancels a search that cannot finish: its tmux server is frozen
// (SIGSTOP) once the search is on the wire. The call ends aborted, the
// SDK says so to the server, no response to it ever comes, and once tmux
// goes on the server answers the same search normally.
async function checkCancel(sdk, client, wire, c, spec, fixture) {
  const q = spec.cancel;
  const abort = new AbortController();
  const firstSent = wire.sent.length;
  fixture('freeze');
  let outcome;
  try {
    const call = sdk.callTool(client, { name: q.tool, arguments: q.args }, { signal: abort.signal });
    const settled = call.then(() => 'answered', () => (abort.signal.aborted ? 'aborted' : 'failed'));
    while (!wire.sent.slice(firstSent).some((m) => m.method === 'tools/call')) await new Promise((r) => setImmediate(r));
    abort.abort('cancelled by the interop check');
    outcome = await settled;
  } finally {
    fixture('thaw');
  }
  c.check(outcome === 'aborted', 'a search cancelled while tmux is frozen ends aborted', outcome);
  const sent = wire.sent.slice(firstSent);
  const id = sent.find((m) => m.method === 'tools/call')?.id;
  // Over HTTP in the 2026-07-28 era the SDK cancels by closing the
  // request's stream, which the endpoint turns into the same cancel.
  const byStream = wire.http && sdk.protocol(client, wire) >= '2026';
  c.check(byStream || sent.some((m) => m.method === 'notifications/cancelled' && m.params?.requestId === id), 'the SDK sends notifications/cancelled for it', sent.map((m) => m.method));
  // The same search again: answered once tmux has caught up with the
  // cancelled one's commands, so by then its answer would have come.
  const res = await sdk.callTool(client, { name: q.tool, arguments: q.args });
  c.check(!res.isError && res.structuredContent?.panes_searched > 0, 'the server answers the same search after the cancel', textOf(res));
  c.check(id !== undefined && !wire.received.some((m) => m.id === id && !('method' in m)), 'the cancelled call gets no response', id);
}

// Records every message on the transport, both ways, from the first one
// (the SDK installs its handler at connect; this wraps whatever it sets).
function tap(transport) {
  const wire = { sent: [], received: [] };
  let handler;
  Object.defineProperty(transport, 'onmessage', {
    configurable: true,
    get: () => handler && ((msg, extra) => {
      wire.received.push(msg);
      return handler(msg, extra);
    }),
    set: (fn) => {
      handler = fn;
    },
  });
  const send = transport.send.bind(transport);
  transport.send = (msg, opts) => {
    wire.sent.push(msg);
    return send(msg, opts);
  };
  return wire;
}

async function run(opts, c, spec, fixture) {
  const sdk = await loadSdk(opts.sdk);
  // The SDK passes only a few variables on; the server must find the
  // fixture's socket where tmux put it.
  const env = Object.fromEntries(['HOME', 'PATH', 'TMUX_TMPDIR', 'LANG', 'LC_ALL']
    .filter((k) => process.env[k] !== undefined).map((k) => [k, process.env[k]]));
  let server = null;
  let transport;
  if (opts.http) {
    // serve --http on a free loopback port with a fresh token file; the
    // SDK's Streamable HTTP transport sends the Authorization header.
    for (const [k, v] of Object.entries(process.env)) if (k.startsWith('PANESCAN_')) env[k] = v;
    const tokens = join(mkdtempSync(join(tmpdir(), 'panescan-interop-')), 'tokens');
    server = spawn(opts.bin, ['serve', '--socket-name', opts.socket, '--http', '127.0.0.1:0', '--token-file', tokens],
      { env, stdio: ['ignore', 'ignore', 'pipe'] });
    // Whatever way the run ends, the server goes with it.
    process.on('exit', () => server.kill('SIGTERM'));
    const url = await new Promise((resolve, reject) => {
      let seen = '';
      server.stderr.on('data', (d) => {
        seen += d;
        const m = seen.match(/MCP over HTTP at (\S+)\n/);
        if (m) resolve(m[1]);
      });
      server.on('exit', () => reject(new Error(`serve --http exited: ${seen}`)));
    });
    const token = readFileSync(tokens, 'utf8').trim().split(/\s+/).pop();
    transport = new sdk.StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { Authorization: `Bearer ${token}` } } });
  } else {
    transport = new sdk.StdioClientTransport({ command: opts.bin, args: ['serve', '--socket-name', opts.socket], env, stderr: 'ignore' });
  }
  const wire = tap(transport);
  wire.http = Boolean(opts.http);
  const client = new sdk.Client({ name: 'panescan-interop', version: '1.0.0' }, sdk.options(opts.mode));
  const t0 = performance.now();
  await client.connect(transport);
  const connectMs = performance.now() - t0;
  try {
    const protocol = sdk.protocol(client, wire);
    c.check(protocol === opts['expect-protocol'], `negotiates protocol ${opts['expect-protocol']}`, protocol);
    c.check(client.getServerVersion()?.name === 'panescan', 'server names itself panescan', client.getServerVersion());
    c.check(Boolean(client.getServerCapabilities()?.tools), 'server declares tools');
    const validators = await checkListing(client, c, spec);
    await checkOtherListings(client, c);
    await checkCalls(sdk, client, c, spec, validators);
    await checkErrors(sdk, client, c, spec);
    await checkProgress(sdk, client, wire, c, spec);
    await checkCancel(sdk, client, wire, c, spec, fixture);
    await checkResourcesAndPrompts(sdk, client, c, opts);
    return { sdk: sdk.name, protocol, connectMs };
  } finally {
    await client.close();
    server?.kill('SIGTERM');
  }
}

async function main() {
  const { values: opts } = parseArgs({
    options: {
      sdk: { type: 'string' },
      mode: { type: 'string' },
      'expect-protocol': { type: 'string' },
      bin: { type: 'string' },
      npm: { type: 'string' },
      http: { type: 'boolean' },
    },
  });
  require = createRequire(join(opts.npm, 'package.json'));
  opts.socket = `panescan-interop-js${opts.sdk}-${opts.mode}-${process.pid}`;
  const spec = JSON.parse(readFileSync(join(HERE, 'calls.json'), 'utf8'));
  const fixture = join(HERE, 'tmux_fixture.sh');
  const tmux = (what) => execFileSync(fixture, [what, opts.socket], { stdio: 'inherit' });
  const down = () => tmux('down');
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
    process.on(sig, () => {
      down();
      process.exit(1);
    });
  }
  const c = new Checks();
  let summary = { sdk: `sdk ${opts.sdk}`, protocol: '-', connectMs: 0 };
  try {
    tmux('up');
    summary = await run(opts, c, spec, tmux);
  } catch (e) {
    c.check(false, 'the session completes', String(e?.stack ?? e));
  } finally {
    down();
  }
  for (const f of c.failed) console.log(`  FAIL ${f}`);
  console.log(`node ${summary.sdk} --mode ${opts.mode}${opts.http ? ' --http' : ''}: protocol ${summary.protocol}, connect ${summary.connectMs.toFixed(0)} ms, ${c.passed} passed, ${c.failed.length} failed`);
  process.exit(c.failed.length ? 1 : 0);
}

main();
