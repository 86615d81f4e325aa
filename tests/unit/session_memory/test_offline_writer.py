"""The offline writer on real transcripts, and merging into hand-edited notes."""

from __future__ import annotations

from pathlib import Path

from reverie.config import Settings
from reverie.events import discard_events
from reverie.session_memory.source import InMemoryConversation
from reverie.session_memory.state import ExtractionState
from reverie.session_memory.template import check_notes, default_template, parse_notes
from reverie.session_memory.writers import WriteRequest, build_offline_notes
from reverie.transcripts.model import Message, Session
from reverie.transcripts.reader import load_transcript

from .conftest import CLAUDE_INLINE, CLAUDE_SPOTTER, CODEX_ROLLOUT, Conversation


def _write(session: Session, messages: list[Message], current: str | None = None,
           state: ExtractionState | None = None) -> tuple[str, dict[str, list[str]], int]:
    template = default_template()
    request = WriteRequest(
        session=session, workspace=Path(session.cwd or "/"), notes_path=Path("/n/notes.md"),
        current_notes=current if current is not None else template.text, template=template,
        conversation=InMemoryConversation(messages), state=state or ExtractionState(),
        settings=Settings(), events=discard_events,
    )
    outcome = build_offline_notes(request, messages)
    assert outcome.text is not None and outcome.generated is not None
    return outcome.text, outcome.generated, outcome.redactions


def _section(text: str, title: str) -> str:
    section = parse_notes(text).get(title)
    assert section is not None, title
    return section.body_text()


def test_claude_fixture_facts() -> None:
    transcript = load_transcript(CLAUDE_INLINE)
    text, _, redactions = _write(transcript.session, transcript.messages)
    assert check_notes(text) == []
    assert redactions == 0
    # the first user request (a slash command with arguments) is the task and the title
    request = "@CLAUDE.md を最新の状態にアップデートしてください"
    assert request in _section(text, "Task specification")
    assert "/orchestrator" in _section(text, "Session Title")
    # the file the session edits, with edit and read counts, relative to the session cwd
    files = _section(text, "Files and Functions")
    assert "- `CLAUDE.md` (edited, 1 edit)" in files
    assert "package.json" not in files  # only read: context, not a fact
    # a failed `tree` is exploration and the failed Edit / Task calls are the agent's own tool
    # slips ("File has not been read yet", a missing parameter): none of them is a project error
    errors = _section(text, "Errors & Corrections")
    assert "tree" not in errors
    assert "File has not been read yet" not in errors
    assert "`prompt` is missing" not in errors
    # exploration (ls, tree, cat…) is never presented as the project's workflow
    workflow = _section(text, "Workflow")
    assert "ls -la" not in workflow and "tree " not in workflow
    key_results = _section(text, "Key results")
    assert key_results.startswith("CLAUDE.mdファイルを最新の状態にアップデートしました")
    assert "edited CLAUDE.md" in _section(text, "Worklog")


def test_codex_fixture_facts() -> None:
    transcript = load_transcript(CODEX_ROLLOUT)
    text, _, _ = _write(transcript.session, transcript.messages)
    assert check_notes(text) == []
    # the CODEMIE_API_KEY test values appear only in exploration output, which no fact quotes
    assert "CODEMIE_API_KEY=" not in text
    assert _section(text, "Session Title") == "show tools"
    spec = _section(text, "Task specification")
    assert spec.splitlines() == ["- show tools",
                                 "- let's update the defailt context compart to 90 in env var"]
    files = _section(text, "Files and Functions")
    assert "- `src/agents/plugins/codemie-code.plugin.ts` (edited, 1 edit)" in files
    assert "`src/agents/plugins/opencode/opencode.plugin.ts` (edited, 1 edit; defines/changes" \
        in files
    errors = _section(text, "Errors & Corrections")
    assert ('`npm test -- --run src/agents/plugins/__tests__/codemie-code-reasoning.test.ts -t '
            '"Compaction Config"` failed') in errors
    # the fix is the edit right before the first passing run (the other edit is counted)
    assert ("→ fixed by changes `openCodeConfig` in "
            "`src/agents/plugins/opencode/opencode.plugin.ts` (+1 other edit)") in errors
    assert "still failing" not in errors
    assert "write_stdin" not in errors  # PTY polls repeat their command's result
    workflow = _section(text, "Workflow").splitlines()
    assert workflow == [
        "- Build: `npm run build`",
        "- Test: `npm test -- --run src/agents/plugins/__tests__/codemie-code-reasoning.test.ts`"
        " (3×, failed 1×)",
    ]
    assert "git status" not in _section(text, "Workflow")  # exploration
    assert "Latest request: let's update the defailt context compart" in _section(
        text, "Current State")


