/**
 * The palette commands. Each forwards to a server command (never reusing its id) and turns the
 * answer into editor UI; failures become one readable message with a "Show Log" action.
 */
import * as path from 'node:path';
import * as vscode from 'vscode';

import { showAgentContext } from './agentContext';
import { type ReverieServer, ServerCommandError } from './client';
import { connectAgent, disconnectAgent } from './connect';
import { curateEntry } from './curation';
import { reviewChanges } from './review';
import { API_KEY_SECRET, Commands, ServerCommands } from './constants';
import {
  type HistoryResult,
  type HistoryRun,
  type JobStarted,
  type LockStatusResult,
  type SessionNotesResult,
  type SessionRow,
  type SessionsResult,
  type StatusResult,
  type UndoResult,
} from './generated/protocol';
import { type HistoryDocuments } from './history';
import { type JobTracker } from './jobs';
import { notesUri } from './notesDocuments';
import { type PreviewDocuments } from './preview';
import { runCounts, workspaceArg } from './sidebar';
import { showProblem } from './problems';
import { chooseProvider, testModel } from './setup';
import { formatWhen } from './statusBar';
import { runKind, runTitle } from './words';

export interface CommandContext {
  server: ReverieServer;
  secrets: vscode.SecretStorage;
  history: HistoryDocuments;
  jobs: JobTracker;
  log: vscode.LogOutputChannel;
  /** refreshes the sidebar views */
  refreshViews: () => void;
  /** asks the server for the status again (after connect, undo, a provider change) */
  refreshStatus: () => void;
  /** read-only preview documents (Connect Agent, staged changes) */
  previews: PreviewDocuments;
  /** what the user answered to offers (globalState: for good; workspaceState: here) */
  state: { global: vscode.Memento; workspace: vscode.Memento };
}

/** Shows a failure once, readably, with the buttons that fix it; never rethrows. */
export async function reportFailure(what: string, error: unknown, log: vscode.LogOutputChannel): Promise<void> {
  const detail = error instanceof Error ? error.message : String(error);
  if (!(error instanceof ServerCommandError)) {
    log.error(`${what}: ${detail}`);
  }
  await showProblem('warning', `${what} failed: ${detail}`, log);
}

function guarded(ctx: CommandContext, what: string, body: (arg?: unknown) => Promise<unknown>): (arg?: unknown) => Promise<void> {
  return async (arg?: unknown) => {
    try {
      await body(arg);
    } catch (error) {
      await reportFailure(what, error, ctx.log);
    }
  };
}

async function openFile(file: string): Promise<void> {
  const doc = await vscode.workspace.openTextDocument(vscode.Uri.file(file));
  await vscode.window.showTextDocument(doc, { preview: false });
}

/** Why an automatic dream would not start now, in words (the dream gates). */
export const GATE_TEXT: Record<string, string> = {
  open: 'open: the next check may start a dream',
  time_gate: 'waiting for time since the last dream',
  session_gate: 'waiting for more sessions',
  lock_busy: 'another process is dreaming',
  disabled: 'automatic dreams are off',
  scan_throttle: 'sessions were counted a moment ago; they are counted again shortly',
};

export function lockSummary(lock: LockStatusResult): { title: string; detail: string } {
  const title = lock.holderAlive && lock.holderPid ? `Consolidation lock held by PID ${lock.holderPid}` : 'Consolidation lock free';
  const lines = [
    `Last dream: ${lock.lastConsolidatedAt ? formatWhen(new Date(lock.lastConsolidatedAt)) : 'never'}`,
    `Hours since: ${lock.hoursSince !== null ? lock.hoursSince.toFixed(1) : 'n/a'}`,
    `Sessions since: ${lock.sessionsSince ?? 'n/a'}`,
    `Next gate: ${GATE_TEXT[lock.nextGate] ?? lock.nextGate.replace(/_/g, ' ')}`,
    `Memory: ${lock.memoryDir}`,
  ];
  return { title, detail: lines.join('\n') };
}

