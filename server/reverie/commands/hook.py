"""Entry points for the agents' hooks (installed by ``reverie connect``); hook JSON on stdin.

``reverie hook pre-compact`` brings the session's notes up to date before a compaction (waits
for a running extraction, else runs one; at most 15 s). ``reverie hook session-start`` prints
the hook output that gives the notes back after a compaction or on resume.
``reverie hook user-prompt-submit`` adds the few memory entries and past-session hits most
relevant to the prompt (``reverie.search.recall``; nothing below its relevance bar), and
imports little: it runs before every prompt. Whatever happens,
the exit code is 0 and stdout holds nothing but that output: a hook must never break the agent.
Problems are one line on stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

EVENTS = ("pre-compact", "session-start", "user-prompt-submit")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("event", choices=EVENTS, help="which hook is calling")
    parser.add_argument("--data-dir", type=Path, default=None,
                        help="Reverie's data dir (default: REVERIE_DATA_DIR or the platform's)")


def _note(message: str) -> None:
    print(f"reverie hook: {message}", file=sys.stderr, flush=True)


def run(args: argparse.Namespace) -> int:
    try:
        output = _run(args)
    except Exception as exc:  # an agent must never break because of us
        _note(f"{type(exc).__name__}: {exc}")
        output = None
    if output is not None:
        sys.stdout.write(json.dumps(output) + "\n")
    sys.stdout.flush()
    sys.stderr.flush()
    # leave now: a timed-out extraction's worker thread must not hold the agent up
    os._exit(0)


def _run(args: argparse.Namespace) -> dict[str, object] | None:
    if args.event == "user-prompt-submit":
        return _user_prompt_submit(args)
    from pydantic import ValidationError

    from reverie.config import Settings
    from reverie.services.hooks import HookSkip, parse_hook_input, pre_compact, session_start

    try:
        hook = parse_hook_input(sys.stdin.buffer.read())
        try:
            settings = Settings(data_dir=args.data_dir) if args.data_dir else Settings()
        except ValidationError as exc:
            raise HookSkip(f"invalid setting: {exc.errors()[0]['msg']}") from None
        if args.event == "session-start":
            return session_start(settings, hook)
        import asyncio  # only here: session-start never needs the event loop

        _note(asyncio.run(pre_compact(settings, hook)))
    except HookSkip as exc:
        _note(str(exc))
    return None


def _user_prompt_submit(args: argparse.Namespace) -> dict[str, object] | None:
    from reverie.commands.prompt_hook import prompt_hook_output

    return prompt_hook_output(args.data_dir)
