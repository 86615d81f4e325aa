"""The memory directory's model: the ``MEMORY.md`` index, topic files and their front matter.

``MEMORY.md`` is an index, not a dump: one ``- [Title](file.md) - hook`` line per topic, under the
line / byte / width limits agents load into their context. Topic files carry YAML front matter
(name, description, type, updated, sources). ``check_index`` reports every problem with a file,
0-based line and column range so the language server can show them as diagnostics.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import date, datetime
from pathlib import Path, PurePosixPath
from typing import Any, Literal
from urllib.parse import unquote

import frontmatter
import yaml  # type: ignore[import-untyped]
from frontmatter.default_handlers import YAMLHandler
from pydantic import BaseModel, Field

from reverie.memory import nofollow
from reverie.memory.paths import INDEX_NAME as INDEX_NAME  # where callers have always found it
from reverie.memory.pins import without_mark

MAX_INDEX_LINES = 200
MAX_INDEX_BYTES = 25_000
MAX_ENTRY_CHARS = 150
TOPIC_TYPES = ("user", "feedback", "project", "reference")

Severity = Literal["error", "warning", "info"]

_ENTRY_RE = re.compile(
    r"^(?P<indent>\s*)[-*+]\s+\[(?P<title>[^\]]+)\]\((?P<target>[^)\s]+)\)"
    r"(?:\s*(?:[-–—:]\s*)?(?P<hook>.*?))?\s*$"
)


_SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_FRONT_MATTER = re.compile(r"\A---[ \t]*\r?\n(.*?)\r?\n---[ \t]*(?:\r?\n|\Z)", re.DOTALL)


class MemoryProblem(BaseModel):
    """One problem in the memory dir, positioned for an editor diagnostic."""

    file: Path
    line: int = 0
    start_col: int = 0
    end_col: int = 0
    severity: Severity = "warning"
    code: str
    message: str


class IndexEntry(BaseModel):
    """One ``- [Title](target) - hook`` line of ``MEMORY.md``."""

    title: str
    target: str
    hook: str = ""
    line: int = 0

    @property
    def is_local(self) -> bool:
        return "://" not in self.target and not self.target.startswith(("#", "mailto:"))

    @property
    def target_path(self) -> str:
        """The link target as a path relative to the memory dir (anchor stripped)."""
        return unquote(self.target.split("#", 1)[0]).removeprefix("./")

    def render(self) -> str:
        line = f"- [{self.title}]({self.target})"
        return f"{line} - {self.hook}" if self.hook else line


class ParsedIndex(BaseModel):
    """``MEMORY.md`` split into its lines, with the entry lines parsed."""

    lines: list[str] = Field(default_factory=list)
    entries: list[IndexEntry] = Field(default_factory=list)


class TopicMeta(BaseModel):
    """Front matter of a topic file. Unknown keys are kept."""

    model_config = {"extra": "allow"}

    name: str | None = None
    description: str | None = None
    type: str | None = None
    updated: str | None = None
    sources: list[str] = Field(default_factory=list)


class TopicFile(BaseModel):
    """A parsed topic file. ``error`` is set (and meta empty) when the front matter is broken."""

    path: Path
    meta: TopicMeta = Field(default_factory=TopicMeta)
    body: str = ""
    has_front_matter: bool = False
    error: str | None = None
    error_line: int = 0


def parse_index(text: str) -> ParsedIndex:
    """Split ``MEMORY.md`` into lines and recognise the entry lines."""
    lines = text.splitlines()
    entries: list[IndexEntry] = []
    for number, line in enumerate(lines):
        match = _ENTRY_RE.match(line)
        if match:
            entries.append(
                IndexEntry(
                    title=match["title"].strip(),
                    target=match["target"].strip(),
                    hook=(match["hook"] or "").strip(),
                    line=number,
                )
            )
    return ParsedIndex(lines=lines, entries=entries)


def render_index(entries: Iterable[IndexEntry], *, title: str = "Memory") -> str:
    """A fresh ``MEMORY.md`` holding ``entries`` under a heading."""
    body = "\n".join(entry.render() for entry in entries)
    return f"# {title}\n\n{body}\n" if body else f"# {title}\n"


def _normalise_meta(raw: dict[str, Any]) -> dict[str, Any]:
    """YAML turns dates into objects and lone strings into scalars; bring them to our types."""
    out = dict(raw)
    updated = out.get("updated")
    if isinstance(updated, datetime | date):
        out["updated"] = updated.isoformat()
    elif updated is not None and not isinstance(updated, str):
        out["updated"] = str(updated)
    sources = out.get("sources")
    if sources is None:
        out.pop("sources", None)
    elif isinstance(sources, str | int):
        out["sources"] = [str(sources)]
    elif isinstance(sources, list):
        out["sources"] = [str(item) for item in sources]
    for key in ("name", "description", "type"):
        if out.get(key) is not None and not isinstance(out[key], str):
            out[key] = str(out[key])
    return out


class _OnceYAML(YAMLHandler):
    """frontmatter's YAML handler (libyaml when present), keeping the block it parsed and
    the value, so the front matter (every fact's anchors) is parsed once, not twice."""

    def __init__(self) -> None:
        super().__init__()
        self.fm: str | None = None
        self.data: Any = None

    def load(self, fm: str, **kwargs: object) -> Any:
        self.fm = fm
        self.data = super().load(fm, **kwargs)
        return self.data


def parse_topic(path: Path, text: str) -> TopicFile:
    """Parse one topic file. Broken front matter is reported, never raised."""
    has_fm = text.startswith("---")
    once = _OnceYAML()
    try:
        # the YAML handler frontmatter would pick, told to keep what it parsed
        post = frontmatter.loads(text, handler=once if once.detect(text.strip()) else None)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = int(mark.line) + 1 if mark is not None else 0
        return TopicFile(path=path, body=text, has_front_matter=has_fm,
                         error=f"front matter is not valid YAML: {_first_line(exc)}",
                         error_line=line)
    except (ValueError, TypeError) as exc:
        return TopicFile(path=path, body=text, has_front_matter=has_fm,
                         error=f"front matter could not be read: {_first_line(exc)}")
    block = _FRONT_MATTER.match(text)
    # the raw value tells a mapping from anything else (frontmatter drops a non-mapping);
    # parsed again only when frontmatter read a different block (its delimiters are looser)
    raw_meta: Any = None
    if block:
        same = once.fm is not None and once.fm.strip("\r\n") == block.group(1).strip("\r\n")
        raw_meta = once.data if same else yaml.load(block.group(1), Loader=_SAFE_LOADER)
    if not isinstance(post.metadata, dict) or (
        raw_meta is not None and not isinstance(raw_meta, dict)
    ):
        return TopicFile(path=path, body=text, has_front_matter=has_fm,
                         error="front matter must be a YAML mapping")
    try:
        meta = TopicMeta.model_validate(_normalise_meta(post.metadata))
    except ValueError as exc:
        return TopicFile(path=path, body=post.content, has_front_matter=has_fm,
                         error=f"front matter has wrong types: {_first_line(exc)}")
    return TopicFile(path=path, meta=meta, body=post.content, has_front_matter=has_fm)


def read_topic(path: Path) -> TopicFile:
    """Read and parse a topic file (undecodable bytes are replaced, and reported as such).
    A symlink, FIFO or device there raises ``OSError`` instead of being followed or blocking."""
    raw = nofollow.read_file(path)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        topic = parse_topic(path, raw.decode("utf-8", "replace"))
        topic.error = topic.error or "file is not valid UTF-8"
        return topic
    return parse_topic(path, text)


def render_topic(meta: TopicMeta, body: str) -> str:
    """Front matter (stable key order, empty values left out) followed by the body."""
    data = meta.model_dump(exclude_none=True)
    ordered: dict[str, Any] = {}
    for key in ("name", "description", "type", "updated", "sources"):
        if key in data and data[key] not in ("", []):
            ordered[key] = data.pop(key)
    ordered.update(data)
    post = frontmatter.Post(body.strip("\n"), **ordered)
    return frontmatter.dumps(post, sort_keys=False, allow_unicode=True).rstrip("\n") + "\n"


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]


