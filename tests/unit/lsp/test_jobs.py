"""The job registry: ids, outcomes, cancellation, adoption of core tasks, drain, usage."""

from __future__ import annotations

import asyncio
import threading

from reverie.events import JobEvent
from reverie.lsp.jobs import ExpectedJobError, Job, JobRegistry, JobResult, progress_text


class Harness:
    def __init__(self, price_for=lambda kind: None) -> None:
        self.events: list[JobEvent] = []
        self.expected: list[str] = []
        self.tasks: set[asyncio.Task] = set()
        self.registry = JobRegistry(
            spawn=self.spawn,
            on_event=self.events.append,
            make_progress=lambda job: None,
            on_expected_error=lambda job, msg: self.expected.append(msg),
            price_for=price_for,
        )

    def spawn(self, coro, name):
        task = asyncio.get_running_loop().create_task(coro, name=name)
        self.tasks.add(task)
        return task

    def types_of(self, job_id: str) -> list[str]:
        return [e.type for e in self.events if e.job_id == job_id]


async def test_a_job_reports_its_outcome_once():
    h = Harness()

    async def body(job: Job) -> JobResult:
        sink = h.registry.sink_for(job)
        sink(JobEvent(job="dream", type="start", job_id="run-1", message="dreaming"))
        sink(JobEvent(job="dream", type="progress", message="turn 1", payload={"turn": 1}))
        sink(
            JobEvent(
                job="dream",
                type="complete",
                message="done",
                payload={"tokens_in": 10, "tokens_out": 5},
            )
        )
        return JobResult("complete", "ignored: the core already reported")

    job = h.registry.start("dream", "Dream", body, key="dream:/m")
    assert job.id == "dream-1" and h.registry.running_with_key("dream:/m") is job
    await job.task
    assert h.types_of(job.id) == ["start", "progress", "complete"]
    # the core's own id moves to the payload; the job id tags every event
    assert h.events[0].payload["run_id"] == "run-1"
    assert h.registry.last_results["dream"].message == "done"
    assert h.registry.running() == []
    usage, cost = h.registry.usage_today()
    assert (usage.input_tokens, usage.output_tokens, usage.calls) == (10, 5, 1) and cost is None


async def test_body_result_becomes_the_terminal_event():
    h = Harness()

    async def body(job: Job) -> JobResult:
        return JobResult("skipped", "nothing to do", {"reason": "session_gate"})

    job = h.registry.start("sleep", "Sleep", body)
    await job.task
    assert h.types_of(job.id) == ["skipped"]
    assert h.registry.last_results["sleep"].payload == {"reason": "session_gate"}


async def test_cancel_emits_cancelled_and_frees_the_key():
    h = Harness()
    started = asyncio.Event()

    async def body(job: Job) -> JobResult:
        started.set()
        await asyncio.sleep(60)
        return JobResult()

    job = h.registry.start("dream", "Dream", body, key="k")
    await started.wait()
    assert h.registry.cancel(job.id) is True
    await asyncio.wait([job.task])
    assert h.types_of(job.id) == ["cancelled"]
    assert h.registry.running_with_key("k") is None
    assert h.registry.cancel(job.id) is False  # gone
    assert h.registry.last_results["dream"].type == "cancelled"


async def test_expected_and_unexpected_errors():
    h = Harness()

    async def expected(job: Job) -> JobResult:
        raise ExpectedJobError("no API key for openai")

    async def unexpected(job: Job) -> JobResult:
        raise RuntimeError("boom")

    a = h.registry.start("session_memory", "Session notes", expected)
    b = h.registry.start("dream", "Dream", unexpected)
    await asyncio.wait([a.task, b.task])
    assert h.expected == ["no API key for openai"]
    assert h.registry.last_results["session_memory"].type == "error"
    [error] = [e for e in h.events if e.job_id == b.id]
    assert error.type == "error" and "boom" in error.message


