/**
 * Payloads of the Reverie server's commands and notifications, mirroring
 * server/reverie/lsp/protocol.py (camelCase JSON). Optional fields are optional on purpose: the
 * client only displays them, so an older or newer server never breaks it.
 */

export interface JobStarted {
  jobId: string;
}

export interface SessionSummary {
  sessionId: string;
  agent: string;
  path: string;
  cwd?: string | null;
  updatedAt?: string | null;
}

export interface JobInfo {
  jobId: string;
  kind: JobKind;
  title: string;
  startedAt: string;
  lastMessage?: string;
}

export interface JobOutcome {
  jobId: string;
  kind: JobKind;
  type: 'complete' | 'skipped' | 'cancelled' | 'error';
  message?: string;
  finishedAt: string;
  payload?: Record<string, unknown>;
}

export type JobKind = 'session_memory' | 'dream' | 'sleep';

export interface StatusResult {
  version: string;
  pid: number;
  workspaceFolders: string[];
  sessionsTracked: number;
  currentSession?: SessionSummary | null;
  runningJobs?: JobInfo[];
  lastResults?: Record<string, JobOutcome>;
  provider: string;
  model?: string | null;
  offline: boolean;
  costToday?: number | null;
  connections?: WorkspaceConnections[];
}

/** `status`: one workspace folder's agent connections and the agents with sessions there. */
export interface WorkspaceConnections {
  workspace: string;
  connected: { agent: string; scope: string; mode: string; intact: boolean }[];
  detected: string[];
}

/** `connectAgent` / `disconnectAgent`: `reverie connect --json` (snake_case CLI contract). */
export interface ConnectResult {
  agent: string;
  workspace: string;
  scope: string;
  mode: string;
  dry_run: boolean;
  changed: boolean;
  files: { path: string; role: string; action: 'create' | 'update' | 'delete' | 'unchanged' }[];
  diff: string;
  notes: string[];
}

/** `connections`: `reverie connections --json`. */
export interface ConnectionsResult {
  workspace: string;
  connections: { agent: string; scope: string; mode: string; files: { path: string; role: string; state: string }[] }[];
  detected: string[];
}

export interface SessionNotesResult {
  sessionId: string;
  path: string;
  content: string;
  exists?: boolean;
}

export interface HistoryResult {
  runs: HistoryRun[];
}

/** One history entry; the shape comes from `reverie history --json` (snake or camel case). */
export type HistoryRun = Record<string, unknown>;

/** `reverie lock --json` / `reverie/lockChanged` (snake or camel case). */
export type LockStatus = Record<string, unknown>;

/** One entry of `reverie.server.providers`. */
export interface ProviderInfo {
  id: string;
  label: string;
  available: boolean;
  detail: string;
  path: string | null;
}

/** `reverie.server.providers`: what the provider picker offers (CLIs found on this machine). */
export interface ProvidersResult {
  current: string;
  providers: ProviderInfo[];
}

/** `reverie.server.testModel`: one small request to the configured model. */
export interface ModelTestResult {
  ok: boolean;
  provider: string;
  model: string;
  baseUrl: string | null;
  modelReported: string;
  latencyMs: number;
  streaming: boolean | null;
  tools: boolean | null;
  tokensIn: number;
  tokensOut: number;
  message: string;
  error: string | null;
}

export interface MemorySaved {
  memoryPaths: string[];
  verb: string;
  source: string;
  runId?: string | null;
  message: string;
}

export interface SessionNotesUpdated {
  sessionId: string;
  path: string;
  edited: boolean;
}

export interface JobEvent {
  jobId: string | null;
  kind: string;
  type: string;
  payload?: Record<string, unknown>;
}

/** Reads a field that may arrive as camelCase or snake_case. */
export function field<T = unknown>(obj: Record<string, unknown> | undefined | null, camel: string): T | undefined {
  if (!obj) {
    return undefined;
  }
  if (camel in obj) {
    return obj[camel] as T;
  }
  const snake = camel.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
  return obj[snake] as T | undefined;
}
