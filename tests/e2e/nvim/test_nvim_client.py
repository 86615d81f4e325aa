"""Neovim (Debian's 0.7.2, headless) as a second real LSP client of ``reverie serve``.

The Lua script starts ``python -m reverie serve`` with ``vim.lsp.start_client``, calls
``reverie.server.status`` and ``reverie.server.dream`` through ``workspace/executeCommand`` and
waits for ``reverie/memorySaved``; this test checks what it saw against the files on disk.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

SCRIPT = Path(__file__).with_name("reverie_client.lua")
pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("real-editors")]  # one real editor at a time


def run_nvim(
    env: dict[str, str], cwd: Path, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    proc = subprocess.Popen(
        ["nvim", "--headless", "--clean", "-c", f"luafile {SCRIPT}"],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        stdout, stderr = proc.communicate()
        pytest.fail(f"nvim did not finish in {timeout} s\nstdout:\n{stdout}\nstderr:\n{stderr}")
    finally:
        try:  # the language server is nvim's child: make sure nothing outlives the test
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)


def observations(stdout: str) -> dict[str, list[object]]:
    seen: dict[str, list[object]] = {}
    for line in stdout.splitlines():
        tag, _, payload = line.partition(" ")
        if tag.isupper() and payload:
            try:
                seen.setdefault(tag, []).append(json.loads(payload))
            except json.JSONDecodeError:
                seen.setdefault(tag, []).append(payload)
    return seen


def test_neovim_status_dream_and_memory_saved(tmp_path: Path, editors: ModuleType) -> None:
    nvim = editors.which("nvim")
    if nvim is None:
        editors.missing_tool("Neovim (nvim) is not installed")
    ws = editors.make_agent_workspace(tmp_path)
    with editors.scratch_env(tmp_path) as scratch:
        env = {
            **os.environ,
            **scratch,
            **ws.env(),
            "REVERIE_NVIM_PYTHON": sys.executable,
            "REVERIE_NVIM_WORKSPACE": str(ws.workspace),
            "REVERIE_PROVIDER": "offline",
        }
        result = run_nvim(env, ws.workspace)
    seen = observations(result.stdout)
    detail = f"stdout:\n{result.stdout}\nstderr:\n{result.stderr[-4000:]}"
    assert result.returncode == 0, detail
    assert seen.get("RESULT") == ["pass"], detail

    (init,) = seen["INITIALIZED"]
    assert "reverie.server.dream" in init["commands"], detail  # type: ignore[index]

    (status,) = seen["STATUS"]
    assert isinstance(status, dict)
    assert any(
        Path(f).resolve() == ws.workspace.resolve() or f.endswith(str(ws.workspace))
        for f in status["workspaceFolders"]
    ), status
    assert status["offline"] is True and status["provider"] == "offline"
    assert status["pid"] != os.getpid()

    (started,) = seen["DREAM"]
    assert isinstance(started, dict) and started["jobId"]

    saved = seen["MEMORY_SAVED"][0]
    assert isinstance(saved, dict)
    assert saved["message"] and saved["memoryPaths"], saved
    for path in saved["memoryPaths"]:
        file = Path(path)
        assert file.is_file(), f"{file} named in memorySaved does not exist"
        assert ws.data_dir in file.resolve().parents, f"{file} is outside REVERIE_DATA_DIR"
    index = Path(saved["memoryPaths"][0]).parent / "MEMORY.md"
    assert index.is_file() and index.read_text().strip()
    # the job reported its own start and completion on the way
    (history,) = seen["HISTORY"]
    assert isinstance(history, dict) and history["memoryDir"], history
    assert history["runs"][0]["runId"] == saved["runId"], history
    (undone,) = seen["UNDO"]
    assert isinstance(undone, dict)
    assert undone["undoneRunId"] == saved["runId"] and undone["changed"] is True, undone
    assert undone["message"].startswith("Undid the manual run"), undone
    (redone,) = seen["REDO"]
    assert isinstance(redone, dict) and redone["changed"] is True, redone
    assert redone["message"].startswith(f"Redid the run {saved['runId']}"), redone
    kinds = {(e["kind"], e["type"]) for e in seen.get("JOB_EVENT", []) if isinstance(e, dict)}
    assert ("dream", "start") in kinds, kinds
