"""Which topic file a fact belongs in: memory is organised by subject, not by kind of fact.

A fact goes to the first subject area whose words it mentions (its subject key, label and text
are searched, commands by their category), else to a fallback for its kind. A fact read from a
file stays in that file.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from reverie.curation.facts import Fact


@dataclass(frozen=True, slots=True)
class TopicSpec:
    key: str
    name: str
    type: str = "project"
    words: tuple[str, ...] = ()

    @property
    def file(self) -> str:
        return f"{self.key}.md"


AREAS: tuple[TopicSpec, ...] = (
    TopicSpec("database-and-migrations", "Database and migrations", words=(
        "database", "db", "migration", "migrations", "migrate", "schema", "sql", "sqlite",
        "postgres", "postgresql", "mysql", "mongodb", "redis", "prisma", "alembic", "orm",
        "drizzle", "knex", "sequelize", "typeorm")),
    TopicSpec("deployment-and-environments", "Deployment and environments", words=(
        "deploy", "deployment", "release", "docker", "dockerfile", "kubernetes", "k8s", "helm",
        "staging", "production", "prod", "ci", "pipeline", "github-actions", "terraform",
        "vercel", "netlify", "fly", "heroku", "aws", "gcp", "azure", "env", "environment")),
    TopicSpec("docs-site", "Docs site", words=(
        "docs", "documentation", "readme", "mkdocs", "docusaurus", "sphinx", "changelog",
        "docs-site", "vitepress", "markdown")),
    TopicSpec("git-and-review", "Git and review", words=(
        "git", "commit", "commits", "branch", "branches", "pr", "pull", "push", "rebase",
        "merge", "review", "squash", "rebased", "upstream")),
    TopicSpec("testing", "Testing", words=(
        "test", "tests", "testing", "pytest", "jest", "vitest", "mocha", "fixture", "fixtures",
        "coverage", "e2e", "spec", "specs", "unittest", "playwright", "cypress", "mock",
        "mocks", "snapshot")),
    TopicSpec("code-style-and-conventions", "Code style and conventions", words=(
        "style", "naming", "name", "format", "formatting", "lint", "linter", "types",
        "typing", "typescript", "comments", "docstrings", "imports", "indent", "indentation",
        "convention", "conventions", "black", "prettier", "eslint", "ruff", "mypy", "tabs",
        "spaces", "quotes", "semicolons", "camelcase", "snake_case")),
    TopicSpec("package-manager-and-scripts", "Package manager and scripts", words=(
        "npm", "pnpm", "yarn", "bun", "uv", "pip", "poetry", "cargo", "make", "makefile",
        "lockfile", "package", "packages", "dependency", "dependencies", "install", "script",
        "scripts", "package-manager", "node_modules", "venv", "virtualenv", "gradle", "maven")),
)
_BY_KEY = {a.key: a for a in AREAS}
SCRIPTS = _BY_KEY["package-manager-and-scripts"]
#: command category -> area; the rest are package scripts
COMMAND_AREAS = {
    "migrate": "database-and-migrations",
    "deploy": "deployment-and-environments",
}
FALLBACKS: dict[str, TopicSpec] = {
    "rule": TopicSpec("working-preferences", "Working preferences", type="feedback"),
    "decision": TopicSpec("project-decisions", "Project decisions"),
    "rename": TopicSpec("project-decisions", "Project decisions"),
    "note": TopicSpec("project-notes", "Project notes"),
    "fix": TopicSpec("errors-and-fixes", "Errors and fixes"),
    "command": SCRIPTS,
}
_TOKEN = re.compile(r"[a-z0-9_]+(?:[-.][a-z0-9_]+)*")


def _tokens(text: str) -> set[str]:
    found = set(_TOKEN.findall(text.lower()))
    return found | {part for token in found for part in re.split(r"[-.]", token) if part}


def spec_for(fact: Fact) -> TopicSpec:
    """The subject area (topic) a new fact belongs in."""
    if fact.kind == "command":
        category = fact.slot.split(":")[1] if fact.slot.count(":") >= 1 else ""
        return _BY_KEY.get(COMMAND_AREAS.get(category, ""), SCRIPTS)
    # a rename's subject is "name-of-<old name>": only its text says what it is about
    subject = "" if fact.kind == "rename" else fact.subject
    subject_words = _tokens(subject.replace("-", " ") + " " + fact.label)
    text_words = _tokens(fact.text)
    for pool in (subject_words, subject_words | text_words):
        for area in AREAS:
            if pool & set(area.words):
                return area
    return FALLBACKS.get(fact.kind, FALLBACKS["note"])


def area(key: str) -> TopicSpec | None:
    """A known subject area or fallback by its file stem."""
    return _BY_KEY.get(key) or next((s for s in FALLBACKS.values() if s.key == key), None)
