"""The day's journal: one markdown file per review date, written atomically.

``<data dir>/projects/<project key>/journals/YYYY-MM-DD.md``. Every text in it has already been
redacted by the caller; the writer redacts once more so nothing secret reaches disk by mistake.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date as Date
from pathlib import Path

from reverie.config import ProjectPaths
from reverie.fsutil import atomic_write_text
from reverie.sleep.models import SessionDigest
from reverie.sleep.redaction import redact_text


def journal_path(paths: ProjectPaths, review_date: Date) -> Path:
    return paths.journals_dir / f"{review_date.isoformat()}.md"


def render_journal(
    review_date: Date, digests: Sequence[SessionDigest], *, engine: str, failed: int
) -> str:
    """Markdown for the day: one section per session, its summary, then its candidates."""
    lines = [f"# Journal for {review_date.isoformat()}", ""]
    ok = [d for d in digests if d.error is None]
    lines.append(
        f"_{len(digests)} session(s) reviewed by the {engine} engine; "
        f"{len(ok)} summarised, {failed} failed._"
    )
    lines.append("")
    for digest in digests:
        lines.append(f"## {digest.title}")
        lines.append("")
        lines.append(f"- session: `{digest.session_id}` ({digest.agent})")
        if digest.error is not None:
            lines.append(f"- not summarised: {digest.error}")
            lines.append("")
            continue
        lines.append("")
        lines.append(digest.summary.strip())
        lines.append("")
        if digest.candidates:
            lines.append("### Memory candidates")
            lines.append("")
            for cand in digest.candidates:
                lines.append(f"- **{cand.key}**: {' '.join(cand.value.split())}")
            lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def write_journal(path: Path, text: str) -> None:
    """Replace the journal atomically (0600 file in a 0700 directory)."""
    atomic_write_text(path, redact_text(text))
