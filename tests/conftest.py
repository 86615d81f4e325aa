"""Every test runs with its own temporary data, config and agent-home directories."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings

from support.paths import TRANSCRIPTS

# ``pytest --hypothesis-profile=deep``: the property tests that take the profile's example
# count when it is larger (``max(n, settings.default.max_examples)``) run 20,000 examples
settings.register_profile("deep", max_examples=20_000, deadline=None)


@pytest.fixture(autouse=True)
def reverie_env(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Iterator[dict[str, Path]]:
    """Point Reverie's directories at fresh temp dirs and drop any real provider settings."""
    base = tmp_path_factory.mktemp("reverie-env")
    dirs = {
        "data": base / "data",
        "config": base / "config",
        "agent_home": base / "home",
    }
    for path in dirs.values():
        path.mkdir()
    monkeypatch.setenv("REVERIE_DATA_DIR", str(dirs["data"]))
    monkeypatch.setenv("REVERIE_CONFIG_DIR", str(dirs["config"]))
    monkeypatch.setenv("REVERIE_AGENT_HOME", str(dirs["agent_home"]))
    for name in ("REVERIE_PROVIDER", "REVERIE_MODEL", "REVERIE_BASE_URL", "REVERIE_API_KEY",
                 "OPENAI_API_KEY", "ANTHROPIC_API_KEY",
                 # the editor's agents: never the machine's own VS Code / Continue / Cline data
                 "REVERIE_VSCODE_USER_DIR", "CONTINUE_GLOBAL_DIR", "CLINE_DATA_DIR", "KILO_DB",
                 # the agents' own homes: never the machine's real ~/.codex or ~/.gemini
                 "CODEX_HOME", "GEMINI_CLI_HOME", "CLAUDE_CONFIG_DIR"):
        monkeypatch.delenv(name, raising=False)
    yield dirs


@pytest.fixture
def transcripts_dir() -> Path:
    return TRANSCRIPTS


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under ``--dist loadgroup`` xdist marks each grouped test's node id with ``@group``; if a
    pytest or xdist release stops that, the real editors would run side by side and the shared
    module fixtures once per worker, silently. Fail instead."""
    if not getattr(config.option, "loadgroup", False):
        return
    lost = [item.nodeid for item in items
            if item.get_closest_marker("xdist_group") and "@" not in item.nodeid]
    if lost:
        raise pytest.UsageError(
            f"--dist loadgroup lost the xdist_group of {len(lost)} tests (e.g. {lost[0]}): "
            "this pytest / pytest-xdist pair does not group (pytest-xdist issue 1386)"
        )
