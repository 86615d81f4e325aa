"""Standing rules, decisions and renames versus one-off requests, with subjects for supersession."""

from __future__ import annotations

import pytest

from reverie.analysis import StatementKind
from reverie.analysis.statements import statements_in, subject_of

from .conftest import ClaudeLog

K = StatementKind


@pytest.mark.parametrize(("text", "kind", "subject"), [
    ("Always use pnpm, never npm or yarn.", K.RULE, "package-manager"),
    ("From now on, run ruff before every commit.", K.RULE, "linter"),
    ("note: this repo uses Postgres 16 via docker compose", K.NOTE, "database"),
    ("Important: money is stored as integer cents, never floats.", K.NOTE, "money-rules"),
    ("please don't add comments that repeat the code", K.RULE, "code-style"),
    ("Never push directly to main.", K.RULE, "git-workflow"),
    ("I prefer vitest over jest for new tests.", K.PREFERENCE, "test-runner"),
    ("no, use pnpm not npm", K.CORRECTION, "package-manager"),
    ("We use Tailwind for all styling.", K.NOTE, "frontend-framework"),
    # framed like a note: the subject comes from what is noted
    ("Remember: config comes from environment variables only, no config files.", K.NOTE,
     "secrets-and-env"),
    ("keep in mind: the API is rate limited to 10 rps", K.NOTE, "api-rate-limited"),
])
def test_standing_rules(text: str, kind: StatementKind, subject: str) -> None:
    [statement] = statements_in(text)
    assert (statement.kind, statement.subject) == (kind, subject)


@pytest.mark.parametrize("text", [
    "fix the bug in cart.py and make the tests pass",
    "add a --json flag to the report command",
    "Why does the build always fail on CI?",
    "The deploy never finished yesterday, can you look?",
    "run the tests",
])
def test_one_off_requests_are_not_rules(text: str) -> None:
    assert statements_in(text) == []


@pytest.mark.parametrize("text", [
    "Do you remember: was it green yesterday?",
    "I remember the build was slow",
])
def test_remember_mid_sentence_is_not_a_note(text: str) -> None:
    assert statements_in(text) == []


def test_reversal_names_what_it_replaces() -> None:
    [decision] = statements_in(
        "Change of plan: drop MkDocs, we move to Docusaurus for the docs site.")
    assert decision.kind is K.DECISION
    assert (decision.subject, decision.replaces, decision.chosen) == (
        "docs-site", "MkDocs", "Docusaurus")


def test_rename() -> None:
    [rename] = statements_in("Please rename fetchUser to loadUser everywhere.")
    assert rename.kind is K.RENAME
    assert (rename.replaces, rename.chosen) == ("fetchUser", "loadUser")


def test_same_subject_across_phrasings() -> None:
    assert subject_of("use pnpm") == subject_of("switch to bun") == "package-manager"
    assert subject_of("we store data in SQLite") == subject_of("move to Postgres") == "database"


def test_plain_statement_drops_chat_framing() -> None:
    [rule] = statements_in("From now on, always run mypy before committing.")
    assert rule.statement == "Always run mypy before committing."


def test_rules_and_requests_are_kept_apart(log: ClaudeLog) -> None:
    (log.user("fix the bug in cart.py and make the tests pass")
     .reply("Done.")
     .user("Always use pnpm, never npm.")
     .reply("Noted.")
     .user("Note: this repo uses Postgres 16. Add an index on orders.created_at."))
    analysis = log.analyse()
    assert [r.text for r in analysis.requests] == [
        "fix the bug in cart.py and make the tests pass",
        "Add an index on orders.created_at.",  # the task part; the note is a rule
    ]
    assert [(r.kind, r.subject) for r in analysis.rules] == [
        (K.RULE, "package-manager"), (K.NOTE, "database")]
    assert analysis.rules[0].evidence.message_id
    assert analysis.rules[0].evidence.timestamp is not None


