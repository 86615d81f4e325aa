"""A dream over nothing new writes nothing, and a dream never re-lays out a file it only reads.

- The ``(aging: ...)`` mark belongs to the check (``anchors.retire``): the offline engine carries
  it through as it is, so a second dream over the same sessions does not drop it for the check
  to put back (a rewrite, a bumped ``updated``, a run in History, agent copies rewritten).
- A person's topic file keeps its lines byte for byte and in order when a fact joins it, its own
  title (no heading added, its ``name`` taken from its heading) and its own description.
- A topic file the run adds nothing to is left alone, whoever wrote it and whatever its layout.

Real dreams (the bundled real sample sessions) on a real git workspace, in temp dirs.
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "eval"))

from staleness_set import GitWorkspace

from reverie.config import ProjectPaths, Settings
from reverie.dream.models import DreamResult
from reverie.dream.runner import DreamRequest, DreamRunner
from reverie.memory.history import MemoryHistory
from reverie.memory.store import read_topic
from reverie.samples import install_samples

AGING_TOPIC = """---
name: Tools
description: how to run things
type: project
---

# Tools

- Run the checks with `zzq-runner check --all`. _(session abcdef12, 2026-01-02)_
"""
# what a person wrote: a title, prose, bullets, a closing line; named like the area a command
# the sample sessions ran (``mix phx.server``) goes to
PERSON_BODY = """# Scripts

How we run things in this repo. Prefer the Makefile targets over raw commands.

- `make dev` starts everything.
- Never run migrations by hand.
  (ask in #infra first)

Ask Dana if a target is missing.
"""
# facts with provenance but no title line (another tool's export, or an older layout)
NO_HEADING = """---
name: Area notes
description: where handlers live
type: project
---

- Keep functions short. _(session abcd0001, 2026-11-20)_
- Handlers validate their input first. _(session abcd0002, 2026-11-21)_
"""
NEW_FACT = re.compile(
    r"^- \*\*Run:\*\* `mix phx\.server` _\(session [0-9a-f]{8}, \d{4}-\d{2}-\d{2}\)_$")


def _setup(reverie_env: dict[str, Path], tmp_path: Path) -> tuple[Path, Path]:
    ws = GitWorkspace(tmp_path / "repo")
    ws.write("package.json", json.dumps({"scripts": {}}))
    ws.commit("init")
    install_samples(reverie_env["agent_home"], ws.root)
    memory = ProjectPaths(Settings(), ws.root).memory_dir
    memory.mkdir(parents=True)
    return ws.root, memory


async def _run(workspace: Path) -> DreamResult:
    result = await DreamRunner(Settings()).run(DreamRequest(workspace=workspace, manual=True))
    assert result.error is None and result.ran, result
    return result


def _bytes(memory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(memory.glob("*.md"))}


def _sessions_read_again(agent_home: Path) -> None:
    """The same transcripts, unchanged, newer than the last dream (so it reads them again)."""
    time.sleep(1.1)
    for path in agent_home.rglob("*"):
        if path.is_file():
            os.utime(path)


async def test_a_second_dream_over_the_same_sessions_changes_no_byte(
        reverie_env: dict[str, Path], tmp_path: Path) -> None:
    workspace, memory = _setup(reverie_env, tmp_path)
    (memory / "tools.md").write_text(AGING_TOPIC)
    (memory / "MEMORY.md").write_text("# Memory\n\n- [Tools](tools.md) - how to run things\n")
    await _run(workspace)
    text = (memory / "tools.md").read_text()
    assert "  (aging: not confirmed since 2026-01-02)" in text, text  # the check marked it
    # the memory as a later day finds it: written on an earlier day
    for path in memory.glob("*.md"):
        path.write_text(re.sub(r"(?m)^updated: .*$", "updated: '2026-11-01'", path.read_text()))
    before, runs = _bytes(memory), len(MemoryHistory(memory).runs())
    _sessions_read_again(reverie_env["agent_home"])
    again = await _run(workspace)
    assert again.sessions_reviewed == 4  # the same sessions, read again
    assert again.files_touched == []
    assert _bytes(memory) == before
    assert len(MemoryHistory(memory).runs()) == runs  # an empty change records no run


async def test_a_persons_topic_keeps_its_lines_title_and_description(
        reverie_env: dict[str, Path], tmp_path: Path) -> None:
    workspace, memory = _setup(reverie_env, tmp_path)
    person = "---\nname: Scripts\ndescription: make targets and who to ask\n---\n\n" + PERSON_BODY
    (memory / "package-manager-and-scripts.md").write_text(person)
    (memory / "bare.md").write_text(PERSON_BODY)  # no front matter at all: its title names it
    (memory / "MEMORY.md").write_text(
        "# Memory\n\n- [Scripts](package-manager-and-scripts.md) - make targets\n"
        "- [Scripts too](bare.md) - the same, bare\n")
    await _run(workspace)
    topic = read_topic(memory / "package-manager-and-scripts.md")
    lines = topic.body.splitlines()
    added = [n for n, line in enumerate(lines) if NEW_FACT.match(line)]
    assert len(added) == 1, topic.body  # the dream added its one fact here
    end = added[0] + 1
    while end < len(lines) and lines[end].startswith("  "):
        end += 1  # and its own lines under it (the check's aging mark)
    assert lines[:added[0]] + lines[end:] == PERSON_BODY.rstrip("\n").splitlines()
    assert [line for line in lines if line.startswith("# ")] == ["# Scripts"]
    assert topic.meta.name == "Scripts"
    assert topic.meta.description == "make targets and who to ask"
    # a file the run added nothing to is not rewritten at all
    assert (memory / "bare.md").read_text() == PERSON_BODY


async def test_a_topic_without_a_title_line_is_left_as_it_is(
        reverie_env: dict[str, Path], tmp_path: Path) -> None:
    workspace, memory = _setup(reverie_env, tmp_path)
    (memory / "area-notes.md").write_text(NO_HEADING)
    (memory / "MEMORY.md").write_text(
        "# Memory\n\n- [Area notes](area-notes.md) - where handlers live\n")
    await _run(workspace)
    body = (memory / "area-notes.md").read_text().split("---\n", 2)[2]
    assert body == NO_HEADING.split("---\n", 2)[2]
    text = (memory / "area-notes.md").read_text()
    assert "updated:" not in text and "sources:" not in text, text
