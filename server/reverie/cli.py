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


def requested_command(argv: Sequence[str]) -> str | None:
    """The sub-command named in ``argv`` (None for ``--help`` / ``--version`` / nothing)."""
    tokens = iter(argv)
    for token in tokens:
        if token == "--log-level":
            next(tokens, None)
        elif token.startswith("-"):
            if token in ("-h", "--help", "--version"):
                return None
        else:
            return token if token in COMMANDS else None
    return None


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The full parser; with ``only``, the other sub-commands' modules are not imported (so
    ``reverie serve`` answers the editor's ``initialize`` quickly)."""
    parser = argparse.ArgumentParser(prog="reverie", description=__doc__)
    parser.add_argument("--version", action="version", version=f"reverie {__version__}")
    parser.add_argument(
        "--log-level", default="warning", choices=["debug", "info", "warning", "error"]
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, module_name in COMMANDS.items():
        if only is not None and name != only:
            sub.add_parser(name)
            continue
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
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(requested_command(argv))
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
