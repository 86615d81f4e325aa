"""OpenAI Codex CLI rollouts (``~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<uuid>.jsonl``).

Every line is ``{timestamp, type, payload}``. ``session_meta`` gives id, cwd, branch and the
parent thread of a sub-agent; ``turn_context`` the model. ``response_item`` holds the
model-visible history (messages, ``function_call``/``custom_tool_call`` and their outputs);
``event_msg`` holds the clean user prompt and structured outcomes (``exec_command_end`` exit
codes, ``patch_apply_end``, ``token_count``). The same prompt or reply appears in both
streams; the second copy is dropped.

Usage: ``token_count`` events carry the last API call's usage; each distinct one becomes a
meta ``system`` message carrying ``usage`` at its place in the conversation (cumulative totals
that did not change are repeats and are dropped).
"""

from __future__ import annotations

import re
from collections import OrderedDict, deque
from pathlib import Path
from typing import Any

import orjson

from reverie.transcripts.base import (
    RecordParser,
    as_dict,
    as_int,
    as_str,
    fingerprint_id,
    make_tool_call,
    parse_time,
    text_of,
)
from reverie.transcripts.classify import absolute, exit_code_from_text
from reverie.transcripts.lines import Line
from reverie.transcripts.model import Message, Role, ToolResult, Usage

_UUID_TAIL = re.compile(r"([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$")
#: injected context the user never typed (environment, AGENTS.md, permissions...)
_INJECTED_PREFIXES = ("<", "# AGENTS.md instructions")
_RECENT = 8
#: a patch naming more files than this is summarised by its first ones
_MAX_CHANGED_FILES = 500


