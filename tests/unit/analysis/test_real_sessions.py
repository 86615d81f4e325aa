"""Regression tests built from real sessions (issue 26): each defect class found on public
transcripts, reproduced from a real snippet (the Aider sessions are byte slices of the aider
author's own history in tests/fixtures/real/aider; see tests/fixtures/real/SOURCES.md)."""

from __future__ import annotations

import re
from pathlib import Path

from reverie.analysis import analyse_session
from reverie.analysis.outcomes import output_verdict, prose
from reverie.analysis.statements import split_request
from reverie.session_memory.rule_based import NotesRenderer
from reverie.transcripts.aider import AiderRun, parse_history
from reverie.transcripts.base import ParseStats
from reverie.transcripts.model import Message, ToolCall, ToolKind, ToolResult

HISTORY = (Path(__file__).resolve().parents[2] / "fixtures" / "real" / "aider" / "home"
           / "repo" / ".aider.chat.history.md")


def _runs() -> dict[str, AiderRun]:
    runs = parse_history(HISTORY, HISTORY.read_bytes(), ParseStats())
    return {f"{r.session.started_at:%m%d-%H%M}": r for r in runs if r.session.started_at}


def _notes(run: AiderRun) -> dict[str, list[str]]:
    return NotesRenderer(analyse_session(run.messages, run.session)).build()


# -- class 6: requests, titles, Aider's commands, commits, "in progress" ------------------

def test_aider_commands_are_not_requests_and_undo_reverts_the_commits() -> None:
    run = _runs()["0806-1021"]  # blame.py: two commits, then /diff, /undo, /undo, /ex
    analysis = analyse_session(run.messages, run.session)
    requests = [r.text for r in analysis.requests]
    assert requests == ["only consider non-blank lines",
                        "i mean non-blank not including the hash, etc"]
    assert [(c.sha, c.undone) for c in analysis.commits] == [("7d4898d", True), ("5fe64cb", True)]
    state = "\n".join(_notes(run)["Current State"])
    assert "Reverted with /undo: `7d4898d`" in state and "`5fe64cb`" in state
    assert "Latest request: i mean non-blank" in state
    assert "/ex" not in state and "/undo\n" not in state


def test_aider_edits_are_done_not_in_progress_and_commits_reach_the_notes() -> None:
    run = _runs()["0805-1933"]  # one edit, commit fd43cd4, then /diff and /ex
    notes = _notes(run)
    state = "\n".join(notes["Current State"])
    assert "In progress" not in state
    assert "Committed: `fd43cd4` feat: Use the Spinner instead of the inlined custom spinner" \
        in state
    assert "<<<<<<< SEARCH" not in state  # the reply's edit block is not its prose
    assert notes["Files and Functions"] == ["- `aider/utils.py` (edited, 1 edit)"]
    assert notes["Session Title"] == ["Use the Spinner instead of the inlined custom spinner"]


def test_the_text_after_clear_is_the_request_and_ask_hands_on_its_question() -> None:
    runs = _runs()
    cache = analyse_session(runs["0808-0954"].messages, runs["0808-0954"].session)
    assert all(not r.text.startswith("/") for r in cache.requests)
    assert cache.end.last_request and cache.end.last_request.startswith("cache the `TreeContext`")
    ask = analyse_session(runs["0806-0944"].messages, runs["0806-0944"].session)
    assert ask.requests[0].text == "is there a portable way to know the user's preferred language?"


def test_last_reply_is_prose_without_edit_blocks_or_thinking() -> None:
    reply = ("Here's the change:\n\naider/utils.py\n```python\n<<<<<<< SEARCH\nold\n=======\n"
             "new\n>>>>>>> REPLACE\n```\n\n<thinking-content-7>plan</thinking-content-7>"
             "This replaces the spinner.")
    assert prose(reply) == "Here's the change:\n\naider/utils.py\n\n\nThis replaces the spinner."


# -- class 4: no "passed" (or "still failing") the output does not show -------------------

