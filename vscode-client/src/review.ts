/**
 * Review before apply in the editor. A change set waits for the person: a dream's (with
 * `reverie.dreamReview`) or an agent's proposal (MCP `propose_memory_change`). It opens as a
 * read-only multi-file diff (memory now on the left, the proposal on the right); a dream's is
 * then accepted file by file (each with its reason and source sessions), an agent's is
 * accepted or discarded whole. Nothing reaches the memory agents load before that.
 */
import * as path from 'node:path';
import * as vscode from 'vscode';

import { type CommandContext, undoRun } from './commands';
import { ContextKeys, ServerCommands } from './constants';
import { type ReviewOutcomeResult, type ReviewsResult, type StagedReview } from './generated/protocol';
import { workspaceArg } from './sidebar';
import { proposer, reasonOf } from './words';

const ACTION_WORDS: Record<string, string> = { add: 'new', change: 'changed', remove: 'removed' };

export async function stagedReviews(ctx: CommandContext, withContents = true): Promise<StagedReview[]> {
  const reviews = (await ctx.server.execute<ReviewsResult>(ServerCommands.reviews, { ...workspaceArg(), withContents })).reviews;
  void vscode.commands.executeCommand('setContext', ContextKeys.reviewPending, reviews.length > 0);
  return reviews;
}

/** The change set as one multi-file diff of read-only documents. */
async function showDiff(ctx: CommandContext, review: StagedReview): Promise<void> {
  const resources = review.changes.map((c) => [
    vscode.Uri.file(path.join(review.memoryDir, c.path)),
    ctx.previews.add(c.path, c.before ?? ''),
    ctx.previews.add(c.path, c.after ?? ''),
  ]);
  const n = review.changes.length;
  const title = review.source === 'agent'
    ? `Reverie: ${proposer(review)} proposes to ${review.summary.split(':')[0]}`
    : `Reverie: review the dream's ${n} change${n === 1 ? '' : 's'}`;
  await vscode.commands.executeCommand('vscode.changes', title, resources);
}

async function report(ctx: CommandContext, outcome: ReviewOutcomeResult): Promise<void> {
  ctx.refreshViews();
  ctx.refreshStatus();
  void stagedReviews(ctx, false).catch(() => undefined);
  ctx.log.info(`review: ${outcome.message}`);
  const choice = await vscode.window.showInformationMessage(`Reverie: ${outcome.message}`, ...(outcome.runId ? ['Undo'] : []));
  if (choice === 'Undo' && outcome.runId) {
    await undoRun(ctx, outcome.runId);
  }
}

export async function acceptAll(ctx: CommandContext, review: StagedReview): Promise<void> {
  await report(ctx, await ctx.server.execute<ReviewOutcomeResult>(ServerCommands.applyReview, { ...workspaceArg(), reviewId: review.reviewId }));
}

export async function discard(ctx: CommandContext, review: StagedReview): Promise<void> {
  const outcome = await ctx.server.execute<ReviewOutcomeResult>(ServerCommands.discardReview, { ...workspaceArg(), reviewId: review.reviewId });
  ctx.refreshViews();
  void stagedReviews(ctx, false).catch(() => undefined);
  ctx.log.info(`review: ${outcome.message}`);
  void vscode.window.showInformationMessage(`Reverie: ${outcome.message}`);
}

/** An agent's proposal: the diff, then Accept / Discard in a notification (no modal). */
async function decideProposal(ctx: CommandContext, review: StagedReview): Promise<void> {
  await showDiff(ctx, review);
  const text = `${proposer(review)} proposes: ${review.summary.replace(/\.$/, '')}. Reason: ${reasonOf(review)}`;
  // a rule every agent would obey that runs code from the network (say): a warning to read it
  const choice = review.hazard
    ? await vscode.window.showWarningMessage(`${text}. Careful: the new text ${review.hazard}; accept it only if you would write this rule yourself.`, 'Accept', 'Discard')
    : await vscode.window.showInformationMessage(text, 'Accept', 'Discard');
  if (choice === 'Accept') {
    await acceptAll(ctx, review);
  } else if (choice === 'Discard') {
    await discard(ctx, review);
  }
}

async function pickReview(reviews: StagedReview[]): Promise<StagedReview | undefined> {
  if (reviews.length <= 1) {
    return reviews[0];
  }
  const picked = await vscode.window.showQuickPick(reviews.map((r) => ({
    label: r.source === 'agent' ? `$(account) ${proposer(r)}: ${r.summary}` : `$(sparkle) ${proposer(r)}: ${r.changes.length} file${r.changes.length === 1 ? '' : 's'}`,
    description: new Date(r.createdAt).toLocaleString(),
    detail: r.source === 'agent' ? `Reason: ${reasonOf(r)}` : r.summary,
    review: r,
  })), { title: 'Reverie: changes waiting for you', placeHolder: 'Pick one to review' });
  return picked?.review;
}

