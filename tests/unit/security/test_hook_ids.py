"""A hook's session id is input: it never names a folder outside the sessions folder (issue 27:
a session_id of ``..`` wrote outside it)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reverie.config import ProjectPaths, Settings
from reverie.services.hooks import HookSkip, parse_hook_input


@pytest.mark.parametrize("session_id", ["..", ".", "../x", "a/../../b", "..\\..\\x", "/etc",
                                        "~", " ../"])
def test_a_path_as_session_id_is_refused(session_id: str) -> None:
    with pytest.raises(HookSkip):
        parse_hook_input(json.dumps({"session_id": session_id, "cwd": "/tmp"}))


def test_real_ids_are_accepted() -> None:
    for session_id in ("4d5611e5-241a-462a-8d15-5122611a9569",
                       "rollout-2026-05-11T11-26-55-019e1625", "a1.b2"):
        assert parse_hook_input(json.dumps({"session_id": session_id})).session_id == session_id


@pytest.mark.parametrize("session_id", ["..", ".", "...", "../..", ""])
def test_the_session_folder_stays_inside(session_id: str, tmp_path: Path,
                                         reverie_env: dict[str, Path]) -> None:
    paths = ProjectPaths(Settings(), tmp_path)
    folder = paths.session_dir(session_id)
    assert folder.parent == paths.sessions_dir and folder.name not in ("", ".", "..")
