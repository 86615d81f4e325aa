"""The session list is dated and ordered by the sessions' own times (issue 26, class 9): a
copied, restored or synced home gives every file the copy's time."""

from __future__ import annotations

import json
import os
import shutil
from datetime import UTC, datetime
from pathlib import Path

from reverie.transcripts.listing import session_rows

REAL = Path(__file__).resolve().parents[2] / "fixtures" / "real" / "m-claude"


def test_a_copied_home_is_listed_by_the_sessions_own_times(tmp_path: Path) -> None:
    listing = json.loads((REAL / "sessions.json").read_text("utf-8"))
    home = tmp_path / "home"
    shutil.copytree(REAL / "home", home)
    files = sorted(home.rglob("*.jsonl"))
    # the copy's times run against the sessions' own order: the oldest session is newest on disk
    ends = {s["session_id"]: s["end"] for s in listing["sessions"]}
    by_end = sorted(files, key=lambda p: ends[p.stem])
    for n, path in enumerate(by_end):
        stamp = datetime(2030, 6, 1, tzinfo=UTC).timestamp() - n * 60
        os.utime(path, (stamp, stamp))

    rows = session_rows(Path(listing["workspace"]), home)

    assert [r["session_id"] for r in rows] == [p.stem for p in reversed(by_end)]
    assert all(not r["updated_at"].startswith("2030") for r in rows)
    newest = max(listing["sessions"], key=lambda s: s["end"])
    assert rows[0]["updated_at"][:16] == newest["end"][:16]
