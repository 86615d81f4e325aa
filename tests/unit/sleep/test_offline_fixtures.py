"""The offline engine on real agent transcripts: concrete facts, not just "something"."""

from __future__ import annotations

from pathlib import Path

from reverie.sleep.rule_based import summarise_offline
from reverie.transcripts.reader import load_transcript

CODEX = (
    "codex/codemie-code/sessions/2026/05/11/"
    "rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.jsonl"
)
SPOTTER = (
    "claude-code/spotter-v2.1.39-subagents/-home-USER-projects-spotter-worktrees-spotter-dov/"
    "4d5611e5-241a-462a-8d15-5122611a9569.jsonl"
)


def test_codex_rollout_yields_commands_fix_and_files(transcripts_dir: Path) -> None:
    title, summary = summarise_offline(load_transcript(transcripts_dir / CODEX), None)
    assert title == "show tools"
    assert "`src/agents/plugins/codemie-code.plugin.ts`" in summary.summary
    assert "4 project command(s) of which 1 failed" in summary.summary
    assert (
        "Fixed: `npm test -- --run src/agents/plugins/__tests__/codemie-code-reasoning"
        in summary.summary
    )
    assert "threshold: 0.9" in summary.summary  # the last reply says what was implemented
    values = {c.key: c.value for c in summary.memory_candidates}
    assert values["cmd-build-build"] == "**Build:** `npm run build`"
    (fix,) = [v for k, v in values.items() if k.startswith("fix-test-")]
    # the error, the change that fixed it (file and essence) and the run that proved it
    assert "fixed by changing `src/agents/plugins/opencode/opencode.plugin.ts` (changes " \
        "`openCodeConfig`); verified by `npm test" in fix
    # exploration (sed, rg, ls, cat) never becomes a candidate
    assert not any(v.startswith(("`sed", "`rg", "`ls", "`cat")) for v in values.values())


def test_claude_session_with_notes_uses_the_notes(transcripts_dir: Path) -> None:
    notes = (
        "# Session Title\n_title_\n\nShared transcript component for spotter-dov\n\n"
        "# Current State\n_state_\n\nDuplicate helpers removed; tests not yet run.\n\n"
        "# Learnings\n_learnings_\n\n- Always run `mix compile --warnings-as-errors` before "
        "committing.\n"
    )
    title, summary = summarise_offline(load_transcript(transcripts_dir / SPOTTER), notes)
    assert title == "Shared transcript component for spotter-dov"
    assert "State (from the session notes): Duplicate helpers removed" in summary.summary
    assert "Asked: Work on bead spotter-dov." in summary.summary
    assert "`lib/spotter_web/live/session_live.ex`" in summary.summary
    values = [c.value for c in summary.memory_candidates]
    # a standing rule the notes' Learnings state is a candidate; files touched are not
    assert any("Always run `mix compile --warnings-as-errors` before committing." in v
               for v in values)
    assert not any("session_live.ex" in v for v in values)
