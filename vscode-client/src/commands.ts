/**
 * The palette commands. Each forwards to a server command (never reusing its id) and turns the
 * answer into editor UI; failures become one readable message with a "Show Log" action.
 */
import * as path from 'node:path';
import * as vscode from 'vscode';

import { type ReverieServer, ServerCommandError } from './client';
import { connectAgent, disconnectAgent } from './connect';
import { API_KEY_SECRET, Commands, ServerCommands } from './constants';
import { type HistoryDocuments } from './history';
import {
  field,
  type HistoryResult,
  type HistoryRun,
  type JobStarted,
  type LockStatus,
  type ModelTestResult,
  type ProvidersResult,
  type SessionNotesResult,
} from './protocol';
import { formatWhen } from './statusBar';

export interface CommandContext {
  server: ReverieServer;
  secrets: vscode.SecretStorage;
  history: HistoryDocuments;
  log: vscode.LogOutputChannel;
  /** what the user answered to offers (globalState: for good; workspaceState: here) */
  state: { global: vscode.Memento; workspace: vscode.Memento };
}

/** Shows a failure once, readably, with a way to the log; never rethrows. */
export async function reportFailure(what: string, error: unknown, log: vscode.LogOutputChannel): Promise<void> {
  const detail = error instanceof Error ? error.message : String(error);
  if (!(error instanceof ServerCommandError)) {
    log.error(`${what}: ${detail}`);
  }
  const choice = await vscode.window.showWarningMessage(`Reverie: ${what} failed: ${detail}`, 'Show Log');
  if (choice === 'Show Log') {
    log.show(true);
  }
}

function guarded(ctx: CommandContext, what: string, body: () => Promise<unknown>): () => Promise<void> {
  return async () => {
    try {
      await body();
    } catch (error) {
      await reportFailure(what, error, ctx.log);
    }
  };
}

function workspaceArg(): Record<string, unknown> {
  const folder = vscode.window.activeTextEditor
    ? vscode.workspace.getWorkspaceFolder(vscode.window.activeTextEditor.document.uri)
    : vscode.workspace.workspaceFolders?.[0];
  return folder ? { workspace: folder.uri.fsPath } : {};
}

async function openFile(file: string): Promise<void> {
  const doc = await vscode.workspace.openTextDocument(vscode.Uri.file(file));
  await vscode.window.showTextDocument(doc, { preview: false });
}

export function lockSummary(lock: LockStatus): { title: string; detail: string } {
  const pid = field<number | null>(lock, 'holderPid');
  const alive = field<boolean>(lock, 'holderAlive');
  const last = field<string | null>(lock, 'lastConsolidatedAt');
  const hours = field<number | null>(lock, 'hoursSince');
  const sessions = field<number | null>(lock, 'sessionsSince');
  const gate = field<string>(lock, 'nextGate') ?? 'unknown';
  const title = alive && pid ? `Consolidation lock held by PID ${pid}` : 'Consolidation lock free';
  const gateText: Record<string, string> = {
    open: 'open: the next check may start a dream',
    time_gate: 'waiting for time since the last dream',
    session_gate: 'waiting for more sessions',
    lock_busy: 'another process is dreaming',
    disabled: 'automatic dreams are off',
  };
  const lines = [
    `Last dream: ${last ? formatWhen(new Date(last)) : 'never'}`,
    `Hours since: ${typeof hours === 'number' ? hours.toFixed(1) : 'n/a'}`,
    `Sessions since: ${typeof sessions === 'number' ? sessions : 'n/a'}`,
    `Next gate: ${gateText[gate] ?? gate}`,
    `Memory: ${String(field(lock, 'memoryDir') ?? '')}`,
  ];
  return { title, detail: lines.join('\n') };
}

function runLabel(run: HistoryRun): vscode.QuickPickItem & { run: HistoryRun } {
  const id = String(field(run, 'runId') ?? field(run, 'id') ?? '');
  const when = field<string>(run, 'at') ?? field<string>(run, 'timestamp') ?? field<string>(run, 'createdAt');
  const source = String(field(run, 'source') ?? '');
  const counts = ['added', 'changed', 'removed']
    .map((kind) => {
      const value = field<unknown>(run, kind);
      const n = Array.isArray(value) ? value.length : typeof value === 'number' ? value : 0;
      return n ? `${n} ${kind}` : '';
    })
    .filter(Boolean)
    .join(', ');
  return {
    label: `${when ? formatWhen(new Date(when)) : id} · ${source || 'run'}`,
    description: counts || String(field(run, 'message') ?? ''),
    detail: id,
    run,
  };
}

export async function undoRun(ctx: CommandContext, runId?: string | null): Promise<void> {
  const result = await ctx.server.execute<Record<string, unknown>>(ServerCommands.undo, { ...workspaceArg(), ...(runId ? { runId } : {}) });
  const message = field<string>(result, 'message') ?? `Reverie restored memory to before run ${String(field(result, 'undoneRunId') ?? runId ?? '')}.`;
  void vscode.window.showInformationMessage(message);
}

