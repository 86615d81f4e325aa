/**
 * Connect / Disconnect Agent: pick an agent and a scope, preview the server's diff, then write.
 * Also the one-time offer to connect an agent whose sessions the workspace has (never nags:
 * "Not now" is remembered per workspace, "Never" for good).
 */
import * as vscode from 'vscode';

import { type CommandContext } from './commands';
import { ServerCommands } from './constants';
import { type ConnectAgentResult as ConnectResult, type ConnectionsResult, type StatusResult } from './generated/protocol';

const AGENT_NAMES: Record<string, string> = {
  'claude-code': 'Claude Code',
  codex: 'Codex',
  gemini: 'Gemini CLI',
  aider: 'Aider',
  'copilot-chat': 'GitHub Copilot Chat',
  cline: 'Cline',
  'roo-code': 'Roo Code',
  continue: 'Continue',
};
const OFFER_KEY = 'reverie.connectOffer.';

function agentName(agent: string): string {
  return AGENT_NAMES[agent] ?? agent;
}

async function pickFolder(): Promise<vscode.WorkspaceFolder | undefined> {
  const folders = vscode.workspace.workspaceFolders ?? [];
  if (folders.length <= 1) {
    return folders[0];
  }
  return vscode.window.showWorkspaceFolderPick({ placeHolder: 'Which workspace folder?' });
}

/** Shows the diff, asks, and writes; returns false when the user backed out. */
async function previewAndApply(ctx: CommandContext, folder: string, agent: string, scope: string): Promise<boolean> {
  const args = { workspace: folder, agent, scope };
  const preview = await ctx.server.execute<ConnectResult>(ServerCommands.connectAgent, { ...args, dryRun: true });
  if (!preview.changed) {
    void vscode.window.showInformationMessage(`Reverie: ${agentName(agent)} is already connected.`);
    return true;
  }
  const doc = await vscode.workspace.openTextDocument({ content: preview.diff, language: 'diff' });
  await vscode.window.showTextDocument(doc, { preview: true });
  const files = preview.files.filter((f) => f.action !== 'unchanged').map((f) => `${f.action} ${f.path}`);
  const choice = await vscode.window.showInformationMessage(
    `Connect ${agentName(agent)} (${scope})?`,
    { modal: true, detail: [...files, ...preview.notes].join('\n') },
    'Connect');
  if (choice !== 'Connect') {
    return false;
  }
  const done = await ctx.server.execute<ConnectResult>(ServerCommands.connectAgent, args);
  void vscode.window.showInformationMessage(`Reverie: ${agentName(agent)} connected (${done.scope}, ${done.mode}).`);
  return true;
}

export async function connectAgent(ctx: CommandContext, agent?: string): Promise<boolean> {
  const folder = await pickFolder();
  if (!folder) {
    return false;
  }
  const workspace = folder.uri.fsPath;
  if (!agent) {
    const listing = await ctx.server.execute<ConnectionsResult>(ServerCommands.connections, { workspace });
    const connected = new Map<string, string>(listing.connections.map((c) => [c.agent, c.scope]));
    const detected = new Set<string>(listing.detected);
    const picked = await vscode.window.showQuickPick(
      Object.keys(AGENT_NAMES)
        .sort((a, b) => Number(detected.has(b)) - Number(detected.has(a)))
        .map((id) => ({
          label: agentName(id),
          description: connected.has(id) ? `connected (${connected.get(id) ?? ''})` : detected.has(id) ? 'sessions found' : '',
          id,
        })),
      { title: 'Reverie: Connect Agent', placeHolder: 'Which agent should read Reverie\'s memory?' });
    agent = picked?.id;
  }
  if (!agent) {
    return false;
  }
  const scope = await vscode.window.showQuickPick(
    [
      { label: 'Personal', description: 'nothing that would be committed to the repository', id: 'personal' },
      { label: 'Project', description: 'the shared files, meant to be committed', id: 'project' },
    ],
    { title: `Reverie: Connect ${agentName(agent)}`, placeHolder: 'Where should the connection live?' });
  if (!scope) {
    return false;
  }
  return previewAndApply(ctx, workspace, agent, scope.id);
}

export async function disconnectAgent(ctx: CommandContext): Promise<void> {
  const folder = await pickFolder();
  if (!folder) {
    return;
  }
  const workspace = folder.uri.fsPath;
  const listing = await ctx.server.execute<ConnectionsResult>(ServerCommands.connections, { workspace });
  if (!listing.connections.length) {
    void vscode.window.showInformationMessage('Reverie: no agent is connected in this workspace.');
    return;
  }
  const picked = await vscode.window.showQuickPick(
    listing.connections.map((c) => ({ label: agentName(c.agent), description: `${c.scope}, ${c.mode}`, id: c.agent })),
    { title: 'Reverie: Disconnect Agent' });
  if (!picked) {
    return;
  }
  const done = await ctx.server.execute<ConnectResult>(ServerCommands.disconnectAgent, { workspace, agent: picked.id });
  const files = done.files.filter((f) => f.action !== 'unchanged').length;
  void vscode.window.showInformationMessage(`Reverie: ${picked.label} disconnected (${files} file(s) restored).`);
}

/** Offers, once, to connect the first agent with sessions here that is not connected. */
export async function offerConnection(ctx: CommandContext, status: StatusResult): Promise<void> {
  for (const entry of status.connections) {
    const connected = new Set(entry.connected.map((c) => c.agent));
    for (const agent of entry.detected) {
      const key = `${OFFER_KEY}${agent}`;
      if (connected.has(agent) || ctx.state.global.get(key) === 'never' || ctx.state.workspace.get(key)) {
        continue;
      }
      await ctx.state.workspace.update(key, 'offered'); // asked once per workspace, whatever the answer
      const choice = await vscode.window.showInformationMessage(
        `Reverie found ${agentName(agent)} sessions here. Connect ${agentName(agent)} so it reads Reverie's memory and keeps its notes across compaction?`,
        'Connect', 'Not now', 'Never');
      if (choice === 'Connect') {
        await connectAgent(ctx, agent);
      } else if (choice === 'Never') {
        await ctx.state.global.update(key, 'never');
      }
      return; // one offer per start
    }
  }
}
