/**
 * Every name the extension shares with VS Code or with the Reverie server, in one place.
 *
 * Client commands (`reverie.<verb>`) never reuse a server command id (`reverie.server.<verb>`):
 * vscode-languageclient registers every server command itself, and a clash fails activation.
 */

export const EXTENSION_ID = 'reverie.reverie';
export const CLIENT_ID = 'reverie';
export const CLIENT_NAME = 'Reverie';
export const OUTPUT_CHANNEL = 'Reverie';

/** Palette commands contributed by this extension (mirrored in package.json). */
export const Commands = {
  dreamNow: 'reverie.dreamNow',
  updateSessionNotes: 'reverie.updateSessionNotes',
  openSessionNotes: 'reverie.openSessionNotes',
  openMemoryIndex: 'reverie.openMemoryIndex',
  showLockStatus: 'reverie.showLockStatus',
  runSleepCycle: 'reverie.runSleepCycle',
  showMemoryHistory: 'reverie.showMemoryHistory',
  undoLastDream: 'reverie.undoLastDream',
  setApiKey: 'reverie.setApiKey',
  clearApiKey: 'reverie.clearApiKey',
  showLog: 'reverie.showLog',
  restartServer: 'reverie.restartServer',
  connectAgent: 'reverie.connectAgent',
  disconnectAgent: 'reverie.disconnectAgent',
  testModelConnection: 'reverie.testModelConnection',
  chooseProvider: 'reverie.chooseProvider',
} as const;

/** `workspace/executeCommand` ids the server registers (server/reverie/lsp/protocol.py). */
export const ServerCommands = {
  status: 'reverie.server.status',
  listSessions: 'reverie.server.listSessions',
  sessionNotes: 'reverie.server.sessionNotes',
  updateNotes: 'reverie.server.updateNotes',
  dream: 'reverie.server.dream',
  sleep: 'reverie.server.sleep',
  lockStatus: 'reverie.server.lockStatus',
  history: 'reverie.server.history',
  undo: 'reverie.server.undo',
  cancelJob: 'reverie.server.cancelJob',
  connectAgent: 'reverie.server.connectAgent',
  disconnectAgent: 'reverie.server.disconnectAgent',
  connections: 'reverie.server.connections',
  testModel: 'reverie.server.testModel',
  providers: 'reverie.server.providers',
} as const;

/** Custom notifications from the server. */
export const Notifications = {
  memorySaved: 'reverie/memorySaved',
  sessionNotesUpdated: 'reverie/sessionNotesUpdated',
  jobEvent: 'reverie/jobEvent',
  lockChanged: 'reverie/lockChanged',
} as const;

/** The configuration section; every server setting is `reverie.<camelCase field>`. */
export const SETTINGS_SECTION = 'reverie';

/** Client-only settings (never sent to the server). */
export const ClientSettings = {
  python: 'server.python',
  importStrategy: 'server.importStrategy',
} as const;

/**
 * Server settings (server/reverie/config.py `Settings`, camelCase). Only values the user set
 * explicitly are sent, so `REVERIE_*` environment variables still apply underneath.
 */
export const SERVER_SETTING_KEYS = [
  'provider', 'model', 'baseUrl', 'connectTimeoutSeconds', 'requestTimeoutSeconds', 'maxRetries',
  'maxOutputTokens', 'sessionMemoryModel', 'dreamModel', 'sleepModel', 'prices', 'dataDir',
  'configDir', 'agentHome', 'watchDebounceMs', 'sessionMemoryEnabled', 'sessionMemoryInitTokens',
  'sessionMemoryUpdateTokens', 'sessionMemoryToolCalls', 'sessionMemoryContext',
  'sessionMemoryMaxTurns', 'dreamEnabled', 'dreamMinHours', 'dreamMinSessions',
  'dreamScanIntervalSeconds', 'dreamMaxTurns', 'autoMemoryEnabled', 'remoteMode',
  'memoryDirPreset', 'memoryDir', 'sleepEnabled', 'sleepTime', 'sleepMaxEntries',
  'journalRetentionDays', 'notesRetentionDays', 'historyRetentionDays', 'deleteAgentTranscripts',
  'transcriptRetentionDays', 'showNotifications', 'logLevel', 'stream', 'toolCalling',
  'sessionMemoryMaxOutputTokens', 'dreamMaxOutputTokens', 'sleepMaxOutputTokens',
  'sessionMemoryBudgetSeconds', 'dreamBudgetSeconds', 'sleepBudgetSeconds', 'cliPath',
] as const;

/** Settings a running server cannot take over: changing one restarts it. */
export const RESTART_SETTING_KEYS = [
  ClientSettings.python, ClientSettings.importStrategy, 'dataDir', 'configDir', 'agentHome', 'logLevel',
] as const;

/** Debounce for restarts after settings or interpreter changes (as the Microsoft template). */
export const RESTART_DELAY_MS = 1000;

/** SecretStorage key of the API key; the server reads it from this environment variable. */
export const API_KEY_SECRET = 'reverie.apiKey';
export const API_KEY_ENV = 'REVERIE_API_KEY';

export const MIN_PYTHON: readonly [number, number] = [3, 11];
export const PYTHON_EXTENSION_ID = 'ms-python.python';

/** Scheme of read-only documents showing memory history (before / after of a run). */
export const HISTORY_SCHEME = 'reverie-history';
