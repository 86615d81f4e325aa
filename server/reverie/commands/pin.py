"""Pin one entry so no dream or sleep cycle retires or rewrites it (``--unpin`` to release it).

``reverie pin ENTRY [--unpin] [--workspace DIR] [--json]``: ENTRY is ``FILE:LINE``
(``MEMORY.md:3``) or a piece of the entry's text that matches exactly one line. A recorded run:
``reverie undo`` takes the pin back.
"""

from __future__ import annotations

import argparse

from reverie.commands.curate import add_entry_arguments, run_curation


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_entry_arguments(parser)
    parser.add_argument("--unpin", action="store_true", help="take the pin off the entry")


def run(args: argparse.Namespace) -> int:
    return run_curation(args, "unpin" if args.unpin else "pin")