def is_hidden(relative: PurePosixPath | Path) -> bool:
    """Reverie's bookkeeping (and editor litter) lives in dot-files: never part of the memory."""
    return any(part.startswith(".") for part in relative.parts)


def visible_files(memory_dir: Path) -> list[str]:
    """Relative POSIX paths of the memory's files: regular, non-dot, no symlinks, sorted."""
    if not memory_dir.is_dir():
        return []
    found: list[str] = []
    stack = [memory_dir]
    while stack:
        current = stack.pop()
        try:
            children = list(current.iterdir())
        except OSError:
            continue
        for child in children:
            if child.name.startswith(".") or child.is_symlink():
                continue
            if child.is_dir():
                stack.append(child)
            elif child.is_file():
                found.append(child.relative_to(memory_dir).as_posix())
    return sorted(found)


def topic_names(memory_dir: Path) -> list[str]:
    """Top-level markdown files other than the index."""
    return [
        name for name in visible_files(memory_dir)
        if "/" not in name and name.endswith(".md") and name != INDEX_NAME
    ]


def linked_targets(text: str) -> list[str]:
    """Local markdown link targets in a text (used to find topics reachable from the index)."""
    out: list[str] = []
    for match in re.finditer(r"\]\(([^)\s]+)\)", text):
        target = match.group(1)
        if "://" in target or target.startswith(("#", "mailto:")):
            continue
        out.append(unquote(target.split("#", 1)[0]).removeprefix("./"))
    return out


