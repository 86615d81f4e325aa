/**
 * One status bar item telling what Reverie is doing: idle (with the time of the last dream),
 * dreaming (turn, files), updating notes, waiting on a lock held by another process, or stopped.
 * Clicking it shows the lock status and the dream gates.
 */
import * as vscode from 'vscode';

import { Commands } from './constants';
import { field, type JobEvent, type LockStatus, type StatusResult } from './protocol';

interface RunningJob {
  kind: string;
  turn?: number;
  files?: number;
}

const FINISHED = new Set(['complete', 'skipped', 'cancelled', 'error']);

export class ReverieStatusBar implements vscode.Disposable {
  private readonly item: vscode.StatusBarItem;
  private readonly jobs = new Map<string, RunningJob>();
  private lastDream: Date | undefined;
  private lockHolder: number | undefined;
  private serverState: 'starting' | 'running' | 'stopped' | 'failed' = 'starting';
  private provider = '';
  private agents = '';

  constructor() {
    this.item = vscode.window.createStatusBarItem('reverie.status', vscode.StatusBarAlignment.Left, 10);
    this.item.name = 'Reverie';
    this.item.command = Commands.showLockStatus;
    this.render();
    this.item.show();
  }

  setServerState(state: 'starting' | 'running' | 'stopped' | 'failed'): void {
    this.serverState = state;
    if (state !== 'running') {
      this.jobs.clear();
    }
    this.render();
  }

  /** Seeds the item from `reverie.server.status` (running jobs, last dream, provider). */
  applyStatus(status: StatusResult): void {
    this.provider = status.offline ? 'offline engine' : `${status.provider}${status.model ? ` · ${status.model}` : ''}`;
    for (const job of status.runningJobs ?? []) {
      this.jobs.set(job.jobId, { kind: job.kind });
    }
    this.agents = (status.connections ?? [])
      .flatMap((entry) => entry.connected.map((c) => `${c.agent} (${c.scope}${c.intact ? '' : ', needs repair'})`))
      .join(', ');
    const dream = status.lastResults?.dream;
    if (dream?.type === 'complete' && dream.finishedAt) {
      this.lastDream = new Date(dream.finishedAt);
    }
    this.render();
  }

  applyJobEvent(event: JobEvent): void {
    const id = event.jobId ?? `${event.kind}`;
    if (event.type === 'start' || event.type === 'trailing_start') {
      this.jobs.set(id, { kind: event.kind });
    } else if (event.type === 'progress') {
      const job = this.jobs.get(id) ?? { kind: event.kind };
      const turn = field<number>(event.payload, 'turn') ?? field<number>(event.payload, 'turns');
      const files = field<unknown>(event.payload, 'filesTouched') ?? field<unknown>(event.payload, 'filesWritten') ?? field<unknown>(event.payload, 'files');
      job.turn = typeof turn === 'number' ? turn : job.turn;
      job.files = Array.isArray(files) ? files.length : typeof files === 'number' ? files : job.files;
      this.jobs.set(id, job);
    } else if (FINISHED.has(event.type)) {
      this.jobs.delete(id);
      if (event.kind === 'dream' && event.type === 'complete') {
        this.lastDream = new Date();
      }
    }
    this.render();
  }

  applyLock(lock: LockStatus): void {
    const pid = field<number | null>(lock, 'holderPid');
    const alive = field<boolean>(lock, 'holderAlive');
    const ownPid = field<number>(lock, 'serverPid');
    this.lockHolder = alive && typeof pid === 'number' && pid !== ownPid ? pid : undefined;
    const last = field<string | null>(lock, 'lastConsolidatedAt');
    if (last) {
      this.lastDream = new Date(last);
    }
    this.render();
  }

  noteDreamFinished(): void {
    this.lastDream = new Date();
    this.render();
  }

  dispose(): void {
    this.item.dispose();
  }

  private render(): void {
    const jobs = [...this.jobs.values()];
    const dream = jobs.find((job) => job.kind === 'dream' || job.kind === 'sleep');
    let text: string;
    if (this.serverState === 'failed' || this.serverState === 'stopped') {
      text = '$(circle-slash) Reverie: stopped';
    } else if (this.serverState === 'starting') {
      text = '$(loading~spin) Reverie';
    } else if (dream) {
      const details = [dream.turn !== undefined ? `turn ${dream.turn}` : '', dream.files !== undefined ? `${dream.files} file${dream.files === 1 ? '' : 's'}` : '']
        .filter(Boolean).join(', ');
      text = `$(sync~spin) Reverie: ${dream.kind === 'sleep' ? 'sleeping' : 'dreaming'}${details ? ` (${details})` : ''}`;
    } else if (jobs.some((job) => job.kind === 'session_memory')) {
      text = '$(sync~spin) Reverie: updating notes';
    } else if (this.lockHolder !== undefined) {
      text = `$(lock) Reverie: lock held by PID ${this.lockHolder}`;
    } else {
      text = `$(sparkle) Reverie${this.lastDream ? `: dreamed ${formatWhen(this.lastDream)}` : ''}`;
    }
    this.item.text = text;
    const tooltip = new vscode.MarkdownString(undefined, true);
    tooltip.appendMarkdown('**Reverie**: background memory for coding agents\n\n');
    tooltip.appendMarkdown(`Last dream: ${this.lastDream ? this.lastDream.toLocaleString() : 'not yet'}\n\n`);
    if (this.provider) {
      tooltip.appendMarkdown(`Model: ${this.provider}\n\n`);
    }
    tooltip.appendMarkdown(`Connected agents: ${this.agents || 'none (Reverie: Connect Agent…)'}\n\n`);
    tooltip.appendMarkdown('Click for the lock status and the dream gates.');
    this.item.tooltip = tooltip;
    this.item.backgroundColor = this.serverState === 'failed' ? new vscode.ThemeColor('statusBarItem.errorBackground') : undefined;
  }
}

/** "14:02" today, else "Mar 3 14:02". */
export function formatWhen(when: Date, now: Date = new Date()): string {
  const time = when.toLocaleTimeString(undefined, { hour: '2-digit', minute: '2-digit' });
  return when.toDateString() === now.toDateString()
    ? time
    : `${when.toLocaleDateString(undefined, { month: 'short', day: 'numeric' })} ${time}`;
}
