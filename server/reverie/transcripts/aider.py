"""Aider's ``.aider.chat.history.md`` in the repository root.

Each ``# aider chat started at YYYY-MM-DD HH:MM:SS`` header begins one run, which is one session
(id: ``aider-<start>-<byte offset of the header>``). ``#### `` lines are user input, ``> `` lines
are Aider's status output, everything else is the assistant's reply. Edits are recovered from
``> Applied edit to <file>`` and commits from ``> Commit <sha> <message>``; both become tool calls
on the reply before them. ``> Tokens: N sent, M received`` becomes that reply's usage. Every
message is dated by its run's header (the only time Aider writes).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from reverie.transcripts.base import first_line, make_tool_call
from reverie.transcripts.model import Message, ParseStats, Role, Session, Usage
from reverie.transcripts.wrappers import request_of

HEADER = re.compile(rb"^# aider chat started at (\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2})[ \t]*\r?$",
                    re.MULTILINE)
_APPLIED = re.compile(r"^Applied edit to (.+?)\s*$")
_COMMIT = re.compile(r"^Commit ([0-9a-f]{7,40}) (.*)$")
_TOKENS = re.compile(r"^Tokens: ([\d.,]+k?) sent(?:, ([\d.,]+k?) cache write)?"
                     r"(?:, ([\d.,]+k?) cache hit)?, ([\d.,]+k?) received")
_MODEL = re.compile(r"^(?:Main model|Models?): (\S+)")
_WORKING_DIR = re.compile(r"^Git working dir: (.+?)\s*$")


@dataclass
class AiderRun:
    session: Session
    messages: list[Message] = field(default_factory=list)
    offset: int = 0


def _count(value: str | None) -> int:
    if not value:
        return 0
    value = value.replace(",", "")
    try:
        return int(float(value[:-1]) * 1000) if value.endswith("k") else int(float(value))
    except ValueError:
        return 0


def run_offsets(data: bytes) -> list[tuple[int, str]]:
    """Byte offset and start time of every run header (cheap: discovery uses it)."""
    return [(m.start(), m.group(1).decode()) for m in HEADER.finditer(data)]


def parse_history(
    path: Path, data: bytes, stats: ParseStats, base_offset: int = 0
) -> list[AiderRun]:
    """Every run in ``data`` (which starts at ``base_offset`` in the file)."""
    headers = list(HEADER.finditer(data))
    runs: list[AiderRun] = []
    if headers and headers[0].start() > 0 and data[: headers[0].start()].strip():
        stats.skip("text before the first run header")
    cwd = repository_root(path)
    for index, match in enumerate(headers):
        end = headers[index + 1].start() if index + 1 < len(headers) else len(data)
        started = _local_time(match.group(1).decode())
        offset = base_offset + match.start()
        stamp = started.strftime("%Y%m%dT%H%M%S") if started else "unknown"
        session = Session(
            id=f"aider-{stamp}-{offset}",
            agent="aider",
            path=path,
            cwd=cwd,
            project=cwd,
            started_at=started,
        )
        if runs:
            runs[-1].session.updated_at = runs[-1].session.updated_at or started
        body = data[match.end(): end].decode("utf-8", "replace")
        run = AiderRun(session=session, offset=offset)
        _parse_run(run, body, stats)
        runs.append(run)
    if not headers and data.strip():
        stats.lines += data.count(b"\n") + 1
        stats.skip("no '# aider chat started at' header")
    return runs


def repository_root(path: Path) -> str:
    """Where Aider's file names start from: the git root enclosing the history file (Aider
    names files relative to it), else the history's folder. A run that announces its
    ``Git working dir:`` overrides this for that run."""
    folder = Path(os.path.abspath(path.parent))
    for candidate in (folder, *folder.parents):
        if (candidate / ".git").exists():
            return str(candidate)
    return str(folder)


def _file_name(name: str, root: str | None) -> str:
    """Aider on Windows writes ``backend\\db.py``; read against a POSIX root that is
    ``backend/db.py`` (the same file, never two)."""
    if root and root.startswith("/") and "\\" in name:
        return name.replace("\\", "/")
    return name


def _local_time(text: str) -> datetime | None:
    try:
        return datetime.strptime(text, "%Y-%m-%d %H:%M:%S").astimezone()
    except ValueError:
        return None


def _parse_run(run: AiderRun, body: str, stats: ParseStats) -> None:
    blocks: list[tuple[str, list[str]]] = []
    for raw in body.splitlines():
        stats.lines += 1
        line = raw.rstrip()
        # status lines are "> text"; a reply's ">>>>>>> REPLACE" marker is not one
        if raw.startswith("####"):
            kind, text = "user", raw[4:].strip()
        elif raw.startswith("> ") or line == ">":
            kind, text = "status", raw[1:].strip()
        else:
            kind, text = "assistant", line
            if not line and (not blocks or blocks[-1][0] != "assistant"):
                continue
        if blocks and blocks[-1][0] == kind:
            blocks[-1][1].append(text)
        else:
            blocks.append((kind, [text]))
    model: str | None = None
    last_reply: Message | None = None
    seen_user = False
    for index, (kind, lines) in enumerate(blocks):
        text = "\n".join(lines).strip()
        mid = f"{run.session.id}:{index}"
        if kind == "user":
            seen_user = True
            run.messages.append(Message(id=mid, role="user", text=text))
            if run.session.title is None and (request := request_of(text)):
                run.session.title = first_line(request)
                run.session.title_source = "first_prompt"
            last_reply = None
            continue
        if kind == "assistant":
            if not text:
                continue
            last_reply = Message(id=mid, role="assistant", text=text, model=model)
            run.messages.append(last_reply)
            continue
        for n, status in enumerate(lines):
            found = _MODEL.match(status)
            if found and model is None:
                model = found.group(1)
            working = _WORKING_DIR.match(status)
            if working and not run.messages:
                run.session.cwd = run.session.project = working.group(1)
            applied = _APPLIED.match(status)
            commit = _COMMIT.match(status)
            tokens = _TOKENS.match(status)
            if applied or commit:
                if last_reply is None:
                    last_reply = Message(id=f"{mid}:reply", role="assistant", model=model)
                    run.messages.append(last_reply)
                if applied:
                    name = _file_name(applied.group(1), run.session.cwd)
                    call = make_tool_call("aider", f"{mid}:{n}", "apply_edit",
                                          {"file_path": name}, run.session.cwd)
                else:
                    assert commit is not None
                    call = make_tool_call("aider", f"{mid}:{n}", "git_commit",
                                          {"sha": commit.group(1), "message": commit.group(2)},
                                          run.session.cwd)
                last_reply.tool_calls.append(call)
            elif tokens and last_reply is not None and last_reply.usage is None:
                last_reply.usage = Usage(
                    input_tokens=_count(tokens.group(1)),
                    cache_write_tokens=_count(tokens.group(2)),
                    cache_read_tokens=_count(tokens.group(3)),
                    output_tokens=_count(tokens.group(4)),
                )
        role: Role = "system"
        run.messages.append(Message(id=mid, role=role, text=text, is_meta=not seen_user))
    # Aider writes no time per message, only the run's start: each message carries that, so
    # what a run said is dated by the run (the file's modification time is when it was last
    # written, or copied, or checked out: it still decides what is new, not when things were said)
    for message in run.messages:
        message.timestamp = run.session.started_at
