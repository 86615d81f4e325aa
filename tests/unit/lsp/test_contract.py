"""The editor's contract files are generated from the server's models and must not drift:
``vscode-client/src/generated/protocol.ts`` and ``contributes.configuration`` of package.json."""

from __future__ import annotations

import json
from pathlib import Path

from pydantic.alias_generators import to_camel

from reverie.config import Settings
from reverie.lsp import contract
from reverie.lsp.protocol import JobEventPayload, JobOutcome, camel_keys

CLIENT = Path(__file__).resolve().parents[3] / "vscode-client"


def test_committed_files_match_the_generator() -> None:
    assert contract.main(["--check", "--client", str(CLIENT)]) == 0, (
        "run: python -m reverie.lsp.contract"
    )


def test_check_fails_on_drift(tmp_path: Path) -> None:
    client = tmp_path / "client"
    (client / "src" / "generated").mkdir(parents=True)
    (client / "package.json").write_text((CLIENT / "package.json").read_text())
    stale = (CLIENT / "src" / "generated" / "protocol.ts").read_text().replace(
        "undoneRunId: string;", "undone_run_id: string;"
    )
    (client / "src" / "generated" / "protocol.ts").write_text(stale)
    assert contract.main(["--check", "--client", str(client)]) == 1
    assert contract.main(["--client", str(client)]) == 0
    assert contract.main(["--check", "--client", str(client)]) == 0


def test_typescript_has_every_payload_in_camel_case() -> None:
    ts = contract.typescript()
    assert "export interface UndoResult {" in ts and "  undoneRunId: string;" in ts
    assert "  memoryDir: string;" in ts and "memory_dir" not in ts
    # results: every field present; arguments: defaults optional
    assert "  alreadyRunning: boolean;" in ts and "  redo?: boolean;" in ts


def test_settings_are_grouped_editable_and_scoped() -> None:
    sections, restricted = contract.configuration()
    assert len(sections) >= 5
    props = {k: v for s in sections for k, v in s["properties"].items()}
    expected = {f"reverie.{to_camel(f)}" for f in Settings.model_fields if f != "api_key"}
    assert expected <= set(props)
    for key, spec in props.items():
        assert not isinstance(spec["type"], list), f"{key}: the Settings UI cannot edit a union"
        assert spec["scope"] in {"window", "machine", "machine-overridable", "application"}, key
        assert spec["markdownDescription"], key
    # a repository's .vscode/settings.json must not redirect endpoint, provider or memory
    for key in ("provider", "baseUrl", "memoryDir", "memoryDirPreset", "agentHome", "dataDir",
                "cliPath"):
        assert props[f"reverie.{key}"]["scope"] == "machine", key
        assert f"reverie.{key}" in restricted
    assert "reverie.server.python" in restricted
    assert props["reverie.trace.server"]["enum"] == ["off", "messages", "verbose"]
    manifest = json.loads((CLIENT / "package.json").read_text())
    trust = manifest["capabilities"]["untrustedWorkspaces"]
    assert trust["supported"] == "limited" and set(trust["restrictedConfigurations"]) == set(
        restricted
    )


def test_event_payloads_are_camel_case_but_names_used_as_keys_are_kept() -> None:
    payload = {"run_id": "r", "files_touched": ["MEMORY.md"], "usage": {"input_tokens": 3},
               "per_file": {"user_prefs.md": 1}, "message": "m"}
    wire = JobEventPayload(job_id="j", kind="dream", type="progress", payload=payload).wire()
    assert wire["payload"] == {"runId": "r", "filesTouched": ["MEMORY.md"],
                               "usage": {"inputTokens": 3}, "perFile": {"user_prefs.md": 1},
                               "message": "m"}
    assert camel_keys({"MEMORY.md": 1, "a_b": [{"c_d": 2}]}) == {"MEMORY.md": 1,
                                                                 "aB": [{"cD": 2}]}
    outcome = JobOutcome.model_validate(
        {"jobId": "j", "kind": "dream", "type": "complete",
         "finishedAt": "2026-01-01T00:00:00Z", "payload": {"sessions_found": 1}}
    ).wire()
    assert outcome["payload"] == {"sessionsFound": 1} and "finishedAt" in outcome