class CodexParser(RecordParser):
    agent = "codex"

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        match = _UUID_TAIL.search(path.stem)
        if match:
            self.session.id = match.group(1)
        self._meta_seen = False
        self._model: str | None = None
        self._recent: dict[str, deque[str]] = {"user": deque(maxlen=_RECENT),
                                               "assistant": deque(maxlen=_RECENT)}
        self._last_total: list[int] | None = None
        self._call_names: OrderedDict[str, str] = OrderedDict()

    def memo(self) -> dict[str, Any]:
        return {
            "meta_seen": self._meta_seen,
            "model": self._model,
            "recent": {k: list(v) for k, v in self._recent.items()},
            "last_total": self._last_total,
            "call_names": list(self._call_names.items())[-256:],
        }

    def restore_memo(self, memo: dict[str, Any]) -> None:
        self._meta_seen = bool(memo.get("meta_seen"))
        self._model = memo.get("model")
        for role, texts in as_dict(memo.get("recent")).items():
            if role in self._recent:
                self._recent[role].extend(texts)
        self._last_total = memo.get("last_total")
        self._call_names = OrderedDict(memo.get("call_names", []))

    def feed_record(self, record: dict[str, Any], line: Line) -> list[Message]:
        kind = record.get("type")
        payload = record.get("payload")
        timestamp = parse_time(record.get("timestamp"))
        self.touch(timestamp)
        if not isinstance(payload, dict):
            if kind in ("session_meta", "response_item", "event_msg", "turn_context"):
                self.stats.skip(f"byte {line.offset}: {kind} without a payload object")
            else:
                self.stats.ignored += 1
            return []
        if kind == "session_meta":
            self._session_meta(payload)
            return []
        if kind == "turn_context":
            self._model = as_str(payload.get("model")) or self._model
            if not self.session.cwd and as_str(payload.get("cwd")):
                self.session.cwd = payload["cwd"]
            return []
        if kind == "compacted":
            text = as_str(payload.get("message")) or "Conversation compacted"
            return [self._message(line, "system", text, timestamp, is_compact_boundary=True,
                                  is_meta=True)]
        if kind == "response_item":
            return self._response_item(payload, line, timestamp)
        if kind == "event_msg":
            return self._event(payload, line, timestamp)
        self.stats.ignored += 1
        return []

    def _message(self, line: Line, role: Role, text: str, timestamp: Any, **extra: Any) -> Message:
        return Message(
            id=fingerprint_id("codex", line.offset, line.data),
            role=role,
            text=text,
            timestamp=timestamp,
            **extra,
        )

    def _session_meta(self, payload: dict[str, Any]) -> None:
        s = self.session
        if self._meta_seen:  # a resumed session repeats its meta; the first one names it
            return
        self._meta_seen = True
        s.id = as_str(payload.get("id")) or s.id
        s.cwd = as_str(payload.get("cwd")) or s.cwd
        s.project = s.project or s.cwd
        s.git_branch = as_str(as_dict(payload.get("git")).get("branch")) or s.git_branch
        self.touch(parse_time(payload.get("timestamp")))
        spawn = as_dict(as_dict(as_dict(payload.get("source")).get("subagent")).get("thread_spawn"))
        parent = as_str(spawn.get("parent_thread_id"))
        if parent:
            s.parent_session_id = parent
            s.agent_id = as_str(spawn.get("agent_nickname")) or s.id

    def _dedupe(self, role: str, text: str) -> bool:
        """True when ``text`` was just seen from the other stream (a duplicate)."""
        text = text.replace("[image]", "").strip()
        recent = self._recent[role]
        if text in recent:
            recent.remove(text)
            return True
        recent.append(text)
        return False

    def _response_item(self, p: dict[str, Any], line: Line, ts: Any) -> list[Message]:
        ptype = p.get("type")
        cwd = self.session.cwd
        if ptype == "message":
            role = p.get("role")
            text = text_of(p.get("content"))
            if role == "user":
                if not text.strip() or text.lstrip().startswith(_INJECTED_PREFIXES):
                    self.stats.ignored += 1
                    return []
                if self._dedupe("user", text.strip()):
                    return []
                self.note_first_prompt(text)
                return [self._message(line, "user", text, ts)]
            if role == "assistant":
                if not text.strip() or self._dedupe("assistant", text.strip()):
                    return []
                return [self._message(line, "assistant", text, ts, model=self._model)]
            self.stats.ignored += 1  # developer / system instructions
            return []
        if ptype in ("function_call", "custom_tool_call", "local_shell_call"):
            name = as_str(p.get("name")) or ("shell" if ptype == "local_shell_call" else "unknown")
            call_id = as_str(p.get("call_id")) or as_str(p.get("id")) or f"codex:{line.offset}"
            if ptype == "function_call":
                tool_input = _arguments(p.get("arguments"))
            elif ptype == "custom_tool_call":
                raw = p.get("input")
                tool_input = {"input": raw} if isinstance(raw, str) else as_dict(raw)
            else:
                tool_input = as_dict(p.get("action"))
            workdir = as_str(tool_input.get("workdir")) or cwd
            call = make_tool_call("codex", call_id, name, tool_input, workdir)
            self._call_names[call_id] = name
            while len(self._call_names) > 512:
                self._call_names.popitem(last=False)
            return [self._message(line, "assistant", "", ts, model=self._model,
                                  tool_calls=[call])]
        if ptype in ("function_call_output", "custom_tool_call_output", "local_shell_call_output"):
            call_id = as_str(p.get("call_id")) or ""
            output, exit_code = _output(p.get("output"))
            result = ToolResult(
                call_id=call_id,
                is_error=exit_code not in (None, 0) or _refused(output, exit_code),
                output=output,
                exit_code=exit_code,
            )
            return [self._message(line, "tool", "", ts, tool_results=[result])]
        if ptype == "web_search_call":
            action = as_dict(p.get("action"))
            call_id = as_str(p.get("id")) or f"codex:{line.offset}"
            call = make_tool_call("codex", call_id, "web_search", action, cwd)
            return [self._message(line, "assistant", "", ts, model=self._model,
                                  tool_calls=[call])]
        self.stats.ignored += 1  # reasoning, ghost_snapshot, tool_search...
        return []

    def _event(self, p: dict[str, Any], line: Line, ts: Any) -> list[Message]:
        ptype = p.get("type")
        if ptype == "user_message":
            text = as_str(p.get("message")) or ""
            if not text.strip() or self._dedupe("user", text.strip()):
                return []
            self.note_first_prompt(text)
            return [self._message(line, "user", text, ts)]
        if ptype == "agent_message":
            text = as_str(p.get("message")) or ""
            if not text.strip() or self._dedupe("assistant", text.strip()):
                return []
            return [self._message(line, "assistant", text, ts, model=self._model)]
        if ptype == "exec_command_end":
            exit_code = p.get("exit_code") if isinstance(p.get("exit_code"), int) else None
            output = as_str(p.get("aggregated_output")) or "\n".join(
                s for s in (as_str(p.get("stdout")), as_str(p.get("stderr"))) if s
            )
            result = ToolResult(
                call_id=as_str(p.get("call_id")) or "",
                is_error=exit_code not in (None, 0),
                output=output,
                exit_code=exit_code,
            )
            return [self._message(line, "tool", "", ts, tool_results=[result])]
        if ptype == "patch_apply_end":
            success = p.get("success")
            result = ToolResult(
                call_id=as_str(p.get("call_id")) or "",
                is_error=success is False,
                output=as_str(p.get("stdout")) or as_str(p.get("stderr")) or "",
                file_paths=_changed_files(p.get("changes"), self.session.cwd),
            )
            return [self._message(line, "tool", "", ts, tool_results=[result])]
        if ptype == "token_count":
            return self._token_count(p, line, ts)
        if ptype == "context_compacted":
            return [self._message(line, "system", "Conversation compacted", ts,
                                  is_compact_boundary=True, is_meta=True)]
        self.stats.ignored += 1
        return []

    def _token_count(self, p: dict[str, Any], line: Line, ts: Any) -> list[Message]:
        info = as_dict(p.get("info"))
        last = as_dict(info.get("last_token_usage"))
        total = as_dict(info.get("total_token_usage"))
        if not last:
            self.stats.ignored += 1
            return []
        total_key = [as_int(total.get(k)) for k in ("input_tokens", "cached_input_tokens",
                                                     "output_tokens", "total_tokens")]
        if total and total_key == self._last_total:
            self.stats.ignored += 1  # the same call reported twice
            return []
        self._last_total = total_key if total else None
        cached = as_int(last.get("cached_input_tokens"))
        usage = Usage(
            input_tokens=max(as_int(last.get("input_tokens")) - cached, 0),
            output_tokens=as_int(last.get("output_tokens")),
            cache_read_tokens=cached,
        )
        return [self._message(line, "system", "", ts, usage=usage, is_meta=True,
                              model=self._model)]


