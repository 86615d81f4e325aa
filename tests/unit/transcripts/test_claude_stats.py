"""``reverie transcript --stats`` without messages (``claude_stats``) says byte for byte what the
reference says: ``StatsFold`` over ``TranscriptReader``'s messages. Over every fixture (all
agents: the others fall back to the reference), generated transcripts, generated and mutated
Claude Code records, truncated, oversized and broken lines, and files rewritten while read."""

from __future__ import annotations

import argparse
import io
import json
import random
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench import ingest
from reverie.commands import transcript
from reverie.transcripts.access import TranscriptError
from reverie.transcripts.claude_stats import claude_stats
from reverie.transcripts.detect import detect_agent
from reverie.transcripts.lines import MAX_LINE_BYTES
from reverie.transcripts.reader import TranscriptReader, load_transcript
from reverie.transcripts.stats import StatsFold, transcript_stats

FIX = Path(__file__).resolve().parents[2] / "fixtures" / "transcripts"
FIXTURE_FILES = sorted(p for p in FIX.rglob("*") if p.is_file() and p.name != "SOURCES.md")
CLAUDE_FIXTURES = [p for p in FIXTURE_FILES if detect_agent(p) == "claude-code"]
UUID_NAME = "5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl"


def _dump(value: object) -> bytes:
    return orjson.dumps(value, option=orjson.OPT_INDENT_2) + b"\n"


def reference(path: Path, session_id: str | None = None, agent: Any = None) -> bytes:
    """What ``--stats`` printed before the fast path: the reader's messages through
    ``StatsFold``, or the one-line error."""
    def stats() -> dict[str, Any]:
        reader = TranscriptReader(path, agent=agent, session_id=session_id)
        return StatsFold().feed_all(reader).result(reader.session, reader.stats)

    return _printed(stats)


def fast(path: Path) -> bytes:
    return _printed(lambda: claude_stats(path))


def _printed(stats: Callable[[], dict[str, Any]]) -> bytes:
    """What the command prints: the stats, the one-line error, or the crash (none is known:
    ``test_absurd_usage_counts_are_no_counts`` was one)."""
    try:
        return _dump(stats())
    except TranscriptError as exc:
        return f"reverie: {exc}\n".encode()
    except Exception as exc:  # the same crash on both sides is the same behaviour
        return f"crash: {type(exc).__name__}: {exc}".encode()


def command(path: Path, session_id: str | None, capsysbinary: pytest.CaptureFixture[bytes]
            ) -> bytes:
    """The command's own output (stdout, or the error on stderr)."""
    args = argparse.Namespace(path=path, stats=True, json=False, session_id=session_id)
    code = transcript.run(args)
    out, err = capsysbinary.readouterr()
    return out if code == 0 else err


def test_the_fixtures_include_claude_code_transcripts_of_every_layout() -> None:
    names = {p.parent.name for p in CLAUDE_FIXTURES}
    assert len(CLAUDE_FIXTURES) >= 12 and "subagents" in names
    assert any(p.name.startswith("agent-") for p in CLAUDE_FIXTURES)


