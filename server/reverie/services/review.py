"""Review before apply: a dream writes a staged change set that only lands once a person
accepts it (all of it, or some files), or is discarded.

How: the dream runs as usual but against a *shadow* copy of the memory dir kept in the live
dir's bookkeeping (``<memory>/.reverie/review/<id>/memory``), so everything a dream does (gates,
lock, repair, validation, pins) happens exactly as it would, and the live memory, the files
agents load, does not change. ``review.json`` beside it records, for each file the dream
changed, the live file's hash when the change set was made (an accept refuses a file a person
or another run changed since), the reason (the dream's summary) and the sessions it came from.
Accepting applies the chosen files to the live dir as one recorded, undoable run; discarding
deletes the shadow. Daily-log dreams are not reviewed (they mark log entries as consumed).
"""

from __future__ import annotations

import hashlib
import re
import shutil
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, Field

from reverie.config import ProjectPaths, Settings
from reverie.errors import UserError
from reverie.events import JobEvent

if TYPE_CHECKING:
    from reverie.dream.models import DreamResult
    from reverie.memory.history import RunSource
    from reverie.memory.write import MemoryWriter

REVIEW_DIR = "review"
_ID = re.compile(r"^[A-Za-z0-9._-]{4,80}$")


class ReviewChange(BaseModel):
    path: str
    action: Literal["add", "change", "remove"]
    #: sha256 of the live file when the change set was made (None: it did not exist)
    base: str | None
    reason: str
    sessions: list[str] = Field(default_factory=list)
    before: str | None = None
    after: str | None = None


class Review(BaseModel):
    """A staged change set; ``as_json`` is the ``reverie dream --review --json`` contract."""

    review_id: str
    memory_dir: str
    created_at: datetime
    #: ``auto`` / ``manual``: a dream's change set; ``agent``: an agent's proposal (MCP)
    source: Literal["auto", "manual", "agent"]
    summary: str
    #: the agent that proposed it (``agent`` change sets only)
    proposed_by: str | None = None
    #: why the proposed text needs a careful read before it is accepted (``reverie.hazards``:
    #: "runs code from the network", ...); the editor then offers no one-click Accept
    hazard: str | None = None
    sessions: list[str] = Field(default_factory=list)
    tokens_in: int = 0
    tokens_out: int = 0
    changes: list[ReviewChange] = Field(default_factory=list)

    def as_json(self, *, with_contents: bool = False) -> dict[str, object]:
        exclude = None if with_contents else {"changes": {"__all__": {"before", "after"}}}
        return self.model_dump(mode="json", exclude=exclude)  # type: ignore[arg-type]


class ReviewOutcome(BaseModel):
    review_id: str
    accepted: list[str] = Field(default_factory=list)
    discarded: list[str] = Field(default_factory=list)
    run_id: str | None = None
    message: str


def wants_review(settings: Settings) -> bool:
    """``dream_review``: ``auto`` reviews model-backed dreams (they cost money and can be
    wrong in new ways) and applies the offline engine's at once."""
    mode = getattr(settings, "dream_review", "auto")
    if mode == "always":
        return True
    if mode == "never":
        return False
    return settings.provider != "offline"


def reviews_root(memory_dir: Path) -> Path:
    return memory_dir / ".reverie" / REVIEW_DIR


