"""The notes template, overrides, check_notes, the validity guard, reminders and truncation."""

from __future__ import annotations

from pathlib import Path

from reverie.session_memory.template import (
    MAX_SECTION_TOKENS,
    SECTION_TITLES,
    TRUNCATION_MARKER,
    check_notes,
    condensing_reminders,
    default_template,
    guard_update,
    load_template,
    load_update_prompt,
    parse_notes,
    substitute,
    truncate_for_compaction,
)


def test_default_template_has_ten_sections_with_italic_descriptions() -> None:
    template = default_template()
    assert template.titles == SECTION_TITLES
    assert len(template.sections) == 10
    lines = template.text.splitlines()
    for section in template.sections:
        header = lines.index(f"# {section.title}")
        assert lines[header + 1] == section.description
        assert section.description.startswith("_") and section.description.endswith("_")
    assert check_notes(template.text) == []


def test_template_and_prompt_overrides_from_config_dir(reverie_env: dict[str, Path]) -> None:
    config = reverie_env["config"]
    assert load_template(config).text == default_template().text
    override = config / "session_memory"
    override.mkdir()
    (override / "template.md").write_text("# Goal\n_Why we are here_\n\n# Notes\n_Anything_\n")
    (override / "prompt.md").write_text("Update {{notes_path}} please.\n")
    template = load_template(config)
    assert template.titles == ("Goal", "Notes")
    assert load_update_prompt(config) == "Update {{notes_path}} please.\n"
    # a broken override (no headers) falls back to the built-in template
    (override / "template.md").write_text("just text\n")
    assert load_template(config).titles == SECTION_TITLES


def test_substitute_is_single_pass() -> None:
    out = substitute("A {{notes_path}} B {{current_notes}} {{unknown}}",
                     {"notes_path": "/n.md", "current_notes": "has {{notes_path}} inside"})
    assert out == "A /n.md B has {{notes_path}} inside {{unknown}}"


def _lines(problems: list) -> list[tuple[int, str, str]]:
    return [(p.line, p.severity, p.message) for p in problems]


def test_check_notes_reports_changed_missing_reordered_and_descriptions() -> None:
    text = default_template().text
    lines = text.splitlines()
    # rename a header, change a description, drop a section, swap two sections
    lines[lines.index("# Workflow")] = "# workflow"
    desc_line = lines.index("# Learnings") + 1
    lines[desc_line] = "_my own description_"
    key = lines.index("# Key results")
    del lines[key : key + 3]
    broken = "\n".join(lines) + "\n"
    swapped = broken.replace("# Current State", "# TMP").replace(
        "# Task specification", "# Current State").replace("# TMP", "# Task specification")
    problems = check_notes(swapped)
    messages = [p.message for p in problems]
    assert any("Section header changed: expected '# Workflow'" in m for m in messages)
    assert any("italic description of '# Learnings' was changed" in m for m in messages)
    assert any("'# Key results' is missing" in m for m in messages)
    assert any("out of order" in m for m in messages)
    by_message = {p.message.split(":")[0]: p for p in problems}
    changed = by_message["Section header changed"]
    assert swapped.splitlines()[changed.line] == "# workflow"
    assert all(p.severity == "error" for p in problems)
    # line numbers are 0-based and point at the offending lines
    learn = next(p for p in problems if "Learnings" in p.message)
    assert swapped.splitlines()[learn.line] == "_my own description_"


def test_check_notes_budget_warnings_and_unknown_sections() -> None:
    text = default_template().text
    big = "x" * (MAX_SECTION_TOKENS * 4 + 400)
    notes = text.replace("# Worklog\n", "# My own section\nfree text\n\n# Worklog\n") + big + "\n"
    problems = check_notes(notes)
    assert [p.severity for p in problems] == ["warning", "warning"]
    unknown, oversize = sorted(problems, key=lambda p: p.line)
    assert "not part of the notes template" in unknown.message
    assert "'# Worklog' is ~" in oversize.message and oversize.severity == "warning"
    huge = text + ("y" * 50_000) + "\n"
    assert any(p.line == 0 and "notes file is ~" in p.message for p in check_notes(huge))


def test_headers_inside_code_fences_are_not_sections() -> None:
    text = default_template().text.replace(
        "# Workflow\n_", "# Workflow\n_", 1
    ).replace("# Errors & Corrections", "```bash\n# a shell comment\n```\n\n# Errors & Corrections")
    assert check_notes(text) == []


def test_guard_rejects_new_structural_errors_but_tolerates_existing_ones() -> None:
    template = default_template()
    good = template.text.replace("# Worklog\n_", "# Worklog\n_", 1)
    updated = good + "- did a thing\n"
    assert guard_update(good, updated, template) is None
    broken = good.replace("# Learnings", "# Lessons")
    assert guard_update(good, broken, template) is not None
    # the user had already broken a description: further edits are not blamed for it
    user_broken = good.replace("_What worked", "_Stuff that worked")
    assert guard_update(user_broken, user_broken + "- more\n", template) is None
    # growing past the total budget is refused, shrinking an oversized file is fine
    grown = good + "z" * 60_000
    assert guard_update(good, grown, template) is not None
    assert guard_update(grown, good, template) is None


def test_condensing_reminders_only_when_over_budget() -> None:
    text = default_template().text
    assert condensing_reminders(text) == ""
    big = text.replace("# Workflow\n", "# Workflow\n", 1) + "w" * (MAX_SECTION_TOKENS * 4 + 100)
    reminder = condensing_reminders(big)
    assert "'# Worklog'" in reminder and "must be condensed" in reminder
    assert "over the ~12000-token limit" not in reminder
    huge = text + "h" * 60_000
    assert "over the ~12000-token limit" in condensing_reminders(huge)


def test_truncate_for_compaction_cuts_oversized_sections_at_line_boundaries() -> None:
    text = default_template().text
    long_body = "\n".join(f"- item {i} " + "v" * 80 for i in range(200))
    notes = text.replace("# Learnings\n_What worked, what did not and what to avoid, without "
                         "repeating the other sections_\n",
                         "# Learnings\n_What worked, what did not and what to avoid, without "
                         "repeating the other sections_\n" + long_body + "\n")
    assert notes != text
    cut, truncated = truncate_for_compaction(notes, max_section_tokens=500)
    assert truncated
    assert TRUNCATION_MARKER in cut
    section = parse_notes(cut).get("Learnings")
    assert section is not None
    assert len("\n".join(section.body)) <= 500 * 4 + len(TRUNCATION_MARKER) + 1
    assert all(line.startswith("- item") or line == TRUNCATION_MARKER for line in section.body)
    same, changed = truncate_for_compaction(text)
    assert (same, changed) == (text, False)


def test_substitute_accepts_the_specs_camel_case_placeholders() -> None:
    variables = {"notes_path": "/n.md", "current_notes": "# Title"}
    prompt = "Edit {{notesPath}} ({{notes_path}}); it says {{currentNotes}}. {{otherThing}}"
    assert substitute(prompt, variables) == "Edit /n.md (/n.md); it says # Title. {{otherThing}}"
    assert substitute("{{notesPath}}", {"notesPath": "camel"}) == "camel"
