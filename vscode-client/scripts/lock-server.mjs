// Regenerates server-requirements.txt, the lock the bundled server is vendored from: exact pins
// and sha256 hashes for every runtime dependency of pyproject.toml (plus the optional `fast`
// extra), resolved once for every platform and CPython >= 3.11 (uv's universal resolution), wheels
// only. vendor-server.mjs installs nothing that is not in this file.
//
//   npm run lock                           keep the current pins, add what pyproject now needs
//   npm run lock -- --upgrade              move every pin to the newest allowed release
//   npm run lock -- --upgrade-package X    move one
//
// uv comes from PyPI (`pip install uv`); REVERIE_BUNDLE_PYTHON picks the interpreter it is
// installed in (default python3), a `uv` on PATH is used otherwise.
import { execFileSync, spawnSync } from 'node:child_process';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.resolve(here, '..', '..');
const python = process.env.REVERIE_BUNDLE_PYTHON || 'python3';

// Relative paths, run from the repository root: uv copies this command line into the lock's
// header, so it reads the same on every machine (tests/unit/test_server_lock.py checks it).
export const COMPILE_ARGS = [
  'pip', 'compile', 'pyproject.toml',
  '--extra', 'fast',
  '--universal', '--python-version', '3.11',
  '--only-binary', ':all:',
  '--generate-hashes',
  '-o', 'vscode-client/server-requirements.txt',
];

function uv() {
  const probe = spawnSync(python, ['-m', 'uv', '--version'], { stdio: 'ignore' });
  if (probe.status === 0) {
    return [python, ['-m', 'uv']];
  }
  const onPath = spawnSync('uv', ['--version'], { stdio: 'ignore' });
  if (onPath.status === 0) {
    return ['uv', []];
  }
  throw new Error(`uv not found: "${python} -m pip install uv" (or put uv on PATH)`);
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const [command, prefix] = uv();
  execFileSync(command, [...prefix, '--quiet', ...COMPILE_ARGS, ...process.argv.slice(2)], { cwd: repo, stdio: 'inherit' });
}
