"""Whether a path can be read as a transcript file at all, with a one-line reason if not.

Apart from the readers and without models, so ``reverie transcript --stats`` can refuse a bad
path before importing them.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from reverie.errors import UserError


class TranscriptError(UserError):
    """A transcript path that cannot be read at all. ``str(error)`` is one line for the user."""


def check_readable(path: Path) -> os.stat_result:
    """Stat ``path`` as a transcript file, raising ``TranscriptError`` with a clear message."""
    try:
        st = path.stat()
    except FileNotFoundError:
        raise TranscriptError(f"no such file: {path}") from None
    except OSError as exc:
        raise TranscriptError(f"cannot read {path}: {exc.strerror or exc}") from None
    if path.is_dir():
        raise TranscriptError(f"is a directory, not a transcript file: {path}")
    if not stat.S_ISREG(st.st_mode):  # a FIFO or a device would block or never end
        raise TranscriptError(f"not a regular file (a FIFO, socket or device): {path}")
    if not os.access(path, os.R_OK):
        raise TranscriptError(f"cannot read {path}: permission denied")
    return st
