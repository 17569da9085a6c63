// Runs the two test files with node's test runner against a live sandbox
// node. Exit 77 (skipped) when SANDBOX_URL or SANDBOX_TOKEN is not set.
import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

if (!process.env.SANDBOX_URL || !process.env.SANDBOX_TOKEN) {
  console.error('test: SANDBOX_URL and SANDBOX_TOKEN are not set (a running sandbox node and its token): skipped, exit 77');
  process.exit(77);
}
const here = dirname(fileURLToPath(import.meta.url));
const files = ['client.test.mjs', 'strands.test.mjs'];
const run = spawnSync(process.execPath, ['--test', ...files.map((f) => join(here, f))], { stdio: 'inherit' });
process.exit(run.status ?? 1);
