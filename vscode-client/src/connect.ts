/**
 * Connect / Disconnect Agent: pick an agent and a scope, preview the server's diff, then write.
 * Also the one-time offer to connect the agents whose sessions the workspace has (never nags:
 * asked once per folder, "Never" for good).
 */
import * as path from 'node:path';
import * as vscode from 'vscode';

import { type CommandContext } from './commands';
import { EXTENSION_ID, ServerCommands } from './constants';
import { WALKTHROUGH_KEY } from './menu';
import { applyPatch, parseUnifiedDiff } from './preview';
import { type ConnectAgentResult as ConnectResult, type ConnectionsResult, type StatusResult } from './generated/protocol';

const AGENT_NAMES: Record<string, string> = {
  'claude-code': 'Claude Code',
  codex: 'Codex',
  gemini: 'Gemini CLI',
  aider: 'Aider',
  'copilot-chat': 'GitHub Copilot Chat',
  cline: 'Cline',
  'roo-code': 'Roo Code',
  'kilo-code': 'Kilo Code',
  continue: 'Continue',
};
const OFFER_KEY = 'reverie.connectOffer.';
/** folders offered in this window (globalState keeps them across windows and reloads) */
const offeredHere = new Set<string>();

export function agentName(agent: string): string {
  return AGENT_NAMES[agent] ?? agent;
}

async function pickFolder(): Promise<vscode.WorkspaceFolder | undefined> {
  const folders = vscode.workspace.workspaceFolders ?? [];
  if (folders.length <= 1) {
    return folders[0];
  }
  return vscode.window.showWorkspaceFolderPick({ placeHolder: 'Which workspace folder?' });
}

/**
 * Opens what connecting would change as read-only diffs (each file's current text on the left,
 * the text after connecting on the right; nothing to save, nothing dirty), then asks without a
 * modal so the diff stays readable. Returns false when the user backed out.
 */
async function previewAndApply(ctx: CommandContext, folder: string, agent: string, scope: string): Promise<boolean> {
  const args = { workspace: folder, agent, scope };
  const preview = await ctx.server.execute<ConnectResult>(ServerCommands.connectAgent, { ...args, dryRun: true });
  if (!preview.changed) {
    void vscode.window.showInformationMessage(`Reverie: ${agentName(agent)} is already connected.`);
    return true;
  }
  await showChanges(ctx, `Connect ${agentName(agent)} (${scope}): what changes`, preview.diff);
  const files = preview.files.filter((f) => f.action !== 'unchanged');
  const summary = files.map((f) => `${ACTION_WORDS[f.action] ?? f.action} ${path.basename(f.path)}`).join(', ');
  const choice = await vscode.window.showInformationMessage(
    `Connect ${agentName(agent)} (${scope})? This will ${summary}.${preview.notes.length ? ` ${preview.notes.join(' ')}` : ''}`,
    'Connect', 'Cancel');
  if (choice !== 'Connect') {
    return false;
  }
  const done = await ctx.server.execute<ConnectResult>(ServerCommands.connectAgent, args);
  ctx.refreshStatus();
  void vscode.window.showInformationMessage(
    `Reverie: ${agentName(agent)} connected (${done.scope}). It reads this workspace's memory from its next session.`);
  return true;
}

const ACTION_WORDS: Record<string, string> = { create: 'create', update: 'update', delete: 'delete' };

