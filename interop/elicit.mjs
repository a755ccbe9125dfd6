#!/usr/bin/env node
// A policy's `ask` through the official TypeScript MCP SDK 1.x
// (@modelcontextprotocol/sdk) with an elicitation request handler: the
// same checks as elicit.py (the question names the tool, pane and exact
// text with a one-field approve form; an approval runs the call once; a
// decline refuses it; only the approved text reaches the pane).
//
// usage: node elicit.mjs --bin PANESCAN --npm DIR/npm
// Exit 0 when every check passed.

import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';

const { values: opts } = parseArgs({ options: { bin: { type: 'string' }, npm: { type: 'string' } } });
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

try {
  writeFileSync(sink, '');
  writeFileSync(policy, '[[ask]]\ntools = ["send_keys"]\ncommand = "^deploy"\n');
  tmux('new-session', '-d', '-s', 'main', '-x', '80', '-y', '24', `stty raw -echo; exec cat > ${sink}`);
  for (let i = 0; i < 200 && tmux('display', '-p', '-t', '%0', '#{pane_current_command}').trim() !== 'cat'; i += 1) await sleep(50);

  const { Client } = await load('@modelcontextprotocol/sdk/client/index.js');
  const { StdioClientTransport } = await load('@modelcontextprotocol/sdk/client/stdio.js');
  const { ElicitRequestSchema } = await load('@modelcontextprotocol/sdk/types.js');
  const env = { ...process.env };
  const transport = new StdioClientTransport({
    command: opts.bin,
    args: ['serve', '--socket-name', socket, '--tier', 'mutating', '--policy', policy],
    env,
    stderr: 'ignore',
  });
  const client = new Client({ name: 'panescan-interop', version: '1.0.0' }, { capabilities: { elicitation: {} } });
  const asked = [];
  const answers = ['accept', 'decline'];
  client.setRequestHandler(ElicitRequestSchema, async (request) => {
    asked.push(request.params);
    const action = answers.shift();
    return action === 'accept' ? { action, content: { approve: true } } : { action };
  });
  await client.connect(transport);
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
  for (let i = 0; i < 200 && !readFileSync(sink, 'latin1').endsWith('\r'); i += 1) await sleep(50);
  const got = readFileSync(sink, 'latin1');
  check(got === 'deploy --prod\r', `only the approved text reached the pane: ${JSON.stringify(got)}`);
} catch (e) {
  failed.push(`the session completes: ${e}`);
} finally {
  try {
    tmux('kill-server');
  } catch {
    // already gone
  }
  rmSync(dir, { recursive: true, force: true });
}
for (const f of failed) console.log(`  FAIL ${String(f).slice(0, 400)}`);
console.log(`node @modelcontextprotocol/sdk elicitation: ${failed.length ? `${failed.length} failed` : 'ok'}`);
process.exit(failed.length ? 1 : 0);
