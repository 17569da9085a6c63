// mcp.e2e: drives `sandbox mcp` over stdio with the official TypeScript MCP
// SDK client, as an agent would. Usage: node e2e.mjs path/to/sandbox
// Every step asserts; the first failure ends the run with status 1 and the
// server's stderr.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import http from 'node:http';
import path from 'node:path';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

const cli = process.argv[2];
if (!cli) {
  console.error('usage: node e2e.mjs path/to/sandbox');
  process.exit(2);
}

// The whole run must end well within a minute.
const watchdog = setTimeout(() => fail(new Error('timed out after 50 s')),
                            50_000);

const work = fs.realpathSync(
  fs.mkdtempSync(path.join(process.env.TMPDIR || os.tmpdir(), 'sandbox-mcp-e2e-')));
let stderr = '';
const lines = []; // every line the server wrote to stdout, as JSON
const waiters = []; // [predicate, resolve] for lines still to come

function fail(err) {
  console.error(`mcp.e2e: FAILED: ${err?.stack || err}`);
  if (stderr)
    console.error(`--- server stderr ---\n${stderr}`);
  process.exit(1);
}

/// Resolves with the first line (already seen or still to come) that
/// satisfies `pred`.
function lineWhere(pred) {
  const seen = lines.find(pred);
  if (seen)
    return Promise.resolve(seen);
  return new Promise(resolve => waiters.push([pred, resolve]));
}

/// Resolves once `pid` is gone (polled: it is not our child).
async function gone(pid, what) {
  const until = Date.now() + 10_000;
  for (;;) {
    try {
      process.kill(pid, 0);
    } catch (e) {
      assert.equal(e.code, 'ESRCH', `kill -0 ${pid}: ${e.code}`);
      return;
    }
    assert.ok(Date.now() < until, `${what} (pid ${pid}) still runs`);
    await new Promise(r => setTimeout(r, 50));
  }
}

function text(result) {
  assert.ok(Array.isArray(result.content), 'content is an array');
  assert.equal(result.content[0].type, 'text');
  return result.content[0].text;
}

function step(name) {
  console.log(`mcp.e2e: ${name}`);
}

