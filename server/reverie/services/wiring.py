"""What the layers below are given by the application: the one ``MemoryWriter`` with its
after-apply hooks. Storage never imports the layers that follow it; they register here.

Every front end builds its writer with ``memory_writer()``; a job constructed without one (a
test, a bench) writes memory the same way but refreshes nothing else.
"""

from __future__ import annotations

from reverie.memory.write import AfterApply, MemoryWriter
from reverie.services.check import refresh_agent_copies

#: run after every apply of a memory dir, in order (the search index joins here)
AFTER_APPLY: tuple[AfterApply, ...] = (
    # agents holding a copy of MEMORY.md (Codex, Gemini CLI) see the new one, with only the
    # facts the code still supports (``services.check``)
    refresh_agent_copies,
)


def memory_writer(*extra: AfterApply) -> MemoryWriter:
    """The writer every front end uses: ``AFTER_APPLY``, then ``extra`` hooks."""
    return MemoryWriter(after_apply=(*AFTER_APPLY, *extra))
