/**
 * Read-only documents for memory history, so a run can be shown as one multi-file diff:
 * `reverie-history:/<file>?run=<runId>&side=<before|after>&workspace=<folder>` (the same path
 * on both sides, so the diff editor shows a change of one file, not a rename). The content is asked of the server each time (never kept in a map), so a diff tab
 * VS Code restores after a reload shows the same text, or says why it cannot.
 */
import * as path from 'node:path';
import * as vscode from 'vscode';

import { type ReverieServer } from './client';
import { HISTORY_SCHEME, ServerCommands } from './constants';
import { type HistoryResult, type HistoryRun } from './generated/protocol';
import { runTitle } from './words';

type Side = 'before' | 'after';

export function historyUri(runId: string, side: Side, file: string, workspace?: string): vscode.Uri {
  const query = new URLSearchParams({ run: runId, side, ...(workspace ? { workspace } : {}) }).toString();
  return vscode.Uri.from({ scheme: HISTORY_SCHEME, path: `/${file}`, query });
}

function parse(uri: vscode.Uri): { runId: string; side: Side; file: string; workspace?: string } {
  const query = new URLSearchParams(uri.query);
  return { runId: query.get('run') ?? '', side: query.get('side') === 'before' ? 'before' : 'after', file: uri.path.replace(/^\//, ''), workspace: query.get('workspace') ?? undefined };
}

export class HistoryDocuments implements vscode.TextDocumentContentProvider {
  private readonly changed = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.changed.event;

  constructor(private readonly server: ReverieServer) {}

  async provideTextDocumentContent(uri: vscode.Uri): Promise<string> {
    const { runId, side, file, workspace } = parse(uri);
    let run: HistoryRun | undefined;
    try {
      run = (await this.run(runId, workspace)).run;
    } catch (error) {
      const detail = error instanceof Error ? error.message : String(error);
      return `Reverie could not load this run (${detail}).\nStart the server ("Reverie: Restart Server") and reopen this diff from the History view.\n`;
    }
    const change = run?.changes?.find((c) => c.path === file);
    if (!run || !change) {
      return `This run or its file ${file} is no longer in the memory history (it may have expired).\n`;
    }
    return (side === 'before' ? change.before : change.after) ?? '';
  }

  /** One run with the before/after texts of its files. */
  async run(runId: string, workspace?: string): Promise<{ run?: HistoryRun; memoryDir: string }> {
    const { runs, memoryDir } = await this.server.execute<HistoryResult>(ServerCommands.history, { ...(workspace ? { workspace } : {}), runId, withContents: true });
    return { run: runs[0], memoryDir };
  }

  /** Opens every file of the run in one multi-file diff editor. */
  async show(runId: string, workspace?: string): Promise<void> {
    const { run, memoryDir } = await this.run(runId, workspace);
    if (!run) {
      void vscode.window.showInformationMessage('Reverie: that run is no longer in the memory history.');
      return;
    }
    const files = run.changes ?? [];
    if (!files.length) {
      void vscode.window.showInformationMessage(`Reverie: the ${runTitle(run)} changed no files.`);
      return;
    }
    const runs = await this.server.execute<HistoryResult>(ServerCommands.history, { ...(workspace ? { workspace } : {}), limit: 100 })
      .then((r) => r.runs, () => [] as HistoryRun[]);
    const title = `Reverie: ${runTitle(runs.find((r) => r.runId === run.runId) ?? run, runs)}`;
    const resources = files.map((c) => [
      vscode.Uri.file(path.join(memoryDir, c.path)),
      historyUri(run.runId, 'before', c.path, workspace),
      historyUri(run.runId, 'after', c.path, workspace),
    ]);
    await vscode.commands.executeCommand('vscode.changes', title, resources);
  }

  dispose(): void {
    this.changed.dispose();
  }
}
