"""The check's light bullet reader agrees with curation's reader on every fact."""

from __future__ import annotations

from pathlib import Path

from reverie.anchors.bullets import read_bullets
from reverie.curation.facts import EPOCH
from reverie.curation.topics import read_doc
from reverie.memory.store import read_topic

EVAL = Path(__file__).resolve().parents[2] / "fixtures" / "eval"
EXTRA = """# Topic

- **Test:** `pnpm test` _(3 sessions, latest 77aa1b2c 2026-03-09, first 2026-03-01)_
  (formerly: `npm test`; replaced on 2026-03-09)
- A person's line, no provenance.
* another bullet _(daily log, 2026-02-01)_
  continued here
- **Build:** `make` _(user, 2026-02-02)_

Some prose.

## Retired

- Old fact. _(session 12345678, 2026-01-01)_
  (retired on 2026-02-01: gone)
"""


def same(name: str, body: str) -> None:
    from reverie.memory.store import TopicMeta

    doc = read_doc(name, TopicMeta(), body)
    bullets = read_bullets(body.splitlines())
    assert [(b.start, b.end, b.label, b.text, b.user) for b in bullets] == [
        (i.start, i.end, i.fact.label, i.fact.text, i.fact.user) for i in doc.items]
    assert [b.day for b in bullets] == [
        i.fact.at.date() if i.fact.at != EPOCH else None for i in doc.items]


def test_the_readers_agree_on_the_gold_memories_and_every_provenance_form() -> None:
    files = sorted(EVAL.glob("*/gold/*.md"))
    assert len(files) > 15
    for path in files:
        if path.name != "MEMORY.md":
            same(path.name, read_topic(path).body)
    same("extra.md", EXTRA)
    assert [b.text for b in read_bullets(EXTRA.splitlines())][-1] == "`make`"
