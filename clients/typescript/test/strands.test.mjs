// NodeSandbox through the Strands Agents SDK itself, against a live sandbox node.
//
//   SANDBOX_URL=http://127.0.0.1:PORT SANDBOX_TOKEN=... node --test test/strands.test.mjs
//
// The SDK has no offline model, so the agent gets a scripted one: a `Model`
// subclass whose turns are written here (call a tool, then the next, then
// answer). The agent loop is the SDK's own: it registers the tools the
// sandbox vends (`sandbox_shell`, `sandbox_file_editor`), runs each tool
// call against the sandbox, and hands the results back to the model, which
// records them so the test can check them. The tools are also called
// directly through `agent.tool.<name>.invoke(...)`, and the Sandbox methods
// one by one. Exit 77 when the node is not given.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';

const url = process.env.SANDBOX_URL;
const token = process.env.SANDBOX_TOKEN;
if (!url || !token) {
  console.error('strands.test.mjs: SANDBOX_URL and SANDBOX_TOKEN are not set (a running sandbox node and its token): skipped, exit 77');
  process.exit(77);
}

const { Agent, Model, Sandbox, SandboxAbortError, SandboxPathNotFoundError, SandboxTimeoutError } = await import(
  '@strands-agents/sdk'
);
const { NodeSandbox } = await import('@sandbox/client/strands');
const { SandboxClient, SandboxError } = await import('@sandbox/client');

const client = new SandboxClient({ baseUrl: url, token });

/**
 * A model that plays a script: each turn is either `{ tool, input }` (a
 * tool call) or `{ text }` (the final answer). It keeps what it was shown.
 */
class ScriptedModel extends Model {
  constructor(turns) {
    super();
    this.turns = [...turns];
    this.calls = []; // the messages of each call
    this.config = { modelId: 'scripted' };
  }
  updateConfig(config) {
    this.config = { ...this.config, ...config };
  }
  getConfig() {
    return this.config;
  }
  async *stream(messages) {
    this.calls.push(JSON.parse(JSON.stringify(messages)));
    const turn = this.turns.shift() ?? { text: 'out of script' };
    yield { type: 'modelMessageStartEvent', role: 'assistant' };
    if (turn.tool) {
      const toolUseId = `call-${this.calls.length}`;
      yield { type: 'modelContentBlockStartEvent', start: { type: 'toolUseStart', name: turn.tool, toolUseId } };
      yield { type: 'modelContentBlockDeltaEvent', delta: { type: 'toolUseInputDelta', input: JSON.stringify(turn.input) } };
      yield { type: 'modelContentBlockStopEvent' };
      yield { type: 'modelMessageStopEvent', stopReason: 'toolUse' };
    } else {
      yield { type: 'modelContentBlockDeltaEvent', delta: { type: 'textDelta', text: turn.text } };
      yield { type: 'modelContentBlockStopEvent' };
      yield { type: 'modelMessageStopEvent', stopReason: 'endTurn' };
    }
  }
}

/** The tool results in a conversation, in order: `{ status, text }` each. */
function toolResults(messages) {
  const out = [];
  for (const m of JSON.parse(JSON.stringify(messages))) {
    for (const block of m.content ?? []) {
      const r = block.toolResult;
      if (!r) continue;
      const text = (r.content ?? [])
        .map((c) => (c.text !== undefined ? c.text : c.json !== undefined ? JSON.stringify(c.json) : ''))
        .join('\n');
      out.push({ status: r.status, text });
    }
  }
  return out;
}

async function collect(iterable) {
  const events = [];
  for await (const e of iterable) events.push(e);
  return events;
}