@pytest.mark.parametrize("path", FIXTURE_FILES, ids=lambda p: str(p.relative_to(FIX)))
def test_every_fixture_prints_what_the_reference_printed(
    path: Path, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    expected = reference(path)
    assert command(path, None, capsysbinary) == expected
    if path in CLAUDE_FIXTURES:
        assert fast(path) == expected  # the fast path itself, not a fallback
        whole = load_transcript(path)
        assert orjson.loads(expected) == transcript_stats(whole)


def test_a_session_argument_still_picks_the_session(
    capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    history = next(p for p in FIXTURE_FILES if p.name.endswith(".aider.chat.history.md"))
    first = load_transcript(history, session_id=None)
    for session_id in (first.session.id, "no-such-run"):
        assert command(history, session_id, capsysbinary) == reference(history, session_id)


@pytest.mark.parametrize("mix", ["standard", "tool-heavy"])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_generated_transcripts(tmp_path: Path, mix: str, seed: int) -> None:
    path = tmp_path / "generated.jsonl"
    ingest.generate(path, 400_000, seed=seed, mix=mix)
    assert fast(path) == reference(path)


@pytest.mark.parametrize("count", [1.2e29, 2**64, 2**53 + 1, -5, "12", True])
def test_absurd_usage_counts_are_no_counts(
    tmp_path: Path, count: Any, capsysbinary: pytest.CaptureFixture[bytes]
) -> None:
    """A usage count no model wrote (``1.2e29`` input tokens) counts as none, on both paths:
    once it made the printed stats a 97-bit integer, and ``--stats`` a traceback."""
    def written(name: str, input_tokens: Any) -> Path:
        usage = {"input_tokens": input_tokens, "output_tokens": 5}
        lines = [
            {"type": "user", "uuid": "u1", "sessionId": "s1", "cwd": "/w",
             "timestamp": "2026-01-01T00:00:00Z", "message": {"role": "user", "content": "hi"}},
            {"type": "assistant", "uuid": "a1", "parentUuid": "u1", "sessionId": "s1",
             "timestamp": "2026-01-01T00:00:01Z", "cwd": "/w",
             "message": {"id": "m1", "role": "assistant", "model": "x", "usage": usage,
                         "content": [{"type": "text", "text": "done"}]}},
        ]
        folder = tmp_path / name
        folder.mkdir()
        path = folder / UUID_NAME
        path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
        return path

    path, none = written("absurd", count), written("none", 0)
    printed = command(path, None, capsysbinary)
    assert printed == fast(path) == reference(path), printed
    assert printed == command(none, None, capsysbinary), printed


def test_truncated_anywhere(tmp_path: Path) -> None:
    """A file cut at any byte: in a record, in a multi-byte character, after a newline."""
    rng = random.Random(7)
    sources = [*CLAUDE_FIXTURES[:6], tmp_path / "heavy.jsonl"]
    ingest.generate(sources[-1], 60_000, mix="tool-heavy")
    cut = tmp_path / UUID_NAME
    for source in sources:
        data = source.read_bytes()
        for end in sorted({rng.randrange(len(data)) for _ in range(12)} | {len(data) - 1}):
            cut.write_bytes(data[:end])
            assert fast(cut) == reference(cut, agent="claude-code"), (source, end)


def test_oversized_lines_in_the_middle_and_at_the_end(tmp_path: Path) -> None:
    record = orjson.dumps({"type": "user", "sessionId": "s", "message": {"content": "hi"}})
    huge = b'{"type": "user", "message": {"content": "' + b"x" * (MAX_LINE_BYTES + 10)
    path = tmp_path / "huge.jsonl"
    path.write_bytes(record + b"\n" + huge + b'"}}\n' + record + b"\n" + huge)
    expected = reference(path, agent="claude-code")
    assert fast(path) == expected
    stats = orjson.loads(expected)
    assert stats["skipped"] == 2 and stats["errors"][-1].endswith("(truncated last line)")


def test_broken_lines_of_every_kind(tmp_path: Path) -> None:
    """Not JSON, not an object, bad UTF-8, a BOM, NaN, huge numbers, more than the 20 kept
    errors, records of the wrong shape."""
    lines = [b"\xef\xbb\xbf" + orjson.dumps({"type": "user", "sessionId": "s-1",
                                                "message": {"content": "go"}}),
             b"", b"   ", b"{not json", b"[1, 2]", b'"text"', b"\xff\xfe\x00",
             b'{"type": "user", "message": {"content": "caf\xe9"}}',
             b'{"type": "assistant", "message": {"id": "m", "content": "x", '
             b'"usage": {"input_tokens": NaN}}}',
             b'{"type": "assistant", "message": {"id": "m", "content": "x", '
             b'"usage": {"input_tokens": 123456789012345678901234567890, "output_tokens": -4}}}',
             b'{"type": "assistant", "message": "not an object"}',
             b'{"type": "user"}', b'{"type": "system", "subtype": "compact_boundary"}',
             *[b"{broken %d" % n for n in range(25)]]
    path = tmp_path / "broken.jsonl"
    path.write_bytes(b"\n".join(lines))
    expected = reference(path, agent="claude-code")
    assert fast(path) == expected
    # the 97-bit count is none (it once made both paths crash printing it)
    assert orjson.loads(expected)["tokens"] < 2**53
    assert orjson.loads(expected)["skipped"] > 20


# -- files that change while they are read ---------------------------------------------------

@contextmanager
def _on_second_read(monkeypatch: pytest.MonkeyPatch, path: Path,
                    action: Callable[[], None]) -> Iterator[None]:
    """Every ``path.open("rb")`` runs ``action`` just before its second read (the file is
    read in 1 MiB chunks: the first chunk is in, the rest not yet)."""
    real_open = Path.open

    class Handle(io.RawIOBase):
        def __init__(self, inner: Any) -> None:
            self.inner, self.reads = inner, 0

        def read(self, size: int = -1) -> bytes:  # type: ignore[override]
            self.reads += 1
            if self.reads == 2:
                action()
            data: bytes = self.inner.read(size)
            return data

        def close(self) -> None:
            self.inner.close()
            super().close()

    def fake_open(self: Path, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        handle = real_open(self, mode, *args, **kwargs)
        return Handle(handle) if self == path and mode == "rb" else handle

    monkeypatch.setattr(Path, "open", fake_open)
    yield


def _rewrites(path: Path, original: bytes) -> dict[str, Callable[[], None]]:
    def truncate() -> None:
        with open(path, "r+b") as handle:
            handle.truncate(len(original) // 3)

    def rewrite() -> None:  # compacted: other records at the same offsets
        path.write_bytes(original[len(original) // 2:] + original[: len(original) // 2])

    def append() -> None:
        with open(path, "ab") as handle:
            handle.write(original[:5000])

    def fail() -> None:
        raise OSError(5, "Input/output error")

    return {"truncate": truncate, "rewrite": rewrite, "append": append, "fail": fail}


@pytest.mark.parametrize("change", ["truncate", "rewrite", "append", "fail"])
def test_a_file_rewritten_while_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                     change: str) -> None:
    source = tmp_path / "source.jsonl"
    ingest.generate(source, 3 * 1024 * 1024, mix="tool-heavy")
    original = source.read_bytes()
    path = tmp_path / UUID_NAME
    outputs = []
    for run in (fast, lambda p: reference(p, agent="claude-code")):
        path.write_bytes(original)
        with monkeypatch.context() as patch, _on_second_read(patch, path,
                                                             _rewrites(path, original)[change]):
            outputs.append(run(path))
    assert outputs[0] == outputs[1]
    if change == "fail":
        assert outputs[0] == f"reverie: cannot read {path}: Input/output error\n".encode()


# -- generated and mutated records -----------------------------------------------------------

PATHS = st.sampled_from(["a.py", "/abs/b.py", "../c.py", "", "C:\\win\\d.py", "src/a.py"])
INPUT_VALUES = st.one_of(
    PATHS, st.lists(PATHS, max_size=3), st.sampled_from([0, None, True]),
    st.lists(st.fixed_dictionaries({}, optional={"file_path": PATHS, "filePath": PATHS}),
             max_size=2),
    st.sampled_from(["ls -la", "apply_patch <<'EOF'\n*** Begin Patch\n*** Update File: p.py\n"
                     "@@\n-a\n+b\n*** End Patch\nEOF", "*** Begin Patch\n*** Add File: q.py\n"]),
)
INPUTS = st.dictionaries(
    st.sampled_from(["file_path", "path", "paths", "command", "edits", "notebook_path",
                     "prompt", "pattern", "file_paths", "input", "patch", "cmd"]),
    INPUT_VALUES, max_size=4)
JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=6),
                    lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=4), c,
                                                                         max_size=3),
                    max_leaves=6)
TEXT = st.sampled_from(["", " ", "\n", "Warmup", "hello", "x" * 41]) | st.text(max_size=12)
#: usage counts: mostly plain, sometimes odd (counts past 64 bits: ``test_broken_lines...``)
COUNTS = st.one_of(*[st.integers(0, 200_000)] * 4,
                   st.sampled_from([-3, 0, True, False, None, "12", 2.5, 7e3, 2**40]))
USAGE = st.dictionaries(
    st.sampled_from(["input_tokens", "output_tokens", "cache_read_input_tokens",
                     "cache_creation_input_tokens", "service_tier"]), COUNTS, max_size=5
) | st.sampled_from([None, "usage", {}])
TEXT_BLOCK = st.fixed_dictionaries({"type": st.just("text"),
                                    "text": TEXT | st.sampled_from([None, 3])})
TOOL_USE = st.fixed_dictionaries(
    {"type": st.sampled_from(["tool_use", "tool_use", "server_tool_use"])},
    optional={"id": st.sampled_from(["t1", "t2", "", 5]),
              "name": st.sampled_from(["Read", "Edit", "Write", "MultiEdit", "Bash", "LS",
                                       "Task", "Grep", "apply_patch", "NotebookEdit",
                                       "mcp__x__y", "", 7]),
              "input": INPUTS | INPUTS | JSON})
TOOL_RESULT = st.fixed_dictionaries(
    {"type": st.just("tool_result")},
    optional={"tool_use_id": st.sampled_from(["t1", "t2", "", 5]),
              "content": TEXT | st.lists(TEXT_BLOCK | TEXT, max_size=3) | JSON,
              "is_error": st.sampled_from([True, True, False, "true"])})
BLOCKS = st.one_of(
    TEXT_BLOCK, TOOL_USE, TOOL_USE, TOOL_RESULT, TOOL_RESULT,
    st.fixed_dictionaries({"type": st.sampled_from(["thinking", "redacted_thinking", "image"]),
                           "thinking": TEXT}),
    TEXT, JSON,
)
CONTENT = st.lists(BLOCKS, max_size=4) | st.lists(BLOCKS, max_size=4) | TEXT | JSON
MESSAGE = st.fixed_dictionaries({"content": CONTENT}, optional={
    "id": st.sampled_from(["msg_1", "msg_2", "msg_3", "", 4]), "usage": USAGE, "model": TEXT})
RECORD = st.fixed_dictionaries(
    {"type": st.sampled_from(["user", "user", "assistant", "assistant", "assistant", "system",
                              "summary", "progress", "other", 3])},
    optional={
        "message": MESSAGE | MESSAGE | MESSAGE | JSON,
        "sessionId": st.sampled_from(["0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0", "s-1", "s-2",
                                      "", 9]),
        "cwd": st.sampled_from(["/w", "/x/y", "", "C:\\proj", 1]),
        "subtype": st.sampled_from(["compact_boundary", "turn_duration"]),
        "compactMetadata": st.fixed_dictionaries({}, optional={
            "trigger": TEXT | st.just(2), "preTokens": COUNTS}) | JSON,
        "content": TEXT | st.just(1),
        "isSidechain": st.booleans(), "isMeta": st.booleans(),
        "uuid": st.sampled_from(["u1", "u2", "u3"]), "parentUuid": st.sampled_from(["u1", "u2"]),
        "toolUseResult": JSON | st.fixed_dictionaries({}, optional={"exitCode": COUNTS}),
        "summary": TEXT, "leafUuid": st.sampled_from(["u1", "u9"]),
    })
#: most lines are a user or assistant record with a message, as in a real transcript
CONVERSATIONAL = st.fixed_dictionaries(
    {"type": st.sampled_from(["user", "assistant", "assistant"]), "message": MESSAGE},
    optional={"sessionId": st.sampled_from(["0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0", "s-1"]),
              "cwd": st.sampled_from(["/w", "/x/y"]), "isSidechain": st.booleans(),
              "toolUseResult": st.fixed_dictionaries({}, optional={"exitCode": COUNTS})})
CONVERSATIONAL_LINE = CONVERSATIONAL.map(lambda r: json.dumps(r).encode())
LINE = st.one_of(CONVERSATIONAL_LINE, CONVERSATIONAL_LINE, CONVERSATIONAL_LINE,
                 CONVERSATIONAL_LINE, RECORD.map(lambda r: json.dumps(r).encode()),
                 RECORD.map(lambda r: json.dumps(r, separators=(",", ":")).encode()),
                 st.binary(max_size=30), JSON.map(lambda v: json.dumps(v).encode()))
#: well-formed session events, so most examples have calls, results, usage tails to compare
API_IDS = st.sampled_from(["msg_1", "msg_2", "msg_3"])
CALL_IDS = st.sampled_from(["t1", "t2", "t3"])
USAGE_COUNTS = st.fixed_dictionaries(
    {"input_tokens": COUNTS, "output_tokens": COUNTS},
    optional={"cache_read_input_tokens": COUNTS, "cache_creation_input_tokens": COUNTS}
) | st.sampled_from([None, {}, {"input_tokens": 0, "output_tokens": 0}])
SESSION_FIELDS = {"sessionId": st.sampled_from(["0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0", "s-1"]),
                  "cwd": st.sampled_from(["/w", "/x/y", "relative"])}
PROMPT = st.fixed_dictionaries(
    {"type": st.just("user"),
     "message": st.fixed_dictionaries({"content": TEXT | st.lists(TEXT_BLOCK, max_size=2)})},
    optional=SESSION_FIELDS)
RESPONSE = st.fixed_dictionaries(
    {"type": st.just("assistant"), "message": st.fixed_dictionaries(
        {"id": API_IDS, "usage": USAGE_COUNTS, "content": st.lists(st.one_of(
            st.fixed_dictionaries({"type": st.just("tool_use"), "id": CALL_IDS, "input": INPUTS,
                                   "name": st.sampled_from(["Read", "Edit", "MultiEdit", "Bash",
                                                            "Write", "Grep", "Task"])}),
            TEXT_BLOCK, st.fixed_dictionaries({"type": st.just("thinking"), "thinking": TEXT})),
            min_size=1, max_size=3)})},
    optional=SESSION_FIELDS)
RESULT = st.fixed_dictionaries(
    {"type": st.just("user"), "message": st.fixed_dictionaries({"content": st.lists(
        st.fixed_dictionaries({"type": st.just("tool_result"), "tool_use_id": CALL_IDS,
                               "content": TEXT | st.lists(TEXT_BLOCK, max_size=2),
                               "is_error": st.booleans()}) | TEXT_BLOCK,
        min_size=1, max_size=2)})},
    optional={"toolUseResult": st.fixed_dictionaries({}, optional={"exitCode": COUNTS}) | TEXT})
OTHER = st.fixed_dictionaries({"type": st.sampled_from(["system", "progress", "summary"])},
                              optional={"subtype": st.just("compact_boundary"),
                                        "compactMetadata": st.fixed_dictionaries(
                                            {"trigger": TEXT, "preTokens": COUNTS})})
EVENT_LINE = st.one_of(PROMPT, RESPONSE, RESPONSE, RESPONSE, RESULT, RESULT, OTHER).map(
    lambda r: json.dumps(r).encode())
NAMES = st.sampled_from([UUID_NAME, "renamed.jsonl", "agent-a1.jsonl", "subagents/agent-b.jsonl",
                         ".jsonl"])
FUZZ = settings(max_examples=max(300, settings.default.max_examples), deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture,
                                       HealthCheck.too_slow, HealthCheck.data_too_large])


