/**
 * Starts, stops and restarts the Reverie language server (`<python> -m reverie serve`) and gives
 * the rest of the extension one way to call it. All behaviour lives in the server; this only
 * wires processes, settings and the API key.
 */
import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import {
  CloseAction,
  DidChangeConfigurationNotification,
  ErrorAction,
  LanguageClient,
  RevealOutputChannelOn,
  State,
  type LanguageClientOptions,
  type ServerOptions,
} from 'vscode-languageclient/node';

import {
  API_KEY_ENV,
  API_KEY_SECRET,
  CLIENT_ID,
  CLIENT_NAME,
  ClientSettings,
  Commands,
  EDITOR_STORAGE_OPTION,
  RESTART_DELAY_MS,
  SERVER_SETTING_KEYS,
  SETTINGS_SECTION,
} from './constants';
import { type EditorStorage } from './generated/protocol';
import { chooseInterpreter, InterpreterError, probeInterpreter, type ProbedInterpreter } from './python';

/** Where VS Code keeps this extension's data, as the server's `EditorStorage` payload. */
export function editorStorage(context: vscode.ExtensionContext): EditorStorage {
  return {
    storageUri: context.storageUri?.toString() ?? null,
    globalStorageUri: context.globalStorageUri.toString(),
  };
}

/** A server command failed or could not be sent; `message` is fit for the user. */
export class ServerCommandError extends Error {}

type ImportStrategy = 'useBundled' | 'fromEnvironment';

/** The settings the user set explicitly (any scope), so `REVERIE_*` env vars still apply below. */
export function explicitServerSettings(scope?: vscode.Uri): Record<string, unknown> {
  const config = vscode.workspace.getConfiguration(SETTINGS_SECTION, scope ?? null);
  const out: Record<string, unknown> = {};
  for (const key of SERVER_SETTING_KEYS) {
    const info = config.inspect(key);
    const value = info?.workspaceFolderValue ?? info?.workspaceValue ?? info?.globalValue;
    if (value !== undefined && value !== null && value !== '') {
      out[key] = value;
    }
  }
  return out;
}

/** The compiled packages the bundled server needs, pinned as bundled (MANIFEST.json). */
function compiledPins(libs: string): string[] {
  try {
    const manifest = JSON.parse(fs.readFileSync(path.join(libs, 'MANIFEST.json'), 'utf-8')) as { compiled?: string[] };
    return manifest.compiled ?? [];
  } catch {
    return ['pydantic-core', 'orjson', 'watchfiles', 'PyYAML', 'psutil'];
  }
}

/** Whether the interpreter itself can import what the pure-Python server needs compiled:
 *  undefined when it can, else the import error's last line. */
function compiledPackagesProblem(python: string, pure: string, env: NodeJS.ProcessEnv): Promise<string | undefined> {
  const probe = 'import pydantic, pydantic_core, orjson, watchfiles, yaml, psutil';
  return new Promise((resolve) => {
    execFile(python, ['-P', '-c', probe], { env: { ...env, PYTHONPATH: pure }, timeout: 20000, windowsHide: true }, (error, _stdout, stderr) => {
      resolve(error ? (stderr.trim().split('\n').pop() ?? error.message) : undefined);
    });
  });
}

export class ReverieServer implements vscode.Disposable {
  private client: LanguageClient | undefined;
  private starting: Promise<void> | undefined;
  private restartTimer: NodeJS.Timeout | undefined;
  private stopping = false;
  private readonly stateEmitter = new vscode.EventEmitter<'running' | 'stopped' | 'failed'>();
  private readonly clientEmitter = new vscode.EventEmitter<LanguageClient>();

  /** Fires with each new client, before it starts, so notification handlers can be attached. */
  readonly onDidCreateClient = this.clientEmitter.event;
  readonly onDidChangeState = this.stateEmitter.event;

  constructor(
    private readonly context: vscode.ExtensionContext,
    readonly log: vscode.LogOutputChannel,
  ) {}

  /** Takes diagnostics the editor shows otherwise (the dream-gate hint becomes a CodeLens). */
  diagnosticsFilter: ((uri: vscode.Uri, diagnostics: vscode.Diagnostic[]) => vscode.Diagnostic[]) | undefined;

  /** Called after a server command the editor ran on its own (a code action's command, such as
   * retiring a stale fact) has finished, so views that list memory runs can refresh. */
  afterCommand: ((command: string) => void) | undefined;

  /** The last start failed because no usable Python was found (the welcome view says so). */
  pythonMissing = false;

  get isRunning(): boolean {
    return this.client?.state === State.Running;
  }

  /** Starts the server unless it runs already; never throws (failures are shown to the user). */
  start(): Promise<void> {
    this.starting ??= this.doStart().finally(() => {
      this.starting = undefined;
    });
    return this.starting;
  }