async function main() {
  const transport = new StdioClientTransport({
    command: cli,
    args: ['mcp', '--workdir', work, '--log-level', 'info'],
    env: { ...process.env },
    stderr: 'pipe',
  });
  transport.stderr.on('data', d => { stderr += d; });
  // Watch the raw stdout too: what the SDK does not show (a parse error,
  // a response it would drop) and that nothing but JSON lines come out.
  const start = transport.start.bind(transport);
  let child;
  transport.start = async () => {
    await start();
    child = transport._process;
    let partial = '';
    child.stdout.on('data', chunk => {
      partial += chunk;
      let nl;
      while ((nl = partial.indexOf('\n')) >= 0) {
        const line = partial.slice(0, nl);
        partial = partial.slice(nl + 1);
        let msg;
        try {
          msg = JSON.parse(line);
        } catch (e) {
          fail(new Error(`stdout carried a line that is not JSON: ${line}`));
        }
        lines.push(msg);
        for (let i = waiters.length - 1; i >= 0; --i)
          if (waiters[i][0](msg))
            waiters.splice(i, 1)[0][1](msg);
      }
    });
  };
  const client = new Client({ name: 'sandbox-e2e', version: '1.0.0' });
  // The parse error's id is null, which the SDK's message schema refuses:
  // it reports that here and goes on.
  client.onerror = () => {};

  step('initialize');
  await client.connect(transport);
  assert.equal(client.getServerVersion().name, 'sandbox');
  assert.ok(client.getServerCapabilities().tools, 'tools capability');
  const init = lines.find(m => m.result?.protocolVersion);
  assert.equal(init.result.protocolVersion, '2025-11-25');

  step('tools/list');
  const { tools } = await client.listTools();
  const names = tools.map(t => t.name);
  for (const name of ['shell', 'code', 'file_editor', 'process_start',
                      'process_write', 'process_kill', 'process_list']) {
    assert.ok(names.includes(name), `tool ${name} in ${names}`);
    const tool = tools.find(t => t.name === name);
    assert.equal(tool.inputSchema.type, 'object');
    assert.ok(tool.description.length > 20, `${name} has a description`);
    // 2025-11-25: a title, annotations and an output schema.
    assert.ok(tool.title, `${name} has a title`);
    assert.equal(tool.outputSchema?.type, 'object', `${name} outputSchema`);
    assert.equal(typeof tool.annotations?.readOnlyHint, 'boolean');
  }
  assert.equal(tools.find(t => t.name === 'process_list').annotations.readOnlyHint,
               true);
  assert.equal(tools.find(t => t.name === 'shell').annotations.destructiveHint,
               true);

  step('shell: run a command');
  let r = await client.callTool({
    name: 'shell',
    arguments: { command: 'echo hello; echo oops >&2; exit 3' },
  });
  assert.match(text(r), /hello/);
  assert.match(text(r), /oops/);
  assert.match(text(r), /3/);
  assert.equal(r.structuredContent.exit_code, 3);
  r = await client.callTool({ name: 'shell', arguments: { command: 'pwd' } });
  assert.equal(r.isError, false);
  assert.match(text(r), new RegExp(work));

  step('code: run python');
  r = await client.callTool({
    name: 'code',
    arguments: { language: 'python3', code: 'import sys\nprint(6 * 7)\n' },
  });
  assert.equal(r.isError, false, text(r));
  assert.match(text(r), /42/);
  assert.equal(r.structuredContent.exit_code, 0);

  step('errors: an unknown tool is -32602, wrong arguments a failed tool');
  await assert.rejects(
    client.callTool({ name: 'no_such_tool', arguments: {} }),
    e => e.code === -32602);
  r = await client.callTool({ name: 'shell', arguments: { command: 42 } });
  assert.equal(r.isError, true);
  assert.match(text(r), /command/);
  assert.equal(r.structuredContent.error, 'invalid_argument');
  // The serialized structured content, in a second text block.
  assert.deepEqual(JSON.parse(r.content[1].text), r.structuredContent);

  step('long command: progress notifications');
  const progress = [];
  r = await client.callTool(
    { name: 'shell',
      arguments: { command: 'for i in 1 2 3 4; do echo tick $i; sleep 0.5; done' } },
    undefined,
    { onprogress: p => progress.push(p) });
  assert.equal(r.isError, false);
  assert.ok(progress.length >= 2, `${progress.length} progress notifications`);
  assert.ok(progress.some(p => /tick/.test(p.message)),
            `a progress message shows output: ${JSON.stringify(progress)}`);
  for (let i = 1; i < progress.length; ++i)
    assert.ok(progress[i].progress > progress[i - 1].progress);

  step('cancel a long command: its processes end, no response');
  const pidFile = path.join(work, 'pids');
  const abort = new AbortController();
  let token;
  const cancelled = client.callTool(
    { name: 'shell',
      arguments: {
        command: `sleep 60 & echo $$ $! > ${pidFile}; echo ready; wait` } },
    undefined,
    { signal: abort.signal,
      onprogress: p => {
        if (/ready/.test(p.message ?? '') && !abort.signal.aborted)
          abort.abort('test cancels');
      } });
  await assert.rejects(cancelled);
  token = lines.find(m => m.method === 'notifications/progress'
                     && /ready/.test(m.params.message)).params.progressToken;
  const pids = fs.readFileSync(pidFile, 'utf8').trim().split(/\s+/).map(Number);
  assert.equal(pids.length, 2);
  await gone(pids[0], 'the shell');
  await gone(pids[1], 'its background sleep');

  step('file_editor: create, view, str_replace, insert, undo');
  const file = path.join(work, 'sub', 'notes.txt');
  r = await client.callTool({
    name: 'file_editor',
    arguments: { command: 'create', path: file, file_text: 'one\ntwo\nthree\n' },
  });
  assert.equal(r.isError, false, text(r));
  assert.equal(fs.readFileSync(file, 'utf8'), 'one\ntwo\nthree\n');
  r = await client.callTool({
    name: 'file_editor',
    arguments: { command: 'create', path: file, file_text: 'again' },
  });
  assert.equal(r.isError, true, 'create refuses to overwrite');
  r = await client.callTool({
    name: 'file_editor', arguments: { command: 'view', path: file } });
  assert.equal(r.isError, false);
  assert.match(text(r), /1\s+one/);
  assert.match(text(r), /3\s+three/);
  r = await client.callTool({
    name: 'file_editor',
    arguments: { command: 'str_replace', path: file, old_str: 'two',
                 new_str: 'deux' } });
  assert.equal(r.isError, false, text(r));
  assert.equal(fs.readFileSync(file, 'utf8'), 'one\ndeux\nthree\n');
  r = await client.callTool({
    name: 'file_editor',
    arguments: { command: 'insert', path: file, insert_line: 1,
                 new_str: 'one and a half' } });
  assert.equal(r.isError, false, text(r));
  assert.equal(fs.readFileSync(file, 'utf8'),
               'one\none and a half\ndeux\nthree\n');
  r = await client.callTool({
    name: 'file_editor', arguments: { command: 'undo_edit', path: file } });
  assert.equal(r.isError, false, text(r));
  assert.equal(fs.readFileSync(file, 'utf8'), 'one\ndeux\nthree\n');
  r = await client.callTool({
    name: 'file_editor', arguments: { command: 'view', path: work } });
  assert.match(text(r), /notes\.txt/);

  step('processes: a Python REPL driven turn by turn');
  r = await client.callTool({
    name: 'process_start',
    arguments: { command: 'python3 -u -i -q 2>&1', yield_seconds: 5 } });
  assert.equal(r.isError, false, text(r));
  assert.equal(r.structuredContent.running, true);
  const repl = r.structuredContent.process_id;
  r = await client.callTool({
    name: 'process_write',
    arguments: { process_id: repl, text: 'x = 6 * 7\nprint(x)\n',
                 yield_seconds: 20 } });
  assert.equal(r.isError, false, text(r));
  assert.match(r.structuredContent.output, /42/);
  r = await client.callTool({
    name: 'process_write',
    arguments: { process_id: repl, text: 'print(x + 1)\n', yield_seconds: 20 } });
  assert.match(r.structuredContent.output, /43/);
  assert.doesNotMatch(r.structuredContent.output, /42/,
                      'the next call starts where the previous left off');

  step('processes: a Python REPL on a terminal');
  r = await client.callTool({
    name: 'process_start',
    arguments: { command: 'exec python3 -q -i', tty: true, rows: 30,
                 cols: 100, yield_seconds: 20 } });
  assert.equal(r.isError, false, text(r));
  assert.match(r.structuredContent.output, />>> $/);
  const tty = r.structuredContent.process_id;
  r = await client.callTool({
    name: 'process_write',
    arguments: { process_id: tty,
                 text: 'import shutil; print(shutil.get_terminal_size())\n',
                 yield_seconds: 20 } });
  assert.match(r.structuredContent.output,
               /columns=100, lines=30\)\r\n[^]*>>> $/, text(r));
  r = await client.callTool({
    name: 'process_write',
    arguments: { process_id: tty, text: '', close_stdin: true,
                 yield_seconds: 20 } });
  assert.equal(r.structuredContent.running, false, text(r));
  assert.equal(r.structuredContent.exit_code, 0);

  step('processes: an HTTP server on the leased port, its log read back, then killed');
  r = await client.callTool({
    name: 'shell', arguments: { command: 'echo $SANDBOX_PORT' } });
  const leased = r.structuredContent.stdout.trim();
  assert.match(leased, /^\d+$/, `the session's port: ${text(r)}`);
  r = await client.callTool({
    name: 'process_start',
    arguments: {
      command: 'exec python3 -u -m http.server $SANDBOX_PORT --bind 127.0.0.1',
      yield_seconds: 20 } });
  assert.equal(r.isError, false, text(r));
  const server = r.structuredContent.process_id;
  const port = /port (\d+)/.exec(r.structuredContent.output)?.[1];
  assert.equal(port, leased, `the server listens on the leased port: ${text(r)}`);
  // Reached from outside the session, at its endpoint.
  const status = await new Promise((resolve, reject) => {
    http.get(`http://127.0.0.1:${port}/`, res => {
      res.resume();
      resolve(res.statusCode);
    }).on('error', reject);
  });
  assert.equal(status, 200);
  r = await client.callTool({
    name: 'process_write',
    arguments: { process_id: server, text: '', yield_seconds: 20 } });
  assert.match(r.structuredContent.output, /GET \/ HTTP/);
  r = await client.callTool({
    name: 'process_kill', arguments: { process_id: server } });
  assert.equal(r.isError, false, text(r));
  assert.equal(r.structuredContent.running, false);
  r = await client.callTool({ name: 'process_list', arguments: {} });
  assert.deepEqual(r.structuredContent.processes.map(p => p.state),
                   ['running', 'exited', 'exited']);
  assert.deepEqual(r.structuredContent.processes.map(p => p.tty),
                   [false, true, false]);

  step('a malformed line: parse error, and the server still answers');
  child.stdin.write('{"jsonrpc": "2.0", "id": 99, "method": \n');
  const parseError = await lineWhere(m => m.error?.code === -32700);
  assert.equal(parseError.id, null);
  await client.ping();
  r = await client.callTool({ name: 'shell', arguments: { command: 'echo still here' } });
  assert.match(text(r), /still here/);

  // The cancelled call never answered.
  assert.ok(!lines.some(m => m.id === token && ('result' in m || 'error' in m)),
            `no response for the cancelled call ${token}`);

  step('end of stdin: in-flight calls end, the server exits 0');
  const eofPid = path.join(work, 'eof-pid');
  let ready;
  const isReady = new Promise(resolve => { ready = resolve; });
  const running = client.callTool(
    { name: 'shell',
      arguments: { command: `echo $$ > ${eofPid}; echo ready; exec sleep 60` } },
    undefined,
    { onprogress: p => { if (/ready/.test(p.message ?? '')) ready(); } });
  running.catch(() => {}); // the connection closes under it
  await isReady;
  const exited = new Promise(resolve =>
    child.once('exit', (code, signal) => resolve({ code, signal })));
  // The end of stdin, as the SDK's close() does first (it would send
  // SIGTERM after 2 s: on a busy machine that is not a failure of ours).
  child.stdin.end();
  const { code, signal } = await exited;
  assert.equal(signal, null, `the server ended by ${signal}`);
  assert.equal(code, 0);
  await client.close();
  await gone(Number(fs.readFileSync(eofPid, 'utf8')), 'the running command');

  clearTimeout(watchdog);
  fs.rmSync(work, { recursive: true, force: true });
  console.log('mcp.e2e: all steps passed');
}

main().catch(fail);
