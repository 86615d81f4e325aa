"""Review before apply: a dream staged for review changes nothing an agent loads until it is
accepted (all or some files), is refused when the live file moved meanwhile, and discards
cleanly; the CLI's dream --review / apply / discard."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reverie.cli import main
from reverie.config import ProjectPaths, Settings
from reverie.errors import UserError
from reverie.memory.history import MemoryHistory
from reverie.memory.store import visible_files
from reverie.samples import install_samples
from reverie.services.review import (
    apply_review,
    discard_review,
    list_reviews,
    stage_dream,
    wants_review,
)


@pytest.fixture
def workspace(reverie_env: dict[str, Path], tmp_path: Path) -> Path:
    ws = tmp_path / "workspace"
    ws.mkdir()
    install_samples(reverie_env["agent_home"], ws)
    return ws


def _state(memory_dir: Path) -> dict[str, bytes]:
    return {n: (memory_dir / n).read_bytes() for n in visible_files(memory_dir)}


def test_wants_review_defaults() -> None:
    assert not wants_review(Settings(provider="offline"))
    assert wants_review(Settings(provider="openai"))
    assert wants_review(Settings(provider="offline", dream_review="always"))
    assert not wants_review(Settings(provider="anthropic", dream_review="never"))


async def test_staged_dream_is_invisible_until_accepted(workspace: Path) -> None:
    settings = Settings()
    memory = ProjectPaths(settings, workspace).memory_dir
    review, _ = await stage_dream(settings, workspace, manual=True)
    assert review is not None and review.changes
    assert _state(memory) == {}  # nothing an agent loads changed
    assert not (memory / ".consolidate-lock").exists()  # nor the gates
    staged = list_reviews(memory, with_contents=True)[0]
    assert staged.review_id == review.review_id
    index = next(c for c in staged.changes if c.path == "MEMORY.md")
    assert index.action == "add" and index.before is None and index.after
    assert all(c.reason and c.sessions for c in staged.changes)

    outcome = await apply_review(memory, review.review_id[:10])
    assert sorted(outcome.accepted) == sorted(c.path for c in review.changes)
    assert (memory / "MEMORY.md").read_text() == index.after
    runs = MemoryHistory(memory).runs()
    assert runs[0].source == "manual" and runs[0].summary.startswith("reviewed:")
    assert list_reviews(memory) == []


async def test_accept_some_and_refuse_a_file_that_moved(workspace: Path) -> None:
    settings = Settings()
    memory = ProjectPaths(settings, workspace).memory_dir
    review, _ = await stage_dream(settings, workspace, manual=True)
    assert review is not None
    topics = [c.path for c in review.changes if c.path != "MEMORY.md"]
    assert topics
    # a person writes the index meanwhile: accepting the index is refused, memory untouched
    memory.mkdir(parents=True, exist_ok=True)
    (memory / "MEMORY.md").write_text("# Memory\n\n- my own note\n")
    before = _state(memory)
    with pytest.raises(UserError, match="changed since"):
        await apply_review(memory, review.review_id, ["MEMORY.md"])
    assert _state(memory) == before
    with pytest.raises(UserError, match="not in the change set"):
        await apply_review(memory, review.review_id, ["nope.md"])
    outcome = await apply_review(memory, review.review_id, [topics[0]])
    assert outcome.accepted == [topics[0]] and "MEMORY.md" in outcome.discarded
    assert (memory / topics[0]).exists()
    assert "- my own note" in (memory / "MEMORY.md").read_text()  # the person's line stays


async def test_discard_leaves_memory_as_it_was(workspace: Path) -> None:
    settings = Settings()
    memory = ProjectPaths(settings, workspace).memory_dir
    review, _ = await stage_dream(settings, workspace, manual=True)
    assert review is not None
    outcome = discard_review(memory, review.review_id)
    assert outcome.discarded and _state(memory) == {}
    assert list_reviews(memory) == []
    with pytest.raises(UserError, match="no staged change set"):
        discard_review(memory, review.review_id)


def test_cli_dream_review_apply_discard(workspace: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    ws = str(workspace)
    assert main(["dream", "--workspace", ws, "--manual", "--review"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("staged change set ") and "reason:" in out and "+++ b/MEMORY.md" in out
    assert main(["dream", "--workspace", ws, "--manual", "--review", "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["ran"] is True and payload["review"]["changes"]
    review_id = payload["review"]["review_id"]
    memory = Path(payload["review"]["memory_dir"])
    assert not (memory / "MEMORY.md").exists()
    assert main(["apply", review_id, "--workspace", ws, "--json"]) == 0
    applied = json.loads(capsys.readouterr().out)
    assert applied["run_id"] and "MEMORY.md" in applied["accepted"]
    assert (memory / "MEMORY.md").exists()
    first = out.split()[3]  # the first staged set is still pending: discard it
    assert main(["discard", first, "--workspace", ws]) == 0
    assert "Discarded" in capsys.readouterr().out
    assert main(["apply", first, "--workspace", ws]) == 1


def test_each_change_says_what_it_does_to_its_file() -> None:
    from reverie.services.review import change_reason

    front = "---\nname: T\n---\n\n# T\n\n"
    assert change_reason(None, front + "- a\n- b\n", "dream") == "new file with 2 entries (dream)"
    assert change_reason(front + "- a\n", None, "s") == "file removed (s)"
    assert change_reason(front + "- a\n- b\n", front + "- a\n- c\n- d\n", "s") == \
        "adds 2 entries, drops 1 (s)"
    assert change_reason(front + "- a\n", front.replace("T", "U") + "- a\n", "s") == \
        "same entries; front matter or wording only (s)"
