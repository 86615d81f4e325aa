"""The language server against broken frames and lifecycle violations (issue 17.7 / 17.9 /
17.15): after every bad frame the next valid request is answered (or the server has exited
cleanly), never a wedge, never a traceback."""

from __future__ import annotations

import json
import time
from pathlib import Path

import psutil
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hostile.raw_lsp import RawServer

pytestmark = pytest.mark.e2e

STATUS = {"command": "reverie.server.status", "arguments": [{}]}


def _frame(body: bytes, length: bytes | None = None, extra_headers: bytes = b"") -> bytes:
    declared = str(len(body)).encode() if length is None else length
    return b"Content-Length: " + declared + b"\r\n" + extra_headers + b"\r\n" + body


def _request_body(msg_id: int, method: str = "workspace/executeCommand",
                  params: object = STATUS) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": msg_id, "method": method,
                       "params": params}).encode()


@st.composite
def bad_frames(draw: st.DrawFn) -> bytes:
    """One hostile chunk of input: a broken frame of some kind."""
    msg_id = draw(st.integers(10**7, 10**8))  # never one of the client's own ids (from 1000)
    body = _request_body(msg_id, params=draw(st.sampled_from([STATUS, {}, None, [], "x"])))
    kind = draw(st.sampled_from([
        "short", "long", "negative", "non-numeric", "huge-header", "invalid-json",
        "missing-params", "not-an-object", "junk", "no-length", "zero", "nested", "bad-utf8",
        "case", "two-lengths",
    ]))
    if kind == "short":
        return _frame(body, str(draw(st.integers(0, len(body) - 1))).encode())
    if kind == "long":  # by less than the next request's size: found again inside the body
        return _frame(body, str(len(body) + draw(st.integers(1, 120))).encode())
    if kind == "negative":
        return _frame(body, b"-" + str(draw(st.integers(1, 10**9))).encode())
    if kind == "non-numeric":
        return _frame(body, draw(st.sampled_from([b"abc", b"12a", b"", b"1e3", b"0x10", b"\xff",
                                                 b"99999999999999999999"])))
    if kind == "huge-header":
        size = draw(st.integers(64 * 1024, 80 * 1024))
        return _frame(body, extra_headers=b"X-Pad: " + b"a" * size + b"\r\n")
    if kind == "invalid-json":
        return _frame(draw(st.binary(min_size=1, max_size=200)).replace(b"Content-", b"C"))
    if kind == "missing-params":
        return _frame(json.dumps({"jsonrpc": "2.0", "id": msg_id,
                                  "method": draw(st.sampled_from([
                                      "workspace/executeCommand", "initialize",
                                      "textDocument/hover"]))}).encode())
    if kind == "not-an-object":
        return _frame(draw(st.sampled_from([b"[]", b"42", b'"x"', b"null", b"[{}]", b"{}",
                                            b'{"id": 1}', b'{"jsonrpc": "1.0", "id": 2}'])))
    if kind == "junk":
        return draw(st.binary(max_size=300)).replace(b"Content-", b"C")
    if kind == "no-length":
        return b"Content-Type: application/json\r\n\r\n" + body
    if kind == "zero":
        return _frame(b"", b"0")
    if kind == "nested":
        return _frame(b"[" * 100_000 + b"]" * 100_000)
    if kind == "bad-utf8":
        return _frame(body[:20] + b"\xff\xfe" + body[20:])
    if kind == "case":  # header names are case-insensitive: this one is valid
        return b"content-length: %d\r\n\r\n" % len(body) + body
    return b"Content-Length: 5\r\nContent-Length: %d\r\n\r\n" % len(body) + body


@pytest.fixture
def logs(tmp_path: Path) -> Path:
    return tmp_path


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    path = tmp_path / "project"
    path.mkdir()
    return path


def _assert_clean(server: RawServer) -> None:
    assert "Traceback" not in server.stderr(), server.stderr()[-3000:]


