"""Coding-agent CLIs as model providers: ``claude-code-cli``, ``codex-cli``, ``gemini-cli``.

The user's own agent answers one prompt in its headless mode, on the plan they already pay for,
with no API key for Reverie. Reverie stays in charge of every write: the CLI runs with its own
tools switched off (or read-only at most), for a single turn, and returns the job's result in
the structured no-tools form (``reverie.tools.no_tools``), which Reverie validates and applies
through its own gate. The flags and output shapes (see ``docs/llm.md`` for the sources):

- Claude Code: ``claude -p --output-format json --tools "" --max-turns 1
  --no-session-persistence [--model M]``; prints one result object (``type: result``,
  ``subtype``, ``is_error``, ``result``, ``session_id``, ``total_cost_usd``, ``usage``);
  ``stream-json`` prints events, one per line, the last being the same object.
- Codex: ``codex exec --json --sandbox read-only --skip-git-repo-check [--model M] -``;
  prints JSONL events (``thread.started``, ``turn.started``, ``item.completed`` with an
  ``agent_message`` item's ``text``, ``turn.completed`` with ``usage``, or ``turn.failed`` /
  ``error`` with a ``message``). ``-`` reads the prompt from stdin.
- Gemini CLI: ``gemini --output-format json --approval-mode plan -p <fixed line>
  [--model M]``; ``-p`` is appended to stdin, so the prompt itself still travels on stdin; prints
  ``{"response", "stats": {"models": {name: {"tokens": {...}}}}, "error"?}``; exit codes 0, 1
  (error), 42 (bad input), 53 (turn limit).

Prompts go on stdin, never on the command line (where other users can read them), and are
redacted before they leave. The process runs in a dedicated working directory under the data
dir (``reverie-cli-workdir``; transcript discovery ignores sessions started there, so the CLI's
own session is never consolidated), in its own process group: a timeout or a cancellation kills
the whole group. A missing binary, a logged-out CLI, a quota or rate-limit message, a non-zero
exit, ``is_error`` or output that is not the documented shape each raise an ``LLMError`` with a
sentence naming the CLI and the fix.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import re
import shutil
import signal
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel

from reverie.config import REVERIE_CLI_WORKDIR as WORKDIR_NAME
from reverie.llm.errors import (
    LLMAuthError,
    LLMBadResponseError,
    LLMConfigError,
    LLMError,
    LLMRateLimitError,
    LLMServerError,
    LLMTimeoutError,
)
from reverie.llm.structured import (
    complete_structured,
    extract_json_object,
    schema_prompt,
    strip_terminal,
)
from reverie.llm.types import ChatMessage, ModelReply, ProgressCallback, ToolSpec
from reverie.redact import redact
from reverie.types import Usage

logger = logging.getLogger(__name__)

CliProvider = Literal["claude-code-cli", "codex-cli", "gemini-cli"]
GEMINI_PROMPT_FLAG = "Follow the instructions given on standard input."

_LOGGED_OUT = re.compile(
    r"not (?:logged|signed) in|please (?:log|sign) ?in|/login|invalid api key|"
    r"authenticat(?:e|ion) (?:required|failed)|unauthori[sz]ed|no credentials|auth.*expired|"
    r"set an auth method|GEMINI_API_KEY",
    re.IGNORECASE)
_QUOTA = re.compile(
    r"usage limit|rate.?limit|quota|resource.?exhausted|too many requests|\b429\b|"
    r"credit balance|limit reached|out of credits",
    re.IGNORECASE)


@dataclass(frozen=True)
class CliSpec:
    """How one CLI is invoked and what it is called."""

    provider: CliProvider
    binary: str
    label: str
    package: str

    def args(self, model: str | None) -> list[str]:
        """The flags Reverie passes (the drift guard checks each against ``--help``)."""
        if self.provider == "claude-code-cli":
            args = ["-p", "--output-format", "json", "--tools", "", "--max-turns", "1",
                    "--no-session-persistence"]
        elif self.provider == "codex-cli":
            args = ["exec", "--json", "--sandbox", "read-only", "--skip-git-repo-check"]
        else:
            args = ["--output-format", "json", "--approval-mode", "plan",
                    "-p", GEMINI_PROMPT_FLAG]
        if model:
            args += ["--model", model]
        if self.provider == "codex-cli":
            args.append("-")  # the prompt is read from stdin
        return args


SPECS: dict[str, CliSpec] = {
    "claude-code-cli": CliSpec("claude-code-cli", "claude", "Claude Code",
                               "@anthropic-ai/claude-code"),
    "codex-cli": CliSpec("codex-cli", "codex", "Codex", "@openai/codex"),
    "gemini-cli": CliSpec("gemini-cli", "gemini", "Gemini CLI", "@google/gemini-cli"),
}


class ProviderChoice(BaseModel):
    """One provider the editor's picker offers: whether it can run here, and what it costs."""

    id: str
    label: str
    available: bool
    detail: str
    path: str | None = None