def test_a_user_run_without_exit_code_is_judged_by_its_summary_or_not_at_all() -> None:
    run = _runs()["0806-0906"]  # /test pytest twice: 2 failed, then 1 failed; an edit after
    analysis = analyse_session(run.messages, run.session)
    assert analysis.end.last_check_ok is False
    (error,) = analysis.still_failing
    assert error.changed_since >= 1  # edited after the last failure and never re-run
    state = "\n".join(_notes(run)["Current State"])
    assert "passed" not in state and "Still failing" not in state
    assert "Not re-run since the last change: `pytest tests/basic/test_main.py`" in state
    assert output_verdict("========================= 2 failed, 25 passed in 4.37s") is False
    assert output_verdict("flake8...........Failed\n- hook id: flake8") is False
    assert output_verdict("27 passed in 3.1s") is True
    assert output_verdict("Installing collected packages") is None


# -- class 2: a fix is credited per error signature -----------------------------------------

def _shell(n: int, command: str, code: int, output: str) -> list[Message]:
    call = ToolCall(id=f"c{n}", name="Bash", kind=ToolKind.SHELL, command=command, input={})
    return [Message(id=f"a{n}", role="assistant", tool_calls=[call]),
            Message(id=f"r{n}", role="user", tool_results=[
                ToolResult(call_id=f"c{n}", exit_code=code, output=output)])]


def _edit(n: int, path: str, old: str, new: str) -> list[Message]:
    call = ToolCall(id=f"e{n}", name="Edit", kind=ToolKind.EDIT, file_paths=[path],
                    input={"file_path": path, "old_string": old, "new_string": new})
    return [Message(id=f"ae{n}", role="assistant", tool_calls=[call]),
            Message(id=f"re{n}", role="user", tool_results=[
                ToolResult(call_id=f"e{n}", output="The file has been updated.")])]


def test_each_error_is_credited_to_the_change_after_its_own_last_occurrence() -> None:
    # the two lint errors aider's own session met (a110): F821 in main.py, then E722 in
    # base_coder.py, each fixed by a different edit; the E722 fix is not the F821 fix
    messages = [
        Message(id="u", role="user", text="catch SuitableRepoNotFound not FileNotFoundError"),
        *_shell(1, "flake8 aider", 1, "aider/main.py:487:16: F821 undefined name "
                "'SuitableRepoNotFound'"),
        *_edit(1, "/w/aider/main.py", "import sys", "import sys\nfrom aider.repo import "
               "SuitableRepoNotFound"),
        *_shell(2, "flake8 aider", 1, "aider/coders/base_coder.py:748:9: E722 do not use "
                "bare 'except'"),
        *_edit(2, "/w/aider/coders/base_coder.py", "except:", "except Exception:"),
        *_shell(3, "flake8 aider", 0, ""),
    ]
    analysis = analyse_session(messages)
    fixes = {e.error.split(":")[-1].strip()[:4]: e for e in analysis.errors}
    assert set(fixes) == {"F821", "E722"}, analysis.errors
    assert fixes["F821"].fix is not None and fixes["F821"].fix.path.endswith("main.py")
    assert fixes["E722"].fix is not None and fixes["E722"].fix.path.endswith("base_coder.py")
    assert fixes["E722"].proved_by == "flake8 aider"
    assert not analysis.still_failing


def test_the_same_error_at_another_line_is_one_error_fixed_after_its_last_occurrence() -> None:
    messages = [
        Message(id="u", role="user", text="make the lint pass"),
        *_shell(1, "flake8 aider", 1, "aider/main.py:487:16: F821 undefined name 'X'"),
        *_edit(1, "/w/README.md", "a", "b"),
        *_shell(2, "flake8 aider", 1, "aider/main.py:490:16: F821 undefined name 'X'"),
        *_edit(2, "/w/aider/main.py", "import sys", "import sys\nfrom x import X"),
        *_shell(3, "flake8 aider", 0, ""),
    ]
    (error,) = analyse_session(messages).errors
    assert error.failures == 2 and error.status == "fixed"
    assert error.fix is not None and error.fix.path.endswith("main.py")
    assert error.other_changes == 0  # the README edit came before the last occurrence


# -- class 3: chat fragments never become rules ---------------------------------------------