def _changed_files(changes: Any, cwd: str | None) -> list[str]:
    """The files of a ``patch_apply_end``'s ``changes`` map (``{path: {type, move_path, …}}``),
    a rename's new name too, made absolute against the session's cwd."""
    if not isinstance(changes, dict):
        return []
    out: list[str] = []
    for path, change in list(changes.items())[:_MAX_CHANGED_FILES]:
        if isinstance(path, str) and path.strip():
            out.append(absolute(path.strip(), cwd))
        moved = change.get("move_path") if isinstance(change, dict) else None
        if isinstance(moved, str) and moved.strip():
            out.append(absolute(moved.strip(), cwd))
    return list(dict.fromkeys(out))


def _arguments(raw: Any) -> dict[str, Any]:
    if isinstance(raw, dict):
        return raw
    if isinstance(raw, str):
        try:
            parsed = orjson.loads(raw)
        except orjson.JSONDecodeError:
            return {"raw": raw}
        return parsed if isinstance(parsed, dict) else {"raw": raw}
    return {}


#: how Codex reports a call it could not run or that failed without an exit code: the output is
#: this plain text, not the usual ``{"output", "metadata": {"exit_code"}}`` (``failed in sandbox:
#: <output>`` when the sandbox denied or killed the command, a refused patch, a closed PTY)
_REFUSED = re.compile(r"^(?:failed in sandbox\b|sandbox error:|execution error:|"
                      r"apply_patch verification failed:|write_stdin failed:)")


def _refused(output: str, exit_code: int | None) -> bool:
    """The call failed though no exit code says so (Codex's own error text)."""
    return exit_code is None and _REFUSED.match(output) is not None


def _output(raw: Any) -> tuple[str, int | None]:
    """Tool output text and exit code: old ``shell`` wraps both in a JSON string."""
    if isinstance(raw, list):
        return text_of(raw), None
    if not isinstance(raw, str):
        return "", None
    if raw.startswith("{"):
        try:
            parsed = orjson.loads(raw)
        except orjson.JSONDecodeError:
            parsed = None
        if isinstance(parsed, dict) and "output" in parsed:
            meta = as_dict(parsed.get("metadata"))
            code = meta.get("exit_code")
            text = parsed["output"] if isinstance(parsed["output"], str) else ""
            return text, code if isinstance(code, int) else exit_code_from_text(text)
    return raw, exit_code_from_text(raw)
