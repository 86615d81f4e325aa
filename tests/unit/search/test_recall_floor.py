"""The labelled retrieval set (``tests/bench/recall.py``) must stay above its floor: the goal
is hit@5 >= 0.9 and MRR >= 0.7; never a hit from another project, never a secret; the prompt
hook answers at most 1 % of unrelated prompts and most labelled questions."""

from __future__ import annotations

from pathlib import Path

from bench import recall as bench


def test_retrieval_floor(tmp_path: Path) -> None:
    scores = bench.evaluate(tmp_path)
    assert scores.questions >= 60
    assert scores.hit_at_5 >= 0.9, scores.misses
    assert scores.mrr >= 0.7
    assert scores.foreign == 0
    assert scores.secrets == 0
    # the prompt hook: (almost) never on an unrelated prompt, on most labelled questions
    assert scores.hook_unrelated <= 0.01 * scores.unrelated_pairs
    assert scores.hook_correct >= 0.8 * scores.questions
