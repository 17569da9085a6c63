// mcp.e2e_http: drives `sandbox serve --http`'s /mcp with the official
// TypeScript MCP SDK client's StreamableHTTPClientTransport, as a remote
// agent would: list tools, run shell, edit a file, drive a process, and a
// long call whose SSE stream is cut in the middle (by a proxy between the
// client and the node) and resumed by the SDK with Last-Event-ID, without
// a lost progress event or result. Usage: node e2e-http.mjs path/to/sandbox

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const cli = process.argv[2];
if (!cli) {
  console.error('usage: node e2e-http.mjs path/to/sandbox');
  process.exit(2);
}

const watchdog = setTimeout(() => fail(new Error('timed out after 90 s')),
                            90_000);
const work = fs.realpathSync(
  fs.mkdtempSync(path.join(process.env.TMPDIR || os.tmpdir(), 'sandbox-mcp-http-')));
let stderr = '';
let node;

function fail(err) {
  console.error(`mcp.e2e_http: FAILED: ${err?.stack || err}`);
  if (stderr)
    console.error(`--- node stderr ---\n${stderr}`);
  node?.kill('SIGKILL');
  process.exit(1);
}

function step(name) {
  console.log(`mcp.e2e_http: ${name}`);
}

function text(result) {
  assert.ok(Array.isArray(result.content), 'content is an array');
  return result.content[0].text;
}

/// Starts the node; resolves with its HTTP port and token.
async function startNode() {
  node = spawn(cli, ['--json', 'serve', '--port', '0', '--http', '127.0.0.1:0',
                     '--base-dir', path.join(work, 'sessions'),
                     '--log-level', 'info'],
               { stdio: ['ignore', 'pipe', 'pipe'] });
  node.stderr.on('data', d => { stderr += d; });
  const lines = readline.createInterface({ input: node.stdout });
  const first = await new Promise((resolve, reject) => {
    lines.once('line', resolve);
    node.once('exit', code => reject(new Error(`node exited ${code}`)));
  });
  const ready = JSON.parse(first);
  const token = fs.readFileSync(ready.http.token_file, 'utf8').trim();
  return { port: ready.http.port, token };
}

/// A TCP proxy to `port`. While `cutAfter` is set, the first connection
/// whose answer carries a progress notification is cut right after
/// passing it on: the SSE stream of a call drops mid-call.
function startProxy(port) {
  const state = { cutArmed: false, cuts: 0 };
  const server = net.createServer(client => {
    const upstream = net.connect(port, '127.0.0.1');
    client.on('error', () => upstream.destroy());
    upstream.on('error', () => client.destroy());
    client.pipe(upstream);
    upstream.on('data', chunk => {
      client.write(chunk);
      if (state.cutArmed && chunk.includes('notifications/progress')) {
        state.cutArmed = false;
        ++state.cuts;
        client.destroy();
        upstream.destroy();
      }
    });
    upstream.on('end', () => client.end());
  });
  return new Promise(resolve => {
    server.listen(0, '127.0.0.1', () =>
      resolve({ state, server, port: server.address().port }));
  });
}

