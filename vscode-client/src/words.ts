/**
 * How runs are named to a person: "dream of 14:02", "redo of the dream of 14:02", "forget
 * (MEMORY.md)": never a raw run id, and a redo is a redo (an undo of an undo).
 */
import { type HistoryRun, type StagedReview } from './generated/protocol';
import { formatWhen } from './statusBar';

const SOURCE_WORDS: Record<string, string> = {
  auto: 'automatic dream',
  manual: 'dream',
  sleep: 'sleep cycle',
  edit: 'change made outside Reverie',
  curate: 'memory edit',
};

/** "dream", "automatic dream", "undo", "redo", "forget", ...: what kind of run this was. */
export function runKind(run: HistoryRun, runs: readonly HistoryRun[] = []): string {
  if (run.source === 'undo') {
    const target = runs.find((r) => r.runId === run.undoes);
    return target?.source === 'undo' ? 'redo' : 'undo';
  }
  if (run.source === 'curate') {
    if (run.summary.startsWith('accepted: ')) {
      return 'accepted proposal';
    }
    const verb = /^(forget|pin|unpin|edit|move|retire|keep)\b/.exec(run.summary)?.[1];
    return verb ?? SOURCE_WORDS.curate;
  }
  return SOURCE_WORDS[run.source] ?? run.source;
}

/** "the dream of 14:02", "the redo of the dream of 14:02". */
export function runTitle(run: HistoryRun, runs: readonly HistoryRun[] = [], depth = 0): string {
  const when = formatWhen(new Date(run.at));
  if (run.source === 'undo' && depth < 3) {
    const target = runs.find((r) => r.runId === run.undoes);
    if (target?.source === 'undo') {
      const original = runs.find((r) => r.runId === target.undoes);
      return original ? `redo of ${runTitle(original, runs, depth + 1)} (${when})` : `redo (${when})`;
    }
    return target ? `undo of ${runTitle(target, runs, depth + 1)} (${when})` : `undo (${when})`;
  }
  return `${runKind(run, runs)} of ${when}`;
}

/** Who proposes a staged change set: "Claude Code", "the dream", "the automatic dream". */
export function proposer(review: StagedReview): string {
  if (review.source !== 'agent') {
    return review.source === 'auto' ? 'the automatic dream' : 'the dream';
  }
  const names: Record<string, string> = { 'claude-code': 'Claude Code', codex: 'Codex', 'gemini-cli': 'Gemini CLI' };
  return review.proposedBy ? names[review.proposedBy] ?? review.proposedBy : 'an agent';
}

/** An agent's reason as it wrote it (the server keeps it as "agent: reason"). */
export function reasonOf(review: StagedReview): string {
  const reason = review.changes[0]?.reason ?? '';
  const at = reason.indexOf(': ');
  return (at > 0 && review.source === 'agent' ? reason.slice(at + 2) : reason).replace(/\.$/, '');
}
