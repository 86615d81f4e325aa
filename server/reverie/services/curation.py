"""Per-entry curation: forget, pin / unpin, edit or move one entry of the memory.

An *entry* is one line of a memory file (an index line ``- [Title](file.md) - hook`` of
``MEMORY.md`` or a line of a topic file's body). A person names it in one of two ways:

- ``FILE:LINE`` (``MEMORY.md:3``, ``testing.md:12``; 1-based, as editors number lines);
- a piece of its text (case-insensitive); it must match exactly one line of the memory dir,
  else the error lists the candidates as ``FILE:LINE`` so the person can pick one.

The editor also sends the text it showed (``expect``): when the line no longer reads so, the
file changed meanwhile and nothing is done.

Each action is a run of its own (source ``curate``) through the ``MemoryWriter``: locked,
staged, applied atomically, recorded in the history and undoable like a dream. No repair runs on
a person's change, so the text they wrote is kept byte for byte; what they write is checked
against the index rules (a change that would add a broken link or an over-long index is refused)
and redacted like everything else Reverie writes.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, Field

if TYPE_CHECKING:
    from reverie.memory.write import MemoryWriter

from reverie.errors import UserError
from reverie.memory.pins import is_pinned, pin_line, unpin_line, without_mark

Action = Literal["forget", "pin", "unpin", "edit", "move"]

INDEX = "MEMORY.md"
_ADDRESS = re.compile(r"^(?P<file>[^:/\\]+\.md):(?P<line>\d+)$")
_LINK = re.compile(r"\]\(([^)\s/\\]+\.md)\)")


class Entry(BaseModel):
    """One line of a memory file."""

    file: str
    line: int  # 1-based
    text: str
    pinned: bool = False


class CurationResult(BaseModel):
    """What a curation did; ``as_json`` is the ``reverie forget|pin --json`` contract."""

    action: Action
    memory_dir: str
    entry: Entry
    new_text: str | None = None
    to_file: str | None = None
    run_id: str | None = None
    files: list[str] = Field(default_factory=list)
    removed_topic: str | None = None
    message: str = ""

    def as_json(self) -> dict[str, object]:
        return {
            "action": self.action,
            "memory_dir": self.memory_dir,
            "entry": self.entry.model_dump(),
            "new_text": self.new_text,
            "to_file": self.to_file,
            "run_id": self.run_id,
            "files": self.files,
            "removed_topic": self.removed_topic,
            "message": self.message,
        }


# --- finding an entry ------------------------------------------------------------------------


def _body_lines(path: Path) -> list[tuple[int, str]]:
    """``(0-based index, line)`` of the lines that can be entries: not the front matter, not
    blank, not a heading."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"cannot read {path.name}: {exc}") from None
    start = 0
    if lines and lines[0].strip() == "---":
        for i in range(1, len(lines)):
            if lines[i].strip() == "---":
                start = i + 1
                break
    return [(i, line) for i, line in enumerate(lines)
            if i >= start and line.strip() and not line.lstrip().startswith("#")]


def list_entries(memory_dir: Path) -> list[Entry]:
    """Every entry of the memory dir, the index first."""
    files = sorted(memory_dir.glob("*.md"), key=lambda p: (p.name != INDEX, p.name))
    return [Entry(file=p.name, line=i + 1, text=line, pinned=is_pinned(line))
            for p in files for i, line in _body_lines(p)]


