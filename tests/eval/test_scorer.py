"""The scorer and the labels: a hand-written ideal memory per project (``gold/``) scores 100%
recall, 100% precision and no wrong claim; each kind of defect is caught."""

from __future__ import annotations

import pytest

from eval.eval_harness import FIXTURES, memory_files, project_names
from eval.eval_score import Score, entries_of, expected_facts, load_labels, score_files


def _score(name: str, files: dict[str, str]) -> Score:
    labels = load_labels(FIXTURES / name / "labels.toml")
    return score_files(files, labels, "memory", expected_facts(labels, "memory"))


@pytest.mark.parametrize("name", project_names())
def test_gold_memory_is_perfect(name: str) -> None:
    score = _score(name, memory_files(FIXTURES / name / "gold"))
    assert score.as_json()["bad_lines"] == []
    assert (score.recall, score.precision, score.wrong, score.leaks) == (1.0, 1.0, 0, 0)
    assert score.hand_kept == score.hand_expected != []
    assert score.long_index_lines == 0
    assert score.chatty == 0


def test_each_defect_counts() -> None:
    gold = memory_files(FIXTURES / "acme-web" / "gold")
    worse = dict(gold)
    worse["log.md"] = ("- Use SWR for data fetching.\n"  # reversed decision stated as current
                       "- `ls -la`\n"  # exploration
                       "- Edit failed: File has not been read yet.\n"  # tool slip
                       "- Something nobody labelled.\n"
                       "- token ghp_R7kQ2mV9xL4pW8nT3bY6cF1hJ5sD0gA2zE7u\n")
    worse["MEMORY.md"] += "- [Log](log.md) - " + "x" * 160 + "\n"
    del worse["working-preferences.md"]  # the lint rule is gone
    score = _score("acme-web", worse)
    labels = {(v.label, v.by) for v in score.verdicts}
    assert ("wrong", "swr-current") in labels
    assert ("noise", "global:exploration") in labels and ("noise", "global:tool-slip") in labels
    assert score.count("other") >= 2  # the unlabelled line and the secret line
    assert score.leaks == 1 and score.long_index_lines == 1
    assert score.missed == ["lint-before-done"]
    assert _score("acme-web", {"x.md": "- Before you say done, run `pnpm lint`, please.\n"}
                  ).chatty == 1
    assert score.precision is not None and score.precision < 1


def test_superseded_history_is_not_a_claim() -> None:
    text = ("- Data fetching uses TanStack Query.\n"
            "  (formerly: Use SWR for data fetching; replaced on 2026-11-12)\n")
    score = _score("acme-web", {"code.md": text})
    assert score.wrong == 0 and "tanstack-current" in score.matched


def test_entries_fold_continuations_and_skip_structure() -> None:
    text = ("---\nname: x\n---\n\n# Heading\n_the template's description_\n\n"
            "- first\n  continued\n  - a sub-bullet\n<!-- hidden -->\n- [T](t.md) - hook\n")
    entries = entries_of(text, "MEMORY.md", notes=True)
    assert [e.text for e in entries] == ["- first continued", "- a sub-bullet",
                                         "- [T](t.md) - hook"]
    assert [e.index for e in entries] == [False, False, True]
    assert entries[0].section == "Heading"
