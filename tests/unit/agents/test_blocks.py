"""Managed blocks and the JSON / YAML edits: exact text in, exact text out."""

from __future__ import annotations

import json

import pytest

from reverie.agents.blocks import BlockError, find_block, remove_block, upsert_block
from reverie.agents.edits import EditError, HookEntry, remove_json_hooks, set_json_hooks
from reverie.agents.yamlread import remove_yaml_read, set_yaml_read

CASES = ["", "one line\n", "no final newline", "crlf\r\nfile\r\n", "blank end\n\n", "\n"]


@pytest.mark.parametrize("original", CASES)
def test_upsert_then_remove_is_the_identity(original: str) -> None:
    text, sep = upsert_block(original, "codex p-1", "## Memory\n\n- a fact", "html")
    assert text.startswith(original)
    again, sep2 = upsert_block(text, "codex p-1", "## Memory\n\n- a fact", "html")
    assert again == text and sep2 == ""
    assert remove_block(text, "codex p-1", "html", sep) == original
    if "\r\n" in original:
        assert "\n" not in text.replace("\r\n", "")


def test_blocks_of_other_ids_are_independent() -> None:
    text, sep_a = upsert_block("top\n", "gemini a", "A", "html")
    text, sep_b = upsert_block(text, "gemini b", "B", "html")
    text, _ = upsert_block(text, "gemini a", "A2", "html")
    assert "A2" in text and "\nB\n" in text
    text = remove_block(text, "gemini a", "html", sep_a)
    assert remove_block(text, "gemini b", "html", sep_b) == "top\n"


@pytest.mark.parametrize("damaged", [
    "<!-- reverie:begin x -->\nbody\n",
    "body\n<!-- reverie:end x -->\n",
    "<!-- reverie:end x -->\n<!-- reverie:begin x -->\n",
    "<!-- reverie:begin x -->\n<!-- reverie:begin x -->\n<!-- reverie:end x -->\n",
])
def test_unbalanced_markers_are_an_error(damaged: str) -> None:
    with pytest.raises(BlockError, match="damaged"):
        find_block(damaged, "x", "html")
    with pytest.raises(BlockError):
        upsert_block(damaged, "x", "new", "html")


def test_marker_text_inside_a_line_is_not_a_marker() -> None:
    text = "see `<!-- reverie:begin x -->` in the docs\n"
    assert find_block(text, "x", "html") is None


HOOKS = [HookEntry("PreCompact", "", "/py -m reverie hook pre-compact", 30)]


def test_json_hooks_keep_user_entries_and_crlf() -> None:
    original = ('{\r\n  "hooks": {\r\n    "Stop": [{"hooks": [{"type": "command", '
                '"command": "say done"}]}]\r\n  },\r\n  "model": "opus"\r\n}\r\n')
    text = set_json_hooks(original, HOOKS, "settings.json")
    assert "\n" not in text.replace("\r\n", "")
    data = json.loads(text)
    assert data["model"] == "opus" and data["hooks"]["Stop"][0]["hooks"][0]["command"] == "say done"
    assert set_json_hooks(text, HOOKS, "settings.json") == text
    back = json.loads(remove_json_hooks(text, "settings.json"))
    assert back == json.loads(original)


@pytest.mark.parametrize(("text", "message"), [
    ("[1]", "JSON object"), ("{oops", "not valid JSON"), ('{"hooks": []}', "not an object"),
])
def test_json_shapes_that_cannot_be_edited(text: str, message: str) -> None:
    with pytest.raises(EditError, match=message):
        set_json_hooks(text, HOOKS, "settings.json")


def test_yaml_read_list_without_final_newline() -> None:
    original = "model: x\nread:"
    text, sep = set_yaml_read(original, "aider p", "/m/MEMORY.md", ".aider.conf.yml")
    assert text == 'model: x\nread:\n  - "/m/MEMORY.md"  # reverie:managed aider p\n'
    assert sep == "\n"
    assert remove_yaml_read(text, "aider p", sep) == original
