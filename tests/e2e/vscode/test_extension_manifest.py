"""The extension's manifest and constants agree with the server's contract (no editor needed).

Settings mirror ``reverie.config.Settings`` (camelCase, each with a scope and a description),
server command ids mirror ``reverie.lsp.protocol``, and no client command reuses a server id.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from pydantic.alias_generators import to_camel

from reverie.config import Settings
from reverie.lsp.protocol import Commands, Notifications

CLIENT = Path(__file__).resolve().parents[3] / "vscode-client"
MANIFEST = json.loads((CLIENT / "package.json").read_text())
CONSTANTS = (CLIENT / "src" / "constants.ts").read_text()
GENERATED = (CLIENT / "src" / "generated" / "protocol.ts").read_text()
#: every setting, over the configuration sections
PROPERTIES = {
    k: v for s in MANIFEST["contributes"]["configuration"] for k, v in s["properties"].items()
}
#: fields that are not editor settings: the key lives in SecretStorage
NOT_SETTINGS = {"api_key"}


def ts_object(name: str, source: str = CONSTANTS) -> dict[str, str]:
    body = re.search(rf"export const {name} = \{{(.*?)\}} as const;", source, re.S)
    assert body, name
    return dict(re.findall(r"(\w+): ['\"]([^'\"]+)['\"]", body.group(1)))


def test_every_server_setting_is_contributed_with_scope_and_description() -> None:
    properties = PROPERTIES
    expected = {f"reverie.{to_camel(f)}" for f in Settings.model_fields if f not in NOT_SETTINGS}
    contributed = {k for k in properties if k.count(".") == 1}  # not server.* / trace.*
    assert contributed == expected
    assert "reverie.server.python" in properties
    for key, spec in properties.items():
        assert spec.get("scope"), key
        assert spec.get("markdownDescription") or spec.get("description"), key
    assert "reverie.apiKey" not in properties  # never in settings.json


def test_settings_defaults_and_choices_match_the_server() -> None:
    properties = PROPERTIES
    for field, info in Settings.model_fields.items():
        key = f"reverie.{to_camel(field)}"
        if key not in properties or info.default_factory is not None:
            continue
        default = info.default
        # an unset optional string is "" (editable in the Settings UI; the client sends no "")
        assert properties[key]["default"] == (default if default is not None else ""), key
        choices = getattr(info.annotation, "__args__", None)
        if "enum" in properties[key] and choices:
            assert set(properties[key]["enum"]) == set(choices), key


def test_constants_mirror_the_server_protocol() -> None:
    assert set(ts_object("ServerCommands", GENERATED).values()) == set(Commands.ALL)
    notifications = {v for k, v in vars(Notifications).items() if k.isupper()}
    assert set(ts_object("Notifications", GENERATED).values()) == notifications
    keys = re.search(r"SERVER_SETTING_KEYS = \[(.*?)\] as const", GENERATED, re.S)
    assert keys
    listed = set(re.findall(r"\"(\w+)\"", keys.group(1)))
    properties = PROPERTIES
    assert listed == {
        k.removeprefix("reverie.") for k in properties if k.count(".") == 1
    }


def test_client_commands_are_contributed_and_never_reuse_server_ids() -> None:
    client = set(ts_object("Commands").values())
    contributed = {c["command"] for c in MANIFEST["contributes"]["commands"]}
    assert client == contributed
    assert not client & set(Commands.ALL)
    assert all(not c.startswith("reverie.server.") for c in client)
    activation = set(MANIFEST["activationEvents"])
    assert "onStartupFinished" in activation
    assert {f"onCommand:{c}" for c in client} <= activation


def test_engine_fits_code_server_4_100() -> None:
    assert MANIFEST["engines"]["vscode"] == "^1.100.0"
    assert MANIFEST["dependencies"]["vscode-languageclient"].startswith("11.")


def test_no_repository_is_claimed_that_does_not_exist() -> None:
    """Reverie has no public repository: the manifest names none (vsce is told so), and the
    README says where the documentation and the source are instead."""
    for key in ("repository", "bugs", "homepage", "qna"):
        assert key not in MANIFEST, key
    vsix = (CLIENT / "scripts" / "vsix.mjs").read_text()
    assert "'--allow-missing-repository'" in vsix
    readme = (CLIENT / "README.md").read_text()
    assert "no public repository" in readme and "bundled/libs/py/reverie" in readme
    assert "github.com" not in readme and "in the Reverie repository" not in readme


def test_every_agent_has_its_icon_in_the_sessions_view() -> None:
    """``AGENT_ICONS`` (sidebar.ts) names a codicon for every agent id the server reports, the
    editor's own agents included; the connect picker names every connectable agent."""
    from typing import get_args

    from reverie.types import CONNECTABLE_AGENTS, AgentName

    sidebar = (CLIENT / "src" / "sidebar.ts").read_text()
    body = re.search(r"AGENT_ICONS[^=]*= \{(.*?)\};", sidebar, re.S)
    assert body
    icons = dict(re.findall(r"['\"]?([\w-]+)['\"]?: '([\w-]+)'", body.group(1)))
    assert set(get_args(AgentName)) <= set(icons)
    assert icons["copilot-chat"] == "copilot"
    connect = (CLIENT / "src" / "connect.ts").read_text()
    names = re.search(r"AGENT_NAMES[^=]*= \{(.*?)\};", connect, re.S)
    assert names
    assert set(CONNECTABLE_AGENTS) == set(re.findall(r"['\"]?([\w-]+)['\"]?: '", names.group(1)))
