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
  cancelJob: 'reverie.cancelJob',
  redo: 'reverie.redo',
  refreshViews: 'reverie.refreshViews',
  showRunDiff: 'reverie.showRunDiff',
  undoRun: 'reverie.undoRun',
  openSession: 'reverie.openSession',
  openTranscript: 'reverie.openTranscript',
  showMenu: 'reverie.showMenu',
  forgetEntry: 'reverie.forgetEntry',
  pinEntry: 'reverie.pinEntry',
  unpinEntry: 'reverie.unpinEntry',
  editEntry: 'reverie.editEntry',
  moveEntry: 'reverie.moveEntry',
  reviewChanges: 'reverie.reviewChanges',
  showAgentContext: 'reverie.showAgentContext',
} as const;

/** Context keys (package.json `when` clauses). */
export const ContextKeys = {
  serverRunning: 'reverie.serverRunning',
  serverState: 'reverie.serverState',
  pythonMissing: 'reverie.pythonMissing',
  jobRunning: 'reverie.jobRunning',
  canRedo: 'reverie.canRedo',
  reviewPending: 'reverie.reviewPending',
} as const;

/** Views of the Reverie sidebar. */
export const Views = {
  container: 'reverie',
  sessions: 'reverie.sessions',
  memory: 'reverie.memory',
  history: 'reverie.history',
} as const;

export { EDITOR_STORAGE_OPTION, Notifications, SERVER_SETTING_KEYS, SETTINGS_SECTION, ServerCommands } from './generated/protocol';

/** Client-only settings (never sent to the server). */
export const ClientSettings = {
  python: 'server.python',
  importStrategy: 'server.importStrategy',
} as const;

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

/** Scheme of read-only preview documents (what Connect Agent would write). */
export const PREVIEW_SCHEME = 'reverie-preview';

/** Scheme of session notes opened under their session's title (the notes file itself). */
export const NOTES_SCHEME = 'reverie-notes';
