"""The editors' scratch dirs: short enough for unix sockets wherever pytest's temp dir is, and
gone once the editor is."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from e2e.editor_workspace import DEEPEST_SOCKET, SOCKET_PATH_MAX, scratch_env


def test_a_socket_binds_in_the_scratch_tmpdir_under_a_long_test_folder(tmp_path: Path) -> None:
    # as deep as pytest's own folders get under xdist, and deeper
    root = tmp_path / "popen-gw10" / ("vscode-a-long-fixture-name" * 3)
    with scratch_env(root) as env:
        tmp = Path(env["TMPDIR"])
        assert all(Path(v).is_dir() for v in env.values())
        assert not tmp.is_relative_to(tmp_path)
        assert len(f"{tmp}{DEEPEST_SOCKET}") <= SOCKET_PATH_MAX
        # what Chromium does at launch: a socket in a fresh folder in TMPDIR
        path = tmp / "org.chromium.Chromium.abcdef" / "SingletonSocket"
        path.parent.mkdir()
        with socket.socket(socket.AF_UNIX) as sock:
            sock.bind(os.fspath(path))
        assert (root / "scratch").resolve() == tmp.parent.resolve()
        (tmp / "left-behind").write_text("x")
    assert not tmp.parent.exists()


def test_the_same_socket_in_the_test_folder_itself_cannot_be_bound(tmp_path: Path) -> None:
    """Why the scratch dirs are not in the test's folder: what Chromium met under xdist."""
    path = (tmp_path / "popen-gw10" / ("vscode-a-long-fixture-name" * 3) / "tmp"
            / "org.chromium.Chromium.abcdef" / "SingletonSocket")
    path.parent.mkdir(parents=True)
    with socket.socket(socket.AF_UNIX) as sock, pytest.raises(OSError):
        sock.bind(os.fspath(path))