/** The diff, then the files to accept (all ticked), each with its reason and sessions. */
export async function reviewChanges(ctx: CommandContext, reviewId?: string): Promise<void> {
  const reviews = await stagedReviews(ctx);
  const review = reviewId ? reviews.find((r) => r.reviewId === reviewId) : await pickReview(reviews);
  if (!review) {
    if (!reviews.length) {
      void vscode.window.showInformationMessage('Reverie: nothing waits for review: no dream or agent has proposed a change.');
    }
    return;
  }
  if (review.source === 'agent') {
    await decideProposal(ctx, review);
    return;
  }
  await showDiff(ctx, review);
  const items = review.changes.map((c) => ({
    label: c.path,
    description: ACTION_WORDS[c.action] ?? c.action,
    detail: `${c.reason}${c.sessions.length ? ` · from session${c.sessions.length === 1 ? '' : 's'} ${c.sessions.map((s) => s.slice(0, 8)).join(', ')}` : ''}`,
    picked: true,
    change: c,
  }));
  const picked = await vscode.window.showQuickPick(items, {
    title: 'Reverie: accept which changes? (the rest are discarded)',
    placeHolder: 'Untick what should not land, Enter to accept; Escape keeps the review for later',
    canPickMany: true, matchOnDetail: true, ignoreFocusOut: true,
  });
  if (!picked) {
    return;
  }
  if (!picked.length) {
    await discard(ctx, review);
    return;
  }
  const files = picked.length === items.length ? undefined : picked.map((p) => p.change.path);
  await report(ctx, await ctx.server.execute<ReviewOutcomeResult>(ServerCommands.applyReview, { ...workspaceArg(), reviewId: review.reviewId, ...(files ? { files } : {}) }));
}

/** A dream staged its changes: say so, with Review / Accept All / Discard. */
export async function offerReview(ctx: CommandContext, reviewId: string, files: string[]): Promise<void> {
  const choice = await vscode.window.showInformationMessage(
    `Reverie's dream proposes ${files.length} change${files.length === 1 ? '' : 's'} to memory (${files.join(', ')}). Nothing changes until you accept.`,
    'Review…', 'Accept All', 'Discard');
  if (!choice) {
    return;
  }
  const review = (await stagedReviews(ctx)).find((r) => r.reviewId === reviewId);
  if (!review) {
    void vscode.window.showInformationMessage('Reverie: that change set was already decided.');
    return;
  }
  if (choice === 'Review…') {
    await reviewChanges(ctx, reviewId);
  } else if (choice === 'Accept All') {
    await acceptAll(ctx, review);
  } else {
    await discard(ctx, review);
  }
}

/**
 * Watches the memory's pending change sets: an agent's new proposal is announced once (the
 * MCP server runs in the agent's process, so the file is the only news of it).
 */
export class ProposalWatcher implements vscode.Disposable {
  private watcher: vscode.FileSystemWatcher | undefined;
  private dir: string | undefined;
  /** the memory dir existed when it was last watched (a watch of a missing dir sees nothing) */
  private existed = false;
  private readonly announced = new Set<string>();

  constructor(private readonly ctx: CommandContext) {}

  /** (Re)watch `memoryDir` (each time the server says where memory lives). */
  async watch(memoryDir: string): Promise<void> {
    if (memoryDir === this.dir && this.existed) {
      return;
    }
    this.existed = await vscode.workspace.fs.stat(vscode.Uri.file(memoryDir)).then(() => true, () => false);
    this.watcher?.dispose();
    this.dir = memoryDir;
    this.watcher = vscode.workspace.createFileSystemWatcher(
      new vscode.RelativePattern(vscode.Uri.file(memoryDir), '.reverie/review/*/review.json'));
    const changed = (uri: vscode.Uri): void => {
      void this.onChange(uri).catch((error: unknown) => this.ctx.log.warn(`proposals: ${String(error)}`));
    };
    this.watcher.onDidCreate(changed);
    this.watcher.onDidDelete(changed);
    // proposals made while the editor was closed are offered too, once
    void this.onChange().catch(() => undefined);
  }

  private async onChange(uri?: vscode.Uri): Promise<void> {
    const reviews = await stagedReviews(this.ctx, false);
    this.ctx.refreshViews();
    const fresh = reviews.filter((r) => r.source === 'agent' && !this.announced.has(r.reviewId)
      && (!uri || path.basename(path.dirname(uri.fsPath)) === r.reviewId));
    for (const review of fresh) {
      this.announced.add(review.reviewId);
      const choice = await vscode.window.showInformationMessage(
        `${proposer(review)} proposes a change to memory: ${review.summary.replace(/\.$/, '')}. Reason: ${reasonOf(review)}. Nothing changes until you accept.`,
        // no one-click Accept for a text that needs a careful read
        'Review…', ...(review.hazard ? [] : ['Accept']), 'Discard');
      if (choice === 'Review…') {
        await reviewChanges(this.ctx, review.reviewId);
      } else if (choice === 'Accept') {
        await acceptAll(this.ctx, review);
      } else if (choice === 'Discard') {
        await discard(this.ctx, review);
      }
    }
  }

  dispose(): void {
    this.watcher?.dispose();
  }
}
