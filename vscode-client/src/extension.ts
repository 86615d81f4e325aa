/**
 * Entry point: wires the server, the palette commands, notifications and the status bar.
 * The extension is a thin client; every decision is the server's.
 */
import * as vscode from 'vscode';
import { type LanguageClient } from 'vscode-languageclient/node';

import { ReverieServer } from './client';
import { registerCommands, type CommandContext } from './commands';
import { offerConnection } from './connect';
import { API_KEY_SECRET, HISTORY_SCHEME, OUTPUT_CHANNEL, RESTART_SETTING_KEYS, SETTINGS_SECTION, ServerCommands } from './constants';
import { HistoryDocuments } from './history';
import { attachNotificationHandlers, attachShowMessage } from './notifications';
import type { StatusResult } from './protocol';
import { onInterpreterChanged } from './python';
import { ReverieStatusBar } from './statusBar';

let server: ReverieServer | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const log = vscode.window.createOutputChannel(OUTPUT_CHANNEL, { log: true });
  server = new ReverieServer(context, log);
  const status = new ReverieStatusBar();
  const history = new HistoryDocuments();
  const ctx: CommandContext = {
    server, secrets: context.secrets, history, log,
    state: { global: context.globalState, workspace: context.workspaceState },
  };
  const current = server;
  let latest: LanguageClient | undefined;

  context.subscriptions.push(
    log,
    status,
    server,
    vscode.workspace.registerTextDocumentContentProvider(HISTORY_SCHEME, history),
    ...registerCommands(ctx),
    server.onDidCreateClient((client) => {
      latest = client;
      status.setServerState('starting');
      attachNotificationHandlers(client, ctx, status);
    }),
    server.onDidChangeState((state) => {
      status.setServerState(state);
      if (state === 'running' && latest) {
        attachShowMessage(current, latest);
        current.execute<StatusResult>(ServerCommands.status).then(
          (result) => {
            status.applyStatus(result);
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
