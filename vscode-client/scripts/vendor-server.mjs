// Vendors the Reverie server and its dependencies into bundled/libs, the way the Microsoft
// python-tools template does (`pip install --target`), so users only need a Python >= 3.11.
//
//   bundled/libs/py/      the reverie package and every pure-Python dependency (any Python)
//   bundled/libs/cpXY/    compiled dependencies (pydantic-core, orjson, watchfiles, ...) built for
//                         CPython X.Y on this machine's platform; the client puts the folder that
//                         matches the user's interpreter first on PYTHONPATH.
//
// Versions come from one pip resolution (`pip install --dry-run --report`) against the minimum
// Python, so every folder holds the same pins. The .vsix is therefore platform-specific
// (vsce --target, see vsix.mjs) but covers every supported CPython minor version.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const client = path.resolve(here, '..');
const repo = path.resolve(client, '..');
const python = process.env.REVERIE_BUNDLE_PYTHON || 'python3';
const pythonVersions = (process.env.REVERIE_BUNDLE_PYTHON_VERSIONS || '3.11 3.12 3.13 3.14').split(/\s+/).filter(Boolean);
const libs = path.join(client, 'bundled', 'libs');
const work = path.join(client, 'bundled', '.work');

function pip(args, options = {}) {
  return execFileSync(python, ['-m', 'pip', '-qq', ...args], {
    stdio: options.capture ? ['ignore', 'pipe', 'inherit'] : ['ignore', 'ignore', 'inherit'],
    encoding: 'utf-8',
    env: { ...process.env, PIP_DISABLE_PIP_VERSION_CHECK: '1', PIP_ROOT_USER_ACTION: 'ignore' },
  });
}

const started = Date.now();

// Skip the work when nothing that goes into the bundle changed (warm CI machines).
function sourceDigest() {
  const hash = createHash('sha256');
  hash.update(JSON.stringify([python, pythonVersions, execFileSync(python, ['-VV'], { encoding: 'utf-8' })]));
  const walk = (dir) => {
    for (const entry of fs.readdirSync(dir, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory() && entry.name !== '__pycache__') {
        walk(full);
      } else if (entry.isFile() && !entry.name.endsWith('.pyc')) {
        hash.update(path.relative(repo, full)).update(fs.readFileSync(full));
      }
    }
  };
  hash.update(fs.readFileSync(path.join(repo, 'pyproject.toml')));
  hash.update(fs.readFileSync(fileURLToPath(import.meta.url))); // this script's own choices
  walk(path.join(repo, 'server'));
  return hash.digest('hex');
}
const digest = sourceDigest();
const stampPath = path.join(client, 'bundled', '.source-digest');
if (!process.env.REVERIE_BUNDLE_FORCE && fs.existsSync(stampPath) && fs.readFileSync(stampPath, 'utf-8') === digest) {
  console.log('vendor: server sources unchanged, bundled/libs kept (REVERIE_BUNDLE_FORCE=1 rebuilds)');
  process.exit(0);
}
fs.rmSync(libs, { recursive: true, force: true });
fs.rmSync(stampPath, { force: true });
fs.rmSync(work, { recursive: true, force: true });
fs.mkdirSync(work, { recursive: true });

const [major, minor] = JSON.parse(execFileSync(python, ['-c', 'import json,sys;print(json.dumps(sys.version_info[:2]))'], { encoding: 'utf-8' }));
if (major !== 3 || minor < 11) {
  throw new Error(`${python} is Python ${major}.${minor}; vendoring needs Python >= 3.11`);
}

// 1. One resolution of the server's dependencies.
const reportPath = path.join(work, 'report.json');
pip(['install', '--dry-run', '--ignore-installed', '--only-binary=:all:', '--report', reportPath, repo]);
const report = JSON.parse(fs.readFileSync(reportPath, 'utf-8'));
const pure = [];
const compiled = [];
// Compiled only for speed, with a complete pure-Python wheel on PyPI: shipped once, pure
// (dulwich's Rust extensions were ~5 MB per Python version; memory history is small).
const PURE_FALLBACK = new Set(['dulwich']);
const pureFallback = [];
for (const item of report.install) {
  const name = item.metadata.name;
  if (name.toLowerCase() === 'reverie') {
    continue;
  }
  const url = item.download_info?.url ?? '';
  const pin = `${name}==${item.metadata.version}`;
  if (PURE_FALLBACK.has(name.toLowerCase())) {
    pureFallback.push(pin);
    continue;
  }
  (url.endsWith('-none-any.whl') ? pure : compiled).push(pin);
}