function runLabel(run: HistoryRun, runs: readonly HistoryRun[]): vscode.QuickPickItem & { run: HistoryRun } {
  return {
    label: `${formatWhen(new Date(run.at))} · ${runKind(run, runs)}${run.undone ? ' (undone)' : ''}`,
    description: runCounts(run),
    detail: run.summary || undefined,
    run,
  };
}

const DREAM_SOURCES = new Set(['auto', 'manual', 'sleep']);


/**
 * Undoes a run after a confirmation that says what will change: the given run, else the latest
 * dream or sleep run still in effect (never an undo). The result says what changed, or that
 * nothing did; "Redo" brings the run back.
 */
export async function undoRun(ctx: CommandContext, runId?: string | null): Promise<void> {
  const args = workspaceArg();
  const { runs } = await ctx.server.execute<HistoryResult>(ServerCommands.history, args);
  const run = runId ? runs.find((r) => r.runId === runId || r.runId.startsWith(runId)) : runs.find((r) => DREAM_SOURCES.has(r.source) && !r.undone);
  if (!run) {
    void vscode.window.showInformationMessage(runId ? 'Reverie: that run is no longer in the memory history.' : 'Reverie: nothing to undo: no dream or sleep run is in effect.');
    return;
  }
  // undoing an undo brings its run back: to the person that is a redo
  const isRedo = run.source === 'undo';
  const verb = isRedo ? 'Redo' : 'Undo';
  const target = isRedo ? runs.find((r) => r.runId === run.undoes) : run;
  const what = target ? runTitle(target, runs) : runTitle(run, runs);
  const choice = await vscode.window.showWarningMessage(
    `${verb} the ${what}?`,
    { modal: true, detail: `Memory files go back to how they were ${isRedo ? 'after' : 'before'} that run: ${[...run.added, ...run.changed, ...run.removed].join(', ') || 'no files'}.\nThe ${verb.toLowerCase()} is recorded in the history, so it can be reverted too.` },
    verb);
  if (choice !== verb) {
    return;
  }
  let result: UndoResult;
  try {
    result = await ctx.server.execute<UndoResult>(ServerCommands.undo, { ...args, runId: run.runId });
  } catch (error) {
    // the server refuses an undo that would discard hand edits made after the run, naming them
    const message = error instanceof Error ? error.message : String(error);
    if (!message.includes('would also discard the hand edits')) {
      throw error;
    }
    // said as the first question says it (the run by its time, no run id, no CLI command)
    const files = /made since to (.+?)\. They stay/.exec(message)?.[1] ?? 'some memory files';
    const detail = `${isRedo ? 'Redoing' : 'Undoing'} the ${what} would also discard the hand edits made to ${files} since then.\nThe edits stay in the history, and ${isRedo ? 'undoing the redo' : 'Redo'} brings them back.`;
    const anyway = `${verb} Anyway`;
    const again = await vscode.window.showWarningMessage(`${verb} discards hand edits`, { modal: true, detail }, anyway);
    if (again !== anyway) {
      return;
    }
    result = await ctx.server.execute<UndoResult>(ServerCommands.undo, { ...args, runId: run.runId, discardEdits: true });
  }
  await reportUndo(ctx, result, isRedo, what);
}

/** Says what the undo did; after an undo of a dream offers Redo, after a redo Undo again. */
async function reportUndo(ctx: CommandContext, result: UndoResult, wasRedo: boolean, what?: string): Promise<void> {
  ctx.log.info(`${wasRedo ? 'redo' : 'undo'}: ${result.message}`);
  ctx.refreshViews();
  ctx.refreshStatus();
  void vscode.commands.executeCommand('setContext', 'reverie.canRedo', result.changed);
  const files = result.files.length;
  const subject = what ? `the ${what}` : 'the run';
  if (!result.changed) {
    void vscode.window.showInformationMessage(`Reverie: nothing changed: memory already matches ${wasRedo ? 'the state after' : 'the state before'} ${subject}.`);
    return;
  }
  const sentence = `Reverie: ${wasRedo ? 'Redid' : 'Undid'} ${subject}: ${files} file${files === 1 ? '' : 's'} restored (${result.files.join(', ')}).`;
  const again = wasRedo ? 'Undo Again' : 'Redo';
  const choice = await vscode.window.showInformationMessage(sentence, again, 'Show Diff');
  if (choice === 'Redo') {
    await redo(ctx);
  } else if (choice === 'Undo Again') {
    await undoRun(ctx);
  } else if (choice === 'Show Diff' && result.run) {
    await ctx.history.show(result.run.runId, workspaceArg().workspace);
  }
}