def provider_choices(configured_cli: str | None, api_key_set: bool,
                     base_url: str | None) -> list[ProviderChoice]:
    """Every provider, the CLIs found on PATH (or ``configured_cli``) marked available.
    Blocking (``which`` per CLI): call via a thread."""
    key = "an API key is set" if api_key_set else "needs an API key (Reverie: Set API Key)"
    choices = [
        ProviderChoice(id="offline", label="Offline engine", available=True,
                       detail="Built in, deterministic, no model and no key."),
        ProviderChoice(id="openai", label="OpenAI-compatible", available=True,
                       detail=f"OpenAI, or a local server via reverie.baseUrl "
                              f"({base_url or 'not set'}); {key} for OpenAI itself."),
        ProviderChoice(id="anthropic", label="Anthropic", available=True,
                       detail=f"Messages API; {key}."),
    ]
    plans = {"claude-code-cli": "your Claude plan", "codex-cli": "your ChatGPT plan",
             "gemini-cli": "your Gemini quota"}
    for provider, spec in SPECS.items():
        candidate = (configured_cli if configured_cli and Path(configured_cli).name.startswith(
            spec.binary) else None) or spec.binary
        found = shutil.which(candidate)
        detail = (f"Uses your {spec.label} login, no API key; every run counts against "
                  f"{plans[provider]}.")
        if found is None:
            detail = f"Not found on PATH (npm install -g {spec.package}). " + detail
        # "Gemini CLI" is already a CLI's name: no "Gemini CLI CLI"
        label = spec.label if spec.label.endswith(" CLI") else f"{spec.label} CLI"
        choices.append(ProviderChoice(id=provider, label=label,
                                      available=found is not None, detail=detail, path=found))
    return choices


def find_binary(spec: CliSpec, configured: str | None) -> str:
    """The CLI's executable: ``configured`` (a path or a name) or the name on PATH."""
    candidate = configured or spec.binary
    found = shutil.which(candidate)
    if found is None:
        where = f"REVERIE_CLI_PATH ({configured})" if configured else "PATH"
        raise LLMConfigError(
            f"The {spec.label} CLI ({candidate}) was not found on {where}: install it "
            f"(npm install -g {spec.package}) and log in, or set REVERIE_CLI_PATH.",
            provider=spec.provider)
    return found


def _clean(text: str) -> str:
    return strip_terminal(text)


def _json_lines(text: str) -> list[dict[str, Any]]:
    """Every line of ``text`` that is a JSON object (banners and ANSI codes are skipped)."""
    out: list[dict[str, Any]] = []
    for line in _clean(text).splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(value, dict):
            out.append(value)
    return out


def _whole_object(text: str) -> dict[str, Any] | None:
    """The one JSON object the CLI printed (possibly over many lines, between banners)."""
    clean = _clean(text)
    start = clean.find("{")
    end = clean.rfind("}")
    if start < 0 or end <= start:
        return None
    try:
        value = json.loads(clean[start:end + 1])
    except json.JSONDecodeError:
        objects = _json_lines(clean)
        return objects[-1] if objects else None
    return value if isinstance(value, dict) else None


@dataclass
class CliResult:
    """A parsed run: the answer text, usage, cost, the model the CLI reports."""

    text: str
    usage: Usage
    cost_usd: float | None = None
    model: str = ""


def _int(value: Any) -> int:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0


def parse_claude(stdout: str) -> CliResult:
    """A ``json`` result object, or the last ``result`` event of ``stream-json`` output."""
    events = _json_lines(stdout)
    results = [e for e in events if e.get("type") == "result"]
    data = results[-1] if results else _whole_object(stdout)
    if data is None or ("result" not in data and "is_error" not in data):
        raise ValueError("no result object in the output")
    if data.get("is_error") or str(data.get("subtype", "success")) not in ("success", ""):
        detail = str(data.get("result") or data.get("subtype") or "error")
        raise _CliReported(detail)
    result = data.get("result")
    if not isinstance(result, str):
        raise ValueError("the result object has no result text")
    found = data.get("usage")
    raw: dict[str, Any] = found if isinstance(found, dict) else {}
    usage = Usage(input_tokens=_int(raw.get("input_tokens")),
                  output_tokens=_int(raw.get("output_tokens")),
                  cache_read_tokens=_int(raw.get("cache_read_input_tokens")),
                  cache_write_tokens=_int(raw.get("cache_creation_input_tokens")))
    cost = data.get("total_cost_usd")
    model = ""
    model_usage = data.get("modelUsage")
    if isinstance(model_usage, dict) and model_usage:
        model = str(next(iter(model_usage)))
    for event in events:
        if event.get("type") == "system" and event.get("model"):
            model = str(event["model"])
    return CliResult(text=result, usage=usage,
                     cost_usd=float(cost) if isinstance(cost, int | float) else None,
                     model=model)


