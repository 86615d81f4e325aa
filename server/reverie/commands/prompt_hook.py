"""``reverie hook user-prompt-submit``: prompt-time recall, on the path of every prompt.

``python -m reverie hook user-prompt-submit [--data-dir DIR]`` is recognised by
``reverie.__main__`` before the CLI is built, so the hook imports neither argparse nor the
other commands nor the settings stack: stdin's hook JSON (``prompt``, ``cwd``, ``session_id``)
in, the ``hookSpecificOutput`` JSON out (nothing when nothing is relevant). Whatever happens,
exit 0 and at most one line on stderr.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path

EVENT = "user-prompt-submit"


def _note(message: str) -> None:
    print(f"reverie hook: {message}", file=sys.stderr, flush=True)


def data_dir_of(explicit: Path | str | None) -> Path:
    """``--data-dir``, else ``REVERIE_DATA_DIR``, else the platform's (as ``Settings`` has it,
    without importing the settings stack)."""
    if explicit:
        return Path(explicit).expanduser()
    env = os.environ.get("REVERIE_DATA_DIR")
    if env:
        return Path(env).expanduser()
    import platformdirs

    return Path(platformdirs.user_data_dir("reverie"))


def prompt_hook_output(data_dir: Path | str | None) -> dict[str, object] | None:
    """The hook output for the JSON on stdin, or None (nothing to add)."""
    try:
        data = json.loads(sys.stdin.buffer.read())
    except (ValueError, UnicodeDecodeError):
        _note("hook input is not JSON")
        return None
    if not isinstance(data, dict):
        _note("hook input is not a JSON object")
        return None
    prompt, cwd = data.get("prompt"), data.get("cwd")
    if not isinstance(prompt, str) or not prompt.strip() or not isinstance(cwd, str) or not cwd:
        return None
    session = data.get("session_id")
    session_id = session if isinstance(session, str) else None
    from reverie.search.recall import find_index, prompt_context

    root = data_dir_of(data_dir)
    context = prompt_context(root, Path(cwd), prompt, session_id)
    found = find_index(root, Path(cwd))
    if found is not None:  # kept for the editor's "what agents load" (empty: nothing sent)
        from reverie.agents.given import record_given

        record_given(found[1].parent.parent, "prompt", session_id, context or "")
    if context is None:
        return None
    return {"hookSpecificOutput": {"hookEventName": "UserPromptSubmit",
                                   "additionalContext": context}}


def main(argv: Sequence[str]) -> int:
    """``argv`` after ``hook user-prompt-submit``: only ``--data-dir DIR`` is understood."""
    args = list(argv)
    data_dir: str | None = None
    if "--data-dir" in args:
        at = args.index("--data-dir")
        data_dir = args[at + 1] if at + 1 < len(args) else None
    try:
        output = prompt_hook_output(data_dir)
    except Exception as exc:  # an agent must never break because of us
        _note(f"{type(exc).__name__}: {exc}")
        output = None
    if output is not None:
        sys.stdout.write(json.dumps(output) + "\n")
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
