"""A Claude Code transcript written record by record in the agent's real JSONL format, read back
through the real parser: the analysis tests see exactly what they would see on a live session."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta
from pathlib import Path

import orjson
import pytest

from reverie.analysis import SessionAnalysis, analyse_session
from reverie.transcripts.model import Message, Session
from reverie.transcripts.reader import TranscriptReader

CWD = "/home/dev/shop"


class ClaudeLog:
    """Appends Claude Code records (user prompts, tool uses, tool results…) to a JSONL file."""

    def __init__(self, path: Path, session_id: str = "0b6f1c2e-1111-4222-8333-444455556666"):
        self.path = path
        self.session_id = session_id
        self.records: list[dict[str, object]] = []
        self._n = itertools.count(1)
        self._clock = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
        self._parent: str | None = None

    def _base(self, kind: str) -> dict[str, object]:
        self._clock += timedelta(seconds=7)
        uuid = f"00000000-0000-4000-8000-{next(self._n):012d}"
        record: dict[str, object] = {
            "type": kind, "uuid": uuid, "parentUuid": self._parent, "sessionId": self.session_id,
            "cwd": CWD, "isSidechain": False, "userType": "external", "version": "2.1.39",
            "timestamp": self._clock.isoformat().replace("+00:00", "Z"),
        }
        self._parent = uuid
        return record

    def user(self, text: str, **extra: object) -> ClaudeLog:
        self.records.append(self._base("user") | {"message": {"role": "user", "content": text}}
                            | extra)
        return self

    def reply(self, text: str) -> ClaudeLog:
        self.records.append(self._base("assistant") | {"message": {
            "id": f"msg_{next(self._n)}", "role": "assistant", "model": "claude-opus-4-6",
            "content": [{"type": "text", "text": text}],
            "usage": {"input_tokens": 10, "output_tokens": 20}}})
        return self

    def call(self, name: str, tool_input: dict[str, object]) -> str:
        call_id = f"toolu_{next(self._n):08d}"
        self.records.append(self._base("assistant") | {"message": {
            "id": f"msg_{next(self._n)}", "role": "assistant", "model": "claude-opus-4-6",
            "content": [{"type": "tool_use", "id": call_id, "name": name, "input": tool_input}],
            "usage": {"input_tokens": 10, "output_tokens": 20}}})
        return call_id

    def result(self, call_id: str, output: str, error: bool = False) -> ClaudeLog:
        content = f"Exit code 1\n{output}" if error and not output.startswith("<") else output
        self.records.append(self._base("user") | {
            "message": {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": call_id, "content": content,
                 "is_error": error}]},
            "toolUseResult": f"Error: {output}" if error else {"stdout": output, "stderr": ""},
        })
        return self

    def bash(self, command: str, output: str = "ok", fail: bool = False) -> ClaudeLog:
        return self.result(self.call("Bash", {"command": command}), output, fail)

    def edit(self, path: str, old: str, new: str, error: str | None = None) -> ClaudeLog:
        call_id = self.call("Edit", {"file_path": f"{CWD}/{path}", "old_string": old,
                                     "new_string": new})
        if error is not None:
            return self.result(call_id, f"<tool_use_error>{error}</tool_use_error>", True)
        return self.result(call_id, "The file has been updated.")

    def read(self, path: str) -> ClaudeLog:
        return self.result(self.call("Read", {"file_path": f"{CWD}/{path}"}), "1\tcontent")

    def write(self, path: str, content: str) -> ClaudeLog:
        call_id = self.call("Write", {"file_path": f"{CWD}/{path}", "content": content})
        return self.result(call_id, "File created successfully")

    def pending(self, command: str) -> ClaudeLog:
        self.call("Bash", {"command": command})
        return self

    def save(self) -> Path:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in self.records))
        return self.path

    def messages(self) -> tuple[Session, list[Message]]:
        reader = TranscriptReader(self.save())
        messages = list(reader)
        return reader.session, messages

    def analyse(self) -> SessionAnalysis:
        session, messages = self.messages()
        return analyse_session(messages, session, Path(CWD))


@pytest.fixture
def log(tmp_path: Path) -> ClaudeLog:
    return ClaudeLog(tmp_path / ".claude" / "projects" / "-home-dev-shop" / "session.jsonl")
