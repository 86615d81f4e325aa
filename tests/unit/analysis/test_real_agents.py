"""Regression tests built from the real Codex, Claude Code and Gemini CLI sessions of
tests/fixtures/real (issue 26; origins and licences in tests/fixtures/real/SOURCES.md). Each test
reads a real file through the real reader, or a real command, error or reply taken verbatim
from one, and pins one defect class of the issue (the class is named above each test)."""

from __future__ import annotations

import json
import os
import shutil
from datetime import UTC, datetime
from pathlib import Path

from reverie.analysis import SessionAnalysis, analyse_command, analyse_session
from reverie.analysis.commands import CommandCategory
from reverie.analysis.statements import StatementKind
from reverie.curation.candidates import session_facts
from reverie.session_memory.rule_based import NotesRenderer
from reverie.transcripts.model import Message
from reverie.transcripts.reader import TranscriptReader
from reverie.transcripts.tokens import context_tokens

REAL = Path(__file__).resolve().parents[2] / "fixtures" / "real"
CPOLAR = REAL / "cpolar-connect" / "home" / ".codex" / "sessions" / "2025" / "09" / "16"
ATB = REAL / "ai-trading-bot" / "home" / ".codex" / "sessions" / "2025" / "10"
CLAUDE = REAL / "m-claude" / "home" / ".claude" / "projects" / "-Users--USER-"
GEMINI = next((REAL / "m-gemini" / "home" / ".gemini" / "tmp").iterdir()) / "chats"


def _read(path: Path) -> tuple[list[Message], SessionAnalysis]:
    reader = TranscriptReader(path)
    messages = list(reader)
    return messages, analyse_session(messages, reader.session)


def _cpolar() -> Path:
    """The resumed session: Codex copied the first session's history into it."""
    return next(CPOLAR.glob("rollout-*-613a9a68-*.jsonl"))


def _notes(analysis: SessionAnalysis) -> str:
    return "\n".join(line for lines in NotesRenderer(analysis).build().values() for line in lines)


# -- class 1: edits and reads made through the shell ------------------------------------------

def test_codex_apply_patch_heredocs_are_edits_and_sed_reads_are_reads() -> None:
    _, analysis = _read(_cpolar())  # ten `bash -lc "apply_patch <<'PATCH' …"` patches
    edited = {f.path: f for f in analysis.files if f.edits}
    assert {"src/cpolar_connect/cli.py", "src/cpolar_connect/i18n.py",
            "tests/test_status_local_only.py"} <= set(edited)
    assert edited["tests/test_config_basic.py"].created  # "*** Add File:" creates it
    assert not edited["src/cpolar_connect/cli.py"].created
    read = {f.path for f in analysis.files if f.reads}
    assert "src/cpolar_connect/doctor.py" in read  # `sed -n '1,320p' src/cpolar_connect/…`
    assert "no edit in between" not in _notes(analysis)


# -- class 2: each fix credited to the change after its own error ------------------------------

def test_the_status_test_failure_is_credited_to_the_test_edit_and_kept_out_of_memory() -> None:
    _, analysis = _read(_cpolar())
    (fixed,) = [e for e in analysis.errors if "AssertionError" in e.error]
    assert fixed.status == "fixed" and fixed.fix is not None
    assert fixed.fix.path == "tests/test_status_local_only.py"  # not cli.py / i18n.py before
    assert fixed.proved_by == "pytest -q"
    # the test the session itself wrote was wrong at first: writing it, not a lesson
    assert not [f for f in session_facts(analysis) if f.kind == "fix"]


# -- class 3: chat fragments, answers and pasted prompts are not rules or requests -------------

def test_bare_yes_in_chinese_and_a_one_word_answer_are_not_requests() -> None:
    _, analysis = _read(_cpolar())
    requests = [r.text for r in analysis.requests]
    assert "可以" not in requests  # "OK": the answer to "may I write these files?"
    assert "可以，开始实施" in requests  # "OK, start implementing" asks for something
    _, m03 = _read(CLAUDE / "8914a511-2982-4b5b-886b-cb526da278b1.jsonl")
    assert "M-Claude" not in [r.text for r in m03.requests]  # answers "which repository?"
    assert m03.counts.answers >= 1


#: a command prompt in the shape Spec Kit's slash commands paste into the user message: the
#: person's words fenced under "User Input", then the command's own outline and MUST lines
#: (written here; the session around it is a real one)
_PASTED_COMMAND = """
## User Input

```text
{words}
```

You **MUST** consider the user input before proceeding (if not empty).

## Outline

You are updating the project's test plan at `.specify/memory/test-plan.md`.

1. Load the existing plan. Identify every placeholder token of the form `[ALL_CAPS]`.
2. Collect values for the placeholders from the user input and the repository.
   - You MUST NOT invent a value the repository contradicts.
   - Note: dates use ISO format YYYY-MM-DD.
3. Draft the updated plan, replacing every placeholder with concrete text.
4. Validate before the final output:
   - No remaining unexplained bracket tokens.
   - Never remove a section heading.
5. Write the completed plan back to `.specify/memory/test-plan.md` (overwrite).
6. Output a final summary to the user.

## Formatting

- Use Markdown headings exactly as in the template.
- Keep lines under 100 characters.
"""


