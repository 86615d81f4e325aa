// npm run package:all — lint, type-check and bundle once, then vendor the server from the lock and
// package it for every platform target and the universal vsix, one after the other, and print the
// size and file count of each. This machine's target goes last (then universal, which reuses its
// vendored tree), so bundled/libs is left as `npm run package` would leave it.
import { execFileSync } from 'node:child_process';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { HOST, PLATFORM_TARGETS, describe, packageVsix } from './vsix.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const client = path.resolve(here, '..');
const run = (command, args, env = {}) =>
  execFileSync(command, args, { cwd: client, stdio: 'inherit', env: { ...process.env, ...env }, shell: process.platform === 'win32' && command === 'npm' });

for (const step of ['lint', 'typecheck', 'bundle']) {
  run('npm', ['run', '--silent', step]);
}
const order = [...PLATFORM_TARGETS.filter((t) => t !== HOST), ...(PLATFORM_TARGETS.includes(HOST) ? [HOST] : []), 'universal'];
const built = [];
for (const target of order) {
  const started = Date.now();
  run(process.execPath, [path.join(here, 'vendor-server.mjs')], { REVERIE_VSIX_TARGET: target });
  built.push({ ...packageVsix(target), seconds: (Date.now() - started) / 1000 });
}
console.log('\npackage:all');
for (const result of built) {
  console.log(`  ${describe(result)} in ${result.seconds.toFixed(0)} s`);
}
