"""Per-entry curation: forget, pin, edit, move — each a recorded, undoable run that keeps the
person's text byte for byte; pins survive dreams."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from reverie.errors import UserError
from reverie.memory.history import MemoryHistory
from reverie.memory.pins import PIN_MARK
from reverie.memory.store import check_index, visible_files
from reverie.memory.undo import undo_run
from reverie.memory.write import MemoryWriter
from reverie.services.curation import curate, find_entry, list_entries

TOPIC = "---\nname: {n}\ndescription: about {n}\ntype: project\n---\n\n# {n}\n\n- {fact}\n"
INDEX = ("# Memory\n\n- [Build](build.md) - how to build\n"
         "- [Testing](testing.md) - how to run the tests\n")


def _state(memory_dir: Path) -> dict[str, bytes]:
    return {n: (memory_dir / n).read_bytes() for n in visible_files(memory_dir)}


@pytest.fixture
def mem(tmp_path: Path) -> Path:
    memory_dir = tmp_path / "mem"
    memory_dir.mkdir()
    (memory_dir / "MEMORY.md").write_text(INDEX)
    build = TOPIC.format(n="Build", fact="make build; never make all")
    (memory_dir / "build.md").write_text(build)
    testing = TOPIC.format(n="Testing", fact="pytest -q runs the suite")
    (memory_dir / "testing.md").write_text(testing)
    return memory_dir


def test_find_entry_by_address_and_text(mem: Path) -> None:
    assert find_entry(mem, "MEMORY.md:3").text.startswith("- [Build]")
    assert find_entry(mem, "NEVER MAKE ALL").file == "build.md"
    with pytest.raises(UserError, match="2 entries contain"):
        find_entry(mem, "how to")
    with pytest.raises(UserError, match="no entry"):
        find_entry(mem, "gradle")
    with pytest.raises(UserError, match="not an entry"):
        find_entry(mem, "MEMORY.md:1")  # the heading
    with pytest.raises(UserError, match="changed since"):
        find_entry(mem, "MEMORY.md:3", expect="- something else")
    # front matter lines are not entries
    assert all(not e.text.startswith(("name:", "---")) for e in list_entries(mem))


async def test_forget_topic_line_is_a_run_and_undo_restores_bytes(mem: Path) -> None:
    before = _state(mem)
    result = await curate(mem, "forget", "never make all")
    assert "make build" not in (mem / "build.md").read_text()
    assert result.run_id and result.files == ["build.md"]
    runs = MemoryHistory(mem).runs()
    assert runs[0].source == "curate" and runs[0].summary.startswith("forget build.md:9")
    await undo_run(MemoryWriter(), mem, result.run_id)
    assert _state(mem) == before


async def test_forget_index_line_takes_its_topic_file(mem: Path) -> None:
    result = await curate(mem, "forget", "MEMORY.md:4")
    assert result.removed_topic == "testing.md"
    assert not (mem / "testing.md").exists()
    assert "Testing" not in (mem / "MEMORY.md").read_text()
    assert check_index(mem) == []  # nothing left dangling for a repair to bring back


async def test_edit_keeps_the_persons_text_byte_for_byte(mem: Path) -> None:
    raw = (mem / "build.md").read_bytes().replace(b"\n", b"\r\n")  # CRLF file
    (mem / "build.md").write_bytes(raw)
    text = "- make build  (two spaces, `ticks`, *stars*)   "
    await curate(mem, "edit", "build.md:9", new_text=text)
    after = (mem / "build.md").read_bytes()
    assert after == raw.replace(b"- make build; never make all", text.encode())


async def test_edit_is_redacted_and_refuses_line_breaks(mem: Path) -> None:
    key = "sk-ant-api03-" + "a" * 90
    await curate(mem, "edit", "build.md:9", new_text=f"- key is {key}")
    assert key not in (mem / "build.md").read_text()
    with pytest.raises(UserError, match="line break"):
        await curate(mem, "edit", "build.md:9", new_text="- a\n- b")


async def test_edit_that_breaks_the_index_is_refused(mem: Path) -> None:
    before = _state(mem)
    with pytest.raises(UserError, match="break the memory"):
        await curate(mem, "edit", "MEMORY.md:3", new_text="- [Build](gone.md) - how to build")
    assert _state(mem) == before
    assert MemoryHistory(mem).runs() == []


async def test_move_to_another_topic(mem: Path) -> None:
    await curate(mem, "move", "never make all", to_file="testing.md")
    assert "never make all" in (mem / "testing.md").read_text()
    assert "never make all" not in (mem / "build.md").read_text()
    with pytest.raises(UserError, match="index line cannot move"):
        await curate(mem, "move", "MEMORY.md:3", to_file="testing.md")


async def test_pin_survives_a_dream_that_drops_and_rewrites(mem: Path) -> None:
    await curate(mem, "pin", "never make all")
    await curate(mem, "pin", "MEMORY.md:3")
    pinned_topic = (mem / "build.md").read_text()
    assert f"never make all {PIN_MARK}" in pinned_topic
    # a dream rewrites the index line, drops the topic file's pinned line and the topic file
    session = MemoryWriter().open(mem, source="manual", sessions=["s-1"])
    async with session as staged:
        (staged.path / "MEMORY.md").write_text(
            "# Memory\n\n- [Build](build.md) - shorter\n- [Testing](testing.md) - tests\n")
        (staged.path / "build.md").unlink()
        (staged.path / "testing.md").write_text(
            TOPIC.format(n="Testing", fact="pytest -q runs the suite") + "- new fact\n")
    index = (mem / "MEMORY.md").read_text()
    assert f"- [Build](build.md) - how to build {PIN_MARK}" in index
    assert "shorter" not in index
    assert (mem / "build.md").exists() and "never make all" in (mem / "build.md").read_text()
    assert "new fact" in (mem / "testing.md").read_text()  # the rest of the dream landed
    # the marker does not count against the entry length rule
    assert [p.code for p in check_index(mem)] == []


async def test_unpin_and_pin_errors(mem: Path) -> None:
    with pytest.raises(UserError, match="not pinned"):
        await curate(mem, "unpin", "MEMORY.md:3")
    await curate(mem, "pin", "MEMORY.md:3")
    with pytest.raises(UserError, match="already pinned"):
        await curate(mem, "pin", "MEMORY.md:3")
    await curate(mem, "unpin", "MEMORY.md:3")
    assert (mem / "MEMORY.md").read_text() == INDEX


def _cli(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "REVERIE_DATA_DIR": str(tmp_path / "data"),
           "REVERIE_MEMORY_DIR": str(tmp_path / "mem")}
    return subprocess.run([sys.executable, "-m", "reverie", *args, "--workspace", str(tmp_path)],
                          capture_output=True, text=True, env=env, timeout=60)


def test_cli_forget_and_pin_json(mem: Path, tmp_path: Path) -> None:
    done = _cli(tmp_path, "pin", "pytest -q", "--json")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["action"] == "pin" and out["entry"]["file"] == "testing.md" and out["run_id"]
    done = _cli(tmp_path, "forget", "how to", "--json")
    assert done.returncode == 1 and "2 entries contain" in done.stderr and done.stdout == ""
    done = _cli(tmp_path, "forget", "MEMORY.md:3")
    assert done.returncode == 0 and done.stdout.startswith("Forgot MEMORY.md:3")
    assert not (mem / "build.md").exists()
