"""Which run "Undo Last Dream" and "Redo" act on: never an undo by accident."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from reverie.memory.history import HistoryError, RunRecord
from reverie.memory.undo import undo_target, undone_runs


def run(run_id: str, source: str, undoes: str | None = None) -> RunRecord:
    return RunRecord(run_id=run_id, at=datetime(2026, 1, 1, tzinfo=UTC), source=source,  # type: ignore[arg-type]
                     undoes=undoes)


def test_the_latest_dream_not_an_undo_nor_an_edit() -> None:
    runs = [run("e", "edit"), run("u", "undo", "d2"), run("d2", "auto"), run("d1", "manual")]
    assert undone_runs(runs) == {"d2"}
    assert undo_target(runs).run_id == "d1"  # d2 is already undone, u is an undo
    assert undo_target(runs, redo=True).run_id == "u"


def test_a_redo_puts_the_run_back_in_effect() -> None:
    runs = [run("r", "undo", "u"), run("u", "undo", "d"), run("d", "sleep")]
    assert undone_runs(runs) == {"u"}
    assert undo_target(runs).run_id == "d"
    with pytest.raises(HistoryError, match="nothing to redo"):
        undo_target(runs, redo=True)


def test_nothing_to_undo_says_so() -> None:
    with pytest.raises(HistoryError, match="nothing to undo"):
        undo_target([run("u", "undo", "d"), run("d", "manual")])
    with pytest.raises(HistoryError, match="nothing to undo"):
        undo_target([])