// 2. Pure Python: the server itself plus every pure dependency.
pip(['install', '--no-deps', '--no-compile', '--target', path.join(libs, 'py'), repo]);
pip(['install', '--no-deps', '--no-compile', '--only-binary=:all:', '--target', path.join(libs, 'py'), ...pure]);
if (pureFallback.length) {
  pip(['install', '--no-deps', '--no-compile', '--only-binary=:all:', '--platform', 'any', '--implementation', 'py',
    '--python-version', '3.11', '--target', path.join(libs, 'py'), ...pureFallback]);
}

// 3. Compiled dependencies, once per supported CPython version, for this platform.
const platforms = JSON.parse(execFileSync(python, ['-c',
  'import json; from pip._vendor.packaging import tags; print(json.dumps(list(tags.platform_tags())))'], { encoding: 'utf-8' }));
const bundled = [];
const skipped = [];
for (const version of pythonVersions) {
  const tag = `cp${version.replace('.', '')}`;
  const target = path.join(libs, tag);
  try {
    pip(['install', '--no-deps', '--no-compile', '--only-binary=:all:', '--implementation', 'cp',
      '--python-version', version, ...platforms.flatMap((p) => ['--platform', p]), '--target', target, ...compiled]);
    bundled.push(tag);
  } catch {
    fs.rmSync(target, { recursive: true, force: true });
    skipped.push(version);
    console.warn(`vendor: no wheels for CPython ${version} on this platform; that version is not bundled`);
  }
}
if (!bundled.includes(`cp${major}${minor}`)) {
  throw new Error(`could not bundle the compiled dependencies for the building Python ${major}.${minor}`);
}

// 3b. Compiled packages byte-identical for every bundled Python (abi3 wheels such as
//     watchfiles) move once to bundled/libs/shared instead of being shipped per version.
function treeDigest(root) {
  const hash = createHash('sha256');
  const walk = (dir) => {
    for (const entry of fs.readdirSync(dir, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      const full = path.join(dir, entry.name);
      hash.update(path.relative(root, full));
      if (entry.isDirectory()) {
        walk(full);
      } else {
        hash.update(fs.readFileSync(full));
      }
    }
  };
  if (fs.statSync(root).isDirectory()) {
    walk(root);
  } else {
    hash.update(fs.readFileSync(root));
  }
  return hash.digest('hex');
}
const shared = path.join(libs, 'shared');
const deduped = [];
if (bundled.length > 1) {
  for (const name of fs.readdirSync(path.join(libs, bundled[0]))) {
    const digests = bundled.map((tag) => {
      const entry = path.join(libs, tag, name);
      return fs.existsSync(entry) ? treeDigest(entry) : null;
    });
    if (digests.every((d) => d !== null && d === digests[0])) {
      fs.mkdirSync(shared, { recursive: true });
      fs.renameSync(path.join(libs, bundled[0], name), path.join(shared, name));
      for (const tag of bundled.slice(1)) {
        fs.rmSync(path.join(libs, tag, name), { recursive: true, force: true });
      }
      deduped.push(name);
    }
  }
}

// 4. Drop what a runtime never needs (test doubles such as the fake LLM server included);
//    record what was bundled.
fs.rmSync(path.join(libs, 'py', 'reverie', 'testing'), { recursive: true, force: true });
for (const dir of fs.readdirSync(libs)) {
  fs.rmSync(path.join(libs, dir, 'bin'), { recursive: true, force: true });
}
for (const entry of fs.readdirSync(libs, { recursive: true, withFileTypes: true })) {
  if (entry.isDirectory() && entry.name === '__pycache__') {
    fs.rmSync(path.join(entry.parentPath ?? entry.path, entry.name), { recursive: true, force: true });
  }
}
fs.writeFileSync(path.join(libs, 'MANIFEST.json'), JSON.stringify({
  platform: `${process.platform}-${process.arch}`, pythonTags: bundled, pythonVersionsSkipped: skipped, pure: [...pure, ...pureFallback], compiled, shared: deduped,
}, null, 2) + '\n');
fs.rmSync(work, { recursive: true, force: true });

// 5. Smoke test: the bundled server imports with the building interpreter.
execFileSync(python, ['-I', '-B', '-c', 'import sys; sys.path[:0] = sys.argv[1:]; import reverie.cli, pydantic_core, orjson, watchfiles, pygls',
  path.join(libs, `cp${major}${minor}`), shared, path.join(libs, 'py')], { stdio: 'inherit' });
fs.writeFileSync(stampPath, digest); // only once the smoke test passed
console.log(`vendor: ${pure.length} pure + ${compiled.length} compiled packages for ${bundled.join(', ')} (shared: ${deduped.join(', ') || 'none'}) in ${((Date.now() - started) / 1000).toFixed(1)} s`);