def reachable_topics(memory_dir: Path, index: ParsedIndex) -> set[str]:
    """Topic files reachable from the index, directly or through other topic files."""
    seen: set[str] = set()
    queue = [e.target_path for e in index.entries if e.is_local]
    while queue:
        name = queue.pop()
        if name in seen:
            continue
        seen.add(name)
        path = memory_dir / name
        if name.endswith(".md") and path.is_file() and not path.is_symlink():
            try:
                text = nofollow.read_file(path).decode("utf-8", errors="replace")
            except OSError:
                continue
            queue.extend(linked_targets(text))
    return seen


def check_index(memory_dir: Path) -> list[MemoryProblem]:
    """Every problem of ``MEMORY.md`` and the topic files, for diagnostics and post-run checks."""
    problems: list[MemoryProblem] = []
    index_path = memory_dir / INDEX_NAME
    if not memory_dir.is_dir():
        return problems
    index = ParsedIndex()
    raw: bytes | None = None
    if index_path.is_file():
        try:
            raw = nofollow.read_file(index_path)
        except OSError as exc:
            problems.append(MemoryProblem(file=index_path, severity="error", code="unreadable",
                                          message=f"cannot read {INDEX_NAME}: "
                                                  f"{exc.strerror or exc}"))
    if raw is not None:
        text = raw.decode("utf-8", errors="replace")
        index = parse_index(text)
        problems.extend(_index_size_problems(index_path, index, len(raw)))
        problems.extend(_entry_problems(memory_dir, index_path, index))
    elif not problems and topic_names(memory_dir):
        problems.append(MemoryProblem(
            file=index_path, severity="error", code="missing-index",
            message=f"{INDEX_NAME} is missing but the memory dir has topic files",
        ))
    reachable = reachable_topics(memory_dir, index)
    for name in topic_names(memory_dir):
        path = memory_dir / name
        if name not in reachable:
            problems.append(MemoryProblem(
                file=path, severity="warning", code="unindexed-topic",
                message=f"{name} is not listed in {INDEX_NAME}",
            ))
        problems.extend(_topic_problems(path))
    return problems


