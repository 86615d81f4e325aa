"""``TranscriptTail.skip_to_end``: priming a transcript keeps nothing but the position."""

from __future__ import annotations

from pathlib import Path

from reverie.transcripts.tail import TranscriptTail

FIX = Path(__file__).resolve().parents[2] / "fixtures" / "transcripts"
INCREMENTAL = FIX / "claude-code" / "codemie-v2.1.7-incremental-subagents"


def test_skip_then_read_returns_only_what_came_after(tmp_path: Path) -> None:
    turn1 = (INCREMENTAL / "turn-1.jsonl").read_bytes()
    turn2 = (INCREMENTAL / "turn-2.jsonl").read_bytes()
    path = tmp_path / "session.jsonl"
    path.write_bytes(turn1)

    primed = TranscriptTail(path)
    primed.skip_to_end()
    assert primed.read_new() == []
    assert primed.state().offset == len(turn1)
    with path.open("ab") as handle:
        handle.write(turn2[len(turn1):])

    reference = TranscriptTail(path.with_name("copy.jsonl"))
    reference.path.write_bytes(turn1)
    reference.read_new()
    reference.path.write_bytes(turn2)
    expected = reference.read_new()
    got = primed.read_new()
    assert expected and [m.model_dump() for m in got] == [m.model_dump() for m in expected]
    assert primed.session.id == reference.session.id
    assert primed.session.cwd == reference.session.cwd