/** Undoes the latest undo still in effect, which brings its run back. */
export async function redo(ctx: CommandContext): Promise<void> {
  const result = await ctx.server.execute<UndoResult>(ServerCommands.undo, { ...workspaceArg(), redo: true });
  const { runs } = await ctx.server.execute<HistoryResult>(ServerCommands.history, { ...workspaceArg(), limit: 100 }).catch(() => ({ runs: [] as HistoryRun[] }));
  const undone = runs.find((r) => r.runId === result.undoneRunId);
  const original = undone ? runs.find((r) => r.runId === undone.undoes) : undefined;
  await reportUndo(ctx, result, true, original ? runTitle(original, runs) : undefined);
}

export async function showRunDiff(ctx: CommandContext, runId?: string | null): Promise<void> {
  const { workspace } = workspaceArg();
  const id = runId ?? (await ctx.server.execute<HistoryResult>(ServerCommands.history, { ...workspaceArg(), limit: 1 })).runs[0]?.runId;
  if (!id) {
    void vscode.window.showInformationMessage('Reverie: no memory history yet.');
    return;
  }
  await ctx.history.show(id, workspace);
}

async function memoryDir(ctx: CommandContext): Promise<string> {
  return (await ctx.server.execute<LockStatusResult>(ServerCommands.lockStatus, workspaceArg())).memoryDir;
}

/** Opens a session's notes, or offers to write them. */
async function openSessionNotes(ctx: CommandContext, sessionId?: string, title?: string | null): Promise<void> {
  const notes = await ctx.server.execute<SessionNotesResult>(ServerCommands.sessionNotes, { ...workspaceArg(), ...(sessionId ? { sessionId } : {}) });
  if (title === undefined) { // from the palette: the session's title from the list
    const { sessions } = await ctx.server.execute<SessionsResult>(ServerCommands.listSessions, workspaceArg()).catch(() => ({ sessions: [] as SessionRow[] }));
    title = sessions.find((s) => s.sessionId === notes.sessionId)?.title;
  }
  if (!notes.exists) {
    const choice = await vscode.window.showInformationMessage(
      `Reverie has no notes for ${title ? `the session "${title}"` : 'this session'} yet.`, 'Update Session Notes');
    if (choice) {
      const started = await ctx.server.execute<JobStarted>(ServerCommands.updateNotes, { ...workspaceArg(), sessionId: notes.sessionId });
      ctx.jobs.follow(started, 'Session notes');
    }
    return;
  }
  const doc = await vscode.workspace.openTextDocument(notesUri(notes.path, title, notes.sessionId));
  await vscode.languages.setTextDocumentLanguage(doc, 'markdown');
  await vscode.window.showTextDocument(doc, { preview: false });
}

/** The cost governor's pre-run estimate of a dream, for a model-backed provider (else ''). */
export function dreamEstimate(status: StatusResult | undefined): string {
  const spend = status?.spend;
  if (!status || status.offline || !spend) {
    return '';
  }
  const tokens = spend.estimates.dream;
  const cost = spend.estimatedCosts.dream;
  if (tokens === undefined) {
    return '';
  }
  const price = cost !== null && cost !== undefined ? ` (about $${cost.toFixed(2)})` : '';
  return `. Estimated: about ${tokens.toLocaleString('en-US')} tokens${price}; ${spend.summary}.`;
}

