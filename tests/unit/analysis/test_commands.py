"""Project commands (with the form that worked) versus exploration, and check coverage."""

from __future__ import annotations

from pathlib import Path

import pytest

from reverie.analysis import CommandCategory, analyse_command, analyse_session
from reverie.transcripts.reader import TranscriptReader

from .conftest import ClaudeLog

C = CommandCategory


@pytest.mark.parametrize(("command", "category", "key"), [
    ("pytest -q tests/test_cart.py", C.TEST, "pytest"),
    ("uv run pytest -x", C.TEST, "pytest"),
    ("python -m pytest", C.TEST, "pytest"),
    ("cd web && pnpm test", C.TEST, "pnpm test"),
    ("npm run build", C.BUILD, "npm run build"),
    ("cargo build --release", C.BUILD, "cargo build"),
    ("npm run dev", C.RUN, "npm run dev"),
    ("docker compose up -d db", C.RUN, "docker compose up"),
    ("ruff check server tests", C.LINT, "ruff check"),
    ("npx eslint src", C.LINT, "eslint"),
    ("ruff format .", C.FORMAT, "ruff format"),
    ("mypy", C.TYPECHECK, "mypy"),
    ("tsc --noEmit", C.TYPECHECK, "tsc --noEmit"),
    ("pnpm install", C.INSTALL, "pnpm install"),
    ("pip install -e '.[test]'", C.INSTALL, "pip install"),
    ("./scripts/deploy.sh staging", C.DEPLOY, "./scripts/deploy.sh"),
    ("fly deploy", C.DEPLOY, "fly"),
    ("alembic upgrade head", C.MIGRATE, "alembic upgrade"),
    ("python manage.py migrate", C.MIGRATE, "manage.py migrate"),
    ("npx prisma migrate dev", C.MIGRATE, "prisma migrate"),
    ("git push --set-upstream origin feat", C.VCS, "git push"),
    ("mkdocs build --strict", C.BUILD, "mkdocs build"),
    ("mkdocs gh-deploy --force", C.DEPLOY, "mkdocs gh-deploy"),
    ("sphinx-build -W docs docs/_build", C.BUILD, "sphinx-build"),
])
def test_project_commands(command: str, category: CommandCategory, key: str) -> None:
    info = analyse_command(command)
    assert (info.category, info.key) == (category, key)


@pytest.mark.parametrize("command", [
    "ls -la", "cat README.md", "find . -name '*.py' | head -20", "head -50 src/app.ts",
    "tail -5 /tmp/claude/tasks/b1.output", "sed -n '1,160p' README.md", "grep -rn TODO src",
    "pwd", "wc -l src/*.py", "rm hello.js", "git status --short", "git log --oneline -5",
    "git diff", "python /tmp/check.py", "python -c 'import sys; print(sys.path)'",
    "echo done", "tree -L 2",
])
def test_exploration(command: str) -> None:
    assert analyse_command(command).category is C.EXPLORE


@pytest.mark.parametrize(("passed", "failed", "covers"), [
    ("pytest", "pytest tests/test_x.py -k foo", True),
    ("pytest tests/", "pytest tests/test_x.py", True),
    ("pytest tests/test_x.py", "pytest tests/test_x.py -k foo", True),
    ("pytest tests/test_x.py -k foo", "pytest tests/test_x.py -k foo", True),
    ("pytest tests/test_y.py", "pytest tests/test_x.py", False),
    ("pytest tests/test_x.py -k bar", "pytest tests/test_x.py -k foo", False),
    ("pytest tests/test_x.py", "pytest", False),
    ("npm test", "npm test -- -t 'parses dates'", True),
    ("git push --set-upstream origin b", "git push", True),
    ("npm run build", "npm test", False),
])
def test_same_or_broader_check(passed: str, failed: str, covers: bool) -> None:
    assert analyse_command(passed).covers(analyse_command(failed)) is covers


def test_working_form_is_the_last_success(log: ClaudeLog) -> None:
    (log.user("get the tests running")
     .bash("npm test", "sh: jest: command not found", fail=True)
     .bash("pnpm install", "Done in 3.2s")
     .bash("pnpm test", "Tests: 12 passed")
     .bash("pnpm test -- --watch=false", "Tests: 12 passed")
     .bash("ls node_modules/.bin", "jest")
     .bash("cat package.json", "{}"))
    analysis = log.analyse()
    by_key = {c.key: c for c in analysis.commands}
    assert set(by_key) == {"npm test", "pnpm install", "pnpm test"}
    assert by_key["pnpm test"].working == "pnpm test -- --watch=false"
    assert by_key["pnpm test"].runs == 2 and by_key["pnpm test"].category is C.TEST
    assert by_key["npm test"].working is None and by_key["npm test"].failures == 1
    assert by_key["pnpm install"].category is C.INSTALL


def test_one_off_dependency_changes_are_not_the_install_command() -> None:
    assert analyse_command("pnpm add swr").category is C.OTHER
    assert analyse_command("pip install requests").category is C.OTHER
    assert analyse_command("pip install -e '.[test]'").category is C.INSTALL
    assert analyse_command("pip install -r requirements.txt").category is C.INSTALL


def test_working_form_drops_looking_around_but_keeps_cd_and_chains() -> None:
    assert analyse_command("rm package-lock.json && pnpm install").main == "pnpm install"
    assert analyse_command("cd web && pnpm test").main == "cd web && pnpm test"
    chained = analyse_command("ruff check . && mypy billing")
    assert chained.main == "ruff check . && mypy billing"
    assert [part.key for part in chained.chain] == ["mypy"]


def test_a_command_the_user_forbade_is_not_a_project_command(log: ClaudeLog) -> None:
    (log.user("set the project up")
     .bash("npm install", "added 312 packages")
     .user("No, don't use npm here — use pnpm. npm just created a package-lock.json.")
     .bash("rm package-lock.json && pnpm install", "Done in 2.1s"))
    analysis = log.analyse()
    assert [c.working for c in analysis.commands] == ["pnpm install"]
    assert analysis.requests[0].text == "set the project up"
    assert len(analysis.requests) == 1  # the correction's "why" is not a task


def test_aider_run_is_a_command_the_person_ran(tmp_path: Path) -> None:
    history = tmp_path / "repo" / ".aider.chat.history.md"
    history.parent.mkdir()
    history.write_text(
        "\n# aider chat started at 2026-11-07 15:00:00\n\n> aider --model sonnet\n\n"
        "#### /run uv run ruff check .  \n> src/x.py:3:8: F401 `sys` imported but unused  \n"
        "> Command exited with code 1  \n\n"
        "#### remove the unused import  \n\nsrc/x.py\n```python\n<<<<<<< SEARCH\nimport sys\n"
        "import os\n=======\nimport os\n>>>>>>> REPLACE\n```\n\n> Applied edit to src/x.py  \n\n"
        "#### /run uv run ruff check .  \n> All checks passed!  \n", encoding="utf-8")
    reader = TranscriptReader(history)
    analysis = analyse_session(list(reader), reader.session)
    assert [(c.key, c.working, c.runs, c.failures) for c in analysis.commands] == [
        ("ruff check", "uv run ruff check .", 2, 1)]
    [error] = analysis.errors
    assert error.status == "fixed" and error.fix is not None
    assert error.fix.path == "src/x.py"
    assert analysis.title == "remove the unused import"