def test_frame_fuzzer(workspace: Path, logs: Path) -> None:
    """Hypothesis-generated bad frames, each followed by a valid request that must be
    answered (or the server must have exited cleanly: then a fresh one takes over)."""
    servers: list[RawServer] = []
    counts = {"frames": 0, "answered": 0, "restarts": 0}

    def live() -> RawServer:
        if not servers or servers[-1].proc.poll() is not None:
            if servers:
                code = servers[-1].proc.wait()
                assert code in (0, 1), code
                _assert_clean(servers[-1])
                counts["restarts"] += 1
            servers.append(RawServer(workspace, logs))
            servers[-1].initialize()
        return servers[-1]

    @settings(max_examples=200, deadline=None, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(chunks=st.lists(bad_frames(), min_size=1, max_size=3))
    def run(chunks: list[bytes]) -> None:
        server = live()
        for chunk in chunks:
            server.send_raw(chunk)
            counts["frames"] += 1
        answer = server.status(timeout=20)
        if answer is None:  # ended: it must have been clean
            assert server.proc.wait(timeout=20) in (0, 1)
            return
        assert answer.get("result", {}).get("pid") == server.proc.pid, answer
        counts["answered"] += 1

    try:
        run()
        assert counts["frames"] >= 200 and counts["answered"] >= 150, counts
        for server in servers:
            if server.proc.poll() is None:
                assert server.close() == 0
            _assert_clean(server)
    finally:
        for server in servers:
            server.kill()
    print(f"frame fuzzer: {counts}")


def test_a_length_longer_than_everything_that_follows(workspace: Path, logs: Path) -> None:
    """The declared body never completes: after a few idle seconds the frame ends, and the
    request swallowed by it is found again and answered."""
    server = RawServer(workspace, logs)
    try:
        server.initialize()
        body = _request_body(7)
        server.send_raw(_frame(body, str(len(body) + 10_000).encode()))
        started = time.monotonic()
        status = server.status(timeout=20)
        assert status is not None and "result" in status
        assert time.monotonic() - started < 10
        refused = server.response(7, timeout=5)
        assert refused is not None and refused["error"]["code"] == -32600
        assert server.close() == 0
        _assert_clean(server)
    finally:
        server.kill()


def test_lifecycle_violations(workspace: Path, logs: Path) -> None:
    server = RawServer(workspace, logs)
    try:
        started = time.monotonic()
        early = server.status(timeout=25)
        assert early is not None and early["error"]["code"] == -32002
        # at once, not after a 30 s wait (the bound includes the server's start on a busy machine)
        assert time.monotonic() - started < 20
        server.initialize()
        again = server.response(server.request("initialize", {"processId": None,
                                                             "capabilities": {}}))
        assert again is not None and again["error"]["code"] == -32600
        status = server.status()
        assert status is not None and status["result"]["workspaceFolders"] == [
            str(workspace.resolve())]  # the second initialize changed nothing
        missing = server.response(server.request("workspace/executeCommand", with_params=False))
        assert missing is not None and missing["error"]["code"] == -32602
        bogus = server.response(server.request("workspace/executeCommand", {
            "command": "reverie.server.cancelJob", "arguments": [{"bogus": "x" * 100_000}]}))
        assert bogus is not None and bogus["error"]["code"] == -32602  # and no traceback logged
        # shutdown while a request is still pending (a dream waits for the lock / its work)
        pending = server.request("workspace/executeCommand",
                                 {"command": "reverie.server.dream", "arguments": [{}]})
        shut = server.response(server.request("shutdown"), timeout=30)
        assert shut is not None and "error" not in shut, shut
        server.response(pending, timeout=30)
        after = server.status()
        assert after is not None and after["error"]["code"] == -32600
        server.notify("exit")
        assert server.proc.wait(timeout=20) == 0
        _assert_clean(server)
    finally:
        server.kill()


def test_exit_without_shutdown_exits_1(workspace: Path, logs: Path) -> None:
    server = RawServer(workspace, logs)
    try:
        server.initialize()
        server.notify("exit")
        assert server.proc.wait(timeout=20) == 1
        _assert_clean(server)
    finally:
        server.kill()


def _rss(pid: int) -> int:
    return int(psutil.Process(pid).memory_info().rss)


def test_rejected_huge_requests_do_not_grow_the_server(workspace: Path, logs: Path) -> None:
    """Issue 17.9: ten 20 MB requests (over the message limit) are refused as they stream in;
    the server does not keep the memory (it grew 64 -> 355 MiB before)."""
    server = RawServer(workspace, logs)
    try:
        server.initialize()
        assert server.status() is not None
        time.sleep(1.0)
        before = _rss(server.proc.pid)
        payload = b'{"jsonrpc":"2.0","id":%d,"method":"workspace/executeCommand","params":' \
                  b'{"command":"reverie.server.status","arguments":[{"x":"' 
        for i in range(10):
            head = payload % (900 + i)
            body = head + b"a" * (20 * 1024 * 1024 - len(head) - 4) + b'"}]}}'
            server.send_raw(_frame(body))
            refused = server.response(900 + i, timeout=60)
            assert refused is not None and refused["error"]["code"] == -32600
        status = server.status()
        assert status is not None and "result" in status
        after = _rss(server.proc.pid)
        print(f"RSS before {before / 2**20:.1f} MiB, after ten 20 MB requests "
              f"{after / 2**20:.1f} MiB")
        assert after - before < 32 * 2**20, (before, after)
        assert server.close() == 0
        _assert_clean(server)
    finally:
        server.kill()


def test_refused_arguments_under_the_limit_are_not_kept(workspace: Path, logs: Path) -> None:
    """15 MB requests (under the message limit) whose arguments are refused: the refusal
    must not keep the input alive (it did through the ValidationError chained to it, 15 MB per
    request: 80 -> 501 MiB after 25). The first ones raise the allocator's high-water mark;
    the next ten add nothing."""
    server = RawServer(workspace, logs)
    try:
        server.initialize()
        assert server.status() is not None

        def refuse(first: int, count: int) -> None:
            for i in range(first, first + count):
                head = (b'{"jsonrpc":"2.0","id":%d,"method":"workspace/executeCommand","params":'
                        b'{"command":"reverie.server.status","arguments":[{"x":"' % i)
                body = head + b"a" * (15 * 1024 * 1024 - len(head) - 4) + b'"}]}}'
                server.send_raw(_frame(body))
                refused = server.response(i, timeout=60)
                assert refused is not None and refused["error"]["code"] == -32602, refused

        refuse(700, 5)
        time.sleep(0.5)
        settled = _rss(server.proc.pid)
        refuse(800, 10)
        time.sleep(0.5)
        after = _rss(server.proc.pid)
        print(f"RSS after 5 refused 15 MB requests {settled / 2**20:.1f} MiB, after 10 more "
              f"{after / 2**20:.1f} MiB")
        assert after - settled < 32 * 2**20, (settled, after)
        assert server.close() == 0
    finally:
        server.kill()


def test_a_fifo_lock_does_not_hang_the_server(workspace: Path, logs: Path, tmp_path: Path) -> None:
    """Issue 17.8: ``lockStatus`` (and then shutdown) with a FIFO as ``.consolidate-lock``."""
    import os

    memory = tmp_path / "memory"
    memory.mkdir()
    os.mkfifo(memory / ".consolidate-lock")
    server = RawServer(workspace, logs, env={"REVERIE_MEMORY_DIR": str(memory)})
    try:
        server.initialize()
        msg_id = server.request("workspace/executeCommand",
                                {"command": "reverie.server.lockStatus", "arguments": [{}]})
        answer = server.response(msg_id, timeout=20)
        assert answer is not None and "result" in answer, answer
        assert answer["result"]["holderPid"] is None
        assert server.close() == 0
        _assert_clean(server)
    finally:
        server.kill()
