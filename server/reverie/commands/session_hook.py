"""``reverie hook session-start``: the notes handed back after a compaction or on resume.

``python -m reverie hook session-start [--data-dir DIR]`` is recognised by ``reverie.__main__``
before the CLI is built (the agent waits for this hook at every compaction and resume), so it
imports neither argparse nor the other commands nor the settings stack: the two folders it reads
are found as ``Settings`` finds them (``--data-dir``, else ``REVERIE_DATA_DIR`` /
``REVERIE_CONFIG_DIR`` in any case, else the platform's), and the answer is
``reverie.services.handback.hand_back``'s, the same function the full CLI path calls. One
difference, on purpose: a malformed setting the hand-back does not read (``REVERIE_MAX_RETRIES=
abc``) no longer keeps the notes from coming back (the full path refuses every command then).
Whatever happens, exit 0 and at most one line on stderr.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path


def _note(message: str) -> None:
    print(f"reverie hook: {message}", file=sys.stderr, flush=True)


def setting(name: str) -> str | None:
    """``REVERIE_<NAME>`` from the environment, matched without case as pydantic-settings
    matches it."""
    wanted = f"reverie_{name}"
    return next((value for key, value in os.environ.items() if key.lower() == wanted), None)


def data_dir_of(explicit: str | None) -> Path:
    if explicit is not None:
        return Path(explicit)
    value = setting("data_dir")
    if value is not None:
        return Path(value)
    import platformdirs

    return Path(platformdirs.user_data_dir("reverie"))


def config_dir_of() -> Path:
    value = setting("config_dir")
    if value is not None:
        return Path(value)
    import platformdirs

    return Path(platformdirs.user_config_dir("reverie"))


def lean_arguments(argv: Sequence[str]) -> bool:
    """True for the arguments ``reverie connect`` installs (nothing, or ``--data-dir DIR``):
    anything else goes through the full CLI, which reports it as argparse does."""
    return len(argv) == 0 or (len(argv) == 2 and argv[0] == "--data-dir" and bool(argv[1]))


def main(argv: Sequence[str]) -> int:
    """``argv`` after ``hook session-start`` (``lean_arguments``)."""
    from reverie.services.handback import HookSkip, hand_back, parse_hook_input

    output = None
    try:
        hook = parse_hook_input(sys.stdin.buffer.read())
        output = hand_back(data_dir_of(argv[1] if argv else None), config_dir_of, hook)
    except HookSkip as exc:
        _note(str(exc))
    except Exception as exc:  # an agent must never break because of us
        _note(f"{type(exc).__name__}: {exc}")
    if output is not None:
        sys.stdout.write(json.dumps(output) + "\n")
    sys.stdout.flush()
    sys.stderr.flush()
    return 0
