/**
 * Forget, pin, edit and move one memory entry, from the Memory view's context menu or a code
 * action on the line. The server does the work (`reverie.server.curate`), as a recorded run the
 * result offers to undo.
 */
import * as path from 'node:path';
import * as vscode from 'vscode';

import { type CommandContext, undoRun } from './commands';
import { ServerCommands } from './constants';
import { type CurateResult } from './generated/protocol';
import { PIN_MARK, type MemoryEntryNode, workspaceArg } from './sidebar';

type Action = 'forget' | 'pin' | 'unpin' | 'edit' | 'move';

/** What the commands receive: a Memory view entry, or `{file, line, text}` from a code action. */
interface EntryArg {
  file: string;
  /** 1-based */
  line: number;
  text: string;
}

function toEntry(arg: unknown): EntryArg | undefined {
  if (!arg || typeof arg !== 'object') {
    const editor = vscode.window.activeTextEditor;
    if (!editor) {
      return undefined;
    }
    const line = editor.selection.active.line;
    return { file: path.basename(editor.document.uri.fsPath), line: line + 1, text: editor.document.lineAt(line).text };
  }
  const node = arg as Partial<MemoryEntryNode & EntryArg>;
  if (node.uri instanceof vscode.Uri && typeof node.line === 'number' && typeof node.text === 'string') {
    return { file: path.basename(node.uri.fsPath), line: node.line + 1, text: node.text };
  }
  if (typeof node.file === 'string' && typeof node.line === 'number' && typeof node.text === 'string') {
    return { file: node.file, line: node.line, text: node.text };
  }
  return undefined;
}

function shown(text: string): string {
  const plain = text.replace(PIN_MARK, '').replace(/^\s*[-*]\s+/, '').trim();
  return plain.length > 70 ? `${plain.slice(0, 69)}…` : plain;
}

export async function curateEntry(ctx: CommandContext, action: Action, arg: unknown): Promise<void> {
  const entry = toEntry(arg);
  if (!entry) {
    void vscode.window.showInformationMessage('Reverie: pick an entry in the Memory view, or put the cursor on a line of a memory file.');
    return;
  }
  const extra: { newText?: string; toFile?: string } = {};
  if (action === 'forget') {
    const linked = entry.file === 'MEMORY.md' ? /\]\(([^)\s]+\.md)\)/.exec(entry.text)?.[1] : undefined;
    const choice = await vscode.window.showWarningMessage(
      `Forget "${shown(entry.text)}"?${linked ? ` Its topic file ${linked} goes with it.` : ''} You can undo it from the History view.`,
      'Forget', 'Cancel');
    if (choice !== 'Forget') {
      return;
    }
  } else if (action === 'edit') {
    const text = await vscode.window.showInputBox({
      title: `Reverie: edit the entry (${entry.file}:${entry.line})`,
      prompt: 'The new text, kept exactly as you type it (dreams do not reformat a person\'s edit).',
      value: entry.text.replace(` ${PIN_MARK}`, ''),
      ignoreFocusOut: true,
      validateInput: (value) => (value.trim() ? undefined : 'To remove the entry, use Forget'),
    });
    if (text === undefined || text === entry.text) {
      return;
    }
    extra.newText = text;
  } else if (action === 'move') {
    const dir = (await ctx.server.execute<{ memoryDir: string }>(ServerCommands.lockStatus, workspaceArg())).memoryDir;
    const names = (await vscode.workspace.fs.readDirectory(vscode.Uri.file(dir)))
      .filter(([name, type]) => type === vscode.FileType.File && name.endsWith('.md') && name !== 'MEMORY.md' && name !== entry.file)
      .map(([name]) => name).sort();
    if (!names.length) {
      void vscode.window.showInformationMessage('Reverie: there is no other topic file to move the entry to.');
      return;
    }
    const to = await vscode.window.showQuickPick(names, { title: 'Reverie: move the entry to…', placeHolder: shown(entry.text) });
    if (!to) {
      return;
    }
    extra.toFile = to;
  }
  const result = await ctx.server.execute<CurateResult>(ServerCommands.curate, {
    ...workspaceArg(), action, entry: `${entry.file}:${entry.line}`, expect: entry.text, ...extra,
  });
  ctx.refreshViews();
  ctx.log.info(`curate: ${result.message}`);
  const pick = await vscode.window.showInformationMessage(`Reverie: ${result.message}`, ...(result.runId ? ['Undo'] : []));
  if (pick === 'Undo' && result.runId) {
    await undoRun(ctx, result.runId);
  }
}