describe('NodeSandbox: the Sandbox methods', () => {
  let sandbox;
  let wd;

  before(async () => {
    sandbox = new NodeSandbox({ url, token });
    assert.equal(sandbox.sessionId, undefined, 'no session before first use');
  });

  after(async () => {
    await sandbox?.close();
  });

  test('is a Strands Sandbox; the session is made on first use', async () => {
    assert.ok(sandbox instanceof Sandbox);
    const r = await sandbox.execute('pwd');
    assert.ok(sandbox.sessionId, 'a session after first use');
    wd = sandbox.session.working_directory;
    assert.equal(r.stdout, `${wd}\n`);
    const info = await client.getSession(sandbox.sessionId);
    assert.equal(info.id, sandbox.sessionId);
  });

  test('executeStreaming: streamChunks, then the executionResult with all the output', async () => {
    const events = await collect(sandbox.executeStreaming('echo a; sleep 0.2; echo b >&2; echo c; exit 4'));
    const last = events.at(-1);
    assert.deepEqual(last, { type: 'executionResult', exitCode: 4, stdout: 'a\nc\n', stderr: 'b\n', outputFiles: [] });
    const chunks = events.slice(0, -1);
    assert.ok(chunks.length >= 2);
    for (const c of chunks) {
      assert.equal(c.type, 'streamChunk');
      assert.ok(c.streamType === 'stdout' || c.streamType === 'stderr');
    }
    assert.equal(chunks.filter((c) => c.streamType === 'stdout').map((c) => c.data).join(''), 'a\nc\n');
  });

  test('execute with cwd and env', async () => {
    await sandbox.execute('mkdir -p here');
    const r = await sandbox.execute('printf "%s " "$X"; pwd', { cwd: 'here', env: { X: 'ex' } });
    assert.equal(r.exitCode, 0, r.stderr);
    assert.equal(r.stdout, `ex ${wd}/here\n`);
  });

  test('a timeout throws SandboxTimeoutError with the output so far', async () => {
    await assert.rejects(sandbox.execute('echo partial; sleep 30', { timeout: 1 }), (err) => {
      assert.ok(err instanceof SandboxTimeoutError, String(err));
      assert.equal(err.stdout, 'partial\n');
      return true;
    });
  });

  test('an abort throws SandboxAbortError', async () => {
    const ac = new AbortController();
    const started = Date.now();
    setTimeout(() => ac.abort(), 300);
    await assert.rejects(sandbox.execute('sleep 30', { signal: ac.signal }), SandboxAbortError);
    assert.ok(Date.now() - started < 10000);
    const aborted = AbortSignal.abort();
    await assert.rejects(sandbox.execute('true', { signal: aborted }), SandboxAbortError);
  });

  test('executeCode', async () => {
    const r = await sandbox.executeCode('echo "$((2 + 3))"', 'sh');
    assert.equal(r.type, 'executionResult');
    assert.equal(r.stdout, '5\n');
    const missing = await sandbox.executeCode('x', 'no-such-interpreter');
    assert.equal(missing.exitCode, 127);
    await assert.rejects(collect(sandbox.executeCodeStreaming('x', 'bad language')), /invalid characters/);
  });

  test('writeText, readText, readFile, writeFile (bytes)', async () => {
    await sandbox.writeText('deep/er/note.txt', 'hello\n');
    assert.equal(await sandbox.readText('deep/er/note.txt'), 'hello\n');
    assert.equal(await sandbox.readText(`${wd}/deep/er/note.txt`), 'hello\n');
    const bytes = new Uint8Array([0, 200, 255]);
    await sandbox.writeFile('deep/bin', bytes);
    assert.deepEqual([...(await sandbox.readFile('deep/bin'))], [0, 200, 255]);
    await assert.rejects(sandbox.readFile('deep/nothing'));
  });

  test('listFiles: sorted entries with isDir and size', async () => {
    await sandbox.writeText('listing/b.txt', 'bb');
    await sandbox.writeText('listing/a.txt', 'a');
    await sandbox.writeText('listing/dir/c.txt', 'c');
    const ln = await sandbox.execute('ln -s dir listing/zlink && ln -s nowhere listing/zdangling');
    assert.equal(ln.exitCode, 0, ln.stderr);
    const entries = await sandbox.listFiles('listing');
    assert.deepEqual(
      entries.map((e) => [e.name, e.isDir]),
      [
        ['a.txt', false],
        ['b.txt', false],
        ['dir', true],
        ['zdangling', undefined], // a symlink to nothing: only its name
        ['zlink', true], // a symlink is described by its target
      ],
    );
    assert.equal(entries[0].size, 1);
    assert.equal(entries[1].size, 2);
    assert.deepEqual(
      (await sandbox.listFiles(`${wd}/listing/dir`)).map((e) => e.name),
      ['c.txt'],
    );
  });

  test('listFiles of a missing path or of a file throws SandboxPathNotFoundError', async () => {
    await assert.rejects(sandbox.listFiles('no-such-dir'), SandboxPathNotFoundError);
    await assert.rejects(sandbox.listFiles('listing/a.txt'), SandboxPathNotFoundError);
  });

  test('removeFile', async () => {
    await sandbox.writeText('rm-me', 'x');
    await sandbox.removeFile('rm-me');
    await assert.rejects(sandbox.readFile('rm-me'));
    await assert.rejects(sandbox.removeFile('rm-me'));
  });
});