export function registerCommands(ctx: CommandContext): vscode.Disposable[] {
  const { server } = ctx;
  const register = (id: string, what: string, body: (arg?: unknown) => Promise<unknown>): vscode.Disposable =>
    vscode.commands.registerCommand(id, guarded(ctx, what, body));

  return [
    register(Commands.dreamNow, 'Dream Now', async () => {
      const status = await server.execute<StatusResult>(ServerCommands.status).catch(() => undefined);
      const extra = await vscode.window.showInputBox({
        title: 'Reverie: Dream Now',
        prompt: `Anything the dream should know or focus on? (optional; Enter to start)${dreamEstimate(status)}`,
        placeHolder: 'e.g. we switched from REST to gRPC this week',
        ignoreFocusOut: true,
      });
      if (extra === undefined) {
        return; // cancelled
      }
      const started = await server.execute<JobStarted>(ServerCommands.dream, { ...workspaceArg(), ...(extra.trim() ? { extraContext: extra.trim() } : {}) });
      ctx.jobs.follow(started, 'Dream');
    }),
    register(Commands.updateSessionNotes, 'Update Session Notes', async () => {
      const started = await server.execute<JobStarted>(ServerCommands.updateNotes, workspaceArg());
      ctx.jobs.follow(started, 'Session notes');
    }),
    register(Commands.openSessionNotes, 'Open Session Notes', () => openSessionNotes(ctx)),
    register(Commands.openSession, 'Open Session Notes', (row?: unknown) => openSessionNotes(ctx, (row as SessionRow | undefined)?.sessionId, (row as SessionRow | undefined)?.title)),
    register(Commands.openTranscript, 'Open Transcript', async (row?: unknown) => {
      const session = row as SessionRow | undefined;
      if (session) {
        await openFile(session.path);
      }
    }),
    register(Commands.openMemoryIndex, 'Open Memory Index', async () => {
      const dir = await memoryDir(ctx);
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
      const lock = await server.execute<LockStatusResult>(ServerCommands.lockStatus, workspaceArg());
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
      ctx.jobs.follow(started, 'Sleep cycle');
    }),
    register(Commands.showMemoryHistory, 'Show Memory History', async () => {
      const { runs } = await server.execute<HistoryResult>(ServerCommands.history, workspaceArg());
      if (!runs.length) {
        void vscode.window.showInformationMessage('Reverie: no memory history yet.');
        return;
      }
      const picked = await vscode.window.showQuickPick(runs.map((run) => runLabel(run, runs)), {
        title: 'Reverie: memory history', placeHolder: 'Pick a run to see what it changed', matchOnDetail: true,
      });
      if (picked) {
        await showRunDiff(ctx, picked.run.runId);
      }
    }),
    register(Commands.undoLastDream, 'Undo Last Dream', () => undoRun(ctx)),
    register(Commands.redo, 'Redo', () => redo(ctx)),
    register(Commands.undoRun, 'Undo Run', (run?: unknown) => undoRun(ctx, (run as HistoryRun | undefined)?.runId)),
    register(Commands.showRunDiff, 'Show Diff', (run?: unknown) => showRunDiff(ctx, (run as HistoryRun | undefined)?.runId)),
    register(Commands.cancelJob, 'Cancel Job', () => ctx.jobs.pickAndCancel()),
    register(Commands.refreshViews, 'Refresh', () => {
      ctx.refreshViews();
      return Promise.resolve();
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
    register(Commands.chooseProvider, 'Choose Model Provider', () => chooseProvider(ctx)),
    register(Commands.reviewChanges, 'Review Proposed Changes', (arg?: unknown) => reviewChanges(ctx, typeof arg === 'string' ? arg : undefined)),
    register(Commands.forgetEntry, 'Forget', (arg?: unknown) => curateEntry(ctx, 'forget', arg)),
    register(Commands.pinEntry, 'Pin', (arg?: unknown) => curateEntry(ctx, 'pin', arg)),
    register(Commands.unpinEntry, 'Unpin', (arg?: unknown) => curateEntry(ctx, 'unpin', arg)),
    register(Commands.editEntry, 'Edit', (arg?: unknown) => curateEntry(ctx, 'edit', arg)),
    register(Commands.moveEntry, 'Move', (arg?: unknown) => curateEntry(ctx, 'move', arg)),
    register(Commands.testModelConnection, 'Test Model Connection', () => testModel(ctx)),
    register(Commands.showAgentContext, 'Show What Agents Load', () => showAgentContext(ctx)),
  ];
}