def test_spotter_fixture_facts() -> None:
    transcript = load_transcript(CLAUDE_SPOTTER)
    text, _, _ = _write(transcript.session, transcript.messages)
    assert check_notes(text) == []
    assert "Work on bead spotter-dov" in _section(text, "Task specification")
    files = _section(text, "Files and Functions")
    assert "`lib/spotter_web/live/transcript_computers.ex` (created" in files
    assert "`lib/spotter_web/live/session_live.ex` (edited" in files
    # the session ends in the middle of an edit
    assert "In progress: Edit `lib/spotter_web/live/session_live.ex`" in _section(
        text, "Current State")


def test_user_correction_is_recorded(conversation: Conversation) -> None:
    conv = (conversation.user("add a --json flag to the report command")
            .edit("/work/project/report.py", "def report(json=False):")
            .assistant("Added the flag.")
            .user("no, the flag must be called --format json instead")
            .assistant("Renamed it."))
    text, _, _ = _write(conv.session, conv.messages)
    assert "User correction: no, the flag must be called --format json instead" in _section(
        text, "Errors & Corrections")
    assert "`report.py` (edited, 1 edit; defines/changes `report`)" in _section(
        text, "Files and Functions")


def test_secrets_never_reach_the_notes(conversation: Conversation) -> None:
    key = "sk-" + "proj-" + "Zx9" * 10
    conv = (conversation.user(f"use OPENAI_API_KEY={key} to call the API")
            .shell(f"curl -H 'Authorization: Bearer {key}' https://api.example.test", "401", 22))
    text, _, redactions = _write(conv.session, conv.messages)
    assert key not in text
    assert redactions >= 2
    assert "[REDACTED:openai]" in text


def test_hand_edits_are_kept_and_generated_lines_replaced(conversation: Conversation) -> None:
    conv = conversation.user("build the parser").edit("/work/project/parser.py")
    first, generated, _ = _write(conv.session, conv.messages)
    state = ExtractionState(generated=generated)
    # the user adds a line, renames the title, adds a section and a preamble
    edited = first.replace("# Learnings\n_What worked, what did not and what to avoid, without "
                           "repeating the other sections_\n",
                           "# Learnings\n_What worked, what did not and what to avoid, without "
                           "repeating the other sections_\n- remember: the parser is LL(1)\n")
    edited = edited.replace("build the parser\n", "My parser session\n", 1)
    edited = "Private preface\n\n" + edited + "\n# My scratchpad\nkeep me\n"
    conv.shell("pytest -q", "1 failed", 1).edit("/work/project/lexer.py")
    second, _, _ = _write(conv.session, conv.messages, current=edited, state=state)
    assert second.startswith("Private preface\n")
    assert "- remember: the parser is LL(1)" in _section(second, "Learnings")
    assert _section(second, "Session Title") == "My parser session"
    assert "`lexer.py` (edited, 1 edit)" in _section(second, "Files and Functions")
    assert "keep me" in _section(second, "My scratchpad")
    # generated lines from the first run were replaced, not duplicated
    assert _section(second, "Files and Functions").count("`parser.py`") == 1
    problems = [p for p in check_notes(second) if p.severity == "error"]
    assert problems == []


def test_quoted_headers_and_fences_cannot_break_the_structure(conversation: Conversation) -> None:
    reply = "Here is the result:\n# Not a section\n```python\nprint('unclosed')\n" + "x" * 300
    conv = conversation.user("write it").assistant(reply)
    text, _, _ = _write(conv.session, conv.messages)
    assert check_notes(text) == []
    assert "\\# Not a section" in _section(text, "Key results")


def test_lost_state_does_not_duplicate_generated_lines(conversation: Conversation) -> None:
    conv = conversation.user("build the parser").edit("/work/project/parser.py")
    first, _, _ = _write(conv.session, conv.messages)
    again, _, _ = _write(conv.session, conv.messages, current=first, state=ExtractionState())
    assert again == first