def test_a_later_statement_on_the_same_subject_supersedes(log: ClaudeLog) -> None:
    (log.user("Always use npm for scripts.")
     .reply("OK.")
     .user("no, use pnpm not npm")
     .reply("Switched.")
     .user("We decided to use SQLite for the database.")
     .reply("OK.")
     .user("Change of plan: drop SQLite, we move to Postgres."))
    analysis = log.analyse()
    npm, pnpm = analysis.rules
    assert npm.superseded_by == "no, use pnpm not npm"
    assert pnpm.superseded_by is None and pnpm.kind is K.CORRECTION
    assert [r.text for r in analysis.current_rules] == ["no, use pnpm not npm"]
    sqlite, postgres = analysis.decisions
    assert sqlite.superseded_by is not None and postgres.superseded_by is None
    assert postgres.replaces == "SQLite" and postgres.chosen == "Postgres"


def test_correction_without_a_general_rule(log: ClaudeLog) -> None:
    (log.user("add a --json flag to the report command")
     .reply("Added.")
     .user("no, the flag must be called --format json instead"))
    analysis = log.analyse()
    assert analysis.rules == []
    assert [c.text for c in analysis.corrections] == [
        "no, the flag must be called --format json instead"]


@pytest.mark.parametrize(("text", "kind", "subject"), [
    ("And run `ruff check . && mypy billing` before you finish.", K.RULE, "linter"),
    ('also: for callouts we use `!!! note` admonitions, never bold "Note:" paragraphs',
     K.NOTE, None),
    ("Always run things through `uv run` (e.g. `uv run pytest`), never pip install.",
     K.RULE, "package-manager"),
    ("Decision: Celery with Redis as the broker.", K.DECISION, "background-jobs"),
    ("For data fetching let's use SWR.", K.DECISION, "data-fetching"),
])
def test_more_phrasings(text: str, kind: StatementKind, subject: str | None) -> None:
    [statement] = statements_in(text)
    assert statement.kind is kind and statement.text.endswith(text[-12:])
    if subject is not None:
        assert statement.subject == subject


def test_rename_asked_as_a_task_is_both() -> None:
    from reverie.analysis.statements import split_request

    [rename], task = split_request("Rename the `useCartStore` hook to `useBasket` everywhere")
    assert (rename.replaces, rename.chosen) == ("useCartStore", "useBasket")
    assert task == "Rename the `useCartStore` hook to `useBasket` everywhere"
    [rename], _ = split_request("rename invoice_total() to compute_invoice_total() please")
    assert (rename.replaces, rename.chosen) == ("invoice_total", "compute_invoice_total")
    [rename], _ = split_request("Rename the Guide section to How-to.")
    assert (rename.replaces, rename.chosen) == ("Guide", "How-to")
    [rename], _ = split_request("rename src/a.py to src/b.py")
    assert (rename.replaces, rename.chosen) == ("src/a.py", "src/b.py")
    assert split_request("rename it to foo")[0] == []  # a pronoun names nothing


def test_choice_of_skips_negated_terms() -> None:
    from reverie.analysis.statements import KNOWN_SUBJECTS, choice_of

    assert "package-manager" in KNOWN_SUBJECTS
    assert choice_of("Never npm or yarn; use pnpm", "package-manager") == "pnpm"
    [correction] = statements_in("No, don't use npm here — use pnpm")
    assert correction.chosen == "pnpm"


def test_a_restatement_does_not_supersede(log: ClaudeLog) -> None:
    (log.user("Note: this repo uses pnpm — never npm or yarn. Set the project up.")
     .reply("OK")
     .user("No, don't use npm here — use pnpm"))
    note, correction = log.analyse().rules
    assert note.superseded_by is None and correction.superseded_by is None
    assert note.avoid == ["npm", "yarn"]


def test_a_negation_is_not_framing() -> None:
    """"no" before a comma is chat framing; "no longer" / "no more" is the statement."""
    from reverie.analysis.statements import plain_statement

    assert plain_statement("no longer use mkdocs gh-deploy") == "No longer use mkdocs gh-deploy"
    assert plain_statement("no more console.log in src") == "No more console.log in src"
    assert plain_statement("No, use pnpm") == "Use pnpm"
    assert plain_statement("nope: the flag is --json") == "The flag is --json"