async function main() {
  const { port, token } = await startNode();
  const proxy = await startProxy(port);
  const url = new URL(`http://127.0.0.1:${proxy.port}/mcp`);

  step('a wrong token is refused');
  {
    const bad = new Client({ name: 'e2e-http', version: '1' });
    await assert.rejects(bad.connect(new StreamableHTTPClientTransport(url, {
      requestInit: { headers: { Authorization: 'Bearer wrong-token-123456' } },
    })));
  }

  const transport = new StreamableHTTPClientTransport(url, {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
    reconnectionOptions: { initialReconnectionDelay: 50,
                           maxReconnectionDelay: 1000,
                           reconnectionDelayGrowFactor: 1.5, maxRetries: 5 },
  });
  const client = new Client({ name: 'e2e-http', version: '1' });
  await client.connect(transport);
  assert.ok(transport.sessionId, 'an Mcp-Session-Id');
  step(`connected, protocol ${transport.protocolVersion}, session ${transport.sessionId}`);

  step('tools/list');
  const { tools } = await client.listTools();
  const names = tools.map(t => t.name);
  for (const name of ['shell', 'code', 'file_editor', 'process_start',
                      'process_write', 'process_kill', 'process_list'])
    assert.ok(names.includes(name), `tool ${name} in ${names}`);

  step('shell');
  let r = await client.callTool({ name: 'shell',
                                  arguments: { command: 'echo hello; pwd' } });
  assert.equal(r.isError, false, text(r));
  assert.match(r.structuredContent.stdout, /^hello\n/);
  const wd = r.structuredContent.stdout.split('\n')[1];
  assert.ok(wd.startsWith(path.join(work, 'sessions')), wd);

  step('file_editor: create, str_replace, view');
  const notes = path.join(wd, 'notes.txt');
  r = await client.callTool({ name: 'file_editor',
    arguments: { command: 'create', path: notes, file_text: 'one\ntwo\n' } });
  assert.equal(r.isError, false, text(r));
  r = await client.callTool({ name: 'file_editor',
    arguments: { command: 'str_replace', path: notes, old_str: 'two',
                 new_str: 'deux' } });
  assert.equal(r.isError, false, text(r));
  assert.equal(fs.readFileSync(notes, 'utf8'), 'one\ndeux\n');
  r = await client.callTool({ name: 'file_editor',
    arguments: { command: 'view', path: notes } });
  assert.match(text(r), /2\s+deux/);

  step('a process: a Python REPL driven turn by turn');
  r = await client.callTool({ name: 'process_start',
    arguments: { command: 'python3 -u -i -q 2>&1', yield_seconds: 5 } });
  assert.equal(r.isError, false, text(r));
  const repl = r.structuredContent.process_id;
  r = await client.callTool({ name: 'process_write',
    arguments: { process_id: repl, text: 'x = 6 * 7\nprint(x)\n', yield_seconds: 20 } });
  assert.match(r.structuredContent.output, /42/);
  r = await client.callTool({ name: 'process_kill',
    arguments: { process_id: repl, signal: 'KILL' } });
  assert.equal(r.isError, false, text(r));
  assert.equal(r.structuredContent.running, false);

  step('a long call whose SSE stream drops mid-call is resumed');
  const progress = [];
  const tokens = [];
  proxy.state.cutArmed = true;
  r = await client.callTool(
    { name: 'shell',
      arguments: { command: 'for i in 1 2 3 4 5 6; do echo tick $i; sleep 0.4; done' } },
    undefined,
    { onprogress: p => progress.push(p),
      resetTimeoutOnProgress: true,
      onresumptiontoken: t => tokens.push(t) });
  assert.equal(proxy.state.cuts, 1, 'the stream was cut once');
  assert.equal(r.isError, false, text(r));
  assert.equal(r.structuredContent.stdout,
               'tick 1\ntick 2\ntick 3\ntick 4\ntick 5\ntick 6\n');
  assert.ok(progress.length >= 3, `${progress.length} progress notifications`);
  // Every progress notification came once, in order, none lost.
  progress.forEach((p, i) => assert.equal(p.progress, i + 1,
    `progress ${JSON.stringify(progress.map(x => x.progress))}`));
  const seqs = tokens.map(t => Number(t.split('-')[1]));
  seqs.forEach((s, i) => assert.equal(s, i, `event ids ${tokens}`));

  step('DELETE ends the MCP session and its sandbox session');
  await transport.terminateSession();
  const list = await fetch(`http://127.0.0.1:${port}/v1/sessions`,
                           { headers: { Authorization: `Bearer ${token}` } });
  assert.deepEqual((await list.json()).sessions, []);
  await client.close();

  proxy.server.close();
  node.kill('SIGTERM');
  const code = await new Promise(resolve => node.once('exit', resolve));
  assert.equal(code, 0, 'the node stops cleanly');
  fs.rmSync(work, { recursive: true, force: true });
  clearTimeout(watchdog);
  step('passed');
}

main().catch(fail);
