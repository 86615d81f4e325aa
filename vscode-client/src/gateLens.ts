/**
 * The dream-gate hint ("Next dream after more sessions: 3 of 5 ...") as a CodeLens on
 * MEMORY.md's first line instead of a diagnostic: it is a status, not a problem, so the Problems
 * panel and the Memory view count only real problems. The server still publishes it as a hint
 * diagnostic for other editors; the language client's middleware takes it out here.
 */
import * as vscode from 'vscode';

import { Commands } from './constants';

export const GATE_CODE = 'dream-gate';

export class GateLenses implements vscode.CodeLensProvider, vscode.Disposable {
  private readonly hints = new Map<string, string>();
  private readonly emitter = new vscode.EventEmitter<void>();
  readonly onDidChangeCodeLenses = this.emitter.event;

  /** Keeps the gate hint of `uri` (if any) and returns the other diagnostics. */
  take(uri: vscode.Uri, diagnostics: vscode.Diagnostic[]): vscode.Diagnostic[] {
    const gate = diagnostics.find((d) => codeOf(d) === GATE_CODE);
    const key = uri.toString();
    const before = this.hints.get(key);
    if (gate) {
      this.hints.set(key, gate.message);
    } else {
      this.hints.delete(key);
    }
    if (before !== gate?.message) {
      this.emitter.fire();
    }
    return gate ? diagnostics.filter((d) => d !== gate) : diagnostics;
  }

  hint(uri: vscode.Uri): string | undefined {
    return this.hints.get(uri.toString());
  }

  provideCodeLenses(document: vscode.TextDocument): vscode.CodeLens[] {
    const hint = this.hints.get(document.uri.toString());
    if (!hint) {
      return [];
    }
    const top = new vscode.Range(0, 0, 0, 0);
    return [
      new vscode.CodeLens(top, { title: `$(clock) ${hint}`, command: Commands.showLockStatus, tooltip: 'Why the next automatic dream waits' }),
      new vscode.CodeLens(top, { title: 'Dream Now', command: Commands.dreamNow }),
    ];
  }

  dispose(): void {
    this.hints.clear();
    this.emitter.dispose();
  }
}

function codeOf(d: vscode.Diagnostic): string | number | undefined {
  return typeof d.code === 'object' ? d.code.value : d.code;
}