@FUZZ
@given(lines=st.lists(EVENT_LINE | EVENT_LINE | LINE, min_size=1, max_size=40), name=NAMES,
       bom=st.booleans(),
       newline_at_end=st.booleans())
def test_generated_records(tmp_path_factory: pytest.TempPathFactory, lines: list[bytes],
                           name: str, bom: bool, newline_at_end: bool) -> None:
    path = tmp_path_factory.mktemp("fuzz") / name
    path.parent.mkdir(parents=True, exist_ok=True)
    data = (b"\xef\xbb\xbf" if bom else b"") + b"\n".join(lines)
    path.write_bytes(data + (b"\n" if newline_at_end else b""))
    assert fast(path) == reference(path, agent="claude-code")


def _claude_lines() -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for path in CLAUDE_FIXTURES:
        for line in path.read_bytes().splitlines():
            try:
                value = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue
            if isinstance(value, dict):
                out.append(value)
    return out


REAL_RECORDS = _claude_lines()


def _mutate(value: Any, rng: random.Random, replacement: Any) -> Any:
    """``value`` with one node somewhere inside it replaced, or a key dropped."""
    if isinstance(value, dict) and value and rng.random() < 0.8:
        key = rng.choice(list(value))
        copy = dict(value)
        if rng.random() < 0.25:
            del copy[key]
        else:
            copy[key] = _mutate(value[key], rng, replacement)
        return copy
    if isinstance(value, list) and value and rng.random() < 0.8:
        index = rng.randrange(len(value))
        return [*value[:index], _mutate(value[index], rng, replacement), *value[index + 1:]]
    return replacement


