/**
 * Quick fixes for Reverie's memory diagnostics (shorten an entry, fix or drop a broken link,
 * drop a duplicate, index a topic file, open the topic) and, on any entry of a memory file,
 * the per-entry curation actions (forget, pin, edit, move), which run on the server as
 * recorded, undoable runs.
 */
import * as path from 'node:path';
import * as vscode from 'vscode';

import { Commands } from './constants';
import { PIN_MARK } from './sidebar';

const LIMIT = 150;

function codeOf(d: vscode.Diagnostic): string {
  return String(typeof d.code === 'object' ? d.code.value : d.code ?? '');
}

/** `text` cut at a word boundary to at most `limit` characters, ending with an ellipsis. */
export function shorten(text: string, limit = LIMIT): string {
  if (text.length <= limit) {
    return text;
  }
  const cut = text.slice(0, limit - 1);
  const space = cut.lastIndexOf(' ');
  return `${(space > limit / 2 ? cut.slice(0, space) : cut).trimEnd()}…`;
}

/** Edit distance, for "did you mean" link targets. */
function distance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    let prev = row[0];
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const next = row[j];
      row[j] = Math.min(row[j] + 1, row[j - 1] + 1, prev + (a[i - 1] === b[j - 1] ? 0 : 1));
      prev = next;
    }
  }
  return row[b.length];
}

function deleteLine(edit: vscode.WorkspaceEdit, doc: vscode.TextDocument, line: number): void {
  const range = line + 1 < doc.lineCount ? new vscode.Range(line, 0, line + 1, 0) : doc.lineAt(line).rangeIncludingLineBreak;
  edit.delete(doc.uri, range);
}

function linkTarget(line: string): string | undefined {
  return /\]\(([^)\s]+\.md)\)/.exec(line)?.[1];
}

export class MemoryQuickFixes implements vscode.CodeActionProvider {
  static readonly kinds = [vscode.CodeActionKind.QuickFix, vscode.CodeActionKind.RefactorRewrite];

  constructor(private readonly memoryDir: () => string | undefined) {}

  async provideCodeActions(doc: vscode.TextDocument, range: vscode.Range, context: vscode.CodeActionContext): Promise<vscode.CodeAction[]> {
    const actions: vscode.CodeAction[] = [];
    const dir = path.dirname(doc.uri.fsPath);
    for (const diagnostic of context.diagnostics.filter((d) => d.source === 'reverie')) {
      actions.push(...await this.fixes(doc, dir, diagnostic));
    }
    const memoryDir = this.memoryDir();
    const line = doc.lineAt(range.start.line);
    if (memoryDir && path.resolve(dir) === path.resolve(memoryDir) && /^\s*[-*] \S/.test(line.text)) {
      const args = { file: path.basename(doc.uri.fsPath), line: line.lineNumber + 1, text: line.text };
      const curate = (title: string, command: string): vscode.CodeAction => {
        const action = new vscode.CodeAction(title, vscode.CodeActionKind.RefactorRewrite);
        action.command = { command, title, arguments: [args] };
        return action;
      };
      actions.push(
        curate('Reverie: Forget this entry', Commands.forgetEntry),
        line.text.includes(PIN_MARK) ? curate('Reverie: Unpin this entry', Commands.unpinEntry) : curate('Reverie: Pin this entry (dreams keep it as it is)', Commands.pinEntry),
        curate('Reverie: Edit this entry…', Commands.editEntry),
        curate('Reverie: Move this entry to another topic…', Commands.moveEntry),
      );
    }
    return actions;
  }

  private async fixes(doc: vscode.TextDocument, dir: string, diagnostic: vscode.Diagnostic): Promise<vscode.CodeAction[]> {
    const code = codeOf(diagnostic);
    const lineNo = diagnostic.range.start.line;
    const text = doc.lineAt(Math.min(lineNo, doc.lineCount - 1)).text;
    const fix = (title: string, build: (edit: vscode.WorkspaceEdit) => void, preferred = false): vscode.CodeAction => {
      const action = new vscode.CodeAction(title, vscode.CodeActionKind.QuickFix);
      action.diagnostics = [diagnostic];
      action.isPreferred = preferred;
      action.edit = new vscode.WorkspaceEdit();
      build(action.edit);
      return action;
    };
    const out: vscode.CodeAction[] = [];
    if (code === 'entry-too-long') {
      const target = linkTarget(text);
      out.push(fix(`Shorten the entry to ${LIMIT} characters${target ? ` (full text kept in ${target})` : ''}`, (edit) => {
        edit.replace(doc.uri, doc.lineAt(lineNo).range, shorten(text));
        if (target) {
          const topic = vscode.Uri.file(path.join(dir, target));
          edit.insert(topic, new vscode.Position(100000, 0), `\n> From the index: ${text.replace(/^\s*[-*]\s+/, '')}\n`);
        }
      }, true));
    } else if (code === 'broken-link') {
      const target = linkTarget(text) ?? doc.getText(diagnostic.range);
      let names: string[] = [];
      try {
        names = (await vscode.workspace.fs.readDirectory(vscode.Uri.file(dir)))
          .filter(([name, type]) => type === vscode.FileType.File && name.endsWith('.md') && name !== 'MEMORY.md')
          .map(([name]) => name);
      } catch {
        names = [];
      }
      const near = names.map((name) => ({ name, d: distance(name, target) })).sort((a, b) => a.d - b.d).slice(0, 3)
        .filter((c) => c.d <= Math.max(4, target.length / 2));
      near.forEach((c, i) => out.push(fix(`Change the link to ${c.name}`, (edit) => {
        edit.replace(doc.uri, doc.lineAt(lineNo).range, text.replace(`(${target})`, `(${c.name})`));
      }, i === 0)));
      out.push(fix('Remove this entry', (edit) => deleteLine(edit, doc, lineNo)));
    } else if (code === 'link-outside') {
      out.push(fix('Remove this entry', (edit) => deleteLine(edit, doc, lineNo), true));
    } else if (code === 'duplicate-entry') {
      out.push(fix('Remove this duplicate entry', (edit) => deleteLine(edit, doc, lineNo), true));
    } else if (code === 'unindexed-topic') {
      const name = path.basename(doc.uri.fsPath);
      const index = vscode.Uri.file(path.join(dir, 'MEMORY.md'));
      const description = /^description:\s*(.+)$/m.exec(doc.getText())?.[1]?.trim().replace(/^['"]|['"]$/g, '') ?? '';
      const title = /^name:\s*(.+)$/m.exec(doc.getText())?.[1]?.trim().replace(/^['"]|['"]$/g, '') ?? name.replace(/\.md$/, '');
      out.push(fix(`Add ${name} to MEMORY.md`, (edit) => {
        edit.insert(index, new vscode.Position(100000, 0), shorten(`- [${title}](${name})${description ? ` - ${description}` : ''}`) + '\n');
      }, true));
    }
    const target = linkTarget(text);
    if (target && code !== 'broken-link' && code !== 'link-outside') {
      const open = new vscode.CodeAction(`Open the topic ${target}`, vscode.CodeActionKind.QuickFix);
      open.diagnostics = [diagnostic];
      open.command = { command: 'vscode.open', title: 'Open', arguments: [vscode.Uri.file(path.join(dir, target))] };
      out.push(open);
    }
    return out;
  }
}
