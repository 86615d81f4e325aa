// Vendors the Reverie server and its dependencies into bundled/libs, the way the Microsoft
// python-tools template does (`pip install --target`), so users only need a Python >= 3.11.
//
//   bundled/libs/py/      the reverie package and every pure-Python dependency (any Python)
//   bundled/libs/cpXY/    compiled dependencies (pydantic-core, orjson, watchfiles, ...) built for
//                         CPython X.Y on the target platform; the client puts the folder that
//                         matches the user's interpreter first on PYTHONPATH
//   bundled/libs/shared/  compiled packages byte-identical for every bundled Python (abi3 wheels)
//
// Every dependency comes from server-requirements.txt (npm run lock): exact pins with sha256
// hashes, installed with `pip --require-hashes --no-deps --only-binary=:all:`. The target is
// REVERIE_VSIX_TARGET (linux-x64, linux-arm64, darwin-arm64, darwin-x64, win32-x64; default this
// machine; `universal` vendors this machine's build and vsix.mjs ships only its pure part). pip
// judges environment markers by the machine it runs on, so scripts/server_lock.py picks the
// lock's pins for the target and each Python version, and checks the result afterwards.
//
// Environment: REVERIE_BUNDLE_PYTHON (the interpreter that runs pip, default python3),
// REVERIE_BUNDLE_PYTHON_VERSIONS (default "3.11 3.12 3.13 3.14"), REVERIE_BUNDLE_DIR (default
// vscode-client/bundled), REVERIE_BUNDLE_LOCK (default vscode-client/server-requirements.txt),
// REVERIE_BUNDLE_FORCE=1 (rebuild even when nothing changed).
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
const bundle = process.env.REVERIE_BUNDLE_DIR ? path.resolve(process.env.REVERIE_BUNDLE_DIR) : path.join(client, 'bundled');
const libs = path.join(bundle, 'libs');
const work = path.join(bundle, '.work');
const lockFile = process.env.REVERIE_BUNDLE_LOCK ? path.resolve(process.env.REVERIE_BUNDLE_LOCK) : path.join(client, 'server-requirements.txt');
const lockHelper = path.join(here, 'server_lock.py');
const pyproject = path.join(repo, 'pyproject.toml');
const host = `${process.platform}-${process.arch}`;
const requested = process.env.REVERIE_VSIX_TARGET || host;
const target = requested === 'universal' ? host : requested;

if (!fs.existsSync(lockFile)) {
  throw new Error(`vendor: ${lockFile} is missing; the bundle installs only from that lock (npm run lock writes it)`);
}

function pip(args, options = {}) {
  return execFileSync(python, ['-m', 'pip', '-qq', ...args], {
    stdio: ['ignore', 'ignore', options.quiet ? 'pipe' : 'inherit'],
    encoding: 'utf-8',
    env: { ...process.env, PIP_DISABLE_PIP_VERSION_CHECK: '1', PIP_ROOT_USER_ACTION: 'ignore' },
  });
}

/** server_lock.py with the lock, pyproject and target filled in (exit status 2: a clear refusal). */
function lockTool(command, versions, extra = []) {
  return execFileSync(python, [lockHelper, command, '--lock', lockFile, '--pyproject', pyproject, '--target', target,
    ...versions.flatMap((v) => ['--python', v]), ...extra], { encoding: 'utf-8', stdio: ['ignore', 'pipe', 'inherit'] });
}

const started = Date.now();

