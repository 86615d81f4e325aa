"""``reverie transcript --stats`` of a Claude Code transcript, straight from its records.

The reference is ``stats.StatsFold`` over the ``Message``s of ``claude.ClaudeParser``. This
fold takes the same decisions from the same records (which lines make a message, what they
call, which results fail, which usage is the last, what came after it) and keeps only what
the stats need, building no model object: on a tool-heavy transcript building the messages
cost more than parsing the JSON, and the pydantic import alone a large part of the start-up.
It reads the file as ``TranscriptReader`` does (same chunks, same line splitting, same skip
counting through ``records.decode_line``). ``tests/unit/transcripts/test_claude_stats.py``
proves it equal to the reference on every fixture and on generated, mutated and broken input.

Each method names the ``ClaudeParser`` code it mirrors; a change there must be made here too
(the differential tests fail otherwise).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from reverie.transcripts.access import TranscriptError
from reverie.transcripts.classify import tool_facts
from reverie.transcripts.estimate import content_tokens
from reverie.transcripts.lines import CHUNK_BYTES, Line, LineSplitter
from reverie.transcripts.records import (
    MAX_INT,
    as_dict,
    as_int,
    as_str,
    decode_line,
    default_session_id,
    text_of,
)

if TYPE_CHECKING:  # a name for annotations only: ``reverie.types`` builds pydantic models
    from reverie.types import AgentName

AGENT: AgentName = "claude-code"
UUID_PATTERN = re.compile(
    r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"
)
#: what a message's token estimate is made of: its text, tool calls (name, input) and outputs
Estimate = tuple[str, list[tuple[str, dict[str, Any]]], list[str]]
_NO_ESTIMATE: Estimate = ("", [], [])


def is_agent_file(path: Path) -> bool:
    """A sub-agent's own file (2.0.x ``agent-<id>.jsonl``, 2.1.x ``subagents/``)."""
    return path.name.startswith("agent-") or path.parent.name == "subagents"


@dataclass(slots=True)
class LineStats:
    """``model.ParseStats`` without pydantic: the counts ``--stats`` prints."""

    lines: int = 0
    skipped: int = 0
    errors: list[str] = field(default_factory=list)

    def skip(self, reason: str, keep: int = 20) -> None:
        """As ``ParseStats.skip``."""
        self.skipped += 1
        if len(self.errors) < keep:
            self.errors.append(reason)


