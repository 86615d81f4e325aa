/**
 * The Reverie sidebar: Sessions (the workspace's agent sessions, their notes), Memory (the
 * index and topic files with their diagnostics) and History (runs, each with its files; Show
 * Diff and Undo inline). Every view asks the server when refreshed; when the server is not
 * running the views are empty and the welcome content says what to do.
 */
import * as path from 'node:path';
import * as vscode from 'vscode';

import { type ReverieServer } from './client';
import { Commands, ContextKeys, ServerCommands, Views } from './constants';
import { type HistoryResult, type HistoryRun, type LockStatusResult, type ReviewsResult, type SessionRow, type SessionsResult, type StagedReview } from './generated/protocol';
import { historyUri } from './history';
import { formatWhen } from './statusBar';
import { proposer, reasonOf, runKind, runTitle } from './words';

/** The folder commands apply to: the active editor's, else the first. */
export function currentFolder(): vscode.WorkspaceFolder | undefined {
  const editor = vscode.window.activeTextEditor;
  return (editor && vscode.workspace.getWorkspaceFolder(editor.document.uri)) ?? vscode.workspace.workspaceFolders?.[0];
}

export function workspaceArg(): { workspace?: string } {
  const folder = currentFolder();
  return folder ? { workspace: folder.uri.fsPath } : {};
}

abstract class ServerTree<T> implements vscode.TreeDataProvider<T> {
  protected readonly emitter = new vscode.EventEmitter<T | undefined>();
  readonly onDidChangeTreeData = this.emitter.event;

  constructor(protected readonly server: ReverieServer, protected readonly log: vscode.LogOutputChannel) {}

  refresh(): void {
    this.emitter.fire(undefined);
  }

  abstract getTreeItem(element: T): vscode.TreeItem;
  abstract getChildren(element?: T): Promise<T[]>;

  /** A root that fails shows nothing (the welcome view speaks) and logs why. */
  protected async guarded<R>(what: string, body: () => Promise<R[]>): Promise<R[]> {
    if (!this.server.isRunning) {
      return [];
    }
    try {
      return await body();
    } catch (error) {
      this.log.warn(`${what}: ${error instanceof Error ? error.message : String(error)}`);
      return [];
    }
  }
}

// --- sessions ---------------------------------------------------------------------------------

/** Each agent's icon in the Sessions view (codicons); the agent ids are the server's. */
export const AGENT_ICONS: Readonly<Record<string, string>> = {
  'claude-code': 'sparkle',
  codex: 'terminal',
  'gemini-cli': 'star-full',
  aider: 'git-commit',
  generic: 'comment',
  'copilot-chat': 'copilot',
  cline: 'robot',
  'roo-code': 'rocket',
  'kilo-code': 'zap',
  continue: 'debug-continue',
};

export function agentIcon(agent: string): string {
  return AGENT_ICONS[agent] ?? 'comment';
}

export class SessionsTree extends ServerTree<SessionRow> {
  getTreeItem(row: SessionRow): vscode.TreeItem {
    const item = new vscode.TreeItem(row.title ? row.title.slice(0, 60) : `${row.agent} · ${row.sessionId.slice(0, 8)}`);
    item.description = `${row.agent} · ${formatWhen(new Date(row.updatedAt))} · ${row.messages} msgs${row.hasNotes ? ' · notes' : ''}${row.current ? ' · current' : ''}`;
    item.tooltip = new vscode.MarkdownString(`**${row.agent}** session \`${row.sessionId}\`\n\n${row.messages} messages, ~${row.tokens} tokens; ${row.hasNotes ? 'notes written' : 'no notes yet'}\n\nTranscript: \`${row.path}\``);
    item.iconPath = new vscode.ThemeIcon(agentIcon(row.agent));
    item.contextValue = 'session';
    item.command = { command: Commands.openSession, title: 'Open Session Notes', arguments: [row] };
    return item;
  }

  /** the view, once created: a hidden one is redrawn when shown, so a refresh just marks it */
  view?: vscode.TreeView<SessionRow>;
  /** the rows on screen (as JSON), and rows a refresh fetched for the next getChildren */
  private shown: string | undefined;
  private fetched: SessionRow[] | undefined;

