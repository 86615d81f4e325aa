"""Reverie's MCP server table in a TOML file: added and taken out as text, every byte of the
user's file kept, every result checked by parsing it again."""

from __future__ import annotations

import tomllib

import pytest

from reverie.agents.edits import EditError
from reverie.agents.tomledit import (
    has_toml_mcp,
    is_empty_toml,
    remove_toml_mcp,
    set_toml_mcp,
    toml_missing_depth,
)

PATH = ["mcp_servers"]
OURS = {"command": "/opt/py/bin/python3", "args": ["-P", "-m", "reverie", "mcp"],
        "env": {"REVERIE_DATA_DIR": "/home/me/.local/share/reverie"},
        "env_vars": ["REVERIE_AGENT_HOME"]}


def put(text: str, server: dict[str, object] | None = None) -> str:
    return set_toml_mcp(text, PATH, "reverie", server or OURS, "config.toml")


def take(text: str, created_from: int | None = None) -> str:
    return remove_toml_mcp(text, PATH, "reverie", "config.toml", created_from)


@pytest.mark.parametrize("original", [
    "",
    'model = "gpt-5"\n',
    'model = "gpt-5"',  # no final newline
    "# only a comment\n",
    '# settings\r\nmodel = "o4"\r\n\r\n[mcp_servers.docs]\r\ncommand = "docs"\r\n',  # CRLF
    '[mcp_servers.docs]\ncommand = "docs"  # keep\n\n[mcp_servers.docs.env]\nA = "1"\n\n'
    '[projects."/home/me/x"]\ntrust_level = "trusted"\n',
    "[[profiles.list]]\nname = 'a'\n\n[[profiles.list]]\nname = 'b'\n",
    'mcp_servers = { docs = { command = "docs" } }\nmodel = "x"\n',  # inline: tomlkit's edit
])
def test_add_then_remove_gives_the_data_back(original: str) -> None:
    added = put(original)
    data = tomllib.loads(added)
    assert data["mcp_servers"]["reverie"] == OURS
    assert {k: v for k, v in data.items() if k != "mcp_servers"} == {
        k: v for k, v in tomllib.loads(original).items() if k != "mcp_servers"}
    if "mcp_servers = {" not in original:  # appended: the user's bytes come first, untouched
        assert added.startswith(original)
    assert put(added) == added  # twice is once
    assert has_toml_mcp(added, PATH, "reverie")
    removed = take(added, toml_missing_depth(original, PATH))
    assert tomllib.loads(removed) == tomllib.loads(original)
    if "mcp_servers = {" not in original:
        # the splice's inverse is exact; a file without a final newline keeps the one the
        # table needed (the ledger's copy of the file gives that byte back too)
        assert removed == (original if not original or original.endswith("\n")
                           else original + "\n")


def test_a_changed_entry_of_ours_is_replaced_in_place_of_the_old() -> None:
    added = put('model = "x"\n')
    moved = put(added, {**OURS, "command": "/new/python"})
    data = tomllib.loads(moved)
    assert data["mcp_servers"]["reverie"]["command"] == "/new/python"
    assert moved.count("[mcp_servers.reverie]") == 1
    assert take(moved, 0) == 'model = "x"\n'


def test_tables_the_user_put_after_ours_stay_and_our_subtables_go() -> None:
    added = put('model = "x"\n')
    edited = added + '\n[mcp_servers.reverie.tools.search]\napproval_mode = "approve"\n' \
        + '\n[profiles.fast]\nmodel = "o4-mini"\n'
    removed = take(edited, 0)
    assert removed == 'model = "x"\n\n[profiles.fast]\nmodel = "o4-mini"\n'


def test_an_implicit_servers_table_goes_with_our_entry_even_without_the_ledger() -> None:
    added = put('model = "x"\n')
    # no record of what the connect created (disconnect found the entry in the file)
    assert tomllib.loads(take(added, None)) == {"model": "x"}


@pytest.mark.parametrize(("text", "reason"), [
    ('model = "unterminated\n', "not valid TOML"),
    ('mcp_servers = 3\n', "not a table"),
    ('[mcp_servers.reverie]\ncommand = "/opt/other"\nargs = ["serve"]\n', "not Reverie's"),
])
def test_refused_with_the_reason(text: str, reason: str) -> None:
    with pytest.raises(EditError, match=reason):
        put(text)


def test_someone_elses_entry_is_never_taken_out() -> None:
    theirs = '[mcp_servers.reverie]\ncommand = "/opt/other"\nargs = ["serve"]\n'
    assert take(theirs) == theirs
    assert not has_toml_mcp(theirs, PATH, "reverie")


def test_values_that_need_escapes_are_written_as_toml_reads_them() -> None:
    odd = {**OURS, "command": 'C:\\Users\\Zoë "Q"\\python.exe',
           "env": {"PYTHONPATH": "/a b/c:/d\te"}}
    assert tomllib.loads(put("", odd))["mcp_servers"]["reverie"] == odd


def test_empty_means_nothing_but_blank_lines() -> None:
    assert is_empty_toml("") and is_empty_toml("\n\n")
    assert not is_empty_toml("# mine\n")
