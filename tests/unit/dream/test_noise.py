"""The never-keep classes that hold for every memory line, a model's included."""

from __future__ import annotations

from datetime import date

import pytest

from reverie.curation.noise import noise_class
from reverie.sleep.models import MemoryEntry
from reverie.sleep.rem import without_noise


@pytest.mark.parametrize("line, expected", [
    ("- `ls -la` lists the project root", "exploration"),
    ("- `tail -5 /tmp/x/tasks/1.output`", "exploration"),
    ("- `cat .env` _(session abc, 2026-11-02)_", "exploration"),
    ("- Edit failed: File has not been read yet. Read it first", "tool-slip"),
    ("- InputValidationError: prompt is missing", "tool-slip"),
    ("- <command-name>/clear</command-name>", "wrapper"),
    ("- **Test:** `pnpm test`", None),
    ("- Run `pnpm lint` before reporting something as done", None),
    ("- `grep -rn TODO src` is how the team tracks open work items before each release, see "
     "CONTRIBUTING.md", None),
    ("- Use pnpm, never npm or yarn (lockfile pnpm-lock.yaml)", None),
])
def test_noise_classes(line: str, expected: str | None) -> None:
    assert noise_class(line) == expected


def _entry(key: str, content: str) -> MemoryEntry:
    return MemoryEntry(key=key, title=key.title(), description="d", type="project",
                       content=content, recorded=date(2026, 11, 2))


def test_rem_drops_noise_the_model_wrote_and_keeps_what_it_rewrote_into_noise() -> None:
    before = [_entry("build", "Build with `pnpm build`."), _entry("old", "`ls` shows files")]
    after = [_entry("build", "`ls -la` lists the project root"),  # rewritten into noise
             _entry("slip", "Edit failed: File has not been read yet."),  # new noise
             _entry("old", "`ls` shows files"),  # unchanged: a person's or an older line stays
             _entry("pm", "Use pnpm, never npm.")]
    kept = without_noise(after, before)
    assert [(e.key, e.content) for e in kept] == [("build", "Build with `pnpm build`."),
                                                  ("old", "`ls` shows files"),
                                                  ("pm", "Use pnpm, never npm.")]
