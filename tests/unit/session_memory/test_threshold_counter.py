"""``ThresholdCounter`` (incremental) decides exactly as ``evaluate`` (full rescan) does."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from reverie.session_memory.cursor import cursor_at
from reverie.session_memory.source import main_chain
from reverie.session_memory.state import ExtractionState
from reverie.session_memory.thresholds import ThresholdConfig, ThresholdCounter, evaluate
from reverie.transcripts.digest import MessageDigest, digests
from reverie.transcripts.model import Message
from reverie.transcripts.reader import load_transcript
from reverie.transcripts.tokens import context_tokens

FIX = Path(__file__).resolve().parents[2] / "fixtures" / "transcripts"
TRANSCRIPTS = [
    FIX / "claude-code" / "spotter-v2.1.38-tool-heavy" / "tool_heavy.jsonl",
    FIX / "claude-code" / "claude-code-viewer-v1.0.108-inline-sidechains" / "sample-project"
    / "5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl",
    FIX / "codex" / "codemie-code" / "sessions" / "2026" / "05" / "11"
    / "rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.jsonl",
    FIX / "claude-code" / "spotter-v2.1.39-subagents"
    / "-home-USER-projects-spotter-worktrees-spotter-dov"
    / "4d5611e5-241a-462a-8d15-5122611a9569.jsonl",
]
CONFIG = ThresholdConfig(init_tokens=2_000, update_tokens=800, tool_calls=2)


def _reference(messages: list[Message], state: ExtractionState) -> tuple[object, object]:
    main = main_chain(messages)
    decision = evaluate(main, state, CONFIG, context_tokens(main))
    return decision, (cursor_at(main, -1) if main else None)


@pytest.mark.parametrize("path", TRANSCRIPTS, ids=lambda p: p.parent.name)
@pytest.mark.parametrize("seed", [1, 2])
def test_counter_matches_a_full_rescan_append_by_append(path: Path, seed: int) -> None:
    everything = load_transcript(path).messages
    assert len(everything) > 5
    rng = random.Random(seed)
    counter = ThresholdCounter()
    state = ExtractionState()
    reference_state = ExtractionState()
    grown: list[Message] = []
    digested: list[MessageDigest] = []  # one list, extended in place like the server's
    decisions = 0
    while len(grown) < len(everything):
        piece = everything[len(grown) : len(grown) + rng.randint(1, 7)]
        grown.extend(piece)
        digested.extend(digests(piece))
        got, got_cursor = counter.evaluate(digested, state, CONFIG)
        want, want_cursor = _reference(grown, reference_state)
        assert (got, got_cursor) == (want, want_cursor)
        if got.due:
            decisions += 1
            counter.mark_due(state, got_cursor)
            reference_state.initialized = True
            reference_state.last_memory_cursor = want_cursor  # type: ignore[assignment]
            if rng.random() < 0.5:  # an extraction ran: tokens count from here
                tokens = context_tokens(main_chain(grown))
                state.tokens_at_last_extraction = tokens
                reference_state.tokens_at_last_extraction = tokens
    assert decisions > 0  # the thresholds were crossed at least once


def test_counter_rescans_a_different_list_and_a_moved_cursor() -> None:
    path = TRANSCRIPTS[0]
    messages = load_transcript(path).messages
    counter = ThresholdCounter()
    state = ExtractionState()
    counter.evaluate(digests(messages[:20]), state, CONFIG)
    # a re-read conversation (new objects, a rewrite that dropped messages) is rescanned
    reread = [m.model_copy() for m in messages[:10]]
    got = counter.evaluate(digests(reread), state, CONFIG)
    assert got == _reference(reread, ExtractionState())
    # a cursor set elsewhere (e.g. loaded from disk) is honoured
    state.last_memory_cursor = cursor_at(main_chain(reread), 4)
    reference = ExtractionState(last_memory_cursor=state.last_memory_cursor)
    assert counter.evaluate(digests(reread), state, CONFIG) == _reference(reread, reference)