  /**
   * Redraws the rows only when they changed. Notes updates come often (each asks for a
   * refresh), and a redraw of the same rows drops the tooltip a person is reading and the row
   * under the pointer.
   */
  override refresh(): void {
    if (this.shown === undefined || !this.view?.visible) {
      this.shown = undefined;
      super.refresh();
      return;
    }
    void this.rows().then((rows) => {
      if (JSON.stringify(rows) !== this.shown) {
        this.fetched = rows;
        super.refresh();
      }
    });
  }

  async getChildren(element?: SessionRow): Promise<SessionRow[]> {
    if (element) {
      return [];
    }
    const rows = this.fetched ?? await this.rows();
    this.fetched = undefined;
    this.shown = JSON.stringify(rows);
    return rows;
  }

  private rows(): Promise<SessionRow[]> {
    return this.guarded('sessions', async () =>
      (await this.server.execute<SessionsResult>(ServerCommands.listSessions, workspaceArg())).sessions);
  }
}

// --- memory -------------------------------------------------------------------------------------

/** The diagnostics source of stale memory facts (server: ``reverie.lsp.staleness``). */
const STALENESS_SOURCE = 'reverie.staleness';

/** One entry (a bullet line) of a memory file: what Forget, Pin, Edit and Move act on. */
export interface MemoryEntryNode {
  uri: vscode.Uri;
  /** 0-based line */
  line: number;
  text: string;
  pinned: boolean;
}

/** The change sets waiting for the person (a dream's review, an agent's proposal), on top. */
export interface PendingNode {
  pending: StagedReview[];
}

export interface ReviewNode {
  review: StagedReview;
}

export type MemoryNode = vscode.Uri | MemoryEntryNode | PendingNode | ReviewNode;

export const PIN_MARK = '<!-- pinned -->';

/** The bullet lines of a memory file (front matter and headings left out). */
export function memoryEntries(uri: vscode.Uri, text: string): MemoryEntryNode[] {
  const lines = text.split(/\r?\n/);
  let start = 0;
  if (lines[0] === '---') {
    const end = lines.indexOf('---', 1);
    start = end > 0 ? end + 1 : 0;
  }
  const out: MemoryEntryNode[] = [];
  for (let i = start; i < lines.length; i++) {
    if (/^\s*[-*] \S/.test(lines[i])) {
      out.push({ uri, line: i, text: lines[i], pinned: lines[i].includes(PIN_MARK) });
    }
  }
  return out;
}

/** What the Problems panel counts: hints are not listed there, so they are not counted here. */
export function countedProblems(uri: vscode.Uri): vscode.Diagnostic[] {
  return vscode.languages.getDiagnostics(uri).filter((d) => d.severity !== vscode.DiagnosticSeverity.Hint);
}

export class MemoryTree extends ServerTree<MemoryNode> {
  /** the pending change sets, until the next refresh (diagnostics redraw the counts only) */
  private pending: StagedReview[] | undefined;

  override refresh(): void {
    this.pending = undefined;
    super.refresh();
  }

  /** The problem counts changed: redraw without asking the server anything new. */
  redraw(): void {
    this.emitter.fire(undefined);
  }

