/**
 * Review before apply in the editor: a staged change set opens as a read-only multi-file diff
 * (memory now on the left, the dream's proposal on the right), then a pick of the files to
 * accept, each with its reason and source sessions; Accept All and Discard in one click.
 */
import * as path from 'node:path';
import * as vscode from 'vscode';

import { type CommandContext, undoRun } from './commands';
import { ServerCommands } from './constants';
import { type ReviewOutcomeResult, type ReviewsResult, type StagedReview } from './generated/protocol';
import { workspaceArg } from './sidebar';

const ACTION_WORDS: Record<string, string> = { add: 'new', change: 'changed', remove: 'removed' };

async function staged(ctx: CommandContext): Promise<StagedReview[]> {
  return (await ctx.server.execute<ReviewsResult>(ServerCommands.reviews, { ...workspaceArg(), withContents: true })).reviews;
}

/** The change set as one multi-file diff of read-only documents. */
async function showDiff(ctx: CommandContext, review: StagedReview): Promise<void> {
  const resources = review.changes.map((c) => [
    vscode.Uri.file(path.join(review.memoryDir, c.path)),
    ctx.previews.add(c.path, c.before ?? ''),
    ctx.previews.add(c.path, c.after ?? ''),
  ]);
  await vscode.commands.executeCommand('vscode.changes', `Reverie: review the dream's ${review.changes.length} change${review.changes.length === 1 ? '' : 's'}`, resources);
}

async function report(ctx: CommandContext, outcome: ReviewOutcomeResult): Promise<void> {
  ctx.refreshViews();
  ctx.refreshStatus();
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
  ctx.log.info(`review: ${outcome.message}`);
  void vscode.window.showInformationMessage(`Reverie: ${outcome.message}`);
}

/** The diff, then the files to accept (all ticked), each with its reason and sessions. */
export async function reviewChanges(ctx: CommandContext, reviewId?: string): Promise<void> {
  const reviews = await staged(ctx);
  const review = reviewId ? reviews.find((r) => r.reviewId === reviewId) : reviews[0];
  if (!review) {
    void vscode.window.showInformationMessage('Reverie: no dream is waiting for review.');
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
  const review = (await staged(ctx)).find((r) => r.reviewId === reviewId);
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
