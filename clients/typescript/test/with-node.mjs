// Runs test/run.mjs against a node of its own: starts `sandbox serve
// --http` on free loopback ports (the CLI given as the first argument),
// passes its URL and token as SANDBOX_URL and SANDBOX_TOKEN, and stops it.
// Usage: node test/with-node.mjs path/to/sandbox
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';

const cli = process.argv[2];
if (!cli) {
  console.error('usage: node test/with-node.mjs path/to/sandbox');
  process.exit(2);
}
const here = path.dirname(fileURLToPath(import.meta.url));
const work = fs.mkdtempSync(path.join(process.env.TMPDIR || os.tmpdir(), 'sandbox-ts-client-'));
const node = spawn(cli, ['--json', 'serve', '--port', '0', '--http', '127.0.0.1:0',
                         '--base-dir', path.join(work, 'sessions')],
                   { stdio: ['ignore', 'pipe', 'inherit'] });
const first = await new Promise((resolve, reject) => {
  readline.createInterface({ input: node.stdout }).once('line', resolve);
  node.once('exit', (code) => reject(new Error(`sandbox serve exited with ${code}`)));
});
const ready = JSON.parse(first);
const token = fs.readFileSync(ready.http.token_file, 'utf8').trim();
const run = spawnSync(process.execPath, [path.join(here, 'run.mjs')], {
  stdio: 'inherit',
  env: { ...process.env, SANDBOX_URL: `http://127.0.0.1:${ready.http.port}`, SANDBOX_TOKEN: token },
});
node.kill('SIGTERM');
await new Promise((resolve) => node.once('exit', resolve));
fs.rmSync(work, { recursive: true, force: true });
process.exit(run.status ?? 1);