_ANSWER_ITEMS = ("agent_message", "assistant_message")


def parse_codex(stdout: str) -> CliResult:
    """JSONL events: the last ``agent_message`` item is the answer; ``turn.completed`` the
    usage; ``turn.failed`` / ``error`` the failure."""
    events = _json_lines(stdout)
    if not events:
        raise ValueError("no JSON events in the output")
    text: str | None = None
    usage = Usage()
    for event in events:
        kind = event.get("type")
        if kind in ("turn.failed", "error"):
            error = event.get("error")
            message = error.get("message") if isinstance(error, dict) else event.get("message")
            raise _CliReported(str(message or kind))
        if kind == "item.completed":
            item = event.get("item")
            if isinstance(item, dict) and item.get("type") in _ANSWER_ITEMS:
                text = str(item.get("text") or "")
        if kind == "turn.completed" and isinstance(event.get("usage"), dict):
            raw = event["usage"]
            cached = _int(raw.get("cached_input_tokens"))
            usage = usage + Usage(input_tokens=max(0, _int(raw.get("input_tokens")) - cached),
                                  output_tokens=_int(raw.get("output_tokens")),
                                  cache_read_tokens=cached)
    if text is None:
        raise ValueError("no agent_message in the events")
    return CliResult(text=text, usage=usage)


def parse_gemini(stdout: str) -> CliResult:
    """One object: ``response``, ``stats.models.<name>.tokens``, ``error`` when it failed."""
    data = _whole_object(stdout)
    if data is None:
        raise ValueError("no JSON object in the output")
    error = data.get("error")
    if error:
        message = error.get("message") if isinstance(error, dict) else error
        raise _CliReported(str(message or "error"))
    response = data.get("response")
    if not isinstance(response, str):
        raise ValueError("the output has no response text")
    usage = Usage()
    model = ""
    stats = data.get("stats")
    models = stats.get("models") if isinstance(stats, dict) else None
    if isinstance(models, dict):
        for name, entry in models.items():
            model = model or str(name)
            tokens = entry.get("tokens") if isinstance(entry, dict) else None
            if isinstance(tokens, dict):
                cached = _int(tokens.get("cached"))
                usage = usage + Usage(input_tokens=max(0, _int(tokens.get("prompt")) - cached),
                                      output_tokens=_int(tokens.get("candidates")),
                                      cache_read_tokens=cached)
    return CliResult(text=response, usage=usage, model=model)


_PARSERS = {"claude-code-cli": parse_claude, "codex-cli": parse_codex,
            "gemini-cli": parse_gemini}


class _CliReported(Exception):
    """The CLI itself reported a failure (``is_error``, ``turn.failed``, ``error``)."""


def render_prompt(system: str | None, messages: Sequence[ChatMessage]) -> str:
    """One prompt from a conversation: a CLI answers a single turn, so earlier turns (a repair
    round) are shown as a transcript before the last request."""
    parts: list[str] = []
    if system:
        parts.append(f"<instructions>\n{system}\n</instructions>")
    if len(messages) == 1:
        parts.append(messages[0].content)
    else:
        for message in messages:
            who = {"user": "User", "assistant": "Your earlier reply", "tool": "Tool result"}[
                message.role]
            parts.append(f"### {who}\n{message.content}")
    return "\n\n".join(parts)


