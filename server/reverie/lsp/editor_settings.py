"""What the editor shows for each setting: group, wording, scope and trust.

Types, defaults and allowed values come from ``reverie.config.Settings`` itself
(``reverie.lsp.contract`` generates ``contributes.configuration`` of the VS Code extension from
both); this module only adds what the model cannot say. A test fails when a ``Settings`` field
has no entry here, so a new setting cannot be forgotten in the editor.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

Scope = Literal["application", "machine", "machine-overridable", "window", "resource"]


@dataclass(frozen=True)
class EditorSetting:
    """``group``: a key of ``GROUPS``. Settings the server keeps once for every folder are
    ``window``-scoped (a per-folder value would be ignored); settings that choose an endpoint,
    an executable or where data is read and written are ``machine``-scoped and restricted in
    untrusted workspaces, so a repository's ``.vscode/settings.json`` cannot redirect them."""

    group: str
    description: str
    scope: Scope = "window"
    restricted: bool = False
    enum_descriptions: tuple[str, ...] = ()
    minimum: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)


#: configuration sections of the Settings UI, in order: id -> title
GROUPS: dict[str, str] = {
    "server": "Server",
    "model": "Model",
    "memory": "Memory location",
    "notes": "Session notes",
    "dreams": "Dreams",
    "sleep": "Sleep cycle and retention",
}

#: settings only the VS Code client reads (never sent to the server)
CLIENT_SETTINGS: dict[str, tuple[dict[str, Any], EditorSetting]] = {
    "server.python": (
        {"type": "string", "default": ""},
        EditorSetting(
            "server",
            "Python interpreter (>= 3.11) that runs the Reverie language server. Empty: the "
            "Python extension's active interpreter if that extension is installed, else "
            "`python3`.",
            scope="machine-overridable",
            restricted=True,
        ),
    ),
    "server.importStrategy": (
        {"type": "string", "default": "useBundled", "enum": ["useBundled", "fromEnvironment"]},
        EditorSetting(
            "server",
            "Where the server's code comes from: the copy bundled with the extension, or the "
            "`reverie` package installed in the chosen interpreter.",
            scope="machine-overridable",
            restricted=True,
            enum_descriptions=(
                "Run the server bundled in the extension (only Python >= 3.11 is needed).",
                "Run the `reverie` package installed in the selected interpreter (for "
                "development).",
            ),
        ),
    ),
    "trace.server": (
        {"type": "string", "default": "off", "enum": ["off", "messages", "verbose"]},
        EditorSetting(
            "server",
            "Traces the messages between VS Code and the Reverie server into the Reverie log "
            "(`messages`: names and timing, `verbose`: with their contents).",
            enum_descriptions=(
                "No trace",
                "Every message, without contents",
                "Every message with its contents",
            ),
        ),
    ),
}