def find_entry(memory_dir: Path, query: str, expect: str | None = None) -> Entry:
    """The one entry ``query`` names (``FILE:LINE`` or a piece of its text)."""
    query = query.strip()
    if not query:
        raise UserError("name the entry: FILE:LINE (MEMORY.md:3) or a piece of its text")
    if not (memory_dir / INDEX).exists() and not any(memory_dir.glob("*.md")):
        raise UserError(f"there is no memory yet in {memory_dir}")
    address = _ADDRESS.match(query)
    if address:
        name, number = address["file"], int(address["line"])
        path = memory_dir / name
        if not path.is_file():
            raise UserError(f"{name} is not a file of the memory ({memory_dir})")
        for i, line in _body_lines(path):
            if i + 1 == number:
                entry = Entry(file=name, line=number, text=line, pinned=is_pinned(line))
                break
        else:
            raise UserError(f"{name}:{number} is not an entry (blank, a heading, front matter "
                            "or past the end)")
    else:
        needle = query.casefold()
        hits = [e for e in list_entries(memory_dir)
                if needle in without_mark(e.text).casefold()]
        if not hits:
            raise UserError(f"no entry of the memory contains {query!r}")
        if len(hits) > 1:
            listing = "; ".join(f"{e.file}:{e.line}: {without_mark(e.text).strip()[:60]}"
                                for e in hits[:5])
            more = f" and {len(hits) - 5} more" if len(hits) > 5 else ""
            raise UserError(f"{len(hits)} entries contain {query!r}: {listing}{more}; name one "
                            "as FILE:LINE")
        entry = hits[0]
    if expect is not None and entry.text != expect:
        raise UserError(f"{entry.file}:{entry.line} changed since it was shown; look again")
    return entry


# --- applying --------------------------------------------------------------------------------


def _replace_line(path: Path, number: int, new: str | None) -> None:
    """Line ``number`` (1-based) replaced by ``new`` (None: removed); every other byte kept."""
    raw = path.read_bytes().decode("utf-8")
    lines = raw.splitlines(keepends=True)
    old = lines[number - 1]
    ending = old[len(old.rstrip("\r\n")):]
    if new is None:
        del lines[number - 1]
    else:
        lines[number - 1] = new + ending
    path.write_text("".join(lines), encoding="utf-8", newline="")


def _append_line(path: Path, text: str) -> None:
    raw = path.read_text(encoding="utf-8") if path.exists() else ""
    if raw and not raw.endswith("\n"):
        raw += "\n"
    path.write_text(raw + text + "\n", encoding="utf-8", newline="")


def _still_linked(staged: Path, topic: str) -> bool:
    index = staged / INDEX
    if not index.exists():
        return False
    return any(m.group(1) == topic for m in _LINK.finditer(index.read_text(encoding="utf-8")))


def apply_to(staged: Path, entry: Entry, action: Action, new_text: str | None,
           to_file: str | None) -> str | None:
    """Changes the staged copy; returns the topic file a forget removed with its index line."""
    path = staged / entry.file
    if action == "forget":
        _replace_line(path, entry.line, None)
        link = _LINK.search(entry.text)
        if entry.file == INDEX and link and not _still_linked(staged, link.group(1)):
            topic = staged / link.group(1)
            if topic.is_file():  # else the index's repair would bring the entry back
                topic.unlink()
                return link.group(1)
        return None
    if action == "pin":
        _replace_line(path, entry.line, pin_line(entry.text))
    elif action == "unpin":
        _replace_line(path, entry.line, unpin_line(entry.text))
    elif action == "edit":
        assert new_text is not None
        _replace_line(path, entry.line, new_text)
    elif action == "move":
        assert to_file is not None
        _replace_line(path, entry.line, None)
        _append_line(staged / to_file, entry.text)
    return None