def test_a_pasted_command_prompt_gives_the_persons_words_and_no_rules(tmp_path: Path) -> None:
    """A slash command's prompt pasted into the real t02 rollout in place of its first request
    (the turn cut before the person's second message): the person's words are the request and
    the title; the command's "MUST" and "Note:" lines are not this person's rules."""
    words = "Cover the failing unit tests first, then the integration tests"
    prompt = _PASTED_COMMAND.format(words=words)
    source = next((ATB / "17").glob("rollout-*.jsonl"))
    lines = source.read_text().splitlines(keepends=True)
    first = next(i for i, line in enumerate(lines) if "fix any failing unit tests" in line)
    second = next(i for i, line in enumerate(lines) if "python3 should point to" in line)
    rows = [json.loads(line) for line in lines[:second]]
    for row in rows[first:first + 2]:  # the request's response_item and its user_message event
        payload = row["payload"]
        if payload["type"] == "message":
            payload["content"] = [{"type": "input_text", "text": prompt}]
        else:
            payload["message"] = prompt
    path = tmp_path / source.name
    path.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows))
    _, analysis = _read(path)
    assert [r.text for r in analysis.requests] == [words]
    assert analysis.title is not None and analysis.title.startswith("Cover the failing")
    assert analysis.rules == []  # "You **MUST** consider the user input…" is the command's


# -- class 4: no false "still failing", no false "passed" --------------------------------------

def test_probes_of_missing_tools_and_empty_greps_are_not_still_failing() -> None:
    _, analysis = _read(GEMINI / "session-2026-01-01T21-12-a1598d42.json")
    assert analysis.still_failing == []  # tailscale not installed, grep found nothing: answers
    assert analysis.counts.probe_failures >= 2
    assert "Still failing" not in _notes(analysis)


def test_a_codex_sandbox_refusal_is_a_failure_never_a_pass() -> None:
    _, analysis = _read(next((ATB / "17").glob("rollout-*.jsonl")))
    assert analysis.end.last_check_ok is False  # "failed in sandbox: … ConftestImportFailure"
    (pytest,) = [c for c in analysis.commands if c.key == "pytest"]
    assert pytest.working is None  # never passed: memory keeps no test command from it
    assert not [f for f in session_facts(analysis) if f.kind == "command"]
    errors = [e.error for e in analysis.still_failing]
    assert any("unsupported operand type(s) for |" in e for e in errors)


# -- class 5: commands read whole ----------------------------------------------------------------

def test_real_heredoc_checks_and_info_flags_are_not_project_commands() -> None:
    heredoc = ("python - << 'PY'\nfrom click.testing import CliRunner\nfrom cpolar_connect.cli "
               "import cli\nrunner = CliRunner()\nprint(runner.invoke(cli, ['--help']).output)\n"
               "PY")  # cpolar c02, verbatim
    info = analyse_command(heredoc)
    assert info.category is CommandCategory.EXPLORE and info.chain == ()
    for command in ("pytest --version", "python3 -m pytest --version",
                    "pytest --collect-only tests/unit/strategies/test_ml_basic_unit.py"):
        assert analyse_command(command).category is CommandCategory.EXPLORE, command  # t02
    assert analyse_command("python3 -m pytest tests/unit --maxfail=1 -q").category \
        is CommandCategory.TEST


# -- class 6: requests and titles ------------------------------------------------------------

def test_gemini_init_prompt_is_a_command_and_a_research_session_gets_notes() -> None:
    _, g01 = _read(GEMINI / "session-2025-12-24T06-27-36e8d28f.json")
    assert not [r for r in g01.requests if "brings the power of Gemini" in r.text]
    assert g01.title == "create a new folder in my home directory called Gemini-Playground"
    _, g04 = _read(GEMINI / "session-2026-01-11T06-20-ed4b4872.json")
    notes = _notes(g04)  # read the scripts, said what it would run, ended: that is the state
    assert "Latest request: sync logs and generate journal" in notes
    assert "sync_raw_logs.py" in notes


def test_the_task_names_the_session_not_the_context_sentence_after_it() -> None:
    _, analysis = _read(next((ATB / "17").glob("rollout-*.jsonl")))
    assert analysis.title == "fix any failing unit tests"


def test_stale_summaries_of_other_sessions_are_not_the_title() -> None:
    _, analysis = _read(CLAUDE / "ae81c05d-429b-467f-91bf-c436943fd8ba.jsonl")
    assert analysis.title is not None and analysis.title.startswith(
        "investigate why terminal hard freezes")


