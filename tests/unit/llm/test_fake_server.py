"""The fake server itself: standalone process, control endpoints, recording, slow mode."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from support.fake_llm import FakeLLMServer, Scenario, Step
from support.processes import support_env


def test_standalone_process_with_scenario_and_port_file(tmp_path: Path) -> None:
    scenario = Scenario(steps=[Step.reply("scripted")], default=Step.reply("default"))
    (tmp_path / "s.json").write_text(scenario.model_dump_json())
    responder = tmp_path / "resp.py"
    responder.write_text(
        "from support.fake_llm import Step\n"
        "def respond(req):\n"
        "    return Step.reply('echo: ' + req.last_user_text) if 'echo' in req.last_user_text"
        " else None\n"
    )
    port_file = tmp_path / "port"
    record = tmp_path / "requests.jsonl"
    proc = subprocess.Popen(
        [sys.executable, "-m", "support.fake_llm", "--scenario", str(tmp_path / "s.json"),
         "--port-file", str(port_file), "--responder", f"{responder}:respond",
         "--record-file", str(record)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=support_env(),
    )
    try:
        deadline = time.monotonic() + 15
        while not port_file.exists() and time.monotonic() < deadline:
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            time.sleep(0.05)
        base = f"http://127.0.0.1:{int(port_file.read_text())}/v1"
        with httpx.Client(base_url=base) as http:
            def ask(text: str) -> str:
                r = http.post("/chat/completions", json={
                    "model": "m", "messages": [{"role": "user", "content": text}]},
                    headers={"Authorization": "Bearer sk-never-recorded"})
                return str(r.json()["choices"][0]["message"]["content"])

            assert ask("hi") == "scripted"
            assert ask("please echo") == "echo: please echo"
            assert ask("other") == "default"
            http.post("/_fake/enqueue", json=[{"kind": "text", "text": "late addition"}])
            assert ask("x") == "late addition"
            recorded = http.get("/_fake/requests").json()
        assert [r["json"]["messages"][0]["content"] for r in recorded] == [
            "hi", "please echo", "other", "x"]
        lines = record.read_text().splitlines()
        assert len(lines) == 4
        assert "sk-never-recorded" not in record.read_text()
        assert json.loads(lines[0])["headers"]["authorization"] == "<redacted>"
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    assert proc.returncode == 0


def test_slow_mode_and_wait_for_requests() -> None:
    with FakeLLMServer(default=None, slow=0.2) if False else FakeLLMServer(slow=0.2) as server:
        server.set_default(Step.reply("slow"))
        started = time.monotonic()
        r = httpx.post(server.base_url + "/messages",
                       json={"model": "m", "max_tokens": 5, "messages": []})
        assert r.json()["content"][0]["text"] == "slow"
        assert time.monotonic() - started >= 0.2
        assert len(server.wait_for_requests(1)) == 1


def test_stop_releases_hanging_requests() -> None:
    server = FakeLLMServer([Step.hang(60)]).start()
    url = server.base_url
    import threading

    errors: list[Exception] = []

    def call() -> None:
        try:
            httpx.post(url + "/chat/completions", json={"model": "m", "messages": []}, timeout=30)
        except Exception as exc:  # the connection is dropped when the server stops
            errors.append(exc)

    thread = threading.Thread(target=call)
    thread.start()
    server.wait_for_requests(1)
    started = time.monotonic()
    server.stop()
    thread.join(timeout=10)
    assert not thread.is_alive()
    assert time.monotonic() - started < 3


def test_unknown_routes_404(tmp_path: Path) -> None:
    with FakeLLMServer() as server:
        assert httpx.get(server.url + "/v1/models/x").status_code == 404


@pytest.mark.parametrize("path", ["/v1/chat/completions", "/chat/completions"])
def test_paths_with_and_without_v1(path: str) -> None:
    with FakeLLMServer([Step.reply("a")]) as server:
        r = httpx.post(server.url + path, json={"model": "m", "messages": []})
        assert r.status_code == 200
        assert server.model_requests()[0].provider == "openai"
    assert os.environ.get("REVERIE_PROVIDER") is None
