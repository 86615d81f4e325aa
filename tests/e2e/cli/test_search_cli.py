"""``reverie search`` as a person runs it: a subprocess over real-format sessions."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from reverie.config import ProjectPaths, Settings, claude_project_slug

SESSION = "7c0ffee0-0000-4000-8000-000000000001"


def _transcript(cwd: Path) -> str:
    turns = [("The invoice PDF export crashes on accented customer names",
              "Fixed: the PDF writer encoded names as latin-1; it now embeds a UTF-8 font and "
              "the export test with 'Zoë Müller' passes.")]
    lines = []
    for n, (ask, reply) in enumerate(turns):
        lines.append({"type": "user", "uuid": f"u{n}", "parentUuid": None, "sessionId": SESSION,
                      "cwd": str(cwd), "timestamp": "2026-11-21T08:00:00Z",
                      "isSidechain": False, "userType": "external",
                      "message": {"role": "user", "content": ask}})
        lines.append({"type": "assistant", "uuid": f"a{n}", "parentUuid": f"u{n}",
                      "sessionId": SESSION, "cwd": str(cwd),
                      "timestamp": "2026-11-21T08:00:40Z", "isSidechain": False,
                      "message": {"id": f"m{n}", "role": "assistant", "model": "claude",
                                  "content": [{"type": "text", "text": reply}]}})
    return "".join(json.dumps(line) + "\n" for line in lines)


@pytest.fixture
def project(reverie_env: dict[str, Path], tmp_path: Path) -> Path:
    workspace = (tmp_path / "billing").resolve()
    workspace.mkdir()
    folder = reverie_env["agent_home"] / ".claude" / "projects" / \
        claude_project_slug(str(workspace))
    folder.mkdir(parents=True)
    (folder / f"{SESSION}.jsonl").write_text(_transcript(workspace), "utf-8")
    memory = ProjectPaths(Settings(), workspace).memory_dir
    memory.mkdir(parents=True)
    (memory / "MEMORY.md").write_text("# Memory\n\n- [PDF export](pdf-export.md) - fonts\n")
    (memory / "pdf-export.md").write_text(
        "---\nname: PDF export\ntype: project\nupdated: 2026-11-21\n---\n\n"
        "- The PDF export embeds a UTF-8 font so accented names render. "
        "_(session 7c0ffee0, 2026-11-21)_\n")
    return workspace


def reverie(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "reverie", *args], capture_output=True,
                          text=True, timeout=120, check=False)


def test_json_shape(project: Path) -> None:
    done = reverie("search", "pdf export accented names", "--workspace", str(project), "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert set(data) == {"query", "results", "index"}
    assert data["query"] == "pdf export accented names"
    assert data["index"] == {"sessions": 1, "documents": data["index"]["documents"]}
    assert data["index"]["documents"] > 0
    kinds = {r["kind"] for r in data["results"]}
    assert kinds == {"memory", "session"}
    for result in data["results"]:
        assert {"kind", "session_id", "agent", "date", "title", "text", "source",
                "score"} <= set(result)
        assert result["date"] is None or re.fullmatch(r"\d{4}-\d{2}-\d{2}", result["date"])
        assert isinstance(result["score"], float) and result["text"]
    session = next(r for r in data["results"] if r["kind"] == "session")
    assert session["session_id"] == SESSION and session["agent"] == "claude-code"
    assert session["date"] == "2026-11-21" and session["source"].endswith(f"{SESSION}.jsonl")
    memory = next(r for r in data["results"] if r["kind"] == "memory")
    assert memory["source"] == "pdf-export.md"


def test_filters_and_limit(project: Path) -> None:
    ws = ["--workspace", str(project), "--json"]
    one = json.loads(reverie("search", "pdf export", "--limit", "1", *ws).stdout)
    assert len(one["results"]) == 1
    codex = json.loads(reverie("search", "pdf export", "--agent", "codex", *ws).stdout)
    assert all(r["kind"] != "session" for r in codex["results"])
    later = json.loads(reverie("search", "pdf export", "--since", "2026-12-01", *ws).stdout)
    assert [r for r in later["results"] if r["kind"] == "session"] == []


def test_plain_output_is_readable(project: Path) -> None:
    done = reverie("search", "accented names", "--workspace", str(project))
    assert done.returncode == 0, done.stderr
    assert "2026-11-21" in done.stdout and "claude-code" in done.stdout
    assert "1. " in done.stdout


@pytest.mark.parametrize("args, message", [
    (["--since", "last week"], "YYYY-MM-DD"),
    (["--limit", "0"], "--limit"),
])
def test_bad_arguments_are_one_line(project: Path, args: list[str], message: str) -> None:
    done = reverie("search", "pdf", "--workspace", str(project), *args)
    assert done.returncode != 0
    assert message in done.stderr and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_no_matches_and_hostile_queries(project: Path) -> None:
    for query in ['"', "NEAR(x", "*:*", "!!!", "zebra giraffe"]:
        done = reverie("search", query, "--workspace", str(project), "--json")
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["results"] == []