def test_task_steps_and_leaning_fragments_are_not_rules() -> None:
    for text in (
        "don't replace the tree cache. add the tree context cache.",  # aider a113
        "if we can get a language, add it to `platform_text`. but don't assume english as a "
        "fallback, just omit the language info.",  # aider a022
        "It's just separate phase1.",  # issue 26
        "That should always go in the existing file.",
    ):
        statements, task = split_request(text)
        assert statements == [], (text, statements)
        assert task.strip()
    for text in ("Please don't add comments.", "Always run the linter before committing.",
                 "Fix the login bug. From now on use pnpm."):
        statements, _task = split_request(text)
        assert len(statements) == 1, text


def test_the_real_sessions_leave_no_rule_in_memory() -> None:
    rules = [r.text for run in _runs().values()
             for r in analyse_session(run.messages, run.session).rules]
    # of every "don't …" said in 18 sessions, only a choice between two named things stands
    # (a011); the task steps, "those tests", "no, don't mock completion" (a078) and "don't
    # modify `send_with_retries`" (a078) do not
    assert rules == ["don't use `IgnorantTemporaryDirectory` use GitTemporaryDirectory"]
    assert not any(re.search(r"tree cache|assume english|no-git|mock|send_with_retries", r, re.I)
                   for r in rules)


# -- class 7: durable facts the output shows ------------------------------------------------

def test_pre_commit_hooks_seen_in_the_output_become_one_fact() -> None:
    from reverie.curation.candidates import session_facts

    runs = _runs()
    lint = analyse_session(runs["0806-0944"].messages, runs["0806-0944"].session)  # aider a022
    assert lint.hooks == ["isort", "black", "flake8"]
    assert not lint.hooks_block_commits  # Aider ran them after an edit, no commit was refused
    (fact,) = [f for f in session_facts(lint) if "hook" in f.text.lower()]
    assert fact.text == "Pre-commit hooks check the code: `isort`, `black`, `flake8`."
    blocked = analyse_session([
        Message(id="u", role="user", text="commit the fix"),
        *_shell(1, "git commit -m 'fix: import'", 1,
                "black....................................................................Passed\n"
                "flake8...................................................................Failed\n"
                "- hook id: flake8\n- exit code: 1\n\naider/main.py:487:16: F821 undefined name"),
    ])
    assert blocked.hooks == ["black", "flake8"] and blocked.hooks_block_commits
    (fact,) = [f for f in session_facts(blocked) if "hook" in f.text.lower()]
    assert fact.text.endswith("a failing hook blocks `git commit`.")
    assert not blocked.errors or all(e.category == "vcs" for e in blocked.errors)


# -- class 3 (more): answers, menu picks, retractions, pasted prompts -----------------------

def _chat(*turns: tuple[str, str]) -> list[Message]:
    out: list[Message] = []
    for n, (role, text) in enumerate(turns):
        out.append(Message(id=f"m{n}", role=role, text=text))  # type: ignore[arg-type]
    return out


def test_an_answer_to_the_agents_question_is_not_a_rule() -> None:
    analysis = analyse_session(_chat(
        ("user", "add conversation export to the CLI"),
        ("assistant", "I can put the exporter into the existing module or a new one. Which do "
                      "you prefer?"),
        ("user", "Put into existing with conversation incremental. Never a new module."),
    ))
    assert analysis.rules == []
    assert any("existing" in r.text for r in analysis.requests)


def test_a_bare_menu_pick_is_not_a_request_or_a_title() -> None:
    analysis = analyse_session(_chat(
        ("assistant", "Options:\nA) keep the cache\nB) drop it\nWhich one?"),
        ("user", "B"),
    ))
    assert analysis.requests == [] and analysis.title is None
    assert analysis.counts.answers == 1


def test_a_retracted_rule_is_withdrawn() -> None:
    analysis = analyse_session(_chat(
        ("user", "Always keep phase1 in a separate module from now on."),
        ("assistant", "Understood."),
        ("user", "Scratch that, put phase1 with the rest."),
    ))
    assert [r.superseded_by for r in analysis.rules] == ["(withdrawn)"]
    assert analysis.current_rules == []


