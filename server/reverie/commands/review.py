"""List the change sets waiting for a person: dreams staged for review, agents' proposals.

``reverie review [--workspace DIR] [--json]``: each with its reason, sessions and diff; accept
one with ``reverie apply RUN``, drop it with ``reverie discard RUN``.
"""

from __future__ import annotations

import argparse
import json

from reverie.cli import add_workspace_argument, load_settings, resolve_workspace
from reverie.config import ProjectPaths


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_workspace_argument(parser)
    parser.add_argument("--json", action="store_true",
                        help="print {memory_dir, reviews: [...]} with each file's texts")


def run(args: argparse.Namespace) -> int:
    from reverie.services.review import format_review, list_reviews

    memory_dir = ProjectPaths(load_settings(), resolve_workspace(args)).memory_dir
    reviews = list_reviews(memory_dir, with_contents=True)
    if args.json:
        print(json.dumps({"memory_dir": str(memory_dir),
                          "reviews": [r.as_json(with_contents=True) for r in reviews]},
                         indent=2))
        return 0
    if not reviews:
        print("nothing waits for review")
        return 0
    print("\n\n".join(format_review(r) for r in reviews))
    return 0
