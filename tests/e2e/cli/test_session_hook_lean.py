"""``python -m reverie hook session-start`` (the command ``reverie connect`` installs) takes the
lean path: recognised before the CLI is built, without argparse or the settings stack. It must
answer exactly as the full CLI path does (``reverie.cli.main``, which builds the parser and a
``Settings``) on the same data: the same stdout bytes, the same stderr, exit 0, the same record
of what was given; and it must really not import the heavy modules."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from reverie.config import ProjectPaths, Settings

SESSION = "d6e0bada-1959-4eec-a9d2-0bfade768d8f"
SECRET = "ghp_" + "a1B2c3D4e5F6g7H8i9J0" * 2
NOTES = (
    "# Session Title\n_A short and distinctive 5-10 word descriptive title for the session_\n"
    "Coupon crash on an empty cart\n\n"
    "# Current State\n_What is actively being worked on right now?_\n"
    "Guarding applyCoupon against an empty cart; `pnpm test` passes.\n\n"
    "# Errors & Corrections\n_Errors encountered and how they were fixed._\n"
    "- TypeError in applyCoupon on an empty cart: read items[0] before the length check\n"
)
#: the full path: the console script's entry point, which builds the whole CLI
FULL = "import sys; from reverie.cli import main; sys.exit(main())"
#: what the lean path must never load
HEAVY = ("argparse", "pydantic", "pydantic_settings", "reverie.config", "reverie.cli",
         "reverie.services.hooks", "asyncio")


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    workspace = (tmp_path / "shop").resolve()
    (workspace / "src" / "cart").mkdir(parents=True)
    return workspace


def write_notes(ws: Path, text: str, session: str = SESSION) -> Path:
    path = ProjectPaths(Settings(), ws).notes_path(session)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, "utf-8")
    return path


def run(lean: bool, raw: bytes, data_dir: Path | None, env: dict[str, str] | None = None,
        importtime: bool = False) -> subprocess.CompletedProcess[bytes]:
    python = [sys.executable, *(["-X", "importtime"] if importtime else []), "-P"]
    argv = [*python, "-m", "reverie"] if lean else [*python, "-c", FULL]
    argv += ["hook", "session-start"]
    if data_dir is not None:
        argv += ["--data-dir", str(data_dir)]
    return subprocess.run(argv, input=raw, capture_output=True, timeout=120,
                          env=env or dict(os.environ), check=False)


def given(ws: Path) -> list[str]:
    folder = ProjectPaths(Settings(), ws).root / "given" / "session-start"
    return sorted(json.loads(p.read_text("utf-8"))["text"] for p in folder.glob("*.json")) \
        if folder.is_dir() else []


def payload(ws: Path, **extra: Any) -> bytes:
    return json.dumps({"session_id": SESSION, "cwd": str(ws), "hook_event_name": "SessionStart",
                       "source": "compact", **extra}).encode()


def same_answer(ws: Path, raw: bytes, data_dir: Path | None,
                env: dict[str, str] | None = None) -> bytes:
    """Run both paths on the same input; assert they agree; return the stdout."""
    full = run(False, raw, data_dir, env)
    given_full = given(ws)
    lean = run(True, raw, data_dir, env)
    assert (lean.returncode, full.returncode) == (0, 0)
    assert lean.stdout == full.stdout
    assert lean.stderr == full.stderr
    assert given(ws) == given_full
    return lean.stdout


def context(stdout: bytes) -> str:
    out = json.loads(stdout)
    assert out["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    return str(out["hookSpecificOutput"]["additionalContext"])


def test_both_paths_hand_back_the_same_notes(ws: Path, reverie_env: dict[str, Path]) -> None:
    data = reverie_env["data"]
    path = write_notes(ws, NOTES)
    assert "pnpm test" in context(same_answer(ws, payload(ws), data))
    assert "pnpm test" in context(same_answer(ws, payload(ws, source="resume"), data))
    # from a sub-folder of the workspace, and with VS Code's spelling of the fields
    sub = ws / "src" / "cart"
    assert context(same_answer(ws, payload(sub), data))
    vscode = json.dumps({"sessionId": SESSION, "cwd": str(ws), "hookEventName": "SessionStart",
                         "source": "compact"}).encode()
    assert context(same_answer(ws, vscode, data))
    # a hand-typed secret is redacted the same way; oversized notes are cut the same way
    path.write_text(NOTES + f"\n# Worklog\n_Step by step_\ntoken {SECRET}\n" + "".join(
        f"- worklog line {n} " + "x" * 80 + "\n" for n in range(3000)), "utf-8")
    cut = context(same_answer(ws, payload(ws), data))
    assert SECRET not in cut and "[... section truncated for length ...]" in cut


@pytest.mark.parametrize("raw", [b"", b"not json", b"[1, 2]", b'{"cwd": "/tmp"}',
                                 b"\xff\xfe\x00garbage", b'{"session_id": "../../etc"}'])
def test_both_paths_skip_bad_input_alike(raw: bytes, ws: Path,
                                         reverie_env: dict[str, Path]) -> None:
    write_notes(ws, NOTES)
    assert same_answer(ws, raw, reverie_env["data"]) == b""


def test_both_paths_add_nothing_when_there_is_nothing_to_add(
        ws: Path, reverie_env: dict[str, Path]) -> None:
    data = reverie_env["data"]
    assert same_answer(ws, payload(ws), data) == b""  # no notes for the session
    write_notes(ws, NOTES)
    assert same_answer(ws, payload(ws, source="startup"), data) == b""
    assert same_answer(ws, payload(ws, session_id="another-session"), data) == b""
    # notes that are still the user's own template (in REVERIE_CONFIG_DIR) are not handed back
    template = reverie_env["config"] / "session_memory" / "template.md"
    template.parent.mkdir(parents=True)
    template.write_text("# Only\n_one section of the user's own_\n", "utf-8")
    write_notes(ws, "# Only\n_one section of the user's own_\n")
    assert same_answer(ws, payload(ws), data) == b""


def test_both_paths_find_the_data_dir_in_the_environment(
        ws: Path, reverie_env: dict[str, Path]) -> None:
    """Without ``--data-dir``: ``REVERIE_DATA_DIR``, spelled in any case as pydantic-settings
    reads it."""
    write_notes(ws, NOTES)
    env = {k: v for k, v in os.environ.items() if k != "REVERIE_DATA_DIR"}
    env["reverie_Data_Dir"] = str(reverie_env["data"])
    assert "pnpm test" in context(same_answer(ws, payload(ws), None, env))


def imported(stderr: bytes) -> set[str]:
    """The modules a ``python -X importtime`` run loaded."""
    names = set()
    for line in stderr.decode(errors="replace").splitlines():
        if line.startswith("import time:") and line.count("|") == 2:
            names.add(line.rsplit("|", 1)[1].strip())
    return names


def test_the_lean_path_imports_no_heavy_module(ws: Path, reverie_env: dict[str, Path]) -> None:
    data = reverie_env["data"]
    write_notes(ws, NOTES)
    handed = run(True, payload(ws), data, importtime=True)
    assert context(handed.stdout)  # the notes were handed back: the whole path ran
    modules = imported(handed.stderr)
    assert "reverie.services.handback" in modules and "reverie.redact" in modules
    assert not modules & set(HEAVY), modules & set(HEAVY)
    quiet = imported(run(True, payload(ws, source="startup"), data, importtime=True).stderr)
    # a new conversation (nothing to give back) does not load redaction or the template
    assert not quiet & {*HEAVY, "reverie.redact", "reverie.session_memory.template"}
    # the check itself sees the difference: the full path loads them
    assert set(HEAVY[:4]) <= imported(run(False, payload(ws), data, importtime=True).stderr)
