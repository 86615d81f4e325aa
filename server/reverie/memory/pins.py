"""Pinned entries: lines a person marked so that no dream or sleep cycle retires or rewrites them.

A pin is a marker at the end of the line itself (``<!-- pinned -->``, invisible when the
Markdown is rendered), so it travels with the memory: it is in the history (pinning is a run,
undoable like any other), in every copy of the dir, and visible to whoever reads the file. The
index's line-length rule does not count it.

``keep_pinned`` runs on the staged copy of a dream or sleep run just before it is applied: every
pinned line of the live dir that the run dropped or changed is put back byte for byte, at its
old position (clamped to the new file's length), and a topic file a pinned index line links to
is restored whole if the run removed it.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path

from pydantic import BaseModel, Field

logger = logging.getLogger(__name__)

PIN_MARK = "<!-- pinned -->"
_LINK = re.compile(r"\]\(([^)\s]+\.md)\)")


def is_pinned(line: str) -> bool:
    return PIN_MARK in line


def without_mark(line: str) -> str:
    """The line as it reads without the pin (for length rules and display)."""
    return line.replace(" " + PIN_MARK, "").replace(PIN_MARK, "")


def pin_line(line: str) -> str:
    return line if is_pinned(line) else f"{line.rstrip()} {PIN_MARK}"


def unpin_line(line: str) -> str:
    return without_mark(line).rstrip() if is_pinned(line) else line


class PinRestore(BaseModel):
    """What ``keep_pinned`` put back."""

    lines: list[str] = Field(default_factory=list)  # "file: line" of each restored pinned line
    files: list[str] = Field(default_factory=list)  # topic files restored whole

    @property
    def anything(self) -> bool:
        return bool(self.lines or self.files)


def _read_lines(path: Path) -> list[str] | None:
    try:
        return path.read_text(encoding="utf-8").splitlines(keepends=True)
    except (OSError, UnicodeDecodeError):
        return None


def pinned_lines(memory_dir: Path) -> dict[str, list[tuple[int, str]]]:
    """``{file name: [(0-based line, line text with its newline)]}`` of every pinned line."""
    found: dict[str, list[tuple[int, str]]] = {}
    for path in sorted(memory_dir.glob("*.md")):
        lines = _read_lines(path)
        if not lines:
            continue
        pins = [(i, line) for i, line in enumerate(lines) if is_pinned(line)]
        if pins:
            found[path.name] = pins
    return found


def keep_pinned(live_dir: Path, staged_dir: Path) -> PinRestore:
    """Put back, in ``staged_dir``, every pinned line of ``live_dir`` the run dropped or changed."""
    restored = PinRestore()
    for name, pins in pinned_lines(live_dir).items():
        target = staged_dir / name
        lines = _read_lines(target) if target.exists() else None
        if lines is None:
            source = _read_lines(live_dir / name)
            if source is None:
                continue
            lines = []
        present = set(lines)
        changed = False
        for index, line in pins:
            text = line if line.endswith("\n") else line + "\n"
            if line in present or text in present:
                continue
            link = _LINK.search(line)
            rewritten = next((i for i, other in enumerate(lines)
                              if link is not None and _LINK.search(other) is not None
                              and _LINK.search(other).group(1) == link.group(1)  # type: ignore[union-attr]
                              and not is_pinned(other)), None)
            if rewritten is not None:  # the run rewrote the pinned index line: the pin wins
                lines[rewritten] = text
            else:
                at = min(index, len(lines))
                if at > 0 and not lines[at - 1].endswith("\n"):
                    lines[at - 1] += "\n"
                lines.insert(at, text)
            present.add(text)
            restored.lines.append(f"{name}: {without_mark(line).strip()}")
            changed = True
        if changed:
            target.write_text("".join(lines), encoding="utf-8")
        for _, line in pins:  # a pinned index line keeps its topic file
            match = _LINK.search(line)
            if match is None or "/" in match.group(1) or "\\" in match.group(1):
                continue
            topic = match.group(1)
            live_topic, staged_topic = live_dir / topic, staged_dir / topic
            if live_topic.is_file() and not staged_topic.exists():
                staged_topic.write_bytes(live_topic.read_bytes())
                restored.files.append(topic)
    if restored.anything:
        logger.info("kept pinned entries the run had dropped: %s", restored.lines + restored.files)
    return restored
