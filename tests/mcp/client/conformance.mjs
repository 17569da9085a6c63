// mcp.conformance: the official MCP conformance suite
// (@modelcontextprotocol/conformance, pinned) against `sandbox serve
// --http`'s /mcp and against `sandbox mcp` over stdio. The suite speaks
// HTTP without a token: a proxy in this script adds the node's bearer
// token, and a bridge built from the SDK's own transports carries HTTP to
// a `sandbox mcp` process. conformance-baseline.yaml lists the scenarios
// that do not apply, each with its reason. Usage: node conformance.mjs
// path/to/sandbox
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';

import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';

const cli = process.argv[2];
const here = path.dirname(fileURLToPath(import.meta.url));
const work = fs.mkdtempSync(path.join(process.env.TMPDIR || os.tmpdir(), 'sandbox-conformance-'));
const suite = path.join(here, 'node_modules', '.bin', 'conformance');
const children = [];

function listen(server) {
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => resolve(server.address().port)));
}

/// Runs the suite against `url`; resolves with its exit status.
function runSuite(name, url, baseline) {
  console.log(`mcp.conformance: ${name}: ${url}`);
  const run = spawn(suite, ['server', '--url', url, '--expected-failures', baseline],
                    { stdio: 'inherit' });
  return new Promise((resolve) => run.once('exit', (code) => resolve(code ?? 1)));
}

/// `sandbox serve --http` and a proxy that adds its token.
async function httpTarget() {
  const node = spawn(cli, ['--json', 'serve', '--port', '0', '--http', '127.0.0.1:0',
                           '--base-dir', path.join(work, 'sessions')],
                     { stdio: ['ignore', 'pipe', 'inherit'] });
  children.push(node);
  const first = await new Promise((resolve) =>
    readline.createInterface({ input: node.stdout }).once('line', resolve));
  const ready = JSON.parse(first);
  const token = fs.readFileSync(ready.http.token_file, 'utf8').trim();
  const proxy = http.createServer((req, res) => {
    const up = http.request({ host: '127.0.0.1', port: ready.http.port, path: req.url,
                              method: req.method,
                              headers: { ...req.headers, authorization: `Bearer ${token}` } },
                            (r) => { res.writeHead(r.statusCode, r.headers); r.pipe(res); });
    up.on('error', () => res.destroy());
    res.on('close', () => up.destroy());
    req.pipe(up);
  });
  return `http://127.0.0.1:${await listen(proxy)}/mcp`;
}

/// HTTP to `sandbox mcp` processes, one per MCP session, through the
/// SDK's server and client transports.
async function stdioTarget() {
  const sessions = new Map();
  const server = http.createServer(async (req, res) => {
    const id = req.headers['mcp-session-id'];
    let s = id ? sessions.get(id) : undefined;
    if (!s) {
      if (id) {
        res.writeHead(404).end();
        return;
      }
      const stdio = new StdioClientTransport({
        command: cli, args: ['mcp', '--workdir', work], stderr: 'ignore' });
      const web = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (sid) => sessions.set(sid, s),
        enableDnsRebindingProtection: true,
        allowedHosts: [`127.0.0.1:${server.address().port}`, `localhost:${server.address().port}`],
      });
      const tokens = new Map(); // progress token -> request id
      web.onmessage = (msg) => {
        const token = msg.params?._meta?.progressToken;
        if (token !== undefined) tokens.set(token, msg.id);
        stdio.send(msg);
      };
      stdio.onmessage = (msg) => {
        const related = msg.method === 'notifications/progress'
          ? tokens.get(msg.params.progressToken) : undefined;
        web.send(msg, related !== undefined ? { relatedRequestId: related } : undefined);
      };
      web.onclose = () => stdio.close();
      await stdio.start();
      await web.start();
      s = { web, stdio };
    }
    await s.web.handleRequest(req, res);
  });
  return `http://127.0.0.1:${await listen(server)}/mcp`;
}

let status = 0;
try {
  status |= await runSuite('sandbox serve --http', await httpTarget(),
                           path.join(here, 'conformance-baseline.yaml'));
  status |= await runSuite('sandbox mcp (stdio)', await stdioTarget(),
                           path.join(here, 'conformance-baseline.yaml'));
} catch (e) {
  console.error(`mcp.conformance: ${e?.stack || e}`);
  status = 1;
}
for (const c of children) c.kill('SIGTERM');
fs.rmSync(work, { recursive: true, force: true });
process.exit(status);