/** The diff as one multi-file diff editor of read-only documents, or the raw diff when a file changed meanwhile. */
async function showChanges(ctx: CommandContext, title: string, diff: string): Promise<void> {
  const resources: [vscode.Uri, vscode.Uri, vscode.Uri][] = [];
  for (const patch of parseUnifiedDiff(diff)) {
    const file = patch.to ?? patch.from;
    if (!file) {
      continue;
    }
    let before = '';
    if (patch.from) {
      try {
        before = new TextDecoder().decode(await vscode.workspace.fs.readFile(vscode.Uri.file(patch.from)));
      } catch {
        before = '';
      }
    }
    const after = applyPatch(before, patch);
    if (after === undefined) {
      resources.length = 0;
      break;
    }
    const label = path.basename(file);
    resources.push([vscode.Uri.file(file), ctx.previews.add(label, before), ctx.previews.add(label, after)]);
  }
  if (!resources.length) {
    const doc = await vscode.workspace.openTextDocument(ctx.previews.add('connect.diff', diff));
    await vscode.languages.setTextDocumentLanguage(doc, 'diff');
    await vscode.window.showTextDocument(doc, { preview: true });
    return;
  }
  if (resources.length === 1) {
    const [, left, right] = resources[0];
    await vscode.commands.executeCommand('vscode.diff', left, right, `${path.basename(resources[0][0].fsPath)}: ${title}`, { preview: true });
    return;
  }
  await vscode.commands.executeCommand('vscode.changes', title, resources);
}

export async function connectAgent(ctx: CommandContext, agent?: string, inFolder?: string): Promise<boolean> {
  const workspace = inFolder ?? (await pickFolder())?.uri.fsPath;
  if (!workspace) {
    return false;
  }
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
  ctx.refreshStatus();
  const files = done.files.filter((f) => f.action !== 'unchanged').length;
  void vscode.window.showInformationMessage(`Reverie: ${picked.label} disconnected (${files} file${files === 1 ? '' : 's'} put back as they were).`);
}

/**
 * One offer per workspace folder, ever: every agent with sessions here that is not connected,
 * in one message. The answer is kept in globalState (per folder), so neither a server restart
 * nor a window reload asks again; "Never" stops the offer for every folder.
 */
export async function offerConnection(ctx: CommandContext, status: StatusResult): Promise<boolean> {
  if (ctx.state.global.get(`${OFFER_KEY}never`)) {
    return false;
  }
  for (const entry of status.connections) {
    const connected = new Set(entry.connected.map((c) => c.agent));
    const agents = entry.detected.filter((agent) => !connected.has(agent));
    const key = `${OFFER_KEY}${entry.workspace}`;
    if (!agents.length || ctx.state.global.get(key) || offeredHere.has(key)) {
      continue;
    }
    offeredHere.add(key); // this window, even before globalState has it
    await ctx.state.global.update(key, 'offered'); // asked once per folder, whatever the answer
    ctx.log.info(`connect offer for ${entry.workspace}: ${agents.join(', ')} (not asked again)`);
    // the first start makes one offer, not two: the tour rides along when it was never offered
    const tour = !ctx.state.global.get(WALKTHROUGH_KEY);
    if (tour) {
      await ctx.state.global.update(WALKTHROUGH_KEY, true);
    }
    const names = agents.map(agentName);
    const list = names.length === 1 ? names[0] : `${names.slice(0, -1).join(', ')} and ${names[names.length - 1]}`;
    const choice = await vscode.window.showInformationMessage(
      `Reverie found ${list} sessions in ${path.basename(entry.workspace)}. Connect ${names.length === 1 ? 'it' : 'them'} so ${names.length === 1 ? 'it reads' : 'they read'} Reverie's memory and ${names.length === 1 ? 'keeps its' : 'keep their'} notes across compaction?`,
      'Connect…', ...(tour ? ['Getting Started'] : []), 'Not now', 'Never');
    if (choice === 'Getting Started') {
      await vscode.commands.executeCommand('workbench.action.openWalkthrough', `${EXTENSION_ID}#reverie.gettingStarted`, false);
    } else if (choice === 'Connect…') {
      for (const agent of agents) {
        if (!(await connectAgent(ctx, agent, entry.workspace))) {
          break;
        }
      }
    } else if (choice === 'Never') {
      await ctx.state.global.update(`${OFFER_KEY}never`, true);
    }
    return true; // one message per start, never a queue of them
  }
  return false;
}
