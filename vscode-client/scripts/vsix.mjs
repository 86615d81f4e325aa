// Packages reverie-<version>.vsix for this platform (the bundled server has compiled wheels).
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';

const pkg = JSON.parse(fs.readFileSync('package.json', 'utf-8'));
const target = process.env.REVERIE_VSIX_TARGET || `${process.platform}-${process.arch}`;
const out = `reverie-${pkg.version}.vsix`;
execFileSync('npx', ['--no-install', 'vsce', 'package', '--no-dependencies', '--allow-missing-repository',
  '--target', target, '--out', out], { stdio: 'inherit' });
console.log(`vsix: ${out} (${target}, ${(fs.statSync(out).size / 1e6).toFixed(1)} MB)`);
