"""The ``reverie`` command line. Each sub-command lives in ``reverie.commands.<name>``.

stdout carries only results (JSON with ``--json``); logs and errors go to stderr.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from reverie import __version__
from reverie.errors import UserError
from reverie.logsafety import RedactingFormatter

if TYPE_CHECKING:
    from reverie.config import Settings
    from reverie.events import JobEvent

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
    "connect": "connect",
    "disconnect": "disconnect",
    "connections": "connections",
    "hook": "hook",
    "forget": "forget",
    "pin": "pin",
    "apply": "apply",
    "discard": "discard",
    "review": "review",
    "search": "search",
    "mcp": "mcp",
    "check": "check",
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
    for handler in logging.getLogger().handlers:  # secrets never reach a log line
        handler.setFormatter(RedactingFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    run = getattr(args, "_run", None)
    if run is None:
        parser.print_help(sys.stderr)
        return 2
    try:
        return int(run(args) or 0)
    except CommandError as exc:
        return fail(str(exc))
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0


def fail(message: str, code: int = 1) -> int:
    """Print a one-line error on stderr and return the exit code."""
    print(f"reverie: {message}", file=sys.stderr)
    return code


class CommandError(UserError):
    """A one-line error for the user: ``main`` prints it on stderr and exits 1."""


def load_settings() -> Settings:
    """The settings from the environment, or a ``CommandError`` naming the bad value."""
    from pydantic import ValidationError

    from reverie.config import Settings

    try:
        return Settings()
    except ValidationError as exc:
        first = exc.errors()[0]
        name = "REVERIE_" + "_".join(str(part) for part in first["loc"]).upper()
        raise CommandError(f"invalid setting {name}: {first['msg']}") from None


def add_workspace_argument(parser: argparse.ArgumentParser) -> None:
    """The ``--workspace DIR`` option every project-scoped sub-command takes."""
    parser.add_argument(
        "--workspace", type=Path, default=None,
        help="the project folder (default: the current directory)",
    )


def resolve_workspace(args: argparse.Namespace) -> Path:
    """``--workspace`` (or the current directory), resolved; it must be a directory."""
    workspace: Path = (args.workspace or Path.cwd()).expanduser().resolve()
    if not workspace.is_dir():
        raise CommandError(f"workspace is not a directory: {workspace}")
    return workspace


def job_event_logger(logger: logging.Logger) -> Callable[[JobEvent], None]:
    """An ``EventSink`` that logs a job's events (stderr, at the ``--log-level`` chosen)."""

    def log_event(event: JobEvent) -> None:
        level = logging.WARNING if event.type == "error" else logging.INFO
        logger.log(level, "%s %s: %s", event.job, event.type, event.message)

    return log_event