class ClaudeStats:
    """The ``--stats`` object of one Claude Code transcript, folded record by record."""

    def __init__(self, path: Path) -> None:
        self.stats = LineStats()
        self.session_id = default_session_id(path)
        #: whether ``session_id`` is a UUID already (then no record renames the session)
        self._uuid_id = UUID_PATTERN.match(self.session_id) is not None
        self._agent_file = is_agent_file(path)
        self._cwd: str | None = None
        #: a thinking-only line's response id and raw usage, until we know whether it goes on
        self._pending: tuple[str, dict[str, Any]] | None = None
        # the StatsFold part
        self.messages = 0
        self.tool_calls = 0
        self.files: set[str] = set()
        self.error_ids: set[str] = set()
        self._usage_tokens: int | None = None
        self._usage_api: str | None = None
        self._after_usage: list[Estimate] = []

    # -- the fold (``StatsFold.feed``) ---------------------------------------------------------
    def _message(self, context: int | None, api_id: str | None, estimate: Estimate) -> None:
        """One message: ``context`` is its usage's context size (None: no usage)."""
        self.messages += 1
        if context:
            self._usage_tokens = context
            self._usage_api = api_id
            self._after_usage.clear()
        elif (self._usage_tokens is None or self._usage_api is None
              or api_id != self._usage_api):
            self._after_usage.append(estimate)

    def tokens(self) -> int:
        """As ``StatsFold.tokens``: the last usage plus estimates of what followed it."""
        tail = sum(content_tokens(*estimate) for estimate in self._after_usage)
        return tail if self._usage_tokens is None else self._usage_tokens + tail

    def result(self) -> dict[str, Any]:
        """As ``StatsFold.result`` (a CLI contract: same keys, same order)."""
        return {
            "agent": AGENT,
            "session_id": self.session_id,
            "messages": self.messages,
            "tool_calls": self.tool_calls,
            "tool_errors": len(self.error_ids),
            "files": sorted(self.files),
            "tokens": self.tokens(),
            "lines": self.stats.lines,
            "skipped": self.stats.skipped,
            "errors": list(self.stats.errors),
        }

    # -- lines (``RecordParser.feed_line``) ----------------------------------------------------
    def feed_line(self, line: Line) -> None:
        record = decode_line(line, self.stats)
        if record is None:
            return
        try:
            self.feed_record(record, line.offset)
        except (TypeError, ValueError, KeyError, AttributeError) as exc:
            self.stats.skip(f"byte {line.offset}: unexpected record shape ({type(exc).__name__})")

    def finish(self) -> None:
        """``ClaudeParser.finish``: a thinking-only line at the end keeps its usage."""
        self._flush_pending(None)

    # -- records (``ClaudeParser.feed_record`` and ``_record``) --------------------------------
    def feed_record(self, record: dict[str, Any], offset: int) -> None:
        kind = record.get("type")
        if self._pending is not None and kind in ("user", "assistant", "system"):
            api_id = (as_str(as_dict(record.get("message")).get("id"))
                      if kind == "assistant" else None)
            self._flush_pending(api_id)
        if kind == "user" or kind == "assistant":
            self._session_fields(record)
            raw = record.get("message")
            if not isinstance(raw, dict):
                self.stats.skip(f"byte {offset}: {kind} record without a message object")
            elif kind == "assistant":
                self._assistant(raw)
            else:
                self._user(record, raw.get("content"))
        elif kind == "system":
            self._session_fields(record)
            if record.get("subtype") == "compact_boundary":
                self._compact_boundary(record)

    def _flush_pending(self, continuing_api_id: str | None) -> None:
        """``ClaudeParser._flush_pending``: the held usage becomes a meta message, unless the
        record now read continues the same response."""
        pending = self._pending
        if pending is None:
            return
        self._pending = None
        api_id, usage = pending
        if continuing_api_id is not None and continuing_api_id == api_id:
            return
        self._message(_context_tokens(usage), api_id, _NO_ESTIMATE)

    def _session_fields(self, record: dict[str, Any]) -> None:
        """``ClaudeParser._session_fields``: the cwd (file paths are made absolute against
        it) and the session id."""
        cwd = record.get("cwd")
        if cwd != self._cwd and isinstance(cwd, str) and cwd:
            self._cwd = cwd
        if not self._uuid_id and not self._agent_file:
            session_id = record.get("sessionId")
            if isinstance(session_id, str) and session_id:
                self.session_id = session_id  # a file renamed away from its session id
                self._uuid_id = UUID_PATTERN.match(session_id) is not None

    def _compact_boundary(self, record: dict[str, Any]) -> None:
        """``ClaudeParser._compact_boundary``: a meta message whose text counts in tokens."""
        meta = as_dict(record.get("compactMetadata"))
        trigger = as_str(meta.get("trigger")) or "auto"
        pre = as_int(meta.get("preTokens"))
        text = as_str(record.get("content")) or "Conversation compacted"
        self._message(None, None, (f"{text} (trigger: {trigger}, {pre} tokens before)", [], []))

    def _assistant(self, raw: dict[str, Any]) -> None:
        """``ClaudeParser._assistant`` and its part of ``_conversational``."""
        texts: list[str] = []
        calls: list[tuple[str, dict[str, Any]]] = []
        content = raw.get("content")
        for block in content if isinstance(content, list) else [content]:
            if isinstance(block, str):
                texts.append(block)
                continue
            if not isinstance(block, dict):
                continue
            btype = block.get("type")
            if btype == "text" and isinstance(block.get("text"), str):
                texts.append(block["text"])
            elif btype in ("tool_use", "server_tool_use"):
                name = as_str(block.get("name")) or "unknown"
                tool_input = as_dict(block.get("input"))
                calls.append((name, tool_input))
                self.files.update(tool_facts(AGENT, name, tool_input, self._cwd)[1])
        text = "\n\n".join(t for t in texts if t) if texts else ""
        usage = raw.get("usage")
        if not calls and not text.strip():
            api_id = as_str(raw.get("id"))
            if isinstance(usage, dict) and api_id:
                self._pending = (api_id, usage)  # a thinking-only line
            return
        self.tool_calls += len(calls)
        context = _context_tokens(usage) if isinstance(usage, dict) else None
        self._message(context, as_str(raw.get("id")), (text, calls, []))

    def _user(self, record: dict[str, Any], content: Any) -> None:
        """``ClaudeParser._user`` and ``_tool_result``: results, failures and text."""
        outputs: list[str] = []
        texts: list[str] = []
        if isinstance(content, list):
            for block in content:
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    outputs.append(text_of(block.get("content")))
                    if block.get("is_error") is True:
                        self.error_ids.add(as_str(block.get("tool_use_id")) or "")
                else:
                    texts.append(text_of([block]))
        else:
            texts.append(text_of(content))
        text = "\n\n".join(t for t in texts if t) if texts else ""
        if text or outputs:
            self._message(None, None, (text, [], outputs))


_USAGE_KEYS = ("input_tokens", "output_tokens", "cache_read_input_tokens",
               "cache_creation_input_tokens")


def _context_tokens(usage: dict[str, Any]) -> int:
    """``Usage.context_tokens`` of ``claude._usage(usage)``: the sum of its four counts, each
    read by ``as_int`` (a count that is a plain int in ``as_int``'s range, or absent, skips the
    call)."""
    total = 0
    for key in _USAGE_KEYS:
        value = usage.get(key)
        if value.__class__ is int and 0 <= value <= MAX_INT:
            total += value
        elif value is not None:
            total += as_int(value)
    return total


def claude_stats(path: Path) -> dict[str, Any]:
    """The ``--stats`` object of the Claude Code transcript at ``path``, streamed as
    ``TranscriptReader`` streams it; ``TranscriptError`` when it cannot be read."""
    fold = ClaudeStats(path)
    splitter = LineSplitter()
    try:
        with path.open("rb") as handle:
            while chunk := handle.read(CHUNK_BYTES):
                for line in splitter.feed(chunk):
                    fold.feed_line(line)
    except OSError as exc:
        raise TranscriptError(f"cannot read {path}: {exc.strerror or exc}") from None
    last = splitter.flush()
    if last is not None:
        before = fold.stats.skipped
        fold.feed_line(last)
        if fold.stats.skipped > before:
            fold.stats.errors[-1] += " (truncated last line)"
    fold.finish()
    return fold.result()