def test_note_lines_of_a_pasted_prompt_are_not_rules() -> None:
    pasted = "\n".join([
        "# Open Library Catalog Service", "", "## Scenario",
        "You are a backend engineer at a startup building tools for libraries.",
        "## Requirements", "- Fetch and store book data from the public API.",
        "- Keep tenant data isolated.", "- Handle PII carefully.", "- Provide a local API.",
        "## Notes", "Note: never log patron e-mail addresses in plain text.",
        "Always write tests for every endpoint.",
        "Deliver a README with setup steps and a short design discussion. " * 10,
    ])
    statements, _ = split_request(pasted)
    assert statements  # on their own these would be rules...
    analysis = analyse_session(_chat(("user", pasted)))
    assert analysis.rules == []  # ...but pasted, they are the task's text, not the person's


def test_sessions_opening_with_the_same_boilerplate_get_distinct_titles() -> None:
    boilerplate = ("Read AGENTS.md first. Please follow the conventions there and run the "
                   "tests before you commit.")
    titles = [analyse_session(_chat(("user", f"Work on bead {bead}. Run bd show {bead} to see "
                                             f"the details. {boilerplate}"))).title
              for bead in ("rv-12", "rv-31", "rv-40")]
    assert titles == ["Work on bead rv-12", "Work on bead rv-31", "Work on bead rv-40"]


def test_tracker_ignored_and_quoted_paths_become_facts() -> None:
    from reverie.curation.candidates import session_facts

    analysis = analyse_session([
        Message(id="u", role="user", text="work on bead rv-12 and commit the build"),
        *_shell(1, "bd show rv-12", 0, "rv-12 retry backoff [open]"),
        *_shell(2, "cat app/[id]/page.tsx", 1, "zsh:1: no matches found: app/[id]/page.tsx"),
        *_shell(3, "cat 'app/[id]/page.tsx'", 0, "export default function Page() {}"),
        *_shell(4, "git add dist/app.js src/app.ts", 1,
                "The following paths are ignored by one of your .gitignore files:\n"
                "dist/app.js\nhint: Use -f if you really want to add them."),
        *_shell(5, "bd close rv-12", 0, "Closed rv-12"),
    ])
    assert analysis.tracker_commands == ["bd show <id>", "bd close <id>"]
    assert analysis.ignored_paths == ["dist/app.js"]
    assert analysis.quoted_paths == ["app/[id]/page.tsx"]
    texts = [f.text for f in session_facts(analysis)]
    assert "Issues are tracked with `bd`: `bd show <id>`, `bd close <id>`." in texts
    assert "`dist/app.js` is gitignored: `git add` refuses it." in texts
    assert any(t.startswith("Quote `app/[id]/page.tsx`") for t in texts)
    # a path that failed unquoted and was never retried quoted says nothing
    plain = analyse_session([*_shell(1, "ls src/*.orig", 1, "zsh:1: no matches found: src/*.orig")])
    assert plain.quoted_paths == []


def test_a_stale_summary_whose_leaf_is_not_in_the_file_is_not_the_title(tmp_path: Path) -> None:
    import json

    from reverie.transcripts.reader import TranscriptReader

    def record(uuid: str, text: str) -> dict[str, object]:
        return {"type": "user", "uuid": uuid, "parentUuid": None, "sessionId": "s1",
                "cwd": "/w", "timestamp": "2026-03-02T09:00:00Z",
                "message": {"role": "user", "content": text}}

    resumed = tmp_path / "resumed.jsonl"
    resumed.write_text("\n".join(json.dumps(r) for r in (
        {"type": "summary", "summary": "Old session: fix the importer", "leafUuid": "gone-1"},
        record("u1", "add a health endpoint"))) + "\n", "utf-8")
    reader = TranscriptReader(resumed)
    list(reader)
    assert reader.session.title != "Old session: fix the importer"
    own = tmp_path / "own.jsonl"
    own.write_text("\n".join(json.dumps(r) for r in (
        {"type": "summary", "summary": "Health endpoint", "leafUuid": "u1"},
        record("u1", "add a health endpoint"))) + "\n", "utf-8")
    reader = TranscriptReader(own)
    list(reader)
    assert reader.session.title == "Health endpoint"
