/**
 * Entry point: wires the server, the palette commands, notifications and the status bar.
 * The extension is a thin client; every decision is the server's.
 */
import * as vscode from 'vscode';
import { type LanguageClient } from 'vscode-languageclient/node';

import { ReverieServer } from './client';
import { registerCommands, type CommandContext } from './commands';
import { offerConnection } from './connect';
import { API_KEY_SECRET, ContextKeys, HISTORY_SCHEME, OUTPUT_CHANNEL, RESTART_SETTING_KEYS, SETTINGS_SECTION, ServerCommands } from './constants';
import type { LockStatusResult, StatusResult } from './generated/protocol';
import { HistoryDocuments } from './history';
import { JobTracker } from './jobs';
import { attachNotificationHandlers, attachShowMessage } from './notifications';
import { onInterpreterChanged } from './python';
import { createSidebar, workspaceArg } from './sidebar';
import { ReverieStatusBar } from './statusBar';

let server: ReverieServer | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const log = vscode.window.createOutputChannel(OUTPUT_CHANNEL, { log: true });
  server = new ReverieServer(context, log);
  const status = new ReverieStatusBar();
  const history = new HistoryDocuments(server);
  const jobs = new JobTracker(server, log);
  const sidebar = createSidebar(server, log);
  const ctx: CommandContext = {
    server, secrets: context.secrets, history, jobs, log,
    refreshViews: () => sidebar.refresh(),
    state: { global: context.globalState, workspace: context.workspaceState },
  };
  const setContext = (key: string, value: unknown): void => {
    void vscode.commands.executeCommand('setContext', key, value);
  };
  setContext(ContextKeys.serverState, 'starting');
  const current = server;
  let latest: LanguageClient | undefined;

  context.subscriptions.push(
    log,
    status,
    server,
    jobs,
    sidebar,
    history,
    vscode.workspace.registerTextDocumentContentProvider(HISTORY_SCHEME, history),
    ...registerCommands(ctx),
    server.onDidCreateClient((client) => {
      latest = client;
      status.setServerState('starting');
      attachNotificationHandlers(client, ctx, status);
    }),
    server.onDidChangeState((state) => {
      status.setServerState(state);
      setContext(ContextKeys.serverRunning, state === 'running');
      setContext(ContextKeys.serverState, state);
      setContext(ContextKeys.pythonMissing, current.pythonMissing);
      sidebar.refresh();
      if (state !== 'running') {
        jobs.reset();
      }
      if (state === 'running' && latest) {
        attachShowMessage(current, latest);
        current.execute<StatusResult>(ServerCommands.status).then(
          (result) => {
            status.applyStatus(result);
            jobs.seed(result);
            current.execute<LockStatusResult>(ServerCommands.lockStatus, workspaceArg()).then(
              (lock) => status.applyLock(lock, result.pid), (error: unknown) => log.warn(`lock status: ${String(error)}`));
            offerConnection(ctx, result).catch((error: unknown) => log.warn(`connect offer: ${String(error)}`));
          },
          (error: unknown) => log.warn(`status: ${String(error)}`));
      }
    }),
    vscode.workspace.onDidChangeConfiguration((event) => {
      if (!event.affectsConfiguration(SETTINGS_SECTION)) {
        return;
      }
      if (RESTART_SETTING_KEYS.some((key) => event.affectsConfiguration(`${SETTINGS_SECTION}.${key}`))) {
        current.scheduleRestart('settings changed');
      } else {
        void current.pushSettings();
      }
    }),
    vscode.workspace.onDidChangeWorkspaceFolders(() => current.scheduleRestart('workspace folders changed')),
    context.secrets.onDidChange((event) => {
      if (event.key === API_KEY_SECRET) {
        current.scheduleRestart('API key changed');
      }
    }),
  );
  context.subscriptions.push(await onInterpreterChanged(() => current.scheduleRestart('Python interpreter changed')));
  void server.start();
}

export async function deactivate(): Promise<void> {
  await server?.stop();
  server = undefined;
}