def _index_size_problems(path: Path, index: ParsedIndex, size: int) -> list[MemoryProblem]:
    problems: list[MemoryProblem] = []
    if len(index.lines) > MAX_INDEX_LINES:
        problems.append(MemoryProblem(
            file=path, line=MAX_INDEX_LINES, end_col=len(index.lines[MAX_INDEX_LINES]),
            severity="error", code="index-too-long",
            message=f"{INDEX_NAME} has {len(index.lines)} lines; agents load only the first "
                    f"{MAX_INDEX_LINES}",
        ))
    if size > MAX_INDEX_BYTES:
        total = 0
        line_no = 0
        for line_no, line in enumerate(index.lines):  # noqa: B007 - find the line crossing the limit
            total += len(line.encode("utf-8")) + 1
            if total > MAX_INDEX_BYTES:
                break
        problems.append(MemoryProblem(
            file=path, line=line_no, end_col=len(index.lines[line_no]) if index.lines else 0,
            severity="error", code="index-too-large",
            message=f"{INDEX_NAME} is {size} bytes; keep it under {MAX_INDEX_BYTES}",
        ))
    return problems


def _entry_problems(memory_dir: Path, path: Path, index: ParsedIndex) -> list[MemoryProblem]:
    problems: list[MemoryProblem] = []
    seen: dict[str, int] = {}
    for entry in index.entries:
        line = index.lines[entry.line]
        width = len(without_mark(line).rstrip())  # a pin marker is not part of the entry
        if width > MAX_ENTRY_CHARS:
            problems.append(MemoryProblem(
                file=path, line=entry.line, start_col=MAX_ENTRY_CHARS, end_col=width,
                severity="warning", code="entry-too-long",
                message=f"entry is {width} characters; keep index lines under {MAX_ENTRY_CHARS} "
                        "and move the detail into the topic file",
            ))
        if not entry.is_local:
            continue
        start = line.find("(" + entry.target) + 1
        end = start + len(entry.target)
        target = entry.target_path
        resolved = memory_dir / target
        if PurePosixPath(target).is_absolute() or ".." in PurePosixPath(target).parts:
            problems.append(MemoryProblem(
                file=path, line=entry.line, start_col=start, end_col=end, severity="error",
                code="link-outside", message=f"link {entry.target} points outside the memory dir",
            ))
        elif not resolved.is_file():
            problems.append(MemoryProblem(
                file=path, line=entry.line, start_col=start, end_col=end, severity="error",
                code="broken-link", message=f"link target {entry.target} does not exist",
            ))
        if target in seen:
            problems.append(MemoryProblem(
                file=path, line=entry.line, start_col=0, end_col=width, severity="warning",
                code="duplicate-entry",
                message=f"{entry.target} is already listed on line {seen[target] + 1}",
            ))
        else:
            seen[target] = entry.line
    return problems


def _topic_problems(path: Path) -> list[MemoryProblem]:
    try:
        topic = read_topic(path)
    except OSError as exc:
        return [MemoryProblem(file=path, severity="error", code="unreadable",
                              message=f"cannot read topic file: {exc.strerror or exc}")]
    if topic.error:
        return [MemoryProblem(file=path, line=topic.error_line, severity="error",
                              code="bad-front-matter", message=topic.error)]
    if not topic.has_front_matter:
        return [MemoryProblem(file=path, severity="warning", code="missing-front-matter",
                              message="topic file has no front matter (name, description, type)")]
    problems: list[MemoryProblem] = []
    missing = [key for key in ("name", "description", "type") if not getattr(topic.meta, key)]
    if missing:
        problems.append(MemoryProblem(
            file=path, severity="warning", code="incomplete-front-matter",
            message="front matter lacks " + ", ".join(missing),
        ))
    if topic.meta.type and topic.meta.type not in TOPIC_TYPES:
        problems.append(MemoryProblem(
            file=path, severity="info", code="unknown-type",
            message=f"type {topic.meta.type!r} is not one of {', '.join(TOPIC_TYPES)}",
        ))
    return problems


def blocking_problems(problems: Iterable[MemoryProblem]) -> list[MemoryProblem]:
    """The problems a run must not leave behind."""
    return [p for p in problems if p.severity == "error"]