  async stop(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    if (!client) {
      return;
    }
    this.stopping = true;
    try {
      if (client.state !== State.Stopped) {
        await client.stop(8000);
      }
    } catch (error) {
      this.log.warn(`Stopping the server: ${String(error)}`);
    } finally {
      this.stopping = false;
      await client.dispose().catch(() => undefined);
      this.stateEmitter.fire('stopped');
    }
  }

  async restart(): Promise<void> {
    if (this.restartTimer) {
      clearTimeout(this.restartTimer);
      this.restartTimer = undefined;
    }
    await this.starting?.catch(() => undefined);
    await this.stop();
    await this.start();
  }

  /** Restarts after settings or interpreter changes settle (debounced). */
  scheduleRestart(reason: string): void {
    if (this.restartTimer) {
      clearTimeout(this.restartTimer);
    }
    this.restartTimer = setTimeout(() => {
      this.restartTimer = undefined;
      this.log.info(`Restarting the server: ${reason}`);
      void this.restart();
    }, RESTART_DELAY_MS);
  }

  /** Sends the explicit settings after a change the running server can take over live. */
  async pushSettings(): Promise<void> {
    if (this.isRunning && this.client) {
      await this.client.sendNotification(DidChangeConfigurationNotification.type, {
        settings: { [SETTINGS_SECTION]: explicitServerSettings() },
      });
    }
  }

  /** Runs a server command; failures become a ServerCommandError with a readable message. */
  async execute<T>(command: string, args?: Record<string, unknown>): Promise<T> {
    if (!this.isRunning) {
      await this.start();
    }
    const client = this.client;
    if (!client || client.state !== State.Running) {
      throw new ServerCommandError('The Reverie server is not running. Run "Reverie: Restart Server" or see "Reverie: Show Log".');
    }
    try {
      return await client.sendRequest<T>('workspace/executeCommand', { command, arguments: args ? [args] : [] });
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      this.log.error(`${command} failed: ${message}`);
      throw new ServerCommandError(message.replace(/^Request workspace\/executeCommand failed with message: /, ''));
    }
  }

  dispose(): void {
    if (this.restartTimer) {
      clearTimeout(this.restartTimer);
    }
    void this.stop();
    this.stateEmitter.dispose();
    this.clientEmitter.dispose();
  }

  private async doStart(): Promise<void> {
    if (this.client) {
      return;
    }
    let interpreter: ProbedInterpreter;
    try {
      interpreter = await probeInterpreter(await chooseInterpreter(vscode.workspace.workspaceFolders?.[0]?.uri));
    } catch (error) {
      this.pythonMissing = error instanceof InterpreterError;
      this.fail(error instanceof InterpreterError ? error.message : `Could not start the Reverie server: ${String(error)}`, true);
      return;
    }
    this.pythonMissing = false;
    const env = await this.serverEnvironment(interpreter);
    if (!env) {
      return;
    }
    const level = vscode.workspace.getConfiguration(SETTINGS_SECTION).get<string>('logLevel', 'info');
    const serverOptions: ServerOptions = {
      command: interpreter.executable,
      // -P (Python 3.11+, checked by the probe): `-m` would otherwise put the working directory,
      // the workspace folder, first on sys.path, so a repository's own `reverie/` (or `yaml.py`,
      // `pydantic/`, ...) would run inside the server, even in Restricted Mode.
      args: ['-P', '-m', 'reverie', '--log-level', level, 'serve'],
      options: { env, cwd: vscode.workspace.workspaceFolders?.[0]?.uri.fsPath },
    };
    this.log.info(`Starting ${interpreter.executable} -P -m reverie serve (Python ${interpreter.version.join('.')}, from the ${interpreter.source})`);
    const client = new LanguageClient(CLIENT_ID, CLIENT_NAME, serverOptions, this.clientOptions());
    this.client = client;
    this.clientEmitter.fire(client);
    try {
      await client.start();
      this.stateEmitter.fire('running');
    } catch (error) {
      this.client = undefined;
      await client.dispose().catch(() => undefined);
      this.fail(`The Reverie server did not start: ${error instanceof Error ? error.message : String(error)}`, false);
    }
  }

