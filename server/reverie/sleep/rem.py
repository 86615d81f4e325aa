"""REM: consolidate memory + journal + candidates into at most N entries, and write them through
the memory writer (``reverie.memory.write``), exactly like a dream run (source ``sleep``): lock,
staged copy, repair, validation, atomic apply, history, after-apply hooks.

Order matters: the lock is taken before the memory is read for the request and held until the
apply, so a dream can never interleave. The model's reply is validated against a schema whose
entry list is capped at N; a reply that still fails after the client's one repair attempt raises
and nothing is written. A kill at any moment leaves the live dir as before or as after (the
transaction's journal), and the next run's recovery finishes or discards it.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import date as Date
from typing import Annotated

from pydantic import BaseModel, Field, create_model

from reverie.errors import ReverieError
from reverie.fsutil import atomic_write_text
from reverie.llm.errors import StructuredOutputError
from reverie.llm.types import ChatMessage, ModelClient
from reverie.memory.write import StagedMemory
from reverie.sleep.entries import fix_recorded_dates, render_files
from reverie.sleep.models import ConsolidatedMemory, MemoryCandidate, MemoryEntry
from reverie.sleep.prompts import REM_SYSTEM, rem_request_text
from reverie.sleep.redaction import redact_text

logger = logging.getLogger(__name__)


class RemError(ReverieError):
    """REM could not produce a valid memory; nothing was written."""


def capped_model(max_entries: int) -> type[ConsolidatedMemory]:
    """``ConsolidatedMemory`` whose schema and validation allow at most ``max_entries``."""
    model: type[ConsolidatedMemory] = create_model(
        "ConsolidatedMemory",
        __base__=ConsolidatedMemory,
        entries=(Annotated[list[MemoryEntry], Field(max_length=max_entries)], ...),
    )
    return model


async def consolidate_with_model(
    client: ModelClient,
    *,
    review_date: Date,
    max_entries: int,
    memory: Sequence[MemoryEntry],
    journal: str,
    candidates: Sequence[MemoryCandidate],
    max_tokens: int | None = None,
    sources: Sequence[str] | None = None,
    override: str | None = None,
    facts: Sequence[str] | None = None,
) -> list[MemoryEntry]:
    """One structured request; the validated entries, or ``RemError``. ``sources`` names the
    session each candidate came from (its evidence in the request); ``facts``: Reverie's own
    candidate facts of the reviewed sessions (``curation.brief`` lines)."""
    text = redact_text(rem_request_text(review_date, max_entries, memory, journal, candidates,
                                        sources, override, facts))
    schema = capped_model(max_entries)
    try:
        reply = await client.complete(
            [ChatMessage(role="user", content=text)],
            system=REM_SYSTEM,
            output_schema=schema,
            max_tokens=max_tokens,
        )
    except StructuredOutputError as exc:
        raise RemError(str(exc)) from exc
    parsed = reply.parsed
    if not isinstance(parsed, BaseModel):
        raise RemError("the model's reply carried no structured memory")
    try:
        checked = schema.model_validate(parsed.model_dump())
    except ValueError as exc:
        raise RemError(f"the consolidated memory is invalid: {exc}") from exc
    return without_noise(checked.entries, memory)


def without_noise(entries: Sequence[MemoryEntry],
                  before: Sequence[MemoryEntry]) -> list[MemoryEntry]:
    """The model's entries minus new or changed ones of a never-keep class (``curation.noise``:
    tool slips, wrappers, bare exploration commands). An existing entry the model rewrote into
    noise keeps its previous version; entries it left unchanged stay."""
    from reverie.curation.noise import noise_class

    previous = {e.key: e for e in before}
    kept = []
    for entry in entries:
        old = previous.get(entry.key)
        if (old is None or old.content != entry.content) and any(
                noise_class(line) for line in [entry.title, *entry.content.splitlines()]
                if line.strip()):
            logger.info("sleep: dropped the %r entry the model wrote (a never-keep class)",
                        entry.key)
            if old is not None:
                kept.append(old)
            continue
        kept.append(entry)
    return kept


def stage_entries(
    staged: StagedMemory,
    before: Sequence[MemoryEntry],
    after: Sequence[MemoryEntry],
    *,
    review_date: Date,
) -> None:
    """Write the new memory into a write's staged copy (the writer repairs, validates and
    applies it). The live dir is read for what stays byte-for-byte; the lock is held, so it is
    the state the staged copy was made from. Blocking: call via a thread."""
    memory_dir = staged.live_dir
    entries = fix_recorded_dates(before, after, review_date)
    writes, deletes = render_files(memory_dir, entries, before)
    for name, text in writes.items():
        atomic_write_text(staged.path / name, redact_text(text))
    for name in deletes:
        (staged.path / name).unlink(missing_ok=True)
