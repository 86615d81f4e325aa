"""Project commands (with the form that worked) versus exploration, and check coverage."""

from __future__ import annotations

import pytest

from reverie.analysis import CommandCategory, analyse_command

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
