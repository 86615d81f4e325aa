/**
 * One status bar item telling what Reverie is doing: idle (with the time of the last dream),
 * dreaming (turn, files), updating notes, waiting on a lock held by another process, or stopped.
 * Its tooltip says why no automatic dream ran yet, who is connected and what models cost;
 * clicking it opens a menu of Reverie's actions.
 */
import * as vscode from 'vscode';

import { Commands } from './constants';
import { type HistoryRun, type JobEventPayload, type LockStatusResult, type StatusResult } from './generated/protocol';

interface RunningJob {
  kind: string;
  turn?: number;
  files?: number;
}

const FINISHED = new Set(['complete', 'skipped', 'cancelled', 'error']);
const DREAM_SOURCES = new Set(['auto', 'manual', 'sleep']);

export class ReverieStatusBar implements vscode.Disposable {
  private readonly item: vscode.StatusBarItem;
  private readonly jobs = new Map<string, RunningJob>();
  private lastDream: Date | undefined;
  private lockHolder: number | undefined;
  private serverPid: number | undefined;
  private serverState: 'starting' | 'running' | 'stopped' | 'failed' = 'starting';
  private provider = '';
  private gate: LockStatusResult | undefined;
  private lastSkip = '';
  private agents = '';
  private spend = '';
  private historyKnown = false;

  constructor() {
    this.item = vscode.window.createStatusBarItem('reverie.status', vscode.StatusBarAlignment.Left, 10);
    this.item.name = 'Reverie';
    this.item.command = Commands.showMenu;
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
    for (const job of status.runningJobs) {
      this.jobs.set(job.jobId, { kind: job.kind });
    }
    this.agents = status.connections
      .flatMap((entry) => entry.connected.map((c) => `${c.agent} (${c.scope}${c.intact ? '' : ', needs repair'})`))
      .join(', ');
    const dream = status.lastResults.dream as typeof status.lastResults[string] | undefined;
    if (dream?.type === 'complete') {
      this.lastDream = new Date(dream.finishedAt);
    } else if (dream?.type === 'skipped') {
      this.lastSkip = typeof dream.payload.reasonText === 'string' ? dream.payload.reasonText : dream.message;
    }
    const tokens = status.tokensToday.inputTokens + status.tokensToday.outputTokens;
    this.spend = status.offline && !tokens ? '' : `${tokens.toLocaleString()} tokens today${status.costToday !== null && status.costToday !== undefined ? ` ($${status.costToday.toFixed(2)})` : ''}`;
    if (status.spend) { // the cost governor: spent against the caps
      this.spend = status.offline && !status.spend.tokensToday && !status.spend.tokensMonth ? '' : status.spend.summary;
    }
    this.render();
  }

  applyJobEvent(event: JobEventPayload): void {
    const id = event.jobId ?? `${event.kind}`;
    if (event.type === 'start' || event.type === 'trailing_start') {
      this.jobs.set(id, { kind: event.kind });
    } else if (event.type === 'progress') {
      const job = this.jobs.get(id) ?? { kind: event.kind };
      const turn = event.payload.turn;
      const files = event.payload.filesTouched ?? event.payload.filesWritten;
      job.turn = typeof turn === 'number' ? turn : job.turn;
      job.files = Array.isArray(files) ? files.length : typeof files === 'number' ? files : job.files;
      this.jobs.set(id, job);
    } else if (FINISHED.has(event.type)) {
      this.jobs.delete(id);
      if (event.kind === 'dream' && event.type === 'complete') {
        this.lastDream = new Date();
        this.lastSkip = '';
      } else if (event.kind === 'dream' && event.type === 'skipped') {
        const text = event.payload.reasonText ?? event.payload.message;
        this.lastSkip = typeof text === 'string' ? text : '';
      }
    }
    this.render();
  }

  applyLock(lock: LockStatusResult, serverPid?: number): void {
    this.gate = lock;
    if (serverPid !== undefined) {
      this.serverPid = serverPid;
    }
    this.lockHolder = lock.holderAlive && lock.holderPid !== null && lock.holderPid !== this.serverPid ? lock.holderPid : undefined;
    if (!this.historyKnown) { // until the history says which dream is still in effect
      this.lastDream = lock.lastConsolidatedAt ? new Date(lock.lastConsolidatedAt) : undefined;
    }
    this.render();
  }

  /**
   * The latest dream or sleep run still in effect (from the history): an undone dream is not
   * "the last dream", and an undo or a curation is not a dream at all.
   */
  applyHistory(runs: readonly HistoryRun[]): void {
    this.historyKnown = true;
    const last = runs.find((run) => DREAM_SOURCES.has(run.source) && !run.undone);
    this.lastDream = last ? new Date(last.at) : undefined;
    this.render();
  }

  noteMemorySaved(source: string): void {
    if (DREAM_SOURCES.has(source)) {
      this.lastDream = new Date();
      this.render();
    }
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
    if (this.gate) {
      const g = this.gate;
      const why: Record<string, string> = {
        open: 'the next check may start one',
        time_gate: `waits for more time since the last dream (${g.hoursSince !== null ? `${g.hoursSince.toFixed(1)} h so far` : 'none yet'}, reverie.dreamMinHours)`,
        session_gate: `waits for more sessions (${g.sessionsSince ?? 0} so far, reverie.dreamMinSessions)`,
        lock_busy: 'another process holds the lock',
        disabled: 'automatic dreams are off (reverie.dreamEnabled)',
        scan_throttle: 'sessions were counted a moment ago; they are counted again shortly (reverie.dreamScanIntervalSeconds)',
      };
      tooltip.appendMarkdown(`Automatic dream: ${why[g.nextGate] ?? g.nextGate.replace(/_/g, ' ')}\n\n`);
    }
    if (this.lastSkip) {
      tooltip.appendMarkdown(`Last dream did not run: ${this.lastSkip}\n\n`);
    }
    tooltip.appendMarkdown(`Connected agents: ${this.agents || 'none (Reverie: Connect Agent…)'}\n\n`);
    if (this.spend) {
      tooltip.appendMarkdown(`Model spend: ${this.spend}\n\n`);
    }
    tooltip.appendMarkdown('Click for Reverie\'s actions.');
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
