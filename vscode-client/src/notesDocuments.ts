/**
 * Session notes open under their session's title ("Fix the flaky upload test.md") instead of
 * ten tabs all named `session_memory.md`: `reverie-notes:/<title>.md?file=<notes path>` is the
 * notes file itself (reads and saves go to it; a change on disk shows in the tab), and the
 * server's diagnostics of the file are shown on the tab's document too.
 */
import * as path from 'node:path';
import * as vscode from 'vscode';

import { NOTES_SCHEME } from './constants';

function realUri(uri: vscode.Uri): vscode.Uri {
  const file = new URLSearchParams(uri.query).get('file');
  if (!file || path.basename(file) !== 'session_memory.md') {
    throw vscode.FileSystemError.FileNotFound(uri);
  }
  return vscode.Uri.file(file);
}

/** A tab title from a session title: one line, no path separators, not too long. */
export function notesLabel(title: string | null | undefined, sessionId: string): string {
  const clean = (title ?? '').replace(/[\\/:*?"<>|\r\n\t]+/g, ' ').replace(/\s+/g, ' ').trim();
  const short = clean.length > 60 ? `${clean.slice(0, 59).trimEnd()}…` : clean;
  return `${short || `session ${sessionId.slice(0, 8)}`} (notes).md`;
}

export function notesUri(file: string, title: string | null | undefined, sessionId: string): vscode.Uri {
  return vscode.Uri.from({ scheme: NOTES_SCHEME, path: `/${notesLabel(title, sessionId)}`, query: new URLSearchParams({ file }).toString() });
}

export class NotesFileSystem implements vscode.FileSystemProvider, vscode.Disposable {
  private readonly emitter = new vscode.EventEmitter<vscode.FileChangeEvent[]>();
  readonly onDidChangeFile = this.emitter.event;
  private readonly diagnostics = vscode.languages.createDiagnosticCollection('reverie-notes');
  private readonly open = new Map<string, vscode.Uri>(); // real uri -> notes uri
  private readonly disposables: vscode.Disposable[] = [];

  constructor() {
    this.disposables.push(
      this.diagnostics,
      vscode.languages.onDidChangeDiagnostics((event) => {
        for (const uri of event.uris) {
          const shown = this.open.get(uri.toString());
          if (shown) {
            this.diagnostics.set(shown, vscode.languages.getDiagnostics(uri));
          }
        }
      }),
    );
  }

  watch(uri: vscode.Uri): vscode.Disposable {
    const real = realUri(uri);
    this.open.set(real.toString(), uri);
    this.diagnostics.set(uri, vscode.languages.getDiagnostics(real));
    const watcher = vscode.workspace.createFileSystemWatcher(new vscode.RelativePattern(vscode.Uri.file(path.dirname(real.fsPath)), path.basename(real.fsPath)));
    const changed = (): void => this.emitter.fire([{ type: vscode.FileChangeType.Changed, uri }]);
    watcher.onDidChange(changed);
    watcher.onDidCreate(changed);
    return new vscode.Disposable(() => {
      watcher.dispose();
      this.open.delete(real.toString());
      this.diagnostics.delete(uri);
    });
  }

  stat(uri: vscode.Uri): Thenable<vscode.FileStat> {
    return vscode.workspace.fs.stat(realUri(uri));
  }

  readDirectory(): [string, vscode.FileType][] {
    return [];
  }

  createDirectory(uri: vscode.Uri): void {
    throw vscode.FileSystemError.NoPermissions(uri);
  }

  readFile(uri: vscode.Uri): Thenable<Uint8Array> {
    return vscode.workspace.fs.readFile(realUri(uri));
  }

  async writeFile(uri: vscode.Uri, content: Uint8Array): Promise<void> {
    await vscode.workspace.fs.writeFile(realUri(uri), content);
    this.emitter.fire([{ type: vscode.FileChangeType.Changed, uri }]);
  }

  delete(uri: vscode.Uri): void {
    throw vscode.FileSystemError.NoPermissions(uri);
  }

  rename(uri: vscode.Uri): void {
    throw vscode.FileSystemError.NoPermissions(uri);
  }

  dispose(): void {
    for (const d of this.disposables) {
      d.dispose();
    }
    this.emitter.dispose();
  }
}