// Skip the work when nothing that goes into the bundle changed (warm CI machines).
function sourceDigest() {
  const hash = createHash('sha256');
  hash.update(JSON.stringify([python, pythonVersions, target, execFileSync(python, ['-VV'], { encoding: 'utf-8' })]));
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
  hash.update(fs.readFileSync(lockHelper)); // ... and how it reads the lock
  hash.update(fs.readFileSync(lockFile));
  walk(path.join(repo, 'server'));
  return hash.digest('hex');
}
const digest = sourceDigest();
const stampPath = path.join(bundle, '.source-digest');
if (!process.env.REVERIE_BUNDLE_FORCE && fs.existsSync(stampPath) && fs.readFileSync(stampPath, 'utf-8') === digest) {
  console.log(`vendor: server sources, lock and target (${target}) unchanged, bundled/libs kept (REVERIE_BUNDLE_FORCE=1 rebuilds)`);
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

// 1. The lock's pins for this target, per Python version (markers evaluated for the target).
const plan = JSON.parse(lockTool('plan', pythonVersions));
const platformArgs = plan.platforms.flatMap((p) => ['--platform', p]);
const HASHED = ['--no-deps', '--only-binary=:all:', '--require-hashes'];
const tagOf = (version) => `cp${version.replace('.', '')}`;
const requirements = (name, pins) => {
  const file = path.join(work, `${name}.txt`);
  fs.writeFileSync(file, pins.map((pin) => pin.line).join('\n') + '\n');
  return file;
};
// Compiled only for speed, with a complete pure-Python wheel on PyPI: shipped once, pure
// (dulwich's Rust extensions were ~5 MB per Python version; memory history is small).
const PURE_FALLBACK = new Set(['dulwich']);

// 2. Download every wheel, hash-checked against the lock, one folder per Python version. A
//    version a required package has no wheel for is skipped (and recorded); an optional package
//    (the `fast` extra) without a wheel is skipped for that version only.
const wheels = (name) => path.join(work, 'wheels', name);
fs.mkdirSync(wheels('any'), { recursive: true });
const bundled = [];
const skipped = [];
const optionalBundled = {};
const optionalSkipped = {};
for (const version of pythonVersions) {
  const tag = tagOf(version);
  const cross = ['--implementation', 'cp', '--python-version', version, ...platformArgs];
  const { required, optional } = plan.versions[version];
  try {
    pip(['download', ...HASHED, ...cross, '-d', wheels(tag),
      '-r', requirements(`${tag}-required`, required.filter((pin) => !PURE_FALLBACK.has(pin.name)))]);
  } catch {
    fs.rmSync(wheels(tag), { recursive: true, force: true });
    skipped.push(version);
    console.warn(`vendor: no complete set of wheels for CPython ${version} on ${target}; that version is not bundled`);
    continue;
  }
  for (const pin of optional) {
    try {
      pip(['download', ...HASHED, ...cross, '-d', wheels(tag), '-r', requirements(`${tag}-${pin.name}`, [pin])], { quiet: true });
      (optionalBundled[pin.spec] ??= []).push(tag);
    } catch {
      (optionalSkipped[pin.spec] ??= []).push(version);
      console.warn(`vendor: no ${pin.spec} wheel for CPython ${version} on ${target} (optional, skipped)`);
    }
  }
  bundled.push(version);
}
if (!bundled.length) {
  throw new Error(`vendor: no CPython version could be bundled for ${target}`);
}
const buildingVersion = `${major}.${minor}`;
if (target === host && pythonVersions.includes(buildingVersion) && !bundled.includes(buildingVersion)) {
  throw new Error(`could not bundle the compiled dependencies for the building Python ${major}.${minor}`);
}
const fallbackPins = [...new Map(bundled.flatMap((v) => plan.versions[v].required)
  .filter((pin) => PURE_FALLBACK.has(pin.name)).map((pin) => [pin.spec, pin])).values()];
if (fallbackPins.length) {
  pip(['download', ...HASHED, '--implementation', 'py', '--python-version', bundled[0], '--platform', 'any',
    '-d', wheels('any'), '-r', requirements('pure-fallback', fallbackPins)]);
}

// 3. Pure wheels that every bundled version uses go once to py/, the rest to cpXY/.
const projectOf = (wheel) => wheel.split('-')[0].toLowerCase().replace(/[-_.]+/g, '-');
const wheelSets = new Map(bundled.map((v) => [v, new Set(fs.readdirSync(wheels(tagOf(v))))]));
const common = [...wheelSets.get(bundled[0])].filter((w) => /-none-any\.whl$/.test(w) && bundled.every((v) => wheelSets.get(v).has(w)));
const commonProjects = new Set(common.map(projectOf));
const byName = (version) => new Map([...plan.versions[version].required, ...plan.versions[version].optional].map((pin) => [pin.name, pin]));
const purePins = [...common.map((w) => byName(bundled[0]).get(projectOf(w))), ...fallbackPins];
if (purePins.some((pin) => pin === undefined)) {
  throw new Error('vendor: a downloaded wheel matches no pin of the lock');
}
// The server itself is pure Python: its sources are copied as they are. Installing the project
// with pip would build it in an isolated environment with whatever setuptools PyPI serves that
// day, the one thing in the bundle no hash would cover.
fs.cpSync(path.join(repo, 'server', 'reverie'), path.join(libs, 'py', 'reverie'), {
  recursive: true,
  filter: (source) => !/[\\/]__pycache__$/.test(source) && !source.endsWith('.pyc'),
});
pip(['install', ...HASHED, '--no-compile', '--no-index', '--find-links', wheels(tagOf(bundled[0])), '--find-links', wheels('any'),
  '--implementation', 'py', '--python-version', bundled[0], '--platform', 'any',
  '--target', path.join(libs, 'py'), '-r', requirements('pure', purePins)]);
const compiledSpecs = new Set();
for (const version of bundled) {
  const tag = tagOf(version);
  const names = new Set([...wheelSets.get(version)].map(projectOf).filter((name) => !commonProjects.has(name)));
  const pins = [...byName(version).values()].filter((pin) => names.has(pin.name));
  fs.mkdirSync(path.join(libs, tag), { recursive: true });
  if (pins.length) {
    pip(['install', ...HASHED, '--no-compile', '--no-index', '--find-links', wheels(tag),
      '--implementation', 'cp', '--python-version', version, ...platformArgs,
      '--target', path.join(libs, tag), '-r', requirements(`${tag}-install`, pins)]);
  }
  for (const pin of pins) {
    if (!(pin.spec in optionalBundled)) {
      compiledSpecs.add(pin.spec);
    }
  }
}
const pure = purePins.map((pin) => pin.spec);
const compiled = [...compiledSpecs].sort();
const bundledTags = bundled.map(tagOf);

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
if (bundledTags.length > 1) {
  for (const name of fs.readdirSync(path.join(libs, bundledTags[0])).filter((entry) => entry !== 'bin')) {
    const digests = bundledTags.map((tag) => {
      const entry = path.join(libs, tag, name);
      return fs.existsSync(entry) ? treeDigest(entry) : null;
    });
    if (digests.every((d) => d !== null && d === digests[0])) {
      fs.mkdirSync(shared, { recursive: true });
      fs.renameSync(path.join(libs, bundledTags[0], name), path.join(shared, name));
      for (const tag of bundledTags.slice(1)) {
        fs.rmSync(path.join(libs, tag, name), { recursive: true, force: true });
      }
      deduped.push(name);
    }
  }
}

// 4. Drop what a runtime never needs (console scripts, bytecode caches); record what was bundled.
for (const dir of fs.readdirSync(libs)) {
  fs.rmSync(path.join(libs, dir, 'bin'), { recursive: true, force: true });
}
for (const entry of fs.readdirSync(libs, { recursive: true, withFileTypes: true })) {
  if (entry.isDirectory() && entry.name === '__pycache__') {
    fs.rmSync(path.join(entry.parentPath ?? entry.path, entry.name), { recursive: true, force: true });
  }
}
const lockDigest = createHash('sha256').update(fs.readFileSync(lockFile)).digest('hex');
fs.writeFileSync(path.join(libs, 'MANIFEST.json'), JSON.stringify({
  target, platform: target, lock: { file: path.basename(lockFile), sha256: lockDigest },
  pythonTags: bundledTags, pythonVersionsSkipped: skipped, pure, compiled,
  optional: optionalBundled, optionalSkipped, shared: deduped,
}, null, 2) + '\n');
fs.rmSync(work, { recursive: true, force: true });

// 5. Check the tree against the lock: per bundled version, every pin the lock selects for the
//    target is there at its version, nothing else is, each wheel's tag runs on the target.
lockTool('verify', bundled, ['--libs', libs]);
// 6. Smoke test (this machine's target, when the building Python's version is bundled): the
//    bundled server imports with the building interpreter.
if (target === host && bundled.includes(buildingVersion)) {
  execFileSync(python, ['-I', '-B', '-c', 'import sys; sys.path[:0] = sys.argv[1:]; import reverie.cli, pydantic_core, orjson, watchfiles, pygls, psutil, yaml',
    path.join(libs, `cp${major}${minor}`), shared, path.join(libs, 'py')], { stdio: 'inherit' });
}
fs.writeFileSync(stampPath, digest); // only once the checks passed
const optionalNote = Object.keys(optionalSkipped).length
  ? `; optional skipped: ${Object.entries(optionalSkipped).map(([spec, versions]) => `${spec} (${versions.join(', ')})`).join(', ')}` : '';
console.log(`vendor: ${target}: ${pure.length} pure + ${compiled.length} compiled packages for ${bundledTags.join(', ')} ` +
  `(shared: ${deduped.join(', ') || 'none'}${optionalNote}) in ${((Date.now() - started) / 1000).toFixed(1)} s`);