def check_args(memory_dir: Path, entry: Entry, action: Action, new_text: str | None,
                to_file: str | None) -> tuple[str | None, str | None]:
    from reverie.redact import redact

    if action == "edit":
        if new_text is None or not new_text.strip():
            raise UserError("the new text is empty: to remove the entry, forget it")
        if "\n" in new_text or "\r" in new_text:
            raise UserError("an entry is one line: the new text has a line break")
        new_text, _ = redact(new_text)
        if is_pinned(entry.text) and not is_pinned(new_text):
            new_text = pin_line(new_text)  # editing a pinned entry keeps it pinned
    if action == "move":
        if entry.file == INDEX:
            raise UserError("an index line cannot move: move a topic file's line, or edit the "
                            "index line")
        if not to_file:
            raise UserError("name the topic file to move the entry to")
        to_file = Path(to_file).name
        if not to_file.endswith(".md") or to_file in (INDEX, entry.file):
            raise UserError(f"{to_file} is not another topic file of the memory")
        if not (memory_dir / to_file).is_file():
            raise UserError(f"{to_file} is not a topic file of the memory ({memory_dir})")
    if action == "pin" and entry.pinned:
        raise UserError(f"{entry.file}:{entry.line} is already pinned")
    if action == "unpin" and not entry.pinned:
        raise UserError(f"{entry.file}:{entry.line} is not pinned")
    return new_text, to_file


def display_text(line: str) -> str:
    """An entry as it reads: "Title: hook" for an index line, the text for a fact."""
    text = without_mark(line).strip()
    text = re.sub(r"^[-*]\s+", "", text)
    return re.sub(r"^\[([^\]]+)\]\([^)]*\)\s*(?:[-—–:]\s*)?", r"\1: ", text).rstrip(": ")


def summary_of(entry: Entry, action: Action, to_file: str | None) -> str:
    text = display_text(entry.text)
    short = text if len(text) <= 80 else text[:79] + "…"
    where = f"{entry.file}:{entry.line}"
    return {
        "forget": f"forget {where}: {short}",
        "pin": f"pin {where}: {short}",
        "unpin": f"unpin {where}: {short}",
        "edit": f"edit {where}: {short}",
        "move": f"move {where} to {to_file}: {short}",
    }[action]


async def curate(memory_dir: Path, action: Action, query: str, *, expect: str | None = None,
                 new_text: str | None = None, to_file: str | None = None,
                 writer: MemoryWriter | None = None) -> CurationResult:
    """Carry ``action`` out on the entry ``query`` names, as one recorded, undoable run.

    Raises ``UserError`` (what the person must fix), ``LockBusy`` while a dream holds the lock.
    """
    import asyncio

    from reverie.memory.repair import new_blocking_problems
    from reverie.memory.store import check_index
    from reverie.services.wiring import memory_writer

    entry = await asyncio.to_thread(find_entry, memory_dir, query, expect)
    new_text, to_file = check_args(memory_dir, entry, action, new_text, to_file)
    before = await asyncio.to_thread(check_index, memory_dir)
    session = (writer or memory_writer()).open(memory_dir, source="curate", repair=False)
    removed: str | None = None
    async with session as staged:
        # the entry is found again in the staged copy: it is what gets changed
        again = await asyncio.to_thread(find_entry, staged.path, f"{entry.file}:{entry.line}",
                                        entry.text)
        removed = await asyncio.to_thread(apply_to, staged.path, again, action, new_text, to_file)
        problems = await asyncio.to_thread(new_blocking_problems, staged.path, before)
        if problems:
            p = problems[0]
            raise UserError(f"that would break the memory: {p.file.name}:{p.line + 1} "
                            f"{p.message}")
        staged.summary = summary_of(entry, action, to_file)
    written = session.result
    files = list(written.changes.touched) if written else []
    verb = {"forget": "Forgot", "pin": "Pinned", "unpin": "Unpinned", "edit": "Edited",
            "move": "Moved"}[action]
    text = display_text(entry.text)
    message = f"{verb} {entry.file}:{entry.line} ({text[:60]}{'…' if len(text) > 60 else ''})"
    if action == "move":
        message += f" to {to_file}"
    if removed:
        message += f"; its topic file {removed} went with it"
    return CurationResult(
        action=action, memory_dir=str(memory_dir), entry=entry, new_text=new_text,
        to_file=to_file, run_id=written.run_id if written and written.record else None,
        files=files, removed_topic=removed, message=message + ".",
    )
