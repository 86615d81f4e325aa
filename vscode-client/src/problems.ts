/**
 * Every warning or error the user sees goes through here: one sentence (never an internal code)
 * and the buttons that fix it: Set API Key / Choose Provider when a model could not be used,
 * Open Setting when a `reverie.*` setting is named, and always Show Log.
 */
import * as vscode from 'vscode';

import { Commands } from './constants';

/** The server's skip reasons in words, for payloads that carry no `reasonText` (older servers). */
export const SKIP_REASONS: Record<string, string> = {
  disabled: 'automatic dreams are off (reverie.dreamEnabled)',
  subagent: 'a sub-agent\'s session does not start a dream',
  remote_mode: 'automatic dreams are off in remote mode (reverie.remoteMode)',
  auto_memory_disabled: 'memory writing is off (reverie.autoMemoryEnabled)',
  time_gate: 'the last dream was too recent (reverie.dreamMinHours)',
  scan_throttle: 'sessions were counted a moment ago (reverie.dreamScanIntervalSeconds)',
  session_gate: 'not enough new sessions yet (reverie.dreamMinSessions)',
  lock_busy: 'another Reverie process is consolidating this memory; try again when it is done',
  no_daily_log_entries: 'there is nothing new in the daily log',
  missing_llm_client: 'no model could be used (set an API key or choose another provider)',
  missing_llm: 'no model could be used (set an API key or choose another provider)',
  missing_tools: 'the model cannot call tools',
  threshold: 'not enough new conversation since the last notes',
  coalesced: 'merged into the update already running',
  over_budget: 'the model budget is used up (reverie.dailyTokenCap, reverie.monthlyTokenCap)',
};

const PROVIDER_NAMES: Record<string, string> = { openai: 'OpenAI', anthropic: 'Anthropic' };

const MODEL_TROUBLE = /api key|apikey|\b401\b|\b403\b|unauthori[sz]ed|forbidden|no model could|REVERIE_API_KEY|OPENAI_API_KEY|ANTHROPIC_API_KEY|not logged in|missing_llm|invalid x-api-key|authentication/i;
const SETTING = /\breverie\.([a-zA-Z][\w.]*[a-zA-Z])/;

/** Internal codes replaced by their words ("dream skipped: missing_llm_client" -> a sentence). */
export function humanize(message: string): string {
  let text = message.replace(/^Reverie:\s*/, '');
  text = text.replace(/\b(dream|sleep|session memory) skipped: ([a-z_]+)\b(?: \((\d+) of (\d+)\))?/g, (_all, what: string, code: string, n?: string, need?: string) => {
    const reason = SKIP_REASONS[code];
    if (!reason) {
      return `${what} skipped`;
    }
    return `The ${what} was skipped: ${reason}${n ? ` (${n} of ${need ?? '?'})` : ''}`;
  });
  text = text.replace(/\s*\((lock_busy|missing_llm_client|missing_llm)\)/g, '');
  // the server's advice is for a shell (environment variables); the editor has its own commands
  text = text.replace(/No API key for the (\w+) provider: set REVERIE_API_KEY or \w+_API_KEY(?: \(or REVERIE_BASE_URL for a local OpenAI-compatible server\))?\.?/g,
    (_all, provider: string) => `no API key is set for ${PROVIDER_NAMES[provider] ?? provider}${provider === 'openai' ? ' (a local OpenAI-compatible server needs reverie.baseUrl instead)' : ''}`);
  // REVERIE_MAX_OUTPUT_TOKENS is reverie.maxOutputTokens here; the key is no setting at all
  text = text.replace(/\b(?:REVERIE|OPENAI|ANTHROPIC)_API_KEY\b/g, 'the API key (Set API Key)');
  text = text.replace(/\bREVERIE_([A-Z][A-Z0-9_]*)\b/g, (_all, name: string) =>
    `reverie.${name.toLowerCase().replace(/_([a-z0-9])/g, (_m, c: string) => c.toUpperCase())}`);
  return text.charAt(0).toUpperCase() + text.slice(1);
}

/** The buttons that can fix what `message` says. */
export function actionsFor(message: string): string[] {
  const actions: string[] = [];
  if (MODEL_TROUBLE.test(message)) {
    actions.push('Set API Key', 'Choose Provider');
  }
  if (SETTING.test(message)) {
    actions.push('Open Setting');
  }
  actions.push('Show Log');
  return actions;
}

/** Sentences shown in the last seconds: the server's popup and the job's own outcome say the same. */
const recent = new Map<string, number>();
const REPEAT_MS = 10_000;

/** Shows one warning or error with its actions and carries the chosen one out. */
export async function showProblem(level: 'error' | 'warning' | 'info', message: string, log: vscode.LogOutputChannel, extra: string[] = []): Promise<string | undefined> {
  const text = `Reverie: ${humanize(message)}`;
  const now = Date.now();
  if (now - (recent.get(text) ?? -REPEAT_MS) < REPEAT_MS) {
    return undefined;
  }
  recent.set(text, now);
  if (recent.size > 50) {
    recent.delete(recent.keys().next().value as string);
  }
  const actions = [...new Set([...extra, ...actionsFor(`${message} ${text}`)])];
  const show = level === 'error' ? vscode.window.showErrorMessage : level === 'warning' ? vscode.window.showWarningMessage : vscode.window.showInformationMessage;
  const choice = await show(text, ...actions);
  await runAction(choice, text, log);
  return choice;
}

export async function runAction(choice: string | undefined, message: string, log: vscode.LogOutputChannel): Promise<void> {
  if (choice === 'Show Log') {
    log.show(true);
  } else if (choice === 'Set API Key') {
    await vscode.commands.executeCommand(Commands.setApiKey);
  } else if (choice === 'Choose Provider') {
    await vscode.commands.executeCommand(Commands.chooseProvider);
  } else if (choice === 'Open Setting') {
    const setting = SETTING.exec(message)?.[0] ?? 'reverie';
    await vscode.commands.executeCommand('workbench.action.openSettings', setting);
  }
}
