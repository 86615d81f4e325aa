"""Files a shell command edits or reads: agents edit through the shell too (Codex runs
``apply_patch`` / ``applypatch`` inside ``bash -lc``, others write with a heredoc) and read
with ``sed -n``, ``cat``, ``nl``, ``head``; those are edits and reads, not project commands.
"""

from __future__ import annotations

import re
import shlex

from reverie.transcripts.classify import absolute, patch_file_paths

_PATCH_RUN = re.compile(r"(?:^|[\s;&|(`'\"])(?:apply_patch|applypatch)\b")
#: ``cat > f <<'EOF'``, ``cat <<EOF > f``, ``cat >> f << 'X'``, ``tee [-a] f <<EOF``
_HEREDOC_WRITE = re.compile(
    r"(?:^|[\s;&|(])(?:cat\s+(?:<<-?\s*['\"]?\w+['\"]?\s*)?>>?\s*([^\s;&|<>]+)"
    r"|tee\s+(?:-a\s+)?([^\s;&|<>-][^\s;&|<>]*))[^\n]*<<-?\s*['\"]?\w+['\"]?"
    r"|(?:^|[\s;&|(])cat\s+<<-?\s*['\"]?\w+['\"]?\s*>>?\s*([^\s;&|<>]+)")
_READERS = frozenset({"cat", "nl", "head", "tail", "sed", "bat", "less", "more"})
_SEGMENT = re.compile(r"&&|\|\||;|\n")


def shell_edits(command: str, cwd: str | None) -> list[str]:
    """The files ``command`` edits (a patch it applies, a file a heredoc writes)."""
    head = command[:200_000]
    if "*** Begin Patch" in head and _PATCH_RUN.search(head):
        return patch_file_paths(head, cwd)
    if "<<" not in head:
        return []
    first = head.split("\n", 1)[0]
    paths = [p for m in _HEREDOC_WRITE.finditer(first) for p in m.groups() if p]
    return [absolute(p.strip("'\""), cwd) for p in paths if not p.startswith(("/dev/", "&"))]


def shell_reads(command: str, cwd: str | None = None) -> list[str]:
    """The files a looking-around command prints (``sed -n 1,80p x.py``, ``cat a b``,
    ``nl -ba x``, ``head -50 x``): each segment of a chain, up to its first pipe."""
    first = command.split("<<", 1)[0][:4_000]
    out: list[str] = []
    for segment in _SEGMENT.split(first):
        words = _words(segment.split("|", 1)[0])
        if not words or words[0] not in _READERS or ">" in segment:
            continue
        args = words[1:]
        if words[0] == "sed":
            if "-n" not in args or "-i" in args:
                continue
            script = next((a for a in args if a != "-n" and not a.startswith("-")), None)
            args = [a for a in args if a is not script]
        skip = False
        for position, arg in enumerate(args):
            if skip:
                skip = False
                continue
            if arg in ("-n", "-c") and words[0] in ("head", "tail") and position + 1 < len(args):
                skip = True
                continue
            if arg.startswith("-") or arg.startswith("+") or not _looks_like_file(arg):
                continue
            out.append(absolute(arg, cwd))
    return list(dict.fromkeys(out))[:10]


def _words(segment: str) -> list[str]:
    try:
        return shlex.split(segment)
    except ValueError:
        return segment.split()


def _looks_like_file(arg: str) -> bool:
    return ("/" in arg or "." in arg) and not any(c in arg for c in "*?$`{}()") \
        and not arg.startswith(("http://", "https://"))
