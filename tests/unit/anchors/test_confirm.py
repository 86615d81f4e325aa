"""Re-confirmation (issue 28): a fact a later session confirms (its command ran again
successfully, its file was edited again) gets its ``verified`` date refreshed and is not aging,
even where the check cannot verify it here; a fact the check established stale stays stale."""

from __future__ import annotations

import json
import sys
from datetime import UTC, date, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "eval"))

from staleness_set import GitWorkspace

from reverie.anchors.confirm import Confirmations
from reverie.anchors.memory import check_memory, recorded_anchors
from reverie.anchors.model import Anchor
from reverie.anchors.retire import maintain_memory
from reverie.config import ProjectPaths, Settings
from reverie.dream.runner import DreamRequest, DreamRunner
from reverie.memory.store import read_topic
from reverie.samples import install_samples

TODAY = date(2026, 12, 1)
TODAY_DT = datetime(2026, 12, 1, tzinfo=UTC)
TOPIC = """---
name: Tools
description: how to run things
type: project
---

# Tools

- Run the checks with `zzq-runner check --all`. _(session abcdef12, 2026-01-02)_
- Money helpers live in src/lib/money.ts. _(session abcdef12, 2026-01-02)_
"""


def _workspace(tmp_path: Path) -> GitWorkspace:
    ws = GitWorkspace(tmp_path / "repo")
    ws.write("package.json", json.dumps({"scripts": {}}))
    ws.write("src/lib/money.ts", "export const cents = 1\n")
    ws.commit("init")
    return ws


def _verified(memory: Path, name: str, text: str) -> date | None:
    facts = check_memory(memory, memory, TODAY).topics  # positions and keys only
    topic = next(t for t in facts if t.name == name)
    key = next(f.key for f in topic.facts if f.text == text)
    recorded = recorded_anchors(read_topic(memory / name).meta)[key]
    return recorded.verified


def test_day_for_matches_a_command_run_and_a_file_edited() -> None:
    seen = Confirmations()
    seen.add_command("zzq-runner  check --all -q", date(2026, 11, 1))
    seen.add_command("zzq-runner check --all", date(2026, 11, 20))
    seen.add_path("./docs/deploy.md", date(2026, 11, 5))
    assert seen.day_for("Run `zzq-runner check --all`.", []) == date(2026, 11, 20)
    assert seen.day_for("Run `zzq-runner check --fast`.", []) is None
    assert seen.day_for("Deploy notes", [Anchor(kind="path", value="docs/deploy.md")]) == \
        date(2026, 11, 5)
    assert seen.day_for("`helper`", [Anchor(kind="symbol", value="helper",
                                            where="docs/deploy.md")]) == date(2026, 11, 5)
    assert not Confirmations()


def test_a_confirmed_fact_is_verified_on_that_day_and_not_aging(tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    plain, confirmed = tmp_path / "plain", tmp_path / "confirmed"
    for memory in (plain, confirmed):
        memory.mkdir()
        (memory / "tools.md").write_text(TOPIC)
    maintain_memory(plain, ws.root, TODAY, aging_days=90)
    assert "(aging: not confirmed since 2026-01-02)" in (plain / "tools.md").read_text()

    seen = Confirmations(commands={"zzq-runner check --all": date(2026, 11, 28)})
    maintain_memory(confirmed, ws.root, TODAY, aging_days=90, confirmations=seen)
    text = (confirmed / "tools.md").read_text()
    assert "aging" not in text.split("---", 2)[2], text
    assert _verified(confirmed, "tools.md", "Run the checks with `zzq-runner check --all`.") \
        == date(2026, 11, 28)
    # the next check (no session this time) still counts it as confirmed lately
    again = check_memory(confirmed, ws.root, TODAY, aging_days=90)
    fact = next(f for f in again.facts if "zzq-runner" in f.fact.text)
    assert fact.status == "unverifiable" and not fact.aging


def test_a_session_never_rescues_a_fact_the_check_found_stale(tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    ws.move("src/lib/money.ts", "src/lib/currency.ts")
    ws.commit("rename")
    memory = tmp_path / "memory"
    memory.mkdir()
    (memory / "tools.md").write_text(TOPIC)
    seen = Confirmations(paths={"src/lib/money.ts": date(2026, 11, 30)})
    result = maintain_memory(memory, ws.root, TODAY, confirmations=seen)
    assert [r.text for r in result.retired] == ["Money helpers live in src/lib/money.ts."]


async def test_an_offline_dream_confirms_a_command_its_sessions_ran(
        reverie_env: dict[str, Path], tmp_path: Path) -> None:
    """The sample session runs ``mix phx.server`` successfully: a dream over it refreshes the
    fact that names that command (``mix`` is not installed here: the check alone could only
    say unverifiable)."""
    ws = _workspace(tmp_path)
    installed = install_samples(reverie_env["agent_home"], ws.root)
    memory = ProjectPaths(Settings(), ws.root).memory_dir
    memory.mkdir(parents=True)
    fact = "Start the dev server with `mix phx.server`."
    (memory / "tools.md").write_text(TOPIC.replace(
        "- Money helpers", f"- {fact} _(session abcdef12, 2026-01-02)_\n- Money helpers"))
    (memory / "MEMORY.md").write_text("# Memory\n\n- [Tools](tools.md) - how to run things\n")
    result = await DreamRunner(Settings()).run(DreamRequest(workspace=ws.root, manual=True))
    assert result.error is None and result.ran
    heavy = next(p for p in installed if b"mix phx.server" in p.read_bytes())
    from reverie.curation.sessions import SessionSource, analyse_source
    from reverie.dream.rule_based import _anchor

    analysis = analyse_source(SessionSource(session_id="x", path=heavy, cwd=None,
                                            updated_at=TODAY_DT, notes_path=None))
    day = _anchor(analysis, TODAY_DT).date()
    verified = _verified(memory, "tools.md", fact)
    assert verified is not None and verified >= day
    # the other fact, unconfirmed and unverifiable, keeps no such date
    assert _verified(memory, "tools.md", "Run the checks with `zzq-runner check --all`.") \
        is None
