// SandboxClient against a live sandbox node, route by route.
//
//   SANDBOX_URL=http://127.0.0.1:PORT SANDBOX_TOKEN=... node --test test/client.test.mjs
//
// Needs the compiled package (npm run build). Exit 77 when the node is not given.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';

const url = process.env.SANDBOX_URL;
const token = process.env.SANDBOX_TOKEN;
if (!url || !token) {
  console.error('client.test.mjs: SANDBOX_URL and SANDBOX_TOKEN are not set (a running sandbox node and its token): skipped, exit 77');
  process.exit(77);
}

const { SandboxClient, SandboxError, bytesOf } = await import('@sandbox/client');

const client = new SandboxClient({ baseUrl: url, token });
const utf8 = new TextDecoder();

/** Asserts that `promise` rejects with a SandboxError of this status and code. */
async function rejectsWith(promise, status, code) {
  await assert.rejects(promise, (err) => {
    assert.ok(err instanceof SandboxError, `not a SandboxError: ${err}`);
    assert.equal(err.status, status, `status of ${err.code}: ${err.message}`);
    assert.equal(err.code, code, err.message);
    assert.equal(typeof err.message, 'string');
    return true;
  });
}

/** Reads a process's output from `offset` until `done(text, answer)` holds (at most `ms`). */
async function readUntil(session, pid, done, { offset = 0, ms = 15000 } = {}) {
  let text = '';
  let next = offset;
  const deadline = Date.now() + ms;
  for (;;) {
    const out = await client.readProcessOutput(session, pid, { offset: next, wait: 1 });
    assert.equal(out.type, 'output');
    for (const c of out.chunks) {
      assert.equal(typeof c.offset, 'number');
      text += c.data;
    }
    next = out.next_offset;
    if (done(text, out)) return { text, out, next };
    if (Date.now() > deadline) assert.fail(`no such output within ${ms} ms; got ${JSON.stringify(text)}`);
    if (!out.running && out.chunks.length === 0) await new Promise((r) => setTimeout(r, 100));
  }
}

async function collect(iterable) {
  const events = [];
  for await (const e of iterable) events.push(e);
  return events;
}

let session; // the session object of the session these tests share
let sid;

before(async () => {
  session = await client.createSession({ env: { SANDBOX_CLIENT_TEST: 'yes' } });
  sid = session.id;
});

after(async () => {
  if (sid) await client.stopSession(sid).catch(() => undefined);
});

describe('sessions', () => {
  test('create answers a session object', () => {
    assert.equal(session.type, 'session');
    assert.equal(typeof session.id, 'string');
    assert.ok(session.id.length > 0);
    assert.ok(session.working_directory.startsWith('/'), session.working_directory);
    assert.equal(typeof session.home_directory, 'string');
    assert.equal(typeof session.port, 'number');
    assert.equal(typeof session.endpoint, 'string');
    assert.equal(typeof session.children, 'number');
    assert.ok(['none', 'contained'].includes(session.isolation), session.isolation);
  });

  test('list has it, get answers it', async () => {
    const all = await client.listSessions();
    assert.ok(all.some((s) => s.id === sid));
    const one = await client.getSession(sid);
    assert.equal(one.id, sid);
    assert.equal(one.working_directory, session.working_directory);
  });

  test('an unknown session is 404 session_not_found', async () => {
    await rejectsWith(client.getSession('no-such-session-42'), 404, 'session_not_found');
    await rejectsWith(client.exec('no-such-session-42', 'true'), 404, 'session_not_found');
  });

  test('the session env reaches commands', async () => {
    const r = await client.exec(sid, 'printf %s "$SANDBOX_CLIENT_TEST"');
    assert.equal(r.stdout, 'yes');
  });
});

