/**
 * Entry point: wires the server, the palette commands, notifications and the status bar.
 * The extension is a thin client; every decision is the server's.
 */
import * as vscode from 'vscode';
import { type LanguageClient } from 'vscode-languageclient/node';

import { ReverieServer } from './client';
import { registerCommands, type CommandContext } from './commands';
import { offerConnection } from './connect';
import { API_KEY_SECRET, Commands, ContextKeys, HISTORY_SCHEME, NOTES_SCHEME, OUTPUT_CHANNEL, PREVIEW_SCHEME, RESTART_SETTING_KEYS, SETTINGS_SECTION, ServerCommands } from './constants';
import { GateLenses } from './gateLens';
import type { HistoryResult, LockStatusResult, StatusResult } from './generated/protocol';
import { HistoryDocuments } from './history';
import { JobTracker } from './jobs';
import { offerWalkthrough, showMenu } from './menu';
import { NotesFileSystem } from './notesDocuments';
import { PreviewDocuments } from './preview';
import { MemoryQuickFixes } from './quickFixes';
import { ProposalWatcher } from './review';
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
  const previews = new PreviewDocuments();
  const notes = new NotesFileSystem();
  const gates = new GateLenses();
  server.diagnosticsFilter = (uri, diagnostics) => gates.take(uri, diagnostics);
  // a stale fact retired or kept from its quick fix is a recorded run: History lists it
  server.afterCommand = (command) => {
    if (command === ServerCommands.retireFact || command === ServerCommands.keepFact) {
      sidebar.refresh();
    }
  };
  let memoryDir: string | undefined;
  const flags = { running: false };
  const current = server;
  const refreshStatus = (): void => {
    if (!current.isRunning) {
      return;
    }
    current.execute<StatusResult>(ServerCommands.status).then((result) => {
      status.applyStatus(result);
      current.execute<LockStatusResult>(ServerCommands.lockStatus, workspaceArg()).then((lock) => {
        memoryDir = lock.memoryDir;
        status.applyLock(lock, result.pid);
        void proposals.watch(lock.memoryDir);
      }, (error: unknown) => log.warn(`lock status: ${String(error)}`));
      current.execute<HistoryResult>(ServerCommands.history, { ...workspaceArg(), limit: 100 }).then(
        (history) => status.applyHistory(history.runs), (error: unknown) => log.warn(`history: ${String(error)}`));
    }, (error: unknown) => log.warn(`status: ${String(error)}`));
  };
  const ctx: CommandContext = {
    server, secrets: context.secrets, history, jobs, log, previews,
    refreshViews: () => sidebar.refresh(),
    refreshStatus,
    state: { global: context.globalState, workspace: context.workspaceState },
  };
  const proposals = new ProposalWatcher(ctx);
  const setContext = (key: string, value: unknown): void => {
    void vscode.commands.executeCommand('setContext', key, value);
  };
  setContext(ContextKeys.serverState, 'starting');
  let latest: LanguageClient | undefined;

  context.subscriptions.push(
    log,
    status,
    server,
    jobs,
    sidebar,
    history,
    previews,
    gates,
    proposals,
    vscode.workspace.registerTextDocumentContentProvider(HISTORY_SCHEME, history),
    vscode.workspace.registerTextDocumentContentProvider(PREVIEW_SCHEME, previews),
    notes,
    vscode.workspace.registerFileSystemProvider(NOTES_SCHEME, notes, { isCaseSensitive: true }),
    vscode.languages.registerCodeLensProvider({ scheme: 'file', pattern: '**/MEMORY.md' }, gates),
    vscode.languages.registerCodeActionsProvider({ scheme: 'file', language: 'markdown' },
      new MemoryQuickFixes(() => memoryDir), { providedCodeActionKinds: MemoryQuickFixes.kinds }),
    ...registerCommands(ctx),
    vscode.commands.registerCommand(Commands.showMenu, () => showMenu(flags)),
    server.onDidCreateClient((client) => {
      latest = client;
      status.setServerState('starting');
      attachNotificationHandlers(client, ctx, status);
    }),
    server.onDidChangeState((state) => {
      flags.running = state === 'running';
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
              (lock) => {
                memoryDir = lock.memoryDir;
                status.applyLock(lock, result.pid);
                void proposals.watch(lock.memoryDir);
              }, (error: unknown) => log.warn(`lock status: ${String(error)}`));
            current.execute<HistoryResult>(ServerCommands.history, { ...workspaceArg(), limit: 100 }).then(
              (history) => status.applyHistory(history.runs), (error: unknown) => log.warn(`history: ${String(error)}`));
            // the first start makes one offer: connecting the agents found (with the tour), else the tour
            offerConnection(ctx, result)
              .then((offered) => (offered ? undefined : offerWalkthrough(context.globalState)))
              .catch((error: unknown) => log.warn(`first-run offer: ${String(error)}`));
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
        // the tooltip follows (caps, provider): once the server has pulled the new settings
        void current.pushSettings().then(() => setTimeout(refreshStatus, 1500));
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