def file_sha(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except FileNotFoundError:
        return None


def file_text(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None


def _memory_files(directory: Path) -> set[str]:
    from reverie.memory.store import visible_files

    return set(visible_files(directory))


def _sources(text: str | None) -> list[str]:
    if not text or not text.startswith("---"):
        return []
    head = text.split("\n---", 1)[0]
    block = re.search(r"^sources:\n((?:[ \t]*- .*\n?)+)", head, re.M)
    return [line.strip()[2:].strip() for line in block.group(1).splitlines()] if block else []


def _entries(text: str | None) -> list[str]:
    """The entry lines of a memory file (bullets), front matter left out."""
    if not text:
        return []
    body = text.split("\n---", 1)[1] if text.startswith("---") and "\n---" in text else text
    return [line.strip() for line in body.splitlines() if re.match(r"\s*[-*] \S", line)]


def change_reason(before: str | None, after: str | None, summary: str) -> str:
    """What the change does to this file, then why the run made it: "adds 2 entries, retires
    1 (offline consolidation of 3 sessions: ...)"."""
    old, new = _entries(before), _entries(after)
    added = len([e for e in new if e not in old])
    gone = len([e for e in old if e not in new])
    if before is None:
        what = f"new file with {len(new)} entr{'y' if len(new) == 1 else 'ies'}"
    elif after is None:
        what = "file removed"
    elif added or gone:
        parts = ([f"adds {added} entr{'y' if added == 1 else 'ies'}"] if added else []) + \
                ([f"drops {gone}"] if gone else [])
        what = ", ".join(parts)
    else:
        what = "same entries; front matter or wording only"
    return f"{what} ({summary})"


def seed_shadow(live: Path, shadow: Path) -> None:
    shadow.mkdir(parents=True)
    for name in _memory_files(live):
        target = shadow / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(live / name, target)
    lock = live / ".consolidate-lock"
    if lock.exists():  # the shadow's gates see the live dir's last consolidation
        shutil.copy2(lock, shadow / ".consolidate-lock")


async def stage_dream(settings: Settings, workspace: Path, *, manual: bool, extra: str = "",
                      events: Callable[[JobEvent], None] | None = None,
                      current_session_id: str | None = None,
                      runner_options: dict[str, Any] | None = None,
                      ) -> tuple[Review | None, DreamResult]:
    """Run a dream into a shadow of the memory dir; returns the staged review (None when the
    dream changed nothing, was skipped or failed) and the dream's own result."""
    import asyncio
    import secrets

    from reverie.dream.models import DreamRequest
    from reverie.dream.runner import DreamRunner
    from reverie.memory.history import MemoryHistory

    live = ProjectPaths(settings, workspace).memory_dir
    staging_id = f"{datetime.now(UTC):%Y%m%dT%H%M%S}-{secrets.token_hex(3)}"
    root = reviews_root(live) / staging_id
    shadow = root / "memory"
    await asyncio.to_thread(seed_shadow, live, shadow)
    # the shadow is written by a writer without after-apply hooks: no search index, no agent
    # copy refreshed for a change set nobody accepted yet
    shadow_settings = settings.model_copy(update={"memory_dir": shadow,
                                                  "memory_dir_preset": "custom"})
    sink = events or (lambda event: None)

    def shadow_events(event: JobEvent) -> None:
        # the shadow's "memory saved" and "complete" are not the live memory's: the caller
        # reports the staged change set instead
        if event.type not in ("memory_saved", "complete"):
            sink(event)

    runner = DreamRunner(shadow_settings, shadow_events, **(runner_options or {}))
    result = await runner.run(DreamRequest(workspace=workspace, manual=manual, extra=extra,
                                           current_session_id=current_session_id))
    changed = sorted(Path(p).name if Path(p).parent == shadow else
                     str(Path(p).relative_to(shadow)) for p in result.files_touched)
    if not result.run_id or not changed:
        await asyncio.to_thread(shutil.rmtree, root, True)
        return None, result
    record = (await asyncio.to_thread(MemoryHistory(shadow).runs))[0]
    changes = []
    for name in changed:
        before, after = file_text(live / name), file_text(shadow / name)
        if before == after:
            continue
        changes.append(ReviewChange(
            path=name, action="add" if before is None else "remove" if after is None else "change",
            base=file_sha(live / name),
            reason=change_reason(before, after, record.summary or result.summary or "dream"),
            sessions=_sources(after) or record.sessions,
        ))
    review = Review(review_id=result.run_id, memory_dir=str(live), created_at=datetime.now(UTC),
                    source="manual" if manual else "auto", summary=record.summary,
                    sessions=record.sessions, tokens_in=record.tokens_in,
                    tokens_out=record.tokens_out, changes=changes)
    await asyncio.to_thread(publish_review, root, review)
    return review, result


def publish_review(staging: Path, review: Review) -> None:
    """The staged shadow (``staging/memory``) becomes the pending change set ``review``."""
    from reverie.fsutil import atomic_write_text

    final = reviews_root(Path(review.memory_dir)) / review.review_id
    staging.rename(final)
    atomic_write_text(final / "review.json", review.model_dump_json(indent=2))


def list_reviews(memory_dir: Path, *, with_contents: bool = False) -> list[Review]:
    """Pending change sets, newest first (contents: each file's live and staged text)."""
    root = reviews_root(memory_dir)
    found: list[Review] = []
    for path in sorted(root.glob("*/review.json"), reverse=True):
        try:
            review = Review.model_validate_json(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if with_contents:
            for change in review.changes:
                change.before = file_text(memory_dir / change.path)
                change.after = file_text(path.parent / "memory" / change.path)
        found.append(review)
    return found


def has_pending_review(memory_dir: Path) -> bool:
    """A dream's change set waits for a person (an agent's proposal does not hold dreams up:
    a dream that changes its file makes it refuse to apply instead)."""
    return any(r.source != "agent" for r in list_reviews(memory_dir))


def find_review(memory_dir: Path, review_id: str) -> Review:
    reviews = [r for r in list_reviews(memory_dir) if r.review_id.startswith(review_id)]
    if not review_id or not _ID.match(review_id) or not reviews:
        raise UserError(f"no staged change set {review_id!r} (reverie dream --review makes one)")
    if len(reviews) > 1:
        raise UserError(f"{review_id!r} names {len(reviews)} staged change sets; give more of it")
    return reviews[0]


def discard_review(memory_dir: Path, review_id: str) -> ReviewOutcome:
    review = find_review(memory_dir, review_id)
    shutil.rmtree(reviews_root(memory_dir) / review.review_id, ignore_errors=True)
    return ReviewOutcome(review_id=review.review_id,
                         discarded=[c.path for c in review.changes],
                         message=f"Discarded the staged change set ({len(review.changes)} "
                                 "files); memory is unchanged.")


async def apply_review(memory_dir: Path, review_id: str, only: Sequence[str] | None = None,
                       writer: MemoryWriter | None = None) -> ReviewOutcome:
    """Apply the review's files (``only``: some of them) as one run; the rest are discarded.
    Refuses a file whose live text changed since the change set was made."""
    import asyncio

    from reverie.services.wiring import memory_writer

    review = await asyncio.to_thread(find_review, memory_dir, review_id)
    names = [c.path for c in review.changes]
    chosen = list(names) if only is None else [n for n in names if n in set(only)]
    unknown = sorted(set(only or ()) - set(names))
    if unknown:
        raise UserError(f"not in the change set: {', '.join(unknown)} (it has {', '.join(names)})")
    if not chosen:
        raise UserError("choose at least one file to accept, or discard the change set")
    proposal = review.source == "agent"
    if proposal and len(chosen) != len(names):
        raise UserError("an agent's proposal is one change: accept it whole, or discard it")
    moved = [c.path for c in review.changes
             if c.path in chosen and file_sha(memory_dir / c.path) != c.base]
    if moved:
        again = "" if proposal else " and dream again"
        raise UserError(f"changed since the change set was made: {', '.join(moved)}; discard "
                        f"it{again}")
    shadow = reviews_root(memory_dir) / review.review_id / "memory"
    # an accepted proposal is the person's own curation (kept byte for byte, like theirs);
    # a dream's change set lands as that dream would have
    run_source: RunSource = "curate" if review.source == "agent" else review.source
    session = (writer or memory_writer()).open(
        memory_dir, source=run_source,
        sessions=review.sessions, repair=not proposal)
    async with session as staged:
        for name in chosen:
            source, target = shadow / name, staged.path / name
            if source.exists():
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(source, target)
            else:
                target.unlink(missing_ok=True)
        staged.usage(review.tokens_in, review.tokens_out)
        staged.summary = (f"accepted: {review.summary}" if proposal else
                          f"reviewed: {review.summary}" if len(chosen) == len(names) else
                          f"reviewed ({len(chosen)} of {len(names)} files): {review.summary}")
    await asyncio.to_thread(shutil.rmtree, reviews_root(memory_dir) / review.review_id, True)
    written = session.result
    rest = [n for n in names if n not in chosen]
    message = (f"Accepted {len(chosen)} of {len(names)} staged file"
               f"{'s' if len(names) != 1 else ''} ({', '.join(chosen)})"
               + (f"; discarded {', '.join(rest)}" if rest else "") + ".")
    if proposal:
        message = f"Accepted the proposal: {review.summary} ({', '.join(chosen)})."
    return ReviewOutcome(
        review_id=review.review_id, accepted=chosen, discarded=rest,
        run_id=written.run_id if written and written.record else None, message=message)


def format_review(review: Review) -> str:
    """The change set as text: each file's reason, sessions and unified diff."""
    import difflib

    kind = (f"proposed by {review.proposed_by or 'an agent'}" if review.source == "agent"
            else f"{review.source} dream")
    lines = [f"staged change set {review.review_id} ({kind}, {len(review.changes)} files): "
             f"{review.summary}"]
    for change in review.changes:
        lines.append(f"\n== {change.action} {change.path}")
        lines.append(f"   reason: {change.reason}")
        if change.sessions:
            lines.append(f"   from sessions: {', '.join(s[:8] for s in change.sessions)}")
        diff = difflib.unified_diff((change.before or "").splitlines(keepends=True),
                                    (change.after or "").splitlines(keepends=True),
                                    fromfile=f"a/{change.path}", tofile=f"b/{change.path}")
        lines.append("".join(diff).rstrip("\n"))
    lines.append(f"\nreverie apply {review.review_id}  |  reverie discard {review.review_id}")
    return "\n".join(lines)