describe('exec', () => {
  test('JSON result: exit code, stdout, stderr; non-zero is not an error', async () => {
    const r = await client.exec(sid, 'echo hello; echo oops >&2; exit 3');
    assert.equal(r.type, 'result');
    assert.equal(r.exit_code, 3);
    assert.equal(r.exit_reason, 'exited');
    assert.equal(r.stdout, 'hello\n');
    assert.equal(r.stderr, 'oops\n');
    assert.equal(r.truncated, false);
    assert.equal(r.dropped_bytes, 0);
    assert.ok(Array.isArray(r.violations));
    assert.equal(typeof r.violations_dropped, 'number');
    assert.ok(r.ended_by === null || typeof r.ended_by === 'string');
  });

  test('cwd and env', async () => {
    await client.exec(sid, 'mkdir -p work/sub');
    const r = await client.exec(sid, 'printf "%s:" "$GREETING"; pwd', { cwd: 'work/sub', env: { GREETING: 'hi there' } });
    assert.equal(r.exit_code, 0, r.stderr);
    assert.equal(r.stdout, `hi there:${session.working_directory}/work/sub\n`);
  });

  test('output that is not UTF-8 comes as stdout_b64', async () => {
    const r = await client.exec(sid, "printf 'a\\377\\376b'");
    assert.equal(r.exit_code, 0);
    assert.equal(typeof r.stdout_b64, 'string');
    assert.deepEqual([...bytesOf(r, 'stdout')], [0x61, 0xff, 0xfe, 0x62]);
    assert.equal(typeof r.stdout, 'string'); // filled by the client, lossily
  });

  test('timeout ends the command: timeout, exit code 124', async () => {
    const started = Date.now();
    const r = await client.exec(sid, 'echo before; sleep 30', { timeout: 1 });
    assert.equal(r.exit_reason, 'timeout');
    assert.equal(r.exit_code, 124);
    assert.equal(r.stdout, 'before\n');
    assert.ok(Date.now() - started < 20000);
  });

  test('a bad env name is 400 invalid_argument', async () => {
    await rejectsWith(client.exec(sid, 'true', { env: { 'BAD NAME': 'x' } }), 400, 'invalid_argument');
  });

  test('streamed: chunks as output arrives, then one result without stdout/stderr', async () => {
    const events = await collect(
      client.execStream(sid, 'for i in 1 2 3; do echo $i; sleep 0.2; done; echo done >&2; exit 5'),
    );
    const last = events.at(-1);
    assert.equal(last.type, 'result');
    assert.equal(last.exit_code, 5);
    assert.equal(last.exit_reason, 'exited');
    assert.equal('stdout' in last, false);
    assert.equal('stderr' in last, false);
    const chunks = events.slice(0, -1);
    assert.ok(chunks.length >= 2, `chunks: ${JSON.stringify(chunks)}`);
    for (const c of chunks) {
      assert.equal(c.type, 'chunk');
      assert.ok(c.stream === 'stdout' || c.stream === 'stderr');
    }
    const out = chunks.filter((c) => c.stream === 'stdout').map((c) => c.data).join('');
    const err = chunks.filter((c) => c.stream === 'stderr').map((c) => c.data).join('');
    assert.equal(out, '1\n2\n3\n');
    assert.equal(err, 'done\n');
  });

  test('streamed: the first chunk comes before the command ends', async () => {
    const started = Date.now();
    let firstAt;
    for await (const e of client.execStream(sid, 'echo early; sleep 1.5; echo late')) {
      if (e.type === 'chunk' && firstAt === undefined) firstAt = Date.now() - started;
    }
    assert.ok(firstAt !== undefined && firstAt < 1200, `first chunk after ${firstAt} ms`);
  });

  test('streamed: an error before the stream is thrown as SandboxError', async () => {
    await rejectsWith(collect(client.execStream('no-such-session-42', 'true')), 404, 'session_not_found');
  });
});