#: every field of ``reverie.config.Settings`` (but the API key, kept in secret storage)
SETTINGS: dict[str, EditorSetting] = {
    # server
    "log_level": EditorSetting("server", "Level of the server's log (Reverie: Show Log)."),
    "show_notifications": EditorSetting(
        "server", "Which server messages pop up (they always go to the Reverie log)."
    ),
    # model
    "provider": EditorSetting(
        "model",
        "Model provider. `offline` uses the deterministic engine and needs no API key. "
        "`openai` is any OpenAI-compatible endpoint (also Ollama, LM Studio, llama.cpp "
        "server, vLLM via `reverie.baseUrl`); `anthropic` the Messages API. `claude-code-"
        "cli`, `codex-cli` and `gemini-cli` run the coding agent you already have (found on "
        "PATH, or `reverie.cliPath`) with its own tools switched off: no API key needed, but "
        "**every run counts against your Claude, ChatGPT or Gemini plan**.",
        scope="machine",
        restricted=True,
        enum_descriptions=(
            "Built-in deterministic engine, no model, no key",
            "OpenAI or any OpenAI-compatible server (Ollama, LM Studio, llama.cpp, vLLM)",
            "Anthropic Messages API",
            "Your Claude Code login (`claude -p`); runs count against your Claude plan",
            "Your Codex login (`codex exec`); runs count against your ChatGPT plan",
            "Your Gemini CLI login (`gemini -p`); runs count against your Gemini quota",
        ),
    ),
    "model": EditorSetting("model", "Model name for every job (unless a job has its own model)."),
    "base_url": EditorSetting(
        "model",
        "Base URL of an OpenAI- or Anthropic-compatible endpoint (proxies, local models).",
        scope="machine",
        restricted=True,
    ),
    "cli_path": EditorSetting(
        "model",
        "Path of the `claude`, `codex` or `gemini` executable for the `*-cli` providers "
        "(default: found on PATH).",
        scope="machine",
        restricted=True,
    ),
    "session_memory_model": EditorSetting(
        "model", "Model for session notes (overrides `reverie.model`)."
    ),
    "dream_model": EditorSetting("model", "Model for dreams (overrides `reverie.model`)."),
    "sleep_model": EditorSetting("model", "Model for the sleep cycle (overrides `reverie.model`)."),
    "connect_timeout_seconds": EditorSetting(
        "model", "Seconds to wait for a connection to the model endpoint.", minimum=0
    ),
    "request_timeout_seconds": EditorSetting(
        "model",
        "Seconds to wait for data from the model: between streamed chunks, or for a whole "
        "non-streamed reply.",
        minimum=0,
    ),
    "max_retries": EditorSetting(
        "model",
        "Retries of a failed model call (rate limits, server errors) with backoff.",
        minimum=0,
    ),
    "stream": EditorSetting(
        "model",
        "Stream model replies (progress shows tokens as they arrive; "
        "`reverie.requestTimeoutSeconds` then counts silence between chunks). A server that "
        "refuses streaming is detected once and asked plainly after that.",
    ),
    "tool_calling": EditorSetting(
        "model",
        "`auto`: use tool calls, and switch a job to the structured no-tools form when the "
        "model cannot call tools (remembered per server and model). `off`: always the no-"
        "tools form (models without tool templates). `on`: never switch.",
    ),
    "max_output_tokens": EditorSetting(
        "model", "Maximum tokens the model may write per call.", minimum=1
    ),
    "session_memory_max_output_tokens": EditorSetting(
        "model", "Output budget (tokens) for session notes.", minimum=1
    ),
    "dream_max_output_tokens": EditorSetting(
        "model", "Output budget (tokens) for each dream turn.", minimum=1
    ),
    "sleep_max_output_tokens": EditorSetting(
        "model", "Output budget (tokens) for each sleep summary.", minimum=1
    ),
    "session_memory_budget_seconds": EditorSetting(
        "model",
        "Wall-time budget for a session-notes update, every model call and retry included; "
        "past it the job stops and nothing is written.",
        minimum=1,
    ),
    "dream_budget_seconds": EditorSetting(
        "model",
        "Wall-time budget for a dream, every model call and retry included; past it the job "
        "stops and nothing is written.",
        minimum=1,
    ),
    "sleep_budget_seconds": EditorSetting(
        "model",
        "Wall-time budget for the sleep cycle's consolidation, every model call and retry "
        "included; past it the job stops and nothing is written.",
        minimum=1,
    ),
    "prices": EditorSetting(
        "model",
        'Dollars per million tokens per model, for cost accounting, e.g. `{"gpt-4.1": '
        '{"input": 2, "output": 8, "cacheRead": 0.5}}`.',
    ),
    # memory
    "memory_dir_preset": EditorSetting(
        "memory",
        "Where the memory directory lives: Reverie's data dir, Claude Code's project memory "
        "dir, or `reverie.memoryDir`.",
        scope="machine",
        restricted=True,
        enum_descriptions=(
            "<dataDir>/projects/<project>/memory",
            "~/.claude/projects/<slug>/memory, read by Claude Code itself",
            "the folder in reverie.memoryDir",
        ),
    ),
    "memory_dir": EditorSetting(
        "memory",
        "Memory directory used with the `custom` preset.",
        scope="machine",
        restricted=True,
    ),
    "auto_memory_enabled": EditorSetting(
        "memory", "Allow memory to be written at all (off: dreams are skipped)."
    ),
    "data_dir": EditorSetting(
        "memory",
        "Where Reverie keeps session notes, journals and state. Empty: the platform's user "
        "data directory.",
        scope="machine",
        restricted=True,
    ),
    "config_dir": EditorSetting(
        "memory",
        "Reverie's configuration directory. Empty: the platform's user config directory.",
        scope="machine",
        restricted=True,
    ),
    "agent_home": EditorSetting(
        "memory",
        "Home directory the coding agents write their transcripts under (e.g. `~/.claude`). "
        "Empty: your home directory.",
        scope="machine",
        restricted=True,
    ),
    "watch_debounce_ms": EditorSetting(
        "memory", "Milliseconds to wait after a transcript changes before reading it.", minimum=0
    ),
    "remote_mode": EditorSetting(
        "memory", "Running in a remote session: automatic dreams are skipped."
    ),
    # notes
    "session_memory_enabled": EditorSetting(
        "notes", "Keep per-session notes up to date while an agent works."
    ),
    "session_memory_init_tokens": EditorSetting(
        "notes", "Context tokens a session needs before its first notes are written.", minimum=0
    ),
    "session_memory_update_tokens": EditorSetting(
        "notes", "New context tokens between two notes updates.", minimum=0
    ),
    "session_memory_tool_calls": EditorSetting(
        "notes", "Tool calls since the last update that also allow an update.", minimum=0
    ),
    "session_memory_context": EditorSetting(
        "notes",
        "What a notes update sees: the messages since the last update, or the whole transcript.",
    ),
    "session_memory_max_turns": EditorSetting(
        "notes", "Maximum model turns per notes update.", minimum=1
    ),
    "daily_token_cap": EditorSetting(
        "model",
        "Cost governor: most tokens model-backed jobs (notes, dreams, sleep) may use per UTC "
        "day; a job that would pass it does not start and says so. 0: no cap.",
        minimum=0,
    ),
    "monthly_token_cap": EditorSetting(
        "model", "Cost governor: most tokens per calendar month (UTC). 0: no cap.", minimum=0
    ),
    "daily_cost_cap": EditorSetting(
        "model",
        "Cost governor: most dollars per UTC day, where the price is known (`reverie.prices`, "
        "or the cost a coding-agent CLI reports). 0: no cap.",
        minimum=0,
    ),
    "monthly_cost_cap": EditorSetting(
        "model", "Cost governor: most dollars per calendar month, where the price is known. "
        "0: no cap.", minimum=0
    ),
    # dreams
    "dream_enabled": EditorSetting(
        "dreams", "Consolidate sessions into memory automatically when the gates pass."
    ),
    "dream_min_hours": EditorSetting(
        "dreams", "Hours since the last dream before an automatic dream (gate).", minimum=0
    ),
    "dream_review": EditorSetting(
        "dreams",
        "Review before apply: a dream stages its changes and memory changes only once you "
        "accept them (all, some, or discard). `auto`: review dreams that use a model, apply "
        "the offline engine's at once.",
        enum_descriptions=(
            "Review model-backed dreams; apply the offline engine's at once.",
            "Review every dream.",
            "Apply every dream at once (undo stays available).",
        ),
    ),
    "dream_min_sessions": EditorSetting(
        "dreams",
        "Sessions touched since the last dream before an automatic dream (gate).",
        minimum=0,
    ),
    "dream_scan_interval_seconds": EditorSetting(
        "dreams", "Seconds between two checks of the session gate.", minimum=0
    ),
    "dream_max_turns": EditorSetting("dreams", "Maximum model turns per dream.", minimum=1),
    # sleep
    "sleep_enabled": EditorSetting("sleep", "Run the nightly sleep cycle."),
    "sleep_time": EditorSetting(
        "sleep",
        "Local time of the nightly sleep cycle (HH:MM, 24-hour clock).",
        extra={
            "pattern": "^([01]\\d|2[0-3]):[0-5]\\d$",
            "patternErrorMessage": "Use HH:MM, 24-hour clock",
        },
    ),
    "sleep_max_entries": EditorSetting(
        "sleep", "Maximum journal entries the sleep cycle reviews.", minimum=1
    ),
    "journal_retention_days": EditorSetting("sleep", "Days journals are kept.", minimum=0),
    "notes_retention_days": EditorSetting("sleep", "Days session notes are kept.", minimum=0),
    "fact_aging_days": EditorSetting(
        "dreams",
        "Days after which a memory fact that nothing confirmed (no session restated it, no "
        "file, script or dependency to check it against) is marked aging. 0: never.",
        minimum=0,
    ),
    "history_retention_days": EditorSetting(
        "sleep", "Days memory history (undo) is kept.", minimum=0
    ),
    "delete_agent_transcripts": EditorSetting(
        "sleep",
        "Let the sleep cycle delete agents' transcripts older than "
        "`reverie.transcriptRetentionDays`.",
        scope="machine",
        restricted=True,
    ),
    "transcript_retention_days": EditorSetting(
        "sleep",
        "Age in days after which agent transcripts may be deleted (only with "
        "`reverie.deleteAgentTranscripts`).",
        scope="machine",
        restricted=True,
        minimum=1,
    ),
}
