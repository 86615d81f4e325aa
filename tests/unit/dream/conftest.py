"""A workspace whose agent home holds the bundled real sample sessions."""

from __future__ import annotations

from pathlib import Path

import pytest

from reverie.samples import install_samples


@pytest.fixture
def workspace(reverie_env: dict[str, Path], tmp_path: Path) -> Path:
    ws = tmp_path / "workspace"
    ws.mkdir()
    install_samples(reverie_env["agent_home"], ws)
    return ws