/**
 * The history, with the before/after contents of one run when the server offers them
 * (`runId` + `withContents`); a server without those arguments gets the plain request.
 */
async function historyFor(ctx: CommandContext, runId?: string | null): Promise<HistoryRun[]> {
  if (runId) {
    try {
      const { runs } = await ctx.server.execute<HistoryResult>(ServerCommands.history, { ...workspaceArg(), runId, withContents: true });
      return runs;
    } catch (error) {
      ctx.log.debug(`history with contents unavailable: ${String(error)}`);
    }
  }
  return (await ctx.server.execute<HistoryResult>(ServerCommands.history, workspaceArg())).runs;
}

export async function showRunDiff(ctx: CommandContext, runId?: string | null): Promise<void> {
  const runs = await historyFor(ctx, runId);
  const run = runId ? runs.find((r) => String(field(r, 'runId') ?? field(r, 'id')) === runId) : runs[0];
  if (!run) {
    void vscode.window.showInformationMessage('Reverie: that run is not in the memory history.');
    return;
  }
  await ctx.history.show(run);
}

async function memoryDir(ctx: CommandContext): Promise<string | undefined> {
  const lock = await ctx.server.execute<LockStatus>(ServerCommands.lockStatus, workspaceArg());
  return field<string>(lock, 'memoryDir');
}

/** The lines under a model test's headline: what was asked, what answered, what works. */
export function modelTestDetail(result: ModelTestResult): string {
  const word = (value: boolean | null): string => (value === null ? 'unknown' : value ? 'yes' : 'no');
  const lines = [
    `Provider: ${result.provider}${result.baseUrl ? ` at ${result.baseUrl}` : ''}`,
    `Model: ${result.model || '(default)'}${result.modelReported && result.modelReported !== result.model ? ` (server reports ${result.modelReported})` : ''}`,
  ];
  if (result.ok) {
    lines.push(`Latency: ${result.latencyMs} ms`, `Streaming: ${word(result.streaming)}`, `Tool calls: ${word(result.tools)}`);
    if (result.tools === false) {
      lines.push('Jobs use the structured no-tools form with this model.');
    }
  }
  return lines.join('\n');
}

