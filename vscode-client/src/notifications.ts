/**
 * Turns the server's notifications into editor UI: an information message when memory is saved
 * (Open / Show Diff / Undo), warnings and errors with a "Show Log" action, and status bar updates.
 */
import * as path from 'node:path';
import * as vscode from 'vscode';
import { MessageType, ShowMessageNotification, type LanguageClient } from 'vscode-languageclient/node';

import { type CommandContext, reportFailure, showRunDiff, undoRun } from './commands';
import { EXTENSION_ID, Notifications, ServerCommands, SETTINGS_SECTION } from './constants';
import type { HistoryResult, HistoryRun, JobEventPayload, LockStatusResult, MemorySaved, SessionNotesUpdated } from './generated/protocol';
import { showProblem } from './problems';
import { offerReview } from './review';
import type { ReverieServer } from './client';
import type { ReverieStatusBar } from './statusBar';

function notificationsOff(): boolean {
  return vscode.workspace.getConfiguration(SETTINGS_SECTION).get<string>('showNotifications') === 'off';
}

/**
 * "Reverie improved 3 memories": topic files count as memories; the index (MEMORY.md) only when
 * nothing else changed. The server's own longer message goes to the log.
 */
export function memorySavedMessage(event: MemorySaved): string {
  const topics = event.memoryPaths.filter((file) => !/(^|[\\/])MEMORY\.md$/.test(file));
  const n = topics.length || event.memoryPaths.length;
  const verb = event.verb === 'improved' ? 'improved' : 'saved';
  return `Reverie ${verb} ${n} memor${n === 1 ? 'y' : 'ies'}`;
}

/**
 * The first memory of a workspace is "built from N sessions", not "improved": the run created
 * the index and changed nothing that existed (read from the run's history record).
 */
export function firstMemoryMessage(run: HistoryRun | undefined): string | undefined {
  if (!run || run.changed.length || run.removed.length || !run.added.includes('MEMORY.md')) {
    return undefined;
  }
  const n = run.sessions.length;
  const topics = run.added.filter((f) => f !== 'MEMORY.md').length;
  return `Reverie built your first memory from ${n} session${n === 1 ? '' : 's'}: an index and ${topics} topic file${topics === 1 ? '' : 's'} your agents read at the start of their next session.`;
}

async function onMemorySaved(ctx: CommandContext, event: MemorySaved): Promise<void> {
  ctx.log.info(`${memorySavedMessage(event)} (${event.source}): ${event.message}`);
  if (notificationsOff()) {
    return;
  }
  let text = memorySavedMessage(event);
  if (event.runId) {
    const run = await ctx.server.execute<HistoryResult>(ServerCommands.history, { runId: event.runId })
      .then((r) => r.runs[0], () => undefined);
    text = firstMemoryMessage(run) ?? text;
  }
  const actions = ['Open', ...(event.runId ? ['Show Diff', 'Undo'] : [])];
  const choice = await vscode.window.showInformationMessage(text, ...actions);
  try {
    if (choice === 'Open') {
      const target = event.memoryPaths.length > 1
        ? await vscode.window.showQuickPick(event.memoryPaths, { placeHolder: 'Which memory file?' })
        : event.memoryPaths[0];
      if (target) {
        await vscode.window.showTextDocument(await vscode.workspace.openTextDocument(vscode.Uri.file(target)));
      }
    } else if (choice === 'Show Diff') {
      await showRunDiff(ctx, event.runId);
    } else if (choice === 'Undo') {
      await undoRun(ctx, event.runId);
    }
  } catch (error) {
    await reportFailure(choice ?? 'Reverie', error, ctx.log);
  }
}

/**
 * The first dream of a memory dir says what it is doing as it starts (an automatic one would
 * otherwise run unexplained seconds after the folder opens): once per memory dir.
 */
