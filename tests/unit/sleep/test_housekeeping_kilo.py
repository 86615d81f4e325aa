"""Transcript retention never deletes Kilo Code's database: it holds every project's sessions,
so one old session of this project must not remove the others (nor Kilo's own state)."""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

from reverie.sleep.housekeeping import prune_transcripts
from reverie.sleep.models import HousekeepingReport
from reverie.transcripts.discovery import discover_sessions
from support.kilo import KiloDb


def test_an_old_kilo_session_never_removes_the_database(reverie_env: dict[str, Path],
                                                       tmp_path: Path) -> None:
    home = reverie_env["agent_home"]
    db = KiloDb(home / ".local" / "share" / "kilo" / "kilo.db")
    db.user(db.session(str(tmp_path), title="Old"), "long ago")
    db.close()
    old = (datetime.now(UTC) - timedelta(days=400)).timestamp()
    os.utime(db.path, (old, old))
    refs = discover_sessions(tmp_path, home)
    assert [r.agent for r in refs] == ["kilo-code"]
    report = HousekeepingReport()
    prune_transcripts(refs, datetime.now(UTC), 30, report)
    assert db.path.is_file() and report.transcripts_deleted == 0
