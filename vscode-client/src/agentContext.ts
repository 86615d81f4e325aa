/**
 * "What the agent was given": for each connected agent, exactly what it loads (Reverie's managed
 * blocks, the memory they bring in) and what the hooks last sent (session notes after a
 * compaction, prompt-time recall), with token sizes, as one read-only Markdown document.
 */
import * as vscode from 'vscode';

import { type CommandContext } from './commands';
import { Commands, ServerCommands } from './constants';
import { type AgentContextResult } from './generated/protocol';
import { workspaceArg } from './sidebar';

function tokens(n: number): string {
  return `~${n.toLocaleString('en-US')} token${n === 1 ? '' : 's'}`;
}

/** A fence longer than any run of backticks or tildes in `text`. */
function fence(text: string): string {
  const longest = Math.max(2, ...[...text.matchAll(/~+/g)].map((m) => m[0].length));
  return '~'.repeat(longest + 1);
}

export function renderAgentContext(report: AgentContextResult): string {
  const out = [
    '# What your agents load',
    '',
    `Memory: \`${report.memoryDir}\`. Sizes are estimated tokens (about four characters each). ` +
    'Refresh with **Reverie: Show What Agents Load**.',
    '',
  ];
  if (!report.agents.length) {
    out.push('No agent is connected for this folder: **Reverie: Connect Agent…** lets one read the memory.', '');
  }
  for (const agent of report.agents) {
    out.push(`## ${agent.label} (${agent.scope}): ${tokens(agent.startTokens)} at every session start`, '');
    for (const part of agent.parts) {
      out.push(`### ${part.title}`, '', `${tokens(part.tokens)} · ${part.when}${part.path ? ` · \`${part.path}\`` : ''}`, '');
      if (part.text) {
        const f = fence(part.text);
        out.push(`${f}markdown`, part.text.replace(/\n+$/, ''), f, '');
      }
    }
  }
  return out.join('\n');
}

export async function showAgentContext(ctx: CommandContext): Promise<void> {
  const report = await ctx.server.execute<AgentContextResult>(ServerCommands.agentContext, workspaceArg());
  if (!report.agents.length) {
    const choice = await vscode.window.showInformationMessage(
      'Reverie: no agent is connected for this folder, so none loads its memory yet.', 'Connect Agent…');
    if (choice) {
      await vscode.commands.executeCommand(Commands.connectAgent);
    }
    return;
  }
  const uri = ctx.previews.add('What agents load.md', renderAgentContext(report));
  try {
    await vscode.commands.executeCommand('markdown.showPreview', uri);
  } catch (error) { // no Markdown preview: the read-only text
    ctx.log.debug(`markdown preview: ${String(error)}`);
    const doc = await vscode.workspace.openTextDocument(uri);
    await vscode.languages.setTextDocumentLanguage(doc, 'markdown');
    await vscode.window.showTextDocument(doc, { preview: false });
  }
}
