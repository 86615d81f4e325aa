"""A whole (non-streamed) reply past the cap is refused while it streams in (issue 27: a 300 MB
reply cost 1.3 GB of RSS), against a real HTTP server."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator

import pytest

from reverie.llm import http as llm_http
from reverie.llm.errors import LLMBadResponseError
from reverie.llm.openai import OpenAIClient


class _Huge(http.server.BaseHTTPRequestHandler):
    sent = 0

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        chunk = b" " * 65536
        try:
            for _ in range(160):  # 10 MiB of whitespace before a JSON body that never comes
                self.wfile.write(chunk)
                type(self).sent += len(chunk)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[str]:
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Huge)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    httpd.shutdown()
    httpd.server_close()


async def test_a_reply_past_the_cap_is_refused_as_it_arrives(
    server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(llm_http, "MAX_REPLY_BYTES", 1 * 2**20)
    client = OpenAIClient(model="m", base_url=server, api_key="k")
    try:
        with pytest.raises(LLMBadResponseError, match="more than 1 MiB"):
            await client.post_json("/chat/completions", {"model": "m", "messages": []})
    finally:
        await client.aclose()
    assert _Huge.sent < 10 * 2**20  # the client stopped reading: the server could not finish