  private clientOptions(): LanguageClientOptions {
    return {
      documentSelector: [
        { scheme: 'file', language: 'markdown' },
        { scheme: 'untitled', language: 'markdown' },
      ],
      outputChannel: this.log,
      revealOutputChannelOn: RevealOutputChannelOn.Never,
      initializationOptions: {
        [SETTINGS_SECTION]: explicitServerSettings(),
        // where VS Code keeps this extension's data: the server finds the workspace's storage
        // folder (its chat sessions) and the user-data dir from them, exactly
        [EDITOR_STORAGE_OPTION]: editorStorage(this.context),
      },
      connectionOptions: { maxRestartCount: 0 },
      errorHandler: {
        error: () => ({ action: ErrorAction.Continue, handled: true }),
        closed: () => {
          if (!this.stopping) {
            const dead = this.client;
            this.client = undefined;
            // Release the dead client once its close handling is over; never restart it here.
            setTimeout(() => void dead?.dispose().catch(() => undefined), 0);
            this.fail('The Reverie server stopped unexpectedly.', false);
          }
          return { action: CloseAction.DoNotRestart, handled: true };
        },
      },
      middleware: {
        handleDiagnostics: (uri, diagnostics, next) => {
          next(uri, this.diagnosticsFilter ? this.diagnosticsFilter(uri, diagnostics) : diagnostics);
        },
        executeCommand: async (command, args, next) => {
          try {
            return (await next(command, args)) as unknown;
          } finally {
            this.afterCommand?.(command);
          }
        },
        workspace: {
          // Answer pulls with the explicit settings only, so defaults never mask REVERIE_* vars.
          configuration: (params, token, next) => {
            if (params.items.every((item) => item.section === SETTINGS_SECTION)) {
              return params.items.map((item) =>
                explicitServerSettings(item.scopeUri ? vscode.Uri.parse(item.scopeUri) : undefined));
            }
            return next(params, token);
          },
          didChangeConfiguration: async () => {
            await this.pushSettings();
          },
        },
      },
    };
  }

  /** The server's environment: the API key from SecretStorage and the bundled libraries. */
  private async serverEnvironment(interpreter: ProbedInterpreter): Promise<NodeJS.ProcessEnv | undefined> {
    const env: NodeJS.ProcessEnv = { ...process.env, PYTHONUNBUFFERED: '1', PYTHONIOENCODING: 'utf-8' };
    const key = await this.context.secrets.get(API_KEY_SECRET);
    if (key) {
      env[API_KEY_ENV] = key;
    }
    const strategy = vscode.workspace.getConfiguration(SETTINGS_SECTION).get<ImportStrategy>(ClientSettings.importStrategy, 'useBundled');
    if (strategy === 'fromEnvironment') {
      return env;
    }
    const libs = path.join(this.context.extensionPath, 'bundled', 'libs');
    const pure = path.join(libs, 'py');
    const compiled = path.join(libs, interpreter.abiTag);
    if (!fs.existsSync(pure)) {
      this.log.warn(`No bundled server at ${pure}; using the reverie package of ${interpreter.executable}.`);
      return env;
    }
    if (!fs.existsSync(compiled)) {
      // A universal build (or a platform build for other Python versions): the pure-Python
      // server with the compiled packages of the user's interpreter, when it has them.
      const problem = await compiledPackagesProblem(interpreter.executable, pure, env);
      if (problem === undefined) {
        this.log.info(`No bundled compiled packages for ${interpreter.abiTag} on ${process.platform}-${process.arch}; using those installed in ${interpreter.executable}.`);
        env.PYTHONPATH = [pure, ...(process.env.PYTHONPATH ? [process.env.PYTHONPATH] : [])].join(path.delimiter);
        return env;
      }
      const available = fs.readdirSync(libs).filter((name) => /^cp\d+$/.test(name)).map((tag) => `${tag[2]}.${tag.slice(3)}`);
      this.fail(
        `This Reverie build has no compiled packages for Python ${interpreter.version.slice(0, 2).join('.')} on ${process.platform}-${process.arch}` +
        `${available.length ? ` (it has them for Python ${available.join(', ')})` : ''}, and ${interpreter.executable} lacks them (${problem}). ` +
        `Install them into that Python with "${interpreter.executable} -m pip install ${compiledPins(libs).join(' ')}", point "reverie.server.python" ` +
        'at another Python, or install the Reverie build for your platform.', true);
      return undefined;
    }
    // compiled packages identical for every Python version ship once, in libs/shared
    const shared = path.join(libs, 'shared');
    env.PYTHONPATH = [compiled, ...(fs.existsSync(shared) ? [shared] : []), pure, ...(process.env.PYTHONPATH ? [process.env.PYTHONPATH] : [])].join(path.delimiter);
    env.PYTHONNOUSERSITE = '1';
    return env;
  }

  private fail(message: string, offerSettings: boolean): void {
    this.log.error(message);
    this.stateEmitter.fire('failed');
    const actions = offerSettings ? ['Open Settings', 'Show Log'] : ['Restart', 'Show Log'];
    void vscode.window.showErrorMessage(message, ...actions).then((choice) => {
      if (choice === 'Restart') {
        void vscode.commands.executeCommand(Commands.restartServer);
      } else if (choice === 'Show Log') {
        void vscode.commands.executeCommand(Commands.showLog);
      } else if (choice === 'Open Settings') {
        void vscode.commands.executeCommand('workbench.action.openSettings', 'reverie.server');
      }
    });
  }
}
