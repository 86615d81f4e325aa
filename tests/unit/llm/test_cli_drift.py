"""Drift guard: every flag Reverie passes to a coding-agent CLI still exists in that CLI.

Installs nothing. Looks for the real executables on PATH and in the npm cache directory
``REVERIE_AGENT_CLI_CACHE`` (default ``~/.cache/reverie-agent-clis``; fill it with
``npm install --prefix ~/.cache/reverie-agent-clis @anthropic-ai/claude-code @openai/codex
@google/gemini-cli``). They cannot log in here; ``--help`` needs no login. Skipped, with the
reason, when a CLI is absent.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from reverie.llm.cli_agent import SPECS, CliSpec
from support.fake_agent_cli import __file__ as FAKE_MODULE

CACHE = Path(os.environ.get("REVERIE_AGENT_CLI_CACHE",
                            Path.home() / ".cache" / "reverie-agent-clis"))


def real_binary(spec: CliSpec) -> str | None:
    for candidate in (CACHE / "node_modules" / ".bin" / spec.binary,):
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    found = shutil.which(spec.binary)
    if found is None:
        return None
    head = Path(found).read_bytes()[:200]
    if b"fake_agent_cli" in head or Path(FAKE_MODULE).stem.encode() in head:
        return None  # a test's fake, not the real CLI
    return found


def help_text(binary: str, spec: CliSpec) -> str:
    commands = [[binary, "--help"]]
    if spec.provider == "codex-cli":
        commands.append([binary, "exec", "--help"])
    out = []
    for command in commands:
        done = subprocess.run(command, capture_output=True, text=True, timeout=120,
                              env={**os.environ, "NO_COLOR": "1", "CI": "1"}, check=False)
        out.append(done.stdout + done.stderr)
    return "\n".join(out)


_REFUSED = re.compile(r"unknown (?:option|argument)|unexpected argument|invalid (?:option|value)",
                      re.IGNORECASE)


def refuses_arguments(binary: str, spec: CliSpec, tmp_path: Path) -> str | None:
    """Run Reverie's exact argument list with no login (an empty HOME, no keys in the
    environment, so nothing reaches a model): the CLI's complaint if it refuses an argument."""
    home = tmp_path / "home"
    home.mkdir()
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(home), "NO_COLOR": "1"}
    try:
        done = subprocess.run([binary, *spec.args(None)], input="ping", capture_output=True,
                              text=True, timeout=90, env=env, cwd=home, check=False)
    except subprocess.TimeoutExpired:
        return None  # it got past argument parsing and tried to reach its service
    output = done.stdout + done.stderr
    found = _REFUSED.search(output)
    return output[max(0, found.start() - 200):found.end() + 200] if found else None


@pytest.mark.parametrize("provider", list(SPECS))
def test_flags_reverie_passes_still_exist(provider: str, tmp_path: Path) -> None:
    spec = SPECS[provider]
    binary = real_binary(spec)
    if binary is None:
        pytest.skip(f"the real {spec.binary} CLI is not installed (npm install "
                    f"--prefix {CACHE} {spec.package}); nothing to check")
    text = help_text(binary, spec)
    flags = [a for a in spec.args("some-model") if a.startswith("-") and a != "-"]
    missing = [f for f in flags if not re.search(rf"(?<![\w-]){re.escape(f)}(?![\w-])", text)]
    if missing:  # hidden flags (Claude Code's --max-turns is not in --help): still accepted?
        refused = refuses_arguments(binary, spec, tmp_path)
        assert refused is None, (
            f"{spec.binary} refuses an argument Reverie passes ({missing} not in --help):\n"
            f"{refused}")
    if provider == "codex-cli":
        assert "read-only" in text and "exec" in text
