/**
 * Turns the server's notifications into editor UI: an information message when memory is saved
 * (Open / Show Diff / Undo), warnings and errors with a "Show Log" action, and status bar updates.
 */
import * as vscode from 'vscode';
import { MessageType, ShowMessageNotification, type LanguageClient } from 'vscode-languageclient/node';

import { type CommandContext, reportFailure, showRunDiff, undoRun } from './commands';
import { Notifications, SETTINGS_SECTION } from './constants';
import type { JobEventPayload, LockStatusResult, MemorySaved, SessionNotesUpdated } from './generated/protocol';
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

async function onMemorySaved(ctx: CommandContext, event: MemorySaved): Promise<void> {
  ctx.log.info(`${memorySavedMessage(event)} (${event.source}, run ${event.runId ?? '-'}): ${event.message}`);
  if (notificationsOff()) {
    return;
  }
  const actions = ['Open', ...(event.runId ? ['Show Diff', 'Undo'] : [])];
  const choice = await vscode.window.showInformationMessage(memorySavedMessage(event), ...actions);
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

/** Handlers attached before each client starts (vscode-languageclient re-applies them). */
export function attachNotificationHandlers(client: LanguageClient, ctx: CommandContext, status: ReverieStatusBar): void {
  client.onNotification(Notifications.memorySaved, (event: MemorySaved) => {
    status.noteDreamFinished();
    ctx.refreshViews();
    void onMemorySaved(ctx, event);
  });
  client.onNotification(Notifications.sessionNotesUpdated, (event: SessionNotesUpdated) => {
    if (event.edited) {
      vscode.window.setStatusBarMessage('$(notebook) Reverie updated the session notes', 4000);
    }
  });
  client.onNotification(Notifications.jobEvent, (event: JobEventPayload) => {
    status.applyJobEvent(event);
    ctx.jobs.onEvent(event);
  });
  client.onNotification(Notifications.lockChanged, (lock: LockStatusResult) => status.applyLock(lock));
}

/**
 * Replaces the default `window/showMessage` handler (after start, so it wins) to add a
 * "Show Log" action to warnings and errors. The server already filters by showNotifications.
 */
export function attachShowMessage(server: ReverieServer, client: LanguageClient): void {
  client.onNotification(ShowMessageNotification.type, async (params) => {
    const show = params.type === MessageType.Error ? vscode.window.showErrorMessage
      : params.type === MessageType.Warning ? vscode.window.showWarningMessage
        : undefined;
    if (!show) {
      void vscode.window.showInformationMessage(params.message);
      return;
    }
    const choice = await show(params.message, 'Show Log');
    if (choice === 'Show Log') {
      server.log.show(true);
    }
  });
}
