"""The gate fuzzer that stays: >= 2,000 hypothesis-generated tool calls per run against a dream's
real set-up (live memory dir mapped to a staging copy), with symlinks in the live dir and a
thread swapping a live directory for a symlink the whole time, then applies under the same
swap. Nothing outside the memory dir is ever read, written or deleted (issue 17.1 / 17.13)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hostile.swap import Swapper
from reverie.memory.history import MemoryHistory, RunRecord, new_run_id
from reverie.memory.transaction import MemoryTransaction, TransactionError, recover
from reverie.tools.fs import ALL_TOOLS, execute_tool
from reverie.tools.gate import PathGate

CANARY = "CANARY-3e9b-outside"
TOPIC = "---\nname: T\ndescription: d\ntype: project\n---\n\nbody\n"


def _tree(root: Path) -> tuple[Path, Path]:
    memory = root / "memory"
    outside = root / "outside"
    (memory / "sub").mkdir(parents=True)
    (memory / "swap").mkdir()
    (outside / "deep").mkdir(parents=True)
    (memory / "MEMORY.md").write_text("# Memory\n\n- [T](topic.md) - t\n")
    (memory / "topic.md").write_text(TOPIC)
    (memory / "sub" / "n.md").write_text("nested\n")
    (memory / "swap" / "s.md").write_text("swapped dir file\n")
    (outside / "canary.md").write_text(CANARY)
    (outside / "deep" / "x.md").write_text(CANARY)
    (outside / "s.md").write_text(CANARY)
    (memory / "link_dir").symlink_to(outside)
    (memory / "link_file").symlink_to(outside / "canary.md")
    (memory / "sub" / "up").symlink_to(outside / "deep")
    return memory, outside


def _snapshot(outside: Path) -> dict[str, tuple[bytes, int]]:
    return {str(p.relative_to(outside)): (p.read_bytes() if p.is_file() else b"dir",
                                          p.lstat().st_mtime_ns)
            for p in sorted(outside.rglob("*"))}


SEGMENTS = st.sampled_from([
    ".", "..", "sub", "n.md", "swap", "s.md", "link_dir", "link_file", "up", "canary.md",
    "deep", "x.md", "topic.md", "MEMORY.md", "new.md", ".reverie", "journal.json", "outside",
    "staging", "memory", "", "~", "a\x00b", "x" * 300,
])
PREFIXES = st.sampled_from(["", "{memory}/", "{outside}/", "{root}/", "{staging}/", "/",
                            "/proc/self/root{memory}/", "./", "{memory}/../"])


@st.composite
def tool_calls(draw: st.DrawFn) -> tuple[str, dict[str, object]]:
    tool = draw(st.sampled_from(ALL_TOOLS))
    path = draw(PREFIXES) + "/".join(draw(st.lists(SEGMENTS, min_size=1, max_size=5)))
    content = draw(st.sampled_from(["x\n", TOPIC, "# Memory\n"]))
    args: dict[str, object] = {
        "read_file": {"file_path": path},
        "list_dir": {"path": path},
        "glob": {"pattern": draw(st.sampled_from(["**/*", "*.md", "**/../*", "swap/*"])),
                 "path": path},
        "grep": {"pattern": draw(st.sampled_from(["CANARY", ".", "body"])), "path": path},
        "edit_file": {"file_path": path, "old_string": draw(st.sampled_from(["", "body"])),
                      "new_string": "edited"},
        "write_file": {"file_path": path, "content": content},
    }[tool]
    return tool, args


def _fill(template: str, places: dict[str, Path]) -> str:
    for key, value in places.items():
        template = template.replace("{" + key + "}", str(value))
    return template


def test_gate_fuzz_with_live_symlinks_and_a_concurrent_swap(tmp_path: Path) -> None:
    root = tmp_path.resolve()
    memory, outside = _tree(root)
    before = _snapshot(outside)
    history = MemoryHistory(memory)
    tx = MemoryTransaction(memory)
    staging = tx.begin()
    gate = PathGate([memory], write_dir=memory, base_dir=memory).with_path_map({memory: staging})
    places = {"memory": memory, "outside": outside, "root": root, "staging": staging}
    stats = {"calls": 0, "denied": 0, "written": 0, "applies": 0, "refused_applies": 0}

    @settings(max_examples=550, deadline=None, database=None,
              suppress_health_check=[HealthCheck.too_slow])
    @given(calls=st.lists(tool_calls(), min_size=4, max_size=4))
    def run(calls: list[tuple[str, dict[str, object]]]) -> None:
        for tool, template in calls:
            args = {k: _fill(v, places) if isinstance(v, str) else v
                    for k, v in template.items()}
            outcome = execute_tool(gate, tool, args)  # never raises
            stats["calls"] += 1
            stats["denied"] += outcome.denial is not None
            stats["written"] += bool(outcome.written)
            assert CANARY not in outcome.content, (tool, args, outcome.content[:300])
        assert _snapshot(outside) == before

    with Swapper(memory / "swap", outside) as swapper:
        run()
        # apply what the calls staged, then more runs, all while the swap goes on
        swapper.interval = 0.02
        for attempt in range(6):
            record = RunRecord(run_id=new_run_id(), at=datetime.now(UTC), source="manual")
            try:
                tx.commit(history, record)
                stats["applies"] += 1
            except (TransactionError, OSError):
                stats["refused_applies"] += 1
                tx.abort()
                try:  # past the commit point a refused write leaves the journal: replay it
                    recover(memory)
                except (TransactionError, OSError):
                    pass  # still refused (the symlink is back): it stays for the next run
            assert _snapshot(outside) == before
            staging = None
            while staging is None:  # a copy made while the swap is a symlink is refused
                tx = MemoryTransaction(memory)
                try:
                    staging = tx.begin()
                except OSError:
                    assert not tx.staging_dir.exists()
            (staging / f"run{attempt}.md").write_text(TOPIC)
            (staging / "swap").mkdir(exist_ok=True)
            (staging / "swap" / f"w{attempt}.md").write_text("written during the swap\n")
        tx.abort()
    assert swapper.swaps > 10, swapper.swaps
    assert _snapshot(outside) == before
    assert stats["calls"] >= 2000 and stats["denied"] > 0 and stats["written"] > 0, stats
    assert stats["applies"] + stats["refused_applies"] == 6
    print(f"gate fuzzer: {stats}, swaps {swapper.swaps}")
