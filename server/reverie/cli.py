"""The ``reverie`` command line. Each sub-command lives in ``reverie.commands.<name>``.

stdout carries only results (JSON with ``--json``); logs and errors go to stderr.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
from collections.abc import Sequence

from reverie import __version__

#: sub-command name -> module under reverie.commands exposing ``add_arguments`` and ``run``.
COMMANDS: dict[str, str] = {
    "transcript": "transcript",
    "sessions": "sessions",
    "notes": "notes",
    "dream": "dream",
    "lock": "lock",
    "history": "history",
    "undo": "undo",
    "sleep": "sleep",
    "demo": "demo",
    "serve": "serve",
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="reverie", description=__doc__)
    parser.add_argument("--version", action="version", version=f"reverie {__version__}")
    parser.add_argument(
        "--log-level", default="warning", choices=["debug", "info", "warning", "error"]
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, module_name in COMMANDS.items():
        try:
            module = importlib.import_module(f"reverie.commands.{module_name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"reverie.commands.{module_name}":
                raise
            continue
        cmd = sub.add_parser(name, help=(module.__doc__ or "").strip().splitlines()[0])
        module.add_arguments(cmd)
        cmd.set_defaults(_run=module.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=getattr(logging, args.log_level.upper()),
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    run = getattr(args, "_run", None)
    if run is None:
        parser.print_help(sys.stderr)
        return 2
    try:
        return int(run(args) or 0)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0


def fail(message: str, code: int = 1) -> int:
    """Print a one-line error on stderr and return the exit code."""
    print(f"reverie: {message}", file=sys.stderr)
    return code