async function explainFirstDream(ctx: CommandContext, event: JobEventPayload): Promise<void> {
  const dir = typeof event.payload.memoryDir === 'string' ? event.payload.memoryDir : undefined;
  if (!dir || notificationsOff()) {
    return;
  }
  try {
    await vscode.workspace.fs.stat(vscode.Uri.file(path.join(dir, 'MEMORY.md')));
    return; // memory exists: nothing first about this dream
  } catch {
    // no index yet: this dream builds the first memory
  }
  const key = `reverie.firstDreamExplained.${dir}`;
  if (ctx.state.global.get(key)) {
    return;
  }
  await ctx.state.global.update(key, true);
  const n = typeof event.payload.sessionsReviewing === 'number' ? event.payload.sessionsReviewing : 0;
  const auto = event.payload.manual !== true;
  const choice = await vscode.window.showInformationMessage(
    `Reverie is building your first memory from ${n} session${n === 1 ? '' : 's'} of this folder${auto ? ' (an automatic dream: enough sessions had piled up)' : ''}. ` +
    'Your agents read it at the start of their next session; every change can be undone.',
    ...(auto ? ['Turn Off Automatic Dreams'] : []), 'Learn More');
  if (choice === 'Learn More') {
    await vscode.commands.executeCommand('workbench.action.openWalkthrough', `${EXTENSION_ID}#reverie.gettingStarted`, false);
  } else if (choice === 'Turn Off Automatic Dreams') {
    await vscode.commands.executeCommand('workbench.action.openSettings', 'reverie.dreamEnabled');
  }
}

/** Handlers attached before each client starts (vscode-languageclient re-applies them). */
export function attachNotificationHandlers(client: LanguageClient, ctx: CommandContext, status: ReverieStatusBar): void {
  client.onNotification(Notifications.memorySaved, (event: MemorySaved) => {
    status.noteMemorySaved(event.source);
    ctx.refreshViews();
    void onMemorySaved(ctx, event);
  });
  client.onNotification(Notifications.sessionNotesUpdated, (event: SessionNotesUpdated) => {
    if (event.edited) {
      vscode.window.setStatusBarMessage('$(notebook) Reverie updated the session notes', 4000);
      // the Sessions view shows which sessions have notes (and a new session with them)
      ctx.refreshViews();
    }
  });
  let statusTimer: ReturnType<typeof setTimeout> | undefined;
  client.onNotification(Notifications.jobEvent, (event: JobEventPayload) => {
    status.applyJobEvent(event);
    ctx.jobs.onEvent(event);
    if (['complete', 'skipped', 'error', 'cancelled'].includes(event.type)) {
      // what the job spent (the cost governor), the gates: the tooltip is current once it ends
      clearTimeout(statusTimer);
      statusTimer = setTimeout(() => ctx.refreshStatus(), 500);
    }
    if (event.kind === 'dream' && event.type === 'start') {
      void explainFirstDream(ctx, event);
    }
    const reviewId = event.payload.reviewId;
    if (event.type === 'complete' && typeof reviewId === 'string') {
      ctx.refreshViews();
      const files = Array.isArray(event.payload.reviewFiles) ? event.payload.reviewFiles.map(String) : [];
      offerReview(ctx, reviewId, files).catch((error: unknown) => reportFailure('Review', error, ctx.log));
    }
  });
  client.onNotification(Notifications.lockChanged, (lock: LockStatusResult) => status.applyLock(lock));
}

/**
 * Replaces the default `window/showMessage` handler (after start, so it wins) to add a
 * "Show Log" action to warnings and errors. The server already filters by showNotifications.
 */
export function attachShowMessage(server: ReverieServer, client: LanguageClient): void {
  client.onNotification(ShowMessageNotification.type, async (params) => {
    if (params.type !== MessageType.Error && params.type !== MessageType.Warning) {
      void vscode.window.showInformationMessage(params.message);
      return;
    }
    await showProblem(params.type === MessageType.Error ? 'error' : 'warning', params.message, server.log);
  });
}