class CliAgentClient:
    """A ``ModelClient`` that runs one headless CLI process per call."""

    is_offline = False
    supports_tools = False

    def __init__(self, spec: CliSpec, *, binary: str, workdir: Path, model: str | None = None,
                 timeout: float = 600.0, env: dict[str, str] | None = None) -> None:
        self.spec = spec
        self.provider: str = spec.provider
        self.model = model or ""
        self.reported_model = ""
        self.binary = binary
        self.workdir = workdir
        self.timeout = timeout
        self.env = env
        self.last_cost_usd: float | None = None
        self.total_cost_usd = 0.0

    def __repr__(self) -> str:
        return f"CliAgentClient({self.provider}, binary={self.binary!r})"

    async def aclose(self) -> None:
        return None

    async def complete(
        self,
        messages: Sequence[ChatMessage],
        *,
        system: str | None = None,
        tools: Sequence[ToolSpec] = (),
        output_schema: type[BaseModel] | None = None,
        max_tokens: int | None = None,
        on_progress: ProgressCallback | None = None,
    ) -> ModelReply:
        """One CLI run (two when a structured reply needs its repair). ``tools`` are never
        offered: jobs use the no-tools form with this client."""
        if output_schema is None:
            return await self._once(messages, system)
        instructions = (system + "\n\n" if system else "") + schema_prompt(output_schema)
        return await complete_structured(
            lambda msgs: self._once(msgs, instructions), messages, output_schema,
            lambda reply: extract_json_object(reply.text), provider=self.provider)

    async def _once(self, messages: Sequence[ChatMessage], system: str | None) -> ModelReply:
        prompt, _n = redact(render_prompt(system, messages))
        stdout, stderr, code = await self._run(prompt)
        try:
            parsed = _PARSERS[self.provider](stdout)
        except _CliReported as reported:
            raise self._failure(str(reported), code, reported=True) from None
        except ValueError as exc:
            if code != 0:
                raise self._failure(stderr or stdout, code) from None
            raise LLMBadResponseError(
                f"The {self.spec.label} CLI printed output Reverie cannot read ({exc}); "
                "update the CLI or report the output shape.", provider=self.provider) from None
        if code != 0:
            raise self._failure(stderr or parsed.text, code)
        self.last_cost_usd = parsed.cost_usd
        if parsed.cost_usd is not None:
            self.total_cost_usd += parsed.cost_usd
        if parsed.model:
            self.reported_model = parsed.model
        return ModelReply(text=parsed.text, usage=parsed.usage, stop_reason="end_turn",
                          model=parsed.model or self.model or self.spec.binary,
                          cost_usd=parsed.cost_usd)

    def _failure(self, detail: str, code: int, *, reported: bool = False) -> LLMError:
        text = " ".join(_clean(detail).split())[-300:]
        text = redact(text)[0]
        label = self.spec.label
        if _LOGGED_OUT.search(text):
            return LLMAuthError(
                f"The {label} CLI is not logged in ({text}); run `{self.spec.binary}` once "
                "in a terminal and log in.", provider=self.provider, status=code)
        if _QUOTA.search(text):
            return LLMRateLimitError(
                f"The {label} CLI hit a usage limit or rate limit ({text}); Reverie skips "
                "this run, try again later.", provider=self.provider, status=code)
        what = "reported an error" if reported else f"exited with code {code}"
        return LLMServerError(f"The {label} CLI {what} ({text or 'no output'}).",
                              provider=self.provider, status=code)

    async def _run(self, prompt: str) -> tuple[str, str, int]:
        """The CLI in its own process group, prompt on stdin; the group is killed on timeout
        or cancellation."""
        await asyncio.to_thread(self.workdir.mkdir, mode=0o700, parents=True, exist_ok=True)
        env = dict(os.environ if self.env is None else self.env)
        env.setdefault("NO_COLOR", "1")
        started = time.monotonic()
        try:
            proc = await asyncio.create_subprocess_exec(
                self.binary, *self.spec.args(self.model or None),
                stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE, cwd=self.workdir, env=env,
                start_new_session=True)
        except OSError as exc:
            raise LLMConfigError(
                f"Could not start the {self.spec.label} CLI at {self.binary} ({exc.strerror}); "
                "check REVERIE_CLI_PATH.", provider=self.provider) from None
        try:
            async with asyncio.timeout(self.timeout):
                out, err = await proc.communicate(prompt.encode("utf-8"))
        except TimeoutError:
            await _kill_group(proc)
            raise LLMTimeoutError(
                f"The {self.spec.label} CLI did not answer within {self.timeout:.0f} s; it was "
                "stopped.", provider=self.provider) from None
        except BaseException:
            await asyncio.shield(_kill_group(proc))
            raise
        logger.debug("%s exited %s after %.1fs", self.spec.binary, proc.returncode,
                     time.monotonic() - started)
        return (out.decode("utf-8", "replace"), err.decode("utf-8", "replace"),
                proc.returncode if proc.returncode is not None else -1)


async def _kill_group(proc: asyncio.subprocess.Process) -> None:
    """SIGTERM the process group, SIGKILL it if it is still there a moment later (POSIX).
    On Windows there are no process groups to signal: the process tree is terminated through
    psutil, children first."""
    if proc.returncode is not None:
        return
    if sys.platform == "win32":
        await asyncio.to_thread(_terminate_tree, proc.pid)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(proc.wait(), 5.0)
        return
    for sig, grace in ((signal.SIGTERM, 2.0), (signal.SIGKILL, 5.0)):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, sig)
        try:
            await asyncio.wait_for(proc.wait(), grace)
            return
        except TimeoutError:
            continue


def _terminate_tree(pid: int) -> None:
    import psutil

    try:
        root = psutil.Process(pid)
        family = [*root.children(recursive=True), root]
    except psutil.Error:
        return
    for process in family:
        with contextlib.suppress(psutil.Error):
            process.kill()


def workdir_for(data_dir: Path) -> Path:
    return data_dir / WORKDIR_NAME