describe('code', () => {
  test('JSON result', async () => {
    const r = await client.code(sid, 'echo $((6 * 7))', 'sh');
    assert.equal(r.exit_code, 0, r.stderr);
    assert.equal(r.stdout, '42\n');
  });

  test('streamed', async () => {
    const events = await collect(client.codeStream(sid, 'for x in a b; do echo "$x"; done', 'bash'));
    assert.equal(events.at(-1).type, 'result');
    assert.equal(events.at(-1).exit_code, 0);
    assert.equal(events.filter((e) => e.type === 'chunk').map((e) => e.data).join(''), 'a\nb\n');
  });

  test('a language that is no interpreter: exit 127, named on stderr', async () => {
    const r = await client.code(sid, 'x', 'no-such-interpreter');
    assert.equal(r.exit_code, 127);
    assert.match(r.stderr, /no-such-interpreter/);
  });

  test('a malformed language is 400 invalid_argument', async () => {
    await rejectsWith(client.code(sid, 'x', 'sh; rm -rf /'), 400, 'invalid_argument');
  });
});

describe('processes', () => {
  test('start, write stdin, read output, eof ends it, list', async () => {
    const p = await client.startProcess(sid, 'cat', { stdin: true });
    assert.equal(p.type, 'process');
    assert.equal(typeof p.id, 'string');
    assert.equal(p.session, sid);
    assert.equal(p.command, 'cat');
    assert.equal(typeof p.pid, 'number');
    assert.equal(p.state, 'running');
    assert.equal(p.tty, false);
    assert.equal(p.stdin_open, true);

    const listed = await client.listProcesses(sid);
    assert.ok(listed.some((q) => q.id === p.id));

    await client.writeStdin(sid, p.id, 'hello\n');
    const first = await readUntil(sid, p.id, (text) => text.includes('hello\n'));
    assert.equal(first.out.running, true);

    await client.writeStdin(sid, p.id, new Uint8Array([0x62, 0x79, 0x65, 0x0a]), { eof: true });
    const end = await readUntil(sid, p.id, (_t, out) => !out.running, { offset: first.next });
    assert.equal(end.text, 'bye\n');
    assert.equal(end.out.exit_code, 0);
    assert.equal(end.out.exit_reason, 'exited');

    // everything again from offset 0: the log keeps it
    const all = await client.readProcessOutput(sid, p.id, { offset: 0 });
    assert.equal(all.gap, 0);
    assert.equal(all.chunks.map((c) => c.data).join(''), 'hello\nbye\n');
    assert.ok(all.chunks.every((c) => c.stream === 'stdout'));

    const again = (await client.listProcesses(sid)).find((q) => q.id === p.id);
    assert.equal(again.state, 'exited');
    assert.equal(again.exit_code, 0);
  });

  test('max limits the bytes of one read', async () => {
    const p = await client.startProcess(sid, 'printf 0123456789');
    await readUntil(sid, p.id, (_t, out) => !out.running);
    const part = await client.readProcessOutput(sid, p.id, { offset: 0, max: 4 });
    const text = part.chunks.map((c) => c.data).join('');
    assert.ok(text.length <= 4 && text.length > 0, JSON.stringify(text));
    assert.equal(part.next_offset, text.length);
  });

  test('signal TERM ends it: exit code 128 + 15', async () => {
    const p = await client.startProcess(sid, 'sleep 30');
    await client.signalProcess(sid, p.id, 'TERM');
    const end = await readUntil(sid, p.id, (_t, out) => !out.running);
    assert.equal(end.out.exit_code, 143);
    assert.match(end.out.exit_reason, /signal/);
  });

  test('signal by number', async () => {
    const p = await client.startProcess(sid, 'sleep 30');
    await client.signalProcess(sid, p.id, 9);
    const end = await readUntil(sid, p.id, (_t, out) => !out.running);
    assert.equal(end.out.exit_code, 137);
  });

  test('tty: output on stream pty, resize changes the size the program sees', async () => {
    const p = await client.startProcess(sid, 'stty size; read line; stty size', { tty: true, stdin: true, rows: 24, cols: 80 });
    assert.equal(p.tty, true);
    const first = await readUntil(sid, p.id, (text) => text.includes('24 80'));
    assert.ok(first.out.chunks.every((c) => c.stream === 'pty'));
    await client.resizeProcess(sid, p.id, 40, 100);
    await client.writeStdin(sid, p.id, 'go\n');
    await readUntil(sid, p.id, (text) => text.includes('40 100'), { offset: first.next });
  });

  test('an unknown process is 404', async () => {
    await assert.rejects(client.readProcessOutput(sid, 'p-999999'), (err) => err instanceof SandboxError && err.status === 404);
  });
});

