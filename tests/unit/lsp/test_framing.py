"""``reverie.lsp.framing``: resynchronising after bad frames, bounded memory for huge ones."""

from __future__ import annotations

import asyncio
import json

from reverie.lsp.framing import BadFrame, FrameReader, recover_id


def _frame(body: bytes, length: bytes | None = None) -> bytes:
    declared = str(len(body)).encode() if length is None else length
    return b"Content-Length: " + declared + b"\r\n\r\n" + body


def _req(msg_id: int) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": msg_id, "method": "m", "params": {}}).encode()


async def _frames(chunks: list[bytes], **kwargs: float) -> list[bytes | BadFrame]:
    it = iter([*chunks, b""])

    async def read() -> bytes:
        return next(it)

    reader = FrameReader(read, **kwargs)  # type: ignore[arg-type]
    out: list[bytes | BadFrame] = []
    while (item := await reader.next()) is not None:
        if isinstance(item, bytes):
            try:
                json.loads(item)
            except ValueError:
                item = reader.bad_body(item, -32700, "invalid JSON")
        out.append(item)
    return out


def test_good_frames_split_anywhere() -> None:
    data = _frame(_req(1)) + _frame(_req(2))
    for cut in range(1, len(data)):
        assert asyncio.run(_frames([data[:cut], data[cut:]])) == [_req(1), _req(2)]


def test_resync_after_each_kind_of_bad_length() -> None:
    good = _frame(_req(9))
    for length in (b"5", b"-3", b"abc", b"", str(len(_req(1)) + 20).encode()):
        got = asyncio.run(_frames([_frame(_req(1), length) + good]))
        assert got[-1] == _req(9), (length, got)
        assert all(isinstance(g, BadFrame) for g in got[:-1])


def test_header_over_the_limit_is_skipped() -> None:
    bad = b"Content-Length: 2\r\nX: " + b"a" * 70_000 + b"\r\n\r\n{}"
    got = asyncio.run(_frames([bad, _frame(_req(3))]))
    assert got[-1] == _req(3) and isinstance(got[0], BadFrame)


def test_over_limit_body_is_dropped_and_answered_with_its_id() -> None:
    body = _req(4)[:-1] + b', "pad": "' + b"x" * 5000 + b'"}'
    chunks = [_frame(body)[i:i + 1000] for i in range(0, len(_frame(body)), 1000)]
    got = asyncio.run(_frames([*chunks, _frame(_req(5))], max_body=1000))
    assert isinstance(got[0], BadFrame) and got[0].msg_id == 4
    assert got[1] == _req(5)


def test_a_body_that_never_completes_ends_after_the_idle_time() -> None:
    async def run() -> list[bytes | BadFrame]:
        sent = [_frame(_req(6), b"500") + _frame(_req(7))]

        async def read() -> bytes:
            if sent:
                return sent.pop()
            await asyncio.sleep(10)
            return b""

        reader = FrameReader(read, body_idle_seconds=0.2)
        first = await reader.next()
        assert isinstance(first, BadFrame) and first.msg_id == 6
        second = await reader.next()
        assert second == _req(7)
        return [first]

    asyncio.run(run())


def test_recover_id_only_from_a_request_and_only_before_the_next_frame() -> None:
    assert recover_id(_req(12)) == 12
    assert recover_id(b'{"jsonrpc":"2.0","id":"a\\"b","method":"x"') == 'a"b'
    assert recover_id(b'{"jsonrpc":"2.0","id":3,"result":{}}') is None
    assert recover_id(b"{}" + _frame(_req(8))) is None
