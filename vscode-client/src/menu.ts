/**
 * The status bar item opens this menu: Reverie's actions in a quick pick (no modal), the ones
 * that apply now first.
 */
import * as vscode from 'vscode';

import { Commands, EXTENSION_ID } from './constants';

interface MenuItem extends vscode.QuickPickItem {
  command?: string;
  args?: unknown[];
}

export async function showMenu(state: { running: boolean }): Promise<void> {
  const items: MenuItem[] = state.running ? [
    { label: '$(sparkle) Dream Now', description: 'consolidate recent sessions into memory', command: Commands.dreamNow },
    { label: '$(book) Open Memory Index', description: 'MEMORY.md', command: Commands.openMemoryIndex },
    { label: '$(note) Open Session Notes', description: 'the current session', command: Commands.openSessionNotes },
    { label: '$(diff) Review Proposed Changes', description: 'a dream or an agent waiting for you to accept a change', command: Commands.reviewChanges },
    { label: '$(history) Show Memory History', description: 'every run that changed memory', command: Commands.showMemoryHistory },
    { label: '$(discard) Undo Last Dream', command: Commands.undoLastDream },
    { label: '$(redo) Redo Undone Dream', command: Commands.redo },
    { label: '$(stop-circle) Cancel Job', description: 'stop a running dream, sleep or notes update', command: Commands.cancelJob },
    { label: '', kind: vscode.QuickPickItemKind.Separator },
    { label: '$(plug) Connect Agent…', description: 'let an agent read this memory', command: Commands.connectAgent },
    { label: '$(eye) Show What Agents Load', description: 'blocks, memory and hook context, with token sizes', command: Commands.showAgentContext },
    { label: '$(server-process) Choose Model Provider…', description: 'provider, model, key, test', command: Commands.chooseProvider },
    { label: '$(pulse) Test Model Connection', command: Commands.testModelConnection },
    { label: '$(lock) Show Lock Status', description: 'the consolidation lock and the dream gates', command: Commands.showLockStatus },
  ] : [
    { label: '$(debug-restart) Restart Server', description: 'the Reverie server is not running', command: Commands.restartServer },
  ];
  items.push(
    { label: '', kind: vscode.QuickPickItemKind.Separator },
    { label: '$(output) Show Log', command: Commands.showLog },
    { label: '$(settings-gear) Settings', command: 'workbench.action.openSettings', args: ['@ext:reverie.reverie'] },
    { label: '$(mortar-board) Getting Started', description: 'the walkthrough', command: 'workbench.action.openWalkthrough', args: [`${EXTENSION_ID}#reverie.gettingStarted`, false] },
  );
  const picked = await vscode.window.showQuickPick(items, { title: 'Reverie', placeHolder: 'What should Reverie do?' });
  if (picked?.command) {
    await vscode.commands.executeCommand(picked.command, ...(picked.args ?? []));
  }
}

/** The walkthrough, offered once ever (globalState), not opened unasked. */
export const WALKTHROUGH_KEY = 'reverie.walkthroughOffered';

export async function offerWalkthrough(global: vscode.Memento): Promise<void> {
  const key = WALKTHROUGH_KEY;
  if (global.get(key)) {
    return;
  }
  await global.update(key, true);
  const choice = await vscode.window.showInformationMessage(
    'Reverie keeps notes of your agents\' sessions and consolidates them into a memory they read. Take the two-minute tour?',
    'Show Me', 'No Thanks');
  if (choice === 'Show Me') {
    await vscode.commands.executeCommand('workbench.action.openWalkthrough', `${EXTENSION_ID}#reverie.gettingStarted`, false);
  }
}
