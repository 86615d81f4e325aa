"""The GitHub Actions workflow (.github/workflows/ci.yml) cannot run on this machine; this keeps it
valid and in step with what the README and .ci/run say: the same install, lint, type-check and
test commands, on Linux, macOS and Windows, and the per-platform .vsix builds."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
WORKFLOW = ROOT / ".github" / "workflows" / "ci.yml"


@pytest.fixture(scope="module")
def workflow() -> dict[Any, Any]:
    data = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def _runs(job: dict[str, Any]) -> list[str]:
    return [step["run"] for step in job["steps"] if "run" in step]


def _readme_commands() -> tuple[str, str]:
    """The README's first-screen install+demo and install+test commands."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```sh\n(.*?)\n```", text, flags=re.S)
    demo, tests = blocks[0].strip(), blocks[1].strip()
    return demo, tests


def test_triggers_and_permissions(workflow: dict[Any, Any]) -> None:
    triggers = workflow.get("on", workflow.get(True))  # YAML 1.1 reads a bare `on` as True
    assert "push" in triggers and "pull_request" in triggers
    assert workflow["permissions"] == {"contents": "read"}


def test_matrix_covers_three_oses_and_oldest_and_newest_python(workflow: dict[Any, Any]) -> None:
    matrix = workflow["jobs"]["test"]["strategy"]["matrix"]
    oses = matrix["os"]
    for family in ("ubuntu", "macos", "windows"):
        assert any(o.startswith(family) for o in oses), family
    versions = [str(v) for v in matrix["python"]]
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    oldest = re.search(r'requires-python = ">=(\d+\.\d+)"', pyproject)
    assert oldest is not None and oldest.group(1) in versions
    assert any(v == "3.x" or v > oldest.group(1) for v in versions if v != oldest.group(1))


def test_commands_match_the_readme_and_ci_run(workflow: dict[Any, Any]) -> None:
    runs = _runs(workflow["jobs"]["test"])
    _, readme_tests = _readme_commands()
    # the README installs '.[test]' and runs pytest: the workflow installs the same extras
    extras = re.search(r"install -e '\.\[(\w+)\]'", readme_tests)
    assert extras is not None and "pytest" in readme_tests
    assert any(f'install -e ".[{extras.group(1)}]"' in run for run in runs), runs
    ci_run = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    for tool in ("ruff check server tests", "mypy"):
        assert tool in ci_run and any(run.strip() == tool for run in runs), tool
    pytest_runs = [shlex.split(run) for run in runs if run.startswith("pytest")]
    assert len(pytest_runs) == 1
    args = pytest_runs[0][1:]
    paths = [a for a in args if not a.startswith("-") and a != "no:cacheprovider"]
    assert "tests/unit" in paths and "tests/e2e/lsp" in paths
    for path in paths:
        assert (ROOT / path).is_dir(), path
    # the real-editor suites stay on Linux (.ci/run), never in the cross-platform matrix
    assert not any("vscode" in p or "nvim" in p for p in paths)


def test_vsix_targets_and_packaging_script(workflow: dict[Any, Any]) -> None:
    job = workflow["jobs"]["vsix"]
    targets = {entry["target"] for entry in job["strategy"]["matrix"]["include"]}
    assert targets >= {"linux-x64", "linux-arm64", "darwin-arm64", "win32-x64"}
    scripts = json.loads((ROOT / "vscode-client" / "package.json").read_text())["scripts"]
    assert "package" in scripts
    assert any(run == "npm run package" for run in _runs(job))
    package_step = next(s for s in job["steps"] if s.get("run") == "npm run package")
    assert package_step["env"]["REVERIE_VSIX_TARGET"] == "${{ matrix.target }}"
    vsix_script = (ROOT / "vscode-client" / "scripts" / "vsix.mjs").read_text()
    assert "REVERIE_VSIX_TARGET" in vsix_script


def test_actions_are_pinned_to_a_version(workflow: dict[Any, Any]) -> None:
    for name, job in workflow["jobs"].items():
        for step in job["steps"]:
            if "uses" in step:
                assert re.fullmatch(r"[\w.-]+/[\w.-]+@v\d+", step["uses"]), (name, step["uses"])
