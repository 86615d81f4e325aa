"""Kilo Code sessions in the search index: each session of the workspace indexed from the shared
database, indexed again when (and only when) that session's update time moves, forgotten when
it is deleted; another project's sessions in the same file never."""

from __future__ import annotations

from pathlib import Path

from reverie.config import ProjectPaths, Settings
from reverie.search.update import refresh
from reverie.services.search import search_project
from support.kilo import KiloDb


def test_kilo_sessions_are_indexed_per_session(reverie_env: dict[str, Path],
                                              paths: ProjectPaths) -> None:
    db = KiloDb(reverie_env["agent_home"] / ".local" / "share" / "kilo" / "kilo.db")
    ws = str(paths.workspace)
    ours = db.session(ws, title="Coupon crash")
    ask = db.user(ours, "Why does the coupon checkout crash on Safari?")
    reply = db.assistant(ours, ask, ws)
    db.part(ours, reply, {"type": "text", "text": "The date parser needs ISO strings; "
                                                  "switched to Date.parse with a fallback."})
    theirs = db.session("/elsewhere/payroll", title="Payroll export")
    db.user(theirs, "Why does the payroll export crash?")

    first = refresh(paths)
    assert first.sessions_indexed == 1 and not first.skipped
    assert search_project(Settings(), paths.workspace, "coupon Safari").results
    assert search_project(Settings(), paths.workspace, "payroll").results == []
    again = refresh(paths)
    assert (again.sessions_indexed, again.sessions_grown) == (0, 0)

    db.user(theirs, "another project's change")  # the file changed, our session did not
    assert refresh(paths, discover=False).sessions_indexed == 0
    db.user(ours, "Now the voucher form freezes on Firefox")
    moved = refresh(paths, discover=False)
    assert moved.sessions_indexed == 1
    assert search_project(Settings(), paths.workspace, "voucher Firefox").results

    db.conn.execute("DELETE FROM session WHERE id = ?", (ours,))
    gone = refresh(paths, discover=False)
    assert gone.sessions_removed == 1
    assert search_project(Settings(), paths.workspace, "coupon Safari").results == []