describe('NodeSandbox in an Agent', () => {
  let sandbox;
  let wd;

  before(async () => {
    sandbox = new NodeSandbox({ url, token });
    wd = (await sandbox.start()).working_directory; // so the tools' descriptions name it
  });

  after(async () => {
    if (!sandbox) return;
    const id = sandbox.sessionId;
    const receipt = await sandbox.close();
    assert.equal(receipt?.type, 'stopped');
    await assert.rejects(client.getSession(id), (err) => err instanceof SandboxError && err.status === 404);
  });

  test('the agent loop runs the vended tools on the node', async () => {
    const file = `${wd}/notes/hello.txt`;
    const model = new ScriptedModel([
      { tool: 'sandbox_file_editor', input: { command: 'create', path: file, file_text: 'hello from strands\nsecond line\n' } },
      { tool: 'sandbox_shell', input: { command: 'wc -l < notes/hello.txt; echo "$HOME" >&2' } },
      { tool: 'sandbox_file_editor', input: { command: 'str_replace', path: file, old_str: 'second', new_str: '2nd' } },
      { tool: 'sandbox_file_editor', input: { command: 'view', path: file } },
      { tool: 'sandbox_shell', input: { command: 'exit 7' } },
      { text: 'all done' },
    ]);
    const agent = new Agent({ model, sandbox, printer: false });
    assert.ok(agent.sandbox === sandbox);

    const result = await agent.invoke('make a note');
    assert.equal(model.turns.length, 0, 'the whole script was played');
    assert.equal(result.stopReason, 'endTurn');

    const results = toolResults(agent.messages);
    assert.equal(results.length, 5, JSON.stringify(results));
    for (const r of results) assert.equal(r.status, 'success', r.text);
    const [created, counted, replaced, viewed, failed] = results;
    assert.match(created.text, /hello\.txt/);
    assert.match(counted.text, /"output":"2\\n"/);
    assert.match(counted.text, /"exit_code":0/);
    assert.match(replaced.text, /2nd line/);
    assert.match(viewed.text, /hello from strands/);
    assert.match(viewed.text, /2nd line/);
    assert.match(failed.text, /"exit_code":7/);

    // the file is in the node's session, not on this host
    const { text } = await client.readText(sandbox.sessionId, 'notes/hello.txt');
    assert.equal(text, 'hello from strands\n2nd line\n');
  });

  test('the tools called directly, without a model', async () => {
    const agent = new Agent({ model: new ScriptedModel([]), sandbox, printer: false });
    await agent.initialize(); // registers the sandbox's tools (invoke() does it on its own)
    const shell = await agent.tool.sandbox_shell.invoke({ command: 'echo direct; pwd' });
    assert.equal(shell.status, 'success');
    const json = JSON.stringify(shell.content);
    assert.match(json, /direct/);
    assert.ok(json.includes(wd), json);

    const view = await agent.tool.sandbox_file_editor.invoke({ command: 'view', path: wd });
    assert.equal(view.status, 'success');
    assert.match(JSON.stringify(view.content), /notes/);
  });

  test('a shell timeout reaches the tool as exit code 124', async () => {
    const agent = new Agent({ model: new ScriptedModel([]), sandbox, printer: false });
    await agent.initialize();
    const r = await agent.tool.sandbox_shell.invoke({ command: 'echo started; sleep 30', timeout: 1 });
    assert.equal(r.status, 'error');
    const text = JSON.stringify(r.content);
    assert.match(text, /timed out/);
    assert.match(text, /exit_code\\":124/); // the partial result rides in the message, JSON in JSON
    assert.match(text, /started/);
  });
});

describe('NodeSandbox on an existing session', () => {
  test('uses it, and close() leaves it running', async () => {
    const s = await client.createSession();
    try {
      const sandbox = new NodeSandbox({ url, token, sessionId: s.id });
      assert.equal(sandbox.sessionId, s.id);
      await sandbox.writeText('shared.txt', 'from the sandbox');
      assert.equal((await client.readText(s.id, 'shared.txt')).text, 'from the sandbox');
      assert.equal(await sandbox.close(), undefined);
      assert.equal((await client.getSession(s.id)).id, s.id);
      await assert.rejects(sandbox.execute('true'), /closed/);
    } finally {
      await client.stopSession(s.id).catch(() => undefined);
    }
  });
});
