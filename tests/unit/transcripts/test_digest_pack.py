"""Digests packed into byte strings for the trip out of a worker process come back equal."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

from reverie.transcripts.digest import (
    PACK_CHUNK,
    MessageDigest,
    digests,
    pack_digests,
    unpack_digests,
)
from reverie.transcripts.reader import load_transcript

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "transcripts"
ALL = sorted(p for p in FIXTURES.rglob("*.jsonl"))


@pytest.mark.parametrize("path", ALL, ids=lambda p: p.name)
def test_round_trip_on_real_transcripts(path: Path) -> None:
    items = digests(load_transcript(path).messages)
    packed = pickle.loads(pickle.dumps(pack_digests(items)))
    back = unpack_digests(packed)
    assert back == items
    assert all(type(d) is MessageDigest for d in back)


def test_chunks_are_bounded_and_empty_is_empty() -> None:
    row = MessageDigest("id", "user", False, "id:x", 2, None, None, 7)
    items = [row._replace(id=str(n)) for n in range(2 * PACK_CHUNK + 1)]
    packed = pack_digests(items)
    assert len(packed) == 3 and unpack_digests(packed) == items
    assert pack_digests([]) == [] and unpack_digests([]) == []
