"""What no model-driven run may do to memory, and what memory may not pass on unapproved.

A dream or sleep run applies what a model wrote. A reply that deletes ``MEMORY.md`` and every
topic used to apply with exit 0 (the review's finding): the next session then starts with no
memory, and only ``reverie undo`` brings it back. Such a run is refused before anything is
applied: deleting or emptying the index, or deleting more than half of the topics (at least
three). Merging two topics, or retiring a few, stays a normal run. Dreams and sleep ask for the
guard (``MemoryWriter.open(guard_deletions=True)``); what a person does (``reverie forget``, an
accepted review, an undo) is not guarded.

``held_back_problems`` flags, for the editor, the index lines that agents' files do not get
until a person approves them (``agents.specs`` holds them back).
"""

from __future__ import annotations

from pathlib import Path

from reverie.hazards import APPROVED, hazard_of
from reverie.memory.paths import INDEX_NAME
from reverie.memory.store import MemoryProblem, parse_index, visible_files
from reverie.memory.transaction import TransactionError

__all__ = ["MAX_DELETED_SHARE", "DestructiveRun", "held_back_problems", "refuse_destruction"]

#: the share of the topics one run may delete
MAX_DELETED_SHARE = 0.5
#: deleting this many topics is always allowed (a merge of three into one)
_ALWAYS_ALLOWED = 2


class DestructiveRun(TransactionError):
    """The run would delete the memory; nothing was applied."""


def _entries(path: Path) -> int | None:
    try:
        return len(parse_index(path.read_text(encoding="utf-8", errors="replace")).entries)
    except FileNotFoundError:
        return None


def refuse_destruction(live_dir: Path, staged_dir: Path) -> None:
    """Raise ``DestructiveRun`` when the staged copy deletes or empties the live index, or
    deletes more topics than a run may."""
    before = _entries(live_dir / INDEX_NAME)
    after = _entries(staged_dir / INDEX_NAME)
    why = []
    if before is not None and after is None:
        why.append(f"delete {INDEX_NAME}")
    elif before and not after:
        why.append(f"remove every entry of {INDEX_NAME}")
    live = {n for n in visible_files(live_dir) if n.endswith(".md") and n != INDEX_NAME}
    staged = set(visible_files(staged_dir))
    gone = sorted(live - staged)
    if len(gone) > max(_ALWAYS_ALLOWED, MAX_DELETED_SHARE * len(live)):
        why.append(f"delete {len(gone)} of {len(live)} topics")
    if why:
        raise DestructiveRun(
            f"refused: the run would {' and '.join(why)}; memory unchanged. A run may delete "
            f"at most half of the topics and never the index; to remove memory yourself use "
            "`reverie forget` or edit the files")


def held_back_problems(index_path: Path, text: str) -> list[MemoryProblem]:
    """The index lines agents' files will not get until a person approves them (an
    instruction that runs remote code, deletes outside the project, moves credentials or
    carries a URL: ``reverie.hazards``), as editor diagnostics on those lines."""
    problems: list[MemoryProblem] = []
    for number, line in enumerate(text.splitlines()):
        reason = None if APPROVED in line else hazard_of(line)
        if reason is not None:
            problems.append(MemoryProblem(
                file=index_path, line=number, severity="warning", code="held-back",
                message=f"held back from agents' files ({reason}): review it, then add "
                        f"{APPROVED} to the line to pass it on, or remove it"))
    return problems