@FUZZ
@given(picks=st.lists(st.tuples(st.integers(0, len(REAL_RECORDS) - 1), st.integers(0, 2**32),
                                JSON | COUNTS | st.just(None)), min_size=1, max_size=30),
       name=NAMES)
def test_mutated_real_records(tmp_path_factory: pytest.TempPathFactory,
                              picks: list[tuple[int, int, Any]], name: str) -> None:
    lines = []
    for index, seed, replacement in picks:
        record = REAL_RECORDS[index]
        if seed % 3:
            record = _mutate(record, random.Random(seed), replacement)
        lines.append(json.dumps(record).encode())
    path = tmp_path_factory.mktemp("mutated") / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"\n".join(lines) + b"\n")
    assert fast(path) == reference(path, agent="claude-code")


# -- start-up ---------------------------------------------------------------------------------

def test_stats_of_a_claude_transcript_never_imports_pydantic() -> None:
    """The point of the fast path's lazy imports: start-up without pydantic's schema build."""
    script = ("import sys\nfrom reverie.cli import main\n"
              f"code = main(['transcript', '--stats', {str(CLAUDE_FIXTURES[0])!r}])\n"
              "print(code, sorted(m for m in sys.modules if m.split('.')[0] == 'pydantic'))")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=60,
                          check=True)
    assert done.stdout.decode().splitlines()[-1] == "0 []"
