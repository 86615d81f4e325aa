/**
 * Read-only documents for previews (what Connect Agent would write, a staged change set): the
 * texts live here only while their tabs may be open, under `reverie-preview:/<label>?id=<n>`,
 * so the diff editor shows them as non-editable documents that never ask to be saved.
 */
import * as vscode from 'vscode';

import { PREVIEW_SCHEME } from './constants';

/** One file of a unified diff: its path (or null for /dev/null) on each side and its hunks. */
export interface FilePatch {
  from: string | null;
  to: string | null;
  hunks: Hunk[];
}

interface Hunk {
  oldStart: number;
  lines: string[];
}

const HUNK = /^@@ -(\d+)(?:,\d+)? \+\d+(?:,\d+)? @@/;

/** Splits a unified diff (as difflib writes it) into its files. */
export function parseUnifiedDiff(diff: string): FilePatch[] {
  const out: FilePatch[] = [];
  let current: FilePatch | undefined;
  let hunk: Hunk | undefined;
  const lines = diff.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    if (line.startsWith('--- ') && lines[i + 1]?.startsWith('+++ ')) {
      const name = (raw: string): string | null => {
        const value = raw.slice(4).split('\t')[0];
        return value === '/dev/null' ? null : value;
      };
      current = { from: name(line), to: name(lines[i + 1]), hunks: [] };
      out.push(current);
      hunk = undefined;
      i++;
      continue;
    }
    const header = HUNK.exec(line);
    if (header && current) {
      hunk = { oldStart: Number(header[1]), lines: [] };
      current.hunks.push(hunk);
      continue;
    }
    if (hunk && (line.startsWith(' ') || line.startsWith('+') || line.startsWith('-') || line.startsWith('\\'))) {
      hunk.lines.push(line);
    }
  }
  return out;
}

/**
 * The text after applying one file's hunks to `before`; undefined when the hunks do not fit
 * (the file changed since the preview was made), so the caller can fall back to the raw diff.
 */
export function applyPatch(before: string, patch: FilePatch): string | undefined {
  const source = before === '' ? [] : before.split(/(?<=\n)/);
  const result: string[] = [];
  let at = 0; // index into source
  for (const hunk of patch.hunks) {
    const start = Math.max(hunk.oldStart - 1, 0);
    // difflib gives oldStart 0 for an empty old side
    if (start < at) {
      return undefined;
    }
    result.push(...source.slice(at, start));
    at = start;
    let last: string[] | undefined; // the array the previous line went into (for "\ No newline")
    for (const line of hunk.lines) {
      const body = line.slice(1);
      if (line.startsWith('\\')) {
        if (last && last.length) {
          last[last.length - 1] = last[last.length - 1].replace(/\n$/, '');
        }
        continue;
      }
      if (line.startsWith(' ') || line.startsWith('-')) {
        const expected = source[at];
        if (expected === undefined || expected.replace(/\n$/, '') !== body) {
          return undefined;
        }
        at++;
        if (line.startsWith(' ')) {
          result.push(expected);
          last = result;
        } else {
          last = undefined;
        }
      } else {
        result.push(`${body}\n`);
        last = result;
      }
    }
  }
  result.push(...source.slice(at));
  return result.join('');
}

export class PreviewDocuments implements vscode.TextDocumentContentProvider, vscode.Disposable {
  private readonly texts = new Map<string, string>();
  private next = 0;
  private readonly emitter = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.emitter.event;

  /** A read-only document with `text`, shown under `label` (a file name: its extension picks the language). */
  add(label: string, text: string): vscode.Uri {
    const uri = vscode.Uri.from({ scheme: PREVIEW_SCHEME, path: `/${label.replace(/^\/+/, '')}`, query: `id=${++this.next}` });
    this.texts.set(uri.toString(), text);
    if (this.texts.size > 400) { // previews of long ago: their tabs show a note instead
      this.texts.delete(this.texts.keys().next().value as string);
    }
    return uri;
  }

  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.texts.get(uri.toString()) ?? 'This preview is no longer available: run the command again to see it.\n';
  }

  dispose(): void {
    this.texts.clear();
    this.emitter.dispose();
  }
}
