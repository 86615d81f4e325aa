"""Where the test data lives."""

from __future__ import annotations

from pathlib import Path

TESTS_DIR = Path(__file__).resolve().parent.parent
REPO = TESTS_DIR.parent
FIXTURES = TESTS_DIR / "fixtures"
TRANSCRIPTS = FIXTURES / "transcripts"