  getTreeItem(node: MemoryNode): vscode.TreeItem {
    if ('pending' in node) {
      const n = node.pending.length;
      const item = new vscode.TreeItem(`${n} change${n === 1 ? '' : 's'} wait${n === 1 ? 's' : ''} for you`, vscode.TreeItemCollapsibleState.Expanded);
      item.iconPath = new vscode.ThemeIcon('git-pull-request');
      item.tooltip = 'Proposed by a dream or an agent; nothing reaches the memory your agents load until you accept it.';
      item.contextValue = 'pendingReviews';
      return item;
    }
    if ('review' in node) {
      const r = node.review;
      const item = new vscode.TreeItem(r.source === 'agent' ? `${proposer(r)}: ${r.summary}` : `${proposer(r)}: ${r.changes.length} file${r.changes.length === 1 ? '' : 's'}`);
      item.description = formatWhen(new Date(r.createdAt));
      item.tooltip = r.source === 'agent' ? `Reason: ${reasonOf(r)}` : r.summary;
      item.iconPath = new vscode.ThemeIcon(r.source === 'agent' ? 'account' : 'sparkle');
      item.contextValue = 'pendingReview';
      item.command = { command: Commands.reviewChanges, title: 'Review', arguments: [r.reviewId] };
      return item;
    }
    if (!(node instanceof vscode.Uri)) {
      // "- [Title](file.md) - hook" reads "Title — hook"
      const shown = node.text.replace(PIN_MARK, '').replace(/^\s*[-*]\s+/, '').replace(/^\[([^\]]+)\]\([^)]*\)\s*(?:[-—–:]\s*)?/, (_m, title: string) => `${title} — `).replace(/ — $/, '').trim();
      const item = new vscode.TreeItem(shown.length > 80 ? `${shown.slice(0, 79)}…` : shown);
      item.tooltip = node.text;
      item.description = node.pinned ? 'pinned' : undefined;
      item.iconPath = new vscode.ThemeIcon(node.pinned ? 'pinned' : 'circle-small');
      item.contextValue = node.pinned ? 'memoryEntry.pinned' : 'memoryEntry';
      item.command = { command: 'vscode.open', title: 'Open', arguments: [node.uri, { selection: new vscode.Range(node.line, 0, node.line, 0) }] };
      return item;
    }
    const uri = node;
    const item = new vscode.TreeItem(uri, vscode.TreeItemCollapsibleState.Collapsed);
    const problems = countedProblems(uri);
    const errors = problems.filter((d) => d.severity === vscode.DiagnosticSeverity.Error).length;
    // stale facts (reverie check) are counted apart from the files' other problems
    const stale = problems.filter((d) => d.source === STALENESS_SOURCE).length;
    const others = problems.length - stale;
    const counts: string[] = [];
    if (stale) {
      counts.push(`${stale} stale`);
    }
    if (others) {
      counts.push(`${others} problem${others === 1 ? '' : 's'}`);
    }
    item.description = counts.length ? counts.join(', ') : undefined;
    item.iconPath = new vscode.ThemeIcon(errors ? 'error' : problems.length ? 'warning' : path.basename(uri.fsPath) === 'MEMORY.md' ? 'book' : 'file');
    item.command = { command: 'vscode.open', title: 'Open', arguments: [uri] };
    item.contextValue = 'memoryFile';
    return item;
  }

  async getChildren(element?: MemoryNode): Promise<MemoryNode[]> {
    if (element) {
      if ('pending' in element) {
        return element.pending.map((review) => ({ review }));
      }
      if (!(element instanceof vscode.Uri)) {
        return [];
      }
      try {
        return memoryEntries(element, new TextDecoder().decode(await vscode.workspace.fs.readFile(element)));
      } catch {
        return [];
      }
    }
    return this.guarded<MemoryNode>('memory files', async () => {
      const lock = await this.server.execute<LockStatusResult>(ServerCommands.lockStatus, workspaceArg());
      const dir = vscode.Uri.file(lock.memoryDir);
      let entries: [string, vscode.FileType][];
      try {
        entries = await vscode.workspace.fs.readDirectory(dir);
      } catch {
        return []; // no memory yet: the welcome content offers a dream
      }
      if (this.pending === undefined) { // asked again only after a refresh, not per diagnostic
        this.pending = (await this.server.execute<ReviewsResult>(ServerCommands.reviews, workspaceArg())
          .catch(() => ({ reviews: [] as StagedReview[] }))).reviews;
        void vscode.commands.executeCommand('setContext', ContextKeys.reviewPending, this.pending.length > 0);
      }
      const pending = this.pending;
      const top: MemoryNode[] = pending.length ? [{ pending }] : [];
      return [...top, ...entries
        .filter(([name, type]) => type === vscode.FileType.File && name.endsWith('.md'))
        .map(([name]) => name)
        .sort((a, b) => Number(b === 'MEMORY.md') - Number(a === 'MEMORY.md') || a.localeCompare(b))
        .map((name) => vscode.Uri.joinPath(dir, name))];
    });
  }
}

// --- history ------------------------------------------------------------------------------------

