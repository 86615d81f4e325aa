/**
 * Which Python runs the server: the `reverie.server.python` setting, else the Python extension's
 * active interpreter (when that extension is installed), else `python3`. The chosen interpreter is
 * probed once, so a missing or too-old Python gives one clear message instead of a crash loop.
 */
import { execFile } from 'node:child_process';
import * as vscode from 'vscode';

import { ClientSettings, MIN_PYTHON, PYTHON_EXTENSION_ID, SETTINGS_SECTION } from './constants';

export interface Interpreter {
  /** The command (path or name) that starts Python. */
  command: string;
  /** Where the choice came from, for messages. */
  source: 'setting' | 'python extension' | 'default';
}

export interface ProbedInterpreter extends Interpreter {
  version: [number, number, number];
  /** e.g. `cp311`: the folder of bundled compiled dependencies that fits this interpreter. */
  abiTag: string;
  executable: string;
}

/** The subset of the Python extension's API this client uses. */
interface PythonExtensionApi {
  environments: {
    getActiveEnvironmentPath(resource?: vscode.Uri): { path: string };
    resolveEnvironment(env: { path: string } | string): Promise<{ executable: { uri?: vscode.Uri } } | undefined>;
    onDidChangeActiveEnvironmentPath: vscode.Event<unknown>;
  };
}

export class InterpreterError extends Error {}

async function pythonExtensionApi(): Promise<PythonExtensionApi | undefined> {
  const extension = vscode.extensions.getExtension<PythonExtensionApi>(PYTHON_EXTENSION_ID);
  if (!extension) {
    return undefined;
  }
  try {
    const api = extension.isActive ? extension.exports : await extension.activate();
    return api?.environments ? api : undefined;
  } catch {
    return undefined;
  }
}

/** Fires when the Python extension's active interpreter changes (no-op without the extension). */
export async function onInterpreterChanged(listener: () => void): Promise<vscode.Disposable> {
  const api = await pythonExtensionApi();
  return api ? api.environments.onDidChangeActiveEnvironmentPath(listener) : new vscode.Disposable(() => undefined);
}

export async function chooseInterpreter(resource?: vscode.Uri): Promise<Interpreter> {
  const configured = vscode.workspace.getConfiguration(SETTINGS_SECTION, resource).get<string | null>(ClientSettings.python);
  if (configured && configured.trim()) {
    return { command: expandVariables(configured.trim(), resource), source: 'setting' };
  }
  const api = await pythonExtensionApi();
  if (api) {
    try {
      const active = api.environments.getActiveEnvironmentPath(resource);
      const resolved = await api.environments.resolveEnvironment(active);
      const path = resolved?.executable.uri?.fsPath;
      if (path) {
        return { command: path, source: 'python extension' };
      }
    } catch {
      // fall through to the default
    }
  }
  return { command: process.platform === 'win32' ? 'python' : 'python3', source: 'default' };
}

function expandVariables(value: string, resource?: vscode.Uri): string {
  const folder = (resource && vscode.workspace.getWorkspaceFolder(resource)) ?? vscode.workspace.workspaceFolders?.[0];
  return value
    .replace(/\$\{workspaceFolder\}/g, folder?.uri.fsPath ?? '')
    .replace(/\$\{userHome\}/g, process.env.HOME ?? process.env.USERPROFILE ?? '')
    .replace(/^~(?=$|[\\/])/, process.env.HOME ?? process.env.USERPROFILE ?? '~');
}

const PROBE = 'import json, sys; print(json.dumps({"v": list(sys.version_info[:3]), "impl": sys.implementation.name, "exe": sys.executable}))';

/** Runs the interpreter once; throws an InterpreterError that says what to do about it. */
export function probeInterpreter(interpreter: Interpreter): Promise<ProbedInterpreter> {
  const fix = 'Install Python 3.11 or newer, or point the "reverie.server.python" setting at one.';
  return new Promise((resolve, reject) => {
    execFile(interpreter.command, ['-I', '-c', PROBE], { timeout: 15000, windowsHide: true }, (error, stdout) => {
      if (error) {
        const what = (error as NodeJS.ErrnoException).code === 'ENOENT' ? 'was not found' : `could not run (${error.message.split('\n')[0]})`;
        reject(new InterpreterError(`Python "${interpreter.command}" (from the ${interpreter.source}) ${what}. ${fix}`));
        return;
      }
      try {
        const info = JSON.parse(stdout.trim()) as { v: [number, number, number]; impl: string; exe: string };
        const [major, minor] = info.v;
        if (info.impl !== 'cpython' || major < MIN_PYTHON[0] || (major === MIN_PYTHON[0] && minor < MIN_PYTHON[1])) {
          reject(new InterpreterError(
            `Reverie needs CPython ${MIN_PYTHON.join('.')} or newer; "${interpreter.command}" (from the ${interpreter.source}) is ${info.impl} ${info.v.join('.')}. ${fix}`));
          return;
        }
        resolve({ ...interpreter, version: info.v, abiTag: `cp${major}${minor}`, executable: info.exe });
      } catch {
        reject(new InterpreterError(`Python "${interpreter.command}" gave an unexpected answer. ${fix}`));
      }
    });
  });
}
