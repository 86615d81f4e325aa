// Packages the extension for one target: REVERIE_VSIX_TARGET = linux-x64, linux-arm64,
// darwin-arm64, darwin-x64 or win32-x64 (vsce --target; bundled/libs must have been vendored for
// that target, see vendor-server.mjs), or `universal`: reverie-<version>-universal.vsix without
// any compiled package, the pure-Python server, which runs with the compiled packages of the
// user's own interpreter (the client says which to install when they are missing).
// `node scripts/vsix.mjs TARGET` overrides the variable. Unset: this machine's target, written as reverie-<version>.vsix (what the real-editor tests
// install); set: reverie-<version>-<target>.vsix. Prints the size and file count of what it built.
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import { createRequire } from 'node:module';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';

const client = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const HOST = `${process.platform}-${process.arch}`;
export const PLATFORM_TARGETS = ['linux-x64', 'linux-arm64', 'darwin-arm64', 'win32-x64'];

/** Size in bytes and number of entries of a .vsix, from its zip end-of-central-directory record. */
export function vsixStats(file) {
  const data = fs.readFileSync(file);
  for (let at = data.length - 22; at >= Math.max(0, data.length - 22 - 0xffff); at--) {
    if (data.readUInt32LE(at) === 0x06054b50) {
      return { bytes: data.length, files: data.readUInt16LE(at + 10) };
    }
  }
  throw new Error(`${file} is not a zip archive`);
}

function vsce(args) {
  // vsce's own entry point under this node: no npx, no .cmd shim (which Windows will not spawn
  // without a shell)
  const require = createRequire(path.join(client, 'package.json'));
  const manifest = require.resolve('@vscode/vsce/package.json');
  const bin = JSON.parse(fs.readFileSync(manifest, 'utf-8')).bin.vsce;
  execFileSync(process.execPath, [path.join(path.dirname(manifest), bin), ...args], { cwd: client, stdio: 'inherit' });
}

/** Builds the .vsix for `target` from the current bundled/libs; returns its path and figures. */
export function packageVsix(target, { defaultName = false } = {}) {
  const pkg = JSON.parse(fs.readFileSync(path.join(client, 'package.json'), 'utf-8'));
  const universal = target === 'universal';
  const out = defaultName ? `reverie-${pkg.version}.vsix` : `reverie-${pkg.version}-${target}.vsix`;
  const manifestPath = path.join(client, 'bundled', 'libs', 'MANIFEST.json');
  if (!fs.existsSync(manifestPath)) {
    throw new Error('bundled/libs is empty: vendor the server first (npm run vendor)');
  }
  const manifestText = fs.readFileSync(manifestPath, 'utf-8');
  const manifest = JSON.parse(manifestText);
  const vendored = manifest.target;
  if (!universal && vendored !== target) {
    throw new Error(`bundled/libs holds the server for ${vendored}, not ${target}: REVERIE_VSIX_TARGET=${target} npm run vendor`);
  }
  const args = ['package', '--no-dependencies', '--allow-missing-repository', '--out', out];
  let ignoreFile;
  if (universal) {
    ignoreFile = path.join(client, '.vscodeignore-universal');
    // vsce lets a negation win whatever the order: include only the pure server and the manifest
    const rules = fs.readFileSync(path.join(client, '.vscodeignore'), 'utf-8')
      .replace('!bundled/libs/**', '!bundled/libs/py/**\n!bundled/libs/MANIFEST.json');
    if (rules.includes('!bundled/libs/**')) {
      throw new Error('.vscodeignore changed: update the universal rules in scripts/vsix.mjs');
    }
    fs.writeFileSync(ignoreFile, rules);
    args.push('--ignoreFile', path.basename(ignoreFile));
    // the shipped manifest describes what ships: no compiled folders (restored below)
    fs.writeFileSync(manifestPath, JSON.stringify({
      ...manifest, target: 'universal', platform: 'universal', pureFrom: vendored, pythonTags: [], pythonVersionsSkipped: [], shared: [], optional: {}, optionalSkipped: {},
    }, null, 2) + '\n');
  } else {
    args.push('--target', target);
  }
  try {
    vsce(args);
  } finally {
    if (ignoreFile) {
      fs.rmSync(ignoreFile, { force: true });
      fs.writeFileSync(manifestPath, manifestText);
    }
  }
  const file = path.join(client, out);
  return { target, file, ...vsixStats(file) };
}

export function describe({ target, file, bytes, files }) {
  return `${path.basename(file)} (${target}, ${(bytes / 2 ** 20).toFixed(1)} MiB, ${files} files)`;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const requested = process.argv[2] || process.env.REVERIE_VSIX_TARGET;
  console.log(`vsix: ${describe(packageVsix(requested || HOST, { defaultName: !requested }))}`);
}
