"""A raw LSP client for hostile-input tests: it writes arbitrary bytes to a real
``reverie serve`` process and reads its frames back (pytest-lsp cannot send broken frames)."""

from __future__ import annotations

import itertools
import json
import os
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any


class RawServer:
    """``python -m reverie serve`` over pipes; stderr goes to a file the test can inspect."""

    def __init__(self, workspace: Path, log_dir: Path, env: dict[str, str] | None = None) -> None:
        self.workspace = workspace
        self.stderr_path = log_dir / f"server-{time.monotonic_ns()}.stderr"
        self._stderr = self.stderr_path.open("wb")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "reverie", "serve"], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=self._stderr, env={**os.environ, **(env or {})})
        self._ids = itertools.count(1000)
        self.messages: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self._answers: dict[Any, dict[str, Any]] = {}
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    # --- reading ------------------------------------------------------------------------------
    def _read(self) -> None:
        out = self.proc.stdout
        assert out is not None
        while True:
            length = None
            while True:
                line = out.readline()
                if not line:
                    self.messages.put(None)
                    return
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":", 1)[1])
                if line in (b"\r\n", b"\n"):
                    break
            assert length is not None
            self.messages.put(json.loads(out.read(length)))

    def response(self, msg_id: Any, timeout: float = 15.0) -> dict[str, Any] | None:
        """The response to ``msg_id`` (others are kept for later calls); None if the server
        ended."""
        if msg_id in self._answers:
            return self._answers.pop(msg_id)
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"no response to {msg_id!r} within {timeout}s")
            try:
                message = self.messages.get(timeout=left)
            except queue.Empty:
                continue
            if message is None:
                self.messages.put(None)
                return None
            if "method" in message:
                continue  # the server's own requests and notifications
            if message.get("id") == msg_id:
                return message
            self._answers[message.get("id")] = message

    # --- writing ------------------------------------------------------------------------------
    def send_raw(self, data: bytes) -> bool:
        """Write bytes; False when the server has closed its stdin."""
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(data)
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            return False
        return True

    def send(self, payload: dict[str, Any]) -> bool:
        body = json.dumps(payload).encode()
        return self.send_raw(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    def request(self, method: str, params: Any = None, *, with_params: bool = True) -> int:
        msg_id = next(self._ids)
        payload: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id, "method": method}
        if with_params:
            payload["params"] = params
        self.send(payload)
        return msg_id

    def notify(self, method: str, params: Any = None) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def initialize(self) -> dict[str, Any]:
        msg_id = self.request("initialize", {
            "processId": os.getpid(), "capabilities": {},
            "rootUri": self.workspace.as_uri(),
            "workspaceFolders": [{"uri": self.workspace.as_uri(), "name": "w"}],
        })
        answer = self.response(msg_id, timeout=60)
        assert answer is not None and "result" in answer, answer
        self.notify("initialized", {})
        return answer

    def status(self, timeout: float = 15.0) -> dict[str, Any] | None:
        msg_id = self.request("workspace/executeCommand",
                              {"command": "reverie.server.status", "arguments": [{}]})
        return self.response(msg_id, timeout)

    # --- ending -------------------------------------------------------------------------------
    def stderr(self) -> str:
        if not self._stderr.closed:
            self._stderr.flush()
        return self.stderr_path.read_text("utf-8", "replace")

    def close(self) -> int:
        """shutdown + exit if it still runs; the exit code."""
        if self.proc.poll() is None:
            msg_id = self.request("shutdown")
            try:
                self.response(msg_id, timeout=20)
            except TimeoutError:
                pass
            self.notify("exit")
        try:
            code = self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            code = self.proc.wait()
        self._stderr.close()
        return code

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self._stderr.close()