export function registerCommands(ctx: CommandContext): vscode.Disposable[] {
  const { server } = ctx;
  const register = (id: string, what: string, body: () => Promise<unknown>): vscode.Disposable =>
    vscode.commands.registerCommand(id, guarded(ctx, what, body));

  return [
    register(Commands.dreamNow, 'Dream Now', async () => {
      const extra = await vscode.window.showInputBox({
        title: 'Reverie: Dream Now',
        prompt: 'Anything the dream should know or focus on? (optional; Enter to start)',
        placeHolder: 'e.g. we switched from REST to gRPC this week',
        ignoreFocusOut: true,
      });
      if (extra === undefined) {
        return; // cancelled
      }
      const started = await server.execute<JobStarted>(ServerCommands.dream, { ...workspaceArg(), ...(extra.trim() ? { extraContext: extra.trim() } : {}) });
      vscode.window.setStatusBarMessage(`Reverie: dream ${started.jobId} started`, 4000);
    }),
    register(Commands.updateSessionNotes, 'Update Session Notes', async () => {
      const started = await server.execute<JobStarted>(ServerCommands.updateNotes, workspaceArg());
      vscode.window.setStatusBarMessage(`Reverie: updating session notes (${started.jobId})`, 4000);
    }),
    register(Commands.openSessionNotes, 'Open Session Notes', async () => {
      const notes = await server.execute<SessionNotesResult>(ServerCommands.sessionNotes, workspaceArg());
      if (notes.exists === false || !notes.content && !notes.path) {
        const choice = await vscode.window.showInformationMessage(
          `Reverie has no notes for session ${notes.sessionId} yet.`, 'Update Session Notes');
        if (choice) {
          await vscode.commands.executeCommand(Commands.updateSessionNotes);
        }
        return;
      }
      await openFile(notes.path);
    }),
    register(Commands.openMemoryIndex, 'Open Memory Index', async () => {
      const dir = await memoryDir(ctx);
      if (!dir) {
        throw new ServerCommandError('the server did not say where the memory directory is');
      }
      const index = path.join(dir, 'MEMORY.md');
      try {
        await vscode.workspace.fs.stat(vscode.Uri.file(index));
      } catch {
        const choice = await vscode.window.showInformationMessage(`No memory yet (${index}). A dream writes it.`, 'Dream Now');
        if (choice) {
          await vscode.commands.executeCommand(Commands.dreamNow);
        }
        return;
      }
      await openFile(index);
    }),
    register(Commands.showLockStatus, 'Show Lock Status', async () => {
      const lock = await server.execute<LockStatus>(ServerCommands.lockStatus, workspaceArg());
      const { title, detail } = lockSummary(lock);
      const choice = await vscode.window.showInformationMessage(title, { modal: true, detail }, 'Open Memory Index', 'Dream Now');
      if (choice === 'Open Memory Index') {
        await vscode.commands.executeCommand(Commands.openMemoryIndex);
      } else if (choice === 'Dream Now') {
        await vscode.commands.executeCommand(Commands.dreamNow);
      }
    }),
    register(Commands.runSleepCycle, 'Run Sleep Cycle', async () => {
      const started = await server.execute<JobStarted>(ServerCommands.sleep, workspaceArg());
      vscode.window.setStatusBarMessage(`Reverie: sleep cycle ${started.jobId} started`, 4000);
    }),
    register(Commands.showMemoryHistory, 'Show Memory History', async () => {
      const { runs } = await server.execute<HistoryResult>(ServerCommands.history, workspaceArg());
      if (!runs.length) {
        void vscode.window.showInformationMessage('Reverie: no memory history yet.');
        return;
      }
      const picked = await vscode.window.showQuickPick(runs.map(runLabel), {
        title: 'Reverie: memory history', placeHolder: 'Pick a run to see what it changed', matchOnDetail: true,
      });
      if (picked) {
        const runId = field<string>(picked.run, 'runId') ?? field<string>(picked.run, 'id');
        await (runId ? showRunDiff(ctx, runId) : ctx.history.show(picked.run));
      }
    }),
    register(Commands.undoLastDream, 'Undo Last Dream', async () => {
      const choice = await vscode.window.showWarningMessage(
        'Undo the last dream?',
        { modal: true, detail: 'The memory directory goes back to how it was before that run. The undo itself is recorded, so it can be undone too.' },
        'Undo');
      if (choice === 'Undo') {
        await undoRun(ctx);
      }
    }),
    register(Commands.setApiKey, 'Set API Key', async () => {
      const key = await vscode.window.showInputBox({
        title: 'Reverie: Set API Key',
        prompt: 'API key of the provider in "reverie.provider". Kept in VS Code\'s secret storage, never in settings.',
        password: true,
        ignoreFocusOut: true,
        validateInput: (value) => (value.trim() ? undefined : 'Enter a key, or press Escape'),
      });
      if (!key) {
        return;
      }
      // The secret-change listener restarts the server so it picks the key up.
      await ctx.secrets.store(API_KEY_SECRET, key.trim());
      ctx.log.info('API key stored in secret storage; the server restarts to use it.');
      void vscode.window.showInformationMessage('Reverie: API key saved.');
    }),
    register(Commands.clearApiKey, 'Clear API Key', async () => {
      await ctx.secrets.delete(API_KEY_SECRET);
      ctx.log.info('API key removed from secret storage; the server restarts without it.');
    }),
    register(Commands.showLog, 'Show Log', () => {
      ctx.log.show(true);
      return Promise.resolve();
    }),
    register(Commands.restartServer, 'Restart Server', async () => {
      await server.restart();
    }),
    register(Commands.connectAgent, 'Connect Agent', () => connectAgent(ctx)),
    register(Commands.disconnectAgent, 'Disconnect Agent', () => disconnectAgent(ctx)),
    register(Commands.chooseProvider, 'Choose Model Provider', async () => {
      const { current, providers } = await server.execute<ProvidersResult>(ServerCommands.providers, workspaceArg());
      const picked = await vscode.window.showQuickPick(
        providers.map((p) => ({
          label: `${p.id === current ? '$(check) ' : ''}${p.label}`,
          description: p.available ? p.path ?? p.id : 'not found',
          detail: p.detail,
          provider: p,
        })),
        { title: 'Reverie: model provider', placeHolder: `Now: ${current}. The coding-agent CLIs use your own login; their runs count against your plan.`, matchOnDetail: true });
      if (!picked || picked.provider.id === current) {
        return;
      }
      if (!picked.provider.available) {
        void vscode.window.showWarningMessage(`Reverie: ${picked.provider.detail}`);
        return;
      }
      await vscode.workspace.getConfiguration('reverie').update('provider', picked.provider.id, vscode.ConfigurationTarget.Global);
      if (picked.provider.id.endsWith('-cli')) {
        void vscode.window.showInformationMessage(
          `Reverie now uses ${picked.provider.label}. Every notes update, dream and sleep cycle counts against your plan.`,
          'Test Model Connection').then((choice) => choice && vscode.commands.executeCommand(Commands.testModelConnection));
      }
    }),
    register(Commands.testModelConnection, 'Test Model Connection', async () => {
      const result = await vscode.window.withProgress(
        { location: vscode.ProgressLocation.Notification, title: 'Reverie: testing the model connection…' },
        () => server.execute<ModelTestResult>(ServerCommands.testModel, workspaceArg()));
      const detail = modelTestDetail(result);
      ctx.log.info(`Test model connection: ${result.message}`);
      if (result.ok) {
        void vscode.window.showInformationMessage(`Reverie: ${result.message}`, { modal: true, detail });
      } else {
        void vscode.window.showErrorMessage(`Reverie: the model connection failed. ${result.error ?? result.message}`, { modal: true, detail });
      }
    }),
  ];
}