export interface RunFileNode {
  run: HistoryRun;
  /** the runs listed with it, to name an undo's target */
  runs: readonly HistoryRun[];
  file: string;
  kind: 'added' | 'changed' | 'removed';
  workspace?: string;
}

export type HistoryNode = HistoryRun | RunFileNode;

function isFile(node: HistoryNode): node is RunFileNode {
  return 'file' in node;
}

export function runCounts(run: HistoryRun): string {
  return [`+${run.added.length}`, `~${run.changed.length}`, `-${run.removed.length}`].join(' ');
}

export class HistoryTree extends ServerTree<HistoryNode> {
  private runs: HistoryRun[] = [];

  getTreeItem(node: HistoryNode): vscode.TreeItem {
    if (isFile(node)) {
      const item = new vscode.TreeItem(node.file);
      item.description = node.kind;
      item.iconPath = new vscode.ThemeIcon(node.kind === 'added' ? 'diff-added' : node.kind === 'removed' ? 'diff-removed' : 'diff-modified');
      const workspace = node.workspace;
      item.command = {
        command: 'vscode.diff',
        title: 'Show Diff',
        arguments: [historyUri(node.run.runId, 'before', node.file, workspace), historyUri(node.run.runId, 'after', node.file, workspace), `${node.file} (${runTitle(node.run, node.runs)})`],
      };
      return item;
    }
    const run = node;
    const files = run.added.length + run.changed.length + run.removed.length;
    const item = new vscode.TreeItem(`${runKind(run, this.runs)} · ${formatWhen(new Date(run.at))}`, files ? vscode.TreeItemCollapsibleState.Collapsed : vscode.TreeItemCollapsibleState.None);
    item.id = run.runId;
    item.description = `${runCounts(run)}${run.tokensIn || run.tokensOut ? ` · ${run.tokensIn + run.tokensOut} tokens` : ''}${run.undone ? ' · undone' : ''}`;
    item.tooltip = new vscode.MarkdownString(
      `**${runTitle(run, this.runs)}**\n\n${new Date(run.at).toLocaleString()}\n\n${run.summary || ''}\n\n` +
      `tokens: ${run.tokensIn} in / ${run.tokensOut} out${run.sessions.length ? `\n\nfrom ${run.sessions.length} session${run.sessions.length === 1 ? '' : 's'}` : ''}`);
    item.iconPath = new vscode.ThemeIcon(run.source === 'undo' ? 'discard' : run.source === 'sleep' ? 'moon' : 'sparkle');
    item.contextValue = run.undone ? 'run.undone' : `run.${run.source}`;
    return item;
  }

  getChildren(element?: HistoryNode): Promise<HistoryNode[]> {
    if (element) {
      if (isFile(element)) {
        return Promise.resolve([]);
      }
      const { workspace } = workspaceArg();
      const of = (kind: RunFileNode['kind'], names: string[]): RunFileNode[] => names.map((file) => ({ run: element, runs: this.runs, file, kind, workspace }));
      return Promise.resolve([...of('added', element.added), ...of('changed', element.changed), ...of('removed', element.removed)]);
    }
    return this.guarded('history', async () => {
      this.runs = (await this.server.execute<HistoryResult>(ServerCommands.history, { ...workspaceArg(), limit: 100 })).runs;
      return this.runs;
    });
  }
}

export interface Sidebar extends vscode.Disposable {
  refresh(): void;
  history: HistoryTree;
}

export function createSidebar(server: ReverieServer, log: vscode.LogOutputChannel): Sidebar {
  const sessions = new SessionsTree(server, log);
  const memory = new MemoryTree(server, log);
  const history = new HistoryTree(server, log);
  sessions.view = vscode.window.createTreeView(Views.sessions, { treeDataProvider: sessions });
  const disposables = [
    sessions.view,
    vscode.window.createTreeView(Views.memory, { treeDataProvider: memory }),
    vscode.window.createTreeView(Views.history, { treeDataProvider: history }),
    vscode.languages.onDidChangeDiagnostics(() => memory.redraw()),
  ];
  return {
    history,
    refresh: () => {
      sessions.refresh();
      memory.refresh();
      history.refresh();
    },
    dispose: () => {
      for (const d of disposables) {
        d.dispose();
      }
    },
  };
}
