"""Hypothesis fuzzing of every parser: random bytes and mutated real lines never raise, and the
line / skip counts add up."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reverie.transcripts import aider, gemini
from reverie.transcripts.model import AgentName, ParseStats
from reverie.transcripts.reader import TranscriptReader, load_transcript
from reverie.transcripts.tail import TranscriptTail

FIX = Path(__file__).resolve().parents[2] / "fixtures" / "transcripts"
SAMPLES: dict[AgentName, Path] = {
    "claude-code": FIX / "claude-code/claude-code-viewer-v1.0.108-inline-sidechains/sample-project/5c0375b4-57a5-4f26-b12d-d022ee4e51b7.jsonl",  # noqa: E501
    "codex": FIX / "codex/codemie-code/sessions/2026/01/02/rollout-2026-01-02T18-39-45-019b7f94-51b4-7593-922e-ba12b5b73b52.jsonl",  # noqa: E501
    "gemini-cli": FIX / "gemini-cli/agent-sessions-synthetic/session-jsonl-v040.jsonl",
}
SAMPLE_LINES = {agent: path.read_bytes().splitlines() for agent, path in SAMPLES.items()}
SAMPLE_LINES["codex"] += (FIX / "codex/agent-sessions-synthetic/schema-coverage-0.146-small.jsonl"
                          ).read_bytes().splitlines()
SAMPLE_LINES["generic"] = [
    orjson.dumps({"role": "user", "content": "hi", "cwd": "/w"}),
    orjson.dumps({"role": "assistant", "content": None, "tool_calls": [
        {"id": "c", "function": {"name": "bash", "arguments": "{\"command\": \"ls\"}"}}]}),
    orjson.dumps({"role": "tool", "tool_call_id": "c", "content": "x", "exit_code": 2}),
]
JSONL_AGENTS: list[AgentName] = ["claude-code", "codex", "gemini-cli", "generic"]
FUZZ = settings(max_examples=60, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture,
                                       HealthCheck.too_slow])

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**40), 2**40) | st.floats(allow_nan=False)
    | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4)
    | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=12,
)


def _nonblank(data: bytes) -> int:
    """Lines with content; a leading byte-order mark is not content (a BOM-only file is empty)."""
    return sum(1 for line in data.removeprefix(b"\xef\xbb\xbf").split(b"\n") if line.strip())


def _read(path: Path, agent: AgentName) -> tuple[int, ParseStats]:
    reader = TranscriptReader(path, agent=agent)
    count = sum(1 for _ in reader)
    return count, reader.stats


@FUZZ
@given(agent=st.sampled_from(JSONL_AGENTS), data=st.binary(max_size=3000))
def test_random_bytes_never_raise(tmp_path: Path, agent: AgentName, data: bytes) -> None:
    path = tmp_path / f"fuzz-{agent}.jsonl"
    path.write_bytes(data)
    _, stats = _read(path, agent)
    assert stats.lines == _nonblank(data)
    assert 0 <= stats.skipped <= stats.lines


def _mutate(line: bytes, how: int, where: int, junk: bytes, value: Any) -> bytes:
    if not line:
        return junk
    at = where % len(line)
    if how == 0:
        return line[:at]  # truncated
    if how == 1:
        return line[:at] + junk + line[at:]  # bytes inserted (maybe non-UTF-8)
    if how == 2:
        return line[:at] + bytes([line[at] ^ 0x5A]) + line[at + 1:]  # a flipped byte
    try:
        record = orjson.loads(line)
    except orjson.JSONDecodeError:
        return line + junk
    if isinstance(record, dict) and record:
        keys = sorted(record)
        key = keys[at % len(keys)]
        if how == 3:
            del record[key]  # a field missing
        else:
            record[key] = copy.deepcopy(value)  # a field of an unexpected type
        payload = record.get("payload") or record.get("message")
        if how == 5 and isinstance(payload, dict) and payload:
            inner = sorted(payload)
            payload[inner[at % len(inner)]] = value
    return orjson.dumps(record)


@FUZZ
@given(
    agent=st.sampled_from(JSONL_AGENTS),
    picks=st.lists(st.integers(0, 10_000), min_size=1, max_size=25),
    mutations=st.lists(
        st.tuples(st.integers(0, 5), st.integers(0, 10**6), st.binary(min_size=1, max_size=8),
                  json_values),
        max_size=25,
    ),
)
def test_mutated_fixture_lines_never_raise_and_counts_add_up(
    tmp_path: Path, agent: AgentName, picks: list[int], mutations: list[Any]
) -> None:
    source = SAMPLE_LINES[agent]
    lines = [source[i % len(source)] for i in picks]
    for index, (how, where, junk, value) in enumerate(mutations):
        target = index % len(lines)
        lines[target] = _mutate(lines[target], how, where, junk, value)
    data = b"\n".join(lines) + b"\n"
    path = tmp_path / f"mutated-{agent}.jsonl"
    path.write_bytes(data)
    count, stats = _read(path, agent)
    assert stats.lines == _nonblank(data)
    not_objects = 0
    for line in data.split(b"\n"):
        if not line.strip():
            continue
        try:
            parsed = orjson.loads(line.decode("utf-8", "replace"))
        except orjson.JSONDecodeError:
            parsed = None
        not_objects += not isinstance(parsed, dict)
    assert not_objects <= stats.skipped <= stats.lines
    assert stats.ignored + stats.skipped <= stats.lines
    if agent != "gemini-cli":  # gemini messages are per id, not per line
        assert count <= 2 * (stats.lines - stats.skipped - stats.ignored) + 1


@FUZZ
@given(cuts=st.lists(st.integers(1, 40_000), min_size=1, max_size=12))
def test_tail_in_any_chunking_equals_a_whole_read(tmp_path: Path, cuts: list[int]) -> None:
    source = SAMPLES["claude-code"].read_bytes()
    path = tmp_path / "tail.jsonl"
    path.write_bytes(b"")
    tail = TranscriptTail(path, agent="claude-code")
    got = []
    positions = [*sorted({c % len(source) for c in cuts}), len(source)]
    start = 0
    for end in positions:
        with path.open("ab") as handle:
            handle.write(source[start:end])
        start = end
        got.extend(tail.read_new())
    expected = load_transcript(SAMPLES["claude-code"]).messages
    assert [m.model_dump() for m in got] == [m.model_dump() for m in expected]


@FUZZ
@given(data=st.binary(max_size=4000) | st.text(max_size=2000).map(str.encode))
def test_gemini_document_never_raises(tmp_path: Path, data: bytes) -> None:
    state = gemini.parse_document(tmp_path / "session-x.json", data)
    state.messages()
    assert state.stats.lines == 1 and state.stats.skipped <= len(data) + 1


@FUZZ
@given(doc=st.dictionaries(
    st.sampled_from(["sessionId", "projectHash", "startTime", "lastUpdated", "messages",
                     "summary", "directories", "kind"]),
    json_values | st.lists(st.dictionaries(
        st.sampled_from(["id", "type", "content", "toolCalls", "tokens", "timestamp", "model"]),
        json_values, max_size=6), max_size=5),
    max_size=8,
))
def test_gemini_document_shapes_never_raise(tmp_path: Path, doc: dict[str, Any]) -> None:
    state = gemini.parse_document(tmp_path / "session-x.json", orjson.dumps(doc))
    messages = state.messages()
    assert len(messages) <= 2 * len(doc.get("messages") or []) if isinstance(
        doc.get("messages"), list) else True


AIDER_LINES = (FIX / "aider/aider-repo/.aider.chat.history.md").read_bytes().splitlines()[:400]


@FUZZ
@given(
    picks=st.lists(st.integers(0, 399), max_size=60),
    noise=st.lists(st.binary(max_size=30), max_size=10),
)
def test_aider_history_never_raises(tmp_path: Path, picks: list[int], noise: list[bytes]) -> None:
    lines = [AIDER_LINES[i] for i in picks] + noise
    data = b"\n".join(lines)
    stats = ParseStats()
    runs = aider.parse_history(tmp_path / ".aider.chat.history.md", data, stats)
    headers = sum(1 for line in data.split(b"\n") if aider.HEADER.match(line))
    assert len(runs) == headers
    assert len({r.session.id for r in runs}) == len(runs)


# -- the paths added for fidelity (issue 15): hostile and truncated input never raises ----------

content_parts = st.lists(st.dictionaries(
    st.sampled_from(["text", "thought", "functionCall", "functionResponse", "inlineData"]),
    json_values | st.dictionaries(st.sampled_from(["name", "args", "id", "response"]),
                                  json_values, max_size=4),
    max_size=3), max_size=4)


@FUZZ
@given(history=st.lists(st.dictionaries(st.sampled_from(["role", "parts"]),
                                        st.sampled_from(["user", "model", "x"]) | content_parts
                                        | json_values, max_size=2), max_size=8),
       wrap=st.booleans(), cut=st.integers(0, 400))
def test_gemini_history_contents_never_raise(tmp_path: Path, history: list[Any], wrap: bool,
                                             cut: int) -> None:
    data = orjson.dumps({"history": history} if wrap else history)
    for blob in (data, data[:cut]):
        path = tmp_path / "checkpoint-x.json"
        path.write_bytes(blob)
        count, stats = _read(path, "gemini-cli")
        assert count <= 2 * len(history) + 1 and stats.lines <= 1


patch_lines = st.sampled_from([
    "*** Begin Patch", "*** End Patch", "*** Update File: a.py", "*** Add File: ../x",
    "*** Delete File: ", "*** Move to: C:\\w\\b.py", "@@", "-old", "+new", "EOF",
    "apply_patch <<'EOF'", "apply_patch", "+++ b/c.py", "\x00", "*** Update File: " + "z" * 300,
])


@FUZZ
@given(lines=st.lists(patch_lines | st.text(max_size=40), max_size=30),
       cwd=st.sampled_from([None, "/w", "C:\\w", "", "relative"]))
def test_shell_patches_never_raise(lines: list[str], cwd: str | None) -> None:
    from reverie.transcripts.base import make_tool_call

    command = "\n".join(lines)
    for name, payload in (("shell", {"command": ["bash", "-lc", command]}),
                          ("exec_command", {"cmd": command}), ("apply_patch", {"input": command})):
        call = make_tool_call("codex", "c", name, payload, cwd)
        assert all(isinstance(p, str) and p for p in call.file_paths)


@FUZZ
@given(changes=json_values | st.dictionaries(st.text(max_size=20), json_values, max_size=6))
def test_patch_apply_end_changes_never_raise(tmp_path: Path, changes: Any) -> None:
    record = {"timestamp": "2026-03-02T10:00:00.000Z", "type": "event_msg",
              "payload": {"type": "patch_apply_end", "call_id": "c", "success": True,
                          "changes": changes}}
    path = tmp_path / "rollout-2026-03-02T10-00-00-x.jsonl"
    path.write_bytes(orjson.dumps(record) + b"\n")
    count, stats = _read(path, "codex")
    assert count == 1 and stats.skipped == 0


@FUZZ
@given(root=st.text(max_size=60), names=st.lists(st.text(max_size=40), max_size=5))
def test_aider_working_dir_and_names_never_raise(tmp_path: Path, root: str,
                                                 names: list[str]) -> None:
    body = ["# aider chat started at 2026-03-02 10:00:00", f"> Git working dir: {root}",
            "#### do it", "ok"] + [f"> Applied edit to {n}" for n in names]
    data = "\n".join(body).encode("utf-8", "surrogatepass")
    runs = aider.parse_history(tmp_path / ".aider.chat.history.md", data, ParseStats())
    assert len(runs) == 1
