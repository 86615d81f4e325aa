"""The real-session rubric (``real_eval.py``) may not regress: grades per notes file and per
memory, computed from the hand labels of public sessions (tests/fixtures/real)."""

from __future__ import annotations

import pytest

from eval.real_eval import grade_all, means

# one run of the real set: one xdist worker
pytestmark = pytest.mark.xdist_group("eval-real-floors")

#: (min notes mean, min single notes grade, min memory mean, max wrong claims)
#: 2026-12-01, 15 Aider sessions of the aider repository: before issue 26's fixes the engine
#: scored notes 2.30 (min 1.50), memory 1.50, 16 wrong claims; after: 4.93 (min 4.00), 3.50, 0.
#: Then 18 sessions (a011, a012, a078 added: two errors in one check, /undo of ten commits, a
#: pasted traceback, three chat corrections): 4.99 (min 4.75), 3.50, 0.
#: Memory's 3.50: the pre-commit hooks (isort, black, flake8) are found; `pytest` is not kept
#: because it never passed in these sessions (precision first). Raise, never lower.
FLOORS = (4.9, 4.5, 3.5, 0)


def test_real_sessions_meet_the_floors() -> None:
    grades = grade_all()
    notes, memory = means(grades)
    assert not [e for g in grades for e in g.errors]
    assert sum(len(g.notes) for g in grades) >= 18
    assert notes is not None and notes >= FLOORS[0], notes
    assert min(v for g in grades for v in g.notes.values()) >= FLOORS[1]
    assert memory is not None and memory >= FLOORS[2], memory
    assert sum(g.wrong for g in grades) <= FLOORS[3]