async def test_adopted_task_ends_at_its_terminal_event_or_when_it_dies():
    h = Harness()
    gate = asyncio.Event()

    async def chain() -> None:
        await gate.wait()

    task = asyncio.get_running_loop().create_task(chain())
    job = h.registry.adopt("session_memory", "Session notes", task, session_id="s1")
    assert h.registry.active_for("session_memory", "s1") is job
    h.registry.sink_for(job)(JobEvent(job="session_memory", type="complete", message="ok"))
    assert h.registry.active_for("session_memory", "s1") is None
    gate.set()
    await task

    dying = asyncio.get_running_loop().create_task(asyncio.sleep(60))
    job2 = h.registry.adopt("session_memory", "Session notes", dying, session_id="s2")
    dying.cancel()
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    assert h.types_of(job2.id) == ["cancelled"]


async def test_events_from_worker_threads_reach_the_loop():
    h = Harness()

    async def body(job: Job) -> JobResult:
        sink = h.registry.sink_for(job)
        thread = threading.Thread(
            target=sink, args=(JobEvent(job="dream", type="progress", message="from a thread"),)
        )
        thread.start()
        thread.join()
        await asyncio.sleep(0.01)
        return JobResult("complete", "done")

    job = h.registry.start("dream", "Dream", body)
    await job.task
    assert h.types_of(job.id) == ["progress", "complete"]


async def test_drain_waits_then_cancels():
    h = Harness()

    async def quick(job: Job) -> JobResult:
        await asyncio.sleep(0.01)
        return JobResult("complete", "quick")

    async def slow(job: Job) -> JobResult:
        await asyncio.sleep(60)
        return JobResult()

    a = h.registry.start("session_memory", "Session notes", quick)
    b = h.registry.start("dream", "Dream", slow)
    await h.registry.drain(0.2)
    assert a.task.done() and not a.task.cancelled()
    assert b.task.cancelled()
    assert h.types_of(b.id) == ["cancelled"]


def test_progress_text():
    e = JobEvent(
        job="dream",
        type="progress",
        message="turn 2: 3 tool use(s)",
        payload={"turn": 2, "files_touched": ["a", "b"]},
    )
    assert progress_text(e) == "turn 2: 3 tool use(s) · 2 files touched"
    e = JobEvent(job="dream", type="progress", payload={"phase": "gather", "turn": 1})
    assert progress_text(e) == "gather · turn 1"
    assert progress_text(JobEvent(job="sleep", type="start")) == "start"


async def test_cost_today_from_configured_prices():
    from reverie.config import ModelPrice

    h = Harness(price_for=lambda kind: ModelPrice(input=2.0, output=10.0))  # $ per M tokens

    async def body(job: Job) -> JobResult:
        return JobResult("complete", "ok", {"tokens_in": 500_000, "tokens_out": 100_000})

    job = h.registry.start("dream", "Dream", body)
    await job.task
    usage, cost = h.registry.usage_today()
    assert usage.input_tokens == 500_000 and cost == 2.0  # 1.0 + 1.0


async def test_session_memory_events_are_attributed_by_task():
    """A skip reported for a new request while a run is going on is not that run's outcome."""
    from types import SimpleNamespace

    from reverie.lsp.features.notes import session_memory_sink

    h = Harness()
    server = SimpleNamespace(jobs=h.registry, tracker_for_path=lambda path: None)
    sink = session_memory_sink(server)  # type: ignore[arg-type]
    release = asyncio.Event()

    def event(type_: str, **payload) -> JobEvent:
        return JobEvent(job="session_memory", type=type_, session_id="s1", payload=payload)

    async def chain() -> None:
        sink(event("start"))
        await release.wait()
        sink(event("complete", edited=True))

    async def watcher() -> None:
        sink(event("coalesced"))
        sink(event("skipped", reason="coalesced"))

    run = asyncio.create_task(chain())
    await asyncio.sleep(0)
    [job] = h.registry.running()
    await asyncio.create_task(watcher())
    assert h.registry.running() == [job]  # still running: the skip was not its outcome
    release.set()
    await run
    assert h.registry.running() == []
    assert h.registry.last_results["session_memory"].type == "complete"
    assert [e.type for e in h.events if e.job_id == job.id] == ["start", "complete"]
    assert [e.type for e in h.events if e.job_id is None] == ["coalesced", "skipped"]