def test_shell_commits_reach_the_notes_and_temp_builds_are_not_files() -> None:
    _, g03 = _read(GEMINI / "session-2026-01-01T21-12-a1598d42.json")
    assert [(c.sha, c.message) for c in g03.commits] == [
        ("3578a31", "Update journals and generation script")]
    assert "Committed: `3578a31` Update journals and generation script" in _notes(g03)
    _, m01 = _read(CLAUDE / "18240050-3ee8-41cd-a89a-0a5c4b709607.jsonl")
    assert "/tmp/" not in "\n".join(NotesRenderer(m01).build()["Files and Functions"])


# -- class 7: durable facts the sessions show -------------------------------------------------

def test_a_commit_hook_read_and_a_path_found_after_a_miss_become_facts() -> None:
    _, m02 = _read(CLAUDE / "621cc355-460a-48af-8722-af105fc5d65e.jsonl")
    assert m02.hooks == ["gitleaks"]  # `cat .git/hooks/pre-commit`: a gitleaks scan
    assert "pulled `82226fd..7a23400`" in m02.vcs
    _, m03 = _read(CLAUDE / "8914a511-2982-4b5b-886b-cb526da278b1.jsonl")
    assert m03.relocated_paths == [("M-Claude", "Documents/M-Claude")]
    texts = [f.text for f in session_facts(m03)] + [f.text for f in session_facts(m02)]
    assert "`M-Claude` is at `Documents/M-Claude`, not `M-Claude`." in texts
    assert "Pre-commit hooks check the code: `gitleaks`." in texts


def test_what_the_sandbox_refused_twice_is_a_learning_not_an_error() -> None:
    _, c02 = _read(_cpolar())  # two `python - << 'PY'` checks, refused alike
    (blocked,) = c02.blocked
    assert blocked.startswith("`python - << 'PY'` (2×)")
    assert "cannot create temp file for here document" in blocked
    assert c02.still_failing == []
    learnings = NotesRenderer(c02).build()["Learnings"]
    assert any("here document" in line for line in learnings)


def test_a_toolchain_pin_and_a_default_folder_are_the_users_standing_words() -> None:
    _, t02 = _read(next((ATB / "17").glob("rollout-*.jsonl")))
    assert [(r.kind, r.text) for r in t02.rules] == [
        (StatementKind.NOTE, "python3 should point to python 3.11.")]
    _, g01 = _read(GEMINI / "session-2025-12-24T06-27-36e8d28f.json")
    assert [(r.kind, r.text) for r in g01.rules] == [
        (StatementKind.PREFERENCE, "make your default folder to run in 'Gemini-Playground'")]
    _, g02 = _read(GEMINI / "session-2025-12-24T06-40-c330aea9.json")
    assert g02.rules == []  # "Verify button click handlers. Debug event listeners. …": a task


def test_lines_broken_by_upstream_redaction_are_counted_skips() -> None:
    reader = TranscriptReader(CLAUDE / "621cc355-460a-48af-8722-af105fc5d65e.jsonl")
    messages = list(reader)  # "[REDACTED_PHONE]" replaced a number: five lines are not JSON
    assert reader.stats.skipped == 5 and len(reader.stats.errors) == 5
    assert messages and analyse_session(messages, reader.session).title == "open M-Claude repo"


# -- class 8: usage -------------------------------------------------------------------------------

def test_a_real_request_timed_out_record_does_not_reset_the_context_estimate() -> None:
    messages, _ = _read(REAL / "snippets" / "claude-code-request-timed-out.jsonl")
    synthetic = [m for m in messages if m.model == "<synthetic>"]
    assert synthetic and all(m.usage is not None and m.usage.context_tokens == 0
                             for m in synthetic)
    # the last real call had 9 + 11,257 + 13,339 tokens of context; three timeouts followed
    assert context_tokens(messages) >= 24_605


# -- class 9: sessions dated by their own times --------------------------------------------------

def test_a_copied_home_is_dated_by_the_sessions_not_the_copy(tmp_path: Path) -> None:
    from reverie.curation.sessions import SessionSource
    from reverie.dream.rule_based import consolidate_sources

    copy = tmp_path / "621cc355-460a-48af-8722-af105fc5d65e.jsonl"
    shutil.copyfile(CLAUDE / copy.name, copy)
    copied = datetime(2030, 6, 1, tzinfo=UTC).timestamp()
    os.utime(copy, (copied, copied))  # what a synced or restored home shows
    source = SessionSource(session_id="621cc355-460a-48af-8722-af105fc5d65e", path=copy,
                           agent="claude-code", cwd="/Users/[USER]",
                           updated_at=datetime.fromtimestamp(copied, UTC))
    memory = tmp_path / "memory"
    memory.mkdir()
    consolidate_sources(memory, [source])
    text = "\n".join(p.read_text("utf-8") for p in memory.glob("*.md"))
    assert "generate_journals.py" in text  # the session ran it on 2026-01-16 (its own times)
    assert "2026-01-16" in text and "2030" not in text
    stamps = [json.loads(line).get("timestamp") for line in copy.read_bytes().split(b"\n")[:5]]
    assert any(s and s.startswith("2026-01-16") for s in stamps)
