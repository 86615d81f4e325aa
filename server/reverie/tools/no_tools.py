"""The structured no-tools form, applied: a job's file changes written through its gate.

Many local models (or servers started without tool templates) cannot call tools, and the
coding-agent CLIs run with their own tools switched off. Such a model is asked for the result
itself: the whole new notes (``NotesRewrite``) or the memory changes (``MemoryChanges``). The
reply is validated with pydantic (one repair round, none when the reply was cut off by the
output budget) and applied through the job's own ``PathGate`` with the ``write_file`` tool, so
the staging copy, redaction, validity guard and transaction are exactly those of tool writes.
Applying is all-or-nothing at the gate: every path is checked before the first write, and one
path outside the allowed file or directory rejects the whole reply.

The switch happens per job when the endpoint refuses tools (``LLMToolsUnsupportedError``), when
a reply writes a tool call out as text (``tools.loop.looks_like_text_tool_call``), or when
configured (``REVERIE_TOOL_CALLING=off``; the CLI providers always): ``llm.capabilities
.choose_mode``. Asking for and validating the JSON is ``llm.structured.complete_json``; the
jobs' result schemas live with the jobs (``NotesRewrite`` in ``session_memory.llm_writer``,
``MemoryChanges`` in ``dream.no_tools``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from pydantic import BaseModel, ConfigDict, Field, model_validator

from reverie.tools.fs import execute_tool
from reverie.tools.gate import Denial, PathDenied, PathGate


class FileChange(BaseModel):
    """One memory file: its new full content, or ``delete``."""

    model_config = ConfigDict(extra="ignore")

    path: str = Field(min_length=1, description="file path inside the memory directory")
    content: str | None = Field(default=None, description="the complete new file content")
    delete: bool = False

    @model_validator(mode="after")
    def _content_or_delete(self) -> FileChange:
        if self.content is None and not self.delete:
            raise ValueError("a change needs content (or delete: true)")
        return self


@dataclass
class Applied:
    """What applying a no-tools reply did (display paths), or why nothing was applied."""

    written: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    denials: list[Denial] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.denials and not self.errors


def apply_changes(gate: PathGate, changes: Sequence[FileChange]) -> Applied:
    """Write the changes through ``gate`` (blocking: call via a thread). Every path is checked
    first; a denied path or a duplicate applies nothing. A write that fails half way leaves the
    earlier ones in the staging copy: callers abort their transaction when ``ok`` is False."""
    result = Applied()
    seen: set[str] = set()
    for change in changes:
        try:
            physical = str(gate.check_write(change.path))
        except PathDenied as denied:
            result.denials.append(Denial(tool="write_file", path=change.path,
                                         reason=denied.reason))
            continue
        if physical in seen:
            result.errors.append(f"{change.path} appears twice")
        seen.add(physical)
    if not result.ok:
        return result
    for change in changes:
        if change.delete:
            path = gate.check_write(change.path)
            try:
                path.unlink(missing_ok=True)
            except OSError as exc:
                result.errors.append(f"cannot delete {change.path}: {exc.strerror}")
                return result
            result.deleted.append(gate.display(path))
            continue
        outcome = execute_tool(gate, "write_file",
                               {"file_path": change.path, "content": change.content or ""})
        if outcome.denial is not None:
            result.denials.append(outcome.denial)
            return result
        if outcome.is_error:
            result.errors.append(outcome.content)
            return result
        result.written.extend(outcome.written)
    return result
