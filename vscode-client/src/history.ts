/**
 * Read-only documents for memory history, so a run can be shown with `vscode.diff`:
 * `reverie-history:/<runId>/<side>/<file>` where side is `before` or `after`.
 */
import * as path from 'node:path';
import * as vscode from 'vscode';

import { HISTORY_SCHEME } from './constants';
import { field, type HistoryRun } from './protocol';

interface FileChange {
  path: string;
  before: string;
  after: string;
}

export class HistoryDocuments implements vscode.TextDocumentContentProvider {
  private readonly contents = new Map<string, string>();

  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.contents.get(uri.toString()) ?? '';
  }

  private put(runId: string, side: 'before' | 'after' | 'run', file: string, text: string): vscode.Uri {
    const uri = vscode.Uri.from({ scheme: HISTORY_SCHEME, path: `/${runId}/${side}/${file}` });
    this.contents.set(uri.toString(), text);
    return uri;
  }

  /** Opens the before/after diff of every file the run changed (or the run itself if it has none). */
  async show(run: HistoryRun): Promise<void> {
    const runId = String(field(run, 'runId') ?? field(run, 'id') ?? 'run');
    const changes = fileChanges(run);
    if (changes.length === 0) {
      // The server gave no file contents for this run: show its unified diff, else a summary.
      const patch = field<string>(run, 'diff') ?? field<string>(run, 'patch');
      const uri = typeof patch === 'string'
        ? this.put(runId, 'run', `${runId}.diff`, patch)
        : this.put(runId, 'run', `${runId}.md`, runSummary(runId, run));
      const doc = await vscode.workspace.openTextDocument(uri);
      await vscode.window.showTextDocument(doc, { preview: true });
      return;
    }
    for (const change of changes) {
      const name = path.basename(change.path);
      const left = this.put(runId, 'before', change.path, change.before);
      const right = this.put(runId, 'after', change.path, change.after);
      await vscode.commands.executeCommand('vscode.diff', left, right, `${name} (Reverie run ${runId.slice(0, 12)})`, { preview: changes.length === 1 });
    }
  }
}

/** The per-file before/after texts of a run, in the shapes the server's history may use. */
function fileChanges(run: HistoryRun): FileChange[] {
  const files = field<unknown>(run, 'changes') ?? field<unknown>(run, 'files') ?? field<unknown>(run, 'diffs');
  if (!Array.isArray(files)) {
    return [];
  }
  const out: FileChange[] = [];
  for (const entry of files) {
    if (entry && typeof entry === 'object') {
      const record = entry as Record<string, unknown>;
      const file = field<string>(record, 'path') ?? field<string>(record, 'file');
      const before = field<string | null>(record, 'before') ?? field<string | null>(record, 'old');
      const after = field<string | null>(record, 'after') ?? field<string | null>(record, 'new');
      if (typeof file === 'string' && (typeof before === 'string' || typeof after === 'string')) {
        out.push({ path: file, before: before ?? '', after: after ?? '' });
      }
    }
  }
  return out;
}

function runSummary(runId: string, run: HistoryRun): string {
  const list = (name: string): string[] => {
    const value = field<unknown>(run, name);
    return Array.isArray(value) ? value.map(String) : [];
  };
  const lines = [`# Reverie run ${runId}`, ''];
  const when = field<string>(run, 'at');
  lines.push(`- source: ${String(field(run, 'source') ?? 'unknown')}${when ? `, ${when}` : ''}`);
  for (const kind of ['added', 'changed', 'removed']) {
    const files = list(kind);
    if (files.length) {
      lines.push(`- ${kind}: ${files.map((f) => `\`${f}\``).join(', ')}`);
    }
  }
  const summary = field<string>(run, 'summary');
  if (summary) {
    lines.push('', summary);
  }
  return lines.join('\n') + '\n';
}
