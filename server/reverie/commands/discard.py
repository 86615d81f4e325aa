"""Discard a staged change set (``reverie dream --review``); memory stays as it is.

``reverie discard RUN [--workspace DIR] [--json]``.
"""

from __future__ import annotations

import argparse
import json

from reverie.cli import add_workspace_argument, fail, load_settings, resolve_workspace
from reverie.config import ProjectPaths


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("review_id", metavar="RUN", help="the staged change set (id or prefix)")
    add_workspace_argument(parser)
    parser.add_argument("--json", action="store_true", help="print the result as JSON")


def run(args: argparse.Namespace) -> int:
    from reverie.errors import UserError
    from reverie.services.review import discard_review

    memory_dir = ProjectPaths(load_settings(), resolve_workspace(args)).memory_dir
    try:
        outcome = discard_review(memory_dir, args.review_id)
    except UserError as exc:
        return fail(str(exc))
    print(json.dumps(outcome.model_dump(), indent=2) if args.json else outcome.message)
    return 0
