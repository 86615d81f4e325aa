"""Journal rendering and atomic, private, redacted writing."""

from __future__ import annotations

from datetime import date
from pathlib import Path

from reverie.config import ProjectPaths, Settings
from reverie.sleep.journal import journal_path, render_journal, write_journal
from reverie.sleep.models import MemoryCandidate, SessionDigest


def test_journal_lists_sessions_candidates_and_failures(tmp_path: Path) -> None:
    paths = ProjectPaths(Settings(), tmp_path)
    digests = [
        SessionDigest(
            session_id="s1",
            agent="codex",
            title="Add CSV export",
            summary="- Files changed (1): `export.py`.",
            candidates=[MemoryCandidate(key="csv", value="Use the csv module.")],
        ),
        SessionDigest(
            session_id="s2",
            agent="claude-code",
            title="Session s2",
            summary="",
            error="scripted failure of session-1",
        ),
    ]
    text = render_journal(date(2026, 11, 10), digests, engine="offline", failed=1)
    assert text.startswith("# Journal for 2026-11-10\n")
    assert "2 session(s) reviewed by the offline engine; 1 summarised, 1 failed." in text
    assert "## Add CSV export" in text and "- **csv**: Use the csv module." in text
    assert "- not summarised: scripted failure of session-1" in text

    path = journal_path(paths, date(2026, 11, 10))
    assert path == paths.root / "journals" / "2026-11-10.md"
    secret = "sk-ant-api03-" + "A" * 40
    write_journal(path, text + f"\nkey {secret}\n")
    written = path.read_text()
    assert secret not in written and "Add CSV export" in written
    assert path.stat().st_mode & 0o777 == 0o600
    assert path.parent.stat().st_mode & 0o777 == 0o700
    assert [p.name for p in path.parent.iterdir()] == ["2026-11-10.md"]
