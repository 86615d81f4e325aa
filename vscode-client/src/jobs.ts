/**
 * Jobs the user started (Dream Now, Run Sleep Cycle, Update Session Notes) show a notification
 * progress whose Cancel button reaches `reverie.server.cancelJob`; "Reverie: Cancel Job" picks
 * any running job. Progress and the end of a job arrive as `reverie/jobEvent` notifications.
 */
import * as vscode from 'vscode';

import { type ReverieServer } from './client';
import { ContextKeys, ServerCommands } from './constants';
import { type CancelJobResult, type JobEventPayload, type JobStarted, type StatusResult } from './generated/protocol';
import { showProblem } from './problems';

const FINISHED = new Set(['complete', 'skipped', 'cancelled', 'error']);

const JOB_WORDS: Record<string, string> = { dream: 'dream', sleep: 'sleep cycle', session_memory: 'notes update' };

interface Watched {
  report: (message: string) => void;
  finish: () => void;
}

export class JobTracker implements vscode.Disposable {
  private readonly watched = new Map<string, Watched>();
  private readonly running = new Map<string, string>();
  /** jobs that ended, in case the end arrives before the command's answer is handled */
  private readonly ended = new Set<string>();

  constructor(private readonly server: ReverieServer, private readonly log: vscode.LogOutputChannel) {}

  /** Shows a cancellable progress until the job ends; a job already running is shown too. */
  follow(started: JobStarted, what: string): void {
    if (this.ended.has(started.jobId)) {
      return; // it finished already: its outcome arrived as a notification
    }
    this.running.set(started.jobId, started.title || what);
    this.updateContext();
    if (this.watched.has(started.jobId)) {
      return;
    }
    const title = started.alreadyRunning ? `Reverie: ${started.title || what} is already running` : `Reverie: ${started.title || what}`;
    void vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title, cancellable: true },
      (progress, token) => new Promise<void>((resolve) => {
        const finish = (): void => {
          this.watched.delete(started.jobId);
          resolve();
        };
        this.watched.set(started.jobId, { report: (message) => progress.report({ message }), finish });
        token.onCancellationRequested(() => {
          void this.cancel(started.jobId);
        });
      }));
  }

  /** Every job event: progress text for followed jobs, and the end of any job. */
  onEvent(event: JobEventPayload): void {
    if (!event.jobId) {
      return;
    }
    const message = typeof event.payload.message === 'string' ? event.payload.message : '';
    if (event.type === 'start' || event.type === 'trailing_start') {
      this.running.set(event.jobId, message || event.kind);
    }
    const watched = this.watched.get(event.jobId);
    if (FINISHED.has(event.type)) {
      this.running.delete(event.jobId);
      this.ended.add(event.jobId);
      if (this.ended.size > 200) {
        this.ended.delete(this.ended.values().next().value as string);
      }
      watched?.finish();
      if (watched) {
        void this.reportOutcome(event, message);
      }
    } else if (watched && message) {
      watched.report(message);
    }
    this.updateContext();
  }

  /**
   * What a job the user started came to, always in one sentence: a dream that changed memory is
   * reported by its memory-saved notification, everything else (nothing new, skipped, failed,
   * cancelled) here.
   */
  private async reportOutcome(event: JobEventPayload, message: string): Promise<void> {
    const what = JOB_WORDS[event.kind] ?? event.kind;
    const reasonText = typeof event.payload.reasonText === 'string' ? event.payload.reasonText : undefined;
    if (event.type === 'complete') {
      const touched = event.payload.filesTouched;
      const sessions = typeof event.payload.sessionsReviewed === 'number' ? event.payload.sessionsReviewed : undefined;
      if (typeof event.payload.reviewId === 'string') {
        // staged for review: the review offer says what the dream proposes
      } else if (event.kind === 'dream' && Array.isArray(touched) && touched.length === 0) {
        const seen = sessions === undefined ? '' : sessions === 0 ? ' No session is new since the last dream.' : ` It reviewed ${sessions} session${sessions === 1 ? '' : 's'}.`;
        void vscode.window.showInformationMessage(`Reverie: the dream found nothing new to remember; memory is unchanged.${seen}`);
      } else if (event.kind === 'session_memory') {
        void vscode.window.showInformationMessage(event.payload.edited === false ? 'Reverie: the session notes are up to date (nothing new to add).' : 'Reverie: the session notes were updated.', 'Open Session Notes')
          .then((pick) => pick && vscode.commands.executeCommand('reverie.openSessionNotes'));
      } else if (event.kind === 'sleep' && !(Array.isArray(touched) && touched.length)) {
        void vscode.window.showInformationMessage(`Reverie: the sleep cycle finished${message ? `: ${message}` : ''}.`);
      }
    } else if (event.type === 'skipped') {
      // a dream that could not run for want of a model or the lock is a warning; a gate, information
      const reason = typeof event.payload.reason === 'string' ? event.payload.reason : '';
      const level = ['missing_llm_client', 'missing_llm', 'lock_busy', 'over_budget'].includes(reason) ? 'warning' : 'info';
      await showProblem(level, reasonText ? `The ${what} did not run: ${reasonText}` : message || `${what} skipped`, this.log);
    } else if (event.type === 'cancelled') {
      void vscode.window.showInformationMessage(`Reverie: the ${what} was cancelled; memory is as it was.`);
    } else if (event.type === 'error') {
      const error = typeof event.payload.error === 'string' ? event.payload.error : message;
      await showProblem('error', `The ${what} failed: ${error}`, this.log);
    }
  }

  seed(status: StatusResult): void {
    this.running.clear();
    for (const job of status.runningJobs) {
      this.running.set(job.jobId, job.title);
    }
    this.updateContext();
  }

  /** The server stopped: nothing runs any more. */
  reset(): void {
    for (const watched of [...this.watched.values()]) {
      watched.finish();
    }
    this.running.clear();
    this.ended.clear(); // job ids start again with a new server
    this.updateContext();
  }

  async cancel(jobId: string): Promise<CancelJobResult> {
    const result = await this.server.execute<CancelJobResult>(ServerCommands.cancelJob, { jobId });
    this.log.info(`cancel ${jobId}: ${result.message}`);
    vscode.window.setStatusBarMessage(`Reverie: ${result.message}`, 4000);
    return result;
  }

  /** "Reverie: Cancel Job": the running jobs as the server knows them. */
  async pickAndCancel(): Promise<void> {
    const status = await this.server.execute<StatusResult>(ServerCommands.status);
    this.seed(status);
    if (!status.runningJobs.length) {
      void vscode.window.showInformationMessage('Reverie: no job is running.');
      return;
    }
    const picked = status.runningJobs.length === 1 ? { job: status.runningJobs[0] } : await vscode.window.showQuickPick(
      status.runningJobs.map((job) => ({ label: job.title, description: job.kind, detail: job.lastMessage, job })),
      { title: 'Reverie: Cancel Job', placeHolder: 'Which job should stop? (memory stays as it was)' });
    if (picked) {
      await this.cancel(picked.job.jobId);
    }
  }

  dispose(): void {
    this.reset();
  }

  private updateContext(): void {
    void vscode.commands.executeCommand('setContext', ContextKeys.jobRunning, this.running.size > 0);
  }
}
