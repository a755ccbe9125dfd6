#!/usr/bin/env node
// A policy's `ask` through the official TypeScript MCP SDK's elicitation
// request handler, 1.x (@modelcontextprotocol/sdk, 2025-11-25: the call is
// held while `elicitation/create` is answered) or 2.x
// (@modelcontextprotocol/client, `--mode legacy` as 1.x, `--mode auto`
// 2026-07-28: the server answers with an input request and the SDK calls
// again through the same handler): the same checks as elicit.py (the
// question names the tool, pane and exact text with a one-field approve
// form; an approval runs the call once; a decline refuses it; only the
// approved text reaches the pane).
//
// usage: node elicit.mjs --bin PANESCAN --npm DIR/npm [--sdk 1|2] [--mode legacy|auto] [--http]
// (--http: over Streamable HTTP, serve --http with a bearer token)
// Exit 0 when every check passed.

import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';

const { values: opts } = parseArgs({
  options: {
    bin: { type: 'string' },
    npm: { type: 'string' },
    sdk: { type: 'string', default: '1' },
    mode: { type: 'string', default: 'legacy' },
    http: { type: 'boolean' },
  },
});
const require = createRequire(join(opts.npm, 'package.json'));
const load = async (name) => import(pathToFileURL(require.resolve(name)).href);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const socket = `panescan-interop-elicit-js-${process.pid}`;
const tmux = (...args) => execFileSync('tmux', ['-L', socket, '-f', '/dev/null', ...args], { encoding: 'utf8' });
const dir = mkdtempSync(join(tmpdir(), 'panescan-elicit-'));
const sink = join(dir, 'typed');
const policy = join(dir, 'policy.toml');
const failed = [];
const check = (ok, what) => ok || failed.push(what);
let server = null;

/** The SDK's Client and transports, 1.x or 2.x. */
async function loadSdk() {
  if (opts.sdk === '1') {
    const { Client } = await load('@modelcontextprotocol/sdk/client/index.js');
    const { StdioClientTransport } = await load('@modelcontextprotocol/sdk/client/stdio.js');
    const { StreamableHTTPClientTransport } = await load('@modelcontextprotocol/sdk/client/streamableHttp.js');
    const { ElicitRequestSchema } = await load('@modelcontextprotocol/sdk/types.js');
    return {
      name: '@modelcontextprotocol/sdk',
      client: (capabilities) => new Client({ name: 'panescan-interop', version: '1.0.0' }, { capabilities }),
      onElicit: (client, handler) => client.setRequestHandler(ElicitRequestSchema, handler),
      StdioClientTransport,
      StreamableHTTPClientTransport,
    };
  }
  const { Client, StreamableHTTPClientTransport } = await load('@modelcontextprotocol/client');
  const { StdioClientTransport } = await load('@modelcontextprotocol/client/stdio');
  return {
    name: '@modelcontextprotocol/client',
    client: (capabilities) => new Client({ name: 'panescan-interop', version: '1.0.0' },
      { capabilities, versionNegotiation: { mode: opts.mode } }),
    onElicit: (client, handler) => client.setRequestHandler('elicitation/create', handler),
    StdioClientTransport,
    StreamableHTTPClientTransport,
  };
}

/** serve --http on a free loopback port with a fresh token file: the URL and token. */
async function startHttp(args, env) {
  const tokens = join(dir, 'tokens');
  server = spawn(opts.bin, [...args, '--http', '127.0.0.1:0', '--token-file', tokens], { env, stdio: ['ignore', 'ignore', 'pipe'] });
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
  return { url, token: readFileSync(tokens, 'utf8').trim().split(/\s+/).pop() };
}

try {
  writeFileSync(sink, '');
  writeFileSync(policy, '[[ask]]\ntools = ["send_keys"]\ncommand = "^deploy"\n');
  tmux('new-session', '-d', '-s', 'main', '-x', '80', '-y', '24', `stty raw -echo; exec cat > ${sink}`);
  for (let i = 0; i < 200 && tmux('display', '-p', '-t', '%0', '#{pane_current_command}').trim() !== 'cat'; i += 1) await sleep(50);

  const sdk = await loadSdk();
  const env = { ...process.env };
  const args = ['serve', '--socket-name', socket, '--tier', 'mutating', '--policy', policy];
  let transport;
  if (opts.http) {
    const { url, token } = await startHttp(args, env);
    transport = new sdk.StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { Authorization: `Bearer ${token}` } } });
  } else {
    transport = new sdk.StdioClientTransport({ command: opts.bin, args, env, stderr: 'ignore' });
  }
  const client = sdk.client({ elicitation: {} });
  const asked = [];
  const answers = ['accept', 'decline'];
  sdk.onElicit(client, async (request) => {
    asked.push(request.params);
    const action = answers.shift();
    return action === 'accept' ? { action, content: { approve: true } } : { action };
  });
  await client.connect(transport);
  if (opts.sdk === '2') {
    const want = opts.mode === 'legacy' ? '2025-11-25' : '2026-07-28';
    const got = client.getNegotiatedProtocolVersion();
    check(got === want, `negotiates ${want}: ${got}`);
  }
  const call = { name: 'send_keys', arguments: { pane_id: '%0', text: 'deploy --prod', enter: true } };
  const approved = await client.callTool(call);
  check(!approved.isError, `approved call runs: ${JSON.stringify(approved)}`);
  check(asked.length === 1, `one question per call: ${asked.length}`);
  if (asked.length) {
    for (const part of ['send_keys', '%0', '"deploy --prod"']) check(asked[0].message.includes(part), `question names ${part}: ${asked[0].message}`);
    check(JSON.stringify(asked[0].requestedSchema.required) === '["approve"]', `one approve field: ${JSON.stringify(asked[0].requestedSchema)}`);
  }
  const declined = await client.callTool(call);
  const text = (declined.content ?? []).map((c) => c.text ?? '').join(' ');
  check(declined.isError && text.startsWith('refused'), `declined call refused: ${text}`);
  await client.close();
  // A mark typed through tmux itself after both calls: tmux keeps a pane's
  // input in order, so once it is there, whatever the calls typed is too.
  const mark = '<end-of-calls>';
  tmux('send-keys', '-t', '%0', '-l', mark);
  for (let i = 0; i < 200 && !readFileSync(sink, 'latin1').endsWith(mark); i += 1) await sleep(50);
  const got = readFileSync(sink, 'latin1');
  check(got === `deploy --prod\r${mark}`, `only the approved text reached the pane: ${JSON.stringify(got)}`);
} catch (e) {
  failed.push(`the session completes: ${e}`);
} finally {
  try {
    tmux('kill-server');
  } catch {
    // already gone
  }
  server?.kill('SIGTERM');
  rmSync(dir, { recursive: true, force: true });
}
for (const f of failed) console.log(`  FAIL ${String(f).slice(0, 400)}`);
const how = `--sdk ${opts.sdk}${opts.sdk === '2' ? ` --mode ${opts.mode}` : ''}${opts.http ? ' --http' : ''}`;
console.log(`node ${how} elicitation: ${failed.length ? `${failed.length} failed` : 'ok'}`);
process.exit(failed.length ? 1 : 0);