describe('files', () => {
  test('put and get, versions, If-Match and If-None-Match', async () => {
    const w1 = await client.writeFile(sid, 'docs/a.txt', 'one\n');
    assert.equal(w1.type, 'written');
    assert.equal(w1.bytes, 4);
    assert.equal(typeof w1.version, 'string');
    assert.match(w1.path, /a\.txt$/);

    const r1 = await client.readText(sid, 'docs/a.txt');
    assert.equal(r1.text, 'one\n');
    assert.equal(r1.version, w1.version);

    const w2 = await client.writeFile(sid, 'docs/a.txt', 'two\n', { ifMatch: w1.version });
    assert.notEqual(w2.version, w1.version);

    // a writer holding the old version loses
    await rejectsWith(client.writeFile(sid, 'docs/a.txt', 'three\n', { ifMatch: w1.version }), 412, 'precondition_failed');
    assert.equal((await client.readText(sid, 'docs/a.txt')).text, 'two\n');

    // create-only
    await rejectsWith(client.writeFile(sid, 'docs/a.txt', 'x', { ifNoneMatch: '*' }), 412, 'precondition_failed');
    const created = await client.writeFile(sid, 'docs/new.txt', 'fresh', { ifNoneMatch: '*' });
    assert.equal(created.bytes, 5);
  });

  test('bytes that are not UTF-8, and a streamed body', async () => {
    const bytes = new Uint8Array([0, 255, 1, 254, 10]);
    await client.writeFile(sid, 'bin/raw', bytes);
    assert.deepEqual([...(await client.readFile(sid, 'bin/raw')).data], [...bytes]);

    const parts = ['stream', 'ed ', 'body\n'];
    const body = new ReadableStream({
      start(controller) {
        for (const p of parts) controller.enqueue(new TextEncoder().encode(p));
        controller.close();
      },
    });
    const w = await client.writeFile(sid, 'bin/streamed.txt', body);
    assert.equal(w.bytes, 'streamed body\n'.length);
    assert.equal((await client.readText(sid, 'bin/streamed.txt')).text, 'streamed body\n');
  });

  test('start_line and end_line', async () => {
    await client.writeFile(sid, 'lines.txt', 'l1\nl2\nl3\nl4\n');
    const { data } = await client.readFile(sid, 'lines.txt', { startLine: 2, endLine: 3 });
    assert.equal(utf8.decode(data), 'l2\nl3\n');
  });

  test('names with spaces and non-ASCII letters, and absolute paths', async () => {
    await client.writeFile(sid, 'odd names/ä ö.txt', 'umlauts');
    assert.equal((await client.readText(sid, 'odd names/ä ö.txt')).text, 'umlauts');
    const r = await client.exec(sid, "cat 'odd names/ä ö.txt'");
    assert.equal(r.stdout, 'umlauts');

    const abs = `${session.working_directory}/abs/file.txt`;
    await client.writeFile(sid, abs, 'absolute');
    assert.equal((await client.readText(sid, 'abs/file.txt')).text, 'absolute');
    assert.equal((await client.readText(sid, abs)).text, 'absolute');
  });

  test('missing file is 404 path_not_found; a directory is not a regular file', async () => {
    await rejectsWith(client.readFile(sid, 'no/such/file'), 404, 'path_not_found');
    await client.writeFile(sid, 'adir/inner.txt', 'x');
    await assert.rejects(client.readFile(sid, 'adir'), (err) => err instanceof SandboxError && err.status >= 400);
  });

  test('list: entry frames, then done', async () => {
    await client.writeFile(sid, 'tree/a.txt', 'aaa');
    await client.writeFile(sid, 'tree/sub/b.txt', 'bb');
    const { entries, done } = await client.listAll(sid, 'tree', { depth: 1 });
    assert.equal(done.type, 'done');
    assert.equal(done.error, null);
    assert.equal(done.count, entries.length);
    const byName = Object.fromEntries(entries.map((e) => [e.name, e]));
    assert.equal(byName['a.txt']?.type, 'entry');
    assert.equal(byName['a.txt']?.kind, 'file');
    assert.equal(byName['a.txt']?.size, 3);
    assert.equal(byName['sub']?.kind, 'dir');
    assert.ok(!entries.some((e) => e.name === 'b.txt'), 'depth 1 goes no deeper');

    const deep = await client.listAll(sid, 'tree', { depth: 2 });
    const b = deep.entries.find((e) => e.name === 'b.txt');
    assert.ok(b, JSON.stringify(deep.entries));
    assert.equal(b.path, 'sub/b.txt');

    // the generator form: entries by for-await, the done frame as its return value
    const it = client.listFiles(sid, 'tree', { depth: 1 });
    let step;
    let n = 0;
    while (!(step = await it.next()).done) n++;
    assert.equal(step.value.count, n);
  });

  test('list of a missing directory is path_not_found', async () => {
    let err;
    try {
      const { done } = await client.listAll(sid, 'no-such-dir');
      err = done.error; // an error in the done frame is allowed too
    } catch (e) {
      err = e;
    }
    assert.ok(err, 'no error for a missing directory');
    assert.equal(err.code, 'path_not_found');
  });

  test('stat', async () => {
    const w = await client.writeFile(sid, 'stat-me.txt', '12345');
    const s = await client.stat(sid, 'stat-me.txt');
    assert.equal(s.type, 'stat');
    assert.equal(s.kind, 'file');
    assert.equal(s.size, 5);
    assert.equal(s.version, w.version);
    for (const f of ['mtime_ns', 'dev', 'ino']) assert.equal(typeof s[f], 'number', f);
    assert.equal((await client.stat(sid, 'tree')).kind, 'dir');
  });

  test('remove', async () => {
    await client.writeFile(sid, 'gone.txt', 'bye');
    const r = await client.removeFile(sid, 'gone.txt');
    assert.equal(r.type, 'removed');
    assert.match(r.path, /gone\.txt$/);
    await rejectsWith(client.stat(sid, 'gone.txt'), 404, 'path_not_found');
    await rejectsWith(client.removeFile(sid, 'gone.txt'), 404, 'path_not_found');
  });
});

