// Packages the extension. Default: reverie-<version>.vsix for this platform (the bundled server
// with its compiled wheels for every supported CPython). REVERIE_VSIX_TARGET=universal packages
// reverie-<version>-universal.vsix without any compiled package: the pure-Python server, which
// runs with the compiled packages of the user's own interpreter (the client says which to install
// when they are missing). Prints the size and file count of what it built.
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';

const pkg = JSON.parse(fs.readFileSync('package.json', 'utf-8'));
const target = process.env.REVERIE_VSIX_TARGET || `${process.platform}-${process.arch}`;
const universal = target === 'universal';
const out = universal ? `reverie-${pkg.version}-universal.vsix` : `reverie-${pkg.version}.vsix`;
const args = ['--no-install', 'vsce', 'package', '--no-dependencies', '--allow-missing-repository', '--out', out];
let ignoreFile;
if (universal) {
  ignoreFile = '.vscodeignore-universal';
  // vsce lets a negation win whatever the order: include only the pure server and the manifest
  const rules = fs.readFileSync('.vscodeignore', 'utf-8')
    .replace('!bundled/libs/**', '!bundled/libs/py/**\n!bundled/libs/MANIFEST.json');
  if (rules.includes('!bundled/libs/**')) {
    throw new Error('.vscodeignore changed: update the universal rules in scripts/vsix.mjs');
  }
  fs.writeFileSync(ignoreFile, rules);
  args.push('--ignoreFile', ignoreFile);
} else {
  args.push('--target', target);
}
try {
  execFileSync('npx', args, { stdio: 'inherit' });
} finally {
  if (ignoreFile) {
    fs.rmSync(ignoreFile, { force: true });
  }
}
console.log(`vsix: ${out} (${target}, ${(fs.statSync(out).size / 1e6).toFixed(1)} MB)`);
