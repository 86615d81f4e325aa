/**
 * Choose Model Provider as a guided setup: provider -> model -> key (secret storage) -> test ->
 * done, and Test Model Connection, which offers the extension's own commands when it fails and
 * says plainly that the offline engine has nothing to test.
 */
import * as vscode from 'vscode';

import { type CommandContext } from './commands';
import { API_KEY_SECRET, Commands, ServerCommands, SETTINGS_SECTION } from './constants';
import { type ModelTestResult, type ProvidersResult, type StatusResult } from './generated/protocol';
import { showProblem } from './problems';
import { workspaceArg } from './sidebar';

const KEYED = new Set(['openai', 'anthropic']);

/** Resolves once the server is running again after a restart (or after `ms`). */
function nextStart(ctx: CommandContext, ms = 30000): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      sub.dispose();
      resolve();
    }, ms);
    const sub = ctx.server.onDidChangeState((state) => {
      if (state === 'running') {
        clearTimeout(timer);
        sub.dispose();
        resolve();
      }
    });
  });
}

export async function chooseProvider(ctx: CommandContext): Promise<void> {
  const { current, providers } = await ctx.server.execute<ProvidersResult>(ServerCommands.providers, workspaceArg());
  const steps = (n: number): string => `Reverie: model provider (${n}/4)`;
  const picked = await vscode.window.showQuickPick(
    providers.map((p) => ({
      label: `${p.id === current ? '$(check) ' : ''}${p.label}`,
      description: p.available ? p.path ?? (p.id === current ? 'in use' : '') : 'not found',
      detail: p.detail,
      provider: p,
    })),
    { title: steps(1), placeHolder: `Now: ${current}. Pick the provider; the next steps ask for the model and key, then test it.`, matchOnDetail: true, ignoreFocusOut: true });
  if (!picked) {
    return;
  }
  const provider = picked.provider;
  if (!provider.available) {
    await showProblem('warning', provider.detail, ctx.log);
    return;
  }
  const config = vscode.workspace.getConfiguration(SETTINGS_SECTION);
  let model: string | undefined = config.get<string>('model') ?? '';
  if (provider.id !== 'offline') {
    model = await vscode.window.showInputBox({
      title: steps(2),
      prompt: `Model for ${provider.label} (empty: the provider's default).`,
      value: provider.id === current ? model : '',
      ignoreFocusOut: true,
    });
    if (model === undefined) {
      return;
    }
  }
  let keyChanged = false;
  if (KEYED.has(provider.id)) {
    const existing = await ctx.secrets.get(API_KEY_SECRET);
    const key = await vscode.window.showInputBox({
      title: steps(3),
      prompt: existing ? `API key for ${provider.label}: Enter keeps the stored key, or paste a new one. Kept in VS Code's secret storage, never in settings.`
        : `API key for ${provider.label}. Kept in VS Code's secret storage, never in settings.`,
      password: true,
      ignoreFocusOut: true,
      validateInput: (value) => (value.trim() || existing ? undefined : 'Paste the key, or press Escape'),
    });
    if (key === undefined) {
      return;
    }
    if (key.trim() && key.trim() !== existing) {
      await ctx.secrets.store(API_KEY_SECRET, key.trim());
      keyChanged = true;
    }
  }
  const restarted = keyChanged ? nextStart(ctx) : undefined; // the key reaches the server by a restart
  await config.update('provider', provider.id, vscode.ConfigurationTarget.Global);
  if (provider.id !== 'offline') {
    await config.update('model', model?.trim() ? model.trim() : undefined, vscode.ConfigurationTarget.Global);
  }
  await restarted;
  ctx.refreshStatus();
  if (provider.id === 'offline') {
    void vscode.window.showInformationMessage('Reverie now uses the offline engine: no model, no key, nothing sent anywhere.');
    return;
  }
  await settled(ctx, provider.id, model?.trim() || undefined);
  await testModel(ctx, steps(4));
}

/** Waits (at most 15 s) until the server uses `provider` and `model`: it pulls changed
 * settings asynchronously, and the test must not reach the model configured before. */
async function settled(ctx: CommandContext, provider: string, model: string | undefined): Promise<void> {
  const deadline = Date.now() + 15000;
  while (Date.now() < deadline) {
    const status = await ctx.server.execute<StatusResult>(ServerCommands.status).catch(() => undefined);
    if (status && status.provider === provider && (!model || status.model === model)) {
      return;
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  ctx.log.warn(`the server did not report provider ${provider}${model ? ` / ${model}` : ''} within 15 s; testing anyway`);
}

/** One small request to the model; offline there is nothing to test, and says so. */
export async function testModel(ctx: CommandContext, title = 'Reverie: testing the model connection…'): Promise<void> {
  const result = await vscode.window.withProgress(
    { location: vscode.ProgressLocation.Notification, title },
    () => ctx.server.execute<ModelTestResult>(ServerCommands.testModel, workspaceArg()));
  ctx.log.info(`Test model connection: ${result.message}`);
  if (result.provider === 'offline') {
    const choice = await vscode.window.showInformationMessage(
      'Reverie uses the offline engine, which needs no model: there is no connection to test. Choose a provider to use a model.',
      'Choose Provider');
    if (choice) {
      await vscode.commands.executeCommand(Commands.chooseProvider);
    }
    return;
  }
  if (result.ok) {
    const word = (value: boolean | null): string => (value === null ? 'unknown' : value ? 'yes' : 'no');
    const model = result.modelReported || result.model || 'the default model';
    void vscode.window.showInformationMessage(
      `Reverie: ${model} answered in ${result.latencyMs} ms (streaming: ${word(result.streaming)}, tool calls: ${word(result.tools)}). Reverie is ready.`);
    return;
  }
  await showProblem('error', `The model did not answer: ${result.error ?? result.message}`, ctx.log, ['Set API Key', 'Choose Provider']);
}