describe('auth', () => {
  test('a wrong token is 401 unauthorized', async () => {
    const bad = new SandboxClient({ baseUrl: url, token: `${token}-wrong` });
    await rejectsWith(bad.listSessions(), 401, 'unauthorized');
    await rejectsWith(bad.exec(sid, 'true'), 401, 'unauthorized');
  });

  test('no token is 401 unauthorized', async () => {
    const none = new SandboxClient({ baseUrl: url, token: '' });
    await rejectsWith(none.listSessions(), 401, 'unauthorized');
  });

  test('the OpenAPI document', async () => {
    const doc = await client.openapi();
    assert.equal(typeof doc, 'object');
    assert.ok('openapi' in doc || 'swagger' in doc, Object.keys(doc).join(','));
  });
});

describe('stop', () => {
  test('stopping a session ends its processes; afterwards it is gone', async () => {
    const s = await client.createSession();
    await client.startProcess(s.id, 'sleep 60');
    const receipt = await client.stopSession(s.id);
    assert.equal(receipt.type, 'stopped');
    assert.equal(receipt.id, s.id);
    assert.ok(receipt.ended >= 1, JSON.stringify(receipt));
    assert.equal(typeof receipt.killed, 'number');
    assert.equal(receipt.survivors, 0);
    await rejectsWith(client.getSession(s.id), 404, 'session_not_found');
    assert.ok(!(await client.listSessions()).some((x) => x.id === s.id));
  });
});
